/*
 * Running the built `jitgemm` binary from the CLI tests: one call captures the exit status,
 * stdout and stderr, with JITGEMM_CACHE_DIR pointed at the test's own scratch directory so no
 * test ever touches the user's cache. Header-only because each test_*.c is its own executable.
 */
#ifndef JIT_TEST_CLI_HELPERS_H
#define JIT_TEST_CLI_HELPERS_H

#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "support.h"

typedef struct cli_result {
    int rc;
    char *out, *err;
} cli_result_t;

/* Run jitgemm with `args` (NULL-terminated); cache_dir NULL leaves the environment alone. */
static inline cli_result_t cli_run(const char *cache_dir, const char *stdin_text,
                                   const char *const *args) {
    const char *argv[64] = {JITGEMM_CLI_PATH};
    size_t n = 1;
    for (; args[n - 1] && n < 63; n++)
        argv[n] = args[n - 1];
    argv[n] = NULL;
    char env_cache[1024];
    const char *env[2] = {NULL, NULL};
    if (cache_dir) {
        snprintf(env_cache, sizeof(env_cache), "JITGEMM_CACHE_DIR=%s", cache_dir);
        env[0] = env_cache;
    }
    cli_result_t r = {0};
    r.rc = jt_run(argv, env, stdin_text, &r.out, &r.err);
    cr_assert_neq(r.rc, -1, "jitgemm could not run or was killed: %s", argv[1] ? argv[1] : "");
    return r;
}

static inline void cli_free(cli_result_t *r) {
    free(r->out);
    free(r->err);
    r->out = r->err = NULL;
}

#define CLI(dir, in, ...) cli_run((dir), (in), (const char *const[]){__VA_ARGS__, NULL})

/* Expect exit status `rc` and `needle` in stderr (stdout if `on_stdout`). */
#define CLI_EXPECT(r, want_rc, needle)                                                             \
    do {                                                                                           \
        cr_expect_eq((r).rc, (want_rc), "exit %d, want %d; stderr: %s", (r).rc, (want_rc),         \
                     (r).err);                                                                     \
        cr_expect(strstr((r).err, (needle)) != NULL, "stderr lacks '%s': %s", (needle), (r).err);  \
    } while (0)

/* Count lines of `text`. */
static inline size_t cli_count_lines(const char *text) {
    size_t n = 0;
    for (const char *p = text; *p; p++)
        n += *p == '\n';
    return n;
}

#endif
