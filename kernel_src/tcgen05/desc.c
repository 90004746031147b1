/*
 * tcgen05 descriptor encoders (see desc.h). The instruction descriptor is validated field by
 * field before it is assembled, because a wrong descriptor does not fault: it computes wrong
 * numbers. Where the arch profile carries no field for a difference (sm_103a's K=96 mode), a
 * single helper below names it, so the rest of the file stays free of arch names.
 *
 * Field placement: docs/hardware-facts.md F7 (sm_100a/103a from the PTX ISA tables, sm_107a from
 * CUTLASS's sm_107 descriptors), format codes F8, legality F9, SMEM descriptor F11.
 */
#include "desc.h"

#include <stddef.h>

/* sm_107a's "2x K" instructions (K=128 FP4, K=64 mxf8f6f4) come with the 2-bit K field (bits 3
 * and 31) and the 2-bit scale field; the profile says so through the FP4 instruction width. */
static int wide_k(const jit__arch_profile_t *arch) {
    return arch->instr_k_bytes_fp4 >= 64;
}

/* K=96 FP4 (48 bytes) exists on sm_103a and, from PTX 9.4, on sm_107a. The profile has no
 * field for it, so this is the one place that names an SM. */
static int has_k96(const jit__arch_profile_t *arch) {
    return arch->sm == 103 || wide_k(arch);
}

static int is_fp4_kind(jit__tc_kind_t kind) {
    return kind == JIT_TC_KIND_MXF4 || kind == JIT_TC_KIND_MXF4NVF4;
}

const char *jit__tc_kind_name(jit__tc_kind_t kind) {
    switch (kind) {
    case JIT_TC_KIND_MXF8F6F4:
        return "mxf8f6f4";
    case JIT_TC_KIND_MXF4:
        return "mxf4";
    case JIT_TC_KIND_MXF4NVF4:
        return "mxf4nvf4";
    default:
        return "none";
    }
}

const char *jit__tc_sf_format_name(jit__tc_sf_format_t sf) {
    switch (sf) {
    case JIT_TC_SF_UE4M3:
        return "ue4m3";
    case JIT_TC_SF_UE8M0:
        return "ue8m0";
    case JIT_TC_SF_UE5M3:
        return "ue5m3";
    default:
        return "?";
    }
}

const char *jit__tc_swizzle_name(jit__tc_swizzle_t sw) {
    switch (sw) {
    case JIT_TC_SWIZZLE_NONE:
        return "none";
    case JIT_TC_SWIZZLE_128B_BASE32B:
        return "128B_base32B";
    case JIT_TC_SWIZZLE_128B:
        return "128B";
    case JIT_TC_SWIZZLE_64B:
        return "64B";
    case JIT_TC_SWIZZLE_32B:
        return "32B";
    default:
        return "?";
    }
}

uint32_t jit__tc_swizzle_repeat_bytes(jit__tc_swizzle_t sw) {
    switch (sw) {
    case JIT_TC_SWIZZLE_NONE:
        return 16;
    case JIT_TC_SWIZZLE_128B_BASE32B:
    case JIT_TC_SWIZZLE_128B:
        return 1024;
    case JIT_TC_SWIZZLE_64B:
        return 512;
    case JIT_TC_SWIZZLE_32B:
        return 256;
    default:
        return 0;
    }
}

int jit__tc_format_code(jit__tc_kind_t kind, jit_dtype_t dtype) {
    if (kind == JIT_TC_KIND_MXF8F6F4) {
        switch (dtype) {
        case JIT_DTYPE_E4M3:
            return 0;
        case JIT_DTYPE_E5M2:
            return 1;
        case JIT_DTYPE_E2M1:
            return 5; /* not 1: under this kind 1 is E5M2 */
        default:
            return -1;
        }
    }
    if (is_fp4_kind(kind))
        return dtype == JIT_DTYPE_E2M1 ? 1 : -1;
    return -1;
}

/* Instruction K the arch encodes for a kind, and the two K bits. Returns 0 if illegal. */
static int k_bits(const jit__arch_profile_t *arch, jit__tc_kind_t kind, int k, uint32_t *bit3,
                  uint32_t *bit31) {
    *bit3 = 0;
    *bit31 = 0;
    if (kind == JIT_TC_KIND_MXF8F6F4) {
        if (k == 32)
            return 1;
        if (k == 64 && wide_k(arch)) {
            *bit31 = 1;
            return 1;
        }
        return 0;
    }
    if (k == 64)
        return 1;
    if (k == 96 && has_k96(arch)) {
        *bit31 = 1;
        return 1;
    }
    if (k == 128 && wide_k(arch)) {
        *bit3 = 1;
        return 1;
    }
    return 0;
}

