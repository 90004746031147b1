/*
 * Encoders for the two descriptors a block-scaled tcgen05.mma reads: the 32-bit instruction
 * descriptor (idesc) and the 64-bit shared-memory matrix descriptor. Bit maps follow
 * docs/hardware-facts.md F7-F11. These are pure functions shared by the host
 * (planner, tests, `inspect`) and the generator, which either emits the resulting constants or
 * emits device code that performs the same masked arithmetic for the runtime parts (SF IDs, N).
 *
 * Format codes are looked up per kind, never per dtype alone: E2M1 is 1 under the FP4 kinds and
 * 5 under mxf8f6f4 (where 1 means E5M2). Legality (M, N, K per kind, cta_group and arch) is
 * checked before any bit is written, so an illegal combination is an error, never a descriptor.
 */
#ifndef JIT_TCGEN05_DESC_H
#define JIT_TCGEN05_DESC_H

#include <stdint.h>

#include "arch.h"
#include "diag.h"
#include "jitgemm.h"

typedef enum jit__tc_kind {
    JIT_TC_KIND_NONE = 0,
    JIT_TC_KIND_MXF8F6F4 = 1, /* FP8 x FP8, FP8 x FP4 (mixed); UE8M0 / 32 */
    JIT_TC_KIND_MXF4 = 2,     /* FP4 x FP4, UE8M0 / 32 */
    JIT_TC_KIND_MXF4NVF4 = 3, /* FP4 x FP4, block16 or block32; UE8M0, UE4M3, UE5M3 (sm_107a) */
} jit__tc_kind_t;

/* Scale-format codes as the idesc writes them (bit 23, or bits 23-24 on sm_107a). */
typedef enum jit__tc_sf_format {
    JIT_TC_SF_UE4M3 = 0,
    JIT_TC_SF_UE8M0 = 1,
    JIT_TC_SF_UE5M3 = 2,
} jit__tc_sf_format_t;

/* SMEM descriptor layout codes (bits 61-63). */
typedef enum jit__tc_swizzle {
    JIT_TC_SWIZZLE_NONE = 0,
    JIT_TC_SWIZZLE_128B_BASE32B = 1,
    JIT_TC_SWIZZLE_128B = 2,
    JIT_TC_SWIZZLE_64B = 4,
    JIT_TC_SWIZZLE_32B = 6,
} jit__tc_swizzle_t;

/* "mxf8f6f4", "mxf4", "mxf4nvf4"; "none" otherwise. */
const char *jit__tc_kind_name(jit__tc_kind_t kind);
/* "ue4m3", "ue8m0", "ue5m3"; "?" otherwise. */
const char *jit__tc_sf_format_name(jit__tc_sf_format_t sf);
/* "none", "128B_base32B", "128B", "64B", "32B"; "?" otherwise. */
const char *jit__tc_swizzle_name(jit__tc_swizzle_t sw);
/* Bytes after which the swizzle pattern repeats (and to which a tile base must be aligned for
 * base offset 0): 1024, 512, 256; 16 for no swizzle; 0 for an invalid code. */
uint32_t jit__tc_swizzle_repeat_bytes(jit__tc_swizzle_t sw);

/* Format code of `dtype` under `kind` (docs/hardware-facts.md F8), or -1 if the kind does not
 * take it. */
int jit__tc_format_code(jit__tc_kind_t kind, jit_dtype_t dtype);

/* Everything an idesc encodes, in natural units. SF IDs are 0 here; they are patched per
 * instruction from the scale TMEM addresses (jit__tc_idesc_with_sf_ids). */
typedef struct jit__tc_idesc_params {
    jit__tc_kind_t kind;
    jit_dtype_t a, b;       /* E4M3, E5M2 or E2M1 */
    jit__tc_sf_format_t sf; /* scale format */
    int sf_vec;             /* 16 or 32 elements per scale */
    int m, n, k;            /* instruction shape (M over the CTA pair for cta_group 2) */
    int cta_group;          /* 1 or 2 */
} jit__tc_idesc_params_t;

/* Check legality on `arch` (kind vs dtypes, scale format and vector, K per kind and arch,
 * M and N per cta_group and arch; docs/hardware-facts.md F9) and encode. On failure *out is
 * untouched. */
jit_status_t jit__tc_idesc(const jit__arch_profile_t *arch, const jit__tc_idesc_params_t *p,
                           uint32_t *out, jit__diag_t *d);

/* The idesc fields by name; `k` is decoded from bits 3/31 given kind and arch (0 if the bits
 * name no K that arch has). */
