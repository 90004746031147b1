/*
 * jitgemm generated kernel: FP8 E4M3 x E4M3 GEMM with FP32 row scales, BF16 out.
 * Family fp8_wgmma: TMA (128B swizzle) -> mbarrier ring -> wgmma m64nNk32 -> epilogue.
 *
 * key:    jitgemm key=5 family=fp8_wgmma device=xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx arch=sm_90a target=sm_90a fallback=0 band=5 n=5120 k=17408 a=e4m3 b=e4m3 out=bf16 scales=row epilogue=linear tile=128x160x128 stages=5 threads=384 cluster=1x1 fallback_cluster=0x0 route=tiles promote=3 group_m=8 regs=40/232 store_warps=1 code=0623e95e933668166e07a7886aeded41
 * hash:   kkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkk
 * target: sm_90a
 *
 * plan:
 *   arch sm_90a, sm_count 132, token band 5
 *   n 5120, k 17408, epilogue linear
 *   CTA tile 128 tokens x 160 B rows x 128 K bytes, 5 stages, FP32-promoted (in 2 column parts) accumulation
 *   384 threads: 1 producer warpgroup (40 registers), 2 consumer warpgroups (232)
 *   epilogue stores: the producer warpgroup's 3 store warps, from the whole tile staged in shared memory
 *   dynamic shared memory 229608 bytes; persistent grid, raster groups of 8 m-groups; clusters of 1 CTA
 *   model: least mean slowdown over M in {2048, 4096, 8192}: wgmma_tma 128x160, mean 1.000x, within 1.000x of the modelled best
 */

#include "fp8_wgmma/device/kernel.cuh"

typedef Fp8WgmmaKernel<128, 160, 5, 5120, 17408, FP8W_EPI_LINEAR, 3, 8, 40, 232, 1, 1> Kernel;
static_assert(Kernel::SMEM_BYTES == 229608, "the plan's shared memory");
static_assert(Kernel::THREADS == 384, "the plan's threads");

extern "C" __global__ void __launch_bounds__(Kernel::THREADS, 1)
jitgemm_fp8_wgmma(const __grid_constant__ Fp8WgmmaParams p) {
    Kernel::run(p);
}
