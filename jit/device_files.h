/*
 * The device code the generated sources include: every .cuh file under kernel_src/, embedded
 * into the library when it is built (scripts/embed_device_files.cmake writes the table), and
 * handed to NVRTC as in-memory headers, so a compile reads no file and needs no include path.
 * Include names are paths relative to kernel_src/, e.g. "device/sm90.cuh".
 *
 * The hash of all of them is part of every key: editing device code changes every key, so a
 * cache can never serve a cubin built from older device code.
 */
#ifndef JIT_DEVICE_FILES_H
#define JIT_DEVICE_FILES_H

#include <stddef.h>

#define JIT_DEVICE_HASH_LEN 32
/* More embedded files than this is a build error of the compile stage (jit/compile.c). */
#define JIT_MAX_DEVICE_FILES 64

typedef struct jit__device_file {
    const char *name; /* include name */
    const char *text; /* NUL-terminated */
    size_t size;      /* bytes, without the NUL */
} jit__device_file_t;

/* The table, defined by the generated device_files_data.c; read it through the functions. */
extern const jit__device_file_t jit__device_file_table[];
extern const size_t jit__device_file_count;

/* The embedded files, sorted by name. */
const jit__device_file_t *jit__device_files(size_t *count);

/* The file of that include name, or NULL. */
const jit__device_file_t *jit__device_file(const char *name);

/* XXH3-128 over every file's name and contents (32 hex digits), computed once. */
const char *jit__device_files_hash(void);

/* Use `files` instead of the embedded table (NULL: back to the embedded one), for tests that
 * edit device code and for developers trying an edit without a rebuild. Not thread-safe: call
 * it while no context generates, compiles or makes keys. */
void jit__device_files_override(const jit__device_file_t *files, size_t count);

/* The same hash of any table. */
void jit__device_files_hash_of(const jit__device_file_t *files, size_t count,
                               char out[JIT_DEVICE_HASH_LEN + 1]);

#endif
