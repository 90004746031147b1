/*
 * The FP8 row-scaled host reference: small cases whose results are worked out by hand in the
 * comments (one per epilogue, with padded strides full of NaN codes, so reading past K or
 * mixing up strides shows), then random cases against a naive recomputation written here
 * independently (its own E4M3 decoder, long double sums, no shared helpers).
 */
#include <criterion/criterion.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "formats.h"
#include "plan.h"
#include "reference.h"
#include "support.h"

/* E4M3 codes used below */
#define F8_0 0x00
#define F8_0_5 0x30
#define F8_1 0x38
#define F8_1_5 0x3C
#define F8_2 0x40
#define F8_3 0x44
#define F8_4 0x48
#define F8_M1 0xB8
#define F8_M1_5 0xBC
#define F8_NAN 0x7F

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

/* Rows of 4 values in buffers with a stride of 16 bytes; the padding holds NaN codes. */
static void fill_rows(uint8_t *dst, int rows, const uint8_t (*vals)[4]) {
    memset(dst, F8_NAN, (size_t)rows * 16);
    for (int r = 0; r < rows; r++)
        memcpy(dst + r * 16, vals[r], 4);
}

/*
 * A = [ 1    2    0.5  -1 ]      B = [ 1  1   1  1   ]
 *     [ 3   -1.5  0     2 ]          [ 2  -1  4  0.5 ]
 * sum_k A[m,k] B[n,k]:  [ 2.5  1.5 ]      sum_k |A B|:  [ 4.5  6.5 ]
 *                       [ 3.5  8.5 ]                    [ 6.5  8.5 ]
 * sa = (1, 0.5), sb = (2, -1), alpha = 0.5: scale = 0.5 sa[m] sb[n] = [ 1    -0.5  ]
 *                                                                     [ 0.5  -0.25 ]
 */
static const uint8_t k_a[2][4] = {{F8_1, F8_2, F8_0_5, F8_M1}, {F8_3, F8_M1_5, F8_0, F8_2}};
static const uint8_t k_b[2][4] = {{F8_1, F8_1, F8_1, F8_1}, {F8_2, F8_M1, F8_4, F8_0_5}};
static const float k_sa[2] = {1.0f, 0.5f}, k_sb[2] = {2.0f, -1.0f};

Test(reference, linear_by_hand) {
    uint8_t a[32], b[32];
    fill_rows(a, 2, k_a);
    fill_rows(b, 2, k_b);
    jit__gemm_spec_t s = spec_of(2, 4, JIT_EPILOGUE_LINEAR);
    double out[4], mag[4];
    jit__ref_fp8_rowscaled(&s, 2, a, 16, b, 16, k_sa, k_sb, NULL, 0, 0.5f, out, mag);
    const double want[4] = {2.5, -0.75, 1.75, -2.125};
    const double want_mag[4] = {4.5, 3.25, 3.25, 2.125};
    for (int i = 0; i < 4; i++) {
        cr_expect_eq(out[i], want[i], "out[%d] = %.17g, expected %.17g", i, out[i], want[i]);
        cr_expect_eq(mag[i], want_mag[i], "mag[%d] = %.17g, expected %.17g", i, mag[i],
                     want_mag[i]);
    }
}

/* linear plus residual [[1, -2], [0.5, 0.25]] (BF16, row stride 3, the pad a NaN):
 * out = [[3.5, -2.75], [2.25, -1.875]], mag adds |residual|: [[5.5, 5.25], [3.75, 2.375]]. */
Test(reference, linear_add_by_hand) {
    uint8_t a[32], b[32];
    fill_rows(a, 2, k_a);
    fill_rows(b, 2, k_b);
    const uint16_t res[6] = {0x3F80, 0xC000, 0x7FC0, 0x3F00, 0x3E80, 0x7FC0};
    jit__gemm_spec_t s = spec_of(2, 4, JIT_EPILOGUE_LINEAR_ADD);
    double out[4], mag[4];
    jit__ref_fp8_rowscaled(&s, 2, a, 16, b, 16, k_sa, k_sb, res, 3, 0.5f, out, mag);
    const double want[4] = {3.5, -2.75, 2.25, -1.875};
    const double want_mag[4] = {5.5, 5.25, 3.75, 2.375};
    for (int i = 0; i < 4; i++) {
        cr_expect_eq(out[i], want[i], "out[%d] = %.17g, expected %.17g", i, out[i], want[i]);
        cr_expect_eq(mag[i], want_mag[i], "mag[%d] = %.17g, expected %.17g", i, mag[i],
                     want_mag[i]);
    }
}

