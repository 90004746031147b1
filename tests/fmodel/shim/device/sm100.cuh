/* Functional model of kernel_src/device/sm100.cuh: the same namespace, names, template
 * parameters and signatures; each wrapper hands its operands (and the PTX choice its template
 * parameters select) to the model runtime (tests/fmodel/fm_runtime.cpp). */
#ifndef JITGEMM_DEVICE_SM100_CUH
#define JITGEMM_DEVICE_SM100_CUH

#include "device/common.cuh"

namespace sm100 {

enum MmaKind { KIND_MXF8F6F4 = 1, KIND_MXF4 = 2, KIND_MXF4NVF4 = 3 };
enum Collector { COLLECTOR_NONE = 0, COLLECTOR_FILL = 1, COLLECTOR_LASTUSE = 2 };

static inline void tma_prefetch(const void *tmap, FM_SITE_PARAMS) {
    (void)tmap;
    fm::maybe_yield(FM_SITE_ARGS);
}

template <int CTA_GROUP>
static inline void tma_load_2d(u32 dst, const void *tmap, int c0, int c1, u32 bar, FM_SITE_PARAMS) {
    const int c[2] = {c0, c1};
    fm::tma_load(CTA_GROUP, dst, tmap, 2, c, CTA_GROUP == 2 ? (bar & 0xFEFFFFFFu) : bar, 0, false,
                 FM_SITE_ARGS);
}

template <int CTA_GROUP>
static inline void tma_load_2d_mc(u32 dst, const void *tmap, int c0, int c1, u32 bar, u16 mask,
                                  FM_SITE_PARAMS) {
    const int c[2] = {c0, c1};
    fm::tma_load(CTA_GROUP, dst, tmap, 2, c, CTA_GROUP == 2 ? (bar & 0xFEFFFFFFu) : bar, mask, true,
                 FM_SITE_ARGS);
}

template <int CTA_GROUP>
static inline void tma_load_3d(u32 dst, const void *tmap, int c0, int c1, int c2, u32 bar,
                               FM_SITE_PARAMS) {
    const int c[3] = {c0, c1, c2};
    fm::tma_load(CTA_GROUP, dst, tmap, 3, c, CTA_GROUP == 2 ? (bar & 0xFEFFFFFFu) : bar, 0, false,
                 FM_SITE_ARGS);
}

static inline void tma_store_2d(const void *tmap, u32 src, int c0, int c1, FM_SITE_PARAMS) {
    fm::tma_store(tmap, src, c0, c1, FM_SITE_ARGS);
}

static inline void bulk_commit(FM_SITE_PARAMS) {
    fm::bulk_commit(FM_SITE_ARGS);
}

template <int PENDING> static inline void bulk_wait_read(FM_SITE_PARAMS) {
    fm::bulk_wait(PENDING, true, FM_SITE_ARGS);
}

static inline void bulk_wait_all(FM_SITE_PARAMS) {
    fm::bulk_wait(0, false, FM_SITE_ARGS);
}

static inline void fence_proxy_async(FM_SITE_PARAMS) {
    fm::fence_proxy_async(FM_SITE_ARGS);
}

static inline void st_shared_v4(u32 addr, u32 a, u32 b, u32 c, u32 d, FM_SITE_PARAMS) {
    const uint32_t v[4] = {a, b, c, d};
    fm::st_shared_v4(addr, v, FM_SITE_ARGS);
}

template <int CTA_GROUP, int COLS, bool EXCLUSIVE>
static inline void tmem_alloc(u32 dst_smem, FM_SITE_PARAMS) {
    static_assert(CTA_GROUP == 1 || CTA_GROUP == 2, "cta_group");
    fm::tmem_alloc(CTA_GROUP, COLS, EXCLUSIVE, dst_smem, FM_SITE_ARGS);
}

template <int CTA_GROUP> static inline void tmem_relinquish(FM_SITE_PARAMS) {
    fm::tmem_relinquish(CTA_GROUP, FM_SITE_ARGS);
}

template <int CTA_GROUP, int COLS, bool EXCLUSIVE>
static inline void tmem_dealloc(u32 taddr, FM_SITE_PARAMS) {
    fm::tmem_dealloc(CTA_GROUP, taddr, COLS, EXCLUSIVE, FM_SITE_ARGS);
}

template <int CTA_GROUP> static inline void utccp(u32 taddr, u64 sdesc, FM_SITE_PARAMS) {
    fm::utccp(CTA_GROUP, taddr, sdesc, FM_SITE_ARGS);
}

template <int CTA_GROUP, int KIND, int SF_VEC, int COLLECTOR>
static inline void mma(u32 d_tmem, u64 a_desc, u64 b_desc, u32 idesc, u32 sfa_tmem, u32 sfb_tmem,
                       u32 accumulate, FM_SITE_PARAMS) {
    static_assert(KIND == KIND_MXF8F6F4 || KIND == KIND_MXF4 || KIND == KIND_MXF4NVF4, "kind");
    static_assert(KIND != KIND_MXF4 || SF_VEC == 32, "mxf4 scales 32 elements");
    static_assert(KIND != KIND_MXF4NVF4 || SF_VEC == 16 || SF_VEC == 32, "mxf4nvf4 vector");
    /* mxf8f6f4 has no block suffix: block 32 is implied. */
    fm::mma(CTA_GROUP, KIND, KIND == KIND_MXF8F6F4 ? 32 : SF_VEC, COLLECTOR, d_tmem, a_desc, b_desc,
            idesc, sfa_tmem, sfb_tmem, accumulate, FM_SITE_ARGS);
}

template <int CTA_GROUP> static inline void commit(u32 bar, FM_SITE_PARAMS) {
    fm::commit(CTA_GROUP, bar, 0, false, FM_SITE_ARGS);
}

template <int CTA_GROUP> static inline void commit_mc(u32 bar, u16 mask, FM_SITE_PARAMS) {
    fm::commit(CTA_GROUP, bar, mask, true, FM_SITE_ARGS);
}

static inline void fence_before(FM_SITE_PARAMS) {
    fm::tcgen05_fence(FM_SITE_ARGS);
}
static inline void fence_after(FM_SITE_PARAMS) {
    fm::tcgen05_fence(FM_SITE_ARGS);
}

static inline void tmem_ld16(u32 taddr, u32 (&r)[16], FM_SITE_PARAMS) {
    fm::tmem_ld16(taddr, r, FM_SITE_ARGS);
}

static inline void tmem_wait_ld(FM_SITE_PARAMS) {
    fm::tmem_wait_ld(FM_SITE_ARGS);
}

} // namespace sm100

#endif
