/*
 * The epilogue of the FP8 wgmma decode kernel (decode.cuh), run by its 256 consumer threads after
 * each unit's main loop. With SPLIT == 1 the unit's accumulator goes through a shared staging
 * tile straight to the epilogue. With SPLIT > 1 it is stored to the workspace as one k-split's
 * FP32 partial; the last unit of a tile to finish (an atomic counter per tile, bumped after a
 * GPU-scope fence) adds the SPLIT partials in the fixed order s = 0..SPLIT-1, so D is the same
 * bits whatever order the units finish in, applies the scales and the epilogue, writes D, and
 * sets the counter back to 0.
 */
#ifndef JITGEMM_FP8_WGMMA_DECODE_EPILOGUE_CUH
#define JITGEMM_FP8_WGMMA_DECODE_EPILOGUE_CUH

#include "device/common.cuh"
#include "device/convert.cuh"
#include "device/sm90.cuh"
#include "fp8_wgmma/device/params.cuh"

template <class D> struct Fp8WgmmaDecodeEpilogue {
    /* Accumulator -> dst[token * pitch + row] (generic pointer: a workspace slice in global memory
     * or the staging tile in shared memory), tokens < m_valid only.
     * Accumulator layout (m64nTOK f32): warp q of the warpgroup, lane = 4g + t holds weight rows
     * 16q + g (regs 4j, 4j+1) and 16q + g + 8 (regs 4j+2, 4j+3) of each wave at tokens 8j + 2t and
     * 8j + 2t + 1. One store instruction of a warp writes 8 consecutive rows of 4 tokens: four
     * full 32-byte sectors. */
    static __device__ __forceinline__ void store_partial(float *dst, int pitch,
                                                         const float (&acc)[D::WAVES][D::ACC],
                                                         int cwg, int warp, int lane, int m_valid) {
        const int g = lane >> 2, t = lane & 3;
#pragma unroll
        for (int v = 0; v < D::WAVES; v++)
#pragma unroll
            for (int j = 0; j < D::TOK / 8; j++)
#pragma unroll
                for (int h = 0; h < 2; h++)
#pragma unroll
                    for (int e = 0; e < 2; e++) {
                        const int tok = 8 * j + 2 * t + e;
                        const int row = cwg * D::WG_ROWS + v * 64 + warp * 16 + g + 8 * h;
                        if (tok < m_valid)
                            dst[tok * pitch + row] = acc[v][4 * j + 2 * h + e];
                    }
    }

    /* Two adjacent floats of a partial: from global memory through L2 (other SMs wrote them in
     * this kernel, L1 could hold stale lines), or from the shared staging tile. */
    template <bool GLOBAL>
    static __device__ __forceinline__ void load_pair(const float *q, float &a, float &b) {
        if (GLOBAL) {
            ld_global_cg_v2f32(q, a, b);
        } else {
            a = q[0];
            b = q[1];
        }
    }

    /* ---- epilogue of one tile, by the 256 consumer threads: sum the SPLIT partials in order
     * s = 0..SPLIT-1 (slice s at src + s * slice_stride, [token][pitch] floats), scale, apply the
     * epilogue, round once to BF16 and store. Each thread takes a pair of adjacent weight rows of
     * one token: a gate/up pair for swiglu, two output columns otherwise; consecutive threads take
     * consecutive pairs, so partial loads and D stores are coalesced. D is stored element by
     * element (ldd may be odd). */
    template <bool GLOBAL>
    static __device__ __forceinline__ void
    finish(const Fp8WgmmaDecodeParams &p, const float *src, int pitch, int slice_stride,
           const Fp8WgmmaDecodeUnit &w, int m_valid, int ctid) {
        enum : int { PAIRS = D::BW / 2 };
        const int n0 = w.nt * D::BW;
        for (int idx = ctid; idx < m_valid * PAIRS; idx += D::CONSUMER_THREADS) {
            const int tok = idx / PAIRS;
            const int r = 2 * (idx - tok * PAIRS);
            const int n = n0 + r;
            if (n >= D::N)
                continue;
            const float *q = src + tok * pitch + r;
            float v0, v1;
            load_pair<GLOBAL>(q, v0, v1);
#pragma unroll 16
            for (int s = 1; s < D::SPLIT; s++) {
                float a, b;
                load_pair<GLOBAL>(q + s * slice_stride, a, b);
                v0 += a;
                v1 += b;
            }
            const i64 m = (i64)w.mt * D::TOK + tok;
            const float rs = p.alpha * p.sa[m];
            u16 *drow = p.d + m * p.ldd;
            if (D::SWIGLU) {
                /* N is even, so the up row n + 1 exists whenever the gate row n does. */
                const float gate = v0 * rs * p.sb[n];
                const float up = v1 * rs * p.sb[n + 1];
                drow[n >> 1] = to_bf16(swiglu(gate, up));
            } else {
                float o0 = v0 * rs * p.sb[n];
                if (D::ADD)
                    o0 += bf16_to_float(p.residual[m * p.ldr + n]);
                drow[n] = to_bf16(o0);
                if (n + 1 < D::N) {
                    float o1 = v1 * rs * p.sb[n + 1];
                    if (D::ADD)
                        o1 += bf16_to_float(p.residual[m * p.ldr + n + 1]);
                    drow[n + 1] = to_bf16(o1);
                }
            }
        }
    }

    /* ---- after a unit's main loop: hand its partial on; if it completes the tile, finish ---- */
    static __device__ __forceinline__ void run(const Fp8WgmmaDecodeParams &p,
                                               const float (&acc)[D::WAVES][D::ACC], u8 *smem_ptr,
                                               const Fp8WgmmaDecodeUnit &w, int cwg, int ctid) {
        const int warp = (ctid >> 5) & 3, lane = ctid & 31;
        const i64 rest = p.m - (i64)w.mt * D::TOK;
        const int m_valid = rest < D::TOK ? (int)rest : D::TOK;
        if (D::SPLIT == 1) {
            float *staging = (float *)(smem_ptr + D::STAGING_OFFSET);
            store_partial(staging, D::STAGING_PITCH, acc, cwg, warp, lane, m_valid);
            named_bar_sync(D::BAR_CONSUMERS, D::CONSUMER_THREADS);
            finish<false>(p, staging, D::STAGING_PITCH, 0, w, m_valid, ctid);
            /* The next unit overwrites the staging tile. */
            named_bar_sync(D::BAR_CONSUMERS, D::CONSUMER_THREADS);
        } else {
            float *tile_ws = p.workspace + (i64)w.tile * (D::SPLIT * D::SLICE_FLOATS);
            store_partial(tile_ws + w.s * D::SLICE_FLOATS, D::BW, acc, cwg, warp, lane, m_valid);
            /* Release: every thread's partial stores are ordered before the counter bump that
             * follows the barrier. */
            fence_acq_rel_gpu();
            named_bar_sync(D::BAR_CONSUMERS, D::CONSUMER_THREADS);
            volatile u32 *flag = (volatile u32 *)(smem_ptr + D::FLAG_OFFSET);
            if (ctid == 0) {
                const u32 old = atom_add_acq_rel_gpu(p.counters + w.tile, 1u);
                const u32 last = old == (u32)(D::SPLIT - 1);
                /* All SPLIT units of the tile have arrived: nobody else touches the counter in
                 * this launch, so it can be reset for the next one. */
                if (last)
                    *(volatile u32 *)(p.counters + w.tile) = 0u;
                *flag = last;
            }
            named_bar_sync(D::BAR_CONSUMERS, D::CONSUMER_THREADS);
            /* The flag is rewritten only after the next unit's first barrier, which every thread
             * reaches after this read. */
            if (*flag) {
                /* Acquire: the other units' partials, published before their counter bumps. */
                fence_acq_rel_gpu();
                finish<true>(p, tile_ws, D::BW, D::SLICE_FLOATS, w, m_valid, ctid);
            }
        }
    }
};

#endif /* JITGEMM_FP8_WGMMA_DECODE_EPILOGUE_CUH */
