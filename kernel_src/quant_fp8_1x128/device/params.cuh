/*
 * The activation quantizer's parameter block, and the numbers the kernel derives from its plan.
 *
 * QuantParams is the kernel's only parameter, passed by value. It is mirrored field for field by
 * jit__quant_params_t in kernel_src/quant_fp8_1x128/abi.h, and the generated source asserts the
 * offsets.
 */
#ifndef JITGEMM_QUANT_PARAMS_CUH
#define JITGEMM_QUANT_PARAMS_CUH

#include "device/common.cuh"

struct QuantParams {
    const u16 *x;     /*  0: BF16 X [M, ldx], 16-byte aligned */
    u8 *q;            /*  8: E4M3 Q [M, ldq], 16-byte aligned */
    float *sfa;       /* 16: scale (m, kb) at m * sfa_stride_m + kb * sfa_stride_k */
    i64 m;            /* 24: rows, >= 1 */
    i64 ldx;          /* 32: X row stride in elements, a multiple of 8 */
    i64 ldq;          /* 40: Q row stride in elements (bytes), a multiple of 16 */
    i64 sfa_stride_m; /* 48: elements between the scales of rows m and m + 1 */
    i64 sfa_stride_k; /* 56: elements between the scales of groups kb and kb + 1 */
    u32 pow2_scales;  /* 64: 1: scales rounded up to a power of two, at least 2^-126 */
    u32 reserved[7];  /* 68..95: keep 0 */
};

/*
 * The kernel's plan P (written by the generator as a struct of enumerators, so that no number
 * becomes .global data):
 *   K           the row length; a multiple of 16
 *   THREADS     threads per CTA, whole warps
 *   UNROLL      groups each half-warp loads before it reduces any (loads in flight)
 *   MIN_BLOCKS  CTAs per SM the launch bounds promise, and the grid's cap per SM
 * QuantShape<P> adds what follows from them.
 */
template <class P> struct QuantShape : P {
    enum : int {
        GROUP = 128,        /* K elements per scale */
        CHUNK = 8,          /* BF16 per 16-byte load, and E4M3 bytes per 8-byte store */
        GROUP_LANES = 16,   /* one half-warp per group: 16 x 8 = 128 */
        GROUPS = (P::K + GROUP - 1) / GROUP,
        WARPS = P::THREADS / 32,
        WARP_GROUPS = 2 * P::UNROLL, /* groups a warp handles per pass of its loop */
    };
    static_assert(P::K > 0 && P::K % 16 == 0,
                  "K % 16 == 0: whole 16-byte loads, and Q rows the GEMM's TMA can read");
    static_assert(P::THREADS % 32 == 0 && P::THREADS >= 32 && P::THREADS <= 1024, "whole warps");
    static_assert(P::UNROLL >= 1 && P::UNROLL <= 4, "1 to 4 groups in flight per half-warp");
    static_assert(P::MIN_BLOCKS >= 1 && P::MIN_BLOCKS * P::THREADS <= 1536,
                  "the CTAs the launch bounds promise fit every target's 1536 threads per SM");
};

#endif /* JITGEMM_QUANT_PARAMS_CUH */
