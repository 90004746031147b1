#!/usr/bin/env bash
# Runs generated 128x128 block-scaled wgmma kernels (family fp8_block_wgmma, sm_90a) on the
# functional model (tests/fmodel; docs/kernels-fp8-block-wgmma.md, "Checked without a GPU"):
# per case, `fmodel_bsw gen` writes the kernel source, the host C++ compiler builds it against
# the model's device headers (tests/fmodel/shim) as a shared object, and `fmodel_bsw run`
# launches it through the family's own launch code over random data and compares it with the
# FP64 reference.
#
#   scripts/fmodel-bsw.sh [--quick] [--controls] [--fmodel PATH] [--cxx CXX] [--work DIR]
#                         [--seeds N] [CASE...]
#
# --quick: the CI subset (ctest fmodel_bsw_quick), with the negative controls. Without CASE
# arguments and without --quick: the full matrix, two scheduling seeds each. --controls adds
# the negative controls to any run. A CASE is what `fmodel_bsw run` takes
# (tests/fmodel/fm_bsw_main.c).
set -u
root=$(cd "$(dirname "$0")/.." && pwd)
fmodel="$root/build/fmodel_bsw"
cxx=${CXX:-g++}
work=""
quick=0
seeds=1
controls=0
cases=()
while [ $# -gt 0 ]; do
  case "$1" in
    --quick) quick=1 ;;
    --controls) controls=1 ;;
    --fmodel) fmodel=$2; shift ;;
    --cxx) cxx=$2; shift ;;
    --work) work=$2; shift ;;
    --seeds) seeds=$2; shift ;;
    -h|--help) sed -n 2,14p "$0"; exit 0 ;;
    -*) echo "fmodel-bsw.sh: unknown option $1" >&2; exit 2 ;;
    *) cases+=("$1") ;;
  esac
  shift
done
if [ ! -x "$fmodel" ]; then
  echo "fmodel-bsw.sh: $fmodel not found: build first (cmake --build build)" >&2
  exit 2
fi
[ -n "$work" ] || work=$(mktemp -d)
mkdir -p "$work"

