"""jitgemm.gemm as the PyTorch operators jitgemm::gemm and jitgemm::gemm_out, checked without a
GPU: the registration and schemas, shape inference on fake and meta tensors, opcheck, and
torch.compile(fullgraph=True). Skipped without PyTorch (CI has none).

Where a test must run the operator for values on a machine without a GPU, `cpu_launch`
replaces the library call (the declared call's `launch`) with an FP64 computation on CPU
tensors. Everything around it is the real path: the dispatcher, the fake implementation,
functionalization of `out`, and the code inductor generates.
"""

import pytest

import jitgemm
from jitgemm import _torch_ops

torch = pytest.importorskip("torch", reason="PyTorch is not installed: the operator tests need it")
if _torch_ops.unavailable:
    pytest.skip(_torch_ops.unavailable, allow_module_level=True)

import gemm_arg_cases  # noqa: E402
from torch._subclasses.fake_tensor import FakeTensorMode  # noqa: E402
from torch.utils._python_dispatch import TorchDispatchMode  # noqa: E402

OPS = ("linear", "linear_add", "linear_swiglu")
F8, BF16 = torch.float8_e4m3fn, torch.bfloat16
N, K = 64, 128


def nout(op, n=N):
    return n // 2 if op == "linear_swiglu" else n


def operands(op, m, device="cpu", seed=0):
    """(a, b, scale_a, scale_b, residual) on `device`: E4M3 codes never zero, scales near 1."""
    g = torch.Generator().manual_seed(seed)

    def e4m3(rows):
        mag = torch.randint(1, 127, (rows, K), dtype=torch.uint8, generator=g)
        sign = torch.randint(0, 2, (rows, K), dtype=torch.uint8, generator=g) << 7
        return (mag | sign).view(F8).to(device)

    a, b = e4m3(m), e4m3(N)
    sa = (torch.rand(m, generator=g) * 0.01 + 0.005).to(device)
    sb = (torch.rand(N, generator=g) + 0.5).to(device)
    res = None
    if op == "linear_add":
        res = (torch.rand(m, N, generator=g) * 8 - 4).to(BF16).to(device)
    return a, b, sa, sb, res


def like(x, device):
    """A tensor with x's shape, strides and dtype on `device`, without its data (x itself when
    it is not a tensor)."""
    if not isinstance(x, torch.Tensor):
        return x
    return torch.empty_strided(x.shape, x.stride(), dtype=x.dtype, device=device)


def meta_like(x):
    return like(x, "meta")


def reference(inputs):
    a, b, sa, sb, op, res = inputs[:6]  # the scales word (row here) follows
    acc = (a.double() @ b.double().T) * sa.double().reshape(-1, 1) * sb.double().reshape(1, -1)
    if op == "linear_add":
        acc = acc + res.double()
    elif op == "linear_swiglu":
        gate, up = acc[:, 0::2], acc[:, 1::2]
        acc = gate * torch.sigmoid(gate) * up
    return acc.to(BF16)


@pytest.fixture
def cpu_launch(monkeypatch):
    """The library call replaced by `reference` on CPU tensors; returns the list of calls."""
    calls = []

    def launch(torch_, checked, inputs, out):
        calls.append(tuple(checked.shape))
        out.copy_(reference(inputs))

    monkeypatch.setattr(_torch_ops._specs["gemm"], "launch", launch)
    return calls


# ---- registration ------------------------------------------------------------------------------

def test_operators_and_schemas():
    gemm = torch.ops.jitgemm.gemm.default
    gemm_out = torch.ops.jitgemm.gemm_out.default
    inputs = ('Tensor a, Tensor b, Tensor scale_a, Tensor scale_b, str epilogue="linear", '
              'Tensor? residual=None, str scales="row"')
    assert str(gemm._schema) == "jitgemm::gemm(%s) -> Tensor" % inputs
    assert str(gemm_out._schema) == "jitgemm::gemm_out(%s, *, Tensor(a!) out) -> ()" % inputs
    # Only out is written; the functional operator writes none of its arguments.
    written = [a.name for a in gemm_out._schema.arguments if a.alias_info and a.alias_info.is_write]
    assert written == ["out"]
    assert not any(a.alias_info for a in gemm._schema.arguments)
    assert gemm._schema.returns[0].alias_info is None  # a fresh tensor, never an input


