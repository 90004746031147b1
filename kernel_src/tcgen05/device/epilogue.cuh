/*
 * The epilogue: four warps, warp q drains TMEM lanes 32q..32q+31 (one accumulator row per
 * thread). Per sub-tile of EPI_ACC_COLS columns: tcgen05.ld 16 columns at a time, alpha, the
 * epilogue (linear, + residual, or SwiGLU of gate/up column pairs), conversion, a swizzled
 * store into the warp's slab of a C staging buffer, and a TMA store of the slab. The output is
 * rounded once, after the whole epilogue is done in FP32.
 */
#ifndef JITGEMM_TCGEN05_EPILOGUE_CUH
#define JITGEMM_TCGEN05_EPILOGUE_CUH

#include "device/cluster.cuh"
#include "device/convert.cuh"
#include "device/mbarrier.cuh"
#include "device/sm100.cuh"
#include "tcgen05/device/cta.cuh"

/* Epilogue kinds, as jit_epilogue_t numbers them. */
enum TcEpilogueKind { TC_EPI_LINEAR = 1, TC_EPI_LINEAR_ADD = 2, TC_EPI_LINEAR_SWIGLU = 3 };

template <class P> struct TcEpilogue {
    enum : int {
        SWIGLU = P::EPILOGUE == TC_EPI_LINEAR_SWIGLU,
        OUTS = SWIGLU ? 8 : 16,               /* output values per 16 accumulator columns */
        CHUNK_BYTES = OUTS * (int)P::OUT_BYTES, /* their bytes in the C slab */
    };
    static_assert(P::OUT_BYTES == 2 || P::OUT_BYTES == 4, "BF16 or FP32 out");

    /* Byte offset of (row, column byte) in a warp's C slab: boxes of C_BOX_BYTES-wide rows,
     * swizzled as the TMA store expects (16-byte chunk index XOR address bits 7 and up). */
    static __device__ __forceinline__ u32 c_offset(u32 row, u32 colbyte) {
        const u32 lin = (colbyte / P::C_BOX_BYTES) * 32u * P::C_BOX_BYTES + row * P::C_BOX_BYTES +
                        colbyte % P::C_BOX_BYTES;
        return lin ^ (((lin >> 7) & P::C_SWIZZLE_MASK) << 4);
    }

    /* 16 accumulator columns of one row: alpha, the epilogue, conversion, into the C slab. */
    static __device__ __forceinline__ void chunk(const jitgemm_tc_params &p, const u32 (&r)[16],
                                                 u32 slab, u32 lane, int row, int col, u32 k) {
        float v[16];
#pragma unroll
        for (int e = 0; e < 16; ++e)
            v[e] = bits_to_float(r[e]) * p.alpha;
        if constexpr (P::EPILOGUE == TC_EPI_LINEAR_ADD) {
            /* D = alpha * acc + residual, rounded once. */
            if ((i64)row < p.m) {
                const u16 *res = (const u16 *)p.residual + (i64)row * p.ld_residual + col;
#pragma unroll
                for (int e = 0; e < 16; ++e)
                    if ((u32)(col + e) < P::N_TOTAL)
                        v[e] += bits_to_float((u32)res[e] << 16);
            }
        } else {
            (void)row;
            (void)col;
        }
        float o[OUTS];
        if constexpr (SWIGLU) {
            /* B row 2j is gate_j and 2j+1 is up_j: out_j = silu(gate_j) * up_j. */
#pragma unroll
            for (int e = 0; e < 8; ++e)
                o[e] = swiglu(v[2 * e], v[2 * e + 1]);
        } else {
#pragma unroll
            for (int e = 0; e < 16; ++e)
                o[e] = v[e];
        }
        /* Pack and store 16 bytes at a time. */
        if constexpr (P::OUT_BYTES == 2) {
#pragma unroll
            for (int piece = 0; piece < CHUNK_BYTES / 16; piece++)
                sm100::st_shared_v4(slab + c_offset(lane, k * (u32)CHUNK_BYTES + piece * 16u),
                                    pack_bf16x2(o[piece * 8], o[piece * 8 + 1]),
                                    pack_bf16x2(o[piece * 8 + 2], o[piece * 8 + 3]),
                                    pack_bf16x2(o[piece * 8 + 4], o[piece * 8 + 5]),
                                    pack_bf16x2(o[piece * 8 + 6], o[piece * 8 + 7]));
        } else {
#pragma unroll
            for (int piece = 0; piece < CHUNK_BYTES / 16; piece++)
                sm100::st_shared_v4(slab + c_offset(lane, k * (u32)CHUNK_BYTES + piece * 16u),
                                    __float_as_uint(o[piece * 4]),
                                    __float_as_uint(o[piece * 4 + 1]),
                                    __float_as_uint(o[piece * 4 + 2]),
                                    __float_as_uint(o[piece * 4 + 3]));
        }
    }

    static __device__ void run(const TcCtaState &c, const jitgemm_tc_params &p, u32 tmem, u32 q) {
        const u32 lane = threadIdx.x % 32;
        const u32 lanes = (32u * q) << 16; /* TMEM lane field of this warp's quarter */
        u32 tile = 0, cs = 0; /* C stores issued by this warp */
        for (u32 i = 0;; ++i) {
            const TcWork w = TcCta<P>::work_get(c, i);
            warp_ops::sync();
            if (lane == 0)
                TcCta<P>::work_release(c, i);
            if (w.id >= c.total)
                break;
            const TcTile t = TcCta<P>::tile_coords(c, w);
            const u32 as = tile % P::ACC_STAGES;
            mbar::wait_cluster(c.smem + P::OFF_ACC_FULL + 8 * as, (tile / P::ACC_STAGES) & 1);
            sm100::fence_after();
            for (u32 h = 0; h < P::HALVES; ++h) {
                u32 col0;
                if constexpr (P::ACC_STAGES > 1)
                    col0 = (as ? P::ACC_COL1 : P::ACC_COL0) + h * P::ACC_HALF_STRIDE;
                else
                    col0 = P::ACC_COL0 + h * P::ACC_HALF_STRIDE;
                const int row = t.row0 + (int)(h * P::CTA_GROUP * 128u + 32u * q);
                /* Rows past M: nothing to store (the MMA skipped them too). */
                const bool live = (i64)(t.row0 + (int)(h * P::CTA_GROUP * 128u)) < c.m;
                for (u32 j = 0; j < P::EPI_SUBTILES; ++j) {
                    u32 sub = j;
                    if constexpr (P::REVERSE_DRAIN)
                        /* Stage 0 shares its last columns with stage 1: drain it backwards so
                         * the shared columns go first and can be released early. */
                        sub = as == 0 ? P::EPI_SUBTILES - 1 - j : j;
                    const u32 slab =
                        c.smem + P::OFF_C + (cs % P::C_STAGES) * P::C_STAGE + q * P::C_SLAB;
                    const int col = t.n0 + (int)(sub * P::EPI_ACC_COLS);
                    if (live) {
                        /* The store that last read this C stage must be done reading. */
                        if (lane == 0)
                            sm100::bulk_wait_read<P::C_STAGES - 1>();
                        warp_ops::sync();
#pragma unroll
                        for (u32 k = 0; k < P::EPI_ACC_COLS / 16; ++k) {
                            u32 r[16];
                            sm100::tmem_ld16(tmem + lanes + col0 + sub * P::EPI_ACC_COLS + 16 * k,
                                             r);
                            sm100::tmem_wait_ld();
                            chunk(p, r, slab, lane, row + (int)lane, col + (int)(16 * k), k);
                        }
                    }
                    if constexpr (P::OVERLAP) {
                        if (h == 0 && j + 1 == P::RELEASE_AFTER) {
                            /* Early release: the columns the next tile's stage shares with
                             * this one are in registers now. */
                            sm100::fence_before();
                            warp_ops::sync();
                            if (lane == 0)
                                mbar::arrive_remote(c.acc_empty0);
                        }
                    }
                    if (live) {
                        sm100::fence_proxy_async();
                        warp_ops::sync();
                        if (lane == 0) {
                            for (u32 bx = 0; bx < P::C_BOXES; ++bx)
                                sm100::tma_store_2d(&p.d, slab + bx * 32u * P::C_BOX_BYTES,
                                                    (SWIGLU ? col / 2 : col) +
                                                        (int)(bx * P::C_BOX_COLS),
                                                    row);
                            sm100::bulk_commit();
                        }
                        /* cs counts stores, not sub-tiles: the wait above (all but the newest
                         * C_STAGES - 1 groups done reading) protects stage cs % C_STAGES only if
                         * the newest store went elsewhere, which a skipped sub-tile in between
                         * would break (live, skipped, live on 2 stages). */
                        ++cs;
                    }
                }
            }
            if constexpr (!P::OVERLAP) {
                /* The stage is drained: hand it back to the MMA issuer. */
                sm100::fence_before();
                warp_ops::sync();
                if (lane == 0)
                    mbar::arrive_remote(c.acc_empty0 + 8 * as);
            }
            ++tile;
        }
        if (lane == 0)
            sm100::bulk_wait_all(); /* shared memory must outlive the stores that read it */
        warp_ops::sync();
    }
};

#endif /* JITGEMM_TCGEN05_EPILOGUE_CUH */
