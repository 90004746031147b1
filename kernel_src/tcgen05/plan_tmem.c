/*
 * The tcgen05 planner's TMEM side: how many columns an allocation takes, where the accumulator
 * stages and the scale factors go (disjoint, or the overlapping layout with reverse traversal
 * and early release on 512-column arches), and which columns and SF IDs each MMA reads.
 */
#include "tcgen05.h"

#include <string.h>

int jit__tc_tmem_alloc_columns(int columns, int capacity) {
    if (columns <= 0 || columns > capacity)
        return 0;
    int n;
    if (columns <= 512) {
        n = 32;
        while (n < columns)
            n *= 2;
    } else {
        n = (columns + 31) / 32 * 32;
    }
    return n <= capacity ? n : 0;
}

jit_status_t jit__tc_tmem_plan(int capacity, int acc_columns, int m_halves, int acc_stages,
                               int sfa_columns, int sfb_columns, int allow_overlap, int epi_tile_n,
                               jit__tc_tmem_plan_t *o, jit__diag_t *d) {
    memset(o, 0, sizeof(*o));
    if (capacity <= 0)
        return jit__fail(d, JIT_UNSUPPORTED_ARCH, "no tensor memory on this arch");
    if (acc_columns <= 0 || m_halves < 1 || m_halves > 2 || acc_stages < 1 || acc_stages > 2 ||
        sfa_columns < 0 || sfb_columns < 0 || epi_tile_n <= 0)
        return jit__fail(d, JIT_INTERNAL, "TMEM plan: bad inputs (acc %d x %d x %d, sf %d+%d)",
                         acc_columns, m_halves, acc_stages, sfa_columns, sfb_columns);
    int sf = sfa_columns * m_halves + sfb_columns;
    int stage_cols = acc_columns * m_halves;
    o->capacity = capacity;
    o->acc_stages = acc_stages;
    o->m_halves = m_halves;
    o->acc_half_stride = m_halves == 2 ? acc_columns : 0;
    o->reverse_traversal = 0;
    o->early_release_subtile = -1;
    o->early_release_column = -1;
    int acc_end;
    if (stage_cols * acc_stages + sf <= capacity) {
        for (int s = 0; s < acc_stages; s++) {
            o->acc[s].first_column = s * stage_cols;
            o->acc[s].columns = stage_cols;
        }
        acc_end = stage_cols * acc_stages;
    } else if (allow_overlap && acc_stages == 2 && m_halves == 1 && stage_cols + sf <= capacity) {
        /* Stage 1 ends where the scales begin; it shares its first columns with the end of
         * stage 0, which the epilogue therefore drains first (reverse order) and releases as
         * soon as those sub-tiles are read. The shared span is whole epilogue sub-tiles, so
         * stage 1 and the scales start on a sub-tile boundary (>= 32 columns), as CUTLASS's
         * overlapping accumulators do (stage 1 at 256 - epilogue tile N, the scales after it;
         * include/cutlass/detail/sm100_tmem_helper.hpp). Placing them at 256 - (SFA + SFB)
         * left them only 4-column aligned (232, 244, 488, 500). */
        int sf_region = (sf + epi_tile_n - 1) / epi_tile_n * epi_tile_n;
        if (stage_cols + sf_region > capacity)
            return jit__fail(d, JIT_PLAN_FAILED,
                             "TMEM plan: %d scale columns rounded to %d-column sub-tiles do not "
                             "fit beside a %d-column stage in %d",
                             sf, epi_tile_n, stage_cols, capacity);
        int start1 = capacity - sf_region - stage_cols;
        o->acc[0].first_column = 0;
        o->acc[0].columns = stage_cols;
        o->acc[1].first_column = start1;
        o->acc[1].columns = stage_cols;
        o->overlap = 1;
        o->overlap_columns = stage_cols - start1;
        o->reverse_traversal = 1;
        o->early_release_subtile = (o->overlap_columns + epi_tile_n - 1) / epi_tile_n - 1;
        o->early_release_column = start1;
        acc_end = capacity - sf_region;
    } else {
        return jit__fail(d, JIT_PLAN_FAILED,
                         "TMEM plan needs %d columns (%d accumulator stage(s) of %d, scales %d), "
                         "more than the %d this arch has%s",
                         stage_cols * acc_stages + sf, acc_stages, stage_cols, sf, capacity,
                         allow_overlap ? " even with overlapping stages" : "");
    }
    o->sfa_first_column = acc_end;
    o->sfa_columns = sfa_columns * m_halves;
    o->sfa_half_stride = m_halves == 2 ? sfa_columns : 0;
    o->sfb_first_column = acc_end + o->sfa_columns;
    o->sfb_columns = sfb_columns;
    o->used_columns = o->sfb_first_column + sfb_columns;
    o->allocated_columns = jit__tc_tmem_alloc_columns(o->used_columns, capacity);
    if (!o->allocated_columns)
        return jit__fail(d, JIT_PLAN_FAILED,
                         "TMEM plan uses %d columns, which cannot be allocated within %d",
                         o->used_columns, capacity);
    return JIT_OK;
}

void jit__tc_sf_slot(const jit__tc_plan_t *tc, int which, int k_instr, int *column,
                     unsigned *sf_id) {
    int rb = which ? tc->sfb_row_blocks : 1;
    int first = k_instr * tc->sf_per_instr;
    *column = (first / 4) * rb * 4;
    /* Fewer than 4 scales per instruction share a 32-bit word: the ID picks the byte. */
    *sf_id = tc->sf_per_instr < 4 ? (unsigned)(first % 4) : 0u;
}

int jit__tc_sf_chunk_column(const jit__tc_plan_t *tc, int which, int mn, int kc) {
    int rb = which ? tc->sfb_row_blocks : 1;
    return (kc * rb + mn) * 4;
}
