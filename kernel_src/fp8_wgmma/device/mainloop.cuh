/*
 * The main loop of the FP8 wgmma tile kernel, run by each of the two consumer warpgroups
 * (setmaxnreg.inc): per 128-K block it waits on the stage's full barrier, issues four
 * wgmma.mma_async m64nBNk32 e4m3 x e4m3 per m64 wave of its BM/2 rows (descriptors built once and
 * advanced by one add per step), and releases the stage through the empty barrier of every CTA
 * of the cluster.
 *
 * Accumulation (PROMOTE). FP8 wgmma keeps about 14 bits of its running sum, so by default each
 * 128-K block goes into a fresh partial accumulator and is added into FP32 registers once its
 * wgmmas have completed (docs/kernels-fp8-wgmma.md, "Accumulation"):
 *   3  in two column halves committed as separate wgmma batches: the first half is added while
 *      the second half's wgmmas run (the default);
 *   0  no promotion: the whole K accumulates in the wgmma accumulators, one batch kept in flight
 *      (the fast form; error grows with K);
 *   1  the whole block added after one wait: a comparison form only, kept in its own file
 *      (mainloop_whole.cuh) and reached through JITGEMM_WGMMA_PROMOTE=whole.
 */
#ifndef JITGEMM_FP8_WGMMA_MAINLOOP_CUH
#define JITGEMM_FP8_WGMMA_MAINLOOP_CUH

#include "device/common.cuh"
#include "device/sm90.cuh"
#include "fp8_wgmma/device/mainloop_whole.cuh"
#include "fp8_wgmma/device/params.cuh"

