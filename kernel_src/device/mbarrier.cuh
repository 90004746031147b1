/*
 * mbarrier wrappers shared by sm_90 and sm_100+ kernels: the spellings below are valid from
 * PTX 8.0 / sm_90 on and mean the same on Blackwell and Rubin, so one copy serves every family.
 * Addresses are 32-bit shared-window addresses (shared::cta, or shared::cluster from
 * cluster::mapa). Loops inside asm use `%=` labels so that every inlined copy gets its own.
 */
#ifndef JITGEMM_DEVICE_MBARRIER_CUH
#define JITGEMM_DEVICE_MBARRIER_CUH

#include "device/common.cuh"

namespace mbar {

static __device__ __forceinline__ void init(u32 bar, u32 count) {
    asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;" ::"r"(bar), "r"(count) : "memory");
}

/* Makes the barrier initialisations visible to the cluster (and to the async proxy). */
static __device__ __forceinline__ void fence_init() {
    asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
}

/* Spin until phase `parity` of the barrier has completed. The CTA-scope form serves barriers
 * that only this CTA and the async proxy (TMA, tcgen05.commit) signal. */
static __device__ __forceinline__ void wait(u32 bar, u32 parity) {
    asm volatile("{\n\t.reg .pred P;\n\tJG_WAIT_%=:\n\t"
                 "mbarrier.try_wait.parity.shared::cta.b64 P, [%0], %1;\n\t"
                 "@!P bra JG_WAIT_%=;\n\t}" ::"r"(bar),
                 "r"(parity)
                 : "memory");
}

/* The same with cluster-scope acquire, for barriers that other CTAs arrive on. */
static __device__ __forceinline__ void wait_cluster(u32 bar, u32 parity) {
    asm volatile("{\n\t.reg .pred P;\n\tJG_WAITC_%=:\n\t"
                 "mbarrier.try_wait.parity.acquire.cluster.shared::cta.b64 P, [%0], %1;\n\t"
                 "@!P bra JG_WAITC_%=;\n\t}" ::"r"(bar),
                 "r"(parity)
                 : "memory");
}

/* Arrive on a barrier in another CTA of the cluster (address from cluster::mapa). */
static __device__ __forceinline__ void arrive_remote(u32 cluster_bar) {
    asm volatile("mbarrier.arrive.release.cluster.shared::cluster.b64 _, [%0];" ::"r"(
                     cluster_bar)
                 : "memory");
}

/* Arrive once and expect `bytes` more transaction bytes in the current phase. */
static __device__ __forceinline__ void expect_arrive(u32 bar, u32 bytes) {
    asm volatile("mbarrier.arrive.expect_tx.release.cta.shared::cta.b64 _, [%0], %1;" ::"r"(bar),
                 "r"(bytes)
                 : "memory");
}

static __device__ __forceinline__ void expect_arrive_remote(u32 cluster_bar, u32 bytes) {
    asm volatile(
        "mbarrier.arrive.expect_tx.release.cluster.shared::cluster.b64 _, [%0], %1;" ::"r"(
            cluster_bar),
        "r"(bytes)
        : "memory");
}

/* Store two words into another CTA's shared memory and complete 8 transaction bytes on its
 * barrier: the data and the signal travel together, so no fence is needed. */
static __device__ __forceinline__ void st_async_v2(u32 cluster_addr, u32 x, u32 y,
                                                   u32 cluster_bar) {
    asm volatile("st.async.shared::cluster.mbarrier::complete_tx::bytes.v2.b32 [%0], {%1, %2}, "
                 "[%3];" ::"r"(cluster_addr),
                 "r"(x), "r"(y), "r"(cluster_bar)
                 : "memory");
}

} // namespace mbar

#endif /* JITGEMM_DEVICE_MBARRIER_CUH */
