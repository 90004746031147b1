/*
 * The block-scaled wgmma family (sm_90a, 128x128 scales): what it takes and refuses, its cost
 * model (every candidate weighed, the choice, a forced candidate), the generated text, NVRTC +
 * nvJitLink compiles of every band, epilogue and tile with no spills, no wgmma serialisation
 * warnings and no .global data, and the launch (tensor maps, parameter block, grid) against a
 * recording driver. The kernel itself runs in tests/test_gpu_blockscaled.c.
 */
#include <criterion/criterion.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "compile.h"
#include "families.h"
#include "family.h"
#include "fp8_block_wgmma/bsw.h"
#include "key.h"
#include "plan.h"
#include "ptx_check.h"
#include "toolchain.h"

static const jit_epilogue_t k_epilogues[] = {JIT_EPILOGUE_LINEAR, JIT_EPILOGUE_LINEAR_ADD,
                                             JIT_EPILOGUE_LINEAR_SWIGLU};

static jit__gemm_spec_t spec_of(int64_t n, int64_t k, jit_epilogue_t ep) {
    jit__gemm_spec_t s = {.n = n,
                          .k = k,
                          .a = JIT_DTYPE_E4M3,
                          .b = JIT_DTYPE_E4M3,
                          .out = JIT_DTYPE_BF16,
                          .scales = JIT_SCALE_BLOCK_1X128_128X128,
                          .epilogue = ep,
                          .scale_type = JIT_SCALE_TYPE_F32};
    return s;
}

static jit_status_t try_spec(const char *arch, int band, const jit__gemm_spec_t *s, jit__plan_t *p,
                             jit__diag_t *d) {
    const jit__arch_profile_t *prof = jit__arch_find(arch);
    cr_assert_not_null(prof);
    jit__diag_init(d);
    return jit__plan_make(s, band, 132, prof, p, d);
}

