/*
 * Whole-cache operations: list, verify and clear (gc is in gc.c). They walk kernels/ (the
 * truth) and treat the index (manifest.json plus manifest.journal) as derived: list rebuilds it
 * when it is missing or unusable, verify compares the two and repairs nothing, clear removes
 * both. Writers take the manifest lock, so they serialise with concurrent publishers; files
 * younger than a minute that look orphaned may belong to a publish in flight and are left for a
 * later gc.
 */
#include "cache_private.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

jit_status_t jit__cache_require_usable(const jit__cache_t *c, int write, jit__diag_t *d) {
    if (!c->readable)
        return jit__fail(d, JIT_CACHE_ERROR,
                         "kernel cache %s is not usable (missing, or not trusted; see the "
                         "warning)",
                         c->dir);
    if (write && !jit__cache_writable(c))
        return jit__fail(d, JIT_CACHE_ERROR, "kernel cache %s is read-only", c->dir);
    return JIT_OK;
}

static int cmp_entry(const void *a, const void *b) {
    return strcmp(((const jit__cache_entry_t *)a)->hash, ((const jit__cache_entry_t *)b)->hash);
}

static int cmp_item(const void *a, const void *b) {
    return strcmp(((const jit__cache_item_t *)a)->hash, ((const jit__cache_item_t *)b)->hash);
}

static const jit__cache_item_t *find_item(const jit__cache_scan_t *s, const char *hash) {
    if (s->n == 0) /* the array is NULL then, which bsearch may not be given */
        return NULL;
    jit__cache_item_t key;
    snprintf(key.hash, sizeof(key.hash), "%s", hash);
    return bsearch(&key, s->items, s->n, sizeof(*s->items), cmp_item);
}

jit_status_t jit__cache_lock_index(jit__cache_t *c, int *fd, jit__diag_t *d) {
    *fd = jit__cache_manifest_lock(c);
    if (*fd >= 0)
        return JIT_OK;
    if (jit__cache_errno_readonly(-*fd))
        jit__cache_set_readonly(c, "manifest.lock", -*fd);
    return jit__fail(d, JIT_IO_ERROR, "kernel cache %s: cannot lock manifest.lock: %s", c->dir,
                     strerror(-*fd));
}

/* ---- list -------------------------------------------------------------------------------- */

/* The index's entries, rebuilt (and rewritten when possible) if it is missing or unusable. */
static jit_status_t load_or_rebuild(jit__cache_t *c, json_t **entries, jit__diag_t *d) {
    jit__index_state_t s;
    jit__cache_index_load(c, entries, &s);
    if (jit__cache_index_usable(&s))
        return JIT_OK;
    if (s.manifest == JIT__MANIFEST_FAILED)
        return jit__fail(d, JIT_IO_ERROR, "kernel cache %s: %s", c->dir, s.manifest_why);
    if (s.journal == JIT__JOURNAL_FAILED)
        return jit__fail(d, JIT_IO_ERROR, "kernel cache %s: %s", c->dir, s.journal_why);
    if (jit__cache_writable(c)) {
        int lock = jit__cache_manifest_lock(c);
        if (lock >= 0) {
            /* Another process may have repaired it while we waited for the lock. */
            jit__cache_index_load(c, entries, &s);
            int err = jit__cache_index_usable(&s) ? 0 : jit__cache_compact(c, NULL, entries);
            jit__cache_manifest_unlock(lock);
            if (!err)
                return JIT_OK;
            if (jit__cache_errno_readonly(err))
                jit__cache_set_readonly(c, "manifest.json", err);
            else
                jit__log(c->log_level, JIT_LOG_WARN,
                         "kernel cache %s: cannot rewrite manifest.json: %s", c->dir,
                         strerror(err));
        }
    }
    /* Read-only, or the rewrite failed: list what the sidecars say without saving it. */
    jit_status_t st = jit__cache_manifest_rebuild(c, entries, d);
    if (st == JIT_OK && s.manifest == JIT__MANIFEST_CORRUPT)
        jit__log(c->log_level, JIT_LOG_WARN,
                 "kernel cache %s: manifest.json is unusable (%s); rebuilt from the %zu "
                 "entries on disk",
                 c->dir, s.manifest_why, json_object_size(*entries));
    return st;
}

