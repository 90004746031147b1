/*
 * The activation quantizer on the GPU (family quant_fp8_1x128, run on sm_90a), through the
 * public API (jit_context_create with a fresh cache directory, jit_quantize_fp8_1x128), compared
 * bit for bit with the host reference (jit__ref_quant_fp8_1x128) run on the same BF16 input.
 *
 * M runs over {1, 7, 64, 129, 300, 1000, 4001} (every token band), K over {48, 1552, 7184}
 * (multiples of 16, none of 128: one partial group alone, and a partial group after 12 or 56
 * full ones), in both SFA layouts with padded leading dimensions, with and without power-of-two
 * scales. Each row's groups are drawn from kinds that reach every branch of the recipe: values
 * around 1, BF16 subnormals (subnormal FP32 scales), values up to 2^127, zeros (scale 1), one
 * value among zeros, and in a few rows a NaN or an infinity. X's row padding holds the largest
 * BF16, which would change a scale if the kernel read past K. Q (with a padded row stride and two
 * guard rows) is poisoned with 0xAA and SFA (padding and a guard after it) with NaN bytes; the
 * host reference writes into buffers poisoned the same way, and the GPU's buffers must equal
 * them byte for byte, padding and guards included. The one allowance: where the reference
 * writes a NaN code (0x7F), the GPU may write either NaN (0x7F or 0xFF), since the sign of a NaN
 * result is the hardware's choice.
 *
 * A last test feeds the quantizer's output to the 128x128 block-scaled GEMM (jit_gemm) and
 * checks D against the FP64 reference: the layouts the two agree on. Without a GPU (or on
 * another arch) every test skips and says why. Run alone:
 * ctest --test-dir build-gpu -R test_gpu_quant --output-on-failure.
 */
#include <criterion/criterion.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "driver.h"
#include "family.h"
#include "formats.h"
#include "gpu_main.h"
#include "jitgemm.h"
#include "plan.h"
#include "reference.h"
#include "support.h"

#define GUARD_ROWS 2
#define Q_POISON 0xAA
#define X_PAD 0x7F7F /* the largest BF16: a read past K would become the group's amax */
#define MAX_SHOWN 8

JT_GPU_TEST_MAIN()

static const int64_t k_tokens[] = {1, 7, 64, 129, 300, 1000, 4001};
#define N_TOKENS (sizeof(k_tokens) / sizeof(k_tokens[0]))

typedef struct gpu_env {
    const jit__driver_t *drv;
    jit_context_t *ctx;
    char *dir;
} gpu_env_t;

/* The driver, the current CUDA context and a jitgemm context on a fresh cache; skips without a
 * GPU or on an arch other than sm_90a. */
static void env_open(gpu_env_t *e) {
    const char *why = NULL;
    if (!jt_gpu_available(&why))
        cr_skip("GPU test skipped: %s", why ? why : "unknown reason");
    jit__diag_t dg;
    jit__diag_init(&dg);
    cr_assert_eq(jit__driver_get(&e->drv, &dg), JIT_OK, "%s", dg.msg);
    CUcontext cuctx;
    CUdevice dev;
    cr_assert_eq(jit__driver_current_context(e->drv, &cuctx, &dev, &dg), JIT_OK, "%s", dg.msg);
    e->dir = jt_mkdtemp("gpu-quant");
    cr_assert_not_null(e->dir);
    jit_context_options_t opt;
    jit_context_options_init(&opt);
    opt.cache_dir = e->dir;
    jit_status_t st = jit_context_create(&opt, &e->ctx);
    if (st == JIT_UNKNOWN_ARCH || st == JIT_UNSUPPORTED_ARCH) {
        jt_rmtree(e->dir);
        cr_skip("GPU test skipped: this device has no arch profile (%s)", jit_last_error(NULL));
    }
    cr_assert_eq(st, JIT_OK, "jit_context_create: %s", jit_last_error(NULL));
    if (strcmp(jit_context_arch(e->ctx), "sm_90a") != 0) {
        cr_log_info("device arch %s", jit_context_arch(e->ctx));
        jit_context_destroy(e->ctx);
        jt_rmtree(e->dir);
        cr_skip("GPU test skipped: the quantizer has been checked on sm_90a only");
    }
}

static void env_close(gpu_env_t *e) {
    jit_context_destroy(e->ctx);
    jt_rmtree(e->dir);
    free(e->dir);
}

