/*
 * The activation quantizer: BF16 X [M, K] -> E4M3 Q [M, K] and one FP32 scale per 1x128 group
 * (a row's 128 consecutive K; a partial last group has its own), the A operand of the 128x128
 * block-scaled GEMM. docs/kernels-quantize.md gives the recipe and why each step is what it is.
 *
 * One half-warp per group: each of its 16 lanes loads 8 BF16 (16 bytes), the half-warp reduces
 * amax with four butterfly shuffles, every lane computes the same scale and writes its 8 E4M3
 * bytes, and lane 0 of the half writes the scale. A warp takes 2 x UNROLL consecutive groups per
 * pass and loads all of them before it reduces any, so several 16-byte loads are in flight per
 * lane; the grid strides over the M x ceil(K/128) groups.
 *
 * Every floating-point step is one PTX instruction written here, none of them .ftz, so the
 * result does not depend on NVRTC's flags and the host reference (kernel_src/reference/
 * quant_fp8_1x128.c) can repeat it bit for bit:
 *   amax   max.f32 of abs.f32 (a NaN element is skipped, as max.f32 skips NaN operands)
 *   scale  div.rn.f32 amax / 448, or 1 when amax is zero; with pow2_scales the bits rounded up
 *   q      div.rn.f32 x / scale, then cvt.rn.satfinite.e4m3x2.f32
 */
#ifndef JITGEMM_QUANT_KERNEL_CUH
#define JITGEMM_QUANT_KERNEL_CUH

#include "device/common.cuh"
#include "device/convert.cuh"
#include "quant_fp8_1x128/device/params.cuh"

static __device__ __forceinline__ u32 quant_float_bits(float x) {
    u32 r;
    asm("mov.b32 %0, %1;" : "=r"(r) : "f"(x));
    return r;
}

static __device__ __forceinline__ float quant_abs(float x) {
    float r;
    asm("abs.f32 %0, %1;" : "=f"(r) : "f"(x));
    return r;
}

static __device__ __forceinline__ float quant_max(float a, float b) {
    float r;
    asm("max.f32 %0, %1, %2;" : "=f"(r) : "f"(a), "f"(b));
    return r;
}

/* a / b rounded to nearest even, subnormals kept: IEEE division, whatever the flags. */
static __device__ __forceinline__ float quant_div(float a, float b) {
    float r;
    asm("div.rn.f32 %0, %1, %2;" : "=f"(r) : "f"(a), "f"(b));
    return r;
}

/* Two floats to two E4M3 bytes, lo in the low byte: RNE, finite overflow and infinities clamped
 * to +-448, NaN kept. cvt puts its first source in the upper byte. */
static __device__ __forceinline__ u32 quant_e4m3x2(float lo, float hi) {
    unsigned short r;
    asm("cvt.rn.satfinite.e4m3x2.f32 %0, %1, %2;" : "=h"(r) : "f"(hi), "f"(lo));
    return (u32)r;
}

static __device__ __forceinline__ float quant_shfl_xor(float v, int lane_mask) {
    float r;
    asm volatile("shfl.sync.bfly.b32 %0, %1, %2, 0x1f, 0xffffffff;"
                 : "=f"(r)
                 : "f"(v), "r"(lane_mask));
    return r;
}

/* 16 bytes through the read-only path where `pred` holds, else zeros (which leave amax alone).
 * X is read once: no L1 allocation. asm volatile keeps the loads of a pass ahead of its math. */
static __device__ __forceinline__ void quant_load16_if(bool pred, const void *p, u32 (&v)[4]) {
    asm volatile("{\n\t.reg .pred q;\n\tsetp.ne.b32 q, %5, 0;\n\t"
                 "mov.b32 %0, 0;\n\tmov.b32 %1, 0;\n\tmov.b32 %2, 0;\n\tmov.b32 %3, 0;\n\t"
                 "@q ld.global.nc.L1::no_allocate.v4.b32 {%0, %1, %2, %3}, [%4];\n\t}"
                 : "=r"(v[0]), "=r"(v[1]), "=r"(v[2]), "=r"(v[3])
                 : "l"(p), "r"((u32)pred));
}

