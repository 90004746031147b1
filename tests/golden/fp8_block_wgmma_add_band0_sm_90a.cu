/*
 * jitgemm generated kernel: FP8 E4M3 x E4M3 GEMM with FP32 scales per 1x128 group of A and
 * per 128x128 block of B, BF16 out.
 * Family fp8_block_wgmma: TMA (128B swizzle) -> mbarrier ring -> wgmma m64nNk32 -> scaled FP32
 * promotion every 128 K -> epilogue.
 *
 * key:    jitgemm key=5 family=fp8_block_wgmma device=xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx arch=sm_90a target=sm_90a fallback=0 band=0 n=7168 k=16384 a=e4m3 b=e4m3 out=bf16 scales=128x128 epilogue=linear_add tile=16x128x128 stages=6 threads=384 cluster=1x1 fallback_cluster=0x0 scale_type=f32 route=decode regs=40/232 ksub=2 split=2 code=ed284a02d0ae05e7b651a91f48750e84
 * hash:   kkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkk
 * target: sm_90a
 *
 * plan:
 *   arch sm_90a, sm_count 132, token band 0
 *   n 7168, k 16384, epilogue linear_add
 *   decode route: weights on wgmma's M side, 128 weight rows x 16 tokens per unit, K split 2 ways
 *   with a fixed-order reduction, 2 x 128 K bytes per stage, 6 stages; each 128-K block promoted to FP32
 *   times SFB[row block] x SFA[token], the scales read one block ahead
 *   384 threads: 1 producer warpgroup (40 registers), 2 consumer warpgroups (232)
 *   dynamic shared memory 222320 bytes; one CTA per (token tile, weight tile, k-split) unit
 *   model: least mean slowdown over M in {1, 4, 16}: block_decode_s2 16x128, mean 1.000x, within 1.000x of the modelled best
 */

#include "fp8_block_wgmma/device/decode_kernel.cuh"

struct Plan {
    enum : int {
        BW = 128, TOK = 16, STAGES = 6, N = 7168, K = 16384,
        EPILOGUE = BSW_EPI_LINEAR_ADD, SPLIT = 2, KSUB = 2, PRODUCER_REGS = 40,
        CONSUMER_REGS = 232
    };
};
typedef BswDecodeKernel<Plan> Kernel;
static_assert(Kernel::SMEM_BYTES == 222320, "the plan's shared memory");
static_assert(Kernel::THREADS == 384, "the plan's threads");
static_assert(__INTADDR__(&((BswParams *)0)->tmap_b) == 128, "abi.h");
static_assert(__INTADDR__(&((BswParams *)0)->sfa) == 256, "abi.h");
static_assert(__INTADDR__(&((BswParams *)0)->sfb) == 264, "abi.h");
static_assert(__INTADDR__(&((BswParams *)0)->workspace) == 288, "abi.h");
static_assert(__INTADDR__(&((BswParams *)0)->m) == 304, "abi.h");
static_assert(__INTADDR__(&((BswParams *)0)->sfa_stride_m) == 328, "abi.h");
static_assert(__INTADDR__(&((BswParams *)0)->sfa_stride_k) == 336, "abi.h");
static_assert(__INTADDR__(&((BswParams *)0)->alpha) == 344, "abi.h");
static_assert(sizeof(BswParams) == 384, "abi.h");

extern "C" __global__ void __launch_bounds__(Kernel::THREADS, 1)
jitgemm_fp8_block_wgmma(const __grid_constant__ BswParams p) {
    extern __shared__ __align__(1024) unsigned char smem[];
    Kernel::run(p, smem);
}
