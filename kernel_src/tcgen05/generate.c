/*
 * jit__gen_tcgen05: the persistent, warp-specialized block-scaled GEMM for tcgen05 targets
 * (sm_100a, sm_103a, sm_107a). The kernel is device code in kernel_src/tcgen05/device/ (*.cuh)
 * (the template Tcgen05Kernel<P>) on the building blocks of kernel_src/device/; this file checks
 * the plan and writes what varies per plan: a header comment (key text and plan), one include,
 * the plan as the enumerators of struct TcPlan (generate_plan.c), static_asserts that tie the
 * template's K-block schedule and the parameter block to the host's values, and the extern "C"
 * entry point. The structural choices (multicast code, overlapping accumulators, B-reuse MMAs,
 * the epilogue kind, collector hints) are TcPlan constants the template branches on with
 * `if constexpr`; they follow plan fields, never the arch name.
 *
 * Nothing generated here has run: no Blackwell or Rubin GPU was available. It is compiled by
 * ptxas (through nvJitLink) for every target in the compile matrix and checked statically.
 */
#include <stddef.h>
#include <string.h>

#include "generate.h"
#include "launch.h"

static int is_pow2(int v) {
    return v > 0 && (v & (v - 1)) == 0;
}

/* The fallback build (an sm_100f cubin, assembled for the check target sm_100a as a check) runs
 * the check target's MMA semantics: the scale-vector mode and K are in the opcode ptxas picks
 * for the target (UTCOMMA.4X, K=64, for an sm_100f FP4 MMA where sm_107a's is .BLOCK16, K=128),
 * not only in the instruction descriptor. So a plan is fallback-safe only if the check target
 * would encode the same descriptor and keep the same operand storage. With the sm_107a
 * profile no block-scaled plan is (its K is widened for every kind), so the fallback refuses
 * them instead of building a kernel that silently computes the wrong K.
 * Planning the fallback with the sm_100a profile would be the alternative; the plan is made
 * before the toolchain is known, so it is not done here. */
static jit_status_t check_fallback_semantics(const jit__plan_t *plan, const jit__key_t *key,
                                             jit__diag_t *d) {
    const jit__tc_plan_t *tc = jit__tc_of(plan);
    const jit__arch_profile_t *a = plan->arch;
    const jit__arch_profile_t *chk = a->check_target ? jit__arch_find(a->check_target) : NULL;
    const char *target = key && key->target[0] ? key->target : "fallback";
    const char *fname = jit__tc_format_name(plan->spec.a, plan->spec.b, plan->spec.scales);
    if (!chk)
        return jit__fail(d, JIT_TOOLCHAIN_NOT_FOUND,
                         "%s has no check target, so its %s build of a %s plan cannot be "
                         "checked; install NVRTC 13.4 or later (scripts/setup.sh)",
                         a->name, target, fname);
    jit__tc_idesc_params_t ip = {
        .kind = tc->kind,
        .a = plan->spec.a,
        .b = plan->spec.b,
        .sf = tc->scale_format,
        .sf_vec = tc->sf_vec,
        .m = tc->instr_m,
        .n = tc->instr_n,
        .k = tc->instr_k,
        .cta_group = tc->cta_group,
    };
    uint32_t there = 0;
    int chk_k = jit__tc_instr_k(chk, tc->kind);
    if (jit__tc_idesc(chk, &ip, &there, NULL) != JIT_OK || there != tc->idesc ||
        chk_k != tc->instr_k)
        return jit__fail(d, JIT_TOOLCHAIN_NOT_FOUND,
                         "the %s fallback build of this %s %s plan would execute %s MMAs "
                         "(kind::%s K=%d) while its instruction descriptor asks for K=%d: the "
                         "result would be wrong. Block-scaled %s kernels need a native %s "
                         "cubin: install NVRTC 13.4 or later (scripts/setup.sh)",
                         target, a->name, fname, chk->name, jit__tc_kind_name(tc->kind), chk_k,
                         tc->instr_k, a->name, a->name);
    if (tc->packed_fp4 && !chk->packed_fp4_in_mixed)
        return jit__fail(d, JIT_TOOLCHAIN_NOT_FOUND,
                         "the %s fallback build of this %s %s plan would read packed FP4 where "
                         "%s's kind::mxf8f6f4 expects it unpacked; install NVRTC 13.4 or later "
                         "(scripts/setup.sh)",
                         target, a->name, fname, chk->name);
    return JIT_OK;
}

