/* Functional model of kernel_src/device/cluster.cuh. */
#ifndef JITGEMM_DEVICE_CLUSTER_CUH
#define JITGEMM_DEVICE_CLUSTER_CUH

#include "device/common.cuh"

static inline u32 smem_addr(const void *p, FM_SITE_PARAMS) {
    return fm::smem_addr(p, FM_SITE_ARGS);
}

[[noreturn]] static inline void device_trap(FM_SITE_PARAMS) {
    fm::trap(FM_SITE_ARGS);
}

namespace cluster {

static inline u32 ctarank() {
    return fm::cluster_reg(0);
}
static inline u32 ctaid_x() {
    return fm::cluster_reg(1);
}
static inline u32 ctaid_y() {
    return fm::cluster_reg(2);
}
static inline u32 nctaid_x() {
    return fm::cluster_reg(3);
}
static inline u32 nctaid_y() {
    return fm::cluster_reg(4);
}
static inline u32 mapa(u32 addr, u32 rank, FM_SITE_PARAMS) {
    return fm::mapa(addr, rank, FM_SITE_ARGS);
}
static inline void arrive(FM_SITE_PARAMS) {
    fm::cluster_arrive(FM_SITE_ARGS);
}
static inline void wait(FM_SITE_PARAMS) {
    fm::cluster_wait(FM_SITE_ARGS);
}

} // namespace cluster

namespace warp_ops {

static inline u32 elect_one(FM_SITE_PARAMS) {
    return fm::warp_collective(fm::WOP_ELECT, 0, FM_SITE_ARGS);
}
static inline void sync(FM_SITE_PARAMS) {
    fm::warp_collective(fm::WOP_SYNC, 0, FM_SITE_ARGS);
}
static inline u32 ballot(u32 pred, FM_SITE_PARAMS) {
    return fm::warp_collective(fm::WOP_BALLOT, pred, FM_SITE_ARGS);
}
static inline u32 shfl0(u32 v, FM_SITE_PARAMS) {
    return fm::warp_collective(fm::WOP_SHFL0, v, FM_SITE_ARGS);
}
static inline void nanosleep(u32 ns, FM_SITE_PARAMS) {
    (void)ns;
    fm::maybe_yield(FM_SITE_ARGS);
}

} // namespace warp_ops

namespace gmem {

static inline u32 atom_add_relaxed(u32 *p, u32 v, FM_SITE_PARAMS) {
    return fm::atom_add(p, v, FM_SITE_ARGS);
}
static inline u32 atom_add_acq_rel(u32 *p, u32 v, FM_SITE_PARAMS) {
    return fm::atom_add(p, v, FM_SITE_ARGS);
}
static inline u64 ld_relaxed_u64(const u64 *p, FM_SITE_PARAMS) {
    return fm::ld_relaxed((const uint64_t *)p, FM_SITE_ARGS);
}
static inline void st_relaxed_u64(u64 *p, u64 v, FM_SITE_PARAMS) {
    fm::st_relaxed((uint64_t *)p, v, FM_SITE_ARGS);
}

} // namespace gmem

#endif
