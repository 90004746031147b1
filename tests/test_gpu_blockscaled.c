/*
 * The 128x128 block-scaled FP8 GEMM on the GPU (family fp8_block_wgmma, sm_90a), through the
 * public API (jit_context_create with a fresh cache directory, jit_gemm), against the host FP64
 * reference (jit__ref_fp8_block128) from the same bytes and floats, with the family's tolerance.
 *
 * For each case, M runs over {1, 7, 64, 129, 300, 1000, 4001} (every token band, ragged m-tiles,
 * an odd m-tile count for clusters of two), N is not a multiple of 128 (so the last N block is
 * partial and tiles of 96, 160 and 192 columns straddle two N blocks), K = 1552 is a multiple
 * of 16 but not of 128 (a partial last group with its own scale). A has a padded row stride, D
 * an odd one for odd M (a poisoned gap after each row) and two poisoned guard rows after M,
 * SFA a padded leading dimension in either layout with NaN in the padding. Inputs are fresh
 * random non-zero E4M3 codes and scales mantissa x 2^e with e spread over [-20, 20] (for SwiGLU,
 * whose output saturates, [-10, -4], which puts the gates where silu bends), and SFB of either
 * sign, so that any scale read from the wrong row, group or N block moves an output by orders
 * of magnitude. D is poisoned with 0xFF bytes (BF16 NaN)
 * before the call. Every output must satisfy |gpu - ref| <= the family's tolerance, none may
 * stay poisoned, and no byte of the gaps and guard rows may change. The first mismatches and
 * the worst error are printed. Without a GPU (or on another arch) every test skips and says
 * why. Run alone: ctest --test-dir build-gpu -R test_gpu_blockscaled --output-on-failure.
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
#define GUARD_ROWS 2
#define MAX_SHOWN 8

JT_GPU_TEST_MAIN()

static const int64_t k_tokens[] = {1, 7, 64, 129, 300, 1000, 4001};
#define N_TOKENS (sizeof(k_tokens) / sizeof(k_tokens[0]))

/* One test case: the epilogue, N, SFA's layout, the scale exponents (base +- spread), and the
 * candidate forced for every M (NULL: the model's choice). */
typedef struct bs_case {
    jit_epilogue_t ep;
    int64_t n;
    jit_sfa_layout_t layout;
    int exp_base, exp_spread;
    const char *force;
} bs_case_t;

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

/* mantissa in [1, 2) times 2^e, e uniform in [base - spread, base + spread]. */
static float spread_scale(uint64_t *rng, const bs_case_t *c) {
    int e =
        c->exp_base + (int)(jt_rng_next(rng) % (uint64_t)(2 * c->exp_spread + 1)) - c->exp_spread;
    return ldexpf((float)jt_rng_uniform(rng, 1.0, 2.0), e);
}

/* ---- the reference, split over host threads by rows -------------------------------------- */

typedef struct ref_job {
    const jit__gemm_spec_t *spec;
    int64_t r0, rows, lda, ldr, nout, sm, sk;
    const uint8_t *a, *b;
    const float *sfa, *sfb;
    const uint16_t *res;
    float alpha;
    double *out, *mag;
} ref_job_t;

static void *ref_worker(void *arg) {
    ref_job_t *j = arg;
    jit__ref_fp8_block128(j->spec, j->rows, j->a + j->r0 * j->lda, j->lda, j->b, j->spec->k,
                          j->sfa + j->r0 * j->sm, j->sm, j->sk, j->sfb,
                          j->res ? j->res + j->r0 * j->ldr : NULL, j->ldr, j->alpha,
                          j->out + j->r0 * j->nout, j->mag + j->r0 * j->nout);
    return NULL;
}

