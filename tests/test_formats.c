/*
 * The element and scale codecs against test vectors derived from docs/hardware-facts.md F1-F3
 * (RNE, saturating; UE8M0 rounded up), then exhaustively: every finite
 * code of every format survives decode then encode, NaN codes decode to NaN and NaN inputs
 * encode to the documented codes, and -0 keeps its sign where the format has one.
 */
#include <criterion/criterion.h>
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "formats.h"

typedef struct vec {
    float in;
    unsigned code;
    double decoded;
} vec_t;

/* Same bits, so -0 and +0 differ. */
static int same_double(double a, double b) {
    return memcmp(&a, &b, sizeof(a)) == 0;
}

static void check_vectors(const char *fmt, uint8_t (*enc)(float), double (*dec)(uint8_t),
                          const vec_t *v, size_t n) {
    for (size_t i = 0; i < n; i++) {
        unsigned got = enc(v[i].in);
        cr_expect_eq(got, v[i].code, "%s encode(%.9g) = 0x%02X, expected 0x%02X", fmt,
                     (double)v[i].in, got, v[i].code);
        double back = dec((uint8_t)v[i].code);
        cr_expect(same_double(back, v[i].decoded), "%s decode(0x%02X) = %.17g, expected %.17g", fmt,
                  v[i].code, back, v[i].decoded);
    }
}

#define N_OF(a) (sizeof(a) / sizeof((a)[0]))

Test(formats, e2m1_vectors) {
    const vec_t v[] = {
        {0.0f, 0x0, 0.0},       {-0.0f, 0x8, -0.0}, {0.25f, 0x0, 0.0},  {0.26f, 0x1, 0.5},
        {0.75f, 0x2, 1.0},      {1.25f, 0x2, 1.0},  {1.75f, 0x4, 2.0},  {2.5f, 0x4, 2.0},
        {3.5f, 0x6, 4.0},       {5.0f, 0x6, 4.0},   {5.01f, 0x7, 6.0},  {7.0f, 0x7, 6.0},
        {-2.75f, 0xD, -3.0},    {0.2f, 0x0, 0.0},   {-0.2f, 0x8, -0.0}, {INFINITY, 0x7, 6.0},
        {-INFINITY, 0xF, -6.0},
    };
    check_vectors("e2m1", jit__e2m1_encode, jit__e2m1_decode, v, N_OF(v));
}

Test(formats, e4m3_vectors) {
    const vec_t v[] = {
        {448.0f, 0x7E, 448.0},       {464.0f, 0x7E, 448.0},
        {464.01f, 0x7E, 448.0},      {500.0f, 0x7E, 448.0},
        {1.0625f, 0x38, 1.0},        {1.1875f, 0x3A, 1.25},
        {-3.3f, 0xC5, -3.25},        {0.1f, 0x1D, 0.1015625},
        {0.015625f, 0x08, 0.015625}, {0.001953125f, 0x01, 0.001953125},
        {0.0009765625f, 0x00, 0.0},  {0.01f, 0x05, 0.009765625},
        {-0.0f, 0x80, -0.0},         {INFINITY, 0x7E, 448.0},
        {-INFINITY, 0xFE, -448.0},
    };
    check_vectors("e4m3", jit__e4m3_encode, jit__e4m3_decode, v, N_OF(v));
}

Test(formats, e5m2_vectors) {
    const vec_t v[] = {
        {57344.0f, 0x7B, 57344.0}, {61440.0f, 0x7B, 57344.0}, {1.125f, 0x3C, 1.0},
        {1.375f, 0x3E, 1.5},       {0.1f, 0x2E, 0.09375},     {0x1p-14f, 0x04, 0x1p-14},
        {0x1p-16f, 0x01, 0x1p-16}, {0x1p-17f, 0x00, 0.0},     {-INFINITY, 0xFB, -57344.0},
        {-0.0f, 0x80, -0.0},
    };
    check_vectors("e5m2", jit__e5m2_encode, jit__e5m2_decode, v, N_OF(v));
}

Test(formats, ue4m3_vectors) {
    const vec_t v[] = {
        {112.0f, 0x6E, 112.0}, {237.44f, 0x77, 240.0},  {500.0f, 0x7E, 448.0},
        {0x1p-10f, 0x00, 0.0}, {0x1p-9f, 0x01, 0x1p-9}, {INFINITY, 0x7E, 448.0},
        {-3.0f, 0x00, 0.0}, /* a scale is never negative: clamped to +0 */
    };
    check_vectors("ue4m3", jit__ue4m3_encode, jit__ue4m3_decode, v, N_OF(v));
}

Test(formats, ue5m3_vectors) {
    const vec_t v[] = {
        {1.0f, 0x78, 1.0},         {1000.0f, 0xC8, 1024.0}, {118784.0f, 0xFE, 114688.0},
        {0x1p-17f, 0x01, 0x1p-17}, {0x1p-18f, 0x00, 0.0},   {0x1p-14f, 0x08, 0x1p-14},
        {1e9f, 0xFE, 114688.0},
    };
    check_vectors("ue5m3", jit__ue5m3_encode, jit__ue5m3_decode, v, N_OF(v));
}

