/* Functional model of kernel_src/device/mbarrier.cuh: same names and signatures, each wrapper
 * calls the model runtime (tests/fmodel/fm_runtime.cpp). */
#ifndef JITGEMM_DEVICE_MBARRIER_CUH
#define JITGEMM_DEVICE_MBARRIER_CUH

#include "device/common.cuh"

namespace mbar {

static inline void init(u32 bar, u32 count, FM_SITE_PARAMS) {
    fm::mbar_init(bar, count, FM_SITE_ARGS);
}
static inline void fence_init(FM_SITE_PARAMS) {
    fm::mbar_fence_init(FM_SITE_ARGS);
}
static inline void wait(u32 bar, u32 parity, FM_SITE_PARAMS) {
    fm::mbar_wait(bar, parity, FM_SITE_ARGS);
}
static inline void wait_cluster(u32 bar, u32 parity, FM_SITE_PARAMS) {
    fm::mbar_wait(bar, parity, FM_SITE_ARGS);
}
static inline void arrive_remote(u32 cluster_bar, FM_SITE_PARAMS) {
    fm::mbar_arrive(cluster_bar, FM_SITE_ARGS);
}
static inline void expect_arrive(u32 bar, u32 bytes, FM_SITE_PARAMS) {
    fm::mbar_expect_arrive(bar, bytes, FM_SITE_ARGS);
}
static inline void expect_arrive_remote(u32 cluster_bar, u32 bytes, FM_SITE_PARAMS) {
    fm::mbar_expect_arrive(cluster_bar, bytes, FM_SITE_ARGS);
}
static inline void st_async_v2(u32 cluster_addr, u32 x, u32 y, u32 cluster_bar, FM_SITE_PARAMS) {
    fm::st_async_v2(cluster_addr, x, y, cluster_bar, FM_SITE_ARGS);
}

} // namespace mbar

#endif