/* The warp roles: four epilogue warps from a multiple of 4, one MMA warp, one TMA warp (which also
 * runs the scheduler). */
static jit_status_t check_warps(jit__tcg_t *g, jit__diag_t *d) {
    const jit__plan_t *plan = g->plan;
    const jit__tc_plan_t *tc = g->tc;
    g->n_warps = plan->threads / 32;
    if (plan->threads % 32 || tc->epilogue_warps != 4 || tc->first_epilogue_warp % 4 != 0)
        return jit__fail(d, JIT_INTERNAL,
                         "tcgen05 plan needs four epilogue warps starting at a multiple of 4");
    int seen = 0;
    const int roles[3] = {tc->mma_warp, tc->tma_warp, tc->first_epilogue_warp};
    for (int i = 0; i < 3; i++)
        if (roles[i] < 0 || roles[i] >= g->n_warps)
            return jit__fail(d, JIT_INTERNAL, "warp role %d outside %d warps", roles[i],
                             g->n_warps);
    for (int w = 0; w < 4; w++)
        seen |= 1 << (tc->first_epilogue_warp + w);
    if ((seen >> tc->mma_warp) & 1 || (seen >> tc->tma_warp) & 1 || tc->mma_warp == tc->tma_warp ||
        g->n_warps != 6)
        return jit__fail(d, JIT_INTERNAL,
                         "tcgen05 warp roles must be 4 epilogue warps, one MMA and one TMA warp");
    g->scheduler_warp = tc->tma_warp;
    return JIT_OK;
}

/* Clusters of whole CTA pairs; a fallback shape splits the preferred one along M into a power-of-
 * two number of parts. */
static jit_status_t check_clusters(jit__tcg_t *g, jit__diag_t *d) {
    const jit__plan_t *plan = g->plan;
    const jit__tc_plan_t *tc = g->tc;
    int cg = tc->cta_group;
    if (cg != 1 && cg != 2)
        return jit__fail(d, JIT_INTERNAL, "cta_group %d", cg);
    if (plan->cluster_m < cg || plan->cluster_m % cg || plan->cluster_n < 1 ||
        plan->cluster_m * plan->cluster_n > 16)
        return jit__fail(d, JIT_INTERNAL, "cluster %dx%d does not hold whole CTA pairs",
                         plan->cluster_m, plan->cluster_n);
    g->has_fallback = plan->fallback_cluster_m > 0;
    g->split = 1;
    if (g->has_fallback) {
        int fm = plan->fallback_cluster_m, fn = plan->fallback_cluster_n;
        /* Work IDs are preferred-cluster tiles; fallback clusters split them along M. */
        if (fn != plan->cluster_n || fm % cg || plan->cluster_m % fm)
            return jit__fail(d, JIT_INTERNAL,
                             "fallback cluster %dx%d must split the preferred %dx%d along M in "
                             "whole CTA pairs",
                             fm, fn, plan->cluster_m, plan->cluster_n);
        g->split = plan->cluster_m / fm;
        if (!is_pow2(g->split) || g->split > 16)
            return jit__fail(d, JIT_INTERNAL, "split factor %d", g->split);
    }
    return JIT_OK;
}

/* Operand rows, multicast slices of whole swizzle atoms, TMA K coordinates and the descriptors'
 * constant halves. */