static CUdeviceptr dev_upload(const jit__driver_t *drv, const void *host, size_t bytes) {
    CUdeviceptr p = 0;
    cr_assert_eq(drv->cuMemAlloc(&p, bytes), CUDA_SUCCESS, "cuMemAlloc(%zu)", bytes);
    if (host)
        cr_assert_eq(drv->cuMemcpyHtoD(p, host, bytes), CUDA_SUCCESS, "cuMemcpyHtoD(%zu)", bytes);
    return p;
}

/* ---- inputs -------------------------------------------------------------------------------- */

/* A random BF16: sign, 8 significant bits, exponent in [lo, hi] (below -126: BF16 subnormals). */
static uint16_t random_bf16(uint64_t *rng, int lo, int hi) {
    const int e = lo + (int)(jt_rng_next(rng) % (uint64_t)(hi - lo + 1));
    const double mant = 1.0 + (double)(jt_rng_next(rng) % 128) / 128.0;
    return jit__bf16_encode((float)ldexp(jt_rng_next(rng) & 1 ? -mant : mant, e));
}

static void fill_group(uint64_t *rng, uint16_t *x, int64_t n) {
    static const int k_lo[] = {-8, -133, 100, -60};
    static const int k_hi[] = {8, -118, 127, 60};
    const int kind = (int)(jt_rng_next(rng) % 6);
    if (kind == 4) {
        for (int64_t i = 0; i < n; i++)
            x[i] = jt_rng_next(rng) & 1 ? 0x8000 : 0x0000; /* +-0 */
    } else if (kind == 5) {
        memset(x, 0, (size_t)n * sizeof(*x));
        x[jt_rng_next(rng) % (uint64_t)n] = random_bf16(rng, -30, 30);
    } else {
        for (int64_t i = 0; i < n; i++)
            x[i] = random_bf16(rng, k_lo[kind], k_hi[kind]);
    }
}

/* X [M][lda]: random groups, a NaN in row 1 and an infinity in row 2 (when there are such rows),
 * a zero group in row 0, and the largest BF16 in the row padding. */
static uint16_t *make_x(int64_t m, int64_t k, int64_t lda, uint64_t seed) {
    uint16_t *x = malloc(sizeof(uint16_t) * (size_t)(m * lda));
    cr_assert_not_null(x);
    uint64_t rng = seed;
    for (int64_t r = 0; r < m; r++) {
        for (int64_t k0 = 0; k0 < k; k0 += 128)
            fill_group(&rng, x + r * lda + k0, k0 + 128 < k ? 128 : k - k0);
        for (int64_t c = k; c < lda; c++)
            x[r * lda + c] = X_PAD;
    }
    memset(x, 0, sizeof(uint16_t) * (size_t)(k < 128 ? k : 128));
    if (m > 1)
        x[lda + (int64_t)(jt_rng_next(&rng) % (uint64_t)k)] =
            jt_rng_next(&rng) & 1 ? 0x7FC0 : 0xFFC0;
    if (m > 2)
        x[2 * lda + (int64_t)(jt_rng_next(&rng) % (uint64_t)k)] =
            jt_rng_next(&rng) & 1 ? 0x7F80 : 0xFF80;
    return x;
}

/* ---- one call ------------------------------------------------------------------------------ */

typedef struct layout {
    int64_t ldq, ld_sfa, sm, sk, sfa_count; /* sfa_count: elements, padding and guard included */
} layout_t;

static layout_t layout_of(jit_sfa_layout_t l, int64_t m, int64_t k) {
    const int64_t groups = (k + 127) / 128;
    layout_t o;
    o.ldq = k + 32;
    /* k-major rows of groups + 3, m-major groups of M + 5, and a guard row or group after. */
    o.ld_sfa = l == JIT_SFA_K_MAJOR ? groups + 3 : m + 5;
    o.sm = l == JIT_SFA_K_MAJOR ? o.ld_sfa : 1;
    o.sk = l == JIT_SFA_K_MAJOR ? 1 : o.ld_sfa;
    o.sfa_count = (l == JIT_SFA_K_MAJOR ? m + 1 : groups + 1) * o.ld_sfa;
    return o;
}

