/*
 * The host FP64 reference of the 128x128 block-scaled FP8 GEMM (jit__ref_fp8_block128): cases
 * worked out by hand in the comments (two K groups, the second partial, two N blocks, each
 * epilogue, with row padding full of NaN codes so reading past K shows), then random data
 * against a naive recomputation written here independently (its own E4M3 decoder, long double,
 * and the scales applied per element rather than per group), in both SFA layouts with padded
 * leading dimensions, ragged M, N and K.
 */
#include <criterion/criterion.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "families.h"
#include "family.h"
#include "formats.h"
#include "plan.h"
#include "reference.h"
#include "support.h"

#define F8_0_5 0x30
#define F8_1 0x38
#define F8_2 0x40
#define F8_M1 0xB8
#define F8_NAN 0x7F

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

/*
 * K = 144: group 0 is k 0..127, group 1 is k 128..143 (16 values). LD = 160 bytes per row,
 * bytes 144..159 hold NaN codes. N = 130: B rows 0..127 are N block 0, rows 128, 129 block 1.
 *
 *   A row 0: all 1.0          A row 1: all 2.0 in group 0, all -1.0 in group 1
 *   B row 0: all 0.5          B row 129: all -1.0        every other B row: 0
 *   SFA (k-major, ld 2): row 0 (2, 0.25), row 1 (0.5, 4)
 *   SFB: block 0 (3, 5), block 1 (7, 11)
 *
 *   acc[0][0]   = 2*3 * (128*0.5)  + 0.25*5 * (16*0.5)    =   384 +  10   =   394
 *   acc[0][129] = 2*7 * (128*-1)   + 0.25*11 * (16*-1)    = -1792 -  44   = -1836
 *   acc[1][0]   = 0.5*3 * (128*1)  + 4*5 * (16*-0.5)      =   192 - 160   =    32
 *   acc[1][129] = 0.5*7 * (128*-2) + 4*11 * (16*1)        =  -896 + 704   =  -192
 * mag (sum of |scale * product|):
 *   [0][0] 394, [0][129] 1836, [1][0] 192 + 160 = 352, [1][129] 896 + 704 = 1600.
 * With alpha = 0.5 every value and mag halves.
 */
enum { HM = 2, HN = 130, HK = 144, HLD = 160, HKB = 2 };

static void hand_inputs(uint8_t *a, uint8_t *b, float *sfa, float *sfb) {
    memset(a, F8_NAN, HM * HLD);
    memset(b, F8_NAN, HN * HLD);
    for (int k = 0; k < HK; k++) {
        a[k] = F8_1;
        a[HLD + k] = k < 128 ? F8_2 : F8_M1;
    }
    for (int n = 0; n < HN; n++)
        for (int k = 0; k < HK; k++)
            b[n * HLD + k] = n == 0 ? F8_0_5 : n == HN - 1 ? F8_M1 : 0x00;
    const float sfa_v[HM * HKB] = {2.0f, 0.25f, 0.5f, 4.0f};
    const float sfb_v[2 * HKB] = {3.0f, 5.0f, 7.0f, 11.0f};
    memcpy(sfa, sfa_v, sizeof(sfa_v));
    memcpy(sfb, sfb_v, sizeof(sfb_v));
}

Test(block128_ref, linear_by_hand_both_layouts) {
    static uint8_t a[HM * HLD], b[HN * HLD];
    float sfa[HM * HKB], sfb[2 * HKB];
    hand_inputs(a, b, sfa, sfb);
    /* The same scales m-major with a padded leading dimension of 3: sfa_m[kb * 3 + m]. */
    float sfa_m[HKB * 3] = {sfa[0], sfa[2], NAN, sfa[1], sfa[3], NAN};
    jit__gemm_spec_t s = spec_of(HN, HK, JIT_EPILOGUE_LINEAR);
    double out[HM * HN], mag[HM * HN];
    for (int layout = 0; layout < 2; layout++) {
        if (layout == 0)
            jit__ref_fp8_block128(&s, HM, a, HLD, b, HLD, sfa, HKB, 1, sfb, NULL, 0, 0.5f, out,
                                  mag);
        else
            jit__ref_fp8_block128(&s, HM, a, HLD, b, HLD, sfa_m, 1, 3, sfb, NULL, 0, 0.5f, out,
                                  mag);
        const double want[4] = {197, -918, 16, -96}, want_mag[4] = {197, 918, 176, 800};
        const int idx[4] = {0, HN - 1, HN, 2 * HN - 1};
        for (int i = 0; i < 4; i++) {
            cr_expect_eq(out[idx[i]], want[i], "layout %d out[%d] = %.17g, expected %.17g", layout,
                         idx[i], out[idx[i]], want[i]);
            cr_expect_eq(mag[idx[i]], want_mag[i], "layout %d mag[%d] = %.17g, expected %.17g",
                         layout, idx[i], mag[idx[i]], want_mag[i]);
        }
        /* Every B row between holds zeros: exactly 0, and no NaN from the padding. */
        for (int n = 1; n < HN - 1; n++)
            cr_expect(out[n] == 0.0 && out[HN + n] == 0.0, "layout %d column %d", layout, n);
    }
}

