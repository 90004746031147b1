/*
 * jitgemm generated kernel: grouped FP8 E4M3 x E4M3 GEMM with FP32 row scales, BF16 out.
 * Family fp8_grouped_wgmma: one launch for every expert, rows per expert read on the device.
 *
 * key:    jitgemm key=5 family=fp8_grouped_wgmma device=xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx arch=sm_90a target=sm_90a fallback=0 band=5 n=4096 k=7168 a=e4m3 b=e4m3 out=bf16 scales=row epilogue=linear tile=128x160x128 stages=5 threads=384 cluster=1x1 fallback_cluster=0x0 groups=8 layout=contiguous route=tiles group_m=8 regs=40/232 code=a3b22353e6ffdb4589dddf5e7c67826f
 * hash:   kkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkk
 * target: sm_90a
 *
 * plan:
 *   arch sm_90a, sm_count 132, token band 5 (rows per expert)
 *   8 experts, contiguous layout, n 4096, k 7168, epilogue linear
 *   tile 128 rows of one expert x 160 B rows x 128 K bytes, 5 stages, FP32-promoted (in 2 column parts)
 *   384 threads: producer + 3 store warps (40 registers), 2 consumer warpgroups (232); dynamic shared memory 229712 bytes
 *   model: least mean slowdown over 8 experts x {2048, 4096, 8192} rows: grouped_tiles 128x160, mean 1.001x, within 1.002x of the modelled best
 */

#include "fp8_grouped_wgmma/device/kernel.cuh"

typedef GroupedTileCfg<128, 160, 5, 4096, 7168, 8, GROUPED_CONTIGUOUS, GROUPED_EPI_LINEAR, 8, 40, 232> Cfg;
typedef GroupedTileKernel<Cfg> Kernel;
static_assert(Kernel::SMEM_BYTES == 229712, "the plan's shared memory");
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
