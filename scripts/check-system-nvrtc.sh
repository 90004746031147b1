#!/usr/bin/env bash
# Compile one kernel of every sm_90a route with the system toolkit's NVRTC (CUDA 13.0 on the
# build machine and on the H200), not the newer one setup.sh downloads: a construct that only a
# newer NVRTC accepts (__builtin_offsetof, for one) would otherwise pass every test here and
# fail every compile on the GPU host. Usage: check-system-nvrtc.sh JITGEMM_CLI [CUDA_ROOT]
# Exits 77 (skipped) when no system NVRTC is found.
set -uo pipefail
cli="$1"
root="${2:-${CUDA_HOME:-/usr/local/cuda}}"
if ! compgen -G "$root/lib64/libnvrtc.so*" >/dev/null; then
    echo "check-system-nvrtc: no NVRTC under $root/lib64: skipped"
    exit 77
fi
cache="$(mktemp -d)"
trap 'rm -rf "$cache"' EXIT
export JITGEMM_TOOLKIT_DIR="$root" JITGEMM_CACHE_DIR="$cache"
failed=0
# One problem per route: wgmma tiles and decode, the 128x128 tiles and decode, the quantizer,
# the grouped tiles and a masked grouped problem.
while read -r what args; do
    [ -n "$what" ] || continue
    # shellcheck disable=SC2086 # the problem's words split on purpose
    if out="$("$cli" inspect $args --arch sm_90a --entry 2>&1)"; then
        nvrtc="$(printf '%s\n' "$out" | sed -n 's/.*"nvrtc": "\([0-9.]*\)".*/\1/p' | head -n 1)"
        echo "ok    $what (NVRTC $nvrtc)"
    else
        echo "FAIL  $what"
        printf '%s\n' "$out" | head -n 8
        failed=1
    fi
done <<'PROBLEMS'
wgmma-tiles --op linear_add --n 1176 --k 1552 --tokens 600
wgmma-decode --op linear --n 5120 --k 5120 --tokens 1
block-tiles --op linear_swiglu --n 1048 --k 1552 --tokens 600 --scales 128x128
block-decode --op linear --n 1176 --k 1552 --tokens 16 --scales 128x128
quantizer --op quantize_fp8_1x128 --k 1552 --tokens 300
grouped-tiles --op linear --n 1000 --k 1552 --tokens 700 --groups 8
grouped-masked --op linear_swiglu --n 1048 --k 1552 --tokens 256 --groups 8 --layout masked --expected-m 24
PROBLEMS
exit "$failed"
