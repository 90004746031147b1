/*
 * jitgemm generated kernel: FP8 E4M3 x E4M3 GEMM with FP32 row scales, BF16 out.
 * Family fp8_mma_sync: cp.async -> shared ring -> ldmatrix.x4 -> mma.sync.m16n8k32 (FP32) -> epilogue.
 *
 * key:    jitgemm key=5 family=fp8_mma_sync device=xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx arch=sm_120a target=sm_120a fallback=0 band=2 n=27648 k=5120 a=e4m3 b=e4m3 out=bf16 scales=row epilogue=linear_swiglu tile=64x128x128 stages=2 threads=256 cluster=1x1 fallback_cluster=0x0 warps=2x4 code=c3c17f185e39eafc66d67d873c6d82cf
 * hash:   kkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkk
 * target: sm_120a
 *
 * plan:
 *   arch sm_120a, sm_count 170, token band 2
 *   n 27648, k 5120, epilogue linear_swiglu
 *   CTA tile 64 tokens x 128 B rows x 128 K bytes, 2 stages
 *   warps 2 x 4 (256 threads), warp tile 32 x 32
 *   dynamic shared memory 49152 bytes
 *   grid x: ceil(27648 / 128) B-row tiles, grid y: ceil(m / 64) token tiles
 *   SwiGLU pairing: B row 2j is gate_j, row 2j+1 is up_j; output column j
 */

#include "fp8_mma_sync/device/kernel.cuh"

typedef MmaSyncKernel<27648LL, 5120LL, 64, 128, 128, 2, 2, 4, MMA_SYNC_LINEAR_SWIGLU> Kernel;
static_assert(Kernel::SMEM_BYTES == 49152, "the plan's shared memory");
static_assert(Kernel::THREADS == 256, "the plan's threads");

extern "C" __global__ void __launch_bounds__(Kernel::THREADS)
jitgemm_fp8_mma_sync(const jitgemm_mma_sync_params p) {
    extern __shared__ __align__(1024) u8 smem[];
    Kernel::run(p, smem);
}
