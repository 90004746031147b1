"""The shape list (docs/shape-list.md) read in Python.

The C parser lives in the CLI (api/cli/shapes.c), not in the library, so this one follows the
same document with the same strictness: a misspelt or misplaced field is an error naming its
path ("gemms[2].n"), never a kernel silently left cold. The words ("linear", "e4m3", "row")
are checked by the library's own parsers (_problem.parse_word).
"""

import json
import os

from . import _lib, _problem

MAX_BYTES = 16 << 20  # as JIT__SHAPES_MAX_BYTES: a wrong file fails at once

_TOP_KEYS = ("target", "gemms")
_TARGET_KEYS = ("arch", "sm_count")
_ENTRY_KEYS = ("name", "op", "n", "k", "a", "b", "scales", "out", "tokens", "groups", "layout",
               "expected_m")
_LAYOUTS = {"contiguous": _lib.GROUPS_CONTIGUOUS, "masked": _lib.GROUPS_MASKED}
_ENTRY_REQUIRED = ("name", "op", "n", "k", "tokens")


class ShapeList:
    """target arch and SM count (None when absent), and one (name, problem) per (entry, token
    count), entries in order and tokens in order within each."""

    def __init__(self, arch, sm_count, problems):
        self.arch = arch
        self.sm_count = sm_count
        self.problems = problems


def _no_duplicates(pairs):
    seen = {}
    for k, v in pairs:
        if k in seen:
            raise ValueError("duplicate key %r" % k)
        seen[k] = v
    return seen


def _no_constant(name):
    raise ValueError("%s is not JSON" % name)


_describe = _problem.describe


def _check_keys(obj, allowed, where, source):
    for key in obj:
        if key not in allowed:
            path = "%s.%s" % (where, key) if where else key
            raise ValueError("%s: %s: unknown key (allowed: %s)" % (source, path, ", ".join(allowed)))


def _content_error(source, e):
    # Words and integers are checked by _problem with the field's path; the shape list is data,
    # so every content error is a ValueError prefixed with where the data came from.
    return ValueError("%s: %s" % (source, e))


def _entry(e, i, source, name_required, names):
    where = "gemms[%d]" % i
    if not isinstance(e, dict):
        raise ValueError("%s: %s: expected an object, got %s" % (source, where, _describe(e)))
    _check_keys(e, _ENTRY_KEYS, where, source)
    for key in _ENTRY_REQUIRED:
        if key not in e and (key != "name" or name_required):
            raise ValueError('%s: %s: missing required field "%s"' % (source, where, key))
    name = e.get("name", where)
    if not isinstance(name, str) or not name:
        raise ValueError("%s: %s.name: expected a non-empty string, got %s"
                         % (source, where, _describe(name)))
    if name in names:
        raise ValueError('%s: %s.name: duplicate name "%s" (also gemms[%d])'
                         % (source, where, name, names[name]))
    names[name] = i
    tokens = e["tokens"]
    if isinstance(tokens, int) and not isinstance(tokens, bool) and not name_required:
        tokens = [tokens]  # a single M is allowed in a Python list of dicts
    if not isinstance(tokens, list) or not tokens:
        raise ValueError("%s: %s.tokens: expected a non-empty array of positive integers, got %s"
                         % (source, where, _describe(tokens)))
    seen = {}
    out = []
    for j, t in enumerate(tokens):
        tw = "%s.tokens[%d]" % (where, j)
        try:
            _problem.positive_int(t, tw)
        except (TypeError, ValueError) as err:
            raise _content_error(source, err) from None
        if t in seen:
            raise ValueError("%s: %s: duplicate token count %d (also %s.tokens[%d])"
                             % (source, tw, t, where, seen[t]))
        seen[t] = j
        try:
            p = _problem.make_problem(e["op"], e["n"], e["k"], t, e.get("a", "e4m3"),
                                      e.get("b", "e4m3"), e.get("scales", "row"),
                                      e.get("out", "bf16"), where=where)
        except (TypeError, ValueError) as err:
            raise _content_error(source, err) from None
        _grouped(e, where, source, p)
        out.append((name, p))
    return out


