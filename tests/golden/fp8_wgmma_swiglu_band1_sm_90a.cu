/*
 * jitgemm generated kernel: FP8 E4M3 x E4M3 GEMM with FP32 row scales, BF16 out.
 * Family fp8_wgmma: TMA (128B swizzle) -> mbarrier ring -> wgmma m64nNk32 -> epilogue.
 *
 * key:    jitgemm key=5 family=fp8_wgmma device=xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx arch=sm_90a target=sm_90a fallback=0 band=1 n=27648 k=5120 a=e4m3 b=e4m3 out=bf16 scales=row epilogue=linear_swiglu tile=64x128x128 stages=6 threads=384 cluster=1x1 fallback_cluster=0x0 route=decode promote=1 group_m=8 regs=40/232 ksub=1 split=1 code=d3c4ea3f63a93cfb5f3521f1ca1c97e0
 * hash:   kkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkk
 * target: sm_90a
 *
 * plan:
 *   arch sm_90a, sm_count 132, token band 1
 *   n 27648, k 5120, epilogue linear_swiglu
 *   decode route: weights on wgmma's M side, 128 weight rows x 64 tokens per unit, K split 1 ways, 1 x 128 K bytes per stage
 *   CTA tile 64 tokens x 128 B rows x 128 K bytes, 6 stages, FP32-promoted accumulation
 *   384 threads: 1 producer warpgroup (40 registers), 2 consumer warpgroups (232)
 *   dynamic shared memory 182384 bytes; one CTA per (token tile, weight tile, k-split) unit
 *   model: least mean slowdown over M in {17, 32, 64}: wgmma_decode_s1 64x128, mean 1.000x, within 1.000x of the modelled best
 *   SwiGLU pairing: B row 2j is gate_j, row 2j+1 is up_j; output column j
 */

#include "fp8_wgmma/device/decode.cuh"

typedef Fp8WgmmaDecodeKernel<128, 64, 6, 27648, 5120, FP8WD_EPI_LINEAR_SWIGLU, 1, 1> Kernel;
static_assert(Kernel::SMEM_BYTES == 182384, "the plan's shared memory");
static_assert(Kernel::THREADS == 384, "the plan's threads");

extern "C" __global__ void __launch_bounds__(Kernel::THREADS, 1)
jitgemm_fp8_wgmma(const __grid_constant__ Fp8WgmmaDecodeParams p) {
    Kernel::run(p);
}
