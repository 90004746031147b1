/*
 * The tcgen05 planner: from a block-scaled spec, a token band, an SM count and an arch profile
 * to everything the generator needs (kind, instruction shape, descriptors, SMEM and TMEM maps,
 * clusters, grid). This file holds the formats, the tile and cluster choices and the planner
 * itself; the SMEM layout is plan_smem.c, the TMEM layout plan_tmem.c, the JSON form
 * plan_json.c. Pure; the rules and their sources are docs/hardware-facts.md F7-F15.
 *
 * Decisions worth knowing:
 * - FP4 x FP4 always uses kind::mxf4nvf4 (".block16" or ".block32"), MXFP4 included. That is
 *   what FlashInfer's sm_107a kernels do (docs/hardware-facts.md F8); the descriptor bits equal
 *   kind::mxf4's, and one spelling for every arch keeps the generator free of a kind switch.
 * - Mixed precision takes E2M1 on either side (E2M1 weights as B with FP8 activations as A,
 *   the usual W4A8 layout, or the swap-AB form with E2M1 as A); the descriptor looks up each
 *   code.
 * - The tile K is one 128-byte swizzle atom of the operand with the widest K bytes: 256 for the
 *   FP4 kinds, 128 for mxf8f6f4, on every arch; the instruction K (docs/hardware-facts.md F9)
 *   then gives 4 instructions per tile on sm_100a/103a and 2 on sm_107a. sm_103a's K=96 mode is
 *   not planned.
 * - SMEM: barriers in a reserved 1 KiB, then every A stage, every B stage, SFA, SFB (the
 *   MMA/UTCCP operands, kept below 256 KiB because the descriptor start field has 14 bits:
 *   docs/hardware-facts.md F11), then the epilogue staging C, which is no MMA operand and may
 *   lie above. On sm_107a that rule, not the capacity, is what limits the stage count for large
 *   tiles.
 * - TMEM: accumulator stages first, then SFA, then SFB. Disjoint stages when they fit, else
 *   (512-column arches only) the overlapping layout with reverse traversal and early release.
 */
#include "tcgen05.h"

#include <stdio.h>
#include <string.h>

/* The barriers of the deepest pipeline (full/empty per stage, two accumulator pairs, two for
 * the work-ID broadcast) fit the reserved block beside the TMEM base slot. */
_Static_assert(8 * (2 * JIT_TC_MAX_STAGES + 2 * 2 + 2) <= JIT_TC_SMEM_RESERVED - 16,
               "barriers overflow the reserved SMEM block");

static int is_fp8(jit_dtype_t t) {
    return t == JIT_DTYPE_E4M3 || t == JIT_DTYPE_E5M2;
}

/* ---- formats ----------------------------------------------------------------------------- */

typedef struct tc_format {
    jit__tc_kind_t kind;
    const char *suffix;
    jit__tc_sf_format_t sf;
    int vec;
} tc_format_t;

const char *jit__tc_format_name(jit_dtype_t a, jit_dtype_t b, jit_scale_mode_t s) {
    int fp4a = a == JIT_DTYPE_E2M1, fp4b = b == JIT_DTYPE_E2M1;
    if (is_fp8(a) && is_fp8(b) && s == JIT_SCALE_UE8M0_32)
        return "mxfp8";
    if (fp4a && fp4b) {
        switch (s) {
        case JIT_SCALE_UE8M0_32:
            return "mxfp4";
        case JIT_SCALE_UE4M3_16:
            return "nvfp4";
        case JIT_SCALE_UE5M3_16:
        case JIT_SCALE_UE5M3_32:
            return "fp4/ue5m3";
        default:
            break;
        }
    }
    if (((fp4a && is_fp8(b)) || (is_fp8(a) && fp4b)) && s == JIT_SCALE_UE8M0_32)
        return "mixed fp8 x fp4";
    return "block-scaled";
}

