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

/* Rows of expert g of a grouped problem, as the grouped kernels read them: contiguous,
 * rows[g] .. rows[g + 1] - 1 (offsets clamped to 0 <= rows[g] <= rows[g + 1] <= m, so a
 * decreasing pair is an empty expert); masked, the first rows[g] (clamped to 0 .. m / groups)
 * of rows g * (m / groups) on. `rows` is host memory here. */
void jit__ref_grouped_rows(jit_group_layout_t layout, int64_t groups, int64_t m,
                           const int32_t *rows, int64_t g, int64_t *row0, int64_t *count);

/* The grouped FP8 row-scaled GEMM (spec->groups experts, spec->layout): for every expert, the
 * dense reference above on its rows of A (m rows, stride lda bytes) against its B
 * (b + g * N * ldb, [N][ldb] bytes) and scale_b (sb + g * N), into out[r][j] and mag[r][j] for
 * j < Nout at A's row r. Rows of no expert are not written; covered[r] (if not NULL, m bytes)
 * says which rows are an expert's (1) and which are not (0). `rows` holds the offsets or counts
 * the kernel reads, on the host. */
void jit__ref_fp8_grouped(const jit__gemm_spec_t *spec, int64_t m, const int32_t *rows,
                          const uint8_t *a, int64_t lda, const uint8_t *b, int64_t ldb,
                          const float *sa, const float *sb, float alpha, double *out, double *mag,
                          uint8_t *covered);

/* jit__ref_fp8_rowscaled in the form a family's `reference` takes (jit/family.h): the FP8
 * families share it, since they compute the same function. */
struct jit__ref_inputs;
void jit__ref_fp8_rowscaled_of(const jit__gemm_spec_t *spec, const struct jit__ref_inputs *in,
                               double *out, double *mag);

/* SwiGLU of one gate/up pair, both already scaled: out = silu(g) * u, and the bound of its
 * error from the bounds g_mag and u_mag of g and u, to first order:
 * |u * silu'(g)| * g_mag + |silu(g)| * u_mag. Shared by both references. */
void jit__ref_swiglu(double g, double g_mag, double u, double u_mag, double *out, double *mag);

/* linear_add: element (r, j) of the BF16 residual joins the scaled sum, and its magnitude the
 * bound. Shared by both references. */
void jit__ref_add_residual(const uint16_t *residual, int64_t ldr, int64_t r, int64_t j, double *out,
                           double *mag);

/* The tolerance a BF16 output of the FP8 family is checked with: half a BF16 ulp (2^-8 |ref|),
 * the FP32 accumulation error (1e-5 * mag, mag from jit__ref_fp8_rowscaled), and an absolute
 * 2^-100 for values FP32 cannot hold: the kernel flushes subnormals, so SwiGLU's silu(g)
 * becomes 0 for g below about -88 where the FP64 reference keeps g*e^g (|g*e^g*u| < 2^-100
 * for any |g*u| below 2^26). */
double jit__ref_tolerance(double ref, double mag);

/* The tolerance of FP8 tensor-core GEMMs whose MMA accumulates with reduced precision and whose
 * kernel promotes the partial sums to FP32 registers every 128 K (the wgmma families): half a
 * BF16 ulp, plus 2^-10 * mag, plus the same 2^-100 floor. Hopper's FP8 wgmma keeps about 14 bits
 * of its running sum inside one MMA chain, so each 128-K block's partial is off by a small share
 * of the magnitude of its own products; on the H200 that share reached 2^-10.6 (the worst of
 * about 11 million outputs of tests/test_gpu_blockscaled.c, whose block scales let one block
 * carry nearly all of an output's magnitude; cuBLAS's blockwise kernel gave the same worst error
 * on the anchor's data). docs/kernels-fp8-wgmma.md, "Accumulation", has the figures. A layout or
 * indexing bug still shows: it is off by O(|ref|). */
double jit__ref_tolerance_fp8_tensor(double ref, double mag);

/* Block-scaled GEMM (route tcgen05, docs/hardware-facts.md F5): out[m][j] for j < Nout, before
 * rounding, from the bytes the GPU reads. a: [M][lda_bytes], b: [N][ldb_bytes], elements of
 * spec->a / spec->b (E4M3, E5M2, or E2M1 two per byte with element 2i in the low nibble);
 * sfa_tiled / sfb_tiled: scales of spec->scales for M and N rows in the 128x4 tiled layout
 * (jit_scale_tile_offset with ceil(K / block) k-blocks); the last block may be partial.
 * residual: BF16 bits [M][ldr] (linear_add only). `mag` (if not NULL) as for the FP8 family.
 * A spec outside the family (row scales, other dtypes) gives NaN everywhere. */
void jit__ref_blockscaled(const jit__gemm_spec_t *spec, int64_t m, const uint8_t *a,
                          int64_t lda_bytes, const uint8_t *b, int64_t ldb_bytes,
                          const uint8_t *sfa_tiled, const uint8_t *sfb_tiled,
                          const uint16_t *residual, int64_t ldr, float alpha, double *out,
                          double *mag);

/* FP8 E4M3 x E4M3 with 128x128 block scales (scale mode "128x128", kernel_src/reference/
 * fp8_block128.c): out[m][j] for j < Nout, before rounding. a: [M][lda] bytes, b: [N][ldb]
 * bytes; sfa: FP32, element (m, kb) at sfa[m * sfa_stride_m + kb * sfa_stride_k]; sfb: FP32
 * [ceil(N/128)][ceil(K/128)] row-major; residual: BF16 bits [M][ldr] (linear_add only). `mag`
 * (if not NULL) as for the row-scaled reference. A spec that is not E4M3 x E4M3 with 128x128
 * scales gives NaN everywhere. */
void jit__ref_fp8_block128(const jit__gemm_spec_t *spec, int64_t m, const uint8_t *a, int64_t lda,
                           const uint8_t *b, int64_t ldb, const float *sfa, int64_t sfa_stride_m,
                           int64_t sfa_stride_k, const float *sfb, const uint16_t *residual,
                           int64_t ldr, float alpha, double *out, double *mag);

/* jit__ref_fp8_block128 in the form a family's `reference` takes (jit/family.h). */
void jit__ref_fp8_block128_of(const jit__gemm_spec_t *spec, const struct jit__ref_inputs *in,
                              double *out, double *mag);

/* The activation quantizer (kernel_src/quant_fp8_1x128/), bit for bit: BF16 x [M][ldx] to
 * E4M3 q [M][ldq] (only the first K of each row written) and one FP32 scale per row and 128 K at
 * sfa[m * sfa_stride_m + kb * sfa_stride_k] (nothing else written). kernel_src/reference/
 * quant_fp8_1x128.c gives the recipe; docs/kernels-quantize.md why. */
void jit__ref_quant_fp8_1x128(int64_t m, int64_t k, const uint16_t *x, int64_t ldx, int pow2_scales,
                              uint8_t *q, int64_t ldq, float *sfa, int64_t sfa_stride_m,
                              int64_t sfa_stride_k);

/* The scale of one group from its amax (>= +0, not NaN), as the quantizer computes it. */
float jit__ref_quant_scale(float amax, int pow2_scales);

#endif
