/*
 * The grouped FP64 host reference against a loop of the dense one: for every expert its rows
 * of A and its B are copied into separate dense buffers (so a wrong row or expert offset in the
 * grouped reference cannot hide behind the same offset here), the dense reference is run on
 * them, and the grouped result must be the same, value for value, at the expert's rows of D.
 * Rows of no expert must be left as they were (poisoned with NaN) and reported uncovered. Both
 * layouts and both epilogues, with empty experts, single rows, one large expert, and the
 * clamping the kernel applies to offsets and counts out of range.
 */
#include <criterion/criterion.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "plan.h"
#include "reference.h"
#include "support.h"

static jit__gemm_spec_t spec_of(int64_t g, jit_group_layout_t layout, int64_t n, int64_t k,
                                jit_epilogue_t ep) {
    jit__gemm_spec_t s = {.n = n,
                          .k = k,
                          .a = JIT_DTYPE_E4M3,
                          .b = JIT_DTYPE_E4M3,
                          .out = JIT_DTYPE_BF16,
                          .scales = JIT_SCALE_ROW,
                          .epilogue = ep,
                          .groups = g,
                          .layout = layout};
    return s;
}

static uint8_t code(uint64_t *rng) {
    for (;;) {
        uint8_t c = (uint8_t)(jt_rng_next(rng) >> 40);
        if ((c & 0x7F) != 0x7F && (c & 0x7F) != 0)
            return c;
    }
}

/* Expert g's first row and row count as a caller means them (no clamping needed: the cases
 * below that test clamping state their expected rows themselves). */
typedef struct expert_rows {
    int64_t row0, count;
} expert_rows_t;

static void check(const jit__gemm_spec_t *s, int64_t m, const int32_t *rows,
                  const expert_rows_t *want) {
    const int64_t n = s->n, k = s->k, g_count = s->groups, nout = jit__spec_out_cols(s);
    const int64_t lda = k + 16, ldb = k + 32;
    uint64_t rng = 0x9E3779B97F4A7C15ull ^ (uint64_t)(m * 131 + n);
    uint8_t *a = malloc((size_t)(m * lda)), *b = malloc((size_t)(g_count * n * ldb));
    float *sa = malloc(sizeof(float) * (size_t)m),
          *sb = malloc(sizeof(float) * (size_t)(g_count * n));
    double *out = malloc(sizeof(double) * (size_t)(m * nout)),
           *mag = malloc(sizeof(double) * (size_t)(m * nout));
    uint8_t *covered = malloc((size_t)m);
    cr_assert(a && b && sa && sb && out && mag && covered);
    for (int64_t i = 0; i < m * lda; i++)
        a[i] = code(&rng);
    for (int64_t i = 0; i < g_count * n * ldb; i++)
        b[i] = code(&rng);
    for (int64_t i = 0; i < m; i++)
        sa[i] = (float)jt_rng_uniform(&rng, 0.01, 0.1);
    for (int64_t i = 0; i < g_count * n; i++)
        sb[i] = (float)jt_rng_uniform(&rng, 0.5, 2.0);
    for (int64_t i = 0; i < m * nout; i++)
        out[i] = mag[i] = NAN;
    jit__ref_fp8_grouped(s, m, rows, a, lda, b, ldb, sa, sb, 1.25f, out, mag, covered);

    jit__gemm_spec_t dense = *s;
    dense.groups = 0;
    dense.layout = JIT_GROUPS_NONE;
    int64_t expert_rows_total = 0;
    for (int64_t g = 0; g < g_count; g++) {
        int64_t r0 = want[g].row0, cnt = want[g].count;
        int64_t got0, got_count;
        jit__ref_grouped_rows(s->layout, g_count, m, rows, g, &got0, &got_count);
        cr_expect_eq(got_count, cnt, "expert %lld: %lld rows, want %lld", (long long)g,
                     (long long)got_count, (long long)cnt);
        if (cnt)
            cr_expect_eq(got0, r0, "expert %lld starts at %lld, want %lld", (long long)g,
                         (long long)got0, (long long)r0);
        expert_rows_total += cnt;
        if (cnt == 0)
            continue;
        /* Copies: expert g alone, packed, as a dense caller would hold it. */
        uint8_t *ag = malloc((size_t)(cnt * k)), *bg = malloc((size_t)(n * k));
        double *ref = malloc(sizeof(double) * (size_t)(cnt * nout));
        double *rmag = malloc(sizeof(double) * (size_t)(cnt * nout));
        cr_assert(ag && bg && ref && rmag);
        for (int64_t r = 0; r < cnt; r++)
            memcpy(ag + r * k, a + (r0 + r) * lda, (size_t)k);
        for (int64_t r = 0; r < n; r++)
            memcpy(bg + r * k, b + (g * n + r) * ldb, (size_t)k);
        jit__ref_fp8_rowscaled(&dense, cnt, ag, k, bg, k, sa + r0, sb + g * n, NULL, 0, 1.25f, ref,
                               rmag);
        for (int64_t r = 0; r < cnt; r++) {
            cr_expect_eq(covered[r0 + r], 1, "row %lld of expert %lld", (long long)(r0 + r),
                         (long long)g);
            for (int64_t j = 0; j < nout; j++) {
                cr_assert_eq(out[(r0 + r) * nout + j], ref[r * nout + j],
                             "expert %lld row %lld col %lld", (long long)g, (long long)r,
                             (long long)j);
                cr_assert_eq(mag[(r0 + r) * nout + j], rmag[r * nout + j]);
            }
        }
        free(ag);
        free(bg);
        free(ref);
        free(rmag);
    }
    /* Every other row is untouched and uncovered. */
    int64_t uncovered = 0;
    for (int64_t r = 0; r < m; r++) {
        if (covered[r])
            continue;
        uncovered++;
        for (int64_t j = 0; j < nout; j++)
            cr_expect(isnan(out[r * nout + j]), "row %lld of no expert was written", (long long)r);
    }
    cr_expect_eq(uncovered, m - expert_rows_total);
    free(a);
    free(b);
    free(sa);
    free(sb);
    free(out);
    free(mag);
    free(covered);
}

