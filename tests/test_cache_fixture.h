/*
 * Helpers shared by the cache tests: synthetic entries (random bytes stand in for cubins; the
 * cache never interprets them), paths into a cache directory, and capturing what the library
 * prints on stderr so tests can count warnings. Header-only because each test_*.c is its own
 * executable.
 */
#ifndef JIT_TEST_CACHE_FIXTURE_H
#define JIT_TEST_CACHE_FIXTURE_H

#include <criterion/criterion.h>
#include <dirent.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cache.h"
#include "support.h"

/* A plausible entry for key number `seed`; its hash is the hash of its key text. */
static inline void tc_make_entry(jit__cache_entry_t *e, unsigned seed) {
    memset(e, 0, sizeof(*e));
    snprintf(e->key_text, sizeof(e->key_text),
             "jitgemm gen=1 route=mma_sync arch=sm_90a target=sm_90a n=%u k=4096 scales=ue8m0/32",
             seed);
    jit__hash_hex(e->key_text, strlen(e->key_text), e->hash);
    snprintf(e->arch, sizeof(e->arch), "sm_90a");
    snprintf(e->target, sizeof(e->target), "sm_90a");
    e->toolchain = (jit__toolchain_id_t){13, 5, 13, 5};
    e->generator_version = 1;
    snprintf(e->kernel_name, sizeof(e->kernel_name), "jitgemm_test_%u", seed);
    e->block[0] = 128;
    e->block[1] = e->block[2] = 1;
    e->cluster[0] = e->cluster[1] = e->cluster[2] = 1;
    e->smem_bytes = 1024u * seed;
    e->registers = 96;
    e->spill_stores = 0;
    e->spill_loads = 0;
    e->stack_bytes = 0;
    e->compile_seconds = 0.25;
}

/* `size` random bytes (malloc'd), different for every seed. */
static inline void *tc_make_cubin(unsigned seed, size_t size) {
    uint64_t state = 0x9e3779b97f4a7c15ull ^ ((uint64_t)seed * 0x100000001b3ull);
    unsigned char *p = malloc(size);
    for (size_t i = 0; i < size; i++)
        p[i] = (unsigned char)(jt_rng_next(&state) >> 32);
    return p;
}

/* Publish synthetic entry `seed` with `size` cubin bytes, a source and a PTX text. */
static inline void tc_put(jit__cache_t *c, unsigned seed, size_t size, jit__cache_entry_t *out) {
    jit__cache_entry_t e;
    tc_make_entry(&e, seed);
    void *bin = tc_make_cubin(seed, size);
    char src[128], ptx[128];
    snprintf(src, sizeof(src), "// source of test kernel %u\n", seed);
    snprintf(ptx, sizeof(ptx), "// ptx of test kernel %u\n", seed);
    jit__diag_t d;
    jit__diag_init(&d);
    jit_status_t st = jit__cache_put(c, &e, bin, size, src, ptx, &d);
    cr_assert_eq(st, JIT_OK, "put %u: %s", seed, d.msg);
    free(bin);
    if (out)
        *out = e;
}

/* 1 if entry `seed` is a verified hit whose bytes are the ones tc_put wrote. */
static inline int tc_hit(jit__cache_t *c, unsigned seed, size_t size) {
    jit__cache_entry_t e, want;
    void *bin = NULL;
    size_t n = 0;
    int found = -1;
    tc_make_entry(&want, seed);
    cr_assert_eq(jit__cache_get(c, want.hash, &e, &bin, &n, &found, NULL), JIT_OK);
    if (!found) {
        cr_assert_null(bin);
        return 0;
    }
    void *expect = tc_make_cubin(seed, size);
    int same = n == size && !memcmp(bin, expect, size) && !strcmp(e.hash, want.hash) &&
               !strcmp(e.key_text, want.key_text) && e.size == size;
    free(expect);
    free(bin);
    cr_assert(same, "entry %u loaded with the wrong contents", seed);
    return 1;
}

/* <dir>/kernels/<hash><ext>, in a static buffer (one at a time). */
static inline const char *tc_path(const char *dir, const char *hash, const char *ext) {
    static char path[4200];
    snprintf(path, sizeof(path), "%s/kernels/%s%s", dir, hash, ext);
    return path;
}

/* <dir>/<name> (a file at the cache's top level), in a static buffer (one at a time). */
static inline const char *tc_top(const char *dir, const char *name) {
    static char path[4200];
    snprintf(path, sizeof(path), "%s/%s", dir, name);
    return path;
}

static inline const char *tc_hash(unsigned seed) {
    static jit__cache_entry_t e;
    tc_make_entry(&e, seed);
    return e.hash;
}

static inline int tc_exists(const char *path) {
    struct stat st;
    return lstat(path, &st) == 0;
}

/* Number of directory entries (excluding . and ..) under dir/sub; -1 if it cannot be read. */
static inline int tc_count_files(const char *dir, const char *sub) {
    char path[4200];
    snprintf(path, sizeof(path), "%s/%s", dir, sub);
    DIR *d = opendir(path);
    if (!d)
        return -1;
    int n = 0;
    struct dirent *de;
    while ((de = readdir(d)))
        n += strcmp(de->d_name, ".") && strcmp(de->d_name, "..");
    closedir(d);
    return n;
}

/* Stderr capture: everything written to fd 2 between begin and end is returned (malloc'd). */
typedef struct tc_capture {
    int saved;
    FILE *file;
} tc_capture_t;

static inline void tc_capture_begin(tc_capture_t *cap) {
    fflush(stderr);
    cap->file = tmpfile();
    cr_assert_not_null(cap->file);
    cap->saved = dup(2);
    dup2(fileno(cap->file), 2);
}

static inline char *tc_capture_end(tc_capture_t *cap) {
    fflush(stderr);
    dup2(cap->saved, 2);
    close(cap->saved);
    struct stat st;
    size_t n = fstat(fileno(cap->file), &st) == 0 ? (size_t)st.st_size : 0;
    char *text = calloc(1, n + 1);
    if (n > 0 && pread(fileno(cap->file), text, n, 0) != (ssize_t)n)
        text[0] = '\0';
    fclose(cap->file);
    return text;
}

static inline int tc_count(const char *text, const char *needle) {
    int n = 0;
    for (const char *p = text; (p = strstr(p, needle)); p += strlen(needle))
        n++;
    return n;
}

/* Scratch directories of the running test, removed by tc_cleanup (each suite's .fini) even
 * when an assertion ends the test early. */
static char *tc_scratch[16];
static int tc_n_scratch;

static inline char *tc_mkdtemp(const char *tag) {
    char *dir = jt_mkdtemp(tag);
    cr_assert_not_null(dir, "cannot make a scratch directory");
    if (tc_n_scratch < (int)(sizeof(tc_scratch) / sizeof(tc_scratch[0])))
        tc_scratch[tc_n_scratch++] = strdup(dir);
    return dir;
}

static inline void tc_cleanup(void) {
    for (int i = 0; i < tc_n_scratch; i++) {
        jt_rmtree(tc_scratch[i]);
        free(tc_scratch[i]);
    }
    tc_n_scratch = 0;
}

static inline jit__cache_t *tc_open(const char *dir, int64_t max_bytes) {
    jit__cache_t *c = NULL;
    jit__diag_t d;
    jit__diag_init(&d);
    cr_assert_eq(jit__cache_open(dir, max_bytes, JIT_LOG_WARN, &c, &d), JIT_OK, "%s", d.msg);
    cr_assert_not_null(c);
    return c;
}

#endif
