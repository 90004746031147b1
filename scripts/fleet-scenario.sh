#!/usr/bin/env bash
# The fleet scenario of docs/cache.md ("A fleet"), end to end with the built CLI:
#
#   1. a build host (the project's NVRTC, no GPU) prewarms two targets, sm_90a and sm_107a;
#      `cache gc` run on that cache where no NVRTC is found, or another NVRTC version, removes
#      nothing (a dry run says so first): every entry is servable;
#   2. it exports its cache to one archive;
#   3. the archive is imported into an image cache, readable by every user (--shared), which
#      serving hosts list as a read-only layer after their own (empty) cache;
#   4. serving hosts with another SM count find every kernel without compiling: one with no
#      NVRTC at all, and one with another NVRTC version (the system toolkit, when it is one);
#      each first runs `prewarm --check` (exit 0: the image is complete), then serves with
#      JITGEMM_COMPILE=never; an SM count whose plan differs is reported missing by --check.
#
# Compiles are counted from the library's own log (JITGEMM_LOG=info prints one "miss, compiling"
# line per compile) and from prewarm's JSON status lines; a serving host that compiles anything,
# writes into the layer or leaves a kernel unserved fails the run. Run by .ci/run after the test
# suite; needs build/jitgemm (scripts/setup.sh). Usage: scripts/fleet-scenario.sh [BUILD_DIR]
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
BUILD="${1:-$ROOT/build}"
JITGEMM="$BUILD/jitgemm"
[[ -x "$JITGEMM" ]] || { echo "fleet: $JITGEMM not built (run scripts/setup.sh)" >&2; exit 1; }
PROJECT_TOOLKIT="$(ls -d "$BUILD"/jitgemm-toolkits/cuda-* 2>/dev/null | sort -V | tail -n 1)"
[[ -n "$PROJECT_TOOLKIT" ]] || { echo "fleet: no project NVRTC under $BUILD/jitgemm-toolkits" >&2; exit 1; }

WORK="$(mktemp -d "${TMPDIR:-/tmp}/jitgemm-fleet.XXXXXX")"
trap 'chmod -R u+w "$WORK" 2>/dev/null; rm -rf "$WORK"' EXIT
start=$SECONDS
fail() {
    echo "fleet: FAIL: $*" >&2
    exit 1
}
step() { printf '\nfleet: %s\n' "$*"; }

# Dense FP8 layers on both targets, block-scaled NVFP4 on Rubin; decode and prefill token counts.
cat >"$WORK/sm90.json" <<'EOF'
{"gemms": [
  {"name": "qkv", "op": "linear", "n": 6144, "k": 4096, "tokens": [16, 4096]},
  {"name": "down", "op": "linear_add", "n": 4096, "k": 14336, "tokens": [16, 4096]}
]}
EOF
cat >"$WORK/sm107.json" <<'EOF'
{"gemms": [
  {"name": "qkv", "op": "linear", "n": 6144, "k": 4096, "tokens": [16, 4096]},
  {"name": "down.nvfp4", "op": "linear_add", "n": 4096, "k": 14336, "a": "e2m1", "b": "e2m1",
   "scales": "ue4m3/16", "tokens": [16, 4096]}
]}
EOF
# Serving SM counts other than the arch defaults (132, 148) at which the planner makes the same
# choices, so the kernels are the same: the SM count is not in the key (docs/cache.md). (At 114
# SMs, an H100 PCIe, the wgmma cost model picks another tile for `down` at 4096 tokens: such a
# fleet prewarms `--target sm_90a:114` as well.)
declare -A LIST=([sm_90a]="$WORK/sm90.json" [sm_107a]="$WORK/sm107.json")
declare -A SERVE_SMS=([sm_90a]=128 [sm_107a]=160)

