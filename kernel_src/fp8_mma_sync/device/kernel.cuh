/*
 * The FP8 mma.sync kernel: E4M3 x E4M3 with FP32 row scales (per token, per output channel),
 * BF16 out, epilogue linear, linear_add or linear_swiglu. cp.async moves 16-byte chunks of A
 * and B into a shared-memory ring of STAGES K tiles (producer.cuh), ldmatrix.x4 feeds
 * mma.sync.m16n8k32 (mainloop.cuh), the FP32 accumulators stay in registers and the epilogue
 * stores BF16 straight from them (epilogue.cuh); params.cuh holds the parameter block and the
 * shared-memory layout. The grid is the schedule: one CTA per tile, so there is no scheduler.
 *
 * The generated source instantiates MmaSyncKernel with the plan's numbers (docs/kernels-fp8.md):
 * N and K are compile-time constants (they are in the key); M is the only runtime size, so every
 * M of a token band shares one cubin. The output is rounded to BF16 once, after the whole
 * epilogue is done in FP32.
 */
#ifndef JITGEMM_FP8_MMA_SYNC_KERNEL_CUH
#define JITGEMM_FP8_MMA_SYNC_KERNEL_CUH

#include "device/common.cuh"
#include "device/warp_mma.cuh"
#include "fp8_mma_sync/device/epilogue.cuh"
#include "fp8_mma_sync/device/mainloop.cuh"
#include "fp8_mma_sync/device/params.cuh"
#include "fp8_mma_sync/device/producer.cuh"

template <i64 N, i64 K, int TILE_M, int TILE_N, int TILE_K, int STAGES, int WARPS_M, int WARPS_N,
          int EPILOGUE>
struct MmaSyncKernel {
    typedef MmaSyncShape<N, K, TILE_M, TILE_N, TILE_K, STAGES, WARPS_M, WARPS_N, EPILOGUE> S;
    enum : int { THREADS = S::THREADS, SMEM_BYTES = S::SMEM_BYTES };

    /* Grid: x over tiles of TILE_N B rows, y over tiles of TILE_M tokens. The K loop keeps
     * STAGES - 1 tiles in flight; every iteration commits one cp.async group (empty ones too),
     * so wait_group<STAGES - 2> always means "tile kt has landed". The barrier after it also
     * proves every warp is done with the stage the next copy overwrites. */
    static __device__ __forceinline__ void run(const jitgemm_mma_sync_params &p, u8 *smem) {
        const int tid = (int)threadIdx.x, lane = tid & 31, warp = tid >> 5;
        const int warp_m = warp / WARPS_N, warp_n = warp % WARPS_N;
        const i64 n0 = (i64)blockIdx.x * TILE_N, m0 = (i64)blockIdx.y * TILE_M;
        if (m0 >= p.m)
            return;
        const u32 base = smem_u32(smem);

        float acc[S::MMA_M][S::MMA_N][4];
#pragma unroll
        for (int i = 0; i < S::MMA_M; i++)
#pragma unroll
            for (int j = 0; j < S::MMA_N; j++)
#pragma unroll
                for (int e = 0; e < 4; e++)
                    acc[i][j][e] = 0.0f;

#pragma unroll
        for (int s = 0; s < STAGES - 1; s++) {
            if (s < S::K_TILES)
                MmaSyncProducer<S>::load_stage(p, base + s * S::STAGE_BYTES, m0, n0, s, tid);
            cp_async_commit();
        }
        for (int kt = 0; kt < S::K_TILES; kt++) {
            cp_async_wait<STAGES - 2>();
            __syncthreads();
            const int next = kt + STAGES - 1;
            if (next < S::K_TILES)
                MmaSyncProducer<S>::load_stage(p, base + (next % STAGES) * S::STAGE_BYTES, m0, n0,
                                               next, tid);
            cp_async_commit();
            MmaSyncMainloop<S>::compute_stage(base + (kt % STAGES) * S::STAGE_BYTES, warp_m,
                                              warp_n, lane, acc);
        }
        cp_async_wait<0>();
        MmaSyncEpilogue<S>::store(p, acc, m0, n0, warp_m, warp_n, lane);
    }
};

#endif /* JITGEMM_FP8_MMA_SYNC_KERNEL_CUH */
