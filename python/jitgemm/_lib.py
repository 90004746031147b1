"""Finding and loading libjitgemm.so, and the ctypes mirror of include/jitgemm.h.

The library is loaded on first use, not at import, so `import jitgemm` works (and says where it
looked) on a machine where the library is missing. Where it looks, in order:

1. $JITGEMM_LIBRARY: the library file itself, or a folder holding libjitgemm.so. When it is set
   nothing else is tried, so a wrong value is an error rather than a silent fallback.
2. The build tree of the checkout this package sits in (<repo>/build/libjitgemm.so): what an
   editable install (`pip install -e ./python`) or PYTHONPATH=python sees after a CMake build.
3. The libdir of an installed jitgemm that pkg-config knows (`pkg-config --variable=libdir
   jitgemm`, so PKG_CONFIG_PATH=<prefix>/lib/pkgconfig points at `cmake --install` output).
4. The dynamic loader's own search: LD_LIBRARY_PATH, then the ldconfig cache (libjitgemm.so.0).
"""

import ctypes
import os
import shutil
import subprocess
import threading
from pathlib import Path

# The ABI this package was written against (include/jitgemm.h): before 1.0 a minor release may
# change it, so major and minor must match the loaded library's jit_version().
ABI_VERSION = (0, 1)
SONAME = "libjitgemm.so.0"

# ---- enums (include/jitgemm.h) -----------------------------------------------------------------
STATUS_MIN = -18  # JIT_NOT_IN_CACHE, the last entry of JIT_STATUS_MAP
STATUS_CACHE_ERROR = -12

DTYPE_E4M3, DTYPE_E5M2, DTYPE_E2M1, DTYPE_BF16, DTYPE_F32 = 1, 2, 3, 4, 5
SCALE_ROW = 1
SCALE_BLOCK_1X128_128X128 = 6  # "128x128"
SFA_K_MAJOR, SFA_M_MAJOR = 0, 1
EPILOGUE_LINEAR, EPILOGUE_LINEAR_ADD, EPILOGUE_LINEAR_SWIGLU = 1, 2, 3
EPILOGUE_QUANTIZE_FP8_1X128 = 4  # the activation quantizer's op, not a GEMM epilogue
GROUPS_CONTIGUOUS, GROUPS_MASKED = 1, 2

INSPECT_STAGES = {"key": 1, "plan": 2, "source": 3, "ptx": 4, "entry": 5}
PREWARM_RESULTS = {0: "compiled", 1: "cached", 2: "failed"}


# ---- structs -----------------------------------------------------------------------------------
class Problem(ctypes.Structure):
    _fields_ = [
        ("struct_size", ctypes.c_uint32),
        ("m", ctypes.c_int64),
        ("n", ctypes.c_int64),
        ("k", ctypes.c_int64),
        ("a_dtype", ctypes.c_int),
        ("b_dtype", ctypes.c_int),
        ("out_dtype", ctypes.c_int),
        ("scale_mode", ctypes.c_int),
        ("epilogue", ctypes.c_int),
        ("lda", ctypes.c_int64),
        ("ldb", ctypes.c_int64),
        ("ldd", ctypes.c_int64),
        ("ld_residual", ctypes.c_int64),
        ("alpha", ctypes.c_float),
        ("sfa_layout", ctypes.c_int),
        ("ld_sfa", ctypes.c_int64),
        ("scale_type", ctypes.c_int),
        ("groups", ctypes.c_int64),
        ("layout", ctypes.c_int),
        ("expected_m", ctypes.c_int64),
        ("group_flags", ctypes.c_uint32),
    ]


class Operands(ctypes.Structure):
    _fields_ = [
        ("struct_size", ctypes.c_uint32),
        ("a", ctypes.c_void_p),
        ("b", ctypes.c_void_p),
        ("scale_a", ctypes.c_void_p),
        ("scale_b", ctypes.c_void_p),
        ("residual", ctypes.c_void_p),
        ("d", ctypes.c_void_p),
        ("group_offsets", ctypes.c_void_p),
        ("group_counts", ctypes.c_void_p),
        ("gather_index", ctypes.c_void_p),
    ]


