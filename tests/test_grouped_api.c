/*
 * jit_gemm_grouped without a GPU: every malformed call fails with its own status and a message
 * before anything is planned, compiled or launched (the calls below would need a GPU past
 * validation, so a check that let one through would fail with JIT_NO_GPU or a CUDA error
 * instead); jit_gemm refuses grouped problems and still takes callers' shorter (older) structs;
 * the layout names; and the planning of grouped problems through jit_inspect: the grouped
 * family for sm_90a, a refusal that says why elsewhere, the band from the expected rows per
 * expert, and groups and layout in the key.
 */
#include <criterion/criterion.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "jitgemm.h"
#include "support.h"

static char *g_dir;
static jit_context_t *g_ctx;

static void setup_ctx(void) {
    g_dir = jt_mkdtemp("grouped-api");
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
static _Alignas(16) unsigned char g_fake[6][64];

static void valid_call(jit_problem_t *p, jit_operands_t *o) {
    jit_problem_init(p);
    p->m = 1000;
    p->n = 256;
    p->k = 512;
    p->groups = 8;
    p->layout = JIT_GROUPS_CONTIGUOUS;
    jit_operands_init(o);
    o->a = g_fake[0];
    o->b = g_fake[1];
    o->scale_a = g_fake[2];
    o->scale_b = g_fake[3];
    o->d = g_fake[4];
    o->group_offsets = (const int32_t *)(const void *)g_fake[5];
}

static void expect(jit_status_t got, jit_status_t want, const char *needle) {
    cr_assert_eq(got, want, "got %s, want %s: %s", jit_status_name(got), jit_status_name(want),
                 jit_last_error(g_ctx));
    cr_assert(strstr(jit_last_error(g_ctx), needle), "message '%s' lacks '%s'",
              jit_last_error(g_ctx), needle);
}

#define CALL(p, o) jit_gemm_grouped(g_ctx, &(p), &(o), NULL)

Test(grouped_api, rejects_bad_problems_before_compiling, .init = setup_ctx, .fini = teardown_ctx) {
    jit_problem_t p;
    jit_operands_t o;
    valid_call(&p, &o);
    expect(jit_gemm_grouped(g_ctx, NULL, &o, NULL), JIT_INVALID_ARGUMENT, "NULL");
    p.struct_size = 8;
    expect(CALL(p, o), JIT_INVALID_ARGUMENT, "jit_problem_init");
    valid_call(&p, &o);
    o.struct_size = (uint32_t)offsetof(jit_operands_t, group_offsets);
    expect(CALL(p, o), JIT_INVALID_ARGUMENT, "jit_operands_init");
    valid_call(&p, &o);
    p.groups = 0;
    expect(CALL(p, o), JIT_INVALID_SHAPE, "groups=0 must be in 1..1024");
    p.groups = JIT_MAX_GROUPS + 1;
    expect(CALL(p, o), JIT_INVALID_SHAPE, "1..1024");
    valid_call(&p, &o);
    p.layout = JIT_GROUPS_NONE;
    expect(CALL(p, o), JIT_INVALID_ARGUMENT, "JIT_GROUPS_CONTIGUOUS or JIT_GROUPS_MASKED");
    valid_call(&p, &o);
    p.epilogue = JIT_EPILOGUE_LINEAR_ADD;
    expect(CALL(p, o), JIT_UNSUPPORTED, "linear and linear_swiglu, not linear_add");
    valid_call(&p, &o);
    p.a_dtype = JIT_DTYPE_E5M2;
    expect(CALL(p, o), JIT_UNSUPPORTED, "e4m3 x e4m3 with row scales");
    valid_call(&p, &o);
    p.group_flags = 1;
    expect(CALL(p, o), JIT_INVALID_ARGUMENT, "group_flags");
    valid_call(&p, &o);
    p.layout = JIT_GROUPS_MASKED;
    o.group_counts = o.group_offsets;
    o.group_offsets = NULL;
    p.m = 1001;
    expect(CALL(p, o), JIT_INVALID_SHAPE, "masked layout: m=1001 must be groups x max_M");
    valid_call(&p, &o);
    p.expected_m = -1;
    expect(CALL(p, o), JIT_INVALID_SHAPE, "expected_m=-1");
    valid_call(&p, &o);
    p.epilogue = JIT_EPILOGUE_LINEAR_SWIGLU;
    p.n = 255;
    expect(CALL(p, o), JIT_INVALID_SHAPE, "even n");
    valid_call(&p, &o);
    p.m = 0;
    expect(CALL(p, o), JIT_INVALID_SHAPE, "must be positive");
    valid_call(&p, &o);
    p.n = ((int64_t)1 << 28);
    expect(CALL(p, o), JIT_INVALID_SHAPE, "groups x n must be below 2^31");
    valid_call(&p, &o);
    p.lda = 520;
    expect(CALL(p, o), JIT_MISALIGNED, "multiples of 16 bytes");
    valid_call(&p, &o);
    p.ldd = 100;
    expect(CALL(p, o), JIT_INVALID_ARGUMENT, "smaller than its row");
}

Test(grouped_api, rejects_bad_operands_before_compiling, .init = setup_ctx, .fini = teardown_ctx) {
    jit_problem_t p;
    jit_operands_t o;
    valid_call(&p, &o);
    o.group_offsets = NULL;
    expect(CALL(p, o), JIT_INVALID_ARGUMENT, "contiguous layout needs operands.group_offsets");
    valid_call(&p, &o);
    p.layout = JIT_GROUPS_MASKED;
    expect(CALL(p, o), JIT_INVALID_ARGUMENT, "masked layout needs operands.group_counts");
    valid_call(&p, &o);
    o.group_counts = o.group_offsets;
    expect(CALL(p, o), JIT_INVALID_ARGUMENT, "contiguous layout takes no operands.group_counts");
    valid_call(&p, &o);
    o.gather_index = o.group_offsets;
    expect(CALL(p, o), JIT_INVALID_ARGUMENT, "gather_index is reserved");
    valid_call(&p, &o);
    o.residual = g_fake[0];
    expect(CALL(p, o), JIT_INVALID_ARGUMENT, "residual must be NULL");
    valid_call(&p, &o);
    o.scale_b = NULL;
    expect(CALL(p, o), JIT_INVALID_ARGUMENT, "scale_b is NULL");
    valid_call(&p, &o);
    o.b = g_fake[1] + 8;
    expect(CALL(p, o), JIT_MISALIGNED, "16-byte aligned");
    valid_call(&p, &o);
    o.group_offsets = (const int32_t *)(const void *)(g_fake[5] + 2);
    expect(CALL(p, o), JIT_MISALIGNED, "offsets or counts must be 4-byte aligned");
    cr_assert_eq(jit_gemm_grouped(NULL, &p, &o, NULL), JIT_INVALID_ARGUMENT);
}

/* A grouped problem is not a dense one: jit_gemm says where it goes. A caller built against
 * the header before the grouped fields (a shorter struct) still reaches jit_gemm's own checks
 * rather than a refusal of its size. */
Test(grouped_api, jit_gemm_refuses_grouped_and_takes_older_structs, .init = setup_ctx,
     .fini = teardown_ctx) {
    jit_problem_t p;
    jit_operands_t o;
    valid_call(&p, &o);
    o.group_offsets = NULL;
    expect(jit_gemm(g_ctx, &p, &o, NULL), JIT_INVALID_ARGUMENT, "goes to jit_gemm_grouped");
    valid_call(&p, &o);
    p.groups = 0;
    p.layout = JIT_GROUPS_NONE;
    p.k = 0; /* so that the call stops in validation, whatever the machine */
    o.group_offsets = NULL;
    p.struct_size = (uint32_t)offsetof(jit_problem_t, groups);
    o.struct_size = (uint32_t)offsetof(jit_operands_t, group_offsets);
    expect(jit_gemm(g_ctx, &p, &o, NULL), JIT_INVALID_SHAPE, "k=0");
    p.struct_size = (uint32_t)offsetof(jit_problem_t, groups) - 8;
    expect(jit_gemm(g_ctx, &p, &o, NULL), JIT_INVALID_ARGUMENT, "jit_problem_init");
}

Test(grouped_api, layout_names) {
    jit_group_layout_t l;
    cr_assert_eq(jit_group_layout_parse("masked", &l), JIT_OK);
    cr_assert_eq(l, JIT_GROUPS_MASKED);
    cr_assert_eq(jit_group_layout_parse("contiguous", &l), JIT_OK);
    cr_assert_eq(l, JIT_GROUPS_CONTIGUOUS);
    cr_assert_str_eq(jit_group_layout_name(JIT_GROUPS_MASKED), "masked");
    cr_assert_eq(jit_group_layout_parse("ragged", &l), JIT_INVALID_ARGUMENT);
}

static char *inspect(jit_context_t *ctx, const jit_problem_t *p, jit_inspect_what_t what) {
    char *out = NULL;
    jit_status_t st = jit_inspect(ctx, p, what, &out);
    cr_assert_eq(st, JIT_OK, "%s", jit_last_error(ctx));
    return out;
}

/* The band comes from the rows per expert (expected_m, else m / groups), groups and layout are
 * in the key, and a hint in the same band shares the kernel. */
Test(grouped_api, planning_by_rows_per_expert, .init = setup_ctx, .fini = teardown_ctx) {
    jit_problem_t p;
    jit_operands_t o;
    valid_call(&p, &o);
    p.m = 8 * 4096;
    char *plan = inspect(g_ctx, &p, JIT_INSPECT_PLAN);
    cr_expect(strstr(plan, "\"family\": \"fp8_grouped_wgmma\""), "%s", plan);
    cr_expect(strstr(plan, "\"index\": 5"), "4096 rows per expert: the open band\n%s", plan);
    jit_free(plan);
    char *key = inspect(g_ctx, &p, JIT_INSPECT_KEY);
    cr_expect(strstr(key, " groups=8 layout=contiguous "), "%s", key);
    p.expected_m = 8;
    char *key8 = inspect(g_ctx, &p, JIT_INSPECT_KEY);
    cr_expect(strstr(key8, " band=0 "), "%s", key8);
    p.expected_m = 12;
    char *key12 = inspect(g_ctx, &p, JIT_INSPECT_KEY);
    cr_expect_str_eq(key8, key12, "expected 8 and 12 rows share band 0's kernel");
    p.layout = JIT_GROUPS_MASKED;
    char *masked = inspect(g_ctx, &p, JIT_INSPECT_KEY);
    cr_expect(strstr(masked, " layout=masked "), "%s", masked);
    jit_free(key);
    jit_free(key8);
    jit_free(key12);
    jit_free(masked);
}

Test(grouped_api, other_archs_refuse_with_a_reason) {
    char *dir = jt_mkdtemp("grouped-api-arch");
    jit_context_options_t opt;
    jit_context_options_init(&opt);
    opt.cache_dir = dir;
    opt.arch = "sm_100a";
    jit_context_t *ctx = NULL;
    cr_assert_eq(jit_context_create(&opt, &ctx), JIT_OK);
    jit_problem_t p;
    jit_operands_t o;
    valid_call(&p, &o);
    char *out = NULL;
    cr_expect_eq(jit_inspect(ctx, &p, JIT_INSPECT_PLAN, &out), JIT_UNSUPPORTED_ARCH);
    cr_expect(strstr(jit_last_error(ctx), "sm_90a only, not for sm_100a"), "%s",
              jit_last_error(ctx));
    jit_context_destroy(ctx);
    jt_rmtree(dir);
    free(dir);
}
