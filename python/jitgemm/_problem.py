"""Problem descriptors from words ("linear", "e4m3", "row") and contexts from options.

The words are parsed by the library itself (jit_epilogue_parse, ...), so the names this package
accepts are always the ones the C API and the shape list accept.
"""

import ctypes
import json
import os

from . import _errors, _lib

# Which enum values each field may take: the library names each one (jit_dtype_name, ...).
_OPS = (_lib.EPILOGUE_LINEAR, _lib.EPILOGUE_LINEAR_ADD, _lib.EPILOGUE_LINEAR_SWIGLU)
_OPERAND_DTYPES = (_lib.DTYPE_E4M3, _lib.DTYPE_E5M2, _lib.DTYPE_E2M1)
_OUT_DTYPES = (_lib.DTYPE_BF16, _lib.DTYPE_F32)
_SCALE_MODES = (1, 2, 3, 4, 5, _lib.SCALE_BLOCK_1X128_128X128)

_FIELDS = {
    # field: (parser, namer, allowed values)
    "op": ("jit_epilogue_parse", "jit_epilogue_name", _OPS),
    "a": ("jit_dtype_parse", "jit_dtype_name", _OPERAND_DTYPES),
    "b": ("jit_dtype_parse", "jit_dtype_name", _OPERAND_DTYPES),
    "out": ("jit_dtype_parse", "jit_dtype_name", _OUT_DTYPES),
    "scales": ("jit_scale_mode_parse", "jit_scale_mode_name", _SCALE_MODES),
}


def known_words(field):
    """The words `field` ("op", "a", "b", "out", "scales") accepts, from the library."""
    lib = _lib.load()
    _, namer, allowed = _FIELDS[field]
    return [getattr(lib, namer)(v).decode() for v in allowed]


def parse_word(field, value, where=None):
    """The enum value of `value` for `field`; ValueError naming the known words otherwise.
    `where` prefixes the message (a shape-list path such as "gemms[1].op")."""
    label = where or field
    if not isinstance(value, str):
        raise TypeError("%s: expected a string (one of %s), got %s"
                        % (label, ", ".join(known_words(field)), describe(value)))
    lib = _lib.load()
    parser, _, allowed = _FIELDS[field]
    out = ctypes.c_int(0)
    st = getattr(lib, parser)(value.encode(), ctypes.byref(out))
    if st != 0 or out.value not in allowed:
        raise ValueError("%s: unknown value %r (known: %s)"
                         % (label, value, ", ".join(known_words(field))))
    return out.value


def describe(value):
    """A value as a message shows it: JSON for what JSON can hold, else the type's name."""
    try:
        return json.dumps(value)
    except (TypeError, ValueError):
        return type(value).__name__


def positive_int(value, where):
    """`value` as an int >= 1; bools and floats are refused, as the shape list refuses them."""
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError("%s: expected a positive integer, got %s" % (where, describe(value)))
    if value < 1 or value >= 2**31:
        raise ValueError("%s: expected a positive integer below 2^31, got %d" % (where, value))
    return value


def make_problem(op, n, k, m, a="e4m3", b="e4m3", scales="row", out="bf16", where=None):
    """A jit_problem_t for one GEMM, every field checked; `where` prefixes messages."""
    pre = (where + ".") if where else ""
    lib = _lib.load()
    p = _lib.problem_init(lib)
    p.epilogue = parse_word("op", op, pre + "op")
    p.n = positive_int(n, pre + "n")
    p.k = positive_int(k, pre + "k")
    p.m = positive_int(m, pre + ("tokens" if where else "m"))
    p.a_dtype = parse_word("a", a, pre + "a")
    p.b_dtype = parse_word("b", b, pre + "b")
    p.scale_mode = parse_word("scales", scales, pre + "scales")
    p.out_dtype = parse_word("out", out, pre + "out")
    return p


def problem_fields(p):
    """The words of a problem, as the shape list and the CLI's --json write them."""
    lib = _lib.load()
    return {
        "op": lib.jit_epilogue_name(p.epilogue).decode(),
        "n": p.n,
        "k": p.k,
        "tokens": p.m,
        "a": lib.jit_dtype_name(p.a_dtype).decode(),
        "b": lib.jit_dtype_name(p.b_dtype).decode(),
        "scales": lib.jit_scale_mode_name(p.scale_mode).decode(),
        "out": lib.jit_dtype_name(p.out_dtype).decode(),
    }


def _path_arg(value, name):
    if value is None:
        return None
    if not isinstance(value, (str, bytes, os.PathLike)):
        raise TypeError("%s must be a path (str, bytes or os.PathLike), got %r" % (name, value))
    return os.fsencode(value)


class Context:
    """A jit_context_t for compile-only work, destroyed when the `with` block ends."""

    def __init__(self, arch=None, sm_count=None, cache_dir=None, toolkit_dir=None):
        lib = _lib.load()
        opt = _lib.context_options_init(lib)
        if arch is not None and not isinstance(arch, str):
            raise TypeError("arch must be a string such as 'sm_90a', got %r" % (arch,))
        if sm_count is not None:
            if isinstance(sm_count, bool) or not isinstance(sm_count, int) or sm_count < 1:
                raise ValueError("sm_count must be a positive integer, got %r" % (sm_count,))
            opt.sm_count = sm_count
        # Kept referenced until the context is created: the struct holds bare pointers to them.
        self._keep = [arch.encode() if arch else None, _path_arg(cache_dir, "cache_dir"),
                      _path_arg(toolkit_dir, "toolkit_dir")]
        opt.arch, opt.cache_dir, opt.toolkit_dir = self._keep
        handle = ctypes.c_void_p()
        st = lib.jit_context_create(ctypes.byref(opt), ctypes.byref(handle))
        _errors.check(st, None)
        self.handle = handle
        self.lib = lib

    @property
    def arch(self):
        return self.lib.jit_context_arch(self.handle).decode()

    @property
    def sm_count(self):
        return self.lib.jit_context_sm_count(self.handle)

    def check(self, status):
        _errors.check(status, self.handle)

    def close(self):
        if self.handle:
            self.lib.jit_context_destroy(self.handle)
            self.handle = None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
