/*
 * manifest.journal: the entries published since manifest.json was last written, one JSON object
 * per line, so that a publish appends one line instead of rewriting an index of every entry.
 *
 *   {"usage": N}                          first line after a compaction
 *   {"put": <entry object>, "usage": N}   one per publish
 *
 * "usage" is the bytes the cache's entries hold after that line (the scan's count at the last
 * compaction plus what was published since), so a publish learns whether it crosses the size
 * cap from the journal's last line alone. A line is written with one write() on an O_APPEND
 * descriptor under the manifest lock and fsync'd; a crash in the middle leaves a last line
 * without its newline, which readers ignore, verify reports and the next compaction or gc
 * removes. Any other unparsable line makes the journal unusable, like a damaged manifest.
 */
#include "cache_private.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* The last line of any journal we wrote fits: an entry object is under 2 KiB. */
#define JIT__JOURNAL_TAIL_MAX 8192

/* Parse one line (no newline) and apply it to `entries` (may be NULL: only validate). */
static int apply_line(const char *line, size_t len, json_t *entries, uint64_t *usage, char *why,
                      size_t whysz) {
    json_error_t err;
    json_t *o = json_loadb(line, len, JSON_REJECT_DUPLICATES, &err);
    if (!json_is_object(o)) {
        snprintf(why, whysz, "not a JSON object (%s)", o ? "wrong type" : err.text);
        json_decref(o);
        return -1;
    }
    json_t *u = json_object_get(o, "usage"), *put = json_object_get(o, "put");
    if (!json_is_integer(u) || json_integer_value(u) < 0) {
        snprintf(why, whysz, "\"usage\" is not a byte count");
        json_decref(o);
        return -1;
    }
    if (json_object_size(o) != (put ? 2u : 1u)) {
        snprintf(why, whysz, "unknown field");
        json_decref(o);
        return -1;
    }
    if (put) {
        jit__cache_entry_t e;
        char reason[JIT__CACHE_WHY_MAX];
        if (jit__cache_entry_from_object(put, &e, reason, sizeof(reason)) != 0) {
            snprintf(why, whysz, "\"put\": %.200s", reason);
            json_decref(o);
            return -1;
        }
        if (entries && json_object_set(entries, e.hash, put) != 0) {
            snprintf(why, whysz, "out of memory");
            json_decref(o);
            return -1;
        }
    }
    *usage = (uint64_t)json_integer_value(u);
    json_decref(o);
    return 0;
}

jit__journal_state_t jit__cache_journal_apply(const jit__cache_t *c, json_t *entries,
                                              jit__journal_info_t *info, char *why, size_t whysz) {
    memset(info, 0, sizeof(*info));
    char *text = NULL, reason[JIT__CACHE_WHY_MAX];
    size_t len = 0;
    struct stat st;
    switch (jit__cache_slurp(c, JIT__CACHE_JOURNAL, &text, &len, &st, reason, sizeof(reason))) {
    case JIT__SLURP_OK:
        break;
    case JIT__SLURP_MISSING:
        return JIT__JOURNAL_MISSING;
    case JIT__SLURP_REFUSED:
        snprintf(why, whysz, "refused: %s", reason);
        return JIT__JOURNAL_CORRUPT;
    default:
        snprintf(why, whysz, "%s", reason);
        return JIT__JOURNAL_FAILED;
    }
    jit__journal_state_t state = JIT__JOURNAL_OK;
    size_t line = 0, at = 0;
    while (at < len) {
        const char *nl = memchr(text + at, '\n', len - at);
        line++;
        if (!nl) {
            /* A publish died in its write(): the entry it was adding is still on disk as a
             * sidecar, and the next compaction finds it there. */
            info->torn_bytes = len - at;
            state = JIT__JOURNAL_TORN;
            snprintf(why, whysz, "line %zu is torn (%zu bytes without a newline)", line, len - at);
            break;
        }
        size_t n = (size_t)(nl - (text + at));
        if (apply_line(text + at, n, entries, &info->usage, reason, sizeof(reason)) != 0) {
            snprintf(why, whysz, "line %zu: %.200s", line, reason);
            state = JIT__JOURNAL_CORRUPT;
            break;
        }
        info->lines++;
        info->usage_known = 1;
        at += n + 1;
    }
    free(text);
    return state;
}