static void reference(const ref_job_t *all) {
    long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
    int64_t m = all->rows;
    int nt = ncpu < 1 ? 1 : ncpu > 32 ? 32 : (int)ncpu;
    if (nt > m)
        nt = (int)m;
    pthread_t th[32];
    ref_job_t jobs[32];
    int started[32] = {0};
    int64_t per = (m + nt - 1) / nt;
    for (int t = 0; t < nt; t++) {
        jobs[t] = *all;
        jobs[t].r0 = t * per;
        jobs[t].rows = jobs[t].r0 + per > m ? m - jobs[t].r0 : per;
        if (jobs[t].rows <= 0)
            break;
        if (pthread_create(&th[t], NULL, ref_worker, &jobs[t]) != 0)
            ref_worker(&jobs[t]);
        else
            started[t] = 1;
    }
    for (int t = 0; t < nt; t++)
        if (started[t])
            pthread_join(th[t], NULL);
}

/* ---- device memory ------------------------------------------------------------------------ */

static CUdeviceptr dev_upload(const jit__driver_t *drv, const void *host, size_t bytes) {
    CUdeviceptr p = 0;
    cr_assert_eq(drv->cuMemAlloc(&p, bytes), CUDA_SUCCESS, "cuMemAlloc(%zu)", bytes);
    if (host)
        cr_assert_eq(drv->cuMemcpyHtoD(p, host, bytes), CUDA_SUCCESS, "cuMemcpyHtoD(%zu)", bytes);
    return p;
}

/* ---- one problem -------------------------------------------------------------------------- */

typedef struct host_in {
    uint8_t *a, *b;
    float *sfa, *sfb;
    uint16_t *res;
    int64_t lda, ldd, ldr, ld_sfa, sm, sk, sfa_count;
    float alpha;
} host_in_t;

static void make_inputs(const bs_case_t *c, int64_t m, uint64_t seed, host_in_t *h) {
    const int64_t n = c->n, k = K_DIM, kb = (k + 127) / 128, nb = (n + 127) / 128;
    const int64_t nout = c->ep == JIT_EPILOGUE_LINEAR_SWIGLU ? n / 2 : n;
    uint64_t rng = seed;
    h->lda = k + 32;
    /* A poisoned gap after each row of D; odd strides for odd M. */
    h->ldd = nout + (m % 2 ? (nout % 2 ? 6 : 7) : (nout % 2 ? 7 : 6));
    h->ldr = n + (m % 2 ? 3 : 4);
    /* SFA padded: k-major rows of kb + 3, m-major groups of M + 5; the padding holds NaN. */
    h->ld_sfa = c->layout == JIT_SFA_K_MAJOR ? kb + 3 : m + 5;
    h->sm = c->layout == JIT_SFA_K_MAJOR ? h->ld_sfa : 1;
    h->sk = c->layout == JIT_SFA_K_MAJOR ? 1 : h->ld_sfa;
    h->sfa_count = c->layout == JIT_SFA_K_MAJOR ? m * h->ld_sfa : kb * h->ld_sfa;
    h->alpha = c->ep == JIT_EPILOGUE_LINEAR       ? 1.0f
               : c->ep == JIT_EPILOGUE_LINEAR_ADD ? 0.75f
                                                  : 1.25f;
    h->a = malloc((size_t)(m * h->lda));
    h->b = malloc((size_t)(n * k));
    h->sfa = malloc(sizeof(float) * (size_t)h->sfa_count);
    h->sfb = malloc(sizeof(float) * (size_t)(nb * kb));
    h->res =
        c->ep == JIT_EPILOGUE_LINEAR_ADD ? malloc(sizeof(uint16_t) * (size_t)(m * h->ldr)) : NULL;
    cr_assert(h->a && h->b && h->sfa && h->sfb && (h->res || c->ep != JIT_EPILOGUE_LINEAR_ADD));
    for (int64_t i = 0; i < m * h->lda; i++)
        h->a[i] = nonzero_code(&rng);
    for (int64_t i = 0; i < n * k; i++)
        h->b[i] = nonzero_code(&rng);
    for (int64_t i = 0; i < h->sfa_count; i++)
        h->sfa[i] = NAN;
    for (int64_t r = 0; r < m; r++)
        for (int64_t g = 0; g < kb; g++)
            h->sfa[r * h->sm + g * h->sk] = spread_scale(&rng, c);
    /* SFB positive or negative: a sign in the wrong place shows too. */
    for (int64_t i = 0; i < nb * kb; i++)
        h->sfb[i] = (jt_rng_next(&rng) & 1 ? -1.0f : 1.0f) * spread_scale(&rng, c);
    for (int64_t i = 0; h->res && i < m * h->ldr; i++)
        h->res[i] = jit__bf16_encode((float)jt_rng_uniform(&rng, -4.0, 4.0));
}

