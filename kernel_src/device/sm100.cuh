/*
 * sm_100+ (Blackwell, Rubin) building blocks: TMA with the cta_group::2 forms, the bulk-store
 * group, and tcgen05 (TMEM allocation, tcgen05.cp, tcgen05.mma with block scales, commit,
 * fences, tcgen05.ld). Everything lives in namespace sm100 so that Hopper forms of the same
 * operations can sit in another file under another name.
 *
 * Why raw asm and not cuda::ptx: CUDA 13.0's wrappers are guarded for sm_100a/sm_101a only and
 * fail at ptxas time for sm_103a and sm_100f; NVRTC also gets no CUDA header here. The
 * block-scale suffix is the `.block16`/`.block32` spelling (or none for mxf8f6f4), which
 * assembles for arch-specific and family targets alike, never `.scale_vec::NX`.
 *
 * What varies per plan (cta_group, MMA kind and scale vector, B collector hints, the TMEM column
 * count and `.exclusive`) is a template parameter; asm needs literal text, so each choice picks
 * one literal spelling with `if constexpr` and the unused ones never reach the PTX.
 *
 * NOTE on `.exclusive`: ptxas 13.5 rejects an immediate column count above 512 or not a power
 * of two for tcgen05.alloc/dealloc ("expected to be in range [32..512]", "must be power of 2")
 * unless the PTX 9.4 `.exclusive` qualifier is present, with which multiples of 32 are accepted.
 * The PTX 9.4 text for it was not available; this is read from the assembler's checks.
 */
#ifndef JITGEMM_DEVICE_SM100_CUH
#define JITGEMM_DEVICE_SM100_CUH

#include "device/common.cuh"