/* Whether K is the arch's widened mode for the kind (sm_107a K=128 FP4, K=64 mxf8f6f4). */
static int is_2x_k(const jit__arch_profile_t *arch, jit__tc_kind_t kind, int k) {
    if (!wide_k(arch))
        return 0;
    return kind == JIT_TC_KIND_MXF8F6F4 ? k == 64 : k == 128;
}

static jit_status_t check_shape(const jit__arch_profile_t *arch, const jit__tc_idesc_params_t *p,
                                jit__diag_t *d) {
    const char *kn = jit__tc_kind_name(p->kind);
    if (p->cta_group != 1 && p->cta_group != 2)
        return jit__fail(d, JIT_INVALID_ARGUMENT, "cta_group must be 1 or 2, got %d", p->cta_group);
    if (p->k == 96) {
        /* The PTX shape table lists K=96 only as 256xNx96 with cta_group::2. */
        if (p->cta_group != 2 || p->m != 256)
            return jit__fail(d, JIT_UNSUPPORTED,
                             "%s K=96 needs M=256 with cta_group::2 (got M=%d, cta_group::%d)", kn,
                             p->m, p->cta_group);
    } else if (is_2x_k(arch, p->kind, p->k)) {
        /* sm_107a 2x K: M=128 only with ::1, M=256 only with ::2 (no M=64, no 2-CTA M=128). */
        int want = p->cta_group == 1 ? 128 : 256;
        if (p->m != want)
            return jit__fail(d, JIT_UNSUPPORTED,
                             "%s K=%d on %s needs M=%d with cta_group::%d (got M=%d)", kn, p->k,
                             arch->name, want, p->cta_group, p->m);
    } else {
        /* Block-scaled M=64 does not exist even at 1x K (docs/hardware-facts.md F9). */
        int ok = p->cta_group == 1 ? p->m == 128 : (p->m == 128 || p->m == 256);
        if (!ok)
            return jit__fail(d, JIT_UNSUPPORTED, "%s K=%d with cta_group::%d takes M=%s (got M=%d)",
                             kn, p->k, p->cta_group, p->cta_group == 1 ? "128" : "128 or 256",
                             p->m);
    }
    int step = p->cta_group == 2 ? 16 : 8;
    if (p->n <= 0 || p->n > 256 || p->n % step != 0)
        return jit__fail(d, JIT_UNSUPPORTED,
                         "instruction N=%d is illegal with cta_group::%d: it must be a multiple "
                         "of %d in [%d, 256]",
                         p->n, p->cta_group, step, step);
    return JIT_OK;
}

static jit_status_t check_scales(const jit__arch_profile_t *arch, const jit__tc_idesc_params_t *p,
                                 jit__diag_t *d) {
    const char *kn = jit__tc_kind_name(p->kind);
    const char *sn = jit__tc_sf_format_name(p->sf);
    if (p->sf_vec != 16 && p->sf_vec != 32)
        return jit__fail(d, JIT_UNSUPPORTED, "scale vector %d: tcgen05 takes 16 or 32", p->sf_vec);
    if (p->sf == JIT_TC_SF_UE5M3 && !arch->has_ue5m3)
        return jit__fail(d, JIT_UNSUPPORTED_ARCH, "ue5m3 scales need sm_107a; %s has no UE5M3",
                         arch->name);
    if (p->kind == JIT_TC_KIND_MXF8F6F4 || p->kind == JIT_TC_KIND_MXF4) {
        if (p->sf != JIT_TC_SF_UE8M0 || p->sf_vec != 32)
            return jit__fail(d, JIT_UNSUPPORTED, "kind::%s takes ue8m0/32 scales only (got %s/%d)",
                             kn, sn, p->sf_vec);
        return JIT_OK;
    }
    if (p->sf != JIT_TC_SF_UE8M0 && p->sf != JIT_TC_SF_UE4M3 && p->sf != JIT_TC_SF_UE5M3)
        return jit__fail(d, JIT_UNSUPPORTED, "unknown scale format %d", (int)p->sf);
    /* block32 with a non-UE8M0 scale is an sm_107a combination (its valid-combination table). */
    if (p->sf_vec == 32 && p->sf != JIT_TC_SF_UE8M0 && !arch->has_ue5m3)
        return jit__fail(d, JIT_UNSUPPORTED, "kind::%s.block32 takes ue8m0 scales on %s (got %s)",
                         kn, arch->name, sn);
    if (p->k % p->sf_vec != 0)
        return jit__fail(d, JIT_UNSUPPORTED, "instruction K=%d is not a whole number of %d-blocks",
                         p->k, p->sf_vec);
    return JIT_OK;
}