/* Arch-independent part: which kind and scale format a spec maps to. */
static jit_status_t classify(const jit__gemm_spec_t *s, tc_format_t *f, jit__diag_t *d) {
    int ok_a = is_fp8(s->a) || s->a == JIT_DTYPE_E2M1;
    int ok_b = is_fp8(s->b) || s->b == JIT_DTYPE_E2M1;
    const char *sc = jit_scale_mode_name(s->scales);
    if (!ok_a || !ok_b)
        return jit__fail(d, JIT_UNSUPPORTED,
                         "block-scaled operands are e4m3, e5m2 or e2m1 (got %s x %s)",
                         jit_dtype_name(s->a), jit_dtype_name(s->b));
    int fp4a = s->a == JIT_DTYPE_E2M1, fp4b = s->b == JIT_DTYPE_E2M1;
    memset(f, 0, sizeof(*f));
    if (fp4a && fp4b) {
        f->kind = JIT_TC_KIND_MXF4NVF4;
        switch (s->scales) {
        case JIT_SCALE_UE8M0_32:
            f->sf = JIT_TC_SF_UE8M0, f->vec = 32;
            break;
        case JIT_SCALE_UE4M3_16:
            f->sf = JIT_TC_SF_UE4M3, f->vec = 16;
            break;
        case JIT_SCALE_UE5M3_16:
            f->sf = JIT_TC_SF_UE5M3, f->vec = 16;
            break;
        case JIT_SCALE_UE5M3_32:
            f->sf = JIT_TC_SF_UE5M3, f->vec = 32;
            break;
        default:
            return jit__fail(d, JIT_UNSUPPORTED,
                             "e2m1 x e2m1 takes block scales ue8m0/32, ue4m3/16, ue5m3/16 or "
                             "ue5m3/32 (got %s)",
                             sc);
        }
        f->suffix = f->vec == 16 ? ".block16" : ".block32";
    } else {
        /* FP8 x FP8 and FP8 x FP4 share kind::mxf8f6f4, which reads UE8M0 per 32 only. */
        if (s->scales != JIT_SCALE_UE8M0_32)
            return jit__fail(d, JIT_UNSUPPORTED,
                             "%s x %s runs on kind::mxf8f6f4, which takes ue8m0/32 scales only "
                             "(got %s)",
                             jit_dtype_name(s->a), jit_dtype_name(s->b), sc);
        f->kind = JIT_TC_KIND_MXF8F6F4;
        f->sf = JIT_TC_SF_UE8M0;
        f->vec = 32;
        f->suffix = "";
    }
    if (s->out != JIT_DTYPE_BF16 && s->out != JIT_DTYPE_F32)
        return jit__fail(d, JIT_UNSUPPORTED, "block-scaled GEMM writes bf16 or f32 (got %s)",
                         jit_dtype_name(s->out));
    if (s->epilogue < JIT_EPILOGUE_LINEAR || s->epilogue > JIT_EPILOGUE_LINEAR_SWIGLU)
        return jit__fail(d, JIT_UNSUPPORTED, "unknown epilogue %d", (int)s->epilogue);
    return JIT_OK;
}

/* ---- building blocks --------------------------------------------------------------------- */

int jit__tc_instr_k(const jit__arch_profile_t *arch, jit__tc_kind_t kind) {
    if (!arch || !arch->has_tcgen05)
        return 0;
    if (kind == JIT_TC_KIND_MXF8F6F4)
        return arch->instr_k_bytes_fp8; /* bytes of FP8 = elements */
    if (kind == JIT_TC_KIND_MXF4 || kind == JIT_TC_KIND_MXF4NVF4)
        return arch->instr_k_bytes_fp4 * 2;
    return 0;
}

int jit__tc_subbyte_packed(const jit__arch_profile_t *arch, int bits) {
    /* TMA has no packed 6-bit type, so FP6 is unpacked everywhere; FP4 only where mxf8f6f4
     * reads it packed. */
    if (bits == 6)
        return 0;
    return bits == 4 && arch && arch->packed_fp4_in_mixed;
}

