/*
 * `jitgemm prewarm` targets: --target parsing with ARCH:all, and the set of keys earlier targets
 * of a run covered. See prewarm_targets.h.
 */
#include "prewarm_targets.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "arch.h"
#include "arch_parts.h"
#include "cli.h"

static int add_target(const char *verb, jit__cli_targets_t *out, const char *arch, int sm_count,
                      const char *parts) {
    if (out->count == JIT_CLI_MAX_TARGETS)
        return jit__cli_usage(verb, "more than %d targets (ARCH:all counts one per SM count)",
                              JIT_CLI_MAX_TARGETS);
    snprintf(out->parts_text[out->count], sizeof(out->parts_text[0]), "%s", parts);
    out->items[out->count] = (jit__cli_target_t){arch, sm_count, out->parts_text[out->count]};
    out->count++;
    return 0;
}

/* ARCH:all: every distinct SM count of the arch's parts. An arch none of whose parts has a
 * public SM count (sm_107a) plans for the profile's default, with a warning that says so. */
static int add_all(const char *verb, jit__cli_targets_t *out, const char *arch_text) {
    const jit__arch_profile_t *arch = jit__arch_find(arch_text);
    int counts[JIT_CLI_MAX_TARGETS];
    int n = jit__arch_part_sm_counts(arch, counts, JIT_CLI_MAX_TARGETS);
    if (n > JIT_CLI_MAX_TARGETS)
        return jit__cli_usage(verb, "%s has %d SM counts, more than %d targets", arch->name, n,
                              JIT_CLI_MAX_TARGETS);
    if (n == 0) {
        fprintf(stderr,
                "jitgemm: warning: no %s part has a public SM count (docs/plan.md); "
                "--target %s:all plans for the profile's default, %d SMs\n",
                arch->name, arch_text, arch->default_sm_count);
        return add_target(verb, out, arch_text, arch->default_sm_count, "");
    }
    int rc = 0;
    for (int i = 0; i < n && !rc; i++) {
        char names[160];
        rc = add_target(verb, out, arch_text, counts[i],
                        jit__arch_part_names(arch, counts[i], names, sizeof(names)));
    }
    return rc;
}

int jit__cli_targets_parse(const char *verb, const char *const *texts, size_t n,
                           jit__cli_targets_t *out) {
    out->count = 0;
    if (n > JIT_CLI_MAX_TARGETS_GIVEN)
        return jit__cli_usage(verb, "--target given more than %d times", JIT_CLI_MAX_TARGETS_GIVEN);
    for (size_t i = 0; i < n; i++) {
        char *buf = out->arch_text[i];
        const char *text = texts[i];
        if (snprintf(buf, sizeof(out->arch_text[i]), "%s", text) >= (int)sizeof(out->arch_text[i]))
            return jit__cli_usage(verb, "--target '%.40s...': too long", text);
        char *colon = strchr(buf, ':');
        int64_t sms = -1;
        int rc, all = 0;
        if (colon) {
            *colon = '\0';
            all = strcmp(colon + 1, "all") == 0;
            if (!all && (rc = jit__cli_int(verb, "target", colon + 1, 1, 1000000, &sms)))
                return rc;
        }
        if (!*buf)
            return jit__cli_usage(verb,
                                  "--target '%s': expected ARCH, ARCH:SM_COUNT or ARCH:all (e.g. "
                                  "sm_90a:132)",
                                  text);
        if (!jit__arch_find(buf))
            return jit__cli_usage(verb,
                                  "--target '%s': unknown architecture '%s' (known: sm_90a, "
                                  "sm_100a, sm_103a, sm_107a, sm_120a)",
                                  text, buf);
        rc = all ? add_all(verb, out, buf) : add_target(verb, out, buf, (int)sms, "");
        if (rc)
            return rc;
    }
    return 0;
}

/* The set is kept sorted by hash, so a list of a million problems looks each one up in
 * log time. Returns the index of `hash`, or -(insertion point) - 1. */
static long search(const jit__cli_keyset_t *set, const char *hash) {
    size_t lo = 0, hi = set->count;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        int c = strcmp(set->hash[mid], hash);
        if (c == 0)
            return (long)mid;
        if (c < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    return -(long)lo - 1;
}

long jit__cli_keyset_find(const jit__cli_keyset_t *set, const char *hash) {
    long i = search(set, hash);
    return i >= 0 ? i : -1;
}

int jit__cli_keyset_add(jit__cli_keyset_t *set, const char *hash, const char *where) {
    long i = search(set, hash);
    if (i >= 0)
        return 0;
    size_t at = (size_t)(-i - 1);
    if (set->count == set->cap) {
        size_t cap = set->cap ? 2 * set->cap : 64;
        void *h = realloc(set->hash, cap * sizeof(*set->hash));
        if (!h)
            return -1;
        set->hash = h;
        void *w = realloc(set->where, cap * sizeof(*set->where));
        if (!w)
            return -1;
        set->where = w;
        set->cap = cap;
    }
    memmove(&set->hash[at + 1], &set->hash[at], (set->count - at) * sizeof(*set->hash));
    memmove(&set->where[at + 1], &set->where[at], (set->count - at) * sizeof(*set->where));
    snprintf(set->hash[at], sizeof(set->hash[0]), "%s", hash);
    snprintf(set->where[at], sizeof(set->where[0]), "%s", where);
    set->count++;
    return 0;
}

void jit__cli_keyset_free(jit__cli_keyset_t *set) {
    free(set->hash);
    free(set->where);
    memset(set, 0, sizeof(*set));
}

int jit__cli_problem_key(jit_context_t *ctx, const jit_problem_t *problem,
                         char hash[JIT_KEY_HASH_LEN + 1]) {
    char *text = NULL;
    hash[0] = '\0';
    if (jit_inspect(ctx, problem, JIT_INSPECT_KEY, &text) != JIT_OK)
        return -1;
    /* "hash   <32 hex digits>\nkey ..." (api/inspect.c) */
    int ok =
        text && sscanf(text, "hash %32[0-9a-f]", hash) == 1 && strlen(hash) == JIT_KEY_HASH_LEN;
    jit_free(text);
    if (!ok)
        hash[0] = '\0';
    return ok ? 0 : -1;
}
