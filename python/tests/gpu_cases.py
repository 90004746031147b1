"""The GPU checks of jitgemm.gemm, as plain functions, so that pytest (test_gemm_gpu.py) and a
bare interpreter (run_gpu.py, for a host without pytest) run the same code.

Each case draws random E4M3 inputs (finite, never zero), poisons the output with 0xFFFF (a bf16
NaN) and compares every element with an FP64 reference computed from the same quantized
inputs. The tolerance is half a bf16 ulp of the result (2^-8 relative, as rounding to bf16
allows) plus 2^-12 of the sum of |terms| (FP32 accumulation with the Hopper wgmma's promotion
interval), the bound bench/torch_anchor.py uses.
"""

import gemm_arg_cases
import jitgemm
import quantize_gpu_cases

OPS = ("linear", "linear_add", "linear_swiglu")
RAGGED_M = (1, 17, 300)
N, K = 384, 512


def available():
    """None when the GPU cases can run, else why not."""
    try:
        import torch
    except ImportError:
        return "PyTorch is not installed"
    if not torch.cuda.is_available():
        return "no CUDA GPU"
    if not hasattr(torch, "float8_e4m3fn"):
        return "this PyTorch has no float8_e4m3fn"
    return None


def _gen(seed):
    import torch

    g = torch.Generator(device="cuda")
    g.manual_seed(seed)
    return g


def random_e4m3(rows, k, gen):
    """E4M3 codes 1..126 with a random sign: finite and never zero."""
    import torch

    mag = torch.randint(1, 127, (rows, k), dtype=torch.uint8, device="cuda", generator=gen)
    sign = torch.randint(0, 2, (rows, k), dtype=torch.uint8, device="cuda", generator=gen) << 7
    return (mag | sign).view(torch.float8_e4m3fn)


class Inputs:
    """One operand set; the scales bring each dot product to about 4 x [0.5, 2]."""

    def __init__(self, op, m, n, k, seed):
        import torch

        gen = _gen(seed)
        self.op, self.m, self.n, self.k = op, m, n, k
        self.a = random_e4m3(m, k, gen)
        self.b = random_e4m3(n, k, gen)
        rms_a = self.a.float().pow(2).mean(dim=1).sqrt()
        rms_b = self.b.float().pow(2).mean(dim=1).sqrt()
        ua = torch.rand(m, device="cuda", generator=gen) * 1.5 + 0.5
        ub = torch.rand(n, device="cuda", generator=gen) * 1.5 + 0.5
        self.sa = (ua * 4.0 / (rms_a * k**0.5)).float().contiguous()
        self.sb = (ub / rms_b).float().contiguous()
        self.res = None
        if op == "linear_add":
            self.res = (torch.rand(m, n, device="cuda", generator=gen) * 8 - 4).to(torch.bfloat16)
        self.nout = n // 2 if op == "linear_swiglu" else n

    def poisoned_out(self, width=None):
        import torch

        out = torch.empty(self.m, width or self.nout, dtype=torch.bfloat16, device="cuda")
        out.view(torch.int16).fill_(-1)
        return out

    def reference(self):
        """FP64 reference and the bound of each element, from the quantized inputs."""
        import torch

        a = self.a.float().double()
        b = self.b.float().double()
        sa = self.sa.double()[:, None]
        sb = self.sb.double()[None, :]
        acc = (a @ b.T) * sa * sb
        mag = (a.abs() @ b.abs().T) * sa * sb
        if self.op == "linear":
            ref, rmag = acc, mag
        elif self.op == "linear_add":
            r = self.res.double()
            ref, rmag = acc + r, mag + r.abs()
        else:
            g, u, gm, um = acc[:, 0::2], acc[:, 1::2], mag[:, 0::2], mag[:, 1::2]
            s = torch.sigmoid(g)
            silu = g * s
            ref = silu * u
            rmag = (u * s * (1.0 + g * (1.0 - s))).abs() * gm + silu.abs() * um
        tol = ref.abs() * 2.0**-8 + rmag * 2.0**-10 + 2.0**-100
        return ref, tol

    def run(self, out=None):
        return jitgemm.gemm(self.a, self.b, self.sa, self.sb, out=out, epilogue=self.op,
                            residual=self.res)


