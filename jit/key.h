/*
 * The specialization key: plan + arch + compile target + toolchain versions + generator
 * version, as canonical text ("field=value" pairs joined by single spaces, fixed order, no paths, no host
 * names) and its hash (XXH3-128, 32 hex digits). Same inputs, same text, same hash, on any
 * machine: that is what lets a cache prewarmed on a build host serve a GPU host.
 */
#ifndef JIT_KEY_H
#define JIT_KEY_H

#include "plan.h"

#define JIT_KEY_TEXT_MAX 1024
#define JIT_KEY_HASH_LEN 32

typedef struct jit__toolchain_id {
    int nvrtc_major, nvrtc_minor;
    int nvjitlink_major, nvjitlink_minor;
} jit__toolchain_id_t;

typedef struct jit__key {
    char text[JIT_KEY_TEXT_MAX];
    char hash[JIT_KEY_HASH_LEN + 1];
    char target[16]; /* what the cubin is built for: "sm_90a", or "sm_100f" in the fallback */
    int fallback;    /* 1 when target is the arch profile's fallback, not its native target */
} jit__key_t;

void jit__key_make(const jit__plan_t *plan, const jit__toolchain_id_t *tc, const char *target,
                   int fallback, jit__key_t *out);

/* XXH3-128 of `len` bytes as 32 lowercase hex digits plus NUL. */
void jit__hash_hex(const void *data, size_t len, char out[JIT_KEY_HASH_LEN + 1]);

#endif
