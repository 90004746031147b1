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

run scripts/setup.sh
run build/jitgemm prewarm examples/shapes.json --arch sm_107a
run build/jitgemm inspect --op linear --n 5120 --k 5120 --tokens 1024 --arch sm_107a --entry
if command -v nvidia-smi >/dev/null 2>&1 && nvidia-smi -L >/dev/null 2>&1; then
    run build/jitgemm run --op linear --n 5120 --k 5120 --tokens 1024
else
    printf '\nNo GPU here: skipping "build/jitgemm run" (it executes a kernel and needs one).\n'
fi

cat <<'EOT'

Which kernels have run on a GPU: only the FP8 row-scaled ones for sm_90a (H100/H200), checked
on an H200 against an FP64 reference. The sm_107a kernels prewarmed above, like every
Blackwell and Rubin (sm_100a, sm_103a, sm_107a) kernel, have never run on hardware. They are
generated and compiled; the block-scaled ones are also checked statically and run on a host
functional model of the GPU against the FP64 reference (docs/blackwell-rubin.md).

What to try next:
  build/jitgemm inspect --op linear --n 5120 --k 5120 --tokens 1024 --arch sm_90a --plan
      the cost model's candidates and why one won (add --json for all of it)
  build/jitgemm inspect --op linear --n 5120 --k 5120 --tokens 1024 --arch sm_107a --source
      the generated CUDA source (--ptx, --sass, --cubin --out DIR for later stages)
  build/jitgemm prewarm examples/shapes.json --check --target sm_107a
      is every kernel of the list in the cache? (compiles nothing; exit 1 if not)
  build/jitgemm cache stats
      what the cache holds, per arch and toolchain
  pip install ./python
      the Python binding: jitgemm.gemm on PyTorch tensors (docs/python.md)
EOT