/* The entries of a tree from load_or_rebuild, sorted by hash. */
static jit_status_t tree_to_array(json_t *ents, jit__cache_entry_t **out, size_t *count,
                                  jit__diag_t *d) {
    size_t n = 0;
    *out = calloc(json_object_size(ents) ? json_object_size(ents) : 1, sizeof(**out));
    if (!*out)
        return jit__fail(d, JIT_OUT_OF_MEMORY, "cache list: out of memory");
    const char *hash;
    json_t *value;
    json_object_foreach(ents, hash, value) {
        char why[JIT__CACHE_WHY_MAX];
        if (jit__cache_entry_from_object(value, &(*out)[n], why, sizeof(why)) == 0)
            n++; /* always: the index was validated on load, a rebuild made from sidecars */
    }
    qsort(*out, n, sizeof(**out), cmp_entry);
    *count = n;
    return JIT_OK;
}

jit_status_t jit__cache_list(jit__cache_t *c, jit__cache_entry_t **entries, size_t *count,
                             jit__diag_t *d) {
    if (!c || !entries || !count)
        return jit__fail(d, JIT_INVALID_ARGUMENT, "jit__cache_list: NULL argument");
    *entries = NULL;
    *count = 0;
    jit_status_t st = jit__cache_require_usable(c, 0, d);
    if (st != JIT_OK)
        return st;
    jit__cache_entry_t *out = NULL;
    size_t n = 0;
    jit__index_state_t s;
    if (jit__cache_index_read(c, &out, &n, &s) != 0)
        return jit__fail(d, JIT_OUT_OF_MEMORY, "cache list: out of memory");
    if (!jit__cache_index_usable(&s)) {
        json_t *ents = NULL;
        st = load_or_rebuild(c, &ents, d);
        if (st == JIT_OK)
            st = tree_to_array(ents, &out, &n, d);
        json_decref(ents);
        if (st != JIT_OK)
            return st;
    }
    size_t kept = 0;
    for (size_t i = 0; i < n; i++) {
        char why[JIT__CACHE_WHY_MAX], name[JIT__CACHE_NAME_MAX];
        struct stat fst;
        jit__cache_entry_t *e = &out[i];
        /* The index may have drifted from kernels/ (files deleted by hand, a damaged entry a
         * get removed, an index edited by hand); the next compaction heals it, and until then
         * a listing shows what the files say. The manifest is not rewritten on hits; the
         * sidecar's mtime has the last use. */
        jit__cache_entry_name(name, e->hash, ".json");
        if (fstatat(c->dirfd, name, &fst, AT_SYMLINK_NOFOLLOW) != 0)
            continue; /* a phantom: no sidecar, no entry */
        e->last_used = jit__cache_mtime(&fst);
        jit__cache_entry_name(name, e->hash, ".cubin");
        if (fstatat(c->dirfd, name, &fst, AT_SYMLINK_NOFOLLOW) != 0 ||
            (uint64_t)fst.st_size != e->size) {
            /* Not the index's size: the sidecar decides, and an entry it does not vouch for
             * is not listed (get would not load it either). */
            char hash[JIT_KEY_HASH_LEN + 1];
            memcpy(hash, e->hash, sizeof(hash));
            if (jit__cache_check_entry(c, hash, 0, e, NULL, NULL, why, sizeof(why)) !=
                JIT__CHECK_OK)
                continue;
        }
        if (kept != i)
            out[kept] = *e;
        kept++;
    }
    if (!out) /* an empty index: callers get an array they may free either way */
        out = calloc(1, sizeof(*out));
    if (!out)
        return jit__fail(d, JIT_OUT_OF_MEMORY, "cache list: out of memory");
    *entries = out;
    *count = kept;
    return JIT_OK;
}

/* ---- verify ------------------------------------------------------------------------------ */

static void say(jit__cache_report_fn report, void *user, const char *name, const char *problem) {
    if (report)
        report(name, problem, user);
}

