/*
 * The CTA's place in its cluster, the barrier set-up and the work-ID ring every role reads.
 * P is the generated plan-constants struct (TcPlan); see kernel.cuh for the whole kernel.
 *
 * Cross-CTA rules. Every CTA of a cluster processes the same tile sequence, so the SMEM ring
 * positions agree across the cluster. A stage of CTA c may be written by any producer of the
 * cluster (multicast), so every MMA issuer commits each consumed stage to every CTA of the
 * cluster and each CTA's empty barrier counts one arrival per issuer (runtime counts and masks
 * from %cluster_nctaid, so the preferred and the fallback shape share the code). With
 * cta_group::2 the leader's full barrier receives both CTAs' bytes and its accumulator-empty
 * barrier both CTAs' epilogue warps. Every role waits, before it exits, for the arrivals still
 * owed to its barriers by other CTAs, so no remote arrival lands in an exited CTA.
 */
#ifndef JITGEMM_TCGEN05_CTA_CUH
#define JITGEMM_TCGEN05_CTA_CUH

#include "device/cluster.cuh"
#include "device/common.cuh"
#include "device/mbarrier.cuh"
#include "tcgen05/device/params.cuh"

struct TcCtaState {
    unsigned char *base; /* dynamic shared memory */
    u32 smem;            /* its shared::cta address */
    u32 rank, ncta, cm, cn;
    u32 fallback;   /* this cluster runs the fallback shape */
    u32 pair_pos;   /* cm % CTA_GROUP */
    u32 mma_issuer; /* the pair leader issues the MMAs */
    u16 cluster_mask, pair_mask, a_mask, b_mask;
    u32 a_slice, a_slice_rows, b_slice, b_slice_rows;
    u32 work_empty0;    /* cluster address of work_empty[0] in rank 0 */
    u32 acc_empty0;     /* cluster address of acc_empty[0] in the pair leader */
    u32 tiles_m, total; /* work IDs: tiles_m x N_TILES_N */
    i64 m;              /* rows of A and D */
};

struct TcWork {
    u32 id;    /* >= total: no more work */
    u32 sub_m; /* M offset, in CTAs, of a fallback cluster inside the preferred tile */
};

struct TcTile {
    int row0; /* first A row of this CTA's first M-half */
    int n0;   /* first B row of the MMA tile (the pair's, with cta_group::2) */
};

