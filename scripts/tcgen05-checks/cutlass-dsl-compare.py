#!/usr/bin/env python3
"""Compare jitgemm's tcgen05 kernels with what NVIDIA's CUTLASS DSL generates for the same kinds.

No GPU is needed or used. For each case below the script
  1. plans and compiles jitgemm's kernel through the CLI (`jitgemm inspect --plan --json`,
     `--ptx`, and `--entry --json --cache-dir`, which leaves the cubin in a scratch cache);
  2. compiles a small block-scaled GEMM mainloop of our own written with the CUTLASS DSL
     (cutlass_dsl_kernels/bs_gemm.py beside this script) with the same kind, CTA group, tile N
     and MMAs per K tile, with CUTE_DSL_ARCH/CUTE_DSL_KEEP/CUTE_DSL_DUMP_DIR so that it writes
     PTX and cubin;
  3. disassembles both cubins with nvdisasm and prints, per case, a table of the facts that can
     be read from both sides: tcgen05.mma spelling, instruction descriptor, shared-memory and
     scale-copy descriptor constants, descriptor start-address masks, TMEM alloc/dealloc,
     tcgen05.cp shape and copies per MMA, TMA forms, the SASS MMA/UTCCP/UTMALDG opcodes.
The findings are written up in docs/blackwell-rubin.md, "Cross-check against the CUTLASS DSL".

The DSL lives in its own virtual environment, by default .deps/cutlass-dsl-venv (ignored by
git; about 550 MB: nvidia-cutlass-dsl[cu13]==4.8.1 brings its own NVVM and ptxas 13.4). It is
created on first use; --venv or $JITGEMM_DSL_VENV choose another. Not part of ctest or CI: too
heavy. Exit status: 0 done (differences are reported, not failures), 1 an error, 77 the
environment could not be set up (venv, nvdisasm or the CLI missing).

    scripts/tcgen05-checks/cutlass-dsl-compare.py [--venv DIR] [--jitgemm build/jitgemm]
                                                  [--nvdisasm PATH] [--keep DIR] [--case NAME ...]
"""
import argparse
import glob
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))  # two levels up from scripts/tcgen05-checks

from nvdisasm_path import find_nvdisasm  # noqa: E402 (a sibling module)
SKIP = 77
DSL_PIN = "nvidia-cutlass-dsl[cu13]==4.8.1"

# name, jitgemm arch, a, b, scales, tokens. Tokens 16 gives a 1-CTA plan, 600 a 2-CTA one
# without B-reuse, 4096 on sm_107a a 2-CTA B-reuse plan (two M halves of A per B tile).
CASES = [
    ("nvfp4-1cta-sm107a", "sm_107a", "e2m1", "e2m1", "ue4m3/16", 16),
    ("mxfp8-1cta-sm107a", "sm_107a", "e4m3", "e4m3", "ue8m0/32", 16),
    ("nvfp4-2cta-sm107a", "sm_107a", "e2m1", "e2m1", "ue4m3/16", 600),
    ("ue5m3-1cta-sm107a", "sm_107a", "e2m1", "e2m1", "ue5m3/16", 16),
    ("nvfp4-1cta-sm100a", "sm_100a", "e2m1", "e2m1", "ue4m3/16", 16),
    ("mxfp4-1cta-sm107a", "sm_107a", "e2m1", "e2m1", "ue8m0/32", 16),
    ("ue5m3-32-1cta-sm107a", "sm_107a", "e2m1", "e2m1", "ue5m3/32", 16),
    ("fp8xfp4-1cta-sm107a", "sm_107a", "e4m3", "e2m1", "ue8m0/32", 16),
    ("nvfp4-1cta-sm103a", "sm_103a", "e2m1", "e2m1", "ue4m3/16", 16),
    ("mxfp8-2cta-sm100a", "sm_100a", "e4m3", "e4m3", "ue8m0/32", 600),
    ("nvfp4-breuse-sm107a", "sm_107a", "e2m1", "e2m1", "ue4m3/16", 4096),  # B-reuse, 2-CTA
]


def die(msg, code=1):
    print("cutlass-dsl-compare: " + msg, file=sys.stderr)
    sys.exit(code)


