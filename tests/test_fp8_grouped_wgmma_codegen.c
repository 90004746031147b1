/*
 * The grouped FP8 wgmma family (sm_90a) without a GPU: which problems it takes, its cost model
 * (every candidate in the plan's JSON, the choice, a forced candidate), the generated text, NVRTC
 * + nvJitLink compiles of both layouts, both epilogues and every tile it weighs (no spills, no
 * wgmma serialisation, no .global data, the Hopper instructions in the PTX), and the launch
 * against a recording driver (tensor maps over all of A and over G x N rows of B, the grid, the
 * parameter block). The kernel itself runs in tests/test_gpu_grouped.c.
 */
#include <criterion/criterion.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "compile.h"
#include "families.h"
#include "family.h"
#include "fp8_grouped_wgmma/abi.h"
#include "fp8_grouped_wgmma/grouped.h"
#include "key.h"
#include "plan.h"
#include "ptx_check.h"
#include "toolchain.h"

static jit__gemm_spec_t spec_of(int64_t groups, jit_group_layout_t layout, int64_t n, int64_t k,
                                jit_epilogue_t ep) {
    jit__gemm_spec_t s = {.n = n,
                          .k = k,
                          .a = JIT_DTYPE_E4M3,
                          .b = JIT_DTYPE_E4M3,
                          .out = JIT_DTYPE_BF16,
                          .scales = JIT_SCALE_ROW,
                          .epilogue = ep,
                          .groups = groups,
                          .layout = layout};
    return s;
}

static jit_status_t try_plan(const char *arch, int band, const jit__gemm_spec_t *s, jit__plan_t *p,
                             jit__diag_t *d) {
    const jit__arch_profile_t *prof = jit__arch_find(arch);
    cr_assert_not_null(prof);
    jit__diag_init(d);
    return jit__plan_make(s, band, 132, prof, p, d);
}

static void make_plan(int band, const jit__gemm_spec_t *s, jit__plan_t *p) {
    jit__diag_t d;
    cr_assert_eq(try_plan("sm_90a", band, s, p, &d), JIT_OK, "%s", d.msg);
    cr_assert_eq(p->family, &jit__family_fp8_grouped_wgmma, "planned by %s", p->family->name);
}

Test(fp8_grouped_wgmma, takes_grouped_problems_only) {
    jit__plan_t p;
    jit__diag_t d;
    jit__gemm_spec_t s = spec_of(8, JIT_GROUPS_CONTIGUOUS, 4096, 7168, JIT_EPILOGUE_LINEAR);
    cr_assert_eq(try_plan("sm_90a", 3, &s, &p, &d), JIT_OK, "%s", d.msg);
    cr_expect_eq(p.family, &jit__family_fp8_grouped_wgmma);
    /* A dense problem never reaches the grouped family, nor a grouped one a dense family. */
    s.groups = 0;
    s.layout = JIT_GROUPS_NONE;
    cr_assert_eq(try_plan("sm_90a", 3, &s, &p, &d), JIT_OK, "%s", d.msg);
    cr_expect_eq(p.family, &jit__family_fp8_wgmma);
    s = spec_of(8, JIT_GROUPS_MASKED, 4096, 7168, JIT_EPILOGUE_LINEAR);
    setenv("JITGEMM_FAMILY", "fp8_wgmma", 1);
    cr_expect_eq(try_plan("sm_90a", 3, &s, &p, &d), JIT_UNSUPPORTED);
    unsetenv("JITGEMM_FAMILY");
    cr_expect(strstr(d.msg, "grouped"), "%s", d.msg);
    cr_expect_eq(try_plan("sm_120a", 3, &s, &p, &d), JIT_UNSUPPORTED_ARCH);
    cr_expect(strstr(d.msg, "sm_90a only"), "%s", d.msg);
    s.k = 7160 + 4;
    cr_expect_eq(try_plan("sm_90a", 3, &s, &p, &d), JIT_MISALIGNED);
    s = spec_of(8, JIT_GROUPS_MASKED, 4096, 7168, JIT_EPILOGUE_LINEAR_ADD);
    cr_expect_eq(try_plan("sm_90a", 3, &s, &p, &d), JIT_UNSUPPORTED);
    s = spec_of(8, JIT_GROUPS_NONE, 4096, 7168, JIT_EPILOGUE_LINEAR);
    cr_expect_eq(try_plan("sm_90a", 3, &s, &p, &d), JIT_INVALID_ARGUMENT, "groups without layout");
}

