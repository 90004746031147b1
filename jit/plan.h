/*
 * The planner: a pure function from (N, K, dtypes, scale mode, epilogue, token band, SM count,
 * arch profile) to a plan (route, tile, stages, cluster, grid policy). M never enters except
 * through its token band, so every M in one band shares one kernel and M stays a runtime
 * argument. Everything the generators emit that differs by arch or shape comes from here.
 */
#ifndef JIT_PLAN_H
#define JIT_PLAN_H

#include <stdint.h>

#include "arch.h"
#include "diag.h"
#include "jitgemm.h"
#include "plan_tc.h"

/* Bumped whenever generated code or plans change for the same inputs: it is part of every key,
 * so old cache entries are never used by a newer generator and `cache gc` removes them. */
#define JIT_GENERATOR_VERSION 2

typedef enum jit__route {
    JIT_ROUTE_NONE = 0,
    JIT_ROUTE_MMA_SYNC = 1, /* cp.async + mma.sync.m16n8k32 FP8, every arch (sm_89+) */
    JIT_ROUTE_TCGEN05 = 2,  /* TMA + tcgen05.mma block_scale, sm_100a/sm_103a/sm_107a */
} jit__route_t;

/* The problem without M and without pointers: what a kernel is specialized on. */
typedef struct jit__gemm_spec {
    int64_t n, k;
    jit_dtype_t a, b, out;
    jit_scale_mode_t scales;
    jit_epilogue_t epilogue;
} jit__gemm_spec_t;

/* Token bands: M in [1,16], [17,64], [65,256], [257,1024], [1025, inf). */
#define JIT_TOKEN_BANDS 5
int jit__token_band(int64_t m);
/* The smallest and largest M of a band (the largest of the last band is INT64_MAX). */
void jit__token_band_range(int band, int64_t *lo, int64_t *hi);

typedef struct jit__plan {
    jit__route_t route;
    const jit__arch_profile_t *arch;
    jit__gemm_spec_t spec;
    int token_band;
    int sm_count;
    /* CTA tile and pipeline. For linear_swiglu, tile_n counts B rows (gate and up), so a CTA
     * writes tile_n / 2 output columns. */
    int tile_m, tile_n, tile_k;
    int stages;
    int warps_m, warps_n; /* MMA warps (mma.sync route); threads = 32 * warps_m * warps_n */
    int threads;
    uint32_t smem_bytes; /* dynamic shared memory per CTA */
    /* Grid policy: 0 = one CTA per output tile, grid (ceil(Nout/tile), ceil(M/tile_m));
     * 1 = persistent, grid from occupancy (tcgen05 route). */
    int persistent;
    int cluster_m, cluster_n;                   /* preferred cluster shape */
    int fallback_cluster_m, fallback_cluster_n; /* 0 if none */
    jit__tc_plan_t tc;                          /* route TCGEN05 only */
} jit__plan_t;

/* Validate the spec against the arch and fill a plan. Pure: no I/O, no globals. */
jit_status_t jit__plan_make(const jit__gemm_spec_t *spec, int token_band, int sm_count,
                            const jit__arch_profile_t *arch, jit__plan_t *out, jit__diag_t *d);

/* Spec from a public problem (checks only what the spec itself holds). */
jit_status_t jit__spec_from_problem(const jit_problem_t *p, jit__gemm_spec_t *out, jit__diag_t *d);

/* Output columns: N, or N/2 for linear_swiglu. */
int64_t jit__spec_out_cols(const jit__gemm_spec_t *spec);

/* Launch grid for M tokens (non-persistent plans). */
void jit__plan_grid(const jit__plan_t *plan, int64_t m, unsigned grid[3]);

/* The kernel's entry point name, e.g. "jitgemm_fp8_mma_sync". Stable for a route. */
const char *jit__plan_kernel_name(const jit__plan_t *plan);

/* The plan as JSON text (newly allocated, free()). Fields are documented in docs/plan.md. */
char *jit__plan_to_json(const jit__plan_t *plan);

/* The tcgen05 planner (jit/plan_tc.c): fills route, tiles, stages, cluster and plan->tc for a
 * block-scaled spec, or explains why the arch cannot run it. */
jit_status_t jit__plan_tc_make(const jit__gemm_spec_t *spec, int token_band, int sm_count,
                               const jit__arch_profile_t *arch, jit__plan_t *plan,
                               jit__diag_t *d);
/* Adds the tcgen05 fields to the plan's JSON object (a json_t*). Returns 0 on success. */
int jit__plan_tc_to_json(const jit__plan_t *plan, void *json_object);

#endif
