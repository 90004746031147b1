/*
 * The load and publish paths: get, put, the per-key lock and reading an entry's text files.
 *
 * get never opens the manifest: a hit is the sidecar, the cubin and one utimensat(), whatever
 * the cache's size. put publishes the cubin, the source, the PTX and last the sidecar, each by
 * temporary + fsync + rename, so an entry exists exactly when its sidecar does and every file a
 * sidecar points at is already whole; the index (manifest.json and its journal) is updated
 * afterwards under the manifest lock. A put
 * that fails part-way removes what it renamed into place, so nothing half-written is left.
 */
#include "cache_private.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static jit_status_t get_here(jit__cache_t *c, const char *hash, jit__cache_entry_t *entry,
                             void **cubin, size_t *cubin_size, int *found, jit__diag_t *d);

jit_status_t jit__cache_get(jit__cache_t *c, const char *hash, jit__cache_entry_t *entry,
                            void **cubin, size_t *cubin_size, int *found, jit__diag_t *d) {
    jit_status_t st = get_here(c, hash, entry, cubin, cubin_size, found, d);
    /* Then the read-only layers, in order. Each checks its entries as this cache does and, not
     * being writable, never removes or touches them. */
    for (size_t i = 0; st == JIT_OK && !*found && i < c->n_layers; i++)
        st = get_here(c->layers[i], hash, entry, cubin, cubin_size, found, d);
    return st;
}

static jit_status_t get_here(jit__cache_t *c, const char *hash, jit__cache_entry_t *entry,
                             void **cubin, size_t *cubin_size, int *found, jit__diag_t *d) {
    if (!c || !entry || !cubin || !cubin_size || !found)
        return jit__fail(d, JIT_INVALID_ARGUMENT, "jit__cache_get: NULL argument");
    *found = 0;
    *cubin = NULL;
    *cubin_size = 0;
    if (!jit__cache_valid_hash(hash))
        return jit__fail(d, JIT_INVALID_ARGUMENT,
                         "cache key hash \"%.40s\" is not 32 lowercase hex digits",
                         hash ? hash : "(null)");
    /* The hash may live in *entry itself (get(c, e.hash, &e, ...)); copy it before clearing. */
    char h[JIT_KEY_HASH_LEN + 1];
    memcpy(h, hash, sizeof(h));
    hash = h;
    memset(entry, 0, sizeof(*entry));
    if (!c->readable)
        return JIT_OK;
    char why[JIT__CACHE_WHY_MAX];
    jit__check_t r = jit__cache_check_entry(c, hash, 1, entry, cubin, cubin_size, why, sizeof(why));
    if (r == JIT__CHECK_DAMAGED) {
        /* A put of the same key by another process may have replaced the cubin between our two
         * reads; a second look tells that race from real damage before anything is deleted. */
        r = jit__cache_check_entry(c, hash, 1, entry, cubin, cubin_size, why, sizeof(why));
    }
    switch (r) {
    case JIT__CHECK_OK:
        break;
    case JIT__CHECK_MISSING:
        memset(entry, 0, sizeof(*entry));
        return JIT_OK;
    case JIT__CHECK_DAMAGED:
        if (jit__cache_writable(c)) {
            jit__cache_remove_entry(c, hash);
            jit__cache_report_once(c, hash,
                                   "kernel cache %s: entry %s is damaged (%s); removed, it will "
                                   "be recompiled",
                                   c->dir, hash, why);
        } else {
            jit__cache_report_once(c, hash,
                                   "kernel cache %s: entry %s is damaged (%s); not loaded, it "
                                   "will be recompiled (the cache is read-only)",
                                   c->dir, hash, why);
        }
        memset(entry, 0, sizeof(*entry));
        return JIT_OK;
    case JIT__CHECK_REFUSED:
        jit__cache_report_once(c, hash,
                               "kernel cache %s: entry %s is not loaded (%s); it "
                               "will be recompiled",
                               c->dir, hash, why);
        memset(entry, 0, sizeof(*entry));
        return JIT_OK;
    default:
        /* An I/O error on the cache costs a compile, not the caller's GEMM. */
        jit__cache_report_once(c, hash, "kernel cache %s: entry %s cannot be read (%s)", c->dir,
                               hash, why);
        memset(entry, 0, sizeof(*entry));
        return JIT_OK;
    }
    if (jit__cache_writable(c)) {
        char name[JIT__CACHE_NAME_MAX];
        const struct timespec times[2] = {{0, UTIME_OMIT}, {0, UTIME_NOW}};
        jit__cache_entry_name(name, hash, ".json");
        /* Best effort: a failed refresh only makes eviction order slightly stale. */
        if (utimensat(c->dirfd, name, times, AT_SYMLINK_NOFOLLOW) == 0)
            entry->last_used = (int64_t)time(NULL);
    }
    *found = 1;
    return JIT_OK;
}