def run(cmd, env=None):
    r = subprocess.run(cmd, capture_output=True, text=True, env=env)
    if r.returncode != 0:
        raise RuntimeError("%s: exit %d\n%s%s" % (" ".join(cmd[:4]), r.returncode,
                                                  r.stdout[-3000:], r.stderr[-3000:]))
    return r.stdout


def ensure_venv(venv):
    py = os.path.join(venv, "bin", "python")
    probe = [py, "-c", "import cutlass, cutlass.cute"]
    if os.path.exists(py) and subprocess.run(probe, capture_output=True).returncode == 0:
        return py
    print("creating %s and installing %s (about 550 MB; needs PyPI)..." % (venv, DSL_PIN),
          file=sys.stderr)
    try:
        run([sys.executable, "-m", "venv", venv])
        run([os.path.join(venv, "bin", "pip"), "install", "-q", DSL_PIN])
    except (RuntimeError, OSError) as e:
        die("could not install %s into %s: %s\nInstall it by hand (python3 -m venv DIR && "
            "DIR/bin/pip install '%s') and pass --venv DIR." % (DSL_PIN, venv, str(e)[-600:],
                                                               DSL_PIN), SKIP)
    if subprocess.run(probe, capture_output=True).returncode != 0:
        die("%s was installed into %s but `import cutlass.cute` fails" % (DSL_PIN, venv), SKIP)
    return py


# ---- our side ---------------------------------------------------------------------------

def ours(cli, case, work):
    _, arch, a, b, scales, tokens = case
    base = [cli, "inspect", "--op", "linear", "--n", "4096", "--k", "4096", "--tokens",
            str(tokens), "--a", a, "--b", b, "--scales", scales, "--arch", arch]
    plan = json.loads(run(base + ["--plan", "--json"]))
    ptx = run(base + ["--ptx"])
    cache = os.path.join(work, "cache")
    run(base + ["--entry", "--json", "--cache-dir", cache])
    cubins = glob.glob(os.path.join(cache, "kernels", "*.cubin"))
    if len(cubins) != 1:
        raise RuntimeError("expected one cubin in the scratch cache, found %d" % len(cubins))
    return plan, ptx, cubins[0]


# ---- DSL side ---------------------------------------------------------------------------

DRIVER = r"""
import sys
sys.path.insert(0, sys.argv[1])
import bs_gemm
arch, a, b, sf, vec, n, cta2, kb, cols, halves = sys.argv[2:12]
bs_gemm.K_BLOCKS_PER_TILE = int(kb)
bs_gemm.compile_kernel(arch, a, b, sf, int(vec), int(n), cta2 == "1", tmem_cols=int(cols),
                       halves=int(halves))
"""


def dsl(py, plan, case, work):
    _, arch, a, b, scales, _ = case
    sf, vec = scales.split("/")
    out = os.path.join(work, "dsl")
    os.makedirs(out, exist_ok=True)
    env = dict(os.environ, CUTE_DSL_ARCH=arch, CUTE_DSL_KEEP="ptx,cubin", CUTE_DSL_DUMP_DIR=out,
               PYTHONDONTWRITEBYTECODE="1")
    dsl_arch = arch[:6]  # sm_100, sm_103, sm_107: the DSL's resource-map keys
    # Allocate what our plan allocates, so that the alloc spelling is compared like for like.
    cols = plan.get("tmem", {}).get("allocated_columns") or 0
    run([py, "-c", DRIVER, os.path.join(HERE, "cutlass_dsl_kernels"), dsl_arch, a,
         b, sf, vec, str(plan["tile"]["n"]), "1" if plan["cta_group"] == 2 else "0",
         str(plan["instrs_per_tile_k"]), str(cols), "2" if plan["breuse"] else "1"], env=env)
    ptx = glob.glob(os.path.join(out, "*.ptx"))
    cubin = glob.glob(os.path.join(out, "*.cubin"))
    if len(ptx) != 1 or len(cubin) != 1:
        raise RuntimeError("DSL dump: expected one .ptx and one .cubin in %s" % out)
    return open(ptx[0]).read(), cubin[0]


