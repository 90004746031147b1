/*
 * The FP8 row-scaled GEMM on the GPU, through the public API (jit_context_create with a fresh
 * cache directory, jit_gemm), against the host FP64 reference from the same bytes, once per
 * family that computes it (JITGEMM_FAMILY picks it: fp8_wgmma on sm_90a, fp8_mma_sync
 * everywhere), each with its own tolerance (the family's `tolerance`).
 *
 * For each epilogue, M runs over {1, 40, 127, 600, 1345, 4001} (every token band, ragged M
 * tiles), N is ragged against every tile width (odd for linear, so the single-column store is
 * used), K = 1552 is a multiple of 16 but not of 128 (a 16-byte K tail), A and D have padded
 * strides, odd for odd M (D, and the residual of linear_add), so rows lose their alignment. Inputs
 * are fresh random E4M3 codes (no zeros, no NaN), positive random scales chosen so that outputs are
 * O(1..10) and SwiGLU sees its curved part, and the output buffer is poisoned with 0xFF bytes (BF16
 * NaN) before the call. Every element must satisfy |gpu - ref| <= 2^-8 |ref| + 1e-5 mag (half a
 * BF16 ulp of rounding, plus FP32 accumulation error relative to sum_k |a b| scaled; see the
 * reference for mag), no poisoned element may remain, and the padding columns of D must still hold
 * the poison. Without a GPU every test skips and says why.
 */
#include <criterion/criterion.h>
#include <math.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "driver.h"
#include "family.h"
#include "formats.h"
#include "gpu_main.h"
#include "jitgemm.h"
#include "plan.h"
#include "reference.h"
#include "support.h"

#define K_DIM 1552
#define BF16_TOL (1.0 / 256.0)

/* Without a GPU every test skips, and ctest should say so rather than "Passed". */
JT_GPU_TEST_MAIN()

static const int64_t k_tokens[] = {1, 40, 127, 600, 1345, 4001};

static void require_gpu(void) {
    const char *why = NULL;
    if (!jt_gpu_available(&why))
        cr_skip("GPU test skipped: %s", why ? why : "unknown reason");
}

/* A random E4M3 code that is neither zero nor NaN. */
static uint8_t nonzero_code(uint64_t *rng) {
    for (;;) {
        uint8_t c = (uint8_t)(jt_rng_next(rng) >> 40);
        if ((c & 0x7F) != 0x7F && (c & 0x7F) != 0)
            return c;
    }
}

static double row_rms(const uint8_t *row, int64_t k) {
    double s = 0;
    for (int64_t i = 0; i < k; i++) {
        double v = jit__e4m3_decode(row[i]);
        s += v * v;
    }
    return sqrt(s / (double)k);
}

/* ---- the reference, split over host threads by rows -------------------------------------- */

typedef struct ref_job {
    const jit__gemm_spec_t *spec;
    int64_t r0, rows, lda, ldr, nout;
    const uint8_t *a, *b;
    const float *sa, *sb;
    const uint16_t *res;
    float alpha;
    double *out, *mag;
} ref_job_t;

static void *ref_worker(void *arg) {
    ref_job_t *j = arg;
    jit__ref_fp8_rowscaled(j->spec, j->rows, j->a + j->r0 * j->lda, j->lda, j->b, j->spec->k,
                           j->sa + j->r0, j->sb, j->res ? j->res + j->r0 * j->ldr : NULL, j->ldr,
                           j->alpha, j->out + j->r0 * j->nout, j->mag + j->r0 * j->nout);
    return NULL;
}

static void reference(const jit__gemm_spec_t *spec, int64_t m, const uint8_t *a, int64_t lda,
                      const uint8_t *b, const float *sa, const float *sb, const uint16_t *res,
                      int64_t ldr, float alpha, double *out, double *mag) {
    long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
    int nt = ncpu < 1 ? 1 : ncpu > 32 ? 32 : (int)ncpu;
    if (nt > m)
        nt = (int)m;
    pthread_t th[32];
    ref_job_t jobs[32];
    int64_t per = (m + nt - 1) / nt;
    int started[32] = {0};
    for (int t = 0; t < nt; t++) {
        int64_t r0 = t * per, rows = r0 + per > m ? m - r0 : per;
        if (rows <= 0)
            break;
        jobs[t] = (ref_job_t){.spec = spec,
                              .r0 = r0,
                              .rows = rows,
                              .lda = lda,
                              .ldr = ldr,
                              .nout = jit__spec_out_cols(spec),
                              .a = a,
                              .b = b,
                              .sa = sa,
                              .sb = sb,
                              .res = res,
                              .alpha = alpha,
                              .out = out,
                              .mag = mag};
        if (pthread_create(&th[t], NULL, ref_worker, &jobs[t]) != 0) {
            ref_worker(&jobs[t]);
            continue;
        }
        started[t] = 1;
    }
    for (int t = 0; t < nt; t++)
        if (started[t])
            pthread_join(th[t], NULL);
}

