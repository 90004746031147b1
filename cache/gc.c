/*
 * gc: repair a cache directory and bring it within its size cap, without ever taking a kernel
 * some host could still be served unless told to.
 *
 * A valid entry is servable: a key holds no toolchain, so a host with any NVRTC (or none) is
 * served what another NVRTC built; and during a rolling upgrade the hosts still running the
 * previous jitgemm serve the entries of its key format and device code. So by default gc
 * removes only what no host can load (damaged or untrusted entries) and what is no entry at all
 * (orphans, strays, stale temporaries, idle lock files), and then evicts least recently used
 * entries above the cap, the rule every publish already follows. Dropping a toolchain's entries
 * or another version's is an explicit rule (jit__cache_gc_rules_t). None of this needs NVRTC.
 *
 * gc holds the manifest lock throughout, so it serialises with publishers; files younger than a
 * minute that look orphaned may be a publish in flight and are left for a later gc. A dry run
 * applies the same rules, reports each removal, and removes, rewrites and locks nothing.
 */
#include "cache_private.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static int nvrtc_dropped(const jit__toolchain_id_t *tc, const jit__cache_gc_rules_t *r) {
    for (size_t i = 0; i < r->n_drop_nvrtc; i++)
        if (tc->nvrtc_major == r->drop_nvrtc[i].major && tc->nvrtc_minor == r->drop_nvrtc[i].minor)
            return 1;
    return 0;
}

/* Why gc drops the entry `it` (into why), or 0 to keep it (*e then filled). */
static int drop_reason(jit__cache_t *c, const jit__cache_item_t *it,
                       const jit__cache_gc_rules_t *rules, int64_t now, jit__cache_entry_t *e,
                       char *why, size_t whysz) {
    if (!(it->files & JIT__F_SIDECAR)) {
        snprintf(why, whysz, "files without a sidecar, untouched for %d s or more",
                 (int)JIT__CACHE_STALE_SECONDS);
        return now - it->newest >= JIT__CACHE_STALE_SECONDS;
    }
    char check[JIT__CACHE_WHY_MAX] = "";
    jit__check_t r = jit__cache_check_entry(c, it->hash, 1, e, NULL, NULL, check, sizeof(check));
    if (r == JIT__CHECK_FAILED) /* unreadable now, not proven damaged: keep it */
        r = jit__cache_check_entry(c, it->hash, 0, e, NULL, NULL, check, sizeof(check));
    if (r != JIT__CHECK_OK)
        snprintf(why, whysz, "%s: %s",
                 r == JIT__CHECK_REFUSED  ? "not trusted"
                 : r == JIT__CHECK_FAILED ? "unreadable"
                                          : "damaged",
                 check);
    else if (rules->only_key_format > 0 && e->generator_version != rules->only_key_format)
        snprintf(why, whysz, "key format %d, not this library's %d (another jitgemm version)",
                 e->generator_version, rules->only_key_format);
    else if (rules->only_device_hash && strcmp(e->device_hash, rules->only_device_hash) != 0)
        snprintf(why, whysz,
                 "built from other device code (%.16s), not this library's (another jitgemm "
                 "version)",
                 e->device_hash[0] ? e->device_hash : "none recorded");
    else if (nvrtc_dropped(&e->toolchain, rules))
        snprintf(why, whysz, "built by NVRTC %d.%d, a toolchain gc was told to drop",
                 e->toolchain.nvrtc_major, e->toolchain.nvrtc_minor);
    else
        return 0;
    return 1;
}

/* Evict the least recently used of the `n` entries gc kept (`live`, reordered here) until what
 * they hold is within the cap, dropping each from `kept`. Returns how many. */
static size_t trim_to_cap(jit__cache_t *c, jit__cache_item_t *live, size_t n, int dry,
                          jit__cache_report_fn report, void *user, json_t *kept) {
    uint64_t used = 0, cap = (uint64_t)c->max_bytes;
    for (size_t i = 0; i < n; i++)
        used += live[i].bytes;
    if (used <= cap)
        return 0;
    qsort(live, n, sizeof(*live), jit__cache_item_by_last_use);
    size_t evicted = 0;
    char why[128];
    snprintf(why, sizeof(why),
             "least recently used, and the cache is over its size cap of %lld "
             "bytes",
             (long long)c->max_bytes);
    for (size_t i = 0; i < n && used > cap; i++) {
        if (dry && report)
            report(live[i].hash, why, user);
        if (!dry) {
            jit__cache_remove_entry(c, live[i].hash);
            json_object_del(kept, live[i].hash);
        }
        used -= live[i].bytes;
        evicted++;
    }
    return evicted;
}

/* The entries of `scan` as gc judges them: each one to drop removed (dry: reported), each one
 * kept added to `kept` and to `live` (room for scan->n). */
