/*
 * Shape-list parser (format in docs/shape-list.md). jansson does the JSON, with duplicate keys
 * rejected so that `"n": 4096, "n": 8192` cannot pick a winner silently; this file walks the
 * tree with a path string so every content error says where it is. The words for op, dtypes
 * and scales go through the library's own parsers (jit_*_parse), so the CLI and the API can
 * never disagree on spelling; the file only narrows each field to the words that make sense
 * there (no "none", no BF16 operand).
 */
#include "shapes.h"

#include <errno.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "arch.h"
#include "plan.h"

#define PATH_MAX_LEN 96

/* A short rendering of a JSON value for "got ..." in messages. */
static void describe(const json_t *v, char *out, size_t outsz) {
    char *text = json_dumps(v, JSON_ENCODE_ANY | JSON_COMPACT);
    if (!text) {
        snprintf(out, outsz, "a value");
        return;
    }
    if (strlen(text) > 40)
        snprintf(out, outsz, "%.37s...", text);
    else
        snprintf(out, outsz, "%s", text);
    free(text);
}

static jit_status_t bad(jit__diag_t *d, const char *source, const char *path, const json_t *got,
                        const char *expected) {
    char g[64];
    if (!got)
        return jit__fail(d, JIT_INVALID_ARGUMENT, "%s: %s: %s", source, path, expected);
    describe(got, g, sizeof(g));
    return jit__fail(d, JIT_INVALID_ARGUMENT, "%s: %s: expected %s, got %s", source, path, expected,
                     g);
}

/* Reject keys of `obj` that are not in the NULL-terminated `allowed` list. */
static jit_status_t check_keys(const json_t *obj, const char *const *allowed, const char *source,
                               const char *path, jit__diag_t *d) {
    const char *key;
    json_t *value;
    json_object_foreach((json_t *)obj, key, value) {
        int known = 0;
        for (const char *const *a = allowed; *a; a++)
            known |= !strcmp(*a, key);
        if (!known) {
            char list[160] = "";
            for (const char *const *a = allowed; *a; a++) {
                strncat(list, a == allowed ? "" : ", ", sizeof(list) - strlen(list) - 1);
                strncat(list, *a, sizeof(list) - strlen(list) - 1);
            }
            return jit__fail(d, JIT_INVALID_ARGUMENT, "%s: %s%s%s: unknown key (allowed: %s)",
                             source, path, *path ? "." : "", key, list);
        }
    }
    return JIT_OK;
}

static jit_status_t get_positive(const json_t *v, const char *source, const char *path,
                                 int64_t *out, jit__diag_t *d) {
    if (!json_is_integer(v) || json_integer_value(v) <= 0)
        return bad(d, source, path, v, "a positive integer");
    *out = (int64_t)json_integer_value(v);
    return JIT_OK;
}

/* The words a field accepts, for messages: "e4m3, e5m2 or e2m1". */
static void word_list(const char *const *words, size_t n, char *out, size_t outsz) {
    out[0] = '\0';
    for (size_t i = 0; i < n; i++) {
        const char *sep = i == 0 ? "" : (i + 1 == n ? " or " : ", ");
        size_t used = strlen(out);
        snprintf(out + used, outsz - used, "%s%s", sep, words[i]);
    }
}

static jit_status_t get_dtype(const json_t *v, const char *source, const char *path,
                              const jit_dtype_t *allowed, size_t n_allowed, jit_dtype_t *out,
                              jit__diag_t *d) {
    const char *names[8];
    char expected[128];
    for (size_t i = 0; i < n_allowed; i++)
        names[i] = jit_dtype_name(allowed[i]);
    word_list(names, n_allowed, expected, sizeof(expected));
    jit_dtype_t t = JIT_DTYPE_NONE;
    if (json_is_string(v) && jit_dtype_parse(json_string_value(v), &t) == JIT_OK)
        for (size_t i = 0; i < n_allowed; i++)
            if (allowed[i] == t) {
                *out = t;
                return JIT_OK;
            }
    return bad(d, source, path, v, expected);
}

