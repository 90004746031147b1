/*
 * The compile stage: which toolchain the context compiles with, and one key's cubin built from
 * the plan: the family's generator writes the source (jit__generate), NVRTC and nvJitLink
 * compile it (jit__compile), and the cache entry that will describe it is filled in. Publishing
 * it is the cache stage's.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "compile.h"
#include "device_files.h"
#include "family.h"
#include "pipeline.h"

const jit__toolchain_t *jit__ctx_toolchain(jit_context_t *ctx, char *why, size_t whysz) {
    pthread_mutex_lock(&ctx->lock);
    const jit__toolchain_t *have = ctx->exec_tc;
    pthread_mutex_unlock(&ctx->lock);
    if (have)
        return have;
    const jit__toolchain_t *tc = NULL;
    jit__diag_t d;
    jit__diag_init(&d);
    if (jit__toolchain_get(ctx->toolkit_dir, &tc, &d) != JIT_OK) {
        snprintf(why, whysz, "%s", d.msg);
        jit__diag_clear(&d);
        return NULL;
    }
    jit__diag_clear(&d);
    pthread_mutex_lock(&ctx->lock);
    int first = !ctx->exec_tc;
    if (first)
        ctx->exec_tc = tc;
    tc = ctx->exec_tc;
    pthread_mutex_unlock(&ctx->lock);
    if (first)
        jit__log(ctx->log_level, JIT_LOG_INFO,
                 "kernels launched by this context use NVRTC %d.%d (%s)", tc->id.nvrtc_major,
                 tc->id.nvrtc_minor, tc->dir[0] ? tc->dir : "loader default path");
    return tc;
}

jit_status_t jit__ctx_compile(jit_context_t *ctx, const jit__toolchain_t *tc,
                              const jit__plan_t *plan, const jit__key_t *key, jit__cubin_rec_t *rec,
                              jit__diag_t *d) {
    char *source = NULL;
    jit_status_t st = jit__generate(plan, key, &source, d);
    if (st != JIT_OK)
        return st;
    const char *name = jit__plan_kernel_name(plan);
    jit__compiled_t c;
    double check_seconds = 0;
    if (key->fallback) {
        /* The Rubin source must assemble for the arch it stands in for, not only for the
         * family target the cubin is built for. */
        st = jit__compile(tc, source, name, plan->arch->check_target, JIT__COMPILE_CHECK, &c, d);
        check_seconds = c.seconds;
        jit__compiled_free(&c);
        if (st != JIT_OK) {
            free(source);
            return st;
        }
    }
    st = jit__compile(tc, source, name, key->target, JIT__COMPILE_CUBIN, &c, d);
    if (st != JIT_OK) {
        jit__compiled_free(&c);
        free(source);
        return st;
    }
    if (c.spill_stores || c.spill_loads)
        jit__log(ctx->log_level, JIT_LOG_WARN, "%s for %s spills (%d bytes stored, %d loaded)",
                 name, key->target, c.spill_stores, c.spill_loads);
    jit__cache_entry_t *e = &rec->entry;
    memset(e, 0, sizeof(*e));
    snprintf(e->hash, sizeof(e->hash), "%s", key->hash);
    snprintf(e->key_text, sizeof(e->key_text), "%s", key->text);
    snprintf(e->arch, sizeof(e->arch), "%s", plan->arch->name);
    snprintf(e->target, sizeof(e->target), "%s", key->target);
    e->fallback = key->fallback;
    if (key->fallback)
        snprintf(e->check_target, sizeof(e->check_target), "%s", plan->arch->check_target);
    e->toolchain = tc->id;
    e->generator_version = JIT_KEY_FORMAT_VERSION;
    snprintf(e->device_hash, sizeof(e->device_hash), "%s", jit__device_files_hash());
    snprintf(e->kernel_name, sizeof(e->kernel_name), "%s", name);
    e->block[0] = (unsigned)plan->threads;
    e->block[1] = e->block[2] = 1;
    e->cluster[0] = (unsigned)(plan->cluster_m > 0 ? plan->cluster_m : 1);
    e->cluster[1] = (unsigned)(plan->cluster_n > 0 ? plan->cluster_n : 1);
    e->cluster[2] = 1;
    e->smem_bytes = plan->smem_bytes;
    e->registers = c.registers;
    e->spill_stores = c.spill_stores;
    e->spill_loads = c.spill_loads;
    e->stack_bytes = c.stack_bytes;
    e->compile_seconds = c.seconds + check_seconds;
    e->size = c.cubin_size;
    e->created = e->last_used = (int64_t)time(NULL);
    jit__hash_hex(c.cubin, c.cubin_size, e->checksum);
    rec->cubin = c.cubin;
    rec->size = c.cubin_size;
    rec->source = source;
    c.cubin = NULL;
    jit__compiled_free(&c);
    return JIT_OK;
}
