/*
 * Production mode and the context's counters: with compiling off (JITGEMM_COMPILE=never or the
 * compile_mode option) a kernel that is in neither memory nor the disk cache fails with
 * JIT_NOT_IN_CACHE and a message naming its key and hash, and nothing is compiled or stored;
 * jit_context_stats counts where every kernel came from.
 */
#include <criterion/criterion.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "jitgemm.h"
#include "support.h"

static char *g_dir;

static void setup(void) {
    g_dir = jt_mkdtemp("compile-mode");
    unsetenv("JITGEMM_COMPILE");
    unsetenv("JITGEMM_LOG");
}

static void teardown(void) {
    jt_rmtree(g_dir);
    free(g_dir);
}

TestSuite(compile_mode, .init = setup, .fini = teardown, .timeout = 300);

static jit_status_t create(jit_compile_mode_t mode, jit_context_t **ctx) {
    jit_context_options_t o;
    jit_context_options_init(&o);
    o.cache_dir = g_dir;
    o.arch = "sm_90a";
    o.compile_mode = mode;
    return jit_context_create(&o, ctx);
}

static jit_problem_t small_problem(void) {
    jit_problem_t p;
    jit_problem_init(&p);
    p.m = 16;
    p.n = 128;
    p.k = 256;
    return p;
}

/* The key hash jit_inspect reports (no compile), into hash[33]. */
static void key_hash(jit_context_t *ctx, const jit_problem_t *p, char *hash) {
    char *text = NULL;
    cr_assert_eq(jit_inspect(ctx, p, JIT_INSPECT_KEY, &text), JIT_OK, "%s", jit_last_error(ctx));
    cr_assert(sscanf(text, "hash %32s", hash) == 1, "%s", text);
    jit_free(text);
}

static jit_stats_t stats_of(jit_context_t *ctx) {
    jit_stats_t s;
    jit_stats_init(&s);
    cr_assert_eq(jit_context_stats(ctx, &s), JIT_OK, "%s", jit_last_error(ctx));
    return s;
}

Test(compile_mode, a_bad_value_is_an_error_naming_the_accepted_ones) {
    const char *bad[] = {"no", "NEVER", "0", "always ", "sometimes"};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        setenv("JITGEMM_COMPILE", bad[i], 1);
        jit_context_t *ctx = (jit_context_t *)1;
        cr_expect_eq(create(JIT_COMPILE_ALWAYS, &ctx), JIT_INVALID_ARGUMENT, "'%s' accepted",
                     bad[i]);
        cr_expect_null(ctx);
        const char *msg = jit_last_error(NULL);
        cr_expect(strstr(msg, "JITGEMM_COMPILE") && strstr(msg, bad[i]), "%s", msg);
        cr_expect(strstr(msg, "always, never"), "%s", msg);
    }
    const char *good[] = {"always", "never", ""};
    for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++) {
        setenv("JITGEMM_COMPILE", good[i], 1);
        jit_context_t *ctx = NULL;
        cr_expect_eq(create(JIT_COMPILE_ALWAYS, &ctx), JIT_OK, "'%s': %s", good[i],
                     jit_last_error(NULL));
        jit_context_destroy(ctx);
    }
}

Test(compile_mode, an_unknown_option_value_is_refused) {
    jit_context_t *ctx = (jit_context_t *)1;
    cr_expect_eq(create((jit_compile_mode_t)7, &ctx), JIT_INVALID_ARGUMENT);
    cr_expect_null(ctx);
    cr_expect(strstr(jit_last_error(NULL), "compile_mode is 7"), "%s", jit_last_error(NULL));
}

Test(compile_mode, options_from_an_older_header_still_work_and_compile) {
    /* A caller built before compile_mode existed passes a shorter struct. */
    jit_context_options_t o;
    jit_context_options_init(&o);
    memset(&o.compile_mode, 0x55, sizeof(o.compile_mode)); /* beyond its struct: not read */
    o.struct_size = (uint32_t)offsetof(jit_context_options_t, compile_mode);
    o.cache_dir = g_dir;
    o.arch = "sm_90a";
    jit_context_t *ctx = NULL;
    cr_assert_eq(jit_context_create(&o, &ctx), JIT_OK, "%s", jit_last_error(NULL));
    jit_context_destroy(ctx);
    o.struct_size -= 1;
    cr_expect_eq(jit_context_create(&o, &ctx), JIT_INVALID_ARGUMENT);
}

