/*
 * The cache stage: key set -> cubin, shared by jit_gemm, jit_prewarm and jit_inspect. Lookup
 * order: this context's memory, the disk cache (each key of the set, most preferred first), then
 * the compile stage for the set's build key, and the publish of what it built. A key is compiled
 * once however many ask for it: threads of this process wait on the in-flight list, other
 * processes on the cache's per-key file lock (and then find the published entry). Nothing here
 * needs a toolchain until a miss must be compiled.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "family.h"
#include "pipeline.h"

static void count(atomic_uint_fast64_t *counter, uint64_t n) {
    atomic_fetch_add_explicit(counter, n, memory_order_relaxed);
}

/* Whether an entry may be served: one built by an NVRTC newer than `newest_nvrtc` (0: any) is
 * refused, for a driver that could not load it. */
static int acceptable(const jit__cache_entry_t *e, int newest_nvrtc) {
    return newest_nvrtc == 0 ||
           e->toolchain.nvrtc_major * 100 + e->toolchain.nvrtc_minor <= newest_nvrtc;
}

/* The newest record first: a replacement is inserted in front of what it replaces. */
static jit__cubin_rec_t *find_rec(jit_context_t *ctx, const char *hash, int newest_nvrtc) {
    for (jit__cubin_rec_t *r = ctx->cubins; r; r = r->next)
        if (strcmp(r->entry.hash, hash) == 0 && acceptable(&r->entry, newest_nvrtc))
            return r;
    return NULL;
}

static int is_inflight(jit_context_t *ctx, const char *hash) {
    for (jit__inflight_t *f = ctx->inflight; f; f = f->next)
        if (strcmp(f->hash, hash) == 0)
            return 1;
    return 0;
}

static void fill_out(const jit__cubin_rec_t *r, int compiled, jit__obtained_t *out) {
    out->entry = r->entry;
    out->cubin = r->cubin;
    out->size = r->size;
    out->compiled = compiled;
}

/* A verified disk entry for `key` that may be served, else *found = 0. */
static jit_status_t disk_get(jit_context_t *ctx, const jit__key_t *key, int newest_nvrtc,
                             jit__cubin_rec_t *rec, int *found, jit__diag_t *d) {
    jit_status_t st =
        jit__cache_get(ctx->cache, key->hash, &rec->entry, &rec->cubin, &rec->size, found, d);
    if (st == JIT_OK && *found && !acceptable(&rec->entry, newest_nvrtc)) {
        jit__log(ctx->log_level, JIT_LOG_INFO,
                 "kernel %s: the cached cubin is from NVRTC %d.%d, newer than this driver takes; "
                 "rebuilding it",
                 key->hash, rec->entry.toolchain.nvrtc_major, rec->entry.toolchain.nvrtc_minor);
        free(rec->cubin);
        rec->cubin = NULL;
        *found = 0;
    }
    return st;
}

