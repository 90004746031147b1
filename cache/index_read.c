/*
 * The index read for a listing, straight into entry structs. Building jansson's tree of a
 * 10,000-entry manifest (a hash table per entry, a string per field) and then walking it was
 * most of what `cache list` cost. The cache writes its index in one fixed shape: fields in
 * the struct's order, plain ASCII strings, the manifest's entries sorted by hash. This reader
 * accepts that shape and nothing else; anything it does not recognise (an escape in a string,
 * another field order, a number it cannot read exactly, damage of any kind) sends the whole
 * read back to the jansson path, which gives the verdict and the message. So the fast path
 * never decides that an index is bad, and it accepts only what the jansson path would read to
 * the same values.
 */
#include "cache_private.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct cursor {
    const char *p, *end;
    int bad; /* set once; every later step then fails too */
} cursor_t;

static void skip_ws(cursor_t *c) {
    while (c->p < c->end && (*c->p == ' ' || *c->p == '\n' || *c->p == '\t' || *c->p == '\r'))
        c->p++;
}

static int expect(cursor_t *c, char ch) {
    if (c->bad)
        return 0;
    skip_ws(c);
    if (c->p < c->end && *c->p == ch) {
        c->p++;
        return 1;
    }
    c->bad = 1;
    return 0;
}

/* A string of printable ASCII without escapes, into out (outsz with its NUL); *len its bytes. */
static void string(cursor_t *c, char *out, size_t outsz, size_t *len) {
    if (!expect(c, '"'))
        return;
    const char *s = c->p;
    while (c->p < c->end && *c->p != '"') {
        unsigned char b = (unsigned char)*c->p;
        if (b < 0x20 || b >= 0x7f || b == '\\') {
            c->bad = 1;
            return;
        }
        c->p++;
    }
    size_t n = (size_t)(c->p - s);
    if (c->p == c->end || n >= outsz) {
        c->bad = 1;
        return;
    }
    memcpy(out, s, n);
    out[n] = '\0';
    if (len)
        *len = n;
    c->p++;
}

/* `"name":` exactly. */
static void field(cursor_t *c, const char *name) {
    char got[24];
    string(c, got, sizeof(got), NULL);
    if (!c->bad && strcmp(got, name) != 0)
        c->bad = 1;
    expect(c, ':');
}

static int digit(char ch) {
    return ch >= '0' && ch <= '9';
}

/* A JSON integer in [lo, hi]. A leading zero, a fraction or an exponent, or a value beyond
 * long long is left to jansson (which rejects or reads it as a real). */
static long long integer(cursor_t *c, long long lo, long long hi) {
    skip_ws(c);
    if (c->bad)
        return 0;
    int neg = c->p < c->end && *c->p == '-';
    if (neg)
        c->p++;
    const char *s = c->p;
    unsigned long long v = 0;
    while (c->p < c->end && digit(*c->p)) {
        if (c->p - s >= 18) { /* 18 digits cannot overflow; more go to jansson */
            c->bad = 1;
            return 0;
        }
        v = v * 10 + (unsigned long long)(*c->p - '0');
        c->p++;
    }
    size_t n = (size_t)(c->p - s);
    if (n == 0 || (n > 1 && *s == '0') ||
        (c->p < c->end && (*c->p == '.' || *c->p == 'e' || *c->p == 'E'))) {
        c->bad = 1;
        return 0;
    }
    long long x = neg ? -(long long)v : (long long)v;
    if (x < lo || x > hi) {
        c->bad = 1;
        return 0;
    }
    return x;
}

