/*
 * The store-warp epilogue of the FP8 wgmma tile kernel (STORE_WARPS 1: linear and swiglu, the
 * default). Warps 1-3 of the producer warpgroup, idle otherwise, write each tile's alpha * sa and
 * sb into shared memory while its MMAs run; the consumers then only scale, round and write the
 * whole BF16 tile into a staging buffer and go on to the next tile, while the store warps copy
 * the buffer to D in 16-byte stores. Not linear_add: its residual is added before the one
 * rounding to BF16, so the consumers store it (epilogue.cuh).
 */
#ifndef JITGEMM_FP8_WGMMA_EPILOGUE_STORE_WARPS_CUH
#define JITGEMM_FP8_WGMMA_EPILOGUE_STORE_WARPS_CUH

#include "device/common.cuh"
#include "device/convert.cuh"
#include "device/sm90.cuh"
#include "fp8_wgmma/device/epilogue.cuh"
#include "fp8_wgmma/device/params.cuh"
#include "fp8_wgmma/device/scheduler.cuh"

template <class C> struct Fp8WgmmaStoreWarps {
    /* ---- the store-warp path (STORE_WARPS) ----
     * Three barriers pass each tile between the consumers and the store warps, one phase per
     * tile (so tile i waits on parity i & 1):
     *   scales   the store warps wrote the tile's alpha * sa and sb (96 arrivals)
     *   staged   the consumers wrote the tile's BF16 values to the staging buffer (256)
     *   drained  the store warps read the staging buffer out (96)
     * The store warps write tile i's scales only after waiting for staged(i - 1), when the
     * consumers have read tile i - 1's; the consumers overwrite the staging buffer only after
     * drained(i - 1). Neither side gets two phases ahead of the other. */
    struct Handoff {
        u32 scales, staged, drained;
    };
    static __device__ __forceinline__ Handoff handoff_of(u32 bars) {
        const u32 first = bars + 2 * C::STAGES * 8;
        return Handoff{first, first + 8, first + 16};
    }

    static __device__ __forceinline__ void run(const Fp8WgmmaParams &p, u8 *smem_ptr, Handoff h,
                                               const typename Fp8WgmmaScheduler<C>::Work &w) {
        const int sid = (int)threadIdx.x - 32; /* 0 .. STORE_THREADS - 1 */
        float *scales = (float *)(smem_ptr + C::SCALES_OFFSET);
        const u8 *staging = smem_ptr + C::STAGING_OFFSET;
        const i64 m = p.m;
        const bool d_vec = Fp8WgmmaEpilogue<C>::d_rows_16b(p);
        u32 parity = 0;
        for (int unit = w.first; unit < w.units; unit += w.stride) {
            int mg, nt;
            Fp8WgmmaScheduler<C>::unit_coords(unit, w.m_groups, mg, nt);
            const int mt = mg * C::CLUSTER + w.rank; /* past the last m-tile for a spare CTA */
            const i64 row0 = Fp8WgmmaScheduler<C>::tile_row0(mt, m); /* the MMA rows' first */
            /* Rows of the tile inside M, and the first one this tile stores (the rows below it
             * belong to the tile before, when the last m-tile was moved up); ints and two base
             * pointers keep the loops within the store warps' 40 registers. */
            const int in_m = (int)min_of((i64)C::BM, m - row0); /* <= 0 for a spare CTA */
            const int first = (int)max_of((i64)0, (i64)mt * C::BM - row0);
            const int n0 = nt * C::BN;
            /* 1. this tile's scales; rows and columns past the edges get 0 (never stored) */
            const float *sa = p.sa + row0;
            for (int i = sid; i < C::BM + C::BN; i += C::STORE_THREADS) {
                float v;
                if (i < C::BM) {
                    v = i < in_m ? p.alpha * sa[i] : 0.0f;
                } else {
                    const int c = n0 + i - C::BM;
                    v = c < C::N ? p.sb[c] : 0.0f;
                }
                scales[i] = v;
            }
            mbar_arrive(h.scales);
            /* 2. the staged tile -> D, 16 bytes per thread and step, rows in order */
            mbar_wait(h.staged, parity);
            enum : int { UNITS = C::TILE_NOUT / 8 };
            const int col0 = nt * C::TILE_NOUT;
            u16 *d = p.d + row0 * p.ldd + col0;
            for (int u = first * UNITS + sid; u < in_m * UNITS; u += C::STORE_THREADS) {
                const int r = u / UNITS, cu = u % UNITS;
                const int gcol = col0 + cu * 8;
                if (gcol >= C::NOUT)
                    continue;
                const uint4 v = *(const uint4 *)(staging + r * C::OUT_PITCH + cu * 16);
                Fp8WgmmaEpilogue<C>::store_bf16x8(d + r * p.ldd + cu * 8, v, gcol, d_vec);
            }
            mbar_arrive(h.drained);
            parity ^= 1;
        }
    }

    /* The consumers' part of the store-warp epilogue: scale, apply, round once to BF16 and write
     * this warpgroup's rows of the tile to the staging buffer (fragment layout as in
     * Fp8WgmmaEpilogue::store_tile()); the store warps write it to D while the next tile's MMAs
     * run. */
    static __device__ __forceinline__ void stage(const float (&acc)[C::WAVES][C::ACC], u8 *smem_ptr,
                                                 Handoff h, u32 parity, int cwg, int tid) {
        const int warp = tid >> 5, lane = tid & 31, g = lane >> 2, t = lane & 3;
        const float *scales = (const float *)(smem_ptr + C::SCALES_OFFSET);
        u8 *staging = smem_ptr + C::STAGING_OFFSET;
        mbar_wait(h.drained, parity ^ 1); /* the last tile is out (tile 0: at once) */
        mbar_wait(h.scales, parity);
        float rs[C::WAVES][2];
#pragma unroll
        for (int w = 0; w < C::WAVES; w++)
#pragma unroll
            for (int hh = 0; hh < 2; hh++)
                rs[w][hh] = scales[cwg * C::WG_ROWS + w * 64 + warp * 16 + g + 8 * hh];
#pragma unroll
        for (int j = 0; j < C::ACC / 4; j++) {
            const float2 cs = *(const float2 *)(scales + C::BM + 8 * j + 2 * t);
#pragma unroll
            for (int w = 0; w < C::WAVES; w++)
#pragma unroll
                for (int hh = 0; hh < 2; hh++) {
                    const int srow = cwg * C::WG_ROWS + w * 64 + warp * 16 + g + 8 * hh;
                    const float v0 = acc[w][4 * j + 2 * hh] * rs[w][hh] * cs.x;
                    const float v1 = acc[w][4 * j + 2 * hh + 1] * rs[w][hh] * cs.y;
                    if (C::EPILOGUE == FP8W_EPI_LINEAR_SWIGLU)
                        *(u16 *)(staging + srow * C::OUT_PITCH + (4 * j + t) * 2) =
                            to_bf16(swiglu(v0, v1));
                    else
                        *(u32 *)(staging + srow * C::OUT_PITCH + (8 * j + 2 * t) * 2) =
                            pack_bf16x2(v0, v1);
                }
        }
        mbar_arrive(h.staged);
    }
};

#endif /* JITGEMM_FP8_WGMMA_EPILOGUE_STORE_WARPS_CUH */
