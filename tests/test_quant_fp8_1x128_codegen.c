/*
 * The activation quantizer family: the spec its op makes (the formats fixed, whatever the
 * problem's other fields say), what it takes and refuses, that no GEMM family takes its op, the
 * plan on every arch and band, the key and the plan's JSON, the generated text, NVRTC +
 * nvJitLink compiles for every arch the toolchain targets (no spill, no .global data, no .ftz,
 * the instructions the recipe is built on), and the launch (parameter block and grid) against a
 * recording driver. The kernel itself runs in tests/test_gpu_quant_fp8_1x128.c.
 */
#include <criterion/criterion.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "compile.h"
#include "families.h"
#include "family.h"
#include "key.h"
#include "plan.h"
#include "ptx_check.h"
#include "quant_fp8_1x128/quant.h"
#include "toolchain.h"

static const char *const k_archs[] = {"sm_90a", "sm_100a", "sm_103a", "sm_107a", "sm_120a"};
#define N_ARCHS (sizeof(k_archs) / sizeof(k_archs[0]))

/* The spec of a quantize problem, through jit__spec_from_problem as every entry point makes it. */
static jit__gemm_spec_t quant_spec(int64_t k) {
    jit_problem_t p;
    jit_problem_init(&p);
    p.epilogue = JIT_EPILOGUE_QUANTIZE_FP8_1X128;
    p.m = 100;
    p.k = k;
    jit__gemm_spec_t s;
    jit__diag_t d;
    jit__diag_init(&d);
    cr_assert_eq(jit__spec_from_problem(&p, &s, &d), JIT_OK, "%s", d.msg);
    return s;
}

static jit_status_t try_spec(const char *arch, int band, const jit__gemm_spec_t *s, jit__plan_t *p,
                             jit__diag_t *d) {
    const jit__arch_profile_t *prof = jit__arch_find(arch);
    cr_assert_not_null(prof);
    jit__diag_init(d);
    return jit__plan_make(s, band, 132, prof, p, d);
}

static void make_plan(const char *arch, int band, int64_t k, jit__plan_t *p) {
    jit__diag_t d;
    jit__gemm_spec_t s = quant_spec(k);
    cr_assert_eq(try_spec(arch, band, &s, p, &d), JIT_OK, "%s: %s", arch, d.msg);
    cr_assert_eq(p->family, &jit__family_quant_fp8_1x128, "%s band %d planned by %s", arch, band,
                 p->family->name);
}

/* The op fixes the formats: a problem left at jit_problem_init's GEMM defaults, or with any n
 * and dtypes, gives the one spec BF16 -> E4M3 with f32 128x128 scales and no B. */
Test(quant_fp8_1x128, the_op_fixes_the_spec) {
    jit_problem_t p;
    jit_problem_init(&p);
    p.epilogue = JIT_EPILOGUE_QUANTIZE_FP8_1X128;
    p.m = 7;
    p.k = 7168;
    p.n = 5120;
    p.a_dtype = JIT_DTYPE_E5M2;
    p.out_dtype = JIT_DTYPE_F32;
    p.scale_mode = JIT_SCALE_ROW;
    jit__gemm_spec_t s;
    jit__diag_t d;
    jit__diag_init(&d);
    cr_assert_eq(jit__spec_from_problem(&p, &s, &d), JIT_OK);
    const jit__gemm_spec_t want = quant_spec(7168);
    cr_expect_eq(s.n, 0);
    cr_expect_eq(s.k, 7168);
    cr_expect_eq(s.a, JIT_DTYPE_BF16);
    cr_expect_eq(s.b, JIT_DTYPE_NONE);
    cr_expect_eq(s.out, JIT_DTYPE_E4M3);
    cr_expect_eq(s.scales, JIT_SCALE_BLOCK_1X128_128X128);
    cr_expect_eq(s.scale_type, JIT_SCALE_TYPE_F32);
    cr_expect_eq(memcmp(&s, &want, sizeof(s)), 0, "the same spec as the defaults give");
    /* n = 0 passes the common checks for this op only. */
    cr_expect_eq(jit__spec_check(&s, 0, 132, &d), JIT_OK, "%s", d.msg);
    jit__gemm_spec_t gemm = s;
    gemm.epilogue = JIT_EPILOGUE_LINEAR;
    cr_expect_eq(jit__spec_check(&gemm, 0, 132, &d), JIT_INVALID_SHAPE);
    jit__diag_clear(&d);
    s.k = 0;
    cr_expect_eq(jit__spec_check(&s, 0, 132, &d), JIT_INVALID_SHAPE);
    cr_expect(strstr(d.msg, "k=0 must be positive"), "%s", d.msg);
    jit__diag_clear(&d);
    cr_expect_str_eq(jit_epilogue_name(JIT_EPILOGUE_QUANTIZE_FP8_1X128), "quantize_fp8_1x128");
    jit_epilogue_t e = JIT_EPILOGUE_NONE;
    cr_expect_eq(jit_epilogue_parse("quantize_fp8_1x128", &e), JIT_OK);
    cr_expect_eq(e, JIT_EPILOGUE_QUANTIZE_FP8_1X128);
}

