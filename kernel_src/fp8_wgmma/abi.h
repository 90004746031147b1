/*
 * The parameter block of the FP8 wgmma kernel, mirrored field for field by Fp8WgmmaParams in
 * kernel_src/fp8_wgmma/device/params.cuh. It is passed by value as `const __grid_constant__`,
 * because TMA reads the tensor maps through their parameter-space address.
 *
 * Tensor maps (cuTensorMapEncodeTiled): A and B as UINT8 (TMA copies bytes; E4M3 needs no
 * conversion), rank 2, dims {K, rows}, stride {row bytes}, box {128, BM or BN}, element strides
 * {1, 1}, no interleave, 128-byte swizzle (one 128-byte row of K per swizzle span, what the
 * wgmma descriptors expect), L2 promotion 256 B, OOB fill none (out-of-range elements read as
 * zero, which is how ragged M, N and K are padded).
 */
#ifndef JIT_FP8_WGMMA_ABI_H
#define JIT_FP8_WGMMA_ABI_H

#include <stddef.h>
#include <stdint.h>

typedef struct jit__wgmma_tmap {
    _Alignas(64) uint64_t w[16];
} jit__wgmma_tmap_t;

typedef struct jit__wgmma_params {
    jit__wgmma_tmap_t tmap_a; /* A [M, K] */
    jit__wgmma_tmap_t tmap_b; /* B [N, K] */
    const float *sa;          /* [M] */
    const float *sb;          /* [N] */
    const uint16_t *residual; /* BF16 [M, ldr], linear_add */
    uint16_t *d;              /* BF16 [M, ldd] */
    int64_t m;
    int64_t ldd, ldr; /* elements */
    float alpha;
    uint32_t reserved;
} jit__wgmma_params_t;

_Static_assert(offsetof(jit__wgmma_params_t, tmap_b) == 128, "tmap_b");
_Static_assert(offsetof(jit__wgmma_params_t, sa) == 256, "sa");
_Static_assert(offsetof(jit__wgmma_params_t, m) == 288, "m");
_Static_assert(offsetof(jit__wgmma_params_t, alpha) == 312, "alpha");
_Static_assert(sizeof(jit__wgmma_params_t) == 320, "size");

/* The decode kernel's parameter block, mirrored by Fp8WgmmaDecodeParams in
 * kernel_src/fp8_wgmma/device/params.cuh. X is A (tokens): box {128, TOK}; W is B
 * (weights): box {128, BW}; both encoded as above. */
typedef struct jit__wgmma_decode_params {
    jit__wgmma_tmap_t tmap_x; /* A [M, K] */
    jit__wgmma_tmap_t tmap_w; /* B [N, K] */
    const float *sa;
    const float *sb;
    const uint16_t *residual;
    uint16_t *d;
    float *workspace;   /* split-K partials (SPLIT > 1) */
    uint32_t *counters; /* one per (token tile, weight tile), zero at rest */
    int64_t m;
    int64_t ldd, ldr;
    float alpha;
    uint32_t reserved[13];
} jit__wgmma_decode_params_t;

_Static_assert(offsetof(jit__wgmma_decode_params_t, tmap_w) == 128, "tmap_w");
_Static_assert(offsetof(jit__wgmma_decode_params_t, sa) == 256, "sa");
_Static_assert(offsetof(jit__wgmma_decode_params_t, workspace) == 288, "workspace");
_Static_assert(offsetof(jit__wgmma_decode_params_t, m) == 304, "m");
_Static_assert(offsetof(jit__wgmma_decode_params_t, alpha) == 328, "alpha");
_Static_assert(sizeof(jit__wgmma_decode_params_t) == 384, "size");

#endif