static const jit_dtype_t k_operand_types[] = {JIT_DTYPE_E4M3, JIT_DTYPE_E5M2, JIT_DTYPE_E2M1};
static const jit_dtype_t k_out_types[] = {JIT_DTYPE_BF16, JIT_DTYPE_F32};
static const jit_scale_mode_t k_scale_modes[] = {
    JIT_SCALE_ROW,      JIT_SCALE_UE8M0_32, JIT_SCALE_UE4M3_16,
    JIT_SCALE_UE5M3_16, JIT_SCALE_UE5M3_32, JIT_SCALE_BLOCK_1X128_128X128};
static const jit_epilogue_t k_ops[] = {JIT_EPILOGUE_LINEAR, JIT_EPILOGUE_LINEAR_ADD,
                                       JIT_EPILOGUE_LINEAR_SWIGLU};
#define COUNT_OF(a) (sizeof(a) / sizeof((a)[0]))

static jit_status_t get_scales(const json_t *v, const char *source, const char *path,
                               jit_scale_mode_t *out, jit__diag_t *d) {
    const char *names[COUNT_OF(k_scale_modes)];
    char expected[128];
    for (size_t i = 0; i < COUNT_OF(k_scale_modes); i++)
        names[i] = jit_scale_mode_name(k_scale_modes[i]);
    word_list(names, COUNT_OF(k_scale_modes), expected, sizeof(expected));
    jit_scale_mode_t s = JIT_SCALE_NONE;
    if (json_is_string(v) && jit_scale_mode_parse(json_string_value(v), &s) == JIT_OK &&
        s != JIT_SCALE_NONE) {
        *out = s;
        return JIT_OK;
    }
    return bad(d, source, path, v, expected);
}

static jit_status_t get_op(const json_t *v, const char *source, const char *path,
                           jit_epilogue_t *out, jit__diag_t *d) {
    const char *names[COUNT_OF(k_ops)];
    char expected[128];
    for (size_t i = 0; i < COUNT_OF(k_ops); i++)
        names[i] = jit_epilogue_name(k_ops[i]);
    word_list(names, COUNT_OF(k_ops), expected, sizeof(expected));
    jit_epilogue_t e = JIT_EPILOGUE_NONE;
    if (json_is_string(v) && jit_epilogue_parse(json_string_value(v), &e) == JIT_OK &&
        e != JIT_EPILOGUE_NONE) {
        *out = e;
        return JIT_OK;
    }
    return bad(d, source, path, v, expected);
}

static jit_status_t parse_target(const json_t *t, const char *source, jit__shape_list_t *out,
                                 jit__diag_t *d) {
    static const char *const keys[] = {"arch", "sm_count", NULL};
    if (!json_is_object(t))
        return bad(d, source, "target", t, "an object");
    jit_status_t st = check_keys(t, keys, source, "target", d);
    if (st != JIT_OK)
        return st;
    const json_t *arch = json_object_get(t, "arch");
    if (arch) {
        const jit__arch_profile_t *p =
            json_is_string(arch) ? jit__arch_find(json_string_value(arch)) : NULL;
        if (!p) {
            int n = 0;
            const jit__arch_profile_t *all = jit__arch_all(&n);
            const char *names[16];
            char expected[160] = "a known architecture: ";
            for (int i = 0; i < n && i < 16; i++)
                names[i] = all[i].name;
            word_list(names, (size_t)(n < 16 ? n : 16), expected + strlen(expected),
                      sizeof(expected) - strlen(expected));
            return bad(d, source, "target.arch", arch, expected);
        }
        out->arch = strdup(p->name);
        if (!out->arch)
            return jit__fail(d, JIT_OUT_OF_MEMORY, "out of memory");
    }
    const json_t *sm = json_object_get(t, "sm_count");
    if (sm) {
        /* An int on the way to the context options; no GPU has anywhere near this many. */
        if (!json_is_integer(sm) || json_integer_value(sm) <= 0 || json_integer_value(sm) > 1000000)
            return bad(d, source, "target.sm_count", sm, "a positive integer");
        out->sm_count = (int)json_integer_value(sm);
    }
    return JIT_OK;
}

typedef struct token_at {
    int64_t value;
    size_t index;
} token_at_t;

static int cmp_token_at(const void *a, const void *b) {
    const token_at_t *x = a, *y = b;
    if (x->value != y->value)
        return x->value < y->value ? -1 : 1;
    return x->index < y->index ? -1 : x->index > y->index;
}

