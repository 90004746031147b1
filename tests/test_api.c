/*
 * The public API without a GPU: input validation (each failure a specific status and a
 * message, before anything is compiled), names and defaults, context options, the native and
 * fallback compile paths for sm_107a, and one compile per key across threads.
 */
#include <criterion/criterion.h>
#include <dirent.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "family.h"
#include "jitgemm.h"
#include "pipeline.h"
#include "support.h"

static char *g_dir;
static jit_context_t *g_ctx;

static void setup_ctx(void) {
    g_dir = jt_mkdtemp("api");
    jit_context_options_t o;
    jit_context_options_init(&o);
    o.cache_dir = g_dir;
    o.arch = "sm_90a";
    o.log_level = JIT_LOG_ERROR;
    cr_assert_eq(jit_context_create(&o, &g_ctx), JIT_OK, "%s", jit_last_error(NULL));
}

static void teardown_ctx(void) {
    jit_context_destroy(g_ctx);
    jt_rmtree(g_dir);
    free(g_dir);
}

/* 16-byte aligned fake device pointers: validation never dereferences them. */
static _Alignas(16) unsigned char g_fake[4][64];

static void valid_call(jit_problem_t *p, jit_operands_t *o) {
    jit_problem_init(p);
    p->m = 100;
    p->n = 256;
    p->k = 512;
    jit_operands_init(o);
    o->a = g_fake[0];
    o->b = g_fake[1];
    o->scale_a = g_fake[2];
    o->scale_b = g_fake[3];
    o->d = g_fake[2] + 16;
}

static void expect(jit_status_t got, jit_status_t want, const char *needle) {
    cr_assert_eq(got, want, "got %s, want %s: %s", jit_status_name(got), jit_status_name(want),
                 jit_last_error(g_ctx));
    cr_assert(strstr(jit_last_error(g_ctx), needle), "message '%s' lacks '%s'",
              jit_last_error(g_ctx), needle);
}

Test(api, status_table, .init = setup_ctx, .fini = teardown_ctx) {
    cr_assert_str_eq(jit_status_name(JIT_INVALID_SHAPE), "JIT_INVALID_SHAPE");
    cr_assert_str_eq(jit_status_string(JIT_OK), "success");
    cr_assert_str_eq(jit_status_name((jit_status_t)-999), "JIT_UNKNOWN_STATUS");
    jit_dtype_t dt;
    jit_scale_mode_t sm;
    jit_epilogue_t ep;
    cr_assert_eq(jit_dtype_parse("e2m1", &dt), JIT_OK);
    cr_assert_eq(dt, JIT_DTYPE_E2M1);
    cr_assert_eq(jit_scale_mode_parse("ue5m3/32", &sm), JIT_OK);
    cr_assert_eq(sm, JIT_SCALE_UE5M3_32);
    cr_assert_eq(jit_epilogue_parse("linear_swiglu", &ep), JIT_OK);
    cr_assert_str_eq(jit_epilogue_name(ep), "linear_swiglu");
    cr_assert_eq(jit_dtype_parse("fp8", &dt), JIT_INVALID_ARGUMENT);
    cr_assert_str_eq(jit_context_arch(g_ctx), "sm_90a");
    cr_assert_eq(jit_context_sm_count(g_ctx), 132);
}

