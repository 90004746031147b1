#!/usr/bin/env python3
"""Static SASS checks of the generated tcgen05 kernels (no GPU needed, none used).

For each block-scaled problem below and each of sm_100a, sm_103a and sm_107a, the CLI plans and
compiles the kernel (`jitgemm inspect --plan --json`, then `--entry`, which puts the cubin in a
scratch cache), nvdisasm prints its SASS, and the SASS is compared with the plan:

  - the MMA opcode and its suffixes follow the plan's kind, CTA group and arch
    (docs/blackwell-rubin.md, "SASS checks", gives the expected spellings and their sources);
  - every TMA load of a 2-CTA plan is a .2CTA form, and none of a 1-CTA plan is;
  - B-reuse plans keep their collector hints (.B_KEEP / .B_REUSE), other plans have none;
  - the instruction descriptor the host encoder computed appears as an immediate;
  - MMAs per K tile: instrs_per_tile_k, twice that for B-reuse (two A halves share B), and
    scale copies (UTCCP) per K tile: sfa_chunks_k for each 128-row block of A and of B, both
    times the same unroll factor;
  - no local memory (LDL/STL), since a spill would hide in it.

Exit status: 0 all checks passed, 1 a check failed, 77 nvdisasm or the CLI missing (ctest
reports it as skipped). nvdisasm comes from the project-local folder scripts/setup.sh fills
(.deps/cuda-*/bin), from $JITGEMM_NVDISASM, or from PATH.

    scripts/tcgen05-checks/sass-check.py [--jitgemm build/jitgemm] [--nvdisasm PATH] [--quick]
        [--keep DIR]
"""
import argparse
import json
import os
import re
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))  # two levels up from scripts/tcgen05-checks

from nvdisasm_path import find_nvdisasm  # noqa: E402 (a sibling module)
SKIP = 77

# (a, b, scales) of every block-scaled kind the tcgen05 family plans.
FORMATS = [
    ("e2m1", "e2m1", "ue4m3/16"),  # NVFP4: kind::mxf4nvf4, 16-element scale blocks
    ("e2m1", "e2m1", "ue8m0/32"),  # MXFP4
    ("e4m3", "e4m3", "ue8m0/32"),  # MXFP8: kind::mxf8f6f4
    ("e4m3", "e2m1", "ue8m0/32"),  # mixed FP8 x FP4
    ("e2m1", "e2m1", "ue5m3/16"),  # Rubin only
    ("e2m1", "e2m1", "ue5m3/32"),  # Rubin only
]
ARCHES = ["sm_100a", "sm_103a", "sm_107a"]
TOKENS_FULL = [16, 600, 4096]  # decode, a middle band, the large band (B-reuse on sm_107a)
TOKENS_QUICK = [16, 4096]


def run(cmd):
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode != 0:
        raise RuntimeError("%s: exit %d\n%s" % (" ".join(cmd), r.returncode, r.stderr.strip()))
    return r.stdout


def expected_mma(plan, arch):
    """(opcode, required suffixes, forbidden suffixes) for the plan's MMA."""
    kind = plan["kind"]
    cta2 = plan["cta_group"] == 2
    if kind == "mxf8f6f4":
        op, need, never = "UTCQMMA", [], ["BLOCK16", "4X", "2X"]
    elif kind in ("mxf4nvf4", "mxf4"):
        op = "UTCOMMA"
        # With 16-element scale blocks the scale-vector mode is part of the opcode: .4X on
        # sm_100a (four scales per K=64 MMA), .BLOCK16 on sm_103a and sm_107a. With 32-element
        # blocks there is no suffix. An sm_107a plan assembled with sm_100 semantics shows .4X.
        if plan["sf_vec"] == 16:
            need = ["4X"] if arch == "sm_100a" else ["BLOCK16"]
        else:
            need = []
        never = [s for s in ("4X", "2X", "BLOCK16", "BLOCK32") if s not in need]
    else:
        raise RuntimeError("unknown kind %s" % kind)
    if cta2:
        need = ["2CTA"] + need
    else:
        never = never + ["2CTA"]
    return op, need, never