typedef struct name_at {
    const char *name;
    size_t index;
} name_at_t;

static int cmp_name_at(const void *a, const void *b) {
    const name_at_t *x = a, *y = b;
    int c = strcmp(x->name, y->name);
    if (c)
        return c;
    return x->index < y->index ? -1 : x->index > y->index;
}

static jit_status_t parse_tokens(const json_t *v, const char *source, const char *path,
                                 jit__shape_entry_t *e, jit__diag_t *d) {
    if (json_is_string(v) && strcmp(json_string_value(v), "all") == 0) {
        /* One count per token band, its smallest: M enters the key only through the band, so
         * this covers every kernel the entry can ever need. */
        e->tokens = calloc(JIT_TOKEN_BANDS, sizeof(*e->tokens));
        if (!e->tokens)
            return jit__fail(d, JIT_OUT_OF_MEMORY, "out of memory");
        /* A grouped entry's band is that of its rows per expert: groups x the band's
         * smallest count of rows. */
        for (int b = 0; b < JIT_TOKEN_BANDS; b++) {
            int64_t hi;
            jit__token_band_range(b, &e->tokens[b], &hi);
            if (e->groups > 0)
                e->tokens[b] *= e->groups;
        }
        e->n_tokens = JIT_TOKEN_BANDS;
        return JIT_OK;
    }
    if (!json_is_array(v) || json_array_size(v) == 0)
        return bad(d, source, path, v, "a non-empty array of positive integers, or \"all\"");
    size_t n = json_array_size(v);
    e->tokens = calloc(n, sizeof(*e->tokens));
    if (!e->tokens)
        return jit__fail(d, JIT_OUT_OF_MEMORY, "out of memory");
    for (size_t i = 0; i < n; i++) {
        char p[PATH_MAX_LEN + 64];
        snprintf(p, sizeof(p), "%s[%zu]", path, i);
        int64_t t = 0;
        jit_status_t st = get_positive(json_array_get(v, i), source, p, &t, d);
        if (st != JIT_OK)
            return st;
        e->tokens[i] = t;
    }
    /* A repeated count is almost always a typo, and would print two identical lines. Sorted
     * (value, index) pairs find every repeat in O(n log n); a list may hold a million. */
    token_at_t *sorted = malloc(n * sizeof(*sorted));
    if (!sorted)
        return jit__fail(d, JIT_OUT_OF_MEMORY, "out of memory");
    for (size_t i = 0; i < n; i++)
        sorted[i] = (token_at_t){e->tokens[i], i};
    if (n > 1)
        qsort(sorted, n, sizeof(*sorted), cmp_token_at);
    /* Report the earliest repeat in file order, against the first occurrence of its value. */
    size_t first = 0, later = SIZE_MAX;
    for (size_t i = 1; i < n; i++)
        if (sorted[i].value == sorted[i - 1].value &&
            (i < 2 || sorted[i - 2].value != sorted[i].value) && sorted[i].index < later) {
            first = sorted[i - 1].index;
            later = sorted[i].index;
        }
    free(sorted);
    if (later != SIZE_MAX)
        return jit__fail(d, JIT_INVALID_ARGUMENT,
                         "%s: %s[%zu]: duplicate token count %lld (also %s[%zu])", source, path,
                         later, (long long)e->tokens[later], path, first);
    e->n_tokens = n;
    return JIT_OK;
}

/* "groups" (1..JIT_MAX_GROUPS), "layout" ("contiguous", the default, or "masked") and
 * "expected_m" (a positive integer); the last two only beside "groups". */
