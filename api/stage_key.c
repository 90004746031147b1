/*
 * The key stage: plan -> the set of specialization keys its cubin may be found under, and which
 * of them a compile here would build (pipeline.h says how the toolchain decides that). The key
 * text itself is jit/key.c's.
 */
#include <stdio.h>
#include <string.h>

#include "pipeline.h"

const jit__key_t *jit__key_set_main(const jit__key_set_t *ks) {
    return &ks->keys[ks->build >= 0 ? ks->build : 0];
}

jit_status_t jit__ctx_keys(const jit_context_t *ctx, const jit__toolchain_t *tc, const char *tc_why,
                           const jit__plan_t *plan, jit__key_set_t *ks, jit__diag_t *d) {
    (void)ctx;
    memset(ks, 0, sizeof(*ks));
    ks->build = -1;
    const jit__arch_profile_t *a = plan->arch;
    jit_status_t st = jit__key_make(plan, a->native_target, 0, &ks->keys[0], d);
    if (st != JIT_OK)
        return st;
    ks->n = 1;
    if (tc && jit__toolchain_supports(tc, a->sm)) {
        ks->build = 0;
        return JIT_OK;
    }
    const jit__arch_profile_t *fb = a->fallback_target ? jit__arch_find(a->check_target) : NULL;
    int fb_buildable = tc && fb && jit__toolchain_supports(tc, fb->sm);
    if (a->fallback_target) {
        /* A plan the fallback build refuses has no fallback key; the generator says why. */
        jit__diag_t fd;
        jit__diag_init(&fd);
        jit_status_t fst = jit__key_make(plan, a->fallback_target, 1, &ks->keys[1], &fd);
        if (fst == JIT_OK) {
            ks->n = 2;
            if (fb_buildable)
                ks->build = 1;
        } else if (fb_buildable) {
            ks->no_build_status = fst;
            snprintf(ks->no_build_why, sizeof(ks->no_build_why), "%s", fd.msg);
        }
        jit__diag_clear(&fd);
    }
    if (ks->build >= 0 || ks->no_build_status != JIT_OK)
        return JIT_OK;
    if (!tc) {
        ks->no_build_status = JIT_TOOLCHAIN_NOT_FOUND;
        snprintf(ks->no_build_why, sizeof(ks->no_build_why),
                 "kernel %s for %s is not in the cache and cannot be compiled here: %s",
                 ks->keys[0].hash, a->name, tc_why && *tc_why ? tc_why : "no NVRTC");
    } else {
        ks->no_build_status = JIT_UNSUPPORTED_ARCH;
        snprintf(ks->no_build_why, sizeof(ks->no_build_why),
                 "NVRTC %d.%d cannot target %s%s; run scripts/setup.sh for a newer NVRTC or "
                 "set JITGEMM_TOOLKIT_DIR",
                 tc->id.nvrtc_major, tc->id.nvrtc_minor, a->name,
                 a->fallback_target ? " nor its fallback" : "");
    }
    return JIT_OK;
}
