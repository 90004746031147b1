/*
 * The arch profile table. Sources, in docs/hardware-facts.md: F12 (TMEM), F13 (SMEM, the
 * 248 KiB cp.async.cg limit), F9 (instruction K), F4 (packed FP4), F2 (UE5M3), F16 (PTX
 * versions), F15 (sm_100f cubins on sm_107). Default SM counts matter only when no device is
 * present and none is given: they are shipping parts' counts (H100/H200 132, B200 148, B300 148
 * as reported, RTX 5090 170; every part's count is in jit/arch_parts.c, with its source in
 * docs/plan.md); sm_107a's is a placeholder, since no Rubin part's count is public.
 */
#include "arch.h"

#include <string.h>

static const jit__arch_profile_t k_profiles[] = {
    {
        .name = "sm_90a",
        .sm = 90,
        .family = JIT_FAMILY_HOPPER,
        .default_sm_count = 132,
        .smem_per_sm = 228 * 1024,
        .smem_per_cta = 232448,
        .smem_reserved_per_cta = 1024,
        .has_wgmma = 1,
        .ptx_version = "8.0",
        .native_target = "sm_90a",
    },
    {
        .name = "sm_100a",
        .sm = 100,
        .family = JIT_FAMILY_BLACKWELL,
        .default_sm_count = 148,
        .smem_per_sm = 228 * 1024,
        .smem_per_cta = 232448,
        .smem_reserved_per_cta = 1024,
        .tmem_columns = 512,
        .has_tcgen05 = 1,
        .smem_desc_addr_bits = 14, /* addresses below 256 KiB */
        .instr_k_bytes_fp4 = 32,   /* K=64 FP4 */
        .instr_k_bytes_fp8 = 32,   /* K=32 FP8; unpacked FP4 in mixed */
        .ptx_version = "8.7",
        .native_target = "sm_100a",
    },
    {
        /* sm_103a also has a K=96 FP4 mode (48 bytes, circular descriptors); the planner uses
         * the sm_100a modes, which sm_103a keeps. */
        .name = "sm_103a",
        .sm = 103,
        .family = JIT_FAMILY_BLACKWELL,
        .default_sm_count = 148,
        .smem_per_sm = 228 * 1024,
        .smem_per_cta = 232448,
        .smem_reserved_per_cta = 1024,
        .tmem_columns = 512,
        .has_tcgen05 = 1,
        .smem_desc_addr_bits = 14, /* addresses below 256 KiB */
        .instr_k_bytes_fp4 = 32,
        .instr_k_bytes_fp8 = 32,
        .ptx_version = "8.8",
        .native_target = "sm_103a",
    },
    {
        .name = "sm_107a",
        .sm = 107,
        .family = JIT_FAMILY_RUBIN,
        .default_sm_count = 148,
        .smem_per_sm = 328 * 1024,
        .smem_per_cta = 334848,
        .smem_reserved_per_cta = 1024,
        .tmem_columns = 576,
        .has_tcgen05 = 1,
        .smem_desc_addr_bits = 15, /* below 512 KiB: all of its 328 KiB */
        .instr_k_bytes_fp4 = 64,   /* K=128 FP4, idesc bit 3 */
        .instr_k_bytes_fp8 = 64,   /* K=64 FP8 and mixed, idesc bit 31 */
        .packed_fp4_in_mixed = 1,
        .has_ue5m3 = 1,
        .cp_async_cg_limit = 248 * 1024,
        .ptx_version = "9.4",
        .native_target = "sm_107a",
        /* FlashInfer states that sm_100f family cubins run on sm_107 devices. */
        .fallback_target = "sm_100f",
        .check_target = "sm_100a",
    },
    {
        .name = "sm_120a",
        .sm = 120,
        .family = JIT_FAMILY_CONSUMER_BLACKWELL,
        .default_sm_count = 170,
        .smem_per_sm = 100 * 1024,
        .smem_per_cta = 101376,
        .smem_reserved_per_cta = 1024,
        .ptx_version = "8.7",
        .native_target = "sm_120a",
    },
};

#define N_PROFILES ((int)(sizeof(k_profiles) / sizeof(k_profiles[0])))

const jit__arch_profile_t *jit__arch_find(const char *name) {
    if (!name)
        return NULL;
    if (strncmp(name, "sm_", 3) == 0)
        name += 3;
    for (int i = 0; i < N_PROFILES; i++)
        if (strcmp(k_profiles[i].name + 3, name) == 0)
            return &k_profiles[i];
    return NULL;
}

const jit__arch_profile_t *jit__arch_for_cc(int major, int minor) {
    int sm = major * 10 + minor;
    for (int i = 0; i < N_PROFILES; i++)
        if (k_profiles[i].sm == sm)
            return &k_profiles[i];
    return NULL;
}

const jit__arch_profile_t *jit__arch_all(int *count) {
    *count = N_PROFILES;
    return k_profiles;
}
