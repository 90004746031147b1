/*
 * The tile kernel's epilogues. The block scales are already in the accumulators (the main loop
 * multiplied each block's partial sums by them), so what is left is alpha, the epilogue's own
 * arithmetic, one rounding to BF16 and the stores:
 *
 *   linear        D[m][n] = bf16(alpha * acc[m][n])
 *   linear_add    D[m][n] = bf16(alpha * acc[m][n] + float(R[m][n]))
 *   linear_swiglu D[m][j] = bf16(silu(g) * u), g / u = alpha * acc of B rows 2j / 2j + 1
 *
 * Three ways to store, as the row-scaled wgmma kernel has them: the consumers in 32-column
 * chunks through their own staging rows (direct), the same staged in FP32 with the residual
 * added in the store pass (add), or the whole tile staged in BF16 for the producer warpgroup's
 * three spare warps to store while the consumers run the next tile (staged + store_warps).
 * Rows below mt * BM belong to the m-tile before (tile_row0) and rows from M on do not exist:
 * neither is stored, nor any column from Nout on.
 */
#ifndef JITGEMM_BSW_EPILOGUE_CUH
#define JITGEMM_BSW_EPILOGUE_CUH

#include "device/convert.cuh"
#include "device/sm90.cuh"
#include "fp8_block_wgmma/device/params.cuh"
#include "fp8_block_wgmma/device/scheduler.cuh"

