/*
 * A cache entry as JSON: the sidecar kernels/<hash>.json holds exactly this object, and the
 * manifest holds the same object per hash, so either can be rebuilt from the other. Fields keep
 * the struct's order; times are integer Unix seconds (UTC by definition, no time-zone parsing);
 * toolchain versions are "major.minor" strings. Parsing is strict: a missing field, a wrong type
 * or a string too long for its slot makes the whole entry unusable rather than half-filled.
 */
#include "cache_private.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static json_t *version(int major, int minor) {
    char s[32];
    snprintf(s, sizeof(s), "%d.%d", major, minor);
    return json_string(s);
}

static json_t *triple(const unsigned v[3]) {
    return json_pack("[III]", (json_int_t)v[0], (json_int_t)v[1], (json_int_t)v[2]);
}

json_t *jit__cache_entry_to_object(const jit__cache_entry_t *e) {
    json_t *o = json_object();
    json_t *tc = json_object();
    if (!o || !tc) {
        json_decref(o);
        json_decref(tc);
        return NULL;
    }
    json_object_set_new(tc, "nvrtc", version(e->toolchain.nvrtc_major, e->toolchain.nvrtc_minor));
    json_object_set_new(tc, "nvjitlink",
                        version(e->toolchain.nvjitlink_major, e->toolchain.nvjitlink_minor));
    int fail = 0;
    fail |= json_object_set_new(o, "hash", json_string(e->hash));
    fail |= json_object_set_new(o, "key_text", json_string(e->key_text));
    fail |= json_object_set_new(o, "arch", json_string(e->arch));
    fail |= json_object_set_new(o, "target", json_string(e->target));
    fail |= json_object_set_new(o, "fallback", json_boolean(e->fallback));
    fail |= json_object_set_new(o, "check_target", json_string(e->check_target));
    fail |= json_object_set_new(o, "toolchain", tc);
    fail |= json_object_set_new(o, "generator_version", json_integer(e->generator_version));
    fail |= json_object_set_new(o, "device_hash", json_string(e->device_hash));
    fail |= json_object_set_new(o, "kernel_name", json_string(e->kernel_name));
    fail |= json_object_set_new(o, "block", triple(e->block));
    fail |= json_object_set_new(o, "cluster", triple(e->cluster));
    fail |= json_object_set_new(o, "smem_bytes", json_integer(e->smem_bytes));
    fail |= json_object_set_new(o, "registers", json_integer(e->registers));
    fail |= json_object_set_new(o, "spill_stores", json_integer(e->spill_stores));
    fail |= json_object_set_new(o, "spill_loads", json_integer(e->spill_loads));
    fail |= json_object_set_new(o, "stack_bytes", json_integer(e->stack_bytes));
    fail |= json_object_set_new(o, "compile_seconds", json_real(e->compile_seconds));
    fail |= json_object_set_new(o, "checksum", json_string(e->checksum));
    fail |= json_object_set_new(o, "size", json_integer((json_int_t)e->size));
    fail |= json_object_set_new(o, "created", json_integer(e->created));
    fail |= json_object_set_new(o, "last_used", json_integer(e->last_used));
    if (fail) { /* json_string returns NULL for text that is not UTF-8 */
        json_decref(o);
        return NULL;
    }
    return o;
}

char *jit__cache_entry_to_json(const jit__cache_entry_t *e) {
    if (!e)
        return NULL;
    json_t *o = jit__cache_entry_to_object(e);
    if (!o)
        return NULL;
    char *text = json_dumps(o, JSON_INDENT(2) | JSON_PRESERVE_ORDER | JSON_REAL_PRECISION(9));
    json_decref(o);
    return text;
}

char *jit__cache_entry_to_json_line(const jit__cache_entry_t *e) {
    if (!e)
        return NULL;
    json_t *o = jit__cache_entry_to_object(e);
    if (!o)
        return NULL;
    char *text = json_dumps(o, JSON_COMPACT | JSON_PRESERVE_ORDER | JSON_REAL_PRECISION(9));
    json_decref(o);
    return text;
}

/* ---- parsing ------------------------------------------------------------------------------ */

