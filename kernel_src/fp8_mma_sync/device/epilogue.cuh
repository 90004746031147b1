/*
 * The epilogue of the FP8 mma.sync kernel: scale by the row scales, apply linear, linear_add or
 * linear_swiglu in FP32, round once to BF16 and store straight from the accumulators. Only
 * in-range elements are stored.
 */
#ifndef JITGEMM_FP8_MMA_SYNC_EPILOGUE_CUH
#define JITGEMM_FP8_MMA_SYNC_EPILOGUE_CUH

#include "device/convert.cuh"
#include "fp8_mma_sync/device/params.cuh"

template <class S> struct MmaSyncEpilogue {
    /* Scale, apply the epilogue in FP32, round once to BF16 and store. Thread (g, t) of a warp
     * holds rows g and g+8 and B rows 2t, 2t+1 of each m16n8 tile: a BF16 pair for linear and
     * linear_add, and for linear_swiglu a whole gate/up pair (B rows 2j, 2j+1), so the SwiGLU
     * needs no data from other threads. Nothing out of range is stored. */
    static __device__ __forceinline__ void store(const jitgemm_mma_sync_params &p,
                                                 const float (&acc)[S::MMA_M][S::MMA_N][4],
                                                 i64 m0, i64 n0, int warp_m, int warp_n,
                                                 int lane) {
        const int g = lane >> 2, t = lane & 3;
#pragma unroll
        for (int i = 0; i < S::MMA_M; i++) {
#pragma unroll
            for (int h = 0; h < 2; h++) {
                const i64 row = m0 + warp_m * S::WARP_TILE_M + i * 16 + g + h * 8;
                if (row >= p.m)
                    continue;
                const float row_scale = p.alpha * p.sa[row];
                u16 *drow = (u16 *)p.d + row * p.ldd;
                const u16 *rrow = (const u16 *)p.residual + row * p.ldr;
                /* Pairs go out as one 32-bit store where the row keeps 4-byte alignment (the
                 * bases are 4-byte aligned, so that is an even element offset); an odd stride
                 * puts every other row on a 2-byte boundary, stored element by element. */
                const bool pairs =
                    ((row * p.ldd) & 1) == 0 &&
                    (S::EPILOGUE != MMA_SYNC_LINEAR_ADD || ((row * p.ldr) & 1) == 0);
#pragma unroll
                for (int j = 0; j < S::MMA_N; j++) {
                    const i64 col = n0 + warp_n * S::WARP_TILE_N + j * 8 + 2 * t;
                    if (col >= S::N)
                        continue;
                    const float v0 = acc[i][j][2 * h] * row_scale * p.sb[col];
                    if (S::EPILOGUE == MMA_SYNC_LINEAR_SWIGLU) {
                        /* n is even, so col + 1 < N whenever col < N. */
                        const float v1 = acc[i][j][2 * h + 1] * row_scale * p.sb[col + 1];
                        drow[col >> 1] = to_bf16(swiglu(v0, v1));
                    } else if (col + 1 < S::N) {
                        float v1 = acc[i][j][2 * h + 1] * row_scale * p.sb[col + 1];
                        float r0 = 0.0f, r1 = 0.0f;
                        if (S::EPILOGUE == MMA_SYNC_LINEAR_ADD) {
                            r0 = bf16_to_float(rrow[col]);
                            r1 = bf16_to_float(rrow[col + 1]);
                        }
                        if (pairs) {
                            *(u32 *)(drow + col) = pack_bf16x2(v0 + r0, v1 + r1);
                        } else {
                            drow[col] = to_bf16(v0 + r0);
                            drow[col + 1] = to_bf16(v1 + r1);
                        }
                    } else {
                        const float r0 =
                            S::EPILOGUE == MMA_SYNC_LINEAR_ADD ? bf16_to_float(rrow[col]) : 0.0f;
                        drow[col] = to_bf16(v0 + r0);
                    }
                }
            }
        }
    }
};

#endif /* JITGEMM_FP8_MMA_SYNC_EPILOGUE_CUH */
