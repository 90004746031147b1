/*
 * jitgemm generated kernel: BF16 -> E4M3 activation quantizer with one FP32 scale per 1x128
 * group (the A operand of the 128x128 block-scaled GEMM).
 * Family quant_fp8_1x128: a half-warp per group, 16-byte loads, amax by shuffles,
 * scale = amax / 448, q = e4m3(x / scale).
 *
 * key:    jitgemm key=5 family=quant_fp8_1x128 device=xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx arch=sm_90a target=sm_90a fallback=0 band=4 n=0 k=7184 a=bf16 b=none out=e4m3 scales=128x128 epilogue=quantize_fp8_1x128 tile=1x1x128 stages=1 threads=256 cluster=1x1 fallback_cluster=0x0 scale_type=f32 unroll=2 min_blocks=4 code=aee49ca95d7028715784c599c7f07ea9
 * hash:   kkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkk
 * target: sm_90a
 *
 * plan:
 *   arch sm_90a, sm_count 132, token band 4
 *   k 7184: 57 groups per row
 *   256 threads per CTA, 2 groups in flight per half-warp, grid-stride over M x 57 groups,
 *   at most 4 CTAs per SM
 */

#include "quant_fp8_1x128/device/kernel.cuh"

struct Plan {
    enum : int { K = 7184, THREADS = 256, UNROLL = 2, MIN_BLOCKS = 4 };
};
typedef QuantKernel<Plan> Kernel;
static_assert(Kernel::GROUPS == 57, "the plan's groups per row");
static_assert(__INTADDR__(&((QuantParams *)0)->q) == 8, "abi.h");
static_assert(__INTADDR__(&((QuantParams *)0)->sfa) == 16, "abi.h");
static_assert(__INTADDR__(&((QuantParams *)0)->m) == 24, "abi.h");
static_assert(__INTADDR__(&((QuantParams *)0)->ldx) == 32, "abi.h");
static_assert(__INTADDR__(&((QuantParams *)0)->ldq) == 40, "abi.h");
static_assert(__INTADDR__(&((QuantParams *)0)->sfa_stride_m) == 48, "abi.h");
static_assert(__INTADDR__(&((QuantParams *)0)->sfa_stride_k) == 56, "abi.h");
static_assert(__INTADDR__(&((QuantParams *)0)->pow2_scales) == 64, "abi.h");
static_assert(sizeof(QuantParams) == 96, "abi.h");

extern "C" __global__ void __launch_bounds__(Plan::THREADS, Plan::MIN_BLOCKS)
jitgemm_quant_fp8_1x128(const QuantParams p) {
    Kernel::run(p);
}
