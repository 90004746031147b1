/*
 * The tcgen05 generator's struct TcPlan: every number and structural choice of the plan that the
 * kernel template (kernel_src/tcgen05/device/) reads, written as enumerators, by role (structure,
 * shape and pipeline, shared memory, TMA, MMA and TMEM, epilogue). generate.c writes the rest of
 * the source around it.
 */
#include "generate.h"
#include "launch.h"

/* Readers of the work ring per CTA: the producer warp, the MMA warp, four epilogue warps. */
#define WORK_READERS 6

/* The plan's numbers are enumerators of TcPlan, never constexpr variables: NVRTC's
 * -default-device turns a namespace-scope constexpr (or an ODR-used static constexpr member)
 * into a __device__ global (PTX .global data), and enumerators never become one. */
static void constant(jit__sb_t *sb, const char *name, unsigned long long v, const char *why) {
    if (why)
        jit__sb_printf(sb, "        %s = %llu, /* %s */\n", name, v, why);
    else
        jit__sb_printf(sb, "        %s = %llu,\n", name, v);
}

/* struct TcPlan's opening and its structural choices. */
static void emit_plan_structure(const jit__tcg_t *g) {
    const jit__plan_t *p = g->plan;
    const jit__tc_plan_t *tc = g->tc;
    jit__sb_t *sb = g->sb;

    jit__sb_append(sb,
                   "/* The plan: every number and structural choice the kernel template reads. */\n"
                   "struct TcPlan {\n");
    jit__sb_append(sb, "    /* structure */\n    enum : int {\n");
    jit__sb_printf(sb, "        KIND = sm100::KIND_%s,\n",
                   tc->kind == JIT_TC_KIND_MXF8F6F4 ? "MXF8F6F4"
                   : tc->kind == JIT_TC_KIND_MXF4   ? "MXF4"
                                                    : "MXF4NVF4");
    constant(sb, "SF_VEC", (unsigned)tc->sf_vec, "elements per scale factor");
    constant(sb, "COLLECTOR_B", (unsigned)g->collector_b, ".collector::b hints (PTX 9.4)");
    constant(sb, "TMEM_EXCLUSIVE", (unsigned)g->tmem_exclusive,
             "tcgen05.alloc.exclusive (columns > 512)");
    constant(sb, "HAS_FALLBACK", (unsigned)g->has_fallback, "a fallback cluster shape");
    constant(sb, "A_MULTICAST", (unsigned)tc->a.multicast, NULL);
    constant(sb, "B_MULTICAST", (unsigned)tc->b.multicast, NULL);
    constant(sb, "OVERLAP", (unsigned)tc->tmem.overlap, "accumulator stages share columns");
    constant(sb, "REVERSE_DRAIN", (unsigned)(tc->tmem.overlap && tc->tmem.reverse_traversal),
             "stage 0 drains backwards");
    jit__sb_printf(sb, "        EPILOGUE = TC_EPI_%s,\n",
                   p->spec.epilogue == JIT_EPILOGUE_LINEAR_ADD      ? "LINEAR_ADD"
                   : p->spec.epilogue == JIT_EPILOGUE_LINEAR_SWIGLU ? "LINEAR_SWIGLU"
                                                                    : "LINEAR");
}

/* The tile, the pipeline, the warps and the work split. */
static void emit_plan_shape(const jit__tcg_t *g) {
    const jit__plan_t *p = g->plan;
    const jit__tc_plan_t *tc = g->tc;
    jit__sb_t *sb = g->sb;
    int cluster_tile_m = p->cluster_m * 128 * g->halves;
    int64_t cluster_tile_n = (int64_t)p->cluster_n * p->tile_n;

    jit__sb_append(sb, "    };\n\n    /* shape and pipeline */\n    enum : u32 {\n");
    constant(sb, "NUM_THREADS", (unsigned)p->threads, NULL);
    constant(sb, "EPI_WARP0", (unsigned)tc->first_epilogue_warp, NULL);
    constant(sb, "EPI_WARPS", 4, NULL);
    constant(sb, "MMA_WARP", (unsigned)tc->mma_warp, NULL);
    constant(sb, "TMA_WARP", (unsigned)tc->tma_warp, "also the scheduler in cluster rank 0");
    constant(sb, "CTA_GROUP", (unsigned)tc->cta_group, NULL);
    constant(sb, "HALVES", (unsigned)g->halves, "M-halves per CTA (2 with B-reuse)");
    constant(sb, "TILE_N", (unsigned)p->tile_n, "B rows of one MMA tile");
    constant(sb, "B_ROWS", (unsigned)tc->b.rows, "B rows per CTA");
    constant(sb, "STAGES", (unsigned)tc->smem.stages, NULL);
    constant(sb, "ACC_STAGES", (unsigned)tc->tmem.acc_stages, NULL);
    constant(sb, "K_TILES", (unsigned long long)((p->spec.k + p->tile_k - 1) / p->tile_k),
             "ceil(K / tile K)");
    constant(sb, "K_BLOCKS", (unsigned)tc->instrs_per_tile_k, "MMAs per K tile and M-half");
    constant(sb, "N_TOTAL", (unsigned long long)p->spec.n, NULL);
    constant(sb, "N_TILES_N",
             (unsigned long long)((p->spec.n + cluster_tile_n - 1) / cluster_tile_n),
             "work tiles along N");
    constant(sb, "PREF_M", (unsigned)p->cluster_m, "preferred cluster, CTAs");
    constant(sb, "PREF_N", (unsigned)p->cluster_n, NULL);
    constant(sb, "FB_M", (unsigned)p->fallback_cluster_m, "fallback cluster (0: none)");
    constant(sb, "FB_N", (unsigned)p->fallback_cluster_n, NULL);
    constant(sb, "SPLIT", (unsigned)g->split, "fallback clusters per work ID");
    constant(sb, "CLUSTER_TILE_M", (unsigned)cluster_tile_m, "rows of one work ID");
    constant(sb, "WORK_SLOTS", JIT_TCG_WORK_SLOTS, NULL);
    constant(sb, "WORK_READERS", WORK_READERS, "per CTA: producer, MMA, 4 epilogue warps");
}

