/*
 * The tcgen05 planner: TMEM and SMEM figures against docs/hardware-facts.md (F12, F13),
 * instruction K and operand storage per arch, B-reuse, clusters and grid, the refusals, and
 * invariants that every plan of a variant matrix must satisfy.
 */
#include <criterion/criterion.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "family.h"
#include "plan.h"
#include "tcgen05/tcgen05.h"

static const jit__arch_profile_t *arch(const char *name) {
    const jit__arch_profile_t *a = jit__arch_find(name);
    cr_assert_not_null(a, "%s", name);
    return a;
}

static jit__gemm_spec_t spec(jit_dtype_t a, jit_dtype_t b, jit_scale_mode_t s, int64_t n,
                             int64_t k) {
    jit__gemm_spec_t v = {.n = n,
                          .k = k,
                          .a = a,
                          .b = b,
                          .out = JIT_DTYPE_BF16,
                          .scales = s,
                          .epilogue = JIT_EPILOGUE_LINEAR};
    return v;
}

#define E4M3 JIT_DTYPE_E4M3
#define E5M2 JIT_DTYPE_E5M2
#define E2M1 JIT_DTYPE_E2M1

static jit_status_t plan_v(jit__gemm_spec_t s, const char *a, int band, int sms, int cta_group,
                           int tile_n, int breuse, jit__plan_t *p, jit__diag_t *d) {
    jit__tc_variant_t v = {cta_group, tile_n, breuse};
    memset(p, 0, sizeof(*p));
    jit__diag_init(d);
    return jit__plan_tc_make_variant(&s, band, sms, arch(a), &v, p, d);
}

static void plan_ok(jit__gemm_spec_t s, const char *a, int band, int cta_group, int tile_n,
                    int breuse, jit__plan_t *p) {
    jit__diag_t d;
    jit_status_t st = plan_v(s, a, band, 148, cta_group, tile_n, breuse, p, &d);
    cr_assert_eq(st, JIT_OK, "%s: %s", a, d.msg);
}

/* ---- TMEM ---------------------------------------------------------------------------------- */

Test(tc_tmem, allocation_rounding) {
    cr_expect_eq(jit__tc_tmem_alloc_columns(1, 512), 32);
    cr_expect_eq(jit__tc_tmem_alloc_columns(32, 512), 32);
    cr_expect_eq(jit__tc_tmem_alloc_columns(33, 512), 64);
    cr_expect_eq(jit__tc_tmem_alloc_columns(136, 512), 256);
    cr_expect_eq(jit__tc_tmem_alloc_columns(257, 576), 512);
    cr_expect_eq(jit__tc_tmem_alloc_columns(512, 512), 512);
    /* Above 512: multiples of 32, only where the arch has more than 512. */
    cr_expect_eq(jit__tc_tmem_alloc_columns(513, 576), 544);
    cr_expect_eq(jit__tc_tmem_alloc_columns(536, 576), 544);
    cr_expect_eq(jit__tc_tmem_alloc_columns(560, 576), 576);
    cr_expect_eq(jit__tc_tmem_alloc_columns(576, 576), 576);
    cr_expect_eq(jit__tc_tmem_alloc_columns(577, 576), 0);
    cr_expect_eq(jit__tc_tmem_alloc_columns(513, 512), 0);
    cr_expect_eq(jit__tc_tmem_alloc_columns(0, 512), 0);
}

Test(tc_tmem, two_disjoint_stages_fit_576_at_n256) {
    /* 2-CTA 256x256x256 NVFP4 vec16: 2 x 256 + 16 + 32 = 560 -> alloc 576. */
    jit__tc_tmem_plan_t t;
    cr_assert_eq(jit__tc_tmem_plan(576, 256, 1, 2, 16, 32, 0, 64, &t, NULL), JIT_OK);
    cr_expect_eq(t.used_columns, 560);
    cr_expect_eq(t.allocated_columns, 576);
    cr_expect_eq(t.acc[0].first_column, 0);
    cr_expect_eq(t.acc[1].first_column, 256);
    cr_expect_eq(t.sfa_first_column, 512);
    cr_expect_eq(t.sfb_first_column, 528);
    cr_expect_eq(t.overlap, 0);
    cr_expect_eq(t.reverse_traversal, 0);
    cr_expect_eq(t.early_release_subtile, -1);
    /* vec32 (MXFP4): 536 -> 544. MXFP8 tile K 128: 524 -> 544. */
    cr_assert_eq(jit__tc_tmem_plan(576, 256, 1, 2, 8, 16, 0, 64, &t, NULL), JIT_OK);
    cr_expect_eq(t.used_columns, 536);
    cr_expect_eq(t.allocated_columns, 544);
    cr_assert_eq(jit__tc_tmem_plan(576, 256, 1, 2, 4, 8, 0, 64, &t, NULL), JIT_OK);
    cr_expect_eq(t.used_columns, 524);
    cr_expect_eq(t.allocated_columns, 544);
}

Test(tc_tmem, overlapping_stages_on_512_columns) {
    /* sm_100a: the 48 scale columns rounded up to one 64-column epilogue sub-tile, so stage 1
     * starts at 256 - 64 = 192 (CUTLASS's overlapping layout), sharing 192-255; stage 0 is
     * drained in reverse and released after the sub-tile that covers the shared columns; the
     * scales start at 448, SFB right after SFA. */
    jit__tc_tmem_plan_t t;
    cr_assert_eq(jit__tc_tmem_plan(512, 256, 1, 2, 16, 32, 1, 64, &t, NULL), JIT_OK);
    cr_expect_eq(t.overlap, 1);
    cr_expect_eq(t.acc[0].first_column, 0);
    cr_expect_eq(t.acc[1].first_column, 192);
    cr_expect_eq(t.overlap_columns, 64);
    cr_expect_eq(t.reverse_traversal, 1);
    cr_expect_eq(t.early_release_column, 192);
    cr_expect_eq(t.early_release_subtile, 0); /* one 64-column sub-tile */
    cr_expect_eq(t.sfa_first_column, 448);
    cr_expect_eq(t.sfb_first_column, 464);
    cr_expect_eq(t.used_columns, 496);
    cr_expect_eq(t.allocated_columns, 512);
    /* FP32 out, 32-column sub-tiles: 48 -> 64 columns, two sub-tiles before the release. */
    cr_assert_eq(jit__tc_tmem_plan(512, 256, 1, 2, 16, 32, 1, 32, &t, NULL), JIT_OK);
    cr_expect_eq(t.acc[1].first_column, 192);
    cr_expect_eq(t.early_release_subtile, 1);
    /* vec32: 24 scale columns -> one sub-tile; before the fix stage 1 sat at 232. */
    cr_assert_eq(jit__tc_tmem_plan(512, 256, 1, 2, 8, 16, 1, 64, &t, NULL), JIT_OK);
    cr_expect_eq(t.acc[1].first_column, 192);
    cr_expect_eq(t.sfa_first_column, 448);
    cr_assert_eq(jit__tc_tmem_plan(512, 256, 1, 2, 8, 16, 1, 32, &t, NULL), JIT_OK);
    cr_expect_eq(t.acc[1].first_column, 224);
    cr_expect_eq(t.sfa_first_column, 480);
    /* Without permission to overlap, 560 columns on a 512-column arch are refused. */
    jit__diag_t d;
    jit__diag_init(&d);
    cr_expect_eq(jit__tc_tmem_plan(512, 256, 1, 2, 16, 32, 0, 64, &t, &d), JIT_PLAN_FAILED);
    cr_expect(strstr(d.msg, "560") != NULL, "%s", d.msg);
}

