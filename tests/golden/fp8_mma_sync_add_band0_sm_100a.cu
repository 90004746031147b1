/*
 * jitgemm generated kernel: FP8 E4M3 x E4M3 GEMM with FP32 row scales, BF16 out.
 * Family fp8_mma_sync: cp.async -> shared ring -> ldmatrix.x4 -> mma.sync.m16n8k32 (FP32) -> epilogue.
 *
 * key:    jitgemm key=5 family=fp8_mma_sync device=xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx arch=sm_100a target=sm_100a fallback=0 band=0 n=1001 k=1552 a=e4m3 b=e4m3 out=bf16 scales=row epilogue=linear_add tile=16x64x128 stages=4 threads=128 cluster=1x1 fallback_cluster=0x0 warps=1x4 code=b4a5033141c43d24f3d279d8b480e326
 * hash:   kkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkk
 * target: sm_100a
 *
 * plan:
 *   arch sm_100a, sm_count 148, token band 0
 *   n 1001, k 1552, epilogue linear_add
 *   CTA tile 16 tokens x 64 B rows x 128 K bytes, 4 stages
 *   warps 1 x 4 (128 threads), warp tile 16 x 16
 *   dynamic shared memory 40960 bytes
 *   grid x: ceil(1001 / 64) B-row tiles, grid y: ceil(m / 16) token tiles
 */

#include "fp8_mma_sync/device/kernel.cuh"

typedef MmaSyncKernel<1001LL, 1552LL, 16, 64, 128, 4, 1, 4, MMA_SYNC_LINEAR_ADD> Kernel;
static_assert(Kernel::SMEM_BYTES == 40960, "the plan's shared memory");
static_assert(Kernel::THREADS == 128, "the plan's threads");

extern "C" __global__ void __launch_bounds__(Kernel::THREADS)
jitgemm_fp8_mma_sync(const jitgemm_mma_sync_params p) {
    extern __shared__ __align__(1024) u8 smem[];
    Kernel::run(p, smem);
}
