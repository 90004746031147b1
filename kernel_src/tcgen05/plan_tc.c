/*
 * The tcgen05 planner: from a block-scaled spec, a token band, an SM count and an arch profile
 * to everything the generator needs (kind, instruction shape, descriptors, SMEM and TMEM maps,
 * clusters, grid). Pure; the rules are tcgen05-facts.md 2-8 and the first source document.
 *
 * Decisions worth knowing:
 * - FP4 x FP4 always uses kind::mxf4nvf4 (".block16" or ".block32"), MXFP4 included. That is
 *   what the sm_107a emitters do (facts 2.6 item 7); the descriptor bits equal kind::mxf4's, and
 *   one spelling for every arch keeps the generator free of a kind switch.
 * - Mixed precision takes E2M1 on either side (weights as B with FP8 activations as A, as the
 *   issue words it, or the swap-AB form with E2M1 as A); the descriptor looks up each code.
 * - The tile K is one 128-byte swizzle atom of the operand with the widest K bytes: 256 for the
 *   FP4 kinds, 128 for mxf8f6f4, on every arch; the instruction K (facts 2.3) then gives 4
 *   instructions per tile on sm_100a/103a and 2 on sm_107a. sm_103a's K=96 mode is not planned.
 * - SMEM: barriers in a reserved 1 KiB, then every A stage, every B stage, SFA, SFB (the
 *   MMA/UTCCP operands, kept below 256 KiB because the descriptor start field has 14 bits:
 *   trap 14), then the epilogue staging C, which is no MMA operand and may lie above. On
 *   sm_107a that rule, not the capacity, is what limits the stage count for large tiles.
 * - TMEM: accumulator stages first, then SFA, then SFB. Disjoint stages when they fit, else
 *   (512-column arches only) the overlapping layout with reverse traversal and early release.
 */
#include "plan_tc.h"

#include <jansson.h>
#include <stdio.h>
#include <string.h>

#define OPERAND_LIMIT (256u * 1024u)

/* The barriers of the deepest pipeline (full/empty per stage, two accumulator pairs, two for
 * the work-ID broadcast) fit the reserved block beside the TMEM base slot. */
_Static_assert(8 * (2 * JIT_TC_MAX_STAGES + 2 * 2 + 2) <= JIT_TC_SMEM_RESERVED - 16,
               "barriers overflow the reserved SMEM block");
#define SF_CHUNK_BYTES 512u

static uint32_t align_up(uint32_t v, uint32_t a) {
    return a ? (v + a - 1) / a * a : v;
}

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
         * soon as those sub-tiles are read. */
        int start1 = capacity - sf - stage_cols;
        o->acc[0].first_column = 0;
        o->acc[0].columns = stage_cols;
        o->acc[1].first_column = start1;
        o->acc[1].columns = stage_cols;
        o->overlap = 1;
        o->overlap_columns = stage_cols - start1;
        o->reverse_traversal = 1;
        o->early_release_subtile = (o->overlap_columns + epi_tile_n - 1) / epi_tile_n - 1;
        o->early_release_column = start1;
        acc_end = capacity - sf;
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

int jit__tc_stage_count(uint32_t cap, uint32_t reserved, uint32_t c_bytes, uint32_t per_stage) {
    if (per_stage == 0 || cap < reserved + c_bytes)
        return 0;
    return (int)((cap - reserved - c_bytes) / per_stage);
}

static int ranges_overlap(const jit__tc_smem_buffer_t *x, const jit__tc_smem_buffer_t *y) {
    if (x->size == 0 || y->size == 0)
        return 0;
    return x->offset < y->offset + y->size && y->offset < x->offset + x->size;
}