template <class C> struct Fp8WgmmaMainloop {

    /* Open a batch of wgmmas on `acc`: the compiler may not move an access of its registers
     * across this point, and wgmma.fence orders the warpgroup's earlier register writes before
     * the wgmmas that read them. */
    static __device__ __forceinline__ void open_batch(float (&acc)[C::WAVES][C::ACC]) {
#pragma unroll
        for (int w = 0; w < C::WAVES; w++)
            reg_fence_all(acc[w]);
        wgmma_fence();
    }

    /* One 128-K block: 4 k32 steps for every wave of this warpgroup. scale_d == 0 on the first
     * step starts a fresh accumulation run. `da` and `db` describe the stage's A rows of this
     * warpgroup and its B tile; each step is one descriptor add further on (K-major, 128B
     * swizzle: the next 32 K bytes of a row start 32 bytes on, the next m64 wave 64 rows on). */
    static __device__ __forceinline__ void mma_block(float (&acc)[C::WAVES][C::ACC], u64 da, u64 db,
                                                     bool fresh) {
        open_batch(acc);
#pragma unroll
        for (int kk = 0; kk < C::BK / 32; kk++) {
#pragma unroll
            for (int w = 0; w < C::WAVES; w++)
                WgmmaFp8<C::BN>::mma(acc[w], wgmma_desc_advance(da, w * 64 * C::BK + kk * 32),
                                     wgmma_desc_advance(db, kk * 32), (fresh && kk == 0) ? 0u : 1u);
        }
        wgmma_commit();
#pragma unroll
        for (int w = 0; w < C::WAVES; w++)
            reg_fence_all(acc[w]);
    }

    /* Column part h of PARTS of one wave's accumulators: registers [h * ACC/PARTS, ...) hold
     * columns [h * BN/PARTS, (h + 1) * BN/PARTS) (the m64nN layout puts columns 8j..8j+7 in
     * registers 4j..4j+3), so an m64n(BN/PARTS) wgmma on that part computes exactly those
     * columns. */
    enum : int { PARTS = 2 }; /* PROMOTE 3; four parts measured 13% slower (shared memory) */
    typedef float Part[C::ACC / PARTS];
    static __device__ __forceinline__ Part &part_of(float (&r)[C::ACC], int h) {
        return *reinterpret_cast<Part *>(&r[h * (C::ACC / PARTS)]);
    }

    /* One 128-K block into column part h of the partials (PROMOTE 3), committed as its
     * own batch: the part's B rows start h * BN/PARTS rows (whole 1024-byte swizzle atoms of
     * 8 rows) into the stage's B tile. The caller fences the registers. */
    static __device__ __forceinline__ void mma_part(float (&part)[C::WAVES][C::ACC], u64 da, u64 db,
                                                    int h) {
#pragma unroll
        for (int kk = 0; kk < C::BK / 32; kk++) {
#pragma unroll
            for (int w = 0; w < C::WAVES; w++)
                WgmmaFp8<C::BN / PARTS>::mma(
                    part_of(part[w], h), wgmma_desc_advance(da, w * 64 * C::BK + kk * 32),
                    wgmma_desc_advance(db, h * (C::BN / PARTS) * C::BK + kk * 32),
                    kk == 0 ? 0u : 1u);
        }
        wgmma_commit();
    }

    /* Wait until at most `left` batches are in flight; `left` is a constant once the caller's
     * loop is unrolled, and wait_group takes an immediate. */
    static __device__ __forceinline__ void wgmma_wait_left(int left) {
        if (left == 0)
            wgmma_wait<0>();
        else
            wgmma_wait<1>();
    }

    /* acc part h += part part h, once that part's batch has completed. */
    static __device__ __forceinline__ void promote_part(float (&acc)[C::WAVES][C::ACC],
                                                        float (&part)[C::WAVES][C::ACC], int h) {
#pragma unroll
        for (int w = 0; w < C::WAVES; w++) {
            reg_fence_all(part_of(part[w], h));
#pragma unroll
            for (int i = 0; i < C::ACC / PARTS; i++)
                acc[w][h * (C::ACC / PARTS) + i] += part[w][h * (C::ACC / PARTS) + i];
        }
    }

    /* Hand slot `stage` back to the producers: one arrival per consumer warp on the empty
     * barrier of every CTA of the cluster, since each of them wrote part of the slot. */
    static __device__ __forceinline__ void release(u32 empty_bar, int stage, int lane) {
        if (lane == 0) {
            if (C::CLUSTER == 1) {
                mbar_arrive(empty_bar + stage * 8);
            } else {
#pragma unroll
                for (int r = 0; r < C::CLUSTER; r++)
                    mbar_arrive_cluster(empty_bar + stage * 8, (u32)r);
            }
        }
    }

    /* ---- consumer main loop for one tile: acc = A rows x B rows over all of K ---- */
    static __device__ __forceinline__ void run(float (&acc)[C::WAVES][C::ACC],
                                               float (&part)[C::WAVES][C::ACC], u32 smem,
                                               u32 full_bar, u32 empty_bar, int cwg, int lane,
                                               int &stage, u32 &phase) {
        /* Descriptors of stage 0, built once; a stage is a descriptor add away. */
        const u64 da0 = wgmma_desc_sw128(smem + cwg * C::WG_ROWS * C::BK);
        const u64 db0 = wgmma_desc_sw128(smem + C::STAGES * C::A_BYTES);
        int prev_stage = 0;
        if (C::PROMOTE) {
            /* Zeroed once per tile, so each block's promotion is a plain add, not a select of
             * "first block or not" on every accumulator. */
#pragma unroll
            for (int w = 0; w < C::WAVES; w++)
#pragma unroll
                for (int i = 0; i < C::ACC; i++)
                    acc[w][i] = 0.0f;
        }
        for (int kb = 0; kb < C::K_BLOCKS; kb++) {
            mbar_wait(full_bar + stage * 8, phase);
            const u64 da = wgmma_desc_advance(da0, stage * C::A_BYTES);
            const u64 db = wgmma_desc_advance(db0, stage * C::B_BYTES);
            if (C::PROMOTE == 3) {
                /* One batch per column part: each part's partial is added while the later
                 * parts' wgmmas still run, so only the last part's adds wait on an empty tensor
                 * pipe (nothing stays in flight past the block: ptxas serialises wgmmas left in
                 * flight across the loop, docs/kernels-fp8-wgmma.md). */
                open_batch(part);
#pragma unroll
                for (int h = 0; h < PARTS; h++)
                    mma_part(part, da, db, h);
#pragma unroll
                for (int h = 0; h < PARTS; h++) {
                    wgmma_wait_left(PARTS - 1 - h);
                    if (h == PARTS - 1)
                        release(empty_bar, stage, lane);
                    promote_part(acc, part, h);
                }
            } else if (C::PROMOTE) {
                /* The whole block after one wait: a comparison form (mainloop_whole.cuh). */
                Fp8WgmmaMainloopWhole<C, Fp8WgmmaMainloop>::block(acc, part, da, db, empty_bar,
                                                                  stage, lane);
            } else {
                mma_block(acc, da, db, kb == 0);
                /* Keep one batch in flight: the previous block's wgmmas are done, so its slot is
                 * free. */
                wgmma_wait<1>();
                if (kb > 0)
                    release(empty_bar, prev_stage, lane);
                prev_stage = stage;
            }
            if (++stage == C::STAGES) {
                stage = 0;
                phase ^= 1;
            }
        }
        if (!C::PROMOTE) {
            wgmma_wait<0>();
#pragma unroll
            for (int w = 0; w < C::WAVES; w++)
                reg_fence_all(acc[w]);
            release(empty_bar, prev_stage, lane);
        }
    }
};

#endif /* JITGEMM_FP8_WGMMA_MAINLOOP_CUH */
