#!/usr/bin/env python3
"""How far the planner's choice lands from the fastest candidate on recorded sweeps.

A sweep (bench/torch_anchor.py --sweep) times every candidate the cost models weigh at each
cell (op, N, K, M) on the GPU. This script asks the planner of a built `jitgemm` which
candidate it takes at each cell today (`jitgemm inspect --plan --json`, for the sweep's arch
and SM count) and looks that candidate up in the recorded times: per cell the ratio of its
time to the fastest one's. No GPU is needed, so a change to a cost model can be checked on the
build machine against what the H200 measured.

    python3 bench/sweep_report.py --jitgemm build/jitgemm bench/sweeps/*.csv
    python3 bench/sweep_report.py --jitgemm build/jitgemm --check bench/sweeps/*.csv
    python3 bench/sweep_report.py --to-csv sweep.json > bench/sweeps/h200-COMMIT.csv

A sweep is either torch_anchor.py's JSON document or the compact CSV that --to-csv writes
(bench/sweeps/README.md). --check exits 1 unless, in every sweep, the share of cells within
5% of the fastest is at least --min-share (0.9) and no cell is past --max-worst (1.15): the
cost-model target (docs/performance.md, "Targets").
"""
import argparse
import csv
import io
import json
import os
import subprocess
import sys

WITHIN = 1.05
# Environment variables that would change the planner's choice: a sweep is checked against
# the planner's own choice, so none of them may leak in from the caller.
PLANNER_SWITCHES = ("JITGEMM_FORCE_CANDIDATE", "JITGEMM_FAMILY", "JITGEMM_WGMMA_PROMOTE",
                    "JITGEMM_WGMMA_EPILOGUE", "JITGEMM_WGMMA_GROUP_M")


class SweepError(Exception):
    pass


def load_json(path):
    """torch_anchor.py --sweep document -> (meta, cells); a cell is a dict with op, n, k,
    tokens and candidates: [(route, tile, microseconds)] of the candidates that were timed."""
    with open(path, encoding="utf-8") as f:
        doc = json.load(f)
    # The document names the device but not the arch: sweeps run on the H200, sm_90a, the one
    # arch whose kernels run here (--to-csv records it, so a CSV can say otherwise).
    meta = {"commit": doc.get("commit", "?"), "date": doc.get("date", "?"),
            "device": doc.get("device", "?"), "sms": int(doc.get("sms", 0)), "arch": "sm_90a"}
    cells = []
    for r in doc.get("results", []):
        if not r.get("sweep"):
            continue
        timed = [(c["route"], c["tile"], float(c["jitgemm_us"]))
                 for c in r["candidates"] if "jitgemm_us" in c]
        cells.append({"op": r["op"], "n": int(r["n"]), "k": int(r["k"]),
                      "tokens": int(r["tokens"]), "candidates": timed})
    return meta, cells


def load_csv(path):
    """The compact form: '# key: value' lines (commit, date, device, sms, arch), then
    op,n,k,tokens,route,tile,us rows, one per timed candidate."""
    meta = {"arch": "sm_90a"}
    rows = []
    with open(path, encoding="utf-8") as f:
        for line in f:
            if line.startswith("#"):
                key, _, value = line[1:].partition(":")
                if value:
                    meta[key.strip()] = value.strip()
            elif line.strip():
                rows.append(line)
    if "sms" not in meta:
        raise SweepError(f"{path}: no '# sms:' line")
    meta["sms"] = int(meta["sms"])
    cells, index = [], {}
    for r in csv.DictReader(io.StringIO("".join(rows))):
        key = (r["op"], int(r["n"]), int(r["k"]), int(r["tokens"]))
        if key not in index:
            index[key] = {"op": key[0], "n": key[1], "k": key[2], "tokens": key[3],
                          "candidates": []}
            cells.append(index[key])
        index[key]["candidates"].append((r["route"], r["tile"], float(r["us"])))
    return meta, cells


def load(path):
    return load_json(path) if path.endswith(".json") else load_csv(path)


def to_csv(path, out):
    meta, cells = load_json(path)
    for key in ("commit", "date", "device", "sms", "arch"):
        out.write(f"# {key}: {meta[key]}\n")
    out.write("# source: bench/torch_anchor.py --sweep (scripts/gpu-check.sh)\n")
    w = csv.writer(out, lineterminator="\n")
    w.writerow(["op", "n", "k", "tokens", "route", "tile", "us"])
    for c in cells:
        for route, tile, us in c["candidates"]:
            w.writerow([c["op"], c["n"], c["k"], c["tokens"], route, tile, f"{us:.2f}"])