jit_status_t jit__tc_idesc(const jit__arch_profile_t *arch, const jit__tc_idesc_params_t *p,
                           uint32_t *out, jit__diag_t *d) {
    if (!arch || !p || !out)
        return jit__fail(d, JIT_INVALID_ARGUMENT, "jit__tc_idesc: NULL argument");
    if (!arch->has_tcgen05)
        return jit__fail(d, JIT_UNSUPPORTED_ARCH, "%s has no tcgen05.mma", arch->name);
    if (p->kind != JIT_TC_KIND_MXF8F6F4 && !is_fp4_kind(p->kind))
        return jit__fail(d, JIT_UNSUPPORTED, "unknown MMA kind %d", (int)p->kind);
    int a_code = jit__tc_format_code(p->kind, p->a);
    int b_code = jit__tc_format_code(p->kind, p->b);
    if (a_code < 0 || b_code < 0)
        return jit__fail(d, JIT_UNSUPPORTED, "kind::%s does not take %s x %s",
                         jit__tc_kind_name(p->kind), jit_dtype_name(p->a), jit_dtype_name(p->b));
    uint32_t bit3, bit31;
    if (!k_bits(arch, p->kind, p->k, &bit3, &bit31))
        return jit__fail(d, JIT_UNSUPPORTED, "kind::%s has no K=%d on %s",
                         jit__tc_kind_name(p->kind), p->k, arch->name);
    jit_status_t st = check_shape(arch, p, d);
    if (st != JIT_OK)
        return st;
    st = check_scales(arch, p, d);
    if (st != JIT_OK)
        return st;

    uint32_t v = 0;
    v |= bit3 << 3;
    v |= (uint32_t)a_code << 7;
    v |= (uint32_t)b_code << 10;
    v |= ((uint32_t)p->n >> 3) << 17;
    v |= (uint32_t)p->sf << 23; /* code 2 (UE5M3) reaches bit 24: sm_107a only, checked above */
    v |= ((uint32_t)p->m >> 7) << 27;
    v |= bit31 << 31;
    *out = v;
    return JIT_OK;
}

void jit__tc_idesc_decode(uint32_t v, jit__tc_kind_t kind, const jit__arch_profile_t *arch,
                          jit__tc_idesc_fields_t *o) {
    int fp4 = is_fp4_kind(kind);
    int wide = arch && wide_k(arch);
    o->sparse = (v >> 2) & 1u;
    o->k_size_hi = (v >> 3) & 1u;
    o->sfb_id = (v >> 4) & 3u;
    o->a_format = (v >> 7) & 7u;
    o->b_format = (v >> 10) & (fp4 ? 3u : 7u);
    o->negate_a = (v >> 13) & 1u;
    o->negate_b = (v >> 14) & 1u;
    o->a_major = (v >> 15) & 1u;
    o->b_major = (v >> 16) & 1u;
    o->n_shr3 = (v >> 17) & 0x3Fu;
    o->scale_format = (v >> 23) & (arch && arch->has_ue5m3 ? 3u : 1u);
    o->m_shr7 = (v >> 27) & 3u;
    o->sfa_id = (v >> 29) & 3u;
    o->k_size_lo = (v >> 31) & 1u;
    o->m = (int)o->m_shr7 << 7;
    o->n = (int)o->n_shr3 << 3;
    o->k = 0;
    if (!arch)
        return;
    unsigned kk = (o->k_size_hi << 1) | o->k_size_lo;
    if (fp4) {
        if (kk == 0)
            o->k = 64;
        else if (kk == 1 && has_k96(arch))
            o->k = 96;
        else if (kk == 2 && wide)
            o->k = 128;
    } else if (kind == JIT_TC_KIND_MXF8F6F4) {
        if (kk == 0)
            o->k = 32;
        else if (kk == 1 && wide)
            o->k = 64;
    }
}

uint32_t jit__tc_idesc_with_sf_ids(uint32_t idesc, uint32_t sfa_tmem_addr, uint32_t sfb_tmem_addr) {
    /* Unsigned operands throughout: a signed >> 30 would copy bit 31 into every bit above the
     * ID and overwrite M, N and the formats. The masks make the result independent of that. */
    uint32_t sfa_id = (sfa_tmem_addr & 0xC0000000u) >> 30;
    uint32_t sfb_id = (sfb_tmem_addr & 0xC0000000u) >> 30;
    idesc &= ~((3u << 29) | (3u << 4));
    return idesc | ((sfa_id & 3u) << 29) | ((sfb_id & 3u) << 4);
}