/* The manifest's view of one entry against the sidecar's. 1 if a problem was reported. */
static int compare_with_manifest(json_t *ents, const jit__cache_entry_t *e,
                                 jit__cache_report_fn report, void *user) {
    json_t *m = json_object_get(ents, e->hash);
    jit__cache_entry_t me;
    char why[JIT__CACHE_WHY_MAX];
    if (!m) {
        say(report, user, e->hash, "files without manifest entry");
        return 1;
    }
    if (jit__cache_entry_from_object(m, &me, why, sizeof(why)) != 0 ||
        !jit__cache_entry_equal(e, &me)) {
        say(report, user, e->hash, "manifest entry differs from the sidecar");
        return 1;
    }
    return 0;
}

jit_status_t jit__cache_verify(jit__cache_t *c, jit__cache_report_fn report, void *user,
                               size_t *bad, size_t *entries, jit__diag_t *d) {
    size_t nbad = 0, nentries = 0;
    if (bad)
        *bad = 0;
    if (entries)
        *entries = 0;
    if (!c)
        return jit__fail(d, JIT_INVALID_ARGUMENT, "jit__cache_verify: NULL cache");
    jit_status_t st = jit__cache_require_usable(c, 0, d);
    if (st != JIT_OK)
        return st;
    jit__cache_scan_t scan;
    if ((st = jit__cache_scan(c, &scan, d)) != JIT_OK)
        return st;
    json_t *ents = NULL;
    char why[JIT__CACHE_WHY_MAX], msg[JIT__CACHE_WHY_MAX + 64];
    jit__index_state_t is;
    jit__cache_index_load(c, &ents, &is);
    jit__manifest_state_t ms = is.manifest;
    if (ms == JIT__MANIFEST_FAILED || is.journal == JIT__JOURNAL_FAILED) {
        jit__cache_scan_free(&scan);
        return jit__fail(d, JIT_IO_ERROR, "kernel cache %s: %s", c->dir,
                         ms == JIT__MANIFEST_FAILED ? is.manifest_why : is.journal_why);
    }
    if (ms == JIT__MANIFEST_CORRUPT || (ms == JIT__MANIFEST_MISSING && scan.n > 0)) {
        snprintf(msg, sizeof(msg), "manifest unusable: %s", is.manifest_why);
        say(report, user, "manifest.json", msg);
        nbad++;
    }
    if (is.journal == JIT__JOURNAL_TORN || is.journal == JIT__JOURNAL_CORRUPT) {
        /* A torn last line is what a crash mid-append leaves; its entry is judged below from
         * the files, and gc (or the next compaction) rewrites the journal. */
        snprintf(msg, sizeof(msg), "journal %s: %s",
                 is.journal == JIT__JOURNAL_TORN ? "torn" : "unusable", is.journal_why);
        say(report, user, JIT__CACHE_JOURNAL, msg);
        nbad++;
    }
    if (ms == JIT__MANIFEST_OK && !ents)
        ms = JIT__MANIFEST_CORRUPT; /* the journal is unusable: no index to compare with */
    for (size_t i = 0; i < scan.n; i++) {
        const jit__cache_item_t *it = &scan.items[i];
        int problem = 0;
        if (!(it->files & JIT__F_SIDECAR)) {
            snprintf(msg, sizeof(msg), "orphan files:%s%s%s without a sidecar",
                     (it->files & JIT__F_CUBIN) ? " .cubin" : "",
                     (it->files & JIT__F_SOURCE) ? " .cu" : "",
                     (it->files & JIT__F_PTX) ? " .ptx" : "");
            say(report, user, it->hash, msg);
            problem = 1;
        } else {
            jit__cache_entry_t e;
            nentries++;
            if (jit__cache_check_entry(c, it->hash, 1, &e, NULL, NULL, why, sizeof(why)) !=
                JIT__CHECK_OK) {
                say(report, user, it->hash, why);
                problem = 1;
            } else if (ms == JIT__MANIFEST_OK) {
                problem = compare_with_manifest(ents, &e, report, user);
            }
        }
        nbad += problem;
    }
    if (ms == JIT__MANIFEST_OK) {
        const char *hash;
        json_t *value;
        json_object_foreach(ents, hash, value) {
            const jit__cache_item_t *it = find_item(&scan, hash);
            if (it && (it->files & JIT__F_SIDECAR))
                continue;
            say(report, user, hash, "manifest entry without files");
            nbad += it == NULL; /* with files but no sidecar it was counted as an orphan */
        }
    }
    for (size_t i = 0; i < scan.n_strays; i++) {
        say(report, user, scan.strays[i].name,
            scan.strays[i].is_dir ? "unexpected directory in kernels/"
                                  : "unexpected file in kernels/");
        nbad++;
    }
    json_decref(ents);
    jit__cache_scan_free(&scan);
    if (bad)
        *bad = nbad;
    if (entries)
        *entries = nentries;
    return JIT_OK;
}