/* UE8M0 rounded up (cvt.rp.satfinite / RCEIL, hardware-facts.md F3): code and decoded value. */
Test(formats, ue8m0_round_up_vectors) {
    const vec_t v[] = {
        {1.0f, 0x7F, 1.0},           {1.25f, 0x80, 2.0},          {1.5f, 0x80, 2.0},
        {3.0f, 0x81, 4.0},           {0.75f, 0x7F, 1.0},          {7.5f / 448.0f, 0x7A, 0x1p-5},
        {0x1p-127f, 0x00, 0x1p-127}, {0x1p-128f, 0x00, 0x1p-127}, {0x1p-126f, 0x01, 0x1p-126},
        {0.0f, 0x00, 0x1p-127},      {0x1p127f, 0xFE, 0x1p127},   {0x1.8p127f, 0xFE, 0x1p127},
        {INFINITY, 0xFE, 0x1p127},
    };
    check_vectors("ue8m0", jit__ue8m0_encode_rp, jit__ue8m0_decode, v, N_OF(v));
    /* 2^-127 is the FP32 subnormal with bits 0x00400000 (hardware-facts.md F2). */
    float tiny = 0x1p-127f;
    uint32_t bits;
    memcpy(&bits, &tiny, sizeof(bits));
    cr_expect_eq(bits, 0x00400000u);
    /* Just above 2^-127 (a larger subnormal) rounds up to 2^-126. */
    uint32_t above = 0x00400001u;
    float f;
    memcpy(&f, &above, sizeof(f));
    cr_expect_eq(jit__ue8m0_encode_rp(f), 0x01);
}

Test(formats, bf16_vectors) {
    cr_expect_eq(jit__bf16_encode(1.0f), 0x3F80);
    cr_expect_eq(jit__bf16_encode(-2.0f), 0xC000);
    cr_expect_eq(jit__bf16_encode(-0.0f), 0x8000);
    /* 1 + 2^-8 is halfway between 1 and 1 + 2^-7: ties to even (1.0). */
    cr_expect_eq(jit__bf16_encode(1.00390625f), 0x3F80);
    /* 1 + 3*2^-8 is halfway between 1 + 2^-7 (odd) and 1 + 2^-6: up to even. */
    cr_expect_eq(jit__bf16_encode(1.01171875f), 0x3F82);
    /* one float ulp above the halfway point rounds up */
    cr_expect_eq(jit__bf16_encode(nextafterf(1.00390625f, 2.0f)), 0x3F81);
    cr_expect_eq(jit__bf16_encode(INFINITY), 0x7F80);
    cr_expect_eq(jit__bf16_encode(3.4028235e38f), 0x7F80, "overflow rounds to Inf, as IEEE does");
    cr_expect(isnan(jit__bf16_decode(jit__bf16_encode(NAN))));
    cr_expect_eq(jit__bf16_decode(0x4049), 3.140625f);
}

/* ---- exhaustive round trips --------------------------------------------------------------- */

/* `special` marks the codes that are not finite numbers (NaN, and Inf where there is one). */
static void round_trip(const char *fmt, uint8_t (*enc)(float), double (*dec)(uint8_t), int ncodes,
                       int (*special)(unsigned), int finite_codes) {
    int checked = 0;
    for (int c = 0; c < ncodes; c++) {
        double v = dec((uint8_t)c);
        if (special((unsigned)c)) {
            cr_expect(!isfinite(v), "%s 0x%02X should decode to NaN or Inf, got %g", fmt, c, v);
            continue;
        }
        cr_expect(isfinite(v), "%s 0x%02X decodes to %g", fmt, c, v);
        cr_expect_eq((double)(float)v, v, "%s 0x%02X = %.17g is not exact in float", fmt, c, v);
        unsigned back = enc((float)v);
        cr_expect_eq(back, (unsigned)c, "%s 0x%02X -> %.17g -> 0x%02X", fmt, c, v, back);
        checked++;
    }
    cr_expect_eq(checked, finite_codes, "%s: %d finite codes, expected %d", fmt, checked,
                 finite_codes);
}

static int e4m3_nan(unsigned c) {
    return (c & 0x7F) == 0x7F;
}
static int e5m2_nonfinite(unsigned c) {
    return (c & 0x7C) == 0x7C;
}
static int no_nan(unsigned c) {
    (void)c;
    return 0;
}
static int ff_nan(unsigned c) {
    return c == 0xFF;
}
static int ue4m3_nan(unsigned c) {
    return c >= 0x7F;
}