Test(tc_tmem, breuse_uses_exactly_576) {
    /* M=512: one accumulator stage of 2 M-halves x 256, SFA 2 x 16, SFB 32 = 576. */
    jit__tc_tmem_plan_t t;
    cr_assert_eq(jit__tc_tmem_plan(576, 256, 2, 1, 16, 32, 0, 64, &t, NULL), JIT_OK);
    cr_expect_eq(t.used_columns, 576);
    cr_expect_eq(t.allocated_columns, 576);
    cr_expect_eq(t.acc[0].columns, 512);
    cr_expect_eq(t.acc_half_stride, 256);
    cr_expect_eq(t.sfa_first_column, 512);
    cr_expect_eq(t.sfa_columns, 32);
    cr_expect_eq(t.sfa_half_stride, 16);
    cr_expect_eq(t.sfb_first_column, 544);
    /* vec32: 512 + 16 + 16 = 544. */
    cr_assert_eq(jit__tc_tmem_plan(576, 256, 2, 1, 8, 16, 0, 64, &t, NULL), JIT_OK);
    cr_expect_eq(t.used_columns, 544);
    cr_expect_eq(t.allocated_columns, 544);
    /* Impossible on 512 columns, overlap or not; and two stages at 576 do not fit either. */
    jit__diag_t d;
    jit__diag_init(&d);
    cr_expect_eq(jit__tc_tmem_plan(512, 256, 2, 1, 16, 32, 1, 64, &t, &d), JIT_PLAN_FAILED);
    cr_expect_eq(jit__tc_tmem_plan(576, 256, 2, 2, 16, 32, 0, 64, &t, NULL), JIT_PLAN_FAILED);
}

/* ---- SMEM ---------------------------------------------------------------------------------- */

Test(tc_smem, stage_formula_matches_the_worked_example) {
    /* hardware-facts.md F13: 256 KiB mainloop budget, 1-CTA M=128, tile K=128,
     * FP4 A x FP8 B, SF bytes ignored: 8 -> 10 stages at N=128, 5 -> 6 at N=256. */
    const uint32_t K = 1024, budget = 256 * K;
    cr_expect_eq(jit__tc_stage_count(budget, 0, 0, 32 * K), 8);
    cr_expect_eq(jit__tc_stage_count(budget, 0, 0, 24 * K), 10);
    cr_expect_eq(jit__tc_stage_count(budget, 0, 0, 48 * K), 5);
    cr_expect_eq(jit__tc_stage_count(budget, 0, 0, 40 * K), 6);
    /* The same figures from the planner's own per-stage bytes, SF counted (F13:
     * 7 -> 10 and 5 -> 6; sm_100a N=128 loses a stage once SF bytes count). */
    const struct {
        const char *arch;
        int tile_n;
        uint32_t ab, sf;
        int with_sf, without_sf;
    } rows[] = {
        {"sm_100a", 128, 32 * K, 1024, 7, 8},
        {"sm_107a", 128, 24 * K, 1024, 10, 10},
        {"sm_100a", 256, 48 * K, 1536, 5, 5},
        {"sm_107a", 256, 40 * K, 1536, 6, 6},
    };
    for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
        jit__plan_t p;
        plan_ok(spec(E2M1, E4M3, JIT_SCALE_UE8M0_32, 4096, 4096), rows[i].arch, 0, 1,
                rows[i].tile_n, -1, &p);
        const jit__tc_plan_t *tc = jit__tc_of(&p);
        cr_expect_eq(tc->a.stage_bytes + tc->b.stage_bytes, rows[i].ab, "%s N=%d", rows[i].arch,
                     rows[i].tile_n);
        cr_expect_eq(tc->sfa_stage_bytes + tc->sfb_stage_bytes, rows[i].sf);
        cr_expect_eq(tc->smem.per_stage_bytes, rows[i].ab + rows[i].sf);
        cr_expect_eq(jit__tc_stage_count(budget, 0, 0, tc->smem.per_stage_bytes), rows[i].with_sf,
                     "%s N=%d", rows[i].arch, rows[i].tile_n);
        cr_expect_eq(jit__tc_stage_count(budget, 0, 0, rows[i].ab), rows[i].without_sf);
    }
}

Test(tc_smem, nvfp4_2cta_example_with_real_capacities) {
    /* hardware-facts.md F13: 38 KiB per stage, C = 2 x 16 KiB; sm_100a 5 stages, sm_107a 7 by
     * capacity. */
    jit__plan_t p;
    plan_ok(spec(E2M1, E2M1, JIT_SCALE_UE4M3_16, 8192, 8192), "sm_100a", 4, 2, 256, -1, &p);
    cr_expect_eq(jit__tc_of(&p)->smem.per_stage_bytes, 38912u);
    cr_expect_eq(jit__tc_of(&p)->smem.c_bytes, 32768u);
    cr_expect_eq(jit__tc_stage_count(232448, 1024, 32768, 38912), 5);
    cr_expect_eq(p.stages, 5);
    cr_expect_eq(jit__tc_of(&p)->smem.stage_limit, JIT_TC_STAGES_BY_SMEM);
    cr_expect_leq(p.smem_bytes, 232448u);

    plan_ok(spec(E2M1, E2M1, JIT_SCALE_UE4M3_16, 8192, 8192), "sm_107a", 4, 2, 256, -1, &p);
    cr_expect_eq(jit__tc_of(&p)->smem.per_stage_bytes, 38912u);
    cr_expect_eq(jit__tc_stage_count(334848, 1024, 32768, 38912), 7);
    /* sm_107a's descriptor start field has 15 bits (512 KiB), so operands may use the whole
     * 327 KiB and capacity alone bounds the stages: 7. (With the 14-bit field of sm_100a the
     * 7th stage would end past 256 KiB and the plan would keep 6.) */
    cr_expect_eq(p.stages, 7);
    cr_expect_eq(jit__tc_of(&p)->smem.stage_limit, JIT_TC_STAGES_BY_SMEM);
    cr_expect_gt(1024u + jit__tc_of(&p)->smem.operand_end, 256u * 1024u);
    cr_expect_leq(p.smem_bytes, 334848u);
}

