/*
 * The parameter block of the tcgen05 kernel, mirrored field for field by jitgemm_tc_params in
 * kernel_src/tcgen05/device/params.cuh; the generator emits static_asserts of the offsets, so a
 * drift between the two fails the compile. It is passed by value as `const __grid_constant__`,
 * because TMA reads the tensor maps through their parameter-space address.
 */
#ifndef JIT_TCGEN05_ABI_H
#define JIT_TCGEN05_ABI_H

#include <stdint.h>

/* A CUtensorMap as the kernel parameter holds it: 128 bytes, 64-byte aligned. */
typedef struct jit__tc_tmap {
    _Alignas(64) uint64_t w[16];
} jit__tc_tmap_t;

/* The kernel's only parameter, passed by value (__grid_constant__). [0] of a and b is for the
 * preferred cluster shape, [1] for the fallback shape (a copy of [0] when there is none). */
typedef struct jit__tc_params {
    jit__tc_tmap_t a[2];
    jit__tc_tmap_t b[2];
    jit__tc_tmap_t sfa, sfb;
    jit__tc_tmap_t d;
    const void *residual; /* BF16 [M, N] (linear_add) */
    void *workspace;      /* jit__tc_workspace_bytes(token_slots), zero before the first launch */
    int64_t m;            /* tokens */
    int64_t ld_residual;  /* elements */
    float alpha;
    uint32_t token_slots; /* fallback token slots in the workspace */
    uint32_t pad_[6];
} jit__tc_params_t;

#endif
