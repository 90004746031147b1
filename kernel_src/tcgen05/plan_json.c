/*
 * The tcgen05 plan as JSON (the "tcgen05" object of a plan; fields in docs/plan.md).
 */
#include "tcgen05.h"

#include <jansson.h>
#include <stdio.h>
#include <string.h>

/* ---- JSON -------------------------------------------------------------------------------- */

static json_t *hex32(uint32_t v) {
    char buf[16];
    snprintf(buf, sizeof(buf), "0x%08X", v);
    return json_string(buf);
}

static json_t *hex64(uint64_t v) {
    char buf[24];
    snprintf(buf, sizeof(buf), "0x%016llX", (unsigned long long)v);
    return json_string(buf);
}

static const char *storage_name(jit__tc_operand_storage_t s) {
    switch (s) {
    case JIT_TC_STORE_8BIT:
        return "8bit";
    case JIT_TC_STORE_FP4_PACKED:
        return "fp4_packed";
    case JIT_TC_STORE_FP4_UNPACKED:
        return "fp4_unpacked_16u4_align16b";
    default:
        return "?";
    }
}

static const char *tma_type_name(jit__tc_tma_type_t t) {
    switch (t) {
    case JIT_TC_TMA_UINT8:
        return "UINT8";
    case JIT_TC_TMA_16U4_ALIGN16B:
        return "16U4_ALIGN16B";
    case JIT_TC_TMA_UINT16:
        return "UINT16";
    default:
        return "?";
    }
}

static const char *stage_limit_name(jit__tc_stage_limit_t l) {
    switch (l) {
    case JIT_TC_STAGES_BY_SMEM:
        return "smem_capacity";
    case JIT_TC_STAGES_BY_OPERAND_256K:
        return "operands_below_256k";
    case JIT_TC_STAGES_BY_MAX:
        return "max_stages";
    default:
        return "?";
    }
}

/* `addr`: the absolute shared::cta address of stage 0 (reserved block + offset). */
static json_t *operand_json(const jit__tc_operand_t *op, int addr_bits, uint32_t addr) {
    json_t *o = json_object();
    json_object_set_new(o, "dtype", json_string(jit_dtype_name(op->dtype)));
    json_object_set_new(o, "format_code", json_integer(op->format_code));
    json_object_set_new(o, "storage", json_string(storage_name(op->storage)));
    json_object_set_new(o, "tma_type", json_string(tma_type_name(op->tma_type)));
    json_object_set_new(o, "rows", json_integer(op->rows));
    json_object_set_new(o, "row_bytes", json_integer(op->row_bytes));
    json_object_set_new(o, "gmem_row_bytes", json_integer(op->gmem_row_bytes));
    json_object_set_new(o, "stage_bytes", json_integer(op->stage_bytes));
    json_object_set_new(o, "box_inner_bytes", json_integer(op->box_inner_bytes));
    json_object_set_new(o, "swizzle", json_string(jit__tc_swizzle_name(op->swizzle)));
    json_object_set_new(o, "lbo", json_integer(op->lbo));
    json_object_set_new(o, "sbo", json_integer(op->sbo));
    json_object_set_new(o, "align", json_integer(op->align));
    json_object_set_new(o, "k_step_bytes", json_integer(op->k_step_bytes));
    json_object_set_new(o, "multicast", json_boolean(op->multicast));
    json_object_set_new(
        o, "desc_stage0",
        hex64(jit__tc_smem_desc(addr_bits, addr, op->lbo, op->sbo, op->swizzle, 0)));
    return o;
}

static json_t *pair_or_null(int m, int n) {
    return m ? json_pack("[ii]", m, n) : json_null();
}

