/*
 * jitgemm generated kernel: FP8 E4M3 x E4M3 GEMM with FP32 scales per 1x128 group of A and
 * per 128x128 block of B, BF16 out.
 * Family fp8_block_wgmma: TMA (128B swizzle) -> mbarrier ring -> wgmma m64nNk32 -> scaled FP32
 * promotion every 128 K -> epilogue.
 *
 * key:    jitgemm key=5 family=fp8_block_wgmma device=xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx arch=sm_90a target=sm_90a fallback=0 band=5 n=7168 k=16384 a=e4m3 b=e4m3 out=bf16 scales=128x128 epilogue=linear tile=128x128x128 stages=5 threads=384 cluster=1x1 fallback_cluster=0x0 scale_type=f32 route=tiles regs=40/232 group_m=8 store_warps=1 code=03e151148d657cad75db1af1231702fd
 * hash:   kkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkk
 * target: sm_90a
 *
 * plan:
 *   arch sm_90a, sm_count 132, token band 5
 *   n 7168, k 16384, epilogue linear
 *   CTA tile 128 tokens x 128 B rows x 128 K bytes, 5 stages; each 128-K block promoted to FP32
 *   in 2 column halves, times SFA[row] x SFB[column block], the scales read one block ahead
 *   384 threads: 1 producer warpgroup (40 registers), 2 consumer warpgroups (232)
 *   epilogue stores: the producer warpgroup's 3 store warps, from the whole tile staged in shared memory
 *   dynamic shared memory 202416 bytes; persistent grid, raster groups of 8 m-groups; clusters of 1 CTA
 *   model: least mean slowdown over M in {2048, 4096, 8192}: block_tma 128x128, mean 1.017x, within 1.025x of the modelled best
 */

#include "fp8_block_wgmma/device/kernel.cuh"

struct Plan {
    enum : int {
        BM = 128, BN = 128, STAGES = 5, N = 7168, K = 16384,
        EPILOGUE = BSW_EPI_LINEAR, GROUP_M = 8, PRODUCER_REGS = 40, CONSUMER_REGS = 232,
        CLUSTER = 1, STORE_WARPS = 1
    };
};
typedef BswTileKernel<Plan> Kernel;
static_assert(Kernel::SMEM_BYTES == 202416, "the plan's shared memory");
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
