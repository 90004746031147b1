/*
 * The host reference of the activation quantizer (jit__ref_quant_fp8_1x128): cases worked out by
 * hand in the comments (a full and a partial group, a zero group, ties, the E4M3 underflow
 * threshold, a subnormal amax whose rounded scale saturates the group's largest element, the
 * power-of-two scales), non-finite inputs, then random rows against an independent model
 * written here in double (the FP32 results taken from double: division computed in double and
 * rounded to float is the correctly rounded float quotient, since 53 >= 2 x 24 + 2), in both SFA
 * layouts with padded leading dimensions, ragged M and a K that is a multiple of 16 but not of
 * 128; no byte of the padding may change.
 */
#include <criterion/criterion.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "formats.h"
#include "reference.h"
#include "support.h"

#define BF16_NAN 0x7FC0
#define BF16_NEG_NAN 0xFFC0
#define BF16_INF 0x7F80
#define Q_POISON 0xAA

static uint16_t bf(float x) {
    uint16_t b = jit__bf16_encode(x);
    cr_assert_eq(jit__bf16_decode(b), x, "%g is not a BF16 value", (double)x);
    return b;
}

static uint32_t bits(float x) {
    uint32_t b;
    memcpy(&b, &x, sizeof(b));
    return b;
}

/*
 * M = 3, K = 144: group 0 is k 0..127, group 1 is k 128..143. X rows are 152 wide (k 144..151
 * hold BF16 NaN, so a read past K would show), Q rows 160 bytes (k 144..159 poisoned 0xAA), SFA
 * k-major with ld 3 (column 2 holds NaN).
 *
 * Row 0, group 0: 1.0 everywhere, x[5] = -448: amax 448, scale 1; 1.0 -> 0x38, -448 -> 0xFE.
 *        group 1: 7 and 3.5 alternating: amax 7, scale 7/448 = 2^-6 exactly; 7 -> 448 (0x7E),
 *        3.5 -> 224 (0x76).
 * Row 1, group 0: zeros, odd k -0.0: scale 1, codes 0x00 and 0x80.
 *        group 1: x[130] = 2^-133 (the smallest BF16 subnormal), the rest 0: amax 2^-133, and
 *        2^-133 / 448 = 2^-149 x 1024/7 = 146.29 x 2^-149, a subnormal float: 146 x 2^-149
 *        (bits 0x92). 2^-133 / that = 65536/146 = 448.9, which rounds to 448 (0x7E). With
 *        power-of-two scales: 2^-126, and 2^-133 / 2^-126 = 2^-7 = 4 x 2^-9: code 0x04.
 * Row 2, group 0: x[0] = 448 (scale 1); ties go to the even code: 17 -> 16 (0x58), 19 -> 20
 *        (0x5A); 2^-10, half the smallest E4M3 subnormal, -> 0 (0x00), -2^-10 -> 0x80;
 *        1.5 x 2^-10 -> 2^-9 (0x01). Every other element 0.
 *        group 1: 1024 and -2: amax 1024, scale 1024/448 = 16/7 (float 0x40124925); 1024 / that
 *        = 448 (0x7E); -2 / that = -0.875 (0xB6). With power-of-two scales: 4, so 1024 -> 256
 *        (0x78) and -2 -> -0.5 (0xB0).
 */
enum { HM = 3, HK = 144, HLDX = 152, HLDQ = 160, HLDS = 3 };

static void hand_x(uint16_t *x) {
    for (int i = 0; i < HM * HLDX; i++)
        x[i] = BF16_NAN;
    for (int k = 0; k < 128; k++)
        x[k] = bf(1.0f);
    x[5] = bf(-448.0f);
    for (int k = 128; k < HK; k++)
        x[k] = bf(k % 2 ? 3.5f : 7.0f);
    uint16_t *r1 = x + HLDX;
    for (int k = 0; k < HK; k++)
        r1[k] = k < 128 && k % 2 ? bf(-0.0f) : bf(0.0f);
    r1[130] = 0x0001;
    uint16_t *r2 = x + 2 * HLDX;
    for (int k = 0; k < HK; k++)
        r2[k] = bf(0.0f);
    r2[0] = bf(448.0f);
    r2[1] = bf(17.0f);
    r2[2] = bf(19.0f);
    r2[3] = bf(ldexpf(1.0f, -10));
    r2[4] = bf(-ldexpf(1.0f, -10));
    r2[5] = bf(1.5f * ldexpf(1.0f, -10));
    r2[128] = bf(1024.0f);
    r2[129] = bf(-2.0f);
}