/* ---- device memory ------------------------------------------------------------------------ */

static CUdeviceptr dev_alloc(const jit__driver_t *drv, size_t bytes) {
    CUdeviceptr p = 0;
    CUresult r = drv->cuMemAlloc(&p, bytes);
    cr_assert_eq(r, CUDA_SUCCESS, "cuMemAlloc(%zu) failed: %d", bytes, (int)r);
    return p;
}

static CUdeviceptr dev_upload(const jit__driver_t *drv, const void *host, size_t bytes) {
    CUdeviceptr p = dev_alloc(drv, bytes);
    CUresult r = drv->cuMemcpyHtoD(p, host, bytes);
    cr_assert_eq(r, CUDA_SUCCESS, "cuMemcpyHtoD(%zu) failed: %d", bytes, (int)r);
    return p;
}

/* ---- one problem -------------------------------------------------------------------------- */

/* 1: D's and the residual's rows start on 16-byte boundaries (strides padded to a multiple of 8
 * plus a poisoned gap of 8), instead of the strides below that break that alignment. */
static int g_rows_16b;

static void run_case(jit_context_t *ctx, const jit__driver_t *drv, const jit__family_t *fam,
                     jit_epilogue_t ep, int64_t m, int64_t n, uint64_t seed) {
    const int64_t k = K_DIM;
    const int64_t nout = ep == JIT_EPILOGUE_LINEAR_SWIGLU ? n / 2 : n;
    const int64_t lda = k + 32, ldb = k;
    /* A poisoned gap after each row; odd strides for odd M. */
    int64_t ldd = nout + (m % 2 ? (nout % 2 ? 6 : 7) : (nout % 2 ? 7 : 6));
    int64_t ldr = n + (m % 2 ? 3 : 4);
    if (g_rows_16b) {
        ldd = (nout + 7) / 8 * 8 + 8;
        ldr = (n + 7) / 8 * 8 + 8;
    }
    const float alpha = ep == JIT_EPILOGUE_LINEAR       ? 1.0f
                        : ep == JIT_EPILOGUE_LINEAR_ADD ? 0.75f
                                                        : 1.25f;
    uint64_t rng = seed;

    uint8_t *a = malloc((size_t)(m * lda)), *b = malloc((size_t)(n * ldb));
    float *sa = malloc(sizeof(float) * (size_t)m), *sb = malloc(sizeof(float) * (size_t)n);
    uint16_t *res = NULL;
    cr_assert(a && b && sa && sb);
    for (int64_t i = 0; i < m * lda; i++)
        a[i] = nonzero_code(&rng);
    for (int64_t i = 0; i < n * ldb; i++)
        b[i] = nonzero_code(&rng);
    /* Normalise rows so that sum_k a b sa sb is about 4 * N(0, 1) times a factor in [0.5, 2]. */
    for (int64_t r = 0; r < m; r++)
        sa[r] = (float)(jt_rng_uniform(&rng, 0.5, 2.0) * 4.0 /
                        (row_rms(a + r * lda, k) * sqrt((double)k) * alpha));
    for (int64_t r = 0; r < n; r++)
        sb[r] = (float)(jt_rng_uniform(&rng, 0.5, 2.0) / row_rms(b + r * ldb, k));
    if (ep == JIT_EPILOGUE_LINEAR_ADD) {
        res = malloc(sizeof(uint16_t) * (size_t)(m * ldr));
        cr_assert_not_null(res);
        for (int64_t i = 0; i < m * ldr; i++)
            res[i] = jit__bf16_encode((float)jt_rng_uniform(&rng, -4.0, 4.0));
    }

    CUdeviceptr da = dev_upload(drv, a, (size_t)(m * lda));
    CUdeviceptr db = dev_upload(drv, b, (size_t)(n * ldb));
    CUdeviceptr dsa = dev_upload(drv, sa, sizeof(float) * (size_t)m);
    CUdeviceptr dsb = dev_upload(drv, sb, sizeof(float) * (size_t)n);
    CUdeviceptr dres = res ? dev_upload(drv, res, sizeof(uint16_t) * (size_t)(m * ldr)) : 0;
    size_t d_bytes = sizeof(uint16_t) * (size_t)(m * ldd);
    CUdeviceptr dd = dev_alloc(drv, d_bytes);
    cr_assert_eq(drv->cuMemsetD8(dd, 0xFF, d_bytes), CUDA_SUCCESS);

    jit_problem_t prob;
    jit_problem_init(&prob);
    prob.m = m;
    prob.n = n;
    prob.k = k;
    prob.epilogue = ep;
    prob.lda = lda;
    prob.ldb = 0; /* packed */
    prob.ldd = ldd;
    prob.ld_residual = res ? ldr : 0;
    prob.alpha = alpha;
    jit_operands_t ops;
    jit_operands_init(&ops);
    ops.a = (const void *)(uintptr_t)da;
    ops.b = (const void *)(uintptr_t)db;
    ops.scale_a = (const void *)(uintptr_t)dsa;
    ops.scale_b = (const void *)(uintptr_t)dsb;
    ops.residual = res ? (const void *)(uintptr_t)dres : NULL;
    ops.d = (void *)(uintptr_t)dd;
    jit_status_t st = jit_gemm(ctx, &prob, &ops, NULL);
    cr_assert_eq(st, JIT_OK, "jit_gemm(%s, m=%lld, n=%lld, k=%lld): %s: %s", jit_epilogue_name(ep),
                 (long long)m, (long long)n, (long long)k, jit_status_name(st),
                 jit_last_error(ctx));
    CUresult r = drv->cuCtxSynchronize();
    cr_assert_eq(r, CUDA_SUCCESS, "kernel failed (cuCtxSynchronize %d) for %s m=%lld", (int)r,
                 jit_epilogue_name(ep), (long long)m);
    uint16_t *d = malloc(d_bytes);
    cr_assert_not_null(d);
    cr_assert_eq(drv->cuMemcpyDtoH(d, dd, d_bytes), CUDA_SUCCESS);

    jit__gemm_spec_t spec = {.n = n,
                             .k = k,
                             .a = JIT_DTYPE_E4M3,
                             .b = JIT_DTYPE_E4M3,
                             .out = JIT_DTYPE_BF16,
                             .scales = JIT_SCALE_ROW,
                             .epilogue = ep};
    double *ref = malloc(sizeof(double) * (size_t)(m * nout));
    double *mag = malloc(sizeof(double) * (size_t)(m * nout));
    cr_assert(ref && mag);
    reference(&spec, m, a, lda, b, sa, sb, res, ldr, alpha, ref, mag);

    int64_t bad = 0, poisoned = 0, gap_written = 0;
    double worst_ratio = 0, worst_err_mag = 0;
    int64_t worst_r = -1, worst_j = -1;
    for (int64_t row = 0; row < m; row++) {
        for (int64_t j = 0; j < ldd; j++) {
            uint16_t bits = d[row * ldd + j];
            if (j >= nout) {
                gap_written += bits != 0xFFFF;
                continue;
            }
            poisoned += bits == 0xFFFF;
            double got = (double)jit__bf16_decode(bits);
            double want = ref[row * nout + j], mg = mag[row * nout + j];
            double tol = fam->tolerance(want, mg);
            double err = fabs(got - want);
            double ratio = err / tol;
            if (!(err <= tol)) {
                if (bad < 8)
                    cr_log_error("%s %s m=%lld: D[%lld][%lld] = %.8g (0x%04X), reference %.8g, "
                                 "|err| %.3g > tol %.3g (mag %.3g)",
                                 fam->name, jit_epilogue_name(ep), (long long)m, (long long)row,
                                 (long long)j, got, bits, want, err, tol, mg);
                bad++;
                ratio = INFINITY;
            }
            if (ratio > worst_ratio || worst_r < 0) {
                worst_ratio = ratio;
                worst_r = row;
                worst_j = j;
            }
            /* the error left after the BF16 rounding allowance, against the accumulation term */
            double excess = err - BF16_TOL * fabs(want);
            if (mg > 0 && isfinite(err) && excess / mg > worst_err_mag)
                worst_err_mag = excess / mg;
        }
    }
    cr_log_info("%s %s m=%lld n=%lld k=%lld ldd=%lld: worst |err|/tol %.3g at [%lld][%lld], "
                "max (|err| - 2^-8 |ref|) / mag %.3g",
                fam->name, jit_epilogue_name(ep), (long long)m, (long long)n, (long long)k,
                (long long)ldd, worst_ratio, (long long)worst_r, (long long)worst_j, worst_err_mag);
    cr_expect_eq(poisoned, 0, "%s m=%lld: %lld outputs never written (still 0xFFFF)",
                 jit_epilogue_name(ep), (long long)m, (long long)poisoned);
    cr_expect_eq(gap_written, 0, "%s m=%lld: %lld elements written past column %lld",
                 jit_epilogue_name(ep), (long long)m, (long long)gap_written, (long long)nout);
    cr_expect_eq(bad, 0,
                 "%s %s m=%lld n=%lld k=%lld: %lld of %lld outputs out of tolerance; worst at "
                 "[%lld][%lld]",
                 fam->name, jit_epilogue_name(ep), (long long)m, (long long)n, (long long)k,
                 (long long)bad, (long long)(m * nout), (long long)worst_r, (long long)worst_j);

    drv->cuMemFree(da);
    drv->cuMemFree(db);
    drv->cuMemFree(dsa);
    drv->cuMemFree(dsb);
    if (dres)
        drv->cuMemFree(dres);
    drv->cuMemFree(dd);
    free(a);
    free(b);
    free(sa);
    free(sb);
    free(res);
    free(d);
    free(ref);
    free(mag);
}