Test(tc_smem, check_catches_bad_layouts) {
    jit__tc_smem_plan_t m;
    memset(&m, 0, sizeof(m));
    m.n_buffers = 2;
    m.bytes = 64 * 1024;
    m.buffers[0] = (jit__tc_smem_buffer_t){"a", 1024, 16384, 2, 32768, 1024, 1, 0};
    m.buffers[1] = (jit__tc_smem_buffer_t){"sfa", 33792, 512, 2, 1024, 128, 1, 0};
    cr_expect_eq(jit__tc_smem_check(&m, arch("sm_100a"), NULL), JIT_OK);
    /* A stage size that is not a multiple of the swizzle repeat misaligns stage 1. */
    jit__tc_smem_plan_t bad = m;
    bad.buffers[0].stage_bytes = 16384 + 512;
    bad.buffers[0].size = 2 * (16384 + 512);
    bad.buffers[1].offset = 36864;
    jit__diag_t d;
    jit__diag_init(&d);
    cr_expect_eq(jit__tc_smem_check(&bad, arch("sm_100a"), &d), JIT_PLAN_FAILED);
    cr_expect(strstr(d.msg, "stage 1") != NULL, "%s", d.msg);
    /* Overlap. */
    bad = m;
    bad.buffers[1].offset = 32768;
    cr_expect_eq(jit__tc_smem_check(&bad, arch("sm_100a"), NULL), JIT_PLAN_FAILED);
    /* An MMA operand whose offset ends below 256 KiB but whose absolute address (after the
     * 1 KiB reserved block) does not: the 14-bit field of sm_100a would wrap it to 0, since a
     * descriptor holds the absolute address. The capacity is lifted so that only the descriptor
     * range can object. */
    jit__arch_profile_t wide = *arch("sm_100a");
    wide.smem_per_cta = 300 * 1024;
    bad = m;
    bad.bytes = 300 * 1024;
    bad.buffers[1].offset = 262144 - 1024;
    jit__diag_init(&d);
    cr_expect_eq(jit__tc_smem_check(&bad, &wide, &d), JIT_PLAN_FAILED);
    cr_expect(strstr(d.msg, "absolute address 263168") != NULL, "%s", d.msg);
    /* ... and fine one KiB lower, and on sm_107a, whose 15-bit field reaches 512 KiB. */
    bad.buffers[1].offset = 262144 - 2048;
    cr_expect_eq(jit__tc_smem_check(&bad, &wide, NULL), JIT_OK);
    bad.buffers[1].offset = 262144 - 512;
    cr_expect_eq(jit__tc_smem_check(&bad, arch("sm_107a"), NULL), JIT_OK);
    /* A cp.async.cg destination past 248 KiB on sm_107a; the same buffer as a TMA target and
     * no MMA operand is fine there. */
    bad = m;
    bad.bytes = 300 * 1024;
    bad.buffers[1] = (jit__tc_smem_buffer_t){"sfa", 253952, 512, 2, 1024, 128, 0, 1};
    jit__diag_init(&d);
    cr_expect_eq(jit__tc_smem_check(&bad, arch("sm_107a"), &d), JIT_PLAN_FAILED);
    cr_expect(strstr(d.msg, "cp.async.cg") != NULL, "%s", d.msg);
    bad.buffers[1].cp_async_dest = 0;
    cr_expect_eq(jit__tc_smem_check(&bad, arch("sm_107a"), NULL), JIT_OK);
    /* More than the arch allows. */
    bad = m;
    bad.bytes = 232448 + 1024;
    cr_expect_eq(jit__tc_smem_check(&bad, arch("sm_100a"), NULL), JIT_PLAN_FAILED);
}

/* ---- instruction K, operands, formats ----------------------------------------------------- */

Test(tc_plan, instruction_k_and_tile_k_per_arch) {
    const struct {
        const char *arch;
        jit_dtype_t a, b;
        jit_scale_mode_t s;
        int instr_k, tile_k, instrs;
    } rows[] = {
        {"sm_100a", E2M1, E2M1, JIT_SCALE_UE4M3_16, 64, 256, 4},
        {"sm_103a", E2M1, E2M1, JIT_SCALE_UE8M0_32, 64, 256, 4},
        {"sm_107a", E2M1, E2M1, JIT_SCALE_UE4M3_16, 128, 256, 2},
        {"sm_100a", E4M3, E4M3, JIT_SCALE_UE8M0_32, 32, 128, 4},
        {"sm_107a", E5M2, E5M2, JIT_SCALE_UE8M0_32, 64, 128, 2},
        {"sm_100a", E4M3, E2M1, JIT_SCALE_UE8M0_32, 32, 128, 4},
        {"sm_107a", E2M1, E4M3, JIT_SCALE_UE8M0_32, 64, 128, 2},
    };
    for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
        jit__plan_t p;
        plan_ok(spec(rows[i].a, rows[i].b, rows[i].s, 4096, 4096), rows[i].arch, 4, 0, 0, 0, &p);
        cr_expect_eq(jit__tc_of(&p)->instr_k, rows[i].instr_k, "row %zu", i);
        cr_expect_eq(p.tile_k, rows[i].tile_k, "row %zu", i);
        cr_expect_eq(jit__tc_of(&p)->instrs_per_tile_k, rows[i].instrs, "row %zu", i);
        /* One TMA warp, no circular descriptors, no mid-tile releases on every planned arch
         * (sm_103a's K=96 mode, which would need them, is not planned). */
        cr_expect_eq(jit__tc_of(&p)->tma_warps, 1);
        cr_expect_eq(jit__tc_of(&p)->circular_desc, 0);
        cr_expect_eq(jit__tc_of(&p)->mid_tile_release, 0);
    }
    cr_expect_eq(jit__tc_instr_k(arch("sm_90a"), JIT_TC_KIND_MXF4NVF4), 0);
}

Test(tc_plan, packed_fp4_in_mixed_only_on_sm107a) {
    jit__plan_t p;
    /* sm_107a: packed FP4 A, 64-byte rows at tile K 128, SW64 with SBO 512, 32 B per K step. */
    plan_ok(spec(E2M1, E4M3, JIT_SCALE_UE8M0_32, 4096, 4096), "sm_107a", 0, 1, 128, -1, &p);
    cr_expect_eq(jit__tc_of(&p)->packed_fp4, 1);
    cr_expect_eq(jit__tc_of(&p)->a.storage, JIT_TC_STORE_FP4_PACKED);
    cr_expect_eq(jit__tc_of(&p)->a.row_bytes, 64u);
    cr_expect_eq(jit__tc_of(&p)->a.swizzle, JIT_TC_SWIZZLE_64B);
    cr_expect_eq(jit__tc_of(&p)->a.sbo, 512u);
    cr_expect_eq(jit__tc_of(&p)->a.align, 512u);
    cr_expect_eq(jit__tc_of(&p)->a.k_step_bytes, 32u);
    cr_expect_eq(jit__tc_of(&p)->a.format_code, 5);
    cr_expect_eq(jit__tc_of(&p)->b.swizzle, JIT_TC_SWIZZLE_128B);
    cr_expect_eq(jit__tc_of(&p)->b.k_step_bytes, 64u);
    /* expect_tx counts GMEM bytes: 128 rows x 64 B of A, 128 x 128 of B, 512 + 512 SF. */
    cr_expect_eq(jit__tc_of(&p)->expect_tx_bytes, 128u * 64u + 128u * 128u + 1024u);
    /* sm_100a: unpacked 16U4_ALIGN16B container, one byte per element in SMEM, but the TMA
     * still moves (and expect_tx counts) the packed GMEM bytes. */
    plan_ok(spec(E2M1, E4M3, JIT_SCALE_UE8M0_32, 4096, 4096), "sm_100a", 0, 1, 128, -1, &p);
    cr_expect_eq(jit__tc_of(&p)->packed_fp4, 0);
    cr_expect_eq(jit__tc_of(&p)->a.storage, JIT_TC_STORE_FP4_UNPACKED);
    cr_expect_eq(jit__tc_of(&p)->a.tma_type, JIT_TC_TMA_16U4_ALIGN16B);
    cr_expect_eq(jit__tc_of(&p)->a.row_bytes, 128u);
    cr_expect_eq(jit__tc_of(&p)->a.swizzle, JIT_TC_SWIZZLE_128B);
    cr_expect_eq(jit__tc_of(&p)->a.k_step_bytes, 32u);
    cr_expect_eq(jit__tc_of(&p)->expect_tx_bytes, 128u * 64u + 128u * 128u + 1024u);
    /* E2M1 as B (weights) with FP8 activations as A works the same way. */
    plan_ok(spec(E5M2, E2M1, JIT_SCALE_UE8M0_32, 4096, 4096), "sm_107a", 5, 0, 0, 0, &p);
    cr_expect_eq(jit__tc_of(&p)->b.storage, JIT_TC_STORE_FP4_PACKED);
    cr_expect_eq(jit__tc_of(&p)->b.format_code, 5);
    cr_expect_eq(jit__tc_of(&p)->a.format_code, 1);
    /* FP4 x FP4 kinds read packed FP4 on every arch, with no "packed_fp4" mixed flag. */
    plan_ok(spec(E2M1, E2M1, JIT_SCALE_UE8M0_32, 4096, 4096), "sm_100a", 5, 0, 0, 0, &p);
    cr_expect_eq(jit__tc_of(&p)->a.storage, JIT_TC_STORE_FP4_PACKED);
    cr_expect_eq(jit__tc_of(&p)->packed_fp4, 0);
    /* FP6 is never packed. */
    int n;
    const jit__arch_profile_t *all = jit__arch_all(&n);
    for (int i = 0; i < n; i++)
        cr_expect_eq(jit__tc_subbyte_packed(&all[i], 6), 0, "%s", all[i].name);
    cr_expect_eq(jit__tc_subbyte_packed(arch("sm_107a"), 4), 1);
    cr_expect_eq(jit__tc_subbyte_packed(arch("sm_103a"), 4), 0);
}

