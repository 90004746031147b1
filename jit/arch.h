/*
 * Arch profiles: one row per target, read by the planner and the generators, so nothing else
 * needs `if (arch == ...)`. Figures and their sources: docs/hardware-facts.md (F9, F12, F13);
 * where a figure is a lead rather than a fact the table says so.
 */
#ifndef JIT_ARCH_H
#define JIT_ARCH_H

#include <stdint.h>

typedef enum jit__arch_family {
    JIT_FAMILY_HOPPER = 1,
    JIT_FAMILY_BLACKWELL = 2,
    JIT_FAMILY_RUBIN = 3,
    JIT_FAMILY_CONSUMER_BLACKWELL = 4,
} jit__arch_family_t;

typedef struct jit__arch_profile {
    const char *name; /* "sm_107a" */
    int sm;           /* 107: compute capability times ten */
    jit__arch_family_t family;
    int default_sm_count;  /* used when no device is present and none is given */
    uint32_t smem_per_sm;  /* bytes */
    uint32_t smem_per_cta; /* opt-in dynamic shared memory per CTA, bytes */
    /* Shared memory the system reserves at the start of every CTA's window
     * (CU_DEVICE_ATTRIBUTE_RESERVED_SHARED_MEMORY_PER_BLOCK): dynamic shared memory begins at
     * this shared::cta address, not at 0, so absolute addresses are offset + this. */
    uint32_t smem_reserved_per_cta;
    /* Width of the start-address field of a tcgen05 shared-memory descriptor, which holds
     * (addr >> 4): 14 bits on sm_100a/103a, 15 on sm_107a (the CUTLASS DSL's sm_107a output
     * masks 0x7FC0 where its sm_100a output masks 0x3FC0). 0 where there is no tcgen05. */
    int smem_desc_addr_bits;
    uint32_t tmem_columns; /* 0: no tensor memory */
    int has_tcgen05;       /* block-scaled tcgen05.mma */
    int has_wgmma;
    int instr_k_bytes_fp4;      /* bytes along K one block-scaled FP4 MMA reads; 0 if none */
    int instr_k_bytes_fp8;      /* same for FP8 and mixed (kind::mxf8f6f4) */
    int packed_fp4_in_mixed;    /* mxf8f6f4 reads packed FP4 from SMEM */
    int has_ue5m3;              /* UE5M3 scale factors */
    uint32_t cp_async_cg_limit; /* cp.async.cg destinations must stay below this; 0: none */
    const char *ptx_version;    /* .version the generated PTX needs at least, e.g. "8.8" */
    /* Compile targets. `native` is what a toolchain that lists this SM builds; with one that
     * does not, the source is assembled for `check_target` as a check and the cubin is built
     * for `fallback_target` (NULL: no fallback, the compile fails). */
    const char *native_target;
    const char *fallback_target;
    const char *check_target;
} jit__arch_profile_t;

/* NULL if unknown. Accepts "sm_90a" and "90a"-style names. */
const jit__arch_profile_t *jit__arch_find(const char *name);
/* The profile for a device of compute capability major.minor, or NULL. */
const jit__arch_profile_t *jit__arch_for_cc(int major, int minor);
/* All profiles, for listing; *count receives the number. */
const jit__arch_profile_t *jit__arch_all(int *count);

#endif
