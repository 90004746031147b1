/*
 * The FP8 wgmma family (sm_90a): what it takes and declines, its cost model (candidates, the
 * choice and a forced candidate), the generated text, and NVRTC + nvJitLink compiles of every
 * band and epilogue with no spills, no wgmma serialisation warnings, no .global data and the
 * Hopper instructions in the PTX. The kernel itself runs in tests/test_gpu_fp8.c.
 */
#include <criterion/criterion.h>
#include <jansson.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "compile.h"
#include "families.h"
#include "family.h"
#include "fp8_wgmma/abi.h"
#include "fp8_wgmma/fp8_wgmma.h"
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
                          .scales = JIT_SCALE_ROW,
                          .epilogue = ep};
    return s;
}

static jit_status_t try_plan(const char *arch, int band, int64_t n, int64_t k, jit_epilogue_t ep,
                             jit__plan_t *p, jit__diag_t *d) {
    jit__gemm_spec_t s = spec_of(n, k, ep);
    const jit__arch_profile_t *prof = jit__arch_find(arch);
    cr_assert_not_null(prof);
    jit__diag_init(d);
    return jit__plan_make(&s, band, 132, prof, p, d);
}

static void make_plan(int band, int64_t n, int64_t k, jit_epilogue_t ep, jit__plan_t *p) {
    jit__diag_t d;
    cr_assert_eq(try_plan("sm_90a", band, n, k, ep, p, &d), JIT_OK, "%s", d.msg);
    cr_assert_eq(p->family, &jit__family_fp8_wgmma, "band %d planned by %s", band, p->family->name);
}

/* try_plan and make_plan with the environment variable `var` set to `value` (NULL: unset)
 * while the problem is planned: the family's comparison switches. */
static jit_status_t try_plan_with(const char *var, const char *value, const char *arch, int band,
                                  int64_t n, int64_t k, jit_epilogue_t ep, jit__plan_t *p,
                                  jit__diag_t *d) {
    if (value)
        setenv(var, value, 1);
    jit_status_t st = try_plan(arch, band, n, k, ep, p, d);
    unsetenv(var);
    return st;
}

static void make_plan_with(const char *var, const char *value, int band, int64_t n, int64_t k,
                           jit_epilogue_t ep, jit__plan_t *p) {
    if (value)
        setenv(var, value, 1);
    make_plan(band, n, k, ep, p);
    unsetenv(var);
}

Test(fp8_wgmma, takes_row_scaled_fp8_on_sm_90a_only) {
    jit__plan_t p;
    jit__diag_t d;
    cr_assert_eq(try_plan("sm_90a", 4, 5120, 5120, JIT_EPILOGUE_LINEAR, &p, &d), JIT_OK);
    cr_expect_eq(p.family, &jit__family_fp8_wgmma);
    cr_assert_eq(try_plan("sm_100a", 4, 5120, 5120, JIT_EPILOGUE_LINEAR, &p, &d), JIT_OK);
    cr_expect_eq(p.family, &jit__family_fp8_mma_sync, "sm_100a has no wgmma");
    cr_expect_eq(try_plan("sm_90a", 4, 5120, 5128 - 4, JIT_EPILOGUE_LINEAR, &p, &d),
                 JIT_MISALIGNED);
    cr_expect(strstr(d.msg, "multiple of 16"), "%s", d.msg);
}

/* Every candidate is weighed, the chosen one is the one with the least mean slowdown over the
 * band's sample M (and at the band's model M no candidate is faster by more than its worst
 * slowdown, which the reason states), and the plan is that candidate; promotion limits BN to
 * 192. */
Test(fp8_wgmma, the_model_picks_its_least_mean_slowdown) {
    for (int band = 0; band < JIT_TOKEN_BANDS; band++) {
        jit__plan_t p;
        make_plan(band, 5120, 17408, JIT_EPILOGUE_LINEAR, &p);
        const jit__wgmma_plan_t *wp = jit__wgmma_cof(&p);
        cr_assert_geq(p.n_candidates, 4, "band %d: %d candidates", band, p.n_candidates);
        cr_assert(p.chosen >= 0 && p.chosen < p.n_candidates);
        const jit__plan_candidate_t *w = &p.candidates[p.chosen];
        double factor = 0;
        const char *at = strstr(p.reason, "within ");
        cr_assert(at && sscanf(at, "within %lfx", &factor) == 1, "%s", p.reason);
        cr_expect_geq(factor, 1.0);
        for (int i = 0; i < p.n_candidates; i++)
            cr_expect_geq(p.candidates[i].modelled_us * factor * 1.001, w->modelled_us,
                          "band %d candidate %d is faster than the choice by more than %.2f", band,
                          i, factor);
        cr_expect_eq(w->tile_m, wp->bm);
        cr_expect_eq(w->tile_n, wp->bn);
        cr_expect_eq(p.tile_n, wp->bn);
        cr_expect_eq(wp->promote, wp->route == JIT_WGMMA_DECODE ? 1 : 3);
        cr_expect_leq(wp->bn, 192);
        if (wp->route == JIT_WGMMA_DECODE)
            cr_expect_eq(p.smem_bytes, jit__wgmma_decode_smem_bytes(wp->bn, wp->bm, wp->stages,
                                                                     wp->ksub, wp->split));
        else
            cr_expect_eq(p.smem_bytes,
                         jit__wgmma_smem_bytes(wp->bm, wp->bn, wp->stages, JIT_EPILOGUE_LINEAR,
                                               wp->store_warps));
        cr_expect_leq(p.smem_bytes, 232448u);
        cr_expect(strstr(p.reason, "least mean slowdown over M in {"), "%s", p.reason);
        /* The open band is weighed where prefill batches are, not at its one-row-past edge. */
        if (band == JIT_TOKEN_BANDS - 1)
            cr_expect(strstr(p.reason, "over M in {2048, 4096, 8192}:"), "%s", p.reason);
    }
    /* SwiGLU keeps gate/up pairs in one thread only for BN a multiple of 64. */
    jit__plan_t p;
    make_plan(3, 27648, 5120, JIT_EPILOGUE_LINEAR_SWIGLU, &p);
    for (int i = 0; i < p.n_candidates; i++)
        if (strcmp(p.candidates[i].route, "wgmma_tma") == 0)
            cr_expect_eq(p.candidates[i].tile_n % 64, 0);
}

