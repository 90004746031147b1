"""bench/sweep_report.py, which checks the planner's choices against recorded sweeps: the
counting and the verdict are checked here with a stand-in for `jitgemm` whose choices the test
sets, so a wrong ratio, a cell left out or a check that cannot fail would show."""

import importlib.util
import json
import stat
import sys

import pytest

from conftest import REPO

spec = importlib.util.spec_from_file_location("sweep_report", REPO / "bench" / "sweep_report.py")
sr = importlib.util.module_from_spec(spec)
spec.loader.exec_module(sr)

CELLS = [
    # (tokens, {tile: us}): the fastest is 128x128 at every cell
    (1024, {"128x128": 100.0, "128x160": 104.0, "128x192": 120.0}),
    (2048, {"128x128": 200.0, "128x160": 212.0, "128x192": 206.0}),
    (4096, {"128x128": 400.0, "128x160": 401.0, "128x192": 470.0}),
]


def sweep_doc(tmp_path):
    results = []
    for tokens, times in CELLS:
        cands = [{"route": "wgmma_tma", "tile": t, "jitgemm_us": us, "check": "pass"}
                 for t, us in times.items()]
        cands.append({"route": "wgmma_tma_mc2", "tile": "128x128", "check": "fail"})  # untimed
        results.append({"sweep": True, "op": "linear", "n": 8192, "k": 8192, "tokens": tokens,
                        "candidates": cands})
    p = tmp_path / "sweep.json"
    p.write_text(json.dumps({"commit": "abc1234", "date": "2026-12-02T00:00:00Z",
                             "device": "NVIDIA H200", "sms": 132, "results": results}))
    return str(p)


def fake_jitgemm(tmp_path, choice_by_tokens):
    """A program that answers `inspect ... --tokens M --plan --json` with a chosen tile."""
    prog = tmp_path / "jitgemm"
    prog.write_text(
        f"#!{sys.executable}\n"
        "import json, sys\n"
        f"choice = {json.dumps({str(k): v for k, v in choice_by_tokens.items()})}\n"
        "a = sys.argv\n"
        "assert a[1] == 'inspect' and '--plan' in a and '--json' in a\n"
        "assert a[a.index('--arch') + 1] == 'sm_90a' and a[a.index('--sm-count') + 1] == '132'\n"
        "route, tile = choice[a[a.index('--tokens') + 1]].split(':')\n"
        "m, n = tile.split('x')\n"
        "print(json.dumps({'chosen': {'route': route, 'tile': {'m': int(m), 'n': int(n)}}}))\n")
    prog.chmod(prog.stat().st_mode | stat.S_IXUSR)
    return str(prog)


def test_ratios_and_counts(tmp_path, capsys):
    doc = sweep_doc(tmp_path)
    jg = fake_jitgemm(tmp_path, {1024: "wgmma_tma:128x160", 2048: "wgmma_tma:128x192",
                                 4096: "wgmma_tma:128x128"})
    within, n, worst = sr.report(doc, jg, {}, sys.stdout)
    assert (within, n) == (3, 3)  # 1.04, 1.03 and 1.00
    assert worst == pytest.approx(1.04)
    jg = fake_jitgemm(tmp_path, {1024: "wgmma_tma:128x192", 2048: "wgmma_tma:128x160",
                                 4096: "wgmma_tma:128x160"})
    within, n, worst = sr.report(doc, jg, {}, sys.stdout)
    assert (within, n) == (1, 3)  # 1.20 and 1.06 are not within 5%, 1.0025 is
    assert worst == pytest.approx(1.2)
    out = capsys.readouterr().out
    assert "| 1.040 |" in out and "| 1.030 |" in out and "| 1.000 |" in out


def test_check_fails_below_the_target(tmp_path):
    doc = sweep_doc(tmp_path)
    good = fake_jitgemm(tmp_path, {1024: "wgmma_tma:128x128", 2048: "wgmma_tma:128x192",
                                   4096: "wgmma_tma:128x160"})
    assert sr.main(["--jitgemm", good, "--check", doc]) == 0
    # 128x192 at 4096 is 1.175x the fastest: past 1.15, and 2 of 3 within 5% is below 90%
    bad = fake_jitgemm(tmp_path, {1024: "wgmma_tma:128x128", 2048: "wgmma_tma:128x128",
                                  4096: "wgmma_tma:128x192"})
    assert sr.main(["--jitgemm", bad, "--check", doc]) == 1
    assert sr.main(["--jitgemm", bad, doc]) == 0  # without --check only the report
    assert sr.main(["--jitgemm", bad, "--check", "--min-share", "0.6", "--max-worst", "1.2",
                    doc]) == 0


def test_untimed_choice_is_an_error(tmp_path, capsys):
    doc = sweep_doc(tmp_path)
    jg = fake_jitgemm(tmp_path, {1024: "wgmma_tma_mc2:128x128", 2048: "wgmma_tma:128x128",
                                 4096: "wgmma_tma:128x128"})
    assert sr.main(["--jitgemm", jg, "--check", doc]) == 2
    assert "did not time" in capsys.readouterr().err


def test_csv_round_trip(tmp_path, capsys):
    doc = sweep_doc(tmp_path)
    assert sr.main(["--to-csv", doc]) == 0
    text = capsys.readouterr().out
    assert "# sms: 132" in text and "# commit: abc1234" in text
    assert "wgmma_tma_mc2" not in text  # the untimed candidate is not recorded
    p = tmp_path / "sweep.csv"
    p.write_text(text)
    meta_j, cells_j = sr.load(doc)
    meta_c, cells_c = sr.load(str(p))
    assert meta_c["sms"] == 132 and meta_c["commit"] == "abc1234"
    assert [(c["tokens"], sorted(c["candidates"])) for c in cells_c] == \
        [(c["tokens"], sorted(c["candidates"])) for c in cells_j]
