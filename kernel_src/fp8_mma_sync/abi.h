/*
 * The parameter block of the mma.sync route's kernel, shared by the host launcher and the
 * generator (which emits the same struct, field for field, into the CUDA source). It is passed
 * by value as the kernel's only parameter. Keep the two in step: tests/test_codegen.c checks the
 * generated struct against this layout.
 */
#ifndef JIT_FP8_MMA_SYNC_ABI_H
#define JIT_FP8_MMA_SYNC_ABI_H

#include <stdint.h>

typedef struct jit__mma_sync_params {
    const void *a;        /* [M, K] E4M3, row stride lda bytes */
    const void *b;        /* [N, K] E4M3, row stride ldb bytes */
    const float *sa;      /* [M] */
    const float *sb;      /* [N] */
    const void *residual; /* [M, N] BF16, row stride ldr elements (linear_add) */
    void *d;              /* [M, Nout] BF16, row stride ldd elements */
    int64_t m;
    int64_t lda, ldb, ldd, ldr;
    float alpha;
    int32_t pad_;
} jit__mma_sync_params_t;

#endif
