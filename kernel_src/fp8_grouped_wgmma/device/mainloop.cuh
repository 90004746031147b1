/*
 * The consumer warpgroups' main loop of the grouped tile kernel: one tile's acc = A rows x B
 * rows over all of K, from the TMA ring, with wgmma m64nNk32 e4m3 and the FP32 promotion of every
 * 128-K block in two column halves (the dense wgmma kernel's default form,
 * docs/kernels-fp8-wgmma.md): each block goes into fresh partial accumulators, committed as one
 * wgmma batch per column half, and the first half is added into the FP32 accumulators while the
 * second half's wgmmas still run. Nothing stays in flight past a block, which ptxas needs to
 * keep the wgmmas unserialised in the rolled K loop.
 *
 * C is the kernel's configuration (kernel.cuh): BM rows of A per tile (one or two m64 waves per
 * consumer warpgroup), BN rows of B, STAGES ring slots, K.
 */
#ifndef JITGEMM_FP8_GROUPED_MAINLOOP_CUH
#define JITGEMM_FP8_GROUPED_MAINLOOP_CUH

#include "device/sm90.cuh"

template <class C> struct GroupedMainloop {
    enum : int {
        WAVES = C::WAVES,
        ACC = C::ACC,
        PARTS = 2,
        BK = C::BK,
    };
    static_assert(WAVES * C::BN <= 192, "promotion keeps 2 x WAVES x BN/2 accumulators");
    typedef float Part[ACC / PARTS];

    /* Column part h of one wave's accumulators: the m64nN layout puts columns 8j..8j+7 in
     * registers 4j..4j+3, so registers [h * ACC/PARTS, ...) are columns [h * BN/PARTS, ...). */
    static __device__ __forceinline__ Part &part_of(float (&r)[ACC], int h) {
        return *reinterpret_cast<Part *>(&r[h * (ACC / PARTS)]);
    }

    /* Before a batch: no access of these registers moves across, and earlier register writes
     * are ordered before the wgmmas that use them. */
    static __device__ __forceinline__ void open_batch(float (&acc)[WAVES][ACC]) {
#pragma unroll
        for (int w = 0; w < WAVES; w++)
            reg_fence_all(acc[w]);
        wgmma_fence();
    }

    /* One 128-K block into column part h of the partials, as its own batch. The part's B rows
     * start h * BN/PARTS rows (whole 1024-byte swizzle atoms) into the stage's B tile; the next
     * 32 K bytes of a row are 32 bytes on, the next m64 wave 64 rows on. */
    static __device__ __forceinline__ void mma_part(float (&part)[WAVES][ACC], u64 da, u64 db,
                                                    int h) {
#pragma unroll
        for (int kk = 0; kk < BK / 32; kk++) {
#pragma unroll
            for (int w = 0; w < WAVES; w++)
                WgmmaFp8<C::BN / PARTS>::mma(
                    part_of(part[w], h), wgmma_desc_advance(da, w * 64 * BK + kk * 32),
                    wgmma_desc_advance(db, h * (C::BN / PARTS) * BK + kk * 32), kk == 0 ? 0u : 1u);
        }
        wgmma_commit();
    }

    /* wait_group takes an immediate; `left` is a constant once the caller's loop unrolls. */
    static __device__ __forceinline__ void wait_left(int left) {
        if (left == 0)
            wgmma_wait<0>();
        else
            wgmma_wait<1>();
    }

    static __device__ __forceinline__ void promote_part(float (&acc)[WAVES][ACC],
                                                        float (&part)[WAVES][ACC], int h) {
#pragma unroll
        for (int w = 0; w < WAVES; w++) {
            reg_fence_all(part_of(part[w], h));
#pragma unroll
            for (int i = 0; i < ACC / PARTS; i++)
                acc[w][h * (ACC / PARTS) + i] += part[w][h * (ACC / PARTS) + i];
        }
    }

    /* Hand slot `stage` back to the producer: one arrival per consumer warp. */
    static __device__ __forceinline__ void release(u32 empty_bar, int stage, int lane) {
        if (lane == 0)
            mbar_arrive(empty_bar + stage * 8);
    }

    /* One tile. `stage` and `phase` run on across tiles, as the producer's do. The A rows of
     * consumer warpgroup cwg are rows cwg * BM/2 .. of the stage's A tile. */
    static __device__ __forceinline__ void run(float (&acc)[WAVES][ACC], float (&part)[WAVES][ACC],
                                               u32 smem, u32 full_bar, u32 empty_bar, int cwg,
                                               int lane, int &stage, u32 &phase) {
        const u64 da0 = wgmma_desc_sw128(smem + cwg * C::WG_ROWS * BK);
        const u64 db0 = wgmma_desc_sw128(smem + C::STAGES * C::A_BYTES);
#pragma unroll
        for (int w = 0; w < WAVES; w++)
#pragma unroll
            for (int i = 0; i < ACC; i++)
                acc[w][i] = 0.0f;
        for (int kb = 0; kb < C::K_BLOCKS; kb++) {
            mbar_wait(full_bar + stage * 8, phase);
            const u64 da = wgmma_desc_advance(da0, stage * C::A_BYTES);
            const u64 db = wgmma_desc_advance(db0, stage * C::B_BYTES);
            open_batch(part);
#pragma unroll
            for (int h = 0; h < PARTS; h++)
                mma_part(part, da, db, h);
#pragma unroll
            for (int h = 0; h < PARTS; h++) {
                wait_left(PARTS - 1 - h);
                if (h == PARTS - 1)
                    release(empty_bar, stage, lane);
                promote_part(acc, part, h);
            }
            if (++stage == C::STAGES) {
                stage = 0;
                phase ^= 1;
            }
        }
    }
};

#endif /* JITGEMM_FP8_GROUPED_MAINLOOP_CUH */
