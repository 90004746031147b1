/*
 * The epilogue of the grouped tile kernel, linear and SwiGLU, split as the dense wgmma kernel's
 * store-warp epilogue is: the consumers scale, apply and round each tile once to BF16 into a
 * staging buffer in shared memory (the tensor cores wait for that part alone), and the producer
 * warpgroup's three spare warps (the store warps) put each tile's scales in shared memory while
 * its MMAs run and write the staged tile to D while the consumers run the next one.
 *
 *   linear  D[r][n] = bf16(alpha * sa[r] * sb[g][n] * acc[r][n])
 *   swiglu  D[r][j] = bf16(silu(gate) * up), gate / up the scaled acc of B rows 2j / 2j + 1
 *
 * Only the tile's `valid` rows are written (the others belong to the next expert, or lie past
 * A), and only columns below Nout. Scales of rows and columns past those are 0, never stored.
 *
 * Three barriers pass each tile between the consumers and the store warps, one phase per tile
 * (tile i waits on parity i & 1):
 *   scales   the store warps wrote the tile's alpha * sa and sb (96 arrivals)
 *   staged   the consumers wrote the tile's BF16 values to the staging buffer (256)
 *   drained  the store warps read the staging buffer out (96)
 * The store warps write tile i's scales only after waiting for staged(i - 1), when the
 * consumers have read tile i - 1's; the consumers overwrite the staging buffer only after
 * drained(i - 1). Neither side gets two phases ahead of the other.
 */
#ifndef JITGEMM_FP8_GROUPED_EPILOGUE_CUH
#define JITGEMM_FP8_GROUPED_EPILOGUE_CUH

#include "device/sm90.cuh"
#include "fp8_grouped_wgmma/device/params.cuh"
#include "fp8_grouped_wgmma/device/scheduler.cuh"

struct GroupedHandoff {
    u32 scales, staged, drained;
};

template <class C> struct GroupedEpilogue {
    enum : int {
        WAVES = C::WAVES,
        ACC = C::ACC,
        STORE_THREADS = 96, /* warps 1..3 of the producer warpgroup */
        UNITS = C::TILE_NOUT / 8, /* 16-byte units of a staged row */
    };

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

    /* The store warps (threads 32..127): for every unit of this CTA, the tile's scales, then
     * the staged tile's valid rows to D. */
    static __device__ __forceinline__ void store_warps(const GroupedParams &p, const u8 *table,
                                                       u8 *smem_ptr, GroupedHandoff h) {
        typedef typename C::Sched S;
        const int sid = (int)threadIdx.x - 32; /* 0 .. STORE_THREADS - 1 */
        float *scales = (float *)(smem_ptr + C::SCALES_OFFSET);
        const u8 *staging = smem_ptr + C::STAGING_OFFSET;
        const bool d_vec = (p.ldd % 8 == 0) && (((u64)p.d & 15) == 0);
        const int units = S::units(table);
        u32 parity = 0;
        for (int unit = blockIdx.x; unit < units; unit += gridDim.x) {
            const GroupedTile t = S::tile(table, unit);
            const int n0 = t.nt * C::BN;
            /* 1. this tile's scales; rows past `valid` and columns past N get 0 */
            const float *sa = p.sa + t.row0;
            const float *sb = p.sb + (i64)t.g * C::N;
            for (int i = sid; i < C::BM + C::BN; i += STORE_THREADS) {
                float v;
                if (i < C::BM) {
                    v = i < t.valid ? p.alpha * sa[i] : 0.0f;
                } else {
                    const int c = n0 + i - C::BM;
                    v = c < C::N ? sb[c] : 0.0f;
                }
                scales[i] = v;
            }
            mbar_arrive(h.scales);
            /* 2. the staged tile -> D, 16 bytes per thread and step, rows in order */
            mbar_wait(h.staged, parity);
            const int col0 = t.nt * C::TILE_NOUT;
            u16 *d = p.d + t.row0 * p.ldd + col0;
            for (int u = sid; u < t.valid * UNITS; u += STORE_THREADS) {
                const int r = u / UNITS, cu = u % UNITS;
                const int gcol = col0 + cu * 8;
                if (gcol >= C::NOUT)
                    continue;
                const uint4 v = *(const uint4 *)(staging + r * C::OUT_PITCH + cu * 16);
                store_bf16x8(d + r * p.ldd + cu * 8, v, gcol, d_vec);
            }
            mbar_arrive(h.drained);
            parity ^= 1;
        }
    }

    /* The consumers' part: scale, apply, round once to BF16 and write this warpgroup's rows of
     * the tile to the staging buffer. Accumulator layout (m64nBN f32): warp q of the
     * warpgroup, lane 4g + t holds rows 16q + g (registers 4j, 4j+1) and 16q + g + 8 (4j+2,
     * 4j+3) at columns 8j + 2t, 8j + 2t + 1 of each m64 wave. */
    static __device__ __forceinline__ void stage(const float (&acc)[WAVES][ACC], u8 *smem_ptr,
                                                 GroupedHandoff h, u32 parity, int cwg, int tid) {
        const int warp = tid >> 5, lane = tid & 31, g = lane >> 2, t = lane & 3;
        const float *scales = (const float *)(smem_ptr + C::SCALES_OFFSET);
        u8 *staging = smem_ptr + C::STAGING_OFFSET;
        mbar_wait(h.drained, parity ^ 1); /* the last tile is out (tile 0: at once) */
        mbar_wait(h.scales, parity);
        float rs[WAVES][2];
#pragma unroll
        for (int w = 0; w < WAVES; w++)
#pragma unroll
            for (int hh = 0; hh < 2; hh++)
                rs[w][hh] = scales[cwg * C::WG_ROWS + w * 64 + warp * 16 + g + 8 * hh];
#pragma unroll
        for (int j = 0; j < ACC / 4; j++) {
            const float2 cs = *(const float2 *)(scales + C::BM + 8 * j + 2 * t);
#pragma unroll
            for (int w = 0; w < WAVES; w++)
#pragma unroll
                for (int hh = 0; hh < 2; hh++) {
                    const int srow = cwg * C::WG_ROWS + w * 64 + warp * 16 + g + 8 * hh;
                    const float v0 = acc[w][4 * j + 2 * hh] * rs[w][hh] * cs.x;
                    const float v1 = acc[w][4 * j + 2 * hh + 1] * rs[w][hh] * cs.y;
                    if (C::EPILOGUE == GROUPED_EPI_SWIGLU)
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

#endif /* JITGEMM_FP8_GROUPED_EPILOGUE_CUH */
