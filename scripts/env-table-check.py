#!/usr/bin/env python3
"""Check that README.md's environment tables list exactly the JITGEMM_* variables the code reads.

A variable counts as read when the library, the CLI, a test, a benchmark or a script asks the
environment for it: getenv("JITGEMM_X") (or the cache's nonempty_env), a family's launch_opt_in
or a #define naming it, os.environ in Python, $JITGEMM_X in a shell script. The README's rows are
the table lines whose first cell names `JITGEMM_X`. Both directions are checked: a variable read
but not documented, and a row for a variable nothing reads any more.

    scripts/env-table-check.py [--root DIR]

Exit status: 0 the tables match, 1 they do not (each difference is printed).
"""
import argparse
import os
import re
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DIRS = ["include", "api", "jit", "cache", "kernel_src", "tests", "bench", "examples", "scripts", ".ci", "python"]
C_READS = [
    re.compile(r'(?:getenv|nonempty_env)\(\s*"(JITGEMM_\w+)"\s*\)'),
    re.compile(r'launch_opt_in\s*=\s*"(JITGEMM_\w+)"'),
    re.compile(r'#define\s+\w+\s+"(JITGEMM_\w+)"'),
]
PY_READS = [re.compile(r'os\.environ(?:\.get\(\s*|\[\s*)"(JITGEMM_\w+)"')]
SH_READS = [re.compile(r'\$\{?(JITGEMM_\w+)')]


def reads(root):
    found = {}
    for top in DIRS:
        for dirpath, dirnames, filenames in os.walk(os.path.join(root, top)):
            dirnames[:] = [d for d in dirnames if d not in ("corpus", "golden")]
            for name in filenames:
                path = os.path.join(dirpath, name)
                if name.endswith((".c", ".h")):
                    pats = C_READS
                elif name.endswith(".py"):
                    pats = PY_READS
                elif name.endswith(".sh") or (top == ".ci" and "." not in name):
                    pats = SH_READS
                else:
                    continue
                with open(path, encoding="utf-8", errors="replace") as f:
                    text = f.read()
                for pat in pats:
                    for m in pat.finditer(text):
                        found.setdefault(m.group(1), os.path.relpath(path, root))
    return found


def documented(root):
    rows = set()
    with open(os.path.join(root, "README.md"), encoding="utf-8") as f:
        for line in f:
            if line.startswith("| `JITGEMM_"):
                first = line.split("|")[1]
                rows.update(re.findall(r"`(JITGEMM_\w+)`", first))
    return rows


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--root", default=ROOT)
    args = ap.parse_args()
    read = reads(args.root)
    rows = documented(args.root)
    bad = 0
    for var in sorted(set(read) - rows):
        print(f"env-table-check: {var} is read ({read[var]}) but README.md has no row for it")
        bad += 1
    for var in sorted(rows - set(read)):
        print(f"env-table-check: README.md documents {var}, which nothing reads")
        bad += 1
    if bad:
        return 1
    print(f"env-table-check: README.md lists the {len(rows)} JITGEMM_* variables the code reads")
    return 0


if __name__ == "__main__":
    sys.exit(main())