static void run_hand(int pow2, uint8_t *q, float *sfa) {
    uint16_t x[HM * HLDX];
    hand_x(x);
    memset(q, Q_POISON, HM * HLDQ);
    for (int i = 0; i < HM * HLDS; i++)
        sfa[i] = NAN;
    jit__ref_quant_fp8_1x128(HM, HK, x, HLDX, pow2, q, HLDQ, sfa, HLDS, 1);
    for (int r = 0; r < HM; r++) {
        for (int k = HK; k < HLDQ; k++)
            cr_expect_eq(q[r * HLDQ + k], Q_POISON, "row %d byte %d past K was written", r, k);
        cr_expect(isnan(sfa[r * HLDS + 2]), "row %d: SFA padding written", r);
    }
}

Test(quant_ref, hand_cases) {
    uint8_t q[HM * HLDQ];
    float sfa[HM * HLDS];
    run_hand(0, q, sfa);
    cr_expect_eq(sfa[0], 1.0f);
    cr_expect_eq(sfa[1], ldexpf(1.0f, -6));
    cr_expect_eq(q[0], 0x38);
    cr_expect_eq(q[5], 0xFE);
    cr_expect_eq(q[128], 0x7E);
    cr_expect_eq(q[129], 0x76);
    const uint8_t *q1 = q + HLDQ, *q2 = q + 2 * HLDQ;
    cr_expect_eq(sfa[HLDS], 1.0f, "a group of zeros gets scale 1");
    cr_expect_eq(q1[0], 0x00);
    cr_expect_eq(q1[1], 0x80, "-0 keeps its sign");
    cr_expect_eq(bits(sfa[HLDS + 1]), 0x92u, "subnormal scale: %a", (double)sfa[HLDS + 1]);
    cr_expect_eq(q1[130], 0x7E, "the largest element is 448 under a rounded subnormal scale");
    cr_expect_eq(q1[131], 0x00);
    cr_expect_eq(sfa[2 * HLDS], 1.0f);
    cr_expect_eq(q2[0], 0x7E);
    cr_expect_eq(q2[1], 0x58, "17 ties to 16");
    cr_expect_eq(q2[2], 0x5A, "19 ties to 20");
    cr_expect_eq(q2[3], 0x00, "2^-10 ties to 0");
    cr_expect_eq(q2[4], 0x80, "-2^-10 ties to -0");
    cr_expect_eq(q2[5], 0x01, "1.5 x 2^-10 rounds up to 2^-9");
    cr_expect_eq(bits(sfa[2 * HLDS + 1]), 0x40124925u, "1024/448: %a", (double)sfa[2 * HLDS + 1]);
    cr_expect_eq(q2[128], 0x7E);
    cr_expect_eq(q2[129], 0xB6);
}

Test(quant_ref, power_of_two_scales) {
    uint8_t q[HM * HLDQ];
    float sfa[HM * HLDS];
    run_hand(1, q, sfa);
    cr_expect_eq(sfa[0], 1.0f, "448 / 448 is a power of two already");
    cr_expect_eq(sfa[1], ldexpf(1.0f, -6));
    cr_expect_eq(q[5], 0xFE);
    cr_expect_eq(q[129], 0x76);
    cr_expect_eq(sfa[HLDS], 1.0f);
    cr_expect_eq(sfa[HLDS + 1], ldexpf(1.0f, -126), "a subnormal scale goes up to 2^-126");
    cr_expect_eq(q[HLDQ + 130], 0x04);
    cr_expect_eq(sfa[2 * HLDS + 1], 4.0f);
    cr_expect_eq(q[2 * HLDQ + 128], 0x78);
    cr_expect_eq(q[2 * HLDQ + 129], 0xB0);
}

/* The scale rule alone: zero, the rounding up, a power of two kept, the floor, infinity. */
Test(quant_ref, scale_rule) {
    cr_expect_eq(jit__ref_quant_scale(0.0f, 0), 1.0f);
    cr_expect_eq(jit__ref_quant_scale(0.0f, 1), 1.0f);
    cr_expect_eq(jit__ref_quant_scale(896.0f, 0), 2.0f);
    cr_expect_eq(jit__ref_quant_scale(896.0f, 1), 2.0f);
    cr_expect_eq(jit__ref_quant_scale(900.0f, 1), 4.0f);
    cr_expect_eq(jit__ref_quant_scale(3.0f, 1), 0.0078125f, "3/448 = 0.0067 -> 2^-7");
    cr_expect_eq(jit__ref_quant_scale(ldexpf(1.0f, -120), 1), ldexpf(1.0f, -126),
                 "2^-120 / 448 is below 2^-126: the floor");
    cr_expect_eq(jit__ref_quant_scale(ldexpf(1.0f, -100), 1), ldexpf(1.0f, -108),
                 "2^-100 / 448 = 2^-108.8 -> 2^-108");
    cr_expect(isinf(jit__ref_quant_scale(INFINITY, 0)) && isinf(jit__ref_quant_scale(INFINITY, 1)));
    /* The largest BF16, 0x7F7F = 3.39e38: its scale is finite and a power of two <= 2^120. */
    const float big = jit__bf16_decode(0x7F7F);
    cr_expect_eq(jit__ref_quant_scale(big, 1), ldexpf(1.0f, 120));
    cr_expect(isfinite(jit__ref_quant_scale(big, 0)));
}