/* Any JSON number, as jansson reads it into a double. */
static double number(cursor_t *c) {
    skip_ws(c);
    if (c->bad)
        return 0;
    const char *s = c->p;
    if (c->p < c->end && *c->p == '-')
        c->p++;
    const char *int_start = c->p;
    while (c->p < c->end && digit(*c->p))
        c->p++;
    size_t int_digits = (size_t)(c->p - int_start);
    int is_real = 0, ok = int_digits > 0 && !(int_digits > 1 && *int_start == '0');
    if (ok && c->p < c->end && *c->p == '.') {
        is_real = 1;
        const char *f = ++c->p;
        while (c->p < c->end && digit(*c->p))
            c->p++;
        ok = c->p > f;
    }
    if (ok && c->p < c->end && (*c->p == 'e' || *c->p == 'E')) {
        is_real = 1;
        c->p++;
        if (c->p < c->end && (*c->p == '+' || *c->p == '-'))
            c->p++;
        const char *x = c->p;
        while (c->p < c->end && digit(*c->p))
            c->p++;
        ok = c->p > x;
    }
    char tok[64];
    size_t n = (size_t)(c->p - s);
    /* An integer too long for long long is an error to jansson, not a double. */
    if (!ok || n >= sizeof(tok) || (!is_real && int_digits > 18)) {
        c->bad = 1;
        return 0;
    }
    memcpy(tok, s, n);
    tok[n] = '\0';
    errno = 0;
    char *stop = NULL;
    double v = strtod(tok, &stop);
    /* strtod follows LC_NUMERIC, which a program using the library may have set to a locale
     * whose decimal point is not '.': then it stops early, and jansson (which copes) decides. */
    if (stop != tok + n || errno == ERANGE || isinf(v)) {
        c->bad = 1;
        return 0;
    }
    return v;
}

static int boolean(cursor_t *c) {
    skip_ws(c);
    if (c->bad)
        return 0;
    size_t left = (size_t)(c->end - c->p);
    if (left >= 4 && !memcmp(c->p, "true", 4)) {
        c->p += 4;
        return 1;
    }
    if (left >= 5 && !memcmp(c->p, "false", 5)) {
        c->p += 5;
        return 0;
    }
    c->bad = 1;
    return 0;
}

static void triple(cursor_t *c, unsigned out[3]) {
    expect(c, '[');
    for (int i = 0; i < 3; i++) {
        if (i)
            expect(c, ',');
        out[i] = (unsigned)integer(c, 0, UINT32_MAX);
    }
    expect(c, ']');
}

/* "major.minor" with plain digits, as the entry parser's sscanf reads it. */
static void version(cursor_t *c, int *major, int *minor) {
    char s[24];
    string(c, s, sizeof(s), NULL);
    if (c->bad)
        return;
    const char *p = s;
    long v[2] = {0, 0};
    for (int i = 0; i < 2; i++) {
        const char *d = p;
        while (digit(*p) && p - d < 9)
            v[i] = v[i] * 10 + (*p++ - '0');
        if (p == d || digit(*p) || *p != (i == 0 ? '.' : '\0')) {
            c->bad = 1;
            return;
        }
        p++;
    }
    *major = (int)v[0];
    *minor = (int)v[1];
}

static void hash_string(cursor_t *c, const char *name, char out[JIT_KEY_HASH_LEN + 1],
                        int may_be_empty) {
    size_t len = 0;
    field(c, name);
    string(c, out, JIT_KEY_HASH_LEN + 1, &len);
    if (!c->bad && !(may_be_empty && len == 0) && !jit__cache_valid_hash(out))
        c->bad = 1;
}