typedef struct jit__tc_idesc_fields {
    unsigned sparse;       /* bit 2 */
    unsigned k_size_hi;    /* bit 3 (sm_107a FP4 kinds) */
    unsigned sfb_id;       /* bits 4-5 */
    unsigned a_format;     /* bits 7-9 */
    unsigned b_format;     /* bits 10-12 (10-11 under the FP4 kinds) */
    unsigned negate_a;     /* bit 13 */
    unsigned negate_b;     /* bit 14 */
    unsigned a_major;      /* bit 15 */
    unsigned b_major;      /* bit 16 */
    unsigned n_shr3;       /* bits 17-22 */
    unsigned scale_format; /* bit 23, or bits 23-24 on sm_107a */
    unsigned m_shr7;       /* bits 27-28 */
    unsigned sfa_id;       /* bits 29-30 */
    unsigned k_size_lo;    /* bit 31 */
    int m, n, k;
} jit__tc_idesc_fields_t;

void jit__tc_idesc_decode(uint32_t idesc, jit__tc_kind_t kind, const jit__arch_profile_t *arch,
                          jit__tc_idesc_fields_t *out);

/* Patch SFA/SFB IDs from bits 31:30 of the scale TMEM addresses. Unsigned masked shifts only:
 * bit 31 of an address must land in the ID field and nowhere else. */
uint32_t jit__tc_idesc_with_sf_ids(uint32_t idesc, uint32_t sfa_tmem_addr, uint32_t sfb_tmem_addr);

/* Replace N (runtime N, e.g. a partial tile). N = 0 is rejected (no MMA is issued for an empty
 * tile); N must be a multiple of 8 (16 with cta_group 2) and at most 256. */
jit_status_t jit__tc_idesc_with_n(uint32_t idesc, int n, int cta_group, uint32_t *out,
                                  jit__diag_t *d);

/* TMEM address: lane in bits 31:16, column in 15:0. */
static inline uint32_t jit__tc_tmem_addr(uint32_t lane, uint32_t column) {
    return (lane << 16) | (column & 0xFFFFu);
}

/* Width of the descriptor's start-address field on `arch` (14 if the profile gives none), and
 * the first absolute shared::cta address it cannot hold: 1 << (bits + 4). */
int jit__tc_smem_desc_addr_bits(const jit__arch_profile_t *arch);
uint32_t jit__tc_smem_desc_addr_limit(const jit__arch_profile_t *arch);

/* 64-bit SMEM matrix descriptor (docs/hardware-facts.md F11): start (addr >> 4) in bits 0..addr_bits-1 (14 bits
 * on sm_100a/103a, 15 on sm_107a), LBO >> 4 at 16-29, SBO >> 4 at 32-45, version 1 at 46-48,
 * base offset at 49-51, swizzle at 61-63. `addr` is the ABSOLUTE shared::cta address (dynamic
 * shared memory begins after the arch's reserved block, not at 0). Pure encoding: bits above
 * the field are dropped; jit__tc_smem_desc_check says whether the inputs are representable. */
uint64_t jit__tc_smem_desc(int addr_bits, uint32_t addr, uint32_t lbo, uint32_t sbo,
                           jit__tc_swizzle_t swizzle, uint32_t base_offset);
/* 16-byte alignment of addr/LBO/SBO, the absolute addr below 1 << (addr_bits + 4) and LBO/SBO
 * below 256 KiB (their 14-bit fields), a valid swizzle code, base offset < 8, and, when base
 * offset is 0, addr aligned to the swizzle repeat. */
jit_status_t jit__tc_smem_desc_check(int addr_bits, uint32_t addr, uint32_t lbo, uint32_t sbo,
                                     jit__tc_swizzle_t swizzle, uint32_t base_offset,
                                     jit__diag_t *d);
/* Move the start address by `bytes` (a K step inside a swizzle atom); LBO, SBO, swizzle kept. */
uint64_t jit__tc_smem_desc_advance(int addr_bits, uint64_t desc, uint32_t bytes);

/* Field decode, for inspect and tests. */
typedef struct jit__tc_smem_desc_fields {
    uint32_t start_addr; /* bytes */
    uint32_t lbo, sbo;   /* bytes */
    unsigned version, base_offset, lbo_mode, swizzle;
} jit__tc_smem_desc_fields_t;
void jit__tc_smem_desc_decode(int addr_bits, uint64_t desc, jit__tc_smem_desc_fields_t *out);

#endif
