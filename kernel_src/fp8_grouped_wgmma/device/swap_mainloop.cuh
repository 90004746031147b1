/*
 * The consumer main loop of the grouped swap-AB kernel (few rows per expert, decode): the
 * weights fill wgmma's M = 64 side (A operand: this warpgroup's 64 rows of the stage's BW weight
 * rows) and the expert's tokens its N side (B operand: the stage's token tile), so a tile of a
 * handful of tokens costs no 64- or 128-row padding of the MMA.
 *
 * wgmma's N is fixed per instruction, so the kernel holds one instantiation of the loop per N
 * bucket (8, 16, 32 and 64 tokens, up to the plan's token tile TOK) and each tile takes the
 * smallest bucket that holds its real token count, chosen at run time from the expert table.
 * The accumulator is sized for TOK tokens; a bucket of NB tokens uses its first NB / 2 registers
 * (the m64nN layout puts tokens 8j..8j+7 in registers 4j..4j+3, so those registers are tokens
 * 0..NB-1 in either shape), and the rest stay zero. Each 128-K block goes into fresh partial
 * accumulators and is added into FP32 registers after a full wgmma wait (promotion every 128 K);
 * the loop is bound by streaming the weights, so overlapping the add would buy nothing.
 *
 * The smem layout is the tile kernel's ring: the token tile where the tile kernel has its A rows,
 * the weight tile where it has its B rows, so the producer is the same (producer.cuh).
 */
#ifndef JITGEMM_FP8_GROUPED_SWAP_MAINLOOP_CUH
#define JITGEMM_FP8_GROUPED_SWAP_MAINLOOP_CUH

#include "device/sm90.cuh"

template <class C> struct GroupedSwapMainloop {
    enum : int {
        ACC = C::TOK / 2, /* f32 accumulator registers per thread for TOK tokens */
        BK = C::BK,
    };

    /* The smallest N bucket that holds `tokens` (1..TOK). */
    static __device__ __forceinline__ int bucket_of(int tokens) {
        return tokens <= 8 ? 8 : tokens <= 16 ? 16 : tokens <= 32 ? 32 : 64;
    }

    template <int NB>
    static __device__ __forceinline__ float (&first(float (&r)[ACC]))[NB / 2] {
        return *reinterpret_cast<float(*)[NB / 2]>(&r[0]);
    }

    /* The tile's K blocks with m64nNBk32. `dw0` and `dx0` describe stage 0's weight rows of this
     * warpgroup and token tile; a stage is a descriptor add away, a k32 step 32 bytes. */
    template <int NB>
    static __device__ __forceinline__ void loop(float (&acc)[ACC], u64 dw0, u64 dx0, u32 full_bar,
                                                u32 empty_bar, int lane, int &stage, u32 &phase) {
        float part[NB / 2];
        float(&a)[NB / 2] = first<NB>(acc);
        for (int kb = 0; kb < C::K_BLOCKS; kb++) {
            mbar_wait(full_bar + stage * 8, phase);
            const u64 dw = wgmma_desc_advance(dw0, stage * C::B_BYTES);
            const u64 dx = wgmma_desc_advance(dx0, stage * C::A_BYTES);
            reg_fence_all(part);
            wgmma_fence();
#pragma unroll
            for (int kk = 0; kk < BK / 32; kk++)
                WgmmaFp8<NB>::mma(part, wgmma_desc_advance(dw, kk * 32),
                                  wgmma_desc_advance(dx, kk * 32), kk == 0 ? 0u : 1u);
            wgmma_commit();
            wgmma_wait<0>();
            reg_fence_all(part);
            /* The slot is free once the wgmmas that read it are done: one arrival per warp. */
            if (lane == 0)
                mbar_arrive(empty_bar + stage * 8);
#pragma unroll
            for (int i = 0; i < NB / 2; i++)
                a[i] += part[i];
            if (++stage == C::STAGES) {
                stage = 0;
                phase ^= 1;
            }
        }
    }

    /* One tile of `tokens` real tokens (1..TOK): acc[weight row][token] over all of K. */
    static __device__ __forceinline__ void run(float (&acc)[ACC], u32 smem, u32 full_bar,
                                               u32 empty_bar, int cwg, int lane, int tokens,
                                               int &stage, u32 &phase) {
        const u64 dw0 = wgmma_desc_sw128(smem + C::STAGES * C::A_BYTES + cwg * 64 * BK);
        const u64 dx0 = wgmma_desc_sw128(smem);
#pragma unroll
        for (int i = 0; i < ACC; i++)
            acc[i] = 0.0f;
        const int nb = bucket_of(tokens);
        if (C::TOK >= 64 && nb == 64)
            loop<(C::TOK >= 64 ? 64 : 8)>(acc, dw0, dx0, full_bar, empty_bar, lane, stage, phase);
        else if (C::TOK >= 32 && nb == 32)
            loop<(C::TOK >= 32 ? 32 : 8)>(acc, dw0, dx0, full_bar, empty_bar, lane, stage, phase);
        else if (C::TOK >= 16 && nb == 16)
            loop<16>(acc, dw0, dx0, full_bar, empty_bar, lane, stage, phase);
        else
            loop<8>(acc, dw0, dx0, full_bar, empty_bar, lane, stage, phase);
    }
};

#endif /* JITGEMM_FP8_GROUPED_SWAP_MAINLOOP_CUH */