/* The instruction descriptor's fields, as jit__tc_idesc_decode reads them back. */
static json_t *idesc_fields_json(const jit__tc_idesc_fields_t *f) {
    json_t *fj = json_object();
    json_object_set_new(fj, "sparse", json_integer(f->sparse));
    json_object_set_new(fj, "k_size_upper", json_integer(f->k_size_hi));
    json_object_set_new(fj, "b_sf_id", json_integer(f->sfb_id));
    json_object_set_new(fj, "a_format", json_integer(f->a_format));
    json_object_set_new(fj, "b_format", json_integer(f->b_format));
    json_object_set_new(fj, "negate_a", json_integer(f->negate_a));
    json_object_set_new(fj, "negate_b", json_integer(f->negate_b));
    json_object_set_new(fj, "a_major", json_integer(f->a_major));
    json_object_set_new(fj, "b_major", json_integer(f->b_major));
    json_object_set_new(fj, "n_dim", json_integer(f->n_shr3));
    json_object_set_new(fj, "scale_format", json_integer(f->scale_format));
    json_object_set_new(fj, "m_dim", json_integer(f->m_shr7));
    json_object_set_new(fj, "a_sf_id", json_integer(f->sfa_id));
    json_object_set_new(fj, "k_size", json_integer(f->k_size_lo));
    json_object_set_new(fj, "m", json_integer(f->m));
    json_object_set_new(fj, "n", json_integer(f->n));
    json_object_set_new(fj, "k", json_integer(f->k));
    return fj;
}

/* A and B (layout, descriptors at the first stage) and the scale factors. */
static json_t *operands_json(const jit__plan_t *plan, const jit__tc_plan_t *tc) {
    const jit__tc_smem_plan_t *m = &tc->smem;
    json_t *ops = json_object();
    const int bits = jit__tc_smem_desc_addr_bits(plan->arch);
    const uint32_t base = plan->arch->smem_reserved_per_cta;
    json_object_set_new(ops, "a",
                        operand_json(&tc->a, bits, base + m->buffers[JIT_TC_BUF_A].offset));
    json_object_set_new(ops, "b",
                        operand_json(&tc->b, bits, base + m->buffers[JIT_TC_BUF_B].offset));
    json_t *sfj = json_object();
    json_object_set_new(sfj, "sfa_chunks_k", json_integer(tc->sfa_chunks_k));
    json_object_set_new(sfj, "sfb_row_blocks", json_integer(tc->sfb_row_blocks));
    json_object_set_new(sfj, "sfa_stage_bytes", json_integer(tc->sfa_stage_bytes));
    json_object_set_new(sfj, "sfb_stage_bytes", json_integer(tc->sfb_stage_bytes));
    json_object_set_new(sfj, "chunk_bytes", json_integer(JIT_TC_SF_CHUNK_BYTES));
    json_object_set_new(sfj, "tma_type", json_string(tma_type_name(tc->sf_tma_type)));
    json_object_set_new(sfj, "utccp_desc_sfa_stage0",
                        hex64(jit__tc_smem_desc(bits, base + m->buffers[JIT_TC_BUF_SFA].offset,
                                                JIT_TC_SF_DESC_LBO, JIT_TC_SF_DESC_SBO,
                                                JIT_TC_SWIZZLE_NONE, 0)));
    json_object_set_new(ops, "sf", sfj);
    return ops;
}

/* The SMEM plan: stage count, what limited it, sizes and every buffer. */
static json_t *smem_json(const jit__tc_smem_plan_t *m) {
    json_t *bufs = json_array();
    for (int i = 0; i < m->n_buffers; i++) {
        const jit__tc_smem_buffer_t *b = &m->buffers[i];
        json_array_append_new(
            bufs, json_pack("{sssIsIsIsisIsbsb}", "name", b->name, "offset", (json_int_t)b->offset,
                            "size", (json_int_t)b->size, "stage_bytes", (json_int_t)b->stage_bytes,
                            "count", b->count, "align", (json_int_t)b->align, "mma_operand",
                            b->mma_operand, "cp_async_dest", b->cp_async_dest));
    }
    json_t *sj = json_object();
    json_object_set_new(sj, "stages", json_integer(m->stages));
    json_object_set_new(sj, "stage_limit", json_string(stage_limit_name(m->stage_limit)));
    json_object_set_new(sj, "bytes", json_integer(m->bytes));
    json_object_set_new(sj, "cap", json_integer(m->cap));
    json_object_set_new(sj, "per_stage_bytes", json_integer(m->per_stage_bytes));
    json_object_set_new(sj, "c_bytes", json_integer(m->c_bytes));
    json_object_set_new(sj, "c_stages", json_integer(m->c_stages));
    json_object_set_new(sj, "epi_tile_n", json_integer(m->epi_tile_n));
    json_object_set_new(sj, "operand_end", json_integer(m->operand_end));
    json_object_set_new(sj, "n_barriers", json_integer(m->n_barriers));
    json_object_set_new(sj, "buffers", bufs);
    return sj;
}