template <class P> struct TcCta {
    static __device__ TcCtaState make(const jitgemm_tc_params &p, unsigned char *base) {
        TcCtaState c;
        c.base = base;
        c.smem = smem_addr(base);
        const u32 nx = cluster::nctaid_x(), ny = cluster::nctaid_y();
        c.cm = cluster::ctaid_x();
        c.cn = cluster::ctaid_y();
        c.rank = cluster::ctarank();
        c.ncta = nx * ny;
        if constexpr (P::HAS_FALLBACK)
            /* All extents are compared, not only M: safe whatever the two shapes are. */
            c.fallback = nx != P::PREF_M || ny != P::PREF_N;
        else
            c.fallback = 0;
        c.pair_pos = c.cm % P::CTA_GROUP;
        c.mma_issuer = c.pair_pos == 0;
        c.cluster_mask = (u16)((1u << c.ncta) - 1u);
        c.pair_mask = (u16)(((1u << P::CTA_GROUP) - 1u) << (c.rank - c.pair_pos));
        if constexpr (P::A_MULTICAST) {
            /* A is shared along N: the CTAs of one cluster row load a slice each. */
            u32 am = 0;
            for (u32 y = 0; y < ny; ++y)
                am |= 1u << (c.cm + y * nx);
            c.a_mask = (u16)am;
            c.a_slice = c.cn;
            c.a_slice_rows = 128u / ny;
        } else {
            c.a_mask = 0;
            c.a_slice = 0;
            c.a_slice_rows = 128u;
        }
        if constexpr (P::B_MULTICAST) {
            /* B is shared along M by the CTAs that hold the same half of B (the same pair
             * position); each loads a slice and multicasts it to the others. */
            u32 bm = 0;
            for (u32 x = c.pair_pos; x < nx; x += P::CTA_GROUP)
                bm |= 1u << (x + c.cn * nx);
            c.b_mask = (u16)bm;
            c.b_slice = c.cm / P::CTA_GROUP;
            c.b_slice_rows = P::B_ROWS / (nx / P::CTA_GROUP);
        } else {
            c.b_mask = 0;
            c.b_slice = 0;
            c.b_slice_rows = P::B_ROWS;
        }
        c.work_empty0 = cluster::mapa(c.smem + P::OFF_WORK_EMPTY, 0);
        c.acc_empty0 = cluster::mapa(c.smem + P::OFF_ACC_EMPTY, c.rank - c.pair_pos);
        c.m = p.m;
        c.tiles_m = (u32)((p.m + P::CLUSTER_TILE_M - 1) / P::CLUSTER_TILE_M);
        c.total = c.tiles_m * P::N_TILES_N;
        return c;
    }

    /* One thread initialises every barrier. Counts that depend on the cluster shape are taken
     * from %cluster_nctaid at run time. */
    static __device__ void barriers_init(const TcCtaState &c) {
        for (u32 s = 0; s < P::STAGES; ++s) {
            mbar::init(c.smem + P::OFF_FULL + 8 * s, 1);
            mbar::init(c.smem + P::OFF_EMPTY + 8 * s, c.ncta / P::CTA_GROUP);
        }
        for (u32 s = 0; s < P::ACC_STAGES; ++s) {
            mbar::init(c.smem + P::OFF_ACC_FULL + 8 * s, 1);
            mbar::init(c.smem + P::OFF_ACC_EMPTY + 8 * s, P::EPI_WARPS * P::CTA_GROUP);
        }
        for (u32 s = 0; s < P::WORK_SLOTS; ++s) {
            mbar::init(c.smem + P::OFF_WORK_FULL + 8 * s, 1);
            mbar::init(c.smem + P::OFF_WORK_EMPTY + 8 * s, c.ncta * P::WORK_READERS);
        }
        mbar::fence_init();
    }

    /* Wait for slot i of the ring and read it. */
    static __device__ __forceinline__ TcWork work_get(const TcCtaState &c, u32 i) {
        const u32 s = i % P::WORK_SLOTS;
        mbar::wait_cluster(c.smem + P::OFF_WORK_FULL + 8 * s, (i / P::WORK_SLOTS) & 1);
        const volatile u32 *slot = (const volatile u32 *)(c.base + P::OFF_WORK_IDS + 8 * s);
        TcWork w;
        w.id = slot[0];
        w.sub_m = slot[1];
        return w;
    }

    /* Tell the scheduler (cluster rank 0) that this reader is done with slot i. */
    static __device__ __forceinline__ void work_release(const TcCtaState &c, u32 i) {
        mbar::arrive_remote(c.work_empty0 + 8 * (i % P::WORK_SLOTS));
    }

    /* Work ID -> this CTA's rows. M runs fastest, so the CTAs that share a B tile (the
     * weights) run at about the same time. The pair's rows interleave as the cta_group::2 data
     * path wants: CTA 0 holds rows 0-127 and CTA 1 rows 128-255 of each 256-row MMA; with
     * B-reuse the second M-half (the reuse MMA) is the next 256 rows. */
    static __device__ __forceinline__ TcTile tile_coords(const TcCtaState &c, TcWork w) {
        const u32 tm = w.id % c.tiles_m, tn = w.id / c.tiles_m;
        const u32 cm = w.sub_m + c.cm;
        TcTile t;
        t.row0 = (int)(tm * P::CLUSTER_TILE_M +
                       (cm / P::CTA_GROUP) * (P::CTA_GROUP * 128u * P::HALVES) +
                       c.pair_pos * 128u);
        t.n0 = (int)(tn * (P::PREF_N * P::TILE_N) + c.cn * P::TILE_N);
        return t;
    }
};

#endif /* JITGEMM_TCGEN05_CTA_CUH */