# ---- facts read from PTX and SASS (the same readers for both sides) ----------------------

def strip_ops(line):
    return line.strip().split()[0] if line.strip() else ""


def ptx_facts(ptx):
    f = {}
    lines = ptx.splitlines()
    f["ptx_target"] = next((l.split()[1] for l in lines if l.startswith(".target")), "?")
    f["mma"] = sorted({strip_ops(l) for l in lines if "tcgen05.mma" in l})
    f["cp"] = sorted({strip_ops(l) for l in lines if "tcgen05.cp" in l})
    n_mma = sum(1 for l in lines if "tcgen05.mma" in l)
    n_cp = sum(1 for l in lines if "tcgen05.cp" in l)
    f["cp_per_mma"] = "%d/%d = %.2f" % (n_cp, n_mma, n_cp / n_mma) if n_mma else "-"
    # register -> last mov'd immediate, to read alloc/dealloc column counts passed in registers
    movs = {}
    alloc, dealloc = set(), set()
    for l in lines:
        m = re.match(r"\s*mov\.b32\s+(%r\d+),\s*(\d+);", l)
        if m:
            movs[m.group(1)] = m.group(2)
        for key, dst in (("tcgen05.alloc", alloc), ("tcgen05.dealloc", dealloc)):
            if key in l:
                arg = l.strip().rstrip(";").split(",")[-1].strip()
                dst.add("%s %s" % (strip_ops(l), movs.get(arg, arg)))
    f["alloc"] = sorted(alloc)
    tx = set()
    for l in lines:
        if "mbarrier.arrive.expect_tx" in l:
            arg = l.strip().rstrip(";").split(",")[-1].strip()
            tx.add(int(movs.get(arg, arg)) if movs.get(arg, arg).isdigit() else arg)
    f["expect_tx"] = sorted(tx, key=str)
    f["dealloc"] = sorted(dealloc)
    # 64-bit descriptor constants ORed into an address: version bit 46 set, address bits clear.
    consts = set()
    for m in re.finditer(r"(?:or|mov)\.b64\s+%rd\d+,\s*(?:%rd\d+,\s*)?(-?\d+);", ptx):
        v = int(m.group(1)) & 0xFFFFFFFFFFFFFFFF
        if v >> 46 & 1 and v & 0x3FFF == 0:
            consts.add(v)
    f["desc_ab"] = sorted("0x%016X" % v for v in consts if v >> 61)
    f["desc_cp"] = sorted("0x%016X" % v for v in consts if not v >> 61)
    masks = set()
    for i, l in enumerate(lines):
        m = re.match(r"\s*shr\.u32\s+(%r\d+),\s*%r\d+,\s*4;", l)
        if m:
            for n in lines[i + 1:i + 3]:
                mm = re.match(r"\s*and\.b32\s+%r\d+,\s*" + re.escape(m.group(1)) + r",\s*(\d+);", n)
                if mm:
                    masks.add("0x%X" % int(mm.group(1)))
    f["addr_masks"] = sorted(masks)
    f["tma"] = sorted({re.sub(r"\.L2::cache_hint", "", strip_ops(l))
                       for l in lines if "cp.async.bulk.tensor" in l})
    return f


def sass_facts(nvdisasm, cubin):
    sass = run([nvdisasm, "-c", cubin])
    ops = re.findall(r"/\*[0-9a-f]{4,}\*/\s+(?:@!?U?P\w+\s+)?([A-Z][A-Z0-9_.]+)", sass)
    f = {}
    f["sass_mma"] = sorted({o for o in ops if re.match(r"UTC\w*MMA", o)})
    f["sass_cp"] = sorted({o for o in ops if o.startswith("UTCCP")})
    f["sass_tma"] = sorted({o for o in ops if o.startswith("UTMALDG")})
    n_mma = sum(1 for o in ops if re.match(r"UTC\w*MMA", o))
    n_cp = sum(1 for o in ops if o.startswith("UTCCP"))
    hints = re.findall(r"UTC\w*MMA[^\n]*?(\.B_[A-Z]+)", sass)
    f["sass_b_hints"] = ["%s x%d" % (h, hints.count(h)) for h in sorted(set(hints))] or ["none"]
    f["sass_cp_per_mma"] = "%d/%d = %.2f" % (n_cp, n_mma, n_cp / n_mma) if n_mma else "-"
    return f