static double silu_d(double x) {
    return x / (1.0 + exp(-x));
}

/*
 * SwiGLU, B rows (gate0, up0, gate1, up1) = (k_b[0], k_b[1], zeros, ones), sb = (2, -1, 1, 3),
 * alpha 1, sa = (1, 0.5):
 *   row 0: g0 = 1*2*2.5 = 5,     u0 = 1*(-1)*1.5 = -1.5    -> silu(5) * -1.5
 *          g1 = 0,               u1 = 1*3*2.5 = 7.5        -> 0
 *   row 1: g0 = 0.5*2*3.5 = 3.5, u0 = 0.5*(-1)*8.5 = -4.25 -> silu(3.5) * -4.25
 *          g1 = 0,               u1 = 0.5*3*3.5 = 5.25     -> 0
 * mag of row 0, column 0: |u0 silu'(5)| * (2 * 4.5) + |silu(5)| * (1 * 6.5); columns with a zero
 * gate row have mag_g = 0 and silu(0) = 0, so mag 0.
 */
Test(reference, linear_swiglu_by_hand) {
    uint8_t a[32], b[64];
    fill_rows(a, 2, k_a);
    const uint8_t brows[4][4] = {{F8_1, F8_1, F8_1, F8_1},
                                 {F8_2, F8_M1, F8_4, F8_0_5},
                                 {F8_0, F8_0, F8_0, F8_0},
                                 {F8_1, F8_1, F8_1, F8_1}};
    fill_rows(b, 4, brows);
    const float sb[4] = {2.0f, -1.0f, 1.0f, 3.0f};
    jit__gemm_spec_t s = spec_of(4, 4, JIT_EPILOGUE_LINEAR_SWIGLU);
    double out[4], mag[4];
    jit__ref_fp8_rowscaled(&s, 2, a, 16, b, 16, k_sa, sb, NULL, 0, 1.0f, out, mag);
    const double want[4] = {silu_d(5.0) * -1.5, 0.0, silu_d(3.5) * -4.25, 0.0};
    for (int i = 0; i < 4; i++)
        cr_expect(fabs(out[i] - want[i]) <= 1e-15 * fabs(want[i]),
                  "out[%d] = %.17g, expected %.17g", i, out[i], want[i]);
    double sig5 = 1.0 / (1.0 + exp(-5.0));
    double slope5 = sig5 * (1.0 + 5.0 * (1.0 - sig5));
    double want_mag0 = 1.5 * fmin(fabs(slope5) + 0.5 * 9.0 / 256.0, 1.1) * 9.0 +
                       fabs(silu_d(5.0)) * 6.5;
    cr_expect(fabs(mag[0] - want_mag0) <= 1e-14 * want_mag0, "mag[0] = %.17g, expected %.17g",
              mag[0], want_mag0);
    cr_expect_eq(mag[1], 0.0);
    cr_expect_eq(mag[3], 0.0);
    /* silu(5) = 4.96653..., so out[0] is about -7.4498 */
    cr_expect(out[0] < -7.44 && out[0] > -7.46, "out[0] = %g", out[0]);
}

/* ---- random data against a naive, independent recomputation ------------------------------ */

/* E4M3 decoded from its fields, written without the library's codec. */
static long double naive_e4m3(uint8_t c) {
    int e = (c >> 3) & 0xF, m = c & 7;
    long double v = e == 0 ? (long double)m / 512.0L : ldexpl(1.0L + (long double)m / 8.0L, e - 7);
    return (c & 0x80) ? -v : v;
}

static uint8_t random_code(uint64_t *rng) {
    for (;;) {
        uint8_t c = (uint8_t)(jt_rng_next(rng) >> 24);
        if ((c & 0x7F) != 0x7F)
            return c;
    }
}

