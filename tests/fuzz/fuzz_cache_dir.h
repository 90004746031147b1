/*
 * A scratch cache directory for the harnesses whose reader takes its input from a file in the
 * cache (manifest.json, toolchains.json): going through the real file path also exercises the
 * owner, mode and size checks the reader applies before parsing.
 */
#ifndef JIT_FUZZ_CACHE_DIR_H
#define JIT_FUZZ_CACHE_DIR_H

#include <stddef.h>
#include <stdint.h>

#include "cache.h"

/* The process's scratch cache, opened on first use and removed at exit. */
jit__cache_t *fuzz_cache(void);
/* Replace `name` (relative to the cache directory) with exactly `size` bytes of `data`. */
void fuzz_cache_put(const char *name, const uint8_t *data, size_t size);

#endif
