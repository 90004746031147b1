#!/usr/bin/env python3
"""Compare forms of a kernel from torch_anchor.py runs: which form is faster against torch.

A form is a set of environment settings (a comparison switch such as JITGEMM_WGMMA_PROMOTE=whole,
or none for the default). scripts/gpu-check.sh (GPU_CHECK_AB) runs bench/torch_anchor.py once per
form and round, each in a fresh process, the forms in alternation, and names each document
FORM-ROUND.json. Within a document every shape is already timed against torch in alternation, so
its speedups are ratios measured at the same clocks; this script compares those ratios across
forms, never raw times from different processes.

    python3 bench/ab_summary.py [--md FILE] ab/whole-1.json ab/halves-1.json ab/whole-2.json ...

Printed (and written as markdown with --md):
  - per form and round: the geometric mean of the speedup over torch across the shapes that
    every document timed (a shape that failed its FP64 check anywhere is left out and named);
  - per shape: the geometric mean over rounds of each form's speedup, and the form that led.
Exit status 1 when no shape is common to all documents or a file cannot be read.
"""
import argparse
import json
import math
import os
import re
import sys

NAME = re.compile(r"^(?P<form>.+)-(?P<round>\d+)\.json$")


def geomean(values):
    return math.exp(sum(math.log(v) for v in values) / len(values))


def shape_key(row):
    return (row.get("op", "linear"), int(row["tokens"]), int(row["n"]), int(row["k"]))


def shape_text(key):
    op, m, n, k = key
    return f"{op} {m} x {n} x {k}"


def load(path):
    """(form, round, {shape: row}, [failed shapes]) of one torch_anchor.py document."""
    m = NAME.match(os.path.basename(path))
    if not m:
        raise ValueError(f"{path}: the name must be FORM-ROUND.json")
    with open(path) as f:
        doc = json.load(f)
    rows, failed = {}, []
    for r in doc.get("results", []):
        key = shape_key(r)
        if r.get("check") != "pass" or not r.get("speedup_over_torch"):
            failed.append(key)
        else:
            rows[key] = r
    return m.group("form"), int(m.group("round")), rows, failed


def summarise(docs):
    """docs: [(form, round, rows, failed)] -> dict with the comparison (see the module text)."""
    failed = sorted({k for _, _, _, f in docs for k in f})
    common = set.intersection(*(set(rows) for _, _, rows, _ in docs)) - set(failed)
    if not common:
        raise ValueError("no shape passed its check in every document")
    shapes = sorted(common)
    forms = []
    for form, _, _, _ in docs:
        if form not in forms:
            forms.append(form)
    runs = {f: [] for f in forms}
    per_shape = {f: {s: [] for s in shapes} for f in forms}
    for form, rnd, rows, _ in sorted(docs, key=lambda d: (d[1], forms.index(d[0]))):
        runs[form].append((rnd, geomean([rows[s]["speedup_over_torch"] for s in shapes])))
        for s in shapes:
            per_shape[form][s].append(rows[s]["speedup_over_torch"])
    shape_means = {f: {s: geomean(v) for s, v in per_shape[f].items()} for f in forms}
    leads = {f: 0 for f in forms}
    for s in shapes:
        leads[max(forms, key=lambda f: shape_means[f][s])] += 1
    return {"forms": forms, "shapes": shapes, "failed": failed, "runs": runs,
            "shape_means": shape_means, "leads": leads}


def markdown(s):
    forms = s["forms"]
    out = [f"{len(s['shapes'])} shapes timed in every document; geometric mean of the speedup "
           "over torch per run:", "",
           "| form | runs (round: geomean) | mean of runs | shapes led |", "|---|---|---|---|"]
    for f in forms:
        runs = ", ".join(f"{r}: {g:.4f}" for r, g in s["runs"][f])
        mean = geomean([g for _, g in s["runs"][f]])
        out.append(f"| {f} | {runs} | {mean:.4f} | {s['leads'][f]} |")
    out += ["", "| shape | " + " | ".join(forms) + " |", "|---" * (len(forms) + 1) + "|"]
    for sh in s["shapes"]:
        out.append(f"| {shape_text(sh)} | " +
                   " | ".join(f"{s['shape_means'][f][sh]:.3f}" for f in forms) + " |")
    if s["failed"]:
        out += ["", "left out (a failed check or no timing in some document): " +
                ", ".join(shape_text(k) for k in s["failed"])]
    return "\n".join(out) + "\n"


def main(argv):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("files", nargs="+", help="torch_anchor.py documents named FORM-ROUND.json")
    ap.add_argument("--md", help="also write the markdown here")
    args = ap.parse_args(argv)
    try:
        summary = summarise([load(p) for p in args.files])
    except (OSError, ValueError, KeyError) as e:
        print(f"ab_summary: {e}", file=sys.stderr)
        return 1
    text = markdown(summary)
    sys.stdout.write(text)
    if args.md:
        with open(args.md, "w") as f:
            f.write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
