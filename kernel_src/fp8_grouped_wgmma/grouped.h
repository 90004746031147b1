/*
 * The grouped FP8 wgmma family (sm_90a): grouped GEMM for mixture-of-experts, one launch for
 * every expert, the rows per expert read on the device. Its kernel is the dense wgmma kernel's
 * structure (TMA + mbarrier ring + wgmma, a producer warpgroup with store warps and two consumer
 * warpgroups, FP32 promotion of every 128-K block) with a device-side scheduler over the
 * experts (device/scheduler.cuh). docs/kernels-fp8-grouped.md describes it and its cost model.
 *
 * Files: family.c (registry row, key fields, plan JSON), plan.c (the tile route's candidates
 * and cost model), swap.c (the swap-AB route's), generate.c (the source), launch.c (tensor maps,
 * grid, launch), abi.h (the parameter block).
 */
#ifndef JIT_FP8_GROUPED_H
#define JIT_FP8_GROUPED_H

#include <stddef.h>

#include "abi.h"
#include "families.h"

/* Shared memory per CTA a kernel may use (sm_90a's opt-in maximum, 227 KiB). */
#define JIT_GROUPED_SMEM_LIMIT 232448u

/* The family's kernels. */
typedef enum jit__grouped_route {
    JIT_GROUPED_TILES = 0, /* GroupedTileKernel: tiles of BM rows of one expert x BN columns */
    /* GroupedSwapKernel (device/swap_kernel.cuh): weights on wgmma's M side, a tile of up to
     * BM = TOK tokens of one expert on its N side, the N bucket chosen per tile at run time */
    JIT_GROUPED_SWAP = 1,
} jit__grouped_route_t;

/* The plan's payload: the template parameters of the route's kernel. */
typedef struct jit__grouped_plan {
    jit__grouped_route_t route;
    int bm, bn;  /* rows of A (one expert's; the swap route's TOK) and of B per tile (swap: 128) */
    int stages;  /* TMA ring depth */
    int group_m; /* row tiles per raster group */
    int producer_regs, consumer_regs; /* setmaxnreg budgets */
} jit__grouped_plan_t;

_Static_assert(sizeof(jit__grouped_plan_t) <= JIT_PLAN_PAYLOAD_BYTES, "grouped payload");

static inline jit__grouped_plan_t *jit__grouped_of(jit__plan_t *plan) {
    return (jit__grouped_plan_t *)(void *)plan->payload.bytes;
}
static inline const jit__grouped_plan_t *jit__grouped_cof(const jit__plan_t *plan) {
    return (const jit__grouped_plan_t *)(const void *)plan->payload.bytes;
}

/* Dynamic shared memory of a tile configuration, as device/kernel.cuh lays it out (the
 * generated source asserts the template computes the same): the ring, the BF16 staging tile,
 * the scales, the expert table and the barriers, plus 1 KiB to align the base. */
uint32_t jit__grouped_smem_bytes(int bm, int bn, int stages, jit_epilogue_t epilogue,
                                 int64_t groups);

/* The same for the swap route's kernel: the ring, the FP32 staging tile [TOK][128 + 4], the
 * expert table and the barriers. */
uint32_t jit__grouped_swap_smem_bytes(int tok, int stages, int64_t groups);

/* Add the swap route's candidates (token tiles of 16, 32 and 64) with their modelled times at
 * every sample count `rows[j]` in t[candidate][j]; returns how many were added. Only for bands
 * up to 64 rows per expert (decode). */
int jit__grouped_swap_candidates(jit__plan_t *plan, const int64_t *rows, int n_rows, double t[][3]);

/* Make candidate `c` the plan's kernel if it is a swap candidate (1), else leave it (0). */
int jit__grouped_swap_apply(jit__plan_t *plan, const jit__plan_candidate_t *c);

/* The cost model and the candidates (plan.c). */
jit_status_t jit__grouped_plan(jit__plan_t *plan, jit__diag_t *d);
jit_status_t jit__grouped_replan(jit__plan_t *plan, int index, jit__diag_t *d);

/* The source of a plan of this family (generate.c). */
jit_status_t jit__gen_fp8_grouped(const jit__plan_t *plan, const jit__key_t *key, char **source,
                                  jit__diag_t *d);

/* CTAs of a launch over m rows of A: one per SM, but no more than the most work units the
 * rows can make (every expert's last row tile may be partial: at most m / BM + G row tiles). */
unsigned jit__grouped_grid(const jit__plan_t *plan, int64_t m);

/* The launch (launch.c): tensor maps of A and B cached per pointer and shape. */
jit_status_t jit__grouped_prepare(const jit__driver_t *drv, CUfunction fn, const jit__plan_t *plan,
                                  void **state, jit__diag_t *d);
jit_status_t jit__grouped_launch(const jit__driver_t *drv, CUfunction fn, const jit__plan_t *plan,
                                 void *state, const jit__launch_args_t *args, jit__diag_t *d);
void jit__grouped_release(const jit__driver_t *drv, void *state);

#endif
