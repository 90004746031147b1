/* toolchains.json as the cache reads it: jit__cache_toolchains_read on arbitrary bytes. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "cache_private.h"
#include "fuzz_cache_dir.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    fuzz_cache_put("toolchains.json", data, size);
    jit__toolchain_record_t *recs = NULL;
    size_t n = 0;
    jit__record_state_t st = jit__cache_toolchains_read(fuzz_cache(), &recs, &n);
    if (st != JIT__RECORD_OK && (recs || n))
        abort();
    /* Records that were accepted must hold what the toolchain code relies on. */
    for (size_t i = 0; i < n; i++)
        if (recs[i].n_archs < 0 || recs[i].n_archs > JIT__TOOLCHAIN_MAX_ARCHS ||
            !memchr(recs[i].nvrtc_path, 0, sizeof(recs[i].nvrtc_path)) ||
            !memchr(recs[i].nvjitlink_path, 0, sizeof(recs[i].nvjitlink_path)))
            abort();
    free(recs);
    return 0;
}