if [ ${#cases[@]} -eq 0 ]; then
  # Each case: ragged M, N (not a multiple of 128) and K (a partial last 128-K group), a few SMs
  # so that each CTA runs several tiles and the ring wraps, and one structural path each.
  cases=(
    "m=200,n=300,k=400,epi=linear,layout=k,force=block_tma:128x96,sms=3"
    "m=130,n=260,k=272,epi=add,layout=m,force=block_tma:128x160,sms=2"
    "m=7,n=384,k=528,epi=swiglu,layout=k,force=block_tma:128x128,sms=2"
    "m=300,n=200,k=400,epi=linear,layout=m,force=block_tma_mc2:128x64,sms=4"
    "m=5,n=300,k=400,epi=linear,layout=k,force=block_decode_s3:16x128,sms=4,launches=2"
  )
  if [ $quick = 0 ]; then
    cases+=(
      "m=1,n=200,k=144,epi=linear,layout=m,sms=2"
      "m=129,n=300,k=400,epi=linear,layout=k,force=block_tma:128x192,sms=3"
      "m=260,n=392,k=272,epi=swiglu,layout=m,force=block_tma:128x192,sms=3"
      "m=100,n=300,k=400,epi=add,layout=k,force=block_tma_mc2:128x96,sms=2"
      "m=300,n=520,k=272,epi=add,layout=m,force=block_tma_mc2:128x160,sms=4"
      "m=64,n=256,k=1024,epi=swiglu,layout=k,force=block_tma_mc2:128x128,sms=2"
      "m=257,n=130,k=16,epi=linear,layout=k,force=block_tma:128x64,sms=3"
      "m=40,n=260,k=1040,epi=add,layout=m,force=block_decode_s1:64x128,sms=3"
      "m=13,n=512,k=272,epi=swiglu,layout=m,force=block_decode_s2:16x256,sms=3,launches=2"
      "m=64,n=200,k=1040,epi=linear,layout=k,force=block_decode_s6:64x128,sms=5,launches=2"
      "m=1,n=1000,k=1552,epi=add,layout=m,sms=4"
    )
    seeds=2
  fi
fi

fail=0
n=0
for c in "${cases[@]}"; do
  n=$((n + 1))
  dir="$work/case$n"
  mkdir -p "$dir"
  if ! name=$("$fmodel" gen "$c" "$dir/kernel.cu"); then
    echo "FAIL gen $c"; fail=$((fail + 1)); continue
  fi
  if ! "$cxx" -std=c++17 -O1 -fPIC -shared -w -fno-strict-aliasing -I"$root/tests/fmodel/shim" \
      -I"$root/kernel_src" -DFM_KERNEL_SOURCE="\"$dir/kernel.cu\"" -DFM_KERNEL_NAME="$name" \
      -DFM_PARAMS_TYPE=BswParams "$root/tests/fmodel/fm_kernel.cpp" -o "$dir/kernel.so" \
      2>"$dir/compile.log"; then
    echo "FAIL compile $c (see $dir/compile.log)"; head -20 "$dir/compile.log"
    fail=$((fail + 1)); continue
  fi
  for s in $(seq 1 "$seeds"); do
    start=$(date +%s%N)
    y=0.05; [ "$s" -gt 1 ] && y=0.$((s * 3 % 10))
    if out=$("$fmodel" run "$c" "$dir/kernel.so" --seed "$s" --yield "$y" 2>&1); then
      printf 'ok   %-78s seed %d  %d ms\n' "$c" "$s" $((($(date +%s%N) - start) / 1000000))
    else
      echo "FAIL $c seed $s"
      echo "$out" | head -30
      fail=$((fail + 1))
    fi
  done
done
# Negative controls (with --quick or --controls): kernels with one known defect each, made by
# editing a copy of kernel_src/fp8_block_wgmma/device; the model must reject every one, which
# shows that a passing case means something: a scale from the wrong block, row, N block or token
# gives wrong numbers, a missing release or a wrong barrier parity a deadlock, and a split-K
# counter left set a wrong second launch.
control() { # NAME FILE SED-EXPRESSION CASE
  local name=$1 file=$2 expr=$3 c=$4 dir="$work/control-$1"
  rm -rf "$dir"; mkdir -p "$dir/fp8_block_wgmma"
  cp -r "$root/kernel_src/fp8_block_wgmma/device" "$dir/fp8_block_wgmma/"
  sed -i "$expr" "$dir/fp8_block_wgmma/device/$file"
  if cmp -s "$root/kernel_src/fp8_block_wgmma/device/$file" "$dir/fp8_block_wgmma/device/$file"; then
    echo "FAIL control $name: the edit no longer applies to $file"; fail=$((fail + 1)); return
  fi
  local kname
  kname=$("$fmodel" gen "$c" "$dir/kernel.cu") &&
  "$cxx" -std=c++17 -O1 -fPIC -shared -w -fno-strict-aliasing -I"$root/tests/fmodel/shim" \
    -I"$dir" -I"$root/kernel_src" -DFM_KERNEL_SOURCE="\"$dir/kernel.cu\"" \
    -DFM_KERNEL_NAME="$kname" -DFM_PARAMS_TYPE=BswParams "$root/tests/fmodel/fm_kernel.cpp" \
    -o "$dir/kernel.so" 2>"$dir/compile.log" || {
    echo "FAIL control $name: does not build"; fail=$((fail + 1)); return; }
  local out
  if out=$("$fmodel" run "$c" "$dir/kernel.so" --seed 1 2>&1); then
    echo "FAIL control $name: the model accepted a broken kernel"; fail=$((fail + 1))
  else
    printf 'ok   control %-20s rejected: %s\n' "$name" \
      "$(echo "$out" | grep -m1 -E 'HAZARD|DEADLOCK|ERROR|FAIL|D\[|counter' | cut -c1-100)"
  fi
}
if [ $quick = 1 ] || [ $controls = 1 ]; then
  cc="m=200,n=300,k=400,epi=linear,layout=k,force=block_tma:128x96,sms=3"
  control sfa-k-stuck producer.cuh 's/                sfa += p.sfa_stride_k;/                (void)0;/' "$cc"
  control one-n-block mainloop.cuh 's/const bool hi = T::SPANS \&\& j >= jsplit;/const bool hi = false;/' "$cc"
  control row-off-by-one mainloop.cuh 's/v.a1 = ld_shared_f32(slot + 4 \* (s.r0 + 8));/v.a1 = ld_shared_f32(slot + 4 * (s.r0 + 7));/' "$cc"
  control no-release mainloop.cuh 's/        release(empty_bar, stage, lane);/        (void)0;/' "$cc"
  control drained-parity epilogue.cuh 's/mbar_wait(hand.drained, parity ^ 1);/mbar_wait(hand.drained, parity);/' "$cc"
  dc="m=5,n=300,k=400,epi=linear,layout=m,force=block_decode_s3:16x128,sms=4,launches=2"
  control decode-token-scale decode_mainloop.cuh 's/s.tok0 = (i64)w.mt \* T::TOK + 2 \* t;/s.tok0 = (i64)w.mt * T::TOK + t;/' "$dc"
  control decode-counter-kept decode_epilogue.cuh 's/\*(volatile u32 \*)(p.counters + w.tile) = 0u;/(void)0;/' "$dc"
  control alpha-dropped epilogue.cuh 's/const float v0 = acc\[4 \* j + 2 \* h\] \* alpha;/const float v0 = acc[4 * j + 2 * h];/' "$cc"
fi

echo "fmodel-bsw.sh: $n cases, $fail failures"
[ $fail = 0 ]
