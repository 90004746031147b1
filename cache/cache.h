/*
 * The on-disk kernel cache. Layout under the cache directory:
 *
 *   manifest.json          index of every entry (jansson) as of the last compaction; rebuilt from
 *                          the sidecars if torn
 *   manifest.journal       entries published since, one JSON line each (cache/journal.c)
 *   manifest.lock          flock'd while the index (manifest.json, manifest.journal) is written
 *   kernels/<hash>.cubin   the cubin, named by key hash
 *   kernels/<hash>.json    the entry's metadata (the sidecar; the manifest is their union)
 *   kernels/<hash>.cu      the generated source, for inspection
 *   kernels/<hash>.ptx     the PTX NVRTC produced
 *   locks/<hash>.lock      flock'd by the process compiling that key
 *   tmp/                   files being written; renamed into place when complete
 *   toolchains.json        identities of NVRTC/nvJitLink libraries (jit/toolchain_record.h)
 *
 * Every write goes to tmp/ and is renamed into place after fsync, so readers never see a
 * partial file; the one exception, a journal append, is a single write() whose unfinished
 * last line readers ignore. A cubin is loaded only if its checksum (XXH3-128) matches its sidecar
 * and its owner is the current user; a damaged one is reported once, removed and recompiled. A
 * read-only or foreign-owned directory degrades to memory-only operation with one warning.
 */
#ifndef JIT_CACHE_H
#define JIT_CACHE_H

#include <stddef.h>
#include <stdint.h>

#include "diag.h"
#include "key.h"
#include "toolchain_record.h"

typedef struct jit__cache jit__cache_t;

typedef struct jit__cache_entry {
    char hash[JIT_KEY_HASH_LEN + 1];
    char key_text[JIT_KEY_TEXT_MAX];
    char arch[16];         /* arch profile, e.g. "sm_107a" */
    char target[16];       /* what the cubin was built for, e.g. "sm_100f" */
    int fallback;          /* 1 if target is the fallback of arch, not its native target */
    char check_target[16]; /* fallback only: the target the source was assembled for as a check */
    jit__toolchain_id_t toolchain;
    int generator_version;                  /* the key format (JIT_KEY_FORMAT_VERSION) */
    char device_hash[JIT_KEY_HASH_LEN + 1]; /* embedded device code it was built from */
    char kernel_name[64];
    unsigned block[3];   /* threads per CTA */
    unsigned cluster[3]; /* 1,1,1 if no cluster */
    uint32_t smem_bytes; /* dynamic shared memory per CTA */
    int registers, spill_stores, spill_loads, stack_bytes;
    double compile_seconds;
    char checksum[JIT_KEY_HASH_LEN + 1]; /* XXH3-128 of the cubin, hex */
    uint64_t size;                       /* cubin bytes */
    int64_t created, last_used;          /* Unix seconds */
} jit__cache_entry_t;

/* The writable directory a context uses: the first directory of `dir` if not NULL or empty,
 * else of $JITGEMM_CACHE_DIR (both may be colon-separated lists: the rest are read-only layers),
 * else $XDG_CACHE_HOME/jitgemm, else $HOME/.cache/jitgemm (also when the list's first element
 * is empty). Writes into out (size outsz). */
jit_status_t jit__cache_resolve_dir(const char *dir, char *out, size_t outsz, jit__diag_t *d);

/* Open (creating with mode 0700 if missing) the cache at `dir` (resolved as above).
 * max_bytes <= 0: $JITGEMM_CACHE_MAX_BYTES, else 4 GiB. A directory that cannot be created
 * or written, or that another user owns or can write, still opens: the cache then works in
 * memory only (jit__cache_writable() == 0) and one warning is printed at `log_level`. */
jit_status_t jit__cache_open(const char *dir, int64_t max_bytes, jit_log_level_t log_level,
                             jit__cache_t **out, jit__diag_t *d);
void jit__cache_close(jit__cache_t *c);
/* The read-only layers `dir` listed after the first directory (colon-separated), those that
 * were trusted and opened: get and read_file search them, in order, after this cache. */
size_t jit__cache_layer_count(const jit__cache_t *c);
const char *jit__cache_layer_dir(const jit__cache_t *c, size_t i);
const char *jit__cache_dir(const jit__cache_t *c);
int64_t jit__cache_max_bytes(const jit__cache_t *c); /* the size cap eviction keeps to */
int jit__cache_writable(const jit__cache_t *c);
int jit__cache_readable(const jit__cache_t *c); /* 0 if refused (foreign owner, unreadable) */

/* Look up `hash`. On a verified hit: *found = 1, *entry filled, *cubin malloc'd (caller frees),
 * and the entry's last-used time is refreshed. A missing entry, or one that fails its checks
 * (checksum, size, owner, unparsable sidecar), gives *found = 0 and JIT_OK; a damaged entry is
 * reported (warning) and its files removed when the directory is writable. Does not read the
 * manifest, so a hit costs two small file reads whatever the cache's size. */
jit_status_t jit__cache_get(jit__cache_t *c, const char *hash, jit__cache_entry_t *entry,
                            void **cubin, size_t *cubin_size, int *found, jit__diag_t *d);

/* Take the per-key inter-process lock (blocking). *token is -1 if the cache is memory-only
 * (then locking is a no-op). */
jit_status_t jit__cache_lock_key(jit__cache_t *c, const char *hash, int *token, jit__diag_t *d);
void jit__cache_unlock_key(jit__cache_t *c, int token);