/*
 * Non-finite inputs (K = 32, one partial group per row). A NaN is skipped by amax and written as
 * a NaN code (0x7F: the reference writes the positive one; the GPU may write either sign). An
 * infinity makes the scale infinite: finite elements become +-0, the infinity NaN.
 */
Test(quant_ref, nan_and_inf_inputs) {
    enum { M = 2, K = 32 };
    uint16_t x[M * K];
    for (int k = 0; k < K; k++) {
        x[k] = bf(k % 2 ? -1.0f : 2.0f);
        x[K + k] = bf(k % 2 ? -1.0f : 1.0f);
    }
    x[3] = BF16_NAN;
    x[4] = BF16_NEG_NAN;
    x[K] = BF16_INF;
    uint8_t q[M * K];
    float sfa[M];
    jit__ref_quant_fp8_1x128(M, K, x, K, 0, q, K, sfa, 1, M);
    cr_expect_eq(sfa[0], 2.0f / 448.0f, "NaN skipped: amax 2");
    cr_expect_eq(q[0], 0x7E);
    cr_expect_eq(q[1], 0xF6, "-1 / (2/448) = -224");
    cr_expect_eq(q[3], 0x7F);
    cr_expect_eq(q[4], 0x7F, "every NaN is written as 0x7F");
    cr_expect(isinf(sfa[1]) && sfa[1] > 0);
    cr_expect_eq(q[K], 0x7F, "inf / inf is NaN");
    cr_expect_eq(q[K + 1], 0x80, "-1 / inf = -0");
    cr_expect_eq(q[K + 2], 0x00);
}

/* ---- random rows against an independent model ------------------------------------------- */

/* A random BF16: sign, 8 significant bits, exponent in [lo, hi]; BF16's subnormal range when
 * lo is below -126. */
static uint16_t random_bf16(uint64_t *rng, int lo, int hi) {
    const int e = lo + (int)(jt_rng_next(rng) % (uint64_t)(hi - lo + 1));
    const double mant = 1.0 + (double)(jt_rng_next(rng) % 128) / 128.0;
    const float v = (float)ldexp(jt_rng_next(rng) & 1 ? -mant : mant, e);
    return jit__bf16_encode(v);
}

/* What each group's data looks like, so that every branch of the rule is hit. */
static void fill_group(uint64_t *rng, uint16_t *x, int64_t n, int kind) {
    static const int k_lo[] = {-8, -133, 100, -40};
    static const int k_hi[] = {8, -120, 127, 40};
    if (kind == 4) { /* zeros, some negative */
        for (int64_t i = 0; i < n; i++)
            x[i] = jt_rng_next(rng) & 1 ? 0x8000 : 0x0000;
        return;
    }
    if (kind == 5) { /* one element, the rest zero */
        memset(x, 0, (size_t)n * sizeof(*x));
        x[jt_rng_next(rng) % (uint64_t)n] = random_bf16(rng, -20, 20);
        return;
    }
    for (int64_t i = 0; i < n; i++)
        x[i] = random_bf16(rng, k_lo[kind], k_hi[kind]);
}

/* The smallest power of two >= s, at least 2^-126 (frexp: s = f x 2^e with f in [0.5, 1)). */
static float model_pow2(float s) {
    if (isinf(s))
        return s;
    int e;
    const double f = frexp((double)s, &e);
    const double p = f == 0.5 ? (double)s : ldexp(1.0, e);
    return (float)(p < ldexp(1.0, -126) ? ldexp(1.0, -126) : p);
}

