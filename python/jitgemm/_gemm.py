"""jitgemm.gemm on PyTorch tensors: checks in Python, then one jit_gemm on the current stream.

PyTorch is imported on the first call, never at `import jitgemm`. A call for a key seen before
only validates and launches (no allocation, no synchronization: api/gemm.c), so after one
warm-up call it can be captured in a CUDA graph.
"""

import ctypes
import threading

from . import _errors, _lib, _problem

_EPILOGUES = {
    "linear": _lib.EPILOGUE_LINEAR,
    "linear_add": _lib.EPILOGUE_LINEAR_ADD,
    "linear_swiglu": _lib.EPILOGUE_LINEAR_SWIGLU,
}

_contexts = {}  # CUDA device index -> _problem.Context, for the life of the process
_contexts_lock = threading.Lock()


def _torch():
    try:
        import torch
    except ImportError as e:
        raise ImportError("jitgemm.gemm needs PyTorch (import torch failed: %s); prewarm and "
                          "inspect work without it" % e) from None
    return torch


def _operand_dtypes(torch):
    # Row-scaled kernels take E4M3 x E4M3 only (the library refuses E5M2 with row scales).
    dt = getattr(torch, "float8_e4m3fn", None)
    if dt is None:
        raise ImportError("this PyTorch (%s) has no torch.float8_e4m3fn" % torch.__version__)
    return {dt: _lib.DTYPE_E4M3}


def _tensor(torch, x, name):
    if not isinstance(x, torch.Tensor):
        raise TypeError("%s must be a torch.Tensor, got %s" % (name, type(x).__name__))
    return x


def _dtype(x, name, allowed):
    if x.dtype not in allowed:
        raise TypeError("%s must be %s, got %s"
                        % (name, " or ".join(str(d) for d in allowed), x.dtype))


def _rows(x, name, shape_text, rows, cols):
    """Check a 2-D tensor of [rows, cols] with unit column stride; return its row stride in
    elements (the packed width for a single row, whose stride PyTorch leaves free)."""
    if x.dim() != 2 or tuple(x.shape) != (rows, cols):
        raise ValueError("%s must have shape %s = (%d, %d), got %s"
                         % (name, shape_text, rows, cols, tuple(x.shape)))
    if cols > 1 and x.stride(1) != 1:
        raise ValueError("%s must have contiguous rows (stride(1) == 1), got strides %s"
                         % (name, tuple(x.stride())))
    if rows <= 1:
        return cols
    if x.stride(0) < cols:
        raise ValueError("%s: row stride %d is smaller than a row (%d elements)"
                         % (name, x.stride(0), cols))
    return x.stride(0)


def _scales(torch, s, name, count, what):
    _tensor(torch, s, name)
    _dtype(s, name, (torch.float32,))
    if s.numel() != count or not (s.dim() == 1 or (s.dim() == 2 and 1 in tuple(s.shape))):
        raise ValueError("%s must hold one float32 per %s: shape (%d,), got %s"
                         % (name, what, count, tuple(s.shape)))
    if not s.is_contiguous():
        raise ValueError("%s must be contiguous" % name)


_SCALE_WORDS = ("row", "128x128")


def _block_sfa(torch, s, m, kb):
    """Check scale_a of the 128x128 mode, float32 [M, ceil(K/128)], and return its layout and
    leading dimension: k-major when a row's scales are contiguous (stride(1) == 1), m-major
    when a column's are (stride(0) == 1: DeepGEMM's and torch's layout). Where one dimension is
    1 its stride is free, and either reading gives the same addresses."""
    _tensor(torch, s, "scale_a")
    _dtype(s, "scale_a", (torch.float32,))
    if s.dim() != 2 or tuple(s.shape) != (m, kb):
        raise ValueError("scale_a must have shape [M, ceil(K/128)] = (%d, %d), got %s"
                         % (m, kb, tuple(s.shape)))
    st0, st1 = s.stride()
    if kb == 1 or st1 == 1:
        ld = st0 if m > 1 else kb
        if ld < kb:
            raise ValueError("scale_a: row stride %d is smaller than a row (%d scales)" % (ld, kb))
        return _lib.SFA_K_MAJOR, ld
    if m == 1 or st0 == 1:
        if st1 < m:
            raise ValueError("scale_a: m-major column stride %d is smaller than M = %d" % (st1, m))
        return _lib.SFA_M_MAJOR, st1
    raise ValueError("scale_a must be k-major (stride(1) == 1) or m-major (stride(0) == 1), got "
                     "strides %s" % (tuple(s.stride()),))