/* linear_add: residual row stride 131 (the pad a BF16 NaN); residual[0][0] = 1, [0][129] = -2,
 * [1][0] = 0.5, [1][129] = 0.25: out = acc/2 + residual, mag adds |residual|. */
Test(block128_ref, linear_add_by_hand) {
    static uint8_t a[HM * HLD], b[HN * HLD];
    float sfa[HM * HKB], sfb[2 * HKB];
    hand_inputs(a, b, sfa, sfb);
    static uint16_t res[HM * 131];
    for (int i = 0; i < HM * 131; i++)
        res[i] = (i % 131) == 130 ? 0x7FC0 : 0x0000;
    res[0] = 0x3F80;         /* 1 */
    res[129] = 0xC000;       /* -2 */
    res[131] = 0x3F00;       /* 0.5 */
    res[131 + 129] = 0x3E80; /* 0.25 */
    jit__gemm_spec_t s = spec_of(HN, HK, JIT_EPILOGUE_LINEAR_ADD);
    double out[HM * HN], mag[HM * HN];
    jit__ref_fp8_block128(&s, HM, a, HLD, b, HLD, sfa, HKB, 1, sfb, res, 131, 0.5f, out, mag);
    cr_expect_eq(out[0], 198.0);
    cr_expect_eq(out[HN - 1], -920.0);
    cr_expect_eq(out[HN], 16.5);
    cr_expect_eq(out[2 * HN - 1], -95.75);
    cr_expect_eq(mag[0], 198.0);
    cr_expect_eq(mag[HN - 1], 920.0);
    cr_expect_eq(mag[2 * HN - 1], 800.25);
}

static double silu_d(double x) {
    return x / (1.0 + exp(-x));
}

/* linear_swiglu with N = 256 (two N blocks, 128 output columns): B row 2 (gate 1) all 0.5,
 * B row 3 (up 1) all 1.0, B row 130 (gate 65, block 1) all 1.0, B row 131 (up 65) all -1.0;
 * others 0. A row 0 all 1.0, K = 144, SFA row 0 (2, 0.25), SFB block 0 (0.25, 1), block 1
 * (0.5, 0.125), alpha 1:
 *   gate 1 = 2*0.25*64 + 0.25*1*8   = 34    up 1  = 2*0.25*128 + 0.25*1*16   = 68
 *   gate 65 = 2*0.5*128 + 0.25*0.125*16 = 128.5   up 65 = -128.5
 * out[0][1] = silu(34) * 68, out[0][65] = silu(128.5) * -128.5, others 0. */
Test(block128_ref, linear_swiglu_by_hand) {
    enum { N = 256, NB = 2 };
    static uint8_t a[HLD], b[N * HLD];
    memset(a, F8_NAN, sizeof(a));
    memset(b, F8_NAN, sizeof(b));
    for (int k = 0; k < HK; k++) {
        a[k] = F8_1;
        for (int n = 0; n < N; n++)
            b[n * HLD + k] = n == 2 ? F8_0_5 : n == 3 || n == 130 ? F8_1 : n == 131 ? F8_M1 : 0;
    }
    const float sfa[HKB] = {2.0f, 0.25f};
    const float sfb[NB * HKB] = {0.25f, 1.0f, 0.5f, 0.125f};
    jit__gemm_spec_t s = spec_of(N, HK, JIT_EPILOGUE_LINEAR_SWIGLU);
    double out[N / 2], mag[N / 2];
    jit__ref_fp8_block128(&s, 1, a, HLD, b, HLD, sfa, HKB, 1, sfb, NULL, 0, 1.0f, out, mag);
    const double w1 = silu_d(34.0) * 68.0, w65 = silu_d(128.5) * -128.5;
    cr_expect(fabs(out[1] - w1) <= 1e-15 * fabs(w1), "out[1] = %.17g, expected %.17g", out[1], w1);
    cr_expect(fabs(out[65] - w65) <= 1e-15 * fabs(w65), "out[65] = %.17g, expected %.17g", out[65],
              w65);
    for (int j = 0; j < N / 2; j++)
        if (j != 1 && j != 65)
            cr_expect_eq(out[j], 0.0, "out[%d] = %g", j, out[j]);
    cr_expect_gt(mag[1], 0.0);
}

