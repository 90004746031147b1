#!/usr/bin/env bash
# Build the libFuzzer harnesses (tests/fuzz, clang) into build-fuzz/ and run each in turn for
# SECONDS (default 300), starting from its checked-in seed corpus. What a run learns is kept in
# build-fuzz/tests/fuzz/corpus/<name>/ and used by the next run; the checked-in corpus is only
# read. A crash or sanitizer report stops the script with the failing input saved as
# build-fuzz/tests/fuzz/fuzz_<name>-crash-*; add it to tests/fuzz/corpus/<name>/ with the fix.
#
#   scripts/fuzz.sh [SECONDS] [NAME...]      NAME: shapes manifest index_read sidecar toolchains cubin archive
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
BUILD="$ROOT/build-fuzz"
seconds="${1:-300}"
shift || true
names=("$@")
[ "${#names[@]}" -gt 0 ] || names=(shapes manifest index_read sidecar toolchains cubin archive)
case "$seconds" in
'' | *[!0-9]*) echo "fuzz: SECONDS must be a whole number, not '$seconds'" >&2 && exit 2 ;;
esac

CC=clang cmake -S "$ROOT" -B "$BUILD" -DJITGEMM_FUZZ=ON -DJITGEMM_WERROR=ON -DJITGEMM_TESTS=OFF \
    -DJITGEMM_BENCH=OFF >/dev/null
targets=()
for n in "${names[@]}"; do targets+=("fuzz_$n"); done
cmake --build "$BUILD" -j"$(nproc 2>/dev/null || echo 2)" --target "${targets[@]}"

# The manifest and toolchain harnesses write their input to a file per run; memory-backed
# storage keeps that from dominating (TMPDIR wins when set).
if [ -z "${TMPDIR:-}" ] && [ -d /dev/shm ] && [ -w /dev/shm ]; then
    export TMPDIR=/dev/shm
fi
export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1"
export LSAN_OPTIONS="suppressions=$ROOT/tests/sanitizers/lsan.supp:print_suppressions=0"

dir="$BUILD/tests/fuzz"
for n in "${names[@]}"; do
    mkdir -p "$dir/corpus/$n"
    echo "fuzz: $n for ${seconds} s"
    status=0
    "$dir/fuzz_$n" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 -print_final_stats=1 \
        -artifact_prefix="$dir/fuzz_$n-" "$dir/corpus/$n" "$ROOT/tests/fuzz/corpus/$n" \
        >"$dir/fuzz_$n.log" 2>&1 || status=$?
    grep -E '^stat::number_of_executed_units|ERROR|runtime error|SUMMARY' "$dir/fuzz_$n.log" || true
    if [ "$status" -ne 0 ]; then
        echo "fuzz: $n failed (exit $status); log $dir/fuzz_$n.log, input $dir/fuzz_$n-*" >&2
        exit 1
    fi
done
echo "fuzz: no crash and no sanitizer report"
