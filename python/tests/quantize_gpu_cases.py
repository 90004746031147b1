"""The GPU checks of jitgemm.quantize_fp8_1x128, as plain functions that gpu_cases.all_cases()
lists, so that pytest (test_gemm_gpu.py) and the runner without pytest (run_gpu.py) run them.

The reference is written here in PyTorch, independently of the library's: amax per 1x128
group, scale = amax / 448 in float32 (1 for a group of zeros), the power-of-two rounding from
torch.frexp's exponent, and q = (x / scale).to(torch.float8_e4m3fn), PyTorch's own
round-to-nearest-even conversion. The data stays in the range where that conversion and the
kernel's saturating one agree (every |x / scale| <= 448 up to one float32 rounding), so q and
the scales must be equal bit for bit.
"""

import jitgemm
import quantize_arg_cases


def _reference(x, pow2):
    import torch

    m, k = x.shape
    groups = (k + 127) // 128
    wide = torch.zeros(m, groups * 128, dtype=torch.float32, device=x.device)
    wide[:, :k] = x.float().abs()
    amax = wide.view(m, groups, 128).amax(dim=2)
    # A tensor divisor: PyTorch divides by a Python scalar as a multiply by its reciprocal,
    # which is not the true division the recipe (and the kernel) rounds once.
    scale = torch.where(amax == 0, torch.ones_like(amax), amax / torch.full_like(amax, 448.0))
    if pow2:
        # scale = mant x 2^exp with mant in [0.5, 1): a power of two stays, any other scale
        # becomes 2^exp, and nothing goes below 2^-126 (exponent bits built directly, exact).
        mant, exp = torch.frexp(scale)
        up = ((torch.clamp(exp, min=-126) + 127) << 23).view(torch.float32)
        scale = torch.where((mant == 0.5) & (scale >= 2.0**-126), scale, up)
    full = scale.repeat_interleave(128, dim=1)[:, :k]
    q = (x.float() / full).to(torch.float8_e4m3fn)
    return q, scale


def _activation(m, k, seed):
    """BF16 rows of mixed magnitudes (groups spanning 2^-20 to 2^20), a zero group in row 0 and
    a single non-zero value among zeros in the last group of the last row."""
    import torch

    g = torch.Generator(device="cuda")
    g.manual_seed(seed)
    x = torch.randn(m, k, device="cuda", generator=g)
    groups = (k + 127) // 128
    e = torch.randint(-20, 21, (m, groups), device="cuda", generator=g).float()
    x = (x * torch.exp2(e).repeat_interleave(128, dim=1)[:, :k]).to(torch.bfloat16)
    x[0, :128] = 0
    x[m - 1, (groups - 1) * 128:] = 0
    x[m - 1, k - 1] = 3.0
    return x


def case_quantize_matches_torch(m, k, layout, pow2, seed=11):
    import torch

    x = _activation(m, k, seed)
    ld = None if layout == "k-major" else m + 3
    q, s = jitgemm.quantize_fp8_1x128(x, layout=layout, ld_sfa=ld, pow2_scales=pow2)
    torch.cuda.synchronize()
    groups = (k + 127) // 128
    assert q.dtype == torch.float8_e4m3fn and tuple(q.shape) == (m, k), (q.dtype, q.shape)
    assert tuple(s.shape) == (m, groups), s.shape
    want_stride = (groups, 1) if layout == "k-major" else (1, m + 3)
    assert s.stride() == want_stride or m == 1, (s.stride(), want_stride)
    rq, rs = _reference(x, pow2)
    assert torch.equal(s, rs), "scales differ in %d places" % int((s != rs).sum())
    diff = int((q.view(torch.uint8) != rq.view(torch.uint8)).sum())
    assert diff == 0, "%d of %d codes differ from PyTorch's" % (diff, m * k)
    return 0.0


def case_quantize_feeds_gemm(seed=12):
    """x -> quantize (m-major, padded) -> gemm(scales="128x128"), against FP64 from the
    dequantized operands, with the bound gpu_cases uses."""
    import torch

    m, n, k = 300, 384, 1552
    x = _activation(m, k, seed)
    q, s = jitgemm.quantize_fp8_1x128(x, layout="m-major", ld_sfa=m + 5)
    g = torch.Generator(device="cuda")
    g.manual_seed(seed + 1)
    mag = torch.randint(1, 127, (n, k), dtype=torch.uint8, device="cuda", generator=g)
    b = (mag | (torch.randint(0, 2, (n, k), dtype=torch.uint8, device="cuda", generator=g) << 7))
    b = b.view(torch.float8_e4m3fn)
    sb = torch.rand((n + 127) // 128, (k + 127) // 128, device="cuda", generator=g) + 0.5
    out = jitgemm.gemm(q, b, s, sb, scales="128x128")
    torch.cuda.synchronize()
    a = q.float().double() * s.double().repeat_interleave(128, dim=1)[:, :k]
    sbd = sb.double().repeat_interleave(128, dim=0)[:n].repeat_interleave(128, dim=1)[:, :k]
    bd = b.float().double() * sbd
    ref = a @ bd.T
    tol = ref.abs() * 2.0**-8 + (a.abs() @ bd.abs().T) * 2.0**-10 + 2.0**-100
    ratio = float(((out.double() - ref).abs() / tol).max())
    assert ratio <= 1.0, "quantize -> gemm: worst error is %.3g x the bound" % ratio
    return ratio


def cases():
    """(name, function, args) of every quantizer case."""
    out = []
    for m, k in ((1, 1552), (17, 48), (300, 7184)):
        for layout in ("k-major", "m-major"):
            for pow2 in (False, True):
                name = "quantize_m%d_k%d_%s%s" % (m, k, layout, "_pow2" if pow2 else "")
                out.append((name, case_quantize_matches_torch, (m, k, layout, pow2)))
    out.append(("quantize_feeds_gemm", case_quantize_feeds_gemm, ()))
    out.append(("quantize_argument_checks", quantize_arg_cases.check_all, ()))
    return out
