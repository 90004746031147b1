/*
 * jit_inspect: the pipeline stopped at one stage, returning what that stage holds as text.
 * Key, plan and source need no compile; PTX and the manifest entry compile (or hit the cache).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "compile.h"
#include "family.h"
#include "pipeline.h"

void jit_free(void *p) {
    free(p);
}

static char *key_text(const jit__key_t *key, const jit__plan_t *plan, const jit__toolchain_t *tc) {
    char *out = malloc(JIT_KEY_TEXT_MAX + 512);
    if (!out)
        return NULL;
    int n = snprintf(out, JIT_KEY_TEXT_MAX + 512, "hash   %s\nkey    %s\ntarget %s", key->hash,
                     key->text, key->target);
    if (key->fallback && tc)
        snprintf(out + n, (size_t)(JIT_KEY_TEXT_MAX + 512 - n),
                 " (fallback: NVRTC %d.%d cannot target %s; the source is assembled for %s as a "
                 "check and the cubin is built for the family target %s)\n",
                 tc->id.nvrtc_major, tc->id.nvrtc_minor, plan->arch->name, plan->arch->check_target,
                 key->target);
    else
        snprintf(out + n, (size_t)(JIT_KEY_TEXT_MAX + 512 - n), " (native)\n");
    return out;
}

/* The PTX of a kernel: from the cache where an older build stored one, else compiled now (the
 * pipeline builds cubins without it: jit/compile.h says why). */
static char *ptx_of(jit_context_t *ctx, const jit__toolchain_t *tc, const jit__plan_t *plan,
                    const jit__key_t *key, const jit__obtained_t *got, jit__diag_t *d) {
    char *ptx = NULL;
    jit__diag_t miss;
    jit__diag_init(&miss);
    if (jit__cache_read_file(ctx->cache, got->entry.hash, ".ptx", &ptx, &miss) == JIT_OK) {
        jit__diag_clear(&miss);
        return ptx;
    }
    jit__diag_clear(&miss);
    if (ctx->compile_mode == JIT_COMPILE_NEVER) {
        jit__fail(d, JIT_NOT_IN_CACHE,
                  "the PTX of kernel %s is not in the cache %s and compiling is off "
                  "(JITGEMM_COMPILE=never or compile_mode JIT_COMPILE_NEVER)",
                  got->entry.hash, jit__cache_dir(ctx->cache));
        return NULL;
    }
    if (!tc) {
        jit__fail(d, JIT_TOOLCHAIN_NOT_FOUND,
                  "the PTX of kernel %s needs NVRTC, and none was found", key->hash);
        return NULL;
    }
    char *source = NULL;
    if (jit__generate(plan, key, &source, d) != JIT_OK)
        return NULL;
    jit__compiled_t c;
    if (jit__compile(tc, source, jit__plan_kernel_name(plan), key->target, JIT__COMPILE_PTX, &c,
                     d) == JIT_OK) {
        ptx = c.ptx;
        c.ptx = NULL;
    }
    jit__compiled_free(&c);
    free(source);
    return ptx;
}

jit_status_t jit_inspect(jit_context_t *ctx, const jit_problem_t *problem, jit_inspect_what_t what,
                         char **out) {
    jit__diag_t d;
    jit__diag_init(&d);
    if (!ctx || !out) {
        jit__fail(&d, JIT_INVALID_ARGUMENT, "jit_inspect: context or out is NULL");
        return jit__ctx_error(ctx, &d);
    }
    *out = NULL;
    if (what < JIT_INSPECT_KEY || what > JIT_INSPECT_ENTRY) {
        jit__fail(&d, JIT_INVALID_ARGUMENT, "jit_inspect: unknown stage %d", (int)what);
        return jit__ctx_error(ctx, &d);
    }
    jit__plan_t plan;
    if (jit__ctx_plan(ctx, problem, &plan, &d) != JIT_OK)
        return jit__ctx_error(ctx, &d);
    if (what == JIT_INSPECT_PLAN) {
        *out = jit__plan_to_json(&plan);
        if (!*out) {
            jit__fail(&d, JIT_OUT_OF_MEMORY, "plan JSON");
            return jit__ctx_error(ctx, &d);
        }
        return JIT_OK;
    }
    char tc_why[JIT__MSG_MAX] = "";
    const jit__toolchain_t *tc = jit__ctx_toolchain(ctx, tc_why, sizeof(tc_why));
    jit__key_set_t ks;
    if (jit__ctx_keys(ctx, tc, tc_why, &plan, &ks, &d) != JIT_OK)
        return jit__ctx_error(ctx, &d);
    const jit__key_t key = *jit__key_set_main(&ks);
    if (what == JIT_INSPECT_KEY) {
        *out = key_text(&key, &plan, tc);
    } else if (what == JIT_INSPECT_SOURCE) {
        /* Generation is deterministic and cheap, so the source is regenerated rather than
         * read back: it is byte-identical to what was compiled under this key. */
        if (jit__generate(&plan, &key, out, &d) != JIT_OK)
            return jit__ctx_error(ctx, &d);
    } else {
        jit__obtained_t got;
        if (jit__ctx_obtain(ctx, tc, &plan, &ks, 0, &got, &d) != JIT_OK)
            return jit__ctx_error(ctx, &d);
        if (what == JIT_INSPECT_PTX) {
            *out = ptx_of(ctx, tc, &plan, &key, &got, &d);
            if (!*out)
                return jit__ctx_error(ctx, &d);
        } else {
            *out = jit__cache_entry_to_json(&got.entry);
        }
    }
    if (!*out) {
        jit__fail(&d, JIT_OUT_OF_MEMORY, "jit_inspect output");
        return jit__ctx_error(ctx, &d);
    }
    return JIT_OK;
}

jit_status_t jit_inspect_cubin(jit_context_t *ctx, const jit_problem_t *problem, void **cubin,
                               size_t *size) {
    jit__diag_t d;
    jit__diag_init(&d);
    if (!ctx || !problem || !cubin || !size) {
        jit__fail(&d, JIT_INVALID_ARGUMENT, "jit_inspect_cubin: an argument is NULL");
        return jit__ctx_error(ctx, &d);
    }
    *cubin = NULL;
    *size = 0;
    jit__plan_t plan;
    jit__key_set_t ks;
    jit__obtained_t got;
    char tc_why[JIT__MSG_MAX] = "";
    if (jit__ctx_plan(ctx, problem, &plan, &d) != JIT_OK)
        return jit__ctx_error(ctx, &d);
    /* A cached cubin needs no NVRTC: only a miss does (the key set says why none is there). */
    const jit__toolchain_t *tc = jit__ctx_toolchain(ctx, tc_why, sizeof(tc_why));
    if (jit__ctx_keys(ctx, tc, tc_why, &plan, &ks, &d) != JIT_OK ||
        jit__ctx_obtain(ctx, tc, &plan, &ks, 0, &got, &d) != JIT_OK)
        return jit__ctx_error(ctx, &d);
    /* The context owns its copy and may hand it to other threads: the caller gets its own. */
    *cubin = malloc(got.size ? got.size : 1);
    if (!*cubin) {
        jit__fail(&d, JIT_OUT_OF_MEMORY, "jit_inspect_cubin: %zu bytes", got.size);
        return jit__ctx_error(ctx, &d);
    }
    memcpy(*cubin, got.cubin, got.size);
    *size = got.size;
    return JIT_OK;
}