int jit__cache_journal_tail(const jit__cache_t *c, jit__journal_info_t *info) {
    memset(info, 0, sizeof(*info));
    int fd = openat(c->dirfd, JIT__CACHE_JOURNAL, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
    if (fd < 0)
        return -1;
    struct stat st;
    char why[JIT__CACHE_WHY_MAX], buf[JIT__JOURNAL_TAIL_MAX + 1];
    int ok =
        fstat(fd, &st) == 0 && !jit__cache_distrust(&st, 0, why, sizeof(why)) && st.st_size > 0;
    size_t size = ok ? (size_t)st.st_size : 0;
    size_t want = size < JIT__JOURNAL_TAIL_MAX ? size : JIT__JOURNAL_TAIL_MAX;
    ok = ok && pread(fd, buf, want, (off_t)(size - want)) == (ssize_t)want;
    close(fd);
    /* A torn or foreign tail is a reason to compact, never to append after it. */
    if (!ok || buf[want - 1] != '\n')
        return -1;
    size_t end = want - 1, start = end;
    while (start > 0 && buf[start - 1] != '\n')
        start--;
    if (start == 0 && want < size)
        return -1; /* a last line longer than any we write */
    if (apply_line(buf + start, end - start, NULL, &info->usage, why, sizeof(why)) != 0)
        return -1;
    info->usage_known = 1;
    info->bytes = size;
    return 0;
}

int jit__cache_journal_append(jit__cache_t *c, const jit__cache_entry_t *e, uint64_t usage) {
    json_t *o = json_object(), *eo = jit__cache_entry_to_object(e);
    int err = (!o || !eo || json_object_set_new(o, "put", eo) ||
               json_object_set_new(o, "usage", json_integer((json_int_t)usage)))
                  ? ENOMEM
                  : 0;
    if (!o)
        json_decref(eo);
    char *text =
        err ? NULL : json_dumps(o, JSON_COMPACT | JSON_PRESERVE_ORDER | JSON_REAL_PRECISION(9));
    json_decref(o);
    if (!text)
        return ENOMEM;
    size_t len = strlen(text);
    char *line = realloc(text, len + 2);
    if (!line) {
        free(text);
        return ENOMEM;
    }
    line[len++] = '\n';
    line[len] = '\0';
    int fd = openat(c->dirfd, JIT__CACHE_JOURNAL,
                    O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
    if (fd < 0) {
        err = errno;
    } else {
        /* One write(): a crash leaves this line whole or torn at its end, never interleaved. */
        ssize_t w;
        while ((w = write(fd, line, len)) < 0 && errno == EINTR)
            ;
        if (w < 0)
            err = errno;
        else if ((size_t)w != len)
            err = ENOSPC; /* a short append is a torn line; the caller compacts it away */
        else if (fsync(fd) != 0)
            err = errno;
        close(fd);
    }
    free(line);
    return err;
}

int jit__cache_journal_reset(jit__cache_t *c, uint64_t usage) {
    char line[64];
    int n = snprintf(line, sizeof(line), "{\"usage\": %llu}\n", (unsigned long long)usage);
    return jit__cache_publish(c, JIT__CACHE_JOURNAL, line, (size_t)n);
}

int jit__cache_journal_remove(jit__cache_t *c) {
    if (unlinkat(c->dirfd, JIT__CACHE_JOURNAL, 0) == 0 || errno == ENOENT)
        return 0;
    /* A directory by that name is damage, never ours: removed whole, links not followed. */
    if (errno == EISDIR)
        return jit__cache_remove_tree(c, JIT__CACHE_JOURNAL);
    return errno;
}
