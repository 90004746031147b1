/*
 * The FP8 mma.sync family's own interface: its plan payload and its generator. The family is
 * the cp.async + mma.sync baseline: cp.async moves 16-byte chunks of A and B into a
 * shared-memory ring, ldmatrix.x4 feeds mma.sync.m16n8k32 and the epilogue stores BF16 from
 * registers. It runs on every arch the project targets (sm_89 and later).
 */
#ifndef JIT_FP8_MMA_SYNC_H
#define JIT_FP8_MMA_SYNC_H

#include "families.h"

typedef struct jit__mma_sync_plan {
    int warps_m, warps_n; /* MMA warps; threads = 32 * warps_m * warps_n */
} jit__mma_sync_plan_t;

_Static_assert(sizeof(jit__mma_sync_plan_t) <= JIT_PLAN_PAYLOAD_BYTES, "mma.sync payload");

static inline jit__mma_sync_plan_t *jit__mma_sync_of(jit__plan_t *plan) {
    return (jit__mma_sync_plan_t *)(void *)plan->payload.bytes;
}
static inline const jit__mma_sync_plan_t *jit__mma_sync_cof(const jit__plan_t *plan) {
    return (const jit__mma_sync_plan_t *)(const void *)plan->payload.bytes;
}

/* The plan of a band's tile (plan.c) and one call's launch (launch.c): the family's hooks. */
jit_status_t jit__mma_sync_plan(jit__plan_t *plan, jit__diag_t *d);
jit_status_t jit__mma_sync_launch(const jit__driver_t *drv, CUfunction fn, const jit__plan_t *plan,
                                  void *state, const jit__launch_args_t *a, jit__diag_t *d);

/* The source of a plan of this family (generate.c). */
jit_status_t jit__gen_fp8_mma_sync(const jit__plan_t *plan, const jit__key_t *key, char **source,
                                   jit__diag_t *d);

/* Grid for M tokens: x over B-row tiles, y over token tiles. */
void jit__mma_sync_grid(const jit__plan_t *plan, int64_t m, unsigned grid[3]);

#endif
