/*
 * The parameter block of the grouped kernels, mirrored field for field by GroupedParams in
 * kernel_src/fp8_grouped_wgmma/device/params.cuh (the generated source asserts the offsets).
 * Passed by value as `const __grid_constant__`, because TMA reads the tensor maps through their
 * parameter-space address.
 *
 * Tensor maps (cuTensorMapEncodeTiled): UINT8, rank 2, dims {K, rows}, stride {row bytes}, box
 * {128, box rows}, element strides {1, 1}, no interleave, 128-byte swizzle, L2 promotion 256 B,
 * OOB fill none (zeros). A covers every row of A (m rows: all experts, contiguous or masked);
 * B covers G * N rows, expert g's matrix from row g * N.
 */
#ifndef JIT_FP8_GROUPED_ABI_H
#define JIT_FP8_GROUPED_ABI_H

#include <stddef.h>
#include <stdint.h>

typedef struct jit__grouped_tmap {
    _Alignas(64) uint64_t w[16];
} jit__grouped_tmap_t;

typedef struct jit__grouped_params {
    jit__grouped_tmap_t tmap_a; /* A [m, K] */
    jit__grouped_tmap_t tmap_b; /* B [G * N, K] */
    const float *sa;            /* [m] */
    const float *sb;            /* [G * N] */
    uint16_t *d;                /* BF16 [m, ldd] */
    const int32_t *rows;        /* contiguous: offsets[G + 1]; masked: counts[G] */
    int64_t m;
    int64_t ldd; /* elements */
    float alpha;
    uint32_t reserved[3];
} jit__grouped_params_t;

_Static_assert(offsetof(jit__grouped_params_t, tmap_b) == 128, "tmap_b");
_Static_assert(offsetof(jit__grouped_params_t, sa) == 256, "sa");
_Static_assert(offsetof(jit__grouped_params_t, rows) == 280, "rows");
_Static_assert(offsetof(jit__grouped_params_t, m) == 288, "m");
_Static_assert(offsetof(jit__grouped_params_t, ldd) == 296, "ldd");
_Static_assert(offsetof(jit__grouped_params_t, alpha) == 304, "alpha");
_Static_assert(sizeof(jit__grouped_params_t) == 320, "size");

#endif