/* Every band and both epilogues plan; the choice is the candidate the reason names, every
 * candidate fits shared memory with the expert table, and the JSON lists them all. */
Test(fp8_grouped_wgmma, the_model_weighs_every_tile_and_lists_it) {
    static const jit_epilogue_t eps[] = {JIT_EPILOGUE_LINEAR, JIT_EPILOGUE_LINEAR_SWIGLU};
    for (int band = 0; band < JIT_TOKEN_BANDS; band++) {
        for (size_t e = 0; e < 2; e++) {
            jit__gemm_spec_t s = spec_of(256, JIT_GROUPS_CONTIGUOUS, 4096, 7168, eps[e]);
            jit__plan_t p;
            make_plan(band, &s, &p);
            const jit__grouped_plan_t *gp = jit__grouped_cof(&p);
            cr_assert_geq(p.n_candidates, eps[e] == JIT_EPILOGUE_LINEAR ? 5 : 2);
            const jit__plan_candidate_t *w = &p.candidates[p.chosen];
            cr_expect_eq(w->tile_n, gp->bn);
            cr_expect_eq(w->stages, gp->stages);
            cr_expect(strstr(p.reason, "least mean slowdown over 256 experts"), "%s", p.reason);
            for (int i = 0; i < p.n_candidates; i++) {
                cr_expect_leq(jit__grouped_smem_bytes(p.candidates[i].tile_m,
                                                      p.candidates[i].tile_n,
                                                      p.candidates[i].stages, eps[e], 256),
                              JIT_GROUPED_SMEM_LIMIT);
                if (eps[e] == JIT_EPILOGUE_LINEAR_SWIGLU)
                    cr_expect_eq(p.candidates[i].tile_n % 64, 0);
            }
            cr_expect_eq(p.smem_bytes,
                         jit__grouped_smem_bytes(gp->bm, gp->bn, gp->stages, eps[e], 256));
            char *text = jit__plan_to_json(&p);
            json_t *o = json_loads(text, 0, NULL);
            cr_assert_not_null(o);
            cr_expect_eq(json_array_size(json_object_get(o, "candidates")), (size_t)p.n_candidates);
            json_t *g = json_object_get(o, "grouped");
            cr_expect_eq(json_integer_value(json_object_get(g, "groups")), 256);
            cr_expect_str_eq(json_string_value(json_object_get(g, "layout")), "contiguous");
            cr_expect_str_eq(json_string_value(json_object_get(g, "route")), "tiles");
            json_decref(o);
            free(text);
        }
    }
}

/* The expert table grows with G: 1024 experts take 12 KiB of shared memory, and the ring
 * gives up a stage for it where it must. */
Test(fp8_grouped_wgmma, the_expert_table_is_in_the_shared_memory_budget) {
    /* (3 x 1024 + 1) x 4 bytes rounded up to 8, against (3 + 1) x 4 = 16 */
    cr_expect_eq(jit__grouped_smem_bytes(128, 128, 4, JIT_EPILOGUE_LINEAR, 1024) -
                     jit__grouped_smem_bytes(128, 128, 4, JIT_EPILOGUE_LINEAR, 1),
                 12296u - 16u);
    jit__gemm_spec_t s1 = spec_of(1, JIT_GROUPS_CONTIGUOUS, 4096, 7168, JIT_EPILOGUE_LINEAR);
    jit__gemm_spec_t s1024 = spec_of(1024, JIT_GROUPS_CONTIGUOUS, 4096, 7168, JIT_EPILOGUE_LINEAR);
    setenv("JITGEMM_FORCE_CANDIDATE", "grouped_tiles:128x192", 1);
    jit__plan_t p1, p1024;
    make_plan(5, &s1, &p1);
    make_plan(5, &s1024, &p1024);
    unsetenv("JITGEMM_FORCE_CANDIDATE");
    cr_expect_leq(p1024.smem_bytes, JIT_GROUPED_SMEM_LIMIT);
    cr_expect_geq(p1.stages, p1024.stages);
}