Test(tc_plan, formats_map_to_kinds_and_codes) {
    jit__plan_t p;
    plan_ok(spec(E2M1, E2M1, JIT_SCALE_UE4M3_16, 4096, 4096), "sm_100a", 5, 0, 0, 0, &p);
    cr_expect_eq(jit__tc_of(&p)->kind, JIT_TC_KIND_MXF4NVF4);
    cr_expect_str_eq(jit__tc_of(&p)->kind_suffix, ".block16");
    cr_expect_eq(jit__tc_of(&p)->scale_format, JIT_TC_SF_UE4M3);
    cr_expect_eq(jit__tc_of(&p)->a.format_code, 1);
    cr_expect_eq(jit__tc_of(&p)->sf_per_instr, 4);
    plan_ok(spec(E2M1, E2M1, JIT_SCALE_UE8M0_32, 4096, 4096), "sm_107a", 5, 0, 0, 0, &p);
    cr_expect_eq(jit__tc_of(&p)->kind, JIT_TC_KIND_MXF4NVF4); /* MXFP4 as mxf4nvf4.block32 */
    cr_expect_str_eq(jit__tc_of(&p)->kind_suffix, ".block32");
    cr_expect_eq(jit__tc_of(&p)->scale_format, JIT_TC_SF_UE8M0);
    cr_expect_eq(jit__tc_of(&p)->sf_per_instr, 4);
    plan_ok(spec(E2M1, E2M1, JIT_SCALE_UE5M3_32, 4096, 4096), "sm_107a", 5, 0, 0, 0, &p);
    cr_expect_eq(jit__tc_of(&p)->scale_format, JIT_TC_SF_UE5M3);
    cr_expect_eq((jit__tc_of(&p)->idesc >> 23) & 3u, 2u);
    plan_ok(spec(E4M3, E5M2, JIT_SCALE_UE8M0_32, 4096, 4096), "sm_107a", 5, 0, 0, 0, &p);
    cr_expect_eq(jit__tc_of(&p)->kind, JIT_TC_KIND_MXF8F6F4);
    cr_expect_str_eq(jit__tc_of(&p)->kind_suffix, "");
    cr_expect_eq(jit__tc_of(&p)->a.format_code, 0);
    cr_expect_eq(jit__tc_of(&p)->b.format_code, 1);
    cr_expect_eq(jit__tc_of(&p)->sf_per_instr, 2);
}

static void expect_refusal(jit__gemm_spec_t s, const char *a, jit_status_t want, const char *in) {
    jit__plan_t p;
    jit__diag_t d;
    jit_status_t st = plan_v(s, a, 4, 148, 0, 0, 0, &p, &d);
    cr_expect_eq(st, want, "%s: got %s (%s)", a, jit_status_name(st), d.msg);
    if (in)
        cr_expect(strstr(d.msg, in) != NULL, "'%s' not in '%s'", in, d.msg);
    cr_expect_eq(jit__tc_of(&p)->valid, 0);
}

Test(tc_plan, refusals) {
    /* No tcgen05: the answer for sm_90a, and sm_120a alike. */
    expect_refusal(spec(E2M1, E2M1, JIT_SCALE_UE4M3_16, 4096, 4096), "sm_90a", JIT_UNSUPPORTED_ARCH,
                   "block-scaled nvfp4 is not supported on sm_90a yet");
    expect_refusal(spec(E4M3, E4M3, JIT_SCALE_UE8M0_32, 4096, 4096), "sm_90a", JIT_UNSUPPORTED_ARCH,
                   "block-scaled mxfp8 is not supported on sm_90a yet");
    expect_refusal(spec(E2M1, E2M1, JIT_SCALE_UE8M0_32, 4096, 4096), "sm_120a",
                   JIT_UNSUPPORTED_ARCH, "mxfp4");
    expect_refusal(spec(E4M3, E2M1, JIT_SCALE_UE8M0_32, 4096, 4096), "sm_90a", JIT_UNSUPPORTED_ARCH,
                   "mixed");
    /* UE5M3 exists only on sm_107a. */
    expect_refusal(spec(E2M1, E2M1, JIT_SCALE_UE5M3_16, 4096, 4096), "sm_100a",
                   JIT_UNSUPPORTED_ARCH, "UE5M3");
    expect_refusal(spec(E2M1, E2M1, JIT_SCALE_UE5M3_32, 4096, 4096), "sm_103a",
                   JIT_UNSUPPORTED_ARCH, "UE5M3");
    /* Illegal format combinations. */
    expect_refusal(spec(E4M3, E4M3, JIT_SCALE_UE4M3_16, 4096, 4096), "sm_107a", JIT_UNSUPPORTED,
                   "ue8m0/32");
    expect_refusal(spec(E4M3, E2M1, JIT_SCALE_UE5M3_32, 4096, 4096), "sm_107a", JIT_UNSUPPORTED,
                   "mxf8f6f4");
    expect_refusal(spec(E2M1, E2M1, JIT_SCALE_ROW, 4096, 4096), "sm_107a", JIT_UNSUPPORTED,
                   "e2m1 x e2m1");
    expect_refusal(spec(JIT_DTYPE_BF16, E4M3, JIT_SCALE_UE8M0_32, 4096, 4096), "sm_107a",
                   JIT_UNSUPPORTED, "bf16");
    jit__gemm_spec_t s = spec(E4M3, E4M3, JIT_SCALE_UE8M0_32, 4096, 4096);
    s.out = JIT_DTYPE_E4M3;
    expect_refusal(s, "sm_100a", JIT_UNSUPPORTED, "bf16 or f32");
    /* Shapes the kernel cannot tile. */
    expect_refusal(spec(E2M1, E2M1, JIT_SCALE_UE4M3_16, 4096, 4104), "sm_107a", JIT_INVALID_SHAPE,
                   "16-element");
    expect_refusal(spec(E2M1, E2M1, JIT_SCALE_UE4M3_16, 4096, 48), "sm_107a", JIT_MISALIGNED,
                   "multiple of 32");
    expect_refusal(spec(E4M3, E2M1, JIT_SCALE_UE8M0_32, 4096, 4064), "sm_100a", JIT_MISALIGNED,
                   "16U4_ALIGN16B");
    jit__plan_t p;
    jit__diag_t d;
    /* ... while sm_107a's packed operand takes that K. */
    cr_expect_eq(plan_v(spec(E4M3, E2M1, JIT_SCALE_UE8M0_32, 4096, 4064), "sm_107a", 5, 148, 0, 0,
                        0, &p, &d),
                 JIT_OK, "%s", d.msg);
    /* Forced variants that cannot exist. */
    cr_expect_eq(plan_v(spec(E2M1, E2M1, JIT_SCALE_UE4M3_16, 4096, 4096), "sm_100a", 5, 148, 2, 256,
                        1, &p, &d),
                 JIT_UNSUPPORTED_ARCH);
    cr_expect_eq(plan_v(spec(E2M1, E2M1, JIT_SCALE_UE4M3_16, 4096, 4096), "sm_107a", 5, 148, 1, 256,
                        1, &p, &d),
                 JIT_UNSUPPORTED);
    cr_expect_eq(plan_v(spec(E2M1, E2M1, JIT_SCALE_UE4M3_16, 4096, 4096), "sm_107a", 5, 148, 0, 96,
                        0, &p, &d),
                 JIT_INVALID_ARGUMENT);
    cr_expect_eq(
        plan_v(spec(E2M1, E2M1, JIT_SCALE_UE4M3_16, 4096, 4096), "sm_107a", 5, 1, 2, 0, 0, &p, &d),
        JIT_PLAN_FAILED);
}