/* ---- shared by gc and clear ------------------------------------------------------------ */

size_t jit__cache_sweep_tmp(jit__cache_t *c, int dry, jit__cache_report_fn report, void *user) {
    jit__cache_stray_t *files;
    size_t n, removed = 0;
    int64_t now = (int64_t)time(NULL);
    if (jit__cache_list_dir(c, "tmp", &files, &n, NULL) != JIT_OK)
        return 0;
    for (size_t i = 0; i < n; i++) {
        if (now - files[i].mtime < JIT__CACHE_STALE_SECONDS)
            continue;
        if (dry) {
            if (report)
                report(files[i].name, "stale temporary file", user);
            removed++;
        } else if (unlinkat(c->dirfd, files[i].name, 0) == 0) {
            removed++;
        }
    }
    free(files);
    return removed;
}

void jit__cache_sweep_locks(jit__cache_t *c, json_t *live) {
    jit__cache_stray_t *files;
    size_t n;
    if (jit__cache_list_dir(c, "locks", &files, &n, NULL) != JIT_OK)
        return;
    for (size_t i = 0; i < n; i++) {
        char hash[JIT_KEY_HASH_LEN + 1];
        const char *base = files[i].name + strlen("locks/");
        snprintf(hash, sizeof(hash), "%s", base);
        if (live && jit__cache_valid_hash(hash) && json_object_get(live, hash))
            continue;
        jit__cache_drop_lock_file(c, files[i].name);
    }
    free(files);
}

/* ---- clear ------------------------------------------------------------------------------- */

jit_status_t jit__cache_clear(jit__cache_t *c, size_t *removed, jit__diag_t *d) {
    size_t nremoved = 0;
    if (removed)
        *removed = 0;
    if (!c)
        return jit__fail(d, JIT_INVALID_ARGUMENT, "jit__cache_clear: NULL cache");
    jit_status_t st = jit__cache_require_usable(c, 1, d);
    int lock;
    if (st != JIT_OK || (st = jit__cache_lock_index(c, &lock, d)) != JIT_OK)
        return st;
    jit__cache_scan_t scan;
    int64_t now = (int64_t)time(NULL);
    if ((st = jit__cache_scan(c, &scan, d)) == JIT_OK) {
        for (size_t i = 0; i < scan.n; i++) {
            /* Files without a sidecar that are young are a publish in flight: its cubin is in
             * place and its sidecar comes next. Deleting them would make that publish fail, or
             * leave an entry without its cubin; gc takes them once they are stale. */
            if (!(scan.items[i].files & JIT__F_SIDECAR) &&
                now - scan.items[i].newest < JIT__CACHE_STALE_SECONDS)
                continue;
            jit__cache_remove_entry(c, scan.items[i].hash);
            nremoved++;
        }
        for (size_t i = 0; i < scan.n_strays; i++)
            if (jit__cache_remove_stray(c, &scan.strays[i]))
                nremoved++;
        jit__cache_scan_free(&scan);
        /* Young temporaries are being written by publishes in flight (under no lock clear
         * could take); removing them made those publishes fail with a misleading ENOENT. */
        jit__cache_sweep_tmp(c, 0, NULL, NULL);
        jit__cache_sweep_locks(c, NULL);
        if (unlinkat(c->dirfd, "manifest.json", 0) != 0 && errno != ENOENT)
            st = jit__fail(d, JIT_IO_ERROR, "kernel cache %s: cannot remove manifest.json: %s",
                           c->dir, strerror(errno));
        int err = jit__cache_journal_remove(c);
        if (err && st == JIT_OK)
            st = jit__fail(d, JIT_IO_ERROR, "kernel cache %s: cannot remove %s: %s", c->dir,
                           JIT__CACHE_JOURNAL, strerror(err));
    }
    jit__cache_manifest_unlock(lock);
    if (removed)
        *removed = nremoved;
    return st;
}