static void expect_refusal(const char *arch, const jit__gemm_spec_t *s, jit_status_t want,
                           const char *needle) {
    jit__plan_t p;
    jit__diag_t d;
    jit_status_t st = try_spec(arch, 4, s, &p, &d);
    cr_expect_eq(st, want, "%s: got %s: %s", arch, jit_status_name(st), d.msg);
    cr_expect(strstr(d.msg, needle), "%s: message '%s' lacks '%s'", arch, d.msg, needle);
    jit__diag_clear(&d);
}

Test(quant_fp8_1x128, refuses_what_it_cannot_build) {
    jit__gemm_spec_t s = quant_spec(1000);
    expect_refusal("sm_90a", &s, JIT_MISALIGNED, "multiple of 16");
    s = quant_spec(1552);
    s.scale_type = JIT_SCALE_TYPE_UE8M0;
    expect_refusal("sm_90a", &s, JIT_UNSUPPORTED, "writes f32 scales, not ue8m0");
}

/* No GEMM family takes the op, even when JITGEMM_FAMILY names it; and the quantizer takes no
 * GEMM. */
Test(quant_fp8_1x128, gemm_families_never_take_the_op) {
    static const char *const gemms[] = {"fp8_wgmma", "fp8_block_wgmma", "fp8_mma_sync",
                                        "tcgen05_blockscaled"};
    jit__gemm_spec_t s = quant_spec(1552);
    for (size_t i = 0; i < sizeof(gemms) / sizeof(gemms[0]); i++)
        for (size_t a = 0; a < N_ARCHS; a++) {
            setenv("JITGEMM_FAMILY", gemms[i], 1);
            jit__plan_t p;
            jit__diag_t d;
            jit_status_t st = try_spec(k_archs[a], 4, &s, &p, &d);
            unsetenv("JITGEMM_FAMILY");
            cr_expect_neq(st, JIT_OK, "%s planned the quantizer on %s", gemms[i], k_archs[a]);
            jit__diag_clear(&d);
        }
    jit__gemm_spec_t gemm = {.n = 4096,
                             .k = 4096,
                             .a = JIT_DTYPE_E4M3,
                             .b = JIT_DTYPE_E4M3,
                             .out = JIT_DTYPE_BF16,
                             .scales = JIT_SCALE_BLOCK_1X128_128X128,
                             .epilogue = JIT_EPILOGUE_LINEAR,
                             .scale_type = JIT_SCALE_TYPE_F32};
    jit__plan_t p;
    jit__diag_t d;
    cr_assert_eq(try_spec("sm_90a", 4, &gemm, &p, &d), JIT_OK, "%s", d.msg);
    cr_expect_neq(p.family, &jit__family_quant_fp8_1x128);
}

/* One plan everywhere: 256 threads, two groups in flight per half-warp, four CTAs per SM,
 * ceil(K/128) groups, no shared memory. */