/* ---- B-reuse, TMEM in whole plans -------------------------------------------------------- */

Test(tc_plan, breuse_on_sm107a_large_band) {
    jit__plan_t p;
    plan_ok(spec(E2M1, E2M1, JIT_SCALE_UE4M3_16, 8192, 8192), "sm_107a", 5, 0, 0, 0, &p);
    cr_expect_eq(jit__tc_of(&p)->breuse, 1);
    cr_expect_eq(jit__tc_of(&p)->utccp_interleaved, 1);
    cr_expect_eq(p.tile_m, 512);
    cr_expect_eq(jit__tc_of(&p)->instr_m, 256);
    cr_expect_eq(jit__tc_of(&p)->cta_group, 2);
    cr_expect_eq(jit__tc_of(&p)->cta_rows_a, 256);
    cr_expect_eq(jit__tc_of(&p)->tmem.acc_stages, 1);
    cr_expect_eq(jit__tc_of(&p)->tmem.m_halves, 2);
    cr_expect_eq(jit__tc_of(&p)->tmem.used_columns, 576);
    cr_expect_eq(jit__tc_of(&p)->tmem.allocated_columns, 576);
    /* Smaller bands and other arches keep M=256 with two accumulator stages. */
    plan_ok(spec(E2M1, E2M1, JIT_SCALE_UE4M3_16, 8192, 8192), "sm_107a", 4, 0, 0, 0, &p);
    cr_expect_eq(jit__tc_of(&p)->breuse, 0);
    cr_expect_eq(jit__tc_of(&p)->tmem.acc_stages, 2);
    cr_expect_eq(jit__tc_of(&p)->tmem.used_columns, 560);
    cr_expect_eq(jit__tc_of(&p)->tmem.allocated_columns, 576);
    cr_expect_eq(jit__tc_of(&p)->tmem.overlap, 0);
    plan_ok(spec(E2M1, E2M1, JIT_SCALE_UE4M3_16, 8192, 8192), "sm_100a", 5, 0, 0, 0, &p);
    cr_expect_eq(jit__tc_of(&p)->breuse, 0);
    cr_expect_eq(jit__tc_of(&p)->tmem.overlap, 1);
    cr_expect_eq(jit__tc_of(&p)->tmem.acc[1].first_column, 192); /* 256 - one 64-column sub-tile */
    /* Forced B-reuse at tile N 128 keeps two accumulator stages: 2 x 2 x 128 + 32 + 16. */
    plan_ok(spec(E2M1, E2M1, JIT_SCALE_UE4M3_16, 8192, 8192), "sm_107a", 5, 2, 128, 1, &p);
    cr_expect_eq(jit__tc_of(&p)->tmem.acc_stages, 2);
    cr_expect_eq(jit__tc_of(&p)->tmem.used_columns, 560);
}

Test(tc_plan, sf_tmem_slots) {
    jit__plan_t p;
    unsigned id;
    int col;
    /* sm_100a MXFP8: one scale per row per instruction, 4 instructions share a word. */
    plan_ok(spec(E4M3, E4M3, JIT_SCALE_UE8M0_32, 4096, 4096), "sm_100a", 4, 2, 256, -1, &p);
    for (int i = 0; i < 4; i++) {
        jit__tc_sf_slot(jit__tc_of(&p), 0, i, &col, &id);
        cr_expect_eq(col, 0);
        cr_expect_eq(id, (unsigned)i);
    }
    /* sm_107a MXFP8 K=64: two scales, half-words 0 and 2. */
    plan_ok(spec(E4M3, E4M3, JIT_SCALE_UE8M0_32, 4096, 4096), "sm_107a", 4, 2, 256, -1, &p);
    jit__tc_sf_slot(jit__tc_of(&p), 0, 1, &col, &id);
    cr_expect_eq(col, 0);
    cr_expect_eq(id, 2u);
    /* sm_107a NVFP4 K=128: 8 scales = 2 chunks per instruction; SFB for N=256 in the order
     * N0K0, N1K0, N0K1, N1K1 (4 columns each). */
    plan_ok(spec(E2M1, E2M1, JIT_SCALE_UE4M3_16, 4096, 4096), "sm_107a", 4, 2, 256, -1, &p);
    cr_expect_eq(jit__tc_of(&p)->sfb_row_blocks, 2);
    cr_expect_eq(jit__tc_sf_chunk_column(jit__tc_of(&p), 1, 0, 0), 0);
    cr_expect_eq(jit__tc_sf_chunk_column(jit__tc_of(&p), 1, 1, 0), 4);
    cr_expect_eq(jit__tc_sf_chunk_column(jit__tc_of(&p), 1, 0, 1), 8);
    cr_expect_eq(jit__tc_sf_chunk_column(jit__tc_of(&p), 1, 1, 1), 12);
    jit__tc_sf_slot(jit__tc_of(&p), 1, 1, &col, &id);
    cr_expect_eq(col, 16);
    cr_expect_eq(id, 0u);
    jit__tc_sf_slot(jit__tc_of(&p), 0, 1, &col, &id);
    cr_expect_eq(col, 8);
    /* Every SF column a slot names lies inside the plan's SF ranges. */
    int last = 0;
    for (int i = 0; i < jit__tc_of(&p)->instrs_per_tile_k; i++) {
        jit__tc_sf_slot(jit__tc_of(&p), 1, i, &col, &id);
        last = col + jit__tc_of(&p)->sfb_row_blocks * 4 * ((jit__tc_of(&p)->sf_per_instr + 3) / 4);
    }
    cr_expect_eq(last, jit__tc_of(&p)->tmem.sfb_columns);
}