Test(fp8_wgmma, plan_json_lists_the_candidates_and_the_choice) {
    jit__plan_t p;
    make_plan(3, 5120, 17408, JIT_EPILOGUE_LINEAR, &p);
    char *text = jit__plan_to_json(&p);
    json_error_t err;
    json_t *o = json_loads(text, 0, &err);
    cr_assert_not_null(o, "%s", err.text);
    json_t *cands = json_object_get(o, "candidates"), *chosen = json_object_get(o, "chosen");
    cr_assert(json_is_array(cands) && json_array_size(cands) == (size_t)p.n_candidates);
    cr_assert(json_is_object(chosen));
    json_t *c0 = json_array_get(cands, 0);
    cr_expect(json_is_string(json_object_get(c0, "route")));
    cr_expect(json_is_number(json_object_get(c0, "modelled_us")));
    cr_expect(json_is_integer(json_object_get(json_object_get(c0, "tile"), "n")));
    cr_expect_eq(json_integer_value(json_object_get(chosen, "index")), p.chosen);
    cr_expect(json_is_string(json_object_get(chosen, "reason")));
    cr_expect_eq(json_integer_value(json_object_get(json_object_get(o, "wgmma"), "promote")), 3);
    cr_expect_str_eq(json_string_value(json_object_get(o, "family")), "fp8_wgmma");
    json_decref(o);
    free(text);
}

Test(fp8_wgmma, a_forced_candidate_is_taken_and_a_bad_one_refused) {
    setenv("JITGEMM_FORCE_CANDIDATE", "wgmma_tma:128x64", 1);
    jit__plan_t p;
    make_plan(4, 5120, 17408, JIT_EPILOGUE_LINEAR, &p);
    cr_expect_eq(jit__wgmma_cof(&p)->bn, 64);
    cr_expect_eq(p.tile_n, 64);
    cr_expect_str_eq(p.candidates[p.chosen].route, "wgmma_tma");
    /* On sm_90a the mma.sync kernel is weighed only when JITGEMM_FAMILY names its family (it
     * lost every cell of the H200 sweep); then forcing its candidate plans with that family. */
    setenv("JITGEMM_FORCE_CANDIDATE", "mma_sync", 1);
    jit__diag_t d;
    cr_expect_eq(try_plan("sm_90a", 4, 5120, 17408, JIT_EPILOGUE_LINEAR, &p, &d),
                 JIT_INVALID_ARGUMENT);
    setenv("JITGEMM_FAMILY", "fp8_mma_sync", 1);
    cr_assert_eq(try_plan("sm_90a", 4, 5120, 17408, JIT_EPILOGUE_LINEAR, &p, &d), JIT_OK, "%s",
                 d.msg);
    unsetenv("JITGEMM_FAMILY");
    cr_expect_eq(p.family, &jit__family_fp8_mma_sync);
    setenv("JITGEMM_FORCE_CANDIDATE", "wgmma_tma:96x96", 1);
    cr_expect_eq(try_plan("sm_90a", 4, 5120, 17408, JIT_EPILOGUE_LINEAR, &p, &d),
                 JIT_INVALID_ARGUMENT);
    cr_expect(strstr(d.msg, "matches no candidate"), "%s", d.msg);
    unsetenv("JITGEMM_FORCE_CANDIDATE");
}

/* The key and the generated source of a plan for sm_90a; generation must succeed. */
static char *sm90_source(const jit__plan_t *p, jit__key_t *k) {
    jit__key_make(p, "sm_90a", 0, k, NULL);
    char *src = NULL;
    jit__diag_t d;
    jit__diag_init(&d);
    cr_assert_eq(jit__generate(p, k, &src, &d), JIT_OK, "%s", d.msg);
    return src;
}

