/*
 * The decode route's main loop, per consumer warpgroup and unit:
 *
 *   acc[row][tok] = sum_{kb in the unit's split} SFB[row / 128][kb] * SFA[tok][kb] *
 *                   (sum_{k in block kb} B[row][k] * A[tok][k])
 *
 * with the weights (B) on wgmma's M side and the tokens (A) on its N side. Each 128-K block goes
 * into a fresh partial accumulator (four m64nTOKk32 per wave), and after its wgmmas complete the
 * partial is added into FP32 registers multiplied by the block's scales: FP8 wgmma keeps about
 * 14 bits of its running sum, so the partial must leave the tensor core after its 128 K anyway,
 * and a 128-K block is one scale group.
 *
 * Accumulator layout (m64nTOK, f32): warp q of the warpgroup, lane 4g + t, holds weight rows
 * 16q + g (registers 4j, 4j+1) and 16q + g + 8 (4j+2, 4j+3) of each wave, at tokens 8j + 2t and
 * 8j + 2t + 1. A warpgroup's weight rows lie in one N block (decode_tile.cuh), so a thread needs
 * per block one SFB value and the SFA of its TOK/4 tokens. They come from global memory into
 * registers, one block ahead: the loads for block kb + 1 go out before block kb's wgmmas and are
 * first used after them. The route is bound by the weight stream (a block of BW x 128 bytes per
 * SM takes about 1000 cycles at the HBM rate), and the consumers idle most of a block, so what a
 * scale load waits for is hidden behind the ring, which stays STAGES blocks ahead.
 */
#ifndef JITGEMM_BSW_DECODE_MAINLOOP_CUH
#define JITGEMM_BSW_DECODE_MAINLOOP_CUH

#include "device/loads.cuh"
#include "device/sm90.cuh"
#include "fp8_block_wgmma/device/decode_tile.cuh"
#include "fp8_block_wgmma/device/params.cuh"