static jit_status_t parse_grouped(const json_t *g, const char *source, const char *base,
                                  jit__shape_entry_t *e, jit__diag_t *d) {
    char p[PATH_MAX_LEN + 16];
    const json_t *groups = json_object_get(g, "groups"), *layout = json_object_get(g, "layout");
    const json_t *expected = json_object_get(g, "expected_m");
    jit_status_t st;
    if (!groups && (layout || expected))
        return jit__fail(d, JIT_INVALID_ARGUMENT,
                         "%s: %s.%s: describes a grouped GEMM, which needs \"groups\"", source,
                         base, layout ? "layout" : "expected_m");
    if (!groups)
        return JIT_OK;
    snprintf(p, sizeof(p), "%s.groups", base);
    if ((st = get_positive(groups, source, p, &e->groups, d)) != JIT_OK)
        return st;
    if (e->groups > JIT_MAX_GROUPS)
        return bad(d, source, p, groups, "an integer from 1 to 1024");
    e->layout = JIT_GROUPS_CONTIGUOUS;
    snprintf(p, sizeof(p), "%s.layout", base);
    if (layout && (!json_is_string(layout) ||
                   jit_group_layout_parse(json_string_value(layout), &e->layout) != JIT_OK))
        return bad(d, source, p, layout, "\"contiguous\" or \"masked\"");
    snprintf(p, sizeof(p), "%s.expected_m", base);
    if (expected && (st = get_positive(expected, source, p, &e->expected_m, d)) != JIT_OK)
        return st;
    return JIT_OK;
}

static jit_status_t parse_entry(const json_t *g, size_t index, const char *source,
                                jit__shape_list_t *list, jit__diag_t *d) {
    static const char *const keys[] = {"name",   "op",         "n",   "k",      "a",
                                       "b",      "scales",     "out", "tokens", "groups",
                                       "layout", "expected_m", NULL};
    static const char *const required[] = {"name", "op", "n", "k", "tokens"};
    jit__shape_entry_t *e = &list->entries[index];
    char base[PATH_MAX_LEN], p[PATH_MAX_LEN + 16];
    snprintf(base, sizeof(base), "gemms[%zu]", index);
    if (!json_is_object(g))
        return bad(d, source, base, g, "an object");
    jit_status_t st = check_keys(g, keys, source, base, d);
    if (st != JIT_OK)
        return st;
    for (size_t i = 0; i < COUNT_OF(required); i++)
        if (!json_object_get(g, required[i]))
            return jit__fail(d, JIT_INVALID_ARGUMENT, "%s: %s: missing required field \"%s\"",
                             source, base, required[i]);

    const json_t *name = json_object_get(g, "name");
    snprintf(p, sizeof(p), "%s.name", base);
    if (!json_is_string(name) || json_string_length(name) == 0)
        return bad(d, source, p, name, "a non-empty string");
    e->name = strdup(json_string_value(name));
    if (!e->name)
        return jit__fail(d, JIT_OUT_OF_MEMORY, "out of memory");

    snprintf(p, sizeof(p), "%s.op", base);
    if ((st = get_op(json_object_get(g, "op"), source, p, &e->op, d)) != JIT_OK)
        return st;
    snprintf(p, sizeof(p), "%s.n", base);
    if ((st = get_positive(json_object_get(g, "n"), source, p, &e->n, d)) != JIT_OK)
        return st;
    snprintf(p, sizeof(p), "%s.k", base);
    if ((st = get_positive(json_object_get(g, "k"), source, p, &e->k, d)) != JIT_OK)
        return st;

    /* Defaults are the first kernel's formats; the block-scaled formats are opt-in per entry. */
    e->a = e->b = JIT_DTYPE_E4M3;
    e->out = JIT_DTYPE_BF16;
    e->scales = JIT_SCALE_ROW;
    const json_t *v;
    if ((v = json_object_get(g, "a"))) {
        snprintf(p, sizeof(p), "%s.a", base);
        st = get_dtype(v, source, p, k_operand_types, COUNT_OF(k_operand_types), &e->a, d);
        if (st != JIT_OK)
            return st;
    }
    if ((v = json_object_get(g, "b"))) {
        snprintf(p, sizeof(p), "%s.b", base);
        st = get_dtype(v, source, p, k_operand_types, COUNT_OF(k_operand_types), &e->b, d);
        if (st != JIT_OK)
            return st;
    }
    if ((v = json_object_get(g, "out"))) {
        snprintf(p, sizeof(p), "%s.out", base);
        st = get_dtype(v, source, p, k_out_types, COUNT_OF(k_out_types), &e->out, d);
        if (st != JIT_OK)
            return st;
    }
    if ((v = json_object_get(g, "scales"))) {
        snprintf(p, sizeof(p), "%s.scales", base);
        if ((st = get_scales(v, source, p, &e->scales, d)) != JIT_OK)
            return st;
    }
    if ((st = parse_grouped(g, source, base, e, d)) != JIT_OK)
        return st;
    snprintf(p, sizeof(p), "%s.tokens", base);
    return parse_tokens(json_object_get(g, "tokens"), source, p, e, d);
}

