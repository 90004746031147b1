/*
 * The TMA producer: one warp, lane 0 issues. Per K tile it loads A (one box row per M-half and
 * K box), B, and the scale factors SFA and SFB into the stage's SMEM, sliced and multicast
 * across the cluster when the plan says so; the pair leader's full barrier counts every byte.
 * The same warp runs the scheduler in cluster rank 0 (scheduler.cuh).
 */
#ifndef JITGEMM_TCGEN05_PRODUCER_CUH
#define JITGEMM_TCGEN05_PRODUCER_CUH

#include "device/cluster.cuh"
#include "device/mbarrier.cuh"
#include "device/sm100.cuh"
#include "tcgen05/device/cta.cuh"
#include "tcgen05/device/scheduler.cuh"

template <class P> struct TcProducer {
    /* One stage: A and SFA per M-half, then B and SFB. */
    static __device__ __forceinline__ void load_stage(const TcCtaState &c,
                                                      const jitgemm_tc_params &p, TcTile t,
                                                      const void *ta, const void *tb, u32 s,
                                                      u32 kt) {
        constexpr int CG = P::CTA_GROUP;
        const u32 full = c.smem + P::OFF_FULL + 8 * s;
        /* The pair leader expects every byte that lands in the pair this stage, whoever issued
         * it (its peer, or a multicasting CTA). */
        if (c.mma_issuer)
            mbar::expect_arrive(full, P::EXPECT_TX * P::CTA_GROUP);
        const u32 a = c.smem + P::OFF_A + s * P::A_STAGE, b = c.smem + P::OFF_B + s * P::B_STAGE;
        const u32 sfa = c.smem + P::OFF_SFA + s * P::SFA_STAGE;
        const u32 sfb = c.smem + P::OFF_SFB + s * P::SFB_STAGE;
        for (u32 h = 0; h < P::HALVES; ++h) {
            const int row = t.row0 + (int)(h * P::CTA_GROUP * 128u);
            for (u32 j = 0; j < P::A_BOXES; ++j) {
                const u32 dst = a + (h * P::A_BOXES + j) * 128u * P::A_BOX_BYTES +
                                c.a_slice * c.a_slice_rows * P::A_BOX_BYTES;
                const int k0 = (int)(kt * P::A_KC_TILE + j * P::A_KC_BOX);
                if constexpr (P::A_MULTICAST)
                    sm100::tma_load_2d_mc<CG>(dst, ta, k0,
                                              row + (int)(c.a_slice * c.a_slice_rows), full,
                                              c.a_mask);
                else
                    sm100::tma_load_2d<CG>(dst, ta, k0, row, full);
            }
            sm100::tma_load_3d<CG>(sfa + h * P::SF_CHUNKS_K * 512u, &p.sfa, 0,
                                   (int)(kt * P::SF_CHUNKS_K), row / 128, full);
        }
        for (u32 j = 0; j < P::B_BOXES; ++j) {
            const u32 dst =
                b + j * P::B_ROWS * P::B_BOX_BYTES + c.b_slice * c.b_slice_rows * P::B_BOX_BYTES;
            const int k0 = (int)(kt * P::B_KC_TILE + j * P::B_KC_BOX);
            const int row = t.n0 + (int)(c.pair_pos * P::B_ROWS + c.b_slice * c.b_slice_rows);
            if constexpr (P::B_MULTICAST)
                sm100::tma_load_2d_mc<CG>(dst, tb, k0, row, full, c.b_mask);
            else
                sm100::tma_load_2d<CG>(dst, tb, k0, row, full);
        }
        /* SFB covers the whole MMA N in both CTAs of a pair, from the 128-row scale block the
         * tile starts in. */
        sm100::tma_load_3d<CG>(sfb, &p.sfb, 0, (int)(kt * P::SF_CHUNKS_K), t.n0 / 128, full);
    }

    static __device__ void run(const TcCtaState &c, const jitgemm_tc_params &p) {
        const u32 lane = threadIdx.x % 32;
        /* The multicast split is baked into a tensor map's box, so the fallback cluster shape
         * has its own A and B maps. */
        const void *ta = &p.a[c.fallback], *tb = &p.b[c.fallback];
        if (lane == 0) {
            sm100::tma_prefetch(ta);
            sm100::tma_prefetch(tb);
            sm100::tma_prefetch(&p.sfa);
            sm100::tma_prefetch(&p.sfb);
        }
        TcSchedState sched = TcScheduler<P>::init(c, p);
        u32 it = 0, i = 0;
        for (;; ++i) {
            if (c.rank == 0)
                TcScheduler<P>::run(c, p, sched, i);
            const TcWork w = TcCta<P>::work_get(c, i);
            warp_ops::sync();
            if (lane == 0)
                TcCta<P>::work_release(c, i);
            if (w.id >= c.total)
                break;
            if (lane == 0) {
                const TcTile t = TcCta<P>::tile_coords(c, w);
                for (u32 kt = 0; kt < P::K_TILES; ++kt, ++it) {
                    const u32 s = it % P::STAGES;
                    /* Free once every MMA issuer of the cluster has consumed it. */
                    mbar::wait_cluster(c.smem + P::OFF_EMPTY + 8 * s, ((it / P::STAGES) & 1) ^ 1);
                    load_stage(c, p, t, ta, tb, s, kt);
                }
            }
            warp_ops::sync();
        }
        if (lane == 0) {
            /* The last commits of other CTAs' issuers still arrive on our empty barriers. */
            for (u32 j = 0; j < P::STAGES; ++j, ++it)
                mbar::wait_cluster(c.smem + P::OFF_EMPTY + 8 * (it % P::STAGES),
                                   ((it / P::STAGES) & 1) ^ 1);
            if (c.rank == 0) /* and every reader's release of the work ring */
                for (u32 j = i + 1; j <= i + P::WORK_SLOTS; ++j)
                    mbar::wait_cluster(c.smem + P::OFF_WORK_EMPTY + 8 * (j % P::WORK_SLOTS),
                                       ((j / P::WORK_SLOTS) & 1) ^ 1);
        }
        warp_ops::sync();
    }
};

#endif /* JITGEMM_TCGEN05_PRODUCER_CUH */