/* The TMEM plan: accumulator stages, overlap and early release, the scale-factor columns. */
static json_t *tmem_json(const jit__tc_tmem_plan_t *t) {
    json_t *accs = json_array();
    for (int s = 0; s < t->acc_stages; s++)
        json_array_append_new(accs,
                              json_pack("{sisisi}", "stage", s, "first_column",
                                        t->acc[s].first_column, "columns", t->acc[s].columns));
    json_t *tj = json_object();
    json_object_set_new(tj, "capacity", json_integer(t->capacity));
    json_object_set_new(tj, "used_columns", json_integer(t->used_columns));
    json_object_set_new(tj, "allocated_columns", json_integer(t->allocated_columns));
    json_object_set_new(tj, "acc_stages", json_integer(t->acc_stages));
    json_object_set_new(tj, "m_halves", json_integer(t->m_halves));
    json_object_set_new(tj, "acc_half_stride", json_integer(t->acc_half_stride));
    json_object_set_new(tj, "accumulators", accs);
    json_object_set_new(tj, "overlap", json_boolean(t->overlap));
    json_object_set_new(tj, "overlap_columns", json_integer(t->overlap_columns));
    json_object_set_new(tj, "reverse_traversal", json_boolean(t->reverse_traversal));
    json_object_set_new(tj, "early_release_subtile", json_integer(t->early_release_subtile));
    json_object_set_new(tj, "early_release_column", json_integer(t->early_release_column));
    json_object_set_new(tj, "sfa",
                        json_pack("{sisisi}", "first_column", t->sfa_first_column, "columns",
                                  t->sfa_columns, "half_stride", t->sfa_half_stride));
    json_object_set_new(
        tj, "sfb",
        json_pack("{sisi}", "first_column", t->sfb_first_column, "columns", t->sfb_columns));
    return tj;
}

/* The persistent grid the plan expects (the launch sizes the real one from occupancy). */
static json_t *grid_json(const jit__plan_t *plan, const jit__tc_grid_t *g) {
    json_t *gj = json_object();
    int64_t n = plan->spec.n;
    json_object_set_new(gj, "x_tiles", json_integer((n + plan->tile_n - 1) / plan->tile_n));
    json_object_set_new(gj, "policy", json_string("persistent"));
    json_object_set_new(gj, "launch", json_pack("[iii]", g->x, g->y, g->z));
    json_object_set_new(gj, "ctas_per_sm", json_integer(g->ctas_per_sm));
    json_object_set_new(gj, "fallback_capacity", json_integer(g->fallback_capacity));
    json_object_set_new(gj, "preferred_clusters", json_integer(g->preferred_clusters));
    json_object_set_new(gj, "fallback_clusters", json_integer(g->fallback_clusters));
    json_object_set_new(gj, "fallback_groups_whole", json_boolean(g->fallback_groups_whole));
    return gj;
}