jit_status_t jit__tc_check_fallback_groups(int fallback_clusters, int split_factor,
                                           jit__diag_t *d) {
    if (split_factor < 1 || split_factor > 16 || (split_factor & (split_factor - 1)) != 0)
        return jit__fail(d, JIT_INVALID_ARGUMENT,
                         "split factor %d must be a power of two no larger than 16", split_factor);
    if (fallback_clusters < 0 || fallback_clusters % split_factor != 0)
        return jit__fail(d, JIT_INVALID_ARGUMENT,
                         "%d fallback clusters are not a whole number of groups of %d: a "
                         "member would wait forever for its partner",
                         fallback_clusters, split_factor);
    return JIT_OK;
}

/* ---- the planner ------------------------------------------------------------------------- */

static void set_operand(jit__tc_operand_t *op, jit_dtype_t t, jit__tc_kind_t kind, int rows,
                        int tile_k, int instr_k, const jit__arch_profile_t *arch) {
    memset(op, 0, sizeof(*op));
    op->dtype = t;
    op->format_code = jit__tc_format_code(kind, t);
    op->rows = rows;
    if (t != JIT_DTYPE_E2M1) {
        op->storage = JIT_TC_STORE_8BIT;
        op->tma_type = JIT_TC_TMA_UINT8;
        op->row_bytes = (uint32_t)tile_k;
        op->k_step_bytes = (uint32_t)instr_k;
    } else if (kind != JIT_TC_KIND_MXF8F6F4 || jit__tc_subbyte_packed(arch, 4)) {
        op->storage = JIT_TC_STORE_FP4_PACKED;
        op->tma_type = JIT_TC_TMA_UINT8;
        op->row_bytes = (uint32_t)tile_k / 2;
        op->k_step_bytes = (uint32_t)instr_k / 2;
    } else {
        /* 16U4_ALIGN16B: one byte per element on average, so a 128-byte atom holds 128 K. */
        op->storage = JIT_TC_STORE_FP4_UNPACKED;
        op->tma_type = JIT_TC_TMA_16U4_ALIGN16B;
        op->row_bytes = (uint32_t)tile_k;
        op->k_step_bytes = (uint32_t)instr_k;
    }
    op->gmem_row_bytes = t == JIT_DTYPE_E2M1 ? (uint32_t)tile_k / 2 : (uint32_t)tile_k;
    op->stage_bytes = (uint32_t)rows * op->row_bytes;
    op->box_inner_bytes = op->row_bytes;
    op->boxes_per_stage = 1;
    /* Swizzle span = row bytes (gcd with 128): 128 -> SW128, 64 -> SW64 (the packed FP4
     * operand of sm_107a mixed MMAs), with SBO = 8 rows. */
    if (op->row_bytes >= 128)
        op->swizzle = JIT_TC_SWIZZLE_128B;
    else if (op->row_bytes >= 64)
        op->swizzle = JIT_TC_SWIZZLE_64B;
    else
        op->swizzle = JIT_TC_SWIZZLE_32B;
    op->align = jit__tc_swizzle_repeat_bytes(op->swizzle);
    op->sbo = 8u * (op->row_bytes >= 128 ? 128u : op->row_bytes);
    op->lbo = 16; /* unused for swizzled K-major layouts; 1 by convention */
}

static int has_cluster_tmem_extra(const jit__arch_profile_t *arch) {
    return arch->tmem_columns > 512;
}

/* The planner's own choice of tile N (B rows per MMA tile): small token bands want many CTAs
 * along N, large ones want the widest tile. Never wider than N rounded up to 64. */
static int choose_tile_n(int64_t n, int band, int cta_group, int sm_count) {
    int64_t cap64 = (n + 63) / 64 * 64;
    int t;
    if (cta_group == 1) {
        int64_t lo, hi;
        jit__token_band_range(band, &lo, &hi);
        int64_t m_tiles = lo > 256 ? 8 : (hi + 127) / 128; /* CTAs along M at the band's top */
        t = 64;
        const int cands[2] = {256, 128};
        for (int i = 0; i < 2; i++) {
            if (band <= 1 && cands[i] > 128)
                continue;
            if ((n + cands[i] - 1) / cands[i] * m_tiles >= sm_count) {
                t = cands[i];
                break;
            }
        }
    } else {
        t = 256;
    }
    if (t > cap64)
        t = (int)cap64;
    return t;
}

