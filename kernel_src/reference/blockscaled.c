/*
 * Host FP64 reference of the block-scaled GEMM (route tcgen05) and its three epilogues, from the
 * same bytes the GPU reads: E4M3, E5M2 (a byte each) or E2M1 (two per byte, element 2i in the
 * low nibble) elements, row-major with a byte stride, and 8-bit scales in the 128x4 tiled layout
 * of jit_scale_tile_offset. Definition (docs/hardware-facts.md F5):
 *
 *   acc[m, n] = alpha * sum_j SA[m, j] * SB[n, j] * (sum_{k in block j} a[m, k] * b[n, k])
 *
 * with blocks of 32 (ue8m0/32, ue5m3/32) or 16 (ue4m3/16, ue5m3/16) along K. The last block may
 * be partial, and nothing at or past K is read: neither the high nibble of an odd K's last byte
 * nor the pad columns of the tiled scales, so junk there cannot leak into the result.
 *
 * Precision: a block's partial sum is exact in double for every pairing but E5M2 x E5M2 and
 * E4M3 x E5M2 at the far ends of their range (each product has at most 8 significant bits and
 * the other pairings span less than 2^53 between the smallest and the largest product of a
 * block); the scale product SA*SB is exact (at most 4+4 significant bits, within double's
 * range); what is left is at most two roundings per block (scaling the partial, adding it),
 * far below the GPU's FP32 accumulation.
 *
 * Special scales are not guarded: a scale that decodes to NaN (UE8M0 0xFF, UE4M3 0x7F and
 * above, UE5M3 0xFF) makes its block's contribution NaN even when the block's data is zero,
 * which is what the MX definition asks of a NaN scale; UE4M3 and UE5M3 0x00 are a real zero and
 * give 0. A spec the block-scaled family does not cover (row scales, BF16 operands) yields NaN
 * everywhere instead of plausible numbers, so a misuse cannot pass a comparison.
 *
 * `mag` is built as in the FP8 reference: |alpha| * sum_j |SA*SB| * sum_k |a*b| (the scale of
 * the GPU's accumulation error), plus |residual| for linear_add, and the first-order
 * propagation |u silu'(g)| mag_g + |silu(g)| mag_u for linear_swiglu.
 */
#include <math.h>

#include "formats.h"
#include "jitgemm.h"
#include "reference.h"

/* Decoded values of every code of one operand's element format and of the scale format. */
typedef struct {
    double a[256], b[256], scale[256];
    int a_fp4, b_fp4;
    int64_t block, n_kblocks;
} decode_t;

static int element_table(jit_dtype_t t, double tab[256], int *fp4) {
    *fp4 = 0;
    for (int c = 0; c < 256; c++) {
        switch (t) {
        case JIT_DTYPE_E4M3:
            tab[c] = jit__e4m3_decode((uint8_t)c);
            break;
        case JIT_DTYPE_E5M2:
            tab[c] = jit__e5m2_decode((uint8_t)c);
            break;
        case JIT_DTYPE_E2M1:
            tab[c] = jit__e2m1_decode((uint8_t)c); /* indexed by the nibble */
            *fp4 = 1;
            break;
        default:
            return -1;
        }
    }
    return 0;
}

static int decode_setup(const jit__gemm_spec_t *spec, decode_t *d) {
    double (*dec)(uint8_t);
    switch (spec->scales) {
    case JIT_SCALE_UE8M0_32:
        dec = jit__ue8m0_decode;
        d->block = 32;
        break;
    case JIT_SCALE_UE4M3_16:
        dec = jit__ue4m3_decode;
        d->block = 16;
        break;
    case JIT_SCALE_UE5M3_16:
        dec = jit__ue5m3_decode;
        d->block = 16;
        break;
    case JIT_SCALE_UE5M3_32:
        dec = jit__ue5m3_decode;
        d->block = 32;
        break;
    default:
        return -1;
    }
    if (spec->k <= 0 || element_table(spec->a, d->a, &d->a_fp4) != 0 ||
        element_table(spec->b, d->b, &d->b_fp4) != 0)
        return -1;
    for (int c = 0; c < 256; c++)
        d->scale[c] = dec((uint8_t)c);
    d->n_kblocks = (spec->k + d->block - 1) / d->block;
    return 0;
}

static double element(const double *tab, int fp4, const uint8_t *row, int64_t k) {
    if (!fp4)
        return tab[row[k]];
    uint8_t byte = row[k >> 1];
    return tab[(k & 1) ? byte >> 4 : byte & 0x0F];
}

/* The scaled accumulator of A row `r` against B row `n` (alpha not applied), and its mag. */
static void block_dot(const decode_t *d, int64_t k, const uint8_t *arow, const uint8_t *brow,
                      int64_t r, int64_t n, const uint8_t *sfa, const uint8_t *sfb, double *sum,
                      double *abs_sum) {
    double acc = 0.0, acc_abs = 0.0;
    for (int64_t j = 0; j < d->n_kblocks; j++) {
        int64_t k0 = j * d->block, k1 = k0 + d->block < k ? k0 + d->block : k;
        double part = 0.0, part_abs = 0.0;
        for (int64_t q = k0; q < k1; q++) {
            double p = element(d->a, d->a_fp4, arow, q) * element(d->b, d->b_fp4, brow, q);
            part += p;
            part_abs += fabs(p);
        }
        double sc = d->scale[sfa[jit_scale_tile_offset(r, j, d->n_kblocks)]] *
                    d->scale[sfb[jit_scale_tile_offset(n, j, d->n_kblocks)]];
        acc += sc * part;
        acc_abs += fabs(sc) * part_abs;
    }
    *sum = acc;
    *abs_sum = acc_abs;
}

void jit__ref_blockscaled(const jit__gemm_spec_t *spec, int64_t m, const uint8_t *a,
                          int64_t lda_bytes, const uint8_t *b, int64_t ldb_bytes,
                          const uint8_t *sfa_tiled, const uint8_t *sfb_tiled,
                          const uint16_t *residual, int64_t ldr, float alpha, double *out,
                          double *mag) {
    const int64_t k = spec->k, nout = jit__spec_out_cols(spec);
    decode_t d;
    if (decode_setup(spec, &d) != 0) {
        for (int64_t i = 0; i < m * nout; i++) {
            out[i] = NAN;
            if (mag)
                mag[i] = NAN;
        }
        return;
    }
    const double al = (double)alpha;
    for (int64_t r = 0; r < m; r++) {
        const uint8_t *arow = a + r * lda_bytes;
        for (int64_t j = 0; j < nout; j++) {
            double v, vm;
            if (spec->epilogue == JIT_EPILOGUE_LINEAR_SWIGLU) {
                double gs, ga, us, ua;
                block_dot(&d, k, arow, b + (2 * j) * ldb_bytes, r, 2 * j, sfa_tiled, sfb_tiled, &gs,
                          &ga);
                block_dot(&d, k, arow, b + (2 * j + 1) * ldb_bytes, r, 2 * j + 1, sfa_tiled,
                          sfb_tiled, &us, &ua);
                jit__ref_swiglu(al * gs, fabs(al) * ga, al * us, fabs(al) * ua, &v, &vm);
            } else {
                double s, sabs;
                block_dot(&d, k, arow, b + j * ldb_bytes, r, j, sfa_tiled, sfb_tiled, &s, &sabs);
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
