/*
 * The epilogue of the FP8 wgmma tile kernel where the consumer warpgroups store D themselves
 * (linear_add always, linear and swiglu with JITGEMM_WGMMA_EPILOGUE=consumers), and the pieces
 * the store warps share (epilogue_store_warps.cuh): row and column scales in the accumulator
 * layout, the 16-byte row rule and the 8-column store. Row scales on the FP32 accumulator, then
 * linear, linear_add (BF16 residual, rounded once) or linear_swiglu (B row 2j gate, 2j+1 up:
 * columns 2t and 2t+1 of the wgmma accumulator sit in one thread, so the pair is thread-local),
 * BF16 out. Rows and columns are written through shared memory 32 columns at a time, each warp
 * staging and storing its own rows, with 16-byte stores where D's rows allow them.
 */
#ifndef JITGEMM_FP8_WGMMA_EPILOGUE_CUH
#define JITGEMM_FP8_WGMMA_EPILOGUE_CUH

#include "device/common.cuh"
#include "device/convert.cuh"
#include "device/sm90.cuh"
#include "fp8_wgmma/device/params.cuh"
#include "fp8_wgmma/device/scheduler.cuh"

template <class C> struct Fp8WgmmaEpilogue {
    /* Whether every row of a BF16 matrix (`base`, `ld` elements apart) starts on a 16-byte
     * boundary, so that its rows take 16-byte loads and stores: D's, and linear_add's residual. */
    static __device__ __forceinline__ bool rows_16b(const u16 *base, i64 ld) {
        return (ld % 8 == 0) && (((u64)base & 15) == 0);
    }
    static __device__ __forceinline__ bool d_rows_16b(const Fp8WgmmaParams &p) {
        return rows_16b(p.d, p.ldd);
    }

    /* The consumers' store pass covers a warp's 16 staged rows of a wave in 8-column units, u
     * from 0 to 16 * EPI_CH / 8: unit u of wave w is row unit_row(w, warp, u) of the
     * warpgroup's rows, columns (u % (EPI_CH / 8)) * 8 .. + 7 of the chunk. */
    static __device__ __forceinline__ int unit_row(int w, int warp, int u) {
        return w * 64 + warp * 16 + u / (C::EPI_CH / 8);
    }

    /* Eight staged BF16 outputs to D at column gcol: one 16-byte store when D's rows allow it
     * and all eight lie below NOUT, else element by element up to NOUT. */
    static __device__ __forceinline__ void store_bf16x8(u16 *dst, const uint4 &v, int gcol,
                                                        bool d_vec) {
        if (d_vec && gcol + 8 <= C::NOUT) {
            st_global_v4(dst, v.x, v.y, v.z, v.w);
        } else {
            const u32 words[4] = {v.x, v.y, v.z, v.w};
#pragma unroll
            for (int e = 0; e < 8; e++)
                if (gcol + e < C::NOUT)
                    dst[e] = (u16)(words[e >> 1] >> (16 * (e & 1)));
        }
    }

    /* alpha * sa of the rows this thread holds in the accumulator layout (warp q, lane 4g + t:
     * rows 16q + g and 16q + g + 8 of each wave, from the warpgroup's first row row0); rows
     * past M get 0 and are never stored. */
    static __device__ __forceinline__ void
    load_row_scales(const Fp8WgmmaParams &p, i64 row0, int warp, int g, float (&rs)[C::WAVES][2]) {
#pragma unroll
        for (int w = 0; w < C::WAVES; w++)
#pragma unroll
            for (int h = 0; h < 2; h++) {
                const i64 r = row0 + w * 64 + warp * 16 + g + 8 * h;
                rs[w][h] = r < p.m ? p.alpha * p.sa[r] : 0.0f;
            }
    }

    /* sb of every column this thread holds (8j + 2t and 8j + 2t + 1 from the tile's first
     * column n0), 0 past N. */
    static __device__ __forceinline__ void load_col_scales(const Fp8WgmmaParams &p, int n0, int t,
                                                           float (&cs)[C::ACC / 4][2]) {
#pragma unroll
        for (int j = 0; j < C::ACC / 4; j++) {
            const int col = n0 + 8 * j + 2 * t;
            cs[j][0] = col < C::N ? p.sb[col] : 0.0f;
            cs[j][1] = col + 1 < C::N ? p.sb[col + 1] : 0.0f;
        }
    }

    /* ---- epilogue (linear, swiglu): scale, apply, round once to BF16, stage, store ----
     * Accumulator layout (m64nBN f32): warp q of the warpgroup, lane = 4g + t holds rows
     * 16q + g (regs 4j, 4j+1) and 16q + g + 8 (regs 4j+2, 4j+3) at columns 8j + 2t, 8j + 2t + 1.
     * The tile is written in chunks of EPI_CH output columns through this warpgroup's staging
     * buffer (WG_ROWS x EPI_PITCH bytes), then stored row by row: 16-byte stores when D's rows are
     * 16-byte aligned and the chunk is whole, else element stores. */
    static __device__ __forceinline__ void store_tile(const Fp8WgmmaParams &p,
                                                      const float (&acc)[C::WAVES][C::ACC],
                                                      u8 *staging, int mt, int nt, int cwg,
                                                      int tid) {
        const int warp = tid >> 5, lane = tid & 31, g = lane >> 2, t = lane & 3;
        const i64 m = p.m;
        const i64 row0 = Fp8WgmmaScheduler<C>::tile_row0(mt, m) +
                         cwg * C::WG_ROWS; /* first row of this warpgroup */
        const i64 own0 = (i64)mt * C::BM;  /* rows below are the last tile's */
        const int n0 = nt * C::BN;         /* first acc column of the tile */

        float rs[C::WAVES][2];
        load_row_scales(p, row0, warp, g, rs);

        const bool d_vec = d_rows_16b(p);

        /* The column scales of every column this thread holds, loaded in one batch before the
         * chunks: the warp syncs between chunks are memory clobbers, so loads left inside
         * a chunk could not be hoisted and each chunk would wait out one global-load latency.
         * (The promotion registers are dead here, so this costs no occupancy.) */
        float cs[C::ACC / 4][2];
        load_col_scales(p, n0, t, cs);

#pragma unroll
        for (int c = 0; c < C::TILE_NOUT / C::EPI_CH; c++) {
            /* 1. registers -> staging (this chunk's accumulator columns only) */
#pragma unroll
            for (int jj = 0; jj < C::EPI_CH_IN / 8; jj++) {
                const int j = c * (C::EPI_CH_IN / 8) + jj;
                const float s0 = cs[j][0];
                const float s1 = cs[j][1];
#pragma unroll
                for (int w = 0; w < C::WAVES; w++)
#pragma unroll
                    for (int h = 0; h < 2; h++) {
                        const int srow = w * 64 + warp * 16 + g + 8 * h;
                        float v0 = acc[w][4 * j + 2 * h] * rs[w][h] * s0;
                        float v1 = acc[w][4 * j + 2 * h + 1] * rs[w][h] * s1;
                        if (C::EPILOGUE == FP8W_EPI_LINEAR_SWIGLU) {
                            /* gate/up pair (acc columns 2i, 2i+1) -> output column i */
                            *(u16 *)(staging + srow * C::EPI_PITCH +
                                     (4 * j + t - c * C::EPI_CH) * 2) = to_bf16(swiglu(v0, v1));
                        } else {
                            *(u32 *)(staging + srow * C::EPI_PITCH +
                                     (8 * j + 2 * t - c * C::EPI_CH) * 2) = pack_bf16x2(v0, v1);
                        }
                    }
            }
            /* Each warp stores the 16 rows (per wave) it staged itself, so a warp-level sync
             * orders the staging and no warp waits on the others. */
            __syncwarp();

            /* 2. staging -> global: EPI_CH / 8 16-byte units per row */
            enum : int { UNITS = C::EPI_CH / 8 };
#pragma unroll
            for (int w = 0; w < C::WAVES; w++)
#pragma unroll
                for (int it = 0; it < 16 * UNITS / 32; it++) {
                    const int u = lane + 32 * it;
                    const int r = unit_row(w, warp, u), cu = u % UNITS;
                    const i64 grow = row0 + r;
                    const int gcol = nt * C::TILE_NOUT + c * C::EPI_CH + cu * 8;
                    if (grow >= own0 && grow < m && gcol < C::NOUT) {
                        const uint4 v = *(const uint4 *)(staging + r * C::EPI_PITCH + cu * 16);
                        store_bf16x8(p.d + grow * p.ldd + gcol, v, gcol, d_vec);
                    }
                }
            /* The next chunk (or tile) overwrites this warp's rows of the staging buffer. */
            __syncwarp();
        }
    }

    /* 2 x BF16 (the low and high halves of a word) plus 2 x FP32, rounded once to 2 x BF16. */
    static __device__ __forceinline__ u32 add_bf16x2(u32 r, float lo, float hi) {
        return pack_bf16x2(lo + bits_to_float(r << 16), hi + bits_to_float(r & 0xFFFF0000u));
    }

    /* ---- epilogue (linear_add): scale, stage in FP32, add the residual, round, store ----
     * As store_tile(), but the chunk is staged in FP32 and the residual is added in step 2, where
     * each lane holds 8 consecutive columns of one row: the residual is read in whole 16-byte
     * units (whole 32-byte sectors per row), where in the accumulator layout each load took 4
     * bytes and a warp's load touched 8 half-used sectors. Every residual unit of the tile is
     * loaded before the first chunk, so the tile waits out one memory latency, not one per
     * chunk. The value stored is the scaled product plus the residual in FP32, rounded once.
     *
     * The 16-byte path is straight-line code under a predicate (ptxas's compile time grows
     * with every branch in this unrolled function: docs/kernels-fp8-wgmma.md). What it cannot
     * take goes element by element in a loop that is not unrolled, once per chunk: every unit
     * when R's or D's rows are not 16-byte aligned, and the unit that straddles N when N % 8 is
     * not 0 (N is a template parameter, so that test folds away when it is). */
    static __device__ __forceinline__ void store_tile_add(const Fp8WgmmaParams &p,
                                                          const float (&acc)[C::WAVES][C::ACC],
                                                          u8 *staging, int mt, int nt, int cwg,
                                                          int tid) {
        enum : int {
            UNITS = C::EPI_CH / 8,    /* 8-column units per staged row */
            PASSES = 16 * UNITS / 32, /* units per lane and wave: the warp's 16 rows */
            WAVE_UNITS = 16 * UNITS,  /* units of one warp and wave */
            CHUNKS = C::TILE_NOUT / C::EPI_CH,
        };
        const int warp = tid >> 5, lane = tid & 31, g = lane >> 2, t = lane & 3;
        const i64 m = p.m;
        const i64 row0 = Fp8WgmmaScheduler<C>::tile_row0(mt, m) + cwg * C::WG_ROWS;
        const i64 own0 = (i64)mt * C::BM; /* rows below are the last tile's */
        const int n0 = nt * C::BN;
        /* In registers: the stores below are memory clobbers, after which fields of p would be
         * read from parameter space again. */
        const u16 *const residual = p.residual;
        u16 *const dout = p.d;
        const i64 ldr = p.ldr, ldd = p.ldd;
        const bool vec = rows_16b(dout, ldd) && rows_16b(residual, ldr);

        /* The residual of unit u = lane + 32 * it of wave w and chunk c (unit_row()). A unit
         * goes as one 16-byte load and store when it is one of this tile's rows inside M and
         * lies wholly below N. */
        auto whole_unit = [&](i64 grow, int gcol) {
            return vec && grow >= own0 && grow < m && gcol + 8 <= C::N;
        };
        uint4 res[CHUNKS][C::WAVES][PASSES];
#pragma unroll
        for (int c = 0; c < CHUNKS; c++)
#pragma unroll
            for (int w = 0; w < C::WAVES; w++)
#pragma unroll
                for (int it = 0; it < PASSES; it++) {
                    const int u = lane + 32 * it;
                    const i64 grow = row0 + unit_row(w, warp, u);
                    const int gcol = n0 + c * C::EPI_CH + (u % UNITS) * 8;
                    res[c][w][it] =
                        ld_global_v4_if(whole_unit(grow, gcol), residual + grow * ldr + gcol);
                }

        float rs[C::WAVES][2];
        load_row_scales(p, row0, warp, g, rs);
        float cs[C::ACC / 4][2];
        load_col_scales(p, n0, t, cs);

#pragma unroll
        for (int c = 0; c < CHUNKS; c++) {
            /* 1. registers -> staging, FP32 */
#pragma unroll
            for (int jj = 0; jj < C::EPI_CH / 8; jj++) {
                const int j = c * (C::EPI_CH / 8) + jj;
#pragma unroll
                for (int w = 0; w < C::WAVES; w++)
#pragma unroll
                    for (int h = 0; h < 2; h++) {
                        const int srow = w * 64 + warp * 16 + g + 8 * h;
                        const float v0 = acc[w][4 * j + 2 * h] * rs[w][h] * cs[j][0];
                        const float v1 = acc[w][4 * j + 2 * h + 1] * rs[w][h] * cs[j][1];
                        *(float2 *)(staging + srow * C::EPI_PITCH + (8 * jj + 2 * t) * 4) =
                            make_float2(v0, v1);
                    }
            }
            __syncwarp();

            /* 2. staging + residual -> BF16 -> D, 16 bytes a unit */
#pragma unroll
            for (int w = 0; w < C::WAVES; w++)
#pragma unroll
                for (int it = 0; it < PASSES; it++) {
                    const int u = lane + 32 * it;
                    const int r = unit_row(w, warp, u), cu = u % UNITS;
                    const i64 grow = row0 + r;
                    const int gcol = n0 + c * C::EPI_CH + cu * 8;
                    const u8 *src = staging + r * C::EPI_PITCH + cu * 32;
                    const float4 lo = *(const float4 *)src;
                    const float4 hi = *(const float4 *)(src + 16);
                    const uint4 rv = res[c][w][it];
                    st_global_v4_if(whole_unit(grow, gcol), dout + grow * ldd + gcol,
                                    add_bf16x2(rv.x, lo.x, lo.y), add_bf16x2(rv.y, lo.z, lo.w),
                                    add_bf16x2(rv.z, hi.x, hi.y), add_bf16x2(rv.w, hi.z, hi.w));
                }
            /* 2b. what the 16-byte path left: element by element */
            if (!vec || (C::N % 8 != 0 && n0 + (c + 1) * C::EPI_CH > C::N)) {
#pragma unroll 1
                for (int u = lane; u < C::WAVES * WAVE_UNITS; u += 32) {
                    const int r = unit_row(u / WAVE_UNITS, warp, u % WAVE_UNITS);
                    const i64 grow = row0 + r;
                    const int gcol = n0 + c * C::EPI_CH + u % UNITS * 8;
                    if (grow < own0 || grow >= m || gcol >= C::N || whole_unit(grow, gcol))
                        continue;
                    const float *src = (const float *)(staging + r * C::EPI_PITCH) + u % UNITS * 8;
                    const u16 *rrow = residual + grow * ldr + gcol;
                    u16 *drow = dout + grow * ldd + gcol;
#pragma unroll 1
                    for (int e = 0; e < 8 && gcol + e < C::N; e++)
                        drow[e] = to_bf16(src[e] + bf16_to_float(rrow[e]));
                }
            }
            /* The next chunk (or tile) overwrites this warp's rows of the staging buffer. */
            __syncwarp();
        }
    }
};

#endif /* JITGEMM_FP8_WGMMA_EPILOGUE_CUH */
