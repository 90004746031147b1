/*
 * The context's internals, shared by the API's files (context.c, pipeline.c, gemm.c,
 * prewarm.c, inspect.c) and visible to benchmarks and tests.
 *
 * Two tables live here. `kernels` maps a launch key (CUDA context + spec + token band) to a
 * loaded function; it is read without any lock (an open-addressing array of atomic pointers to
 * immutable entries, replaced wholesale when it grows) because it is the jit_gemm hot path.
 * `cubins` holds every cubin this context compiled or read, by key hash, so a second GPU or a
 * memory-only cache never compiles twice; it and the in-flight list are guarded by `lock`,
 * which nobody holds while compiling.
 */
#ifndef JIT_API_CONTEXT_H
#define JIT_API_CONTEXT_H

#include <cuda.h>
#include <pthread.h>
#include <stdatomic.h>

#include "cache.h"
#include "compile.h"
#include "diag.h"
#include "driver.h"
#include "family.h"
#include "jitgemm.h"
#include "key.h"
#include "plan.h"
#include "toolchain.h"

/* What identifies a loaded kernel in the hot path: everything jit_gemm reads from the problem
 * that can change the kernel, plus the CUDA context it was loaded into. Zero-padded so it can
 * be hashed and compared as bytes. */
typedef struct jit__launch_key {
    CUcontext cuctx;
    int64_t n, k;
    int32_t a, b, out, scales, epilogue, band, scale_type;
} jit__launch_key_t;

/* The launch key of a problem in a CUDA context (zero padding included). */
void jit__launch_key_make(const jit_problem_t *p, CUcontext cuctx, jit__launch_key_t *lk);

typedef struct jit__kernel {
    jit__launch_key_t lk;
    uint64_t lk_hash;
    CUmodule module;
    CUfunction function;
    jit__plan_t plan;
    char hash[JIT_KEY_HASH_LEN + 1];
    /* What the plan's family made in prepare() for its launches (NULL if nothing): owned by
     * the family, which alone reads or changes it. */
    void *launch_state;
} jit__kernel_t;

typedef struct jit__kernel_table {
    size_t capacity; /* power of two */
    _Atomic(jit__kernel_t *) *slots;
} jit__kernel_table_t;

typedef struct jit__cubin_rec {
    struct jit__cubin_rec *next;
    jit__cache_entry_t entry;
    void *cubin;
    size_t size;
    char *source; /* kept only when this context compiled it; the PTX is made on demand */
} jit__cubin_rec_t;

typedef struct jit__inflight {
    struct jit__inflight *next;
    char hash[JIT_KEY_HASH_LEN + 1];
} jit__inflight_t;

/* The counters behind jit_context_stats. Relaxed atomics: they are tallies, ordered with
 * nothing else. Compile time is kept in nanoseconds so it can be added atomically. */
typedef struct jit__ctx_counters {
    atomic_uint_fast64_t memory_hits, disk_hits, compiles, compile_ns, not_in_cache, failures;
} jit__ctx_counters_t;

struct jit_context {
    jit_log_level_t log_level;
    jit_compile_mode_t compile_mode;
    jit__ctx_counters_t counters;
    const jit__arch_profile_t *arch; /* NULL: none given and no GPU to detect it from */
    int sm_count;
    /* Compiles what jit_gemm launches: the automatic (or named) toolchain, or an older one once
     * the driver has refused a newer one's cubin. Prewarm and inspect use the automatic one. */
    const jit__toolchain_t *exec_tc;
    char toolkit_dir[512];
    jit__cache_t *cache;

    pthread_mutex_t lock;
    pthread_cond_t inflight_done;
    jit__inflight_t *inflight;
    jit__cubin_rec_t *cubins;
    _Atomic(jit__kernel_table_t *) kernels;
    size_t n_kernels;
    /* Tables replaced by a larger one; freed at destroy because a reader may still hold one. */
    jit__kernel_table_t **retired;
    size_t n_retired;
};

/* Record a failure as the context's last error for this thread, log it at debug level, and
 * return its status. Clears the diag. */
jit_status_t jit__ctx_error(const jit_context_t *ctx, jit__diag_t *d);

/* Problem -> spec, band, plan. */
jit_status_t jit__ctx_plan(jit_context_t *ctx, const jit_problem_t *p, jit__plan_t *plan,
                           jit__diag_t *d);

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

/* The context's toolchain for compiling: NULL (with *why filled) when none is found. A hit
 * needs none, so its absence is not an error until something must be compiled. */
const jit__toolchain_t *jit__ctx_toolchain(jit_context_t *ctx, char *why, size_t whysz);

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

/* The kernel for this problem in the current CUDA context, loading it on a miss. The hit path:
 * no I/O, no allocation, no lock. */
jit_status_t jit__ctx_kernel(jit_context_t *ctx, const jit_problem_t *p, CUcontext cuctx,
                             const jit__kernel_t **out, jit__diag_t *d);

/* Unload a kernel record's module and free its family's launch state, then the record (drv may
 * be NULL only for a record that holds nothing of the driver's). */
void jit__kernel_release(const jit__driver_t *drv, jit__kernel_t *k);

/* JIT_OK if the plan's kernels may be launched: a family whose kernels never ran on hardware
 * (tcgen05) needs the user's opt-in through its launch_opt_in variable set to 1. */
jit_status_t jit__check_launch_opt_in(const jit__plan_t *plan, jit__diag_t *d);

/* Just the in-memory lookup (NULL on miss); exposed for the hot-path benchmark. */
const jit__kernel_t *jit__ctx_lookup(const jit_context_t *ctx, const jit_problem_t *p,
                                     CUcontext cuctx);

#endif
