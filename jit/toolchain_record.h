/*
 * What is remembered about one toolchain so that a later process can identify it without
 * opening NVRTC and nvJitLink, and the seam through which jit/toolchain.c reaches wherever that
 * is kept. jit/ decides what a record means (which files it describes, when it still matches);
 * the storage belongs to cache/ (cache/toolchain_record.c keeps it as toolchains.json with the
 * same trust checks as a cubin). cache/ already depends on jit/ (keys, diagnostics), so jit/
 * cannot call it: api/ hands a store to jit__toolchain_remember_in instead. No CUDA header here,
 * so cache/ can include it.
 */
#ifndef JIT_TOOLCHAIN_RECORD_H
#define JIT_TOOLCHAIN_RECORD_H

#include <stddef.h>
#include <stdint.h>

#include "key.h"

#define JIT__TOOLCHAIN_PATH_MAX 4200 /* a library path, NUL included */
#define JIT__TOOLCHAIN_MAX_ARCHS 64
#define JIT__TOOLCHAIN_RECORD_MAX 64 /* entries kept; the oldest go first */

/* Enough of a file's stat to notice it was replaced or changed: device, inode, size, mtime. */
typedef struct jit__file_print {
    int64_t dev, ino, size, mtime_sec, mtime_nsec;
} jit__file_print_t;

typedef struct jit__toolchain_record {
    char nvrtc_path[JIT__TOOLCHAIN_PATH_MAX];
    char nvjitlink_path[JIT__TOOLCHAIN_PATH_MAX];
    jit__file_print_t nvrtc_file, nvjitlink_file;
    jit__toolchain_id_t id;
    int archs[JIT__TOOLCHAIN_MAX_ARCHS]; /* nvrtcGetSupportedArchs */
    int n_archs;
} jit__toolchain_record_t;

/* Where records are kept. `self` must outlive the process's use of toolchains: the first store
 * given is used for the life of the process. */
typedef struct jit__toolchain_store {
    void *self;
    /* Every usable record (malloc'd array, caller frees). A store that holds none, or holds
     * something it cannot trust, answers 0 records and reports the problem itself. */
    void (*read)(void *self, jit__toolchain_record_t **recs, size_t *n);
    /* Add `rec`, replacing the record of the same NVRTC path. Best effort: a failure only
     * means the libraries are opened to be identified next time. */
    void (*save)(void *self, const jit__toolchain_record_t *rec);
    /* The file to name in a message that asks the user to remove the record. */
    const char *where;
} jit__toolchain_store_t;

#endif
