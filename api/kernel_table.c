/*
 * The in-memory kernel table: launch key -> loaded function, per context (kernel_table.h).
 *
 * NOTE: reads take no lock. Slots are atomic pointers to entries that never change once
 * published; inserts (rare: once per kernel per CUDA context) take ctx->lock, and growing
 * publishes a new table with a release store while the old one is kept until the context is
 * destroyed, since a reader may still be probing it.
 */
#include <stdlib.h>
#include <string.h>

#include "context.h"
#include "driver.h"
#include "family.h"
#include "kernel_table.h"

#define XXH_INLINE_ALL
#include <xxhash.h>

void jit__launch_key_make(const jit_problem_t *p, CUcontext cuctx, jit__launch_key_t *lk) {
    memset(lk, 0, sizeof(*lk));
    lk->cuctx = cuctx;
    lk->n = p->n;
    lk->k = p->k;
    lk->a = p->a_dtype;
    lk->b = p->b_dtype;
    lk->out = p->out_dtype;
    lk->scales = p->scale_mode;
    lk->epilogue = p->epilogue;
    lk->band = jit__token_band(jit__problem_band_m(p));
    if (JIT__PROBLEM_HAS_GROUPS(p)) {
        lk->groups = (int32_t)p->groups;
        lk->layout = p->layout;
    }
    lk->scale_type = jit__scale_type_resolved(p->scale_mode, p->scale_type);
}

static const jit__kernel_t *probe(const jit__kernel_table_t *t, const jit__launch_key_t *lk,
                                  uint64_t h) {
    size_t mask = t->capacity - 1;
    for (size_t i = (size_t)h & mask;; i = (i + 1) & mask) {
        const jit__kernel_t *k = atomic_load_explicit(&t->slots[i], memory_order_acquire);
        if (!k)
            return NULL;
        if (k->lk_hash == h && memcmp(&k->lk, lk, sizeof(*lk)) == 0)
            return k;
    }
}

const jit__kernel_t *jit__ctx_lookup(const jit_context_t *ctx, const jit_problem_t *p,
                                     CUcontext cuctx) {
    jit__launch_key_t lk;
    jit__launch_key_make(p, cuctx, &lk);
    uint64_t h = XXH3_64bits(&lk, sizeof(lk));
    const jit__kernel_table_t *t =
        atomic_load_explicit(&((jit_context_t *)ctx)->kernels, memory_order_acquire);
    return probe(t, &lk, h);
}

static void place(jit__kernel_table_t *t, jit__kernel_t *k) {
    size_t mask = t->capacity - 1;
    size_t i = (size_t)k->lk_hash & mask;
    while (atomic_load_explicit(&t->slots[i], memory_order_relaxed))
        i = (i + 1) & mask;
    atomic_store_explicit(&t->slots[i], k, memory_order_release);
}

const jit__kernel_t *jit__kernel_table_insert(jit_context_t *ctx, jit__kernel_t *k, int *inserted) {
    *inserted = 0;
    jit__kernel_table_t *t = atomic_load(&ctx->kernels);
    const jit__kernel_t *existing = probe(t, &k->lk, k->lk_hash);
    if (existing)
        return existing;
    if ((ctx->n_kernels + 1) * 2 > t->capacity) {
        jit__kernel_table_t *bigger = calloc(1, sizeof(*bigger));
        jit__kernel_table_t **retired =
            realloc(ctx->retired, (ctx->n_retired + 1) * sizeof(*retired));
        if (bigger)
            bigger->slots = calloc(t->capacity * 2, sizeof(*bigger->slots));
        if (retired)
            ctx->retired = retired;
        if (!bigger || !bigger->slots || !retired) {
            if (bigger)
                free(bigger->slots);
            free(bigger);
            return NULL;
        }
        bigger->capacity = t->capacity * 2;
        for (size_t i = 0; i < t->capacity; i++) {
            jit__kernel_t *e = atomic_load(&t->slots[i]);
            if (e)
                place(bigger, e);
        }
        ctx->retired[ctx->n_retired++] = t;
        atomic_store_explicit(&ctx->kernels, bigger, memory_order_release);
        t = bigger;
    }
    place(t, k);
    ctx->n_kernels++;
    *inserted = 1;
    return k;
}

jit__kernel_t *jit__kernel_new(const jit_problem_t *p, CUcontext cuctx) {
    jit__kernel_t *k = calloc(1, sizeof(*k));
    if (!k)
        return NULL;
    jit__launch_key_make(p, cuctx, &k->lk);
    k->lk_hash = XXH3_64bits(&k->lk, sizeof(k->lk));
    return k;
}

void jit__kernel_release(const jit__driver_t *drv, jit__kernel_t *k) {
    if (drv) {
        if (k->launch_state && k->plan.family && k->plan.family->release)
            k->plan.family->release(drv, k->launch_state);
        if (k->module)
            drv->cuModuleUnload(k->module);
    }
    free(k);
}

jit_status_t jit__kernel_table_init(jit_context_t *ctx, jit__diag_t *d) {
    jit__kernel_table_t *t = calloc(1, sizeof(*t));
    if (t) {
        t->capacity = 64;
        t->slots = calloc(t->capacity, sizeof(*t->slots));
    }
    if (!t || !t->slots) {
        free(t);
        return jit__fail(d, JIT_OUT_OF_MEMORY, "kernel table");
    }
    atomic_init(&ctx->kernels, t);
    return JIT_OK;
}

static void free_table(jit__kernel_table_t *t) {
    if (t) {
        free(t->slots);
        free(t);
    }
}

void jit__kernel_table_free(jit_context_t *ctx) {
    const jit__driver_t *drv = NULL;
    jit__diag_t d;
    jit__diag_init(&d);
    jit__kernel_table_t *t = atomic_load(&ctx->kernels);
    for (size_t i = 0; t && i < t->capacity; i++) {
        jit__kernel_t *k = atomic_load(&t->slots[i]);
        if (!k)
            continue;
        /* A loaded kernel implies a driver; a context created without a GPU has none. */
        if (!drv)
            jit__driver_get(&drv, &d);
        jit__kernel_release(drv, k);
    }
    free_table(t);
    for (size_t i = 0; i < ctx->n_retired; i++)
        free_table(ctx->retired[i]);
    free(ctx->retired);
    jit__diag_clear(&d);
}
