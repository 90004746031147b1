/*
 * Host encoders and decoders for the element and scale formats (docs/hardware-facts.md F1,
 * F2). Every small float format here is described by its mantissa width, its
 * minimum exponent and its largest finite value, and one pair of routines serves them all, so a
 * fix to the rounding rule reaches every format at once. Rounding is done in double, where every
 * float input and every representable neighbour is exact, so `rint` (ties to even in the default
 * rounding mode) gives RNE without any bit tricks.
 *
 * Special values, where the formats leave a choice (docs/hardware-facts.md F3):
 * - NaN keeps its sign where the format has a signed NaN (E4M3 0x7F/0xFF, E5M2 0x7E/0xFE, the
 *   quiet NaN ml_dtypes uses); unsigned scale formats give their single NaN code.
 * - E2M1 has no NaN: a NaN input encodes to +0 (0x0). MX leaves this to the implementation.
 * - +-Inf and finite overflow saturate to +-max (`satfinite`), including E5M2, which has an Inf.
 * - Unsigned scale formats (UE4M3, UE5M3) clamp negative inputs to +0: a scale is never negative.
 * - UE4M3 is a 7-bit code; a byte with the top bit set is not a UE4M3 code and decodes to NaN.
 * - BF16 is an ordinary IEEE-style format: RNE, overflow to Inf, NaN kept and made quiet.
 */
#include "formats.h"

#include <math.h>
#include <string.h>

typedef struct minifloat {
    int man_bits; /* explicit mantissa bits */
    int emin;     /* exponent of the smallest normal; bias = 1 - emin */
    double max;   /* largest finite magnitude */
    int sign_bit; /* bit position of the sign, or -1 for unsigned formats */
} minifloat_t;

static const minifloat_t k_e4m3 = {3, -6, 448.0, 7};
static const minifloat_t k_e5m2 = {2, -14, 57344.0, 7};
static const minifloat_t k_e2m1 = {1, 0, 6.0, 3};
static const minifloat_t k_ue4m3 = {3, -6, 448.0, -1};
static const minifloat_t k_ue5m3 = {3, -14, 114688.0, -1};

/* floor(log2(v)) for a finite v > 0, exactly (frexp does not round). */
static int ilog2(double v) {
    int e;
    frexp(v, &e);
    return e - 1;
}

/* Round |x| (finite) to the format, RNE, saturating; returns the code without its sign bit. */
static unsigned mf_encode_magnitude(const minifloat_t *f, double ax) {
    if (ax == 0.0)
        return 0;
    int e = ilog2(ax);
    if (e < f->emin)
        e = f->emin; /* below the normals the spacing stays that of the subnormals */
    double step = ldexp(1.0, e - f->man_bits);
    double r = rint(ax / step) * step; /* may carry into the next binade: recomputed below */
    if (r > f->max)
        r = f->max;
    if (r == 0.0)
        return 0;
    int er = ilog2(r);
    if (er < f->emin)
        return (unsigned)(r / ldexp(1.0, f->emin - f->man_bits));
    unsigned field = (unsigned)(er - f->emin + 1);
    unsigned man = (unsigned)(r / ldexp(1.0, er - f->man_bits)) - (1u << f->man_bits);
    return (field << f->man_bits) | man;
}

/* Decode a code without its sign bit (NaN/Inf codes are the caller's business). */
static double mf_decode_magnitude(const minifloat_t *f, unsigned code) {
    unsigned man = code & ((1u << f->man_bits) - 1);
    unsigned field = code >> f->man_bits;
    if (field == 0)
        return ldexp((double)man, f->emin - f->man_bits);
    return ldexp((double)((1u << f->man_bits) + man), (int)field - 1 + f->emin - f->man_bits);
}

/* Encode a finite or infinite (saturated) value of a signed format. */
static unsigned mf_encode_signed(const minifloat_t *f, double x) {
    unsigned sign = signbit(x) ? 1u << f->sign_bit : 0u;
    double ax = fabs(x);
    if (isinf(ax))
        ax = f->max;
    return sign | mf_encode_magnitude(f, ax);
}

static double mf_decode_signed(const minifloat_t *f, unsigned code) {
    double v = mf_decode_magnitude(f, code & ((1u << f->sign_bit) - 1));
    return (code >> f->sign_bit) & 1 ? -v : v;
}

/* ---- E4M3 (float8_e4m3fn): NaN = S.1111.111, no Inf ---------------------------------------- */

double jit__e4m3_decode(uint8_t code) {
    if ((code & 0x7F) == 0x7F)
        return (code & 0x80) ? -NAN : NAN;
    return mf_decode_signed(&k_e4m3, code);
}