static const char *max_version(const char *a, const char *b) {
    int a1 = 0, a2 = 0, b1 = 0, b2 = 0;
    if (sscanf(a, "%d.%d", &a1, &a2) != 2)
        return b;
    if (sscanf(b, "%d.%d", &b1, &b2) != 2)
        return a;
    return (a1 > b1 || (a1 == b1 && a2 >= b2)) ? a : b;
}

/* The MMA shape the planner chose: CTA group, MMA N and B-reuse. */
typedef struct tc_shape {
    int cta_group, tile_n, breuse;
} tc_shape_t;

/* What the planner refuses before it chooses anything: formats it does not take, arches
 * without tcgen05 (or without UE5M3), shapes the TMA rules or the scale blocks forbid. Fills the
 * format's kind, scale format and vector size. */
static jit_status_t check_problem(const jit__gemm_spec_t *spec, int token_band, int sm_count,
                                  const jit__arch_profile_t *arch, tc_format_t *f, jit__diag_t *d) {
    jit_status_t st = classify(spec, f, d);
    if (st != JIT_OK)
        return st;
    const char *fname = jit__tc_format_name(spec->a, spec->b, spec->scales);
    if (!arch->has_tcgen05)
        return jit__fail(d, JIT_UNSUPPORTED_ARCH, "block-scaled %s is not supported on %s yet",
                         fname, arch->name);
    if (f->sf == JIT_TC_SF_UE5M3 && !arch->has_ue5m3)
        return jit__fail(d, JIT_UNSUPPORTED_ARCH,
                         "block-scaled %s is not supported on %s: UE5M3 scales are an sm_107a "
                         "format",
                         fname, arch->name);
    if (spec->n <= 0 || spec->k <= 0)
        return jit__fail(d, JIT_INVALID_SHAPE, "n=%lld and k=%lld must be positive",
                         (long long)spec->n, (long long)spec->k);
    if (spec->k % f->vec != 0)
        return jit__fail(d, JIT_INVALID_SHAPE,
                         "k=%lld is not a whole number of %d-element scale blocks",
                         (long long)spec->k, f->vec);
    int has_fp4 = spec->a == JIT_DTYPE_E2M1 || spec->b == JIT_DTYPE_E2M1;
    if (has_fp4 && spec->k % 32 != 0)
        return jit__fail(d, JIT_MISALIGNED,
                         "k=%lld must be a multiple of 32 for e2m1 operands (16-byte TMA rows)",
                         (long long)spec->k);
    if (f->kind == JIT_TC_KIND_MXF8F6F4 && has_fp4 && !jit__tc_subbyte_packed(arch, 4) &&
        spec->k % 128 != 0)
        return jit__fail(d, JIT_MISALIGNED,
                         "k=%lld must be a multiple of 128 for the unpacked e2m1 operand on %s "
                         "(16U4_ALIGN16B TMA)",
                         (long long)spec->k, arch->name);
    if (sm_count <= 0)
        return jit__fail(d, JIT_INVALID_ARGUMENT, "sm_count %d must be positive", sm_count);
    if (token_band < 0 || token_band >= JIT_TOKEN_BANDS)
        return jit__fail(d, JIT_INVALID_ARGUMENT, "token band %d out of range", token_band);
    return JIT_OK;
}

/* The CTA group, the MMA's N and B-reuse: the variant's where it asks, else the planner's
 * choice for the band. */