static void expect_not_in_cache(jit_context_t *ctx, const jit_problem_t *p) {
    char hash[33];
    key_hash(ctx, p, hash);
    jit_status_t st = jit_prewarm(ctx, p, 1, 1, NULL, NULL);
    cr_expect_eq(st, JIT_NOT_IN_CACHE, "got %s", jit_status_name(st));
    const char *msg = jit_last_error(ctx);
    cr_expect(strstr(msg, hash), "message lacks the hash %s: %s", hash, msg);
    cr_expect(strstr(msg, "key: ") && strstr(msg, "arch=sm_90a"), "message lacks the key: %s", msg);
    cr_expect(strstr(msg, "JITGEMM_COMPILE=never"), "%s", msg);
    /* Nothing was compiled or stored. */
    char path[2048];
    snprintf(path, sizeof(path), "%s/kernels/%s.cubin", g_dir, hash);
    size_t size = 0;
    char *cubin = jt_read_file(path, &size);
    cr_expect_null(cubin, "a cubin was written in never mode");
    free(cubin);
    jit_stats_t s = stats_of(ctx);
    cr_expect_eq(s.compiles, 0);
    cr_expect_eq(s.not_in_cache, 1);
    cr_expect_eq(s.failures, 0);
}

Test(compile_mode, never_by_option_refuses_a_miss_with_the_key) {
    jit_context_t *ctx = NULL;
    cr_assert_eq(create(JIT_COMPILE_NEVER, &ctx), JIT_OK, "%s", jit_last_error(NULL));
    jit_problem_t p = small_problem();
    expect_not_in_cache(ctx, &p);
    cr_expect_str_eq(jit_status_name(JIT_NOT_IN_CACHE), "JIT_NOT_IN_CACHE");
    jit_context_destroy(ctx);
}

Test(compile_mode, never_by_environment_refuses_a_miss_and_always_cannot_undo_the_option) {
    jit_problem_t p = small_problem();
    setenv("JITGEMM_COMPILE", "never", 1);
    jit_context_t *ctx = NULL;
    cr_assert_eq(create(JIT_COMPILE_ALWAYS, &ctx), JIT_OK, "%s", jit_last_error(NULL));
    expect_not_in_cache(ctx, &p);
    jit_context_destroy(ctx);
    setenv("JITGEMM_COMPILE", "always", 1);
    cr_assert_eq(create(JIT_COMPILE_NEVER, &ctx), JIT_OK, "%s", jit_last_error(NULL));
    expect_not_in_cache(ctx, &p);
    jit_context_destroy(ctx);
}

Test(compile_mode, the_inspect_stages_that_compile_are_refused_too) {
    jit_context_t *ctx = NULL;
    cr_assert_eq(create(JIT_COMPILE_NEVER, &ctx), JIT_OK, "%s", jit_last_error(NULL));
    jit_problem_t p = small_problem();
    char *text = NULL;
    cr_expect_eq(jit_inspect(ctx, &p, JIT_INSPECT_ENTRY, &text), JIT_NOT_IN_CACHE);
    cr_expect_eq(jit_inspect(ctx, &p, JIT_INSPECT_PTX, &text), JIT_NOT_IN_CACHE);
    void *cubin = NULL;
    size_t size = 0;
    cr_expect_eq(jit_inspect_cubin(ctx, &p, &cubin, &size), JIT_NOT_IN_CACHE);
    cr_expect_null(cubin);
    /* Key, plan and source need no compiler. */
    cr_expect_eq(jit_inspect(ctx, &p, JIT_INSPECT_SOURCE, &text), JIT_OK, "%s",
                 jit_last_error(ctx));
    jit_free(text);
    jit_context_destroy(ctx);
}

Test(compile_mode, counters_say_compile_memory_hit_disk_hit_and_never_serves_the_cache) {
    jit_problem_t p = small_problem();
    jit_context_t *ctx = NULL;
    cr_assert_eq(create(JIT_COMPILE_ALWAYS, &ctx), JIT_OK, "%s", jit_last_error(NULL));
    jit_stats_t s = stats_of(ctx);
    cr_expect(s.memory_hits == 0 && s.disk_hits == 0 && s.compiles == 0 && s.failures == 0);
    cr_assert_eq(jit_prewarm(ctx, &p, 1, 1, NULL, NULL), JIT_OK, "%s", jit_last_error(ctx));
    s = stats_of(ctx);
    cr_expect_eq(s.compiles, 1);
    cr_expect_gt(s.compile_seconds, 0.0);
    cr_expect_eq(s.memory_hits, 0);
    cr_expect_eq(s.disk_hits, 0);
    double first_seconds = s.compile_seconds;
    /* Two problems of one band: one key, so one lookup, a memory hit. */
    jit_problem_t two[2] = {p, p};
    two[1].m = 3;
    cr_assert_eq(jit_prewarm(ctx, two, 2, 1, NULL, NULL), JIT_OK, "%s", jit_last_error(ctx));
    s = stats_of(ctx);
    cr_expect_eq(s.compiles, 1);
    cr_expect_eq(s.memory_hits, 1);
    cr_expect(s.compile_seconds == first_seconds);
    /* An unsupported problem fails at planning, before any lookup: not counted. */
    jit_problem_t bad = p;
    bad.scale_mode = JIT_SCALE_UE8M0_32;
    cr_expect_neq(jit_prewarm(ctx, &bad, 1, 1, NULL, NULL), JIT_OK);
    s = stats_of(ctx);
    cr_expect_eq(s.failures, 0);
    jit_context_destroy(ctx);

    /* A fresh context that may not compile finds it on disk. */
    cr_assert_eq(create(JIT_COMPILE_NEVER, &ctx), JIT_OK, "%s", jit_last_error(NULL));
    cr_assert_eq(jit_prewarm(ctx, &p, 1, 1, NULL, NULL), JIT_OK, "%s", jit_last_error(ctx));
    char *entry = NULL;
    cr_expect_eq(jit_inspect(ctx, &p, JIT_INSPECT_ENTRY, &entry), JIT_OK, "%s",
                 jit_last_error(ctx));
    jit_free(entry);
    s = stats_of(ctx);
    cr_expect_eq(s.disk_hits, 1);
    cr_expect_eq(s.memory_hits, 1);
    cr_expect_eq(s.compiles, 0);
    cr_expect_eq(s.not_in_cache, 0);
    jit_context_destroy(ctx);
}

