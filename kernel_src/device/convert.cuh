/*
 * Number conversions and the few special functions epilogues need, as single PTX instructions:
 * NVRTC is given no CUDA header, so there is no cuda_bf16.h to lean on.
 */
#ifndef JITGEMM_DEVICE_CONVERT_CUH
#define JITGEMM_DEVICE_CONVERT_CUH

#include "device/common.cuh"

/* One float to BF16, round to nearest even. */
static __device__ __forceinline__ u16 to_bf16(float x) {
    u16 r;
    asm("cvt.rn.bf16.f32 %0, %1;" : "=h"(r) : "f"(x));
    return r;
}

/* Two floats to packed BF16, RNE; cvt puts its first source in the upper half. */
static __device__ __forceinline__ u32 pack_bf16x2(float lo, float hi) {
    u32 r;
    asm("cvt.rn.bf16x2.f32 %0, %1, %2;" : "=r"(r) : "f"(hi), "f"(lo));
    return r;
}

/* The float whose bits are `bits` (BF16 values widen by a 16-bit shift). */
static __device__ __forceinline__ float bits_to_float(u32 bits) {
    float r;
    asm("mov.b32 %0, %1;" : "=f"(r) : "r"(bits));
    return r;
}

/* BF16 bits to float: exact. */
static __device__ __forceinline__ float bf16_to_float(u16 bits) {
    return bits_to_float((u32)bits << 16);
}

/* 2^x, approximate: far finer than the BF16 rounding that follows it. */
static __device__ __forceinline__ float exp2_approx(float x) {
    float r;
    asm("ex2.approx.ftz.f32 %0, %1;" : "=f"(r) : "f"(x));
    return r;
}

/* silu(g) * u with silu(x) = x / (1 + e^-x): the SwiGLU of one gate/up pair. The division is
 * the fast one (reciprocal approximation and a multiply, 2 ulp): an IEEE division is a
 * subroutine with a slow-path branch, and the 48 of a 128x192 tile's epilogue took 0.07 s of
 * ptxas's time per kernel; 2 ulp of FP32 is far below the half BF16 ulp the result is rounded
 * to. For 1 + e^-g past 2^126 (g < -87) it gives 0, where silu(g) is below 1e-36 in size. */
static __device__ __forceinline__ float swiglu(float gate, float up) {
    return __fdividef(gate, 1.0f + exp2_approx(-gate * 1.4426950408889634f)) * up;
}

#endif /* JITGEMM_DEVICE_CONVERT_CUH */