def _block_sfb(torch, s, n, kb):
    _tensor(torch, s, "scale_b")
    _dtype(s, "scale_b", (torch.float32,))
    nb = (n + 127) // 128
    if s.dim() != 2 or tuple(s.shape) != (nb, kb):
        raise ValueError("scale_b must have shape [ceil(N/128), ceil(K/128)] = (%d, %d), got %s"
                         % (nb, kb, tuple(s.shape)))
    if not s.is_contiguous():
        raise ValueError("scale_b must be contiguous (row-major)")


def context(device=None):
    """The jitgemm context of a CUDA device (default: the current one), created on first use in
    that device's CUDA context and kept for the life of the process."""
    torch = _torch()
    dev = torch.device("cuda", torch.cuda.current_device()) if device is None else torch.device(device)
    if dev.type != "cuda":
        raise ValueError("device must be a CUDA device, got %s" % dev)
    index = dev.index if dev.index is not None else torch.cuda.current_device()
    with _contexts_lock:
        ctx = _contexts.get(index)
        if ctx is None:
            with torch.cuda.device(index):
                torch.cuda.current_stream()  # makes the device's CUDA context current
                ctx = _problem.Context()
            _contexts[index] = ctx
    return ctx


def gemm(a, b, scale_a, scale_b, out=None, epilogue="linear", residual=None, scales="row"):
    """D = epilogue((a @ b.T) * scale_a[:, None] * scale_b[None, :]) in one jitgemm kernel,
    or with scales="128x128" the block-scaled product (DeepSeek-V3's format):
    D[m, n] = epilogue(sum_kb scale_a[m, kb] * scale_b[n // 128, kb] * (a @ b.T over the 128 K
    of block kb)).

    a [M, K] and b [N, K]: torch.float8_e4m3fn on one CUDA device, rows
        contiguous (a row stride is allowed; in bytes it must be a multiple of 16)
    scales="row": scale_a [M], scale_b [N]: float32 (shapes (M, 1) and (1, N) are accepted too)
    scales="128x128": scale_a [M, ceil(K/128)] float32, k-major (row-major) or m-major
        (stride(0) == 1, a padded stride(1) allowed, as DeepGEMM and torch lay it out);
        scale_b [ceil(N/128), ceil(K/128)] float32, contiguous
    out [M, Nout]: bfloat16; allocated when None. Nout = N, or N / 2 for linear_swiglu
    epilogue: "linear", "linear_add" (adds residual [M, N] bfloat16) or "linear_swiglu"
        (b rows are gate/up pairs: out[m, j] = silu(acc[m, 2j]) * acc[m, 2j+1])
    Runs on torch.cuda.current_stream() and returns out.
    """
    torch = _torch()
    for x, name in ((a, "a"), (b, "b"), (scale_a, "scale_a"), (scale_b, "scale_b")):
        _tensor(torch, x, name)
    if not isinstance(scales, str) or scales not in _SCALE_WORDS:
        raise ValueError("scales must be one of %s, got %r" % (", ".join(_SCALE_WORDS), scales))
    if not isinstance(epilogue, str) or epilogue not in _EPILOGUES:
        raise ValueError("epilogue must be one of %s, got %r" % (", ".join(_EPILOGUES), epilogue))
    fp8 = _operand_dtypes(torch)
    _dtype(a, "a", tuple(fp8))
    _dtype(b, "b", tuple(fp8))
    if a.dim() != 2 or b.dim() != 2:
        raise ValueError("a and b must be 2-D ([M, K] and [N, K]), got shapes %s and %s"
                         % (tuple(a.shape), tuple(b.shape)))
    m, k = a.shape
    n = b.shape[0]
    if b.shape[1] != k:
        raise ValueError("a is [M, K] = %s and b is [N, K] = %s: their K differ"
                         % (tuple(a.shape), tuple(b.shape)))
    if k == 0 or n == 0:
        raise ValueError("K and N must be positive, got a %s and b %s" % (tuple(a.shape), tuple(b.shape)))
    if epilogue == "linear_swiglu" and n % 2:
        raise ValueError("linear_swiglu needs an even N (b rows are gate/up pairs), got N = %d" % n)
    nout = n // 2 if epilogue == "linear_swiglu" else n
    lda = _rows(a, "a", "[M, K]", m, k)
    ldb = _rows(b, "b", "[N, K]", n, k)
    sfa_layout, ld_sfa = _lib.SFA_K_MAJOR, 0
    if scales == "row":
        _scales(torch, scale_a, "scale_a", m, "row of a (token)")
        _scales(torch, scale_b, "scale_b", n, "row of b (output channel)")
    else:
        kb = (k + 127) // 128
        sfa_layout, ld_sfa = _block_sfa(torch, scale_a, m, kb)
        _block_sfb(torch, scale_b, n, kb)
    if epilogue == "linear_add":
        if residual is None:
            raise ValueError("linear_add needs residual, a bfloat16 [M, N] tensor")
        _tensor(torch, residual, "residual")
        _dtype(residual, "residual", (torch.bfloat16,))
        ldr = _rows(residual, "residual", "[M, N]", m, n)
    elif residual is not None:
        raise ValueError("residual is only read by linear_add, not %s" % epilogue)
    else:
        ldr = 0
    if out is not None:
        _tensor(torch, out, "out")
        _dtype(out, "out", (torch.bfloat16,))
        ldd = _rows(out, "out", "[M, Nout]", m, nout)
    # Devices last, so that a wrong dtype or shape is named even on CPU tensors.
    device = a.device
    if device.type != "cuda":
        raise ValueError("a must be on a CUDA device, got %s" % device)
    for x, name in ((b, "b"), (scale_a, "scale_a"), (scale_b, "scale_b"), (out, "out"),
                    (residual, "residual")):
        if x is not None and x.device != device:
            raise ValueError("%s is on %s, a on %s: every tensor must be on one device"
                             % (name, x.device, device))
    if out is None:
        out = torch.empty((m, nout), dtype=torch.bfloat16, device=device)
        ldd = nout
    if m == 0:
        return out

    ctx = context(device)
    lib = ctx.lib
    p = _lib.problem_init(lib)
    p.m, p.n, p.k = m, n, k
    p.a_dtype, p.b_dtype = fp8[a.dtype], fp8[b.dtype]
    p.out_dtype = _lib.DTYPE_BF16
    if scales == "row":
        p.scale_mode = _lib.SCALE_ROW
    else:
        p.scale_mode = _lib.SCALE_BLOCK_1X128_128X128
        p.sfa_layout, p.ld_sfa = sfa_layout, ld_sfa
    p.epilogue = _EPILOGUES[epilogue]
    p.lda, p.ldb, p.ldd, p.ld_residual = lda, ldb, ldd, ldr
    o = _lib.operands_init(lib)
    o.a, o.b = a.data_ptr(), b.data_ptr()
    o.scale_a, o.scale_b = scale_a.data_ptr(), scale_b.data_ptr()
    o.residual = residual.data_ptr() if residual is not None else None
    o.d = out.data_ptr()
    with torch.cuda.device(device):
        stream = torch.cuda.current_stream(device).cuda_stream
        st = lib.jit_gemm(ctx.handle, ctypes.byref(p), ctypes.byref(o), ctypes.c_void_p(stream))
    _errors.check(st, ctx.handle)
    return out
