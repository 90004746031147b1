/*
 * The context's internals, shared by the API's files and visible to benchmarks and tests. The
 * stages of a call that work on a context are declared in pipeline.h.
 *
 * Two tables live here. `kernels` maps a launch key (CUDA context + spec + token band) to a
 * loaded function; it is read without any lock because it is the jit_gemm hot path
 * (kernel_table.h). `cubins` holds every cubin this context compiled or read, by key hash, so a
 * second GPU or a memory-only cache never compiles twice; it and the in-flight list are guarded
 * by `lock`, which nobody holds while compiling.
 */
#ifndef JIT_API_CONTEXT_H
#define JIT_API_CONTEXT_H

#include <cuda.h>
#include <pthread.h>
#include <stdatomic.h>

#include "cache.h"
#include "diag.h"
#include "jitgemm.h"
#include "kernel_table.h"
#include "key.h"
#include "plan.h"
#include "toolchain.h"

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

#endif
