/* Functional model of kernel_src/device/loads.cuh: the predicated read-only load in host
 * memory (nothing is read where the predicate is false, as on the GPU). */
#ifndef JITGEMM_DEVICE_LOADS_CUH
#define JITGEMM_DEVICE_LOADS_CUH

#include "device/common.cuh"

static inline float ld_nc_f32_if(bool pred, const float *p) {
    return pred ? *p : 0.0f;
}

#endif /* JITGEMM_DEVICE_LOADS_CUH */