# prewarm ARCH SM_COUNT LOG [VAR=value...] [-- CLI options...]: run one prewarm, JSON lines to
# LOG.json, stderr to LOG.err.
prewarm() {
    local arch=$1 sms=$2 log=$3
    shift 3
    local envs=() opts=()
    while [[ $# -gt 0 && "$1" != -- ]]; do envs+=("$1"); shift; done
    [[ $# -gt 0 ]] && shift && opts=("$@")
    [[ "$sms" != default ]] && opts+=(--sm-count "$sms")
    env CUDA_VISIBLE_DEVICES= JITGEMM_LOG=info "${envs[@]}" \
        "$JITGEMM" prewarm "${LIST[$arch]}" --arch "$arch" "${opts[@]}" --json --jobs 2 \
        >"$log.json" 2>"$log.err"
}
count() { grep -c "$1" "$2" || true; }

step "build host: $PROJECT_TOOLKIT, no GPU"
for arch in sm_90a sm_107a; do
    prewarm "$arch" default "$WORK/build-$arch" JITGEMM_TOOLKIT_DIR="$PROJECT_TOOLKIT" \
        JITGEMM_CACHE_DIR="$WORK/build-cache" || { cat "$WORK/build-$arch.err" >&2; fail "prewarm $arch"; }
    n=$(wc -l <"$WORK/build-$arch.json")
    c=$(count '"status":"compiled"' "$WORK/build-$arch.json")
    echo "  $arch: $n problems, $c compiled"
    [[ "$c" -gt 0 ]] || fail "the build host compiled nothing for $arch (a fresh cache)"
done
"$JITGEMM" cache verify --cache-dir "$WORK/build-cache" >/dev/null || fail "build cache does not verify"

# The system toolkit's NVRTC, when it is another version than the project's: a second kind of
# host, for gc here and for serving below.
other="${CUDA_HOME:-/usr/local/cuda}"
project_v=$("$JITGEMM" --version | sed -n 's/^toolchain: NVRTC \([0-9.]*\),.*/\1/p')
other_v=$(JITGEMM_TOOLKIT_DIR="$other" "$JITGEMM" --version | sed -n 's/^toolchain: NVRTC \([0-9.]*\),.*/\1/p')
[[ -n "$other_v" && "$other_v" != "$project_v" ]] || other_v=""

# gc by another NVRTC loses nothing: a key holds no toolchain, so every entry is servable
# whichever NVRTC built it, and gc needs none to decide. Run where none is found, and where
# another version is, each first as a dry run; the image below is exported after both.
mkdir -p "$WORK/no-toolkit"
entries() { "$JITGEMM" cache list --json --cache-dir "$WORK/build-cache" | sed -n 's/^{"hash":"\([0-9a-f]*\)".*/\1/p' | sort; }
before_gc="$(entries)"
gc_hosts=("$WORK/no-toolkit")
[[ -n "$other_v" ]] && gc_hosts+=("$other")
for toolkit in "${gc_hosts[@]}"; do
    step "gc of the build cache where the toolkit is $toolkit"
    out=$(JITGEMM_TOOLKIT_DIR="$toolkit" "$JITGEMM" cache gc --dry-run --cache-dir "$WORK/build-cache") ||
        fail "gc --dry-run with $toolkit: $out"
    grep -q "would remove 0 items" <<<"$out" || fail "gc --dry-run with $toolkit would remove: $out"
    out=$(JITGEMM_TOOLKIT_DIR="$toolkit" "$JITGEMM" cache gc --cache-dir "$WORK/build-cache") ||
        fail "gc with $toolkit: $out"
    echo "  $out"
    grep -q "removed 0 entries" <<<"$out" || fail "gc with $toolkit removed entries: $out"
    [[ "$(entries)" == "$before_gc" ]] || fail "gc with $toolkit changed the entries"
done
[[ -n "$before_gc" ]] || fail "the build cache lists no entries"

step "export, import into an image cache"
"$JITGEMM" cache export "$WORK/fleet.jitgemm" --cache-dir "$WORK/build-cache"
"$JITGEMM" cache import "$WORK/fleet.jitgemm" --shared --cache-dir "$WORK/image"
# The image as a read-only layer: 0755, owned by this user (root's would be trusted the same).
chmod 0755 "$WORK/image" "$WORK/image/kernels"
[[ "$(stat -c %a "$WORK/image")" == 755 ]] || fail "the image cache is not 0755"
snapshot() { (cd "$WORK/image" && find . -type f -printf '%p %s %T@ %m\n' | sort); }
image_before="$(snapshot)"

# A damaged archive is refused whole (the import checks before it publishes anything).
cp "$WORK/fleet.jitgemm" "$WORK/damaged.jitgemm"
printf 'X' | dd of="$WORK/damaged.jitgemm" bs=1 seek=4000 conv=notrunc status=none
if "$JITGEMM" cache import "$WORK/damaged.jitgemm" --cache-dir "$WORK/refused" 2>"$WORK/damaged.err"; then
    fail "a damaged archive was imported"
fi
grep -q "nothing was imported" "$WORK/damaged.err" || fail "damaged archive: $(cat "$WORK/damaged.err")"
[[ ! -e "$WORK/refused" ]] || fail "a refused import created the cache directory $WORK/refused"

# serve NAME TOOLKIT: every kernel of both lists from the layer, no compile, nothing written.
# The cache list comes through JITGEMM_CACHE_DIR for sm_90a and through --cache-dir for sm_107a.
serve() {
    local name=$1 toolkit=$2 layers="$WORK/$1-user:$WORK/image"
    mkdir -p "$WORK/$name-user"
    for arch in sm_90a sm_107a; do
        local log="$WORK/$name-$arch" how=(JITGEMM_CACHE_DIR="$layers")
        [[ $arch == sm_107a ]] && how=(-- --cache-dir "$layers")
        # First the check a deployment runs before it serves: compiles nothing, exit 0 only
        # when every kernel the list needs is in some layer.
        env CUDA_VISIBLE_DEVICES= JITGEMM_TOOLKIT_DIR="$toolkit" JITGEMM_CACHE_DIR="$layers" \
            "$JITGEMM" prewarm "${LIST[$arch]}" --check --target "$arch:${SERVE_SMS[$arch]}" \
            >"$log.check" 2>&1 || { cat "$log.check" >&2; fail "$name: prewarm --check $arch"; }
        # Then the serving process itself, with compiling forbidden.
        prewarm "$arch" "${SERVE_SMS[$arch]}" "$log" JITGEMM_TOOLKIT_DIR="$toolkit" \
            JITGEMM_COMPILE=never "${how[@]}" ||
            { cat "$log.err" >&2; fail "$name: prewarm $arch"; }
        local n cached compiles
        n=$(wc -l <"$log.json")
        cached=$(count '"status":"cached"' "$log.json")
        compiles=$(count 'miss, compiling' "$log.err")
        echo "  $name $arch (${SERVE_SMS[$arch]} SMs): $cached of $n cached, $compiles compiles"
        [[ "$compiles" -eq 0 && "$cached" -eq "$n" && "$n" -gt 0 ]] ||
            { cat "$log.err" >&2; fail "$name compiled on a serving host ($arch)"; }
    done
    [[ -z "$(ls -A "$WORK/$name-user/kernels" 2>/dev/null)" ]] ||
        fail "$name: its own cache got entries it should have found in the layer"
    [[ "$(snapshot)" == "$image_before" ]] || fail "$name: the read-only layer was modified"
}

step "serving host without NVRTC"
serve no-nvrtc "$WORK/no-toolkit"
# The count above can fail: a kernel that is not in the image cannot be made without NVRTC.
if env CUDA_VISIBLE_DEVICES= JITGEMM_TOOLKIT_DIR="$WORK/no-toolkit" \
    JITGEMM_CACHE_DIR="$WORK/no-nvrtc-user:$WORK/image" \
    "$JITGEMM" prewarm "${LIST[sm_90a]}" --arch sm_90a --sm-count 160 >/dev/null 2>"$WORK/miss.err"; then
    fail "a kernel missing from the image was served without NVRTC"
fi
grep -q "not in the cache and cannot be compiled here" "$WORK/miss.err" ||
    fail "missing kernel without NVRTC: $(cat "$WORK/miss.err")"
# And --check says so before anything is served: exit 1, the missing kernel listed.
if env CUDA_VISIBLE_DEVICES= JITGEMM_CACHE_DIR="$WORK/no-nvrtc-user:$WORK/image" \
    "$JITGEMM" prewarm "${LIST[sm_90a]}" --check --target sm_90a:160 >"$WORK/check-miss.out" 2>&1; then
    fail "prewarm --check called an incomplete image complete"
fi
grep -q "^missing sm_90a:160 " "$WORK/check-miss.out" ||
    fail "prewarm --check did not list the missing kernel: $(cat "$WORK/check-miss.out")"

if [[ -n "$other_v" ]]; then
    step "serving host with NVRTC $other_v ($other; the build host had $project_v)"
    serve other-nvrtc "$other"
else
    step "no second NVRTC version at $other: that host is skipped"
fi

echo
echo "fleet: OK in $((SECONDS - start)) s"