template <class T> struct BswEpilogueStore {
    typedef float Acc[T::ACC];
    typedef BswSchedule<T> S;

    /* Whether every row of a BF16 matrix (`base`, `ld` elements apart) starts on a 16-byte
     * boundary, so that its rows take 16-byte loads and stores: D's, and linear_add's residual. */
    static __device__ __forceinline__ bool rows_16b(const u16 *base, i64 ld) {
        return (ld % 8 == 0) && (((u64)base & 15) == 0);
    }

    /* The consumers' store pass covers a warp's 16 staged rows in 8-column units u from 0 to
     * 16 * EPI_CH / 8: unit u is row unit_row(warp, u) of the warpgroup's 64, columns
     * (u % (EPI_CH / 8)) * 8 .. + 7 of the chunk. */
    static __device__ __forceinline__ int unit_row(int warp, int u) {
        return warp * 16 + u / (T::EPI_CH / 8);
    }

    /* Eight staged BF16 outputs to D at column gcol: one 16-byte store when D's rows allow it
     * and all eight lie below NOUT, else element by element up to NOUT. */
    static __device__ __forceinline__ void store_bf16x8(u16 *dst, const uint4 &v, int gcol,
                                                        bool d_vec) {
        if (d_vec && gcol + 8 <= T::NOUT) {
            st_global_v4(dst, v.x, v.y, v.z, v.w);
        } else {
            const u32 words[4] = {v.x, v.y, v.z, v.w};
#pragma unroll
            for (int e = 0; e < 8; e++)
                if (gcol + e < T::NOUT)
                    dst[e] = (u16)(words[e >> 1] >> (16 * (e & 1)));
        }
    }

    /* ---- linear and swiglu, stored by the consumers ----
     * Chunks of EPI_CH output columns go through this warpgroup's staging rows (64 x EPI_PITCH
     * bytes), then row by row to D. Each warp stages and stores its own 16 rows, so a warp sync
     * orders the staging and no warp waits on the others. */
    static __device__ __forceinline__ void direct(const BswParams &p, const Acc &acc, u8 *staging,
                                                  int mt, int nt, int cwg, int tid) {
        const int warp = tid >> 5, lane = tid & 31, g = lane >> 2, t = lane & 3;
        const i64 m = p.m;
        const i64 row0 = S::tile_row0(mt, m) + cwg * T::WG_ROWS; /* this warpgroup's first */
        const i64 own0 = (i64)mt * T::BM;                        /* rows below: the last tile's */
        const float alpha = p.alpha;
        const bool d_vec = rows_16b(p.d, p.ldd);
#pragma unroll
        for (int c = 0; c < T::TILE_NOUT / T::EPI_CH; c++) {
            /* 1. registers -> staging (this chunk's accumulator columns only) */
#pragma unroll
            for (int jj = 0; jj < T::EPI_CH_IN / 8; jj++) {
                const int j = c * (T::EPI_CH_IN / 8) + jj;
#pragma unroll
                for (int h = 0; h < 2; h++) {
                    const int srow = warp * 16 + g + 8 * h;
                    const float v0 = acc[4 * j + 2 * h] * alpha;
                    const float v1 = acc[4 * j + 2 * h + 1] * alpha;
                    if (T::EPILOGUE == BSW_EPI_LINEAR_SWIGLU)
                        /* gate/up pair (acc columns 2i, 2i+1) -> output column i */
                        *(u16 *)(staging + srow * T::EPI_PITCH + (4 * j + t - c * T::EPI_CH) * 2) =
                            to_bf16(swiglu(v0, v1));
                    else
                        *(u32 *)(staging + srow * T::EPI_PITCH +
                                 (8 * j + 2 * t - c * T::EPI_CH) * 2) = pack_bf16x2(v0, v1);
                }
            }
            __syncwarp();
            /* 2. staging -> D: EPI_CH / 8 16-byte units per row */
            enum : int { UNITS = T::EPI_CH / 8 };
#pragma unroll
            for (int it = 0; it < 16 * UNITS / 32; it++) {
                const int u = lane + 32 * it;
                const int r = unit_row(warp, u), cu = u % UNITS;
                const i64 grow = row0 + r;
                const int gcol = nt * T::TILE_NOUT + c * T::EPI_CH + cu * 8;
                if (grow >= own0 && grow < m && gcol < T::NOUT) {
                    const uint4 v = *(const uint4 *)(staging + r * T::EPI_PITCH + cu * 16);
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

    /* ---- linear_add ----
     * As direct(), but the chunk is staged in FP32 and the residual is added in the store pass,
     * where each lane holds 8 consecutive columns of one row: the residual is read in whole
     * 16-byte units, all of the tile's before the first chunk (one memory latency per tile).
     * The sum is rounded once. The 16-byte path is straight-line predicated code; what it
     * cannot take (rows of D or R not 16-byte aligned, the unit that straddles N) goes element
     * by element in a loop that is not unrolled. */
    static __device__ __forceinline__ void add(const BswParams &p, const Acc &acc, u8 *staging,
                                               int mt, int nt, int cwg, int tid) {
        enum : int {
            UNITS = T::EPI_CH / 8,    /* 8-column units per staged row */
            PASSES = 16 * UNITS / 32, /* units per lane: the warp's 16 rows */
            WARP_UNITS = 16 * UNITS,
            CHUNKS = T::TILE_NOUT / T::EPI_CH,
        };
        const int warp = tid >> 5, lane = tid & 31, g = lane >> 2, t = lane & 3;
        const i64 m = p.m;
        const i64 row0 = S::tile_row0(mt, m) + cwg * T::WG_ROWS;
        const i64 own0 = (i64)mt * T::BM;
        const int n0 = nt * T::BN;
        /* In registers: the stores below are memory clobbers, after which fields of p would be
         * read from parameter space again. */
        const u16 *const residual = p.residual;
        u16 *const dout = p.d;
        const i64 ldr = p.ldr, ldd = p.ldd;
        const float alpha = p.alpha;
        const bool vec = rows_16b(dout, ldd) && rows_16b(residual, ldr);
        auto whole_unit = [&](i64 grow, int gcol) {
            return vec && grow >= own0 && grow < m && gcol + 8 <= T::N;
        };
        uint4 res[CHUNKS][PASSES];
#pragma unroll
        for (int c = 0; c < CHUNKS; c++)
#pragma unroll
            for (int it = 0; it < PASSES; it++) {
                const int u = lane + 32 * it;
                const i64 grow = row0 + unit_row(warp, u);
                const int gcol = n0 + c * T::EPI_CH + (u % UNITS) * 8;
                res[c][it] = ld_global_v4_if(whole_unit(grow, gcol), residual + grow * ldr + gcol);
            }
#pragma unroll
        for (int c = 0; c < CHUNKS; c++) {
            /* 1. registers -> staging, FP32 */
#pragma unroll
            for (int jj = 0; jj < T::EPI_CH / 8; jj++) {
                const int j = c * (T::EPI_CH / 8) + jj;
#pragma unroll
                for (int h = 0; h < 2; h++) {
                    const int srow = warp * 16 + g + 8 * h;
                    *(float2 *)(staging + srow * T::EPI_PITCH + (8 * jj + 2 * t) * 4) =
                        make_float2(acc[4 * j + 2 * h] * alpha, acc[4 * j + 2 * h + 1] * alpha);
                }
            }
            __syncwarp();
            /* 2. staging + residual -> BF16 -> D, 16 bytes a unit */
#pragma unroll
            for (int it = 0; it < PASSES; it++) {
                const int u = lane + 32 * it;
                const int r = unit_row(warp, u), cu = u % UNITS;
                const i64 grow = row0 + r;
                const int gcol = n0 + c * T::EPI_CH + cu * 8;
                const u8 *src = staging + r * T::EPI_PITCH + cu * 32;
                const float4 lo = *(const float4 *)src;
                const float4 hi = *(const float4 *)(src + 16);
                const uint4 rv = res[c][it];
                st_global_v4_if(whole_unit(grow, gcol), dout + grow * ldd + gcol,
                                add_bf16x2(rv.x, lo.x, lo.y), add_bf16x2(rv.y, lo.z, lo.w),
                                add_bf16x2(rv.z, hi.x, hi.y), add_bf16x2(rv.w, hi.z, hi.w));
            }
            /* 2b. what the 16-byte path left: element by element */
            if (!vec || (T::N % 8 != 0 && n0 + (c + 1) * T::EPI_CH > T::N)) {
#pragma unroll 1
                for (int u = lane; u < WARP_UNITS; u += 32) {
                    const int r = unit_row(warp, u);
                    const i64 grow = row0 + r;
                    const int gcol = n0 + c * T::EPI_CH + u % UNITS * 8;
                    if (grow < own0 || grow >= m || gcol >= T::N || whole_unit(grow, gcol))
                        continue;
                    const float *src = (const float *)(staging + r * T::EPI_PITCH) + u % UNITS * 8;
                    const u16 *rrow = residual + grow * ldr + gcol;
                    u16 *drow = dout + grow * ldd + gcol;
#pragma unroll 1
                    for (int e = 0; e < 8 && gcol + e < T::N; e++)
                        drow[e] = to_bf16(src[e] + bf16_to_float(rrow[e]));
                }
            }
            __syncwarp();
        }
    }

    /* ---- the store-warp path (STORE_WARPS) ----
     * Two barriers pass each tile between the consumers and the store warps, one phase per tile
     * (tile i waits on parity i & 1):
     *   staged   the consumers wrote the tile's BF16 values to the staging buffer (256 arrivals)
     *   drained  the store warps read the staging buffer out (96)
     * The consumers overwrite the staging buffer only after drained(i - 1), and the store warps
     * read it only after staged(i): neither side gets two phases ahead of the other. */
    struct Handoff {
        u32 staged, drained;
    };
    static __device__ __forceinline__ Handoff handoff_of(u32 full_bar) {
        const u32 first = full_bar + 2 * T::STAGES * 8;
        return Handoff{first, first + 8};
    }

    /* The consumers' part: alpha, the epilogue, one rounding, and this warpgroup's rows of the
     * tile into the staging buffer (the accumulator layout of mainloop.cuh). */
    static __device__ __forceinline__ void staged(const Acc &acc, float alpha, u8 *smem_ptr,
                                                  Handoff hand, u32 parity, int cwg, int tid) {
        const int warp = tid >> 5, lane = tid & 31, g = lane >> 2, t = lane & 3;
        u8 *staging = smem_ptr + T::STAGING_OFFSET;
        mbar_wait(hand.drained, parity ^ 1); /* the last tile is out (tile 0: at once) */
#pragma unroll
        for (int j = 0; j < T::J; j++)
#pragma unroll
            for (int h = 0; h < 2; h++) {
                const int srow = cwg * T::WG_ROWS + warp * 16 + g + 8 * h;
                const float v0 = acc[4 * j + 2 * h] * alpha;
                const float v1 = acc[4 * j + 2 * h + 1] * alpha;
                if (T::EPILOGUE == BSW_EPI_LINEAR_SWIGLU)
                    *(u16 *)(staging + srow * T::OUT_PITCH + (4 * j + t) * 2) =
                        to_bf16(swiglu(v0, v1));
                else
                    *(u32 *)(staging + srow * T::OUT_PITCH + (8 * j + 2 * t) * 2) =
                        pack_bf16x2(v0, v1);
            }
        mbar_arrive(hand.staged);
    }

    /* The store warps (warps 1..3 of the producer warpgroup): each tile's staged rows to D, 16
     * bytes per thread and step, rows in order. */
    static __device__ __forceinline__ void store_warps(const BswParams &p, const u8 *smem_ptr,
                                                       Handoff hand,
                                                       const typename S::Work &w) {
        const int sid = (int)threadIdx.x - 32; /* 0 .. STORE_THREADS - 1 */
        const u8 *staging = smem_ptr + T::STAGING_OFFSET;
        const i64 m = p.m;
        const bool d_vec = rows_16b(p.d, p.ldd);
        u32 parity = 0;
        for (int unit = w.first; unit < w.units; unit += w.stride) {
            int mg, nt;
            S::unit_coords(unit, w.m_groups, mg, nt);
            const int mt = mg * T::CLUSTER + w.rank; /* past the last m-tile for a spare CTA */
            const i64 row0 = S::tile_row0(mt, m);    /* the MMA rows' first */
            /* Rows of the tile inside M, and the first one this tile stores; ints and one base
             * pointer keep the loop within the store warps' 40 registers. */
            const int in_m = (int)min_of((i64)T::BM, m - row0); /* <= 0 for a spare CTA */
            const int first = (int)max_of((i64)0, (i64)mt * T::BM - row0);
            enum : int { UNITS = T::TILE_NOUT / 8 };
            const int col0 = nt * T::TILE_NOUT;
            u16 *d = p.d + row0 * p.ldd + col0;
            mbar_wait(hand.staged, parity);
            for (int u = first * UNITS + sid; u < in_m * UNITS; u += T::STORE_THREADS) {
                const int r = u / UNITS, cu = u % UNITS;
                const int gcol = col0 + cu * 8;
                if (gcol >= T::NOUT)
                    continue;
                const uint4 v = *(const uint4 *)(staging + r * T::OUT_PITCH + cu * 16);
                store_bf16x8(d + r * p.ldd + cu * 8, v, gcol, d_vec);
            }
            mbar_arrive(hand.drained);
            parity ^= 1;
        }
    }
};

#endif /* JITGEMM_BSW_EPILOGUE_CUH */
