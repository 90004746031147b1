#!/usr/bin/env bash
# Runs generated tcgen05 kernels on the functional model (tests/fmodel, docs/blackwell-rubin.md,
# "Functional model"): per case, `fmodel gen` writes the kernel source, the host C++ compiler
# builds it against the model's device headers (tests/fmodel/shim) as a shared object, and
# `fmodel run` executes it over random data and compares with the FP64 reference.
#
#   scripts/tcgen05-checks/fmodel.sh [--quick] [--controls] [--fmodel PATH] [--cxx CXX]
#       [--work DIR] [--seeds N] [CASE...]
#
# --quick: the CI subset (ctest fmodel_quick). Without CASE arguments and without --quick: the
# full matrix. --seeds N runs every case under N scheduling seeds (default 1; 2 in the matrix).
set -u
root=$(cd "$(dirname "$0")/../.." && pwd)
fmodel="$root/build/fmodel"
cxx=${CXX:-g++}
work=""
quick=0
controls=0
seeds=""
cases=()
while [ $# -gt 0 ]; do
  case "$1" in
    --quick) quick=1 ;;
    --controls) controls=1 ;;
    --fmodel) fmodel=$2; shift ;;
    --cxx) cxx=$2; shift ;;
    --work) work=$2; shift ;;
    --seeds) seeds=$2; shift ;;
    -h|--help) sed -n 2,12p "$0"; exit 0 ;;
    -*) echo "fmodel.sh: unknown option $1" >&2; exit 2 ;;
    *) cases+=("$1") ;;
  esac
  shift
done
if [ ! -x "$fmodel" ]; then
  echo "fmodel.sh: $fmodel not found: build first (cmake --build build)" >&2
  exit 2
fi
[ -n "$work" ] || work=$(mktemp -d)
mkdir -p "$work"

