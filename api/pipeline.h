/*
 * The stages of a call that work on a context, in the order a miss runs them, each defined in
 * the file named for it:
 *
 *   plan     stage_plan.c     problem -> spec, token band, plan; whether it may be launched
 *   key      stage_key.c      plan -> the keys its cubin may be found under
 *   compile  stage_compile.c  the context's toolchain; generate + compile one key's cubin
 *   cache    stage_cache.c    key set -> cubin: memory, disk cache, else compile and publish
 *   load     stage_load.c     problem -> kernel loaded in the current CUDA context
 *
 * The launch is jit_gemm's (gemm.c), after jit__ctx_lookup (kernel_table.c) or a load. jit_prewarm
 * and jit_inspect run the stages up to the cache. Each stage calls only stages before it and
 * the kernel table; none calls back into context.c, which owns the context's life cycle.
 */
#ifndef JIT_API_PIPELINE_H
#define JIT_API_PIPELINE_H

#include "context.h"

/* ---- plan (stage_plan.c) ----------------------------------------------------------------- */

/* Problem -> spec, band, plan. */
jit_status_t jit__ctx_plan(jit_context_t *ctx, const jit_problem_t *p, jit__plan_t *plan,
                           jit__diag_t *d);

/* JIT_OK if the plan's kernels may be launched: a family whose kernels never ran on hardware
 * (tcgen05) needs the user's opt-in through its launch_opt_in variable set to 1. */
jit_status_t jit__check_launch_opt_in(const jit__plan_t *plan, jit__diag_t *d);

/* ---- key (stage_key.c) ------------------------------------------------------------------- */

/* The keys a plan's cubin may be found under, most preferred first, and which of them a compile
 * here would build. A key holds no toolchain (docs/cache.md, "Caches that travel"), so the set
 * is known without NVRTC; the toolchain only decides what may be built and what is preferred:
 * - a toolchain that targets the arch natively: the native key only (a fallback entry is not
 *   used where a native cubin can be built: the native one replaces it);
 * - otherwise (an older NVRTC, or none at all): the native key, then the fallback key where the
 *   arch has one, so a native entry built elsewhere is served; a miss builds the fallback if
 *   the toolchain can, else fails with `no_build_status` / `no_build_why`. */
typedef struct jit__key_set {
    jit__key_t keys[2];
    int n;
    int build; /* index into keys of what a miss compiles, -1: nothing can be compiled here */
    jit_status_t no_build_status;
    char no_build_why[JIT__MSG_MAX];
} jit__key_set_t;

/* Plan -> key set for toolchain `tc` (NULL: none found; `tc_why` then says why, and a miss
 * fails with JIT_TOOLCHAIN_NOT_FOUND and that text). */
jit_status_t jit__ctx_keys(const jit_context_t *ctx, const jit__toolchain_t *tc, const char *tc_why,
                           const jit__plan_t *plan, jit__key_set_t *ks, jit__diag_t *d);

/* The key a compile here would build, else the most preferred one. */
const jit__key_t *jit__key_set_main(const jit__key_set_t *ks);

/* ---- compile (stage_compile.c) ----------------------------------------------------------- */

/* The context's toolchain for compiling: NULL (with *why filled) when none is found. A hit
 * needs none, so its absence is not an error until something must be compiled. */
const jit__toolchain_t *jit__ctx_toolchain(jit_context_t *ctx, char *why, size_t whysz);

/* Generate the plan's source for `key` and compile it with `tc` (first for the arch a fallback
 * key stands in for, as a check); fill the record's entry, cubin and source. */
jit_status_t jit__ctx_compile(jit_context_t *ctx, const jit__toolchain_t *tc,
                              const jit__plan_t *plan, const jit__key_t *key, jit__cubin_rec_t *rec,
                              jit__diag_t *d);

/* ---- cache (stage_cache.c) --------------------------------------------------------------- */

typedef struct jit__obtained {
    jit__cache_entry_t entry;
    const void *cubin; /* owned by the context */
    size_t size;
    int compiled; /* 1: compiled now; 0: from memory or the disk cache */
} jit__obtained_t;

/* Key set -> cubin: the context's memory, else the disk cache (each key of the set in order),
 * else generate + compile the set's build key (once per key across threads and processes) +
 * publish. `newest_nvrtc` (major * 100 + minor; 0: any) refuses entries built by a newer NVRTC,
 * which are then replaced: what a driver too old for them needs. */
jit_status_t jit__ctx_obtain(jit_context_t *ctx, const jit__toolchain_t *tc,
                             const jit__plan_t *plan, const jit__key_set_t *ks, int newest_nvrtc,
                             jit__obtained_t *out, jit__diag_t *d);

/* ---- load (stage_load.c) ----------------------------------------------------------------- */

/* The kernel for this problem in the current CUDA context, loading it on a miss. The hit path:
 * no I/O, no allocation, no lock. */
jit_status_t jit__ctx_kernel(jit_context_t *ctx, const jit_problem_t *p, CUcontext cuctx,
                             const jit__kernel_t **out, jit__diag_t *d);

/* ---- launch (gemm.c) ---------------------------------------------------------------------- */

/* The kernel of a validated problem (looked up, else loaded: jit__ctx_kernel) launched with its
 * family's launch; ld holds lda, ldb, ldd and ld_residual resolved (never 0), then the 128x128
 * mode's SFA strides along M and along K blocks (0 for the other modes). jit_gemm and
 * jit_gemm_grouped (gemm_grouped.c) end here. */
jit_status_t jit__ctx_launch(jit_context_t *ctx, const jit_problem_t *problem,
                             const jit_operands_t *operands, const int64_t ld[6], void *stream,
                             jit__diag_t *d);

#endif
