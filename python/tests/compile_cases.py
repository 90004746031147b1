"""The GPU checks of jitgemm.gemm as a PyTorch operator: opcheck on CUDA tensors, and a layer
calling jitgemm.gemm under torch.compile(fullgraph=True, backend="inductor"), with and without
CUDA graphs (mode="reduce-overhead"). Plain functions, so that pytest
(test_torch_compile_gpu.py) and the runner without pytest (run_gpu.py) run the same code.

Each compiled call gets fresh random inputs (gpu_cases.Inputs: E4M3 never zero) at a ragged M
and is compared with the eager call on the same inputs, bit for bit (the same kernel, whose
split-K sums in a fixed order), and with the FP64 reference within gpu_cases' bound.
"""

import gpu_cases
import jitgemm
from gpu_cases import K, N, OPS, RAGGED_M, Inputs

# opcheck's test_schema compares arguments with torch.allclose, which has no FP8 kernel;
# case_writes_only_out checks what the schema declares instead.
OPCHECK_UTILS = ("test_autograd_registration", "test_faketensor", "test_aot_dispatch_dynamic")
CALLS_PER_M = 4  # cudagraph trees: a warm-up run, a recording, then replays


def available():
    """None when the cases can run, else why not."""
    why = gpu_cases.available()
    if why:
        return why
    from jitgemm import _torch_ops

    return _torch_ops.unavailable


