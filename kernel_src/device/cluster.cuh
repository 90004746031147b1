/*
 * Cluster, warp and thread primitives valid from sm_90 on, with the same meaning on sm_100+:
 * the cluster's special registers, cluster::mapa and the cluster barrier, elect/ballot/shuffle,
 * and the global-memory atomics and relaxed accesses a persistent scheduler needs.
 */
#ifndef JITGEMM_DEVICE_CLUSTER_CUH
#define JITGEMM_DEVICE_CLUSTER_CUH

#include "device/common.cuh"

/* 32-bit shared::cta address of a generic pointer into shared memory. */
static __device__ __forceinline__ u32 smem_addr(const void *p) {
    return (u32)__cvta_generic_to_shared(p);
}

/* Abort the grid: used only for a broken launch invariant. */
static __device__ __forceinline__ void device_trap() {
    asm volatile("trap;");
}

/* Cluster special registers: the shape of the cluster this CTA actually runs in, which in a
 * mixed-cluster launch is either the preferred or the fallback shape. */
namespace cluster {

static __device__ __forceinline__ u32 ctarank() {
    u32 r;
    asm volatile("mov.u32 %0, %%cluster_ctarank;" : "=r"(r));
    return r;
}
static __device__ __forceinline__ u32 ctaid_x() {
    u32 r;
    asm volatile("mov.u32 %0, %%cluster_ctaid.x;" : "=r"(r));
    return r;
}
static __device__ __forceinline__ u32 ctaid_y() {
    u32 r;
    asm volatile("mov.u32 %0, %%cluster_ctaid.y;" : "=r"(r));
    return r;
}
static __device__ __forceinline__ u32 nctaid_x() {
    u32 r;
    asm volatile("mov.u32 %0, %%cluster_nctaid.x;" : "=r"(r));
    return r;
}
static __device__ __forceinline__ u32 nctaid_y() {
    u32 r;
    asm volatile("mov.u32 %0, %%cluster_nctaid.y;" : "=r"(r));
    return r;
}

/* The shared::cluster address of `addr` (a local shared::cta address) in CTA `rank`. */
static __device__ __forceinline__ u32 mapa(u32 addr, u32 rank) {
    u32 r;
    asm volatile("mapa.shared::cluster.u32 %0, %1, %2;" : "=r"(r) : "r"(addr), "r"(rank));
    return r;
}

static __device__ __forceinline__ void arrive() {
    asm volatile("barrier.cluster.arrive.release.aligned;" ::: "memory");
}
static __device__ __forceinline__ void wait() {
    asm volatile("barrier.cluster.wait.acquire.aligned;" ::: "memory");
}

} // namespace cluster

namespace warp_ops {

/* 1 in exactly one active lane of the warp (elect.sync, sm_90+). */
static __device__ __forceinline__ u32 elect_one() {
    u32 r;
    asm volatile("{\n\t.reg .pred P;\n\telect.sync _|P, 0xffffffff;\n\t"
                 "selp.u32 %0, 1, 0, P;\n\t}"
                 : "=r"(r));
    return r;
}

static __device__ __forceinline__ void sync() {
    asm volatile("bar.warp.sync 0xffffffff;" ::: "memory");
}

static __device__ __forceinline__ u32 ballot(u32 pred) {
    u32 r;
    asm volatile("{\n\t.reg .pred P;\n\tsetp.ne.u32 P, %1, 0;\n\t"
                 "vote.sync.ballot.b32 %0, P, 0xffffffff;\n\t}"
                 : "=r"(r)
                 : "r"(pred));
    return r;
}

/* Lane 0's value in every lane. */
static __device__ __forceinline__ u32 shfl0(u32 v) {
    u32 r;
    asm volatile("shfl.sync.idx.b32 %0, %1, 0, 0x1f, 0xffffffff;" : "=r"(r) : "r"(v));
    return r;
}

static __device__ __forceinline__ void nanosleep(u32 ns) {
    asm volatile("nanosleep.u32 %0;" ::"r"(ns));
}

} // namespace warp_ops

namespace gmem {

/* Work counter and registration counter: relaxed, the value is all that is shared. */
static __device__ __forceinline__ u32 atom_add_relaxed(u32 *p, u32 v) {
    u32 old;
    asm volatile("atom.relaxed.gpu.global.add.u32 %0, [%1], %2;"
                 : "=r"(old)
                 : "l"(p), "r"(v)
                 : "memory");
    return old;
}

/* Exit counter: the last CTA out must see every other CTA's workspace use. */
static __device__ __forceinline__ u32 atom_add_acq_rel(u32 *p, u32 v) {
    u32 old;
    asm volatile("atom.acq_rel.gpu.global.add.u32 %0, [%1], %2;"
                 : "=r"(old)
                 : "l"(p), "r"(v)
                 : "memory");
    return old;
}

/* Token slots: the work ID travels inside the 64-bit token, so relaxed is enough. */
static __device__ __forceinline__ u64 ld_relaxed_u64(const u64 *p) {
    u64 v;
    asm volatile("ld.relaxed.gpu.global.b64 %0, [%1];" : "=l"(v) : "l"(p) : "memory");
    return v;
}
static __device__ __forceinline__ void st_relaxed_u64(u64 *p, u64 v) {
    asm volatile("st.relaxed.gpu.global.b64 [%0], %1;" ::"l"(p), "l"(v) : "memory");
}

} // namespace gmem

#endif /* JITGEMM_DEVICE_CLUSTER_CUH */