Test(fp8_grouped_wgmma, a_forced_candidate_is_taken) {
    jit__gemm_spec_t s = spec_of(8, JIT_GROUPS_MASKED, 7168, 2048, JIT_EPILOGUE_LINEAR);
    setenv("JITGEMM_FORCE_CANDIDATE", "grouped_tiles:128x96", 1);
    jit__plan_t p;
    make_plan(4, &s, &p);
    cr_expect_eq(jit__grouped_cof(&p)->bn, 96);
    setenv("JITGEMM_FORCE_CANDIDATE", "grouped_tiles:128x80", 1);
    jit__diag_t d;
    cr_expect_eq(try_plan("sm_90a", 4, &s, &p, &d), JIT_INVALID_ARGUMENT);
    unsetenv("JITGEMM_FORCE_CANDIDATE");
}

static char *source_of(const jit__plan_t *p, jit__key_t *k) {
    jit__diag_t d;
    jit__diag_init(&d);
    cr_assert_eq(jit__key_make(p, "sm_90a", 0, k, &d), JIT_OK, "%s", d.msg);
    char *src = NULL;
    cr_assert_eq(jit__generate(p, k, &src, &d), JIT_OK, "%s", d.msg);
    return src;
}

Test(fp8_grouped_wgmma, generated_text_instantiates_the_kernel) {
    jit__gemm_spec_t s = spec_of(32, JIT_GROUPS_MASKED, 4096, 7168, JIT_EPILOGUE_LINEAR_SWIGLU);
    jit__plan_t p;
    make_plan(2, &s, &p);
    jit__key_t k;
    char *src = source_of(&p, &k);
    cr_expect(strstr(k.text, " groups=32 layout=masked route=tiles "), "%s", k.text);
    cr_expect(strstr(src, "#include \"fp8_grouped_wgmma/device/kernel.cuh\"\n"));
    char want[160];
    snprintf(want, sizeof(want),
             "GroupedTileCfg<128, %d, %d, 4096, 7168, 32, GROUPED_MASKED, "
             "GROUPED_EPI_SWIGLU, 8, 40, 232> Cfg;",
             jit__grouped_cof(&p)->bn, jit__grouped_cof(&p)->stages);
    cr_expect(strstr(src, want), "%s not in\n%s", want, src);
    cr_expect(strstr(src, "static_assert(__INTADDR__(&((GroupedParams *)0)->rows) == 280"));
    cr_expect(strstr(src, "jitgemm_fp8_grouped_wgmma(const __grid_constant__ GroupedParams p)"));
    cr_expect_null(strstr(src, "asm"), "no inline PTX in the generated text");
    free(src);
    /* A plan the kernel cannot run is refused by the generator. */
    jit__grouped_of(&p)->producer_regs = 48;
    jit__diag_t d;
    jit__diag_init(&d);
    src = NULL;
    cr_expect_eq(jit__generate(&p, &k, &src, &d), JIT_PLAN_FAILED);
    cr_expect(strstr(d.msg, "setmaxnreg"), "%s", d.msg);
    cr_expect_null(src);
}

static const jit__toolchain_t *auto_toolchain(void) {
    const jit__toolchain_t *tc = NULL;
    jit__diag_t d;
    jit__diag_init(&d);
    if (jit__toolchain_get(NULL, &tc, &d) != JIT_OK)
        cr_skip("no NVRTC/nvJitLink found: %s", d.msg);
    return tc;
}