/* ---- clusters and grid -------------------------------------------------------------------- */

Test(tc_plan, clusters_and_floor_division_grid) {
    jit__plan_t p;
    jit__diag_t d;
    cr_assert_eq(plan_v(spec(E4M3, E4M3, JIT_SCALE_UE8M0_32, 8192, 8192), "sm_107a", 4, 148, 0, 0,
                        0, &p, &d),
                 JIT_OK, "%s", d.msg);
    cr_expect_eq(p.cluster_m, 4);
    cr_expect_eq(p.fallback_cluster_m, 2);
    cr_expect_eq(jit__tc_of(&p)->grid.split_factor, 2);
    cr_expect_eq(jit__tc_of(&p)->grid.x, 4);
    cr_expect_eq(jit__tc_of(&p)->grid.y, 1);
    cr_expect_eq(jit__tc_of(&p)->grid.z, 37);
    cr_expect_eq(jit__tc_of(&p)->b.multicast, 1); /* two CTA pairs along M share B */
    cr_expect_eq(jit__tc_of(&p)->a.multicast, 0);
    cr_expect_eq(p.persistent, 1);
    cr_expect_eq(p.threads, 192);
    /* 150 SMs: 150 fallback CTAs -> floor(150 / 4) = 37 preferred clusters, never 38. */
    cr_assert_eq(plan_v(spec(E4M3, E4M3, JIT_SCALE_UE8M0_32, 8192, 8192), "sm_107a", 4, 150, 0, 0,
                        0, &p, &d),
                 JIT_OK);
    cr_expect_eq(jit__tc_of(&p)->grid.fallback_capacity, 150);
    cr_expect_eq(jit__tc_of(&p)->grid.z, 37);
    cr_expect_eq(jit__tc_of(&p)->grid.fallback_clusters % jit__tc_of(&p)->grid.split_factor, 0);
    cr_expect_eq(jit__tc_of(&p)->grid.fallback_groups_whole, 1);
    /* 3 SMs cannot hold a 4-CTA cluster: the fallback shape becomes the only one. */
    cr_assert_eq(
        plan_v(spec(E4M3, E4M3, JIT_SCALE_UE8M0_32, 8192, 8192), "sm_107a", 4, 3, 0, 0, 0, &p, &d),
        JIT_OK);
    cr_expect_eq(p.cluster_m, 2);
    cr_expect_eq(p.fallback_cluster_m, 0);
    cr_expect_eq(jit__tc_of(&p)->grid.z, 1);
    /* Decode-sized bands: one CTA, no cluster, one CTA per SM. */
    cr_assert_eq(plan_v(spec(E2M1, E2M1, JIT_SCALE_UE4M3_16, 8192, 8192), "sm_100a", 0, 148, 0, 0,
                        0, &p, &d),
                 JIT_OK);
    cr_expect_eq(jit__tc_of(&p)->cta_group, 1);
    cr_expect_eq(p.cluster_m, 1);
    cr_expect_eq(p.fallback_cluster_m, 0);
    cr_expect_eq(jit__tc_of(&p)->grid.z, 148);
    cr_expect_eq(p.tile_n, 64); /* 8192 / 128 = 64 tiles < 148 SMs: narrower tiles */
}

Test(tc_plan, fallback_groups_must_be_whole) {
    cr_expect_eq(jit__tc_check_fallback_groups(4, 2, NULL), JIT_OK);
    cr_expect_eq(jit__tc_check_fallback_groups(0, 2, NULL), JIT_OK);
    cr_expect_eq(jit__tc_check_fallback_groups(12, 4, NULL), JIT_OK);
    jit__diag_t d;
    jit__diag_init(&d);
    cr_expect_eq(jit__tc_check_fallback_groups(3, 2, &d), JIT_INVALID_ARGUMENT);
    cr_expect(strstr(d.msg, "whole number") != NULL, "%s", d.msg);
    cr_expect_eq(jit__tc_check_fallback_groups(4, 3, NULL), JIT_INVALID_ARGUMENT);
    cr_expect_eq(jit__tc_check_fallback_groups(32, 32, NULL), JIT_INVALID_ARGUMENT);
    cr_expect_eq(jit__tc_check_fallback_groups(-2, 2, NULL), JIT_INVALID_ARGUMENT);
}

/* ---- every plan of the variant matrix ----------------------------------------------------- */

static void check_invariants(const jit__plan_t *p, const char *what) {
    const jit__tc_plan_t *tc = jit__tc_of(p);
    const jit__arch_profile_t *a = p->arch;
    cr_assert_eq(tc->valid, 1, "%s", what);
    cr_assert_eq(p->family, &jit__family_tcgen05, "%s", what);
    cr_assert_geq(p->stages, 2, "%s", what);
    cr_assert_eq(p->smem_bytes, tc->smem.bytes, "%s", what);
    cr_assert_leq(p->smem_bytes, a->smem_per_cta, "%s", what);
    jit__diag_t d;
    jit__diag_init(&d);
    cr_assert_eq(jit__tc_smem_check(&tc->smem, a, &d), JIT_OK, "%s: %s", what, d.msg);
    cr_assert_leq(a->smem_reserved_per_cta + tc->smem.operand_end, jit__tc_smem_desc_addr_limit(a),
                  "%s", what);
    /* Every A/B stage base aligned to its swizzle repeat, and its descriptor representable. */
    const jit__tc_operand_t *ops[2] = {&tc->a, &tc->b};
    const int bufs[2] = {JIT_TC_BUF_A, JIT_TC_BUF_B};
    for (int i = 0; i < 2; i++) {
        const jit__tc_smem_buffer_t *b = &tc->smem.buffers[bufs[i]];
        cr_assert_eq(b->stage_bytes, ops[i]->stage_bytes, "%s", what);
        for (int s = 0; s < b->count; s++) {
            uint32_t base = b->offset + (uint32_t)s * b->stage_bytes;
            cr_assert_eq(base % ops[i]->align, 0u, "%s: %s stage %d", what, b->name, s);
            cr_assert_eq(jit__tc_smem_desc_check(jit__tc_smem_desc_addr_bits(a),
                                                 a->smem_reserved_per_cta + base, ops[i]->lbo,
                                                 ops[i]->sbo, ops[i]->swizzle, 0, NULL),
                         JIT_OK, "%s", what);
        }
        cr_assert_leq(ops[i]->box_inner_bytes, 128u, "%s", what);
        cr_assert_leq(ops[i]->rows, 256, "%s", what);
    }
    /* TMEM alignment: every accumulator stage and the scale block start on a multiple of the
     * epilogue sub-tile (>= 32 columns), as CUTLASS's overlapping layout does (stage 1 at 256 -
     * epilogue tile N); SFB directly follows SFA. Overlapping stages once put stage 1 and the
     * scales only 4-column aligned. */
    for (int s = 0; s < tc->tmem.acc_stages; s++)
        cr_assert_eq(tc->tmem.acc[s].first_column % tc->smem.epi_tile_n, 0, "%s: stage %d at %d",
                     what, s, tc->tmem.acc[s].first_column);
    cr_assert_eq(tc->tmem.sfa_first_column % tc->smem.epi_tile_n, 0, "%s: SFA at %d", what,
                 tc->tmem.sfa_first_column);
    cr_assert_eq(tc->tmem.sfb_first_column, tc->tmem.sfa_first_column + tc->tmem.sfa_columns, "%s",
                 what);
    /* TMEM within capacity and allocatable. */
    cr_assert_leq(tc->tmem.used_columns, tc->tmem.allocated_columns, "%s", what);
    cr_assert_leq(tc->tmem.allocated_columns, (int)a->tmem_columns, "%s", what);
    cr_assert_eq(jit__tc_tmem_alloc_columns(tc->tmem.used_columns, (int)a->tmem_columns),
                 tc->tmem.allocated_columns, "%s", what);
    /* The descriptor is legal (re-encodes from the plan) and decodes to the plan's shape. */
    jit__tc_idesc_params_t ip = {tc->kind,         p->spec.a,   p->spec.b,
                                 tc->scale_format, tc->sf_vec,  tc->instr_m,
                                 tc->instr_n,      tc->instr_k, tc->cta_group};
    uint32_t again;
    cr_assert_eq(jit__tc_idesc(a, &ip, &again, NULL), JIT_OK, "%s", what);
    cr_assert_eq(again, tc->idesc, "%s", what);
    jit__tc_idesc_fields_t f;
    jit__tc_idesc_decode(tc->idesc, tc->kind, a, &f);
    cr_assert_eq(f.m, tc->instr_m, "%s", what);
    cr_assert_eq(f.n, tc->instr_n, "%s", what);
    cr_assert_eq(f.k, tc->instr_k, "%s", what);
    cr_assert_eq((int)f.a_format, tc->a.format_code, "%s", what);
    cr_assert_eq((int)f.b_format, tc->b.format_code, "%s", what);
    cr_assert_eq(p->tile_k, tc->instr_k * tc->instrs_per_tile_k, "%s", what);
    /* Each instruction's K slice stays inside its 128-byte (or 64-byte) row: no circular
     * descriptors needed. */
    for (int i = 0; i < 2; i++)
        cr_assert_eq(ops[i]->k_step_bytes * (uint32_t)tc->instrs_per_tile_k, ops[i]->row_bytes,
                     "%s", what);
    /* Grid: floor division, one wave. */
    cr_assert_geq(tc->grid.z, 1, "%s", what);
    cr_assert_leq(tc->grid.x * tc->grid.y * tc->grid.z, p->sm_count, "%s", what);
    cr_assert_eq(p->cluster_m % tc->cta_group, 0, "%s", what);
    cr_assert_leq(p->cluster_m, 4, "%s", what);
}

