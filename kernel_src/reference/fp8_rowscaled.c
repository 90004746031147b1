/*
 * Host FP64 reference of the FP8 row-scaled GEMM and its three epilogues, from the same E4M3
 * bytes the GPU reads. Products of two E4M3 values have at most 8 significant bits and are
 * multiples of 2^-18 below 2^18, so the K sum is exact in double for any K below about 2^17: the
 * reference is the exact dequantized product, and what is left for a comparison is the GPU's
 * accumulation and its BF16 rounding.
 *
 * `mag` is the scale a tolerance needs: the error of a GPU dot product grows with sum_k |a*b|,
 * not with the (possibly cancelled) result. For linear it is that sum, scaled; linear_add adds
 * |residual|, since the FP32 add rounds relative to both addends. For linear_swiglu the output
 * silu(g)*u is a nonlinear function of two accumulated values, so their error bounds are carried
 * through the first-order terms: |d out/dg| * mag_g + |d out/du| * mag_u, with
 * d out/dg = u * silu'(g) and d out/du = silu(g).
 */
#include <math.h>

#include "family.h"
#include "formats.h"
#include "reference.h"

/* sum_k a[k]*b[k] and sum_k |a[k]*b[k]| over one row pair, exact in double. */
static void dot_e4m3(const double *tab, const uint8_t *a, const uint8_t *b, int64_t k, double *sum,
                     double *abs_sum) {
    double s = 0.0, sa = 0.0;
    for (int64_t i = 0; i < k; i++) {
        double p = tab[a[i]] * tab[b[i]];
        s += p;
        sa += fabs(p);
    }
    *sum = s;
    *abs_sum = sa;
}

void jit__ref_fp8_rowscaled(const jit__gemm_spec_t *spec, int64_t m, const uint8_t *a, int64_t lda,
                            const uint8_t *b, int64_t ldb, const float *sa, const float *sb,
                            const uint16_t *residual, int64_t ldr, float alpha, double *out,
                            double *mag) {
    double tab[256];
    for (int c = 0; c < 256; c++)
        tab[c] = jit__e4m3_decode((uint8_t)c);

    const int64_t k = spec->k, nout = jit__spec_out_cols(spec);
    for (int64_t r = 0; r < m; r++) {
        const uint8_t *arow = a + r * lda;
        double row_scale = (double)alpha * (double)sa[r];
        for (int64_t j = 0; j < nout; j++) {
            double v, vm;
            if (spec->epilogue == JIT_EPILOGUE_LINEAR_SWIGLU) {
                double gs, ga, us, ua;
                dot_e4m3(tab, arow, b + (2 * j) * ldb, k, &gs, &ga);
                dot_e4m3(tab, arow, b + (2 * j + 1) * ldb, k, &us, &ua);
                double gsc = row_scale * (double)sb[2 * j], usc = row_scale * (double)sb[2 * j + 1];
                jit__ref_swiglu(gsc * gs, fabs(gsc) * ga, usc * us, fabs(usc) * ua, &v, &vm);
            } else {
                double s, sabs;
                dot_e4m3(tab, arow, b + j * ldb, k, &s, &sabs);
                double sc = row_scale * (double)sb[j];
                v = sc * s;
                vm = fabs(sc) * sabs;
                if (spec->epilogue == JIT_EPILOGUE_LINEAR_ADD)
                    jit__ref_add_residual(residual, ldr, r, j, &v, &vm);
            }
            out[r * nout + j] = v;
            if (mag)
                mag[r * nout + j] = vm;
        }
    }
}

void jit__ref_fp8_rowscaled_of(const jit__gemm_spec_t *spec, const jit__ref_inputs_t *in,
                               double *out, double *mag) {
    jit__ref_fp8_rowscaled(spec, in->m, in->a, in->lda_bytes, in->b, in->ldb_bytes,
                           (const float *)in->scale_a, (const float *)in->scale_b, in->residual,
                           in->ldr, in->alpha, out, mag);
}

double jit__ref_tolerance(double ref, double mag) {
    return ldexp(fabs(ref), -8) + 1e-5 * mag + 0x1p-100;
}

double jit__ref_tolerance_fp8_tensor(double ref, double mag) {
    return ldexp(fabs(ref), -8) + 0x1p-10 * mag + 0x1p-100;
}