static void compile_plan(const jit__toolchain_t *tc, const jit__plan_t *p, const char *what) {
    jit__key_t k;
    char *src = source_of(p, &k);
    jit__diag_t d;
    jit__diag_init(&d);
    jit__compiled_t c;
    jit_status_t st = jit__compile(tc, src, jit__plan_kernel_name(p), "sm_90a",
                                   JIT__COMPILE_CUBIN_AND_PTX, &c, &d);
    cr_assert_eq(st, JIT_OK, "%s: %s\n%s", what, d.msg, d.log ? d.log : "");
    cr_expect_eq(c.spill_stores + c.spill_loads, 0, "%s spills:\n%s", what, c.log);
    /* ptxas' C7510-C7515 say the wgmma pipeline was serialised. */
    cr_expect_null(strstr(c.log, "C75"), "%s:\n%s", what, c.log);
    cr_expect_null(strstr(c.log, "warning"), "%s warns:\n%s", what, c.log);
    cr_expect(strstr(c.ptx, "wgmma.mma_async.sync.aligned.m64n"), "%s", what);
    cr_expect(strstr(c.ptx, "cp.async.bulk.tensor.2d"), "%s", what);
    cr_expect(strstr(c.ptx, "setmaxnreg.inc.sync.aligned.u32"), "%s", what);
    cr_expect(strstr(c.ptx, ".entry jitgemm_fp8_grouped_wgmma"), "%s", what);
    const char *global = ptx_global_data_line(c.ptx);
    cr_expect_null(global, "%s: .global data: %.60s", what, global ? global : "");
    jit__compiled_free(&c);
    jit__diag_clear(&d);
    free(src);
}

/* Both layouts and both epilogues at the planner's own choice, 256 experts and a ragged N. */
Test(fp8_grouped_wgmma, compiles_both_layouts_and_epilogues, .timeout = 600) {
    const jit__toolchain_t *tc = auto_toolchain();
    static const jit_epilogue_t eps[] = {JIT_EPILOGUE_LINEAR, JIT_EPILOGUE_LINEAR_SWIGLU};
    static const jit_group_layout_t layouts[] = {JIT_GROUPS_CONTIGUOUS, JIT_GROUPS_MASKED};
    for (size_t e = 0; e < 2; e++)
        for (size_t l = 0; l < 2; l++) {
            jit__gemm_spec_t s = spec_of(256, layouts[l], 1000, 1552, eps[e]);
            jit__plan_t p;
            make_plan(l ? 1 : 5, &s, &p);
            char what[96];
            snprintf(what, sizeof(what), "%s %s band %d", jit_epilogue_name(eps[e]),
                     jit_group_layout_name(layouts[l]), l ? 1 : 5);
            compile_plan(tc, &p, what);
        }
}

/* Every tile the model weighs, forced, so a tile it picks only for some shape still builds. */
Test(fp8_grouped_wgmma, compiles_every_candidate_tile, .timeout = 600) {
    const jit__toolchain_t *tc = auto_toolchain();
    jit__gemm_spec_t s = spec_of(8, JIT_GROUPS_CONTIGUOUS, 7168, 2048, JIT_EPILOGUE_LINEAR);
    jit__plan_t all;
    make_plan(4, &s, &all);
    for (int i = 0; i < all.n_candidates; i++) {
        char force[48];
        snprintf(force, sizeof(force), "%s:%dx%d", all.candidates[i].route,
                 all.candidates[i].tile_m, all.candidates[i].tile_n);
        setenv("JITGEMM_FORCE_CANDIDATE", force, 1);
        jit__plan_t p;
        make_plan(4, &s, &p);
        unsetenv("JITGEMM_FORCE_CANDIDATE");
        compile_plan(tc, &p, force);
    }
}

/* ---- the swap-AB route ----------------------------------------------------------------------- */

/* Weighed up to 64 rows per expert only, with token tiles of 16, 32 and 64, and when taken its
 * route, token tile and N buckets are in the key and the JSON. */
