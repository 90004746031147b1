/*
 * The activation quantizer in the public API and the CLI, without a GPU: every check
 * jit_quantize_fp8_1x128 makes on its input before anything is planned or launched, jit_gemm
 * refusing the op, one key for every problem of one K and band whatever the fields the op does
 * not read hold, jit_inspect and jit_prewarm of the quantizer's kernel (compiled once, then a
 * cache hit), and `jitgemm inspect --op quantize_fp8_1x128`.
 */
#include <criterion/criterion.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "jitgemm.h"
#include "support.h"
#include "test_cli_helpers.h"

static char *g_dir;
static jit_context_t *g_ctx;

static void setup_ctx(void) {
    g_dir = jt_mkdtemp("quant-api");
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

/* Fake device pointers: validation never dereferences them. */
static _Alignas(16) unsigned char g_fake[3][64];

static void quant_call(jit_problem_t *p, jit_quantize_operands_t *o) {
    jit_problem_init(p);
    p->epilogue = JIT_EPILOGUE_QUANTIZE_FP8_1X128;
    p->m = 100;
    p->k = 528; /* 5 groups, the last one of 16 */
    jit_quantize_operands_init(o);
    o->x = g_fake[0];
    o->q = g_fake[1];
    o->scales = (float *)(g_fake[2] + 4);
}

static void expect(jit_status_t got, jit_status_t want, const char *needle) {
    cr_assert_eq(got, want, "got %s, want %s: %s", jit_status_name(got), jit_status_name(want),
                 jit_last_error(g_ctx));
    cr_assert(strstr(jit_last_error(g_ctx), needle), "message '%s' lacks '%s'",
              jit_last_error(g_ctx), needle);
}

/* One wrong field at a time, each refused with its own status and words. */
Test(quant_api, input_checks, .init = setup_ctx, .fini = teardown_ctx) {
    jit_problem_t p;
    jit_quantize_operands_t o;
#define CASE(change, want, needle)                                                                 \
    do {                                                                                           \
        quant_call(&p, &o);                                                                        \
        change;                                                                                    \
        expect(jit_quantize_fp8_1x128(g_ctx, &p, &o, NULL), want, needle);                         \
    } while (0)
    CASE(p.epilogue = JIT_EPILOGUE_LINEAR, JIT_INVALID_ARGUMENT,
         "set it to JIT_EPILOGUE_QUANTIZE_FP8_1X128");
    CASE(p.struct_size = 8, JIT_INVALID_ARGUMENT, "jit_problem_init");
    CASE(o.struct_size = 8, JIT_INVALID_ARGUMENT, "jit_quantize_operands_init");
    CASE(p.m = 0, JIT_INVALID_SHAPE, "m=0");
    CASE(p.k = (int64_t)1 << 31, JIT_INVALID_SHAPE, "2^31");
    CASE(p.k = 520, JIT_MISALIGNED, "k=520 must be a multiple of 16");
    CASE(p.lda = 520, JIT_INVALID_ARGUMENT, "lda=520");
    CASE(p.ldd = 100, JIT_INVALID_ARGUMENT, "ldd=100");
    CASE(p.lda = 532, JIT_MISALIGNED, "lda=532 BF16 elements (a multiple of 8)");
    CASE(p.ldd = 536, JIT_MISALIGNED, "ldd=536 E4M3 elements (a multiple of 16)");
    CASE(o.x = NULL, JIT_INVALID_ARGUMENT, "operand pointer x is NULL");
    CASE(o.q = NULL, JIT_INVALID_ARGUMENT, "operand pointer q is NULL");
    CASE(o.scales = NULL, JIT_INVALID_ARGUMENT, "operand pointer scales is NULL");
    CASE(o.x = g_fake[0] + 8, JIT_MISALIGNED, "x and q must be 16-byte aligned");
    CASE(o.q = g_fake[1] + 4, JIT_MISALIGNED, "x and q must be 16-byte aligned");
    CASE(o.scales = (float *)(g_fake[2] + 2), JIT_MISALIGNED, "scales must be 4-byte aligned");
    CASE(p.scale_type = JIT_SCALE_TYPE_UE8M0, JIT_UNSUPPORTED, "writes f32 scales, not ue8m0");
    CASE(p.ld_sfa = 4, JIT_INVALID_ARGUMENT, "ceil(K/128) = 5 scales per row: ld_sfa=4");
    CASE((p.sfa_layout = JIT_SFA_M_MAJOR, p.ld_sfa = 99), JIT_INVALID_ARGUMENT,
         "M = 100 scales per 128-K group: ld_sfa=99");
    CASE(p.sfa_layout = (jit_sfa_layout_t)2, JIT_INVALID_ARGUMENT, "sfa_layout 2");
    CASE(p.ld_sfa = -1, JIT_INVALID_ARGUMENT, "ld_sfa=-1");
#undef CASE
    quant_call(&p, &o);
    expect(jit_quantize_fp8_1x128(g_ctx, NULL, &o, NULL), JIT_INVALID_ARGUMENT, "NULL");
    expect(jit_quantize_fp8_1x128(g_ctx, &p, NULL, NULL), JIT_INVALID_ARGUMENT, "NULL");
    cr_expect_eq(jit_quantize_fp8_1x128(NULL, &p, &o, NULL), JIT_INVALID_ARGUMENT);
    cr_expect(strstr(jit_last_error(NULL), "context is NULL"), "%s", jit_last_error(NULL));
}

/* A problem with the quantizer's op is not a GEMM: jit_gemm says which call to make. */
Test(quant_api, jit_gemm_refuses_the_op, .init = setup_ctx, .fini = teardown_ctx) {
    jit_problem_t p;
    jit_problem_init(&p);
    p.epilogue = JIT_EPILOGUE_QUANTIZE_FP8_1X128;
    p.m = 100;
    p.n = 256;
    p.k = 528;
    jit_operands_t o;
    jit_operands_init(&o);
    o.a = o.b = o.d = g_fake[0];
    o.scale_a = o.scale_b = g_fake[1];
    expect(jit_gemm(g_ctx, &p, &o, NULL), JIT_INVALID_ARGUMENT, "call jit_quantize_fp8_1x128");
}

static char *inspect(const jit_problem_t *p, jit_inspect_what_t what) {
    char *out = NULL;
    jit_status_t st = jit_inspect(g_ctx, p, what, &out);
    cr_assert_eq(st, JIT_OK, "%s: %s", jit_status_name(st), jit_last_error(g_ctx));
    return out;
}

/* The key names the kernel, not the fields the op ignores; M matters only through its band. */
Test(quant_api, one_key_per_k_and_band, .init = setup_ctx, .fini = teardown_ctx) {
    jit_problem_t a, b;
    jit_quantize_operands_t o;
    quant_call(&a, &o);
    quant_call(&b, &o);
    b.n = 7168;
    b.a_dtype = JIT_DTYPE_E5M2;
    b.out_dtype = JIT_DTYPE_F32;
    b.scale_mode = JIT_SCALE_ROW;
    b.alpha = 3.0f;
    b.m = 120; /* the same band as 100 */
    b.sfa_layout = JIT_SFA_M_MAJOR;
    b.ld_sfa = 128;
    char *ka = inspect(&a, JIT_INSPECT_KEY), *kb = inspect(&b, JIT_INSPECT_KEY);
    cr_expect_str_eq(ka, kb);
    b.k = 544;
    char *kc = inspect(&b, JIT_INSPECT_KEY);
    cr_expect_str_neq(ka, kc, "another K is another kernel");
    cr_expect(strstr(ka, "family=quant_fp8_1x128"), "%s", ka);
    jit_free(ka);
    jit_free(kb);
    jit_free(kc);
    char *plan = inspect(&a, JIT_INSPECT_PLAN);
    json_t *j = json_loads(plan, 0, NULL);
    cr_assert_not_null(j);
    cr_expect_str_eq(json_string_value(json_object_get(j, "kernel")), "jitgemm_quant_fp8_1x128");
    json_decref(j);
    jit_free(plan);
    char *src = inspect(&a, JIT_INSPECT_SOURCE);
    cr_expect(strstr(src, "K = 528"), "%s", src);
    jit_free(src);
}

static void count(const jit_prewarm_event_t *e, void *user) {
    int *n = user;
    n[e->result]++;
}

/* Prewarmed once per key, then found in the cache: a serving host that never compiles can be
 * given the quantizer's kernels like any other. Needs NVRTC. */
Test(quant_api, prewarm_compiles_once_then_hits, .init = setup_ctx, .fini = teardown_ctx,
     .timeout = 300) {
    jit_problem_t ps[3];
    jit_quantize_operands_t o;
    for (int i = 0; i < 3; i++)
        quant_call(&ps[i], &o);
    ps[1].m = 90;   /* the same band: the same kernel */
    ps[2].m = 5000; /* another band */
    int n[3] = {0, 0, 0};
    jit_status_t st = jit_prewarm(g_ctx, ps, 3, 2, count, n);
    if (st == JIT_TOOLCHAIN_NOT_FOUND)
        cr_skip("no NVRTC: %s", jit_last_error(g_ctx));
    cr_assert_eq(st, JIT_OK, "%s", jit_last_error(g_ctx));
    cr_expect_eq(n[JIT_PREWARM_COMPILED] + n[JIT_PREWARM_CACHED], 3);
    jit_stats_t stats;
    jit_stats_init(&stats);
    cr_assert_eq(jit_context_stats(g_ctx, &stats), JIT_OK);
    cr_expect_eq(stats.compiles, 2, "two bands, two kernels");
    memset(n, 0, sizeof(n));
    cr_assert_eq(jit_prewarm(g_ctx, ps, 3, 2, count, n), JIT_OK, "%s", jit_last_error(g_ctx));
    cr_expect_eq(n[JIT_PREWARM_CACHED], 3);
    char *entry = inspect(&ps[0], JIT_INSPECT_ENTRY);
    json_t *j = json_loads(entry, 0, NULL);
    cr_assert_not_null(j, "%s", entry);
    cr_expect_eq(json_integer_value(json_object_get(j, "spill_stores")), 0);
    json_decref(j);
    jit_free(entry);
}

Test(quant_api, cli_inspect) {
    char *dir = jt_mkdtemp("quant-cli");
    cli_result_t r = CLI(dir, NULL, "inspect", "--op", "quantize_fp8_1x128", "--k", "1552",
                         "--tokens", "300", "--arch", "sm_90a", "--plan", "--json");
    cr_assert_eq(r.rc, 0, "%s", r.err);
    json_t *j = json_loads(r.out, 0, NULL);
    cr_assert_not_null(j, "%s", r.out);
    cr_expect_str_eq(json_string_value(json_object_get(j, "family")), "quant_fp8_1x128");
    cr_expect_eq(json_integer_value(json_object_get(json_object_get(j, "quantize"), "groups")), 13);
    json_decref(j);
    cli_free(&r);
    r = CLI(dir, NULL, "inspect", "--op", "quantize_fp8_1x128", "--n", "4096", "--k", "1552",
            "--tokens", "300", "--arch", "sm_90a");
    CLI_EXPECT(r, 2, "--n describes a GEMM; --op quantize_fp8_1x128 takes --k and --tokens");
    cli_free(&r);
    r = CLI(dir, NULL, "inspect", "--op", "quantize_fp8_1x128", "--tokens", "300", "--arch",
            "sm_90a");
    CLI_EXPECT(r, 2, "missing required option --k");
    cli_free(&r);
    r = CLI(dir, NULL, "inspect", "--op", "quantize_fp8_1x128", "--k", "1000", "--tokens", "3",
            "--arch", "sm_90a");
    CLI_EXPECT(r, 1, "must be a multiple of 16");
    cli_free(&r);
    /* `run`: on a GPU it checks the kernel bit for bit and passes; without one it says so. */
    const char *why = NULL;
    const int gpu = jt_gpu_available(&why);
    r = CLI(dir, NULL, "run", "--op", "quantize_fp8_1x128", "--k", "1552", "--tokens", "300",
            "--iters", "2");
    if (gpu) {
        cr_expect_eq(r.rc, 0, "%s%s", r.out, r.err);
        cr_expect(strstr(r.out, "mismatches\nPASS"), "%s", r.out);
    } else {
        CLI_EXPECT(r, 1, "no GPU");
    }
    cli_free(&r);
    jt_rmtree(dir);
    free(dir);
}
