/*
 * Access to the embedded device files and their hash. The table itself is generated at build
 * time (device_files_data.c in the build tree) from the .cuh files under kernel_src/.
 */
#include "device_files.h"

#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#define XXH_INLINE_ALL
#include <xxhash.h>

/* The table in use: the embedded one unless a test overrode it. */
static const jit__device_file_t *g_files;
static size_t g_count;
static char g_hash[JIT_DEVICE_HASH_LEN + 1];
static pthread_once_t g_once = PTHREAD_ONCE_INIT;

static void use_embedded(void) {
    g_files = jit__device_file_table;
    g_count = jit__device_file_count;
    jit__device_files_hash_of(g_files, g_count, g_hash);
}

const jit__device_file_t *jit__device_files(size_t *count) {
    pthread_once(&g_once, use_embedded);
    *count = g_count;
    return g_files;
}

const jit__device_file_t *jit__device_file(const char *name) {
    size_t n;
    const jit__device_file_t *f = jit__device_files(&n);
    for (size_t i = 0; i < n; i++)
        if (strcmp(f[i].name, name) == 0)
            return &f[i];
    return NULL;
}

void jit__device_files_override(const jit__device_file_t *files, size_t count) {
    pthread_once(&g_once, use_embedded);
    if (!files) {
        use_embedded();
        return;
    }
    g_files = files;
    g_count = count;
    jit__device_files_hash_of(g_files, g_count, g_hash);
}

const char *jit__device_files_hash(void) {
    pthread_once(&g_once, use_embedded);
    return g_hash;
}

void jit__device_files_hash_of(const jit__device_file_t *files, size_t count,
                               char out[JIT_DEVICE_HASH_LEN + 1]) {
    XXH3_state_t st;
    XXH3_128bits_reset(&st);
    for (size_t i = 0; i < count; i++) {
        /* Name and size first, so moving bytes between files or renaming one changes it. */
        uint64_t size = files[i].size;
        XXH3_128bits_update(&st, files[i].name, strlen(files[i].name) + 1);
        XXH3_128bits_update(&st, &size, sizeof(size));
        XXH3_128bits_update(&st, files[i].text, files[i].size);
    }
    XXH128_hash_t h = XXH3_128bits_digest(&st);
    snprintf(out, JIT_DEVICE_HASH_LEN + 1, "%016llx%016llx", (unsigned long long)h.high64,
             (unsigned long long)h.low64);
}
