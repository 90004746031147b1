/*
 * Canonical key text and its hash. The text lists every input the plan is a function of, plus
 * the plan's main choices (for a reader: two keys that differ say where), plus what the cubin
 * is built with. Fields are in a fixed order; adding one means bumping JIT_GENERATOR_VERSION.
 */
#include "key.h"

#include <stdio.h>
#include <string.h>

#define XXH_INLINE_ALL
#include <xxhash.h>

static const char *route_name(jit__route_t r) {
    switch (r) {
    case JIT_ROUTE_MMA_SYNC:
        return "mma_sync";
    case JIT_ROUTE_TCGEN05:
        return "tcgen05";
    default:
        return "none";
    }
}

void jit__hash_hex(const void *data, size_t len, char out[JIT_KEY_HASH_LEN + 1]) {
    XXH128_hash_t h = XXH3_128bits(data, len);
    snprintf(out, JIT_KEY_HASH_LEN + 1, "%016llx%016llx", (unsigned long long)h.high64,
             (unsigned long long)h.low64);
}

void jit__key_make(const jit__plan_t *plan, const jit__toolchain_id_t *tc, const char *target,
                   int fallback, jit__key_t *out) {
    memset(out, 0, sizeof(*out));
    const jit__gemm_spec_t *s = &plan->spec;
    snprintf(out->text, sizeof(out->text),
             "jitgemm gen=%d route=%s arch=%s target=%s fallback=%d nvrtc=%d.%d "
             "nvjitlink=%d.%d sm_count=%d band=%d n=%lld k=%lld a=%s b=%s out=%s scales=%s "
             "epilogue=%s tile=%dx%dx%d stages=%d warps=%dx%d threads=%d cluster=%dx%d "
             "fallback_cluster=%dx%d",
             JIT_GENERATOR_VERSION, route_name(plan->route), plan->arch->name, target, fallback,
             tc->nvrtc_major, tc->nvrtc_minor, tc->nvjitlink_major, tc->nvjitlink_minor,
             plan->sm_count, plan->token_band, (long long)s->n, (long long)s->k,
             jit_dtype_name(s->a), jit_dtype_name(s->b), jit_dtype_name(s->out),
             jit_scale_mode_name(s->scales), jit_epilogue_name(s->epilogue), plan->tile_m,
             plan->tile_n, plan->tile_k, plan->stages, plan->warps_m, plan->warps_n,
             plan->threads, plan->cluster_m, plan->cluster_n, plan->fallback_cluster_m,
             plan->fallback_cluster_n);
    snprintf(out->target, sizeof(out->target), "%s", target);
    out->fallback = fallback;
    jit__hash_hex(out->text, strlen(out->text), out->hash);
}