static void free_inputs(host_in_t *h) {
    free(h->a);
    free(h->b);
    free(h->sfa);
    free(h->sfb);
    free(h->res);
}

/* Compares D with the reference; returns the number of bad outputs. */
static int64_t check_output(const jit__family_t *fam, const bs_case_t *c, int64_t m,
                            const host_in_t *h, const uint16_t *d, const double *ref,
                            const double *mag) {
    const int64_t nout = c->ep == JIT_EPILOGUE_LINEAR_SWIGLU ? c->n / 2 : c->n;
    int64_t bad = 0, poisoned = 0, outside = 0, worst_r = -1, worst_j = -1;
    double worst = 0;
    for (int64_t row = 0; row < m + GUARD_ROWS; row++)
        for (int64_t j = 0; j < h->ldd; j++) {
            const uint16_t bits = d[row * h->ldd + j];
            if (row >= m || j >= nout) {
                outside += bits != 0xFFFF;
                continue;
            }
            poisoned += bits == 0xFFFF;
            const double got = (double)jit__bf16_decode(bits), want = ref[row * nout + j];
            const double tol = fam->tolerance(want, mag[row * nout + j]);
            const double err = fabs(got - want);
            double ratio = err / tol;
            if (!(err <= tol)) {
                if (bad < MAX_SHOWN)
                    cr_log_error("%s m=%lld: D[%lld][%lld] = %.8g (0x%04X), reference %.8g, "
                                 "|err| %.3g > tol %.3g (mag %.3g)",
                                 jit_epilogue_name(c->ep), (long long)m, (long long)row,
                                 (long long)j, got, bits, want, err, tol, mag[row * nout + j]);
                bad++;
                ratio = INFINITY;
            }
            if (ratio > worst || worst_r < 0) {
                worst = ratio;
                worst_r = row;
                worst_j = j;
            }
        }
    cr_log_info("%s %s m=%lld n=%lld k=%d ldd=%lld ld_sfa=%lld%s%s: worst |err|/tol %.3g at "
                "[%lld][%lld]",
                jit_epilogue_name(c->ep), jit_sfa_layout_name(c->layout), (long long)m,
                (long long)c->n, K_DIM, (long long)h->ldd, (long long)h->ld_sfa,
                c->force ? " forced " : "", c->force ? c->force : "", worst, (long long)worst_r,
                (long long)worst_j);
    cr_expect_eq(poisoned, 0, "%s m=%lld: %lld outputs never written (still 0xFFFF)",
                 jit_epilogue_name(c->ep), (long long)m, (long long)poisoned);
    cr_expect_eq(outside, 0, "%s m=%lld: %lld elements written outside D (gaps, guard rows)",
                 jit_epilogue_name(c->ep), (long long)m, (long long)outside);
    cr_expect_eq(bad, 0,
                 "%s m=%lld n=%lld: %lld of %lld outputs out of tolerance; worst at "
                 "[%lld][%lld]",
                 jit_epilogue_name(c->ep), (long long)m, (long long)c->n, (long long)bad,
                 (long long)(m * nout), (long long)worst_r, (long long)worst_j);
    return bad;
}