Test(api, gemm_rejects_bad_input_before_compiling, .init = setup_ctx, .fini = teardown_ctx) {
    jit_problem_t p;
    jit_operands_t o;
    valid_call(&p, &o);
    p.m = 0;
    expect(jit_gemm(g_ctx, &p, &o, NULL), JIT_INVALID_SHAPE, "must be positive");
    valid_call(&p, &o);
    p.k = -5;
    expect(jit_gemm(g_ctx, &p, &o, NULL), JIT_INVALID_SHAPE, "k=-5");
    valid_call(&p, &o);
    p.k = 520;
    expect(jit_gemm(g_ctx, &p, &o, NULL), JIT_MISALIGNED, "multiples of 16");
    valid_call(&p, &o);
    o.a = g_fake[0] + 8;
    expect(jit_gemm(g_ctx, &p, &o, NULL), JIT_MISALIGNED, "16-byte aligned");
    valid_call(&p, &o);
    o.d = g_fake[2] + 2;
    expect(jit_gemm(g_ctx, &p, &o, NULL), JIT_MISALIGNED, "4-byte aligned");
    valid_call(&p, &o);
    o.scale_b = NULL;
    expect(jit_gemm(g_ctx, &p, &o, NULL), JIT_INVALID_ARGUMENT, "scale_b");
    valid_call(&p, &o);
    p.epilogue = JIT_EPILOGUE_LINEAR_ADD;
    expect(jit_gemm(g_ctx, &p, &o, NULL), JIT_INVALID_ARGUMENT, "residual");
    valid_call(&p, &o);
    p.lda = 100;
    expect(jit_gemm(g_ctx, &p, &o, NULL), JIT_INVALID_ARGUMENT, "stride");
    valid_call(&p, &o);
    p.struct_size = 8;
    expect(jit_gemm(g_ctx, &p, &o, NULL), JIT_INVALID_ARGUMENT, "jit_problem_init");
    valid_call(&p, &o);
    expect(jit_gemm(g_ctx, &p, NULL, NULL), JIT_INVALID_ARGUMENT, "NULL");
    cr_assert_eq(jit_gemm(NULL, &p, &o, NULL), JIT_INVALID_ARGUMENT);
    cr_assert(strstr(jit_last_error(NULL), "context is NULL"));
    /* Nothing was compiled for any of these: the cache holds no kernel. */
    char path[1024];
    snprintf(path, sizeof(path), "%s/kernels", g_dir);
    DIR *dir = opendir(path);
    int files = 0;
    for (struct dirent *e; dir && (e = readdir(dir));)
        files += e->d_name[0] != '.';
    if (dir)
        closedir(dir);
    cr_assert_eq(files, 0, "%d files in %s", files, path);
}

Test(api, unsupported_combinations_are_named, .init = setup_ctx, .fini = teardown_ctx) {
    jit_problem_t p;
    jit_problem_init(&p);
    p.m = 16;
    p.n = 128;
    p.k = 256;
    p.a_dtype = JIT_DTYPE_E5M2;
    char *out = NULL;
    expect(jit_inspect(g_ctx, &p, JIT_INSPECT_PLAN, &out), JIT_UNSUPPORTED, "e5m2");
    jit_problem_init(&p);
    p.m = 16;
    p.n = 128;
    p.k = 256;
    p.a_dtype = p.b_dtype = JIT_DTYPE_E2M1;
    p.scale_mode = JIT_SCALE_UE4M3_16;
    /* Block-scaled formats are tcgen05-only: Hopper answers with a clear status. */
    expect(jit_inspect(g_ctx, &p, JIT_INSPECT_PLAN, &out), JIT_UNSUPPORTED_ARCH, "sm_90a");
    cr_assert_null(out);
}

Test(api, bad_context_options) {
    jit_context_options_t o;
    jit_context_options_init(&o);
    o.arch = "sm_99z";
    jit_context_t *ctx = (jit_context_t *)0x1;
    cr_assert_eq(jit_context_create(&o, &ctx), JIT_UNKNOWN_ARCH);
    cr_assert_null(ctx);
    cr_assert(strstr(jit_last_error(NULL), "sm_99z"), "%s", jit_last_error(NULL));
    jit_context_options_init(&o);
    o.sm_count = -3;
    o.arch = "sm_90a";
    cr_assert_eq(jit_context_create(&o, &ctx), JIT_INVALID_ARGUMENT);
    o.struct_size = 4;
    cr_assert_eq(jit_context_create(&o, &ctx), JIT_INVALID_ARGUMENT);
    cr_assert(strstr(jit_last_error(NULL), "jit_context_options_init"));
}

