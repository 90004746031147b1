"""jitgemm.gemm_grouped on PyTorch tensors: checks in Python, then one jit_gemm_grouped on the
current stream (include/jitgemm.h).

The rows per expert stay on the GPU: `offsets` or `counts` is a device tensor the kernel reads,
never copied to the host, so after one warm-up call the call can be captured in a CUDA graph and
replayed with new routing written into the same tensor.
"""

import ctypes

from . import _errors, _gemm, _lib

_EPILOGUES = {
    "linear": _lib.EPILOGUE_LINEAR,
    "linear_swiglu": _lib.EPILOGUE_LINEAR_SWIGLU,
}


def _row_stride(x, name, shape_text, shape):
    """A tensor of `shape` whose last dimension is contiguous and whose rows are evenly spaced
    across every leading dimension (one row stride, as the kernel's 2-D tensor map needs);
    returns that row stride in elements."""
    if tuple(x.shape) != tuple(shape):
        raise ValueError("%s must have shape %s = %s, got %s"
                         % (name, shape_text, tuple(shape), tuple(x.shape)))
    if shape[-1] > 1 and x.stride(-1) != 1:
        raise ValueError("%s must have contiguous rows (stride(-1) == 1), got strides %s"
                         % (name, tuple(x.stride())))
    ld = x.stride(-2) if x.dim() >= 2 and x.shape[-2] > 1 else shape[-1]
    if ld < shape[-1]:
        raise ValueError("%s: row stride %d is smaller than a row (%d elements)"
                         % (name, ld, shape[-1]))
    if x.dim() == 3 and x.shape[0] > 1 and x.stride(0) != x.shape[1] * ld:
        raise ValueError("%s must hold its [%s] matrices one after another with one row "
                         "stride (stride(0) == %d), got strides %s"
                         % (name, shape_text, x.shape[1] * ld, tuple(x.stride())))
    return ld


def _int32_vector(torch, x, name, count, device):
    _gemm._tensor(torch, x, name)
    if x.dtype != torch.int32:
        raise TypeError("%s must be torch.int32, got %s" % (name, x.dtype))
    if x.dim() != 1 or x.numel() != count or not x.is_contiguous():
        raise ValueError("%s must be a contiguous int32 vector of %d, got shape %s"
                         % (name, count, tuple(x.shape)))
    if x.device != device:
        raise ValueError("%s is on %s, a on %s: the kernel reads it on the GPU"
                         % (name, x.device, device))


