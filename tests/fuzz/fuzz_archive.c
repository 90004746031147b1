/* A cache archive (cache/archive.c): jit__cache_import on arbitrary bytes. Whatever the bytes,
 * an import either publishes every entry or nothing: one that fails must leave kernels/ with
 * exactly the files it had. */
#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "archive.h"
#include "fuzz_cache_dir.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static long files_in_kernels(void) {
    char path[512];
    snprintf(path, sizeof(path), "%s/kernels", jit__cache_dir(fuzz_cache()));
    DIR *d = opendir(path);
    long n = 0;
    if (!d)
        return -1;
    while (readdir(d))
        n++;
    closedir(d);
    return n;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    fuzz_cache_put("input.jitgemm", data, size);
    char path[512];
    snprintf(path, sizeof(path), "%s/input.jitgemm", jit__cache_dir(fuzz_cache()));
    long before = files_in_kernels();
    jit__archive_counts_t counts;
    jit__diag_t d;
    jit__diag_init(&d);
    jit_status_t st = jit__cache_import(fuzz_cache(), path, &counts, &d);
    jit__diag_clear(&d);
    if (st != JIT_OK && counts.imported == 0 && files_in_kernels() != before)
        abort();
    return 0;
}