/* Publish an entry: cubin, source and PTX (either may be NULL), sidecar, then the index: one
 * journal line, or a compaction that also evicts least-recently-used entries above the size
 * cap (docs/cache.md says when). `entry->checksum`, `size`,
 * `created` and `last_used` are filled in here. Memory-only cache: returns JIT_OK, does nothing. */
jit_status_t jit__cache_put(jit__cache_t *c, const jit__cache_entry_t *entry, const void *cubin,
                            size_t cubin_size, const char *source, const char *ptx, jit__diag_t *d);

/* Read kernels/<hash><ext> (ext ".cu", ".ptx", ".json"), NUL-terminated, into *out. */
jit_status_t jit__cache_read_file(jit__cache_t *c, const char *hash, const char *ext, char **out,
                                  jit__diag_t *d);

/* Every entry the index (manifest plus journal) lists, rebuilding it from the sidecars first if
 * it is missing or corrupt; an entry whose sidecar is gone is left out, and one whose size
 * disagrees with its cubin is taken from its sidecar. *entries malloc'd, sorted by hash. */
jit_status_t jit__cache_list(jit__cache_t *c, jit__cache_entry_t **entries, size_t *count,
                             jit__diag_t *d);

typedef void (*jit__cache_report_fn)(const char *hash, const char *problem, void *user);

/* Check every entry (sidecar, cubin size and checksum, owner) and the manifest against the
 * files; report each problem. *bad = number of names with a problem, *entries (may be NULL) =
 * number of entries (sidecars) found. Reads only: it writes, renames, removes and locks
 * nothing, so a damaged manifest is reported as it is rather than rebuilt (that is gc's job). */
jit_status_t jit__cache_verify(jit__cache_t *c, jit__cache_report_fn report, void *user,
                               size_t *bad, size_t *entries, jit__diag_t *d);

/* An NVRTC version, as an entry's toolchain records it. */
typedef struct jit__cache_nvrtc {
    int major, minor;
} jit__cache_nvrtc_t;

/* What gc removes besides damage and leftovers. Every valid entry is servable by some host (one
 * with another NVRTC; one still running another jitgemm version during an upgrade), so the
 * default, all zero (or a NULL rules pointer), keeps them all; each field names what to drop. */
typedef struct jit__cache_gc_rules {
    const jit__cache_nvrtc_t *drop_nvrtc; /* entries built by one of these NVRTC versions */
    size_t n_drop_nvrtc;
    int only_key_format;          /* > 0: entries of any other key format */
    const char *only_device_hash; /* not NULL: entries built from other device code */
} jit__cache_gc_rules_t;

typedef struct jit__cache_gc_counts {
    size_t removed; /* entries and stray files removed (or that a dry run would remove) */
    size_t evicted; /* of those, valid entries evicted to bring the cache under its size cap */
} jit__cache_gc_counts_t;

/* Remove damaged or untrusted entries, the entries `rules` names, orphaned and stray files and
 * stale temporaries; then evict least recently used entries until the cache is within its
 * size cap; rewrite the manifest. Needs a writable cache and no toolchain. */
jit_status_t jit__cache_gc(jit__cache_t *c, const jit__cache_gc_rules_t *rules,
                           jit__cache_gc_counts_t *counts, jit__diag_t *d);

/* What jit__cache_gc with the same rules would remove, each thing reported with the reason
 * (hash or file name, reason), counted the same way. Removes, rewrites and locks nothing, so it
 * also works on a read-only cache. */
jit_status_t jit__cache_gc_dry_run(jit__cache_t *c, const jit__cache_gc_rules_t *rules,
                                   jit__cache_report_fn report, void *user,
                                   jit__cache_gc_counts_t *counts, jit__diag_t *d);

/* Remove every entry and the manifest. */
jit_status_t jit__cache_clear(jit__cache_t *c, size_t *removed, jit__diag_t *d);

/* A second handle on the directory `c` opened and vetted, for a user that outlives `c` (the
 * process-wide toolchain record): no new checks and no repeated warnings. NULL if `c` keeps
 * nothing on disk. Close it with jit__cache_close. */
jit__cache_t *jit__cache_share(const jit__cache_t *c);

typedef enum jit__record_state {
    JIT__RECORD_OK = 0,
    JIT__RECORD_MISSING = 1, /* no file, or a memory-only cache */
    JIT__RECORD_REFUSED = 2, /* a symbolic link, not ours, writable by others, not a regular file */
    JIT__RECORD_DAMAGED = 3, /* not JSON, wrong types, a number or string out of bounds */
    JIT__RECORD_FAILED = 4,  /* an I/O error or out of memory */
} jit__record_state_t;

/* Every record of toolchains.json (*recs malloc'd, caller frees) when the whole file is trusted
 * and valid; otherwise none, and a refused, damaged or unreadable file is reported once per
 * cache object. gc and clear never touch the file. */
jit__record_state_t jit__cache_toolchains_read(jit__cache_t *c, jit__toolchain_record_t **recs,
                                               size_t *n);
/* Add `rec` to toolchains.json, replacing the entry of the same NVRTC path (an unusable file is
 * replaced whole), by temporary file and rename. 0, or an errno: EINVAL for a record out of
 * bounds, EROFS for a cache that cannot be written. */
int jit__cache_toolchains_save(jit__cache_t *c, const jit__toolchain_record_t *rec);

/* An entry as a JSON object text (malloc'd), the same fields the manifest holds. */
char *jit__cache_entry_to_json(const jit__cache_entry_t *e);
/* The same object on one line without spaces (for JSON-lines output); malloc'd, or NULL. */
char *jit__cache_entry_to_json_line(const jit__cache_entry_t *e);

#endif