namespace sm100 {

/* MMA kinds, numbered as the planner's jit__tc_kind_t. */
enum MmaKind { KIND_MXF8F6F4 = 1, KIND_MXF4 = 2, KIND_MXF4NVF4 = 3 };

/* B collector hints of a B-reuse pair of MMAs (PTX 9.4). */
enum Collector { COLLECTOR_NONE = 0, COLLECTOR_FILL = 1, COLLECTOR_LASTUSE = 2 };

/* ---- TMA ---------------------------------------------------------------------------------- */

static __device__ __forceinline__ void tma_prefetch(const void *tmap) {
    asm volatile("prefetch.tensormap [%0];" ::"l"(tmap) : "memory");
}

/* One box into this CTA's shared memory. With cta_group::2 the bytes count on the pair
 * leader's barrier, which the address names once its peer bit (bit 24) is cleared; the leader
 * expects both CTAs' bytes. */
template <int CTA_GROUP>
static __device__ __forceinline__ void tma_load_2d(u32 dst, const void *tmap, int c0, int c1,
                                                   u32 bar) {
    if constexpr (CTA_GROUP == 2)
        asm volatile("cp.async.bulk.tensor.2d.shared::cta.global.tile.mbarrier::complete_tx::"
                     "bytes.cta_group::2 [%0], [%1, {%2, %3}], [%4];" ::"r"(dst),
                     "l"(tmap), "r"(c0), "r"(c1), "r"(bar & 0xFEFFFFFFu)
                     : "memory");
    else
        asm volatile("cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::"
                     "bytes [%0], [%1, {%2, %3}], [%4];" ::"r"(dst),
                     "l"(tmap), "r"(c0), "r"(c1), "r"(bar)
                     : "memory");
}

/* Multicast: every CTA in `mask` receives the box at `dst` and the bytes complete on each
 * destination's barrier (its pair leader's, with cta_group::2) at the same offset. */
template <int CTA_GROUP>
static __device__ __forceinline__ void tma_load_2d_mc(u32 dst, const void *tmap, int c0, int c1,
                                                      u32 bar, u16 mask) {
    if constexpr (CTA_GROUP == 2)
        asm volatile("cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::"
                     "bytes.multicast::cluster.cta_group::2 [%0], [%1, {%2, %3}], [%4], %5;" ::"r"(
                         dst),
                     "l"(tmap), "r"(c0), "r"(c1), "r"(bar & 0xFEFFFFFFu), "h"(mask)
                     : "memory");
    else
        asm volatile("cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::"
                     "bytes.multicast::cluster [%0], [%1, {%2, %3}], [%4], %5;" ::"r"(dst),
                     "l"(tmap), "r"(c0), "r"(c1), "r"(bar), "h"(mask)
                     : "memory");
}

/* A scale-factor box: [256 x u16 = one 512-byte chunk][chunks][row blocks]. */
template <int CTA_GROUP>
static __device__ __forceinline__ void tma_load_3d(u32 dst, const void *tmap, int c0, int c1,
                                                   int c2, u32 bar) {
    if constexpr (CTA_GROUP == 2)
        asm volatile("cp.async.bulk.tensor.3d.shared::cta.global.tile.mbarrier::complete_tx::"
                     "bytes.cta_group::2 [%0], [%1, {%2, %3, %4}], [%5];" ::"r"(dst),
                     "l"(tmap), "r"(c0), "r"(c1), "r"(c2), "r"(bar & 0xFEFFFFFFu)
                     : "memory");
    else
        asm volatile("cp.async.bulk.tensor.3d.shared::cluster.global.tile.mbarrier::complete_tx::"
                     "bytes [%0], [%1, {%2, %3, %4}], [%5];" ::"r"(dst),
                     "l"(tmap), "r"(c0), "r"(c1), "r"(c2), "r"(bar)
                     : "memory");
}

/* Store a box from shared memory; the tensor map clips rows and columns past the end. */
static __device__ __forceinline__ void tma_store_2d(const void *tmap, u32 src, int c0, int c1) {
    asm volatile("cp.async.bulk.tensor.2d.global.shared::cta.tile.bulk_group [%0, {%1, %2}], "
                 "[%3];" ::"l"(tmap),
                 "r"(c0), "r"(c1), "r"(src)
                 : "memory");
}

static __device__ __forceinline__ void bulk_commit() {
    asm volatile("cp.async.bulk.commit_group;" ::: "memory");
}

/* Wait until at most PENDING stores still read shared memory, so the oldest staging buffer
 * may be rewritten. */
template <int PENDING> static __device__ __forceinline__ void bulk_wait_read() {
    asm volatile("cp.async.bulk.wait_group.read %0;" ::"n"(PENDING) : "memory");
}

static __device__ __forceinline__ void bulk_wait_all() {
    asm volatile("cp.async.bulk.wait_group 0;" ::: "memory");
}

/* Orders this thread's generic-proxy shared-memory writes before async-proxy reads. */
static __device__ __forceinline__ void fence_proxy_async() {
    asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
}

static __device__ __forceinline__ void st_shared_v4(u32 addr, u32 a, u32 b, u32 c, u32 d) {
    asm volatile("st.shared.v4.b32 [%0], {%1, %2, %3, %4};" ::"r"(addr), "r"(a), "r"(b), "r"(c),
                 "r"(d)
                 : "memory");
}

/* ---- TMEM allocation ---------------------------------------------------------------------- */

/* Warp-wide: allocate COLS TMEM columns and write the base address to shared memory. With
 * cta_group::2 one warp of each CTA of the pair allocates. */
template <int CTA_GROUP, int COLS, bool EXCLUSIVE>
static __device__ __forceinline__ void tmem_alloc(u32 dst_smem) {
    static_assert(CTA_GROUP == 1 || CTA_GROUP == 2, "cta_group");
    if constexpr (CTA_GROUP == 1 && !EXCLUSIVE)
        asm volatile("tcgen05.alloc.cta_group::1.sync.aligned.shared::cta.b32 [%0], %1;" ::"r"(
                         dst_smem),
                     "n"(COLS)
                     : "memory");
    else if constexpr (CTA_GROUP == 1)
        asm volatile(
            "tcgen05.alloc.cta_group::1.exclusive.sync.aligned.shared::cta.b32 [%0], %1;" ::"r"(
                dst_smem),
            "n"(COLS)
            : "memory");
    else if constexpr (!EXCLUSIVE)
        asm volatile("tcgen05.alloc.cta_group::2.sync.aligned.shared::cta.b32 [%0], %1;" ::"r"(
                         dst_smem),
                     "n"(COLS)
                     : "memory");
    else
        asm volatile(
            "tcgen05.alloc.cta_group::2.exclusive.sync.aligned.shared::cta.b32 [%0], %1;" ::"r"(
                dst_smem),
            "n"(COLS)
            : "memory");
}

template <int CTA_GROUP> static __device__ __forceinline__ void tmem_relinquish() {
    if constexpr (CTA_GROUP == 2)
        asm volatile("tcgen05.relinquish_alloc_permit.cta_group::2.sync.aligned;" ::: "memory");
    else
        asm volatile("tcgen05.relinquish_alloc_permit.cta_group::1.sync.aligned;" ::: "memory");
}

template <int CTA_GROUP, int COLS, bool EXCLUSIVE>
static __device__ __forceinline__ void tmem_dealloc(u32 taddr) {
    if constexpr (CTA_GROUP == 1 && !EXCLUSIVE)
        asm volatile("tcgen05.dealloc.cta_group::1.sync.aligned.b32 %0, %1;" ::"r"(taddr),
                     "n"(COLS)
                     : "memory");
    else if constexpr (CTA_GROUP == 1)
        asm volatile("tcgen05.dealloc.cta_group::1.exclusive.sync.aligned.b32 %0, %1;" ::"r"(
                         taddr),
                     "n"(COLS)
                     : "memory");
    else if constexpr (!EXCLUSIVE)
        asm volatile("tcgen05.dealloc.cta_group::2.sync.aligned.b32 %0, %1;" ::"r"(taddr),
                     "n"(COLS)
                     : "memory");
    else
        asm volatile("tcgen05.dealloc.cta_group::2.exclusive.sync.aligned.b32 %0, %1;" ::"r"(
                         taddr),
                     "n"(COLS)
                     : "memory");
}

/* ---- tcgen05.cp, tcgen05.mma, commit ------------------------------------------------------ */

/* One 512-byte scale-factor chunk (32 lines x 16 bytes) from SMEM to 4 TMEM columns, replicated
 * into all four 32-lane quarters as the block-scaled MMA expects. Pipelined with the following
 * tcgen05.mma of the same cta_group: no fence in between. */
template <int CTA_GROUP> static __device__ __forceinline__ void utccp(u32 taddr, u64 sdesc) {
    if constexpr (CTA_GROUP == 2)
        asm volatile("tcgen05.cp.cta_group::2.32x128b.warpx4 [%0], %1;" ::"r"(taddr), "l"(sdesc)
                     : "memory");
    else
        asm volatile("tcgen05.cp.cta_group::1.32x128b.warpx4 [%0], %1;" ::"r"(taddr), "l"(sdesc)
                     : "memory");
}

/* D (+)= A x B with per-block scales read from TMEM; issued by one thread. `accumulate` 0
 * overwrites D. */
#define SM100_MMA_ASM(CG, KIND, COLL)                                                              \
    asm volatile("{\n\t.reg .pred P;\n\tsetp.ne.u32 P, %6, 0;\n\t"                                 \
                 "tcgen05.mma.cta_group::" CG ".kind::" KIND COLL                                  \
                 " [%0], %1, %2, %3, [%4], [%5], P;\n\t}" ::"r"(d_tmem),                           \
                 "l"(a_desc), "l"(b_desc), "r"(idesc), "r"(sfa_tmem), "r"(sfb_tmem),               \
                 "r"(accumulate)                                                                   \
                 : "memory")
#define SM100_MMA_KINDS(CG, COLL)                                                                  \
    if constexpr (KIND == KIND_MXF8F6F4)                                                           \
        SM100_MMA_ASM(CG, "mxf8f6f4.block_scale", COLL);                                           \
    else if constexpr (KIND == KIND_MXF4)                                                          \
        SM100_MMA_ASM(CG, "mxf4.block_scale.block32", COLL);                                       \
    else if constexpr (SF_VEC == 16)                                                               \
        SM100_MMA_ASM(CG, "mxf4nvf4.block_scale.block16", COLL);                                   \
    else                                                                                           \
        SM100_MMA_ASM(CG, "mxf4nvf4.block_scale.block32", COLL)
#define SM100_MMA_COLLECTORS(CG)                                                                   \
    if constexpr (COLLECTOR == COLLECTOR_FILL) {                                                   \
        SM100_MMA_KINDS(CG, ".collector::b::fill");                                                \
    } else if constexpr (COLLECTOR == COLLECTOR_LASTUSE) {                                         \
        SM100_MMA_KINDS(CG, ".collector::b::lastuse");                                             \
    } else {                                                                                       \
        SM100_MMA_KINDS(CG, "");                                                                   \
    }

template <int CTA_GROUP, int KIND, int SF_VEC, int COLLECTOR>
static __device__ __forceinline__ void mma(u32 d_tmem, u64 a_desc, u64 b_desc, u32 idesc,
                                           u32 sfa_tmem, u32 sfb_tmem, u32 accumulate) {
    static_assert(KIND == KIND_MXF8F6F4 || KIND == KIND_MXF4 || KIND == KIND_MXF4NVF4, "kind");
    static_assert(KIND != KIND_MXF4 || SF_VEC == 32, "mxf4 scales 32 elements");
    static_assert(KIND != KIND_MXF4NVF4 || SF_VEC == 16 || SF_VEC == 32, "mxf4nvf4 vector");
    if constexpr (CTA_GROUP == 2) {
        SM100_MMA_COLLECTORS("2")
    } else {
        SM100_MMA_COLLECTORS("1")
    }
}
#undef SM100_MMA_COLLECTORS
#undef SM100_MMA_KINDS
#undef SM100_MMA_ASM

/* Arrive once on `bar` when every earlier tcgen05 op of this thread is done. */
template <int CTA_GROUP> static __device__ __forceinline__ void commit(u32 bar) {
    if constexpr (CTA_GROUP == 2)
        asm volatile("tcgen05.commit.cta_group::2.mbarrier::arrive::one.shared::cluster.b64 "
                     "[%0];" ::"r"(bar)
                     : "memory");
    else
        asm volatile("tcgen05.commit.cta_group::1.mbarrier::arrive::one.shared::cluster.b64 "
                     "[%0];" ::"r"(bar)
                     : "memory");
}

/* The same, arriving on the barrier at this offset in every CTA of `mask`. */
template <int CTA_GROUP> static __device__ __forceinline__ void commit_mc(u32 bar, u16 mask) {
    if constexpr (CTA_GROUP == 2)
        asm volatile("tcgen05.commit.cta_group::2.mbarrier::arrive::one.shared::cluster."
                     "multicast::cluster.b64 [%0], %1;" ::"r"(bar),
                     "h"(mask)
                     : "memory");
    else
        asm volatile("tcgen05.commit.cta_group::1.mbarrier::arrive::one.shared::cluster."
                     "multicast::cluster.b64 [%0], %1;" ::"r"(bar),
                     "h"(mask)
                     : "memory");
}

static __device__ __forceinline__ void fence_before() {
    asm volatile("tcgen05.fence::before_thread_sync;" ::: "memory");
}
static __device__ __forceinline__ void fence_after() {
    asm volatile("tcgen05.fence::after_thread_sync;" ::: "memory");
}

/* ---- tcgen05.ld --------------------------------------------------------------------------- */

/* 16 consecutive accumulator columns of this thread's TMEM lane (lane = row). The registers are
 * valid only after tmem_wait_ld. */
static __device__ __forceinline__ void tmem_ld16(u32 taddr, u32 (&r)[16]) {
    asm volatile("tcgen05.ld.sync.aligned.32x32b.x16.b32 {%0, %1, %2, %3, %4, %5, %6, %7, %8, "
                 "%9, %10, %11, %12, %13, %14, %15}, [%16];"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3]), "=r"(r[4]), "=r"(r[5]),
                   "=r"(r[6]), "=r"(r[7]), "=r"(r[8]), "=r"(r[9]), "=r"(r[10]), "=r"(r[11]),
                   "=r"(r[12]), "=r"(r[13]), "=r"(r[14]), "=r"(r[15])
                 : "r"(taddr)
                 : "memory");
}

static __device__ __forceinline__ void tmem_wait_ld() {
    asm volatile("tcgen05.wait::ld.sync.aligned;" ::: "memory");
}

} // namespace sm100

#endif /* JITGEMM_DEVICE_SM100_CUH */