Test(compile_mode, stats_checks_its_arguments) {
    jit_context_t *ctx = NULL;
    cr_assert_eq(create(JIT_COMPILE_ALWAYS, &ctx), JIT_OK, "%s", jit_last_error(NULL));
    jit_stats_t s;
    memset(&s, 0, sizeof(s));
    cr_expect_eq(jit_context_stats(ctx, &s), JIT_INVALID_ARGUMENT);
    cr_expect(strstr(jit_last_error(ctx), "jit_stats_init"), "%s", jit_last_error(ctx));
    cr_expect_eq(jit_context_stats(ctx, NULL), JIT_INVALID_ARGUMENT);
    jit_stats_init(&s);
    cr_expect_eq(jit_context_stats(NULL, &s), JIT_INVALID_ARGUMENT);
    jit_context_destroy(ctx);
}

Test(compile_mode, the_cli_refuses_a_bad_value_for_every_verb) {
    const char *argv[] = {JITGEMM_CLI_PATH, "cache", "list", "--cache-dir", g_dir, NULL};
    const char *env[] = {"JITGEMM_COMPILE=sometimes", NULL};
    char *out = NULL, *err = NULL;
    int rc = jt_run(argv, env, NULL, &out, &err);
    cr_expect_eq(rc, 2, "exit %d\n%s\n%s", rc, out, err);
    cr_expect(strstr(err, "JITGEMM_COMPILE='sometimes' is not a compile mode"), "%s", err);
    free(out);
    free(err);
}

Test(compile_mode, the_cli_reports_a_miss_in_never_mode) {
    const char *argv[] = {
        JITGEMM_CLI_PATH, "inspect", "--op",   "linear", "--n",     "128",         "--k", "256",
        "--tokens",       "16",      "--arch", "sm_90a", "--entry", "--cache-dir", g_dir, NULL};
    const char *env[] = {"JITGEMM_COMPILE=never", "JITGEMM_LOG=info", NULL};
    char *out = NULL, *err = NULL;
    int rc = jt_run(argv, env, NULL, &out, &err);
    cr_expect_eq(rc, 1, "exit %d\n%s\n%s", rc, out, err);
    cr_expect(strstr(err, "is not in the cache") && strstr(err, "key: "), "%s", err);
    /* info says what the context is set up for and that the miss was not compiled. */
    cr_expect(strstr(err, "context: sm_90a with 132 SMs") && strstr(err, "fail (mode never)"), "%s",
              err);
    cr_expect(strstr(err, ": miss, not compiled (compile mode never)"), "%s", err);
    free(out);
    free(err);
}

Test(compile_mode, info_names_the_toolchain_a_prewarm_builds_with) {
    const char *list = "{\"target\": {\"arch\": \"sm_90a\"}, \"gemms\": [{\"name\": \"p\", "
                       "\"op\": \"linear\", \"n\": 128, \"k\": 256, \"tokens\": [16]}]}";
    const char *argv[] = {JITGEMM_CLI_PATH, "prewarm", "-", "--check", "--cache-dir", g_dir, NULL};
    const char *env[] = {"JITGEMM_LOG=info", NULL};
    char *out = NULL, *err = NULL;
    int rc = jt_run(argv, env, list, &out, &err);
    cr_expect_eq(rc, 1, "exit %d: %s", rc, err);
    cr_expect(strstr(err, "prewarm: 1 problems, NVRTC "), "%s", err);
    cr_expect(strstr(err, "misses are not built (compile mode never)"), "%s", err);
    free(out);
    free(err);
}