Test(formats, every_finite_code_round_trips) {
    round_trip("e4m3", jit__e4m3_encode, jit__e4m3_decode, 256, e4m3_nan, 254);
    round_trip("e5m2", jit__e5m2_encode, jit__e5m2_decode, 256, e5m2_nonfinite, 248);
    round_trip("e2m1", jit__e2m1_encode, jit__e2m1_decode, 16, no_nan, 16);
    round_trip("ue8m0", jit__ue8m0_encode_rp, jit__ue8m0_decode, 256, ff_nan, 255);
    round_trip("ue4m3", jit__ue4m3_encode, jit__ue4m3_decode, 256, ue4m3_nan, 127);
    round_trip("ue5m3", jit__ue5m3_encode, jit__ue5m3_decode, 256, ff_nan, 255);
}

Test(formats, e5m2_infinities_decode_and_saturate) {
    cr_expect(isinf(jit__e5m2_decode(0x7C)) && jit__e5m2_decode(0x7C) > 0);
    cr_expect(isinf(jit__e5m2_decode(0xFC)) && jit__e5m2_decode(0xFC) < 0);
    cr_expect_eq(jit__e5m2_encode(INFINITY), 0x7B, "satfinite: +Inf -> max");
}

Test(formats, every_bf16_code_round_trips) {
    for (unsigned c = 0; c < 0x10000; c++) {
        float v = jit__bf16_decode((uint16_t)c);
        if (isnan(v)) {
            cr_expect(isnan(jit__bf16_decode(jit__bf16_encode(v))), "BF16 NaN 0x%04X", c);
            continue;
        }
        cr_expect_eq(jit__bf16_encode(v), c, "BF16 0x%04X -> %g -> 0x%04X", c, (double)v,
                     jit__bf16_encode(v));
    }
}

/* Encoding is monotonic and lands on a nearest neighbour: for values between two adjacent
 * E4M3 codes the error never exceeds half their gap. */
Test(formats, e4m3_rounds_to_a_nearest_neighbour) {
    for (int c = 0; c < 0x7E; c++) {
        double lo = jit__e4m3_decode((uint8_t)c), hi = jit__e4m3_decode((uint8_t)(c + 1));
        for (int s = 1; s < 8; s++) {
            float x = (float)(lo + (hi - lo) * s / 8.0);
            double got = jit__e4m3_decode(jit__e4m3_encode(x));
            cr_expect(got == lo || got == hi, "e4m3(%g) = %g, not %g or %g", (double)x, got, lo,
                      hi);
            cr_expect_leq(fabs(got - x), (hi - lo) / 2, "e4m3(%g) = %g", (double)x, got);
            cr_expect_eq(jit__e4m3_encode(-x), jit__e4m3_encode(x) | 0x80, "sign of -%g",
                         (double)x);
        }
    }
}

Test(formats, nan_inputs_and_codes) {
    cr_expect_eq(jit__e4m3_encode(NAN), 0x7F);
    cr_expect_eq(jit__e4m3_encode(-NAN), 0xFF);
    cr_expect(isnan(jit__e4m3_decode(0x7F)) && isnan(jit__e4m3_decode(0xFF)));
    cr_expect(isnan(jit__e5m2_decode(jit__e5m2_encode(NAN))));
    cr_expect(isnan(jit__e5m2_decode(0x7D)) && isnan(jit__e5m2_decode(0xFF)));
    cr_expect_eq(jit__ue8m0_encode_rp(NAN), 0xFF);
    cr_expect(isnan(jit__ue8m0_decode(0xFF)));
    cr_expect_eq(jit__ue4m3_encode(NAN), 0x7F);
    cr_expect(isnan(jit__ue4m3_decode(0x7F)));
    cr_expect(isnan(jit__ue4m3_decode(0x80)), "the top bit is not part of a UE4M3 code");
    cr_expect_eq(jit__ue5m3_encode(NAN), 0xFF);
    cr_expect(isnan(jit__ue5m3_decode(0xFF)));
    cr_expect_eq(jit__e2m1_encode(NAN), 0x0, "E2M1 has no NaN: documented choice +0");
    cr_expect(isnan(jit__bf16_decode(jit__bf16_encode(NAN))));
}

Test(formats, negative_zero_keeps_its_sign) {
    cr_expect_eq(jit__e4m3_encode(-0.0f), 0x80);
    cr_expect_eq(jit__e5m2_encode(-0.0f), 0x80);
    cr_expect_eq(jit__e2m1_encode(-0.0f), 0x8);
    cr_expect_eq(jit__bf16_encode(-0.0f), 0x8000);
    cr_expect(signbit(jit__e4m3_decode(0x80)) && jit__e4m3_decode(0x80) == 0.0);
    cr_expect(signbit(jit__e5m2_decode(0x80)) && jit__e5m2_decode(0x80) == 0.0);
    cr_expect(signbit(jit__e2m1_decode(0x8)) && jit__e2m1_decode(0x8) == 0.0);
    cr_expect(signbit(jit__bf16_decode(0x8000)));
    /* tiny negatives underflow to -0, not +0 */
    cr_expect_eq(jit__e4m3_encode(-1e-6f), 0x80);
    /* unsigned scale formats have no -0 */
    cr_expect_eq(jit__ue4m3_encode(-0.0f), 0x00);
    cr_expect_eq(jit__ue5m3_encode(-0.0f), 0x00);
}