Test(quant_fp8_1x128, plans_every_arch_and_band) {
    for (size_t a = 0; a < N_ARCHS; a++)
        for (int band = 0; band < JIT_TOKEN_BANDS; band++) {
            jit__plan_t p;
            make_plan(k_archs[a], band, 1552, &p);
            const jit__quant_plan_t *qp = jit__quant_cof(&p);
            cr_expect_eq(qp->groups, 13, "%s: 1552 = 12 x 128 + 16", k_archs[a]);
            cr_expect_eq(qp->unroll, 2);
            cr_expect_eq(qp->min_blocks, 4);
            cr_expect_eq(p.threads, 256);
            cr_expect_eq(p.tile_k, 128);
            cr_expect_eq(p.smem_bytes, 0u);
            cr_expect_eq(p.token_band, band);
        }
}

Test(quant_fp8_1x128, key_and_plan_json) {
    jit__plan_t p;
    make_plan("sm_90a", 5, 7168, &p);
    jit__key_t k;
    jit__diag_t d;
    jit__diag_init(&d);
    cr_assert_eq(jit__key_make(&p, "sm_90a", 0, &k, &d), JIT_OK, "%s", d.msg);
    static const char *const fields[] = {" family=quant_fp8_1x128 ", " n=0 k=7168 a=bf16 b=none ",
                                         " out=e4m3 scales=128x128 epilogue=quantize_fp8_1x128 ",
                                         " scale_type=f32 unroll=2 min_blocks=4 code="};
    for (size_t i = 0; i < sizeof(fields) / sizeof(fields[0]); i++)
        cr_expect(strstr(k.text, fields[i]), "key lacks '%s': %s", fields[i], k.text);
    char *text = jit__plan_to_json(&p);
    json_error_t err;
    json_t *o = json_loads(text, 0, &err);
    cr_assert_not_null(o, "%s", err.text);
    cr_expect_str_eq(json_string_value(json_object_get(o, "family")), "quant_fp8_1x128");
    json_t *spec = json_object_get(o, "spec");
    cr_expect_str_eq(json_string_value(json_object_get(spec, "epilogue")), "quantize_fp8_1x128");
    cr_expect_str_eq(json_string_value(json_object_get(spec, "a")), "bf16");
    json_t *q = json_object_get(o, "quantize");
    cr_assert(json_is_object(q), "%s", text);
    cr_expect_eq(json_integer_value(json_object_get(q, "groups")), 56);
    cr_expect_eq(json_integer_value(json_object_get(q, "unroll")), 2);
    cr_expect_str_eq(json_string_value(json_object_get(q, "scale_type")), "f32");
    json_t *grid = json_object_get(o, "grid");
    cr_expect_eq(json_integer_value(json_object_get(grid, "max_ctas_per_sm")), 4);
    cr_expect(strstr(json_string_value(json_object_get(grid, "policy")), "grid-stride"));
    json_decref(o);
    free(text);
}

static char *source_for(const jit__plan_t *p, const char *target, jit__key_t *k) {
    jit__diag_t d;
    jit__diag_init(&d);
    cr_assert_eq(jit__key_make(p, target, 0, k, &d), JIT_OK, "%s", d.msg);
    char *src = NULL;
    cr_assert_eq(jit__generate(p, k, &src, &d), JIT_OK, "%s", d.msg);
    return src;
}

Test(quant_fp8_1x128, generated_text_instantiates_the_kernel_template) {
    jit__plan_t p;
    make_plan("sm_90a", 2, 1552, &p);
    jit__key_t k;
    char *src = source_for(&p, "sm_90a", &k);
    const char *inc = strstr(src, "#include");
    cr_expect(inc && strncmp(inc, "#include \"quant_fp8_1x128/device/kernel.cuh\"\n", 45) == 0);
    cr_expect(inc && !strstr(inc + 1, "#include"), "one include");
    cr_expect(strstr(src, k.text), "the key is quoted");
    cr_expect(strstr(src, "enum : int { K = 1552, THREADS = 256, UNROLL = 2, MIN_BLOCKS = 4 };"),
              "%s", src);
    cr_expect(strstr(src, "static_assert(Kernel::GROUPS == 13"));
    cr_expect(strstr(src, "static_assert(__INTADDR__(&((QuantParams *)0)->pow2_scales) == 64"));
    cr_expect(strstr(src, "static_assert(sizeof(QuantParams) == 96"));
    cr_expect(strstr(src, "__launch_bounds__(Plan::THREADS, Plan::MIN_BLOCKS)\n"
                          "jitgemm_quant_fp8_1x128(const QuantParams p)"));
    cr_expect_null(strstr(src, "asm"), "no inline PTX in the generated text");
    free(src);
    /* A plan this generator does not build is refused, not compiled. */
    jit__quant_of(&p)->unroll = 9;
    char *bad = NULL;
    jit__diag_t d;
    jit__diag_init(&d);
    cr_expect_eq(jit__generate(&p, &k, &bad, &d), JIT_PLAN_FAILED);
    cr_expect_null(bad);
    jit__diag_clear(&d);
}

