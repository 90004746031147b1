/*
 * The grouped kernel's only parameter, passed by value as `const __grid_constant__` (TMA reads
 * the tensor maps through their parameter-space address). Mirrored field for field by
 * jit__grouped_params_t in kernel_src/fp8_grouped_wgmma/abi.h; the generated source asserts the
 * offsets, so a drift fails the compile.
 */
#ifndef JITGEMM_FP8_GROUPED_PARAMS_CUH
#define JITGEMM_FP8_GROUPED_PARAMS_CUH

#include "device/common.cuh"

struct GroupedParams {
    jit_tmap tmap_a;  /*   0: A [m, K] u8 (every expert's rows), box 128 x (BM or tokens) */
    jit_tmap tmap_b;  /* 128: B [G * N, K] u8 (expert g's rows from g * N), box 128 x BN */
    const float *sa;  /* 256: [m] row scales */
    const float *sb;  /* 264: [G * N] column (B row) scales */
    u16 *d;           /* 272: BF16 [m, ldd] */
    const i32 *rows;  /* 280: contiguous: offsets[G + 1]; masked: counts[G] */
    i64 m;            /* 288: rows of A and D */
    i64 ldd;          /* 296: D row stride in elements */
    float alpha;      /* 304 */
    u32 reserved[3];  /* 308: keep 0 */
};

enum GroupedLayoutKind {
    GROUPED_CONTIGUOUS = 1, /* expert g: rows offsets[g] .. offsets[g + 1] - 1 of A */
    GROUPED_MASKED = 2,     /* expert g: the first counts[g] of rows g * max_M .. */
};

enum GroupedEpiKind {
    GROUPED_EPI_LINEAR = 0,
    GROUPED_EPI_SWIGLU = 1,
};

#endif /* JITGEMM_FP8_GROUPED_PARAMS_CUH */
