/*
 * The in-memory kernel table: launch key -> loaded function, per context.
 *
 * NOTE: reads take no lock. Slots are atomic pointers to entries that never change once
 * published; inserts (rare: once per kernel per CUDA context) take ctx->lock, and growing
 * publishes a new table with a release store while the old one is kept until the context is
 * destroyed, since a reader may still be probing it.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "context.h"
#include "driver.h"

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
    lk->band = jit__token_band(p->m);
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

/* Insert under ctx->lock; returns the entry that is in the table afterwards (an equal one
 * another thread inserted first wins, and `k` is then not inserted). */
static const jit__kernel_t *insert(jit_context_t *ctx, jit__kernel_t *k, int *inserted) {
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

void jit__kernel_release(const jit__driver_t *drv, jit__kernel_t *k) {
    if (drv) {
        if (k->launch_state && k->plan.family && k->plan.family->release)
            k->plan.family->release(drv, k->launch_state);
        if (k->module)
            drv->cuModuleUnload(k->module);
    }
    free(k);
}

jit_status_t jit__check_launch_opt_in(const jit__plan_t *plan, jit__diag_t *d) {
    const char *var = plan->family->launch_opt_in;
    if (!var)
        return JIT_OK;
    const char *v = getenv(var);
    if (v && strcmp(v, "1") == 0)
        return JIT_OK;
    return jit__fail(d, JIT_UNSUPPORTED_ARCH,
                     "%s %s kernels are generated and compiled but have never been run "
                     "on hardware; set %s=1 to launch them anyway (and check the results)",
                     plan->arch->name, plan->family->name, var);
}

static int load_error_may_be_toolchain(CUresult r) {
    return r == CUDA_ERROR_UNSUPPORTED_PTX_VERSION || r == CUDA_ERROR_INVALID_IMAGE ||
           r == CUDA_ERROR_NO_BINARY_FOR_GPU || r == CUDA_ERROR_INVALID_PTX;
}

/* Obtain the cubin of `plan` (from the cache, else built with toolchain `tc`, which may be
 * NULL when none is found: `tc_why` says why) and load it into the current CUDA context. */
static jit_status_t load_with(jit_context_t *ctx, const jit__driver_t *drv,
                              const jit__toolchain_t *tc, const char *tc_why,
                              const jit__plan_t *plan, int newest_nvrtc, jit__kernel_t *k,
                              CUresult *load_result, jit__cache_entry_t *entry, jit__diag_t *d) {
    jit__key_set_t ks;
    jit_status_t st = jit__ctx_keys(ctx, tc, tc_why, plan, &ks, d);
    if (st != JIT_OK)
        return st;
    jit__obtained_t got;
    st = jit__ctx_obtain(ctx, tc, plan, &ks, newest_nvrtc, &got, d);
    if (st != JIT_OK)
        return st;
    *entry = got.entry;
    *load_result = drv->cuModuleLoadData(&k->module, got.cubin);
    if (*load_result != CUDA_SUCCESS)
        return jit__cuda_fail(drv, *load_result, "loading the cubin", d);
    snprintf(k->hash, sizeof(k->hash), "%s", got.entry.hash);
    return JIT_OK;
}

jit_status_t jit__ctx_kernel(jit_context_t *ctx, const jit_problem_t *p, CUcontext cuctx,
                             const jit__kernel_t **out, jit__diag_t *d) {
    const jit__kernel_t *hit = jit__ctx_lookup(ctx, p, cuctx);
    if (hit) {
        *out = hit;
        return JIT_OK;
    }
    const jit__driver_t *drv;
    jit_status_t st = jit__driver_get(&drv, d);
    if (st != JIT_OK)
        return st;
    jit__kernel_t *k = calloc(1, sizeof(*k));
    if (!k)
        return jit__fail(d, JIT_OUT_OF_MEMORY, "kernel record");
    jit__launch_key_make(p, cuctx, &k->lk);
    k->lk_hash = XXH3_64bits(&k->lk, sizeof(k->lk));
    st = jit__ctx_plan(ctx, p, &k->plan, d);
    if (st == JIT_OK)
        st = jit__check_launch_opt_in(&k->plan, d);
    char tc_why[JIT__MSG_MAX] = "";
    const jit__toolchain_t *tc =
        st == JIT_OK ? jit__ctx_toolchain(ctx, tc_why, sizeof(tc_why)) : NULL;
    CUresult lr = CUDA_SUCCESS;
    jit__cache_entry_t used;
    memset(&used, 0, sizeof(used));
    if (st == JIT_OK)
        st = load_with(ctx, drv, tc, tc_why, &k->plan, 0, k, &lr, &used, d);
    if (st != JIT_OK && load_error_may_be_toolchain(lr)) {
        /* A cubin from an NVRTC newer than the driver may not load (the cache may hold one
         * built elsewhere); rebuild it once with the newest toolchain the driver is as new as,
         * refusing entries from newer ones, and keep using that toolchain for launches. */
        int drv_major = drv->version / 1000, drv_minor = (drv->version % 1000) / 10;
        const jit__toolchain_t *older = jit__toolchain_newest_up_to(drv_major, drv_minor);
        int older_v = older ? older->id.nvrtc_major * 100 + older->id.nvrtc_minor : 0;
        if (older && used.toolchain.nvrtc_major * 100 + used.toolchain.nvrtc_minor > older_v) {
            jit__log(ctx->log_level, JIT_LOG_WARN,
                     "a cubin from NVRTC %d.%d did not load on driver %d.%d (%s); using NVRTC "
                     "%d.%d for kernels that run here",
                     used.toolchain.nvrtc_major, used.toolchain.nvrtc_minor, drv_major, drv_minor,
                     d->msg, older->id.nvrtc_major, older->id.nvrtc_minor);
            jit__diag_clear(d);
            st = load_with(ctx, drv, older, "", &k->plan, older_v, k, &lr, &used, d);
            if (st == JIT_OK) {
                pthread_mutex_lock(&ctx->lock);
                ctx->exec_tc = older;
                pthread_mutex_unlock(&ctx->lock);
            }
        }
    }
    if (st == JIT_OK) {
        CUresult r =
            drv->cuModuleGetFunction(&k->function, k->module, jit__plan_kernel_name(&k->plan));
        if (r == CUDA_SUCCESS)
            r = drv->cuFuncSetAttribute(k->function,
                                        CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                                        (int)k->plan.smem_bytes);
        if (r != CUDA_SUCCESS)
            st = jit__cuda_fail(drv, r, "preparing the kernel", d);
        else if (k->plan.family->prepare)
            st = k->plan.family->prepare(drv, k->function, &k->plan, &k->launch_state, d);
    }
    if (st != JIT_OK) {
        jit__kernel_release(drv, k);
        return st;
    }
    pthread_mutex_lock(&ctx->lock);
    int inserted = 0;
    const jit__kernel_t *in_table = insert(ctx, k, &inserted);
    pthread_mutex_unlock(&ctx->lock);
    if (!inserted) {
        jit__kernel_release(drv, k);
        if (!in_table)
            return jit__fail(d, JIT_OUT_OF_MEMORY, "kernel table");
    }
    *out = in_table;
    return JIT_OK;
}
