#!/usr/bin/env bash
# shellcheck disable=SC2317 # the step functions run through `step`, out of its sight
# The one script run on the H200 machine (sm_90a, CUDA 13.0 driver and toolkit, CMake, PyTorch;
# no network, no jansson/xxhash/Criterion headers). Run from the repository root after
# scripts/fetch-gpu-debs.sh has filled .gpu/debs here and .gpu has travelled with the tree:
#
#   scripts/gpu-check.sh            # everything, about 5-8 minutes
#
# Steps: unpack the packages into a private root (.gpu/root, `dpkg -x`, nothing installed
# system-wide), build into build-gpu with warnings as errors, run the whole test suite (the GPU
# tests run here instead of skipping), the Python binding's GPU tests, a checked `jitgemm run`
# per shape, the benchmarks, and the PyTorch anchor. Everything is logged with tee under $OUT
# (else ./gpu-out): gpu-check.log (all output), ctest.log, python.log, run.log, bench.jsonl,
# torch_anchor.json and summary.txt. A failing step is recorded and the next one still runs;
# the exit status is non-zero if any failed.
#
# Environment: GPU_CHECK_BUDGET_S (default 480) bounds the whole run, each step's timeout is cut
# to what is left (GPU_CHECK_PYTHON_S, default 300, caps the Python step alone;
# GPU_CHECK_SKIP_PYTHON, GPU_CHECK_SKIP_RUN and GPU_CHECK_SKIP_BENCH leave those steps out);
# GPU_CHECK_SHAPES overrides the shape list ("op:n:k:tokens" words);
# GPU_CHECK_BLOCKSCALED the block-scaled anchor's (empty: skipped; GPU_CHECK_BLOCKSCALED_S its
# timeout, default 300);
# JITGEMM_COMMIT names the commit (else .gpu/commit written by fetch-gpu-debs.sh, else git).
# GPU_CHECK_AB compares forms of a kernel (see ab_forms below).
set -uo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT" || exit 1
OUT="${OUT:-$ROOT/gpu-out}"
mkdir -p "$OUT"

# op:n:k:tokens. For linear_swiglu n counts B rows (gate/up pairs), so the output is n/2 wide.
DEFAULT_SHAPES="linear:5120:5120:1 linear:5120:5120:127 linear:5120:5120:1024 \
linear:5120:5120:4096 linear_add:5120:5120:1024 linear_swiglu:27648:5120:1024"
read -r -a SHAPES <<<"${GPU_CHECK_SHAPES:-$DEFAULT_SHAPES}"
# The anchor: jitgemm against torch._scaled_mm in one process (bench/torch_anchor.py), at the
# prefill, middle and decode shapes of docs/performance.md.
# The targets (docs/performance.md): decode T = 1, 4, 16 on two shapes (memory roofline),
# T = 128 and 512, and T = 1024, 4096, 8192 at the five seed geometries (>= 1.10x torch), plus
# two epilogues.
LARGE_M_SHAPES="linear:5120:17408:1024 linear:5120:17408:4096 linear:5120:17408:8192 \
linear:14336:5120:1024 linear:14336:5120:4096 linear:14336:5120:8192 \
linear:34816:5120:1024 linear:34816:5120:4096 linear:34816:5120:8192 \
linear:6144:5120:1024 linear:6144:5120:4096 linear:6144:5120:8192 \
linear:8192:8192:1024 linear:8192:8192:4096 linear:8192:8192:8192"
DEFAULT_ANCHOR="linear:5120:17408:1 linear:5120:17408:4 linear:5120:17408:16 \
linear:8192:3584:1 linear:8192:3584:4 linear:8192:3584:16 \
linear:5120:17408:128 linear:5120:17408:512 $LARGE_M_SHAPES \
linear_add:5120:5120:1024 linear_swiglu:27648:5120:1024"
export ANCHOR_SHAPES="${GPU_CHECK_ANCHOR:-$DEFAULT_ANCHOR}"
# The 128x128 block-scaled anchor (bench/torch_anchor.py --scales 128x128): unset runs its
# default shapes (M in {1, 16, 64, 128, 4096} at seven DeepSeek-V3 projections), a list of
# op:n:k:tokens words runs those, an empty value skips the step.
BLOCKSCALED_SET="${GPU_CHECK_BLOCKSCALED+set}"
export BLOCKSCALED_SHAPES="${GPU_CHECK_BLOCKSCALED-}"
# The cost model's sweep (every candidate timed per cell) and the profiled candidates.
export SWEEP_SHAPES="${GPU_CHECK_SWEEP-linear:5120:17408:128 linear:5120:17408:1024 linear:5120:17408:4096 linear:14336:5120:4096}"
export PROFILE_CANDIDATES="${GPU_CHECK_PROFILE-wgmma_tma:128x160 wgmma_tma_mc2:128x160}"
export SANITIZE_CANDIDATES="${GPU_CHECK_SANITIZE-wgmma_tma:128x128 wgmma_tma_mc2:128x128 mma_sync}"
# GPU_CHECK_AB: forms to compare, ";"-separated, each a label and the VAR=value words that make
# it ("whole JITGEMM_WGMMA_PROMOTE=whole;halves"); each form's anchor runs in a fresh process,
# the forms in alternation, GPU_CHECK_AB_ROUNDS times (default 2), over GPU_CHECK_AB_SHAPES
# (default the 15 large-M points of the anchor), and bench/ab_summary.py compares them.
export AB_FORMS="${GPU_CHECK_AB:-}"
export AB_ROUNDS="${GPU_CHECK_AB_ROUNDS:-2}"
export AB_SHAPES="${GPU_CHECK_AB_SHAPES:-$LARGE_M_SHAPES}"
export SANITIZE_PROBLEM="${GPU_CHECK_SANITIZE_PROBLEM:---op linear_add --n 1176 --k 1552 --tokens 600}"
export PROFILE_PROBLEM="${GPU_CHECK_PROFILE_PROBLEM:---op linear --n 5120 --k 17408 --tokens 4096}"
BUDGET_S="${GPU_CHECK_BUDGET_S:-480}"
GPU_ROOT="$ROOT/.gpu/root"
GPU_LIB="$ROOT/.gpu/lib"
BUILD="$ROOT/build-gpu"
SUMMARY="$OUT/summary.txt"

