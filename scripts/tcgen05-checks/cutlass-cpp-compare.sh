#!/usr/bin/env bash
# Cross-check jitgemm's tcgen05 (sm_100a) descriptor encoders against NVIDIA's CUTLASS C++ headers,
# on the host, without a GPU: cutlass_cpp/compare_desc.cpp (beside this script) includes cute's
# descriptor builders, MMA atom traits and scale-factor TMEM fragments next to
# kernel_src/tcgen05/desc.h, links the project's static library and prints one row per
# compared field. It also checks the
# descriptors of real plans (`jitgemm inspect --plan --json`) against CUTLASS's.
#
# The headers come from PyPI `nvidia-cutlass` (pinned below, a 6.4 MB wheel; only its
# include/ tree is kept), unpacked on first use into .deps/cutlass-cpp (or $JITGEMM_CUTLASS_CPP_DIR).
# cute needs libcu++ (`cuda/std/...`) from a CUDA toolkit: $CUDA_HOME, else /usr/local/cuda.
# Not part of ctest or CI (it downloads the wheel). Findings: docs/blackwell-rubin.md,
# "Cross-check against the CUTLASS C++ headers".
#
#   scripts/tcgen05-checks/cutlass-cpp-compare.sh [--build DIR] [--all]
#
# --build DIR  the configured and built tree (default build/); needs jitgemm and libjitgemm.a
# --all        print every row (default: differences, not-compared rows and a summary per area)
# Exit status: 0 every compared field matched; 1 a field differed (or the negative control
# failed to differ); 2 usage or build error; 77 the headers, a CUDA toolkit or the build are
# missing and cannot be set up.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
PIN=4.2.0.0
BUILD="$ROOT/build"
ALL=0
while [ $# -gt 0 ]; do
    case "$1" in
    --build) BUILD=$(cd "$2" && pwd); shift 2 ;;
    --all) ALL=1; shift ;;
    -h | --help) awk 'NR > 1 && !/^#/ { exit } NR > 1 { sub(/^# ?/, ""); print }' "$0"; exit 0 ;;
    *) echo "cutlass-cpp-compare: unknown argument '$1' (see --help)" >&2; exit 2 ;;
    esac
done

skip() { echo "cutlass-cpp-compare: $*" >&2; exit 77; }

# ---- headers -------------------------------------------------------------------------------
DIR=${JITGEMM_CUTLASS_CPP_DIR:-$ROOT/.deps/cutlass-cpp}
if [ ! -f "$DIR/include/cute/arch/mma_sm100_desc.hpp" ]; then
    command -v python3 >/dev/null || skip "python3 is needed to fetch nvidia-cutlass"
    tmp=$(mktemp -d)
    trap 'rm -rf "$tmp"' EXIT
    echo "cutlass-cpp-compare: fetching nvidia-cutlass==$PIN into $DIR" >&2
    python3 -m pip download --quiet --no-deps --only-binary :all: -d "$tmp" \
        "nvidia-cutlass==$PIN" >&2 || skip "pip could not download nvidia-cutlass==$PIN"
    whl=$(find "$tmp" -maxdepth 1 -name 'nvidia_cutlass-*.whl' | head -1)
    [ -n "$whl" ] || skip "no nvidia-cutlass wheel in the download"
    python3 - "$whl" "$tmp/x" <<'EOF' || skip "could not unpack $whl"
import sys, zipfile
z = zipfile.ZipFile(sys.argv[1])
names = [n for n in z.namelist() if n.startswith("cutlass_library/source/include/")]
if not names:
    sys.exit("the wheel has no cutlass_library/source/include/")
z.extractall(sys.argv[2], names)
EOF
    mkdir -p "$DIR"
    rm -rf "$DIR/include"
    mv "$tmp/x/cutlass_library/source/include" "$DIR/include"
    echo "$PIN" >"$DIR/VERSION"
fi
INC="$DIR/include"