/* Names identify entries in every message and --json line, so they must be unique. Sorted
 * (name, index) pairs keep this O(n log n) for lists of many entries. */
static jit_status_t check_names(const jit__shape_list_t *list, const char *source, jit__diag_t *d) {
    size_t n = list->count;
    name_at_t *sorted = malloc((n ? n : 1) * sizeof(*sorted));
    if (!sorted)
        return jit__fail(d, JIT_OUT_OF_MEMORY, "out of memory");
    for (size_t i = 0; i < n; i++)
        sorted[i] = (name_at_t){list->entries[i].name, i};
    if (n > 1)
        qsort(sorted, n, sizeof(*sorted), cmp_name_at);
    /* The earliest repeat in file order, against the first entry of that name. */
    size_t first = 0, later = SIZE_MAX;
    for (size_t i = 1; i < n; i++)
        if (!strcmp(sorted[i].name, sorted[i - 1].name) &&
            (i < 2 || strcmp(sorted[i - 2].name, sorted[i].name)) && sorted[i].index < later) {
            first = sorted[i - 1].index;
            later = sorted[i].index;
        }
    free(sorted);
    if (later == SIZE_MAX)
        return JIT_OK;
    return jit__fail(d, JIT_INVALID_ARGUMENT,
                     "%s: gemms[%zu].name: duplicate name \"%s\" (also gemms[%zu])", source, later,
                     list->entries[later].name, first);
}

static jit_status_t parse_root(const json_t *root, const char *source, jit__shape_list_t *out,
                               jit__diag_t *d) {
    static const char *const keys[] = {"target", "gemms", NULL};
    if (!json_is_object(root)) {
        char g[64];
        describe(root, g, sizeof(g));
        return jit__fail(d, JIT_INVALID_ARGUMENT,
                         "%s: expected a JSON object with \"gemms\" at the top level, got %s",
                         source, g);
    }
    jit_status_t st = check_keys(root, keys, source, "", d);
    if (st != JIT_OK)
        return st;
    const json_t *target = json_object_get(root, "target");
    if (target && (st = parse_target(target, source, out, d)) != JIT_OK)
        return st;
    const json_t *gemms = json_object_get(root, "gemms");
    if (!gemms)
        return jit__fail(d, JIT_INVALID_ARGUMENT, "%s: missing required field \"gemms\"", source);
    if (!json_is_array(gemms) || json_array_size(gemms) == 0)
        return bad(d, source, "gemms", gemms, "a non-empty array of GEMM entries");
    size_t n = json_array_size(gemms);
    out->entries = calloc(n, sizeof(*out->entries));
    if (!out->entries)
        return jit__fail(d, JIT_OUT_OF_MEMORY, "out of memory");
    /* count grows as entries are parsed, so jit__shapes_free releases exactly what exists. */
    for (size_t i = 0; i < n; i++) {
        out->count = i + 1;
        if ((st = parse_entry(json_array_get(gemms, i), i, source, out, d)) != JIT_OK)
            return st;
    }
    return check_names(out, source, d);
}

/* By length, so that a NUL byte inside a file is a parse error rather than an early end. */
static jit_status_t parse_buffer(const char *text, size_t len, const char *source,
                                 jit__shape_list_t *out, jit__diag_t *d) {
    memset(out, 0, sizeof(*out));
    json_error_t err;
    json_t *root = json_loadb(text, len, JSON_REJECT_DUPLICATES, &err);
    if (!root)
        return jit__fail(d, JIT_PARSE_ERROR, "%s:%d:%d: malformed JSON: %s", source, err.line,
                         err.column, err.text);
    jit_status_t st = parse_root(root, source, out, d);
    json_decref(root);
    if (st != JIT_OK)
        jit__shapes_free(out);
    return st;
}

static jit_status_t too_big(const char *source, jit__diag_t *d) {
    return jit__fail(d, JIT_INVALID_ARGUMENT,
                     "%s: larger than the " JIT__SHAPES_MAX_TEXT " a shape list may hold (is it "
                     "the right file?)",
                     source);
}

