/*
 * Host FP64 references, one per kernel family, computed from the same quantized bytes the GPU
 * reads (never re-quantized), so the only difference left is the GPU's FP32 accumulation order
 * and the output rounding.
 */
#ifndef JIT_REFERENCE_H
#define JIT_REFERENCE_H

#include <stdint.h>

#include "plan.h"

/* FP8 row-scaled GEMM (route mma.sync): out[m][j] for j < Nout, before BF16 rounding.
 * a: [M][lda] bytes, b: [N][ldb] bytes, residual: BF16 bits [M][ldr] (linear_add only).
 * Also fills `mag[m][j]` (if not NULL) with sum_k |a*b*sa*sb|, the scale a tolerance needs. */
void jit__ref_fp8_rowscaled(const jit__gemm_spec_t *spec, int64_t m, const uint8_t *a, int64_t lda,
                            const uint8_t *b, int64_t ldb, const float *sa, const float *sb,
                            const uint16_t *residual, int64_t ldr, float alpha, double *out,
                            double *mag);

/* The tolerance a BF16 output of the FP8 family is checked with: half a BF16 ulp (2^-8 |ref|),
 * the FP32 accumulation error (1e-5 * mag, mag from jit__ref_fp8_rowscaled), and an absolute
 * 2^-100 for values FP32 cannot hold: the kernel flushes subnormals, so SwiGLU's silu(g)
 * becomes 0 for g below about -88 where the FP64 reference keeps g*e^g (|g*e^g*u| < 2^-100
 * for any |g*u| below 2^26). */
double jit__ref_tolerance(double ref, double mag);

#endif