Test(tc_plan, variant_matrix_invariants) {
    const char *arches[] = {"sm_100a", "sm_103a", "sm_107a"};
    const struct {
        jit_dtype_t a, b;
        jit_scale_mode_t s;
    } fmts[] = {
        {E4M3, E4M3, JIT_SCALE_UE8M0_32}, {E5M2, E5M2, JIT_SCALE_UE8M0_32},
        {E2M1, E2M1, JIT_SCALE_UE8M0_32}, {E2M1, E2M1, JIT_SCALE_UE4M3_16},
        {E2M1, E2M1, JIT_SCALE_UE5M3_16}, {E2M1, E2M1, JIT_SCALE_UE5M3_32},
        {E4M3, E2M1, JIT_SCALE_UE8M0_32}, {E2M1, E5M2, JIT_SCALE_UE8M0_32},
    };
    const int tiles[] = {64, 128, 192, 256};
    const jit_dtype_t outs[] = {JIT_DTYPE_BF16, JIT_DTYPE_F32};
    int planned = 0;
    for (size_t ai = 0; ai < 3; ai++)
        for (size_t fi = 0; fi < sizeof(fmts) / sizeof(fmts[0]); fi++)
            for (int g = 1; g <= 2; g++)
                for (int ti = 0; ti < 4; ti++)
                    for (int br = -1; br <= 1; br += 2)
                        for (int oi = 0; oi < 2; oi++) {
                            jit__gemm_spec_t s =
                                spec(fmts[fi].a, fmts[fi].b, fmts[fi].s, 7168, 4096);
                            s.out = outs[oi];
                            s.epilogue = oi ? JIT_EPILOGUE_LINEAR_SWIGLU : JIT_EPILOGUE_LINEAR;
                            jit__plan_t p;
                            jit__diag_t d;
                            jit_status_t st =
                                plan_v(s, arches[ai], 4, 148, g, tiles[ti], br, &p, &d);
                            char what[160];
                            snprintf(what, sizeof(what), "%s %s g%d n%d breuse%d out%d", arches[ai],
                                     jit__tc_format_name(s.a, s.b, s.scales), g, tiles[ti], br, oi);
                            int ue5 = fmts[fi].s == JIT_SCALE_UE5M3_16 ||
                                      fmts[fi].s == JIT_SCALE_UE5M3_32;
                            int sm107 = ai == 2;
                            if ((ue5 && !sm107) || (br > 0 && !sm107)) {
                                cr_assert_eq(st, JIT_UNSUPPORTED_ARCH, "%s: %s", what, d.msg);
                                continue;
                            }
                            if (br > 0 && g == 1) {
                                cr_assert_eq(st, JIT_UNSUPPORTED, "%s: %s", what, d.msg);
                                continue;
                            }
                            cr_assert_eq(st, JIT_OK, "%s: %s", what, d.msg);
                            check_invariants(&p, what);
                            planned++;
                        }
    /* Count the variants so a change in the rules shows up here. */
    /* sm_100a/103a: 6 formats x 2 groups x 4 tiles x B-reuse off x 2 outputs; sm_107a: 8
     * formats x 4 tiles x 2 outputs x (1-CTA, 2-CTA, 2-CTA with B-reuse). */
    cr_expect_eq(planned, 2 * (6 * 2 * 4 * 2) + 8 * 4 * 2 * 3, "planned %d", planned);
}

Test(tc_plan, default_plans_for_every_band) {
    const char *arches[] = {"sm_100a", "sm_103a", "sm_107a"};
    const int64_t ns[] = {64, 200, 2048, 7168, 28672};
    for (int ai = 0; ai < 3; ai++)
        for (int b = 0; b < JIT_TOKEN_BANDS; b++)
            for (int ni = 0; ni < 5; ni++) {
                jit__plan_t p;
                jit__diag_t d;
                char what[96];
                snprintf(what, sizeof(what), "%s band %d n %lld", arches[ai], b, (long long)ns[ni]);
                cr_assert_eq(plan_v(spec(E2M1, E2M1, JIT_SCALE_UE4M3_16, ns[ni], 4096), arches[ai],
                                    b, 148, 0, 0, 0, &p, &d),
                             JIT_OK, "%s: %s", what, d.msg);
                check_invariants(&p, what);
                cr_assert_leq(p.tile_n, (int)((ns[ni] + 63) / 64 * 64), "%s", what);
            }
}

/* ---- JSON --------------------------------------------------------------------------------- */