def _grouped(e, where, source, p):
    """A grouped GEMM's "groups", "layout" and "expected_m" (docs/shape-list.md) into p."""
    if "groups" not in e:
        for key in ("layout", "expected_m"):
            if key in e:
                raise ValueError('%s: %s.%s: describes a grouped GEMM, which needs "groups"'
                                 % (source, where, key))
        return
    g = e["groups"]
    try:
        _problem.positive_int(g, where + ".groups")
    except (TypeError, ValueError) as err:
        raise _content_error(source, err) from None
    if g > 1024:
        raise ValueError("%s: %s.groups: expected an integer from 1 to 1024, got %d"
                         % (source, where, g))
    layout = e.get("layout", "contiguous")
    if layout not in _LAYOUTS:
        raise ValueError('%s: %s.layout: expected "contiguous" or "masked", got %s'
                         % (source, where, _describe(layout)))
    p.groups, p.layout = g, _LAYOUTS[layout]
    if "expected_m" in e:
        try:
            _problem.positive_int(e["expected_m"], where + ".expected_m")
        except (TypeError, ValueError) as err:
            raise _content_error(source, err) from None
        p.expected_m = e["expected_m"]


def from_object(obj, source, name_required=True):
    """A ShapeList from parsed JSON: {"target": {...}, "gemms": [...]}, or (name_required
    False) a bare list of GEMM entries whose names are optional."""
    if isinstance(obj, (list, tuple)):
        obj = {"gemms": list(obj)}
    if not isinstance(obj, dict):
        raise ValueError("%s: expected an object with \"gemms\", got %s" % (source, _describe(obj)))
    _check_keys(obj, _TOP_KEYS, "", source)
    arch = sm_count = None
    target = obj.get("target", {})
    if not isinstance(target, dict):
        raise ValueError("%s: target: expected an object, got %s" % (source, _describe(target)))
    _check_keys(target, _TARGET_KEYS, "target", source)
    if "arch" in target:
        arch = target["arch"]
        if not isinstance(arch, str) or not arch:
            raise ValueError("%s: target.arch: expected an architecture name such as "
                             "\"sm_90a\", got %s" % (source, _describe(arch)))
    if "sm_count" in target:
        try:
            sm_count = _problem.positive_int(target["sm_count"], "target.sm_count")
        except (TypeError, ValueError) as err:
            raise _content_error(source, err) from None
    if "gemms" not in obj:
        raise ValueError('%s: missing required field "gemms"' % source)
    gemms = obj["gemms"]
    if not isinstance(gemms, list) or not gemms:
        raise ValueError("%s: gemms: expected a non-empty array, got %s" % (source, _describe(gemms)))
    names = {}
    problems = []
    for i, e in enumerate(gemms):
        problems.extend(_entry(e, i, source, name_required, names))
    return ShapeList(arch, sm_count, problems)


def from_text(text, source):
    """A ShapeList from JSON text; `source` names it in messages."""
    try:
        obj = json.loads(text, object_pairs_hook=_no_duplicates, parse_constant=_no_constant)
    except json.JSONDecodeError as e:
        raise ValueError("%s:%d:%d: malformed JSON: %s" % (source, e.lineno, e.colno, e.msg)) from None
    except ValueError as e:
        raise ValueError("%s: malformed JSON: %s" % (source, e)) from None
    return from_object(obj, source)


def from_file(path):
    """A ShapeList from a file. An unreadable file is an OSError naming it."""
    path = os.fspath(path)
    source = os.fsdecode(path)
    with open(path, "rb") as f:
        data = f.read(MAX_BYTES + 1)
    if len(data) > MAX_BYTES:
        raise ValueError("%s: larger than 16 MiB: not a shape list" % source)
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as e:
        raise ValueError("%s: malformed JSON: not UTF-8 (%s)" % (source, e)) from None
    if "\0" in text:
        raise ValueError("%s: malformed JSON: a NUL byte" % source)
    return from_text(text, source)
