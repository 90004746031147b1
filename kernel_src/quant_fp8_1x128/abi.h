/*
 * The parameter block of the activation quantizer's kernel, mirrored field for field by
 * QuantParams in kernel_src/quant_fp8_1x128/device/params.cuh (the generated source asserts the
 * offsets). Passed by value as the kernel's only parameter.
 */
#ifndef JIT_QUANT_FP8_1X128_ABI_H
#define JIT_QUANT_FP8_1X128_ABI_H

#include <stddef.h>
#include <stdint.h>

typedef struct jit__quant_params {
    const uint16_t *x;    /* BF16 X [M, ldx] */
    uint8_t *q;           /* E4M3 Q [M, ldq] */
    float *sfa;           /* scale (m, kb) at m * sfa_stride_m + kb * sfa_stride_k */
    int64_t m;            /* rows */
    int64_t ldx, ldq;     /* row strides, elements */
    int64_t sfa_stride_m; /* 1 m-major, ld_sfa k-major */
    int64_t sfa_stride_k; /* ld_sfa m-major, 1 k-major */
    uint32_t pow2_scales; /* 1: scales rounded up to powers of two */
    uint32_t reserved[7];
} jit__quant_params_t;

_Static_assert(offsetof(jit__quant_params_t, q) == 8, "q");
_Static_assert(offsetof(jit__quant_params_t, sfa) == 16, "sfa");
_Static_assert(offsetof(jit__quant_params_t, m) == 24, "m");
_Static_assert(offsetof(jit__quant_params_t, ldx) == 32, "ldx");
_Static_assert(offsetof(jit__quant_params_t, ldq) == 40, "ldq");
_Static_assert(offsetof(jit__quant_params_t, sfa_stride_m) == 48, "sfa_stride_m");
_Static_assert(offsetof(jit__quant_params_t, sfa_stride_k) == 56, "sfa_stride_k");
_Static_assert(offsetof(jit__quant_params_t, pow2_scales) == 64, "pow2_scales");
_Static_assert(sizeof(jit__quant_params_t) == 96, "size");

#endif