Test(fp8_grouped_wgmma, swap_route_is_weighed_for_decode_bands_only) {
    jit__gemm_spec_t s = spec_of(8, JIT_GROUPS_CONTIGUOUS, 7168, 2048, JIT_EPILOGUE_LINEAR);
    for (int band = 0; band < JIT_TOKEN_BANDS; band++) {
        jit__plan_t p;
        make_plan(band, &s, &p);
        int swaps = 0;
        for (int i = 0; i < p.n_candidates; i++)
            if (strcmp(p.candidates[i].route, "grouped_swap") == 0) {
                swaps++;
                cr_expect_eq(p.candidates[i].tile_n, 128);
                cr_expect_leq(jit__grouped_swap_smem_bytes(p.candidates[i].tile_m,
                                                           p.candidates[i].stages, 8),
                              JIT_GROUPED_SMEM_LIMIT);
            }
        cr_expect_eq(swaps, band <= 1 ? 3 : 0, "band %d: %d swap candidates", band, swaps);
    }
    setenv("JITGEMM_FORCE_CANDIDATE", "grouped_swap:32x128", 1);
    jit__plan_t p;
    make_plan(1, &s, &p);
    unsetenv("JITGEMM_FORCE_CANDIDATE");
    const jit__grouped_plan_t *gp = jit__grouped_cof(&p);
    cr_expect_eq(gp->route, JIT_GROUPED_SWAP);
    cr_expect_eq(gp->bm, 32);
    cr_expect_eq(p.smem_bytes, jit__grouped_swap_smem_bytes(32, gp->stages, 8));
    jit__key_t k;
    char *src = source_of(&p, &k);
    cr_expect(strstr(k.text, " route=swap "), "%s", k.text);
    cr_expect(strstr(src, "#include \"fp8_grouped_wgmma/device/swap_kernel.cuh\""));
    cr_expect(strstr(src, "typedef GroupedSwapCfg<32, "), "%s", src);
    free(src);
    char *text = jit__plan_to_json(&p);
    json_t *o = json_loads(text, 0, NULL);
    json_t *g = json_object_get(o, "grouped");
    cr_expect_str_eq(json_string_value(json_object_get(g, "route")), "swap");
    cr_expect_eq(json_integer_value(json_object_get(g, "token_tile")), 32);
    json_t *b = json_object_get(g, "n_buckets");
    cr_expect(json_array_size(b) == 3 && json_integer_value(json_array_get(b, 2)) == 32);
    json_decref(o);
    free(text);
}

/* Every token tile, both epilogues and both layouts: the kernel holds one main loop per N
 * bucket up to the token tile, and none may spill or serialise its wgmmas. */
Test(fp8_grouped_wgmma, swap_kernels_compile, .timeout = 600) {
    const jit__toolchain_t *tc = auto_toolchain();
    static const char *const forced[] = {"grouped_swap:16x128", "grouped_swap:32x128",
                                         "grouped_swap:64x128"};
    for (size_t f = 0; f < 3; f++) {
        jit_epilogue_t ep = f == 1 ? JIT_EPILOGUE_LINEAR : JIT_EPILOGUE_LINEAR_SWIGLU;
        jit_group_layout_t layout = f == 2 ? JIT_GROUPS_MASKED : JIT_GROUPS_CONTIGUOUS;
        jit__gemm_spec_t s = spec_of(64, layout, 1000, 1552, ep);
        setenv("JITGEMM_FORCE_CANDIDATE", forced[f], 1);
        jit__plan_t p;
        make_plan(f == 0 ? 0 : 1, &s, &p);
        unsetenv("JITGEMM_FORCE_CANDIDATE");
        cr_assert_eq(jit__grouped_cof(&p)->route, JIT_GROUPED_SWAP);
        char what[96];
        snprintf(what, sizeof(what), "%s %s %s", forced[f], jit_epilogue_name(ep),
                 jit_group_layout_name(layout));
        compile_plan(tc, &p, what);
    }
}