def assert_close(got, inputs, what):
    """Every element written, finite and within the bound of the FP64 reference."""
    import torch

    assert got.dtype == torch.bfloat16, "%s: out is %s" % (what, got.dtype)
    unwritten = int((got.view(torch.int16) == -1).sum())
    assert unwritten == 0, "%s: %d outputs still hold the poison" % (what, unwritten)
    ref, tol = inputs.reference()
    err = (got.double() - ref).abs()
    assert bool(torch.isfinite(err).all()), "%s: non-finite outputs" % what
    ratio = float((err / tol).max())
    assert ratio <= 1.0, "%s: worst error is %.3g x the bound" % (what, ratio)
    return ratio


def case_epilogue_ragged(op, m, seed=1):
    import torch

    x = Inputs(op, m, N, K, seed)
    out = x.poisoned_out()
    got = x.run(out)
    assert got is out, "gemm must return the out it was given"
    torch.cuda.synchronize()
    return assert_close(out, x, "%s m=%d" % (op, m))


def case_allocates_out(seed=2):
    import torch

    x = Inputs("linear_swiglu", 17, N, K, seed)
    out = x.run()
    torch.cuda.synchronize()
    assert tuple(out.shape) == (17, N // 2), "allocated out has shape %s" % (tuple(out.shape),)
    return assert_close(out, x, "allocated out")


def case_row_strides(seed=3):
    """a, b and out as row slices of wider buffers (strides the C API supports)."""
    import torch

    m, n, k = 33, N, K
    x = Inputs("linear", m, n, k, seed)
    wide_a = torch.zeros(m, k + 64, dtype=torch.uint8, device="cuda").view(torch.float8_e4m3fn)
    wide_a[:, :k] = x.a
    wide_b = torch.zeros(n, k + 32, dtype=torch.uint8, device="cuda").view(torch.float8_e4m3fn)
    wide_b[:, :k] = x.b
    x.a, x.b = wide_a[:, :k], wide_b[:, :k]
    out = x.poisoned_out(n + 8)
    x.run(out[:, :n])
    torch.cuda.synchronize()
    assert int((out[:, n:].view(torch.int16) != -1).sum()) == 0, "wrote past the row in out"
    x.a, x.b = x.a.contiguous(), x.b.contiguous()
    return assert_close(out[:, :n].contiguous(), x, "strided")


def case_against_scaled_mm(m, seed=4):
    """The same quantized inputs through torch._scaled_mm (row-wise scales, bf16 out)."""
    import torch

    x = Inputs("linear", m, N, K, seed)
    got = x.run(x.poisoned_out())
    mp = (m + 15) // 16 * 16  # _scaled_mm wants M a multiple of 16
    a = torch.zeros(mp, K, dtype=torch.uint8, device="cuda").view(torch.float8_e4m3fn)
    a[:m] = x.a
    sa = torch.ones(mp, 1, dtype=torch.float32, device="cuda")
    sa[:m, 0] = x.sa
    ref = torch._scaled_mm(a, x.b.t(), scale_a=sa, scale_b=x.sb.view(1, -1),
                           out_dtype=torch.bfloat16)[:m]
    torch.cuda.synchronize()
    _, tol = x.reference()
    # Both round one FP32-ish sum to bf16: allow both roundings plus the accumulation bound.
    ratio = float(((got.double() - ref.double()).abs() / (2 * tol)).max())
    assert ratio <= 1.0, "m=%d: jitgemm and torch._scaled_mm differ by %.3g x the bound" % (m, ratio)
    return ratio


def case_cuda_graph(seed=5):
    """Warm up, capture one call in a CUDA graph, then replay it on new inputs written into the
    captured buffers: the replay must compute on what the buffers hold at replay time."""
    import torch

    x = Inputs("linear_add", 17, N, K, seed)
    out = x.poisoned_out()
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        x.run(out)  # warm-up: compiles or loads the kernel outside the capture
    torch.cuda.current_stream().wait_stream(side)
    torch.cuda.synchronize()
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        x.run(out)
    fresh = Inputs("linear_add", 17, N, K, seed + 100)
    x.a.copy_(fresh.a)
    x.b.copy_(fresh.b)
    x.sa.copy_(fresh.sa)
    x.sb.copy_(fresh.sb)
    x.res.copy_(fresh.res)
    out.view(torch.int16).fill_(-1)
    graph.replay()
    torch.cuda.synchronize()
    return assert_close(out, x, "graph replay")


def case_errors_on_gpu():
    """A misaligned operand is the library's JIT_MISALIGNED, raised as JitError."""
    import torch

    x = Inputs("linear", 16, N, K, 6)
    raw = torch.zeros(16 * K + 16, dtype=torch.uint8, device="cuda")
    a = raw[1 : 1 + 16 * K].view(torch.float8_e4m3fn).view(16, K)  # 1 byte off 16-byte alignment
    try:
        jitgemm.gemm(a, x.b, x.sa, x.sb)
    except jitgemm.JitError as e:
        assert e.status == "JIT_MISALIGNED", e
        assert "aligned" in e.message, e.message
    else:
        raise AssertionError("a misaligned a was accepted")


def case_block_scaled(m_major, m, seed=7):
    """scales="128x128": SFA [M, K/128] k-major or m-major (a transposed [K/128, M] tensor, as
    torch and DeepGEMM store it), SFB [N/128, K/128], N and K not multiples of 128 (partial last
    blocks), against an FP64 reference from the same bytes and scales."""
    import torch

    n, k = N + 40, K + 16
    kb, nb = (k + 127) // 128, (n + 127) // 128
    gen = _gen(seed)
    a, b = random_e4m3(m, k, gen), random_e4m3(n, k, gen)
    # Each group's scale 2^-3..2^3 around a normalisation: a scale in the wrong place shows.
    norm = 4.0 / (float(a.float().pow(2).mean().sqrt() * b.float().pow(2).mean().sqrt()) * k**0.5)
    sfa_t = torch.exp2(torch.randint(-3, 4, (kb, m), device="cuda", generator=gen).float()) * norm
    sfa = sfa_t.t() if m_major else sfa_t.t().contiguous()
    sfb = torch.exp2(torch.randint(-3, 4, (nb, kb), device="cuda", generator=gen).float())
    out = torch.empty(m, n, dtype=torch.bfloat16, device="cuda")
    out.view(torch.int16).fill_(-1)
    jitgemm.gemm(a, b, sfa, sfb, out=out, scales="128x128")
    torch.cuda.synchronize()
    ad, bd = a.float().double(), b.float().double()
    ref = torch.zeros(m, n, dtype=torch.float64, device="cuda")
    mag = torch.zeros_like(ref)
    for g in range(kb):
        blk = slice(128 * g, min(128 * (g + 1), k))
        sc = sfa[:, g].double()[:, None] * sfb[:, g].double().repeat_interleave(128)[None, :n]
        ref += (ad[:, blk] @ bd[:, blk].T) * sc
        mag += (ad[:, blk].abs() @ bd[:, blk].abs().T) * sc.abs()
    unwritten = int((out.view(torch.int16) == -1).sum())
    assert unwritten == 0, "128x128 m=%d: %d outputs still hold the poison" % (m, unwritten)
    tol = ref.abs() * 2.0**-8 + mag * 2.0**-10 + 2.0**-100
    ratio = float(((out.double() - ref).abs() / tol).max())
    assert ratio <= 1.0, "128x128 m=%d: worst error is %.3g x the bound" % (m, ratio)
    return ratio


def all_cases():
    """(name, function, args) of every case."""
    cases = [("epilogue_%s_m%d" % (op, m), case_epilogue_ragged, (op, m))
             for op in OPS for m in RAGGED_M]
    cases += [("allocates_out", case_allocates_out, ()), ("row_strides", case_row_strides, ())]
    cases += [("scaled_mm_m%d" % m, case_against_scaled_mm, (m,)) for m in RAGGED_M]
    cases += [("cuda_graph", case_cuda_graph, ()), ("misaligned", case_errors_on_gpu, ())]
    cases += [("block_scaled_%s_m%d" % ("m_major" if mm else "k_major", m), case_block_scaled,
               (mm, m)) for mm in (False, True) for m in RAGGED_M]
    # The argument checks too, for a host where only this runner (no pytest) runs.
    cases += [("argument_checks", gemm_arg_cases.check_all, ())]
    cases += quantize_gpu_cases.cases()
    return cases
