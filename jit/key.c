/*
 * Canonical key text and its hash. A key names what the cubin is: the kernel family, the device
 * code it includes, the arch and the target it is built for, the plan's choices (for a reader:
 * two keys that differ say where), and the hash of the generated code with its comments taken
 * out. Nothing else: not the SM count (a launch-time value, and the planner's use of it shows
 * in the choices it made), not the toolchain (recorded in the entry, see docs/cache.md), so a
 * cache built on one machine serves another, and a key is computed without NVRTC. The common
 * fields come first in a fixed order, then the fields the plan's family owns, then the code
 * hash. Adding, removing or re-ordering a common field means bumping JIT_KEY_FORMAT_VERSION.
 */
#include "key.h"

#include "device_files.h"
#include "family.h"
#include "strbuf.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define XXH_INLINE_ALL
#include <xxhash.h>

void jit__hash_hex(const void *data, size_t len, char out[JIT_KEY_HASH_LEN + 1]) {
    XXH128_hash_t h = XXH3_128bits(data, len);
    snprintf(out, JIT_KEY_HASH_LEN + 1, "%016llx%016llx", (unsigned long long)h.high64,
             (unsigned long long)h.low64);
}

/* Copy `src` without its comments: a block comment becomes one space (as the C preprocessor
 * sees it), a line comment ends at its newline. String and character literals are copied
 * whole, so a "//" inside inline PTX text stays. Then every line loses its trailing blanks,
 * and blank lines and a final newline are dropped, so a comment on a line of its own leaves
 * nothing. Returns the length written to `out` (at most strlen(src)). */
size_t jit__code_strip_comments(const char *src, char *out) {
    size_t o = 0, line_start = 0;
    enum { CODE, STRING, CHAR, LINE_COMMENT, BLOCK_COMMENT } state = CODE;
    for (const char *p = src; *p; p++) {
        char c = *p;
        switch (state) {
        case CODE:
            if (c == '/' && p[1] == '*') {
                state = BLOCK_COMMENT;
                p++;
                continue;
            }
            if (c == '/' && p[1] == '/') {
                state = LINE_COMMENT;
                p++;
                continue;
            }
            if (c == '"')
                state = STRING;
            else if (c == '\'')
                state = CHAR;
            break;
        case STRING:
        case CHAR:
            if (c == '\\' && p[1]) {
                out[o++] = c;
                c = *++p;
            } else if ((state == STRING && c == '"') || (state == CHAR && c == '\'')) {
                state = CODE;
            }
            break;
        case LINE_COMMENT:
            if (c != '\n')
                continue;
            state = CODE;
            break;
        case BLOCK_COMMENT:
            if (c == '*' && p[1] == '/') {
                state = CODE;
                p++;
                c = ' ';
                break;
            }
            continue;
        }
        if (c == '\n' && state == CODE) {
            while (o > line_start && (out[o - 1] == ' ' || out[o - 1] == '\t'))
                o--;
            if (o == line_start)
                continue; /* a blank line, or one that held only comments */
            out[o++] = '\n';
            line_start = o;
            continue;
        }
        out[o++] = c;
    }
    while (o > line_start && (out[o - 1] == ' ' || out[o - 1] == '\t'))
        o--;
    if (o > 0 && out[o - 1] == '\n')
        o--; /* so a final newline is no difference either */
    return o;
}

/* The common fields and the family's, without the code hash. */
static int key_fields(const jit__plan_t *plan, const char *target, int fallback, jit__sb_t *sb) {
    const jit__gemm_spec_t *s = &plan->spec;
    jit__sb_printf(sb,
                   "jitgemm key=%d family=%s device=%s arch=%s target=%s fallback=%d band=%d "
                   "n=%lld k=%lld a=%s b=%s out=%s scales=%s epilogue=%s tile=%dx%dx%d stages=%d "
                   "threads=%d cluster=%dx%d fallback_cluster=%dx%d",
                   JIT_KEY_FORMAT_VERSION, plan->family->name, jit__device_files_hash(),
                   plan->arch->name, target, fallback, plan->token_band, (long long)s->n,
                   (long long)s->k, jit_dtype_name(s->a), jit_dtype_name(s->b),
                   jit_dtype_name(s->out), jit_scale_mode_name(s->scales),
                   jit_epilogue_name(s->epilogue), plan->tile_m, plan->tile_n, plan->tile_k,
                   plan->stages, plan->threads, plan->cluster_m, plan->cluster_n,
                   plan->fallback_cluster_m, plan->fallback_cluster_n);
    plan->family->key_fields(plan, sb);
    return !jit__sb_failed(sb);
}

static void set_text(jit__key_t *out, const char *text, const char *target, int fallback) {
    snprintf(out->text, sizeof(out->text), "%s", text);
    snprintf(out->target, sizeof(out->target), "%s", target);
    out->fallback = fallback;
    /* A key that does not fit is a bug of the family that made it that long, but it must
     * still never alias a shorter key: the hash is taken over the whole text. */
    jit__hash_hex(text, strlen(text), out->hash);
}

jit_status_t jit__key_make(const jit__plan_t *plan, const char *target, int fallback,
                           jit__key_t *out, jit__diag_t *d) {
    memset(out, 0, sizeof(*out));
    jit__sb_t sb;
    jit__sb_init(&sb);
    if (!key_fields(plan, target, fallback, &sb)) {
        jit__sb_free(&sb);
        return jit__fail(d, JIT_OUT_OF_MEMORY, "key text of %s", plan->family->name);
    }
    /* The generator quotes the key in a comment; the code it emits must not depend on the code
     * hash, so it is given the key without one, and comments are left out of the hash. */
    set_text(out, sb.buf, target, fallback);
    char *source = NULL;
    jit_status_t st = plan->family->generate(plan, out, &source, d);
    if (st != JIT_OK) {
        memset(out, 0, sizeof(*out));
        jit__sb_free(&sb);
        return st;
    }
    char *code = malloc(strlen(source) + 1);
    if (!code) {
        free(source);
        jit__sb_free(&sb);
        memset(out, 0, sizeof(*out));
        return jit__fail(d, JIT_OUT_OF_MEMORY, "key of %s: code copy", plan->family->name);
    }
    char code_hash[JIT_KEY_HASH_LEN + 1];
    jit__hash_hex(code, jit__code_strip_comments(source, code), code_hash);
    free(code);
    free(source);
    jit__sb_printf(&sb, " code=%s", code_hash);
    st = jit__sb_failed(&sb) ? jit__fail(d, JIT_OUT_OF_MEMORY, "key text of %s", plan->family->name)
                             : JIT_OK;
    if (st == JIT_OK)
        set_text(out, sb.buf, target, fallback);
    else
        memset(out, 0, sizeof(*out));
    jit__sb_free(&sb);
    return st;
}