def dsl_idesc(dsl_ptx):
    """The DSL builds the idesc at run time from a constant and the runtime fields (negate A/B
    from the kernel parameters, SF IDs from the scale TMEM addresses): report the constant with
    the runtime fields clear, read from the `selp` that picks negate A (bit 13) or not."""
    cands = set()
    for m in re.finditer(r"selp\.b32\s+%r\d+,\s*(-?\d+),\s*(-?\d+),\s*%p\d+;", dsl_ptx):
        hi, lo = int(m.group(1)) & 0xFFFFFFFF, int(m.group(2)) & 0xFFFFFFFF
        if hi - lo == 0x2000:  # negate-A variant of the same descriptor
            cands.add(lo)
    return sorted("0x%08X" % v for v in cands)


def quals(spellings):
    """The qualifiers of each spelling as a set: ptxas accepts them in either order."""
    return sorted(" ".join(sorted(x.split(" ")[0].split(".")) + x.split(" ")[1:])
                  for x in spellings)


def addr_bits(masks):
    """Width of the start-address field the masks keep: the compiler folds the 1024- or
    512-byte alignment of each address into the mask, so the top bit is what matters."""
    return max(int(m, 16) for m in masks).bit_length() if masks else 0


def compare(case, plan, o, d):
    rows = []

    def row(name, a, b, same=None, note=""):
        if same is None:
            same = a == b
        rows.append((name, a, b, "same" if same else "DIFFERS", note))

    ours_idesc = int(plan["idesc"], 16)
    def no_default(v):
        v = [x.replace(".collector::a::discard", "") for x in v]
        return [x.replace(".block32", "") if "mxf8f6f4" in x else x for x in v]
    row("tcgen05.mma", o["mma"], d["mma"], no_default(o["mma"]) == no_default(d["mma"]),
        "compared without the defaults .collector::a::discard and mxf8f6f4's .block32")
    row("idesc (runtime fields 0)", ["0x%08X" % ours_idesc], dsl_idesc(d["ptx_text"]))
    row("A/B smem desc constant", o["desc_ab"], d["desc_ab"])
    row("tcgen05.cp desc constant", o["desc_cp"], d["desc_cp"])
    row("start-address field bits", "%d (%s)" % (addr_bits(o["addr_masks"]), " ".join(o["addr_masks"])),
        "%d (%s)" % (addr_bits(d["addr_masks"]), " ".join(d["addr_masks"])),
        addr_bits(o["addr_masks"]) == addr_bits(d["addr_masks"]),
        "masks of (addr >> 4) as the compiler folded them")
    row("tcgen05.alloc", o["alloc"], d["alloc"], quals(o["alloc"]) == quals(d["alloc"]),
        "qualifier order differs only")
    row("tcgen05.dealloc", o["dealloc"], d["dealloc"], quals(o["dealloc"]) == quals(d["dealloc"]),
        "qualifier order differs only")
    row("tcgen05.cp", o["cp"], d["cp"])
    tx = plan["expect_tx_bytes"] * plan["cta_group"]  # the leader expects both CTAs' bytes
    row("TMA bytes per K tile (expect_tx)", [tx], d["expect_tx"],
        note="ours: the plan's expect_tx_bytes x CTA group, as the kernel arms it")
    row("tcgen05.cp per MMA (PTX)", o["cp_per_mma"], d["cp_per_mma"],
        o["cp_per_mma"].split(" = ")[-1] == d["cp_per_mma"].split(" = ")[-1])
    loads = lambda v: [x for x in v if ".global.shared::" not in x]  # drop our epilogue's stores
    row("TMA loads (PTX)", loads(o["tma"]), loads(d["tma"]))
    row("SASS MMA", o["sass_mma"], d["sass_mma"])
    row("SASS MMA B collector hints", o["sass_b_hints"], d["sass_b_hints"],
        [h.split()[0] for h in o["sass_b_hints"]] == [h.split()[0] for h in d["sass_b_hints"]],
        "compared by hint; the counts follow unrolling")
    row("SASS UTCCP", o["sass_cp"], d["sass_cp"])
    row("SASS UTCCP per MMA", o["sass_cp_per_mma"], d["sass_cp_per_mma"],
        o["sass_cp_per_mma"].split(" = ")[-1] == d["sass_cp_per_mma"].split(" = ")[-1])
    row("SASS TMA loads", o["sass_tma"], d["sass_tma"])
    return rows


