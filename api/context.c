/*
 * Context life cycle, per-thread last-error text and the context's counters. The stages a call
 * runs on a context are in the stage_*.c files (pipeline.h); this file calls none of them, only
 * the kernel table's setup and teardown.
 */
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "compile_mode.h"
#include "context.h"
#include "driver.h"
#include "kernel_table.h"
#include "log_level.h"

/* ---- last error ------------------------------------------------------------------------ */

/* A few slots per thread, so a thread that alternates between contexts keeps each one's last
 * message. Slot ctx NULL holds jit_context_create's failures. */
#define ERROR_SLOTS 8
typedef struct error_slot {
    const jit_context_t *ctx;
    unsigned stamp;
    char msg[JIT__MSG_MAX];
} error_slot_t;
static _Thread_local error_slot_t t_errors[ERROR_SLOTS];
static _Thread_local unsigned t_stamp;

static error_slot_t *slot_for(const jit_context_t *ctx, int create) {
    error_slot_t *oldest = &t_errors[0];
    for (int i = 0; i < ERROR_SLOTS; i++) {
        if (t_errors[i].stamp && t_errors[i].ctx == ctx)
            return &t_errors[i];
        if (t_errors[i].stamp < oldest->stamp)
            oldest = &t_errors[i];
    }
    if (!create)
        return NULL;
    oldest->ctx = ctx;
    return oldest;
}

static void set_error(const jit_context_t *ctx, const char *msg) {
    error_slot_t *s = slot_for(ctx, 1);
    s->stamp = ++t_stamp;
    snprintf(s->msg, sizeof(s->msg), "%s", msg);
}

const char *jit_last_error(const jit_context_t *ctx) {
    error_slot_t *s = slot_for(ctx, 0);
    return s ? s->msg : "";
}

jit_status_t jit__ctx_error(const jit_context_t *ctx, jit__diag_t *d) {
    jit_status_t st = d->status;
    char msg[JIT__MSG_MAX];
    snprintf(msg, sizeof(msg), "%s", d->msg[0] ? d->msg : jit_status_string(st));
    if (d->log && *d->log) {
        /* The compile log belongs with the message: a user sees why NVRTC refused. */
        size_t n = strlen(msg);
        snprintf(msg + n, sizeof(msg) - n, "\n%s", d->log);
    }
    set_error(ctx, msg);
    if (ctx)
        jit__log(ctx->log_level, JIT_LOG_DEBUG, "%s", msg);
    jit__diag_clear(d);
    return st;
}

/* ---- create / destroy ------------------------------------------------------------------ */

/* Arch and SM count of the device a context would run on: the current CUDA context's device,
 * else device 0. Silently nothing when there is no GPU. */
static void detect_device(const jit__arch_profile_t **arch, int *sm_count) {
    const jit__driver_t *drv;
    jit__diag_t d;
    jit__diag_init(&d);
    *arch = NULL;
    *sm_count = 0;
    if (jit__driver_get(&drv, &d) != JIT_OK)
        return;
    CUcontext cur = NULL;
    CUdevice dev = 0;
    if (drv->cuCtxGetCurrent(&cur) != CUDA_SUCCESS || !cur ||
        drv->cuCtxGetDevice(&dev) != CUDA_SUCCESS)
        drv->cuDeviceGet(&dev, 0);
    int major = 0, minor = 0, sms = 0;
    drv->cuDeviceGetAttribute(&major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, dev);
    drv->cuDeviceGetAttribute(&minor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, dev);
    drv->cuDeviceGetAttribute(&sms, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, dev);
    *arch = jit__arch_for_cc(major, minor);
    *sm_count = sms;
}

static void record_read(void *self, jit__toolchain_record_t **recs, size_t *n) {
    jit__cache_toolchains_read(self, recs, n);
}

static void record_save(void *self, const jit__toolchain_record_t *rec) {
    jit__cache_toolchains_save(self, rec);
}

/* Toolchain identities are remembered beside the kernels, so a process that only hits the cache
 * never opens NVRTC (jit/toolchain.c). jit/ cannot call cache/ (cache/ builds on jit/'s keys),
 * so the store is wired here. The process keeps it after this context is gone: a handle of its
 * own on the directory this context vetted. */
static void remember_toolchains(const jit__cache_t *cache) {
    char where[JIT__TOOLCHAIN_PATH_MAX];
    if (snprintf(where, sizeof(where), "%s/toolchains.json", jit__cache_dir(cache)) >=
        (int)sizeof(where))
        return;
    jit__cache_t *kept = jit__cache_share(cache);
    if (!kept)
        return;
    jit__toolchain_store_t store = {kept, record_read, record_save, where};
    if (!jit__toolchain_remember_in(&store))
        jit__cache_close(kept);
}

