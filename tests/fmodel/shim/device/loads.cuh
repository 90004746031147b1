/* Functional model of kernel_src/device/loads.cuh: the predicated read-only load in host
 * memory (nothing is read where the predicate is false, as on the GPU) and the 4-byte
 * cp.async with its mbarrier arrival. */
#ifndef JITGEMM_DEVICE_LOADS_CUH
#define JITGEMM_DEVICE_LOADS_CUH

#include "device/common.cuh"

static inline float ld_nc_f32_if(bool pred, const float *p) {
    return pred ? *p : 0.0f;
}

/* cp.async of 4 bytes, zero-filled where `pred` is false: the model writes at issue (nothing
 * is read where `pred` is false, as on the GPU). */
static inline void cp_async_4_zfill(u32 dst, const void *src, bool pred, FM_SITE_PARAMS) {
    u32 v = 0;
    if (pred)
        memcpy(&v, src, 4);
    fm::st_shared_b32(dst, v, FM_SITE_ARGS);
}

/* The arrival comes once this thread's copies have landed: at once in the model, where they
 * land at issue. */
static inline void cp_async_mbar_arrive_noinc(u32 bar, FM_SITE_PARAMS) {
    fm::mbar_arrive(bar, FM_SITE_ARGS);
}

static inline float ld_shared_f32(u32 addr, FM_SITE_PARAMS) {
    const u32 bits = fm::ld_shared_b32(addr, FM_SITE_ARGS);
    float v;
    memcpy(&v, &bits, 4);
    return v;
}

#endif /* JITGEMM_DEVICE_LOADS_CUH */
