/*
 * Host FP64 reference of the FP8 GEMM with 128x128 block scales (scale mode "128x128", the
 * DeepSeek-V3 format) and its three epilogues, from the same bytes and floats the GPU reads:
 *
 *   acc[m, n] = alpha * sum_kb SFA[m, kb] * SFB[n / 128, kb] * sum_{k in group kb, k < K} a[m, k] *
 * b[n, k]
 *
 * with groups of 128 along K (the last one partial when K is not a multiple of 128, scaled by
 * its own scale), SFA's element (m, kb) at sfa[m * sfa_stride_m + kb * sfa_stride_k] (k-major:
 * stride_m = ld_sfa, stride_k = 1; m-major: 1 and ld_sfa) and SFB row-major
 * [ceil(N/128)][ceil(K/128)]. Nothing at or past K is read in a row of A or B.
 *
 * Precision: every E4M3 product has at most 8 significant bits and lies between 2^-18 and
 * 2^17, so a group's partial sum (at most 128 products) is exact in double; SFA * SFB (two FP32
 * values, 48 bits) is exact too. Scaling the partial and adding it round once each, far below
 * the GPU's FP32 accumulation. So the reference is the exact dequantized product to about
 * 2^-52 relative per group, and a comparison has only the GPU's accumulation and its BF16
 * rounding to allow for.
 *
 * `mag` is |alpha| * sum_kb |SFA * SFB| * sum_k |a * b| (the scale of the GPU's accumulation
 * error), plus |residual| for linear_add, and the propagation through SwiGLU for
 * linear_swiglu (kernel_src/reference/epilogue.c), as in the row-scaled reference. A spec outside
 * the format (another scale mode, other operand types) gives NaN everywhere, so a misuse cannot
 * pass a comparison.
 */
#include <math.h>

#include "family.h"
#include "formats.h"
#include "reference.h"

#define GROUP 128

/* The scaled dot product of A row `r` and B row `n` (alpha not applied), and its magnitude. */
static void group_dot(const double *tab, int64_t k, const uint8_t *arow, const uint8_t *brow,
                      const float *sfa_row, int64_t sfa_stride_k, const float *sfb_row, double *sum,
                      double *abs_sum) {
    double acc = 0.0, acc_abs = 0.0;
    for (int64_t g = 0; g * GROUP < k; g++) {
        const int64_t k0 = g * GROUP, k1 = k0 + GROUP < k ? k0 + GROUP : k;
        double part = 0.0, part_abs = 0.0;
        for (int64_t q = k0; q < k1; q++) {
            double p = tab[arow[q]] * tab[brow[q]];
            part += p;
            part_abs += fabs(p);
        }
        const double sc = (double)sfa_row[g * sfa_stride_k] * (double)sfb_row[g];
        acc += sc * part;
        acc_abs += fabs(sc) * part_abs;
    }
    *sum = acc;
    *abs_sum = acc_abs;
}

void jit__ref_fp8_block128(const jit__gemm_spec_t *spec, int64_t m, const uint8_t *a, int64_t lda,
                           const uint8_t *b, int64_t ldb, const float *sfa, int64_t sfa_stride_m,
                           int64_t sfa_stride_k, const float *sfb, const uint16_t *residual,
                           int64_t ldr, float alpha, double *out, double *mag) {
    const int64_t k = spec->k, nout = jit__spec_out_cols(spec);
    if (spec->scales != JIT_SCALE_BLOCK_1X128_128X128 || spec->a != JIT_DTYPE_E4M3 ||
        spec->b != JIT_DTYPE_E4M3 || k <= 0) {
        for (int64_t i = 0; i < m * nout; i++) {
            out[i] = NAN;
            if (mag)
                mag[i] = NAN;
        }
        return;
    }
    double tab[256];
    for (int c = 0; c < 256; c++)
        tab[c] = jit__e4m3_decode((uint8_t)c);
    const int64_t kgroups = (k + GROUP - 1) / GROUP;
    const double al = (double)alpha;
    for (int64_t r = 0; r < m; r++) {
        const uint8_t *arow = a + r * lda;
        const float *sfa_row = sfa + r * sfa_stride_m;
        for (int64_t j = 0; j < nout; j++) {
            double v, vm;
            if (spec->epilogue == JIT_EPILOGUE_LINEAR_SWIGLU) {
                const int64_t g = 2 * j, u = 2 * j + 1;
                double gs, ga, us, ua;
                group_dot(tab, k, arow, b + g * ldb, sfa_row, sfa_stride_k,
                          sfb + g / GROUP * kgroups, &gs, &ga);
                group_dot(tab, k, arow, b + u * ldb, sfa_row, sfa_stride_k,
                          sfb + u / GROUP * kgroups, &us, &ua);
                jit__ref_swiglu(al * gs, fabs(al) * ga, al * us, fabs(al) * ua, &v, &vm);
            } else {
                double s, sabs;
                group_dot(tab, k, arow, b + j * ldb, sfa_row, sfa_stride_k,
                          sfb + j / GROUP * kgroups, &s, &sabs);
                v = al * s;
                vm = fabs(al) * sabs;
                if (spec->epilogue == JIT_EPILOGUE_LINEAR_ADD)
                    jit__ref_add_residual(residual, ldr, r, j, &v, &vm);
            }
            out[r * nout + j] = v;
            if (mag)
                mag[r * nout + j] = vm;
        }
    }
}

void jit__ref_fp8_block128_of(const jit__gemm_spec_t *spec, const jit__ref_inputs_t *in,
                              double *out, double *mag) {
    jit__ref_fp8_block128(spec, in->m, in->a, in->lda_bytes, in->b, in->ldb_bytes,
                          (const float *)in->scale_a, in->sfa_stride_m, in->sfa_stride_k,
                          (const float *)in->scale_b, in->residual, in->ldr, in->alpha, out, mag);
}
