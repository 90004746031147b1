/*
 * The tile kernel's producer: warp 0 of the producer warpgroup streams 128-K blocks of A
 * (BM rows), B (BN rows) and their scales into the STAGES-deep ring. Lane 0 loads A and B with
 * TMA; with a cluster of 2 each CTA loads its half of B into the same offset of both CTAs
 * (multicast), and each CTA's full barrier expects the whole stage's bytes, its own loads and
 * the peer's half alike. Every lane copies scales with cp.async: four SFA values (rows lane,
 * lane + 32, lane + 64, lane + 96 of the tile) and, on lanes 0 and 1, the SFB of the tile's
 * one or two N blocks, zero where the row or N block lies past the problem; then it arrives on
 * the full barrier once its copies have landed (cp.async.mbarrier.arrive.noinc). So a stage is
 * full when the TMA bytes and all 32 lanes' scales are there, and the consumers read the scales
 * from shared memory after the wait they make anyway: no consumer waits on a global load. The
 * stage and phase run on across tiles, so the next tile streams in while the consumers are in
 * the epilogue of the last.
 */
#ifndef JITGEMM_BSW_PRODUCER_CUH
#define JITGEMM_BSW_PRODUCER_CUH

#include "device/loads.cuh"
#include "device/sm90.cuh"
#include "fp8_block_wgmma/device/params.cuh"
#include "fp8_block_wgmma/device/scheduler.cuh"

template <class T> struct BswProducer {
    typedef BswSchedule<T> S;

    /* This lane's scale copies of one k-block into the stage's scale slot at `dst`: `sfa`
     * points at the k-block's SFA of the lane's first row (the others are 32, 64 and 96 rows
     * on), `rows_left` counts the rows from it to M (capped at BM), `sfb` at the SFB of N block
     * nb0 + lane where `sfb_ok` (lanes 0 and 1 only). Pointers advance by one k-block per call,
     * so that the producer's few registers (setmaxnreg.dec) hold no per-row address. */
    static __device__ __forceinline__ void copy_scales(const BswParams &p, u32 dst,
                                                       const float *sfa, int rows_left,
                                                       const float *sfb, bool sfb_ok, int lane) {
#pragma unroll
        for (int i = 0; i < T::BM / 32; i++)
            cp_async_4_zfill(dst + 4 * (lane + 32 * i), sfa + (i64)(32 * i) * p.sfa_stride_m,
                             32 * i < rows_left);
        if (lane < 1 + T::SPANS)
            cp_async_4_zfill(dst + 4 * (T::BM + lane), sfb, sfb_ok);
    }

    static __device__ __forceinline__ void run(const BswParams &p, u32 smem, u32 full_bar,
                                               u32 empty_bar, const typename S::Work &w,
                                               int lane) {
        int stage = 0;
        u32 phase = 0;
        for (int unit = w.first; unit < w.units; unit += w.stride) {
            int mg, nt;
            S::unit_coords(unit, w.m_groups, mg, nt);
            /* A CTA whose m-tile lies past M reads the last real m-tile's rows instead of a box
             * wholly outside the tensor: its results are never stored. */
            const int mt = min_of(mg * T::CLUSTER + w.rank, w.m_tiles - 1);
            const i64 a_row = S::tile_row0(mt, p.m);
            const int b_row = nt * T::BN + w.rank * T::B_SLICE_ROWS;
            const int nb = ((nt * T::BN) >> 7) + lane; /* lanes 0 and 1: SFB's N block */
            const bool sfb_ok = nb * 128 < T::N;
            const float *sfb = p.sfb + (i64)nb * T::K_BLOCKS;
            const float *sfa = p.sfa + (a_row + lane) * p.sfa_stride_m;
            const int rows_left = (int)min_of(p.m - (a_row + lane), (i64)T::BM);
            for (int kb = 0; kb < T::K_BLOCKS; kb++) {
                /* First pass: parity phase^1 = 1 is "the phase before", complete at once. Every
                 * lane waits: each one writes into the stage. */
                mbar_wait(empty_bar + stage * 8, phase ^ 1);
                const u32 bar = full_bar + stage * 8;
                if (lane == 0) {
                    mbar_arrive_expect_tx(bar, T::STAGE_BYTES);
                    tma_load_2d(smem + stage * T::A_BYTES, &p.tmap_a, bar, kb * T::BK,
                                (int)a_row);
                    const u32 b_dst = smem + T::STAGES * T::A_BYTES + stage * T::B_BYTES +
                                      w.rank * T::B_SLICE_BYTES;
                    if (T::CLUSTER == 1)
                        tma_load_2d(b_dst, &p.tmap_b, bar, kb * T::BK, b_row);
                    else
                        tma_load_2d_multicast(b_dst, &p.tmap_b, bar, kb * T::BK, b_row,
                                              (u16)((1u << T::CLUSTER) - 1));
                }
                copy_scales(p, smem + T::SCALE_OFFSET + stage * T::SCALE_BYTES, sfa, rows_left,
                            sfb, sfb_ok, lane);
                sfa += p.sfa_stride_k;
                sfb++;
                cp_async_mbar_arrive_noinc(bar);
                if (++stage == T::STAGES) {
                    stage = 0;
                    phase ^= 1;
                }
            }
        }
    }
};

#endif /* JITGEMM_BSW_PRODUCER_CUH */