/* ---- per-key lock ------------------------------------------------------------------------ */

jit_status_t jit__cache_lock_key(jit__cache_t *c, const char *hash, int *token, jit__diag_t *d) {
    if (!c || !token)
        return jit__fail(d, JIT_INVALID_ARGUMENT, "jit__cache_lock_key: NULL argument");
    *token = -1;
    if (!jit__cache_valid_hash(hash))
        return jit__fail(d, JIT_INVALID_ARGUMENT,
                         "cache key hash \"%.40s\" is not 32 lowercase hex digits",
                         hash ? hash : "(null)");
    if (!jit__cache_writable(c))
        return JIT_OK;
    char name[JIT__CACHE_NAME_MAX];
    snprintf(name, sizeof(name), "locks/%s.lock", hash);
    int fd = jit__cache_flock(c, name, 0, 1);
    if (fd < 0) {
        if (jit__cache_errno_readonly(-fd)) {
            jit__cache_set_readonly(c, "locks/", -fd);
            return JIT_OK;
        }
        /* Without the lock two processes may both compile this key; both results are whole,
         * so that costs time, not correctness, and is no reason to fail the caller. */
        jit__cache_report_once(c, "locks",
                               "kernel cache %s: cannot lock %s (%s); compiling without it", c->dir,
                               name, strerror(-fd));
        return JIT_OK;
    }
    *token = fd;
    return JIT_OK;
}

void jit__cache_unlock_key(jit__cache_t *c, int token) {
    (void)c;
    if (token >= 0)
        close(token); /* the lock file stays: deleting it here would race with waiters */
}

/* ---- publish ----------------------------------------------------------------------------- */

/* A field value that begins with '/' or '~' is a path, and a path ties the key to one machine. */
static int key_has_path(const char *text) {
    for (const char *p = text; *p; p++) {
        int starts_value = p == text || p[-1] == '=' || p[-1] == ' ' || p[-1] == '|';
        if (starts_value && (*p == '/' || *p == '~'))
            return 1;
    }
    return 0;
}

static jit_status_t put_failed(jit__cache_t *c, const char *hash, const char *what, int err,
                               jit__diag_t *d) {
    jit__cache_remove_entry(c, hash);
    if (jit__cache_errno_readonly(err)) {
        jit__cache_set_readonly(c, what, err);
        return JIT_OK;
    }
    return jit__fail(d, err == ENOMEM ? JIT_OUT_OF_MEMORY : JIT_IO_ERROR,
                     "kernel cache %s: cannot write %s for entry %s: %s", c->dir, what, hash,
                     strerror(err));
}

/* Add `e` to the index under the manifest lock: one journal line when that is safe, else a
 * compaction. Appending costs the same at any cache size; compacting costs a scan and a rewrite
 * of manifest.json, which is cheap while the manifest is small and, past that, happens once per
 * quarter of the manifest's size in journal, so its cost per publish stays bounded. A line that
 * would take the cache over its cap compacts instead, since eviction needs the scan. */
static int update_manifest(jit__cache_t *c, const jit__cache_entry_t *e, uint64_t bytes,
                           const char **what) {
    *what = "manifest.lock";
    int lock = jit__cache_manifest_lock(c);
    if (lock < 0)
        return -lock;
    jit__journal_info_t tail;
    struct stat mst;
    int append = jit__cache_journal_tail(c, &tail) == 0 &&
                 fstatat(c->dirfd, "manifest.json", &mst, AT_SYMLINK_NOFOLLOW) == 0 &&
                 S_ISREG(mst.st_mode) && (uint64_t)mst.st_size >= JIT__CACHE_INDEX_SMALL &&
                 tail.bytes < (uint64_t)mst.st_size / JIT__CACHE_JOURNAL_FRACTION &&
                 tail.usage + bytes <= (uint64_t)c->max_bytes;
    *what = append ? JIT__CACHE_JOURNAL : "manifest.json and " JIT__CACHE_JOURNAL;
    int err = append ? jit__cache_journal_append(c, e, tail.usage + bytes)
                     : jit__cache_compact(c, e, NULL);
    jit__cache_manifest_unlock(lock);
    return err;
}