def gemm_grouped(a, b, scale_a, scale_b, offsets=None, counts=None, out=None, epilogue="linear",
                 expected_m=None):
    """Every expert of a mixture-of-experts layer in one jitgemm kernel:
    out[r] = epilogue((a[r] @ b[g].T) * scale_a[r] * scale_b[g]) for the rows r of expert g.

    b [G, N, K]: torch.float8_e4m3fn, one K-major weight matrix per expert; scale_b [G, N]
    float32. Then one of two layouts:
      contiguous: a [T, K] (rows of expert 0, then 1, ...), offsets [G + 1] int32 on the GPU
        (expert g has rows offsets[g] .. offsets[g+1] - 1, any count, 0 included), scale_a [T],
        out [T, Nout]; rows past offsets[G] are not written.
      masked: a [G, max_M, K], counts [G] int32 on the GPU (expert g's first counts[g] rows),
        scale_a [G, max_M], out [G, max_M, Nout]; rows past a count are not written.
    epilogue: "linear" (Nout = N) or "linear_swiglu" (b rows are gate/up pairs, Nout = N / 2).
    expected_m: the rows an expert is expected to have (planning only; default T / G): it picks
        the kernel, so keep it steady across steps. The counts are never read on the host.
    Runs on torch.cuda.current_stream() and returns out (bfloat16, allocated when None).
    """
    torch = _gemm._torch()
    for x, name in ((a, "a"), (b, "b"), (scale_a, "scale_a"), (scale_b, "scale_b")):
        _gemm._tensor(torch, x, name)
    if not isinstance(epilogue, str) or epilogue not in _EPILOGUES:
        raise ValueError("epilogue must be one of %s, got %r" % (", ".join(_EPILOGUES), epilogue))
    if (offsets is None) == (counts is None):
        raise ValueError("give offsets (contiguous layout) or counts (masked layout), one of them")
    masked = counts is not None
    fp8 = _gemm._operand_dtypes(torch)
    _gemm._dtype(a, "a", tuple(fp8))
    _gemm._dtype(b, "b", tuple(fp8))
    if b.dim() != 3:
        raise ValueError("b must be [G, N, K], got shape %s" % (tuple(b.shape),))
    g, n, k = b.shape
    if g < 1 or n < 1 or k < 1:
        raise ValueError("b [G, N, K] = %s must not be empty" % (tuple(b.shape),))
    if epilogue == "linear_swiglu" and n % 2:
        raise ValueError("linear_swiglu needs an even N (b rows are gate/up pairs), got N = %d" % n)
    nout = n // 2 if epilogue == "linear_swiglu" else n
    if masked:
        if a.dim() != 3 or a.shape[0] != g or a.shape[2] != k:
            raise ValueError("masked layout: a must be [G, max_M, K] = [%d, max_M, %d], got %s"
                             % (g, k, tuple(a.shape)))
        max_m = a.shape[1]
        rows_shape, out_shape, sa_shape = (g, max_m, k), (g, max_m, nout), (g, max_m)
        m = g * max_m
    else:
        if a.dim() != 2 or a.shape[1] != k:
            raise ValueError("contiguous layout: a must be [T, K] with K = %d, got %s"
                             % (k, tuple(a.shape)))
        m = a.shape[0]
        rows_shape, out_shape, sa_shape = (m, k), (m, nout), (m,)
    lda = _row_stride(a, "a", "rows, K", rows_shape)
    ldb = _row_stride(b, "b", "G, N, K", (g, n, k))
    _gemm._dtype(scale_a, "scale_a", (torch.float32,))
    _gemm._dtype(scale_b, "scale_b", (torch.float32,))
    if tuple(scale_a.shape) != sa_shape or not scale_a.is_contiguous():
        raise ValueError("scale_a must be a contiguous float32 %s, one per row of a, got %s"
                         % (sa_shape, tuple(scale_a.shape)))
    if tuple(scale_b.shape) != (g, n) or not scale_b.is_contiguous():
        raise ValueError("scale_b must be a contiguous float32 (G, N) = (%d, %d), got %s"
                         % (g, n, tuple(scale_b.shape)))
    device = a.device
    if device.type != "cuda":
        raise ValueError("a must be on a CUDA device, got %s" % device)
    for x, name in ((b, "b"), (scale_a, "scale_a"), (scale_b, "scale_b"), (out, "out")):
        if x is not None and x.device != device:
            raise ValueError("%s is on %s, a on %s: every tensor must be on one device"
                             % (name, x.device, device))
    if masked:
        _int32_vector(torch, counts, "counts", g, device)
    else:
        _int32_vector(torch, offsets, "offsets", g + 1, device)
    if out is None:
        out = torch.empty(out_shape, dtype=torch.bfloat16, device=device)
    _gemm._tensor(torch, out, "out")
    _gemm._dtype(out, "out", (torch.bfloat16,))
    ldd = _row_stride(out, "out", "rows, Nout", out_shape)
    if m == 0:
        return out
    if expected_m is not None and (not isinstance(expected_m, int) or expected_m < 1):
        raise ValueError("expected_m must be a positive int, got %r" % (expected_m,))

    ctx = _gemm.context(device)
    lib = ctx.lib
    p = _lib.problem_init(lib)
    p.m, p.n, p.k = m, n, k
    p.a_dtype, p.b_dtype = fp8[a.dtype], fp8[b.dtype]
    p.out_dtype = _lib.DTYPE_BF16
    p.scale_mode = _lib.SCALE_ROW
    p.epilogue = _EPILOGUES[epilogue]
    p.lda, p.ldb, p.ldd = lda, ldb, ldd
    p.groups = g
    p.layout = _lib.GROUPS_MASKED if masked else _lib.GROUPS_CONTIGUOUS
    p.expected_m = expected_m or 0
    o = _lib.operands_init(lib)
    o.a, o.b = a.data_ptr(), b.data_ptr()
    o.scale_a, o.scale_b = scale_a.data_ptr(), scale_b.data_ptr()
    o.d = out.data_ptr()
    if masked:
        o.group_counts = counts.data_ptr()
    else:
        o.group_offsets = offsets.data_ptr()
    with torch.cuda.device(device):
        stream = torch.cuda.current_stream(device).cuda_stream
        st = lib.jit_gemm_grouped(ctx.handle, ctypes.byref(p), ctypes.byref(o),
                                  ctypes.c_void_p(stream))
    _errors.check(st, ctx.handle)
    return out