template <class T> struct BswDecodeMainloop {
    typedef float Acc[T::WAVES][T::ACC];

    /* Which scales this thread reads for a unit. */
    struct ScaleSrc {
        i64 tok0; /* its first token: mt * TOK + 2t (then + 8j + e) */
        int nb;   /* its warpgroup's N block */
    };

    /* One k-block's scales: SFB of the warpgroup's N block, SFA of the thread's tokens. */
    struct Scales {
        float b;
        float a[T::TJ][2];
    };

    static __device__ __forceinline__ ScaleSrc scale_src(const typename T::Unit &w, int cwg,
                                                         int t) {
        ScaleSrc s;
        s.tok0 = (i64)w.mt * T::TOK + 2 * t;
        s.nb = (w.nt * T::BW + cwg * T::WG_ROWS) >> 7;
        return s;
    }

    /* The scales of block kb where `valid`; 0 for a token past M, an N block past N (its rows
     * hold zeros and are never stored), and for every one when not `valid`. */
    static __device__ __forceinline__ Scales load_scales(const BswParams &p, const ScaleSrc &s,
                                                         int kb, bool valid) {
        Scales v;
        v.b = ld_nc_f32_if(valid && s.nb < T::N_BLOCKS, p.sfb + (i64)s.nb * T::K_BLOCKS + kb);
#pragma unroll
        for (int j = 0; j < T::TJ; j++)
#pragma unroll
            for (int e = 0; e < 2; e++) {
                const i64 tok = s.tok0 + 8 * j + e;
                v.a[j][e] = ld_nc_f32_if(valid && tok < p.m,
                                         p.sfa + tok * p.sfa_stride_m + (i64)kb * p.sfa_stride_k);
            }
        return v;
    }

    /* One 128-K block into a fresh partial accumulator: 4 k32 steps for every wave. `dw`
     * describes this warpgroup's weight rows of the block (wgmma A), `dx` its token tile (wgmma
     * B); each step is one descriptor add on (K-major, 128B swizzle: the next 32 K bytes of a row
     * start 32 bytes on, the next m64 wave 64 rows on). scale_d = 0 on the first step. */
    static __device__ __forceinline__ void mma_block(Acc &part, u64 dw, u64 dx) {
#pragma unroll
        for (int v = 0; v < T::WAVES; v++)
            reg_fence_all(part[v]);
        wgmma_fence();
#pragma unroll
        for (int kk = 0; kk < T::BK / 32; kk++)
#pragma unroll
            for (int v = 0; v < T::WAVES; v++)
                WgmmaFp8<T::TOK>::mma(part[v], wgmma_desc_advance(dw, v * 64 * T::BK + kk * 32),
                                      wgmma_desc_advance(dx, kk * 32), kk == 0 ? 0u : 1u);
        wgmma_commit();
#pragma unroll
        for (int v = 0; v < T::WAVES; v++)
            reg_fence_all(part[v]);
    }

    /* acc = this warpgroup's weight rows x TOK tokens over the unit's K blocks, scaled. `cur`
     * holds the scales of the unit's first block on entry. The partial is read only after
     * wgmma_wait<0>, with no other wgmma of this warpgroup in flight, so ptxas keeps the wgmma
     * pipeline. */
    static __device__ __forceinline__ void run(const BswParams &p, Acc &acc,
                                               const typename T::Unit &w, const ScaleSrc &src,
                                               Scales &cur, u32 smem, u32 full_bar, u32 empty_bar,
                                               int cwg, int lane, int &stage, u32 &phase) {
        const u64 dw0 = wgmma_desc_sw128(smem + T::W_OFFSET + cwg * T::WG_ROWS * T::BK);
        const u64 dx0 = wgmma_desc_sw128(smem + T::X_OFFSET);
        Acc part;
#pragma unroll
        for (int v = 0; v < T::WAVES; v++)
#pragma unroll
            for (int i = 0; i < T::ACC; i++)
                acc[v][i] = 0.0f;
        for (int kb = w.kb0; kb < w.kb1; kb += T::KSUB) {
            mbar_wait(full_bar + stage * 8, phase);
            const int nsub = min_of((int)T::KSUB, w.kb1 - kb);
#pragma unroll
            for (int b = 0; b < T::KSUB; b++) {
                if (b < nsub) {
                    const Scales nxt = load_scales(p, src, kb + b + 1, kb + b + 1 < w.kb1);
                    mma_block(part, wgmma_desc_advance(dw0, stage * T::W_STAGE + b * T::W_BYTES),
                              wgmma_desc_advance(dx0, stage * T::X_STAGE + b * T::X_BYTES));
                    float c[T::TJ][2];
#pragma unroll
                    for (int j = 0; j < T::TJ; j++)
#pragma unroll
                        for (int e = 0; e < 2; e++)
                            c[j][e] = cur.b * cur.a[j][e];
                    wgmma_wait<0>();
#pragma unroll
                    for (int v = 0; v < T::WAVES; v++)
                        reg_fence_all(part[v]);
                    /* The slot is free once the wgmmas that read its last block are done: one
                     * arrival per warp. */
                    if (b == nsub - 1 && lane == 0)
                        mbar_arrive(empty_bar + stage * 8);
#pragma unroll
                    for (int v = 0; v < T::WAVES; v++)
#pragma unroll
                        for (int j = 0; j < T::TJ; j++)
#pragma unroll
                            for (int h = 0; h < 2; h++)
#pragma unroll
                                for (int e = 0; e < 2; e++)
                                    acc[v][4 * j + 2 * h + e] += part[v][4 * j + 2 * h + e] * c[j][e];
                    cur = nxt;
                }
            }
            if (++stage == T::STAGES) {
                stage = 0;
                phase ^= 1;
            }
        }
    }
};

#endif /* JITGEMM_BSW_DECODE_MAINLOOP_CUH */
