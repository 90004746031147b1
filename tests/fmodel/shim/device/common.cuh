/*
 * Functional model: the CUDA keywords and built-in variables as host C++, then the real
 * kernel_src/device/common.cuh (types, jit_tmap, ceil_div) unchanged. See docs/blackwell-rubin.md,
 * "Functional model".
 */
#ifndef JITGEMM_FMODEL_SHIM_COMMON_CUH
#define JITGEMM_FMODEL_SHIM_COMMON_CUH

#include <string.h>

#include "../../fm_api.h"

#define __device__
#define __host__
#define __global__
#define __forceinline__ inline
#define __launch_bounds__(...)
#define __grid_constant__
#define __shared__
#define __align__(n) alignas(n)

#define threadIdx (::fm::thread_idx())
#define blockIdx (::fm::block_idx())
#define gridDim (::fm::grid_dim())
#define blockDim (::fm::block_dim())

static inline unsigned __float_as_uint(float f) {
    unsigned u;
    memcpy(&u, &f, 4);
    return u;
}

#include "../../../../kernel_src/device/common.cuh"

#endif