static void run_case(jit_context_t *ctx, const jit__driver_t *drv, const jit__family_t *fam,
                     const bs_case_t *c, int64_t m, uint64_t seed) {
    const int64_t n = c->n, k = K_DIM, kb = (k + 127) / 128, nb = (n + 127) / 128;
    const int64_t nout = c->ep == JIT_EPILOGUE_LINEAR_SWIGLU ? n / 2 : n;
    host_in_t h;
    make_inputs(c, m, seed, &h);
    CUdeviceptr da = dev_upload(drv, h.a, (size_t)(m * h.lda));
    CUdeviceptr db = dev_upload(drv, h.b, (size_t)(n * k));
    CUdeviceptr dsa = dev_upload(drv, h.sfa, sizeof(float) * (size_t)h.sfa_count);
    CUdeviceptr dsb = dev_upload(drv, h.sfb, sizeof(float) * (size_t)(nb * kb));
    CUdeviceptr dres = h.res ? dev_upload(drv, h.res, sizeof(uint16_t) * (size_t)(m * h.ldr)) : 0;
    const size_t d_bytes = sizeof(uint16_t) * (size_t)((m + GUARD_ROWS) * h.ldd);
    CUdeviceptr dd = dev_upload(drv, NULL, d_bytes);
    cr_assert_eq(drv->cuMemsetD8(dd, 0xFF, d_bytes), CUDA_SUCCESS);

    jit_problem_t prob;
    jit_problem_init(&prob);
    prob.m = m;
    prob.n = n;
    prob.k = k;
    prob.epilogue = c->ep;
    prob.scale_mode = JIT_SCALE_BLOCK_1X128_128X128;
    prob.sfa_layout = c->layout;
    prob.ld_sfa = h.ld_sfa;
    prob.lda = h.lda;
    prob.ldd = h.ldd;
    prob.ld_residual = h.res ? h.ldr : 0;
    prob.alpha = h.alpha;
    jit_operands_t ops;
    jit_operands_init(&ops);
    ops.a = (const void *)(uintptr_t)da;
    ops.b = (const void *)(uintptr_t)db;
    ops.scale_a = (const void *)(uintptr_t)dsa;
    ops.scale_b = (const void *)(uintptr_t)dsb;
    ops.residual = h.res ? (const void *)(uintptr_t)dres : NULL;
    ops.d = (void *)(uintptr_t)dd;
    jit_status_t st = jit_gemm(ctx, &prob, &ops, NULL);
    cr_assert_eq(st, JIT_OK, "jit_gemm(%s, m=%lld, n=%lld): %s: %s", jit_epilogue_name(c->ep),
                 (long long)m, (long long)n, jit_status_name(st), jit_last_error(ctx));
    CUresult r = drv->cuCtxSynchronize();
    cr_assert_eq(r, CUDA_SUCCESS, "kernel failed (cuCtxSynchronize %d) for %s m=%lld", (int)r,
                 jit_epilogue_name(c->ep), (long long)m);
    uint16_t *d = malloc(d_bytes);
    double *ref = malloc(sizeof(double) * (size_t)(m * nout));
    double *mag = malloc(sizeof(double) * (size_t)(m * nout));
    cr_assert(d && ref && mag);
    cr_assert_eq(drv->cuMemcpyDtoH(d, dd, d_bytes), CUDA_SUCCESS);

    jit__gemm_spec_t spec = {.n = n,
                             .k = k,
                             .a = JIT_DTYPE_E4M3,
                             .b = JIT_DTYPE_E4M3,
                             .out = JIT_DTYPE_BF16,
                             .scales = JIT_SCALE_BLOCK_1X128_128X128,
                             .epilogue = c->ep,
                             .scale_type = JIT_SCALE_TYPE_F32};
    ref_job_t all = {.spec = &spec,
                     .r0 = 0,
                     .rows = m,
                     .lda = h.lda,
                     .ldr = h.ldr,
                     .nout = nout,
                     .sm = h.sm,
                     .sk = h.sk,
                     .a = h.a,
                     .b = h.b,
                     .sfa = h.sfa,
                     .sfb = h.sfb,
                     .res = h.res,
                     .alpha = h.alpha,
                     .out = ref,
                     .mag = mag};
    reference(&all);
    check_output(fam, c, m, &h, d, ref, mag);

    CUdeviceptr bufs[] = {da, db, dsa, dsb, dres, dd};
    for (size_t i = 0; i < sizeof(bufs) / sizeof(bufs[0]); i++)
        if (bufs[i])
            drv->cuMemFree(bufs[i]);
    free_inputs(&h);
    free(d);
    free(ref);
    free(mag);
}

