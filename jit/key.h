/*
 * The specialization key: key format + family + device code + arch + compile target + the
 * plan's choices + the hash of the generated code (comments left out), as canonical text
 * ("field=value" pairs joined by single spaces, fixed order, no paths, no host names) and its
 * hash (XXH3-128, 32 hex digits). Same inputs, same text, same hash, on any machine, whatever
 * its SM count or toolchain: that is what lets a cache prewarmed on a build host serve a GPU
 * host, and a host without NVRTC compute keys. The toolchain that built an entry is recorded
 * in the entry, not in its key (docs/cache.md, "Caches that travel").
 */
#ifndef JIT_KEY_H
#define JIT_KEY_H

#include "diag.h"
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

/* The key of `plan` built for `target` (the arch's native target, or its fallback target with
 * fallback 1). Runs the family's generator to hash the code; fails only where it fails (the
 * key is then zeroed). d may be NULL. */
jit_status_t jit__key_make(const jit__plan_t *plan, const char *target, int fallback,
                           jit__key_t *out, jit__diag_t *d);

/* Copy `src` into `out` (which needs room for strlen(src) bytes) without comments, trailing blanks
 * or blank lines; returns the length written (no NUL). The key hashes this, so sources that differ
 * only in comments share a key. */
size_t jit__code_strip_comments(const char *src, char *out);

/* XXH3-128 of `len` bytes as 32 lowercase hex digits plus NUL. */
void jit__hash_hex(const void *data, size_t len, char out[JIT_KEY_HASH_LEN + 1]);

#endif