static jit_status_t judge_entries(jit__cache_t *c, const jit__cache_scan_t *scan,
                                  const jit__cache_gc_rules_t *rules, int dry,
                                  jit__cache_report_fn report, void *user, json_t *kept,
                                  jit__cache_item_t *live, size_t *n_live, size_t *removed,
                                  jit__diag_t *d) {
    int64_t now = (int64_t)time(NULL);
    for (size_t i = 0; i < scan->n; i++) {
        const jit__cache_item_t *it = &scan->items[i];
        char why[JIT__CACHE_WHY_MAX + 64];
        jit__cache_entry_t e;
        if (drop_reason(c, it, rules, now, &e, why, sizeof(why))) {
            if (dry && report)
                report(it->hash, why, user);
            if (!dry)
                jit__cache_remove_entry(c, it->hash);
            (*removed)++;
        } else if (it->files & JIT__F_SIDECAR) {
            json_t *o = jit__cache_entry_to_object(&e);
            if (!o || json_object_set_new(kept, e.hash, o) != 0)
                return jit__fail(d, JIT_OUT_OF_MEMORY, "cache gc: out of memory");
            live[*n_live] = *it;
            live[*n_live].sidecar_time = e.last_used; /* as of the check, fresher than the scan */
            (*n_live)++;
        }
    }
    for (size_t i = 0; i < scan->n_strays; i++) {
        if (now - scan->strays[i].mtime < JIT__CACHE_STALE_SECONDS)
            continue;
        if (dry) {
            if (report)
                report(scan->strays[i].name, "stray file in kernels/", user);
            (*removed)++;
        } else if (jit__cache_remove_stray(c, &scan->strays[i])) {
            (*removed)++;
        }
    }
    return JIT_OK;
}

/* Rewrite the index from what gc kept. Everything the journal held is in the manifest then (or
 * was removed); without a journal the next publish compacts, which counts the usage afresh. */
static jit_status_t rewrite_index(jit__cache_t *c, json_t *kept, jit__diag_t *d) {
    int err = jit__cache_manifest_write(c, kept);
    if (err)
        return jit__fail(d, JIT_IO_ERROR, "kernel cache %s: cannot write manifest.json: %s", c->dir,
                         strerror(err));
    if ((err = jit__cache_journal_remove(c)) != 0)
        return jit__fail(d, JIT_IO_ERROR, "kernel cache %s: cannot remove %s: %s", c->dir,
                         JIT__CACHE_JOURNAL, strerror(err));
    return JIT_OK;
}

static jit_status_t gc_run(jit__cache_t *c, const jit__cache_gc_rules_t *rules, int dry,
                           jit__cache_report_fn report, void *user, jit__cache_gc_counts_t *counts,
                           jit__diag_t *d) {
    static const jit__cache_gc_rules_t keep_all = {0};
    jit__cache_gc_counts_t n = {0, 0};
    if (counts)
        *counts = n;
    if (!c || (rules && rules->n_drop_nvrtc > 0 && !rules->drop_nvrtc))
        return jit__fail(d, JIT_INVALID_ARGUMENT, "jit__cache_gc: NULL argument");
    if (!rules)
        rules = &keep_all;
    jit_status_t st = jit__cache_require_usable(c, !dry, d);
    int lock = -1;
    if (st != JIT_OK || (!dry && (st = jit__cache_lock_index(c, &lock, d)) != JIT_OK))
        return st;
    jit__cache_scan_t scan;
    json_t *kept = json_object();
    jit__cache_item_t *live = NULL;
    if ((st = jit__cache_scan(c, &scan, d)) != JIT_OK) {
        json_decref(kept);
        if (!dry)
            jit__cache_manifest_unlock(lock);
        return st;
    }
    live = malloc((scan.n ? scan.n : 1) * sizeof(*live));
    size_t n_live = 0;
    if (!kept || !live)
        st = jit__fail(d, JIT_OUT_OF_MEMORY, "cache gc: out of memory");
    else
        st = judge_entries(c, &scan, rules, dry, report, user, kept, live, &n_live, &n.removed, d);
    jit__cache_scan_free(&scan);
    if (st == JIT_OK) {
        n.evicted = trim_to_cap(c, live, n_live, dry, report, user, kept);
        n.removed += n.evicted;
        n.removed += jit__cache_sweep_tmp(c, dry, report, user);
        if (!dry) {
            jit__cache_sweep_locks(c, kept);
            st = rewrite_index(c, kept, d);
        }
    }
    free(live);
    json_decref(kept);
    if (!dry)
        jit__cache_manifest_unlock(lock);
    if (counts)
        *counts = n;
    return st;
}

jit_status_t jit__cache_gc(jit__cache_t *c, const jit__cache_gc_rules_t *rules,
                           jit__cache_gc_counts_t *counts, jit__diag_t *d) {
    return gc_run(c, rules, 0, NULL, NULL, counts, d);
}

jit_status_t jit__cache_gc_dry_run(jit__cache_t *c, const jit__cache_gc_rules_t *rules,
                                   jit__cache_report_fn report, void *user,
                                   jit__cache_gc_counts_t *counts, jit__diag_t *d) {
    return gc_run(c, rules, 1, report, user, counts, d);
}
