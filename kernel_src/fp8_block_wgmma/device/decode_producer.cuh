/*
 * The decode route's producer: one thread of the producer warpgroup streams, per stage, the
 * weight tile (BW x 128 bytes) and the token tile (TOK x 128 bytes) of up to KSUB consecutive
 * 128-K blocks of the unit's k-split into the STAGES-deep ring. The ring runs on across units,
 * so the next unit's weights stream in while the consumers reduce and store the last one.
 */
#ifndef JITGEMM_BSW_DECODE_PRODUCER_CUH
#define JITGEMM_BSW_DECODE_PRODUCER_CUH

#include "device/sm90.cuh"
#include "fp8_block_wgmma/device/decode_tile.cuh"
#include "fp8_block_wgmma/device/params.cuh"

template <class T> struct BswDecodeProducer {
    static __device__ __forceinline__ void run(const BswParams &p, u32 smem, u32 full_bar,
                                               u32 empty_bar, int units) {
        int stage = 0;
        u32 phase = 0;
        for (int u = blockIdx.x; u < units; u += gridDim.x) {
            const typename T::Unit w = T::unit_of(u);
            for (int kb = w.kb0; kb < w.kb1; kb += T::KSUB) {
                /* First pass: parity phase^1 = 1 is "the phase before", complete at once. */
                mbar_wait(empty_bar + stage * 8, phase ^ 1);
                const int nsub = min_of((int)T::KSUB, w.kb1 - kb);
                const u32 bar = full_bar + stage * 8;
                mbar_arrive_expect_tx(bar, (u32)(nsub * (T::W_BYTES + T::X_BYTES)));
#pragma unroll
                for (int i = 0; i < T::KSUB; i++)
                    if (i < nsub)
                        tma_load_2d(smem + T::W_OFFSET + stage * T::W_STAGE + i * T::W_BYTES,
                                    &p.tmap_b, bar, (kb + i) * T::BK, w.nt * T::BW);
#pragma unroll
                for (int i = 0; i < T::KSUB; i++)
                    if (i < nsub)
                        tma_load_2d(smem + T::X_OFFSET + stage * T::X_STAGE + i * T::X_BYTES,
                                    &p.tmap_a, bar, (kb + i) * T::BK, w.mt * T::TOK);
                if (++stage == T::STAGES) {
                    stage = 0;
                    phase ^= 1;
                }
            }
        }
    }
};

#endif /* JITGEMM_BSW_DECODE_PRODUCER_CUH */