static __device__ __forceinline__ void quant_store8(void *p, u32 lo, u32 hi) {
    asm volatile("st.global.v2.b32 [%0], {%1, %2};" ::"l"(p), "r"(lo), "r"(hi) : "memory");
}

/* The scale of a group from its amax (>= +0, never NaN: max.f32 skips NaN). A group of zeros
 * gets 1: its codes are all zero, so any finite scale dequantizes them to zero, and 1 keeps
 * every consumer finite (a zero scale is an infinite 1/scale, and 0 x inf is NaN). With
 * pow2_scales the FP32 bits are rounded up to the next power of two, and a subnormal scale up to
 * 2^-126, so the scale's exponent field is its UE8M0 code; +inf stays +inf. */
static __device__ __forceinline__ float quant_scale(float amax, u32 pow2) {
    if (quant_float_bits(amax) == 0u)
        return 1.0f;
    const float s = quant_div(amax, 448.0f);
    if (!pow2)
        return s;
    u32 b = quant_float_bits(s);
    if (b < 0x00800000u)
        b = 0x00800000u;
    else if (b & 0x007FFFFFu)
        b = (b & 0x7F800000u) + 0x00800000u;
    return bits_to_float(b);
}

template <class P> struct QuantKernel : QuantShape<P> {
    typedef QuantShape<P> S;

    static __device__ __forceinline__ void run(const QuantParams &p) {
        const u32 lane = threadIdx.x & 31, half = lane >> 4, sub = lane & 15;
        const i64 warp = ((i64)blockIdx.x * S::THREADS + threadIdx.x) >> 5;
        const i64 n_warps = (i64)gridDim.x * S::WARPS;
        const i64 total = p.m * S::GROUPS;
        /* The loop bound is the warp's, so every lane shuffles in every pass; a group past the
         * end or a chunk past K loads nothing and stores nothing. */
        for (i64 base = warp * S::WARP_GROUPS; base < total; base += n_warps * S::WARP_GROUPS) {
            u32 raw[P::UNROLL][4];
            i64 row[P::UNROLL], kb[P::UNROLL];
            bool in_range[P::UNROLL], has_chunk[P::UNROLL];
#pragma unroll
            for (int u = 0; u < P::UNROLL; u++) {
                const i64 g = base + 2 * u + half;
                in_range[u] = g < total;
                row[u] = g / S::GROUPS;
                kb[u] = g - row[u] * S::GROUPS;
                const i64 col = kb[u] * S::GROUP + sub * S::CHUNK;
                has_chunk[u] = in_range[u] && col < P::K;
                quant_load16_if(has_chunk[u], p.x + row[u] * p.ldx + col, raw[u]);
            }
#pragma unroll
            for (int u = 0; u < P::UNROLL; u++) {
                float v[S::CHUNK];
#pragma unroll
                for (int i = 0; i < 4; i++) {
                    v[2 * i] = bits_to_float(raw[u][i] << 16);
                    v[2 * i + 1] = bits_to_float(raw[u][i] & 0xFFFF0000u);
                }
                float amax = 0.0f;
#pragma unroll
                for (int i = 0; i < S::CHUNK; i++)
                    amax = quant_max(amax, quant_abs(v[i]));
                /* Butterflies of 8, 4, 2, 1 lanes stay inside each half-warp. */
#pragma unroll
                for (int o = 8; o >= 1; o >>= 1)
                    amax = quant_max(amax, quant_shfl_xor(amax, o));
                const float scale = quant_scale(amax, p.pow2_scales);
                if (has_chunk[u]) {
                    u32 w[2];
#pragma unroll
                    for (int i = 0; i < 2; i++)
                        w[i] = quant_e4m3x2(quant_div(v[4 * i], scale),
                                            quant_div(v[4 * i + 1], scale)) |
                               quant_e4m3x2(quant_div(v[4 * i + 2], scale),
                                            quant_div(v[4 * i + 3], scale))
                                   << 16;
                    quant_store8(p.q + row[u] * p.ldq + kb[u] * S::GROUP + sub * S::CHUNK, w[0],
                                 w[1]);
                }
                if (in_range[u] && sub == 0)
                    p.sfa[row[u] * p.sfa_stride_m + kb[u] * p.sfa_stride_k] = scale;
            }
        }
    }
};

#endif /* JITGEMM_QUANT_KERNEL_CUH */
