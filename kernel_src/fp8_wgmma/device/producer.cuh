/*
 * The producer of the FP8 wgmma tile kernel: one thread of the producer warpgroup (which gives
 * its registers away with setmaxnreg.dec) streams 128-K blocks of A (BM rows) and B (BN rows)
 * with TMA into a ring of STAGES stages. Each stage has a full and an empty mbarrier; the
 * producer's arrive.expect_tx names the stage's bytes and the TMA copies complete them. The
 * ring's stage and phase run on across tiles, so the next tile's blocks stream in while the
 * consumers are in the epilogue of the last one.
 */
#ifndef JITGEMM_FP8_WGMMA_PRODUCER_CUH
#define JITGEMM_FP8_WGMMA_PRODUCER_CUH

#include "device/common.cuh"
#include "device/sm90.cuh"
#include "fp8_wgmma/device/params.cuh"
#include "fp8_wgmma/device/scheduler.cuh"

template <class C> struct Fp8WgmmaProducer {
    /* ---- producer: one thread streams A and B K-blocks into the ring ----
     * Each stage holds this CTA's A tile and the whole B tile; with a cluster of 2 each CTA loads
     * its half of B into the same offset of both CTAs (multicast), and the full barrier of each
     * CTA expects the whole stage, its own loads and the peer's half alike. */
    static __device__ __forceinline__ void run(const Fp8WgmmaParams &p, u32 smem, u32 full_bar,
                                               u32 empty_bar,
                                               const typename Fp8WgmmaScheduler<C>::Work &w) {
        int stage = 0;
        u32 phase = 0;
        for (int unit = w.first; unit < w.units; unit += w.stride) {
            int mg, nt;
            Fp8WgmmaScheduler<C>::unit_coords(unit, w.m_groups, mg, nt);
            /* A CTA whose m-tile lies past M (the second of an odd count) reads the last real
             * m-tile's rows instead of a box wholly outside the tensor: its results are never
             * stored, and every load it issues stays an ordinary, in-bounds one. */
            const int mt = min_of(mg * C::CLUSTER + w.rank, w.m_tiles - 1);
            const int a_row = (int)Fp8WgmmaScheduler<C>::tile_row0(mt, p.m);
            for (int kb = 0; kb < C::K_BLOCKS; kb++) {
                /* First pass: parity phase^1 = 1 is "the phase before", complete at once. */
                mbar_wait(empty_bar + stage * 8, phase ^ 1);
                const u32 bar = full_bar + stage * 8;
                mbar_arrive_expect_tx(bar, C::STAGE_BYTES);
                tma_load_2d(smem + stage * C::A_BYTES, &p.tmap_a, bar, kb * C::BK, a_row);
                const u32 b_dst =
                    smem + C::STAGES * C::A_BYTES + stage * C::B_BYTES + w.rank * C::B_SLICE_BYTES;
                const int b_row = nt * C::BN + w.rank * C::B_SLICE_ROWS;
                if (C::CLUSTER == 1)
                    tma_load_2d(b_dst, &p.tmap_b, bar, kb * C::BK, b_row);
                else
                    tma_load_2d_multicast(b_dst, &p.tmap_b, bar, kb * C::BK, b_row,
                                          (u16)((1u << C::CLUSTER) - 1));
                if (++stage == C::STAGES) {
                    stage = 0;
                    phase ^= 1;
                }
            }
        }
    }
};

#endif /* JITGEMM_FP8_WGMMA_PRODUCER_CUH */