/* The given M of one case, in a context with a fresh cache directory. */
static void run_tokens(const bs_case_t *c, const int64_t *tokens, size_t n_tokens) {
    require_gpu();
    const jit__driver_t *drv = NULL;
    jit__diag_t dg;
    jit__diag_init(&dg);
    cr_assert_eq(jit__driver_get(&drv, &dg), JIT_OK, "%s", dg.msg);
    CUcontext cuctx;
    CUdevice dev;
    cr_assert_eq(jit__driver_current_context(drv, &cuctx, &dev, &dg), JIT_OK, "%s", dg.msg);
    const jit__family_t *fam = jit__family_find("fp8_block_wgmma");
    cr_assert_not_null(fam);
    char *dir = jt_mkdtemp("gpu-blockscaled");
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
    if (strcmp(jit_context_arch(ctx), "sm_90a") != 0) {
        cr_log_info("device arch %s", jit_context_arch(ctx));
        jit_context_destroy(ctx);
        jt_rmtree(dir);
        cr_skip("GPU test skipped: the 128x128 block-scaled kernels run on sm_90a only");
    }
    if (c->force)
        setenv("JITGEMM_FORCE_CANDIDATE", c->force, 1);
    const uint64_t seed = jt_fresh_seed();
    cr_log_info("%s %s n=%lld%s%s: seed 0x%016llx", jit_epilogue_name(c->ep),
                jit_sfa_layout_name(c->layout), (long long)c->n, c->force ? ", forced " : "",
                c->force ? c->force : "", (unsigned long long)seed);
    for (size_t i = 0; i < n_tokens; i++)
        run_case(ctx, drv, fam, c, tokens[i], seed + i);
    unsetenv("JITGEMM_FORCE_CANDIDATE");
    jit_context_destroy(ctx);
    jt_rmtree(dir);
    free(dir);
}

static void run_all(const bs_case_t *c) {
    run_tokens(c, k_tokens, N_TOKENS);
}

/* The model's own choices, one per band: N = 1000 (8 N blocks, the last of 104 rows). */
Test(gpu_blockscaled, linear_k_major, .timeout = 900) {
    run_all(&(bs_case_t){JIT_EPILOGUE_LINEAR, 1000, JIT_SFA_K_MAJOR, 0, 20, NULL});
}

Test(gpu_blockscaled, linear_m_major, .timeout = 900) {
    run_all(&(bs_case_t){JIT_EPILOGUE_LINEAR, 1000, JIT_SFA_M_MAJOR, 0, 20, NULL});
}

Test(gpu_blockscaled, linear_add_m_major, .timeout = 900) {
    run_all(&(bs_case_t){JIT_EPILOGUE_LINEAR_ADD, 1176, JIT_SFA_M_MAJOR, 0, 20, NULL});
}

Test(gpu_blockscaled, linear_add_k_major, .timeout = 900) {
    run_all(&(bs_case_t){JIT_EPILOGUE_LINEAR_ADD, 1001, JIT_SFA_K_MAJOR, 0, 20, NULL});
}

/* SwiGLU saturates (silu(g) ~ g or 0 for large |g|): scales of 2^-10..2^-4 keep the gates
 * near its bend. N = 1048: gate/up pairs, the last N block of 24 rows. */