Test(fp8_wgmma, generated_text_instantiates_the_kernel_template) {
    jit__plan_t p;
    make_plan(4, 5120, 17408, JIT_EPILOGUE_LINEAR_ADD, &p);
    jit__key_t k;
    char *src = sm90_source(&p, &k);
    cr_expect(strstr(k.text, "family=fp8_wgmma") && strstr(k.text, " promote=3 "), "%s", k.text);
    const char *inc = strstr(src, "#include");
    cr_expect(inc && strncmp(inc, "#include \"fp8_wgmma/device/kernel.cuh\"\n", 39) == 0);
    cr_expect(inc && !strstr(inc + 1, "#include"), "one include");
    cr_expect(strstr(src, k.text), "the key is quoted");
    cr_expect(strstr(src, "FP8W_EPI_LINEAR_ADD, 3,"), "epilogue and promotion in the typedef");
    cr_expect(strstr(src, "__launch_bounds__(Kernel::THREADS, 1)\njitgemm_fp8_wgmma(const "
                          "__grid_constant__ Fp8WgmmaParams p)"));
    cr_expect_null(strstr(src, "asm"), "no inline PTX in the generated text");
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

/* Every band's plan and epilogue, with JITGEMM_WGMMA_PROMOTE=`mode` (NULL: unset) and so the
 * tile kernel's promotion `promote`, compiled by NVRTC + nvJitLink. */
static void compile_every_band(const char *mode, int promote) {
    const jit__toolchain_t *tc = auto_toolchain();
    for (int band = 0; band < JIT_TOKEN_BANDS; band++) {
        for (size_t e = 0; e < 3; e++) {
            jit__plan_t p;
            make_plan_with("JITGEMM_WGMMA_PROMOTE", mode, band, 1176, 1552, k_epilogues[e], &p);
            const jit__wgmma_plan_t *wp = jit__wgmma_cof(&p);
            if (wp->route == JIT_WGMMA_TILES)
                cr_expect_eq(wp->promote, promote, "band %d", band);
            jit__key_t k;
            char *src = sm90_source(&p, &k);
            if (wp->route == JIT_WGMMA_TILES) {
                char field[16];
                snprintf(field, sizeof field, " promote=%d ", promote);
                cr_expect(strstr(k.text, field), "%s", k.text); /* a different kernel, key */
            }
            jit__diag_t d;
            jit__diag_init(&d);
            jit__compiled_t c;
            jit_status_t st = jit__compile(tc, src, jit__plan_kernel_name(&p), "sm_90a",
                                           JIT__COMPILE_CUBIN_AND_PTX, &c, &d);
            cr_assert_eq(st, JIT_OK, "band %d %s: %s\n%s", band, jit_epilogue_name(k_epilogues[e]),
                         d.msg, d.log ? d.log : "");
            const char *what = jit_epilogue_name(k_epilogues[e]);
            cr_expect_eq(c.spill_stores, 0, "band %d %s spills:\n%s", band, what, c.log);
            cr_expect_eq(c.spill_loads, 0, "band %d %s spills:\n%s", band, what, c.log);
            /* ptxas' C7510-C7515 say the wgmma pipeline was serialised. */
            cr_expect_null(strstr(c.log, "C75"), "band %d %s:\n%s", band, what, c.log);
            cr_expect_null(strstr(c.log, "warning"), "band %d %s warns:\n%s", band, what, c.log);
            cr_expect(strstr(c.ptx, "wgmma.mma_async.sync.aligned.m64n"));
            cr_expect(strstr(c.ptx, "cp.async.bulk.tensor.2d"));
            cr_expect(strstr(c.ptx, "setmaxnreg.inc.sync.aligned.u32"));
            cr_expect(strstr(c.ptx, ".entry jitgemm_fp8_wgmma"));
            const char *global = ptx_global_data_line(c.ptx);
            cr_expect_null(global, "band %d %s: .global data: %.60s", band, what,
                           global ? global : "");
            jit__compiled_free(&c);
            jit__diag_clear(&d);
            free(src);
        }
    }
}

/* The default promotion, in column halves, reads one half's partial while the other half's
 * wgmmas run; in the kernel's rolled K-block loop ptxas accepts that only while nothing stays
 * in flight past the block (C7514 otherwise). */
Test(fp8_wgmma, compiles_for_sm_90a_without_spills_or_serialised_wgmma, .timeout = 600) {
    compile_every_band(NULL, 3);
}

/* The comparison form, the whole block after one wait, and the default asked for by name. */
Test(fp8_wgmma, promotion_whole_compiles_without_serialised_wgmma, .timeout = 900) {
    compile_every_band("whole", 1);
    compile_every_band("halves", 3);
}

/* The unpromoted form (PROMOTE 0: the whole K in wgmma's accumulators, one batch kept in
 * flight) is not planned today, but it is the fast-accumulation form an opt-in mode will build:
 * it must keep compiling without spills and without ptxas serialising its wgmmas. */
Test(fp8_wgmma, unpromoted_form_compiles_without_serialised_wgmma, .timeout = 600) {
    const jit__toolchain_t *tc = auto_toolchain();
    for (size_t e = 0; e < 3; e++) {
        jit__plan_t p;
        make_plan(5, 5120, 5120, k_epilogues[e], &p);
        cr_assert_eq(jit__wgmma_cof(&p)->route, JIT_WGMMA_TILES);
        jit__wgmma_of(&p)->promote = 0;
        jit__key_t k;
        char *src = sm90_source(&p, &k);
        cr_expect(strstr(k.text, " promote=0 "), "%s", k.text);
        cr_expect(strstr(src, "wgmma accumulation"), "the header says how it accumulates");
        const char *what = jit_epilogue_name(k_epilogues[e]);
        jit__diag_t d;
        jit__diag_init(&d);
        jit__compiled_t c;
        jit_status_t st = jit__compile(tc, src, jit__plan_kernel_name(&p), "sm_90a",
                                       JIT__COMPILE_CUBIN_AND_PTX, &c, &d);
        cr_assert_eq(st, JIT_OK, "%s: %s\n%s", what, d.msg, d.log ? d.log : "");
        cr_expect_eq(c.spill_stores + c.spill_loads, 0, "%s spills:\n%s", what, c.log);
        cr_expect_null(strstr(c.log, "C75"), "%s:\n%s", what, c.log);
        cr_expect_null(strstr(c.log, "warning"), "%s warns:\n%s", what, c.log);
        cr_expect_null(ptx_global_data_line(c.ptx), "%s: .global data", what);
        jit__compiled_free(&c);
        jit__diag_clear(&d);
        free(src);
    }
}

/* The kernel builds promotion forms 3, 0 and 1 only; any other value in a plan is refused by
 * the generator with a message, not left to a static_assert in NVRTC's log. */
Test(fp8_wgmma, an_unbuilt_promotion_form_is_refused) {
    jit__plan_t p;
    make_plan(5, 5120, 5120, JIT_EPILOGUE_LINEAR, &p);
    const int bad[] = {2, 4, -1};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        jit__wgmma_of(&p)->promote = bad[i];
        char *src = NULL;
        jit__diag_t d;
        jit__diag_init(&d);
        cr_expect_eq(jit__generate(&p, NULL, &src, &d), JIT_PLAN_FAILED, "promote %d", bad[i]);
        cr_expect(strstr(d.msg, "promotion form"), "%s", d.msg);
        cr_expect_null(src);
        free(src);
    }
}

/* The clusters-of-two kernel releases a stage in the peer CTA with a remote mbarrier arrive.
 * `.release.cluster` there assembles to MEMBAR.ALL.GPU before the arrive, which made the kernel
 * 2-9x slower than the single-CTA one on the H200; the arrive is CTA-scoped instead. */
Test(fp8_wgmma, cluster_release_has_no_gpu_scope_fence, .timeout = 300) {
    const jit__toolchain_t *tc = auto_toolchain();
    setenv("JITGEMM_FORCE_CANDIDATE", "wgmma_tma_mc2:128x128", 1);
    jit__plan_t p;
    make_plan(4, 5120, 5120, JIT_EPILOGUE_LINEAR, &p);
    unsetenv("JITGEMM_FORCE_CANDIDATE");
    cr_assert_eq(jit__wgmma_cof(&p)->cluster, 2);
    jit__key_t k;
    char *src = sm90_source(&p, &k);
    jit__diag_t d;
    jit__diag_init(&d);
    jit__compiled_t c;
    cr_assert_eq(jit__compile(tc, src, jit__plan_kernel_name(&p), "sm_90a", JIT__COMPILE_PTX, &c,
                              &d),
                 JIT_OK, "%s", d.msg);
    cr_expect(strstr(c.ptx, "mbarrier.arrive.release.cta.shared::cluster.b64"),
              "the remote release is there");
    cr_expect_null(strstr(c.ptx, "release.cluster.shared::cluster"),
                   "no cluster-scoped release on the remote arrive");
    jit__compiled_free(&c);
    jit__diag_clear(&d);
    free(src);
}

/* ---- the launch, against a recording driver ------------------------------------------------ */

typedef struct recorded_map {
    cuuint64_t dims[2], stride;
    cuuint32_t box[2];
    CUtensorMapSwizzle swizzle;
} recorded_map_t;

static recorded_map_t g_maps[4];
static int g_n_maps;
static CUlaunchConfig g_cfg;
static unsigned g_cluster_x;