uint8_t jit__e4m3_encode(float x) {
    if (isnan(x))
        return signbit(x) ? 0xFF : 0x7F;
    return (uint8_t)mf_encode_signed(&k_e4m3, x);
}

/* ---- E5M2: exponent field 31 holds Inf (mantissa 0) and NaN ------------------------------- */

double jit__e5m2_decode(uint8_t code) {
    if ((code & 0x7C) == 0x7C) {
        double v = (code & 0x03) ? NAN : INFINITY;
        return (code & 0x80) ? -v : v;
    }
    return mf_decode_signed(&k_e5m2, code);
}

uint8_t jit__e5m2_encode(float x) {
    if (isnan(x))
        return signbit(x) ? 0xFE : 0x7E;
    return (uint8_t)mf_encode_signed(&k_e5m2, x);
}

/* ---- E2M1 (FP4), in the low nibble ---------------------------------------------------------- */

double jit__e2m1_decode(uint8_t nibble) {
    return mf_decode_signed(&k_e2m1, nibble & 0x0F);
}

uint8_t jit__e2m1_encode(float x) {
    if (isnan(x))
        return 0x0;
    return (uint8_t)mf_encode_signed(&k_e2m1, x);
}

/* ---- UE8M0: 2^(code - 127), 0xFF NaN, no zero ------------------------------------------------ */

double jit__ue8m0_decode(uint8_t code) {
    if (code == 0xFF)
        return NAN;
    return ldexp(1.0, (int)code - 127);
}

/* Round up (cvt.rp.satfinite.ue8m0x2.f32): the biased FP32 exponent, plus one unless the value
 * is already a power of two. FP32 subnormals all sit at or below 2^-127 (code 0) except those
 * above 2^-127 itself, which round up to 2^-126. The sign is ignored (scales are >= 0); +Inf
 * and overflow saturate to 0xFE, NaN gives 0xFF. */
uint8_t jit__ue8m0_encode_rp(float x) {
    uint32_t bits;
    memcpy(&bits, &x, sizeof(bits));
    uint32_t exp = (bits >> 23) & 0xFF, man = bits & 0x7FFFFF;
    if (exp == 0xFF)
        return man ? 0xFF : 0xFE;
    if (exp == 0)
        return man > 0x400000 ? 0x01 : 0x00;
    uint32_t code = exp + (man != 0);
    return (uint8_t)(code > 0xFE ? 0xFE : code);
}

/* ---- UE4M3 (NVFP4 block scale): E4M3 with the sign bit zero -------------------------------- */

double jit__ue4m3_decode(uint8_t code) {
    if (code >= 0x7F)
        return NAN;
    return mf_decode_magnitude(&k_ue4m3, code);
}

uint8_t jit__ue4m3_encode(float x) {
    if (isnan(x))
        return 0x7F;
    if (!(x > 0.0f))
        return 0x00;
    return (uint8_t)mf_encode_magnitude(&k_ue4m3, isinf(x) ? k_ue4m3.max : (double)x);
}

/* ---- UE5M3 (sm_107a FP4 scale): bias 15, subnormals, 0xFF the only NaN --------------------- */

double jit__ue5m3_decode(uint8_t code) {
    if (code == 0xFF)
        return NAN;
    return mf_decode_magnitude(&k_ue5m3, code);
}

uint8_t jit__ue5m3_encode(float x) {
    if (isnan(x))
        return 0xFF;
    if (!(x > 0.0f))
        return 0x00;
    return (uint8_t)mf_encode_magnitude(&k_ue5m3, isinf(x) ? k_ue5m3.max : (double)x);
}

/* ---- BF16 ------------------------------------------------------------------------------------ */

uint16_t jit__bf16_encode(float x) {
    uint32_t bits;
    memcpy(&bits, &x, sizeof(bits));
    if ((bits & 0x7FFFFFFF) > 0x7F800000)
        return (uint16_t)((bits >> 16) | 0x0040); /* quiet NaN; the low half may hold the payload */
    /* Adding 0x7FFF plus the lowest kept bit rounds to nearest, ties to even; a carry out of the
     * mantissa bumps the exponent, and the largest finite values carry into Inf as IEEE does. */
    bits += 0x7FFF + ((bits >> 16) & 1);
    return (uint16_t)(bits >> 16);
}

float jit__bf16_decode(uint16_t bits) {
    uint32_t wide = (uint32_t)bits << 16;
    float x;
    memcpy(&x, &wide, sizeof(x));
    return x;
}