class QuantizeOperands(ctypes.Structure):
    _fields_ = [
        ("struct_size", ctypes.c_uint32),
        ("x", ctypes.c_void_p),
        ("q", ctypes.c_void_p),
        ("scales", ctypes.c_void_p),
        ("pow2_scales", ctypes.c_int),
    ]


class ContextOptions(ctypes.Structure):
    _fields_ = [
        ("struct_size", ctypes.c_uint32),
        ("cache_dir", ctypes.c_char_p),
        ("arch", ctypes.c_char_p),
        ("sm_count", ctypes.c_int),
        ("log_level", ctypes.c_int),
        ("toolkit_dir", ctypes.c_char_p),
        ("cache_max_bytes", ctypes.c_int64),
        ("compile_mode", ctypes.c_int),
    ]


class PrewarmEvent(ctypes.Structure):
    _fields_ = [
        ("index", ctypes.c_size_t),
        ("total", ctypes.c_size_t),
        ("problem", ctypes.POINTER(Problem)),
        ("result", ctypes.c_int),
        ("status", ctypes.c_int),
        ("seconds", ctypes.c_double),
        ("key_hash", ctypes.c_char_p),
        ("error", ctypes.c_char_p),
    ]


PROGRESS_FN = ctypes.CFUNCTYPE(None, ctypes.POINTER(PrewarmEvent), ctypes.c_void_p)


def _init_struct(init_fn, cls):
    """Call a *_init() on a buffer larger than `cls`, so a library whose struct grew cannot
    write past it, then check the size it wrote is the size this mirror knows."""
    buf = ctypes.create_string_buffer(ctypes.sizeof(cls) + 256)
    init_fn(buf)
    obj = cls.from_buffer_copy(buf.raw[: ctypes.sizeof(cls)])
    if obj.struct_size != ctypes.sizeof(cls):
        raise LibraryNotFound(
            "the loaded libjitgemm's %s is %d bytes, this package expects %d: the library and "
            "the package are from different versions" % (cls.__name__, obj.struct_size, ctypes.sizeof(cls))
        )
    return obj


class LibraryNotFound(OSError):
    """libjitgemm.so could not be found or loaded, or is not a version this package supports."""


# ---- finding the library -----------------------------------------------------------------------
def _checkout_build_lib():
    # python/jitgemm/_lib.py -> <repo>/build/libjitgemm.so
    return Path(__file__).resolve().parent.parent.parent / "build" / "libjitgemm.so"


def _pkg_config_libdir():
    exe = shutil.which("pkg-config")
    if not exe:
        return None
    try:
        r = subprocess.run(
            [exe, "--variable=libdir", "jitgemm"],
            capture_output=True,
            text=True,
            timeout=10,
        )
    except (OSError, subprocess.SubprocessError):
        return None
    libdir = r.stdout.strip()
    return libdir if r.returncode == 0 and libdir else None


def candidates():
    """The places the library is looked for, in order, as (how, path or soname) pairs. With
    $JITGEMM_LIBRARY set that is the only one."""
    env = os.environ.get("JITGEMM_LIBRARY")
    if env:
        p = Path(env)
        return [("$JITGEMM_LIBRARY", str(p / "libjitgemm.so" if p.is_dir() else p))]
    out = []
    build = _checkout_build_lib()
    if build.exists():
        out.append(("the checkout's build tree", str(build)))
    libdir = _pkg_config_libdir()
    if libdir:
        for name in (SONAME, "libjitgemm.so"):
            f = Path(libdir).resolve() / name
            if f.exists():
                out.append(("pkg-config libdir", str(f)))
                break
    out.append(("the dynamic loader's search path", SONAME))
    return out