STEPS=()
FAILED=0
DEADLINE=$((SECONDS + BUDGET_S))

log() { printf '\n=== gpu-check: %s\n' "$*"; }

# step NAME TIMEOUT_S COMMAND...: run with a timeout cut to the remaining budget, record the
# exit status and the time taken. COMMAND may be one of the functions below: they are exported
# and run in a child bash, which is what `timeout` can stop.
step() {
    local name="$1" limit="$2" left rc t0
    shift 2
    left=$((DEADLINE - SECONDS))
    if [ "$left" -lt 5 ]; then
        log "$name: skipped, the ${BUDGET_S}s budget is spent"
        STEPS+=("$name skipped 0")
        FAILED=1
        return 1
    fi
    [ "$limit" -gt "$left" ] && limit="$left"
    log "$name (timeout ${limit}s): $*"
    t0=$SECONDS
    timeout --kill-after=10 "$limit" bash -c '"$@"' step "$@"
    rc=$?
    STEPS+=("$name rc=$rc $((SECONDS - t0))s")
    [ "$rc" -ne 0 ] && FAILED=1
    return "$rc"
}

# .gpu/commit before git: the GPU machine's copy of the tree has carried the git metadata of an
# older commit, and a record then named the wrong one. fetch-gpu-debs.sh rewrites the file
# each time it runs, so run it before every GPU run.
commit_id() {
    if [ -n "${JITGEMM_COMMIT:-}" ]; then
        echo "$JITGEMM_COMMIT"
    elif [ -f "$ROOT/.gpu/commit" ]; then
        cat "$ROOT/.gpu/commit"
    elif git -C "$ROOT" rev-parse --short HEAD >/dev/null 2>&1; then
        echo "$(git -C "$ROOT" rev-parse --short HEAD)$(git -C "$ROOT" diff --quiet HEAD || echo +dirty)"
    else
        echo unknown
    fi
}

environment() {
    echo "commit: $JITGEMM_COMMIT"
    echo "date: $(date -u +%Y-%m-%dT%H:%M:%SZ)"
    echo "host: $(uname -srm), $(nproc) cores"
    nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader || true
    command -v nvcc >/dev/null && nvcc --version | tail -n 1
    cmake --version | head -n 1
    python3 -c 'import torch; print("torch", torch.__version__, "cuda", torch.version.cuda)' ||
        true
}