/* Compares the whole Q and SFA buffers; returns the number of differences. */
static int64_t compare(int64_t m, int64_t k, const layout_t *L, const uint8_t *q, const uint8_t *qr,
                       const uint32_t *s, const uint32_t *sr, const char *what) {
    int64_t bad = 0;
    const int64_t q_bytes = (m + GUARD_ROWS) * L->ldq;
    for (int64_t i = 0; i < q_bytes; i++) {
        const int64_t row = i / L->ldq, col = i % L->ldq;
        const int nan_either = qr[i] == 0x7F && row < m && col < k && (q[i] & 0x7F) == 0x7F;
        if (q[i] != qr[i] && !nan_either && bad++ < MAX_SHOWN)
            cr_log_error("%s: Q[%lld][%lld] = 0x%02x, reference 0x%02x%s", what, (long long)row,
                         (long long)col, q[i], qr[i],
                         row >= m || col >= k ? " (padding or guard)" : "");
    }
    for (int64_t i = 0; i < L->sfa_count; i++)
        if (s[i] != sr[i] && bad++ < MAX_SHOWN)
            cr_log_error("%s: SFA element %lld = 0x%08x, reference 0x%08x", what, (long long)i,
                         s[i], sr[i]);
    return bad;
}

typedef struct qcase {
    jit_sfa_layout_t layout;
    int pow2;
} qcase_t;

static void run_case(const gpu_env_t *e, const qcase_t *c, int64_t m, int64_t k, uint64_t seed) {
    const jit__driver_t *drv = e->drv;
    const int64_t lda = k + 24;
    const layout_t L = layout_of(c->layout, m, k);
    uint16_t *x = make_x(m, k, lda, seed);
    const size_t q_bytes = (size_t)((m + GUARD_ROWS) * L.ldq), s_bytes = 4 * (size_t)L.sfa_count;
    CUdeviceptr dx = dev_upload(drv, x, sizeof(uint16_t) * (size_t)(m * lda));
    CUdeviceptr dq = dev_upload(drv, NULL, q_bytes), ds = dev_upload(drv, NULL, s_bytes);
    cr_assert_eq(drv->cuMemsetD8(dq, Q_POISON, q_bytes), CUDA_SUCCESS);
    cr_assert_eq(drv->cuMemsetD8(ds, 0xFF, s_bytes), CUDA_SUCCESS);

    jit_problem_t p;
    jit_problem_init(&p);
    p.epilogue = JIT_EPILOGUE_QUANTIZE_FP8_1X128;
    p.m = m;
    p.k = k;
    p.lda = lda;
    p.ldd = L.ldq;
    p.sfa_layout = c->layout;
    p.ld_sfa = L.ld_sfa;
    jit_quantize_operands_t o;
    jit_quantize_operands_init(&o);
    o.x = (const void *)(uintptr_t)dx;
    o.q = (void *)(uintptr_t)dq;
    o.scales = (float *)(uintptr_t)ds;
    o.pow2_scales = c->pow2;
    jit_status_t st = jit_quantize_fp8_1x128(e->ctx, &p, &o, NULL);
    cr_assert_eq(st, JIT_OK, "m=%lld k=%lld: %s: %s", (long long)m, (long long)k,
                 jit_status_name(st), jit_last_error(e->ctx));
    CUresult r = drv->cuCtxSynchronize();
    cr_assert_eq(r, CUDA_SUCCESS, "kernel failed (cuCtxSynchronize %d) for m=%lld k=%lld", (int)r,
                 (long long)m, (long long)k);

    uint8_t *q = malloc(q_bytes), *qr = malloc(q_bytes);
    uint32_t *s = malloc(s_bytes), *sr = malloc(s_bytes);
    cr_assert(q && qr && s && sr);
    cr_assert_eq(drv->cuMemcpyDtoH(q, dq, q_bytes), CUDA_SUCCESS);
    cr_assert_eq(drv->cuMemcpyDtoH(s, ds, s_bytes), CUDA_SUCCESS);
    memset(qr, Q_POISON, q_bytes);
    memset(sr, 0xFF, s_bytes);
    jit__ref_quant_fp8_1x128(m, k, x, lda, c->pow2, qr, L.ldq, (float *)sr, L.sm, L.sk);
    char what[96];
    snprintf(what, sizeof(what), "%s%s m=%lld k=%lld", jit_sfa_layout_name(c->layout),
             c->pow2 ? " pow2" : "", (long long)m, (long long)k);
    const int64_t bad = compare(m, k, &L, q, qr, s, sr, what);
    cr_expect_eq(bad, 0, "%s: %lld bytes or scales differ from the reference", what,
                 (long long)bad);
    drv->cuMemFree(dx);
    drv->cuMemFree(dq);
    drv->cuMemFree(ds);
    free(x);
    free(q);
    free(qr);
    free(s);
    free(sr);
}