def test_inputs_keep_their_strides_under_inductor():
    tag = getattr(torch.Tag, "needs_exact_strides", None) or torch.Tag.needs_fixed_stride_order
    for op in (torch.ops.jitgemm.gemm.default, torch.ops.jitgemm.gemm_out.default):
        assert tag in op.tags


def test_setup_again_keeps_the_operators():
    before = dict(_torch_ops._ops)
    _torch_ops.setup()
    assert _torch_ops._ops == before and _torch_ops.unavailable is None


# ---- shape inference ---------------------------------------------------------------------------

@pytest.mark.parametrize("m", [0, 1, 17, 300])
@pytest.mark.parametrize("op", OPS)
def test_fake_tensors_get_the_real_output(op, m):
    real = operands(op, m)
    with FakeTensorMode():
        # Fake CUDA tensors need no GPU: torch.compile traces with such tensors.
        a, b, sa, sb, res = (like(x, "cuda") for x in real)
        got = jitgemm.gemm(a, b, sa, sb, epilogue=op, residual=res)
        out = torch.empty(m, nout(op), dtype=BF16, device="cuda")
        given = jitgemm.gemm(a, b, sa, sb, out=out, epilogue=op, residual=res)
    assert type(got).__name__ == "FakeTensor"
    assert tuple(got.shape) == (m, nout(op)) and got.dtype == BF16
    assert got.device == torch.device("cuda", 0) and got.is_contiguous()
    assert given is out


@pytest.mark.parametrize("op", OPS)
def test_meta_tensors_get_the_real_output(op):
    a, b, sa, sb, res = (meta_like(x) for x in operands(op, 17))
    got = jitgemm.gemm(a, b, sa, sb, epilogue=op, residual=res)
    assert got.is_meta and tuple(got.shape) == (17, nout(op)) and got.dtype == BF16
    # Row strides are allowed as in eager: a as a slice of wider rows.
    wide = torch.empty(17, K + 64, dtype=F8, device="meta")[:, :K]
    assert tuple(jitgemm.gemm(wide, b, sa, sb, epilogue=op, residual=res).shape) == (17, nout(op))


# Cases refused only for being on the CPU ("cpu", and the "-cpu" ones whose other arguments are
# valid) are accepted on meta tensors, as they should be: every other refusal must be the same.
FAKE_CASES = [c for c in gemm_arg_cases.cases(torch)
              if c[0] not in ("cpu", "not-a-tensor") and not c[0].endswith("-cpu")]


@pytest.mark.parametrize("kwargs,exc,words", [c[1:] for c in FAKE_CASES],
                         ids=[c[0] for c in FAKE_CASES])
def test_meta_tensors_are_refused_as_eager_refuses(kwargs, exc, words):
    """The fake implementation runs the eager checks: the same exception and message."""
    gemm_arg_cases.check({k: meta_like(v) for k, v in kwargs.items()}, exc, words)


# ---- opcheck -----------------------------------------------------------------------------------

def _opcheck_args(op, m, device):
    a, b, sa, sb, res = operands(op, m)
    args = (a, b, sa, sb, op, res)
    out = torch.empty(m, nout(op), dtype=BF16)
    if device == "meta":
        args, out = tuple(meta_like(x) for x in args), meta_like(out)
    return args, out


# opcheck's test_schema compares arguments before and after with torch.allclose, which has no
# FP8 kernel: with data it runs the other checks, and test_writes_only_out checks the schema.
WITH_DATA = ("test_autograd_registration", "test_faketensor", "test_aot_dispatch_dynamic")


def _assert_opcheck(op_overload, args, kwargs, test_utils=None):
    result = torch.library.opcheck(op_overload, args, kwargs,
                                   **({"test_utils": test_utils} if test_utils else {}))
    assert result and all(v == "SUCCESS" for v in result.values()), result


@pytest.mark.parametrize("op", OPS)
def test_opcheck_on_meta_tensors(op):
    args, out = _opcheck_args(op, 17, "meta")
    _assert_opcheck(torch.ops.jitgemm.gemm.default, args, {})
    _assert_opcheck(torch.ops.jitgemm.gemm_out.default, args, {"out": out})


@pytest.mark.parametrize("op", OPS)
def test_opcheck_with_data(op, cpu_launch):
    """With data, opcheck compares the real output's metadata with the fake's, and runs the
    operator through AOTAutograd with dynamic shapes."""
    args, out = _opcheck_args(op, 17, "cpu")
    _assert_opcheck(torch.ops.jitgemm.gemm.default, args, {}, WITH_DATA)
    _assert_opcheck(torch.ops.jitgemm.gemm_out.default, args, {"out": out}, WITH_DATA)
    assert cpu_launch