jit_status_t jit__cache_put(jit__cache_t *c, const jit__cache_entry_t *entry, const void *cubin,
                            size_t cubin_size, const char *source, const char *ptx,
                            jit__diag_t *d) {
    if (!c || !entry || !cubin || cubin_size == 0)
        return jit__fail(d, JIT_INVALID_ARGUMENT, "jit__cache_put: NULL argument or empty cubin");
    if (!jit__cache_valid_hash(entry->hash))
        return jit__fail(d, JIT_INVALID_ARGUMENT,
                         "cache key hash \"%.40s\" is not 32 lowercase hex digits", entry->hash);
    if (key_has_path(entry->key_text))
        return jit__fail(d, JIT_INVALID_ARGUMENT,
                         "cache key text holds a file path, which would tie the cache to this "
                         "machine: %.200s",
                         entry->key_text);
    if (!jit__cache_writable(c))
        return JIT_OK;

    jit__cache_entry_t e = *entry;
    uint64_t bytes = 0; /* what the entry adds to the cache's usage */
    jit__hash_hex(cubin, cubin_size, e.checksum);
    e.size = (uint64_t)cubin_size;
    e.created = e.last_used = (int64_t)time(NULL);
    char *sidecar = jit__cache_entry_to_json(&e);
    if (!sidecar)
        return jit__fail(d, JIT_CACHE_ERROR,
                         "kernel cache: entry %s cannot be written as JSON (out of memory, or "
                         "text that is not UTF-8)",
                         e.hash);

    struct {
        const char *ext;
        const void *data;
        size_t len;
    } files[4] = {
        {".cubin", cubin, cubin_size},
        {".cu", source, source ? strlen(source) : 0},
        {".ptx", ptx, ptx ? strlen(ptx) : 0},
        {".json", sidecar, strlen(sidecar)},
    };
    for (int i = 0; i < 4; i++) {
        if (!files[i].data)
            continue;
        char name[JIT__CACHE_NAME_MAX];
        jit__cache_entry_name(name, e.hash, files[i].ext);
        bytes += files[i].len;
        int err = jit__cache_publish(c, name, files[i].data, files[i].len);
        if (err) {
            free(sidecar);
            return put_failed(c, e.hash, name, err, d);
        }
    }
    free(sidecar);
    /* The renames are durable only once the directory itself is synced. */
    const char *what = "kernels/";
    int err = jit__cache_fsync_dir(c, "kernels");
    if (!err)
        err = update_manifest(c, &e, bytes, &what);
    if (err)
        return put_failed(c, e.hash, what, err, d);
    return JIT_OK;
}

/* ---- inspection -------------------------------------------------------------------------- */

static jit_status_t read_here(jit__cache_t *c, const char *hash, const char *ext, char **out,
                              jit__diag_t *d);

jit_status_t jit__cache_read_file(jit__cache_t *c, const char *hash, const char *ext, char **out,
                                  jit__diag_t *d) {
    jit__diag_t here;
    jit__diag_init(&here);
    jit_status_t st = read_here(c, hash, ext, out, &here);
    /* A file this cache lacks may be in a layer; the first cache's reason is the one told. */
    for (size_t i = 0; st != JIT_OK && c && i < c->n_layers; i++)
        if (read_here(c->layers[i], hash, ext, out, NULL) == JIT_OK)
            st = JIT_OK;
    if (st != JIT_OK)
        jit__fail(d, st, "%s", here.msg);
    jit__diag_clear(&here);
    return st;
}

static jit_status_t read_here(jit__cache_t *c, const char *hash, const char *ext, char **out,
                              jit__diag_t *d) {
    if (!c || !ext || !out)
        return jit__fail(d, JIT_INVALID_ARGUMENT, "jit__cache_read_file: NULL argument");
    *out = NULL;
    if (!jit__cache_valid_hash(hash))
        return jit__fail(d, JIT_INVALID_ARGUMENT,
                         "cache key hash \"%.40s\" is not 32 lowercase hex digits",
                         hash ? hash : "(null)");
    if (strcmp(ext, ".cu") && strcmp(ext, ".ptx") && strcmp(ext, ".json"))
        return jit__fail(d, JIT_INVALID_ARGUMENT,
                         "cache file extension \"%.16s\" is not .cu, .ptx or .json", ext);
    if (!c->readable)
        return jit__fail(d, JIT_CACHE_ERROR, "kernel cache %s is not usable (see the warning)",
                         c->dir);
    char name[JIT__CACHE_NAME_MAX], why[JIT__CACHE_WHY_MAX];
    size_t len;
    struct stat st;
    jit__cache_entry_name(name, hash, ext);
    switch (jit__cache_slurp(c, name, out, &len, &st, why, sizeof(why))) {
    case JIT__SLURP_OK:
        return JIT_OK;
    case JIT__SLURP_MISSING:
        return jit__fail(d, JIT_CACHE_ERROR, "kernel cache %s has no %s", c->dir, name);
    case JIT__SLURP_REFUSED:
        return jit__fail(d, JIT_CACHE_ERROR, "kernel cache %s: refused %s", c->dir, why);
    default:
        return jit__fail(d, JIT_IO_ERROR, "kernel cache %s: %s", c->dir, why);
    }
}
