/*
 * What the cache's source files share and nothing else includes. Every file operation works
 * relative to one directory descriptor held open for the cache's lifetime, so names are short
 * ("kernels/<hash>.cubin") and the cache keeps working on the directory it vetted even if its
 * path is later renamed. Trust is decided per file from fstat on the open descriptor (owner and
 * mode), never from a path lookup, so a file cannot be swapped between the check and the read.
 */
#ifndef JIT_CACHE_PRIVATE_H
#define JIT_CACHE_PRIVATE_H

#include <jansson.h>
#include <pthread.h>
#include <stdatomic.h>
#include <sys/stat.h>

#include "cache.h"

#define JIT__CACHE_PATH_MAX 4096
#define JIT__CACHE_NAME_MAX 96 /* "kernels/<32 hex>.cubin" and temporaries fit */
#define JIT__CACHE_WHY_MAX 256 /* one problem, as text */
#define JIT__CACHE_STALE_SECONDS                                                                   \
    60 /* temporaries and orphans younger than this may be in flight                               \
        */
#define JIT__CACHE_MANIFEST_FORMAT 1
#define JIT__CACHE_DEFAULT_MAX_BYTES ((int64_t)4 << 30)
/* Below this many bytes manifest.json is rewritten by every publish: that costs a bounded
 * amount, and keeps a small cache's index in one file. */
#define JIT__CACHE_INDEX_SMALL (64 * 1024)
/* Above it, the journal is compacted once it reaches this fraction of the manifest's size. */
#define JIT__CACHE_JOURNAL_FRACTION 4

struct jit__cache {
    char dir[JIT__CACHE_PATH_MAX];
    int dirfd; /* -1 when the directory is refused or missing */
    int64_t max_bytes;
    jit_log_level_t log_level;
    int readable;
    atomic_int writable;        /* drops to 0 (never back) when a write is refused */
    atomic_int warned;          /* the one read-only / memory-only warning has been printed */
    atomic_int warned_cap;      /* the one "cap below one entry" warning has been printed */
    atomic_uint tmp_seq;        /* makes temporary names unique within the process */
    int layer;                  /* a read-only layer of another cache: never written */
    struct jit__cache **layers; /* read-only layers, searched in order after this cache */
    size_t n_layers;
    pthread_mutex_t mu; /* guards `reported` */
    char (*reported)[JIT_KEY_HASH_LEN + 1];
    size_t n_reported, cap_reported;
};

/* The files of one entry. The sidecar is last in publish order and first in removal order: an
 * entry exists exactly while its sidecar does. */
enum {
    JIT__F_CUBIN = 1,
    JIT__F_SOURCE = 2,
    JIT__F_PTX = 4,
    JIT__F_SIDECAR = 8,
};
extern const char *const jit__cache_ext[4]; /* ".cubin", ".cu", ".ptx", ".json" by bit index */

/* ---- cache.c: state shared by every operation -------------------------------------------- */