/* One entry object in the order jit__cache_entry_to_object writes it. */
static void entry(cursor_t *c, jit__cache_entry_t *e) {
    memset(e, 0, sizeof(*e));
    expect(c, '{');
    hash_string(c, "hash", e->hash, 0);
    expect(c, ',');
    field(c, "key_text");
    string(c, e->key_text, sizeof(e->key_text), NULL);
    expect(c, ',');
    field(c, "arch");
    string(c, e->arch, sizeof(e->arch), NULL);
    expect(c, ',');
    field(c, "target");
    string(c, e->target, sizeof(e->target), NULL);
    expect(c, ',');
    field(c, "fallback");
    e->fallback = boolean(c);
    expect(c, ',');
    field(c, "check_target");
    string(c, e->check_target, sizeof(e->check_target), NULL);
    expect(c, ',');
    field(c, "toolchain");
    expect(c, '{');
    field(c, "nvrtc");
    version(c, &e->toolchain.nvrtc_major, &e->toolchain.nvrtc_minor);
    expect(c, ',');
    field(c, "nvjitlink");
    version(c, &e->toolchain.nvjitlink_major, &e->toolchain.nvjitlink_minor);
    expect(c, '}');
    expect(c, ',');
    field(c, "generator_version");
    e->generator_version = (int)integer(c, 0, INT32_MAX);
    expect(c, ',');
    hash_string(c, "device_hash", e->device_hash, 1);
    expect(c, ',');
    field(c, "kernel_name");
    string(c, e->kernel_name, sizeof(e->kernel_name), NULL);
    expect(c, ',');
    field(c, "block");
    triple(c, e->block);
    expect(c, ',');
    field(c, "cluster");
    triple(c, e->cluster);
    expect(c, ',');
    field(c, "smem_bytes");
    e->smem_bytes = (uint32_t)integer(c, 0, UINT32_MAX);
    expect(c, ',');
    field(c, "registers");
    e->registers = (int)integer(c, INT32_MIN, INT32_MAX);
    expect(c, ',');
    field(c, "spill_stores");
    e->spill_stores = (int)integer(c, INT32_MIN, INT32_MAX);
    expect(c, ',');
    field(c, "spill_loads");
    e->spill_loads = (int)integer(c, INT32_MIN, INT32_MAX);
    expect(c, ',');
    field(c, "stack_bytes");
    e->stack_bytes = (int)integer(c, INT32_MIN, INT32_MAX);
    expect(c, ',');
    field(c, "compile_seconds");
    e->compile_seconds = number(c);
    expect(c, ',');
    hash_string(c, "checksum", e->checksum, 0);
    expect(c, ',');
    field(c, "size");
    e->size = (uint64_t)integer(c, 0, INT64_MAX);
    expect(c, ',');
    field(c, "created");
    e->created = integer(c, INT64_MIN, INT64_MAX);
    expect(c, ',');
    field(c, "last_used");
    e->last_used = integer(c, INT64_MIN, INT64_MAX);
    expect(c, '}');
}

static int at_end(cursor_t *c) {
    skip_ws(c);
    return !c->bad && c->p == c->end;
}

typedef struct entry_array {
    jit__cache_entry_t *v;
    size_t n, cap;
} entry_array_t;

static jit__cache_entry_t *push(entry_array_t *a) {
    if (a->n == a->cap) {
        size_t cap = a->cap ? 2 * a->cap : 256;
        jit__cache_entry_t *v = realloc(a->v, cap * sizeof(*v));
        if (!v)
            return NULL;
        a->v = v;
        a->cap = cap;
    }
    return &a->v[a->n++];
}

/* manifest.json's text into `a`. 0, or -1 when it is not in the shape the cache writes. */
static int read_manifest(const char *text, size_t len, entry_array_t *a) {
    cursor_t c = {text, text + len, 0};
    expect(&c, '{');
    field(&c, "format");
    if (integer(&c, JIT__CACHE_MANIFEST_FORMAT, JIT__CACHE_MANIFEST_FORMAT) !=
        JIT__CACHE_MANIFEST_FORMAT)
        return -1;
    expect(&c, ',');
    field(&c, "entries");
    expect(&c, '{');
    skip_ws(&c);
    if (!c.bad && c.p < c.end && *c.p == '}') {
        c.p++;
    } else {
        for (;;) {
            char name[JIT_KEY_HASH_LEN + 1];
            string(&c, name, sizeof(name), NULL);
            expect(&c, ':');
            jit__cache_entry_t *e = c.bad ? NULL : push(a);
            if (!e)
                return -1;
            entry(&c, e);
            /* Strictly increasing names: no duplicate (which jansson rejects) can pass. */
            if (c.bad || strcmp(name, e->hash) != 0 ||
                (a->n > 1 && strcmp(a->v[a->n - 2].hash, e->hash) >= 0))
                return -1;
            skip_ws(&c);
            if (c.p < c.end && *c.p == ',') {
                c.p++;
                continue;
            }
            expect(&c, '}');
            break;
        }
    }
    expect(&c, '}');
    return at_end(&c) ? 0 : -1;
}

