"""jitgemm.gemm on PyTorch tensors: checks in Python, then one jit_gemm on the current stream.

The call is split in two so that the PyTorch operator (_torch_ops.py) shares it: `check` reads
only shapes, dtypes, strides and devices, so it runs on fake and meta tensors too and gives the
output's shape to torch.compile; `launch` hands the checked call to the library. A call for a
key seen before only validates and launches (no allocation, no synchronization: api/gemm.c), so
after one warm-up call it can be captured in a CUDA graph.
"""

import ctypes
import threading

from . import _errors, _lib, _problem, _torch_ops

_EPILOGUES = {
    "linear": _lib.EPILOGUE_LINEAR,
    "linear_add": _lib.EPILOGUE_LINEAR_ADD,
    "linear_swiglu": _lib.EPILOGUE_LINEAR_SWIGLU,
}

_contexts = {}  # CUDA device index -> _problem.Context, for the life of the process
_contexts_lock = threading.Lock()


def _torch():
    torch = _torch_ops.torch
    if torch is None:
        raise ImportError("jitgemm.gemm needs PyTorch (import torch failed: %s); prewarm and "
                          "inspect work without it" % _torch_ops.import_error)
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


class Checked:
    """What `check` found: the output's shape, dtype and device, and the call's sizes."""

    __slots__ = ("shape", "dtype", "device", "m", "n", "k", "lda", "ldb", "ldr", "ldd",
                 "scale_mode", "sfa_layout", "ld_sfa")


def check(torch, inputs, out):
    """Check gemm's arguments without touching their data: types, dtypes, shapes and strides,
    then that every tensor is on one device (which need not be CUDA: fake and meta tensors
    pass, and `launch` refuses the rest). `inputs` is (a, b, scale_a, scale_b, epilogue,
    residual, scales); `out` may be None."""
    a, b, scale_a, scale_b, epilogue, residual, scales = inputs
    for x, name in ((a, "a"), (b, "b"), (scale_a, "scale_a"), (scale_b, "scale_b")):
        _tensor(torch, x, name)
    if not isinstance(epilogue, str) or epilogue not in _EPILOGUES:
        raise ValueError("epilogue must be one of %s, got %r" % (", ".join(_EPILOGUES), epilogue))
    if not isinstance(scales, str) or scales not in _SCALE_WORDS:
        raise ValueError("scales must be one of %s, got %r" % (", ".join(_SCALE_WORDS), scales))
    fp8 = _operand_dtypes(torch)
    _dtype(a, "a", tuple(fp8))
    _dtype(b, "b", tuple(fp8))
    if a.dim() != 2 or b.dim() != 2:
        raise ValueError("a and b must be 2-D ([M, K] and [N, K]), got shapes %s and %s"
                         % (tuple(a.shape), tuple(b.shape)))
    c = Checked()
    c.m, c.k = a.shape
    c.n = n = b.shape[0]
    if b.shape[1] != c.k:
        raise ValueError("a is [M, K] = %s and b is [N, K] = %s: their K differ"
                         % (tuple(a.shape), tuple(b.shape)))
    if c.k == 0 or n == 0:
        raise ValueError("K and N must be positive, got a %s and b %s" % (tuple(a.shape), tuple(b.shape)))
    if epilogue == "linear_swiglu" and n % 2:
        raise ValueError("linear_swiglu needs an even N (b rows are gate/up pairs), got N = %d" % n)
    nout = n // 2 if epilogue == "linear_swiglu" else n
    c.lda = _rows(a, "a", "[M, K]", c.m, c.k)
    c.ldb = _rows(b, "b", "[N, K]", n, c.k)
    c.scale_mode, c.sfa_layout, c.ld_sfa = _lib.SCALE_ROW, _lib.SFA_K_MAJOR, 0
    if scales == "row":
        _scales(torch, scale_a, "scale_a", c.m, "row of a (token)")
        _scales(torch, scale_b, "scale_b", n, "row of b (output channel)")
    else:
        kb = (c.k + 127) // 128
        c.scale_mode = _lib.SCALE_BLOCK_1X128_128X128
        c.sfa_layout, c.ld_sfa = _block_sfa(torch, scale_a, c.m, kb)
        _block_sfb(torch, scale_b, n, kb)
    c.ldr = 0
    if epilogue == "linear_add":
        if residual is None:
            raise ValueError("linear_add needs residual, a bfloat16 [M, N] tensor")
        _tensor(torch, residual, "residual")
        _dtype(residual, "residual", (torch.bfloat16,))
        c.ldr = _rows(residual, "residual", "[M, N]", c.m, n)
    elif residual is not None:
        raise ValueError("residual is only read by linear_add, not %s" % epilogue)
    c.ldd = nout  # an allocated out is packed
    if out is not None:
        _tensor(torch, out, "out")
        _dtype(out, "out", (torch.bfloat16,))
        c.ldd = _rows(out, "out", "[M, Nout]", c.m, nout)
    # Devices last, so that a wrong dtype or shape is named even on CPU tensors.
    c.device = a.device
    for x, name in ((b, "b"), (scale_a, "scale_a"), (scale_b, "scale_b"), (out, "out"),
                    (residual, "residual")):
        if x is not None and x.device != c.device:
            raise ValueError("%s is on %s, a on %s: every tensor must be on one device"
                             % (name, x.device, c.device))
    c.shape, c.dtype = (c.m, nout), torch.bfloat16
    return c


def launch(torch, c, inputs, out):
    """One jit_gemm into `out` on the current stream of the tensors' CUDA device, for
    arguments `check` accepted. M = 0 launches nothing."""
    a, b, scale_a, scale_b, epilogue, residual, _ = inputs
    if c.device.type != "cuda":
        raise ValueError("a must be on a CUDA device, got %s" % c.device)
    if c.m == 0:
        return
    ctx = context(c.device)
    lib = ctx.lib
    p = _lib.problem_init(lib)
    p.m, p.n, p.k = c.m, c.n, c.k
    p.a_dtype = p.b_dtype = _lib.DTYPE_E4M3
    p.out_dtype = _lib.DTYPE_BF16
    p.scale_mode = c.scale_mode
    if c.scale_mode != _lib.SCALE_ROW:
        p.sfa_layout, p.ld_sfa = c.sfa_layout, c.ld_sfa
    p.epilogue = _EPILOGUES[epilogue]
    p.lda, p.ldb, p.ldd, p.ld_residual = c.lda, c.ldb, c.ldd, c.ldr
    o = _lib.operands_init(lib)
    o.a, o.b = a.data_ptr(), b.data_ptr()
    o.scale_a, o.scale_b = scale_a.data_ptr(), scale_b.data_ptr()
    o.residual = residual.data_ptr() if residual is not None else None
    o.d = out.data_ptr()
    with torch.cuda.device(c.device):
        stream = torch.cuda.current_stream(c.device).cuda_stream
        st = lib.jit_gemm(ctx.handle, ctypes.byref(p), ctypes.byref(o), ctypes.c_void_p(stream))
    _errors.check(st, ctx.handle)


_torch_ops.declare(
    "gemm",
    "Tensor a, Tensor b, Tensor scale_a, Tensor scale_b, str epilogue=\"linear\", "
    "Tensor? residual=None, str scales=\"row\"",
    check, launch)


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

    Under torch.compile, on fake or meta tensors and under a dispatch mode it is the operator
    torch.ops.jitgemm.gemm (gemm_out when `out` is given); otherwise it calls the library
    directly, without PyTorch's dispatcher.
    """
    torch = _torch()
    return _torch_ops.call(torch, "gemm", (a, b, scale_a, scale_b, epilogue, residual, scales), out)