def fmt(v):
    return " ".join(map(str, v)) if isinstance(v, list) else str(v)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--venv", default=os.environ.get("JITGEMM_DSL_VENV",
                                                     os.path.join(ROOT, ".deps", "cutlass-dsl-venv")))
    ap.add_argument("--jitgemm", default=os.path.join(ROOT, "build", "jitgemm"))
    ap.add_argument("--nvdisasm")
    ap.add_argument("--keep", help="keep both sides' PTX, cubin and SASS under this folder")
    ap.add_argument("--case", action="append", help="run only these cases (names below)")
    args = ap.parse_args()

    if not os.access(args.jitgemm, os.X_OK):
        die("the CLI %s is missing (cmake --build build --target jitgemm_cli)" % args.jitgemm, SKIP)
    nvdisasm = find_nvdisasm(args.nvdisasm)
    if not nvdisasm:
        die("nvdisasm not found (scripts/setup.sh installs it under .deps/)", SKIP)
    py = ensure_venv(args.venv)
    dsl_ver = run([py, "-c", "import importlib.metadata as m; print(m.version('nvidia-cutlass-dsl'))"]).strip()
    nvd_ver = run([nvdisasm, "--version"]).strip().splitlines()[-2]
    print("CUTLASS DSL %s; nvdisasm: %s" % (dsl_ver, nvd_ver))

    cases = [c for c in CASES if not args.case or c[0] in args.case]
    if not cases:
        die("no such case; cases: " + ", ".join(c[0] for c in CASES))
    work_root = args.keep or tempfile.mkdtemp(prefix="jitgemm-dsl-")
    n_diff = n_fail = 0
    for case in cases:
        work = os.path.join(work_root, case[0])
        os.makedirs(work, exist_ok=True)
        try:
            plan, optx, ocubin = ours(args.jitgemm, case, work)
            dptx, dcubin = dsl(py, plan, case, work)
        except RuntimeError as e:
            print("\n## %s: could not compile: %s" % (case[0], e))
            n_fail += 1
            continue
        o = ptx_facts(optx)
        o.update(sass_facts(nvdisasm, ocubin))
        d = ptx_facts(dptx)
        d.update(sass_facts(nvdisasm, dcubin))
        d["ptx_text"] = dptx
        if args.keep:
            open(os.path.join(work, "ours.ptx"), "w").write(optx)
            shutil.copy(ocubin, os.path.join(work, "ours.cubin"))
        print("\n## %s: %s %s x %s, %s, %d-CTA, tile %dx%d, %d MMAs of K %d per K tile "
              "(ours: %s; DSL PTX by %s)" % (
                  case[0], case[1], case[2], case[3], case[4], plan["cta_group"],
                  plan["tile"]["m"], plan["tile"]["n"], plan["instrs_per_tile_k"],
                  plan["instr"]["k"], o["ptx_target"],
                  re.search(r"release ([\d.]+)", dptx).group(1) if "release" in dptx else "?"))
        print("| property | ours | CUTLASS DSL | |")
        print("|---|---|---|---|")
        for name, a, b, same, note in compare(case, plan, o, d):
            if same != "same":
                n_diff += 1
            print("| %s | %s | %s | %s%s |" % (name, fmt(a), fmt(b), same,
                                              ("; " + note) if note else ""))
    if not args.keep:
        shutil.rmtree(work_root, ignore_errors=True)
    print("\n%d differing rows (see docs/blackwell-rubin.md for which are expected)" % n_diff)
    if n_fail:
        print("%d case(s) did not compile" % n_fail)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
