/*
 * The load stage: on a miss of the kernel table, problem -> plan -> key set -> cubin (the stages
 * before it, pipeline.h), loaded into the current CUDA context, prepared by its family and
 * inserted in the table, where every later call for the problem finds it.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "driver.h"
#include "family.h"
#include "kernel_table.h"
#include "pipeline.h"

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
    jit__kernel_t *k = jit__kernel_new(p, cuctx);
    if (!k)
        return jit__fail(d, JIT_OUT_OF_MEMORY, "kernel record");
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
    const jit__kernel_t *in_table = jit__kernel_table_insert(ctx, k, &inserted);
    pthread_mutex_unlock(&ctx->lock);
    if (!inserted) {
        jit__kernel_release(drv, k);
        if (!in_table)
            return jit__fail(d, JIT_OUT_OF_MEMORY, "kernel table");
    }
    *out = in_table;
    return JIT_OK;
}