def _declare(lib):
    c_int, c_char_p, c_void_p = ctypes.c_int, ctypes.c_char_p, ctypes.c_void_p
    sigs = {
        "jit_status_name": (c_char_p, [c_int]),
        "jit_status_string": (c_char_p, [c_int]),
        "jit_version": (c_char_p, []),
        "jit_problem_init": (None, [c_void_p]),
        "jit_operands_init": (None, [c_void_p]),
        "jit_context_options_init": (None, [c_void_p]),
        "jit_context_create": (c_int, [ctypes.POINTER(ContextOptions), ctypes.POINTER(c_void_p)]),
        "jit_context_destroy": (None, [c_void_p]),
        "jit_last_error": (c_char_p, [c_void_p]),
        "jit_context_arch": (c_char_p, [c_void_p]),
        "jit_context_sm_count": (c_int, [c_void_p]),
        "jit_gemm": (c_int, [c_void_p, ctypes.POINTER(Problem), ctypes.POINTER(Operands), c_void_p]),
        "jit_quantize_operands_init": (None, [c_void_p]),
        "jit_quantize_fp8_1x128": (
            c_int,
            [c_void_p, ctypes.POINTER(Problem), ctypes.POINTER(QuantizeOperands), c_void_p],
        ),
        "jit_gemm_grouped": (
            c_int,
            [c_void_p, ctypes.POINTER(Problem), ctypes.POINTER(Operands), c_void_p],
        ),
        "jit_prewarm": (
            c_int,
            [c_void_p, ctypes.POINTER(Problem), ctypes.c_size_t, c_int, PROGRESS_FN, c_void_p],
        ),
        "jit_inspect": (c_int, [c_void_p, ctypes.POINTER(Problem), c_int, ctypes.POINTER(c_void_p)]),
        "jit_free": (None, [c_void_p]),
        "jit_dtype_parse": (c_int, [c_char_p, ctypes.POINTER(c_int)]),
        "jit_scale_mode_parse": (c_int, [c_char_p, ctypes.POINTER(c_int)]),
        "jit_epilogue_parse": (c_int, [c_char_p, ctypes.POINTER(c_int)]),
        "jit_dtype_name": (c_char_p, [c_int]),
        "jit_scale_mode_name": (c_char_p, [c_int]),
        "jit_epilogue_name": (c_char_p, [c_int]),
    }
    for name, (restype, argtypes) in sigs.items():
        fn = getattr(lib, name)
        fn.restype = restype
        fn.argtypes = argtypes


_lock = threading.Lock()
_loaded = None  # (CDLL, path)


def _load_one(path):
    lib = ctypes.CDLL(path)
    try:
        _declare(lib)
    except AttributeError as e:
        raise LibraryNotFound("%s is not libjitgemm (missing symbol: %s)" % (path, e)) from None
    version = lib.jit_version().decode()
    try:
        major, minor = (int(x) for x in version.split(".")[:2])
    except ValueError:
        raise LibraryNotFound("%s reports version %r, not MAJOR.MINOR.PATCH" % (path, version)) from None
    if (major, minor) != ABI_VERSION:
        raise LibraryNotFound(
            "%s is libjitgemm %s; this package needs %d.%d.x" % ((path, version) + ABI_VERSION)
        )
    return lib


def load():
    """The loaded library (ctypes.CDLL), loading it on first call. Raises LibraryNotFound,
    naming every place it tried and why each failed."""
    global _loaded
    with _lock:
        if _loaded is None:
            tried = []
            for how, path in candidates():
                try:
                    _loaded = (_load_one(path), path)
                    break
                except OSError as e:
                    tried.append("  %s: %s: %s" % (how, path, e))
            else:
                raise LibraryNotFound(
                    "cannot load libjitgemm; tried:\n%s\nSet JITGEMM_LIBRARY to the library "
                    "(build/libjitgemm.so of a CMake build, or <prefix>/lib/libjitgemm.so.0 of an "
                    "install); see docs/python.md" % "\n".join(tried)
                )
        return _loaded[0]


def loaded_path():
    """The path or soname the library was loaded from (loading it if needed)."""
    load()
    return _loaded[1]


def problem_init(lib):
    return _init_struct(lib.jit_problem_init, Problem)


def operands_init(lib):
    return _init_struct(lib.jit_operands_init, Operands)


def quantize_operands_init(lib):
    return _init_struct(lib.jit_quantize_operands_init, QuantizeOperands)


def context_options_init(lib):
    return _init_struct(lib.jit_context_options_init, ContextOptions)