static jit_status_t choose_shape(const jit__gemm_spec_t *spec, int token_band, int sm_count,
                                 const jit__arch_profile_t *arch, const jit__tc_variant_t *v,
                                 tc_shape_t *out, jit__diag_t *d) {
    jit__tc_variant_t want = {0, 0, 0};
    if (v)
        want = *v;
    int64_t band_lo, band_hi;
    jit__token_band_range(token_band, &band_lo, &band_hi);
    /* One CTA per MMA up to 256 tokens: a 2-CTA pair needs M tiles to pair, and two SMs (the
     * pair runs on two at once), so one SM plans single CTAs at every band. */
    int cta_group = want.cta_group ? want.cta_group : (band_hi <= 256 || sm_count < 2 ? 1 : 2);
    if (cta_group != 1 && cta_group != 2)
        return jit__fail(d, JIT_INVALID_ARGUMENT, "cta_group must be 1 or 2, got %d", cta_group);
    if (cta_group == 2 && sm_count < 2)
        return jit__fail(d, JIT_PLAN_FAILED, "a 2-CTA plan needs at least 2 SMs (sm_count %d)",
                         sm_count);
    int tile_n =
        want.tile_n ? want.tile_n : choose_tile_n(spec->n, token_band, cta_group, sm_count);
    if (tile_n != 64 && tile_n != 128 && tile_n != 192 && tile_n != 256)
        return jit__fail(d, JIT_INVALID_ARGUMENT, "tile N must be 64, 128, 192 or 256 (got %d)",
                         tile_n);
    int breuse;
    if (want.breuse > 0) {
        if (!has_cluster_tmem_extra(arch))
            return jit__fail(d, JIT_UNSUPPORTED_ARCH,
                             "B-reuse (tile M 512) needs more than 512 TMEM columns; %s has %u",
                             arch->name, arch->tmem_columns);
        if (cta_group != 2)
            return jit__fail(d, JIT_UNSUPPORTED, "B-reuse is planned for cta_group::2 only");
        breuse = 1;
    } else if (want.breuse < 0) {
        breuse = 0;
    } else {
        breuse = has_cluster_tmem_extra(arch) && cta_group == 2 &&
                 token_band == JIT_TOKEN_BANDS - 1 && tile_n >= 192;
    }
    if (spec->epilogue == JIT_EPILOGUE_LINEAR_SWIGLU && spec->n % 2 != 0)
        return jit__fail(d, JIT_INVALID_SHAPE,
                         "linear_swiglu needs an even n (gate/up row pairs), got %lld",
                         (long long)spec->n);
    out->cta_group = cta_group;
    out->tile_n = tile_n;
    out->breuse = breuse;
    return JIT_OK;
}

/* The instruction (kind, shape, descriptor), the operands' layouts and what a stage moves, and
 * the warp roles. */
static jit_status_t set_instruction(jit__tc_plan_t *tc, const jit__gemm_spec_t *spec,
                                    const jit__arch_profile_t *arch, const tc_format_t *f,
                                    const tc_shape_t *sh, jit__diag_t *d) {
    const int cta_group = sh->cta_group, tile_n = sh->tile_n, breuse = sh->breuse;
    memset(tc, 0, sizeof(*tc));
    tc->kind = f->kind;
    tc->kind_suffix = f->suffix;
    tc->scale_format = f->sf;
    tc->sf_vec = f->vec;
    tc->cta_group = cta_group;
    tc->breuse = breuse;
    tc->instr_m = 128 * cta_group;
    tc->instr_n = tile_n;
    tc->instr_k = jit__tc_instr_k(arch, f->kind);
    int tile_k = f->kind == JIT_TC_KIND_MXF8F6F4 ? 128 : 256;
    tc->instrs_per_tile_k = tile_k / tc->instr_k;
    tc->cta_rows_a = 128 * (breuse ? 2 : 1);
    tc->cta_rows_b = tile_n / cta_group;
    tc->sf_per_instr = tc->instr_k / f->vec;
    int scales_per_tile = tile_k / f->vec;
    tc->sfa_chunks_k = (scales_per_tile + 3) / 4;
    tc->sfb_row_blocks = (tile_n + 127) / 128;
    tc->fp6_packed = jit__tc_subbyte_packed(arch, 6);

    jit__tc_idesc_params_t ip = {
        .kind = f->kind,
        .a = spec->a,
        .b = spec->b,
        .sf = f->sf,
        .sf_vec = f->vec,
        .m = tc->instr_m,
        .n = tc->instr_n,
        .k = tc->instr_k,
        .cta_group = cta_group,
    };
    jit_status_t st = jit__tc_idesc(arch, &ip, &tc->idesc, d);
    if (st != JIT_OK)
        return st;

    set_operand(&tc->a, spec->a, f->kind, tc->cta_rows_a, tile_k, tc->instr_k, arch);
    set_operand(&tc->b, spec->b, f->kind, tc->cta_rows_b, tile_k, tc->instr_k, arch);
    tc->packed_fp4 = f->kind == JIT_TC_KIND_MXF8F6F4 && (tc->a.storage == JIT_TC_STORE_FP4_PACKED ||
                                                         tc->b.storage == JIT_TC_STORE_FP4_PACKED);
    tc->sfa_stage_bytes =
        (uint32_t)(tc->cta_rows_a / 128 * tc->sfa_chunks_k) * JIT_TC_SF_CHUNK_BYTES;
    tc->sfb_stage_bytes = (uint32_t)(tc->sfb_row_blocks * tc->sfa_chunks_k) * JIT_TC_SF_CHUNK_BYTES;
    tc->expect_tx_bytes = (uint32_t)tc->a.rows * tc->a.gmem_row_bytes +
                          (uint32_t)tc->b.rows * tc->b.gmem_row_bytes + tc->sfa_stage_bytes +
                          tc->sfb_stage_bytes;
    tc->sf_tma_type = JIT_TC_TMA_UINT16;
    tc->utccp_interleaved = breuse;
    tc->tma_warps = 1;
    tc->circular_desc = 0;
    tc->mid_tile_release = 0;
    tc->epilogue_warps = 4;
    tc->first_epilogue_warp = 0; /* warps 0-3: warp w drains TMEM lanes 32*(w%4) .. +31 */
    tc->mma_warp = 4;
    tc->tma_warp = 5;
    return JIT_OK;
}