static CUresult fake_encode(CUtensorMap *map, CUtensorMapDataType dt, cuuint32_t rank, void *addr,
                            const cuuint64_t *dims, const cuuint64_t *strides,
                            const cuuint32_t *box, const cuuint32_t *elem, CUtensorMapInterleave il,
                            CUtensorMapSwizzle sw, CUtensorMapL2promotion l2,
                            CUtensorMapFloatOOBfill oob) {
    (void)dt, (void)addr, (void)elem, (void)il, (void)l2, (void)oob;
    cr_assert_eq(rank, 2u);
    cr_assert_lt(g_n_maps, 4);
    recorded_map_t *r = &g_maps[g_n_maps++];
    r->dims[0] = dims[0];
    r->dims[1] = dims[1];
    r->stride = strides[0];
    r->box[0] = box[0];
    r->box[1] = box[1];
    r->swizzle = sw;
    memset(map, 0, sizeof(*map));
    return CUDA_SUCCESS;
}

/* The parameter block of the last launch (the family passes its union of the two blocks). */
static jit__wgmma_decode_params_t g_params;

static CUresult fake_launch(const CUlaunchConfig *cfg, CUfunction f, void **args, void **extra) {
    (void)f, (void)extra;
    g_cfg = *cfg;
    memcpy(&g_params, args[0], sizeof(g_params));
    g_cluster_x = 1;
    for (unsigned i = 0; i < cfg->numAttrs; i++)
        if (cfg->attrs[i].id == CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION)
            g_cluster_x = cfg->attrs[i].value.clusterDim.x;
    return CUDA_SUCCESS;
}

/* Each CTA of a cluster loads its slice of the B tile: the B map's box must be BN / cluster
 * rows, or each full barrier receives twice the bytes it expects and the kernel hangs (as an
 * H200 run once did). The grid is a whole number of clusters and at most one CTA per SM. */
static int g_fake_clusters; /* what the fake occupancy query answers; 0: no such entry point */
static CUresult fake_max_clusters(int *n, CUfunction f, const CUlaunchConfig *cfg) {
    (void)f;
    cr_expect_eq(cfg->numAttrs, 1u);
    cr_expect_eq(cfg->attrs[0].id, CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION);
    cr_expect_eq(cfg->blockDimX, 384u);
    *n = g_fake_clusters;
    return CUDA_SUCCESS;
}

static void check_launch(const char *force, int bn, int cluster, int64_t m) {
    setenv("JITGEMM_FORCE_CANDIDATE", force, 1);
    jit__plan_t p;
    make_plan(4, 5120, 5120, JIT_EPILOGUE_LINEAR, &p);
    unsetenv("JITGEMM_FORCE_CANDIDATE");
    const jit__wgmma_plan_t *wp = jit__wgmma_cof(&p);
    cr_assert_eq(wp->bn, bn);
    cr_assert_eq(wp->cluster, cluster);
    jit__driver_t drv;
    memset(&drv, 0, sizeof(drv));
    drv.cuTensorMapEncodeTiled = fake_encode;
    drv.cuLaunchKernelEx = fake_launch;
    if (g_fake_clusters)
        drv.cuOccupancyMaxActiveClusters = fake_max_clusters;
    void *state = NULL;
    jit__diag_t d;
    jit__diag_init(&d);
    cr_assert_eq(p.family->prepare(&drv, NULL, &p, &state, &d), JIT_OK, "%s", d.msg);
    jit_problem_t prob;
    jit_problem_init(&prob);
    prob.m = m;
    prob.n = 5120;
    prob.k = 5120;
    jit_operands_t ops;
    jit_operands_init(&ops);
    /* Operands of their own for each call, so that the maps are encoded here and not found in
     * this thread's map cache from an earlier call. */
    static _Alignas(16) unsigned char fake[8][64];
    static int call;
    ops.a = ops.b = ops.scale_a = ops.scale_b = ops.d = fake[call++ % 8];
    jit__launch_args_t args = {&prob, &ops, 5120, 5120, 5120, 5120, NULL, 0, 0};
    g_n_maps = 0;
    cr_assert_eq(p.family->launch(&drv, NULL, &p, state, &args, &d), JIT_OK, "%s", d.msg);
    cr_assert_eq(g_n_maps, 2);
    cr_expect_eq(g_maps[0].box[0], 128u);
    cr_expect_eq(g_maps[0].box[1], (cuuint32_t)wp->bm, "A box rows");
    cr_expect_eq(g_maps[1].box[1], (cuuint32_t)(bn / cluster), "B box rows: one cluster slice");
    cr_expect_eq(g_maps[1].dims[1], 5120u);
    cr_expect_eq(g_maps[0].swizzle, CU_TENSOR_MAP_SWIZZLE_128B);
    cr_expect_eq(g_cluster_x, (unsigned)cluster);
    cr_expect_eq(g_cfg.gridDimX % (unsigned)cluster, 0u);
    cr_expect_leq(g_cfg.gridDimX, 132u);
    cr_expect_eq(g_cfg.blockDimX, 384u);
    cr_expect_eq(g_cfg.sharedMemBytes, p.smem_bytes);
    int64_t units = ((m + wp->bm - 1) / wp->bm + cluster - 1) / cluster * ((5120 + bn - 1) / bn);
    int64_t clusters = 132 / cluster;
    if (cluster > 1 && g_fake_clusters && g_fake_clusters < clusters)
        clusters = g_fake_clusters;
    cr_expect_eq(g_cfg.gridDimX, (unsigned)(units < clusters ? units : clusters) * cluster);
    p.family->release(&drv, state);
}

/* Clusters of two are weighed next to every single-CTA tile (they passed the H200 checks), and
 * the model takes them only when they model faster. */
Test(fp8_wgmma, multicast_routes_are_weighed_beside_single_ctas) {
    jit__plan_t p;
    make_plan(4, 5120, 17408, JIT_EPILOGUE_LINEAR, &p);
    int mc2 = 0, single = 0;
    for (int i = 0; i < p.n_candidates; i++) {
        mc2 += strcmp(p.candidates[i].route, "wgmma_tma_mc2") == 0;
        single += strcmp(p.candidates[i].route, "wgmma_tma") == 0;
    }
    cr_expect_eq(mc2, single, "one clusters-of-two form per tile");
    cr_expect_gt(mc2, 0);
}

Test(fp8_wgmma, launch_maps_and_grid_match_the_plan) {
    check_launch("wgmma_tma:128x160", 160, 1, 4096);
    check_launch("wgmma_tma_mc2:128x160", 160, 2, 4096);
    check_launch("wgmma_tma_mc2:128x128", 128, 2, 600);
    check_launch("wgmma_tma_mc2:128x64", 64, 2, 100);
}