jit_status_t jit_context_create(const jit_context_options_t *opt, jit_context_t **out) {
    jit__diag_t d;
    jit__diag_init(&d);
    jit_context_options_t defaults;
    if (!out) {
        jit__fail(&d, JIT_INVALID_ARGUMENT, "jit_context_create: out is NULL");
        return jit__ctx_error(NULL, &d);
    }
    *out = NULL;
    if (!opt) {
        jit_context_options_init(&defaults);
        opt = &defaults;
    } else if (opt->struct_size < offsetof(jit_context_options_t, compile_mode)) {
        jit__fail(&d, JIT_INVALID_ARGUMENT,
                  "options.struct_size is %u, expected %zu: call jit_context_options_init",
                  opt->struct_size, sizeof(jit_context_options_t));
        return jit__ctx_error(NULL, &d);
    } else if (opt->struct_size < sizeof(jit_context_options_t)) {
        /* A caller built against an older header: its fields, and defaults for the rest. */
        jit_context_options_init(&defaults);
        memcpy(&defaults, opt, opt->struct_size);
        defaults.struct_size = sizeof(defaults);
        opt = &defaults;
    }
    jit_context_t *ctx = calloc(1, sizeof(*ctx));
    if (!ctx) {
        jit__fail(&d, JIT_OUT_OF_MEMORY, "jit_context_create: out of memory");
        return jit__ctx_error(NULL, &d);
    }
    if (jit__log_level_from_env(opt->log_level, &ctx->log_level, &d) != JIT_OK) {
        free(ctx);
        return jit__ctx_error(NULL, &d);
    }
    if (opt->compile_mode != JIT_COMPILE_ALWAYS && opt->compile_mode != JIT_COMPILE_NEVER) {
        jit__fail(&d, JIT_INVALID_ARGUMENT,
                  "options.compile_mode is %d: use JIT_COMPILE_ALWAYS or JIT_COMPILE_NEVER",
                  (int)opt->compile_mode);
        free(ctx);
        return jit__ctx_error(NULL, &d);
    }
    if (jit__compile_mode_from_env(opt->compile_mode, &ctx->compile_mode, &d) != JIT_OK) {
        free(ctx);
        return jit__ctx_error(NULL, &d);
    }
    const jit__arch_profile_t *dev_arch;
    int dev_sms;
    detect_device(&dev_arch, &dev_sms);
    if (opt->arch && *opt->arch) {
        ctx->arch = jit__arch_find(opt->arch);
        if (!ctx->arch) {
            jit__fail(&d, JIT_UNKNOWN_ARCH,
                      "unknown arch '%s' (known: sm_90a, sm_100a, sm_103a, sm_107a, sm_120a)",
                      opt->arch);
            goto fail;
        }
    } else {
        ctx->arch = dev_arch;
    }
    if (opt->sm_count < 0) {
        jit__fail(&d, JIT_INVALID_ARGUMENT, "sm_count %d is negative", opt->sm_count);
        goto fail;
    }
    if (opt->sm_count > 0)
        ctx->sm_count = opt->sm_count;
    else if (ctx->arch && ctx->arch == dev_arch && dev_sms > 0)
        ctx->sm_count = dev_sms;
    else if (ctx->arch)
        ctx->sm_count = ctx->arch->default_sm_count;
    if (opt->toolkit_dir)
        snprintf(ctx->toolkit_dir, sizeof(ctx->toolkit_dir), "%s", opt->toolkit_dir);
    if (jit__cache_open(opt->cache_dir, opt->cache_max_bytes, ctx->log_level, &ctx->cache, &d) !=
        JIT_OK)
        goto fail;
    remember_toolchains(ctx->cache);
    pthread_mutex_init(&ctx->lock, NULL);
    pthread_cond_init(&ctx->inflight_done, NULL);
    if (jit__kernel_table_init(ctx, &d) != JIT_OK)
        goto fail_locks;
    jit__log(ctx->log_level, JIT_LOG_INFO, "context: %s with %d SMs, cache %s%s, on a miss: %s",
             ctx->arch ? ctx->arch->name : "no arch", ctx->sm_count, jit__cache_dir(ctx->cache),
             jit__cache_writable(ctx->cache) ? "" : " (memory only)",
             ctx->compile_mode == JIT_COMPILE_NEVER ? "fail (mode never)" : "build the kernel");
    *out = ctx;
    return JIT_OK;
fail_locks:
    pthread_mutex_destroy(&ctx->lock);
    pthread_cond_destroy(&ctx->inflight_done);
    jit__cache_close(ctx->cache);
fail:
    free(ctx);
    return jit__ctx_error(NULL, &d);
}

void jit_context_destroy(jit_context_t *ctx) {
    if (!ctx)
        return;
    jit__kernel_table_free(ctx);
    for (jit__cubin_rec_t *r = ctx->cubins, *next; r; r = next) {
        next = r->next;
        free(r->cubin);
        free(r->source);
        free(r);
    }
    jit__cache_close(ctx->cache);
    pthread_mutex_destroy(&ctx->lock);
    pthread_cond_destroy(&ctx->inflight_done);
    free(ctx);
}

const char *jit_context_arch(const jit_context_t *ctx) {
    return ctx && ctx->arch ? ctx->arch->name : "";
}

int jit_context_sm_count(const jit_context_t *ctx) {
    return ctx ? ctx->sm_count : 0;
}

jit_status_t jit_context_stats(const jit_context_t *ctx, jit_stats_t *out) {
    jit__diag_t d;
    jit__diag_init(&d);
    if (!ctx || !out) {
        jit__fail(&d, JIT_INVALID_ARGUMENT, "jit_context_stats: context or out is NULL");
        return jit__ctx_error(ctx, &d);
    }
    if (out->struct_size < sizeof(jit_stats_t)) {
        jit__fail(&d, JIT_INVALID_ARGUMENT,
                  "stats.struct_size is %u, expected %zu: call jit_stats_init", out->struct_size,
                  sizeof(jit_stats_t));
        return jit__ctx_error(ctx, &d);
    }
    jit__ctx_counters_t *c = (jit__ctx_counters_t *)&ctx->counters;
    out->memory_hits = atomic_load_explicit(&c->memory_hits, memory_order_relaxed);
    out->disk_hits = atomic_load_explicit(&c->disk_hits, memory_order_relaxed);
    out->compiles = atomic_load_explicit(&c->compiles, memory_order_relaxed);
    out->compile_seconds =
        1e-9 * (double)atomic_load_explicit(&c->compile_ns, memory_order_relaxed);
    out->not_in_cache = atomic_load_explicit(&c->not_in_cache, memory_order_relaxed);
    out->failures = atomic_load_explicit(&c->failures, memory_order_relaxed);
    return JIT_OK;
}
