/* Functional model of kernel_src/device/sm90.cuh: the same names, template parameters and
 * signatures; each wrapper hands its operands to the model runtime (tests/fmodel/fm_runtime.cpp)
 * or does in host memory what the instruction does. Operations the hardware runs asynchronously
 * (TMA, wgmma) run when they are issued, so the waits that cover them (wgmma.wait_group) only
 * switch threads; the mbarriers, named and cluster barriers block as on the GPU. Also the CUDA
 * built-ins the sm_90 kernels use (vector types, __syncwarp, __syncthreads). */
#ifndef JITGEMM_DEVICE_SM90_CUH
#define JITGEMM_DEVICE_SM90_CUH

#include "device/common.cuh"
#include "device/convert.cuh"

struct uint4 {
    u32 x, y, z, w;
};
struct float2 {
    float x, y;
};
struct float4 {
    float x, y, z, w;
};
static inline float2 make_float2(float x, float y) {
    return float2{x, y};
}

static inline void __syncwarp(FM_SITE_PARAMS) {
    fm::warp_collective(fm::WOP_SYNC, 0, FM_SITE_ARGS);
}
/* bar.sync 0 over the whole CTA. */
static inline void __syncthreads(FM_SITE_PARAMS) {
    fm::named_barrier(0, blockDim.x, FM_SITE_ARGS);
}

static inline u32 smem_addr(const void *p, FM_SITE_PARAMS) {
    return fm::smem_addr(p, FM_SITE_ARGS);
}

/* ---- mbarrier ---- */

static inline void mbar_init(u32 bar, u32 count, FM_SITE_PARAMS) {
    fm::mbar_init(bar, count, FM_SITE_ARGS);
}
static inline void fence_mbarrier_init(FM_SITE_PARAMS) {
    fm::mbar_fence_init(FM_SITE_ARGS);
}
static inline void mbar_arrive_expect_tx(u32 bar, u32 bytes, FM_SITE_PARAMS) {
    fm::mbar_expect_arrive(bar, bytes, FM_SITE_ARGS);
}
static inline void mbar_arrive(u32 bar, FM_SITE_PARAMS) {
    fm::mbar_arrive(bar, FM_SITE_ARGS);
}
static inline void mbar_arrive_cluster(u32 bar, u32 cta_rank, FM_SITE_PARAMS) {
    fm::mbar_arrive(fm::mapa(bar, cta_rank, FM_SITE_ARGS), FM_SITE_ARGS);
}
static inline void mbar_wait(u32 bar, u32 parity, FM_SITE_PARAMS) {
    fm::mbar_wait(bar, parity, FM_SITE_ARGS);
}

/* ---- fences and barriers ---- */

static inline void fence_proxy_async_smem(FM_SITE_PARAMS) {
    fm::fence_proxy_async(FM_SITE_ARGS);
}
static inline void named_bar_sync(u32 id, u32 threads, FM_SITE_PARAMS) {
    fm::named_barrier(id, threads, FM_SITE_ARGS);
}
static inline bool elect_one(FM_SITE_PARAMS) {
    return fm::warp_collective(fm::WOP_ELECT, 0, FM_SITE_ARGS) != 0;
}

/* Register reallocation changes nothing the model sees but the warp's convergence
 * (.sync.aligned). */
template <int REGS> static inline void setmaxnreg_inc(FM_SITE_PARAMS) {
    fm::warp_collective(fm::WOP_SYNC, 0, FM_SITE_ARGS);
}
template <int REGS> static inline void setmaxnreg_dec(FM_SITE_PARAMS) {
    fm::warp_collective(fm::WOP_SYNC, 0, FM_SITE_ARGS);
}

/* ---- clusters ---- */

static inline u32 cluster_ctarank() {
    return fm::cluster_reg(0);
}
static inline void cluster_sync(FM_SITE_PARAMS) {
    fm::cluster_arrive(FM_SITE_ARGS);
    fm::cluster_wait(FM_SITE_ARGS);
}

/* ---- TMA ---- */

