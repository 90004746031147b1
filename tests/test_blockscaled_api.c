/*
 * The 128x128 block-scaled format in the public API, without a GPU: its words, the SFA layouts
 * and their leading dimension checked before anything is planned or compiled, the scale type
 * refused where it does not apply, and the launch key that tells the scale types apart.
 */
#include <criterion/criterion.h>
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "context.h"
#include "jitgemm.h"
#include "plan.h"
#include "support.h"

static char *g_dir;
static jit_context_t *g_ctx;

static void setup_ctx(void) {
    g_dir = jt_mkdtemp("bs-api");
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

/* Fake device pointers, 4-byte aligned but not 16: validation never dereferences them, and
 * 128x128 scales need no more than 4 (the threads read them one float at a time). */
static _Alignas(16) unsigned char g_fake[4][64];

static void block_call(jit_problem_t *p, jit_operands_t *o) {
    jit_problem_init(p);
    p->m = 100;
    p->n = 256;
    p->k = 528; /* 5 groups of 128 K, the last one partial */
    p->scale_mode = JIT_SCALE_BLOCK_1X128_128X128;
    jit_operands_init(o);
    o->a = g_fake[0];
    o->b = g_fake[1];
    o->scale_a = g_fake[2] + 4;
    o->scale_b = g_fake[3] + 4;
    o->d = g_fake[2] + 16;
}

static void expect(jit_status_t got, jit_status_t want, const char *needle) {
    cr_assert_eq(got, want, "got %s, want %s: %s", jit_status_name(got), jit_status_name(want),
                 jit_last_error(g_ctx));
    cr_assert(strstr(jit_last_error(g_ctx), needle), "message '%s' lacks '%s'",
              jit_last_error(g_ctx), needle);
}

Test(blockscaled_api, words_parse_and_print) {
    jit_scale_mode_t sm;
    cr_assert_eq(jit_scale_mode_parse("128x128", &sm), JIT_OK);
    cr_assert_eq(sm, JIT_SCALE_BLOCK_1X128_128X128);
    cr_assert_str_eq(jit_scale_mode_name(JIT_SCALE_BLOCK_1X128_128X128), "128x128");
    jit_sfa_layout_t l = JIT_SFA_K_MAJOR;
    cr_assert_eq(jit_sfa_layout_parse("m-major", &l), JIT_OK);
    cr_assert_eq(l, JIT_SFA_M_MAJOR);
    cr_assert_eq(jit_sfa_layout_parse("k-major", &l), JIT_OK);
    cr_assert_eq(l, JIT_SFA_K_MAJOR);
    cr_assert_eq(jit_sfa_layout_parse("row-major", &l), JIT_INVALID_ARGUMENT);
    cr_assert_str_eq(jit_sfa_layout_name(JIT_SFA_M_MAJOR), "m-major");
    jit_scale_type_t t = JIT_SCALE_TYPE_DEFAULT;
    cr_assert_eq(jit_scale_type_parse("ue8m0", &t), JIT_OK);
    cr_assert_eq(t, JIT_SCALE_TYPE_UE8M0);
    cr_assert_eq(jit_scale_type_parse("f32", &t), JIT_OK);
    cr_assert_eq(t, JIT_SCALE_TYPE_F32);
    cr_assert_eq(jit_scale_type_parse("fp32", &t), JIT_INVALID_ARGUMENT);
    cr_assert_str_eq(jit_scale_type_name(JIT_SCALE_TYPE_DEFAULT), "default");
    /* The defaults: k-major, packed, the mode's own scale type. */
    jit_problem_t p;
    jit_problem_init(&p);
    cr_assert_eq(p.sfa_layout, JIT_SFA_K_MAJOR);
    cr_assert_eq(p.ld_sfa, 0);
    cr_assert_eq(p.scale_type, JIT_SCALE_TYPE_DEFAULT);
}

/* Each bad layout, leading dimension or stray field fails validation with its own message, and
 * nothing reaches the compiler. */
Test(blockscaled_api, sfa_layout_and_leading_dimension_are_checked, .init = setup_ctx,
     .fini = teardown_ctx) {
    jit_problem_t p;
    jit_operands_t o;
    block_call(&p, &o);
    p.ld_sfa = 4; /* k-major needs ceil(528 / 128) = 5 */
    expect(jit_gemm(g_ctx, &p, &o, NULL), JIT_INVALID_ARGUMENT, "ceil(K/128) = 5");
    block_call(&p, &o);
    p.sfa_layout = JIT_SFA_M_MAJOR;
    p.ld_sfa = 99; /* m-major needs M = 100 */
    expect(jit_gemm(g_ctx, &p, &o, NULL), JIT_INVALID_ARGUMENT, "M = 100");
    block_call(&p, &o);
    p.ld_sfa = -1;
    expect(jit_gemm(g_ctx, &p, &o, NULL), JIT_INVALID_ARGUMENT, "ld_sfa=-1");
    block_call(&p, &o);
    p.sfa_layout = (jit_sfa_layout_t)7;
    expect(jit_gemm(g_ctx, &p, &o, NULL), JIT_INVALID_ARGUMENT, "sfa_layout 7");
    block_call(&p, &o);
    o.scale_a = g_fake[2] + 2;
    expect(jit_gemm(g_ctx, &p, &o, NULL), JIT_MISALIGNED, "4-byte aligned");
    block_call(&p, &o);
    p.k = 520;
    expect(jit_gemm(g_ctx, &p, &o, NULL), JIT_MISALIGNED, "multiples of 16");
    /* The fields belong to 128x128: row scales with an SFA layout are a mistake to report. */
    block_call(&p, &o);
    p.scale_mode = JIT_SCALE_ROW;
    p.ld_sfa = 5;
    expect(jit_gemm(g_ctx, &p, &o, NULL), JIT_INVALID_ARGUMENT, "128x128 scales only");
    block_call(&p, &o);
    p.scale_mode = JIT_SCALE_ROW;
    p.sfa_layout = JIT_SFA_M_MAJOR;
    expect(jit_gemm(g_ctx, &p, &o, NULL), JIT_INVALID_ARGUMENT, "128x128 scales only");
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

/* A scale type goes with 128x128 only; planning refuses it with another mode. */
Test(blockscaled_api, scale_type_belongs_to_128x128, .init = setup_ctx, .fini = teardown_ctx) {
    jit_problem_t p;
    jit_problem_init(&p);
    p.m = 16;
    p.n = 256;
    p.k = 512;
    p.scale_type = JIT_SCALE_TYPE_F32;
    char *out = NULL;
    expect(jit_inspect(g_ctx, &p, JIT_INSPECT_PLAN, &out), JIT_INVALID_ARGUMENT,
           "does not go with row scales");
    cr_assert_null(out);
    p.scale_mode = JIT_SCALE_BLOCK_1X128_128X128;
    p.scale_type = (jit_scale_type_t)9;
    expect(jit_inspect(g_ctx, &p, JIT_INSPECT_PLAN, &out), JIT_INVALID_ARGUMENT, "scale_type 9");
    cr_assert_null(out);
}

/* DEFAULT and F32 are one kernel for 128x128 (one launch key); UE8M0 is another. */
Test(blockscaled_api, launch_key_tells_scale_types_apart) {
    jit_problem_t p;
    block_call(&p, &(jit_operands_t){0});
    jit__launch_key_t def, f32, ue8m0;
    jit__launch_key_make(&p, NULL, &def);
    p.scale_type = JIT_SCALE_TYPE_F32;
    jit__launch_key_make(&p, NULL, &f32);
    p.scale_type = JIT_SCALE_TYPE_UE8M0;
    jit__launch_key_make(&p, NULL, &ue8m0);
    cr_expect_eq(memcmp(&def, &f32, sizeof(def)), 0);
    cr_expect_neq(memcmp(&def, &ue8m0, sizeof(def)), 0);
    jit__gemm_spec_t s;
    cr_assert_eq(jit__spec_from_problem(&p, &s, NULL), JIT_OK);
    cr_expect_eq(s.scale_type, JIT_SCALE_TYPE_UE8M0);
    p.scale_type = JIT_SCALE_TYPE_DEFAULT;
    cr_assert_eq(jit__spec_from_problem(&p, &s, NULL), JIT_OK);
    cr_expect_eq(s.scale_type, JIT_SCALE_TYPE_F32);
}