/* A persistent CTA that is not resident runs only after a whole earlier one: the cluster grid
 * is capped at what the driver says fits at once (fewer than SMs / 2 when GPCs have odd SM
 * counts). */
Test(fp8_wgmma, cluster_grid_is_capped_at_the_resident_clusters) {
    g_fake_clusters = 60;
    check_launch("wgmma_tma_mc2:128x160", 160, 2, 4096);
    cr_expect_eq(g_cfg.gridDimX, 120u);
    check_launch("wgmma_tma_mc2:128x64", 64, 2, 100);
    check_launch("wgmma_tma:128x160", 160, 1, 4096);
    cr_expect_eq(g_cfg.gridDimX, 132u, "no cap without a cluster");
    g_fake_clusters = 0;
}

/* ---- the decode route ---------------------------------------------------------------------- */

static size_t g_alloc_bytes[8];
static int g_n_allocs, g_memsets, g_waits, g_records, g_syncs;
static size_t g_memset_bytes;

static CUresult fake_alloc(CUdeviceptr *p, size_t bytes) {
    cr_assert_lt(g_n_allocs, 8);
    g_alloc_bytes[g_n_allocs++] = bytes;
    *p = (CUdeviceptr)(0x1000u * (unsigned)g_n_allocs);
    return CUDA_SUCCESS;
}
static CUresult fake_free(CUdeviceptr p) {
    (void)p;
    return CUDA_SUCCESS;
}
static CUresult fake_memset(CUdeviceptr p, unsigned char v, size_t n) {
    (void)p;
    cr_expect_eq(v, 0, "the counters start at zero");
    g_memset_bytes = n;
    g_memsets++;
    return CUDA_SUCCESS;
}
static CUresult fake_event_create(CUevent *e, unsigned flags) {
    (void)flags;
    *e = (CUevent)(uintptr_t)0x77;
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
static CUresult fake_sync(CUstream s) {
    (void)s;
    g_syncs++;
    return CUDA_SUCCESS;
}
/* Streams whose handle is odd are "capturing", with the handle as the capture id. */
static CUresult fake_capture_info(CUstream s, CUstreamCaptureStatus *st, cuuint64_t *id,
                                  CUgraph *g, const CUgraphNode **deps, size_t *n) {
    (void)g, (void)deps, (void)n;
    uintptr_t h = (uintptr_t)s;
    *st = (h & 1) ? CU_STREAM_CAPTURE_STATUS_ACTIVE : CU_STREAM_CAPTURE_STATUS_NONE;
    *id = (h & 1) ? (cuuint64_t)h : 0;
    return CUDA_SUCCESS;
}

static void plan_decode(const char *force, int64_t n, int64_t k, jit_epilogue_t ep, int band,
                        jit__plan_t *p) {
    if (force)
        setenv("JITGEMM_FORCE_CANDIDATE", force, 1);
    make_plan(band, n, k, ep, p);
    unsetenv("JITGEMM_FORCE_CANDIDATE");
}

/* At M <= 16 the weights are the traffic: the model takes the decode kernel. */
Test(fp8_wgmma, decode_route_is_planned_for_small_bands_only) {
    jit__plan_t p;
    plan_decode(NULL, 5120, 17408, JIT_EPILOGUE_LINEAR, 0, &p);
    const jit__wgmma_plan_t *wp = jit__wgmma_cof(&p);
    cr_expect_eq(wp->route, JIT_WGMMA_DECODE);
    cr_expect_eq(wp->bm, 16, "one token tile holds every M of band 0");
    cr_expect_geq(wp->split, 1);
    cr_expect_eq(p.smem_bytes,
                 jit__wgmma_decode_smem_bytes(wp->bn, wp->bm, wp->stages, wp->ksub, wp->split));
    jit__key_t key;
    jit__key_make(&p, "sm_90a", 0, &key, NULL);
    cr_expect(strstr(key.text, " route=decode ") && strstr(key.text, " split="), "%s", key.text);
    /* Larger bands never take it. */
    plan_decode(NULL, 5120, 17408, JIT_EPILOGUE_LINEAR, 3, &p);
    cr_expect_eq(jit__wgmma_cof(&p)->route, JIT_WGMMA_TILES);
}

Test(fp8_wgmma, decode_kernels_compile_without_spills_or_serialised_wgmma, .timeout = 600) {
    const jit__toolchain_t *tc = auto_toolchain();
    static const char *const forced[] = {"wgmma_decode_s6:16x128", "wgmma_decode_s1:16x128",
                                         "wgmma_decode_s3:64x128"};
    static const int bands[] = {0, 0, 1};
    for (size_t f = 0; f < 3; f++) {
        for (size_t e = 0; e < 3; e++) {
            jit__plan_t p;
            plan_decode(forced[f], 1176, 3584, k_epilogues[e], bands[f], &p);
            cr_assert_eq(jit__wgmma_cof(&p)->route, JIT_WGMMA_DECODE);
            jit__key_t k;
            char *src = sm90_source(&p, &k);
            jit__diag_t d;
            jit__diag_init(&d);
            cr_expect(strstr(src, "#include \"fp8_wgmma/device/decode.cuh\""));
            jit__compiled_t c;
            jit_status_t st = jit__compile(tc, src, jit__plan_kernel_name(&p), "sm_90a",
                                           JIT__COMPILE_CUBIN_AND_PTX, &c, &d);
            cr_assert_eq(st, JIT_OK, "%s %s: %s\n%s", forced[f], jit_epilogue_name(k_epilogues[e]),
                         d.msg, d.log ? d.log : "");
            cr_expect_eq(c.spill_stores + c.spill_loads, 0, "%s spills:\n%s", forced[f], c.log);
            cr_expect_null(strstr(c.log, "C75"), "%s:\n%s", forced[f], c.log);
            cr_expect_null(ptx_global_data_line(c.ptx), "%s: .global data", forced[f]);
            cr_expect(strstr(c.ptx, "wgmma.mma_async.sync.aligned.m64n"));
            jit__compiled_free(&c);
            jit__diag_clear(&d);
            free(src);
        }
    }
}

/* Decode launches: X's box is the token tile, W's the weight tile, one CTA per unit, and with a
 * split K a workspace per stream, sized for the band's largest M: the per-tile counters first,
 * zeroed before the stream's first launch, then the partials from a 256-byte boundary. Later
 * launches on the stream find it again with no driver call; captures use the kernel's capture
 * workspace, made when it was loaded, in order. */
Test(fp8_wgmma, decode_launch_matches_the_plan) {
    jit__plan_t p;
    plan_decode("wgmma_decode_s6:16x128", 5120, 17408, JIT_EPILOGUE_LINEAR, 0, &p);
    const jit__wgmma_plan_t *wp = jit__wgmma_cof(&p);
    cr_assert_eq(wp->split, 6);
    jit__driver_t drv;
    memset(&drv, 0, sizeof(drv));
    drv.cuTensorMapEncodeTiled = fake_encode;
    drv.cuLaunchKernelEx = fake_launch;
    drv.cuMemAlloc = fake_alloc;
    drv.cuMemFree = fake_free;
    drv.cuMemsetD8 = fake_memset;
    drv.cuEventCreate = fake_event_create;
    drv.cuEventDestroy = fake_event_destroy;
    drv.cuStreamWaitEvent = fake_wait;
    drv.cuEventRecord = fake_record;
    drv.cuStreamSynchronize = fake_sync;
    drv.cuStreamGetCaptureInfo = fake_capture_info;
    void *state = NULL;
    jit__diag_t d;
    jit__diag_init(&d);
    g_n_allocs = g_memsets = g_waits = g_records = g_syncs = 0;
    cr_assert_eq(p.family->prepare(&drv, NULL, &p, &state, &d), JIT_OK, "%s", d.msg);
    /* band 0: M <= 16, one token tile; 40 weight tiles of 128 rows; 6 splits of 16 x 128. */
    const size_t counters = (size_t)40 * 4, partials = (size_t)40 * 6 * 16 * 128 * 4;
    cr_assert_eq(g_n_allocs, 1, "the capture workspace");
    cr_expect_eq(g_alloc_bytes[0], 256 + partials);
    cr_expect_eq(g_memsets, 1);
    cr_expect_eq(g_memset_bytes, counters, "the counters are zeroed, the partials need not be");
    cr_expect_eq(g_syncs, 1);
    jit_problem_t prob;
    jit_problem_init(&prob);
    prob.m = 3;
    prob.n = 5120;
    prob.k = 17408;
    jit_operands_t ops;
    jit_operands_init(&ops);
    static _Alignas(16) unsigned char fake[64];
    ops.a = ops.b = ops.scale_a = ops.scale_b = ops.d = fake;
    jit__launch_args_t args = {&prob, &ops, 17408, 17408, 5120, 5120, NULL, 0, 0};
    g_n_maps = 0;
    for (int call = 0; call < 2; call++)
        cr_assert_eq(p.family->launch(&drv, NULL, &p, state, &args, &d), JIT_OK, "%s", d.msg);
    cr_expect_eq(g_n_maps, 2, "the maps are encoded once for the same operands");
    cr_expect_eq(g_maps[0].box[1], 16u, "X box: the token tile");
    cr_expect_eq(g_maps[0].dims[1], 3u);
    cr_expect_eq(g_maps[1].box[1], 128u, "W box: the weight tile");
    cr_expect_eq(g_cfg.gridDimX, 40u * 6u, "one CTA per unit");
    cr_expect_eq(g_cfg.sharedMemBytes, p.smem_bytes);
    cr_expect_eq(g_cluster_x, 1u);
    cr_expect_eq(g_n_allocs, 2, "the stream's own workspace, once");
    cr_expect_eq(g_alloc_bytes[1], 256 + partials);
    cr_expect_eq(g_memsets, 2);
    cr_expect_eq(g_waits, 1, "the stream waits for its counters' memset, once");
    cr_expect_eq(g_records, 1);
    const CUdeviceptr own = 0x2000;
    cr_expect_eq((uintptr_t)g_params.counters, own);
    cr_expect_eq((uintptr_t)g_params.workspace, own + 256);
    cr_expect_eq(g_params.m, 3);
    args.stream = (CUstream)(uintptr_t)0x20;
    cr_assert_eq(p.family->launch(&drv, NULL, &p, state, &args, &d), JIT_OK, "%s", d.msg);
    cr_expect_eq(g_n_allocs, 3, "another stream, another workspace");
    cr_expect_eq((uintptr_t)g_params.counters, 0x3000u);
    /* A capture may not depend on work outside it (CUDA_ERROR_STREAM_CAPTURE_ISOLATION, as the
     * H200 anchor's graph capture once failed), and nothing may be allocated into it: captured
     * launches use the capture workspace; the first of a capture does not wait, later ones of
     * the same capture wait for the one before, and another capture's record is not waited on. */
    args.stream = (CUstream)(uintptr_t)0x11;
    g_waits = g_records = 0;
    cr_assert_eq(p.family->launch(&drv, NULL, &p, state, &args, &d), JIT_OK, "%s", d.msg);
    cr_expect_eq(g_waits, 0, "no wait across the capture boundary");
    cr_expect_eq((uintptr_t)g_params.counters, 0x1000u, "the capture workspace");
    cr_assert_eq(p.family->launch(&drv, NULL, &p, state, &args, &d), JIT_OK, "%s", d.msg);
    cr_expect_eq(g_waits, 1, "ordered within the capture");
    args.stream = (CUstream)(uintptr_t)0x13;
    cr_assert_eq(p.family->launch(&drv, NULL, &p, state, &args, &d), JIT_OK, "%s", d.msg);
    cr_expect_eq(g_waits, 1, "no wait on another capture's record");
    cr_expect_eq(g_records, 3);
    cr_expect_eq(g_n_allocs, 3, "nothing allocated into a capture");
    args.stream = NULL;
    cr_assert_eq(p.family->launch(&drv, NULL, &p, state, &args, &d), JIT_OK, "%s", d.msg);
    cr_expect_eq(g_waits, 1, "outside the capture, the stream's own workspace and no event");
    cr_expect_eq((uintptr_t)g_params.counters, own);
    p.family->release(&drv, state);
}

/* ---- launches from several threads --------------------------------------------------------- */

static atomic_int g_inside;

/* A launch that stays in cuLaunchKernelEx until the other thread's launch is in it too, or 5 s
 * pass: launches of one kernel on two streams must not wait for each other on the host. */
static CUresult meeting_launch(const CUlaunchConfig *cfg, CUfunction f, void **args, void **extra) {
    (void)cfg, (void)f, (void)args, (void)extra;
    atomic_fetch_add(&g_inside, 1);
    struct timespec t0, now;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    do {
        if (atomic_load(&g_inside) >= 2)
            return CUDA_SUCCESS;
        clock_gettime(CLOCK_MONOTONIC, &now);
    } while (now.tv_sec - t0.tv_sec < 5);
    return CUDA_ERROR_LAUNCH_TIMEOUT;
}

static CUresult quiet_encode(CUtensorMap *map, CUtensorMapDataType dt, cuuint32_t rank, void *addr,
                             const cuuint64_t *dims, const cuuint64_t *strides,
                             const cuuint32_t *box, const cuuint32_t *elem,
                             CUtensorMapInterleave il, CUtensorMapSwizzle sw,
                             CUtensorMapL2promotion l2, CUtensorMapFloatOOBfill oob) {
    (void)dt, (void)rank, (void)addr, (void)dims, (void)strides, (void)box, (void)elem, (void)il;
    (void)sw, (void)l2, (void)oob;
    memset(map, 0, sizeof(*map));
    return CUDA_SUCCESS;
}

static CUresult error_name(CUresult r, const char **s) {
    *s = r == CUDA_ERROR_LAUNCH_TIMEOUT ? "CUDA_ERROR_LAUNCH_TIMEOUT" : "CUDA_ERROR_UNKNOWN";
    return CUDA_SUCCESS;
}

static CUresult quiet_alloc(CUdeviceptr *p, size_t bytes) {
    static atomic_uint_fast64_t next = 0x100000;
    *p = (CUdeviceptr)atomic_fetch_add(&next, (bytes + 0xffff) / 0x10000 * 0x10000);
    return CUDA_SUCCESS;
}

typedef struct launcher {
    const jit__driver_t *drv;
    const jit__plan_t *plan;
    void *state;
    uintptr_t stream;
    jit_status_t status;
} launcher_t;

static void *launch_once(void *arg) {
    launcher_t *l = arg;
    jit_problem_t prob;
    jit_problem_init(&prob);
    prob.m = 3;
    prob.n = l->plan->spec.n;
    prob.k = l->plan->spec.k;
    jit_operands_t ops;
    jit_operands_init(&ops);
    static _Alignas(16) unsigned char fake[64];
    ops.a = ops.b = ops.scale_a = ops.scale_b = ops.d = fake;
    jit__launch_args_t args = {&prob, &ops, prob.k, prob.k, prob.n, prob.n, (CUstream)l->stream, 0, 0};
    jit__diag_t d;
    jit__diag_init(&d);
    l->status = l->plan->family->launch(l->drv, NULL, l->plan, l->state, &args, &d);
    return NULL;
}

/* Two threads launch the same kernel at once on two streams, the tile kernel and the split-K
 * decode kernel: each launch gets into cuLaunchKernelEx while the other is in it, which a lock
 * held across the launch (as the family once took, per kernel) would not let happen. */
Test(fp8_wgmma, launches_on_two_streams_run_at_once) {
    static const char *const forced[] = {"wgmma_tma:128x160", "wgmma_decode_s6:16x128"};
    for (size_t f = 0; f < 2; f++) {
        jit__plan_t p;
        plan_decode(forced[f], 5120, 17408, JIT_EPILOGUE_LINEAR, f ? 0 : 4, &p);
        jit__driver_t drv;
        memset(&drv, 0, sizeof(drv));
        drv.cuTensorMapEncodeTiled = quiet_encode;
        drv.cuLaunchKernelEx = meeting_launch;
        drv.cuGetErrorName = error_name;
        drv.cuGetErrorString = error_name;
        drv.cuMemAlloc = quiet_alloc;
        drv.cuMemFree = fake_free;
        drv.cuMemsetD8 = fake_memset;
        drv.cuEventCreate = fake_event_create;
        drv.cuEventDestroy = fake_event_destroy;
        drv.cuStreamWaitEvent = fake_wait;
        drv.cuEventRecord = fake_record;
        drv.cuStreamSynchronize = fake_sync;
        drv.cuStreamGetCaptureInfo = fake_capture_info;
        void *state = NULL;
        jit__diag_t d;
        jit__diag_init(&d);
        cr_assert_eq(p.family->prepare(&drv, NULL, &p, &state, &d), JIT_OK, "%s", d.msg);
        atomic_store(&g_inside, 0);
        launcher_t l[2] = {{&drv, &p, state, 0x20, JIT_OK}, {&drv, &p, state, 0x40, JIT_OK}};
        pthread_t t[2];
        for (int i = 0; i < 2; i++)
            cr_assert_eq(pthread_create(&t[i], NULL, launch_once, &l[i]), 0);
        for (int i = 0; i < 2; i++)
            pthread_join(t[i], NULL);
        cr_expect_eq(l[0].status, JIT_OK, "%s: a launch waited for the other", forced[f]);
        cr_expect_eq(l[1].status, JIT_OK, "%s: a launch waited for the other", forced[f]);
        p.family->release(&drv, state);
    }
}

/* The store-warp epilogue: linear and swiglu by default, never linear_add (its residual is added
 * before the one rounding), off with JITGEMM_WGMMA_EPILOGUE=consumers; it is in the key, the
 * plan's JSON and the template, and its whole-tile staging in the shared memory size. */
Test(fp8_wgmma, store_warps_for_linear_and_swiglu_only) {
    for (size_t e = 0; e < sizeof(k_epilogues) / sizeof(k_epilogues[0]); e++) {
        for (int consumers = 0; consumers < 2; consumers++) {
            jit__plan_t p;
            make_plan_with("JITGEMM_WGMMA_EPILOGUE", consumers ? "consumers" : NULL, 5, 5120,
                           5120, k_epilogues[e], &p);
            const jit__wgmma_plan_t *wp = jit__wgmma_cof(&p);
            int want = !consumers && k_epilogues[e] != JIT_EPILOGUE_LINEAR_ADD;
            const char *what = jit_epilogue_name(k_epilogues[e]);
            cr_expect_eq(wp->store_warps, want, "%s, consumers=%d", what, consumers);
            cr_expect_eq(wp->producer_regs, 40);
            int out_cols = k_epilogues[e] == JIT_EPILOGUE_LINEAR_SWIGLU ? wp->bn / 2 : wp->bn;
            uint32_t ring = (uint32_t)(wp->stages * (wp->bm + wp->bn) * 128);
            /* The consumers stage 32 columns per row: BF16, or FP32 for linear_add. */
            uint32_t consumer_pitch = k_epilogues[e] == JIT_EPILOGUE_LINEAR_ADD ? 160u : 80u;
            uint32_t staging =
                want ? (uint32_t)(wp->bm * (2 * out_cols + 16) + 4 * (wp->bm + wp->bn))
                     : (uint32_t)wp->bm * consumer_pitch;
            cr_expect_eq(p.smem_bytes,
                         ring + staging + 8u * (2u * (uint32_t)wp->stages + (want ? 3u : 0u)) +
                             1024u,
                         "%s", what);
            jit__key_t key;
            char *src = sm90_source(&p, &key);
            char field[32];
            snprintf(field, sizeof(field), " store_warps=%d ", want);
            cr_expect(strstr(key.text, field), "%s: %s", what, key.text);
            char tail[32];
            snprintf(tail, sizeof(tail), ", %d> Kernel;", want);
            cr_expect(strstr(src, tail), "%s: the template's last argument is not %d", what, want);
            free(src);
            char *text = jit__plan_to_json(&p);
            json_t *o = json_loads(text, 0, NULL);
            cr_assert_not_null(o);
            json_t *sw = json_object_get(json_object_get(o, "wgmma"), "store_warps");
            cr_expect(json_is_boolean(sw) && json_is_true(sw) == want, "%s", what);
            json_decref(o);
            free(text);
        }
    }
}

/* 384 threads start with 168 registers; 40/232 balances exactly, 48/232 would leave the
 * consumers' setmaxnreg.inc waiting forever (it hung the H200), so generation refuses it. */
Test(fp8_wgmma, register_budgets_that_would_hang_are_refused) {
    jit__plan_t p;
    make_plan(5, 5120, 17408, JIT_EPILOGUE_LINEAR, &p);
    jit__key_t key;
    char *src = sm90_source(&p, &key);
    free(src);
    src = NULL;
    jit__wgmma_of(&p)->producer_regs = 48;
    jit__diag_t d;
    jit__diag_init(&d);
    cr_expect_eq(jit__generate(&p, &key, &src, &d), JIT_PLAN_FAILED);
    cr_expect(strstr(d.msg, "setmaxnreg"), "%s", d.msg);
    cr_expect_null(src);
    free(src);
}

/* The token band edge at 128 exists for this planner: up to 128 tokens one m-tile covers every
 * row and the narrowest tile gives the most CTAs; from 129 two m-tiles make 128x64 take two
 * rounds (the H200 sweeps: docs/history/cost-model-sweeps.md). If a refit changes these
 * choices, the band edge needs another look. */
Test(fp8_wgmma, the_bands_either_side_of_128_tokens_plan_different_tiles) {
    jit__plan_t lo, hi;
    make_plan(jit__token_band(128), 5120, 17408, JIT_EPILOGUE_LINEAR, &lo);
    make_plan(jit__token_band(129), 5120, 17408, JIT_EPILOGUE_LINEAR, &hi);
    cr_expect_eq(jit__wgmma_cof(&lo)->bn, 64);
    cr_expect_eq(jit__wgmma_cof(&lo)->cluster, 1);
    cr_expect_neq(jit__wgmma_cof(&hi)->bn, 64);
}

/* JITGEMM_WGMMA_GROUP_M sets the raster groups of tile plans (and so their key). */
Test(fp8_wgmma, group_m_switch_reaches_plan_and_key) {
    const struct {
        const char *env;
        int want;
    } cases[] = {{NULL, 8}, {"16", 16}, {"1", 1}, {"64", 64}, {"", 8}};
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        jit__plan_t p;
        make_plan_with("JITGEMM_WGMMA_GROUP_M", cases[i].env, 5, 14336, 5120, JIT_EPILOGUE_LINEAR,
                       &p);
        const jit__wgmma_plan_t *wp = jit__wgmma_cof(&p);
        cr_assert_eq(wp->route, JIT_WGMMA_TILES);
        cr_expect_eq(wp->group_m, cases[i].want, "JITGEMM_WGMMA_GROUP_M=%s",
                     cases[i].env ? cases[i].env : "(unset)");
        jit__key_t key;
        char *src = sm90_source(&p, &key);
        char field[32];
        snprintf(field, sizeof field, " group_m=%d ", cases[i].want);
        cr_expect(strstr(key.text, field), "%s", key.text);
        free(src);
    }
}