static void run_all(const qcase_t *c) {
    static const int64_t k_ks[] = {48, 1552, 7184};
    gpu_env_t e;
    env_open(&e);
    const uint64_t seed = jt_fresh_seed();
    cr_log_info("%s%s: seed 0x%016llx", jit_sfa_layout_name(c->layout), c->pow2 ? " pow2" : "",
                (unsigned long long)seed);
    for (size_t ki = 0; ki < sizeof(k_ks) / sizeof(k_ks[0]); ki++)
        for (size_t i = 0; i < N_TOKENS; i++)
            run_case(&e, c, k_tokens[i], k_ks[ki], seed + 16 * ki + i);
    /* Every M of one band and K shares one kernel: at most one compile per (K, band). */
    jit_stats_t stats;
    jit_stats_init(&stats);
    cr_assert_eq(jit_context_stats(e.ctx, &stats), JIT_OK);
    cr_expect_leq(stats.compiles, 3 * JIT_TOKEN_BANDS);
    env_close(&e);
}

Test(gpu_quant, k_major, .timeout = 900) {
    run_all(&(qcase_t){JIT_SFA_K_MAJOR, 0});
}

Test(gpu_quant, m_major, .timeout = 900) {
    run_all(&(qcase_t){JIT_SFA_M_MAJOR, 0});
}

Test(gpu_quant, k_major_pow2, .timeout = 900) {
    run_all(&(qcase_t){JIT_SFA_K_MAJOR, 1});
}

Test(gpu_quant, m_major_pow2, .timeout = 900) {
    run_all(&(qcase_t){JIT_SFA_M_MAJOR, 1});
}

/* ---- into the GEMM ------------------------------------------------------------------------- */

/* BF16 X -> (Q, SFA m-major) on the GPU -> the 128x128 GEMM with random E4M3 B and SFB, against
 * the FP64 reference of that GEMM from the host reference's Q and SFA (equal to the GPU's, which
 * is checked first). M = 300, N = 1000, K = 1552: a partial last group and a partial N block. */
