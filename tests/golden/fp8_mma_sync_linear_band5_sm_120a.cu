/*
 * jitgemm generated kernel: FP8 E4M3 x E4M3 GEMM with FP32 row scales, BF16 out.
 * Family fp8_mma_sync: cp.async -> shared ring -> ldmatrix.x4 -> mma.sync.m16n8k32 (FP32) -> epilogue.
 *
 * key:    jitgemm key=5 family=fp8_mma_sync device=xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx arch=sm_120a target=sm_120a fallback=0 band=5 n=5120 k=17408 a=e4m3 b=e4m3 out=bf16 scales=row epilogue=linear tile=128x128x128 stages=2 threads=256 cluster=1x1 fallback_cluster=0x0 warps=2x4 code=c259c3063214be367925be4cef0e2296
 * hash:   kkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkk
 * target: sm_120a
 *
 * plan:
 *   arch sm_120a, sm_count 170, token band 5
 *   n 5120, k 17408, epilogue linear
 *   CTA tile 128 tokens x 128 B rows x 128 K bytes, 2 stages
 *   warps 2 x 4 (256 threads), warp tile 64 x 32
 *   dynamic shared memory 65536 bytes
 *   grid x: ceil(5120 / 128) B-row tiles, grid y: ceil(m / 128) token tiles
 */

#include "fp8_mma_sync/device/kernel.cuh"

typedef MmaSyncKernel<5120LL, 17408LL, 128, 128, 128, 2, 2, 4, MMA_SYNC_LINEAR> Kernel;
static_assert(Kernel::SMEM_BYTES == 65536, "the plan's shared memory");
static_assert(Kernel::THREADS == 256, "the plan's threads");

extern "C" __global__ void __launch_bounds__(Kernel::THREADS)
jitgemm_fp8_mma_sync(const jitgemm_mma_sync_params p) {
    extern __shared__ __align__(1024) u8 smem[];
    Kernel::run(p, smem);
}