static jit_context_t *rubin_ctx(const char *dir, const char *toolkit) {
    jit_context_options_t o;
    jit_context_options_init(&o);
    o.cache_dir = dir;
    o.arch = "sm_107a";
    o.toolkit_dir = toolkit;
    o.log_level = JIT_LOG_ERROR;
    jit_context_t *ctx = NULL;
    cr_assert_eq(jit_context_create(&o, &ctx), JIT_OK, "%s", jit_last_error(NULL));
    return ctx;
}

static void rubin_problem(jit_problem_t *p) {
    jit_problem_init(p);
    p->m = 1024;
    p->n = 4096;
    p->k = 4096;
}

Test(api, sm_107a_fallback_with_an_old_nvrtc) {
    const char *home = getenv("CUDA_HOME");
    const char *sys = home && *home ? home : "/usr/local/cuda";
    char *dir = jt_mkdtemp("fallback");
    jit_context_t *ctx = rubin_ctx(dir, sys);
    jit_problem_t p;
    rubin_problem(&p);
    char *text = NULL;
    jit_status_t st = jit_inspect(ctx, &p, JIT_INSPECT_KEY, &text);
    if (st == JIT_TOOLCHAIN_NOT_FOUND)
        cr_skip("no system toolkit at %s", sys);
    cr_assert_eq(st, JIT_OK, "%s", jit_last_error(ctx));
    /* A key names no toolchain; which one this context found says whether this is the path. */
    const jit__toolchain_t *tc = NULL;
    if (jit__toolchain_get(sys, &tc, NULL) != JIT_OK || tc->id.nvrtc_major != 13 ||
        tc->id.nvrtc_minor != 0)
        cr_skip("system NVRTC is not 13.0; this test pins the pre-sm_107 path");
    cr_assert(strstr(text, "target=sm_100f fallback=1"), "%s", text);
    cr_assert(strstr(text, "fallback: NVRTC 13.0 cannot target sm_107a"), "%s", text);
    jit_free(text);
    cr_assert_eq(jit_inspect(ctx, &p, JIT_INSPECT_ENTRY, &text), JIT_OK, "%s", jit_last_error(ctx));
    cr_assert(strstr(text, "\"sm_100f\""), "%s", text);
    cr_assert(strstr(text, "\"sm_100a\""), "the check target is recorded: %s", text);
    jit_free(text);
    jit_context_destroy(ctx);
    jt_rmtree(dir);
    free(dir);
}

Test(api, sm_107a_native_with_a_new_nvrtc) {
    char *dir = jt_mkdtemp("native");
    jit_context_t *ctx = rubin_ctx(dir, NULL);
    jit_problem_t p;
    rubin_problem(&p);
    char *text = NULL;
    cr_assert_eq(jit_inspect(ctx, &p, JIT_INSPECT_KEY, &text), JIT_OK, "%s", jit_last_error(ctx));
    if (strstr(text, "fallback=1"))
        cr_skip("the newest NVRTC found lacks sm_107a; run scripts/setup.sh");
    cr_assert(strstr(text, "target=sm_107a fallback=0"), "%s", text);
    jit_free(text);
    cr_assert_eq(jit_inspect(ctx, &p, JIT_INSPECT_PTX, &text), JIT_OK, "%s", jit_last_error(ctx));
    cr_assert(strstr(text, ".target sm_107a"), "PTX header names the target");
    jit_free(text);
    jit_context_destroy(ctx);
    jt_rmtree(dir);
    free(dir);
}

typedef struct race {
    jit_context_t *ctx;
    jit_problem_t p;
    char *entry;
    jit_status_t st;
} race_t;

static void *race_worker(void *arg) {
    race_t *r = arg;
    r->st = jit_inspect(r->ctx, &r->p, JIT_INSPECT_ENTRY, &r->entry);
    return NULL;
}