/* The candidate each M of k_tokens is forced to in the forced-routes tests: the decode
 * kernel for the decode bands, clusters of two with multicast above (M = 127, 600 and 1345 give
 * odd m-tile counts, so a CTA of a cluster has no rows). NULL: the plan's own choice. */
static const char *g_forced[sizeof(k_tokens) / sizeof(k_tokens[0])];

/* Runs every M of one epilogue on the family `family` (NULL: the one the models choose). */
static void run_epilogue(const char *family, jit_epilogue_t ep, int64_t n) {
    require_gpu();
    const jit__driver_t *drv = NULL;
    jit__diag_t dg;
    jit__diag_init(&dg);
    cr_assert_eq(jit__driver_get(&drv, &dg), JIT_OK, "%s", dg.msg);
    CUcontext cuctx;
    CUdevice dev;
    cr_assert_eq(jit__driver_current_context(drv, &cuctx, &dev, &dg), JIT_OK, "%s", dg.msg);
    const jit__family_t *fam = jit__family_find(family);
    cr_assert_not_null(fam, "no family %s", family);
    setenv("JITGEMM_FAMILY", family, 1);

    char *dir = jt_mkdtemp("gpu-fp8");
    cr_assert_not_null(dir);
    jit_context_options_t opt;
    jit_context_options_init(&opt);
    opt.cache_dir = dir;
    jit_context_t *ctx = NULL;
    jit_status_t st = jit_context_create(&opt, &ctx);
    if (st == JIT_UNKNOWN_ARCH || st == JIT_UNSUPPORTED_ARCH) {
        jt_rmtree(dir);
        cr_skip("GPU test skipped: this device has no arch profile (%s)", jit_last_error(NULL));
    }
    cr_assert_eq(st, JIT_OK, "jit_context_create: %s", jit_last_error(NULL));
    cr_log_info("device arch %s, %d SMs, family %s", jit_context_arch(ctx),
                jit_context_sm_count(ctx), family);
    if (strcmp(family, "fp8_wgmma") == 0 && strcmp(jit_context_arch(ctx), "sm_90a") != 0) {
        jit_context_destroy(ctx);
        jt_rmtree(dir);
        cr_skip("GPU test skipped: the wgmma family runs on sm_90a, this device is %s",
                jit_context_arch(ctx));
    }

    uint64_t seed = jt_fresh_seed();
    cr_log_info("%s %s: seed 0x%016llx", family, jit_epilogue_name(ep), (unsigned long long)seed);
    for (size_t i = 0; i < sizeof(k_tokens) / sizeof(k_tokens[0]); i++) {
        if (g_forced[i])
            setenv("JITGEMM_FORCE_CANDIDATE", g_forced[i], 1);
        else
            unsetenv("JITGEMM_FORCE_CANDIDATE");
        run_case(ctx, drv, fam, ep, k_tokens[i], n, seed + i);
    }
    unsetenv("JITGEMM_FORCE_CANDIDATE");

    jit_context_destroy(ctx);
    jt_rmtree(dir);
    free(dir);
}

