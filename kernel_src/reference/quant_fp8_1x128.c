/*
 * Host reference of the activation quantizer (kernel_src/quant_fp8_1x128/), bit for bit what the
 * kernel computes, so a GPU result is compared byte for byte and float for float:
 *
 *   amax  = max |x| over the group, in FP32 (a NaN element is skipped: fmaxf, as max.f32)
 *   scale = amax / 448 in FP32, rounded to nearest even (div.rn.f32); 1 when amax is zero;
 *           with pow2_scales the bits rounded up to a power of two, at least 2^-126
 *   q     = E4M3(x / scale): the quotient rounded to FP32 (div.rn.f32), then to E4M3 by
 *           jit__e4m3_encode (RNE, saturating to +-448, subnormals kept), the rule of
 *           cvt.rn.satfinite.e4m3x2.f32; a NaN quotient (a NaN input, or inf / inf when the
 *           group holds an infinity) is written 0x7F, and the GPU may write it 0xFF: which
 *           sign a NaN result carries is up to the hardware, not the data
 *
 * Every step is one correctly rounded IEEE single-precision operation (or exact: BF16 to FP32,
 * abs, max, the bit rounding), so C's float arithmetic repeats the GPU's exactly, provided it is
 * evaluated in float (FLT_EVAL_METHOD 0, checked below: x86-64 SSE and AArch64 do) and
 * subnormals are not flushed (the default floating-point environment; a process built with
 * -ffast-math may change it). The divisions are not turned into multiplications by 1/scale:
 * x * (1/scale) rounds twice and differs from x / scale in the last bit now and then.
 */
#include <float.h>
#include <math.h>
#include <string.h>

#include "formats.h"
#include "reference.h"

#if !defined(FLT_EVAL_METHOD) || FLT_EVAL_METHOD != 0
#error "the quantizer reference needs float arithmetic evaluated in float (FLT_EVAL_METHOD 0)"
#endif

#define GROUP 128

static uint32_t bits_of(float x) {
    uint32_t b;
    memcpy(&b, &x, sizeof(b));
    return b;
}

static float float_of(uint32_t b) {
    float x;
    memcpy(&x, &b, sizeof(x));
    return x;
}

float jit__ref_quant_scale(float amax, int pow2_scales) {
    if (bits_of(amax) == 0)
        return 1.0f;
    const float s = amax / 448.0f;
    if (!pow2_scales)
        return s;
    uint32_t b = bits_of(s);
    if (b < 0x00800000u)
        b = 0x00800000u; /* a subnormal scale: up to 2^-126, the smallest normal power of two */
    else if (b & 0x007FFFFFu)
        b = (b & 0x7F800000u) + 0x00800000u; /* up to the next power of two */
    return float_of(b);
}

void jit__ref_quant_fp8_1x128(int64_t m, int64_t k, const uint16_t *x, int64_t ldx, int pow2_scales,
                              uint8_t *q, int64_t ldq, float *sfa, int64_t sfa_stride_m,
                              int64_t sfa_stride_k) {
    for (int64_t r = 0; r < m; r++) {
        const uint16_t *xr = x + r * ldx;
        uint8_t *qr = q + r * ldq;
        for (int64_t kb = 0; kb * GROUP < k; kb++) {
            const int64_t k0 = kb * GROUP, k1 = k0 + GROUP < k ? k0 + GROUP : k;
            float amax = 0.0f;
            for (int64_t i = k0; i < k1; i++)
                amax = fmaxf(amax, fabsf(jit__bf16_decode(xr[i])));
            const float scale = jit__ref_quant_scale(amax, pow2_scales);
            for (int64_t i = k0; i < k1; i++) {
                const float y = jit__bf16_decode(xr[i]) / scale;
                /* The sign of a NaN quotient is the host's business (x86 makes inf / inf
                 * negative), not the data's: one code for all of them. */
                qr[i] = isnan(y) ? 0x7F : jit__e4m3_encode(y);
            }
            sfa[r * sfa_stride_m + kb * sfa_stride_k] = scale;
        }
    }
}