static const jit__toolchain_t *auto_toolchain(void) {
    const jit__toolchain_t *tc = NULL;
    jit__diag_t d;
    jit__diag_init(&d);
    if (jit__toolchain_get(NULL, &tc, &d) != JIT_OK)
        cr_skip("no NVRTC/nvJitLink found: %s", d.msg);
    return tc;
}

/* NVRTC + nvJitLink for `target`: no spill, no warning, no .global data, no flush to zero (the
 * recipe keeps subnormals), and the instructions the recipe names in its PTX. */
static void compile_and_check(const jit__toolchain_t *tc, const jit__plan_t *p, const char *target,
                              const char *what) {
    jit__key_t k;
    char *src = source_for(p, target, &k);
    jit__diag_t d;
    jit__diag_init(&d);
    jit__compiled_t c;
    jit_status_t st =
        jit__compile(tc, src, jit__plan_kernel_name(p), target, JIT__COMPILE_CUBIN_AND_PTX, &c, &d);
    cr_assert_eq(st, JIT_OK, "%s: %s\n%s", what, d.msg, d.log ? d.log : "");
    cr_expect_eq(c.spill_stores, 0, "%s spills:\n%s", what, c.log);
    cr_expect_eq(c.spill_loads, 0, "%s spills:\n%s", what, c.log);
    cr_expect_null(strstr(c.log, "warning"), "%s warns:\n%s", what, c.log);
    static const char *const needed[] = {"cvt.rn.satfinite.e4m3x2.f32",
                                         "div.rn.f32",
                                         "max.f32",
                                         "abs.f32",
                                         "shfl.sync.bfly.b32",
                                         "ld.global.nc.L1::no_allocate.v4.b32",
                                         "st.global.v2.b32",
                                         ".entry jitgemm_quant_fp8_1x128"};
    for (size_t i = 0; i < sizeof(needed) / sizeof(needed[0]); i++)
        cr_expect(strstr(c.ptx, needed[i]), "%s: PTX lacks %s", what, needed[i]);
    cr_expect_null(strstr(c.ptx, ".ftz"), "%s: a flush to zero in the PTX", what);
    const char *global = ptx_global_data_line(c.ptx);
    cr_expect_null(global, "%s: .global data: %.60s", what, global ? global : "");
    jit__compiled_free(&c);
    jit__diag_clear(&d);
    free(src);
}

/* Every arch the toolchain targets natively (sm_107a needs NVRTC 13.4 or later), every band,
 * on K = 1552 (a 16-element last group) and K = 128 (one group). */
Test(quant_fp8_1x128, compiles_for_every_arch, .timeout = 900) {
    const jit__toolchain_t *tc = auto_toolchain();
    int compiled = 0;
    for (size_t a = 0; a < N_ARCHS; a++) {
        const jit__arch_profile_t *prof = jit__arch_find(k_archs[a]);
        if (!jit__toolchain_supports(tc, prof->sm))
            continue;
        for (int band = 0; band < JIT_TOKEN_BANDS; band += 5) {
            jit__plan_t p;
            make_plan(k_archs[a], band, band ? 1552 : 128, &p);
            char what[64];
            snprintf(what, sizeof(what), "%s band %d", k_archs[a], band);
            compile_and_check(tc, &p, prof->native_target, what);
            compiled++;
        }
    }
    cr_expect_geq(compiled, 8, "sm_90a, sm_100a, sm_103a and sm_120a at least");
}