/* The epilogue's staging, then the TMEM and SMEM layouts. */
static jit_status_t set_layout(jit__tc_plan_t *tc, const jit__gemm_spec_t *spec,
                               const jit__arch_profile_t *arch, const tc_shape_t *sh,
                               jit__diag_t *d) {
    const int tile_n = sh->tile_n, breuse = sh->breuse;
    jit_status_t st;
    /* Epilogue sub-tile: 64 accumulator columns (32 for f32 output), two staging buffers of
     * 128 rows each. */
    int out_bytes = spec->out == JIT_DTYPE_F32 ? 4 : 2;
    int epi = spec->out == JIT_DTYPE_F32 ? 32 : 64;
    int out_cols = spec->epilogue == JIT_EPILOGUE_LINEAR_SWIGLU ? epi / 2 : epi;
    tc->smem.epi_tile_n = epi;
    tc->smem.c_stages = 2;
    tc->smem.c_bytes = (uint32_t)(tc->smem.c_stages * 128 * out_cols * out_bytes);

    int acc_stages = breuse && tile_n >= 192 ? 1 : 2;
    int sfa_cols = tc->sfa_chunks_k * 4;
    int sfb_cols = tc->sfb_row_blocks * tc->sfa_chunks_k * 4;
    st = jit__tc_tmem_plan((int)arch->tmem_columns, tile_n, breuse ? 2 : 1, acc_stages, sfa_cols,
                           sfb_cols, !has_cluster_tmem_extra(arch), epi, &tc->tmem, d);
    if (st != JIT_OK)
        return st;
    st = jit__tc_plan_smem(tc, arch, acc_stages, d);
    if (st != JIT_OK)
        return st;
    return JIT_OK;
}

/* Clusters: 2-CTA plans pair along M and multicast B across two pairs; 1-CTA plans for more
 * than one M tile multicast B across two CTAs; decode-sized bands need no cluster. Then the
 * persistent grid of one wave. */