# dpkg -x where dpkg exists; else the .deb's two layers by hand (an ar archive holding a
# data.tar.*), so a host without dpkg still works.
extract_deb() {
    if command -v dpkg >/dev/null 2>&1; then
        dpkg -x "$1" "$2"
        return
    fi
    local tmp deb
    deb="$(readlink -f "$1")"
    tmp="$(mktemp -d)" || return 1
    (cd "$tmp" && ar x "$deb" && tar -xf data.tar.* -C "$2")
    local rc=$?
    rm -rf "$tmp"
    return "$rc"
}

# Unpack the packages and point the compiler, the linker, pkg-config and the loader at them.
# A downloaded shared library is put on LD_LIBRARY_PATH only when the host has no library of
# that soname, so Debian's builds never shadow the host's own (libssl, zlib, ...).
unpack_debs() {
    compgen -G ".gpu/debs/*.deb" >/dev/null || {
        echo "no .gpu/debs/*.deb: run scripts/fetch-gpu-debs.sh on the build machine and carry .gpu"
        return 1
    }
    rm -rf "$GPU_ROOT" "$GPU_LIB"
    mkdir -p "$GPU_ROOT" "$GPU_LIB"
    local f so name
    for f in .gpu/debs/*.deb; do
        extract_deb "$f" "$GPU_ROOT" || { echo "cannot unpack $f"; return 1; }
    done
    # Debian's .pc files say prefix=/usr and name static archives and private requirements
    # (boxfort, libgit2, ...) that a shared link does not need and that are not unpacked.
    for f in "$GPU_ROOT"/usr/lib/x86_64-linux-gnu/pkgconfig/*.pc; do
        sed -i -e "s|^prefix=/usr\$|prefix=$GPU_ROOT/usr|" \
            -e "s|=/usr/lib/x86_64-linux-gnu|=$GPU_ROOT/usr/lib/x86_64-linux-gnu|" \
            -e '/^Requires.private:/d' -e '/^Libs.private:/d' "$f"
    done
    for so in "$GPU_ROOT"/usr/lib/x86_64-linux-gnu/*.so.* "$GPU_ROOT"/lib/x86_64-linux-gnu/*.so.*; do
        [ -e "$so" ] || continue
        name="$(basename "$so")"
        # Sonames (lib*.so.N, or lib*.so.N.M as libgit2 names its own), not the fully versioned
        # files they point to.
        [[ "$name" =~ \.so\.[0-9]+(\.[0-9]+)?$ ]] || continue
        if ! ldconfig -p | grep -q "^[[:space:]]*$name "; then
            ln -sf "$(readlink -f "$so")" "$GPU_LIB/$name"
            echo "using the packaged $name"
        fi
    done
}

build() {
    cmake -S "$ROOT" -B "$BUILD" -DJITGEMM_WERROR=ON -DCMAKE_BUILD_TYPE=RelWithDebInfo \
        -DCMAKE_PREFIX_PATH="$GPU_ROOT/usr" &&
        cmake --build "$BUILD" -j"$(nproc)"
}

# Each run prints "run: ...", the check and PASS or FAIL, then "time: median X us";
# torch_anchor.py reads those lines back for the anchor ratio.
run_shapes() {
    local s op n k t rc=0
    for s in $SHAPES_STR; do
        IFS=: read -r op n k t <<<"$s"
        echo "--- jitgemm run --op $op --n $n --k $k --tokens $t --iters 50"
        "$BUILD/jitgemm" run --op "$op" --n "$n" --k "$k" --tokens "$t" --iters 50 ||
            { echo "FAILED: $s"; rc=1; }
    done
    return "$rc"
}

benchmarks() {
    local b rc=0 line
    : >"$OUT/bench.jsonl"
    for b in "$BUILD"/bench_*; do
        [ -x "$b" ] || continue
        echo "--- $(basename "$b")"
        "$b" | tee "$OUT/bench.last"
        [ "${PIPESTATUS[0]}" -eq 0 ] || rc=1
        line="$(tail -n 1 "$OUT/bench.last")"
        [[ "$line" == "{"* ]] && echo "$line" >>"$OUT/bench.jsonl"
    done
    rm -f "$OUT/bench.last"
    return "$rc"
}

write_summary() {
    {
        echo "jitgemm gpu-check, commit $JITGEMM_COMMIT, $(date -u +%Y-%m-%dT%H:%M:%SZ)"
        nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>/dev/null
        echo
        echo "steps:"
        printf '  %s\n' "${STEPS[@]}"
        echo
        echo "tests:"
        grep -E 'tests passed|tests failed|^\s*[0-9]+/[0-9]+ Test .*(Failed|Timeout|Not Run)' \
            "$OUT/ctest.log" 2>/dev/null | sed 's/^/  /'
        echo
        echo "jitgemm run:"
        grep -E '^(run:|first call|check:|PASS|FAIL|time:|jitgemm: error)' "$OUT/run.log" \
            2>/dev/null | sed 's/^/  /'
        echo
        echo "benchmarks:"
        sed 's/^/  /' "$OUT/bench.jsonl" 2>/dev/null
        echo
        echo "python binding:"
        grep -E '^(PASS|FAIL|run_gpu:)|passed|failed|skipped' "$OUT/python.log" 2>/dev/null |
            tail -n 3 | sed 's/^/  /'
        echo
        echo "torch anchor and sweep: $OUT/torch_anchor.json, $OUT/sweep.json"
        echo "block-scaled anchor: $OUT/torch_anchor_blockscaled.json"
        echo
        [ "$FAILED" -eq 0 ] && echo "result: all steps passed" || echo "result: FAILED"
    } >"$SUMMARY"
    cat "$SUMMARY"
}

# tee_to FILE COMMAND...: the command's output to FILE too, with the command's exit status.
tee_to() {
    local file="$1"
    shift
    "$@" 2>&1 | tee "$file"
    return "${PIPESTATUS[0]}"
}

# item_env ITEM: the "VAR=value,VAR=value@" prefix of a profile or sanitizer item, as
# space-separated words (none without an "@"), so that one run can set a comparison switch
# ("JITGEMM_WGMMA_PROMOTE=whole@wgmma_tma:128x160").
item_env() {
    case "$1" in
    *@*) local e="${1%%@*}" && echo "${e//,/ }" ;;
    esac
}

# Nsight Compute on one problem per forced candidate: speed of light, warp states (stall
# reasons) and the tensor pipe, for the performance notes. Clocks are left as found. An item is
# "[VAR=value,...@]candidate".
profile_candidates() {
    local item c rc=0
    for item in $PROFILE_CANDIDATES; do
        c="${item#*@}"
        echo "--- ncu, candidate $c $(item_env "$item"): $PROFILE_PROBLEM"
        # shellcheck disable=SC2046 # the VAR=value words split on purpose
        env $(item_env "$item") JITGEMM_FORCE_CANDIDATE="$c" ncu --clock-control none \
            --kernel-name regex:jitgemm_ \
            --launch-skip 2 --launch-count 1 --section SpeedOfLight --section WarpStateStats \
            --section ComputeWorkloadAnalysis --section Occupancy \
            --metrics 'regex:smsp__average_warps_issue_stalled_.*_per_issue_active\.ratio' \
            "$BUILD/jitgemm" run $PROFILE_PROBLEM --iters 3 ||
            rc=1
    done
    return "$rc"
}

# compute-sanitizer (memcheck, racecheck, synccheck) on one small ragged problem per forced
# candidate: each route's kernel at least once.
sanitize_candidates() {
    local item c opts tool rc=0
    for item in $SANITIZE_CANDIDATES; do
        # "[VAR=value,...@]candidate[|options,with,commas]" (a problem of its own: the decode
        # route takes only small M).
        c="${item#*@}"
        c="${c%%|*}"
        opts="$SANITIZE_PROBLEM"
        [[ "$item" == *"|"* ]] && opts="${item#*|}" && opts="${opts//,/ }"
        for tool in memcheck racecheck synccheck; do
            echo "--- compute-sanitizer --tool $tool, candidate $c $(item_env "$item"): $opts"
            # shellcheck disable=SC2046 # the VAR=value words split on purpose
            env $(item_env "$item") JITGEMM_FORCE_CANDIDATE="$c" compute-sanitizer \
                --tool "$tool" --error-exitcode 99 \
                "$BUILD/jitgemm" run $opts --iters 1 2>&1 |
                grep -E "ERROR SUMMARY|RACECHECK SUMMARY|Error|error|PASS|FAIL|family"
            [ "${PIPESTATUS[0]}" -eq 0 ] || rc=1
        done
    done
    return "$rc"
}

# GPU_CHECK_SMOKE: "[VAR=value ...] candidate|jitgemm run options;..." items, each run once under
# a hard timeout, with the VAR=value words (if any) in its environment.
smoke_candidates() {
    local item c opts vars rc=0
    IFS=';' read -r -a items <<<"$GPU_CHECK_SMOKE"
    for item in "${items[@]}"; do
        c="${item%%|*}"
        opts="${item#*|}"
        vars=()
        read -r -a vars <<<"$c"
        c="${vars[-1]}"
        unset 'vars[-1]'
        echo "--- smoke, candidate $c ${vars[*]}: $opts"
        env "${vars[@]}" JITGEMM_FORCE_CANDIDATE="$c" timeout -s KILL 30 "$BUILD/jitgemm" run \
            $opts --iters 5 || { echo "FAILED (or timed out): $c ${vars[*]} $opts"; rc=1; }
    done
    return "$rc"
}

# The A/B comparison (GPU_CHECK_AB): the anchor once per form and round, each in its own process
# with the form's VAR=value words, into $OUT/ab/LABEL-ROUND.json; then bench/ab_summary.py writes
# $OUT/ab.md. The documents travel as one $OUT/ab.tar (few files come back from the machine).
ab_forms() {
    local rnd form words label rc=0
    mkdir -p "$OUT/ab"
    IFS=';' read -r -a forms <<<"$AB_FORMS"
    for ((rnd = 1; rnd <= AB_ROUNDS; rnd++)); do
        for form in "${forms[@]}"; do
            read -r -a words <<<"$form"
            label="${words[0]}"
            echo "--- A/B form $label, round $rnd: ${words[*]:1}"
            env -u LD_LIBRARY_PATH PYTHONUNBUFFERED=1 "${words[@]:1}" python3 \
                "$ROOT/bench/torch_anchor.py" --lib "$BUILD/libjitgemm.so" --shapes "$AB_SHAPES" \
                --out "$OUT/ab/$label-$rnd.json" >/dev/null || rc=1
        done
    done
    python3 "$ROOT/bench/ab_summary.py" --md "$OUT/ab.md" "$OUT"/ab/*.json || rc=1
    tar -C "$OUT" -cf "$OUT/ab.tar" ab && rm -rf "$OUT/ab"
    return "$rc"
}

# The Python binding on PyTorch tensors (python/tests/gpu_cases.py: every epilogue at ragged M,
# against FP64 and torch._scaled_mm, CUDA graph replay; compile_cases.py: the operator under
# opcheck and torch.compile with inductor, with and without CUDA graphs), with pytest when this
# host has it (then gemm's argument checks run too), else through the plain runner. PyTorch brings its own CUDA
# libraries, so LD_LIBRARY_PATH is dropped as for the anchor; the library then needs only the
# host's libjansson.so.4.
python_tests() {
    local py=(env -u LD_LIBRARY_PATH JITGEMM_LIBRARY="$BUILD/libjitgemm.so"
        JITGEMM_BUILD_DIR="$BUILD" PYTHONUNBUFFERED=1 python3)
    if "${py[@]}" -c 'import pytest' 2>/dev/null; then
        "${py[@]}" -m pytest -v -rs -p no:cacheprovider "$ROOT/python/tests/test_gemm_gpu.py" \
            "$ROOT/python/tests/test_gemm_args.py" "$ROOT/python/tests/test_torch_compile_gpu.py"
    else
        echo "no pytest here: python/tests/run_gpu.py"
        "${py[@]}" "$ROOT/python/tests/run_gpu.py"
    fi
}

export -f extract_deb unpack_debs build run_shapes benchmarks tee_to item_env profile_candidates \
    sanitize_candidates smoke_candidates python_tests ab_forms
export ROOT OUT GPU_ROOT GPU_LIB BUILD
export SHAPES_STR="${SHAPES[*]}"

main() {
    JITGEMM_COMMIT="$(commit_id)"
    export JITGEMM_COMMIT
    # A private cache, emptied first, so every kernel the checks need is compiled here by the
    # toolkit and for the driver of this machine.
    export JITGEMM_CACHE_DIR="$ROOT/.gpu/cache"
    rm -rf "$JITGEMM_CACHE_DIR"

    log "environment"
    environment

    step unpack 60 unpack_debs || { write_summary; return 1; }
    export CPATH="$GPU_ROOT/usr/include${CPATH:+:$CPATH}"
    export LIBRARY_PATH="$GPU_ROOT/usr/lib/x86_64-linux-gnu${LIBRARY_PATH:+:$LIBRARY_PATH}"
    export PKG_CONFIG_PATH="$GPU_ROOT/usr/lib/x86_64-linux-gnu/pkgconfig${PKG_CONFIG_PATH:+:$PKG_CONFIG_PATH}"
    export LD_LIBRARY_PATH="$GPU_LIB${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"

    step build 180 build || { write_summary; return 1; }

    # A kernel that hangs would spend the whole budget: each forced candidate runs once first,
    # killed after 30 s, and nothing else runs if one of them fails.
    if [ -n "${GPU_CHECK_SMOKE:-}" ]; then
        step smoke 120 smoke_candidates || { write_summary; return 1; }
    fi
    # GPU_CHECK_TESTS narrows ctest to a regex (-R) when device time is short.
    step ctest 240 tee_to "$OUT/ctest.log" ctest --test-dir "$BUILD" --output-on-failure \
        --no-tests=error -j 4 ${GPU_CHECK_TESTS:+-R "$GPU_CHECK_TESTS"}
    # PyTorch brings its own CUDA libraries; keep the packaged ones out of its way.
    step torch_anchor "${GPU_CHECK_ANCHOR_S:-300}" env -u LD_LIBRARY_PATH PYTHONUNBUFFERED=1 python3 \
        "$ROOT/bench/torch_anchor.py" --lib "$BUILD/libjitgemm.so" --shapes "$ANCHOR_SHAPES" \
        --out "$OUT/torch_anchor.json"
    if [ -z "$BLOCKSCALED_SET" ] || [ -n "$BLOCKSCALED_SHAPES" ]; then
        step torch_anchor_blockscaled "${GPU_CHECK_BLOCKSCALED_S:-300}" env -u LD_LIBRARY_PATH \
            PYTHONUNBUFFERED=1 python3 "$ROOT/bench/torch_anchor.py" --scales 128x128 \
            --lib "$BUILD/libjitgemm.so" ${BLOCKSCALED_SHAPES:+--shapes "$BLOCKSCALED_SHAPES"} \
            --out "$OUT/torch_anchor_blockscaled.json"
    fi
    if [ -n "$AB_FORMS" ]; then
        step ab "${GPU_CHECK_AB_S:-300}" tee_to "$OUT/ab.log" ab_forms
    fi
    # Inductor compiles each of the torch.compile cases' graphs: minutes, not seconds.
    [ -n "${GPU_CHECK_SKIP_PYTHON:-}" ] ||
        step python "${GPU_CHECK_PYTHON_S:-300}" tee_to "$OUT/python.log" python_tests
    if [ -n "$SANITIZE_CANDIDATES" ]; then
        step sanitize 150 sanitize_candidates
    fi
    if [ -n "$PROFILE_CANDIDATES" ]; then
        step profile 150 profile_candidates
    fi
    if [ -n "$SWEEP_SHAPES" ]; then
        step sweep "${GPU_CHECK_SWEEP_S:-200}" env -u LD_LIBRARY_PATH PYTHONUNBUFFERED=1 python3 \
            "$ROOT/bench/torch_anchor.py" --lib "$BUILD/libjitgemm.so" --sweep \
            --shapes "$SWEEP_SHAPES" --out "$OUT/sweep.json"
    fi
    [ -n "${GPU_CHECK_SKIP_RUN:-}" ] || step run 150 tee_to "$OUT/run.log" run_shapes
    [ -n "${GPU_CHECK_SKIP_BENCH:-}" ] || step bench 120 benchmarks

    write_summary
    return "$FAILED"
}

main "$@" 2>&1 | tee "$OUT/gpu-check.log"
exit "${PIPESTATUS[0]}"
