#!/usr/bin/env bash
# Compile the whole tcgen05 variant matrix (formats x arch x cta_group x tile N x B-reuse, plus
# the sm_107a fallback builds) and print it as a Markdown table: stages, SMEM, TMEM, registers,
# spills and compile time per variant, with the toolchain versions and the date. Nothing is
# executed: no Blackwell or Rubin GPU was available. Exit status 1 on any ptxas error or spill.
#
#   scripts/tcgen05-checks/compile-matrix.sh [OUTPUT.md]
#       [-- compile_matrix options: --jobs J --arch A ...]
#
# Uses build/ (or $BUILD_DIR), configuring and building the compile_matrix target if needed.
# NVRTC 13.4+ for the native sm_107a rows comes from the project-local folder scripts/setup.sh
# fills; without it those rows say "skipped".
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
BUILD_DIR="${BUILD_DIR:-$ROOT/build}"
OUT=""
if [ $# -gt 0 ] && [ "$1" != "--" ]; then
    OUT="$1"
    shift
fi
[ "${1:-}" = "--" ] && shift

if [ ! -f "$BUILD_DIR/CMakeCache.txt" ]; then
    cmake -S "$ROOT" -B "$BUILD_DIR" -DJITGEMM_WERROR=ON >/dev/null
fi
cmake --build "$BUILD_DIR" --target compile_matrix -j"$(nproc)" >/dev/null

if [ -n "$OUT" ]; then
    "$BUILD_DIR/compile_matrix" "$@" >"$OUT"
    tail -n 1 "$OUT"
else
    "$BUILD_DIR/compile_matrix" "$@"
fi
