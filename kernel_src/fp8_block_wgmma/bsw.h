/*
 * The FP8 block-scaled wgmma family (sm_90a): E4M3 x E4M3 with FP32 scales per 1x128 group of
 * A and per 128x128 block of B (scale mode "128x128"). TMA loads A and B into an
 * mbarrier-guarded shared-memory ring, two consumer warpgroups issue wgmma and add each 128-K
 * block's partial sums into FP32 registers multiplied by that block's scales, on a persistent
 * grid in grouped raster order, with the three epilogues. The kernel is
 * kernel_src/fp8_block_wgmma/device/kernel.cuh; docs/kernels-fp8-block-wgmma.md describes it
 * and its cost model. Internal prefix: jit__bsw_ (block-scaled wgmma).
 */
#ifndef JIT_FP8_BLOCK_WGMMA_H
#define JIT_FP8_BLOCK_WGMMA_H

#include <stddef.h>

#include "abi.h"
#include "families.h"

/* M values the cost model weighs for a band. */
#define JIT_BSW_BAND_SAMPLES 3
/* Shared memory per CTA the kernels may use (sm_90a's opt-in maximum, 227 KiB). */
#define JIT_BSW_SMEM_LIMIT 232448u

typedef enum jit__bsw_route {
    JIT_BSW_TILES = 0,  /* BswTileKernel: tiles of 128 tokens x BN weight rows */
    JIT_BSW_DECODE = 1, /* BswDecodeKernel: swap AB, split K, for M <= 64 */
} jit__bsw_route_t;

/* The plan's payload: the numbers the generator writes into the kernel's plan struct. */
typedef struct jit__bsw_plan {
    jit__bsw_route_t route;
    int bm, bn;        /* tokens x B rows per tile (decode: TOK x BW) */
    int stages;        /* TMA ring depth */
    int cluster;       /* CTAs per cluster (1 or 2); with 2, B tiles are multicast */
    int group_m;       /* m-groups per raster group */
    int producer_regs; /* setmaxnreg budgets */
    int consumer_regs;
    int store_warps; /* the producer warpgroup's spare warps write D (not linear_add) */
    int ksub;        /* decode: 128-K blocks per stage */
    int split;       /* decode: k-splits per tile (1: no workspace) */
} jit__bsw_plan_t;

_Static_assert(sizeof(jit__bsw_plan_t) <= JIT_PLAN_PAYLOAD_BYTES, "block wgmma payload");

static inline jit__bsw_plan_t *jit__bsw_of(jit__plan_t *plan) {
    return (jit__bsw_plan_t *)(void *)plan->payload.bytes;
}
static inline const jit__bsw_plan_t *jit__bsw_cof(const jit__plan_t *plan) {
    return (const jit__bsw_plan_t *)(const void *)plan->payload.bytes;
}

/* Dynamic shared memory of a tile configuration, as device/params.cuh lays it out (the
 * generated source asserts that the template computes the same). */
uint32_t jit__bsw_smem_bytes(int bm, int bn, int stages, jit_epilogue_t epilogue, int store_warps);

/* The candidates of the plan's band with their modelled times, and the choice (plan.c). */
jit_status_t jit__bsw_plan(jit__plan_t *plan, jit__diag_t *d);
/* Make candidate `index` of the plan's list its kernel (JITGEMM_FORCE_CANDIDATE). */
jit_status_t jit__bsw_replan(jit__plan_t *plan, int index, jit__diag_t *d);

/* CTAs of a launch for M tokens: one per work unit (a cluster's m-tiles of one n-tile), at
 * most one per SM and, for clusters, at most `max_clusters` clusters (0: not known). */
unsigned jit__bsw_grid(const jit__plan_t *plan, int64_t m, int max_clusters);

/* ---- the decode route (decode.c) ---- */

/* Dynamic shared memory of a decode configuration, as device/decode_tile.cuh lays it out. */
uint32_t jit__bsw_decode_smem_bytes(int bw, int tok, int stages, int ksub, int split);

/* Add the decode candidates of the plan's band (bands 0 and 1 only) with their modelled times at
 * each sample M in t[candidate][sample]; returns how many were added. */
int jit__bsw_decode_candidates(jit__plan_t *plan, const int64_t *ms, int n_ms,
                               double t[][JIT_BSW_BAND_SAMPLES]);

/* Make a decode candidate the plan's kernel (its route name carries the split); 0 if the
 * candidate is not a decode one. Sets the payload and smem_bytes. */
int jit__bsw_decode_apply(jit__plan_t *plan, const jit__plan_candidate_t *c);

/* CTAs of a decode launch for M tokens: one per unit (token tile x weight tile x k-split). */
unsigned jit__bsw_decode_grid(const jit__plan_t *plan, int64_t m);

/* Decode with split K: the partials' workspace and the per-tile counters for up to M tokens
 * (0 for the tile route and for SPLIT 1). */
size_t jit__bsw_decode_workspace_bytes(const jit__plan_t *plan, int64_t m);
size_t jit__bsw_decode_counter_bytes(const jit__plan_t *plan, int64_t m);

/* The source of a plan of this family (generate.c). */
jit_status_t jit__gen_fp8_block_wgmma(const jit__plan_t *plan, const jit__key_t *key, char **source,
                                      jit__diag_t *d);

/* Launch state and launch (launch.c). */
jit_status_t jit__bsw_prepare(const jit__driver_t *drv, CUfunction fn, const jit__plan_t *plan,
                              void **state, jit__diag_t *d);
jit_status_t jit__bsw_launch(const jit__driver_t *drv, CUfunction fn, const jit__plan_t *plan,
                             void *state, const jit__launch_args_t *args, jit__diag_t *d);
void jit__bsw_release(const jit__driver_t *drv, void *state);

/* The kernel's parameter block for one call, with the tensor maps already encoded. */
void jit__bsw_params(const jit__launch_args_t *a, const jit__bsw_tmap_t *ta,
                     const jit__bsw_tmap_t *tb, jit__bsw_params_t *out);

#endif
