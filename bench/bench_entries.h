/*
 * Synthetic cache entries for the cache benchmarks (bench_publish.c, bench_cache_list.c): a
 * plausible sidecar for key number `seed` and a cubin of pseudo-random bytes. The cache only
 * checks what it stores (hashes, sizes, owners), so nothing here needs a compiler.
 */
#ifndef JITGEMM_BENCH_ENTRIES_H
#define JITGEMM_BENCH_ENTRIES_H

#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "cache.h"

/* Key number `seed` for `arch`; its hash is the hash of its key text, as the cache requires. */
static inline void bench_make_entry(jit__cache_entry_t *e, size_t seed, const char *arch) {
    memset(e, 0, sizeof(*e));
    snprintf(e->key_text, sizeof(e->key_text),
             "jitgemm key=3 family=bench arch=%s target=%s n=%zu k=7168 tokens=1-16 "
             "scales=ue8m0/32 epilogue=linear",
             arch, arch, seed);
    jit__hash_hex(e->key_text, strlen(e->key_text), e->hash);
    snprintf(e->arch, sizeof(e->arch), "%s", arch);
    snprintf(e->target, sizeof(e->target), "%s", arch);
    e->toolchain = (jit__toolchain_id_t){13, 0, 13, 0};
    e->generator_version = 3;
    snprintf(e->kernel_name, sizeof(e->kernel_name), "jitgemm_bench_%zu", seed);
    e->block[0] = 384;
    e->block[1] = e->block[2] = 1;
    e->cluster[0] = 2;
    e->cluster[1] = e->cluster[2] = 1;
    e->smem_bytes = 200704;
    e->registers = 168;
    e->compile_seconds = 0.25 + (double)(seed % 100) / 1000;
}

/* n pseudo-random bytes (xorshift64), different for every seed. */
static inline void bench_fill_random(unsigned char *p, size_t n, uint64_t seed) {
    uint64_t x = seed * 0x9e3779b97f4a7c15ull + 1;
    for (size_t i = 0; i < n; i++) {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        p[i] = (unsigned char)x;
    }
}

#endif /* JITGEMM_BENCH_ENTRIES_H */
