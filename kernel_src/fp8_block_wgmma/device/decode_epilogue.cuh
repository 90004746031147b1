/*
 * The decode route's epilogue, after a unit's main loop. The partials are already scaled (the
 * main loop applied SFA and SFB per block), so what is left is the split-K reduction, alpha,
 * the epilogue's arithmetic and one rounding to BF16:
 *
 *   SPLIT == 1  the tile goes [token][row] through shared memory straight to finish().
 *   SPLIT > 1   each unit writes its partial to its slice of the tile's workspace; the last of
 *               the tile's SPLIT units to finish (a counter per tile, bumped after a GPU-scope
 *               fence) adds the slices in the fixed order s = 0, 1, ..., SPLIT - 1, so D is
 *               bit-identical run to run whatever order the units finish in, and sets the
 *               counter back to 0 (zeroed once when the workspace is allocated; every launch
 *               leaves it zero). No atomic touches D, and launches that share a workspace are
 *               ordered by the host (kernel_src/fp8_block_wgmma/launch.c), never by a lock here.
 *
 * Workspace: per tile (mt, nt) -- index mt * N_TILES + nt -- SPLIT slices of TOK x BW floats,
 * token-major ([s][token][row], so a gate/up row pair is one 8-byte load); only tokens < M are
 * written and read. Bytes: ceil(M / TOK) * N_TILES * SPLIT * TOK * BW * 4.
 */
#ifndef JITGEMM_BSW_DECODE_EPILOGUE_CUH
#define JITGEMM_BSW_DECODE_EPILOGUE_CUH

#include "device/convert.cuh"
#include "device/sm90.cuh"
#include "fp8_block_wgmma/device/decode_tile.cuh"
#include "fp8_block_wgmma/device/params.cuh"

template <class T> struct BswDecodeEpilogue {
    typedef float Acc[T::WAVES][T::ACC];

    /* Accumulator -> dst[token * pitch + row] (a workspace slice in global memory or the staging
     * tile in shared memory), tokens < m_valid only; the layout of decode_mainloop.cuh. */
    static __device__ __forceinline__ void store_partial(float *dst, int pitch, const Acc &acc,
                                                         int cwg, int warp, int lane,
                                                         int m_valid) {
        const int g = lane >> 2, t = lane & 3;
#pragma unroll
        for (int v = 0; v < T::WAVES; v++)
#pragma unroll
            for (int j = 0; j < T::TJ; j++)
#pragma unroll
                for (int h = 0; h < 2; h++)
#pragma unroll
                    for (int e = 0; e < 2; e++) {
                        const int tok = 8 * j + 2 * t + e;
                        const int row = cwg * T::WG_ROWS + v * 64 + warp * 16 + g + 8 * h;
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

    /* One tile by the 256 consumer threads: sum the SPLIT partials in order (slice s at
     * src + s * slice_stride), alpha, the epilogue, one rounding, the store. Each thread takes a
     * pair of adjacent weight rows of one token (a gate/up pair for swiglu, two output columns
     * otherwise); consecutive threads take consecutive pairs, so loads and stores coalesce. D is
     * stored element by element (ldd may be odd). */
    template <bool GLOBAL>
    static __device__ __forceinline__ void finish(const BswParams &p, const float *src, int pitch,
                                                  int slice_stride, const typename T::Unit &w,
                                                  int m_valid, int ctid) {
        enum : int { PAIRS = T::BW / 2 };
        const int n0 = w.nt * T::BW;
        const float alpha = p.alpha;
        for (int idx = ctid; idx < m_valid * PAIRS; idx += T::CONSUMER_THREADS) {
            const int tok = idx / PAIRS;
            const int r = 2 * (idx - tok * PAIRS);
            const int n = n0 + r;
            if (n >= T::N)
                continue;
            const float *q = src + tok * pitch + r;
            float v0, v1;
            load_pair<GLOBAL>(q, v0, v1);
#pragma unroll 16
            for (int s = 1; s < T::SPLIT; s++) {
                float a, b;
                load_pair<GLOBAL>(q + s * slice_stride, a, b);
                v0 += a;
                v1 += b;
            }
            const i64 m = (i64)w.mt * T::TOK + tok;
            u16 *drow = p.d + m * p.ldd;
            if (T::SWIGLU) {
                /* N is even, so the up row n + 1 exists whenever the gate row n does. */
                drow[n >> 1] = to_bf16(swiglu(v0 * alpha, v1 * alpha));
            } else {
                float o0 = v0 * alpha;
                if (T::ADD)
                    o0 += bf16_to_float(p.residual[m * p.ldr + n]);
                drow[n] = to_bf16(o0);
                if (n + 1 < T::N) {
                    float o1 = v1 * alpha;
                    if (T::ADD)
                        o1 += bf16_to_float(p.residual[m * p.ldr + n + 1]);
                    drow[n + 1] = to_bf16(o1);
                }
            }
        }
    }

    /* After a unit's main loop: hand its partial on and, if it completes the tile, finish. */
    static __device__ __forceinline__ void unit(const BswParams &p, const Acc &acc, u8 *smem_ptr,
                                                const typename T::Unit &w, int cwg, int ctid) {
        const int warp = (ctid >> 5) & 3, lane = ctid & 31;
        const i64 rest = p.m - (i64)w.mt * T::TOK;
        const int m_valid = rest < T::TOK ? (int)rest : T::TOK;
        if (T::SPLIT == 1) {
            float *staging = (float *)(smem_ptr + T::STAGING_OFFSET);
            store_partial(staging, T::STAGING_PITCH, acc, cwg, warp, lane, m_valid);
            named_bar_sync(T::BAR_CONSUMERS, T::CONSUMER_THREADS);
            finish<false>(p, staging, T::STAGING_PITCH, 0, w, m_valid, ctid);
            /* The next unit overwrites the staging tile. */
            named_bar_sync(T::BAR_CONSUMERS, T::CONSUMER_THREADS);
        } else {
            float *tile_ws = p.workspace + (i64)w.tile * (T::SPLIT * T::SLICE_FLOATS);
            store_partial(tile_ws + w.s * T::SLICE_FLOATS, T::BW, acc, cwg, warp, lane, m_valid);
            /* Release: every thread's partial stores are ordered before the counter bump that
             * follows the barrier. */
            fence_acq_rel_gpu();
            named_bar_sync(T::BAR_CONSUMERS, T::CONSUMER_THREADS);
            volatile u32 *flag = (volatile u32 *)(smem_ptr + T::FLAG_OFFSET);
            if (ctid == 0) {
                const u32 old = atom_add_acq_rel_gpu(p.counters + w.tile, 1u);
                const u32 last = old == (u32)(T::SPLIT - 1);
                /* All SPLIT units of the tile have arrived: nobody else touches the counter in
                 * this launch, so it can be reset for the next one. */
                if (last)
                    *(volatile u32 *)(p.counters + w.tile) = 0u;
                *flag = last;
            }
            named_bar_sync(T::BAR_CONSUMERS, T::CONSUMER_THREADS);
            /* The flag is rewritten only after the next unit's first barrier, which every
             * thread reaches after this read. */
            if (*flag) {
                /* Acquire: the other units' partials, published before their counter bumps. */
                fence_acq_rel_gpu();
                finish<true>(p, tile_ws, T::BW, T::SLICE_FLOATS, w, m_valid, ctid);
            }
        }
    }
};

#endif /* JITGEMM_BSW_DECODE_EPILOGUE_CUH */