def _layer(torch, x):
    """A module holding x's weight and channel scales and calling jitgemm.gemm."""

    class Layer(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.weight = torch.nn.Parameter(x.b, requires_grad=False)
            self.register_buffer("scale", x.sb)

        def forward(self, a, sa, res=None, out=None):
            return jitgemm.gemm(a, self.weight, sa, self.scale, out=out, epilogue=x.op,
                                residual=res)

    return Layer()


def _fresh(weights, m, seed):
    """New activations, token scales and residual at M = m for the weights of `weights`."""
    y = Inputs(weights.op, m, N, K, seed)
    y.b, y.sb = weights.b, weights.sb
    return y


class _LaunchSpy:
    """Counts the library calls the operator makes, and those made during a stream capture."""

    def __init__(self, torch):
        from jitgemm import _torch_ops

        self.torch, self.spec = torch, _torch_ops._specs["gemm"]
        self.inner, self.calls, self.captured = self.spec.launch, 0, 0

    def __enter__(self):
        def launch(torch, checked, inputs, out):
            self.calls += 1
            self.captured += bool(torch.cuda.is_current_stream_capturing())
            self.inner(torch, checked, inputs, out)

        self.spec.launch = launch
        return self

    def __exit__(self, *exc):
        self.spec.launch = self.inner


def _same(got, want, what):
    import torch

    assert tuple(got.shape) == tuple(want.shape), "%s: shape %s, eager %s" % (
        what, tuple(got.shape), tuple(want.shape))
    differ = int((got.view(torch.int16) != want.view(torch.int16)).sum())
    assert differ == 0, "%s: %d outputs differ from eager" % (what, differ)


def case_opcheck(op, m=17, seed=20):
    """torch.library.opcheck of both operators on CUDA tensors."""
    import torch

    x = Inputs(op, m, N, K, seed)
    args = (x.a, x.b, x.sa, x.sb, op, x.res)
    for overload, kwargs in ((torch.ops.jitgemm.gemm.default, {}),
                             (torch.ops.jitgemm.gemm_out.default, {"out": x.poisoned_out()})):
        result = torch.library.opcheck(overload, args, kwargs, test_utils=OPCHECK_UTILS)
        assert all(v == "SUCCESS" for v in result.values()), result


def case_writes_only_out(op, m=17, seed=21):
    """gemm writes none of its arguments; gemm_out writes out and nothing else."""
    import torch

    x = Inputs(op, m, N, K, seed)
    args = [x.a, x.b, x.sa, x.sb, x.res]
    before = [t.view(torch.uint8).clone() for t in args if t is not None]
    got = torch.ops.jitgemm.gemm(x.a, x.b, x.sa, x.sb, op, x.res)
    out = x.poisoned_out()
    torch.ops.jitgemm.gemm_out(x.a, x.b, x.sa, x.sb, op, x.res, out=out)
    torch.cuda.synchronize()
    after = [t.view(torch.uint8) for t in args if t is not None]
    assert all(torch.equal(u, v) for u, v in zip(before, after)), "an input was written"
    _same(out, got, "%s gemm_out" % op)
    return gpu_cases.assert_close(got, x, "%s operator" % op)


def case_compiled(op, mode, seed=30):
    """The layer compiled with fullgraph=True at M = 300, 17, 1, CALLS_PER_M calls each on
    fresh inputs. With mode="reduce-overhead" the operator must be captured in a CUDA graph
    and the last call of each M must be a pure replay: no library call from Python."""
    import torch

    torch._dynamo.reset()
    weights = Inputs(op, 1, N, K, seed)
    layer = _layer(torch, weights)
    compiled = torch.compile(layer, backend="inductor", mode=mode, fullgraph=True)
    worst = 0.0
    for m in RAGGED_M:
        compiled_calls = 0
        with _LaunchSpy(torch) as spy:
            for i in range(CALLS_PER_M):
                y = _fresh(weights, m, seed + 100 * m + i)
                want = layer(y.a, y.sa, y.res)  # eager: the direct route, counted by the spy too
                if mode == "reduce-overhead":
                    torch.compiler.cudagraph_mark_step_begin()
                before = spy.calls
                got = compiled(y.a, y.sa, y.res)
                torch.cuda.synchronize()
                compiled_calls += spy.calls - before
                what = "%s %s m=%d call %d" % (op, mode, m, i)
                _same(got, want, what)
                worst = max(worst, gpu_cases.assert_close(got.clone(), y, what))
                if mode == "reduce-overhead" and i == CALLS_PER_M - 1:
                    assert spy.calls == before, "%s: the last call was not a graph replay" % what
        if mode == "reduce-overhead":
            assert spy.captured >= 1, "%s m=%d: no call was captured in a CUDA graph" % (op, m)
        else:
            assert compiled_calls == CALLS_PER_M, "%s m=%d: %d operator calls for %d compiled " \
                "calls" % (op, m, compiled_calls, CALLS_PER_M)
    return worst


def case_compiled_out(op, seed=40):
    """The layer compiled with fullgraph=True writing a caller's out (gemm_out): the tensor the
    caller passed is written, and returned."""
    import torch

    torch._dynamo.reset()
    weights = Inputs(op, 1, N, K, seed)
    layer = _layer(torch, weights)
    compiled = torch.compile(layer, backend="inductor", fullgraph=True)
    worst = 0.0
    for m in RAGGED_M:
        y = _fresh(weights, m, seed + m)
        want = layer(y.a, y.sa, y.res)
        out = y.poisoned_out()
        got = compiled(y.a, y.sa, y.res, out)
        torch.cuda.synchronize()
        assert got is out, "%s m=%d: the compiled layer returned another tensor" % (op, m)
        _same(out, want, "%s out m=%d" % (op, m))
        worst = max(worst, gpu_cases.assert_close(out, y, "%s out m=%d" % (op, m)))
    return worst


def all_cases():
    """(name, function, args) of every case."""
    cases = [("opcheck_%s" % op, case_opcheck, (op,)) for op in OPS]
    cases += [("writes_only_out_%s" % op, case_writes_only_out, (op,)) for op in OPS]
    cases += [("compiled_%s_%s" % (op, mode), case_compiled, (op, mode))
              for op in OPS for mode in ("default", "reduce-overhead")]
    cases += [("compiled_out_%s" % op, case_compiled_out, (op,)) for op in OPS]
    return cases