Test(tc_plan, json_has_the_documented_fields) {
    jit__plan_t p;
    plan_ok(spec(E2M1, E4M3, JIT_SCALE_UE8M0_32, 4096, 4096), "sm_107a", 0, 1, 128, -1, &p);
    json_t *o = json_object();
    cr_assert_eq(jit__plan_tc_to_json(&p, o), 0);
    cr_expect_str_eq(json_string_value(json_object_get(o, "kind")), "mxf8f6f4");
    json_t *instr = json_object_get(o, "instr");
    cr_expect_eq(json_integer_value(json_object_get(instr, "m")), 128);
    cr_expect_eq(json_integer_value(json_object_get(instr, "n")), 128);
    cr_expect_eq(json_integer_value(json_object_get(instr, "k")), 64);
    cr_expect_str_eq(json_string_value(json_object_get(o, "idesc")), "0x88A00280");
    json_t *f = json_object_get(o, "idesc_fields");
    cr_expect_eq(json_integer_value(json_object_get(f, "a_format")), 5);
    cr_expect_eq(json_integer_value(json_object_get(f, "k_size")), 1);
    cr_expect_eq(json_integer_value(json_object_get(f, "k")), 64);
    cr_expect_eq(json_integer_value(json_object_get(o, "a_format_code")), 5);
    cr_expect_eq(json_integer_value(json_object_get(o, "b_format_code")), 0);
    cr_expect_str_eq(json_string_value(json_object_get(o, "scale_format")), "ue8m0");
    json_t *smem = json_object_get(o, "smem");
    cr_expect_eq(json_integer_value(json_object_get(smem, "stages")), p.stages);
    cr_expect_eq(json_integer_value(json_object_get(smem, "bytes")), (json_int_t)p.smem_bytes);
    json_t *bufs = json_object_get(smem, "buffers");
    cr_assert_eq(json_array_size(bufs), (size_t)JIT_TC_BUF_COUNT);
    json_t *a = json_array_get(bufs, JIT_TC_BUF_A);
    cr_expect_str_eq(json_string_value(json_object_get(a, "name")), "a");
    cr_expect_eq(json_integer_value(json_object_get(a, "offset")), 1024);
    cr_expect_eq(json_integer_value(json_object_get(a, "size")), (json_int_t)p.stages * 8192);
    json_t *t = json_object_get(o, "tmem");
    cr_expect_eq(json_integer_value(json_object_get(t, "used_columns")), 264);
    cr_expect_eq(json_integer_value(json_object_get(t, "allocated_columns")), 512);
    cr_expect_eq(json_array_size(json_object_get(t, "accumulators")), 2u);
    json_t *c = json_object_get(o, "cluster");
    cr_expect(json_is_array(json_object_get(c, "preferred")));
    cr_expect(json_is_null(json_object_get(c, "fallback")));
    json_t *g = json_object_get(o, "grid");
    cr_expect_eq(json_integer_value(json_array_get(json_object_get(g, "launch"), 2)), 148);
    cr_expect_str_eq(json_string_value(json_object_get(g, "policy")), "persistent");
    json_t *b = json_object_get(json_object_get(o, "operands"), "a");
    cr_expect_str_eq(json_string_value(json_object_get(b, "swizzle")), "64B");
    cr_expect_eq(json_is_true(json_object_get(o, "packed_fp4")), 1);
    json_decref(o);
}

Test(tc_plan, lead_planner_routes_block_scales_here) {
    jit__gemm_spec_t s = spec(E2M1, E2M1, JIT_SCALE_UE4M3_16, 4096, 4096);
    jit__plan_t p;
    jit__diag_t d;
    jit__diag_init(&d);
    cr_assert_eq(jit__plan_make(&s, 4, 148, arch("sm_107a"), &p, &d), JIT_OK, "%s", d.msg);
    cr_expect_eq(p.family, &jit__family_tcgen05);
    char *text = jit__plan_to_json(&p);
    cr_assert_not_null(text);
    json_error_t err;
    json_t *o = json_loads(text, 0, &err);
    cr_assert_not_null(o, "%s", err.text);
    cr_expect_str_eq(json_string_value(json_object_get(o, "idesc")), "0x10400488");
    cr_expect_str_eq(json_string_value(json_object_get(o, "arch")), "sm_107a");
    json_decref(o);
    free(text);
    jit__diag_init(&d);
    cr_expect_eq(jit__plan_make(&s, 4, 148, arch("sm_90a"), &p, &d), JIT_UNSUPPORTED_ARCH);
    cr_expect(strstr(d.msg, "not supported on sm_90a yet") != NULL, "%s", d.msg);
}

/* ---- descriptor address range of every default plan ---------------------------------------- */

/* The MMA and tcgen05.cp descriptors encode the absolute shared::cta address, and dynamic
 * shared memory starts after a reserved block (1 KiB), so an operand stage must be
 * representable at reserved + offset, not at offset. Every stage of every
 * operand (A, B, SFA, SFB) of every default plan: its descriptor decodes to its own absolute
 * address. */
Test(tc_plan, default_plans_descriptor_addresses_are_absolute) {
    const char *arches[] = {"sm_100a", "sm_103a", "sm_107a"};
    const jit_dtype_t dts[] = {E4M3, E5M2, E2M1};
    const jit_scale_mode_t fp4_scales[] = {JIT_SCALE_UE8M0_32, JIT_SCALE_UE4M3_16,
                                           JIT_SCALE_UE5M3_16, JIT_SCALE_UE5M3_32};
    const int64_t ns[] = {64,   128,  192,  256,  320,  512,   1024,
                          2048, 3072, 4096, 5120, 7168, 14336, 28672};
    int planned[3] = {0, 0, 0}, bad[3] = {0, 0, 0};
    for (int ai = 0; ai < 3; ai++)
        for (int x = 0; x < 3; x++)
            for (int y = 0; y < 3; y++)
                for (int si = 0; si < 4; si++) {
                    if (si > 0 && !(dts[x] == E2M1 && dts[y] == E2M1))
                        continue;
                    for (int band = 0; band < JIT_TOKEN_BANDS; band++)
                        for (size_t ni = 0; ni < sizeof(ns) / sizeof(ns[0]); ni++) {
                            jit__gemm_spec_t s = spec(dts[x], dts[y], fp4_scales[si], ns[ni], 7168);
                            jit__plan_t p;
                            jit__diag_t d;
                            if (plan_v(s, arches[ai], band, 148, 0, 0, 0, &p, &d) != JIT_OK)
                                continue;
                            planned[ai]++;
                            const jit__tc_plan_t *tc = jit__tc_of(&p);
                            int wraps = 0;
                            const jit__arch_profile_t *a = p.arch;
                            const int bits = jit__tc_smem_desc_addr_bits(a);
                            for (int bi = JIT_TC_BUF_A; bi <= JIT_TC_BUF_SFB; bi++) {
                                const jit__tc_smem_buffer_t *b = &tc->smem.buffers[bi];
                                for (int st = 0; st < b->count; st++) {
                                    uint32_t abs = a->smem_reserved_per_cta + b->offset +
                                                   (uint32_t)st * b->stage_bytes;
                                    jit__tc_smem_desc_fields_t f;
                                    jit__tc_smem_desc_decode(bits,
                                                             jit__tc_smem_desc(bits, abs, 128, 1024,
                                                                               JIT_TC_SWIZZLE_128B,
                                                                               0),
                                                             &f);
                                    if (f.start_addr != abs ||
                                        abs + b->stage_bytes > jit__tc_smem_desc_addr_limit(a))
                                        wraps = 1;
                                }
                            }
                            bad[ai] += wraps;
                        }
                }
    for (int ai = 0; ai < 3; ai++)
        cr_expect_eq(bad[ai], 0,
                     "%s: %d of %d default plans have an operand stage whose "
                     "descriptor cannot hold its absolute address",
                     arches[ai], bad[ai], planned[ai]);
}