/* ---- the launch, against a recording driver ------------------------------------------------ */

typedef struct recorded_map {
    cuuint64_t dims[2], stride;
    cuuint32_t box[2];
    const void *addr;
} recorded_map_t;

static recorded_map_t g_maps[4];
static int g_n_maps;
static CUlaunchConfig g_cfg;
static jit__grouped_params_t g_params;

static CUresult fake_encode(CUtensorMap *map, CUtensorMapDataType dt, cuuint32_t rank, void *addr,
                            const cuuint64_t *dims, const cuuint64_t *strides,
                            const cuuint32_t *box, const cuuint32_t *elem, CUtensorMapInterleave il,
                            CUtensorMapSwizzle sw, CUtensorMapL2promotion l2,
                            CUtensorMapFloatOOBfill oob) {
    (void)dt, (void)elem, (void)il, (void)l2, (void)oob;
    cr_assert_eq(rank, 2u);
    cr_assert_eq(sw, CU_TENSOR_MAP_SWIZZLE_128B);
    cr_assert_lt(g_n_maps, 4);
    recorded_map_t *r = &g_maps[g_n_maps++];
    r->dims[0] = dims[0];
    r->dims[1] = dims[1];
    r->stride = strides[0];
    r->box[0] = box[0];
    r->box[1] = box[1];
    r->addr = addr;
    memset(map, 0, sizeof(*map));
    return CUDA_SUCCESS;
}

static CUresult fake_launch(const CUlaunchConfig *cfg, CUfunction f, void **args, void **extra) {
    (void)f, (void)extra;
    g_cfg = *cfg;
    memcpy(&g_params, args[0], sizeof(g_params));
    return CUDA_SUCCESS;
}

static _Alignas(16) unsigned char g_fake[6][64];

static void launch_once(const jit__plan_t *p, void *state, jit_problem_t *prob, jit_operands_t *ops,
                        int64_t lda, int64_t ldb, int64_t ldd) {
    jit__driver_t drv;
    memset(&drv, 0, sizeof(drv));
    drv.cuTensorMapEncodeTiled = fake_encode;
    drv.cuLaunchKernelEx = fake_launch;
    jit__launch_args_t args = {prob, ops, lda, ldb, ldd, prob->n, NULL, 0, 0};
    jit__diag_t d;
    jit__diag_init(&d);
    cr_assert_eq(p->family->launch(&drv, NULL, p, state, &args, &d), JIT_OK, "%s", d.msg);
}

/* A's map covers every row of A; B's G x N rows of ldb bytes (expert g from row g * N); the
 * rows pointer is the layout's; the grid is persistent, at most one CTA per SM and no more than
 * the rows can make units; the maps are encoded once for the same buffers. */