/* The shared-memory map, bytes from the 1024-aligned base. */
static void emit_plan_smem(const jit__tcg_t *g) {
    const jit__plan_t *p = g->plan;
    const jit__tc_plan_t *tc = g->tc;
    const jit__tc_smem_buffer_t *b = tc->smem.buffers;
    jit__sb_t *sb = g->sb;

    jit__sb_append(sb, "    };\n\n    /* shared memory (bytes from the 1024-aligned base) */\n"
                       "    enum : u32 {\n");
    constant(sb, "OFF_FULL", g->bar_full, NULL);
    constant(sb, "OFF_EMPTY", g->bar_empty, NULL);
    constant(sb, "OFF_ACC_FULL", g->bar_acc_full, NULL);
    constant(sb, "OFF_ACC_EMPTY", g->bar_acc_empty, NULL);
    constant(sb, "OFF_TMEM_PTR", b[JIT_TC_BUF_TMEM_PTR].offset, NULL);
    constant(sb, "OFF_WORK_FULL", g->bar_work_full, NULL);
    constant(sb, "OFF_WORK_EMPTY", g->bar_work_empty, NULL);
    constant(sb, "OFF_WORK_IDS", g->work_ids, NULL);
    constant(sb, "OFF_A", b[JIT_TC_BUF_A].offset, NULL);
    constant(sb, "A_STAGE", b[JIT_TC_BUF_A].stage_bytes, NULL);
    constant(sb, "OFF_B", b[JIT_TC_BUF_B].offset, NULL);
    constant(sb, "B_STAGE", b[JIT_TC_BUF_B].stage_bytes, NULL);
    constant(sb, "OFF_SFA", b[JIT_TC_BUF_SFA].offset, NULL);
    constant(sb, "SFA_STAGE", b[JIT_TC_BUF_SFA].stage_bytes, NULL);
    constant(sb, "OFF_SFB", b[JIT_TC_BUF_SFB].offset, NULL);
    constant(sb, "SFB_STAGE", b[JIT_TC_BUF_SFB].stage_bytes, NULL);
    constant(sb, "OFF_C", b[JIT_TC_BUF_C].offset, NULL);
    constant(sb, "C_STAGE", b[JIT_TC_BUF_C].stage_bytes, NULL);
    constant(sb, "C_STAGES", (unsigned)tc->smem.c_stages, NULL);
    constant(sb, "OPERAND_END", tc->smem.operand_end, "end of the last MMA/tcgen05.cp operand");
    constant(sb, "DESC_ADDR_LIMIT", jit__tc_smem_desc_addr_limit(p->arch),
             "absolute addresses a descriptor can hold");
    constant(sb, "DESC_ADDR_MASK", (1u << jit__tc_smem_desc_addr_bits(p->arch)) - 1u,
             "descriptor start field: (addr >> 4) & this");
}

/* What each TMA load moves. */
static void emit_plan_tma(const jit__tcg_t *g) {
    const jit__tc_plan_t *tc = g->tc;
    jit__sb_t *sb = g->sb;

    jit__sb_append(sb, "    };\n\n    /* TMA */\n    enum : u32 {\n");
    constant(sb, "A_BOXES", (unsigned)tc->a.boxes_per_stage, "boxes along K per stage");
    constant(sb, "A_BOX_BYTES", tc->a.box_inner_bytes, "SMEM bytes of one box row");
    constant(sb, "A_KC_TILE", (unsigned)g->a_kcoord_tile, "K coordinate per K tile");
    constant(sb, "A_KC_BOX", (unsigned)g->a_kcoord_box, NULL);
    constant(sb, "A_K_STEP", tc->a.k_step_bytes, "SMEM bytes of A along K per MMA");
    constant(sb, "B_BOXES", (unsigned)tc->b.boxes_per_stage, NULL);
    constant(sb, "B_BOX_BYTES", tc->b.box_inner_bytes, NULL);
    constant(sb, "B_KC_TILE", (unsigned)g->b_kcoord_tile, NULL);
    constant(sb, "B_KC_BOX", (unsigned)g->b_kcoord_box, NULL);
    constant(sb, "B_K_STEP", tc->b.k_step_bytes, NULL);
    constant(sb, "SF_CHUNKS_K", (unsigned)tc->sfa_chunks_k, "512-byte scale chunks per K tile");
    constant(sb, "EXPECT_TX", tc->expect_tx_bytes, "GMEM bytes per stage per CTA");
}

