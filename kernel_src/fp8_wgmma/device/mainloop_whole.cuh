/*
 * A comparison form of the FP8 wgmma main loop, not the production one (mainloop.cuh): each
 * 128-K block's wgmmas go out as one batch into a fresh partial accumulator, and after a full
 * wait the partial is added into the FP32 accumulators. JITGEMM_WGMMA_PROMOTE=whole builds it
 * (PROMOTE 1), so that an A/B run can measure the default against it: the two column halves
 * beat it at 12 of the 15 large-M anchor shapes (geomean 0.978-0.985x torch against
 * 0.991-0.997x), and it came out ahead at three by 0.2-0.7%, within the runs' spread
 * (docs/performance.md). It uses one partial accumulator: two alternating ones make ptxas
 * serialise the wgmmas (docs/kernels-fp8-wgmma.md).
 */
#ifndef JITGEMM_FP8_WGMMA_MAINLOOP_WHOLE_CUH
#define JITGEMM_FP8_WGMMA_MAINLOOP_WHOLE_CUH

#include "device/common.cuh"
#include "device/sm90.cuh"

/* M is the production main loop (Fp8WgmmaMainloop<C>), whose block issue and stage release this
 * form shares. */
template <class C, class M> struct Fp8WgmmaMainloopWhole {
    /* One 128-K block: issue, wait for all of it, release the stage, add the partial. */
    static __device__ __forceinline__ void block(float (&acc)[C::WAVES][C::ACC],
                                                 float (&part)[C::WAVES][C::ACC], u64 da, u64 db,
                                                 u32 empty_bar, int stage, int lane) {
        M::mma_block(part, da, db, true);
        wgmma_wait<0>();
#pragma unroll
        for (int w = 0; w < C::WAVES; w++)
            reg_fence_all(part[w]);
        M::release(empty_bar, stage, lane);
#pragma unroll
        for (int w = 0; w < C::WAVES; w++)
#pragma unroll
            for (int i = 0; i < C::ACC; i++)
                acc[w][i] += part[w][i];
    }
};

#endif /* JITGEMM_FP8_WGMMA_MAINLOOP_WHOLE_CUH */