static inline void prefetch_tmap(const jit_tmap *tmap, FM_SITE_PARAMS) {
    (void)tmap;
    fm::maybe_yield(FM_SITE_ARGS);
}
static inline void tma_load_2d(u32 dst, const jit_tmap *tmap, u32 bar, i32 c0, i32 c1,
                               FM_SITE_PARAMS) {
    const int c[2] = {c0, c1};
    fm::tma_load(1, dst, tmap, 2, c, bar, 0, false, FM_SITE_ARGS);
}
static inline void tma_load_2d_multicast(u32 dst, const jit_tmap *tmap, u32 bar, i32 c0, i32 c1,
                                         u16 mask, FM_SITE_PARAMS) {
    const int c[2] = {c0, c1};
    fm::tma_load(1, dst, tmap, 2, c, bar, mask, true, FM_SITE_ARGS);
}
static inline u64 l2_policy_evict_first() {
    return 0;
}
static inline void tma_load_2d_hint(u32 dst, const jit_tmap *tmap, u32 bar, i32 c0, i32 c1,
                                    u64 policy, FM_SITE_PARAMS) {
    (void)policy;
    tma_load_2d(dst, tmap, bar, c0, c1, FM_SITE_ARGS);
}

/* ---- global memory: 16-byte accesses must be 16-byte aligned, as on the GPU ---- */

static inline void fm_check_16b(const void *p, const char *file, int line) {
    if ((uintptr_t)p % 16)
        fm::trap(file, line);
}
static inline void st_global_v4(void *p, u32 a, u32 b, u32 c, u32 d, FM_SITE_PARAMS) {
    fm_check_16b(p, FM_SITE_ARGS);
    const u32 v[4] = {a, b, c, d};
    memcpy(p, v, 16);
    fm::maybe_yield(FM_SITE_ARGS);
}
static inline void st_global_v4_if(bool pred, void *p, u32 a, u32 b, u32 c, u32 d,
                                   FM_SITE_PARAMS) {
    if (pred)
        st_global_v4(p, a, b, c, d, FM_SITE_ARGS);
}
static inline uint4 ld_global_v4_if(bool pred, const void *p, FM_SITE_PARAMS) {
    uint4 v = {0, 0, 0, 0};
    if (pred) {
        fm_check_16b(p, FM_SITE_ARGS);
        memcpy(&v, p, 16);
    }
    return v;
}

/* ---- wgmma ---- */

static inline u64 wgmma_desc_sw128(u32 smem_addr) {
    u64 desc = 0;
    desc |= (u64)((smem_addr & 0x3FFFF) >> 4);
    desc |= (u64)(16 >> 4) << 16;
    desc |= (u64)(1024 >> 4) << 32;
    desc |= (u64)1 << 62;
    return desc;
}
static inline u64 wgmma_desc_advance(u64 desc, u32 bytes) {
    return desc + (u64)(bytes >> 4);
}
/* The wgmma instructions are .sync.aligned: every lane of the warp executes them together, so
 * a warp is converged there (a lane cannot drift ahead of its warp's lane 0, which alone
 * releases a stage). The model makes each of them a rendezvous of the warp's 32 lanes. */
static inline void wgmma_fence(FM_SITE_PARAMS) {
    fm::warp_collective(fm::WOP_SYNC, 0, FM_SITE_ARGS);
}
static inline void wgmma_commit(FM_SITE_PARAMS) {
    fm::warp_collective(fm::WOP_SYNC, 0, FM_SITE_ARGS);
}
template <int N> static inline void wgmma_wait(FM_SITE_PARAMS) {
    fm::warp_collective(fm::WOP_SYNC, 0, FM_SITE_ARGS);
}
static inline void reg_fence(float &r) {
    (void)r;
}
template <int COUNT> static inline void reg_fence_all(float (&r)[COUNT]) {
    (void)r;
}

template <int N> struct WgmmaFp8 {
    static inline void mma(float (&d)[N / 2], u64 desc_a, u64 desc_b, u32 scale_d,
                           FM_SITE_PARAMS) {
        fm::wgmma_fp8(N, d, desc_a, desc_b, scale_d, 0, 0, FM_SITE_ARGS);
    }
};

/* ---- global memory ordering (split-K reductions): the model's memory is sequentially
 * consistent, so fences only switch threads ---- */

static inline void fence_acq_rel_gpu(FM_SITE_PARAMS) {
    fm::maybe_yield(FM_SITE_ARGS);
}
static inline u32 atom_add_acq_rel_gpu(u32 *p, u32 v, FM_SITE_PARAMS) {
    return fm::atom_add(p, v, FM_SITE_ARGS);
}
static inline void ld_global_cg_v2f32(const float *p, float &a, float &b, FM_SITE_PARAMS) {
    if ((uintptr_t)p % 8)
        fm::trap(FM_SITE_ARGS);
    a = p[0];
    b = p[1];
    fm::maybe_yield(FM_SITE_ARGS);
}

#endif /* JITGEMM_DEVICE_SM90_CUH */