if [ ${#cases[@]} -eq 0 ]; then
  if [ $quick = 1 ]; then
    # One case per structural path, small enough for CI: 1-CTA FP4 (the first case), 2-CTA FP8
    # with SwiGLU, FP32 out and a ragged M, unpacked FP4 in kind::mxf8f6f4 with an N-64 tile,
    # sm_107a's widened K with B-reuse, residual add and UE5M3 scales, and a mixed-cluster
    # launch with A multicast (one of two regions as a fallback 2x2 cluster under a 4x2
    # preferred one; cluster N 2 is forced: the planner never picks it), launched twice over
    # one workspace (the kernel's tail reset).
    cases=(
      "arch=sm_100a,fmt=nvfp4,cg=1,tile_n=128,m=200,n=256,k=512"
      "arch=sm_103a,fmt=mxfp8,cg=2,tile_n=256,m=300,n=512,k=320,out=f32,epi=swiglu,clusters=1"
      "arch=sm_100a,fmt=mixed,cg=1,tile_n=64,m=130,n=192,k=384,epi=add,clusters=1"
      "arch=sm_107a,fmt=ue5m3,cg=2,tile_n=128,breuse=1,m=520,n=256,k=512,epi=add"
      "arch=sm_100a,fmt=nvfp4,cg=2,tile_n=64,band=0,m=600,n=512,k=512,cluster_n=2,clusters=2,fallback=1,launches=2"
    )
    : "${seeds:=1}"
  else
    # Every kind x arch profile, 1- and 2-CTA, every tile N, every epilogue, both outputs,
    # ragged M, N and K (K past the last full tile; M and N past the last tile), B-reuse on
    # sm_107a (the only profile that plans it: it needs more than 512 TMEM columns). Cases with
    # clusters=1 give one cluster several tiles: the persistent loop, the SMEM ring wrapping
    # around and, at tile N 256 on sm_100a/103a, the overlapping accumulator stages' early
    # release between tiles.
    for arch in sm_100a sm_103a sm_107a; do
      for fmt in nvfp4 mxfp4 mxfp8 mixed ue5m3; do
        [ $fmt = ue5m3 ] && [ $arch != sm_107a ] && continue
        # Unpacked FP4 (kind::mxf8f6f4 on sm_100a/103a) needs K % 128 == 0.
        k=544; kr=800; [ $fmt = mixed ] && [ $arch != sm_107a ] && k=384 && kr=640
        cases+=("arch=$arch,fmt=$fmt,cg=1,tile_n=128,m=200,n=256,k=$k")
        cases+=("arch=$arch,fmt=$fmt,cg=1,tile_n=64,m=64,n=200,k=$kr,out=f32,epi=add,clusters=1")
        cases+=("arch=$arch,fmt=$fmt,cg=1,tile_n=192,m=129,n=192,k=$k,epi=swiglu")
        cases+=("arch=$arch,fmt=$fmt,cg=2,tile_n=256,m=300,n=384,k=$k,epi=add,clusters=1")
        cases+=("arch=$arch,fmt=$fmt,cg=2,tile_n=128,m=520,n=256,k=$kr,epi=swiglu,out=f32")
        cases+=("arch=$arch,fmt=$fmt,cg=2,tile_n=64,m=100,n=96,k=$k")
        # Mixed-cluster launches: plans of the small-M bands have a fallback shape.
        cases+=("arch=$arch,fmt=$fmt,cg=2,tile_n=128,band=0,m=600,n=256,k=$k,clusters=3,fallback=2")
        cases+=("arch=$arch,fmt=$fmt,cg=1,tile_n=256,band=2,m=300,n=512,k=$k,clusters=3,fallback=3")
        # A multicast along a forced cluster N of 2 (the planner always picks 1).
        if [ $fmt = nvfp4 ] || [ $fmt = mixed ]; then
          cases+=("arch=$arch,fmt=$fmt,cg=1,tile_n=128,band=2,m=300,n=512,k=$k,cluster_n=2,clusters=1")
          cases+=("arch=$arch,fmt=$fmt,cg=2,tile_n=64,band=0,m=600,n=512,k=$k,cluster_n=2,fallback=1")
        fi
        if [ $arch = sm_107a ]; then
          cases+=("arch=$arch,fmt=$fmt,cg=2,tile_n=128,breuse=1,m=520,n=256,k=$k,epi=swiglu,clusters=1")
          cases+=("arch=$arch,fmt=$fmt,cg=2,tile_n=192,breuse=1,m=700,n=200,k=$kr,epi=add,out=f32")
        fi
      done
    done
    : "${seeds:=2}"
  fi
fi
: "${seeds:=1}"

fail=0
n=0
for c in "${cases[@]}"; do
  n=$((n + 1))
  dir="$work/case$n"
  mkdir -p "$dir"
  if ! name=$("$fmodel" gen "$c" "$dir/kernel.cu"); then
    echo "FAIL gen $c"; fail=$((fail + 1)); continue
  fi
  if ! "$cxx" -std=c++17 -O1 -fPIC -shared -w -Wno-psabi -I"$root/tests/fmodel/shim" -I"$root/kernel_src" \
      -DFM_KERNEL_SOURCE="\"$dir/kernel.cu\"" -DFM_KERNEL_NAME="$name" \
      "$root/tests/fmodel/fm_kernel.cpp" -o "$dir/kernel.so" 2>"$dir/compile.log"; then
    echo "FAIL compile $c (see $dir/compile.log)"; head -20 "$dir/compile.log"
    fail=$((fail + 1)); continue
  fi
  for s in $(seq 1 "$seeds"); do
    start=$(date +%s%N)
    # Seeds past the first also switch threads more often, which perturbs the interleaving.
    y=0.05; [ "$s" -gt 1 ] && y=0.$((s * 3 % 10))
    if out=$("$fmodel" run "$c" "$dir/kernel.so" --seed "$s" --yield "$y" 2>&1); then
      printf 'ok   %-80s seed %d  %d ms\n' "$c" "$s" $((($(date +%s%N) - start) / 1000000))
    else
      echo "FAIL $c seed $s"
      echo "$out" | head -30
      fail=$((fail + 1))
    fi
  done
done
# Negative controls (with --quick, or --controls): kernels with one known defect each, made by
# editing a copy of kernel_src/tcgen05/device; the model must reject every one. They show that
# a passing case means something: a wrong operand layout gives wrong numbers, and a missing
# synchronisation gives a hazard or a deadlock even when the numbers come out right.
control() { # NAME FILE SED-EXPRESSION CASE
  local name=$1 file=$2 expr=$3 c=$4 dir="$work/control-$1"
  rm -rf "$dir"; mkdir -p "$dir/tcgen05"
  cp -r "$root/kernel_src/tcgen05/device" "$dir/tcgen05/"
  sed -i "$expr" "$dir/tcgen05/device/$file"
  if cmp -s "$root/kernel_src/tcgen05/device/$file" "$dir/tcgen05/device/$file"; then
    echo "FAIL control $name: the edit no longer applies to $file"; fail=$((fail + 1)); return
  fi
  local kname
  kname=$("$fmodel" gen "$c" "$dir/kernel.cu") &&
  "$cxx" -std=c++17 -O1 -fPIC -shared -w -Wno-psabi -I"$root/tests/fmodel/shim" -I"$dir" \
    -I"$root/kernel_src" -DFM_KERNEL_SOURCE="\"$dir/kernel.cu\"" -DFM_KERNEL_NAME="$kname" \
    "$root/tests/fmodel/fm_kernel.cpp" -o "$dir/kernel.so" 2>"$dir/compile.log" || {
    echo "FAIL control $name: does not build"; fail=$((fail + 1)); return; }
  local out
  if out=$("$fmodel" run "$c" "$dir/kernel.so" --seed 1 2>&1); then
    echo "FAIL control $name: the model accepted a broken kernel"; fail=$((fail + 1))
  else
    printf 'ok   control %-22s rejected: %s\n' "$name" "$(echo "$out" | grep -m1 -E 'HAZARD|DEADLOCK|ERROR|FAIL')"
  fi
}
if [ $quick = 1 ] || [ $controls = 1 ]; then
  cc="arch=sm_100a,fmt=mxfp8,cg=1,tile_n=128,m=520,n=256,k=256"
  control no-proxy-fence epilogue.cuh 's/sm100::fence_proxy_async();/(void)0;/' "$cc"
  control c-stage-reuse epilogue.cuh 's/bulk_wait_read<P::C_STAGES - 1>/bulk_wait_read<P::C_STAGES>/' "$cc"
  control no-full-wait mma.cuh 's/mbar::wait(c.smem + P::OFF_FULL + 8 \* s, (it \/ P::STAGES) \& 1);/(void)0;/' "$cc"
  control no-acc-empty-wait mma.cuh '/mbar::wait_cluster(c.smem + P::OFF_ACC_EMPTY + 8 \* (tile % P::ACC_STAGES),/{N;s/.*/                (void)0;/}' "$cc"
  control sf-id-dropped mma.cuh 's/(sf_id(K) << 30)/0u/g' "$cc"
  control c-unswizzled epilogue.cuh 's/return lin ^ (((lin >> 7) \& P::C_SWIZZLE_MASK) << 4);/return lin;/' "$cc"
  control empty-parity producer.cuh 's/((it \/ P::STAGES) \& 1) ^ 1);/(it \/ P::STAGES) \& 1);/' "$cc"
  # Overlapping accumulator stages drained forwards: the early release hands back columns the
  # epilogue has not read yet.
  control forward-drain epilogue.cuh 's/sub = as == 0 ? P::EPI_SUBTILES - 1 - j : j;/sub = j;/' \
    "arch=sm_100a,fmt=nvfp4,cg=2,tile_n=256,m=300,n=768,k=544,epi=add,clusters=1"
  # The last CTA no longer resets the work counter: the next launch finds no work.
  control no-tail-reset kernel.cuh 's/v->work_counter = 0;/(void)0;/' "$cc,launches=2"
  # sm_107a operands past 256 KiB with sm_100's 14-bit start field: the address wraps.
  control desc-field-14-bits mma.cuh 's/(u64)((addr >> 4) \& P::DESC_ADDR_MASK)/(u64)((addr >> 4) \& 0x3FFFu)/' \
    "arch=sm_107a,fmt=nvfp4,cg=2,tile_n=128,m=520,n=256,k=800,clusters=1"
fi

echo "fmodel.sh: $n cases, $fail failures"
[ $fail = 0 ]
