/*
 * toolchains.json: the remembered identities of NVRTC/nvJitLink libraries (see
 * jit/toolchain_record.h for what a record means). The file decides which compiler version a
 * key names without the compiler being opened, so it gets the same distrust as a cubin: read
 * only through O_NOFOLLOW and fstat on the open descriptor (owner, mode, regular file), every
 * field checked against bounds before it is used, and written only as a private temporary in
 * tmp/ renamed into place. A record that fails any check is reported once and treated as
 * absent; the next save then replaces it whole, and the rename replaces a symbolic link itself,
 * never what it points at.
 *
 * Two processes saving at once may each drop the other's new entry (read-modify-rename without
 * a lock). That costs the loser one more identification by opening the libraries, never a wrong
 * identity, so it is not worth a lock file.
 */
#include "cache_private.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define RECORD_NAME "toolchains.json"
#define RECORD_FORMAT 1
/* Far above JIT__TOOLCHAIN_RECORD_MAX entries of two maximal paths; anything larger was not
 * written by us. */
#define RECORD_MAX_BYTES (1 << 20)

/* Bounds that any real toolkit sits well inside, and that keep version arithmetic (major * 100
 * + minor) far from overflow. */
#define VERSION_MAJOR_MIN 1
#define VERSION_MAJOR_MAX 99
#define VERSION_MINOR_MAX 99
#define ARCH_MIN 10
#define ARCH_MAX 999