/* A spec outside the format gives NaN, never plausible numbers. */
Test(block128_ref, other_formats_give_nan) {
    static uint8_t a[HM * HLD], b[HN * HLD];
    float sfa[HM * HKB], sfb[2 * HKB];
    hand_inputs(a, b, sfa, sfb);
    jit__gemm_spec_t s = spec_of(HN, HK, JIT_EPILOGUE_LINEAR);
    s.scales = JIT_SCALE_ROW;
    double out[HM * HN], mag[HM * HN];
    jit__ref_fp8_block128(&s, HM, a, HLD, b, HLD, sfa, HKB, 1, sfb, NULL, 0, 1.0f, out, mag);
    cr_expect(isnan(out[0]) && isnan(mag[HM * HN - 1]));
    s = spec_of(HN, HK, JIT_EPILOGUE_LINEAR);
    s.b = JIT_DTYPE_E5M2;
    jit__ref_fp8_block128(&s, HM, a, HLD, b, HLD, sfa, HKB, 1, sfb, NULL, 0, 1.0f, out, mag);
    cr_expect(isnan(out[HM * HN - 1]));
}

/* ---- random data against a naive, independent recomputation ------------------------------ */

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

/* M = 5, N = 300 (three N blocks, the last of 44 rows), K = 400 (four groups, the last of 16):
 * every output against sum_k a b SFA[m][k/128] SFB[n/128][k/128], scales spanning 2^-20..2^20,
 * with SFA k-major (ld 6) or m-major (ld 7), both padded with NaN. */
static void check_random(jit_epilogue_t ep, int m_major, uint64_t seed) {
    enum { M = 5, N = 300, K = 400, LDA = 416, LDB = 432, KB = 4, NB = 3, LDR = 301 };
    uint64_t rng = seed;
    jit__gemm_spec_t s = spec_of(N, K, ep);
    const int64_t nout = jit__spec_out_cols(&s);
    uint8_t *a = malloc(M * LDA), *b = malloc(N * LDB);
    float sfa[7 * KB], sfb[NB * KB];
    uint16_t *res = malloc(sizeof(uint16_t) * M * LDR);
    cr_assert(a && b && res);
    for (int i = 0; i < M * LDA; i++)
        a[i] = (i % LDA) < K ? random_code(&rng) : F8_NAN;
    for (int i = 0; i < N * LDB; i++)
        b[i] = (i % LDB) < K ? random_code(&rng) : F8_NAN;
    for (int i = 0; i < 7 * KB; i++)
        sfa[i] = NAN;
    const int64_t sm = m_major ? 1 : 6, sk = m_major ? 7 : 1;
    for (int r = 0; r < M; r++)
        for (int g = 0; g < KB; g++)
            sfa[r * sm + g * sk] =
                ldexpf((float)jt_rng_uniform(&rng, 1.0, 2.0), (int)(jt_rng_next(&rng) % 41) - 20);
    for (int i = 0; i < NB * KB; i++)
        sfb[i] = ldexpf((float)jt_rng_uniform(&rng, -2.0, 2.0), (int)(jt_rng_next(&rng) % 41) - 20);
    for (int i = 0; i < M * LDR; i++)
        res[i] = jit__bf16_encode((float)jt_rng_uniform(&rng, -1e3, 1e3));
    const float alpha = (float)jt_rng_uniform(&rng, 0.25, 4.0);

    double *out = malloc(sizeof(double) * (size_t)(M * nout));
    double *mag = malloc(sizeof(double) * (size_t)(M * nout));
    cr_assert(out && mag);
    jit__ref_fp8_block128(&s, M, a, LDA, b, LDB, sfa, sm, sk, sfb, res, LDR, alpha, out, mag);

    /* The same through the family-table form, which takes the strides from jit__ref_inputs_t. */
    jit__ref_inputs_t in = {.m = M,
                            .a = a,
                            .lda_bytes = LDA,
                            .b = b,
                            .ldb_bytes = LDB,
                            .scale_a = sfa,
                            .scale_b = sfb,
                            .residual = res,
                            .ldr = LDR,
                            .alpha = alpha,
                            .sfa_stride_m = sm,
                            .sfa_stride_k = sk};
    double *out2 = malloc(sizeof(double) * (size_t)(M * nout));
    cr_assert(out2);
    jit__ref_fp8_block128_of(&s, &in, out2, NULL);
    cr_expect_eq(memcmp(out, out2, sizeof(double) * (size_t)(M * nout)), 0);

    for (int r = 0; r < M; r++) {
        for (int64_t j = 0; j < nout; j++) {
            long double v[2] = {0, 0}, v_abs[2] = {0, 0};
            const int64_t cols = ep == JIT_EPILOGUE_LINEAR_SWIGLU ? 2 : 1;
            for (int64_t c = 0; c < cols; c++) {
                const int64_t n = cols * j + c;
                for (int q = 0; q < K; q++) {
                    long double p = naive_e4m3(a[r * LDA + q]) * naive_e4m3(b[n * LDB + q]) *
                                    (long double)sfa[r * sm + (q / 128) * sk] *
                                    (long double)sfb[(n / 128) * KB + q / 128];
                    v[c] += p;
                    v_abs[c] += fabsl(p);
                }
                v[c] *= alpha;
                v_abs[c] *= fabsl(alpha);
            }
            long double want = v[0];
            /* The reference rounds each sum to about 2^-52 of its magnitude (v_abs); SwiGLU
             * carries that through its slopes (|u silu'(g)| <= 1.1 |u|, and |silu(g)|). */
            long double scale = v_abs[0] + fabsl(want);
            if (ep == JIT_EPILOGUE_LINEAR_SWIGLU) {
                const long double silu = v[0] / (1.0L + expl(-v[0]));
                want = silu * v[1];
                scale = fabsl(want) + 1.1L * fabsl(v[1]) * v_abs[0] + fabsl(silu) * v_abs[1];
            }
            if (ep == JIT_EPILOGUE_LINEAR_ADD) {
                want += (long double)jit__bf16_decode(res[r * LDR + j]);
                scale += fabsl(want);
            }
            const double got = out[r * nout + j];
            scale += 1e-300L;
            cr_expect(fabsl((long double)got - want) <= 1e-13L * scale,
                      "%s %s [%d][%lld]: %.17g, naive %.17Lg", jit_epilogue_name(ep),
                      m_major ? "m-major" : "k-major", r, (long long)j, got, want);
            if (ep == JIT_EPILOGUE_LINEAR)
                cr_expect(fabsl((long double)mag[r * nout + j] - v_abs[0]) <= 1e-13L * v_abs[0],
                          "mag [%d][%lld]", r, (long long)j);
        }
    }
    free(a);
    free(b);
    free(res);
    free(out);
    free(mag);
    free(out2);
}