static void make_plan(int band, int64_t n, int64_t k, jit_epilogue_t ep, jit__plan_t *p) {
    jit__diag_t d;
    jit__gemm_spec_t s = spec_of(n, k, ep);
    cr_assert_eq(try_spec("sm_90a", band, &s, p, &d), JIT_OK, "%s", d.msg);
    cr_assert_eq(p->family, &jit__family_fp8_block_wgmma, "band %d planned by %s", band,
                 p->family->name);
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

Test(fp8_block_wgmma, takes_f32_128x128_e4m3_on_sm_90a_only) {
    jit__plan_t p;
    make_plan(4, 7168, 2048, JIT_EPILOGUE_LINEAR, &p);
    jit__gemm_spec_t s = spec_of(7168, 2048, JIT_EPILOGUE_LINEAR);
    expect_refusal("sm_100a", &s, JIT_UNSUPPORTED_ARCH, "sm_90a only, not on sm_100a");
    expect_refusal("sm_120a", &s, JIT_UNSUPPORTED_ARCH, "sm_90a only");
    s.scale_type = JIT_SCALE_TYPE_UE8M0;
    expect_refusal("sm_90a", &s, JIT_UNSUPPORTED, "stored as ue8m0 are not supported on sm_90a");
    s = spec_of(7168, 2048, JIT_EPILOGUE_LINEAR);
    s.b = JIT_DTYPE_E5M2;
    expect_refusal("sm_90a", &s, JIT_UNSUPPORTED, "e4m3 x e4m3");
    s = spec_of(7168, 2048, JIT_EPILOGUE_LINEAR);
    s.out = JIT_DTYPE_F32;
    expect_refusal("sm_90a", &s, JIT_UNSUPPORTED, "bf16 output");
    s = spec_of(7168, 2056 - 4, JIT_EPILOGUE_LINEAR);
    expect_refusal("sm_90a", &s, JIT_MISALIGNED, "multiple of 16");
    /* The default scale type is f32: the same plan. */
    s = spec_of(7168, 2048, JIT_EPILOGUE_LINEAR);
    s.scale_type = JIT_SCALE_TYPE_DEFAULT;
    jit__plan_t q;
    jit__diag_t d;
    cr_assert_eq(try_spec("sm_90a", 4, &s, &q, &d), JIT_OK, "%s", d.msg);
    cr_expect_eq(q.family, &jit__family_fp8_block_wgmma);
    cr_expect_eq(q.tile_n, p.tile_n);
    /* Row-scaled problems stay with the row-scaled family. */
    s.scales = JIT_SCALE_ROW;
    cr_assert_eq(try_spec("sm_90a", 4, &s, &q, &d), JIT_OK, "%s", d.msg);
    cr_expect_eq(q.family, &jit__family_fp8_wgmma);
}

/* Every tile is weighed as one CTA and as a cluster of two (and in the decode bands every
 * decode configuration: 12 in band 0, BW 128 and 256 with six splits, 6 in band 1, BW 128), the
 * choice is the candidate with the least mean slowdown over the band's sample M, and the plan
 * is that candidate. */
Test(fp8_block_wgmma, the_model_picks_its_least_mean_slowdown) {
    for (int band = 0; band < JIT_TOKEN_BANDS; band++) {
        jit__plan_t p;
        make_plan(band, 7168, 16384, JIT_EPILOGUE_LINEAR, &p);
        const jit__bsw_plan_t *bp = jit__bsw_cof(&p);
        const int want = 10 + (band == 0 ? 12 : band == 1 ? 6 : 0);
        cr_assert_eq(p.n_candidates, want, "band %d: %d candidates", band, p.n_candidates);
        cr_assert(p.chosen >= 0 && p.chosen < p.n_candidates);
        const jit__plan_candidate_t *w = &p.candidates[p.chosen];
        double factor = 0;
        const char *at = strstr(p.reason, "within ");
        cr_assert(at && sscanf(at, "within %lfx", &factor) == 1, "%s", p.reason);
        for (int i = 0; i < p.n_candidates; i++)
            cr_expect_geq(p.candidates[i].modelled_us * factor * 1.001, w->modelled_us,
                          "band %d candidate %d is faster than the choice by more than %.2f", band,
                          i, factor);
        cr_expect_eq(w->tile_m, bp->bm);
        cr_expect_eq(w->tile_n, bp->bn);
        cr_expect_eq(p.tile_n, bp->bn);
        cr_expect_eq(bp->cluster, strcmp(w->route, "block_tma_mc2") == 0 ? 2 : 1);
        if (bp->route == JIT_BSW_DECODE) {
            cr_expect(strncmp(w->route, "block_decode_s", 14) == 0, "%s", w->route);
            cr_expect_eq(p.smem_bytes, jit__bsw_decode_smem_bytes(bp->bn, bp->bm, bp->stages,
                                                                  bp->ksub, bp->split));
        } else {
            cr_expect_eq(p.smem_bytes, jit__bsw_smem_bytes(bp->bm, bp->bn, bp->stages,
                                                           JIT_EPILOGUE_LINEAR, bp->store_warps));
            cr_expect_eq(bp->store_warps, 1);
        }
        cr_expect_leq(p.smem_bytes, JIT_BSW_SMEM_LIMIT);
    }
    /* SwiGLU keeps gate/up pairs in one thread only for BN a multiple of 64; linear_add's
     * consumers store (the residual is added before the one rounding). */
    jit__plan_t p;
    make_plan(3, 27648, 5120, JIT_EPILOGUE_LINEAR_SWIGLU, &p);
    cr_expect_eq(p.n_candidates, 6);
    for (int i = 0; i < p.n_candidates; i++)
        cr_expect_eq(p.candidates[i].tile_n % 64, 0);
    /* M = 1 is served: by the decode route, the model's choice at the decode shapes. */
    make_plan(0, 7168, 16384, JIT_EPILOGUE_LINEAR, &p);
    cr_expect_eq(jit__bsw_cof(&p)->route, JIT_BSW_DECODE);
    make_plan(5, 5120, 5120, JIT_EPILOGUE_LINEAR_ADD, &p);
    cr_expect_eq(jit__bsw_cof(&p)->store_warps, 0);
}

Test(fp8_block_wgmma, plan_json_lists_the_candidates_and_the_choice) {
    jit__plan_t p;
    make_plan(5, 7168, 16384, JIT_EPILOGUE_LINEAR, &p);
    char *text = jit__plan_to_json(&p);
    json_error_t err;
    json_t *o = json_loads(text, 0, &err);
    cr_assert_not_null(o, "%s", err.text);
    json_t *cands = json_object_get(o, "candidates");
    cr_assert(json_is_array(cands) && json_array_size(cands) == (size_t)p.n_candidates);
    cr_expect_eq(json_integer_value(json_object_get(json_object_get(o, "chosen"), "index")),
                 p.chosen);
    cr_expect_str_eq(json_string_value(json_object_get(o, "family")), "fp8_block_wgmma");
    cr_expect_str_eq(json_string_value(json_object_get(json_object_get(o, "spec"), "scales")),
                     "128x128");
    json_t *bw = json_object_get(o, "block_wgmma");
    cr_assert(json_is_object(bw));
    cr_expect_str_eq(json_string_value(json_object_get(bw, "scale_type")), "f32");
    cr_expect_str_eq(json_string_value(json_object_get(bw, "route")), "tiles");
    cr_expect(json_is_boolean(json_object_get(bw, "store_warps")));
    json_decref(o);
    free(text);
}

Test(fp8_block_wgmma, a_forced_candidate_is_taken_and_a_bad_one_refused) {
    setenv("JITGEMM_FORCE_CANDIDATE", "block_tma_mc2:128x96", 1);
    jit__plan_t p;
    make_plan(4, 7168, 16384, JIT_EPILOGUE_LINEAR, &p);
    cr_expect_eq(jit__bsw_cof(&p)->bn, 96);
    cr_expect_eq(jit__bsw_cof(&p)->cluster, 2);
    cr_expect_str_eq(p.candidates[p.chosen].route, "block_tma_mc2");
    setenv("JITGEMM_FORCE_CANDIDATE", "block_tma:128x80", 1);
    jit__gemm_spec_t s = spec_of(7168, 16384, JIT_EPILOGUE_LINEAR);
    jit__diag_t d;
    cr_expect_eq(try_spec("sm_90a", 4, &s, &p, &d), JIT_INVALID_ARGUMENT);
    cr_expect(strstr(d.msg, "matches no candidate"), "%s", d.msg);
    unsetenv("JITGEMM_FORCE_CANDIDATE");
}

static char *sm90_source(const jit__plan_t *p, jit__key_t *k) {
    jit__diag_t d;
    jit__diag_init(&d);
    cr_assert_eq(jit__key_make(p, "sm_90a", 0, k, &d), JIT_OK, "%s", d.msg);
    char *src = NULL;
    cr_assert_eq(jit__generate(p, k, &src, &d), JIT_OK, "%s", d.msg);
    return src;
}

Test(fp8_block_wgmma, generated_text_instantiates_the_kernel_template) {
    jit__plan_t p;
    make_plan(5, 7168, 16384, JIT_EPILOGUE_LINEAR_ADD, &p);
    jit__key_t k;
    char *src = sm90_source(&p, &k);
    cr_expect(strstr(k.text, "family=fp8_block_wgmma") && strstr(k.text, " scale_type=f32 ") &&
                  strstr(k.text, " scales=128x128 "),
              "%s", k.text);
    const char *inc = strstr(src, "#include");
    cr_expect(inc && strncmp(inc, "#include \"fp8_block_wgmma/device/kernel.cuh\"\n", 45) == 0);
    cr_expect(inc && !strstr(inc + 1, "#include"), "one include");
    cr_expect(strstr(src, k.text), "the key is quoted");
    cr_expect(strstr(src, "EPILOGUE = BSW_EPI_LINEAR_ADD,"), "epilogue in the plan struct");
    cr_expect(strstr(src, "STORE_WARPS = 0"), "linear_add: the consumers store");
    cr_expect(strstr(src, "static_assert(__INTADDR__(&((BswParams *)0)->sfa_stride_m) == 328"));
    cr_expect(strstr(src, "__launch_bounds__(Kernel::THREADS, 1)\njitgemm_fp8_block_wgmma(const "
                          "__grid_constant__ BswParams p)"));
    cr_expect_null(strstr(src, "asm"), "no inline PTX in the generated text");
    free(src);
    /* The decode route: its own kernel, and its split and blocks per stage in the key. */
    setenv("JITGEMM_FORCE_CANDIDATE", "block_decode_s6:16x128", 1);
    make_plan(0, 7168, 16384, JIT_EPILOGUE_LINEAR_SWIGLU, &p);
    unsetenv("JITGEMM_FORCE_CANDIDATE");
    src = sm90_source(&p, &k);
    cr_expect(strstr(k.text, " route=decode ") && strstr(k.text, " ksub=2 split=6"), "%s", k.text);
    cr_expect(strstr(src, "#include \"fp8_block_wgmma/device/decode_kernel.cuh\"\n"));
    cr_expect(strstr(src, "BW = 128, TOK = 16,") && strstr(src, "SPLIT = 6, KSUB = 2,"));
    cr_expect(strstr(src, "typedef BswDecodeKernel<Plan> Kernel;"));
    free(src);
}

static const jit__toolchain_t *auto_toolchain(void) {
    const jit__toolchain_t *tc = NULL;
    jit__diag_t d;
    jit__diag_init(&d);
    if (jit__toolchain_get(NULL, &tc, &d) != JIT_OK)
        cr_skip("no NVRTC/nvJitLink found: %s", d.msg);
    return tc;
}

/* NVRTC + nvJitLink for sm_90a: the kernel compiles with no spill, no ptxas warning (C75xx
 * says the wgmma pipeline was serialised), no .global data, and the instructions it is built
 * on in its PTX. */
static void compile_and_check(const jit__toolchain_t *tc, const jit__plan_t *p, const char *what) {
    jit__key_t k;
    char *src = sm90_source(p, &k);
    jit__diag_t d;
    jit__diag_init(&d);
    jit__compiled_t c;
    jit_status_t st = jit__compile(tc, src, jit__plan_kernel_name(p), "sm_90a",
                                   JIT__COMPILE_CUBIN_AND_PTX, &c, &d);
    cr_assert_eq(st, JIT_OK, "%s: %s\n%s", what, d.msg, d.log ? d.log : "");
    cr_expect_eq(c.spill_stores, 0, "%s spills:\n%s", what, c.log);
    cr_expect_eq(c.spill_loads, 0, "%s spills:\n%s", what, c.log);
    cr_expect_null(strstr(c.log, "C75"), "%s:\n%s", what, c.log);
    cr_expect_null(strstr(c.log, "warning"), "%s warns:\n%s", what, c.log);
    cr_expect(strstr(c.ptx, "wgmma.mma_async.sync.aligned.m64n"), "%s", what);
    cr_expect(strstr(c.ptx, ".e4m3.e4m3"), "%s", what);
    cr_expect(strstr(c.ptx, "cp.async.bulk.tensor.2d"), "%s", what);
    /* The tile route's producer copies the scales into the stage; the decode route's threads
     * load theirs into registers. */
    if (jit__bsw_cof(p)->route == JIT_BSW_TILES)
        cr_expect(strstr(c.ptx, "cp.async.mbarrier.arrive.noinc"), "%s: the scale copies", what);
    else
        cr_expect(strstr(c.ptx, "ld.global.nc.f32"), "%s: the scale loads", what);
    cr_expect(strstr(c.ptx, "setmaxnreg.inc.sync.aligned.u32"), "%s", what);
    cr_expect(strstr(c.ptx, ".entry jitgemm_fp8_block_wgmma"), "%s", what);
    const char *global = ptx_global_data_line(c.ptx);
    cr_expect_null(global, "%s: .global data: %.60s", what, global ? global : "");
    jit__compiled_free(&c);
    jit__diag_clear(&d);
    free(src);
}

/* Every band's plan for every epilogue, on a ragged shape (N = 1000: the last tile partial,
 * K = 1552: a 16-byte K tail). */
Test(fp8_block_wgmma, every_band_and_epilogue_compiles_for_sm_90a, .timeout = 900) {
    const jit__toolchain_t *tc = auto_toolchain();
    for (int band = 0; band < JIT_TOKEN_BANDS; band++)
        for (size_t e = 0; e < 3; e++) {
            jit__plan_t p;
            make_plan(band, 1000, 1552, k_epilogues[e], &p);
            char what[64];
            snprintf(what, sizeof(what), "band %d %s", band, jit_epilogue_name(k_epilogues[e]));
            compile_and_check(tc, &p, what);
        }
}

/* Every candidate of a band, forced: the ones the model does not pick today must still build,
 * since JITGEMM_FORCE_CANDIDATE and the sweep reach them. */
static void compile_every_candidate(int band, int64_t n, int64_t k, int stride) {
    const jit__toolchain_t *tc = auto_toolchain();
    jit__plan_t all;
    make_plan(band, n, k, JIT_EPILOGUE_LINEAR, &all);
    for (int i = 0; i < all.n_candidates; i += stride) {
        char force[48];
        snprintf(force, sizeof(force), "%s:%dx%d", all.candidates[i].route,
                 all.candidates[i].tile_m, all.candidates[i].tile_n);
        /* SwiGLU takes tiles of whole 64-column multiples only. */
        jit_epilogue_t ep = k_epilogues[i % 3];
        if (ep == JIT_EPILOGUE_LINEAR_SWIGLU && strncmp(force, "block_tma", 9) == 0 &&
            all.candidates[i].tile_n % 64)
            ep = JIT_EPILOGUE_LINEAR_ADD;
        setenv("JITGEMM_FORCE_CANDIDATE", force, 1);
        jit__plan_t p;
        make_plan(band, n, k, ep, &p);
        unsetenv("JITGEMM_FORCE_CANDIDATE");
        char what[96];
        snprintf(what, sizeof(what), "%s %s", force, jit_epilogue_name(ep));
        compile_and_check(tc, &p, what);
    }
}

/* Each tile width, one CTA and clusters of two (swiglu skips the widths it cannot take). */
Test(fp8_block_wgmma, every_candidate_tile_compiles_for_sm_90a, .timeout = 900) {
    compile_every_candidate(5, 7168, 2048, 1);
}

/* The decode configurations of both decode bands (every other one: the splits differ only in
 * a constant), every epilogue. */
Test(fp8_block_wgmma, decode_candidates_compile_for_sm_90a, .timeout = 900) {
    compile_every_candidate(0, 7168, 16384, 2);
    compile_every_candidate(1, 7168, 16384, 2);
}

/* ---- the launch, against a recording driver ------------------------------------------------ */

typedef struct recorded_map {
    cuuint64_t dims[2], stride;
    cuuint32_t box[2];
    CUtensorMapSwizzle swizzle;
    CUtensorMapDataType type;
} recorded_map_t;

static recorded_map_t g_maps[4];
static int g_n_maps;
static CUlaunchConfig g_cfg;
static unsigned g_cluster_x;
static jit__bsw_params_t g_params;

static CUresult fake_encode(CUtensorMap *map, CUtensorMapDataType dt, cuuint32_t rank, void *addr,
                            const cuuint64_t *dims, const cuuint64_t *strides,
                            const cuuint32_t *box, const cuuint32_t *elem, CUtensorMapInterleave il,
                            CUtensorMapSwizzle sw, CUtensorMapL2promotion l2,
                            CUtensorMapFloatOOBfill oob) {
    (void)addr, (void)elem, (void)il, (void)l2, (void)oob;
    cr_assert_eq(rank, 2u);
    cr_assert_lt(g_n_maps, 4);
    recorded_map_t *r = &g_maps[g_n_maps++];
    r->dims[0] = dims[0];
    r->dims[1] = dims[1];
    r->stride = strides[0];
    r->box[0] = box[0];
    r->box[1] = box[1];
    r->swizzle = sw;
    r->type = dt;
    memset(map, 0, sizeof(*map));
    return CUDA_SUCCESS;
}

static CUresult fake_launch(const CUlaunchConfig *cfg, CUfunction f, void **args, void **extra) {
    (void)f, (void)extra;
    g_cfg = *cfg;
    g_cluster_x = 1;
    for (unsigned i = 0; i < cfg->numAttrs; i++)
        if (cfg->attrs[i].id == CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION)
            g_cluster_x = cfg->attrs[i].value.clusterDim.x;
    memcpy(&g_params, args[0], sizeof(g_params));
    return CUDA_SUCCESS;
}

static CUresult fake_max_clusters(int *n, CUfunction f, const CUlaunchConfig *cfg) {
    (void)f;
    cr_expect_eq(cfg->attrs[0].id, CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION);
    *n = 60;
    return CUDA_SUCCESS;
}

/* The maps of A and B (B's box one cluster slice), the parameter block from the launch
 * arguments (the resolved SFA strides, alpha, every pointer), and a persistent grid of whole
 * clusters, at most one CTA per SM and at most the resident clusters. */
static void check_launch(const char *force, int bn, int cluster, int64_t m) {
    setenv("JITGEMM_FORCE_CANDIDATE", force, 1);
    jit__plan_t p;
    make_plan(4, 7168, 2048, JIT_EPILOGUE_LINEAR_ADD, &p);
    unsetenv("JITGEMM_FORCE_CANDIDATE");
    const jit__bsw_plan_t *bp = jit__bsw_cof(&p);
    cr_assert_eq(bp->bn, bn);
    cr_assert_eq(bp->cluster, cluster);
    jit__driver_t drv;
    memset(&drv, 0, sizeof(drv));
    drv.cuTensorMapEncodeTiled = fake_encode;
    drv.cuLaunchKernelEx = fake_launch;
    drv.cuOccupancyMaxActiveClusters = fake_max_clusters;
    void *state = NULL;
    jit__diag_t d;
    jit__diag_init(&d);
    cr_assert_eq(p.family->prepare(&drv, NULL, &p, &state, &d), JIT_OK, "%s", d.msg);
    jit_problem_t prob;
    jit_problem_init(&prob);
    prob.m = m;
    prob.n = 7168;
    prob.k = 2048;
    prob.scale_mode = JIT_SCALE_BLOCK_1X128_128X128;
    prob.epilogue = JIT_EPILOGUE_LINEAR_ADD;
    prob.alpha = 0.375f;
    jit_operands_t ops;
    jit_operands_init(&ops);
    static _Alignas(16) unsigned char fake[6][64];
    ops.a = fake[0], ops.b = fake[1], ops.scale_a = fake[2], ops.scale_b = fake[3];
    ops.residual = fake[4], ops.d = fake[5];
    jit__launch_args_t args = {.problem = &prob,
                               .operands = &ops,
                               .lda = 2064,
                               .ldb = 2048,
                               .ldd = 7170,
                               .ldr = 7176,
                               .sfa_stride_m = 1,
                               .sfa_stride_k = m + 3};
    g_n_maps = 0;
    cr_assert_eq(p.family->launch(&drv, NULL, &p, state, &args, &d), JIT_OK, "%s", d.msg);
    cr_assert_eq(g_n_maps, 2);
    cr_expect_eq(g_maps[0].type, CU_TENSOR_MAP_DATA_TYPE_UINT8);
    cr_expect_eq(g_maps[0].box[0], 128u);
    cr_expect_eq(g_maps[0].box[1], 128u, "A box rows");
    cr_expect_eq(g_maps[0].dims[0], 2048u);
    cr_expect_eq(g_maps[0].dims[1], (cuuint64_t)m);
    cr_expect_eq(g_maps[0].stride, 2064u);
    cr_expect_eq(g_maps[1].box[1], (cuuint32_t)(bn / cluster), "B box rows: one cluster slice");
    cr_expect_eq(g_maps[1].dims[1], 7168u);
    cr_expect_eq(g_maps[1].swizzle, CU_TENSOR_MAP_SWIZZLE_128B);
    cr_expect_eq(g_params.sfa, (const float *)fake[2]);
    cr_expect_eq(g_params.sfb, (const float *)fake[3]);
    cr_expect_eq(g_params.residual, (const uint16_t *)fake[4]);
    cr_expect_eq(g_params.d, (uint16_t *)fake[5]);
    cr_expect_eq(g_params.m, m);
    cr_expect_eq(g_params.ldd, 7170);
    cr_expect_eq(g_params.ldr, 7176);
    cr_expect_eq(g_params.sfa_stride_m, 1);
    cr_expect_eq(g_params.sfa_stride_k, m + 3);
    cr_expect_eq(g_params.alpha, 0.375f);
    cr_expect_eq(g_cluster_x, (unsigned)cluster);
    cr_expect_eq(g_cfg.blockDimX, 384u);
    cr_expect_eq(g_cfg.sharedMemBytes, p.smem_bytes);
    int64_t units = ((m + 127) / 128 + cluster - 1) / cluster * ((7168 + bn - 1) / bn);
    int64_t clusters = cluster > 1 ? 60 : 132;
    cr_expect_eq(g_cfg.gridDimX, (unsigned)(units < clusters ? units : clusters) * cluster);
    p.family->release(&drv, state);
}

/* The decode route: A's box is the token tile, B's the weight tile, one CTA per unit, and with
 * split K the workspace and counters the launch state allocated (the counters zeroed) in the
 * parameter block; launches that share them are ordered by an event. */
static CUdeviceptr g_next_alloc = 0x10000;
static int g_memsets, g_waits, g_records;
static CUresult fake_alloc(CUdeviceptr *p, size_t bytes) {
    *p = g_next_alloc;
    g_next_alloc += (bytes + 255) / 256 * 256;
    return CUDA_SUCCESS;
}
static CUresult fake_free(CUdeviceptr p) {
    (void)p;
    return CUDA_SUCCESS;
}
static CUresult fake_memset(CUdeviceptr p, unsigned char v, size_t n) {
    (void)p, (void)n;
    cr_expect_eq(v, 0);
    g_memsets++;
    return CUDA_SUCCESS;
}
static CUresult fake_event(CUevent *e, unsigned f) {
    (void)f;
    *e = (CUevent)(uintptr_t)8;
    return CUDA_SUCCESS;
}
static CUresult fake_event_destroy(CUevent e) {
    (void)e;
    return CUDA_SUCCESS;
}
static CUresult fake_wait(CUstream s, CUevent e, unsigned f) {
    (void)s, (void)e, (void)f;
    g_waits++;
    return CUDA_SUCCESS;
}
static CUresult fake_record(CUevent e, CUstream s) {
    (void)e, (void)s;
    g_records++;
    return CUDA_SUCCESS;
}

static void check_decode_launch(const char *force, int tok, int bw, int split, int64_t m) {
    setenv("JITGEMM_FORCE_CANDIDATE", force, 1);
    jit__plan_t p;
    make_plan(jit__token_band(m), 7168, 2048, JIT_EPILOGUE_LINEAR, &p);
    unsetenv("JITGEMM_FORCE_CANDIDATE");
    const jit__bsw_plan_t *bp = jit__bsw_cof(&p);
    cr_assert_eq(bp->route, JIT_BSW_DECODE);
    cr_assert(bp->bm == tok && bp->bn == bw && bp->split == split);
    jit__driver_t drv;
    memset(&drv, 0, sizeof(drv));
    drv.cuTensorMapEncodeTiled = fake_encode;
    drv.cuLaunchKernelEx = fake_launch;
    drv.cuMemAlloc = fake_alloc;
    drv.cuMemFree = fake_free;
    drv.cuMemsetD8 = fake_memset;
    drv.cuEventCreate = fake_event;
    drv.cuEventDestroy = fake_event_destroy;
    drv.cuStreamWaitEvent = fake_wait;
    drv.cuEventRecord = fake_record;
    g_memsets = g_waits = g_records = 0;
    void *state = NULL;
    jit__diag_t d;
    jit__diag_init(&d);
    cr_assert_eq(p.family->prepare(&drv, NULL, &p, &state, &d), JIT_OK, "%s", d.msg);
    cr_expect_eq(g_memsets, split > 1 ? 1 : 0, "the counters are zeroed once");
    jit_problem_t prob;
    jit_problem_init(&prob);
    prob.m = m;
    prob.n = 7168;
    prob.k = 2048;
    prob.scale_mode = JIT_SCALE_BLOCK_1X128_128X128;
    jit_operands_t ops;
    jit_operands_init(&ops);
    static _Alignas(16) unsigned char fake[64];
    ops.a = ops.b = ops.scale_a = ops.scale_b = ops.d = fake;
    jit__launch_args_t args = {.problem = &prob,
                               .operands = &ops,
                               .lda = 2048,
                               .ldb = 2048,
                               .ldd = 7168,
                               .ldr = 7168,
                               .sfa_stride_m = 16,
                               .sfa_stride_k = 1};
    for (int launch = 0; launch < 2; launch++) {
        g_n_maps = 0;
        cr_assert_eq(p.family->launch(&drv, NULL, &p, state, &args, &d), JIT_OK, "%s", d.msg);
        cr_assert_eq(g_n_maps, launch == 0 ? 2 : 0, "maps encoded once per operand");
    }
    cr_expect_eq(g_maps[0].box[1], (cuuint32_t)tok, "A's box: the token tile");
    cr_expect_eq(g_maps[1].box[1], (cuuint32_t)bw, "B's box: the weight tile");
    const int64_t units = (m + tok - 1) / tok * ((7168 + bw - 1) / bw) * split;
    cr_expect_eq(g_cfg.gridDimX, (unsigned)units, "one CTA per unit");
    cr_expect_eq(g_cluster_x, 1u);
    cr_expect_eq(g_params.workspace != NULL, split > 1);
    cr_expect_eq(g_params.counters != NULL, split > 1);
    cr_expect_eq(g_params.sfa_stride_m, 16);
    cr_expect_eq(g_records, split > 1 ? 2 : 0, "each launch records its event");
    cr_expect_eq(g_waits, split > 1 ? 1 : 0, "the second launch waits for the first");
    p.family->release(&drv, state);
}

Test(fp8_block_wgmma, decode_launch_matches_the_plan) {
    check_decode_launch("block_decode_s6:16x128", 16, 128, 6, 3);
    check_decode_launch("block_decode_s1:16x256", 16, 256, 1, 16);
    check_decode_launch("block_decode_s3:64x128", 64, 128, 3, 40);
}

Test(fp8_block_wgmma, launch_maps_params_and_grid_match_the_plan) {
    check_launch("block_tma:128x160", 160, 1, 4096);
    check_launch("block_tma_mc2:128x128", 128, 2, 4096);
    check_launch("block_tma_mc2:128x96", 96, 2, 129);
    check_launch("block_tma:128x64", 64, 1, 1);
}