jit_status_t jit__tc_smem_check(const jit__tc_smem_plan_t *m, const jit__arch_profile_t *arch,
                                jit__diag_t *d) {
    for (int i = 0; i < m->n_buffers; i++) {
        const jit__tc_smem_buffer_t *b = &m->buffers[i];
        if (b->size == 0)
            continue;
        if (b->size != b->stage_bytes * (uint32_t)b->count)
            return jit__fail(d, JIT_INTERNAL, "SMEM buffer %s: size %u != %d x %u", b->name,
                             b->size, b->count, b->stage_bytes);
        /* Every stage base, not only the first: a stage size that is not a multiple of the
         * swizzle repeat silently shifts the pattern of every later stage. */
        for (int s = 0; s < b->count; s++) {
            uint32_t base = b->offset + (uint32_t)s * b->stage_bytes;
            if (b->align && base % b->align != 0)
                return jit__fail(d, JIT_PLAN_FAILED,
                                 "SMEM buffer %s stage %d at %u is not %u-byte aligned", b->name, s,
                                 base, b->align);
        }
        uint32_t end = b->offset + b->size;
        if (end > m->bytes)
            return jit__fail(d, JIT_PLAN_FAILED, "SMEM buffer %s ends at %u, past the %u planned",
                             b->name, end, m->bytes);
        if (b->mma_operand && end > OPERAND_LIMIT)
            return jit__fail(d, JIT_PLAN_FAILED,
                             "SMEM buffer %s ends at %u: MMA and tcgen05.cp operands must stay "
                             "below 256 KiB (14-bit descriptor address)",
                             b->name, end);
        if (b->cp_async_dest && arch && arch->cp_async_cg_limit && end > arch->cp_async_cg_limit)
            return jit__fail(d, JIT_PLAN_FAILED,
                             "SMEM buffer %s ends at %u: cp.async.cg destinations must stay "
                             "below %u on %s",
                             b->name, end, arch->cp_async_cg_limit, arch->name);
        for (int j = 0; j < i; j++)
            if (ranges_overlap(b, &m->buffers[j]))
                return jit__fail(d, JIT_PLAN_FAILED, "SMEM buffers %s and %s overlap",
                                 m->buffers[j].name, b->name);
    }
    if (arch && m->bytes > arch->smem_per_cta)
        return jit__fail(d, JIT_PLAN_FAILED, "plan needs %u bytes of shared memory, %s allows %u",
                         m->bytes, arch->name, arch->smem_per_cta);
    return JIT_OK;
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

static void set_buffer(jit__tc_smem_buffer_t *b, const char *name, uint32_t *off,
                       uint32_t stage_bytes, int count, uint32_t align, int mma_operand) {
    *off = align_up(*off, align);
    b->name = name;
    b->offset = *off;
    b->stage_bytes = stage_bytes;
    b->count = count;
    b->size = stage_bytes * (uint32_t)count;
    b->align = align;
    b->mma_operand = mma_operand;
    b->cp_async_dest = 0; /* every operand of this kernel arrives by TMA */
    *off += b->size;
}

static void layout_smem(jit__tc_plan_t *tc, int stages, int acc_stages) {
    jit__tc_smem_plan_t *m = &tc->smem;
    jit__tc_smem_buffer_t *b = m->buffers;
    uint32_t off = 0;
    m->stages = stages;
    m->n_buffers = JIT_TC_BUF_COUNT;
    m->n_barriers = 2 * stages + 2 * acc_stages + 2;
    /* The reserved KiB: the mbarriers first, the rest of the block free for small metadata (a
     * work-ID ring), and the TMEM base slot in its last 16 bytes. */
    set_buffer(&b[JIT_TC_BUF_BARRIERS], "barriers", &off, JIT_TC_SMEM_RESERVED - 16u, 1, 8, 0);
    set_buffer(&b[JIT_TC_BUF_TMEM_PTR], "tmem_ptr", &off, 16, 1, 16, 0);
    set_buffer(&b[JIT_TC_BUF_A], "a", &off, tc->a.stage_bytes, stages, tc->a.align, 1);
    set_buffer(&b[JIT_TC_BUF_B], "b", &off, tc->b.stage_bytes, stages, tc->b.align, 1);
    set_buffer(&b[JIT_TC_BUF_SFA], "sfa", &off, tc->sfa_stage_bytes, stages, 128, 1);
    set_buffer(&b[JIT_TC_BUF_SFB], "sfb", &off, tc->sfb_stage_bytes, stages, 128, 1);
    m->operand_end = off;
    set_buffer(&b[JIT_TC_BUF_C], "c", &off, m->c_bytes / (uint32_t)m->c_stages, m->c_stages, 1024,
               0);
    m->bytes = off;
}

static jit_status_t plan_smem(jit__tc_plan_t *tc, const jit__arch_profile_t *arch, int acc_stages,
                              jit__diag_t *d) {
    jit__tc_smem_plan_t *m = &tc->smem;
    m->cap = arch->smem_per_cta;
    m->per_stage_bytes =
        tc->a.stage_bytes + tc->b.stage_bytes + tc->sfa_stage_bytes + tc->sfb_stage_bytes;
    int by_smem = jit__tc_stage_count(m->cap, JIT_TC_SMEM_RESERVED, m->c_bytes, m->per_stage_bytes);
    int by_operand =
        jit__tc_stage_count(OPERAND_LIMIT, JIT_TC_SMEM_RESERVED, 0, m->per_stage_bytes);
    int s = by_smem < by_operand ? by_smem : by_operand;
    if (s > JIT_TC_MAX_STAGES)
        s = JIT_TC_MAX_STAGES;
    /* The formula ignores alignment padding; the real layout decides. */
    for (; s >= 2; s--) {
        layout_smem(tc, s, acc_stages);
        if (m->bytes <= m->cap && m->operand_end <= OPERAND_LIMIT)
            break;
    }
    if (s < 2)
        return jit__fail(d, JIT_PLAN_FAILED,
                         "a %u-byte pipeline stage (A %u, B %u, SFA %u, SFB %u) plus %u bytes of "
                         "epilogue staging leaves room for fewer than 2 stages in %s's %u bytes",
                         m->per_stage_bytes, tc->a.stage_bytes, tc->b.stage_bytes,
                         tc->sfa_stage_bytes, tc->sfb_stage_bytes, m->c_bytes, arch->name, m->cap);
    if (s == JIT_TC_MAX_STAGES)
        m->stage_limit = JIT_TC_STAGES_BY_MAX;
    else if (m->bytes + m->per_stage_bytes <= m->cap)
        m->stage_limit = JIT_TC_STAGES_BY_OPERAND_256K;
    else
        m->stage_limit = JIT_TC_STAGES_BY_SMEM;
    jit_status_t st = jit__tc_smem_check(m, arch, d);
    if (st != JIT_OK)
        return st;
    /* The descriptors of every A and B stage must be representable with base offset 0. */
    const jit__tc_operand_t *ops[2] = {&tc->a, &tc->b};
    const int bufs[2] = {JIT_TC_BUF_A, JIT_TC_BUF_B};
    for (int i = 0; i < 2; i++) {
        const jit__tc_smem_buffer_t *b = &m->buffers[bufs[i]];
        for (int k = 0; k < b->count; k++) {
            st = jit__tc_smem_desc_check(b->offset + (uint32_t)k * b->stage_bytes, ops[i]->lbo,
                                         ops[i]->sbo, ops[i]->swizzle, 0, d);
            if (st != JIT_OK)
                return st;
        }
    }
    return JIT_OK;
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
        int64_t m_tiles = band >= 3 ? 8 : (hi + 127) / 128; /* CTAs along M at the band's top */
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

jit_status_t jit__plan_tc_make_variant(const jit__gemm_spec_t *spec, int token_band, int sm_count,
                                       const jit__arch_profile_t *arch, const jit__tc_variant_t *v,
                                       jit__plan_t *plan, jit__diag_t *d) {
    if (!spec || !arch || !plan)
        return jit__fail(d, JIT_INVALID_ARGUMENT, "jit__plan_tc_make: NULL argument");
    tc_format_t f;
    jit_status_t st = classify(spec, &f, d);
    if (st != JIT_OK)
        return st;
    const char *fname = jit__tc_format_name(spec->a, spec->b, spec->scales);
    if (!arch->has_tcgen05)
        return jit__fail(d, JIT_UNSUPPORTED_ARCH, "block-scaled %s is not supported on %s yet",
                         fname, arch->name);
    if (f.sf == JIT_TC_SF_UE5M3 && !arch->has_ue5m3)
        return jit__fail(d, JIT_UNSUPPORTED_ARCH,
                         "block-scaled %s is not supported on %s: UE5M3 scales are an sm_107a "
                         "format",
                         fname, arch->name);
    if (spec->n <= 0 || spec->k <= 0)
        return jit__fail(d, JIT_INVALID_SHAPE, "n=%lld and k=%lld must be positive",
                         (long long)spec->n, (long long)spec->k);
    if (spec->k % f.vec != 0)
        return jit__fail(d, JIT_INVALID_SHAPE,
                         "k=%lld is not a whole number of %d-element scale blocks",
                         (long long)spec->k, f.vec);
    int has_fp4 = spec->a == JIT_DTYPE_E2M1 || spec->b == JIT_DTYPE_E2M1;
    if (has_fp4 && spec->k % 32 != 0)
        return jit__fail(d, JIT_MISALIGNED,
                         "k=%lld must be a multiple of 32 for e2m1 operands (16-byte TMA rows)",
                         (long long)spec->k);
    if (f.kind == JIT_TC_KIND_MXF8F6F4 && has_fp4 && !jit__tc_subbyte_packed(arch, 4) &&
        spec->k % 128 != 0)
        return jit__fail(d, JIT_MISALIGNED,
                         "k=%lld must be a multiple of 128 for the unpacked e2m1 operand on %s "
                         "(16U4_ALIGN16B TMA)",
                         (long long)spec->k, arch->name);
    if (sm_count <= 0)
        return jit__fail(d, JIT_INVALID_ARGUMENT, "sm_count %d must be positive", sm_count);
    if (token_band < 0 || token_band >= JIT_TOKEN_BANDS)
        return jit__fail(d, JIT_INVALID_ARGUMENT, "token band %d out of range", token_band);

    jit__tc_variant_t want = {0, 0, 0};
    if (v)
        want = *v;
    int cta_group = want.cta_group ? want.cta_group : (token_band <= 2 || sm_count < 2 ? 1 : 2);
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
        breuse = has_cluster_tmem_extra(arch) && cta_group == 2 && token_band == 4 && tile_n >= 192;
    }
    if (spec->epilogue == JIT_EPILOGUE_LINEAR_SWIGLU && spec->n % 2 != 0)
        return jit__fail(d, JIT_INVALID_SHAPE,
                         "linear_swiglu needs an even n (gate/up row pairs), got %lld",
                         (long long)spec->n);

    jit__tc_plan_t *tc = jit__tc_of(plan);
    memset(tc, 0, sizeof(*tc));
    tc->kind = f.kind;
    tc->kind_suffix = f.suffix;
    tc->scale_format = f.sf;
    tc->sf_vec = f.vec;
    tc->cta_group = cta_group;
    tc->breuse = breuse;
    tc->instr_m = 128 * cta_group;
    tc->instr_n = tile_n;
    tc->instr_k = jit__tc_instr_k(arch, f.kind);
    int tile_k = f.kind == JIT_TC_KIND_MXF8F6F4 ? 128 : 256;
    tc->instrs_per_tile_k = tile_k / tc->instr_k;
    tc->cta_rows_a = 128 * (breuse ? 2 : 1);
    tc->cta_rows_b = tile_n / cta_group;
    tc->sf_per_instr = tc->instr_k / f.vec;
    int scales_per_tile = tile_k / f.vec;
    tc->sfa_chunks_k = (scales_per_tile + 3) / 4;
    tc->sfb_row_blocks = (tile_n + 127) / 128;
    tc->fp6_packed = jit__tc_subbyte_packed(arch, 6);

    jit__tc_idesc_params_t ip = {
        .kind = f.kind,
        .a = spec->a,
        .b = spec->b,
        .sf = f.sf,
        .sf_vec = f.vec,
        .m = tc->instr_m,
        .n = tc->instr_n,
        .k = tc->instr_k,
        .cta_group = cta_group,
    };
    st = jit__tc_idesc(arch, &ip, &tc->idesc, d);
    if (st != JIT_OK)
        return st;

    set_operand(&tc->a, spec->a, f.kind, tc->cta_rows_a, tile_k, tc->instr_k, arch);
    set_operand(&tc->b, spec->b, f.kind, tc->cta_rows_b, tile_k, tc->instr_k, arch);
    tc->packed_fp4 = f.kind == JIT_TC_KIND_MXF8F6F4 && (tc->a.storage == JIT_TC_STORE_FP4_PACKED ||
                                                        tc->b.storage == JIT_TC_STORE_FP4_PACKED);
    tc->sfa_stage_bytes = (uint32_t)(tc->cta_rows_a / 128 * tc->sfa_chunks_k) * SF_CHUNK_BYTES;
    tc->sfb_stage_bytes = (uint32_t)(tc->sfb_row_blocks * tc->sfa_chunks_k) * SF_CHUNK_BYTES;
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
    st = plan_smem(tc, arch, acc_stages, d);
    if (st != JIT_OK)
        return st;

    /* Clusters: 2-CTA plans pair along M and multicast B across two pairs; 1-CTA plans for
     * more than one M tile multicast B across two CTAs; decode-sized bands need no cluster. */
    int pm, pn = 1, fm, fn = 1;
    if (cta_group == 2)
        pm = 4, fm = 2;
    else if (token_band <= 1)
        pm = 1, fm = 0;
    else
        pm = 2, fm = 1;
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
    tc->ptx_version_min = max_version("8.8", arch->ptx_version ? arch->ptx_version : "8.8");
    tc->valid = 1;

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

static json_t *operand_json(const jit__tc_operand_t *op, uint32_t offset) {
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
    json_object_set_new(o, "desc_stage0",
                        hex64(jit__tc_smem_desc(offset, op->lbo, op->sbo, op->swizzle, 0)));
    return o;
}

static json_t *pair_or_null(int m, int n) {
    return m ? json_pack("[ii]", m, n) : json_null();
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
    json_t *fj = json_object();
    json_object_set_new(fj, "sparse", json_integer(f.sparse));
    json_object_set_new(fj, "k_size_upper", json_integer(f.k_size_hi));
    json_object_set_new(fj, "b_sf_id", json_integer(f.sfb_id));
    json_object_set_new(fj, "a_format", json_integer(f.a_format));
    json_object_set_new(fj, "b_format", json_integer(f.b_format));
    json_object_set_new(fj, "negate_a", json_integer(f.negate_a));
    json_object_set_new(fj, "negate_b", json_integer(f.negate_b));
    json_object_set_new(fj, "a_major", json_integer(f.a_major));
    json_object_set_new(fj, "b_major", json_integer(f.b_major));
    json_object_set_new(fj, "n_dim", json_integer(f.n_shr3));
    json_object_set_new(fj, "scale_format", json_integer(f.scale_format));
    json_object_set_new(fj, "m_dim", json_integer(f.m_shr7));
    json_object_set_new(fj, "a_sf_id", json_integer(f.sfa_id));
    json_object_set_new(fj, "k_size", json_integer(f.k_size_lo));
    json_object_set_new(fj, "m", json_integer(f.m));
    json_object_set_new(fj, "n", json_integer(f.n));
    json_object_set_new(fj, "k", json_integer(f.k));
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
    json_t *ops = json_object();
    json_object_set_new(ops, "a", operand_json(&tc->a, m->buffers[JIT_TC_BUF_A].offset));
    json_object_set_new(ops, "b", operand_json(&tc->b, m->buffers[JIT_TC_BUF_B].offset));
    json_t *sfj = json_object();
    json_object_set_new(sfj, "sfa_chunks_k", json_integer(tc->sfa_chunks_k));
    json_object_set_new(sfj, "sfb_row_blocks", json_integer(tc->sfb_row_blocks));
    json_object_set_new(sfj, "sfa_stage_bytes", json_integer(tc->sfa_stage_bytes));
    json_object_set_new(sfj, "sfb_stage_bytes", json_integer(tc->sfb_stage_bytes));
    json_object_set_new(sfj, "chunk_bytes", json_integer(SF_CHUNK_BYTES));
    json_object_set_new(sfj, "tma_type", json_string(tma_type_name(tc->sf_tma_type)));
    json_object_set_new(sfj, "utccp_desc_sfa_stage0",
                        hex64(jit__tc_smem_desc(m->buffers[JIT_TC_BUF_SFA].offset, 128, 128,
                                                JIT_TC_SWIZZLE_NONE, 0)));
    json_object_set_new(ops, "sf", sfj);
    rc |= json_object_set_new(o, "operands", ops);
    rc |= json_object_set_new(o, "expect_tx_bytes", json_integer(tc->expect_tx_bytes));

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
    rc |= json_object_set_new(o, "smem", sj);

    const jit__tc_tmem_plan_t *t = &tc->tmem;
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
    rc |= json_object_set_new(o, "tmem", tj);

    const jit__tc_grid_t *g = &tc->grid;
    rc |= json_object_set_new(
        o, "cluster",
        json_pack("{sososi}", "preferred", pair_or_null(tc->cluster_m, tc->cluster_n), "fallback",
                  pair_or_null(tc->fallback_cluster_m, tc->fallback_cluster_n), "split_factor",
                  g->split_factor));
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