def _bytes(x):
    return x.view(torch.uint8).clone() if isinstance(x, torch.Tensor) else x


@pytest.mark.parametrize("op", OPS)
def test_writes_only_out(op, cpu_launch):
    """What the schema says: gemm writes none of its arguments, gemm_out writes out only."""
    args, out = _opcheck_args(op, 17, "cpu")
    out.view(torch.int16).fill_(-1)
    before = [_bytes(x) for x in args + (out,)]
    got = torch.ops.jitgemm.gemm(*args)
    after = [_bytes(x) for x in args + (out,)]
    assert all(not isinstance(x, torch.Tensor) or torch.equal(x, y) for x, y in zip(before, after))
    torch.ops.jitgemm.gemm_out(*args, out=out)
    after = [_bytes(x) for x in args + (out,)]
    for x, y in zip(before[:-1], after[:-1]):
        assert not isinstance(x, torch.Tensor) or torch.equal(x, y), "an input was written"
    assert torch.equal(out, got), "gemm_out did not write out"


# ---- torch.compile -----------------------------------------------------------------------------

class Layer(torch.nn.Module):
    """A layer holding its FP8 weight and channel scales, as a model would."""

    def __init__(self, b, sb, op):
        super().__init__()
        self.weight = torch.nn.Parameter(b, requires_grad=False)
        self.register_buffer("scale", sb)
        self.op = op

    def forward(self, a, sa, res=None, out=None):
        return jitgemm.gemm(a, self.weight, sa, self.scale, out=out, epilogue=self.op,
                            residual=res)


def _recording_backend(graphs):
    def backend(gm, example_inputs):
        graphs.append(gm)
        return gm.forward

    return backend


def _called(gm):
    return [n.target for n in gm.graph.nodes if n.op == "call_function"]


@pytest.mark.parametrize("with_out", [False, True], ids=["allocated", "out"])
@pytest.mark.parametrize("op", OPS)
def test_compile_fullgraph_puts_one_operator_in_the_graph(op, with_out):
    torch._dynamo.reset()
    a, b, sa, sb, res = (meta_like(x) for x in operands(op, 17))
    layer = Layer(b, sb, op)
    graphs = []
    compiled = torch.compile(layer, backend=_recording_backend(graphs), fullgraph=True)
    out = torch.empty(17, nout(op), dtype=BF16, device="meta") if with_out else None
    got = compiled(a, sa, res, out)
    assert len(graphs) == 1
    want = torch.ops.jitgemm.gemm_out.default if with_out else torch.ops.jitgemm.gemm.default
    assert _called(graphs[0]) == [want]
    assert tuple(got.shape) == (17, nout(op)) and got.dtype == BF16
    if with_out:
        assert got is out


def test_compile_refuses_a_wrong_out_when_tracing():
    torch._dynamo.reset()
    a, b, sa, sb, _ = (meta_like(x) for x in operands("linear_swiglu", 17))
    compiled = torch.compile(Layer(b, sb, "linear_swiglu"), backend="eager", fullgraph=True)
    with pytest.raises(RuntimeError, match=r"out must have shape \[M, Nout\] = \(17, 32\), "
                                           r"got \(17, 64\)"):
        compiled(a, sa, None, torch.empty(17, N, dtype=BF16, device="meta"))


