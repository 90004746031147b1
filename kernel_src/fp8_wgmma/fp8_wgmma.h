/*
 * The FP8 wgmma family (sm_90a): TMA loads into an mbarrier-guarded shared-memory ring,
 * wgmma.mma_async e4m3 x e4m3 issued by two consumer warpgroups, a producer warpgroup that gives
 * its registers away, a persistent grid in grouped raster order, and the row-scaled epilogues.
 * The kernel is kernel_src/fp8_wgmma/device/kernel.cuh and its roles; docs/kernels-fp8-wgmma.md
 * describes it and its cost model.
 */
#ifndef JIT_FP8_WGMMA_H
#define JIT_FP8_WGMMA_H

#include <stddef.h>

#include "abi.h"
#include "families.h"

/* M values the cost model weighs for a band (its ends and its model M; 2048, 4096 and 8192 for
 * the open band). */
#define JIT_WGMMA_BAND_SAMPLES 3

/* The family's two kernels. */
typedef enum jit__wgmma_route {
    JIT_WGMMA_TILES = 0,  /* Fp8WgmmaKernel: tiles of BM tokens x BN weight rows */
    JIT_WGMMA_DECODE = 1, /* Fp8WgmmaDecodeKernel: swap AB, split K, for M <= 64 */
} jit__wgmma_route_t;

/* The plan's payload: the template parameters of the route's kernel. */
typedef struct jit__wgmma_plan {
    jit__wgmma_route_t route;
    int bm, bn;        /* tiles: BM rows of A (tokens), BN rows of B; decode: TOK, BW */
    int stages;        /* TMA ring depth */
    int promote;       /* 0: accumulate the whole K in wgmma; 1: promote to FP32 every 128 K;
                          3: the same in two column halves (jit__wgmma_promote_mode) */
    int cluster;       /* CTAs per cluster (1 or 2); with 2, B tiles are multicast */
    int group_m;       /* m-tiles per raster group */
    int producer_regs; /* setmaxnreg budgets */
    int consumer_regs;
    int store_warps; /* tiles: the producer warpgroup's spare warps write D (not linear_add) */
    int ksub;        /* decode: 128-K blocks per stage */
    int split;       /* decode: k-splits per tile (1: no workspace) */
} jit__wgmma_plan_t;

_Static_assert(sizeof(jit__wgmma_plan_t) <= JIT_PLAN_PAYLOAD_BYTES, "wgmma payload");

static inline jit__wgmma_plan_t *jit__wgmma_of(jit__plan_t *plan) {
    return (jit__wgmma_plan_t *)(void *)plan->payload.bytes;
}
static inline const jit__wgmma_plan_t *jit__wgmma_cof(const jit__plan_t *plan) {
    return (const jit__wgmma_plan_t *)(const void *)plan->payload.bytes;
}

/* Dynamic shared memory of a configuration, as the kernel lays it out (the generated source
 * asserts that the template computes the same). The epilogue sets a tile's output columns (BN,
 * or BN / 2 for swiglu); `store_warps`: the store-warp epilogue's whole-tile staging. */
uint32_t jit__wgmma_smem_bytes(int bm, int bn, int stages, jit_epilogue_t epilogue,
                               int store_warps);

/* Whether a tile plan of this spec uses the store-warp epilogue: linear and swiglu do, unless
 * JITGEMM_WGMMA_EPILOGUE=consumers asks for the consumers' own stores (a comparison switch). */
int jit__wgmma_store_warps(const jit__gemm_spec_t *spec);

/* The tile kernel's promotion of each 128-K block: 3, in two column halves, the first added
 * while the second's wgmmas run (the default); JITGEMM_WGMMA_PROMOTE=whole gives 1 (the whole
 * block added after one wait), a comparison switch. */
int jit__wgmma_promote_mode(void);

/* M-groups per raster group of the tile kernel: 8, or JITGEMM_WGMMA_GROUP_M (1..64), a
 * comparison switch for the L2 reuse of the raster order. Planning refuses other values
 * (the family's check_switches). */
int jit__wgmma_group_m(void);

/* The same for the decode kernel (device/decode.cuh). */
uint32_t jit__wgmma_decode_smem_bytes(int bw, int tok, int stages, int ksub, int split);

/* CTAs for M tokens. Tiles: the persistent grid, one CTA per work unit (a cluster's m-tiles of
 * one n-tile), at most one per SM and, for clusters, at most `max_clusters` clusters (what the
 * driver says can be resident at once; 0: not known, SMs / cluster). Decode: one CTA per unit
 * (token tile x weight tile x k-split), which measured faster than a persistent grid once a CTA
 * would run several. */
unsigned jit__wgmma_grid(const jit__plan_t *plan, int64_t m, int max_clusters);

/* ---- the decode route (decode.c) ---- */

/* Add the decode candidates of the plan's band (bands 0 and 1 only) with their modelled times
 * at each sample M in t[candidate][sample]; returns how many were added. */
int jit__wgmma_decode_candidates(jit__plan_t *plan, const int64_t *ms, int n_ms,
                                 double t[][JIT_WGMMA_BAND_SAMPLES]);

/* Make a decode candidate the plan's kernel (its route name carries the split); 0 if the
 * candidate is not a decode one. Sets the payload and smem_bytes. */
int jit__wgmma_decode_apply(jit__plan_t *plan, const jit__plan_candidate_t *c);

/* CTAs of a decode launch for M tokens: one per unit. */
unsigned jit__wgmma_decode_grid(const jit__plan_t *plan, int64_t m);

/* The decode kernel's parameter block for one call. */
void jit__wgmma_decode_params(const jit__launch_args_t *a, const jit__wgmma_tmap_t *x,
                              const jit__wgmma_tmap_t *w, CUdeviceptr workspace,
                              CUdeviceptr counters, jit__wgmma_decode_params_t *out);

/* Decode with split K: the workspace's partials and counters for up to M tokens. */
size_t jit__wgmma_decode_workspace_bytes(const jit__plan_t *plan, int64_t m);
size_t jit__wgmma_decode_counter_bytes(const jit__plan_t *plan, int64_t m);

/* ---- the planner (plan.c) and the launch (launch.c): the family's hooks ---- */

/* Plan with the cost model: every tile and cluster candidate and, for bands 0 and 1, the decode
 * candidates, weighed over the band's sample M; replan takes candidate `index` instead. */
jit_status_t jit__wgmma_plan(jit__plan_t *plan, jit__diag_t *d);
jit_status_t jit__wgmma_replan(jit__plan_t *plan, int index, jit__diag_t *d);

/* The launch state of a loaded kernel, one call's launch, and freeing the state. */
jit_status_t jit__wgmma_prepare(const jit__driver_t *drv, CUfunction fn, const jit__plan_t *plan,
                                void **state, jit__diag_t *d);
jit_status_t jit__wgmma_launch(const jit__driver_t *drv, CUfunction fn, const jit__plan_t *plan,
                               void *state, const jit__launch_args_t *a, jit__diag_t *d);
void jit__wgmma_release(const jit__driver_t *drv, void *state);

/* The source of a plan of this family (generate.c). */
jit_status_t jit__gen_fp8_wgmma(const jit__plan_t *plan, const jit__key_t *key, char **source,
                                jit__diag_t *d);

#endif
