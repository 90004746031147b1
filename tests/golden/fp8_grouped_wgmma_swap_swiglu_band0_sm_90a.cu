/*
 * jitgemm generated kernel: grouped FP8 E4M3 x E4M3 GEMM with FP32 row scales, BF16 out.
 * Family fp8_grouped_wgmma: one launch for every expert, rows per expert read on the device.
 *
 * key:    jitgemm key=5 family=fp8_grouped_wgmma device=xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx arch=sm_90a target=sm_90a fallback=0 band=0 n=4096 k=7168 a=e4m3 b=e4m3 out=bf16 scales=row epilogue=linear_swiglu tile=16x128x128 stages=8 threads=384 cluster=1x1 fallback_cluster=0x0 groups=256 layout=masked route=swap group_m=8 regs=40/232 code=1293e0f056f900006b08dc2f78869c21
 * hash:   kkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkk
 * target: sm_90a
 *
 * plan:
 *   arch sm_90a, sm_count 132, token band 0 (rows per expert)
 *   256 experts, masked layout, n 4096, k 7168, epilogue linear_swiglu
 *   swap AB: 128 weight rows x a token tile of up to 16 rows of one expert, wgmma N chosen per tile from 8..16, 8 stages, FP32-promoted
 *   384 threads: producer (40 registers), 2 consumer warpgroups (232); dynamic shared memory 160136 bytes
 *   model: least mean slowdown over 256 experts x {1, 4, 16} rows: grouped_tiles 128x128, mean 1.000x, within 1.000x of the modelled best
 *   SwiGLU pairing: B row 2j is gate_j, row 2j+1 is up_j; output column j
 */

#include "fp8_grouped_wgmma/device/swap_kernel.cuh"

typedef GroupedSwapCfg<16, 8, 4096, 7168, 256, GROUPED_MASKED, GROUPED_EPI_SWIGLU, 8, 40, 232> Cfg;
typedef GroupedSwapKernel<Cfg> Kernel;
static_assert(Kernel::SMEM_BYTES == 160136, "the plan's shared memory");
static_assert(Kernel::THREADS == 384, "the plan's threads");
static_assert(__INTADDR__(&((GroupedParams *)0)->tmap_b) == 128, "abi.h");
static_assert(__INTADDR__(&((GroupedParams *)0)->sa) == 256, "abi.h");
static_assert(__INTADDR__(&((GroupedParams *)0)->d) == 272, "abi.h");
static_assert(__INTADDR__(&((GroupedParams *)0)->rows) == 280, "abi.h");
static_assert(__INTADDR__(&((GroupedParams *)0)->m) == 288, "abi.h");
static_assert(__INTADDR__(&((GroupedParams *)0)->ldd) == 296, "abi.h");
static_assert(__INTADDR__(&((GroupedParams *)0)->alpha) == 304, "abi.h");
static_assert(sizeof(GroupedParams) == 320, "abi.h");

extern "C" __global__ void __launch_bounds__(Kernel::THREADS, 1)
jitgemm_fp8_grouped_wgmma(const __grid_constant__ GroupedParams p) {
    Kernel::run(p);
}