static jit_status_t set_operands(jit__tcg_t *g, jit__diag_t *d) {
    const jit__plan_t *plan = g->plan;
    const jit__tc_plan_t *tc = g->tc;
    const int cg = tc->cta_group;
    g->halves = tc->breuse ? 2 : 1;
    if (tc->a.rows != 128 * g->halves || tc->b.rows != plan->tile_n / cg ||
        tc->a.boxes_per_stage < 1 || tc->b.boxes_per_stage < 1 ||
        tc->instrs_per_tile_k * tc->instr_k != plan->tile_k)
        return jit__fail(d, JIT_INTERNAL, "tcgen05 operand rows or K split inconsistent");
    for (int f = 0; f <= g->has_fallback; f++) {
        int ra = jit__tc_slice_rows(plan, JIT_TC_MAP_A, f);
        int rb = jit__tc_slice_rows(plan, JIT_TC_MAP_B, f);
        if (ra <= 0 || rb <= 0 || ra % 8 || rb % 8)
            return jit__fail(d, JIT_INTERNAL,
                             "multicast slices of %d (A) and %d (B) rows are not whole 8-row "
                             "swizzle atoms",
                             ra, rb);
    }
    g->a_kcoord_tile = jit__tc_tma_k_per_tile(plan, &tc->a);
    g->b_kcoord_tile = jit__tc_tma_k_per_tile(plan, &tc->b);
    g->a_kcoord_box = (int)tc->a.box_inner_bytes;
    g->b_kcoord_box = (int)tc->b.box_inner_bytes;
    const int bits = jit__tc_smem_desc_addr_bits(plan->arch);
    g->a_desc_hi = jit__tc_smem_desc(bits, 0, tc->a.lbo, tc->a.sbo, tc->a.swizzle, 0);
    g->b_desc_hi = jit__tc_smem_desc(bits, 0, tc->b.lbo, tc->b.sbo, tc->b.swizzle, 0);
    /* A 512-byte scale chunk (tcgen05.h says why these LBO and SBO). */
    g->sf_desc_hi =
        jit__tc_smem_desc(bits, 0, JIT_TC_SF_DESC_LBO, JIT_TC_SF_DESC_SBO, JIT_TC_SWIZZLE_NONE, 0);
    return JIT_OK;
}

/* The epilogue's sub-tiles, the C staging the plan laid out, and the early release of overlapping
 * accumulators. */
static jit_status_t set_epilogue(jit__tcg_t *g, jit__diag_t *d) {
    const jit__plan_t *plan = g->plan;
    const jit__tc_plan_t *tc = g->tc;
    jit__tc_c_layout_t cl;
    jit_status_t st = jit__tc_c_layout(plan, &cl, d);
    if (st != JIT_OK)
        return st;
    g->out_bytes = cl.out_bytes;
    g->epi_acc_cols = tc->smem.epi_tile_n;
    g->epi_out_cols = cl.out_cols;
    g->out_cols =
        plan->spec.epilogue == JIT_EPILOGUE_LINEAR_SWIGLU ? plan->tile_n / 2 : plan->tile_n;
    if (g->epi_acc_cols % JIT_TCG_LD_COLUMNS || plan->tile_n % g->epi_acc_cols)
        return jit__fail(d, JIT_INTERNAL, "epilogue sub-tile %d does not divide tile N %d",
                         g->epi_acc_cols, plan->tile_n);
    g->epi_subtiles = plan->tile_n / g->epi_acc_cols;
    g->c_slab = 32u * cl.row_bytes;
    g->c_swizzle = cl.box_bytes;
    const jit__tc_smem_buffer_t *cb = &tc->smem.buffers[JIT_TC_BUF_C];
    if (cb->count != tc->smem.c_stages || cb->stage_bytes != 128u * cl.row_bytes ||
        cb->offset % 1024u)
        return jit__fail(d, JIT_INTERNAL, "C staging buffer is not %d stages of 128 x %u bytes",
                         tc->smem.c_stages, cl.row_bytes);
    if (tc->tmem.overlap) {
        if (tc->tmem.acc_stages != 2 || g->halves != 1 || tc->tmem.early_release_subtile < 0)
            return jit__fail(d, JIT_INTERNAL, "overlapping accumulators need 2 stages, 1 M-half");
        g->release_after = tc->tmem.early_release_subtile + 1;
        if (g->release_after > g->epi_subtiles ||
            g->release_after * g->epi_acc_cols < tc->tmem.overlap_columns)
            return jit__fail(d, JIT_INTERNAL,
                             "early release after %d sub-tiles misses the %d "
                             "shared columns",
                             g->release_after, tc->tmem.overlap_columns);
    }
    return JIT_OK;
}