Test(gpu_blockscaled, linear_swiglu_k_major, .timeout = 900) {
    run_all(&(bs_case_t){JIT_EPILOGUE_LINEAR_SWIGLU, 1048, JIT_SFA_K_MAJOR, -7, 3, NULL});
}

Test(gpu_blockscaled, linear_swiglu_m_major, .timeout = 900) {
    run_all(&(bs_case_t){JIT_EPILOGUE_LINEAR_SWIGLU, 1048, JIT_SFA_M_MAJOR, -7, 3, NULL});
}

/* Every tile width the model weighs, forced for every M: 96, 160 and 192 straddle two N blocks
 * per tile, and the clusters of two leave a CTA without rows at odd m-tile counts (M = 1, 7, 64,
 * 300). */
Test(gpu_blockscaled, forced_tiles_straddling_n_blocks, .timeout = 900) {
    run_all(&(bs_case_t){JIT_EPILOGUE_LINEAR, 1000, JIT_SFA_M_MAJOR, 0, 20, "block_tma:128x96"});
    run_all(&(bs_case_t){JIT_EPILOGUE_LINEAR, 1000, JIT_SFA_K_MAJOR, 0, 20, "block_tma:128x160"});
    run_all(
        &(bs_case_t){JIT_EPILOGUE_LINEAR_ADD, 1000, JIT_SFA_M_MAJOR, 0, 20, "block_tma:128x192"});
    run_all(&(bs_case_t){JIT_EPILOGUE_LINEAR, 1000, JIT_SFA_K_MAJOR, 0, 20, "block_tma:128x64"});
}

/* The decode route forced for every M it takes (the M past its band run the tile route's plan
 * for their own band): split K with the fixed-order reduction (the counters must be back at zero
 * for the next M's launch of the same kernel), no split (shared-memory staging), two weight
 * waves per warpgroup, every epilogue. */
static const int64_t k_decode_tokens[] = {1, 7, 16};
Test(gpu_blockscaled, forced_decode_routes, .timeout = 900) {
    static const bs_case_t cases[] = {
        {JIT_EPILOGUE_LINEAR, 1000, JIT_SFA_M_MAJOR, 0, 20, "block_decode_s6:16x128"},
        {JIT_EPILOGUE_LINEAR_ADD, 1176, JIT_SFA_K_MAJOR, 0, 20, "block_decode_s1:16x256"},
        {JIT_EPILOGUE_LINEAR_SWIGLU, 1048, JIT_SFA_M_MAJOR, -7, 3, "block_decode_s12:16x128"},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
        run_tokens(&cases[i], k_decode_tokens, 3);
    static const bs_case_t wide[] = {
        {JIT_EPILOGUE_LINEAR, 1000, JIT_SFA_K_MAJOR, 0, 20, "block_decode_s3:64x128"},
        {JIT_EPILOGUE_LINEAR_ADD, 1001, JIT_SFA_M_MAJOR, 0, 20, "block_decode_s1:64x128"},
    };
    static const int64_t wide_tokens[] = {17, 40, 64};
    for (size_t i = 0; i < sizeof(wide) / sizeof(wide[0]); i++)
        run_tokens(&wide[i], wide_tokens, 3);
}

Test(gpu_blockscaled, forced_clusters_of_two, .timeout = 900) {
    run_all(
        &(bs_case_t){JIT_EPILOGUE_LINEAR, 1000, JIT_SFA_M_MAJOR, 0, 20, "block_tma_mc2:128x128"});
    run_all(&(bs_case_t){JIT_EPILOGUE_LINEAR_ADD, 1176, JIT_SFA_K_MAJOR, 0, 20,
                         "block_tma_mc2:128x160"});
    run_all(&(bs_case_t){JIT_EPILOGUE_LINEAR_SWIGLU, 1048, JIT_SFA_M_MAJOR, -7, 3,
                         "block_tma_mc2:128x192"});
}
