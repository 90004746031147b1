/*
 * A cache as one portable file, to carry prewarmed kernels from a build host to the hosts that
 * serve them (docs/cache.md, "Export and import"). The format is a text line per record followed
 * by its bytes, each record with its own XXH3-128, and a trailer with the count and the hash of
 * everything before it, so a truncated or altered archive is told from a whole one before
 * anything is imported. No library beyond what the cache already uses.
 */
#ifndef JIT_CACHE_ARCHIVE_H
#define JIT_CACHE_ARCHIVE_H

#include <stddef.h>

#include "cache.h"

#define JIT__ARCHIVE_MAGIC "jitgemm-cache-archive 1\n"
#define JIT__ARCHIVE_MAX_SIDECAR (64u << 10)
#define JIT__ARCHIVE_MAX_CUBIN (256u << 20)
#define JIT__ARCHIVE_MAX_SOURCE (16u << 20)

typedef struct jit__archive_counts {
    size_t written;      /* export: entries written */
    size_t skipped;      /* export: entries of another arch, or damaged ones (reported) */
    size_t imported;     /* import: entries published */
    size_t present;      /* import: entries the cache already held with the same cubin */
    size_t other_format; /* import: entries of another key format, never served by this build */
} jit__archive_counts_t;

/* Write every intact entry of `c` (only those of arch `arch`, if not NULL) to `path`, through a
 * temporary file renamed over it when complete. `path` must be a new name or a regular file the
 * caller owns, in a trusted directory (jit__out_file_open); anything else is refused before a
 * file is created. A damaged entry is reported through the cache's warnings and left out. */
jit_status_t jit__cache_export(jit__cache_t *c, const char *path, const char *arch,
                               jit__archive_counts_t *counts, jit__diag_t *d);

/* An archive read whole and checked: format, every record's hash and the trailer's, each
 * entry's sidecar, its key hash against its key text, its cubin's size, checksum and ELF
 * header. Loading needs no cache, so a refused archive creates and touches nothing. */
typedef struct jit__archive jit__archive_t;

/* Read and check the archive at `path`. On any failure *out is NULL and the message names the
 * record and what is wrong. Free with jit__archive_free. */
jit_status_t jit__archive_load(const char *path, jit__archive_t **out, jit__diag_t *d);
void jit__archive_free(jit__archive_t *a);

/* Publish each entry of a checked archive through jit__cache_put. `c` must be writable. */
jit_status_t jit__cache_import_archive(jit__cache_t *c, const jit__archive_t *a,
                                       jit__archive_counts_t *counts, jit__diag_t *d);

/* jit__archive_load, then jit__cache_import_archive: nothing is published when any check
 * fails. */
jit_status_t jit__cache_import(jit__cache_t *c, const char *path, jit__archive_counts_t *counts,
                               jit__diag_t *d);

#endif