def planner_choice(jitgemm, cell, arch, sms, memo):
    """(route, tile) the planner takes for the cell today."""
    key = (cell["op"], cell["n"], cell["k"], cell["tokens"], arch, sms)
    if key in memo:
        return memo[key]
    env = {k: v for k, v in os.environ.items() if k not in PLANNER_SWITCHES}
    cmd = [jitgemm, "inspect", "--op", cell["op"], "--n", str(cell["n"]), "--k", str(cell["k"]),
           "--tokens", str(cell["tokens"]), "--arch", arch, "--sm-count", str(sms), "--plan",
           "--json"]
    p = subprocess.run(cmd, capture_output=True, text=True, env=env, check=False)
    if p.returncode != 0:
        raise SweepError(f"{' '.join(cmd)}: exit {p.returncode}: {p.stderr.strip()}")
    chosen = json.loads(p.stdout)["chosen"]
    memo[key] = (chosen["route"], f'{chosen["tile"]["m"]}x{chosen["tile"]["n"]}')
    return memo[key]


def report(path, jitgemm, memo, out):
    """Writes the sweep's table; returns (cells within 5%, cells, worst ratio)."""
    meta, cells = load(path)
    if not cells:
        raise SweepError(f"{path}: no sweep cells")
    out.write(f"\n{path}: {len(cells)} cells, commit {meta.get('commit', '?')}, "
              f"{meta.get('date', '?')}, {meta.get('device', '?')}, {meta['sms']} SMs\n\n")
    out.write("| cell (op M x N x K) | fastest (µs) | chosen today (µs) | chosen / fastest |\n")
    out.write("|---|---|---|---|\n")
    within, worst = 0, 0.0
    for c in cells:
        fastest = min(c["candidates"], key=lambda x: x[2])
        route, tile = planner_choice(jitgemm, c, meta["arch"], meta["sms"], memo)
        timed = [x for x in c["candidates"] if x[0] == route and x[1] == tile]
        if not timed:
            raise SweepError(f"{path}: {c['op']} {c['tokens']}x{c['n']}x{c['k']}: the planner "
                             f"takes {route} {tile}, which the sweep did not time")
        ratio = timed[0][2] / fastest[2]
        within += ratio <= WITHIN
        worst = max(worst, ratio)
        mark = f"{ratio:.3f}" if ratio <= WITHIN else f"**{ratio:.3f}**"
        out.write(f"| {c['op']} {c['tokens']} x {c['n']} x {c['k']} | {fastest[0]} {fastest[1]} "
                  f"{fastest[2]:.1f} | {route} {tile} {timed[0][2]:.1f} | {mark} |\n")
    out.write(f"\nwithin 5% of the fastest: {within} of {len(cells)} "
              f"({100.0 * within / len(cells):.0f}%), worst {worst:.3f}\n")
    return within, len(cells), worst


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("sweeps", nargs="+", help="sweep documents (.json) or compact files (.csv)")
    ap.add_argument("--jitgemm", help="the jitgemm program whose planner is checked")
    ap.add_argument("--check", action="store_true",
                    help="exit 1 unless every sweep meets --min-share and --max-worst")
    ap.add_argument("--min-share", type=float, default=0.9,
                    help="least share of cells within 5%% of the fastest (default 0.9)")
    ap.add_argument("--max-worst", type=float, default=1.15,
                    help="largest chosen / fastest allowed in any cell (default 1.15)")
    ap.add_argument("--to-csv", action="store_true",
                    help="write the one JSON sweep given as the compact CSV on stdout")
    args = ap.parse_args(argv)
    try:
        if args.to_csv:
            if len(args.sweeps) != 1 or not args.sweeps[0].endswith(".json"):
                ap.error("--to-csv takes one torch_anchor.py --sweep document (.json)")
            to_csv(args.sweeps[0], sys.stdout)
            return 0
        if not args.jitgemm:
            ap.error("--jitgemm is required (the program whose planner is checked)")
        memo, failed = {}, []
        for path in args.sweeps:
            within, n, worst = report(path, args.jitgemm, memo, sys.stdout)
            if within < args.min_share * n or worst > args.max_worst:
                failed.append(f"{path}: {within} of {n} within 5%, worst {worst:.3f}")
    except (OSError, ValueError, KeyError, SweepError) as e:
        print(f"sweep_report: {e}", file=sys.stderr)
        return 2
    if args.check:
        for f in failed:
            print(f"sweep_report: below the target (>= {args.min_share:.0%} within 5%, none past "
                  f"{args.max_worst}): {f}", file=sys.stderr)
        return 1 if failed else 0
    return 0


if __name__ == "__main__":
    sys.exit(main())