int jit__plan_tc_to_json(const jit__plan_t *plan, void *json_obj) {
    json_t *o = (json_t *)json_obj;
    const jit__tc_plan_t *tc = jit__tc_of(plan);
    if (!o || !tc->valid)
        return -1;
    char instr[160];
    snprintf(instr, sizeof(instr), "tcgen05.mma.cta_group::%d.kind::%s.block_scale%s%s",
             tc->cta_group, jit__tc_kind_name(tc->kind), tc->kind_suffix,
             tc->breuse ? ".collector::b::{fill,lastuse}" : "");
    int rc = 0;
    rc |= json_object_set_new(o, "kind", json_string(jit__tc_kind_name(tc->kind)));
    rc |= json_object_set_new(o, "kind_suffix", json_string(tc->kind_suffix));
    rc |= json_object_set_new(o, "instruction", json_string(instr));
    rc |= json_object_set_new(
        o, "format",
        json_string(jit__tc_format_name(plan->spec.a, plan->spec.b, plan->spec.scales)));
    rc |= json_object_set_new(
        o, "instr", json_pack("{sisisi}", "m", tc->instr_m, "n", tc->instr_n, "k", tc->instr_k));
    rc |= json_object_set_new(o, "instrs_per_tile_k", json_integer(tc->instrs_per_tile_k));
    rc |= json_object_set_new(o, "cta_group", json_integer(tc->cta_group));
    rc |= json_object_set_new(o, "breuse", json_boolean(tc->breuse));
    rc |= json_object_set_new(o, "utccp_interleaved", json_boolean(tc->utccp_interleaved));
    rc |= json_object_set_new(o, "cta_rows",
                              json_pack("{sisi}", "a", tc->cta_rows_a, "b", tc->cta_rows_b));

    jit__tc_idesc_fields_t f;
    jit__tc_idesc_decode(tc->idesc, tc->kind, plan->arch, &f);
    rc |= json_object_set_new(o, "idesc", hex32(tc->idesc));
    json_t *fj = idesc_fields_json(&f);
    rc |= json_object_set_new(o, "idesc_fields", fj);
    rc |= json_object_set_new(o, "a_format_code", json_integer(tc->a.format_code));
    rc |= json_object_set_new(o, "b_format_code", json_integer(tc->b.format_code));
    rc |= json_object_set_new(o, "scale_format",
                              json_string(jit__tc_sf_format_name(tc->scale_format)));
    rc |= json_object_set_new(o, "scale_format_code", json_integer(tc->scale_format));
    rc |= json_object_set_new(o, "sf_vec", json_integer(tc->sf_vec));
    rc |= json_object_set_new(o, "sf_per_instr", json_integer(tc->sf_per_instr));
    rc |= json_object_set_new(o, "packed_fp4", json_boolean(tc->packed_fp4));
    rc |= json_object_set_new(o, "fp6_packed", json_boolean(tc->fp6_packed));

    const jit__tc_smem_plan_t *m = &tc->smem;
    json_t *ops = operands_json(plan, tc);
    rc |= json_object_set_new(o, "operands", ops);
    rc |= json_object_set_new(o, "expect_tx_bytes", json_integer(tc->expect_tx_bytes));

    json_t *sj = smem_json(m);
    rc |= json_object_set_new(o, "smem", sj);

    json_t *tj = tmem_json(&tc->tmem);
    rc |= json_object_set_new(o, "tmem", tj);

    const jit__tc_grid_t *g = &tc->grid;
    rc |= json_object_set_new(
        o, "cluster",
        json_pack("{sososi}", "preferred", pair_or_null(tc->cluster_m, tc->cluster_n), "fallback",
                  pair_or_null(tc->fallback_cluster_m, tc->fallback_cluster_n), "split_factor",
                  g->split_factor));
    json_t *gj = grid_json(plan, g);
    rc |= json_object_set_new(o, "grid", gj);

    rc |= json_object_set_new(o, "warp_roles",
                              json_pack("{sisisisi}", "first_epilogue", tc->first_epilogue_warp,
                                        "epilogue_count", tc->epilogue_warps, "mma", tc->mma_warp,
                                        "tma", tc->tma_warp));
    rc |= json_object_set_new(o, "tma_warps", json_integer(tc->tma_warps));
    rc |= json_object_set_new(o, "circular_desc", json_boolean(tc->circular_desc));
    rc |= json_object_set_new(o, "mid_tile_release", json_boolean(tc->mid_tile_release));
    rc |= json_object_set_new(o, "ptx_version_min", json_string(tc->ptx_version_min));
    return rc ? -1 : 0;
}