Test(api, concurrent_first_calls_compile_once, .init = setup_ctx, .fini = teardown_ctx) {
    enum { N = 6 };
    race_t r[N];
    pthread_t t[N];
    for (int i = 0; i < N; i++) {
        memset(&r[i], 0, sizeof(r[i]));
        r[i].ctx = g_ctx;
        jit_problem_init(&r[i].p);
        r[i].p.m = 300 + i; /* one band: one key */
        r[i].p.n = 768;
        r[i].p.k = 1024;
        pthread_create(&t[i], NULL, race_worker, &r[i]);
    }
    for (int i = 0; i < N; i++)
        pthread_join(t[i], NULL);
    for (int i = 0; i < N; i++) {
        cr_assert_eq(r[i].st, JIT_OK);
        /* Every thread sees the same entry, created once: identical text, same timestamps. */
        cr_assert_str_eq(r[i].entry, r[0].entry);
    }
    for (int i = 0; i < N; i++)
        jit_free(r[i].entry);
}

Test(api, tcgen05_launch_needs_the_opt_in) {
    /* The refusal is checked before anything is loaded; this exercises it without a GPU. */
    jit__gemm_spec_t s = {.n = 4096,
                          .k = 4096,
                          .a = JIT_DTYPE_E2M1,
                          .b = JIT_DTYPE_E2M1,
                          .out = JIT_DTYPE_BF16,
                          .scales = JIT_SCALE_UE4M3_16,
                          .epilogue = JIT_EPILOGUE_LINEAR};
    jit__plan_t plan;
    jit__diag_t d;
    jit__diag_init(&d);
    cr_assert_eq(jit__plan_make(&s, 5, 148, jit__arch_find("sm_100a"), &plan, &d), JIT_OK, "%s",
                 d.msg);
    unsetenv("JITGEMM_ALLOW_UNVERIFIED_TCGEN05");
    cr_assert_eq(jit__check_launch_opt_in(&plan, &d), JIT_UNSUPPORTED_ARCH);
    cr_assert(strstr(d.msg, "never been run on hardware"), "%s", d.msg);
    cr_assert(strstr(d.msg, "JITGEMM_ALLOW_UNVERIFIED_TCGEN05=1"), "%s", d.msg);
    jit__diag_init(&d);
    setenv("JITGEMM_ALLOW_UNVERIFIED_TCGEN05", "yes", 1);
    cr_assert_eq(jit__check_launch_opt_in(&plan, &d), JIT_UNSUPPORTED_ARCH, "only 1 opts in");
    jit__diag_init(&d);
    setenv("JITGEMM_ALLOW_UNVERIFIED_TCGEN05", "1", 1);
    cr_assert_eq(jit__check_launch_opt_in(&plan, &d), JIT_OK);
    /* The FP8 row-scaled route needs no opt-in. */
    s.a = s.b = JIT_DTYPE_E4M3;
    s.scales = JIT_SCALE_ROW;
    unsetenv("JITGEMM_ALLOW_UNVERIFIED_TCGEN05");
    cr_assert_eq(jit__plan_make(&s, 5, 148, jit__arch_find("sm_100a"), &plan, &d), JIT_OK);
    cr_assert_eq(jit__check_launch_opt_in(&plan, &d), JIT_OK);
}

typedef struct two_ctx {
    jit_context_t *ctx;
    jit_problem_t p;
    int compiled, cached;
    jit_status_t st;
} two_ctx_t;

static void count_result(const jit_prewarm_event_t *ev, void *user) {
    two_ctx_t *t = user;
    t->compiled += ev->result == JIT_PREWARM_COMPILED;
    t->cached += ev->result == JIT_PREWARM_CACHED;
}