jit_status_t jit__tc_idesc_with_n(uint32_t idesc, int n, int cta_group, uint32_t *out,
                                  jit__diag_t *d) {
    int step = cta_group == 2 ? 16 : 8;
    if (n == 0)
        return jit__fail(d, JIT_INVALID_SHAPE,
                         "instruction N=0: an empty tile issues no MMA (N=0 is not encodable)");
    if (n < 0 || n > 256 || n % step != 0)
        return jit__fail(d, JIT_INVALID_SHAPE,
                         "instruction N=%d must be a multiple of %d in [%d, 256] with "
                         "cta_group::%d",
                         n, step, step, cta_group);
    *out = (idesc & ~(0x3Fu << 17)) | (((uint32_t)n >> 3) << 17);
    return JIT_OK;
}

int jit__tc_smem_desc_addr_bits(const jit__arch_profile_t *arch) {
    return arch && arch->smem_desc_addr_bits ? arch->smem_desc_addr_bits : 14;
}

uint32_t jit__tc_smem_desc_addr_limit(const jit__arch_profile_t *arch) {
    return 1u << (jit__tc_smem_desc_addr_bits(arch) + 4);
}

static uint64_t addr_mask(int addr_bits) {
    return ((uint64_t)1 << addr_bits) - 1u;
}

uint64_t jit__tc_smem_desc(int addr_bits, uint32_t addr, uint32_t lbo, uint32_t sbo,
                           jit__tc_swizzle_t swizzle, uint32_t base_offset) {
    uint64_t v = 0;
    v |= (uint64_t)(addr >> 4) & addr_mask(addr_bits);
    v |= (uint64_t)((lbo & 0x3FFFFu) >> 4) << 16;
    v |= (uint64_t)((sbo & 0x3FFFFu) >> 4) << 32;
    v |= (uint64_t)1 << 46;
    v |= (uint64_t)(base_offset & 7u) << 49;
    v |= (uint64_t)((uint32_t)swizzle & 7u) << 61;
    return v;
}

jit_status_t jit__tc_smem_desc_check(int addr_bits, uint32_t addr, uint32_t lbo, uint32_t sbo,
                                     jit__tc_swizzle_t swizzle, uint32_t base_offset,
                                     jit__diag_t *d) {
    uint32_t repeat = jit__tc_swizzle_repeat_bytes(swizzle);
    if (repeat == 0)
        return jit__fail(d, JIT_INTERNAL, "SMEM descriptor: invalid swizzle code %d", (int)swizzle);
    if (addr_bits < 14 || addr_bits > 15)
        return jit__fail(d, JIT_INTERNAL, "SMEM descriptor: a %d-bit start address field",
                         addr_bits);
    if ((addr | lbo | sbo) & 15u)
        return jit__fail(d, JIT_INTERNAL,
                         "SMEM descriptor: address 0x%x, LBO %u and SBO %u must be 16-byte "
                         "aligned",
                         addr, lbo, sbo);
    if ((uint64_t)addr >> (addr_bits + 4) != 0)
        return jit__fail(d, JIT_INTERNAL,
                         "SMEM descriptor: absolute address 0x%x is at or above %u KiB, which "
                         "the %d-bit start address field cannot hold",
                         addr, (1u << (addr_bits + 4)) / 1024u, addr_bits);
    if (lbo >= 0x40000u || sbo >= 0x40000u)
        return jit__fail(d, JIT_INTERNAL,
                         "SMEM descriptor: LBO %u or SBO %u is at or above 256 KiB, which the "
                         "14-bit fields cannot hold",
                         lbo, sbo);
    if (base_offset > 7)
        return jit__fail(d, JIT_INTERNAL, "SMEM descriptor: base offset %u > 7", base_offset);
    if (base_offset == 0 && addr % repeat != 0)
        return jit__fail(d, JIT_INTERNAL,
                         "SMEM descriptor: %s-swizzled tile at 0x%x is not %u-byte aligned and "
                         "has base offset 0",
                         jit__tc_swizzle_name(swizzle), addr, repeat);
    return JIT_OK;
}

uint64_t jit__tc_smem_desc_advance(int addr_bits, uint64_t desc, uint32_t bytes) {
    uint64_t start = (desc + (uint64_t)(bytes >> 4)) & addr_mask(addr_bits);
    return (desc & ~addr_mask(addr_bits)) | start;
}

void jit__tc_smem_desc_decode(int addr_bits, uint64_t v, jit__tc_smem_desc_fields_t *o) {
    o->start_addr = (uint32_t)(v & addr_mask(addr_bits)) << 4;
    o->lbo = (uint32_t)((v >> 16) & 0x3FFFu) << 4;
    o->sbo = (uint32_t)((v >> 32) & 0x3FFFu) << 4;
    o->version = (unsigned)((v >> 46) & 7u);
    o->base_offset = (unsigned)((v >> 49) & 7u);
    o->lbo_mode = (unsigned)((v >> 52) & 1u);
    o->swizzle = (unsigned)((v >> 61) & 7u);
}
