"""The shape list read by jitgemm.prewarm: every documented error (docs/shape-list.md), each
also refused by the CLI's C parser with the same path, so the two stay one format."""

import json

import pytest

import jitgemm
from jitgemm import _shapes
from conftest import ARCH

GOOD = {"name": "g", "op": "linear", "n": 256, "k": 256, "tokens": [1]}


def doc(**changes):
    entry = dict(GOOD)
    for k, v in changes.items():
        if v is None:
            entry.pop(k)
        else:
            entry[k] = v
    return json.dumps({"target": {"arch": ARCH}, "gemms": [entry]})


CASES = [
    # (id, file text, what the Python message holds, what the CLI's message holds)
    ("syntax", '{"gemms": [}', "malformed JSON", "malformed JSON"),
    ("duplicate-key", '{"gemms": [], "gemms": []}', "duplicate key 'gemms'", "malformed JSON"),
    ("trailing", doc() + " x", "malformed JSON", "malformed JSON"),
    ("nan", '{"gemms": [{"name": "g", "op": "linear", "n": NaN, "k": 256, "tokens": [1]}]}',
     "malformed JSON", "malformed JSON"),
    ("top-unknown", '{"gemms": [%s], "extra": 1}' % json.dumps(GOOD),
     "extra: unknown key (allowed: target, gemms)", "extra: unknown key"),
    ("target-unknown", '{"target": {"gpu": "h200"}, "gemms": [%s]}' % json.dumps(GOOD),
     "target.gpu: unknown key (allowed: arch, sm_count)", "target.gpu: unknown key"),
    ("sm-count", '{"target": {"sm_count": 0}, "gemms": [%s]}' % json.dumps(GOOD),
     "target.sm_count: expected a positive integer", "target.sm_count"),
    ("no-gemms", '{"target": {}}', 'missing required field "gemms"', "gemms"),
    ("empty-gemms", '{"gemms": []}', "gemms: expected a non-empty array", "gemms"),
    ("entry-unknown", doc(tokns=[1]), "gemms[0].tokns: unknown key", "gemms[0].tokns"),
    ("missing-k", doc(k=None), 'gemms[0]: missing required field "k"', 'missing required field "k"'),
    ("missing-name", doc(name=None), 'gemms[0]: missing required field "name"', '"name"'),
    ("n-string", doc(n="abc"), 'gemms[0].n: expected a positive integer, got "abc"', "gemms[0].n"),
    ("n-float", doc(n=4096.0), "gemms[0].n: expected a positive integer, got 4096.0", "gemms[0].n"),
    ("n-quoted", doc(n="4096"), 'gemms[0].n: expected a positive integer, got "4096"', "gemms[0].n"),
    ("k-zero", doc(k=0), "gemms[0].k: expected a positive integer", "gemms[0].k"),
    ("op-word", doc(op="gelu"), "gemms[0].op: unknown value 'gelu'", "gemms[0].op"),
    ("a-word", doc(a="int8"), "gemms[0].a: unknown value 'int8'", "gemms[0].a"),
    ("out-word", doc(out="e4m3"), "gemms[0].out: unknown value 'e4m3'", "gemms[0].out"),
    ("scales-word", doc(scales="col"), "gemms[0].scales: unknown value 'col'", "gemms[0].scales"),
    ("groups-zero", doc(groups=0), "gemms[0].groups: expected a positive integer",
     "gemms[0].groups: expected a positive integer"),
    ("groups-many", doc(groups=1025), "gemms[0].groups: expected an integer from 1 to 1024",
     "gemms[0].groups: expected an integer from 1 to 1024"),
    ("layout-word", doc(groups=8, layout="ragged"),
     'gemms[0].layout: expected "contiguous" or "masked"', "gemms[0].layout"),
    ("layout-alone", doc(layout="masked"), 'gemms[0].layout: describes a grouped GEMM',
     'gemms[0].layout: describes a grouped GEMM, which needs "groups"'),
    ("expected-m-zero", doc(groups=8, expected_m=0),
     "gemms[0].expected_m: expected a positive integer", "gemms[0].expected_m"),
    ("tokens-empty", doc(tokens=[]), "gemms[0].tokens: expected a non-empty array", "gemms[0].tokens"),
    ("tokens-scalar", doc(tokens=4), "gemms[0].tokens: expected a non-empty array", "gemms[0].tokens"),
    ("tokens-dup", doc(tokens=[1, 2, 1]),
     "gemms[0].tokens[2]: duplicate token count 1 (also gemms[0].tokens[0])",
     "duplicate token count 1"),
    ("tokens-zero", doc(tokens=[0]), "gemms[0].tokens[0]: expected a positive integer", "gemms[0].tokens[0]"),
    ("name-empty", doc(name=""), "gemms[0].name: expected a non-empty string", "gemms[0].name"),
    ("name-dup", json.dumps({"gemms": [GOOD, GOOD]}),
     'gemms[1].name: duplicate name "g" (also gemms[0])', 'duplicate name "g"'),
    ("entry-not-object", '{"gemms": [3]}', "gemms[0]: expected an object", "gemms[0]"),
]


