"""jitgemm: run-time compiled FP8 GEMM kernels for NVIDIA GPUs, from Python.

A thin ctypes layer over the shared library libjitgemm.so (include/jitgemm.h); no compiler is
needed to install it. `gemm`, `gemm_grouped` (mixture-of-experts: every expert in one call) and
`quantize_fp8_1x128` take PyTorch tensors; `prewarm` and `inspect` need neither a GPU
nor PyTorch. Where the library is looked for: docs/python.md (or jitgemm._lib's docstring).

When PyTorch is installed, importing this package imports it and registers `gemm` as the
operators torch.ops.jitgemm.gemm and gemm_out (_torch_ops.py), which torch.compile traces.
"""

from ._compile import cache_dir_of, inspect, prewarm
from ._errors import JitError, status_name, status_names, status_string
from ._gemm import context, gemm
from ._grouped import gemm_grouped
from ._lib import LibraryNotFound
from ._quantize import quantize_fp8_1x128
from . import _torch_ops

# After every module that declares an operator: torch.compile must find them registered
# before it traces the first call.
_torch_ops.setup()

__version__ = "0.1.0"

__all__ = [
    "JitError",
    "LibraryNotFound",
    "cache_dir_of",
    "context",
    "gemm",
    "gemm_grouped",
    "inspect",
    "library_path",
    "library_version",
    "prewarm",
    "quantize_fp8_1x128",
    "status_name",
    "status_names",
    "status_string",
]


def library_path():
    """Where libjitgemm was loaded from (loading it if it is not yet)."""
    from . import _lib

    return _lib.loaded_path()


def library_version():
    """The loaded library's jit_version(), e.g. "0.1.0"."""
    from . import _lib

    return _lib.load().jit_version().decode()