static const jit_epilogue_t k_eps[] = {JIT_EPILOGUE_LINEAR, JIT_EPILOGUE_LINEAR_SWIGLU};

/* Contiguous: empty experts first, in the middle and last, a single row, one large expert,
 * and rows past offsets[G] that belong to nobody. */
Test(grouped_reference, contiguous_matches_a_loop_of_dense_calls) {
    const int32_t offsets[] = {0, 0, 1, 1, 70, 73, 73, 200, 200};
    expert_rows_t want[8];
    for (int g = 0; g < 8; g++)
        want[g] = (expert_rows_t){offsets[g], offsets[g + 1] - offsets[g]};
    for (size_t e = 0; e < 2; e++) {
        jit__gemm_spec_t s = spec_of(8, JIT_GROUPS_CONTIGUOUS, 24, 96, k_eps[e]);
        check(&s, 210, offsets, want);
    }
}

/* Masked: A is [G, max_M, K]; counts of 0, 1, a full expert and ragged ones. */
Test(grouped_reference, masked_matches_a_loop_of_dense_calls) {
    const int32_t counts[] = {0, 1, 40, 17, 0, 39};
    const int64_t max_m = 40;
    expert_rows_t want[6];
    for (int g = 0; g < 6; g++)
        want[g] = (expert_rows_t){g * max_m, counts[g]};
    for (size_t e = 0; e < 2; e++) {
        jit__gemm_spec_t s = spec_of(6, JIT_GROUPS_MASKED, 32, 80, k_eps[e]);
        check(&s, 6 * max_m, counts, want);
    }
}

/* What the kernel does with offsets and counts out of range, the reference does too: offsets
 * are clamped into 0..m and a decreasing pair is an empty expert; counts are clamped into
 * 0..max_M. Nothing outside A is ever read or written. (A decrease followed by more experts
 * would give two experts the same rows, which the contract rules out: offsets are
 * non-decreasing.) */
Test(grouped_reference, out_of_range_rows_are_clamped_as_the_kernel_clamps) {
    const int32_t offsets[] = {-5, 10, 30, 1000, 20};
    const expert_rows_t want_c[] = {{0, 10}, {10, 20}, {30, 20}, {50, 0}};
    jit__gemm_spec_t s = spec_of(4, JIT_GROUPS_CONTIGUOUS, 16, 64, JIT_EPILOGUE_LINEAR);
    check(&s, 50, offsets, want_c);
    const int32_t counts[] = {-3, 12, 9};
    const expert_rows_t want_m[] = {{0, 0}, {10, 10}, {20, 9}};
    s = spec_of(3, JIT_GROUPS_MASKED, 16, 64, JIT_EPILOGUE_LINEAR_SWIGLU);
    check(&s, 30, counts, want_m);
}