/* The MMA descriptors and the TMEM columns. */
static void emit_plan_mma(const jit__tcg_t *g) {
    const jit__tc_plan_t *tc = g->tc;
    jit__sb_t *sb = g->sb;

    jit__sb_append(sb, "    };\n\n    /* MMA and TMEM */\n    enum : u64 {\n");
    jit__sb_printf(sb, "        A_DESC_HI = 0x%016llXull, /* LBO %u, SBO %u, swizzle %s */\n",
                   (unsigned long long)g->a_desc_hi, tc->a.lbo, tc->a.sbo,
                   jit__tc_swizzle_name(tc->a.swizzle));
    jit__sb_printf(sb, "        B_DESC_HI = 0x%016llXull, /* LBO %u, SBO %u, swizzle %s */\n",
                   (unsigned long long)g->b_desc_hi, tc->b.lbo, tc->b.sbo,
                   jit__tc_swizzle_name(tc->b.swizzle));
    jit__sb_printf(sb, "        SF_DESC_HI = 0x%016llXull, /* scale chunk: no swizzle */\n",
                   (unsigned long long)g->sf_desc_hi);
    jit__sb_printf(sb,
                   "    };\n    enum : u32 {\n"
                   "        IDESC = 0x%08Xu, /* SF IDs 0; patched per instruction */\n",
                   tc->idesc);
    constant(sb, "TMEM_COLS", (unsigned)tc->tmem.allocated_columns, "allocated TMEM columns");
    constant(sb, "ACC_COL0", (unsigned)tc->tmem.acc[0].first_column, NULL);
    constant(sb, "ACC_COL1",
             (unsigned)(tc->tmem.acc_stages > 1 ? tc->tmem.acc[1].first_column
                                                : tc->tmem.acc[0].first_column),
             NULL);
    constant(sb, "ACC_HALF_STRIDE", (unsigned)tc->tmem.acc_half_stride, NULL);
    constant(sb, "SFA_COL", (unsigned)tc->tmem.sfa_first_column, NULL);
    constant(sb, "SFB_COL", (unsigned)tc->tmem.sfb_first_column, NULL);
    constant(sb, "SFA_HALF_STRIDE", (unsigned)tc->tmem.sfa_half_stride, NULL);
    constant(sb, "SF_PER_INSTR", (unsigned)tc->sf_per_instr, "scale factors per row per MMA");
    constant(sb, "SFB_ROW_BLOCKS", (unsigned)tc->sfb_row_blocks, "128-row scale blocks of B");
}

/* The epilogue's sub-tiles and C staging, and the closing of TcPlan. */
static void emit_plan_epilogue(const jit__tcg_t *g) {
    const jit__plan_t *p = g->plan;
    const jit__tc_plan_t *tc = g->tc;
    jit__sb_t *sb = g->sb;
    jit__tc_c_layout_t cl;
    jit__tc_c_layout(p, &cl, NULL);

    jit__sb_append(sb, "    };\n\n    /* epilogue */\n    enum : u32 {\n");
    constant(sb, "OUT_BYTES", (unsigned)g->out_bytes, "2: BF16, 4: FP32");
    constant(sb, "EPI_ACC_COLS", (unsigned)g->epi_acc_cols, "accumulator columns per sub-tile");
    constant(sb, "EPI_SUBTILES", (unsigned)g->epi_subtiles, "per M-half");
    constant(sb, "C_SLAB", g->c_slab, "one warp's 32 rows of a C stage");
    constant(sb, "C_BOX_BYTES", cl.box_bytes, "TMA-store box row = swizzle span");
    constant(sb, "C_BOX_COLS", (unsigned)(cl.box_bytes / (uint32_t)cl.out_bytes), NULL);
    constant(sb, "C_BOXES", (unsigned)cl.boxes, NULL);
    constant(sb, "C_SWIZZLE_MASK", cl.box_bytes / 16u - 1u, NULL);
    if (tc->tmem.overlap)
        constant(sb, "RELEASE_AFTER", (unsigned)g->release_after,
                 "sub-tiles drained before the early release");
    jit__sb_append(sb, "    };\n};\n\n");
}

/* The plan as the enumerators of struct TcPlan: every number and structural choice the kernel
 * template reads. */
void jit__tcg_emit_plan(const jit__tcg_t *g) {
    emit_plan_structure(g);
    emit_plan_shape(g);
    emit_plan_smem(g);
    emit_plan_tma(g);
    emit_plan_mma(g);
    emit_plan_epilogue(g);
}