static jit_status_t set_clusters(jit__tc_plan_t *tc, int token_band, int sm_count, int cta_group,
                                 jit__diag_t *d) {
    int pm, pn = 1, fm, fn = 1;
    if (cta_group == 2)
        pm = 4, fm = 2;
    else if (token_band <= 1)
        pm = 1, fm = 0;
    else
        pm = 2, fm = 1;
    /* A cluster's CTAs are resident on distinct SMs together: when the SMs cannot hold one
     * preferred cluster, the fallback shape (which always fits: one CTA, or the pair already
     * checked above) is the only one, so the grid below holds at least one cluster. */
    if (fm && sm_count < pm * pn)
        pm = fm, fm = 0;
    tc->cluster_m = pm;
    tc->cluster_n = pn;
    tc->fallback_cluster_m = fm;
    tc->fallback_cluster_n = fm ? fn : 0;
    tc->a.multicast = pn > 1;
    tc->b.multicast = pm / cta_group > 1;

    int psize = pm * pn, fsize = fm ? fm * fn : psize;
    jit__tc_grid_t *g = &tc->grid;
    g->ctas_per_sm = 1; /* the stage count fills the SMEM of one SM */
    g->fallback_capacity = sm_count / fsize * fsize * g->ctas_per_sm;
    g->preferred_clusters = g->fallback_capacity / psize; /* floor: one wave, no tail */
    if (g->preferred_clusters == 0)
        return jit__fail(d, JIT_PLAN_FAILED, "%d SMs cannot hold one %dx%d cluster", sm_count, pm,
                         pn);
    g->x = pm;
    g->y = pn;
    g->z = g->preferred_clusters;
    g->split_factor = psize / fsize;
    int remaining = (g->fallback_capacity - g->preferred_clusters * psize) / fsize;
    g->fallback_clusters = remaining / g->split_factor * g->split_factor;
    g->fallback_groups_whole =
        jit__tc_check_fallback_groups(g->fallback_clusters, g->split_factor, NULL) == JIT_OK;
    return JIT_OK;
}

jit_status_t jit__plan_tc_make_variant(const jit__gemm_spec_t *spec, int token_band, int sm_count,
                                       const jit__arch_profile_t *arch, const jit__tc_variant_t *v,
                                       jit__plan_t *plan, jit__diag_t *d) {
    if (!spec || !arch || !plan)
        return jit__fail(d, JIT_INVALID_ARGUMENT, "jit__plan_tc_make: NULL argument");
    tc_format_t f;
    tc_shape_t sh = {0, 0, 0};
    jit_status_t st = check_problem(spec, token_band, sm_count, arch, &f, d);
    if (st == JIT_OK)
        st = choose_shape(spec, token_band, sm_count, arch, v, &sh, d);
    if (st != JIT_OK)
        return st;
    jit__tc_plan_t *tc = jit__tc_of(plan);
    st = set_instruction(tc, spec, arch, &f, &sh, d);
    if (st == JIT_OK)
        st = set_layout(tc, spec, arch, &sh, d);
    if (st == JIT_OK)
        st = set_clusters(tc, token_band, sm_count, sh.cta_group, d);
    if (st != JIT_OK)
        return st;
    tc->ptx_version_min = max_version("8.8", arch->ptx_version ? arch->ptx_version : "8.8");
    tc->valid = 1;
    const int breuse = sh.breuse, tile_n = sh.tile_n;
    const int tile_k = tc->instrs_per_tile_k * tc->instr_k;
    const int pm = tc->cluster_m, pn = tc->cluster_n;
    plan->family = &jit__family_tcgen05;
    plan->arch = arch;
    plan->spec = *spec;
    plan->token_band = token_band;
    plan->sm_count = sm_count;
    plan->tile_m = tc->instr_m * (breuse ? 2 : 1);
    plan->tile_n = tile_n;
    plan->tile_k = tile_k;
    plan->stages = tc->smem.stages;
    plan->threads = 32 * (tc->epilogue_warps + 2);
    plan->smem_bytes = tc->smem.bytes;
    plan->persistent = 1;
    plan->cluster_m = pm;
    plan->cluster_n = pn;
    plan->fallback_cluster_m = tc->fallback_cluster_m;
    plan->fallback_cluster_n = tc->fallback_cluster_n;
    return JIT_OK;
}

jit_status_t jit__plan_tc_make(const jit__gemm_spec_t *spec, int token_band, int sm_count,
                               const jit__arch_profile_t *arch, jit__plan_t *plan, jit__diag_t *d) {
    return jit__plan_tc_make_variant(spec, token_band, sm_count, arch, NULL, plan, d);
}