/* ---- the launch, against a recording driver ------------------------------------------------ */

static CUlaunchConfig g_cfg;
static jit__quant_params_t g_params;
static int g_launches;

static CUresult fake_launch(const CUlaunchConfig *cfg, CUfunction f, void **args, void **extra) {
    (void)f, (void)extra;
    g_cfg = *cfg;
    memcpy(&g_params, args[0], sizeof(g_params));
    g_launches++;
    return CUDA_SUCCESS;
}

/* The parameter block from the call (pointers, strides, where the scales go, the rounding), and
 * a grid of one pass over every group, capped at four CTAs per SM. */
static void check_launch(int64_t m, int64_t k, unsigned want_grid) {
    jit__plan_t p;
    make_plan("sm_90a", jit__token_band(m), k, &p);
    jit__driver_t drv;
    memset(&drv, 0, sizeof(drv));
    drv.cuLaunchKernelEx = fake_launch;
    jit_problem_t prob;
    jit_problem_init(&prob);
    prob.epilogue = JIT_EPILOGUE_QUANTIZE_FP8_1X128;
    prob.m = m;
    prob.k = k;
    static _Alignas(16) unsigned char fake[3][64];
    jit_quantize_operands_t ops;
    jit_quantize_operands_init(&ops);
    ops.x = fake[0], ops.q = fake[1], ops.scales = (float *)fake[2];
    ops.pow2_scales = 7;
    jit__launch_args_t args;
    memset(&args, 0, sizeof(args));
    args.problem = &prob;
    args.lda = k + 8;
    args.ldd = k + 16;
    args.sfa_stride_m = 1;
    args.sfa_stride_k = m + 3;
    args.stream = (CUstream)fake;
    jit__diag_t d;
    jit__diag_init(&d);
    g_launches = 0;
    cr_assert_eq(jit__quant_launch(&drv, NULL, &p, &args, &ops, &d), JIT_OK, "%s", d.msg);
    cr_assert_eq(g_launches, 1);
    cr_expect_eq(g_params.x, (const uint16_t *)fake[0]);
    cr_expect_eq(g_params.q, (uint8_t *)fake[1]);
    cr_expect_eq(g_params.sfa, (float *)fake[2]);
    cr_expect_eq(g_params.m, m);
    cr_expect_eq(g_params.ldx, k + 8);
    cr_expect_eq(g_params.ldq, k + 16);
    cr_expect_eq(g_params.sfa_stride_m, 1);
    cr_expect_eq(g_params.sfa_stride_k, m + 3);
    cr_expect_eq(g_params.pow2_scales, 1u, "any nonzero pow2_scales is 1");
    for (int i = 0; i < 7; i++)
        cr_expect_eq(g_params.reserved[i], 0u);
    cr_expect_eq(g_cfg.blockDimX, 256u);
    cr_expect_eq(g_cfg.sharedMemBytes, 0u);
    cr_expect_eq(g_cfg.hStream, (CUstream)fake);
    cr_expect_eq(g_cfg.gridDimX, want_grid, "M=%lld K=%lld: grid %u", (long long)m, (long long)k,
                 g_cfg.gridDimX);
    /* The family table's launch is jit_gemm's, which the quantizer's arguments never reach. */
    cr_expect_eq(p.family->launch(&drv, NULL, &p, NULL, &args, &d), JIT_INVALID_ARGUMENT);
    jit__diag_clear(&d);
}

Test(quant_fp8_1x128, launch_params_and_grid) {
    /* 32 groups per CTA pass (8 warps x 2 halves x 2 in flight). */
    check_launch(1, 1552, 1);      /* 13 groups */
    check_launch(5, 1552, 3);      /* 65 groups */
    check_launch(300, 7168, 525);  /* 16800 groups: 525 passes, under 132 x 4 */
    check_launch(4001, 7168, 528); /* capped at 132 SMs x 4 */
}
