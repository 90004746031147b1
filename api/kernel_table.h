/*
 * The in-memory kernel table: launch key -> loaded function, one table per context. It is read
 * without any lock, because a lookup is the whole of jit_gemm's hot path: an open-addressing
 * array of atomic pointers to records that never change once published, replaced by a larger
 * array when it fills (the old one is kept until the context is destroyed, since a reader may
 * still be probing it). Inserts are rare (once per kernel per CUDA context) and take ctx->lock.
 */
#ifndef JIT_API_KERNEL_TABLE_H
#define JIT_API_KERNEL_TABLE_H

#include <cuda.h>
#include <stdatomic.h>

#include "diag.h"
#include "driver.h"
#include "jitgemm.h"
#include "key.h"
#include "plan.h"

/* What identifies a loaded kernel in the hot path: everything jit_gemm reads from the problem
 * that can change the kernel, plus the CUDA context it was loaded into. Zero-padded so it can
 * be hashed and compared as bytes. */
typedef struct jit__launch_key {
    CUcontext cuctx;
    int64_t n, k;
    int32_t a, b, out, scales, epilogue, band, scale_type;
    int32_t groups, layout; /* grouped problems; 0 for dense ones */
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

/* A new kernel record for this problem in this CUDA context: its launch key and that key's hash
 * filled in, the rest zero. NULL when out of memory. */
jit__kernel_t *jit__kernel_new(const jit_problem_t *p, CUcontext cuctx);

/* Unload a kernel record's module and free its family's launch state, then the record (drv may
 * be NULL only for a record that holds nothing of the driver's). */
void jit__kernel_release(const jit__driver_t *drv, jit__kernel_t *k);

/* The context's first, empty table. */
jit_status_t jit__kernel_table_init(jit_context_t *ctx, jit__diag_t *d);

/* Release every kernel of the context's table and free the table and the ones it replaced. */
void jit__kernel_table_free(jit_context_t *ctx);

/* Insert `k`; the caller holds ctx->lock. Returns the record that is in the table afterwards:
 * `k` (*inserted = 1), or an equal one another thread inserted first (*inserted = 0, `k` stays
 * the caller's). NULL (and *inserted = 0) when the table could not grow. */
const jit__kernel_t *jit__kernel_table_insert(jit_context_t *ctx, jit__kernel_t *k, int *inserted);

/* Just the in-memory lookup (NULL on miss): no I/O, no allocation, no lock. jit_gemm's hot path,
 * and what the hot-path benchmark times. */
const jit__kernel_t *jit__ctx_lookup(const jit_context_t *ctx, const jit_problem_t *p,
                                     CUcontext cuctx);

#endif
