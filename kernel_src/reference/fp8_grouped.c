/*
 * Host FP64 reference of the grouped FP8 row-scaled GEMM: expert by expert, the dense
 * row-scaled reference (fp8_rowscaled.c) on the expert's rows of A against its own B [N, K] and
 * scale_b row, so a grouped result is held to exactly what a loop of dense calls would compute.
 * The rows of an expert come from the same offsets or counts the kernel reads, clamped the same
 * way (device/scheduler.cuh in the grouped family).
 */
#include "reference.h"

void jit__ref_grouped_rows(jit_group_layout_t layout, int64_t groups, int64_t m,
                           const int32_t *rows, int64_t g, int64_t *row0, int64_t *count) {
    int64_t lo, hi;
    if (layout == JIT_GROUPS_CONTIGUOUS) {
        lo = rows[g] < 0 ? 0 : rows[g] > m ? m : rows[g];
        hi = rows[g + 1] < lo ? lo : rows[g + 1] > m ? m : rows[g + 1];
    } else {
        int64_t max_m = m / groups, c = rows[g];
        lo = g * max_m;
        hi = lo + (c < 0 ? 0 : c > max_m ? max_m : c);
    }
    *row0 = lo;
    *count = hi - lo;
}

void jit__ref_fp8_grouped(const jit__gemm_spec_t *spec, int64_t m, const int32_t *rows,
                          const uint8_t *a, int64_t lda, const uint8_t *b, int64_t ldb,
                          const float *sa, const float *sb, float alpha, double *out, double *mag,
                          uint8_t *covered) {
    const int64_t nout = jit__spec_out_cols(spec);
    jit__gemm_spec_t one = *spec;
    one.groups = 0;
    one.layout = JIT_GROUPS_NONE;
    if (covered)
        for (int64_t r = 0; r < m; r++)
            covered[r] = 0;
    for (int64_t g = 0; g < spec->groups; g++) {
        int64_t r0, count;
        jit__ref_grouped_rows(spec->layout, spec->groups, m, rows, g, &r0, &count);
        if (count == 0)
            continue;
        jit__ref_fp8_rowscaled(&one, count, a + r0 * lda, lda, b + g * spec->n * ldb, ldb, sa + r0,
                               sb + g * spec->n, NULL, 0, alpha, out + r0 * nout,
                               mag ? mag + r0 * nout : NULL);
        if (covered)
            for (int64_t r = r0; r < r0 + count; r++)
                covered[r] = 1;
    }
}
