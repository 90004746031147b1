"""bench/ab_summary.py, which compares kernel forms from torch_anchor.py documents (the A/B step
of scripts/gpu-check.sh): the figures it reports are checked here on made-up documents, so a
wrong mean or a failed check counted in would show without a GPU."""

import importlib.util
import json
import math

import pytest

from conftest import REPO

spec = importlib.util.spec_from_file_location("ab_summary", REPO / "bench" / "ab_summary.py")
ab = importlib.util.module_from_spec(spec)
spec.loader.exec_module(ab)


def row(m, n, k, speedup, check="pass"):
    r = {"op": "linear", "tokens": m, "n": n, "k": k, "check": check}
    if check == "pass":
        r["speedup_over_torch"] = speedup
        r["jitgemm_us"] = 100.0 / speedup
    return r


def write(tmp_path, name, rows):
    p = tmp_path / name
    p.write_text(json.dumps({"results": rows}))
    return str(p)


def test_means_per_run_and_per_shape(tmp_path):
    files = [
        write(tmp_path, "whole-1.json", [row(1024, 5120, 17408, 0.9), row(4096, 5120, 17408, 1.0)]),
        write(tmp_path, "halves-1.json", [row(1024, 5120, 17408, 1.0), row(4096, 5120, 17408, 1.1)]),
        write(tmp_path, "whole-2.json", [row(1024, 5120, 17408, 0.8), row(4096, 5120, 17408, 1.0)]),
        write(tmp_path, "halves-2.json", [row(1024, 5120, 17408, 1.2), row(4096, 5120, 17408, 0.9)]),
    ]
    s = ab.summarise([ab.load(p) for p in files])
    assert s["forms"] == ["whole", "halves"]
    assert [r for r, _ in s["runs"]["whole"]] == [1, 2]
    assert s["runs"]["whole"][0][1] == pytest.approx(math.sqrt(0.9 * 1.0))
    assert s["runs"]["halves"][1][1] == pytest.approx(math.sqrt(1.2 * 0.9))
    key = ("linear", 1024, 5120, 17408)
    assert s["shape_means"]["whole"][key] == pytest.approx(math.sqrt(0.9 * 0.8))
    assert s["shape_means"]["halves"][key] == pytest.approx(math.sqrt(1.0 * 1.2))
    # 4096: whole sqrt(1.0 * 1.0) = 1.0 against halves sqrt(1.1 * 0.9) = 0.995
    assert s["leads"] == {"whole": 1, "halves": 1}
    text = ab.markdown(s)
    assert "| whole | 1: 0.9487, 2: 0.8944 |" in text
    assert "linear 4096 x 5120 x 17408 | 1.000 | 0.995 |" in text


def test_a_shape_that_failed_anywhere_is_left_out_of_every_mean(tmp_path):
    files = [
        write(tmp_path, "a-1.json", [row(1, 8192, 3584, 2.0), row(128, 8192, 3584, 1.0)]),
        write(tmp_path, "b-1.json", [row(1, 8192, 3584, 4.0), row(128, 8192, 3584, 0, "FAIL")]),
    ]
    s = ab.summarise([ab.load(p) for p in files])
    assert s["shapes"] == [("linear", 1, 8192, 3584)]
    assert s["failed"] == [("linear", 128, 8192, 3584)]
    assert s["runs"]["a"][0][1] == pytest.approx(2.0)
    assert s["runs"]["b"][0][1] == pytest.approx(4.0)
    assert "left out" in ab.markdown(s) and "128 x 8192 x 3584" in ab.markdown(s)


def test_refusals(tmp_path, capsys):
    bad_name = write(tmp_path, "whole.json", [row(1, 1, 1, 1.0)])
    assert ab.main([bad_name]) == 1
    assert "FORM-ROUND.json" in capsys.readouterr().err
    only_failed = write(tmp_path, "x-1.json", [row(1, 1, 1, 0, "FAIL")])
    assert ab.main([only_failed]) == 1
    assert "no shape passed" in capsys.readouterr().err
    ok = write(tmp_path, "y-1.json", [row(16, 64, 64, 1.5)])
    md = tmp_path / "ab.md"
    assert ab.main([ok, "--md", str(md)]) == 0
    assert "| y | 1: 1.5000 | 1.5000 | 1 |" in md.read_text()
