/*
 * The tcgen05 kernel's only parameter, passed by value as a __grid_constant__ (the tensor maps
 * must stay in the param space for TMA), and the scheduler workspace it points to. The host
 * fills the same layout: jit__tc_params_t in kernel_src/tcgen05/abi.h. The generated
 * source adds static_asserts with the host's offsets, so a drift fails the compile.
 */
#ifndef JITGEMM_TCGEN05_PARAMS_CUH
#define JITGEMM_TCGEN05_PARAMS_CUH

#include "device/common.cuh"

/* a[1], b[1]: tensor maps for the fallback cluster shape. One field per line. */
struct jitgemm_tc_params {
    jit_tmap a[2];
    jit_tmap b[2];
    jit_tmap sfa;
    jit_tmap sfb;
    jit_tmap d;
    const void *residual;
    void *workspace;
    i64 m;
    i64 ld_residual;
    float alpha;
    u32 token_slots;
    u32 pad_[6];
};

/* The zeroed global workspace every CTA of a launch shares (jit__tc_workspace_bytes sizes it). */
struct TcWorkspace {
    u32 work_counter; /* next work ID */
    u32 registration; /* fallback clusters registered so far */
    u32 exit_count;   /* CTAs finished; the last one resets the workspace */
    u32 pad_;
    u64 tokens[1]; /* token_slots entries: one per fallback cluster */
};

#endif /* JITGEMM_TCGEN05_PARAMS_CUH */