/* One whole journal line. 0 and *put set when it holds an entry; -1 when not the shape. */
static int read_journal_line(const char *line, size_t len, jit__cache_entry_t *e, int *put,
                             uint64_t *usage) {
    cursor_t c = {line, line + len, 0};
    expect(&c, '{');
    skip_ws(&c);
    *put = c.p + 6 <= c.end && !memcmp(c.p, "\"put\"", 5);
    if (*put) {
        field(&c, "put");
        entry(&c, e);
        expect(&c, ',');
    }
    field(&c, "usage");
    *usage = (uint64_t)integer(&c, 0, INT64_MAX);
    expect(&c, '}');
    return at_end(&c) ? 0 : -1;
}

typedef struct put_ref {
    const jit__cache_entry_t *e;
    size_t pos; /* line order in the journal */
} put_ref_t;

/* By hash, and the latest put of a hash first. */
static int cmp_put(const void *a, const void *b) {
    const put_ref_t *x = a, *y = b;
    int r = strcmp(x->e->hash, y->e->hash);
    if (r)
        return r;
    return x->pos < y->pos ? 1 : -1;
}

static int reserve(entry_array_t *a, size_t want) {
    if (want <= a->cap)
        return 0;
    jit__cache_entry_t *v = realloc(a->v, want * sizeof(*v));
    if (!v)
        return -1;
    a->v = v;
    a->cap = want;
    return 0;
}

static int cmp_hash_key(const void *key, const void *e) {
    return strcmp(key, ((const jit__cache_entry_t *)e)->hash);
}

/* `later` (the journal's puts, in its order) folded into `base` (sorted by hash, no
 * duplicates), which stays so: a later put of a hash replaces the earlier one. In place: a
 * put of a listed hash overwrites it, new hashes are merged in from the back. */
static int fold(entry_array_t *base, const entry_array_t *later) {
    if (later->n == 0)
        return 0;
    put_ref_t *refs = malloc(later->n * sizeof(*refs));
    if (!refs)
        return -1;
    for (size_t i = 0; i < later->n; i++)
        refs[i] = (put_ref_t){&later->v[i], i};
    qsort(refs, later->n, sizeof(*refs), cmp_put);
    size_t n_new = 0; /* the latest put of each new hash, in hash order, at the front of refs */
    for (size_t i = 0; i < later->n; i++) {
        if (i > 0 && !strcmp(refs[i - 1].e->hash, refs[i].e->hash))
            continue; /* an older put of the same hash */
        jit__cache_entry_t *had =
            base->n ? bsearch(refs[i].e->hash, base->v, base->n, sizeof(*base->v), cmp_hash_key)
                    : NULL;
        if (had)
            *had = *refs[i].e;
        else
            refs[n_new++] = refs[i];
    }
    if (reserve(base, base->n + n_new) != 0) {
        free(refs);
        return -1;
    }
    size_t i = base->n, j = n_new, k = base->n + n_new;
    while (j > 0) {
        if (i > 0 && strcmp(base->v[i - 1].hash, refs[j - 1].e->hash) > 0)
            base->v[--k] = base->v[--i];
        else
            base->v[--k] = *refs[--j].e;
    }
    base->n += n_new;
    free(refs);
    return 0;
}

