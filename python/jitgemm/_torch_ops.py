"""jitgemm's calls as PyTorch operators (torch.library), so that torch.compile puts them in its
graph instead of breaking it, and its CUDA graphs capture them.

Each call the package offers on tensors is declared once (`declare`), by a schema of its
inputs, a `check` that reads only metadata and says the output's shape, dtype and device, and
a `launch` that runs the checked call into an output. Every declared call NAME becomes two
operators in the `jitgemm` namespace:

    jitgemm::NAME(inputs) -> Tensor                   allocates and returns its output
    jitgemm::NAME_out(inputs, *, Tensor(a!) out) -> ()  writes a caller's tensor

Two, because an operator may not return a tensor it was given: the caller-supplied output is
a mutated argument with no return, which torch.compile functionalizes. Both have a fake
(meta) implementation that runs the same `check`, so the shapes torch.compile infers are the
real call's. A grouped or block-scaled call is added the same way: one more `declare` in the
module that implements it.

PyTorch is imported once, by `setup()` at `import jitgemm`. Without it, or with a PyTorch too
old for torch.library.register_fake (2.4), nothing is registered and `call` always takes the
direct route.
"""

NAMESPACE = "jitgemm"

torch = None          # the torch module, once setup() imported it
import_error = None   # why it could not be imported
unavailable = None    # why the operators are not registered (None once they are)

_specs = {}           # name -> _Spec, in declaration order
_ops = {}             # name -> (NAME overload, NAME_out overload), once registered
_library = None       # the torch.library.Library; dropping it would unregister the operators
_dispatch_depth = None
_plain_types = ()


class _Spec:
    def __init__(self, name, inputs, check, launch):
        self.name, self.inputs, self.check, self.launch = name, inputs, check, launch


def declare(name, inputs, check, launch):
    """Declare a call to be offered as the operators NAME and NAME_out.

    inputs: the schema of the inputs, e.g. "Tensor a, Tensor b, str epilogue=\"linear\""
    check(torch, inputs, out): validates (out may be None) and returns an object with the
        output's .shape, .dtype and .device; it must touch no tensor data
    launch(torch, checked, inputs, out): runs the call, writing out
    """
    _specs[name] = _Spec(name, inputs, check, launch)


def _layout_tags(torch):
    """The kernels take row strides: ask the compiler to pass each input with the strides it
    had when traced, so that the compiled call is the same problem (and kernel) as eager."""
    for name in ("needs_exact_strides", "needs_fixed_stride_order"):
        tag = getattr(torch.Tag, name, None)
        if tag is not None:
            return (tag,)
    return ()


def _binder(schema):
    """The dispatcher hands an implementation the arguments as the caller wrote them, without
    those left at their defaults: this puts the inputs back in the schema's order, defaults
    filled in, so that `check` and `launch` always see the whole tuple."""
    params = [(p.name, p.default_value if p.has_default_value() else None)
              for p in schema.arguments if not p.kwarg_only]

    def bind(args, kwargs):
        return tuple(args) + tuple(kwargs.get(n, d) for n, d in params[len(args):])

    return bind


def _register(torch, spec):
    """Define NAME and NAME_out with their real and fake implementations."""
    qual = "%s::%s" % (NAMESPACE, spec.name)
    tags = _layout_tags(torch)
    _library.define("%s(%s) -> Tensor" % (spec.name, spec.inputs), tags=tags)
    _library.define("%s_out(%s, *, Tensor(a!) out) -> ()" % (spec.name, spec.inputs), tags=tags)
    bind = _binder(_packet(torch, spec.name).default._schema)

    def real(*args, **kwargs):
        inputs = bind(args, kwargs)
        c = spec.check(torch, inputs, None)
        out = torch.empty(c.shape, dtype=c.dtype, device=c.device)
        spec.launch(torch, c, inputs, out)
        return out

    def real_out(*args, out, **kwargs):
        inputs = bind(args, kwargs)
        c = spec.check(torch, inputs, out)
        spec.launch(torch, c, inputs, out)
        torch.autograd.graph.increment_version(out)  # as PyTorch's own in-place ops do

    def fake(*args, **kwargs):
        inputs = bind(args, kwargs)
        c = spec.check(torch, inputs, None)
        return inputs[0].new_empty(c.shape, dtype=c.dtype, device=c.device)

    def fake_out(*args, out, **kwargs):
        spec.check(torch, bind(args, kwargs), out)

    # CompositeExplicitAutograd: one implementation for every device, so that tensors off
    # CUDA reach `check` and `launch` and get their messages, not a missing-kernel error.
    _library.impl(spec.name, real, "CompositeExplicitAutograd")
    _library.impl(spec.name + "_out", real_out, "CompositeExplicitAutograd")
    torch.library.register_fake(qual, fake, lib=_library)
    torch.library.register_fake(qual + "_out", fake_out, lib=_library)


def _packet(torch, name):
    return getattr(getattr(torch.ops, NAMESPACE), name)


def setup():
    """Import PyTorch if it is installed and register every declared call; a failure is
    recorded (import_error, unavailable), never raised, so `import jitgemm` always works."""
    global torch, import_error, unavailable, _library, _dispatch_depth, _plain_types
    try:
        import torch as t
    except Exception as e:  # not only ImportError: a broken install raises OSError and others
        import_error = "%s: %s" % (type(e).__name__, e)
        unavailable = "PyTorch is not available (%s)" % import_error
        return
    torch = t
    if not hasattr(t, "library") or not hasattr(t.library, "register_fake"):
        unavailable = "this PyTorch (%s) has no torch.library.register_fake (2.4 or later)" \
            % t.__version__
        return
    _plain_types = (t.Tensor, t.nn.Parameter)
    _dispatch_depth = getattr(t._C, "_len_torch_dispatch_stack", None)
    if _library is None:
        _library = t.library.Library(NAMESPACE, "FRAGMENT")
    for name, spec in _specs.items():
        if name in _ops:
            continue
        # A second copy of the package in one process finds its operators defined already.
        if not hasattr(getattr(t.ops, NAMESPACE), name):
            _register(t, spec)
        _ops[name] = (_packet(t, name).default, _packet(t, name + "_out").default)
    unavailable = None


def _traced(torch, tensors):
    """Whether a call must go through the operator: under torch.compile or torch.export, under
    a dispatch mode (FakeTensorMode, a tracer, a profiling mode), or on tensors without data
    (fake, functional or other subclasses, the meta device). Plain tensors and parameters
    outside any of these skip the dispatcher."""
    if torch.compiler.is_compiling():
        return True
    if _dispatch_depth is not None and _dispatch_depth():
        return True
    for x in tensors:
        if isinstance(x, torch.Tensor) and (type(x) not in _plain_types or x.is_meta):
            return True
    return False


def call(torch, name, inputs, out):
    """Run the declared call NAME on `inputs` into `out` (allocated when None) and return the
    output: through the operator when `_traced`, else straight to check and launch."""
    ops = _ops.get(name)
    if ops is not None and _traced(torch, inputs + (out,)):
        if out is None:
            return ops[0](*inputs)
        ops[1](*inputs, out=out)
        return out
    spec = _specs[name]
    c = spec.check(torch, inputs, out)
    if out is None:
        out = torch.empty(c.shape, dtype=c.dtype, device=c.device)
        spec.launch(torch, c, inputs, out)
        return out
    spec.launch(torch, c, inputs, out)
    torch.autograd.graph.increment_version(out)
    return out