def test_compile_with_dynamic_m():
    torch._dynamo.reset()
    a, b, sa, sb, _ = (meta_like(x) for x in operands("linear_swiglu", 40))
    graphs = []
    compiled = torch.compile(Layer(b, sb, "linear_swiglu"), backend=_recording_backend(graphs),
                             fullgraph=True, dynamic=True)
    for m in (40, 300, 7):
        got = compiled(meta_like(torch.empty(m, K, dtype=F8)), meta_like(torch.empty(m)))
        assert tuple(got.shape) == (m, N // 2)
    assert len(graphs) == 1, "a new M recompiled: %d graphs" % len(graphs)
    placeholders = [n for n in graphs[0].graph.nodes if n.op == "placeholder"]
    assert any(isinstance(n.meta.get("example_value"), torch.SymInt) for n in placeholders)


@pytest.mark.parametrize("strict", [True, False], ids=["strict", "non-strict"])
def test_export_puts_the_operator_in_the_graph(strict):
    a, b, sa, sb, _ = (meta_like(x) for x in operands("linear_swiglu", 17))
    program = torch.export.export(Layer(b, sb, "linear_swiglu"), (a, sa), strict=strict)
    assert _called(program.graph_module) == [torch.ops.jitgemm.gemm.default]
    (node,) = [n for n in program.graph.nodes if n.op == "output"][0].args[0]
    assert tuple(node.meta["val"].shape) == (17, N // 2)


def _run_compiled(op, backend, with_out, calls):
    """Compile a layer with fullgraph=True and check it against eager at a ragged M: the same
    values bit for bit, the caller's `out` written, and every compiled call reaching the
    operator's implementation."""
    torch._dynamo.reset()
    _, b, _, sb, _ = operands(op, 1, seed=99)
    layer = Layer(b, sb, op)
    compiled = torch.compile(layer, backend=backend, fullgraph=True)
    for seed, m in enumerate((300, 17, 1)):
        a, _, sa, _, res = operands(op, m, seed=seed)
        want = layer(a, sa, res)
        before = len(calls)
        if with_out:
            out = torch.full((m, nout(op)), float("nan"), dtype=BF16)
            got = compiled(a, sa, res, out)
            assert got is out, "the compiled layer must return the caller's out"
        else:
            got = compiled(a, sa, res)
        assert len(calls) == before + 1, "the compiled call did not reach the operator"
        assert torch.equal(got, want), "%s m=%d: compiled and eager differ" % (op, m)
        assert torch.equal(want, reference((a, b, sa, sb, op, res)))


@pytest.mark.parametrize("with_out", [False, True], ids=["allocated", "out"])
@pytest.mark.parametrize("op", OPS)
def test_compiled_aot_eager_matches_eager(op, with_out, cpu_launch):
    _run_compiled(op, "aot_eager", with_out, cpu_launch)


@pytest.mark.parametrize("with_out", [False, True], ids=["allocated", "out"])
@pytest.mark.parametrize("op", OPS)
def test_compiled_inductor_matches_eager(op, with_out, cpu_launch):
    _run_compiled(op, "inductor", with_out, cpu_launch)


# ---- the eager route ---------------------------------------------------------------------------

class _Seen(TorchDispatchMode):
    def __init__(self):
        super().__init__()
        self.ops = []

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        self.ops.append(func)
        return func(*args, **(kwargs or {}))


def test_eager_calls_skip_the_dispatcher(cpu_launch, monkeypatch):
    a, b, sa, sb, _ = operands("linear", 17)

    class Refuse:
        def __call__(self, *args, **kwargs):
            raise AssertionError("a plain eager call went through the dispatcher")

    monkeypatch.setitem(_torch_ops._ops, "gemm", (Refuse(), Refuse()))
    got = jitgemm.gemm(a, b, sa, sb)
    assert torch.equal(got, reference((a, b, sa, sb, "linear", None)))
    assert cpu_launch == [(17, N)]


def test_a_dispatch_mode_sees_the_operator(cpu_launch):
    a, b, sa, sb, _ = operands("linear", 17)
    out = torch.empty(17, N, dtype=BF16)
    with _Seen() as seen:
        jitgemm.gemm(a, b, sa, sb)
        jitgemm.gemm(a, b, sa, sb, out=out)
    assert seen.ops[0] == torch.ops.jitgemm.gemm.default
    assert torch.ops.jitgemm.gemm_out.default in seen.ops
    assert len(cpu_launch) == 2


def test_out_bumps_its_version_on_both_routes(cpu_launch):
    a, b, sa, sb, _ = operands("linear", 17)
    out = torch.empty(17, N, dtype=BF16)
    v = out._version
    jitgemm.gemm(a, b, sa, sb, out=out)
    assert out._version > v
    v = out._version
    torch.ops.jitgemm.gemm_out(a, b, sa, sb, out=out)
    assert out._version > v


def test_operator_on_cpu_tensors_names_the_device():
    """Without the stand-in, the operator reaches the library's own requirement."""
    a, b, sa, sb, _ = operands("linear", 17)
    with pytest.raises(ValueError, match="a must be on a CUDA device, got cpu"):
        torch.ops.jitgemm.gemm(a, b, sa, sb)
