/*
 * The producer of the grouped tile kernel: one thread streams, for every unit of this CTA in
 * the scheduler's order, the K blocks of the tile's A rows (BM x 128 bytes) and of its expert's
 * B rows (BN x 128 bytes) into a STAGES-deep ring of shared memory, each slot guarded by a full
 * barrier (TMA completes its bytes there) and an empty one (the consumer warps release it).
 *
 * A is one 2D tensor map over every expert's rows, and TMA cannot stop a box at an expert's
 * last row: the last row tile of an expert loads the first rows of the next expert (or, past
 * the end of A, zeros). Those rows are multiplied like the others and never stored: the store
 * warps write only the tile's `valid` rows. B is one 2D map over [G * N, K]: expert g's rows
 * start at g * N, and a column tile that runs past N loads rows of expert g + 1 (zeros after
 * the last), whose columns are never stored either.
 */
#ifndef JITGEMM_FP8_GROUPED_PRODUCER_CUH
#define JITGEMM_FP8_GROUPED_PRODUCER_CUH

#include "device/sm90.cuh"
#include "fp8_grouped_wgmma/device/params.cuh"
#include "fp8_grouped_wgmma/device/scheduler.cuh"

template <class C> struct GroupedProducer {
    static __device__ __forceinline__ void run(const GroupedParams &p, const u8 *table, u32 smem,
                                               u32 full_bar, u32 empty_bar) {
        typedef typename C::Sched S;
        const int units = S::units(table);
        int stage = 0;
        u32 phase = 0;
        for (int unit = blockIdx.x; unit < units; unit += gridDim.x) {
            const GroupedTile t = S::tile(table, unit);
            const int a_row = (int)t.row0;
            const int b_row = t.g * C::N + t.nt * C::BN;
            for (int kb = 0; kb < C::K_BLOCKS; kb++) {
                /* First pass: parity phase ^ 1 = 1 is "the phase before", complete at once. */
                mbar_wait(empty_bar + stage * 8, phase ^ 1);
                const u32 bar = full_bar + stage * 8;
                mbar_arrive_expect_tx(bar, C::STAGE_BYTES);
                tma_load_2d(smem + stage * C::A_BYTES, &p.tmap_a, bar, kb * C::BK, a_row);
                tma_load_2d(smem + C::STAGES * C::A_BYTES + stage * C::B_BYTES, &p.tmap_b, bar,
                            kb * C::BK, b_row);
                if (++stage == C::STAGES) {
                    stage = 0;
                    phase ^= 1;
                }
            }
        }
    }
};

#endif /* JITGEMM_FP8_GROUPED_PRODUCER_CUH */