/* Both files in the shape the cache writes them, into `a`. 0, or -1: let jansson decide. */
static int read_fast(const jit__cache_t *c, entry_array_t *a, jit__index_state_t *s) {
    char *text = NULL, why[JIT__CACHE_WHY_MAX];
    size_t len = 0;
    struct stat st;
    if (jit__cache_slurp(c, "manifest.json", &text, &len, &st, why, sizeof(why)) != JIT__SLURP_OK)
        return -1;
    /* An entry the cache writes takes over 500 bytes of manifest text, so this usually holds
     * them all: one array, not copied as it fills (pages it does not use are never touched). */
    int rc = reserve(a, len / 400 + 16) == 0 ? read_manifest(text, len, a) : -1;
    free(text);
    if (rc != 0)
        return -1;
    s->manifest = JIT__MANIFEST_OK;
    text = NULL;
    switch (jit__cache_slurp(c, JIT__CACHE_JOURNAL, &text, &len, &st, why, sizeof(why))) {
    case JIT__SLURP_OK:
        break;
    case JIT__SLURP_MISSING:
        s->journal = JIT__JOURNAL_MISSING;
        return 0;
    default:
        return -1;
    }
    entry_array_t later = {NULL, 0, 0};
    s->journal = JIT__JOURNAL_OK;
    size_t at = 0;
    while (at < len && rc == 0) {
        const char *nl = memchr(text + at, '\n', len - at);
        if (!nl) { /* a torn append, ignored as the jansson path ignores it */
            s->info.torn_bytes = len - at;
            s->journal = JIT__JOURNAL_TORN;
            snprintf(s->journal_why, sizeof(s->journal_why),
                     "line %zu is torn (%zu bytes without a newline)", s->info.lines + 1, len - at);
            break;
        }
        size_t n = (size_t)(nl - (text + at));
        jit__cache_entry_t *e = push(&later);
        int put = 0;
        if (!e || read_journal_line(text + at, n, e, &put, &s->info.usage) != 0)
            rc = -1;
        else if (!put)
            later.n--;
        s->info.lines++;
        s->info.usage_known = 1;
        at += n + 1;
    }
    free(text);
    if (rc == 0)
        rc = fold(a, &later);
    free(later.v);
    return rc;
}

static int cmp_hash(const void *a, const void *b) {
    return strcmp(((const jit__cache_entry_t *)a)->hash, ((const jit__cache_entry_t *)b)->hash);
}

/* What jit__cache_index_load's tree holds, as sorted structs. */
static int from_tree(json_t *tree, entry_array_t *a) {
    const char *hash;
    json_t *value;
    json_object_foreach(tree, hash, value) {
        jit__cache_entry_t *e = push(a);
        char why[JIT__CACHE_WHY_MAX];
        if (!e)
            return -1;
        if (jit__cache_entry_from_object(value, e, why, sizeof(why)) != 0)
            a->n--; /* cannot happen: index_load validated every entry */
    }
    if (a->n > 1)
        qsort(a->v, a->n, sizeof(*a->v), cmp_hash);
    return 0;
}

static int same_file(const struct stat *a, const struct stat *b) {
    return a->st_dev == b->st_dev && a->st_ino == b->st_ino &&
           a->st_mtim.tv_sec == b->st_mtim.tv_sec && a->st_mtim.tv_nsec == b->st_mtim.tv_nsec;
}

int jit__cache_index_read(const jit__cache_t *c, jit__cache_entry_t **entries, size_t *n,
                          jit__index_state_t *s) {
    *entries = NULL;
    *n = 0;
    for (int attempt = 0; attempt < 8; attempt++) {
        memset(s, 0, sizeof(*s));
        s->journal = JIT__JOURNAL_MISSING;
        entry_array_t a = {NULL, 0, 0};
        struct stat before, after;
        int have_before = fstatat(c->dirfd, "manifest.json", &before, AT_SYMLINK_NOFOLLOW) == 0;
        int rc = read_fast(c, &a, s);
        /* A compaction between the two reads pairs an old manifest with a new journal. */
        int stable = have_before &&
                     fstatat(c->dirfd, "manifest.json", &after, AT_SYMLINK_NOFOLLOW) == 0 &&
                     same_file(&before, &after);
        if (rc == 0 && stable) {
            s->fast = 1;
            *entries = a.v;
            *n = a.n;
            return 0;
        }
        free(a.v);
        if (rc != 0)
            break;
    }
    /* Not the cache's own shape, or damaged, or still changing: the jansson path decides,
     * with its retries and its messages. */
    json_t *tree = NULL;
    jit__cache_index_load(c, &tree, s);
    if (!tree)
        return 0;
    entry_array_t a = {NULL, 0, 0};
    int rc = from_tree(tree, &a);
    json_decref(tree);
    if (rc != 0) {
        free(a.v);
        return ENOMEM;
    }
    *entries = a.v;
    *n = a.n;
    return 0;
}
