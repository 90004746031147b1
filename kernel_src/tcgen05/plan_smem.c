/*
 * The tcgen05 planner's SMEM side: the stage count, the layout (barriers in a reserved 1 KiB,
 * then the A, B, SFA and SFB stages, which are MMA/UTCCP operands, then the epilogue staging C)
 * and its checks.
 *
 * Operand range. A descriptor holds the ABSOLUTE shared::cta address >> 4 in a 14-bit field
 * (sm_100a/103a; 15 bits on sm_107a), and dynamic shared memory does not start at address 0:
 * it begins after the arch's reserved block (1 KiB, CU_DEVICE_ATTRIBUTE_RESERVED_SHARED_MEMORY_
 * PER_BLOCK). So every operand stage must end at or below the field's limit counted from 0,
 * i.e. reserved + offset + size <= 1 << (bits + 4). Measuring from the start of the dynamic
 * window instead would let an operand ending in the last KiB below 256 KiB wrap to address 0,
 * and the MMA read the wrong bytes without a fault. The kernel re-checks the real address at
 * start (kernel.cuh).
 */
#include "tcgen05.h"

static uint32_t align_up(uint32_t v, uint32_t a) {
    return a ? (v + a - 1) / a * a : v;
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
    /* Without a profile, assume the narrowest field and the usual 1 KiB reserve. */
    const uint32_t reserved = arch ? arch->smem_reserved_per_cta : 1024u;
    const uint32_t limit = jit__tc_smem_desc_addr_limit(arch);
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
        if (b->mma_operand && reserved + end > limit)
            return jit__fail(d, JIT_PLAN_FAILED,
                             "SMEM buffer %s ends at offset %u, absolute address %u (after the "
                             "%u-byte reserved block): MMA and tcgen05.cp operands must end at "
                             "or below %u (the %d-bit descriptor start address field)",
                             b->name, end, reserved + end, reserved, limit,
                             jit__tc_smem_desc_addr_bits(arch));
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

jit_status_t jit__tc_plan_smem(jit__tc_plan_t *tc, const jit__arch_profile_t *arch, int acc_stages,
                               jit__diag_t *d) {
    jit__tc_smem_plan_t *m = &tc->smem;
    m->cap = arch->smem_per_cta;
    m->per_stage_bytes =
        tc->a.stage_bytes + tc->b.stage_bytes + tc->sfa_stage_bytes + tc->sfb_stage_bytes;
    int by_smem = jit__tc_stage_count(m->cap, JIT_TC_SMEM_RESERVED, m->c_bytes, m->per_stage_bytes);
    const uint32_t reserved = arch->smem_reserved_per_cta;
    const uint32_t limit = jit__tc_smem_desc_addr_limit(arch);
    int by_operand =
        jit__tc_stage_count(limit, reserved + JIT_TC_SMEM_RESERVED, 0, m->per_stage_bytes);
    int s = by_smem < by_operand ? by_smem : by_operand;
    if (s > JIT_TC_MAX_STAGES)
        s = JIT_TC_MAX_STAGES;
    /* The formula ignores alignment padding; the real layout decides. */
    for (; s >= 2; s--) {
        layout_smem(tc, s, acc_stages);
        if (m->bytes <= m->cap && reserved + m->operand_end <= limit)
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
    /* The descriptors of every A, B, SFA and SFB stage must be representable at their absolute
     * addresses, with base offset 0 (A, B) or unswizzled 512-byte chunks (scales). */
    const int bits = jit__tc_smem_desc_addr_bits(arch);
    const struct {
        int buf;
        uint32_t lbo, sbo;
        jit__tc_swizzle_t sw;
    } descs[4] = {
        {JIT_TC_BUF_A, tc->a.lbo, tc->a.sbo, tc->a.swizzle},
        {JIT_TC_BUF_B, tc->b.lbo, tc->b.sbo, tc->b.swizzle},
        {JIT_TC_BUF_SFA, JIT_TC_SF_DESC_LBO, JIT_TC_SF_DESC_SBO, JIT_TC_SWIZZLE_NONE},
        {JIT_TC_BUF_SFB, JIT_TC_SF_DESC_LBO, JIT_TC_SF_DESC_SBO, JIT_TC_SWIZZLE_NONE},
    };
    for (int i = 0; i < 4; i++) {
        const jit__tc_smem_buffer_t *b = &m->buffers[descs[i].buf];
        for (int k = 0; k < b->count; k++) {
            st = jit__tc_smem_desc_check(bits, reserved + b->offset + (uint32_t)k * b->stage_bytes,
                                         descs[i].lbo, descs[i].sbo, descs[i].sw, 0, d);
            if (st != JIT_OK)
                return st;
        }
    }
    return JIT_OK;
}