typedef struct reader {
    const json_t *obj;
    char *why;
    size_t whysz;
    int failed;
} reader_t;

static const json_t *field(reader_t *r, const char *name, json_type type, const char *what) {
    if (r->failed)
        return NULL;
    const json_t *v = json_object_get(r->obj, name);
    int ok = v && (json_typeof(v) == type || (type == JSON_TRUE && json_is_boolean(v)) ||
                   (type == JSON_REAL && json_is_number(v)));
    if (!ok) {
        snprintf(r->why, r->whysz, "field \"%s\" %s (want %s)", name,
                 v ? "has the wrong type" : "is missing", what);
        r->failed = 1;
        return NULL;
    }
    return v;
}

static void get_string(reader_t *r, const char *name, char *out, size_t outsz) {
    const json_t *v = field(r, name, JSON_STRING, "a string");
    if (!v)
        return;
    if (json_string_length(v) >= outsz || strlen(json_string_value(v)) != json_string_length(v)) {
        snprintf(r->why, r->whysz, "field \"%s\" is longer than %zu bytes or holds a NUL", name,
                 outsz - 1);
        r->failed = 1;
        return;
    }
    memcpy(out, json_string_value(v), json_string_length(v) + 1);
}

static json_int_t get_int(reader_t *r, const char *name, json_int_t lo, json_int_t hi) {
    const json_t *v = field(r, name, JSON_INTEGER, "an integer");
    if (!v)
        return 0;
    json_int_t x = json_integer_value(v);
    if (x < lo || x > hi) {
        snprintf(r->why, r->whysz, "field \"%s\" = %lld is out of range", name, (long long)x);
        r->failed = 1;
        return 0;
    }
    return x;
}

static void get_triple(reader_t *r, const char *name, unsigned out[3]) {
    const json_t *v = field(r, name, JSON_ARRAY, "an array of three integers");
    if (!v)
        return;
    for (size_t i = 0; i < 3; i++) {
        const json_t *x = json_array_get(v, i);
        if (json_array_size(v) != 3 || !json_is_integer(x) || json_integer_value(x) < 0 ||
            json_integer_value(x) > UINT32_MAX) {
            snprintf(r->why, r->whysz, "field \"%s\" is not three non-negative integers", name);
            r->failed = 1;
            return;
        }
        out[i] = (unsigned)json_integer_value(x);
    }
}

static void get_version(reader_t *r, const json_t *tc, const char *name, int *major, int *minor) {
    if (r->failed)
        return;
    const json_t *v = json_object_get(tc, name);
    char tail;
    if (!json_is_string(v) || sscanf(json_string_value(v), "%d.%d%c", major, minor, &tail) != 2 ||
        *major < 0 || *minor < 0) {
        snprintf(r->why, r->whysz, "field \"toolchain.%s\" is not a \"major.minor\" string", name);
        r->failed = 1;
    }
}

