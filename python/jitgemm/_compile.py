"""prewarm and inspect: the compile-only half of the API. Neither needs a GPU or PyTorch."""

import ctypes
import json
import os
from pathlib import Path

from . import _errors, _lib, _problem, _shapes


def cache_dir_of(cache_dir=None):
    """The cache directory the library uses for `cache_dir` (None: the environment's), by the
    rules of docs/cache.md: the argument, $JITGEMM_CACHE_DIR, $XDG_CACHE_HOME/jitgemm (when
    absolute), ~/.cache/jitgemm."""
    if cache_dir is not None and os.fspath(cache_dir):
        return Path(os.fsdecode(cache_dir))
    env = os.environ.get("JITGEMM_CACHE_DIR")
    if env:
        return Path(env)
    xdg = os.environ.get("XDG_CACHE_HOME")
    if xdg and os.path.isabs(xdg):
        return Path(xdg) / "jitgemm"
    return Path(os.path.expanduser("~")) / ".cache" / "jitgemm"


def _check_cache_dir(cache_dir):
    # The library carries on in memory when it cannot use the directory (it only warns); a
    # prewarm exists to fill the disk, so a path that can never be a cache fails here, at once.
    d = cache_dir_of(cache_dir)
    for p in [d] + list(d.parents):
        if p.exists():
            if not p.is_dir():
                raise ValueError("cache_dir %s: %s is not a directory" % (d, p))
            break


def _shape_list(shapes):
    if isinstance(shapes, (str, bytes, os.PathLike)):
        return _shapes.from_file(shapes)
    if isinstance(shapes, dict):
        return _shapes.from_object(shapes, "shapes")
    if isinstance(shapes, (list, tuple)):
        return _shapes.from_object(list(shapes), "shapes", name_required=False)
    raise TypeError("shapes must be a shape-list path, a shape-list dict or a list of GEMM dicts, "
                    "got %r" % type(shapes).__name__)


def prewarm(shapes, arch=None, sm_count=None, cache_dir=None, jobs=0, progress=None,
            check=True):
    """Compile (or find in the cache) every kernel a list of GEMMs needs. See docs/python.md.

    shapes:   a shape-list file (docs/shape-list.md), the same as a dict, or a list of GEMM
              dicts {"op", "n", "k", "tokens" (int or list), optional "name", "a", "b",
              "scales", "out"}
    arch, sm_count: the target; they override the shape list's "target"
    cache_dir: the cache to fill (default: $JITGEMM_CACHE_DIR, ...)
    jobs:     parallel compiles (0: one per core)
    progress: called with each result dict as it finishes (from one thread at a time)
    check:    raise JitError when a problem failed or a kernel is not on disk afterwards

    Returns one dict per (entry, token count), in order: name, op, n, k, tokens, a, b, scales,
    out, key (32 hex digits, or None), status ("compiled", "cached" or "failed"), seconds,
    error ("" unless failed), stored (whether the cache directory holds the kernel now).
    """
    if isinstance(jobs, bool) or not isinstance(jobs, int) or jobs < 0:
        raise ValueError("jobs must be an integer >= 0, got %r" % (jobs,))
    if progress is not None and not callable(progress):
        raise TypeError("progress must be callable, got %r" % (progress,))
    sl = _shape_list(shapes)
    _check_cache_dir(cache_dir)
    count = len(sl.problems)
    array = (_lib.Problem * count)(*[p for _, p in sl.problems])
    results = []
    for name, p in sl.problems:
        r = {"name": name}
        r.update(_problem.problem_fields(p))
        r.update(key=None, status=None, seconds=0.0, error="", stored=False)
        results.append(r)
    callback_errors = []

    def on_event(ev_ptr, _user):
        ev = ev_ptr.contents
        r = results[ev.index]
        key = ev.key_hash.decode() if ev.key_hash else ""
        r["key"] = key or None
        r["status"] = _lib.PREWARM_RESULTS.get(ev.result, "failed")
        r["seconds"] = ev.seconds
        r["error"] = ev.error.decode(errors="replace") if ev.error else ""
        if progress is not None:
            try:
                progress(dict(r))
            except BaseException as e:  # raised again once the C call has returned
                callback_errors.append(e)

    callback = _lib.PROGRESS_FN(on_event)
    with _problem.Context(arch or sl.arch, sm_count or sl.sm_count, cache_dir) as ctx:
        st = ctx.lib.jit_prewarm(ctx.handle, array, count, jobs, callback, None)
        failure = None
        if st != 0:
            try:
                ctx.check(st)
            except _errors.JitError as e:
                failure = e
    if callback_errors:
        raise callback_errors[0]
    where = cache_dir_of(cache_dir)
    for r in results:
        if r["key"] and r["status"] != "failed":
            r["stored"] = (where / "kernels" / (r["key"] + ".json")).is_file()
    if check and failure is None:
        keys = {r["key"] for r in results if r["key"] and r["status"] != "failed"}
        missing = {r["key"] for r in results if r["key"] in keys and not r["stored"]}
        if missing:
            failure = _errors.JitError(
                _lib.STATUS_CACHE_ERROR,
                "only %d of %d kernels are in the cache %s after the prewarm; a later process "
                "will compile the rest again (a directory refused or not writable, a full disk, "
                "or a size cap too small for them)" % (len(keys) - len(missing), len(keys), where),
            )
    if check and failure is not None:
        failure.results = results
        raise failure
    return results


def _key_dict(text):
    # "hash   H\nkey    TEXT\ntarget T (native)\n", as jit_inspect writes it; the same fields as
    # `jitgemm inspect --key --json`.
    out = {"hash": None, "text": None, "target": None, "fallback": False, "note": ""}
    for line in text.splitlines():
        label, _, value = line.partition(" ")
        value = value.strip()
        if label == "hash":
            out["hash"] = value
        elif label == "key":
            out["text"] = value
        elif label == "target":
            target, _, note = value.partition(" ")
            out["target"] = target
            note = note.strip()
            if note.startswith("(") and note.endswith(")"):
                note = note[1:-1]
            out["fallback"] = note.startswith("fallback")
            out["note"] = note
    return out


def inspect(op, n, k, tokens, what="plan", a="e4m3", b="e4m3", scales="row", out="bf16",
            arch=None, sm_count=None, cache_dir=None):
    """What the pipeline holds for one problem at one stage (jit_inspect). See docs/python.md.

    what: "key"    -> dict: hash, text (the canonical key), target, fallback, note
          "plan"   -> dict: the plan (docs/plan.md)
          "source" -> str: the generated CUDA C
          "ptx"    -> str: the PTX NVRTC produces (compiles if needed)
          "entry"  -> dict: the cache manifest entry (compiles if needed)
    """
    if what not in _lib.INSPECT_STAGES:
        raise ValueError("what must be one of %s, got %r" % (", ".join(_lib.INSPECT_STAGES), what))
    p = _problem.make_problem(op, n, k, tokens, a, b, scales, out)
    if what == "entry":
        _check_cache_dir(cache_dir)
    with _problem.Context(arch, sm_count, cache_dir) as ctx:
        text_ptr = ctypes.c_void_p()
        st = ctx.lib.jit_inspect(ctx.handle, ctypes.byref(p), _lib.INSPECT_STAGES[what],
                                 ctypes.byref(text_ptr))
        ctx.check(st)
        try:
            text = ctypes.string_at(text_ptr).decode()
        finally:
            ctx.lib.jit_free(text_ptr)
    if what == "key":
        return _key_dict(text)
    if what in ("plan", "entry"):
        return json.loads(text)
    return text