def check_sass(sass, plan, arch):
    """A list of failed checks (empty when all pass) and a one-line summary."""
    fails = []
    mma_re = re.compile(r"\b(UTC[A-Z]*MMA)((?:\.[A-Z0-9_]+)*)\s+([^;]*);")
    mmas = mma_re.findall(sass)
    op, need, never = expected_mma(plan, arch)
    if not mmas:
        fails.append("no MMA instruction in the SASS")
    for name, suffixes, operands in mmas:
        parts = suffixes.strip(".").split(".") if suffixes else []
        if name != op:
            fails.append("MMA opcode %s%s, expected %s" % (name, suffixes, op))
        for s in need:
            if s not in parts:
                fails.append("%s%s lacks .%s" % (name, suffixes, s))
        for s in never:
            if s in parts:
                fails.append("%s%s has .%s" % (name, suffixes, s))
    hints = sum(1 for _, _, ops in mmas if ".B_KEEP" in ops or ".B_REUSE" in ops)
    if plan["breuse"] and hints != len(mmas):
        fails.append("B-reuse plan: %d of %d MMAs carry a collector hint" % (hints, len(mmas)))
    if not plan["breuse"] and hints:
        fails.append("%d MMAs carry a collector hint in a plan without B-reuse" % hints)

    # ptxas may unroll the K-tile loop (or peel its first pass), so the counts are checked as
    # one unroll factor u >= 1 shared by the MMAs and the scale copies: MMAs per K tile are
    # instrs_per_tile_k (twice that with B-reuse: two A halves per B), and scale copies are
    # sfa_chunks_k for each 128-row block of A and of B the CTA holds.
    per_tile = plan["instrs_per_tile_k"] * (2 if plan["breuse"] else 1)
    unroll = len(mmas) // per_tile if per_tile else 0
    if unroll < 1 or len(mmas) != unroll * per_tile:
        fails.append("%d MMAs, not a multiple of %d per K tile" % (len(mmas), per_tile))
    loads = re.findall(r"\bUTMALDG((?:\.[A-Z0-9_]+)*)", sass)
    if not loads:
        fails.append("no TMA load (UTMALDG)")
    for suffixes in loads:
        has2 = "2CTA" in suffixes.split(".")
        if has2 != (plan["cta_group"] == 2):
            fails.append("UTMALDG%s in a %d-CTA plan" % (suffixes, plan["cta_group"]))

    sf = plan["operands"]["sf"]
    blocks = plan["cta_rows"]["a"] // 128 + sf["sfb_row_blocks"]
    want_cp = max(unroll, 1) * sf["sfa_chunks_k"] * blocks
    copies = re.findall(r"\bUTCCP[.A-Z0-9_]*", sass)
    if len(copies) != want_cp:
        fails.append("%d UTCCP, expected %d (unroll %d x %d chunks x %d row blocks)" %
                     (len(copies), want_cp, max(unroll, 1), sf["sfa_chunks_k"], blocks))

    idesc = int(plan["idesc"], 16)
    if not re.search(r"\b0x0*%x\b" % idesc, sass):
        fails.append("idesc %s is not an immediate in the SASS" % plan["idesc"])

    local = re.findall(r"\b(LDL|STL)\b", sass)
    if local:
        fails.append("%d local-memory accesses" % len(local))

    kinds = sorted(set(n + s for n, s, _ in mmas))
    summary = "%d x %s, %d UTCCP, %d UTMALDG, idesc %s" % (
        len(mmas), "/".join(kinds) or "-", len(copies), len(loads), plan["idesc"])
    return fails, summary


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--jitgemm", default=os.path.join(ROOT, "build", "jitgemm"))
    ap.add_argument("--nvdisasm")
    ap.add_argument("--quick", action="store_true", help="two token counts instead of three")
    ap.add_argument("--keep", help="write each kernel's SASS into this folder")
    args = ap.parse_args()

    nvdisasm = find_nvdisasm(args.nvdisasm)
    if not nvdisasm:
        print("sass-check: skipped: no nvdisasm (scripts/setup.sh installs it into .deps/; "
              "or set JITGEMM_NVDISASM)")
        return SKIP
    if not os.access(args.jitgemm, os.X_OK):
        print("sass-check: skipped: no CLI at %s (build first)" % args.jitgemm)
        return SKIP
    # The checks read native sm_100a/103a/107a cubins; an NVRTC older than 13.4 cannot build
    # the sm_107a block-scaled ones (the library refuses, by design), so there is nothing to read.
    tool = run([args.jitgemm, "--version"])
    m = re.search(r"NVRTC (\d+)\.(\d+)", tool)
    if not m or (int(m.group(1)), int(m.group(2))) < (13, 4):
        print("sass-check: skipped: the CLI's NVRTC is %s; native sm_107a cubins need 13.4 or "
              "later (scripts/setup.sh installs 13.5 into .deps/)" % (m.group(0) if m else "unknown"))
        return SKIP
    lines = run([nvdisasm, "--version"]).strip().splitlines()
    version = next((l for l in lines if "release" in l), lines[-1]).strip()
    print("sass-check: %s; nothing is executed (no Blackwell or Rubin GPU)" % version)

    failed = 0
    checked = 0
    with tempfile.TemporaryDirectory(prefix="jitgemm-sass-") as tmp:
        cache = os.path.join(tmp, "cache")
        for arch in ARCHES:
            for a, b, scales in FORMATS:
                if scales.startswith("ue5m3") and arch != "sm_107a":
                    continue
                for tokens in TOKENS_QUICK if args.quick else TOKENS_FULL:
                    problem = ["--op", "linear", "--n", "4096", "--k", "4096", "--tokens",
                               str(tokens), "--a", a, "--b", b, "--scales", scales,
                               "--arch", arch, "--cache-dir", cache]
                    name = "%s %s x %s %s T=%d" % (arch, a, b, scales, tokens)
                    try:
                        plan = json.loads(run([args.jitgemm, "inspect"] + problem +
                                              ["--plan", "--json"]))
                        entry = json.loads(run([args.jitgemm, "inspect"] + problem +
                                               ["--entry", "--json"]))
                        cubin = os.path.join(cache, "kernels", entry["hash"] + ".cubin")
                        sass = run([nvdisasm, "-c", cubin])
                    except (RuntimeError, KeyError, ValueError) as e:
                        print("FAIL %s: %s" % (name, e))
                        failed += 1
                        continue
                    if args.keep:
                        os.makedirs(args.keep, exist_ok=True)
                        fn = re.sub(r"[^A-Za-z0-9]+", "_", name) + ".sass"
                        with open(os.path.join(args.keep, fn), "w") as f:
                            f.write(sass)
                    fails, summary = check_sass(sass, plan, arch)
                    # A negative control: the same SASS against the plan with the other CTA
                    # group must fail, or the checks have stopped looking at the SASS.
                    flipped = dict(plan, cta_group=3 - plan["cta_group"])
                    if not check_sass(sass, flipped, arch)[0]:
                        fails.append("negative control: a %d-CTA plan also passes" %
                                     flipped["cta_group"])
                    checked += 1
                    if fails:
                        failed += 1
                        print("FAIL %s (%s)" % (name, summary))
                        for f in fails:
                            print("     - " + f)
                    else:
                        print("ok   %s (%s)" % (name, summary))
    print("sass-check: %d kernels, %d failed" % (checked, failed))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
