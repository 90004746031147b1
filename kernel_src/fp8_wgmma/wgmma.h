/*
 * The FP8 wgmma family (sm_90a): TMA loads into an mbarrier-guarded shared-memory ring,
 * wgmma.mma_async e4m3 x e4m3 issued by two consumer warpgroups, a producer warpgroup that gives
 * its registers away, a persistent grid in grouped raster order, and the row-scaled epilogues.
 * The kernel is kernel_src/fp8_wgmma/device/fp8_wgmma.cuh; docs/kernels-fp8-wgmma.md describes
 * it and its cost model.
 */
#ifndef JIT_FP8_WGMMA_H
#define JIT_FP8_WGMMA_H

#include "families.h"

/* The plan's payload: the template parameters of Fp8WgmmaKernel. */
typedef struct jit__wgmma_plan {
    int bm, bn;        /* CTA tile: BM rows of A (tokens), BN rows of B */
    int stages;        /* TMA ring depth */
    int promote;       /* 0: accumulate the whole K in wgmma; 1: promote to FP32 every 128 K */
    int cluster;       /* CTAs per cluster (1 or 2); with 2, B tiles are multicast */
    int group_m;       /* m-tiles per raster group */
    int producer_regs; /* setmaxnreg budgets */
    int consumer_regs;
} jit__wgmma_plan_t;

_Static_assert(sizeof(jit__wgmma_plan_t) <= JIT_PLAN_PAYLOAD_BYTES, "wgmma payload");

static inline jit__wgmma_plan_t *jit__wgmma_of(jit__plan_t *plan) {
    return (jit__wgmma_plan_t *)(void *)plan->payload.bytes;
}
static inline const jit__wgmma_plan_t *jit__wgmma_cof(const jit__plan_t *plan) {
    return (const jit__wgmma_plan_t *)(const void *)plan->payload.bytes;
}

/* Dynamic shared memory of a configuration, as the kernel lays it out (the generated source
 * asserts that the template computes the same). */
uint32_t jit__wgmma_smem_bytes(int bm, int bn, int stages);

/* CTAs of the persistent grid for M tokens: one per output tile, at most one per SM. */
unsigned jit__wgmma_grid(const jit__plan_t *plan, int64_t m);

/* The source of a plan of this family (generate.c). */
jit_status_t jit__gen_fp8_wgmma(const jit__plan_t *plan, const jit__key_t *key, char **source,
                                jit__diag_t *d);

#endif
