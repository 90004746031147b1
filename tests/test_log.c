/*
 * JITGEMM_LOG: a value that names no level is refused with the accepted values listed, and the
 * info/debug levels say where each kernel came from (memory, disk, or a compile after a miss),
 * which is what someone chasing a slow first call needs to see.
 */
#include <criterion/criterion.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "jitgemm.h"
#include "support.h"

static char *g_dir;

static void setup(void) {
    g_dir = jt_mkdtemp("log");
}

static void teardown(void) {
    jt_rmtree(g_dir);
    free(g_dir);
}

static jit_status_t create(jit_context_t **ctx) {
    jit_context_options_t o;
    jit_context_options_init(&o);
    o.cache_dir = g_dir;
    o.arch = "sm_90a";
    return jit_context_create(&o, ctx);
}

Test(log, a_bad_value_is_an_error_naming_the_accepted_ones, .init = setup, .fini = teardown) {
    const char *bad[] = {"verbose", "DEBUG", "5", "-1", "info "};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        setenv("JITGEMM_LOG", bad[i], 1);
        jit_context_t *ctx = (jit_context_t *)1;
        cr_expect_eq(create(&ctx), JIT_INVALID_ARGUMENT, "'%s' was accepted", bad[i]);
        cr_expect_null(ctx);
        const char *msg = jit_last_error(NULL);
        cr_expect(strstr(msg, "JITGEMM_LOG") && strstr(msg, bad[i]), "%s", msg);
        cr_expect(strstr(msg, "silent, error, warn, info, debug"), "%s", msg);
    }
}

Test(log, every_level_name_and_digit_is_accepted, .init = setup, .fini = teardown) {
    const char *good[] = {"silent", "error", "warn", "info", "debug", "0", "4", ""};
    for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++) {
        setenv("JITGEMM_LOG", good[i], 1);
        jit_context_t *ctx = NULL;
        cr_expect_eq(create(&ctx), JIT_OK, "'%s': %s", good[i], jit_last_error(NULL));
        jit_context_destroy(ctx);
    }
}

Test(log, the_cli_refuses_a_bad_value, .init = setup, .fini = teardown) {
    const char *argv[] = {JITGEMM_CLI_PATH, "cache", "list", "--cache-dir", g_dir, NULL};
    const char *env[] = {"JITGEMM_LOG=loud", NULL};
    char *out = NULL, *err = NULL;
    int rc = jt_run(argv, env, NULL, &out, &err);
    /* Every verb checks it, even those that never create a context. */
    cr_expect_eq(rc, 2, "exit %d\n%s\n%s", rc, out, err);
    cr_expect(strstr(err, "JITGEMM_LOG='loud' is not a log level"), "%s", err);
    cr_expect(strstr(err, "silent, error, warn, info, debug"), "%s", err);
    free(out);
    free(err);
}

/* Run two prewarms of one problem on one context and one on a second context, at `level`,
 * and return what was logged (malloc'd). */
static char *prewarm_log(const char *level) {
    setenv("JITGEMM_LOG", level, 1);
    char path[1024];
    snprintf(path, sizeof(path), "%s/stderr.txt", g_dir);
    fflush(stderr);
    int saved = dup(2);
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    cr_assert(saved >= 0 && fd >= 0);
    dup2(fd, 2);
    close(fd);
    jit_problem_t p;
    jit_problem_init(&p);
    p.m = 16;
    p.n = 128;
    p.k = 256;
    jit_context_t *ctx = NULL;
    jit_status_t st = create(&ctx);
    if (st == JIT_OK) {
        fprintf(stderr, "-- first\n");
        st = jit_prewarm(ctx, &p, 1, 1, NULL, NULL);
    }
    if (st == JIT_OK) {
        fprintf(stderr, "-- again, same context\n");
        st = jit_prewarm(ctx, &p, 1, 1, NULL, NULL);
    }
    jit_context_destroy(ctx);
    ctx = NULL;
    if (st == JIT_OK && (st = create(&ctx)) == JIT_OK) {
        fprintf(stderr, "-- new context\n");
        st = jit_prewarm(ctx, &p, 1, 1, NULL, NULL);
    }
    jit_context_destroy(ctx);
    fflush(stderr);
    dup2(saved, 2);
    close(saved);
    char *text = jt_read_file(path, NULL);
    cr_assert_eq(st, JIT_OK, "%s: %s\n%s", jit_status_name(st), jit_last_error(NULL), text);
    return text;
}

/* The text between `from` and the next "-- " marker holds `needle`. */
static int in_part(const char *text, const char *from, const char *needle) {
    const char *a = strstr(text, from);
    if (!a)
        return 0;
    a += strlen(from);
    const char *b = strstr(a, "\n-- ");
    const char *hit = strstr(a, needle);
    return hit && (!b || hit < b);
}

Test(log, debug_says_miss_compile_memory_hit_and_disk_hit, .init = setup, .fini = teardown,
     .timeout = 300) {
    char *log = prewarm_log("debug");
    cr_expect(in_part(log, "-- first", ": miss, compiling for sm_90a with NVRTC "), "%s", log);
    cr_expect(in_part(log, "-- first", ": compiled in "), "%s", log);
    cr_expect(in_part(log, "-- again, same context", ": memory hit"), "%s", log);
    cr_expect(!in_part(log, "-- again, same context", "compil"), "%s", log);
    cr_expect(in_part(log, "-- new context", ": disk hit"), "%s", log);
    cr_expect(!in_part(log, "-- new context", "compil"), "%s", log);
    free(log);
}

Test(log, info_leaves_out_memory_hits_and_warn_says_nothing, .init = setup, .fini = teardown,
     .timeout = 300) {
    char *log = prewarm_log("info");
    cr_expect(in_part(log, "-- first", ": compiled in "), "%s", log);
    cr_expect(in_part(log, "-- new context", ": disk hit"), "%s", log);
    cr_expect(!strstr(log, "memory hit"), "%s", log);
    free(log);
    jt_rmtree(g_dir);
    free(g_dir);
    g_dir = jt_mkdtemp("log");
    log = prewarm_log("warn");
    cr_expect(!strstr(log, "jitgemm: "), "warn logged hits or compiles:\n%s", log);
    free(log);
}