Test(block128_ref, random_linear_against_naive) {
    check_random(JIT_EPILOGUE_LINEAR, 0, 0x51f1ull);
    check_random(JIT_EPILOGUE_LINEAR, 1, 0x51f2ull);
}

Test(block128_ref, random_linear_add_against_naive) {
    check_random(JIT_EPILOGUE_LINEAR_ADD, 1, 0x52f1ull);
}

Test(block128_ref, random_linear_swiglu_against_naive) {
    check_random(JIT_EPILOGUE_LINEAR_SWIGLU, 0, 0x53f1ull);
    check_random(JIT_EPILOGUE_LINEAR_SWIGLU, 1, 0x53f2ull);
}

/* A scale in the wrong place changes the answer far beyond any tolerance: reading SFA m-major
 * as k-major, or SFB's second group as the first. */
Test(block128_ref, a_misplaced_scale_shows) {
    static uint8_t a[HM * HLD], b[HN * HLD];
    float sfa[HM * HKB], sfb[2 * HKB];
    hand_inputs(a, b, sfa, sfb);
    jit__gemm_spec_t s = spec_of(HN, HK, JIT_EPILOGUE_LINEAR);
    double good[HM * HN], bad[HM * HN];
    jit__ref_fp8_block128(&s, HM, a, HLD, b, HLD, sfa, HKB, 1, sfb, NULL, 0, 1.0f, good, NULL);
    jit__ref_fp8_block128(&s, HM, a, HLD, b, HLD, sfa, 1, HKB, sfb, NULL, 0, 1.0f, bad, NULL);
    cr_expect(fabs(bad[HN] - good[HN]) > 0.1 * fabs(good[HN]), "%g vs %g", bad[HN], good[HN]);
    const float sfb_swapped[2 * HKB] = {sfb[1], sfb[0], sfb[3], sfb[2]};
    jit__ref_fp8_block128(&s, HM, a, HLD, b, HLD, sfa, HKB, 1, sfb_swapped, NULL, 0, 1.0f, bad,
                          NULL);
    cr_expect(fabs(bad[0] - good[0]) > 0.1 * fabs(good[0]), "%g vs %g", bad[0], good[0]);
}
