/*
 * The index: manifest.json as last compacted, plus manifest.journal's appends since. Readers
 * take no lock, so a compaction may replace both files between a reader's two reads; the
 * reader then sees the old manifest with the new, nearly empty journal and would miss entries.
 * It notices by the manifest's identity changing across its reads and reads again.
 *
 * Compaction is also where drift between the index and kernels/ heals (a kill -9 between a
 * sidecar's rename and the journal append, files deleted by hand, an index edited by hand): it
 * starts from the scan that eviction needs anyway and lets the directory win.
 */
#include "cache_private.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define JIT__INDEX_RETRIES 8

static int same_file(const struct stat *a, const struct stat *b) {
    return a->st_dev == b->st_dev && a->st_ino == b->st_ino &&
           a->st_mtim.tv_sec == b->st_mtim.tv_sec && a->st_mtim.tv_nsec == b->st_mtim.tv_nsec;
}

void jit__cache_index_load(const jit__cache_t *c, json_t **entries, jit__index_state_t *s) {
    *entries = NULL;
    for (int attempt = 0;; attempt++) {
        memset(s, 0, sizeof(*s));
        s->journal = JIT__JOURNAL_MISSING;
        struct stat before, after;
        int have_before = fstatat(c->dirfd, "manifest.json", &before, AT_SYMLINK_NOFOLLOW) == 0;
        s->manifest =
            jit__cache_manifest_load(c, entries, s->manifest_why, sizeof(s->manifest_why));
        if (s->manifest != JIT__MANIFEST_OK)
            return;
        s->journal =
            jit__cache_journal_apply(c, *entries, &s->info, s->journal_why, sizeof(s->journal_why));
        int stable = have_before &&
                     fstatat(c->dirfd, "manifest.json", &after, AT_SYMLINK_NOFOLLOW) == 0 &&
                     same_file(&before, &after);
        if (stable || attempt == JIT__INDEX_RETRIES) {
            if (!jit__cache_index_usable(s)) {
                json_decref(*entries);
                *entries = NULL;
            }
            return;
        }
        json_decref(*entries);
        *entries = NULL;
    }
}

int jit__cache_index_usable(const jit__index_state_t *s) {
    return s->manifest == JIT__MANIFEST_OK &&
           (s->journal == JIT__JOURNAL_OK || s->journal == JIT__JOURNAL_MISSING ||
            s->journal == JIT__JOURNAL_TORN);
}

static const jit__cache_item_t *find_item(const jit__cache_scan_t *s, const char *hash) {
    size_t lo = 0, hi = s->n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        int r = strcmp(s->items[mid].hash, hash);
        if (r == 0)
            return &s->items[mid];
        if (r < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    return NULL;
}

/* The entry of `hash` as its sidecar has it, into `entries`; dropped if it is not intact. */
static int adopt_sidecar(const jit__cache_t *c, const char *hash, json_t *entries) {
    jit__cache_entry_t e;
    char why[JIT__CACHE_WHY_MAX];
    /* Size and owner, not the checksum: the load path checks that on every hit. */
    if (jit__cache_check_entry(c, hash, 0, &e, NULL, NULL, why, sizeof(why)) != JIT__CHECK_OK) {
        json_object_del(entries, hash);
        return 0;
    }
    json_t *o = jit__cache_entry_to_object(&e);
    return (!o || json_object_set_new(entries, hash, o) != 0) ? ENOMEM : 0;
}

/* Make `entries` agree with the scan (sorted by hash). 0 or an errno. */
static int heal(const jit__cache_t *c, const jit__cache_scan_t *scan, json_t *entries) {
    const char *hash;
    json_t *value;
    void *tmp;
    int err = 0;
    json_object_foreach_safe(entries, tmp, hash, value) {
        const jit__cache_item_t *it = find_item(scan, hash);
        json_t *size = json_object_get(value, "size");
        if (!it || !(it->files & JIT__F_SIDECAR))
            json_object_del(entries, hash); /* a phantom: its entry is gone */
        else if (!json_is_integer(size) || (uint64_t)json_integer_value(size) != it->cubin_bytes)
            err = adopt_sidecar(c, hash, entries);
        if (err)
            return err;
    }
    for (size_t i = 0; i < scan->n && !err; i++)
        if ((scan->items[i].files & JIT__F_SIDECAR) &&
            !json_object_get(entries, scan->items[i].hash))
            err = adopt_sidecar(c, scan->items[i].hash, entries);
    return err;
}

int jit__cache_compact(jit__cache_t *c, const jit__cache_entry_t *put, json_t **out) {
    if (out)
        *out = NULL;
    json_t *entries = NULL;
    jit__index_state_t s;
    jit__cache_index_load(c, &entries, &s);
    if (s.manifest == JIT__MANIFEST_FAILED || s.journal == JIT__JOURNAL_FAILED)
        return EIO;
    if (!entries) {
        if (s.manifest == JIT__MANIFEST_CORRUPT)
            jit__log(c->log_level, JIT_LOG_WARN,
                     "kernel cache %s: manifest.json is unusable (%s); rebuilt from the entries",
                     c->dir, s.manifest_why);
        else if (s.journal == JIT__JOURNAL_CORRUPT)
            jit__log(c->log_level, JIT_LOG_WARN,
                     "kernel cache %s: %s is unusable (%s); the index is rebuilt from the "
                     "entries",
                     c->dir, JIT__CACHE_JOURNAL, s.journal_why);
        entries = json_object(); /* the heal below adds every sidecar */
        if (!entries)
            return ENOMEM;
    }
    int err = 0;
    if (put) {
        json_t *o = jit__cache_entry_to_object(put);
        if (!o || json_object_set_new(entries, put->hash, o) != 0)
            err = ENOMEM;
    }
    jit__cache_scan_t scan;
    if (!err && jit__cache_scan(c, &scan, NULL) != JIT_OK)
        err = EIO;
    uint64_t usage = 0;
    if (!err) {
        err = heal(c, &scan, entries);
        if (!err)
            jit__cache_evict_scan(c, &scan, put ? put->hash : NULL, entries, &usage);
        jit__cache_scan_free(&scan);
    }
    if (!err)
        err = jit__cache_manifest_write(c, entries);
    /* The manifest now holds everything the journal did; a crash before the reset only
     * replays lines already applied. */
    if (!err)
        err = jit__cache_journal_reset(c, usage);
    if (!err && out)
        *out = entries;
    else
        json_decref(entries);
    return err;
}
