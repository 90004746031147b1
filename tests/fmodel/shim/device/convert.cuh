/* Functional model of kernel_src/device/convert.cuh: the same conversions in host arithmetic
 * (RNE to BF16 with NaN kept quiet; ex2.approx as exp2f, which is more exact than the hardware's
 * approximation; the error bound of docs/reference.md covers either). */
#ifndef JITGEMM_DEVICE_CONVERT_CUH
#define JITGEMM_DEVICE_CONVERT_CUH

#include <math.h>

#include "device/common.cuh"

static inline u16 to_bf16(float x) {
    u32 u;
    memcpy(&u, &x, 4);
    if ((u & 0x7FFFFFFFu) > 0x7F800000u)
        return (u16)((u >> 16) | 0x40);
    u += 0x7FFFu + ((u >> 16) & 1u);
    return (u16)(u >> 16);
}

static inline u32 pack_bf16x2(float lo, float hi) {
    return (u32)to_bf16(lo) | ((u32)to_bf16(hi) << 16);
}

static inline float bits_to_float(u32 bits) {
    float r;
    memcpy(&r, &bits, 4);
    return r;
}

static inline float bf16_to_float(u16 bits) {
    return bits_to_float((u32)bits << 16);
}

/* .ftz: a subnormal result flushes to zero. */
static inline float exp2_approx(float x) {
    float r = exp2f(x);
    return fabsf(r) < 1.17549435e-38f ? 0.0f : r;
}

static inline float swiglu(float gate, float up) {
    return gate / (1.0f + exp2_approx(-gate * 1.4426950408889634f)) * up;
}

#endif