static void check_random(int layout_m_major, int pow2, uint64_t seed) {
    enum { M = 37, K = 1552, LDX = K + 24, LDQ = K + 32, G = (K + 127) / 128 };
    const int64_t ld_sfa = layout_m_major ? M + 5 : G + 3;
    const int64_t sm = layout_m_major ? 1 : ld_sfa, sk = layout_m_major ? ld_sfa : 1;
    const int64_t n_sfa = layout_m_major ? G * ld_sfa : M * ld_sfa;
    uint16_t *x = malloc(sizeof(uint16_t) * M * LDX);
    uint8_t *q = malloc(M * LDQ);
    float *sfa = malloc(sizeof(float) * (size_t)n_sfa);
    cr_assert(x && q && sfa);
    uint64_t rng = seed;
    for (int64_t i = 0; i < M * LDX; i++)
        x[i] = BF16_NAN;
    for (int64_t r = 0; r < M; r++)
        for (int64_t g = 0; g < G; g++) {
            const int64_t k0 = g * 128, n = k0 + 128 < K ? 128 : K - k0;
            fill_group(&rng, x + r * LDX + k0, n, (int)(jt_rng_next(&rng) % 6));
        }
    memset(q, Q_POISON, M * LDQ);
    for (int64_t i = 0; i < n_sfa; i++)
        sfa[i] = NAN;
    jit__ref_quant_fp8_1x128(M, K, x, LDX, pow2, q, LDQ, sfa, sm, sk);
    int64_t bad = 0;
    for (int64_t r = 0; r < M && bad < 8; r++) {
        for (int64_t g = 0; g < G; g++) {
            const int64_t k0 = g * 128, k1 = k0 + 128 < K ? k0 + 128 : K;
            double amax = 0;
            for (int64_t k = k0; k < k1; k++)
                amax = fmax(amax, fabs((double)jit__bf16_decode(x[r * LDX + k])));
            float want = amax == 0 ? 1.0f : (float)(amax / 448.0);
            if (pow2)
                want = model_pow2(want);
            const float got = sfa[r * sm + g * sk];
            if (bits(got) != bits(want) && bad++ < 8)
                cr_expect_fail("row %lld group %lld: scale %a, model %a", (long long)r,
                               (long long)g, (double)got, (double)want);
            for (int64_t k = k0; k < k1; k++) {
                const double v = jit__bf16_decode(x[r * LDX + k]);
                const uint8_t code = jit__e4m3_encode((float)(v / (double)want));
                if (q[r * LDQ + k] != code && bad++ < 8)
                    cr_expect_fail("row %lld k %lld: %a / %a -> 0x%02x, model 0x%02x", (long long)r,
                                   (long long)k, v, (double)want, q[r * LDQ + k], code);
                /* Without power-of-two scales, the largest element of a group whose scale is a
                 * normal float is +-448: x / (amax / 448) lands on 448 up to one rounding. */
                if (!pow2 && amax > 0 && fabs(v) == amax && want >= ldexpf(1.0f, -126) &&
                    (q[r * LDQ + k] & 0x7F) != 0x7E && bad++ < 8)
                    cr_expect_fail("row %lld k %lld: the group's amax became 0x%02x", (long long)r,
                                   (long long)k, q[r * LDQ + k]);
            }
        }
        for (int64_t k = K; k < LDQ; k++)
            if (q[r * LDQ + k] != Q_POISON && bad++ < 8)
                cr_expect_fail("row %lld: byte %lld past K written", (long long)r, (long long)k);
    }
    /* Every SFA element outside the M x G scales is padding and keeps its NaN. */
    int64_t written = 0;
    for (int64_t i = 0; i < n_sfa; i++)
        written += !isnan(sfa[i]);
    cr_expect_eq(written, (int64_t)M * G, "SFA elements written: %lld", (long long)written);
    cr_expect_eq(bad, 0, "seed 0x%llx: %lld mismatches", (unsigned long long)seed, (long long)bad);
    free(x);
    free(q);
    free(sfa);
}

Test(quant_ref, random_rows_k_major) {
    check_random(0, 0, jt_fresh_seed());
    check_random(0, 1, jt_fresh_seed());
}

Test(quant_ref, random_rows_m_major) {
    check_random(1, 0, jt_fresh_seed());
    check_random(1, 1, jt_fresh_seed());
}

/* A round trip is within half an E4M3 step of the value, the step of the binade x / scale lies
 * in (at most |x / scale| / 16, and 2^-10 among the subnormals), times the scale. A scale or a
 * code in the wrong place is off by far more. */
Test(quant_ref, dequantized_values_are_within_half_a_step) {
    enum { M = 5, K = 400, G = 4 };
    uint16_t x[M * K];
    uint8_t q[M * K];
    float sfa[M * G];
    uint64_t rng = jt_fresh_seed();
    for (int i = 0; i < M * K; i++)
        x[i] = random_bf16(&rng, -30, 30);
    jit__ref_quant_fp8_1x128(M, K, x, K, 0, q, K, sfa, G, 1);
    for (int r = 0; r < M; r++)
        for (int k = 0; k < K; k++) {
            const double v = jit__bf16_decode(x[r * K + k]), s = sfa[r * G + k / 128];
            const double back = jit__e4m3_decode(q[r * K + k]) * s;
            const double half_step = fmax(fabs(v / s) / 16, ldexp(1.0, -10)) * s;
            cr_expect_leq(fabs(back - v), half_step * (1 + 1e-6), "row %d k %d: %g came back as %g",
                          r, k, v, back);
        }
}