static void check_random(jit_epilogue_t ep, uint64_t seed) {
    uint64_t rng = seed;
    const int64_t m = 7, n = 14, k = 48, lda = 64, ldb = 80, ldr = 17;
    jit__gemm_spec_t s = spec_of(n, k, ep);
    const int64_t nout = jit__spec_out_cols(&s);
    uint8_t *a = malloc((size_t)(m * lda)), *b = malloc((size_t)(n * ldb));
    for (int64_t i = 0; i < m * lda; i++)
        a[i] = (i % lda) < k ? random_code(&rng) : F8_NAN;
    for (int64_t i = 0; i < n * ldb; i++)
        b[i] = (i % ldb) < k ? random_code(&rng) : F8_NAN;
    float sa[7], sb[14];
    for (int i = 0; i < m; i++)
        sa[i] = (float)jt_rng_uniform(&rng, 0.01, 2.0);
    for (int i = 0; i < n; i++)
        sb[i] = (float)jt_rng_uniform(&rng, -2.0, 2.0);
    uint16_t res[7 * 17];
    for (int i = 0; i < m * ldr; i++)
        res[i] = jit__bf16_encode((float)jt_rng_uniform(&rng, -1e4, 1e4));
    float alpha = (float)jt_rng_uniform(&rng, 0.25, 4.0);

    double *out = malloc(sizeof(double) * (size_t)(m * nout));
    double *mag = malloc(sizeof(double) * (size_t)(m * nout));
    jit__ref_fp8_rowscaled(&s, m, a, lda, b, ldb, sa, sb, res, ldr, alpha, out, mag);
    double *out2 = malloc(sizeof(double) * (size_t)(m * nout));
    jit__ref_fp8_rowscaled(&s, m, a, lda, b, ldb, sa, sb, res, ldr, alpha, out2, NULL);

    for (int64_t r = 0; r < m; r++) {
        for (int64_t j = 0; j < nout; j++) {
            long double want, want_abs;
            if (ep == JIT_EPILOGUE_LINEAR_SWIGLU) {
                long double g = 0, u = 0;
                for (int64_t q = 0; q < k; q++) {
                    g += naive_e4m3(a[r * lda + q]) * naive_e4m3(b[(2 * j) * ldb + q]);
                    u += naive_e4m3(a[r * lda + q]) * naive_e4m3(b[(2 * j + 1) * ldb + q]);
                }
                g *= (long double)alpha * sa[r] * sb[2 * j];
                u *= (long double)alpha * sa[r] * sb[2 * j + 1];
                want = g / (1.0L + expl(-g)) * u;
                want_abs = 0;
            } else {
                long double acc = 0, acc_abs = 0;
                for (int64_t q = 0; q < k; q++) {
                    long double p = naive_e4m3(a[r * lda + q]) * naive_e4m3(b[j * ldb + q]);
                    acc += p;
                    acc_abs += fabsl(p);
                }
                long double sc = (long double)alpha * sa[r] * sb[j];
                want = acc * sc;
                want_abs = acc_abs * fabsl(sc);
                if (ep == JIT_EPILOGUE_LINEAR_ADD) {
                    uint32_t bits = (uint32_t)res[r * ldr + j] << 16;
                    float rv;
                    memcpy(&rv, &bits, sizeof(rv));
                    want += rv;
                    want_abs += fabsl((long double)rv);
                }
            }
            double got = out[r * nout + j];
            double tol = 1e-13 * (fabs((double)want) + 1e-300) + 1e-13 * (double)want_abs;
            cr_expect(isfinite(got), "[%lld][%lld] not finite: %g (read outside K?)", (long long)r,
                      (long long)j, got);
            cr_expect(fabs(got - (double)want) <= tol, "%s [%lld][%lld]: %.17g vs naive %.17Lg",
                      jit_epilogue_name(ep), (long long)r, (long long)j, got, want);
            cr_expect_eq(got, out2[r * nout + j], "mag = NULL changes the result");
            if (ep != JIT_EPILOGUE_LINEAR_SWIGLU)
                cr_expect(fabs(mag[r * nout + j] - (double)want_abs) <= 1e-13 * (double)want_abs,
                          "mag [%lld][%lld]: %.17g vs %.17Lg", (long long)r, (long long)j,
                          mag[r * nout + j], want_abs);
            else
                cr_expect(mag[r * nout + j] >= 0 && isfinite(mag[r * nout + j]));
        }
    }
    free(a);
    free(b);
    free(out);
    free(out2);
    free(mag);
}

