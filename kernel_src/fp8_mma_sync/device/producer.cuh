/*
 * The loads of the FP8 mma.sync kernel: every thread issues cp.async copies of 16-byte chunks
 * of A and B into the stage of the shared-memory ring (the kernel's K loop keeps STAGES - 1
 * tiles in flight). Ragged tails need no predicates in the main loop: rows past M or N and
 * chunks past K are zero-filled by cp.async's src-size operand.
 */
#ifndef JITGEMM_FP8_MMA_SYNC_PRODUCER_CUH
#define JITGEMM_FP8_MMA_SYNC_PRODUCER_CUH

#include "device/warp_mma.cuh"
#include "fp8_mma_sync/device/params.cuh"

template <class S> struct MmaSyncProducer {
    /* Copies of one operand's K tile: consecutive threads take consecutive 16-byte chunks of a
     * row, so each warp reads whole 128-byte segments. Out-of-range rows and K chunks are
     * zero-filled. */
    template <int CHUNKS>
    static __device__ __forceinline__ void copy_tile(const u8 *ptr, i64 ld, i64 rows, i64 row0,
                                                     i64 k0, u32 tile, int tid) {
#pragma unroll
        for (int it = 0; it < (CHUNKS + S::THREADS - 1) / S::THREADS; it++) {
            const int idx = it * S::THREADS + tid;
            if (CHUNKS % S::THREADS == 0 || idx < CHUNKS) {
                const int row = idx / S::CHUNKS_PER_ROW, chunk = idx % S::CHUNKS_PER_ROW;
                const i64 grow = row0 + row, gk = k0 + chunk * 16;
                const bool ok = grow < rows && gk < S::K;
                const u8 *src = ptr + (ok ? grow * ld + gk : 0);
                cp_async_16(tile + S::tile_offset(row, chunk), src, ok ? 16u : 0u);
            }
        }
    }

    /* Issue the cp.async copies of K tile `kt`: A rows m0.. and B rows n0.. into `stage`. */
    static __device__ __forceinline__ void load_stage(const jitgemm_mma_sync_params &p, u32 stage,
                                                      i64 m0, i64 n0, int kt, int tid) {
        const i64 k0 = (i64)kt * S::TILE_K;
        copy_tile<S::A_CHUNKS>((const u8 *)p.a, p.lda, p.m, m0, k0, stage, tid);
        copy_tile<S::B_CHUNKS>((const u8 *)p.b, p.ldb, S::N, n0, k0, stage + S::A_TILE_BYTES,
                               tid);
    }
};

#endif /* JITGEMM_FP8_MMA_SYNC_PRODUCER_CUH */