/* The barrier block: the plan's barriers (full, empty, acc_full, acc_empty) where it put them,
 * then the work ring in the free rest of the plan's barrier buffer. */
static jit_status_t set_barriers(jit__tcg_t *g, jit__diag_t *d) {
    const jit__tc_plan_t *tc = g->tc;
    const jit__tc_smem_buffer_t *bb = &tc->smem.buffers[JIT_TC_BUF_BARRIERS];
    uint32_t s = (uint32_t)tc->smem.stages, as = (uint32_t)tc->tmem.acc_stages;
    g->bar_full = bb->offset;
    g->bar_empty = g->bar_full + 8 * s;
    g->bar_acc_full = g->bar_empty + 8 * s;
    g->bar_acc_empty = g->bar_acc_full + 8 * as;
    uint32_t ring = bb->offset + 8u * (uint32_t)tc->smem.n_barriers;
    if (g->bar_acc_empty + 8 * as > ring)
        return jit__fail(d, JIT_INTERNAL, "plan counts %d barriers, fewer than it lays out",
                         tc->smem.n_barriers);
    g->bar_work_full = ring;
    g->bar_work_empty = ring + 8 * JIT_TCG_WORK_SLOTS;
    g->work_ids = ring + 16 * JIT_TCG_WORK_SLOTS;
    g->bar_bytes = g->work_ids + 8 * JIT_TCG_WORK_SLOTS;
    if (g->bar_bytes > bb->offset + bb->size)
        return jit__fail(
            d, JIT_INTERNAL,
            "the work ring (%u bytes from %u) does not fit in the %u-byte barrier block",
            24u * JIT_TCG_WORK_SLOTS, ring, bb->size);
    return JIT_OK;
}

jit_status_t jit__tcg_init(jit__tcg_t *g, const jit__plan_t *plan, const jit__key_t *key,
                           jit__sb_t *sb, jit__diag_t *d) {
    memset(g, 0, sizeof(*g));
    g->plan = plan;
    g->tc = jit__tc_of(plan);
    g->key = key;
    g->sb = sb;
    const jit__tc_plan_t *tc = jit__tc_of(plan);
    if (plan->family != &jit__family_tcgen05 || !tc->valid)
        return jit__fail(d, JIT_INTERNAL, "tcgen05 generator called for a plan of another family");

    g->native = !(key && key->fallback);
    g->tmem_exclusive = tc->tmem.allocated_columns > 512 || !is_pow2(tc->tmem.allocated_columns);
    if (!g->native && g->tmem_exclusive)
        return jit__fail(
            d, JIT_TOOLCHAIN_NOT_FOUND,
            "this %s plan allocates %d TMEM columns, which needs "
            "tcgen05.alloc.exclusive (PTX ISA 9.4, NVRTC 13.4 or later); the %s "
            "fallback build cannot express it. Install a newer NVRTC (scripts/setup.sh) "
            "for a native %s cubin",
            plan->arch->name, tc->tmem.allocated_columns, key ? key->target : "fallback",
            plan->arch->name);
    if (!g->native) {
        jit_status_t fst = check_fallback_semantics(plan, key, d);
        if (fst != JIT_OK)
            return fst;
    }
    g->collector_b = tc->breuse && g->native;

    jit_status_t st = check_warps(g, d);
    if (st == JIT_OK)
        st = check_clusters(g, d);
    if (st == JIT_OK)
        st = set_operands(g, d);
    if (st == JIT_OK)
        st = set_epilogue(g, d);
    if (st == JIT_OK)
        st = set_barriers(g, d);
    return st;
}

/* ---- emission ---------------------------------------------------------------------------- */