Test(gpu_quant, feeds_the_block_scaled_gemm, .timeout = 900) {
    gpu_env_t e;
    env_open(&e);
    const jit__driver_t *drv = e.drv;
    enum { M = 300, N = 1000, K = 1552, G = 13, NB = 8, LDQ = K, LD_SFA = M + 4 };
    uint64_t rng = jt_fresh_seed();
    cr_log_info("seed 0x%016llx", (unsigned long long)rng);
    uint16_t *x = malloc(sizeof(uint16_t) * M * K);
    uint8_t *q = malloc(M * K), *qr = malloc(M * K), *b = malloc((size_t)N * K);
    float *s = malloc(sizeof(float) * G * LD_SFA), *sr = malloc(sizeof(float) * G * LD_SFA);
    float *sfb = malloc(sizeof(float) * NB * G);
    uint16_t *d = malloc(sizeof(uint16_t) * M * N);
    double *ref = malloc(sizeof(double) * M * N), *mag = malloc(sizeof(double) * M * N);
    cr_assert(x && q && qr && b && s && sr && sfb && d && ref && mag);
    for (int i = 0; i < M * K; i++)
        x[i] = random_bf16(&rng, -6, 6);
    for (int i = 0; i < N * K; i++) {
        uint8_t c = (uint8_t)(jt_rng_next(&rng) >> 40);
        b[i] = (c & 0x7F) == 0x7F ? 0x38 : c;
    }
    for (int i = 0; i < NB * G; i++)
        sfb[i] = (float)ldexp(1.0 + (double)(jt_rng_next(&rng) % 64) / 64.0, -4);
    memset(sr, 0, sizeof(float) * G * LD_SFA);
    jit__ref_quant_fp8_1x128(M, K, x, K, 0, qr, LDQ, sr, 1, LD_SFA);

    CUdeviceptr dx = dev_upload(drv, x, sizeof(uint16_t) * M * K);
    CUdeviceptr dq = dev_upload(drv, NULL, M * K);
    CUdeviceptr ds = dev_upload(drv, NULL, sizeof(float) * G * LD_SFA);
    cr_assert_eq(drv->cuMemsetD8(ds, 0, sizeof(float) * G * LD_SFA), CUDA_SUCCESS);
    CUdeviceptr db = dev_upload(drv, b, (size_t)N * K);
    CUdeviceptr dsb = dev_upload(drv, sfb, sizeof(float) * NB * G);
    CUdeviceptr dd = dev_upload(drv, NULL, sizeof(uint16_t) * M * N);
    jit_problem_t p;
    jit_problem_init(&p);
    p.epilogue = JIT_EPILOGUE_QUANTIZE_FP8_1X128;
    p.m = M;
    p.k = K;
    p.sfa_layout = JIT_SFA_M_MAJOR;
    p.ld_sfa = LD_SFA;
    jit_quantize_operands_t qo;
    jit_quantize_operands_init(&qo);
    qo.x = (const void *)(uintptr_t)dx;
    qo.q = (void *)(uintptr_t)dq;
    qo.scales = (float *)(uintptr_t)ds;
    cr_assert_eq(jit_quantize_fp8_1x128(e.ctx, &p, &qo, NULL), JIT_OK, "%s", jit_last_error(e.ctx));
    /* The GEMM reads what the quantizer wrote, on the same stream. */
    jit_problem_t g;
    jit_problem_init(&g);
    g.m = M;
    g.n = N;
    g.k = K;
    g.scale_mode = JIT_SCALE_BLOCK_1X128_128X128;
    g.sfa_layout = JIT_SFA_M_MAJOR;
    g.ld_sfa = LD_SFA;
    jit_operands_t go;
    jit_operands_init(&go);
    go.a = (const void *)(uintptr_t)dq;
    go.b = (const void *)(uintptr_t)db;
    go.scale_a = (const void *)(uintptr_t)ds;
    go.scale_b = (const void *)(uintptr_t)dsb;
    go.d = (void *)(uintptr_t)dd;
    cr_assert_eq(jit_gemm(e.ctx, &g, &go, NULL), JIT_OK, "%s", jit_last_error(e.ctx));
    cr_assert_eq(drv->cuCtxSynchronize(), CUDA_SUCCESS);
    cr_assert_eq(drv->cuMemcpyDtoH(q, dq, M * K), CUDA_SUCCESS);
    cr_assert_eq(drv->cuMemcpyDtoH(s, ds, sizeof(float) * G * LD_SFA), CUDA_SUCCESS);
    cr_assert_eq(drv->cuMemcpyDtoH(d, dd, sizeof(uint16_t) * M * N), CUDA_SUCCESS);
    cr_assert_eq(memcmp(q, qr, M * K), 0, "Q differs from the reference");
    cr_assert_eq(memcmp(s, sr, sizeof(float) * G * LD_SFA), 0, "SFA differs from the reference");

    jit__gemm_spec_t spec = {.n = N,
                             .k = K,
                             .a = JIT_DTYPE_E4M3,
                             .b = JIT_DTYPE_E4M3,
                             .out = JIT_DTYPE_BF16,
                             .scales = JIT_SCALE_BLOCK_1X128_128X128,
                             .epilogue = JIT_EPILOGUE_LINEAR,
                             .scale_type = JIT_SCALE_TYPE_F32};
    jit__ref_fp8_block128(&spec, M, qr, LDQ, b, K, sr, 1, LD_SFA, sfb, NULL, 0, 1.0f, ref, mag);
    const jit__family_t *fam = jit__family_find("fp8_block_wgmma");
    cr_assert_not_null(fam);
    int64_t bad = 0;
    for (int i = 0; i < M * N; i++) {
        const double got = jit__bf16_decode(d[i]), tol = fam->tolerance(ref[i], mag[i]);
        if (!(fabs(got - ref[i]) <= tol) && bad++ < MAX_SHOWN)
            cr_log_error("D[%d][%d] = %.8g, reference %.8g, tol %.3g", i / N, i % N, got, ref[i],
                         tol);
    }
    cr_expect_eq(bad, 0, "%lld of %d outputs out of tolerance", (long long)bad, M * N);
    CUdeviceptr bufs[] = {dx, dq, ds, db, dsb, dd};
    for (size_t i = 0; i < sizeof(bufs) / sizeof(bufs[0]); i++)
        drv->cuMemFree(bufs[i]);
    free(x);
    free(q);
    free(qr);
    free(b);
    free(s);
    free(sr);
    free(sfb);
    free(d);
    free(ref);
    free(mag);
    env_close(&e);
}