jit_status_t jit__shapes_parse_text(const char *text, const char *source, jit__shape_list_t *out,
                                    jit__diag_t *d) {
    size_t len = strnlen(text, JIT__SHAPES_MAX_BYTES + 1);
    if (len > JIT__SHAPES_MAX_BYTES) {
        memset(out, 0, sizeof(*out));
        return too_big(source, d);
    }
    return parse_buffer(text, len, source, out, d);
}

/* Reads at most JIT__SHAPES_MAX_BYTES + 1 bytes: one byte past the cap is enough to know the
 * input is too long (*err EFBIG), and /dev/zero or a pipe that never ends stops there. */
static char *read_stream(FILE *f, size_t *size, int *err) {
    size_t cap = 1 << 16, len = 0;
    char *buf = malloc(cap);
    if (!buf) {
        *err = ENOMEM;
        return NULL;
    }
    for (;;) {
        if (cap - len < 2) {
            char *nb = realloc(buf, cap * 2);
            if (!nb) {
                free(buf);
                *err = ENOMEM;
                return NULL;
            }
            buf = nb;
            cap *= 2;
        }
        size_t want = cap - len - 1;
        if (want > JIT__SHAPES_MAX_BYTES + 1 - len)
            want = JIT__SHAPES_MAX_BYTES + 1 - len;
        size_t got = fread(buf + len, 1, want, f);
        len += got;
        if (len > JIT__SHAPES_MAX_BYTES) {
            free(buf);
            *err = EFBIG;
            return NULL;
        }
        if (got == 0)
            break;
    }
    if (ferror(f)) {
        *err = errno ? errno : EIO;
        free(buf);
        return NULL;
    }
    buf[len] = '\0';
    *size = len;
    return buf;
}

jit_status_t jit__shapes_parse_file(const char *path, jit__shape_list_t *out, jit__diag_t *d) {
    memset(out, 0, sizeof(*out));
    int is_stdin = !strcmp(path, "-");
    const char *source = is_stdin ? "<stdin>" : path;
    struct stat st;
    if (!is_stdin && stat(path, &st) == 0 && S_ISDIR(st.st_mode))
        return jit__fail(d, JIT_IO_ERROR, "cannot read %s: is a directory", path);
    FILE *f = is_stdin ? stdin : fopen(path, "rb");
    if (!f)
        return jit__fail(d, JIT_IO_ERROR, "cannot read %s: %s", path, strerror(errno));
    int err = 0;
    size_t len = 0;
    errno = 0;
    char *text = read_stream(f, &len, &err);
    if (!is_stdin)
        fclose(f);
    if (!text && err == EFBIG)
        return too_big(source, d);
    if (!text)
        return jit__fail(d, err == ENOMEM ? JIT_OUT_OF_MEMORY : JIT_IO_ERROR, "cannot read %s: %s",
                         source, strerror(err));
    jit_status_t rc = parse_buffer(text, len, source, out, d);
    free(text);
    return rc;
}

void jit__shapes_free(jit__shape_list_t *list) {
    if (!list)
        return;
    for (size_t i = 0; i < list->count; i++) {
        free(list->entries[i].name);
        free(list->entries[i].tokens);
    }
    free(list->entries);
    free(list->arch);
    memset(list, 0, sizeof(*list));
}

size_t jit__shapes_problem_count(const jit__shape_list_t *list) {
    size_t n = 0;
    for (size_t i = 0; i < list->count; i++)
        n += list->entries[i].n_tokens;
    return n;
}

void jit__shapes_problems(const jit__shape_list_t *list, jit_problem_t *problems,
                          size_t *entry_of) {
    size_t idx = 0;
    for (size_t i = 0; i < list->count; i++) {
        const jit__shape_entry_t *e = &list->entries[i];
        for (size_t t = 0; t < e->n_tokens; t++, idx++) {
            jit_problem_t *p = &problems[idx];
            jit_problem_init(p);
            p->m = e->tokens[t];
            p->n = e->n;
            p->k = e->k;
            p->a_dtype = e->a;
            p->b_dtype = e->b;
            p->out_dtype = e->out;
            p->scale_mode = e->scales;
            p->epilogue = e->op;
            p->groups = e->groups;
            p->layout = e->layout;
            p->expected_m = e->expected_m;
            if (entry_of)
                entry_of[idx] = i;
        }
    }
}