static void emit_header(const jit__tcg_t *g) {
    const jit__plan_t *p = g->plan;
    const jit__tc_plan_t *tc = g->tc;
    jit__sb_t *sb = g->sb;
    jit__sb_append(sb, "/*\n * jitgemm tcgen05 block-scaled GEMM\n");
    if (g->key) {
        jit__sb_append(sb, " * key:  ");
        jit__sb_append_comment_safe(sb, g->key->text);
        jit__sb_append(sb, "\n");
        jit__sb_printf(sb, " * hash: %s\n", g->key->hash);
    }
    jit__sb_printf(
        sb,
        " * arch %s, target %s%s\n"
        " * format %s: A %s, B %s, scales %s, out %s, epilogue %s\n"
        " * N %lld, K %lld (M is a run-time argument)\n"
        " * MMA kind::%s.block_scale%s, instr %dx%dx%d, cta_group::%d, idesc 0x%08X%s\n"
        " * tile %dx%dx%d, %d stages, %u bytes SMEM, TMEM %d of %d columns (alloc %d)%s\n"
        " * cluster %dx%d",
        p->arch->name, g->key ? g->key->target : p->arch->native_target,
        g->native ? "" : " (fallback: no .collector::b hints)",
        jit__tc_format_name(p->spec.a, p->spec.b, p->spec.scales), jit_dtype_name(p->spec.a),
        jit_dtype_name(p->spec.b), jit_scale_mode_name(p->spec.scales), jit_dtype_name(p->spec.out),
        jit_epilogue_name(p->spec.epilogue), (long long)p->spec.n, (long long)p->spec.k,
        jit__tc_kind_name(tc->kind), tc->kind_suffix, tc->instr_m, tc->instr_n, tc->instr_k,
        tc->cta_group, tc->idesc, tc->breuse ? ", B-reuse" : "", p->tile_m, p->tile_n, p->tile_k,
        tc->smem.stages, tc->smem.bytes, tc->tmem.used_columns, tc->tmem.capacity,
        tc->tmem.allocated_columns, tc->tmem.overlap ? ", overlapping accumulator stages" : "",
        p->cluster_m, p->cluster_n);
    if (g->has_fallback)
        jit__sb_printf(sb, ", fallback %dx%d (groups of %d)", p->fallback_cluster_m,
                       p->fallback_cluster_n, g->split);
    jit__sb_append(
        sb, "\n *\n"
            " * Warps: 0-3 epilogue (TMEM lanes 32q..32q+31), MMA, TMA producer (which also\n"
            " * runs the scheduler in cluster rank 0). Never executed where it was written:\n"
            " * no Blackwell or Rubin GPU was available; it is compiled and checked statically.\n"
            " */\n\n");
}

static void emit_includes(const jit__tcg_t *g) {
    jit__sb_append(g->sb, "#include \"tcgen05/device/kernel.cuh\"\n\n");
}

/* SMEM byte offset of K-block k of M-half `half` in an A stage, and of K-block k in B. */
static uint32_t a_offset(const jit__tcg_t *g, int half, int k) {
    const jit__tc_operand_t *op = &g->tc->a;
    uint32_t kb = (uint32_t)k * op->k_step_bytes;
    uint32_t box = kb / op->box_inner_bytes;
    return ((uint32_t)half * (uint32_t)op->boxes_per_stage + box) * 128u * op->box_inner_bytes +
           kb % op->box_inner_bytes;
}

static uint32_t b_offset(const jit__tcg_t *g, int k) {
    const jit__tc_operand_t *op = &g->tc->b;
    uint32_t kb = (uint32_t)k * op->k_step_bytes;
    uint32_t box = kb / op->box_inner_bytes;
    return box * (uint32_t)op->rows * op->box_inner_bytes + kb % op->box_inner_bytes;
}

/* Ties the template's K-block schedule to the planner's (jit__tc_sf_slot and friends), so a
 * drift between the two fails the compile instead of reading the wrong scales. */