/* Degrade to read-only after a refused write (err: EACCES, EROFS or EPERM), warning once. */
void jit__cache_set_readonly(jit__cache_t *c, const char *what, int err);
/* 1 if err means "this directory cannot be written" rather than a transient failure. */
int jit__cache_errno_readonly(int err);
/* Warn about `hash` unless it was already reported by this cache object (1 if printed). */
int jit__cache_report_once(jit__cache_t *c, const char *hash, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* ---- fsutil.c: files relative to the cache directory ------------------------------------- */

int jit__cache_valid_hash(const char *s); /* 32 lowercase hex digits */
/* "kernels/<hash><ext>" into out (JIT__CACHE_NAME_MAX). */
void jit__cache_entry_name(char *out, const char *hash, const char *ext);
/* NULL if `st` describes a file the current user may trust (regular or directory as asked,
 * owned by the euid or by root, not writable by group or others); else a reason written to
 * `why`. Root can replace any file anyway, so its files add no risk; they let an image's cache,
 * made by root with mode 0755, serve every user. */
const char *jit__cache_distrust(const struct stat *st, int want_dir, char *why, size_t whysz);

typedef enum jit__slurp {
    JIT__SLURP_OK = 0,
    JIT__SLURP_MISSING = 1, /* no such file */
    JIT__SLURP_REFUSED = 2, /* not ours, writable by others, a link, or not a regular file */
    JIT__SLURP_FAILED = 3,  /* read error or out of memory; `why` says which */
} jit__slurp_t;

/* Read a whole trusted file, NUL-terminated (*len excludes the NUL). *st gets its fstat. */
jit__slurp_t jit__cache_slurp(const jit__cache_t *c, const char *name, char **buf, size_t *len,
                              struct stat *st, char *why, size_t whysz);

/* Write `len` bytes to a fresh temporary in tmp/, fsync it and rename it to `name`. Returns 0
 * or an errno; on failure the temporary is gone. */
int jit__cache_publish(jit__cache_t *c, const char *name, const void *data, size_t len);
int jit__cache_fsync_dir(const jit__cache_t *c, const char *sub); /* sub "" = the top */

/* Remove every file of `hash` (sidecar first); returns the bytes freed. */
uint64_t jit__cache_remove_entry(jit__cache_t *c, const char *hash);

/* Open and flock a lock file under the cache directory. nonblock: fail with EWOULDBLOCK when
 * held elsewhere. Handles a lock file unlinked by gc between open and flock by retrying, so two
 * holders can never have locked different inodes. Returns the fd or -errno. */
int jit__cache_flock(jit__cache_t *c, const char *name, int nonblock, int create);
/* Remove the directory `name` and everything under it without following a symbolic link (a
 * link is removed itself). 0, or an errno; what could not be removed is left in place. */
int jit__cache_remove_tree(jit__cache_t *c, const char *name);
/* Remove a lock file nobody holds (gc/clear); a held one is left alone. */
void jit__cache_drop_lock_file(jit__cache_t *c, const char *name);

int64_t jit__cache_mtime(const struct stat *st);

/* A file at a path the user names (cache export): only a new name, or a regular file the caller
 * owns, in a directory owned by the caller or root that others cannot write (or that is
 * sticky); never through a link, never a device, FIFO, socket or directory. open vets `path`
 * and creates a temporary beside it, returning its descriptor (the caller writes, fsyncs and
 * closes it) or -1 with the reason, having created nothing. commit renames the temporary into
 * place (never over something that appeared since the check); abort removes it. */
typedef struct jit__out_file {
    int dirfd;    /* the directory of the path, vetted */
    int replaces; /* a regular file of the caller's is at `name` and is replaced */
    dev_t dev;    /* that file */
    ino_t ino;
    char name[256]; /* the last component of the path */
    char tmp[320];  /* the temporary beside it ("" once renamed or removed) */
} jit__out_file_t;
int jit__out_file_open(const char *path, jit__out_file_t *o, char *why, size_t whysz);
int jit__out_file_commit(jit__out_file_t *o, const char *path, char *why, size_t whysz);
void jit__out_file_abort(jit__out_file_t *o);

/* ---- scan.c: what kernels/ holds --------------------------------------------------------- */

typedef struct jit__cache_item {
    char hash[JIT_KEY_HASH_LEN + 1];
    unsigned files;       /* JIT__F_* present */
    uint64_t bytes;       /* sum of their sizes */
    uint64_t cubin_bytes; /* the cubin's size alone */
    int64_t sidecar_time; /* sidecar mtime: the last-used time */
    int64_t newest;       /* newest mtime among the files */
} jit__cache_item_t;

typedef struct jit__cache_stray {
    char name[JIT__CACHE_NAME_MAX]; /* relative to the cache directory */
    int64_t mtime;
    int is_dir; /* a directory: removed as a whole tree, never through a link */
} jit__cache_stray_t;

typedef struct jit__cache_scan {
    jit__cache_item_t *items; /* sorted by hash */
    size_t n;
    jit__cache_stray_t *strays; /* in kernels/: files of no entry name, and every directory */
    size_t n_strays;
} jit__cache_scan_t;

jit_status_t jit__cache_scan(const jit__cache_t *c, jit__cache_scan_t *out, jit__diag_t *d);
/* Remove a stray found by the scan: unlink a file, remove a directory's tree. 1 if it is gone. */
int jit__cache_remove_stray(jit__cache_t *c, const jit__cache_stray_t *s);

void jit__cache_scan_free(jit__cache_scan_t *s);
/* The regular files directly under `sub` ("tmp", "locks"), with mtimes; same ownership rules. */
jit_status_t jit__cache_list_dir(const jit__cache_t *c, const char *sub, jit__cache_stray_t **out,
                                 size_t *n, jit__diag_t *d);

/* ---- entry.c: an entry as JSON ----------------------------------------------------------- */

json_t *jit__cache_entry_to_object(const jit__cache_entry_t *e);
/* Fill *e from an object holding every field with the right type; -1 and `why` if not. */
int jit__cache_entry_from_object(const json_t *obj, jit__cache_entry_t *e, char *why, size_t whysz);
int jit__cache_entry_from_text(const char *text, size_t len, jit__cache_entry_t *e, char *why,
                               size_t whysz);
int jit__cache_entry_equal(const jit__cache_entry_t *a, const jit__cache_entry_t *b);

/* ---- check.c: is an entry intact? -------------------------------------------------------- */

typedef enum jit__check {
    JIT__CHECK_OK = 0,
    JIT__CHECK_MISSING = 1, /* no sidecar: no entry */
    JIT__CHECK_DAMAGED = 2, /* unparsable sidecar, missing or wrong-sized cubin, bad checksum */
    JIT__CHECK_REFUSED = 3, /* a file of the entry is not trusted */
    JIT__CHECK_FAILED = 4,  /* an I/O error or out of memory, not the entry's fault */
} jit__check_t;

/* Load and check `hash`. full: also read the cubin and compare its checksum (else only its size
 * and owner). On OK with cubin != NULL, *cubin is the malloc'd cubin. `why` names the problem. */
jit__check_t jit__cache_check_entry(const jit__cache_t *c, const char *hash, int full,
                                    jit__cache_entry_t *e, void **cubin, size_t *cubin_size,
                                    char *why, size_t whysz);

/* ---- manifest.c -------------------------------------------------------------------------- */

typedef enum jit__manifest_state {
    JIT__MANIFEST_OK = 0,
    JIT__MANIFEST_MISSING = 1,
    JIT__MANIFEST_CORRUPT = 2, /* unparsable, wrong types, foreign owner, ... (`why`) */
    JIT__MANIFEST_FAILED = 3,  /* could not be read (I/O, memory) */
} jit__manifest_state_t;

/* Lock manifest.lock exclusively; returns the fd or -errno. */
int jit__cache_manifest_lock(jit__cache_t *c);
void jit__cache_manifest_unlock(int fd);
/* Load and validate manifest.json: *entries is an object hash -> entry object (new ref). */
jit__manifest_state_t jit__cache_manifest_load(const jit__cache_t *c, json_t **entries, char *why,
                                               size_t whysz);
/* An entries object made from the sidecars on disk (entries whose files are whole). */
jit_status_t jit__cache_manifest_rebuild(const jit__cache_t *c, json_t **entries, jit__diag_t *d);
/* Write manifest.json atomically (entries sorted by hash). Returns 0 or an errno. */
int jit__cache_manifest_write(jit__cache_t *c, json_t *entries);

/* ---- journal.c: appends since the manifest was written ---------------------------------- */

#define JIT__CACHE_JOURNAL "manifest.journal"

typedef enum jit__journal_state {
    JIT__JOURNAL_OK = 0,
    JIT__JOURNAL_MISSING = 1,
    JIT__JOURNAL_TORN = 2,    /* every line applied but a last one without its newline */
    JIT__JOURNAL_CORRUPT = 3, /* a whole line that does not parse, or an untrusted file */
    JIT__JOURNAL_FAILED = 4,  /* could not be read (I/O, memory) */
} jit__journal_state_t;

typedef struct jit__journal_info {
    size_t lines;      /* whole lines applied */
    size_t torn_bytes; /* bytes of a torn last line */
    uint64_t usage;    /* "usage" of the last whole line */
    int usage_known;
    uint64_t bytes; /* the file's size (journal_tail only) */
} jit__journal_info_t;

/* Apply every whole line to `entries` (hash -> entry object); `why` says what is wrong. */
jit__journal_state_t jit__cache_journal_apply(const jit__cache_t *c, json_t *entries,
                                              jit__journal_info_t *info, char *why, size_t whysz);
/* The usage on the last line and the file's size, read from its end only. -1 when the journal
 * is missing, untrusted, torn or unparsable there: the caller must compact, not append. */
int jit__cache_journal_tail(const jit__cache_t *c, jit__journal_info_t *info);
/* Append a "put" line (one write, fsync). 0 or an errno. Manifest lock held. */
int jit__cache_journal_append(jit__cache_t *c, const jit__cache_entry_t *e, uint64_t usage);
/* Replace the journal by one {"usage": N} line (temporary + rename). 0 or an errno. */
int jit__cache_journal_reset(jit__cache_t *c, uint64_t usage);
/* Remove the journal (the next publish compacts). 0 or an errno. */
int jit__cache_journal_remove(jit__cache_t *c);

/* ---- index.c: manifest.json + manifest.journal -------------------------------------------- */

typedef struct jit__index_state {
    jit__manifest_state_t manifest;
    jit__journal_state_t journal; /* MISSING unless the manifest is OK */
    jit__journal_info_t info;
    char manifest_why[JIT__CACHE_WHY_MAX];
    char journal_why[JIT__CACHE_WHY_MAX];
    int fast; /* jit__cache_index_read only: read without building a JSON tree */
} jit__index_state_t;

/* manifest.json with the journal applied. *entries is NULL unless the manifest is OK and the
 * journal OK, missing or torn (then its torn line is left out). Reads only. */
void jit__cache_index_load(const jit__cache_t *c, json_t **entries, jit__index_state_t *s);
/* 1 if s describes an index a reader may use as it is. */
int jit__cache_index_usable(const jit__index_state_t *s);

/* ---- index_read.c: the index as entry structs, for listing -------------------------------- */

/* What jit__cache_index_load gives, as a malloc'd array sorted by hash (*entries may be NULL
 * when *n is 0), read without building a JSON tree when the files are in the shape the cache
 * writes. *entries is NULL unless jit__cache_index_usable(s). Reads only. 0 or ENOMEM. */
int jit__cache_index_read(const jit__cache_t *c, jit__cache_entry_t **entries, size_t *n,
                          jit__index_state_t *s);

/* Rewrite manifest.json from the index, healed against kernels/: entries whose sidecar is gone
 * dropped, sidecars the index lacks added, an entry whose size disagrees with its cubin
 * re-read from its sidecar (dropped if damaged); `put` (may be NULL) merged; the size cap
 * applied, never evicting `put`. Then the journal restarts. Manifest lock held. *entries (may
 * be NULL) gets the index written. 0 or an errno. */
int jit__cache_compact(jit__cache_t *c, const jit__cache_entry_t *put, json_t **entries);

/* ---- maintenance.c: what gc and clear share ----------------------------------------------- */

/* JIT_OK if the cache can be listed (and, with `write`, written); else a message. */
jit_status_t jit__cache_require_usable(const jit__cache_t *c, int write, jit__diag_t *d);
/* Take the manifest lock (*fd), or fail with a message (a read-only cache is marked so). */
jit_status_t jit__cache_lock_index(jit__cache_t *c, int *fd, jit__diag_t *d);
/* Remove the files in tmp/ older than JIT__CACHE_STALE_SECONDS (dry: report each as a stale
 * temporary instead). Returns how many. */
size_t jit__cache_sweep_tmp(jit__cache_t *c, int dry, jit__cache_report_fn report, void *user);
/* Remove the lock files of keys not in `live` (NULL: of every key) that nobody holds. */
void jit__cache_sweep_locks(jit__cache_t *c, json_t *live);

/* ---- evict.c ----------------------------------------------------------------------------- */

/* Remove least-recently-used entries of `scan` until the cache is under its cap, never
 * `keep_hash` (may be NULL), and drop them from `entries`. Called with the manifest lock held.
 * Returns how many were removed; *usage (may be NULL) gets the bytes the entries hold after. */
size_t jit__cache_evict_scan(jit__cache_t *c, jit__cache_scan_t *scan, const char *keep_hash,
                             json_t *entries, uint64_t *usage);
/* qsort order of eviction: least recently used first (sidecar_time), then by hash. */
int jit__cache_item_by_last_use(const void *a, const void *b);

#endif
