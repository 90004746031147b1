/*
 * Canonical key text and its hash. The text lists every input the plan is a function of, plus
 * the plan's main choices (for a reader: two keys that differ say where), plus what the cubin
 * is built from: the toolchain and the hash of the embedded device code. The common fields come
 * first in a fixed order, then the fields the plan's family owns. Adding, removing or
 * re-ordering a common field means bumping JIT_KEY_FORMAT_VERSION.
 */
#include "key.h"

#include "device_files.h"
#include "family.h"
#include "strbuf.h"

#include <stdio.h>
#include <string.h>

#define XXH_INLINE_ALL
#include <xxhash.h>

void jit__hash_hex(const void *data, size_t len, char out[JIT_KEY_HASH_LEN + 1]) {
    XXH128_hash_t h = XXH3_128bits(data, len);
    snprintf(out, JIT_KEY_HASH_LEN + 1, "%016llx%016llx", (unsigned long long)h.high64,
             (unsigned long long)h.low64);
}

void jit__key_make(const jit__plan_t *plan, const jit__toolchain_id_t *tc, const char *target,
                   int fallback, jit__key_t *out) {
    memset(out, 0, sizeof(*out));
    const jit__gemm_spec_t *s = &plan->spec;
    jit__sb_t sb;
    jit__sb_init(&sb);
    jit__sb_printf(&sb,
                   "jitgemm key=%d family=%s device=%s arch=%s target=%s fallback=%d "
                   "nvrtc=%d.%d nvjitlink=%d.%d sm_count=%d band=%d n=%lld k=%lld a=%s b=%s "
                   "out=%s scales=%s epilogue=%s tile=%dx%dx%d stages=%d threads=%d "
                   "cluster=%dx%d fallback_cluster=%dx%d",
                   JIT_KEY_FORMAT_VERSION, plan->family->name, jit__device_files_hash(),
                   plan->arch->name, target, fallback, tc->nvrtc_major, tc->nvrtc_minor,
                   tc->nvjitlink_major, tc->nvjitlink_minor, plan->sm_count, plan->token_band,
                   (long long)s->n, (long long)s->k, jit_dtype_name(s->a), jit_dtype_name(s->b),
                   jit_dtype_name(s->out), jit_scale_mode_name(s->scales),
                   jit_epilogue_name(s->epilogue), plan->tile_m, plan->tile_n, plan->tile_k,
                   plan->stages, plan->threads, plan->cluster_m, plan->cluster_n,
                   plan->fallback_cluster_m, plan->fallback_cluster_n);
    plan->family->key_fields(plan, &sb);
    /* A key that does not fit is a bug of the family that made it that long, but it must
     * still never alias a shorter key: the hash is taken over the whole text. */
    const char *text = jit__sb_failed(&sb) ? "" : sb.buf;
    snprintf(out->text, sizeof(out->text), "%s", text);
    snprintf(out->target, sizeof(out->target), "%s", target);
    out->fallback = fallback;
    jit__hash_hex(text, strlen(text), out->hash);
    jit__sb_free(&sb);
}
