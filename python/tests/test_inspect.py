"""jitgemm.inspect against the CLI's `inspect --json` (the same C call underneath), and its
error paths. Compile-only: no GPU."""

import re

import pytest

import jitgemm
from conftest import ARCH

PROBLEM = dict(op="linear", n=512, k=256, tokens=100)
CLI_PROBLEM = ["--op", "linear", "--n", "512", "--k", "256", "--tokens", "100", "--arch", ARCH]


def test_key_matches_cli(cli_json):
    got = jitgemm.inspect(what="key", arch=ARCH, **PROBLEM)
    want = cli_json("inspect", *CLI_PROBLEM, "--key", "--json")
    assert got == want
    assert re.fullmatch(r"[0-9a-f]{32}", got["hash"])
    assert "n=512 k=256" in got["text"] and "arch=sm_90a" in got["text"]
    assert got["target"] == "sm_90a" and got["fallback"] is False and got["note"] == "native"


def test_plan_matches_cli(cli_json):
    got = jitgemm.inspect(what="plan", arch=ARCH, **PROBLEM)
    assert got == cli_json("inspect", *CLI_PROBLEM, "--plan", "--json")
    assert got["arch"] == ARCH


def test_source_matches_cli(cli_json):
    got = jitgemm.inspect(what="source", arch=ARCH, **PROBLEM)
    assert got == cli_json("inspect", *CLI_PROBLEM, "--source", "--json")["source"]
    assert "__global__" in got


def test_plan_is_the_default_stage():
    assert jitgemm.inspect(arch=ARCH, **PROBLEM) == jitgemm.inspect(what="plan", arch=ARCH, **PROBLEM)


def test_entry_compiles_into_the_cache(cache):
    key = jitgemm.inspect(what="key", arch=ARCH, cache_dir=cache, **PROBLEM)
    entry = jitgemm.inspect(what="entry", arch=ARCH, cache_dir=cache, **PROBLEM)
    assert entry["hash"] == key["hash"]
    assert entry["key_text"] == key["text"]
    assert entry["registers"] > 0 and entry["size"] > 0
    assert (cache / "kernels" / (key["hash"] + ".json")).is_file()
    assert (cache / "kernels" / (key["hash"] + ".cubin")).is_file()


def test_ptx_targets_the_arch(cache):
    ptx = jitgemm.inspect(what="ptx", arch=ARCH, cache_dir=cache, **PROBLEM)
    assert ".target sm_90a" in ptx and ".entry" in ptx


def test_words_and_overrides_reach_the_key():
    base = jitgemm.inspect(what="key", arch=ARCH, **PROBLEM)["text"]
    swiglu = jitgemm.inspect("linear_swiglu", 512, 256, 100, what="key", arch=ARCH)["text"]
    add = jitgemm.inspect("linear_add", 512, 256, 100, what="key", arch=ARCH)["text"]
    assert "epilogue=linear " in base and "epilogue=linear_swiglu" in swiglu
    assert "epilogue=linear_add" in add
    # The SM count reaches the plan; the key holds it only through the code it changes.
    plan = jitgemm.inspect(what="plan", arch=ARCH, sm_count=100, **PROBLEM)
    assert plan["sm_count"] == 100
    assert jitgemm.inspect(what="plan", arch=ARCH, **PROBLEM)["sm_count"] == 132
    nvfp4 = jitgemm.inspect(what="key", arch="sm_100a", a="e2m1", b="e2m1", scales="ue4m3/16",
                            **PROBLEM)["text"]
    assert "a=e2m1 b=e2m1" in nvfp4 and "scales=ue4m3/16" in nvfp4
    rubin = jitgemm.inspect(what="key", arch="sm_107a", **PROBLEM)
    assert "arch=sm_107a" in rubin["text"]


