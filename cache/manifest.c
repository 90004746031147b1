/*
 * manifest.json: {"format": 1, "entries": {"<hash>": <entry object>, ...}}, the union of the
 * sidecars. It is an index for listing and tooling, never on the load path, so a torn or
 * tampered manifest costs a rebuild from the sidecars and nothing else. Writers hold an
 * exclusive flock on manifest.lock across read-merge-write, so concurrent publishers never drop
 * each other's entries; readers need no lock because the file is replaced by rename().
 */
#include "cache_private.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int jit__cache_manifest_lock(jit__cache_t *c) {
    return jit__cache_flock(c, "manifest.lock", 0, 1);
}

void jit__cache_manifest_unlock(int fd) {
    if (fd >= 0)
        close(fd); /* closing the only descriptor releases the flock */
}

jit__manifest_state_t jit__cache_manifest_load(const jit__cache_t *c, json_t **entries, char *why,
                                               size_t whysz) {
    *entries = NULL;
    char *text = NULL;
    size_t len = 0;
    struct stat st;
    char reason[JIT__CACHE_WHY_MAX];
    switch (jit__cache_slurp(c, "manifest.json", &text, &len, &st, reason, sizeof(reason))) {
    case JIT__SLURP_OK:
        break;
    case JIT__SLURP_MISSING:
        snprintf(why, whysz, "manifest.json is missing");
        return JIT__MANIFEST_MISSING;
    case JIT__SLURP_REFUSED:
        snprintf(why, whysz, "refused: %s", reason);
        return JIT__MANIFEST_CORRUPT;
    default:
        snprintf(why, whysz, "%s", reason);
        return JIT__MANIFEST_FAILED;
    }
    json_error_t err;
    json_t *root = json_loadb(text, len, JSON_REJECT_DUPLICATES, &err);
    free(text);
    if (!root) {
        snprintf(why, whysz, "invalid JSON at line %d column %d: %s", err.line, err.column,
                 err.text);
        return JIT__MANIFEST_CORRUPT;
    }
    json_t *format = json_object_get(root, "format");
    json_t *ents = json_object_get(root, "entries");
    if (!json_is_integer(format) || json_integer_value(format) != JIT__CACHE_MANIFEST_FORMAT) {
        snprintf(why, whysz, "\"format\" is not %d", JIT__CACHE_MANIFEST_FORMAT);
        json_decref(root);
        return JIT__MANIFEST_CORRUPT;
    }
    if (!json_is_object(ents)) {
        snprintf(why, whysz, "\"entries\" is not an object");
        json_decref(root);
        return JIT__MANIFEST_CORRUPT;
    }
    const char *hash;
    json_t *value;
    json_object_foreach(ents, hash, value) {
        jit__cache_entry_t e;
        int bad = jit__cache_entry_from_object(value, &e, reason, sizeof(reason)) != 0;
        if (!bad && strcmp(e.hash, hash) != 0) {
            snprintf(reason, sizeof(reason), "its hash field differs from its name");
            bad = 1;
        }
        if (bad) {
            snprintf(why, whysz, "entry \"%.40s\": %s", hash, reason);
            json_decref(root);
            return JIT__MANIFEST_CORRUPT;
        }
    }
    *entries = json_incref(ents);
    json_decref(root);
    return JIT__MANIFEST_OK;
}

jit_status_t jit__cache_manifest_rebuild(const jit__cache_t *c, json_t **entries, jit__diag_t *d) {
    *entries = json_object();
    if (!*entries)
        return jit__fail(d, JIT_OUT_OF_MEMORY, "cache manifest: out of memory");
    jit__cache_scan_t scan;
    jit_status_t st = jit__cache_scan(c, &scan, d);
    if (st != JIT_OK) {
        json_decref(*entries);
        *entries = NULL;
        return st;
    }
    for (size_t i = 0; i < scan.n; i++) {
        if (!(scan.items[i].files & JIT__F_SIDECAR))
            continue;
        jit__cache_entry_t e;
        char why[JIT__CACHE_WHY_MAX];
        /* Checksums are left to the load path: a rebuild reads sidecars, not every cubin. */
        if (jit__cache_check_entry(c, scan.items[i].hash, 0, &e, NULL, NULL, why, sizeof(why)) !=
            JIT__CHECK_OK)
            continue;
        json_t *o = jit__cache_entry_to_object(&e);
        if (!o || json_object_set_new(*entries, e.hash, o) != 0) {
            st = jit__fail(d, JIT_OUT_OF_MEMORY, "cache manifest: out of memory");
            break;
        }
    }
    jit__cache_scan_free(&scan);
    if (st != JIT_OK) {
        json_decref(*entries);
        *entries = NULL;
    }
    return st;
}

static int cmp_str(const void *a, const void *b) {
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

int jit__cache_manifest_write(jit__cache_t *c, json_t *entries) {
    /* Sorted by hash, so the same cache always gives the same bytes (diffable, testable). */
    size_t n = json_object_size(entries), i = 0;
    const char **keys = malloc((n ? n : 1) * sizeof(*keys));
    json_t *root = json_object(), *sorted = json_object();
    int err = (!keys || !root || !sorted) ? ENOMEM : 0;
    const char *hash;
    json_t *value;
    if (!err) {
        json_object_foreach(entries, hash, value) keys[i++] = hash;
        qsort(keys, n, sizeof(*keys), cmp_str);
        for (i = 0; i < n && !err; i++)
            if (json_object_set(sorted, keys[i], json_object_get(entries, keys[i])) != 0)
                err = ENOMEM;
    }
    if (!err && (json_object_set_new(root, "format", json_integer(JIT__CACHE_MANIFEST_FORMAT)) ||
                 json_object_set(root, "entries", sorted)))
        err = ENOMEM;
    char *text =
        err ? NULL
            : json_dumps(root, JSON_INDENT(1) | JSON_PRESERVE_ORDER | JSON_REAL_PRECISION(9));
    if (!err && !text)
        err = ENOMEM;
    if (!err)
        err = jit__cache_publish(c, "manifest.json", text, strlen(text));
    free(text);
    free(keys);
    json_decref(sorted);
    json_decref(root);
    return err;
}
