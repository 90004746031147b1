/*
 * The tile kernel's main loop, per consumer warpgroup and tile:
 *
 *   acc[r][c] = sum_kb SFA[r][kb] * SFB[c / 128][kb] * (sum_{k in block kb} A[r][k] * B[c][k])
 *
 * Each 128-K block (one stage, one scale group) goes into fresh partial accumulators with four
 * wgmma m64n(BN/2)k32 per column half, each half committed as its own batch; once a half's
 * batch is done its partials are added into the FP32 accumulators multiplied by the block's
 * scale of their row and column, while the other half's wgmmas still run. FP8 wgmma keeps
 * about 14 bits of its running sum, so a block's partial must leave the tensor core after its
 * 128 K anyway (docs/kernels-fp8-wgmma.md, "Accumulation"); the scales ride on that add, an
 * FFMA instead of an FADD.
 *
 * Accumulator layout (wgmma m64nN, f32): warp q of the warpgroup, lane 4g + t, holds rows
 * 16q + g (registers 4j, 4j+1) and 16q + g + 8 (registers 4j+2, 4j+3) at columns 8j + 2t and
 * 8j + 2t + 1. So a thread needs per block two SFA values (its two rows) and the SFB of the
 * N block of each column group j: the tile's first N block, or for j >= jsplit the next one
 * (a tile of BN not dividing 128 can start inside an N block and end in the next; 8j + 2t and
 * 8j + 2t + 1 always lie in one N block, since N blocks start on multiples of 8).
 *
 * The scales are in the stage with A and B (the producer copies them there, producer.cuh): a
 * thread reads its two SFA values and the two SFB values of the next stage from shared memory
 * during the current block, a block before it uses them, into one of two register sets that
 * alternate between even and odd blocks. The first H200 run read
 * them from global memory into registers one block ahead, and later two blocks ahead: both
 * left the consumers waiting on those loads (Nsight Compute: long-scoreboard stalls 1.75 per
 * issued instruction, L1 at 90% of its throughput with the wgmma operand reads) at 1.25-1.5x
 * the row-scaled kernel's time on the same tile (docs/kernels-fp8-block-wgmma.md).
 */
#ifndef JITGEMM_BSW_MAINLOOP_CUH
#define JITGEMM_BSW_MAINLOOP_CUH

#include "device/loads.cuh"
#include "device/sm90.cuh"
#include "fp8_block_wgmma/device/params.cuh"

