/*
 * Whether one entry can be trusted: its sidecar parses and names this hash, its cubin is ours,
 * has the recorded size and (when asked) the recorded XXH3-128 checksum. A cubin is code that
 * will run on the GPU, so anything short of all of that means "do not load". The sidecar's
 * mtime, not its last_used field, is the last-used time: a hit refreshes it with one
 * utimensat() instead of rewriting any JSON.
 */
#include "cache_private.h"

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

jit__check_t jit__cache_check_entry(const jit__cache_t *c, const char *hash, int full,
                                    jit__cache_entry_t *e, void **cubin, size_t *cubin_size,
                                    char *why, size_t whysz) {
    char name[JIT__CACHE_NAME_MAX];
    char *text = NULL;
    size_t len = 0;
    struct stat st;
    if (cubin)
        *cubin = NULL;
    if (cubin_size)
        *cubin_size = 0;
    memset(e, 0, sizeof(*e));
    char reason[JIT__CACHE_WHY_MAX];
    jit__cache_entry_name(name, hash, ".json");
    switch (jit__cache_slurp(c, name, &text, &len, &st, reason, sizeof(reason))) {
    case JIT__SLURP_OK:
        break;
    case JIT__SLURP_MISSING:
        snprintf(why, whysz, "no entry");
        return JIT__CHECK_MISSING;
    case JIT__SLURP_REFUSED:
        snprintf(why, whysz, "refused: %s", reason);
        return JIT__CHECK_REFUSED;
    default:
        snprintf(why, whysz, "%s", reason);
        return JIT__CHECK_FAILED;
    }
    int bad = jit__cache_entry_from_text(text, len, e, reason, sizeof(reason));
    free(text);
    if (bad) {
        snprintf(why, whysz, "sidecar unparsable: %s", reason);
        return JIT__CHECK_DAMAGED;
    }
    if (strcmp(e->hash, hash) != 0) {
        snprintf(why, whysz, "sidecar names hash %s", e->hash);
        return JIT__CHECK_DAMAGED;
    }
    e->last_used = jit__cache_mtime(&st);

    jit__cache_entry_name(name, hash, ".cubin");
    if (!full) {
        /* Size and owner only: no read of the cubin, for listings over many entries. */
        if (fstatat(c->dirfd, name, &st, AT_SYMLINK_NOFOLLOW) != 0) {
            snprintf(why, whysz, "missing cubin");
            return JIT__CHECK_DAMAGED;
        }
        if (jit__cache_distrust(&st, 0, reason, sizeof(reason))) {
            snprintf(why, whysz, "refused: %s: %s", name, reason);
            return JIT__CHECK_REFUSED;
        }
        if ((uint64_t)st.st_size != e->size) {
            snprintf(why, whysz, "size mismatch: sidecar says %llu bytes, cubin has %llu",
                     (unsigned long long)e->size, (unsigned long long)st.st_size);
            return JIT__CHECK_DAMAGED;
        }
        return JIT__CHECK_OK;
    }
    char *bin = NULL;
    switch (jit__cache_slurp(c, name, &bin, &len, &st, reason, sizeof(reason))) {
    case JIT__SLURP_OK:
        break;
    case JIT__SLURP_MISSING:
        snprintf(why, whysz, "missing cubin");
        return JIT__CHECK_DAMAGED;
    case JIT__SLURP_REFUSED:
        snprintf(why, whysz, "refused: %s", reason);
        return JIT__CHECK_REFUSED;
    default:
        snprintf(why, whysz, "%s", reason);
        return JIT__CHECK_FAILED;
    }
    if ((uint64_t)len != e->size) {
        snprintf(why, whysz, "size mismatch: sidecar says %llu bytes, cubin has %zu",
                 (unsigned long long)e->size, len);
        free(bin);
        return JIT__CHECK_DAMAGED;
    }
    char sum[JIT_KEY_HASH_LEN + 1];
    jit__hash_hex(bin, len, sum);
    if (strcmp(sum, e->checksum) != 0) {
        snprintf(why, whysz, "checksum mismatch: sidecar says %s, cubin hashes to %s", e->checksum,
                 sum);
        free(bin);
        return JIT__CHECK_DAMAGED;
    }
    if (cubin) {
        *cubin = bin;
        if (cubin_size)
            *cubin_size = len;
    } else {
        free(bin);
    }
    return JIT__CHECK_OK;
}
