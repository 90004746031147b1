/*
 * The persistent scheduler. The plan gives six warps (four epilogue, MMA, TMA) and no spare
 * one, so the scheduler runs on the producer warp of the cluster's first CTA, one step before
 * that warp loads each tile: the producer is the first role to need a tile, and the ring's depth
 * bounds how far it may run ahead of the slowest reader (the epilogue).
 *
 * Work IDs come from a global counter. In a mixed-cluster launch a fallback cluster covers
 * 1/SPLIT of a preferred-cluster tile, so SPLIT fallback clusters form a group that shares one
 * work ID, handed from member 0 to the others through a 64-bit token in the workspace.
 */
#ifndef JITGEMM_TCGEN05_SCHEDULER_CUH
#define JITGEMM_TCGEN05_SCHEDULER_CUH

#include "device/cluster.cuh"
#include "device/mbarrier.cuh"
#include "tcgen05/device/cta.cuh"

struct TcSchedState {
    u32 group, member; /* fallback group and place in it */
    u64 prev;          /* the last token this member saw */
    u64 gen;           /* member 0: generation of the next token */
};

template <class P> struct TcScheduler {
    /* A fallback cluster covers 1/SPLIT of a work ID, so SPLIT of them form a fixed group for
     * the whole launch, by the order in which they register. */
    static __device__ TcSchedState init(const TcCtaState &c, const jitgemm_tc_params &p) {
        TcSchedState s;
        s.group = 0;
        s.member = 0;
        s.prev = 0;
        s.gen = 1;
        if constexpr (P::HAS_FALLBACK) {
            if (c.rank == 0 && c.fallback) {
                u32 ord = 0;
                if (threadIdx.x % 32 == 0)
                    ord = gmem::atom_add_relaxed(&((TcWorkspace *)p.workspace)->registration, 1);
                ord = warp_ops::shfl0(ord);
                s.group = ord / P::SPLIT;
                s.member = ord % P::SPLIT;
                /* The host sizes the slots for every fallback cluster the grid can form; a
                 * group without slots would wait forever, so stop loudly instead. */
                if ((s.group + 1) * P::SPLIT > p.token_slots)
                    device_trap();
            }
        } else {
            (void)c;
            (void)p;
        }
        return s;
    }

    /* Member 0 of a fallback group: claim only once every partner has echoed the previous
     * token, i.e. has read the previous work ID. Slot 0 is this member's own and matches at
     * once. */
    static __device__ __forceinline__ u32 claim_for_group(TcWorkspace *ws, TcSchedState &sc,
                                                          u32 lane) {
        u32 id = 0;
        u64 *group_slots = ws->tokens + sc.group * P::SPLIT;
        for (;;) {
            const u64 t = lane < P::SPLIT ? gmem::ld_relaxed_u64(group_slots + lane) : sc.prev;
            if (warp_ops::ballot(t == sc.prev) == 0xffffffffu)
                break;
            warp_ops::nanosleep(500);
        }
        if (lane == 0) {
            id = gmem::atom_add_relaxed(&ws->work_counter, 1);
            /* The work ID travels inside the token: one 64-bit load gives a partner the new
             * generation and the ID together. */
            gmem::st_relaxed_u64(group_slots, (sc.gen << 32) | id);
        }
        id = warp_ops::shfl0(id);
        sc.prev = (sc.gen << 32) | id;
        sc.gen += 1;
        return id;
    }

    /* The other members: wait for a new token, echo it, take its work ID. */
    static __device__ __forceinline__ u32 follow_group(TcWorkspace *ws, TcSchedState &sc,
                                                       u32 lane) {
        u64 *group_slots = ws->tokens + sc.group * P::SPLIT;
        u64 t = sc.prev;
        if (lane == 0) {
            while ((t = gmem::ld_relaxed_u64(group_slots)) == sc.prev)
                warp_ops::nanosleep(500);
            gmem::st_relaxed_u64(group_slots + sc.member, t); /* echo: read it */
        }
        const u32 lo = warp_ops::shfl0((u32)t), hi = warp_ops::shfl0((u32)(t >> 32));
        sc.prev = ((u64)hi << 32) | lo;
        return lo;
    }

    /* Whole warp, cluster rank 0 only: claim work ID number i and publish it to every CTA of
     * the cluster with st.async, which completes 8 bytes on the reader's ring barrier. */
    static __device__ void run(const TcCtaState &c, const jitgemm_tc_params &p, TcSchedState &sc,
                               u32 i) {
        const u32 lane = threadIdx.x % 32, s = i % P::WORK_SLOTS;
        TcWorkspace *ws = (TcWorkspace *)p.workspace;
        mbar::wait_cluster(c.smem + P::OFF_WORK_EMPTY + 8 * s, ((i / P::WORK_SLOTS) & 1) ^ 1);
        u32 id = 0, sub_m = 0;
        if constexpr (P::HAS_FALLBACK) {
            if (!c.fallback) {
                if (lane == 0)
                    id = gmem::atom_add_relaxed(&ws->work_counter, 1);
            } else if (sc.member == 0) {
                id = claim_for_group(ws, sc, lane);
            } else {
                id = follow_group(ws, sc, lane);
            }
            /* Member k of a group takes the k-th fallback-sized part of the tile. */
            sub_m = c.fallback ? sc.member * P::FB_M : 0;
        } else {
            (void)sc;
            if (lane == 0)
                id = gmem::atom_add_relaxed(&ws->work_counter, 1);
        }
        id = warp_ops::shfl0(id);
        if (id > c.total)
            id = c.total; /* one terminal value for every reader */
        if (lane < c.ncta) {
            const u32 bar = cluster::mapa(c.smem + P::OFF_WORK_FULL + 8 * s, lane);
            mbar::expect_arrive_remote(bar, 8);
            mbar::st_async_v2(cluster::mapa(c.smem + P::OFF_WORK_IDS + 8 * s, lane), id, sub_m,
                              bar);
        }
        warp_ops::sync();
    }
};

#endif /* JITGEMM_TCGEN05_SCHEDULER_CUH */
