/*
 * The size cap. Usage is the bytes of every entry's files (cubin, source, PTX, sidecar) as the
 * directory shows them now, so it stays right whatever other processes did; files of entries
 * still being published (no sidecar yet) are not counted, being nobody's to evict. Victims go in
 * order of last use (sidecar mtime), oldest first, and the entry just published is never one:
 * evicting it would make every put of an oversized kernel a wasted compile.
 *
 * Eviction needs the scan of kernels/ (last use is each sidecar's mtime, which hits refresh
 * without touching the index), so it costs O(entries). Evicting only down to the cap would make
 * every later publish cross it again and pay that scan each time. A large cache is therefore
 * brought down to a fraction below the cap at each compaction and grows back to the cap by
 * journal appends: the next crossing is a number of publishes away that grows with the cache,
 * and the scan's cost per publish stays bounded (amortized O(1)), as the journal's compaction
 * does. A small cache's index is rewritten by every publish anyway, so it keeps every entry the
 * cap allows.
 */
#include "cache_private.h"

#include <stdlib.h>
#include <string.h>

/* A compaction brings a cache of EVICT_BATCH_MIN entries or more to cap - cap/HEADROOM. */
#define EVICT_HEADROOM 8
#define EVICT_BATCH_MIN 64

int jit__cache_item_by_last_use(const void *a, const void *b) {
    const jit__cache_item_t *x = a, *y = b;
    if (x->sidecar_time != y->sidecar_time)
        return x->sidecar_time < y->sidecar_time ? -1 : 1;
    return strcmp(x->hash, y->hash);
}

size_t jit__cache_evict_scan(jit__cache_t *c, jit__cache_scan_t *scan, const char *keep_hash,
                             json_t *entries, uint64_t *usage) {
    uint64_t used = 0;
    size_t n = 0;
    for (size_t i = 0; i < scan->n; i++) {
        if (!(scan->items[i].files & JIT__F_SIDECAR))
            continue;
        used += scan->items[i].bytes;
        scan->items[n++] = scan->items[i];
    }
    scan->n = n; /* the caller's scan now holds entries only, in eviction order */
    size_t removed = 0;
    uint64_t cap = (uint64_t)c->max_bytes;
    /* The goal applies at every compaction, not only once over the cap: a cache that sits just
     * under its cap would otherwise compact on every publish without evicting anything (each
     * one counts its bytes until the next scan, re-publishes included). */
    uint64_t goal = n >= EVICT_BATCH_MIN ? cap - cap / EVICT_HEADROOM : cap;
    if (used > goal) {
        qsort(scan->items, n, sizeof(*scan->items), jit__cache_item_by_last_use);
        for (size_t i = 0; i < n && used > goal; i++) {
            if (keep_hash && !strcmp(scan->items[i].hash, keep_hash)) {
                /* Kept though over the cap alone, so the next publish evicts it in turn and
                 * every run compiles again: a misconfiguration worth one warning, not a note
                 * at the info level that nobody sees. */
                if (scan->items[i].bytes > cap && !atomic_exchange(&c->warned_cap, 1))
                    jit__log(c->log_level, JIT_LOG_WARN,
                             "kernel cache %s: the size cap (%lld bytes) is smaller than one "
                             "entry (%llu bytes), so each new kernel evicts all the others and "
                             "they are compiled again next time; raise JITGEMM_CACHE_MAX_BYTES "
                             "(or cache_max_bytes)",
                             c->dir, (long long)c->max_bytes,
                             (unsigned long long)scan->items[i].bytes);
                continue;
            }
            jit__cache_remove_entry(c, scan->items[i].hash);
            json_object_del(entries, scan->items[i].hash);
            used -= scan->items[i].bytes;
            removed++;
        }
        if (removed)
            jit__log(c->log_level, JIT_LOG_INFO,
                     "kernel cache %s: evicted %zu least recently used entries to stay under "
                     "%lld bytes",
                     c->dir, removed, (long long)c->max_bytes);
    }
    if (usage)
        *usage = used;
    return removed;
}
