#!/usr/bin/env bash
# The README's first command: set the machine up (scripts/setup.sh), then do the main job of a
# build host: prewarm the kernels of a deployment's shape list (examples/shapes.json, Rubin
# sm_107a) into the default cache and show one of the entries it wrote. On a machine with a
# GPU it also runs one GEMM checked against the host reference. Each command is printed before
# it runs, so the output reads as a transcript to copy from.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"

run() {
    printf '\n$ %s\n' "$*"
    "$@"
}

scripts/setup.sh
run build/jitgemm prewarm examples/shapes.json --arch sm_107a
run build/jitgemm inspect --op linear --n 5120 --k 5120 --tokens 1024 --arch sm_107a --entry
if command -v nvidia-smi >/dev/null 2>&1 && nvidia-smi -L >/dev/null 2>&1; then
    run build/jitgemm run --op linear --n 5120 --k 5120 --tokens 1024
else
    printf '\nNo GPU here: skipping "build/jitgemm run" (it executes a kernel and needs one).\n'
fi