static int bad(char *why, size_t whysz, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static int bad(char *why, size_t whysz, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(why, whysz, fmt, ap);
    va_end(ap);
    return -1;
}

static int get_path(const json_t *e, const char *field, char *out, size_t i, char *why,
                    size_t whysz) {
    const json_t *v = json_object_get(e, field);
    if (!json_is_string(v))
        return bad(why, whysz, "toolchains[%zu].%s is not a string", i, field);
    size_t len = json_string_length(v);
    const char *s = json_string_value(v);
    /* An embedded NUL would make the path compare equal to a shorter one. */
    if (len == 0 || len >= JIT__TOOLCHAIN_PATH_MAX || strlen(s) != len)
        return bad(why, whysz, "toolchains[%zu].%s is empty, too long or holds a NUL", i, field);
    memcpy(out, s, len + 1);
    return 0;
}

/* A JSON integer within [lo, hi], without ever converting an out-of-range value. */
static int get_int(const json_t *v, json_int_t lo, json_int_t hi, json_int_t *out) {
    if (!json_is_integer(v))
        return -1;
    json_int_t x = json_integer_value(v);
    if (x < lo || x > hi)
        return -1;
    *out = x;
    return 0;
}

static int get_print(const json_t *e, const char *field, jit__file_print_t *p, size_t i, char *why,
                     size_t whysz) {
    const json_t *a = json_object_get(e, field);
    json_int_t v[5];
    /* dev and inode are unsigned in the kernel and were stored cast to signed: any value. */
    static const json_int_t lo[5] = {INT64_MIN, INT64_MIN, 0, INT64_MIN, 0};
    static const json_int_t hi[5] = {INT64_MAX, INT64_MAX, INT64_MAX, INT64_MAX, 999999999};
    if (!json_is_array(a) || json_array_size(a) != 5)
        return bad(why, whysz, "toolchains[%zu].%s is not [dev, inode, size, sec, nsec]", i, field);
    for (size_t k = 0; k < 5; k++)
        if (get_int(json_array_get(a, k), lo[k], hi[k], &v[k]) != 0)
            return bad(why, whysz, "toolchains[%zu].%s[%zu] is not an integer in range", i, field,
                       k);
    *p = (jit__file_print_t){v[0], v[1], v[2], v[3], v[4]};
    return 0;
}

static int get_version(const json_t *e, const char *field, int *major, int *minor, size_t i,
                       char *why, size_t whysz) {
    const json_t *a = json_object_get(e, field);
    json_int_t ma, mi;
    if (!json_is_array(a) || json_array_size(a) != 2 ||
        get_int(json_array_get(a, 0), VERSION_MAJOR_MIN, VERSION_MAJOR_MAX, &ma) != 0 ||
        get_int(json_array_get(a, 1), 0, VERSION_MINOR_MAX, &mi) != 0)
        return bad(why, whysz,
                   "toolchains[%zu].%s is not [major, minor] with major %d..%d and minor 0..%d", i,
                   field, VERSION_MAJOR_MIN, VERSION_MAJOR_MAX, VERSION_MINOR_MAX);
    *major = (int)ma;
    *minor = (int)mi;
    return 0;
}

static int record_from_object(const json_t *e, jit__toolchain_record_t *r, size_t i, char *why,
                              size_t whysz) {
    memset(r, 0, sizeof(*r));
    if (!json_is_object(e))
        return bad(why, whysz, "toolchains[%zu] is not an object", i);
    if (get_path(e, "nvrtc_path", r->nvrtc_path, i, why, whysz) ||
        get_path(e, "nvjitlink_path", r->nvjitlink_path, i, why, whysz) ||
        get_print(e, "nvrtc_file", &r->nvrtc_file, i, why, whysz) ||
        get_print(e, "nvjitlink_file", &r->nvjitlink_file, i, why, whysz) ||
        get_version(e, "nvrtc", &r->id.nvrtc_major, &r->id.nvrtc_minor, i, why, whysz) ||
        get_version(e, "nvjitlink", &r->id.nvjitlink_major, &r->id.nvjitlink_minor, i, why, whysz))
        return -1;
    const json_t *archs = json_object_get(e, "archs");
    if (!json_is_array(archs) || json_array_size(archs) > JIT__TOOLCHAIN_MAX_ARCHS)
        return bad(why, whysz, "toolchains[%zu].archs is not an array of at most %d", i,
                   JIT__TOOLCHAIN_MAX_ARCHS);
    for (size_t k = 0; k < json_array_size(archs); k++) {
        json_int_t a;
        if (get_int(json_array_get(archs, k), ARCH_MIN, ARCH_MAX, &a) != 0)
            return bad(why, whysz, "toolchains[%zu].archs[%zu] is not an integer in %d..%d", i, k,
                       ARCH_MIN, ARCH_MAX);
        r->archs[r->n_archs++] = (int)a;
    }
    return 0;
}

/* The same checks as a read, so nothing is written that a reader would refuse. */
static int record_valid(const jit__toolchain_record_t *r) {
    size_t lp = strnlen(r->nvrtc_path, JIT__TOOLCHAIN_PATH_MAX);
    size_t ll = strnlen(r->nvjitlink_path, JIT__TOOLCHAIN_PATH_MAX);
    const jit__toolchain_id_t *id = &r->id;
    int ok = lp > 0 && lp < JIT__TOOLCHAIN_PATH_MAX && ll > 0 && ll < JIT__TOOLCHAIN_PATH_MAX &&
             id->nvrtc_major >= VERSION_MAJOR_MIN && id->nvrtc_major <= VERSION_MAJOR_MAX &&
             id->nvrtc_minor >= 0 && id->nvrtc_minor <= VERSION_MINOR_MAX &&
             id->nvjitlink_major >= VERSION_MAJOR_MIN && id->nvjitlink_major <= VERSION_MAJOR_MAX &&
             id->nvjitlink_minor >= 0 && id->nvjitlink_minor <= VERSION_MINOR_MAX &&
             r->n_archs >= 0 && r->n_archs <= JIT__TOOLCHAIN_MAX_ARCHS && r->nvrtc_file.size >= 0 &&
             r->nvjitlink_file.size >= 0 && r->nvrtc_file.mtime_nsec >= 0 &&
             r->nvrtc_file.mtime_nsec <= 999999999 && r->nvjitlink_file.mtime_nsec >= 0 &&
             r->nvjitlink_file.mtime_nsec <= 999999999;
    for (int k = 0; ok && k < r->n_archs; k++)
        ok = r->archs[k] >= ARCH_MIN && r->archs[k] <= ARCH_MAX;
    return ok;
}

static json_t *print_to_json(const jit__file_print_t *p) {
    return json_pack("[IIIII]", (json_int_t)p->dev, (json_int_t)p->ino, (json_int_t)p->size,
                     (json_int_t)p->mtime_sec, (json_int_t)p->mtime_nsec);
}

static json_t *record_to_object(const jit__toolchain_record_t *r) {
    json_t *archs = json_array();
    for (int k = 0; archs && k < r->n_archs; k++)
        json_array_append_new(archs, json_integer(r->archs[k]));
    return json_pack("{s:s, s:o, s:s, s:o, s:[ii], s:[ii], s:o}", "nvrtc_path", r->nvrtc_path,
                     "nvrtc_file", print_to_json(&r->nvrtc_file), "nvjitlink_path",
                     r->nvjitlink_path, "nvjitlink_file", print_to_json(&r->nvjitlink_file),
                     "nvrtc", r->id.nvrtc_major, r->id.nvrtc_minor, "nvjitlink",
                     r->id.nvjitlink_major, r->id.nvjitlink_minor, "archs", archs);
}

static jit__record_state_t load(const jit__cache_t *c, jit__toolchain_record_t **recs, size_t *n,
                                char *why, size_t whysz) {
    *recs = NULL;
    *n = 0;
    if (!c || c->dirfd < 0 || !c->readable)
        return JIT__RECORD_MISSING;
    char *buf;
    size_t len;
    struct stat st;
    switch (jit__cache_slurp(c, RECORD_NAME, &buf, &len, &st, why, whysz)) {
    case JIT__SLURP_OK:
        break;
    case JIT__SLURP_MISSING:
        return JIT__RECORD_MISSING;
    case JIT__SLURP_REFUSED:
        return JIT__RECORD_REFUSED;
    default:
        return JIT__RECORD_FAILED;
    }
    jit__record_state_t state = JIT__RECORD_DAMAGED;
    json_error_t jerr;
    json_t *root = NULL;
    jit__toolchain_record_t *out = NULL;
    if (len > RECORD_MAX_BYTES) {
        snprintf(why, whysz, RECORD_NAME ": %zu bytes, more than a record can hold", len);
        goto done;
    }
    /* NULs are let through the parser so that get_path can name the field that holds one. */
    root = json_loadb(buf, len, JSON_REJECT_DUPLICATES | JSON_ALLOW_NUL, &jerr);
    if (!root) {
        snprintf(why, whysz, RECORD_NAME ": not JSON (line %d: %s)", jerr.line, jerr.text);
        goto done;
    }
    const json_t *format = json_object_get(root, "format");
    const json_t *list = json_object_get(root, "toolchains");
    if (!json_is_integer(format) || json_integer_value(format) != RECORD_FORMAT) {
        snprintf(why, whysz, RECORD_NAME ": \"format\" is not %d", RECORD_FORMAT);
        goto done;
    }
    if (!json_is_array(list) || json_array_size(list) > JIT__TOOLCHAIN_RECORD_MAX) {
        snprintf(why, whysz, RECORD_NAME ": \"toolchains\" is not an array of at most %d",
                 JIT__TOOLCHAIN_RECORD_MAX);
        goto done;
    }
    size_t count = json_array_size(list);
    out = calloc(count ? count : 1, sizeof(*out));
    if (!out) {
        snprintf(why, whysz, RECORD_NAME ": out of memory");
        state = JIT__RECORD_FAILED;
        goto done;
    }
    char field[JIT__CACHE_WHY_MAX - sizeof(RECORD_NAME ": ")];
    for (size_t i = 0; i < count; i++) {
        if (record_from_object(json_array_get(list, i), &out[i], i, field, sizeof(field)) != 0) {
            snprintf(why, whysz, RECORD_NAME ": %s", field);
            goto done;
        }
    }
    *recs = out;
    *n = count;
    out = NULL;
    state = JIT__RECORD_OK;
done:
    free(out);
    json_decref(root);
    free(buf);
    return state;
}

jit__record_state_t jit__cache_toolchains_read(jit__cache_t *c, jit__toolchain_record_t **recs,
                                               size_t *n) {
    char why[JIT__CACHE_WHY_MAX] = "";
    jit__record_state_t state = load(c, recs, n, why, sizeof(why));
    if (state == JIT__RECORD_REFUSED || state == JIT__RECORD_DAMAGED || state == JIT__RECORD_FAILED)
        jit__cache_report_once(c, RECORD_NAME,
                               "kernel cache %s: toolchain record ignored (%s); the NVRTC and "
                               "nvJitLink libraries are opened to identify them, and the "
                               "record is rewritten",
                               c->dir, why);
    return state;
}

int jit__cache_toolchains_save(jit__cache_t *c, const jit__toolchain_record_t *rec) {
    if (!rec || !record_valid(rec))
        return EINVAL;
    if (!jit__cache_writable(c))
        return EROFS;
    /* An unusable record was reported when it was read; it is simply replaced here. */
    char why[JIT__CACHE_WHY_MAX];
    jit__toolchain_record_t *old = NULL;
    size_t n_old = 0;
    if (load(c, &old, &n_old, why, sizeof(why)) != JIT__RECORD_OK)
        n_old = 0;
    json_t *list = json_array();
    json_t *root =
        list ? json_pack("{s:i, s:o}", "format", RECORD_FORMAT, "toolchains", list) : NULL;
    int err = root ? 0 : ENOMEM;
    /* Room for the new entry: keep the most recent others, in their order. */
    size_t kept = 0;
    for (size_t i = n_old; !err && i-- > 0;)
        kept += strcmp(old[i].nvrtc_path, rec->nvrtc_path) != 0;
    size_t skip = kept >= JIT__TOOLCHAIN_RECORD_MAX ? kept - (JIT__TOOLCHAIN_RECORD_MAX - 1) : 0;
    for (size_t i = 0; !err && i < n_old; i++) {
        if (strcmp(old[i].nvrtc_path, rec->nvrtc_path) == 0)
            continue;
        if (skip > 0) {
            skip--;
            continue;
        }
        if (json_array_append_new(list, record_to_object(&old[i])) != 0)
            err = ENOMEM;
    }
    if (!err && json_array_append_new(list, record_to_object(rec)) != 0)
        err = ENOMEM;
    char *text = err ? NULL : json_dumps(root, JSON_INDENT(1));
    if (!err && !text)
        err = ENOMEM;
    if (!err)
        err = jit__cache_publish(c, RECORD_NAME, text, strlen(text));
    free(text);
    json_decref(root);
    free(old);
    return err;
}