template <class T> struct BswMainloop {
    typedef float Acc[T::ACC];
    typedef float Part[T::ACC / T::PARTS];

    /* Which scales this thread reads for a tile. */
    struct ScaleRows {
        int r0;     /* its first accumulator row in the tile (the second is r0 + 8) */
        int jsplit; /* column groups j >= jsplit lie in the tile's second N block */
    };

    /* One k-block's scales: SFA of the two rows, SFB of the two N blocks. */
    struct Scales {
        float a0, a1, b0, b1;
    };

    /* `wg_row0`: the warpgroup's first row in the tile; `n0`: the tile's first B row. */
    static __device__ __forceinline__ ScaleRows scale_rows(int wg_row0, int n0, int warp, int g) {
        ScaleRows s;
        s.r0 = wg_row0 + warp * 16 + g;
        s.jsplit = (((n0 >> 7) + 1) * 128 - n0) >> 3;
        return s;
    }

    /* The stage's scales for this thread, from the slot at shared address `slot`
     * (producer.cuh's layout: SFA of the tile's rows, then SFB of its two N blocks; zeros past
     * M and N). */
    static __device__ __forceinline__ Scales stage_scales(u32 slot, const ScaleRows &s) {
        Scales v;
        v.a0 = ld_shared_f32(slot + 4 * s.r0);
        v.a1 = ld_shared_f32(slot + 4 * (s.r0 + 8));
        v.b0 = ld_shared_f32(slot + 4 * T::BM);
        v.b1 = T::SPANS ? ld_shared_f32(slot + 4 * (T::BM + 1)) : 0.0f;
        return v;
    }

    /* Column half h of the accumulators: registers [h * ACC/2, (h + 1) * ACC/2) hold columns
     * [h * BN/2, (h + 1) * BN/2), so an m64n(BN/2) wgmma on that part computes exactly those. */
    static __device__ __forceinline__ Part &part_of(Acc &r, int h) {
        return *reinterpret_cast<Part *>(&r[h * (T::ACC / T::PARTS)]);
    }

    /* One 128-K block into column half h of the partials, committed as its own batch: the
     * half's B rows start h * BN/2 rows (whole 1024-byte swizzle atoms) into the stage's B
     * tile; each k32 step is one descriptor add on (K-major, 128B swizzle: the next 32 K bytes
     * of a row start 32 bytes on). scale_d = 0 on the first step starts a fresh sum. */
    static __device__ __forceinline__ void mma_part(Acc &part, u64 da, u64 db, int h) {
#pragma unroll
        for (int kk = 0; kk < T::BK / 32; kk++)
            WgmmaFp8<T::BN / T::PARTS>::mma(
                part_of(part, h), wgmma_desc_advance(da, kk * 32),
                wgmma_desc_advance(db, h * (T::BN / T::PARTS) * T::BK + kk * 32),
                kk == 0 ? 0u : 1u);
        wgmma_commit();
    }

    /* acc half h += partial half h x its scales, once that half's batch has completed.
     * sc[i][b]: SFA of row i times SFB of N block b. */
    static __device__ __forceinline__ void promote_part(Acc &acc, Acc &part, int h,
                                                        const float (&sc)[2][2], int jsplit) {
        reg_fence_all(part_of(part, h));
#pragma unroll
        for (int jj = 0; jj < T::J / T::PARTS; jj++) {
            const int j = h * (T::J / T::PARTS) + jj;
            const bool hi = T::SPANS && j >= jsplit;
#pragma unroll
            for (int i = 0; i < 2; i++) {
                const float c = hi ? sc[i][1] : sc[i][0];
                acc[4 * j + 2 * i] += part[4 * j + 2 * i] * c;
                acc[4 * j + 2 * i + 1] += part[4 * j + 2 * i + 1] * c;
            }
        }
    }

    /* Hand slot `stage` back to the producers: one arrival per consumer warp on the empty
     * barrier of every CTA of the cluster, since each of them wrote part of the slot. */
    static __device__ __forceinline__ void release(u32 empty_bar, int stage, int lane) {
        if (lane == 0) {
            if (T::CLUSTER == 1) {
                mbar_arrive(empty_bar + stage * 8);
            } else {
#pragma unroll
                for (int r = 0; r < T::CLUSTER; r++)
                    mbar_arrive_cluster(empty_bar + stage * 8, (u32)r);
            }
        }
    }

    /* Read the scales of the stage after `stage` into `fill`, waiting until that stage is
     * full (the producer runs STAGES blocks ahead, so it nearly always is already). */
    static __device__ __forceinline__ void prefetch_next(const ScaleRows &rows, u32 smem,
                                                         u32 full_bar, int stage, u32 phase,
                                                         Scales &fill) {
        const int next = stage + 1 == T::STAGES ? 0 : stage + 1;
        mbar_wait(full_bar + next * 8, next == 0 ? phase ^ 1 : phase);
        fill = stage_scales(smem + T::SCALE_OFFSET + next * T::SCALE_BYTES, rows);
    }

    /* One 128-K block on the stage `stage`, whose scales are in `use`; if `more` (a block
     * follows, in this tile or the next), the next stage's scales are read into `fill` on the
     * way, a whole block before they are needed: a shared-memory load waits behind the
     * wgmmas' operand reads for hundreds of cycles (docs/kernels-fp8-block-wgmma.md). */
    static __device__ __forceinline__ void block(Acc &acc, Acc &part, const ScaleRows &rows,
                                                 const Scales &use, Scales &fill, bool more,
                                                 u64 da0, u64 db0, u32 smem, u32 full_bar,
                                                 u32 empty_bar, int lane, int &stage,
                                                 u32 &phase) {
        mbar_wait(full_bar + stage * 8, phase);
        const u64 da = wgmma_desc_advance(da0, stage * T::A_BYTES);
        const u64 db = wgmma_desc_advance(db0, stage * T::B_BYTES);
        reg_fence_all(part);
        wgmma_fence();
#pragma unroll
        for (int h = 0; h < T::PARTS; h++)
            mma_part(part, da, db, h);
        const float sc[2][2] = {{use.a0 * use.b0, use.a0 * use.b1},
                                {use.a1 * use.b0, use.a1 * use.b1}};
        wgmma_wait<1>();
        promote_part(acc, part, 0, sc, rows.jsplit);
        if (more)
            prefetch_next(rows, smem, full_bar, stage, phase, fill);
        wgmma_wait<0>();
        release(empty_bar, stage, lane);
        promote_part(acc, part, 1, sc, rows.jsplit);
        if (++stage == T::STAGES) {
            stage = 0;
            phase ^= 1;
        }
    }

    /* acc = this warpgroup's 64 rows x BN columns of the tile, over all of K. `even` holds the
     * scales of the tile's first block on entry (first_scales, or the previous tile's last
     * block read them); with `more_tiles` the next tile's first block's are in `even` on
     * return. Two sets of registers alternate between even and odd blocks, the loop unrolled
     * by two, so that no copy between them waits on a load. Nothing stays in flight past a
     * block: ptxas serialises wgmma pipelines that a rolled loop leaves open
     * (docs/kernels-fp8-wgmma.md). */
    static __device__ __forceinline__ void run(Acc &acc, Acc &part, const ScaleRows &rows,
                                               Scales &even, Scales &odd, bool more_tiles,
                                               u32 smem, u32 full_bar, u32 empty_bar, int cwg,
                                               int lane, int &stage, u32 &phase) {
        /* Descriptors of stage 0, built once; a stage is a descriptor add away. */
        const u64 da0 = wgmma_desc_sw128(smem + cwg * T::WG_ROWS * T::BK);
        const u64 db0 = wgmma_desc_sw128(smem + T::STAGES * T::A_BYTES);
#pragma unroll
        for (int i = 0; i < T::ACC; i++)
            acc[i] = 0.0f;
        for (int kb = 0; kb + 2 <= T::K_BLOCKS; kb += 2) {
            block(acc, part, rows, even, odd, true, da0, db0, smem, full_bar, empty_bar, lane,
                  stage, phase);
            block(acc, part, rows, odd, even, kb + 2 < T::K_BLOCKS || more_tiles, da0, db0, smem,
                  full_bar, empty_bar, lane, stage, phase);
        }
        if (T::K_BLOCKS % 2) {
            block(acc, part, rows, even, odd, more_tiles, da0, db0, smem, full_bar, empty_bar,
                  lane, stage, phase);
            even = odd; /* once per tile */
        }
    }

    /* The scales of the first block of a CTA's first tile, as run() expects them. */
    static __device__ __forceinline__ void first_scales(const ScaleRows &rows, u32 smem,
                                                        u32 full_bar, Scales &even) {
        mbar_wait(full_bar, 0);
        even = stage_scales(smem + T::SCALE_OFFSET, rows);
    }
};

#endif /* JITGEMM_BSW_MAINLOOP_CUH */