@pytest.mark.parametrize("text,ours,theirs", [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_bad_shape_list(tmp_path, cli, text, ours, theirs):
    path = tmp_path / "shapes.json"
    path.write_text(text)
    with pytest.raises(ValueError) as info:
        jitgemm.prewarm(path, arch=ARCH, cache_dir=tmp_path / "cache")
    msg = str(info.value)
    assert msg.startswith(str(path) + ":"), msg
    assert ours in msg
    rc, out, err = cli("prewarm", path, "--arch", ARCH, "--cache-dir", tmp_path / "cache")
    assert rc == 1, (out, err)
    assert theirs in err
    assert not (tmp_path / "cache" / "kernels").exists()


def test_the_repository_examples(repo, cli):
    for name, words in (("shapes-bad-syntax.json", ":4:61: malformed JSON"),
                        ("shapes-bad-field.json", 'gemms[2].n: expected a positive integer, got "abc"')):
        with pytest.raises(ValueError) as info:
            jitgemm.prewarm(repo / "examples" / name, arch=ARCH)
        assert words in str(info.value)
    sl = _shapes.from_file(repo / "examples" / "shapes.json")
    doc_ = json.loads((repo / "examples" / "shapes.json").read_text())
    assert sl.arch == doc_["target"]["arch"] and sl.sm_count == doc_["target"]["sm_count"]
    assert len(sl.problems) == sum(len(g["tokens"]) for g in doc_["gemms"])
    assert [n for n, _ in sl.problems[:4]] == ["proj_5120"] * 4
    assert [p.m for _, p in sl.problems[:4]] == [1, 16, 1024, 4096]


def test_unreadable_files(tmp_path):
    with pytest.raises(FileNotFoundError):
        jitgemm.prewarm(tmp_path / "missing.json", arch=ARCH)
    with pytest.raises(IsADirectoryError):
        jitgemm.prewarm(tmp_path, arch=ARCH)
    big = tmp_path / "big.json"
    with open(big, "wb") as f:
        f.truncate((16 << 20) + 1)
    with pytest.raises(ValueError, match="larger than 16 MiB"):
        jitgemm.prewarm(big, arch=ARCH)
    nul = tmp_path / "nul.json"
    nul.write_bytes(b'{"gemms": []}\0')
    with pytest.raises(ValueError, match="NUL byte"):
        jitgemm.prewarm(nul, arch=ARCH)


def test_unknown_target_arch_is_the_librarys_error(tmp_path, cli):
    path = tmp_path / "shapes.json"
    path.write_text(json.dumps({"target": {"arch": "sm_77"}, "gemms": [GOOD]}))
    with pytest.raises(jitgemm.JitError) as info:
        jitgemm.prewarm(path, cache_dir=tmp_path / "cache")
    assert info.value.status == "JIT_UNKNOWN_ARCH" and "sm_77" in info.value.message
    rc, _, err = cli("prewarm", path, "--cache-dir", tmp_path / "cache")
    assert rc == 1 and "target.arch" in err
    # The short form the C parser accepts works here too, and names the same target.
    path.write_text(json.dumps({"target": {"arch": "90a"}, "gemms": [GOOD]}))
    r = jitgemm.prewarm(path, cache_dir=tmp_path / "cache")
    assert r[0]["key"] == jitgemm.inspect("linear", 256, 256, 1, what="key", arch=ARCH)["hash"]


def test_a_grouped_entry():
    text = doc(groups=8, layout="masked", expected_m=64, tokens=[512, 4096])
    sl = _shapes.from_text(text, "<grouped>")
    assert [(p.groups, p.layout, p.expected_m, p.m) for _, p in sl.problems] == [
        (8, 2, 64, 512), (8, 2, 64, 4096)]
    sl = _shapes.from_text(doc(groups=4, tokens=[100]), "<grouped>")
    p = sl.problems[0][1]
    assert (p.groups, p.layout, p.expected_m) == (4, 1, 0), "contiguous and m / G by default"
    p = _shapes.from_text(doc(), "<dense>").problems[0][1]
    assert (p.groups, p.layout) == (0, 0)
