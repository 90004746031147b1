/*
 * The parameter block of the 128x128 block-scaled FP8 kernels, mirrored field for field by
 * BswParams in kernel_src/fp8_block_wgmma/device/params.cuh (the generated source asserts the
 * offsets). It is passed by value as `const __grid_constant__`, because TMA reads the tensor
 * maps through their parameter-space address.
 *
 * Tensor maps (cuTensorMapEncodeTiled): A and B as UINT8 (TMA copies bytes; E4M3 needs no
 * conversion), rank 2, dims {K, rows}, stride {row bytes}, box {128, the tile's rows}, element
 * strides {1, 1}, no interleave, 128-byte swizzle (one 128-byte row of K per swizzle span, what
 * the wgmma descriptors expect), L2 promotion 256 B, OOB fill none (out-of-range elements read
 * as zero, which is how ragged M, N and K are padded). The scales are plain pointers: the
 * consumer threads read them (device/mainloop.cuh).
 */
#ifndef JIT_FP8_BLOCK_WGMMA_ABI_H
#define JIT_FP8_BLOCK_WGMMA_ABI_H

#include <stddef.h>
#include <stdint.h>

typedef struct jit__bsw_tmap {
    _Alignas(64) uint64_t w[16];
} jit__bsw_tmap_t;

typedef struct jit__bsw_params {
    jit__bsw_tmap_t tmap_a;   /* A [M, K] */
    jit__bsw_tmap_t tmap_b;   /* B [N, K] */
    const float *sfa;         /* element (m, kb) at m * sfa_stride_m + kb * sfa_stride_k */
    const float *sfb;         /* [ceil(N/128)][ceil(K/128)] */
    const uint16_t *residual; /* BF16 [M, ldr], linear_add */
    uint16_t *d;              /* BF16 [M, ldd] */
    float *workspace;         /* decode split-K partials */
    uint32_t *counters;       /* decode: one per tile, zero at rest */
    int64_t m;
    int64_t ldd, ldr; /* elements */
    int64_t sfa_stride_m, sfa_stride_k;
    float alpha;
    uint32_t reserved[9];
} jit__bsw_params_t;

_Static_assert(offsetof(jit__bsw_params_t, tmap_b) == 128, "tmap_b");
_Static_assert(offsetof(jit__bsw_params_t, sfa) == 256, "sfa");
_Static_assert(offsetof(jit__bsw_params_t, workspace) == 288, "workspace");
_Static_assert(offsetof(jit__bsw_params_t, m) == 304, "m");
_Static_assert(offsetof(jit__bsw_params_t, sfa_stride_m) == 328, "sfa_stride_m");
_Static_assert(offsetof(jit__bsw_params_t, alpha) == 344, "alpha");
_Static_assert(sizeof(jit__bsw_params_t) == 384, "size");

#endif