static void *prewarm_worker(void *arg) {
    two_ctx_t *t = arg;
    t->st = jit_prewarm(t->ctx, &t->p, 1, 1, count_result, t);
    return NULL;
}

Test(api, two_contexts_on_one_cache_compile_a_key_once) {
    /* Separate contexts share nothing in memory; only the cache's per-key file lock can make
     * the second one wait for the first one's compile instead of repeating it. */
    char *dir = jt_mkdtemp("twoctx");
    two_ctx_t t[2];
    pthread_t th[2];
    for (int i = 0; i < 2; i++) {
        memset(&t[i], 0, sizeof(t[i]));
        jit_context_options_t o;
        jit_context_options_init(&o);
        o.cache_dir = dir;
        o.arch = "sm_90a";
        o.log_level = JIT_LOG_ERROR;
        cr_assert_eq(jit_context_create(&o, &t[i].ctx), JIT_OK, "%s", jit_last_error(NULL));
        jit_problem_init(&t[i].p);
        t[i].p.m = 2000;
        t[i].p.n = 1536;
        t[i].p.k = 2048;
    }
    for (int i = 0; i < 2; i++)
        pthread_create(&th[i], NULL, prewarm_worker, &t[i]);
    for (int i = 0; i < 2; i++)
        pthread_join(th[i], NULL);
    for (int i = 0; i < 2; i++)
        cr_assert_eq(t[i].st, JIT_OK, "%s", jit_last_error(t[i].ctx));
    cr_assert_eq(t[0].compiled + t[1].compiled, 1, "compiled %d and %d times", t[0].compiled,
                 t[1].compiled);
    cr_assert_eq(t[0].cached + t[1].cached, 1);
    for (int i = 0; i < 2; i++)
        jit_context_destroy(t[i].ctx);
    jt_rmtree(dir);
    free(dir);
}

/* A program built against an older jitgemm.h has shorter structs: the init macros pass its
 * sizeof, and the library writes no byte past it (it once wrote its whole struct, which overran
 * a binding's one-field-shorter mirror and crashed it). */
Test(api, init_writes_no_more_than_the_callers_struct) {
    unsigned char buf[sizeof(jit_context_options_t) + 16];
    size_t old_size = offsetof(jit_context_options_t, compile_mode);
    memset(buf, 0xA5, sizeof(buf));
    jit_context_options_init_sized((jit_context_options_t *)(void *)buf, old_size);
    for (size_t i = old_size; i < sizeof(buf); i++)
        cr_assert_eq(buf[i], 0xA5, "byte %zu past the caller's %zu-byte struct was written", i,
                     old_size);
    jit_context_options_t opt;
    memcpy(&opt, buf, old_size);
    cr_expect_eq(opt.struct_size, (uint32_t)old_size);
    cr_expect_eq(opt.log_level, JIT_LOG_WARN);

    unsigned char pbuf[sizeof(jit_problem_t) + 16];
    memset(pbuf, 0xA5, sizeof(pbuf));
    jit_problem_init_sized((jit_problem_t *)(void *)pbuf, 8);
    for (size_t i = 8; i < sizeof(pbuf); i++)
        cr_assert_eq(pbuf[i], 0xA5, "problem byte %zu written", i);

    /* The macros pass the full size, and the exported functions (a binding's way in) write the
     * library's whole struct. */
    jit_problem_t p;
    jit_problem_init(&p);
    cr_expect_eq(p.struct_size, (uint32_t)sizeof(p));
    cr_expect_eq(p.alpha, 1.0f);
    jit_problem_t q;
    (jit_problem_init)(&q);
    cr_expect_eq(memcmp(&p, &q, sizeof(p)), 0);
    jit_stats_t s;
    (jit_stats_init)(&s);
    cr_expect_eq(s.struct_size, (uint32_t)sizeof(s));
    jit_operands_t o;
    jit_operands_init(&o);
    cr_expect_eq(o.struct_size, (uint32_t)sizeof(o));
}
