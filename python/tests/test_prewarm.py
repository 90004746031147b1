"""jitgemm.prewarm into temporary caches, cross-checked with the CLI. Compile-only: no GPU."""

import json
import os

import pytest

import jitgemm
from conftest import ARCH

GEMMS = [
    {"name": "proj", "op": "linear", "n": 256, "k": 256, "tokens": [1, 16, 300]},
    {"name": "gate_up", "op": "linear_swiglu", "n": 512, "k": 256, "tokens": [17]},
]


def test_list_of_dicts_compiles_then_hits(cache):
    first = jitgemm.prewarm(GEMMS, arch=ARCH, cache_dir=cache, jobs=2)
    assert [(r["name"], r["tokens"]) for r in first] == [
        ("proj", 1), ("proj", 16), ("proj", 300), ("gate_up", 17)]
    for r in first:
        assert r["status"] in ("compiled", "cached") and r["stored"] and r["error"] == ""
        want = jitgemm.inspect(r["op"], r["n"], r["k"], r["tokens"], what="key", arch=ARCH)
        assert r["key"] == want["hash"]
        assert (cache / "kernels" / (r["key"] + ".json")).is_file()
    keys = {r["key"] for r in first}
    # Each distinct kernel compiled once; the others are served by it.
    assert sum(r["status"] == "compiled" for r in first) == len(keys)
    again = jitgemm.prewarm(GEMMS, arch=ARCH, cache_dir=cache)
    assert [r["status"] for r in again] == ["cached"] * len(first)
    assert [r["key"] for r in again] == [r["key"] for r in first]


def test_optional_names_and_single_token(cache):
    r = jitgemm.prewarm([{"op": "linear", "n": 256, "k": 256, "tokens": 5}], arch=ARCH,
                        cache_dir=cache)
    assert len(r) == 1 and r[0]["name"] == "gemms[0]" and r[0]["tokens"] == 5
    for f in ("a", "b", "scales", "out"):
        assert r[0][f] == {"a": "e4m3", "b": "e4m3", "scales": "row", "out": "bf16"}[f]


def test_shape_list_file_agrees_with_the_cli(tmp_path, cache, cli):
    path = tmp_path / "shapes.json"
    path.write_text(json.dumps({"target": {"arch": ARCH, "sm_count": 132}, "gemms": GEMMS}))
    ours = jitgemm.prewarm(path, cache_dir=cache)
    rc, out, err = cli("prewarm", path, "--json", "--cache-dir", cache)
    assert rc == 0, err
    theirs = [json.loads(line) for line in out.splitlines()]
    assert len(theirs) == len(ours)
    by_problem = {(t["name"], t["tokens"]): t for t in theirs}
    for r in ours:
        t = by_problem[(r["name"], r["tokens"])]
        assert t["key"] == r["key"] and t["status"] == "cached"
        for f in ("op", "n", "k"):
            assert t[f] == r[f]


def test_dict_form_and_arch_override(cache):
    shape_list = {"target": {"arch": "sm_107a"}, "gemms": GEMMS[:1]}
    r = jitgemm.prewarm(shape_list, arch=ARCH, cache_dir=cache)
    key = jitgemm.inspect("linear", 256, 256, 1, what="key", arch=ARCH)
    assert r[0]["key"] == key["hash"]
    sms = jitgemm.prewarm(shape_list, arch=ARCH, sm_count=66, cache_dir=cache)
    assert sms[0]["key"] == jitgemm.inspect("linear", 256, 256, 1, what="key", arch=ARCH,
                                            sm_count=66)["hash"]


def test_progress_sees_every_problem(cache):
    seen = []
    r = jitgemm.prewarm(GEMMS, arch=ARCH, cache_dir=cache, progress=seen.append)
    assert len(seen) == len(r)
    assert sorted((s["name"], s["tokens"]) for s in seen) == sorted((x["name"], x["tokens"]) for x in r)
    assert all(s["status"] in ("compiled", "cached") for s in seen)


def test_progress_exception_is_raised_after_the_call(cache):
    def boom(_):
        raise KeyError("from progress")

    with pytest.raises(KeyError, match="from progress"):
        jitgemm.prewarm(GEMMS[:1], arch=ARCH, cache_dir=cache, progress=boom)