Test(reference, linear_matches_naive_on_random_data) {
    check_random(JIT_EPILOGUE_LINEAR, jt_fresh_seed());
}

Test(reference, linear_add_matches_naive_on_random_data) {
    check_random(JIT_EPILOGUE_LINEAR_ADD, jt_fresh_seed());
}

Test(reference, linear_swiglu_matches_naive_on_random_data) {
    check_random(JIT_EPILOGUE_LINEAR_SWIGLU, jt_fresh_seed());
}

/* The swiglu mag bounds the output's first-order sensitivity: perturbing every product by a
 * relative 1e-9 moves the output by no more than 1e-9 * mag (plus second-order terms). */
Test(reference, swiglu_mag_bounds_the_sensitivity) {
    uint64_t rng = jt_fresh_seed();
    const int64_t k = 32;
    uint8_t a[32], b[64];
    for (int i = 0; i < 32; i++)
        a[i] = random_code(&rng);
    for (int i = 0; i < 64; i++)
        b[i] = random_code(&rng);
    const float sa[1] = {1.0f / 256.0f};
    const float sb[2] = {1.0f / 256.0f, 1.0f / 256.0f};
    jit__gemm_spec_t s = spec_of(2, k, JIT_EPILOGUE_LINEAR_SWIGLU);
    double out, mag;
    jit__ref_fp8_rowscaled(&s, 1, a, k, b, k, sa, sb, NULL, 0, 1.0f, &out, &mag);
    /* Worst case by hand: scale every |product| term of g and u up or down by eps. */
    double g = 0, u = 0, ga = 0, ua = 0;
    for (int q = 0; q < k; q++) {
        double pg = jit__e4m3_decode(a[q]) * jit__e4m3_decode(b[q]) * sa[0] * sb[0];
        double pu = jit__e4m3_decode(a[q]) * jit__e4m3_decode(b[32 + q]) * sa[0] * sb[1];
        g += pg;
        u += pu;
        ga += fabs(pg);
        ua += fabs(pu);
    }
    const double eps = 1e-9;
    double worst = 0;
    for (int sg = -1; sg <= 1; sg += 2)
        for (int su = -1; su <= 1; su += 2) {
            double v = silu_d(g + sg * eps * ga) * (u + su * eps * ua);
            worst = fmax(worst, fabs(v - out));
        }
    cr_expect(worst <= eps * mag * 1.001 + 1e-300, "perturbation %g exceeds eps*mag %g", worst,
              eps * mag);
    cr_expect(worst >= eps * mag * 0.5, "mag %g is far looser than the perturbation %g", mag,
              worst / eps);
}

/* The swiglu magnitude must bound what a gate error within the kernels' accumulation bound
 * (2^-10 of the gate's magnitude) does to the output, also where that error is not small against
 * the scale on which silu bends: with block scales one 128-K block can carry a gate of a few
 * units at a magnitude in the thousands, and the first-order term |u silu'(g)| g_mag is then far
 * below the true change (at g = -1.5 the slope is -0.04, over an error of 2 it averages 0.3). */
Test(reference, swiglu_mag_bounds_gate_errors_past_first_order) {
    const double u = 10.0;
    const double g_mags[] = {1.0, 50.0, 2000.0, 1e5};
    for (size_t i = 0; i < sizeof g_mags / sizeof g_mags[0]; i++)
        for (double g = -12.0; g <= 12.0; g += 0.125) {
            double out, mag;
            jit__ref_swiglu(g, g_mags[i], u, 0.0, &out, &mag);
            const double e_max = 0x1p-10 * g_mags[i];
            for (int t = -8; t <= 8; t++) {
                const double e = e_max * t / 8.0;
                const double moved = (g + e) / (1.0 + exp(-(g + e))) * u;
                cr_expect(fabs(moved - out) <= 0x1p-10 * mag * (1.0 + 1e-12),
                          "g %.4g, g_mag %.4g, gate error %.4g: output moves %.6g, bound %.6g", g,
                          g_mags[i], e, fabs(moved - out), 0x1p-10 * mag);
            }
        }
}