Test(fp8_grouped_wgmma, launch_maps_grid_and_parameters) {
    jit__gemm_spec_t s = spec_of(8, JIT_GROUPS_CONTIGUOUS, 7168, 2048, JIT_EPILOGUE_LINEAR);
    jit__plan_t p;
    make_plan(5, &s, &p);
    const jit__grouped_plan_t *gp = jit__grouped_cof(&p);
    jit__driver_t drv;
    memset(&drv, 0, sizeof(drv));
    void *state = NULL;
    jit__diag_t d;
    jit__diag_init(&d);
    cr_assert_eq(p.family->prepare(&drv, NULL, &p, &state, &d), JIT_OK, "%s", d.msg);
    jit_problem_t prob;
    jit_problem_init(&prob);
    prob.m = 32768;
    prob.n = 7168;
    prob.k = 2048;
    prob.groups = 8;
    prob.layout = JIT_GROUPS_CONTIGUOUS;
    prob.alpha = 0.5f;
    jit_operands_t ops;
    jit_operands_init(&ops);
    ops.a = g_fake[0];
    ops.b = g_fake[1];
    ops.scale_a = g_fake[2];
    ops.scale_b = g_fake[3];
    ops.d = g_fake[4];
    ops.group_offsets = (const int32_t *)(const void *)g_fake[5];
    g_n_maps = 0;
    launch_once(&p, state, &prob, &ops, 2064, 2048, 7200);
    cr_assert_eq(g_n_maps, 2);
    cr_expect_eq(g_maps[0].dims[0], 2048u);
    cr_expect_eq(g_maps[0].dims[1], 32768u, "A: every row");
    cr_expect_eq(g_maps[0].stride, 2064u);
    cr_expect_eq(g_maps[0].box[1], (cuuint32_t)gp->bm);
    cr_expect_eq(g_maps[1].dims[1], 8u * 7168u, "B: G x N rows");
    cr_expect_eq(g_maps[1].box[1], (cuuint32_t)gp->bn);
    cr_expect_eq(g_cfg.gridDimX, 132u);
    cr_expect_eq(g_cfg.blockDimX, 384u);
    cr_expect_eq(g_cfg.sharedMemBytes, p.smem_bytes);
    cr_expect_eq(g_params.rows, ops.group_offsets);
    cr_expect_eq(g_params.m, 32768);
    cr_expect_eq(g_params.ldd, 7200);
    cr_expect_eq(g_params.alpha, 0.5f);
    cr_expect_eq(g_params.d, (void *)g_fake[4]);
    /* Same buffers: no new encode; a new A buffer: A's map again. */
    launch_once(&p, state, &prob, &ops, 2064, 2048, 7200);
    cr_expect_eq(g_n_maps, 2);
    ops.a = g_fake[1];
    launch_once(&p, state, &prob, &ops, 2064, 2048, 7200);
    cr_expect_eq(g_n_maps, 3);
    cr_expect_eq(g_maps[2].addr, (const void *)g_fake[1]);
    p.family->release(&drv, state);
}

Test(fp8_grouped_wgmma, masked_launch_passes_the_counts) {
    jit__gemm_spec_t s = spec_of(4, JIT_GROUPS_MASKED, 1024, 512, JIT_EPILOGUE_LINEAR_SWIGLU);
    jit__plan_t p;
    make_plan(1, &s, &p);
    jit__driver_t drv;
    memset(&drv, 0, sizeof(drv));
    void *state = NULL;
    jit__diag_t d;
    jit__diag_init(&d);
    cr_assert_eq(p.family->prepare(&drv, NULL, &p, &state, &d), JIT_OK, "%s", d.msg);
    jit_problem_t prob;
    jit_problem_init(&prob);
    prob.m = 4 * 64;
    prob.n = 1024;
    prob.k = 512;
    prob.groups = 4;
    prob.layout = JIT_GROUPS_MASKED;
    prob.epilogue = JIT_EPILOGUE_LINEAR_SWIGLU;
    jit_operands_t ops;
    jit_operands_init(&ops);
    ops.a = g_fake[0];
    ops.b = g_fake[1];
    ops.scale_a = g_fake[2];
    ops.scale_b = g_fake[3];
    ops.d = g_fake[4];
    ops.group_counts = (const int32_t *)(const void *)g_fake[5];
    g_n_maps = 0;
    launch_once(&p, state, &prob, &ops, 512, 512, 512);
    cr_expect_eq(g_params.rows, ops.group_counts);
    cr_expect_eq(g_maps[0].dims[1], 256u);
    cr_expect_eq(g_maps[1].dims[1], 4096u);
    /* 256 rows make at most 256 / BM + 4 row tiles (each expert's last one may be partial);
     * no more CTAs than units, nor than SMs. */
    const int bm = jit__grouped_cof(&p)->bm, bn = jit__grouped_cof(&p)->bn;
    unsigned most = (unsigned)((256 / bm + 4) * ((1024 + bn - 1) / bn));
    cr_expect_eq(g_cfg.gridDimX, most < 132 ? most : 132u);
    p.family->release(&drv, state);
}