static void emit_schedule_checks(const jit__tcg_t *g) {
    const jit__tc_plan_t *tc = g->tc;
    jit__sb_t *sb = g->sb;
    jit__sb_append(sb, "typedef Tcgen05Kernel<TcPlan> Kernel;\n"
                       "typedef TcMma<TcPlan> Mma;\n");
    for (int k = 0; k < tc->instrs_per_tile_k; k++) {
        int acol, bcol;
        unsigned aid, bid;
        jit__tc_sf_slot(tc, 0, k, &acol, &aid);
        jit__tc_sf_slot(tc, 1, k, &bcol, &bid);
        jit__sb_printf(
            sb,
            "static_assert(Mma::sf_column(0, %d) == %du && Mma::sf_column(1, %d) == %du "
            "&& Mma::sf_id(%d) == %uu && Mma::sf_id(%d) == %uu, \"K-block %d scales\");\n",
            k, acol, k, bcol, k, aid, k, bid, k);
        jit__sb_printf(sb,
                       "static_assert(Mma::a_offset(0, %d) == %uu && Mma::a_offset(1, %d) == %uu "
                       "&& Mma::b_offset(%d) == %uu, \"K-block %d SMEM offsets\");\n",
                       k, a_offset(g, 0, k), k, a_offset(g, 1, k), k, b_offset(g, k), k);
    }
    int last_kc = tc->sfa_chunks_k - 1, last_mn = tc->sfb_row_blocks - 1;
    jit__sb_printf(sb,
                   "static_assert(Mma::sf_chunk_column(0, 0, %d) == %du && "
                   "Mma::sf_chunk_column(1, %d, %d) == %du, \"scale chunk columns\");\n",
                   last_kc, jit__tc_sf_chunk_column(tc, 0, 0, last_kc), last_mn, last_kc,
                   jit__tc_sf_chunk_column(tc, 1, last_mn, last_kc));
}

#define OFFSET_ASSERT(field)                                                                       \
    jit__sb_printf(g->sb,                                                                          \
                   "static_assert(__INTADDR__(&((jitgemm_tc_params *)0)->" #field ") == %zu, "     \
                   "\"jitgemm_tc_params." #field " moved\");\n",                                   \
                   offsetof(jit__tc_params_t, field))

/* The parameter block is declared in tcgen05/device/params.cuh; these pin it to the host's
 * jit__tc_params_t (kernel_src/tcgen05/abi.h). __INTADDR__ is the front end's constant
 * offset: NVRTC 13.0 has no __builtin_offsetof and the source includes no <cstddef>. */
static void emit_param_checks(const jit__tcg_t *g) {
    jit__sb_printf(g->sb,
                   "static_assert(sizeof(jitgemm_tc_params) == %zu, \"jitgemm_tc_params size\");\n",
                   sizeof(jit__tc_params_t));
    OFFSET_ASSERT(b);
    OFFSET_ASSERT(sfa);
    OFFSET_ASSERT(sfb);
    OFFSET_ASSERT(d);
    OFFSET_ASSERT(residual);
    OFFSET_ASSERT(workspace);
    OFFSET_ASSERT(m);
    OFFSET_ASSERT(ld_residual);
    OFFSET_ASSERT(alpha);
    OFFSET_ASSERT(token_slots);
    jit__sb_append(g->sb, "\n");
}

static void emit_entry(const jit__tcg_t *g) {
    jit__sb_printf(g->sb,
                   "extern \"C\" __global__ void __launch_bounds__(TcPlan::NUM_THREADS, 1)\n"
                   "%s(const __grid_constant__ jitgemm_tc_params p) {\n"
                   "    extern __shared__ __align__(1024) unsigned char smem[];\n"
                   "    Kernel::run(p, smem);\n"
                   "}\n",
                   jit__plan_kernel_name(g->plan));
}

jit_status_t jit__gen_tcgen05(const jit__plan_t *plan, const jit__key_t *key, char **source,
                              jit__diag_t *d) {
    *source = NULL;
    jit__sb_t sb;
    jit__sb_init(&sb);
    jit__tcg_t g;
    jit_status_t st = jit__tcg_init(&g, plan, key, &sb, d);
    if (st != JIT_OK) {
        jit__sb_free(&sb);
        return st;
    }
    emit_header(&g);
    emit_includes(&g);
    jit__tcg_emit_plan(&g);
    emit_schedule_checks(&g);
    emit_param_checks(&g);
    emit_entry(&g);
    if (jit__sb_failed(&sb)) {
        jit__sb_free(&sb);
        return jit__fail(d, JIT_OUT_OF_MEMORY, "out of memory generating the tcgen05 kernel");
    }
    *source = jit__sb_take(&sb);
    return JIT_OK;
}
