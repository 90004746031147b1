"""The exception a failed library call raises, and the status names it carries."""

from . import _lib


class JitError(RuntimeError):
    """A jitgemm library call failed.

    status:  the status code's name, e.g. "JIT_INVALID_SHAPE" (jit_status_name)
    code:    the status code, a negative int (JIT_INVALID_SHAPE is -2)
    message: the library's message (jit_last_error), which names what was wrong; for a failed
             compile it holds the NVRTC or nvJitLink log
    """

    def __init__(self, code, message, status=None):
        self.code = int(code)
        self.status = status if status is not None else status_name(self.code)
        self.message = message
        super().__init__("%s: %s" % (self.status, message) if message else self.status)


def status_name(code):
    """The name of a status code, e.g. status_name(-2) == "JIT_INVALID_SHAPE"."""
    return _lib.load().jit_status_name(int(code)).decode()


def status_string(code):
    """The text of a status code, e.g. status_string(-2) == "invalid problem shape"."""
    return _lib.load().jit_status_string(int(code)).decode()


def status_names():
    """Every status the library defines, as {code: name}, from JIT_OK (0) down to the last
    (STATUS_MIN)."""
    return {c: status_name(c) for c in range(0, _lib.STATUS_MIN - 1, -1)}


def check(status, ctx):
    """Raise JitError for a failed status, with the context's last message (ctx None: the
    message of the last failed jit_context_create in this thread)."""
    if status == 0:
        return
    lib = _lib.load()
    msg = lib.jit_last_error(ctx)
    msg = msg.decode(errors="replace") if msg else ""
    if not msg:
        msg = status_string(status)
    raise JitError(status, msg)