Test(gpu_fp8, wgmma_linear_against_fp64_reference, .timeout = 900) {
    run_epilogue("fp8_wgmma", JIT_EPILOGUE_LINEAR, 1001);
}

Test(gpu_fp8, wgmma_linear_add_against_fp64_reference, .timeout = 900) {
    run_epilogue("fp8_wgmma", JIT_EPILOGUE_LINEAR_ADD, 1176);
}

/* linear_add with 16-byte aligned rows of D and the residual, which the strides above never
 * give it: the epilogue's 16-byte residual path runs, and with N = 1001 the unit that straddles N
 * goes element by element. */
Test(gpu_fp8, wgmma_linear_add_aligned_rows_odd_n, .timeout = 900) {
    g_rows_16b = 1;
    run_epilogue("fp8_wgmma", JIT_EPILOGUE_LINEAR_ADD, 1001);
    g_rows_16b = 0;
}

Test(gpu_fp8, wgmma_linear_swiglu_against_fp64_reference, .timeout = 900) {
    run_epilogue("fp8_wgmma", JIT_EPILOGUE_LINEAR_SWIGLU, 1048);
}

Test(gpu_fp8, mma_sync_linear_against_fp64_reference, .timeout = 900) {
    run_epilogue("fp8_mma_sync", JIT_EPILOGUE_LINEAR, 1001);
}

