/*
 * The tile kernel's producer: one thread of the producer warpgroup streams 128-K blocks of A
 * (BM rows) and B (BN rows) into the STAGES-deep ring with TMA. Each stage holds this CTA's A
 * tile and the whole B tile; with a cluster of 2 each CTA loads its half of B into the same
 * offset of both CTAs (multicast), and each CTA's full barrier expects the whole stage, its own
 * loads and the peer's half alike. The stage and phase run on across tiles, so the next tile
 * streams in while the consumers are in the epilogue of the last. The scales are not loaded
 * here: each consumer thread reads the few it needs (mainloop.cuh).
 */
#ifndef JITGEMM_BSW_PRODUCER_CUH
#define JITGEMM_BSW_PRODUCER_CUH

#include "device/sm90.cuh"
#include "fp8_block_wgmma/device/params.cuh"
#include "fp8_block_wgmma/device/scheduler.cuh"

template <class T> struct BswProducer {
    typedef BswSchedule<T> S;

    static __device__ __forceinline__ void run(const BswParams &p, u32 smem, u32 full_bar,
                                               u32 empty_bar, const typename S::Work &w) {
        int stage = 0;
        u32 phase = 0;
        for (int unit = w.first; unit < w.units; unit += w.stride) {
            int mg, nt;
            S::unit_coords(unit, w.m_groups, mg, nt);
            /* A CTA whose m-tile lies past M reads the last real m-tile's rows instead of a box
             * wholly outside the tensor: its results are never stored. */
            const int mt = min_of(mg * T::CLUSTER + w.rank, w.m_tiles - 1);
            const int a_row = (int)S::tile_row0(mt, p.m);
            const int b_row = nt * T::BN + w.rank * T::B_SLICE_ROWS;
            for (int kb = 0; kb < T::K_BLOCKS; kb++) {
                /* First pass: parity phase^1 = 1 is "the phase before", complete at once. */
                mbar_wait(empty_bar + stage * 8, phase ^ 1);
                const u32 bar = full_bar + stage * 8;
                mbar_arrive_expect_tx(bar, T::STAGE_BYTES);
                tma_load_2d(smem + stage * T::A_BYTES, &p.tmap_a, bar, kb * T::BK, a_row);
                const u32 b_dst = smem + T::STAGES * T::A_BYTES + stage * T::B_BYTES +
                                  w.rank * T::B_SLICE_BYTES;
                if (T::CLUSTER == 1)
                    tma_load_2d(b_dst, &p.tmap_b, bar, kb * T::BK, b_row);
                else
                    tma_load_2d_multicast(b_dst, &p.tmap_b, bar, kb * T::BK, b_row,
                                          (u16)((1u << T::CLUSTER) - 1));
                if (++stage == T::STAGES) {
                    stage = 0;
                    phase ^= 1;
                }
            }
        }
    }
};

#endif /* JITGEMM_BSW_PRODUCER_CUH */