# ---- CUDA's libcu++ (cute includes cuda/std/...) ----------------------------------------------
CUDA=${CUDA_HOME:-/usr/local/cuda}
CCCL=""
for d in "$CUDA/include/cccl" "$CUDA/include" "$CUDA"/targets/*/include/cccl; do
    if [ -f "$d/cuda/std/utility" ]; then CCCL=$d; break; fi
done
[ -n "$CCCL" ] || skip "no CUDA toolkit with cuda/std headers under $CUDA (set CUDA_HOME)"

# ---- build -----------------------------------------------------------------------------------
CLI="$BUILD/jitgemm"
LIB="$BUILD/libjitgemm.a"
if [ ! -x "$CLI" ] || [ ! -f "$LIB" ]; then
    skip "build the project first ($CLI or $LIB missing)"
fi
command -v g++ >/dev/null || skip "g++ not found"
OUT="$BUILD/cutlass-cpp"
mkdir -p "$OUT"
BIN="$OUT/compare_desc"
SRC="$ROOT/scripts/tcgen05-checks/cutlass_cpp/compare_desc.cpp"
if [ ! -x "$BIN" ] || [ "$SRC" -nt "$BIN" ] || [ "$LIB" -nt "$BIN" ]; then
    echo "cutlass-cpp-compare: compiling $SRC" >&2
    g++ -std=c++17 -O1 -Wall -Wextra -isystem "$INC" -isystem "$CCCL" -isystem "$CUDA/include" \
        -I "$ROOT/kernel_src" -I "$ROOT/jit" -I "$ROOT/include" -I "$ROOT/cache" \
        "$SRC" "$LIB" -ljansson -ldl -lpthread -lm -o "$BIN" ||
        { echo "cutlass-cpp-compare: compiling $SRC failed" >&2; exit 2; }
fi

# ---- real plans ------------------------------------------------------------------------------
# name, a, b, scales, tokens (16: a 1-CTA plan, 600: a 2-CTA plan), all at N = K = 4096.
PLANS=(
    "nvfp4-1cta e2m1 e2m1 ue4m3/16 16"
    "nvfp4-2cta e2m1 e2m1 ue4m3/16 600"
    "mxfp4-1cta e2m1 e2m1 ue8m0/32 16"
    "mxfp8-1cta e4m3 e4m3 ue8m0/32 16"
    "mxfp8-2cta e4m3 e4m3 ue8m0/32 600"
    "fp8xfp4-1cta e4m3 e2m1 ue8m0/32 16"
    "fp8xfp4-2cta e4m3 e2m1 ue8m0/32 600"
)
ARGS=()
for p in "${PLANS[@]}"; do
    read -r name a b sc tok <<<"$p"
    json=$("$CLI" inspect --op linear --n 4096 --k 4096 --tokens "$tok" --arch sm_100a \
        --a "$a" --b "$b" --scales "$sc" --plan --json) ||
        { echo "cutlass-cpp-compare: jitgemm inspect failed for $name" >&2; exit 2; }
    # shellcheck disable=SC2207
    ARGS+=(plan "$name" $(python3 -c '
import json, sys
d = json.loads(sys.stdin.read())
a, b = d["spec"]["a"], d["spec"]["b"]
dt = a if (a == b and d["kind"] != "mxf8f6f4") else a + "x" + b
label = "%s_%s_%s" % (d["kind"], dt, d["spec"]["scales"])
ops = d["operands"]
print(label, d["cta_group"], d["instr"]["m"], d["instr"]["n"], d["idesc"],
      ops["a"]["desc_stage0"], ops["b"]["desc_stage0"], ops["sf"]["utccp_desc_sfa_stage0"])
' <<<"$json"))
done
# Labels travel with '_' for ' ' (one argument each); the program's labels use spaces.
for i in "${!ARGS[@]}"; do
    if [ "${ARGS[$i]}" = plan ]; then ARGS[i + 2]=${ARGS[i + 2]//_/ }; fi
done

# ---- negative control: every compared field must differ when our side is perturbed ----------
ctl=$("$BIN" --control "${ARGS[@]}" | tail -1 || true)
case "$ctl" in
*" 0 matched,"*) ;;
*) echo "cutlass-cpp-compare: negative control did not differ everywhere: $ctl" >&2; exit 1 ;;
esac

# ---- the comparison --------------------------------------------------------------------------
set +e
"$BIN" "${ARGS[@]}" >"$OUT/table.txt"
rc=$?
set -e
if [ "$ALL" = 1 ]; then
    cat "$OUT/table.txt"
else
    head -2 "$OUT/table.txt"
    grep -v -E '\| match( \(.*\))?$' "$OUT/table.txt" | sed -n '3,$p' | grep -v '^$' |
        grep -v -E '^[0-9]+ rows:' || true
    echo
    printf "%-7s %6s %8s %8s %12s\n" area rows matched differed "not compared"
    awk -F'|' 'NR > 2 && NF >= 6 { a = $1; gsub(/ /, "", a); v = $6;
                 if (v ~ /^ match/) m[a]++; else if (v ~ /DIFFER/) x[a]++; else n[a]++; t[a]++ }
               END { for (a in t) printf "%-7s %6d %8d %8d %12d\n", a, t[a], m[a], x[a], n[a] }' \
        "$OUT/table.txt" | sort
    echo
    tail -1 "$OUT/table.txt"
    echo "(full table: $OUT/table.txt; control: $ctl)"
fi
exit $rc
