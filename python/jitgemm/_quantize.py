"""jitgemm.quantize_fp8_1x128 on PyTorch tensors: the BF16 activation quantizer whose output is
the A operand of jitgemm.gemm(..., scales="128x128"). Checks in Python, then one
jit_quantize_fp8_1x128 on the current stream (docs/kernels-quantize.md gives the recipe).
"""

import ctypes

from . import _errors, _lib
from ._gemm import _dtype, _operand_dtypes, _tensor, context

_LAYOUTS = {"k-major": _lib.SFA_K_MAJOR, "m-major": _lib.SFA_M_MAJOR}


def _torch():
    try:
        import torch
    except ImportError as e:
        raise ImportError("jitgemm.quantize_fp8_1x128 needs PyTorch (import torch failed: %s)"
                          % e) from None
    return torch


def _x_stride(x, m, k):
    """The row stride of x [M, K] in elements: rows contiguous, 16-byte rows."""
    if k % 16:
        raise ValueError("K must be a multiple of 16 (the GEMM reads q in 16-byte rows), got K = %d"
                         % k)
    if k > 1 and x.stride(1) != 1:
        raise ValueError("x must have contiguous rows (stride(1) == 1), got strides %s"
                         % (tuple(x.stride()),))
    lda = x.stride(0) if m > 1 else k
    if lda < k or lda % 8:
        raise ValueError("x: row stride %d must be at least K = %d and a multiple of 8 elements "
                         "(16 bytes)" % (lda, k))
    return lda


def _sfa_ld(layout, ld_sfa, m, groups):
    """The scales' leading dimension for `layout` (None: packed), checked."""
    if not isinstance(layout, str) or layout not in _LAYOUTS:
        raise ValueError("layout must be one of %s, got %r" % (", ".join(_LAYOUTS), layout))
    need = groups if layout == "k-major" else m
    if ld_sfa is None:
        return need
    if isinstance(ld_sfa, bool) or not isinstance(ld_sfa, int) or ld_sfa < need:
        raise ValueError("ld_sfa must be an integer >= %d (%s), got %r"
                         % (need, "ceil(K/128)" if layout == "k-major" else "M", ld_sfa))
    return ld_sfa


def _scales_alloc(torch, layout, ld_sfa, m, groups, device):
    """float32 storage for the scales and its [M, ceil(K/128)] view in `layout`: the view is
    what jitgemm.gemm takes as scale_a (k-major: strides (ld_sfa, 1); m-major: (1, ld_sfa))."""
    if layout == "k-major":
        storage = torch.empty((m, ld_sfa), dtype=torch.float32, device=device)
        return storage, storage[:, :groups]
    storage = torch.empty((groups, ld_sfa), dtype=torch.float32, device=device)
    return storage, storage[:, :m].t()


def quantize_fp8_1x128(x, layout="k-major", ld_sfa=None, pow2_scales=False):
    """Quantize a BF16 activation to the 128x128 block-scaled GEMM's A operand: per row and per
    128 consecutive K (a partial last group has its own scale), scale = amax|x| / 448 (1 for a
    group of zeros) and q = float8_e4m3fn(x / scale), rounded to nearest even and saturated.

    x [M, K]: torch.bfloat16 on a CUDA device, rows contiguous (a row stride is allowed; it
        must be a multiple of 8 elements), K a multiple of 16
    layout: "k-major" (scales row-major, ceil(K/128) per row) or "m-major" (the M scales of a
        group contiguous, as DeepGEMM and torch lay them out)
    ld_sfa: the scales' leading dimension (None: packed; m-major needs ld_sfa >= M, and a
        caller may pad it, e.g. to a multiple of 4)
    pow2_scales: round each scale up to a power of two, at least 2^-126 (UE8M0 values in FP32)
    Runs on torch.cuda.current_stream() and returns (q, scales): q [M, K] torch.float8_e4m3fn,
    scales a [M, ceil(K/128)] float32 view in the layout asked for, which jitgemm.gemm(q, b,
    scales, scale_b, scales="128x128") reads as it is.
    """
    torch = _torch()
    _operand_dtypes(torch)  # q is float8_e4m3fn
    _tensor(torch, x, "x")
    _dtype(x, "x", (torch.bfloat16,))
    if not isinstance(pow2_scales, bool):
        raise TypeError("pow2_scales must be True or False, got %r" % (pow2_scales,))
    if x.dim() != 2:
        raise ValueError("x must be 2-D [M, K], got shape %s" % (tuple(x.shape),))
    m, k = x.shape
    if k == 0:
        raise ValueError("K must be positive, got x of shape %s" % (tuple(x.shape),))
    lda = _x_stride(x, m, k)
    groups = (k + 127) // 128
    ld_sfa = _sfa_ld(layout, ld_sfa, m, groups)
    # The device last, so that a wrong dtype, shape or layout is named even on a CPU tensor.
    device = x.device
    if device.type != "cuda":
        raise ValueError("x must be on a CUDA device, got %s" % device)
    storage, scales = _scales_alloc(torch, layout, ld_sfa, m, groups, device)
    q = torch.empty((m, k), dtype=torch.float8_e4m3fn, device=device)
    if m == 0:
        return q, scales

    ctx = context(device)
    lib = ctx.lib
    p = _lib.problem_init(lib)
    p.epilogue = _lib.EPILOGUE_QUANTIZE_FP8_1X128
    p.m, p.k = m, k
    p.lda, p.ldd = lda, k
    p.sfa_layout, p.ld_sfa = _LAYOUTS[layout], ld_sfa
    o = _lib.quantize_operands_init(lib)
    o.x, o.q, o.scales = x.data_ptr(), q.data_ptr(), storage.data_ptr()
    o.pow2_scales = 1 if pow2_scales else 0
    with torch.cuda.device(device):
        stream = torch.cuda.current_stream(device).cuda_stream
        st = lib.jit_quantize_fp8_1x128(ctx.handle, ctypes.byref(p), ctypes.byref(o),
                                        ctypes.c_void_p(stream))
    _errors.check(st, ctx.handle)
    return q, scales
