/*
 * The MMAs of the FP8 mma.sync kernel: per K tile, ldmatrix.x4 feeds mma.sync.m16n8k32 from the
 * swizzled stage, and the FP32 accumulators stay in registers (plain FP32 accumulation through
 * the MMA's C operand, in K order per m16n8 tile).
 */
#ifndef JITGEMM_FP8_MMA_SYNC_MAINLOOP_CUH
#define JITGEMM_FP8_MMA_SYNC_MAINLOOP_CUH

#include "device/warp_mma.cuh"
#include "fp8_mma_sync/device/params.cuh"

template <class S> struct MmaSyncMainloop {
    /* One K tile: K_STEPS k32 steps, each loading the B fragments of the warp's columns, then
     * per m16 row block one A fragment and its MMAs. Fragment layout of m16n8k32 (g = lane / 4,
     * t = lane % 4): A regs 0..3 = rows g, g+8 x K bytes 4t.. and 16+4t..; B regs 0, 1 = column
     * g x K bytes 4t.. and 16+4t... One ldmatrix.x4 gives an A fragment (16 rows x 32 bytes) or
     * the B fragments of two n8 tiles. */
    static __device__ __forceinline__ void compute_stage(u32 stage, int warp_m, int warp_n,
                                                         int lane,
                                                         float (&acc)[S::MMA_M][S::MMA_N][4]) {
        const u32 a_tile = stage, b_tile = stage + S::A_TILE_BYTES;
        /* Not unrolled: unrolling lets ptxas hoist every fragment of the K tile, which raised
         * the band-4 tile from 128 to 190 registers on sm_90a in ptxas' report. */
#pragma unroll 1
        for (int ks = 0; ks < S::K_STEPS; ks++) {
            u32 bf[S::MMA_N][2];
#pragma unroll
            for (int j = 0; j < S::MMA_N; j += 2) {
                /* matrices: tile j K 0-15, tile j K 16-31, tile j+1 K 0-15, tile j+1 K 16-31 */
                const int row = warp_n * S::WARP_TILE_N + j * 8 + (lane & 7) + (lane >> 4) * 8;
                u32 r[4];
                ldmatrix_x4(r, b_tile + S::tile_offset(row, ks * 2 + ((lane >> 3) & 1)));
                bf[j][0] = r[0];
                bf[j][1] = r[1];
                bf[j + 1][0] = r[2];
                bf[j + 1][1] = r[3];
            }
#pragma unroll
            for (int i = 0; i < S::MMA_M; i++) {
                /* matrices: rows 0-7 | rows 8-15, each at K bytes 0-15 | 16-31 */
                const int row =
                    warp_m * S::WARP_TILE_M + i * 16 + (lane & 7) + ((lane >> 3) & 1) * 8;
                u32 af[4];
                ldmatrix_x4(af, a_tile + S::tile_offset(row, ks * 2 + (lane >> 4)));
#pragma unroll
                for (int j = 0; j < S::MMA_N; j++)
                    mma_e4m3_16x8x32(acc[i][j], af, bf[j][0], bf[j][1]);
            }
        }
    }
};

#endif /* JITGEMM_FP8_MMA_SYNC_MAINLOOP_CUH */