@pytest.mark.parametrize("kwargs,exc,words", [
    (dict(what="bogus"), ValueError, ["what must be one of key, plan, source, ptx, entry"]),
    (dict(op="linear_mul"), ValueError, ["op: unknown value 'linear_mul'", "linear_swiglu"]),
    (dict(a="e9m9"), ValueError, ["a: unknown value 'e9m9'", "e4m3, e5m2, e2m1"]),
    (dict(b="bf16"), ValueError, ["b: unknown value 'bf16'"]),
    (dict(out="e4m3"), ValueError, ["out: unknown value 'e4m3'", "bf16, f32"]),
    (dict(scales="ue9m9/32"), ValueError, ["scales: unknown value", "ue8m0/32"]),
    (dict(op=1), TypeError, ["op: expected a string"]),
    (dict(n=0), ValueError, ["n: expected a positive integer below 2^31, got 0"]),
    (dict(k=-16), ValueError, ["k: expected a positive integer"]),
    (dict(tokens=2**31), ValueError, ["m: expected a positive integer below 2^31"]),
    (dict(n="512"), TypeError, ['n: expected a positive integer, got "512"']),
    (dict(k=256.0), TypeError, ["k: expected a positive integer, got 256.0"]),
    (dict(n=True), TypeError, ["n: expected a positive integer, got true"]),
    (dict(arch=90), TypeError, ["arch must be a string"]),
    (dict(sm_count=0), ValueError, ["sm_count must be a positive integer"]),
    (dict(cache_dir=42), TypeError, ["cache_dir must be a path"]),
])
def test_argument_errors(kwargs, exc, words):
    args = dict(PROBLEM, arch=ARCH)
    args.update(kwargs)
    with pytest.raises(exc) as info:
        jitgemm.inspect(**args)
    for w in words:
        assert w in str(info.value)


@pytest.mark.parametrize("kwargs,status,words", [
    (dict(k=100), "JIT_MISALIGNED", ["k=100 must be a multiple of 16"]),
    (dict(op="linear_swiglu", n=255), None, ["even n", "255"]),
    (dict(a="e5m2"), "JIT_UNSUPPORTED", ["row scales need e4m3 x e4m3"]),
    (dict(arch="sm_77"), "JIT_UNKNOWN_ARCH", ["sm_77", "sm_90a"]),
    (dict(scales="ue8m0/32"), None, ["sm_90a"]),
])
def test_library_errors_are_jit_errors(kwargs, status, words):
    args = dict(PROBLEM, what="plan", arch=ARCH)
    args.update(kwargs)
    with pytest.raises(jitgemm.JitError) as info:
        jitgemm.inspect(**args)
    e = info.value
    assert e.code < 0 and e.status == jitgemm.status_name(e.code)
    if status:
        assert e.status == status
    for w in words:
        assert w in e.message
    assert str(e) == "%s: %s" % (e.status, e.message)


def test_entry_refuses_a_file_as_cache_dir(tmp_path):
    f = tmp_path / "not-a-dir"
    f.write_text("x")
    with pytest.raises(ValueError, match="is not a directory"):
        jitgemm.inspect(what="entry", arch=ARCH, cache_dir=f, **PROBLEM)
    with pytest.raises(ValueError, match="is not a directory"):
        jitgemm.inspect(what="entry", arch=ARCH, cache_dir=f / "below", **PROBLEM)


def test_no_arch_without_a_gpu_names_the_fix():
    try:
        jitgemm.inspect(what="plan", **PROBLEM)
    except jitgemm.JitError as e:
        assert "no arch given and no GPU" in e.message
    else:
        pytest.skip("a GPU is present: the arch was detected")


def test_one_sm_returns_a_key(build_dir):
    """A GPU of one SM plans like any other. Run in a child interpreter, so that a planner that
    divides by zero fails this test instead of killing the whole run."""
    from conftest import PYTHON_DIR, run_python

    code = ("import jitgemm\n"
            "k = jitgemm.inspect('linear', 1024, 1024, 1, what='key', arch='sm_90a', sm_count=1)\n"
            "p = jitgemm.inspect('linear', 1024, 1024, 4096, arch='sm_90a', sm_count=1)\n"
            "print(k['hash'], p['sm_count'], p['cluster']['preferred'][0])\n")
    rc, out, err = run_python(code, {"JITGEMM_LIBRARY": str(build_dir / "libjitgemm.so"),
                                     "PYTHONPATH": str(PYTHON_DIR)})
    assert rc == 0, "exit %d: %s" % (rc, err)
    key_hash, sms, cluster = out.split()
    assert re.fullmatch(r"[0-9a-f]{32}", key_hash)
    assert sms == "1" and cluster == "1"