/* A comparison switch with a value the family does not build fails planning with a message
 * that names it, for every problem and architecture, rather than building the default under
 * the switch's name (an A/B run would then compare the default with itself). */
Test(fp8_wgmma, unknown_switch_values_are_refused) {
    const struct {
        const char *var, *value, *says;
    } bad[] = {
        {"JITGEMM_WGMMA_PROMOTE", "wholee", "expected halves (the default) or whole"},
        {"JITGEMM_WGMMA_PROMOTE", "quarters", "expected halves"},
        {"JITGEMM_WGMMA_EPILOGUE", "store", "expected consumers"},
        {"JITGEMM_WGMMA_GROUP_M", "0", "from 1 to 64"},
        {"JITGEMM_WGMMA_GROUP_M", "65", "from 1 to 64"},
        {"JITGEMM_WGMMA_GROUP_M", "12x", "from 1 to 64"},
        {"JITGEMM_WGMMA_GROUP_M", "x", "from 1 to 64"},
    };
    const char *arches[] = {"sm_90a", "sm_100a"};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        for (size_t a = 0; a < 2; a++) {
            jit__plan_t p;
            jit__diag_t d;
            jit_status_t st = try_plan_with(bad[i].var, bad[i].value, arches[a], 5, 14336, 5120,
                                            JIT_EPILOGUE_LINEAR, &p, &d);
            cr_expect_eq(st, JIT_INVALID_ARGUMENT, "%s=%s on %s", bad[i].var, bad[i].value,
                         arches[a]);
            cr_expect(strstr(d.msg, bad[i].var) && strstr(d.msg, bad[i].value) &&
                          strstr(d.msg, bad[i].says),
                      "%s", d.msg);
        }
    }
    /* The names the switches document are taken. */
    const char *good[][2] = {{"JITGEMM_WGMMA_PROMOTE", "whole"},
                             {"JITGEMM_WGMMA_PROMOTE", "halves"},
                             {"JITGEMM_WGMMA_EPILOGUE", "consumers"},
                             {"JITGEMM_WGMMA_GROUP_M", "32"}};
    for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++) {
        jit__plan_t p;
        jit__diag_t d;
        jit_status_t st = try_plan_with(good[i][0], good[i][1], "sm_90a", 5, 14336, 5120,
                                        JIT_EPILOGUE_LINEAR, &p, &d);
        cr_expect_eq(st, JIT_OK, "%s=%s: %s", good[i][0], good[i][1], d.msg);
    }
}