Test(gpu_fp8, mma_sync_linear_add_against_fp64_reference, .timeout = 900) {
    run_epilogue("fp8_mma_sync", JIT_EPILOGUE_LINEAR_ADD, 1176);
}

Test(gpu_fp8, mma_sync_linear_swiglu_against_fp64_reference, .timeout = 900) {
    run_epilogue("fp8_mma_sync", JIT_EPILOGUE_LINEAR_SWIGLU, 1048);
}

/* The decode kernel and clusters of two, forced where the models would not always take them:
 * the decode route for the decode bands, clusters of two with multicast above (M = 127, 600 and
 * 1345 give odd m-tile counts, so a CTA of a cluster has no rows). */
static void run_forced_routes(jit_epilogue_t ep, int64_t n) {
    static const char *const forced[] = {"wgmma_decode_s6:16x128", "wgmma_decode_s3:64x128",
                                         "wgmma_tma_mc2:128x128",  "wgmma_tma_mc2:128x128",
                                         "wgmma_tma_mc2:128x128",  "wgmma_tma_mc2:128x128"};
    _Static_assert(sizeof(forced) / sizeof(forced[0]) == sizeof(k_tokens) / sizeof(k_tokens[0]),
                   "one forced candidate per M");
    for (size_t i = 0; i < sizeof(forced) / sizeof(forced[0]); i++)
        g_forced[i] = forced[i];
    run_epilogue("fp8_wgmma", ep, n);
    for (size_t i = 0; i < sizeof(forced) / sizeof(forced[0]); i++)
        g_forced[i] = NULL;
}

Test(gpu_fp8, wgmma_decode_and_cluster_routes_linear, .timeout = 900) {
    run_forced_routes(JIT_EPILOGUE_LINEAR, 1001);
}

Test(gpu_fp8, wgmma_decode_and_cluster_routes_linear_add, .timeout = 900) {
    run_forced_routes(JIT_EPILOGUE_LINEAR_ADD, 1176);
}

Test(gpu_fp8, wgmma_decode_and_cluster_routes_linear_swiglu, .timeout = 900) {
    run_forced_routes(JIT_EPILOGUE_LINEAR_SWIGLU, 1048);
}

/* Every epilogue test above, with one comparison switch of the wgmma family set to `value`. */
static void run_with_switch(const char *var, const char *value, jit_epilogue_t ep, int64_t n) {
    setenv(var, value, 1);
    run_epilogue("fp8_wgmma", ep, n);
    unsetenv(var);
}

/* The consumers' own stores (JITGEMM_WGMMA_EPILOGUE=consumers), which linear and swiglu leave
 * to the store warps by default. linear_add's consumers always store, through an epilogue of
 * their own (the residual is added in the store pass), covered above. */
Test(gpu_fp8, wgmma_consumer_stores_linear, .timeout = 900) {
    run_with_switch("JITGEMM_WGMMA_EPILOGUE", "consumers", JIT_EPILOGUE_LINEAR, 1001);
}

Test(gpu_fp8, wgmma_consumer_stores_linear_swiglu, .timeout = 900) {
    run_with_switch("JITGEMM_WGMMA_EPILOGUE", "consumers", JIT_EPILOGUE_LINEAR_SWIGLU, 1048);
}

/* The promotion's comparison form (JITGEMM_WGMMA_PROMOTE=whole): the whole block after one
 * wait; the default, two halves, runs in every test above. */
Test(gpu_fp8, wgmma_promotion_whole_linear, .timeout = 900) {
    run_with_switch("JITGEMM_WGMMA_PROMOTE", "whole", JIT_EPILOGUE_LINEAR, 1001);
}

Test(gpu_fp8, wgmma_promotion_whole_linear_add, .timeout = 900) {
    run_with_switch("JITGEMM_WGMMA_PROMOTE", "whole", JIT_EPILOGUE_LINEAR_ADD, 1176);
}