def test_failure_raises_with_results_and_others_still_compile(cache):
    gemms = [dict(GEMMS[0], tokens=[1]), {"name": "bad", "op": "linear", "n": 256, "k": 100,
                                          "tokens": [1]}]
    with pytest.raises(jitgemm.JitError) as info:
        jitgemm.prewarm(gemms, arch=ARCH, cache_dir=cache)
    e = info.value
    assert e.status == "JIT_MISALIGNED" and "k=100" in e.message
    assert [r["status"] for r in e.results] == ["compiled", "failed"]
    assert e.results[1]["key"] is None and "k=100" in e.results[1]["error"]
    r = jitgemm.prewarm(gemms, arch=ARCH, cache_dir=cache, check=False)
    assert [x["status"] for x in r] == ["cached", "failed"]


def test_cache_dir_that_is_a_file_is_refused(tmp_path):
    f = tmp_path / "file"
    f.write_text("")
    with pytest.raises(ValueError, match="is not a directory"):
        jitgemm.prewarm(GEMMS, arch=ARCH, cache_dir=f)


def test_cache_dir_the_library_refuses_is_an_error(tmp_path):
    # A directory others can write to is refused by the library (docs/cache.md), which then
    # keeps kernels in memory only: for a prewarm that is a failure.
    d = tmp_path / "shared"
    d.mkdir()
    os.chmod(d, 0o777)
    with pytest.raises(jitgemm.JitError) as info:
        jitgemm.prewarm(GEMMS[:1], arch=ARCH, cache_dir=d)
    e = info.value
    assert e.status == "JIT_CACHE_ERROR"
    assert "only 0 of 2 kernels are in the cache %s" % d in e.message
    assert all(not r["stored"] for r in e.results)
    r = jitgemm.prewarm(GEMMS[:1], arch=ARCH, cache_dir=d, check=False)
    assert all(x["status"] != "failed" and not x["stored"] for x in r)


def test_cache_dir_from_the_environment(tmp_path, monkeypatch):
    monkeypatch.setenv("JITGEMM_CACHE_DIR", str(tmp_path / "env-cache"))
    assert jitgemm.cache_dir_of() == tmp_path / "env-cache"
    r = jitgemm.prewarm(GEMMS[:1], arch=ARCH)
    assert all(x["stored"] for x in r)
    assert (tmp_path / "env-cache" / "kernels" / (r[0]["key"] + ".json")).is_file()
    monkeypatch.delenv("JITGEMM_CACHE_DIR")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert jitgemm.cache_dir_of() == tmp_path / "xdg" / "jitgemm"
    monkeypatch.setenv("XDG_CACHE_HOME", "relative/ignored")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert jitgemm.cache_dir_of() == tmp_path / "home" / ".cache" / "jitgemm"
    assert jitgemm.cache_dir_of(tmp_path / "given") == tmp_path / "given"


@pytest.mark.parametrize("kwargs,exc,words", [
    (dict(shapes=42), TypeError, ["shapes must be a shape-list path"]),
    (dict(jobs=-1), ValueError, ["jobs must be an integer >= 0"]),
    (dict(progress="print"), TypeError, ["progress must be callable"]),
    (dict(arch="sm_77"), jitgemm.JitError, ["JIT_UNKNOWN_ARCH", "sm_77"]),
    (dict(sm_count=-4), ValueError, ["sm_count must be a positive integer"]),
    (dict(shapes=[]), ValueError, ["gemms: expected a non-empty array"]),
    (dict(shapes=[{"op": "linear", "n": 256, "k": 256}]), ValueError,
     ['gemms[0]: missing required field "tokens"']),
    (dict(shapes=[{"op": "linear", "n": 256, "k": 256, "tokens": [1], "dtype": "e4m3"}]),
     ValueError, ["gemms[0].dtype: unknown key (allowed: name, op, n, k, a, b, scales, out, "
                  "tokens, groups, layout, expected_m)"]),
    (dict(shapes=[{"op": "linear", "n": 256, "k": 256, "tokens": [1], "a": "fp8"}]),
     ValueError, ["shapes: gemms[0].a: unknown value 'fp8' (known: e4m3, e5m2, e2m1)"]),
])
def test_argument_errors(cache, kwargs, exc, words):
    args = dict(shapes=GEMMS, arch=ARCH, cache_dir=cache)
    args.update(kwargs)
    with pytest.raises(exc) as info:
        jitgemm.prewarm(**args)
    for w in words:
        assert w in str(info.value)