int jit__cache_entry_from_object(const json_t *obj, jit__cache_entry_t *e, char *why,
                                 size_t whysz) {
    memset(e, 0, sizeof(*e));
    if (!json_is_object(obj)) {
        snprintf(why, whysz, "entry is not a JSON object");
        return -1;
    }
    reader_t r = {obj, why, whysz, 0};
    get_string(&r, "hash", e->hash, sizeof(e->hash));
    if (!r.failed && !jit__cache_valid_hash(e->hash)) {
        snprintf(why, whysz, "field \"hash\" is not 32 lowercase hex digits");
        r.failed = 1;
    }
    get_string(&r, "key_text", e->key_text, sizeof(e->key_text));
    get_string(&r, "arch", e->arch, sizeof(e->arch));
    get_string(&r, "target", e->target, sizeof(e->target));
    const json_t *fb = field(&r, "fallback", JSON_TRUE, "a boolean");
    e->fallback = fb ? json_is_true(fb) : 0;
    get_string(&r, "check_target", e->check_target, sizeof(e->check_target));
    const json_t *tc = field(&r, "toolchain", JSON_OBJECT, "an object");
    get_version(&r, tc, "nvrtc", &e->toolchain.nvrtc_major, &e->toolchain.nvrtc_minor);
    get_version(&r, tc, "nvjitlink", &e->toolchain.nvjitlink_major, &e->toolchain.nvjitlink_minor);
    e->generator_version = (int)get_int(&r, "generator_version", 0, INT32_MAX);
    /* Absent in entries written before device code was hashed: such an entry reads as built
     * from unknown device code, which gc removes. */
    const json_t *dh = json_object_get(obj, "device_hash");
    if (dh && (!json_is_string(dh) ||
               (json_string_length(dh) != 0 && !jit__cache_valid_hash(json_string_value(dh))))) {
        if (!r.failed)
            snprintf(why, whysz, "field \"device_hash\" is not 32 lowercase hex digits");
        r.failed = 1;
    } else if (dh) {
        snprintf(e->device_hash, sizeof(e->device_hash), "%s", json_string_value(dh));
    }
    get_string(&r, "kernel_name", e->kernel_name, sizeof(e->kernel_name));
    get_triple(&r, "block", e->block);
    get_triple(&r, "cluster", e->cluster);
    e->smem_bytes = (uint32_t)get_int(&r, "smem_bytes", 0, UINT32_MAX);
    e->registers = (int)get_int(&r, "registers", INT32_MIN, INT32_MAX);
    e->spill_stores = (int)get_int(&r, "spill_stores", INT32_MIN, INT32_MAX);
    e->spill_loads = (int)get_int(&r, "spill_loads", INT32_MIN, INT32_MAX);
    e->stack_bytes = (int)get_int(&r, "stack_bytes", INT32_MIN, INT32_MAX);
    const json_t *cs = field(&r, "compile_seconds", JSON_REAL, "a number");
    e->compile_seconds = cs ? json_number_value(cs) : 0;
    get_string(&r, "checksum", e->checksum, sizeof(e->checksum));
    if (!r.failed && !jit__cache_valid_hash(e->checksum)) {
        snprintf(why, whysz, "field \"checksum\" is not 32 lowercase hex digits");
        r.failed = 1;
    }
    e->size = (uint64_t)get_int(&r, "size", 0, INT64_MAX);
    e->created = get_int(&r, "created", INT64_MIN, INT64_MAX);
    e->last_used = get_int(&r, "last_used", INT64_MIN, INT64_MAX);
    return r.failed ? -1 : 0;
}

int jit__cache_entry_from_text(const char *text, size_t len, jit__cache_entry_t *e, char *why,
                               size_t whysz) {
    json_error_t err;
    json_t *obj = json_loadb(text, len, JSON_REJECT_DUPLICATES, &err);
    if (!obj) {
        memset(e, 0, sizeof(*e));
        snprintf(why, whysz, "invalid JSON at line %d column %d: %s", err.line, err.column,
                 err.text);
        return -1;
    }
    int r = jit__cache_entry_from_object(obj, e, why, whysz);
    json_decref(obj);
    return r;
}

int jit__cache_entry_equal(const jit__cache_entry_t *a, const jit__cache_entry_t *b) {
    /* Times are excluded: last_used moves on every hit without the manifest being rewritten. */
    return !strcmp(a->hash, b->hash) && !strcmp(a->key_text, b->key_text) &&
           !strcmp(a->arch, b->arch) && !strcmp(a->target, b->target) &&
           a->fallback == b->fallback && !strcmp(a->check_target, b->check_target) &&
           !memcmp(&a->toolchain, &b->toolchain, sizeof(a->toolchain)) &&
           a->generator_version == b->generator_version &&
           !strcmp(a->device_hash, b->device_hash) && !strcmp(a->kernel_name, b->kernel_name) &&
           !memcmp(a->block, b->block, sizeof(a->block)) &&
           !memcmp(a->cluster, b->cluster, sizeof(a->cluster)) && a->smem_bytes == b->smem_bytes &&
           a->registers == b->registers && a->spill_stores == b->spill_stores &&
           a->spill_loads == b->spill_loads && a->stack_bytes == b->stack_bytes &&
           !strcmp(a->checksum, b->checksum) && a->size == b->size;
}