/* The disk cache, else a compile of the build key under its per-key lock. */
static jit_status_t disk_or_compile(jit_context_t *ctx, const jit__toolchain_t *tc,
                                    const jit__plan_t *plan, const jit__key_set_t *ks,
                                    int newest_nvrtc, jit__cubin_rec_t *rec, int *compiled,
                                    jit__diag_t *d) {
    int found = 0;
    *compiled = 0;
    const char *name = jit__plan_kernel_name(plan);
    for (int i = 0; i < ks->n; i++) {
        jit_status_t st = disk_get(ctx, &ks->keys[i], newest_nvrtc, rec, &found, d);
        if (st != JIT_OK)
            return st;
        if (found) {
            jit__log(ctx->log_level, JIT_LOG_INFO, "kernel %s (%s): disk hit (%s, NVRTC %d.%d)",
                     ks->keys[i].hash, name, rec->entry.target, rec->entry.toolchain.nvrtc_major,
                     rec->entry.toolchain.nvrtc_minor);
            count(&ctx->counters.disk_hits, 1);
            return JIT_OK;
        }
    }
    if (ctx->compile_mode == JIT_COMPILE_NEVER) {
        /* No lock and no wait: a process that may not compile has nothing to gain from waiting
         * on one that does, and the caller wants the answer now. */
        const jit__key_t *want = &ks->keys[0];
        jit__log(ctx->log_level, JIT_LOG_INFO,
                 "kernel %s (%s): miss, not compiled (compile mode never)", want->hash, name);
        count(&ctx->counters.not_in_cache, 1);
        return jit__fail(d, JIT_NOT_IN_CACHE,
                         "kernel %s (%s for %s) is not in the cache %s and compiling is off "
                         "(JITGEMM_COMPILE=never or compile_mode JIT_COMPILE_NEVER); prewarm it "
                         "(jitgemm prewarm) or allow compiles; key: %.600s",
                         want->hash, name, want->target, jit__cache_dir(ctx->cache), want->text);
    }
    if (ks->build < 0)
        return jit__fail(d, ks->no_build_status, "%s", ks->no_build_why);
    const jit__key_t *key = &ks->keys[ks->build];
    int token = -1;
    jit_status_t st = jit__cache_lock_key(ctx->cache, key->hash, &token, d);
    if (st != JIT_OK)
        return st;
    /* Another process may have published it while we waited for the lock. */
    st = disk_get(ctx, key, newest_nvrtc, rec, &found, d);
    if (st == JIT_OK && found) {
        jit__log(ctx->log_level, JIT_LOG_INFO,
                 "kernel %s (%s): disk hit (published by another process while this one waited)",
                 key->hash, name);
        count(&ctx->counters.disk_hits, 1);
    }
    if (st == JIT_OK && !found) {
        jit__log(ctx->log_level, JIT_LOG_INFO,
                 "kernel %s (%s): miss, compiling for %s with NVRTC %d.%d (%s)", key->hash, name,
                 key->target, tc->id.nvrtc_major, tc->id.nvrtc_minor,
                 tc->dir[0] ? tc->dir : "loader default path");
        st = jit__ctx_compile(ctx, tc, plan, key, rec, d);
        if (st == JIT_OK) {
            *compiled = 1;
            count(&ctx->counters.compiles, 1);
            count(&ctx->counters.compile_ns, (uint64_t)(rec->entry.compile_seconds * 1e9));
            jit__log(ctx->log_level, JIT_LOG_INFO, "kernel %s (%s): compiled in %.2f s", key->hash,
                     name, rec->entry.compile_seconds);
            jit__diag_t pd;
            jit__diag_init(&pd);
            /* A cache that cannot take the entry costs a recompile next time, nothing more. */
            if (jit__cache_put(ctx->cache, &rec->entry, rec->cubin, rec->size, rec->source, NULL,
                               &pd) != JIT_OK)
                jit__log(ctx->log_level, JIT_LOG_WARN, "could not store kernel %s: %s", key->hash,
                         pd.msg);
            jit__diag_clear(&pd);
        } else {
            jit__log(ctx->log_level, JIT_LOG_INFO, "kernel %s (%s): compile failed: %s", key->hash,
                     name, jit_status_name(st));
        }
    }
    jit__cache_unlock_key(ctx->cache, token);
    return st;
}

jit_status_t jit__ctx_obtain(jit_context_t *ctx, const jit__toolchain_t *tc,
                             const jit__plan_t *plan, const jit__key_set_t *ks, int newest_nvrtc,
                             jit__obtained_t *out, jit__diag_t *d) {
    memset(out, 0, sizeof(*out));
    /* Threads that want the same kernel wait for one another under its most preferred key:
     * the same plan gives the same set, whichever key ends up serving it. */
    const char *flight = ks->keys[0].hash;
    pthread_mutex_lock(&ctx->lock);
    for (;;) {
        jit__cubin_rec_t *r = NULL;
        for (int i = 0; i < ks->n && !r; i++)
            r = find_rec(ctx, ks->keys[i].hash, newest_nvrtc);
        if (r) {
            fill_out(r, 0, out);
            pthread_mutex_unlock(&ctx->lock);
            count(&ctx->counters.memory_hits, 1);
            /* The hot path: checked here so a quiet context does not format anything. */
            if (ctx->log_level >= JIT_LOG_DEBUG)
                jit__log(ctx->log_level, JIT_LOG_DEBUG, "kernel %s (%s): memory hit", r->entry.hash,
                         jit__plan_kernel_name(plan));
            return JIT_OK;
        }
        if (!is_inflight(ctx, flight))
            break;
        pthread_cond_wait(&ctx->inflight_done, &ctx->lock);
    }
    jit__inflight_t me;
    snprintf(me.hash, sizeof(me.hash), "%s", flight);
    me.next = ctx->inflight;
    ctx->inflight = &me;
    pthread_mutex_unlock(&ctx->lock);

    jit__cubin_rec_t *rec = calloc(1, sizeof(*rec));
    int compiled = 0;
    jit_status_t st = rec ? disk_or_compile(ctx, tc, plan, ks, newest_nvrtc, rec, &compiled, d)
                          : jit__fail(d, JIT_OUT_OF_MEMORY, "cubin record");

    pthread_mutex_lock(&ctx->lock);
    for (jit__inflight_t **pp = &ctx->inflight; *pp; pp = &(*pp)->next) {
        if (*pp == &me) {
            *pp = me.next;
            break;
        }
    }
    if (st == JIT_OK) {
        rec->next = ctx->cubins;
        ctx->cubins = rec;
        fill_out(rec, compiled, out);
    } else {
        if (st != JIT_NOT_IN_CACHE)
            count(&ctx->counters.failures, 1);
        if (rec) {
            free(rec->cubin);
            free(rec->source);
            free(rec);
        }
    }
    pthread_cond_broadcast(&ctx->inflight_done);
    pthread_mutex_unlock(&ctx->lock);
    return st;
}
