/*
 * Host side of the tcgen05 kernel: the parameter block (abi.h) filled for a call, the TMA tensor
 * maps (cuTensorMapEncodeTiled through the driver table), the device workspace of the mixed-cluster
 * scheduler and the launch configuration (preferred + fallback cluster attributes in one
 * cuLaunchKernelEx, grid sized by floor division from occupancy).
 *
 * No Blackwell or Rubin GPU exists where this was written: everything here is built and checked
 * statically (tests/test_tcgen05_codegen.c drives it with a recording driver table); it has never
 * launched a kernel.
 *
 * Tensor-map geometry lives here and nowhere else: the generator asks the same functions for
 * the K coordinate units and box shapes, so the kernel's coordinates and the host's maps cannot
 * drift apart.
 */
#ifndef JIT_TCGEN05_LAUNCH_H
#define JIT_TCGEN05_LAUNCH_H

#include <cuda.h>
#include <stddef.h>
#include <stdint.h>

#include "abi.h"
#include "diag.h"
#include "driver.h"
#include "family.h"
#include "tcgen05.h"

/* Workspace bytes for `token_slots` fallback clusters: three counters, padding, the slots. The
 * kernel's last CTA resets it, so it is zeroed once when allocated and never again. */
size_t jit__tc_workspace_bytes(uint32_t token_slots);

/* Which tensor map. */
typedef enum jit__tc_map {
    JIT_TC_MAP_A = 0,
    JIT_TC_MAP_B = 1,
    JIT_TC_MAP_SFA = 2,
    JIT_TC_MAP_SFB = 3,
    JIT_TC_MAP_D = 4,
} jit__tc_map_t;

/* Everything cuTensorMapEncodeTiled is given, except the address. */
typedef struct jit__tc_tma_geom {
    CUtensorMapDataType dtype;
    uint32_t rank;
    uint64_t dims[3];    /* elements, innermost first */
    uint64_t strides[2]; /* bytes, of dims 1 and 2 */
    uint32_t box[3];
    CUtensorMapSwizzle swizzle;
    uint32_t box_smem_bytes; /* what one box fills in SMEM */
} jit__tc_tma_geom_t;

/* The problem-dependent inputs of the maps. Strides in elements, 0 = packed. */
typedef struct jit__tc_shape {
    int64_t m, n, k;
    int64_t lda, ldb, ldd;
} jit__tc_shape_t;

/* Geometry of one map; `fallback` selects the fallback cluster's multicast split (A, B).
 * JIT_MISALIGNED when a stride or extent breaks a TMA rule (16-byte strides, 32-byte strides
 * and K % 128 for the unpacked FP4 type). */
jit_status_t jit__tc_tma_geom(const jit__plan_t *plan, jit__tc_map_t which, int fallback,
                              const jit__tc_shape_t *shape, jit__tc_tma_geom_t *out,
                              jit__diag_t *d);

/* Coordinate units along K that the kernel adds per K tile for operand A or B (bytes for the
 * UINT8 maps, elements for the unpacked FP4 type). */
int jit__tc_tma_k_per_tile(const jit__plan_t *plan, const jit__tc_operand_t *op);

/* Rows of one multicast slice of A (which = JIT_TC_MAP_A) or B for the preferred (fallback 0)
 * or fallback cluster: the CTA's rows divided among the CTAs that share them. */
int jit__tc_slice_rows(const jit__plan_t *plan, jit__tc_map_t which, int fallback);

/* The output columns one epilogue sub-tile writes, its bytes per row, the TMA-store box width
 * in bytes (at most 128, the swizzle span) and the swizzle span itself (32, 64 or 128). */
typedef struct jit__tc_c_layout {
    int out_cols;       /* per sub-tile */
    int out_bytes;      /* 2 or 4 */
    uint32_t row_bytes; /* out_cols * out_bytes */
    uint32_t box_bytes; /* min(row_bytes, 128) */
    int boxes;          /* row_bytes / box_bytes */
} jit__tc_c_layout_t;
jit_status_t jit__tc_c_layout(const jit__plan_t *plan, jit__tc_c_layout_t *out, jit__diag_t *d);

/* Fill the parameter block: encode all seven maps with drv->cuTensorMapEncodeTiled. The
 * fallback A/B maps are copies of the preferred ones when the plan has no fallback shape. */
jit_status_t jit__tc_params_build(const jit__driver_t *drv, const jit__plan_t *plan,
                                  const jit__tc_shape_t *shape, const jit_operands_t *ops,
                                  float alpha, int64_t ld_residual, void *workspace,
                                  uint32_t token_slots, jit__tc_params_t *out, jit__diag_t *d);

/* The launch: grid (cluster_m, cluster_n, z), the plan's threads and SMEM, and the cluster
 * attributes: without a fallback shape one CLUSTER_DIMENSION; with one, CLUSTER_DIMENSION is
 * the fallback (regular) shape and PREFERRED_CLUSTER_DIMENSION the preferred shape, which the
 * driver requires to be a multiple of it. `attrs` must hold 2 entries. */
typedef struct jit__tc_launch_dims {
    unsigned grid[3];
    unsigned cluster[3];           /* the regular (fallback, or only) cluster shape */
    unsigned preferred_cluster[3]; /* 0 when there is no fallback */
    int split_factor;              /* preferred CTAs / fallback CTAs */
    uint32_t token_slots;          /* fallback clusters the grid can hold */
} jit__tc_launch_dims_t;

/* Size the grid from occupancy: preferred = max active preferred clusters, capacity = max active
 * fallback clusters x their size; z = capacity CTAs / preferred cluster size, floor division
 * (ceil would ask for a second, partial wave). The fallback clusters the hardware may form come
 * from preferred-sized grid regions, `split_factor` at a time, so their count is a whole number
 * of groups by construction; jit__tc_check_fallback_groups guards the figure anyway. Pure. */
jit_status_t jit__tc_launch_dims(const jit__plan_t *plan, int max_preferred_clusters,
                                 int max_fallback_clusters, jit__tc_launch_dims_t *out,
                                 jit__diag_t *d);

/* Ask the driver for the two occupancies (cuOccupancyMaxActiveClusters) and size the launch. */
jit_status_t jit__tc_launch_dims_query(const jit__driver_t *drv, CUfunction fn,
                                       const jit__plan_t *plan, CUstream stream,
                                       jit__tc_launch_dims_t *out, jit__diag_t *d);

void jit__tc_launch_config(const jit__plan_t *plan, const jit__tc_launch_dims_t *dims,
                           CUstream stream, CUlaunchConfig *cfg, CUlaunchAttribute attrs[2]);

/* cuLaunchKernelEx with the parameter block as the only argument. */
jit_status_t jit__tc_launch_kernel(const jit__driver_t *drv, CUfunction fn, const jit__plan_t *plan,
                                   const jit__tc_launch_dims_t *dims,
                                   const jit__tc_params_t *params, CUstream stream, jit__diag_t *d);

/* The family's hooks (jit__family_t's prepare, launch and release): the launch state made once
 * per loaded kernel, one call's parameters and launch, and freeing the state. */
jit_status_t jit__tc_prepare(const jit__driver_t *drv, CUfunction fn, const jit__plan_t *plan,
                             void **state, jit__diag_t *d);
jit_status_t jit__tc_launch(const jit__driver_t *drv, CUfunction fn, const jit__plan_t *plan,
                            void *state, const jit__launch_args_t *a, jit__diag_t *d);
void jit__tc_release(const jit__driver_t *drv, void *state);

#endif
