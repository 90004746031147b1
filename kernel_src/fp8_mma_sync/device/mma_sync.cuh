/*
 * The FP8 mma.sync kernel: E4M3 x E4M3 with FP32 row scales (per token, per output channel),
 * BF16 out, epilogue linear, linear_add or linear_swiglu. cp.async moves 16-byte chunks of A
 * and B into a shared-memory ring of STAGES K tiles, ldmatrix.x4 feeds mma.sync.m16n8k32, the
 * FP32 accumulators stay in registers and the epilogue stores BF16 straight from them.
 *
 * The generated source instantiates MmaSyncKernel with the plan's numbers (docs/kernels-fp8.md):
 * N and K are compile-time constants (they are in the key); M is the only runtime size, so every
 * M of a token band shares one cubin.
 *
 * Design decisions:
 * - Shared tiles are [rows][TILE_K] bytes, read as 128-byte lines whose 16-byte chunks are
 *   permuted by XOR with line % 8. The eight row addresses of each ldmatrix phase then hit eight
 *   different bank groups, for TILE_K 128 (one row per line) and 64 (two rows per line) alike.
 *   The permutation is a function of the offset inside a tile and tiles start on 128-byte
 *   multiples, so it is correct at any base; the 1024-byte alignment only keeps it conflict-free.
 * - Accumulation is plain FP32 through the MMA's C operand, in K order per m16n8 tile.
 * - Ragged tails never need predicates in the main loop: rows past M or N and 16-byte chunks
 *   past K are zero-filled by cp.async's src-size operand; the epilogue stores only in-range
 *   elements. The output is rounded to BF16 once, after the whole epilogue is done in FP32.
 */
#ifndef JITGEMM_FP8_MMA_SYNC_CUH
#define JITGEMM_FP8_MMA_SYNC_CUH

#include "device/common.cuh"
#include "device/convert.cuh"
#include "device/warp_mma.cuh"

/* The kernel's only parameter, passed by value; the host fills the same layout
 * (jit__mma_sync_params_t in kernel_src/fp8_mma_sync/abi.h). One field per line. */
struct jitgemm_mma_sync_params {
    const void *a;
    const void *b;
    const float *sa;
    const float *sb;
    const void *residual;
    void *d;
    i64 m;
    i64 lda;
    i64 ldb;
    i64 ldd;
    i64 ldr;
    float alpha;
    int pad_;
};

/* Epilogue kinds, as jit_epilogue_t numbers them. */
enum MmaSyncEpilogue { MMA_SYNC_LINEAR = 1, MMA_SYNC_LINEAR_ADD = 2, MMA_SYNC_LINEAR_SWIGLU = 3 };

template <i64 N, i64 K, int TILE_M, int TILE_N, int TILE_K, int STAGES, int WARPS_M, int WARPS_N,
          int EPILOGUE>
struct MmaSyncKernel {
    enum : int {
        THREADS = 32 * WARPS_M * WARPS_N,
        WARP_TILE_M = TILE_M / WARPS_M,
        WARP_TILE_N = TILE_N / WARPS_N,
        MMA_M = WARP_TILE_M / 16, /* m16n8 tiles per warp */
        MMA_N = WARP_TILE_N / 8,
        K_STEPS = TILE_K / 32, /* k32 MMAs per K tile */
        K_TILES = (int)((K + TILE_K - 1) / TILE_K),
        CHUNKS_PER_ROW = TILE_K / 16, /* 16-byte cp.async chunks per tile row */
        A_CHUNKS = TILE_M * CHUNKS_PER_ROW,
        B_CHUNKS = TILE_N * CHUNKS_PER_ROW,
        A_TILE_BYTES = TILE_M * TILE_K,
        STAGE_BYTES = (TILE_M + TILE_N) * TILE_K,
        SMEM_BYTES = STAGES * STAGE_BYTES,
    };
    static_assert(TILE_K == 64 || TILE_K == 128, "K tile");
    static_assert(STAGES >= 2 && STAGES <= 4, "stages");
    static_assert(WARP_TILE_M % 16 == 0 && WARP_TILE_N % 16 == 0, "warp tile");
    static_assert(STAGE_BYTES % 1024 == 0, "stage bases keep the swizzle's alignment");

    /* Byte offset of 16-byte chunk `chunk` of row `row` in a [rows][TILE_K] tile. The tile is
     * read as 128-byte lines and a chunk's slot in its line is XORed with line % 8, so the eight
     * rows one ldmatrix phase reads land in eight different bank groups. A stage holds the A
     * tile, then the B tile. */
    static __device__ __forceinline__ u32 tile_offset(int row, int chunk) {
        const u32 linear = (u32)(row * TILE_K + chunk * 16);
        const u32 line = linear >> 7, slot = (linear >> 4) & 7;
        return (line << 7) | ((slot ^ (line & 7)) << 4);
    }

    /* Copies of one operand's K tile: consecutive threads take consecutive 16-byte chunks of a
     * row, so each warp reads whole 128-byte segments. Out-of-range rows and K chunks are
     * zero-filled. */
    template <int CHUNKS>
    static __device__ __forceinline__ void copy_tile(const u8 *ptr, i64 ld, i64 rows, i64 row0,
                                                     i64 k0, u32 tile, int tid) {
#pragma unroll
        for (int it = 0; it < (CHUNKS + THREADS - 1) / THREADS; it++) {
            const int idx = it * THREADS + tid;
            if (CHUNKS % THREADS == 0 || idx < CHUNKS) {
                const int row = idx / CHUNKS_PER_ROW, chunk = idx % CHUNKS_PER_ROW;
                const i64 grow = row0 + row, gk = k0 + chunk * 16;
                const bool ok = grow < rows && gk < K;
                const u8 *src = ptr + (ok ? grow * ld + gk : 0);
                cp_async_16(tile + tile_offset(row, chunk), src, ok ? 16u : 0u);
            }
        }
    }

    /* Issue the cp.async copies of K tile `kt`: A rows m0.. and B rows n0.. into `stage`. */
    static __device__ __forceinline__ void load_stage(const jitgemm_mma_sync_params &p, u32 stage,
                                                      i64 m0, i64 n0, int kt, int tid) {
        const i64 k0 = (i64)kt * TILE_K;
        copy_tile<A_CHUNKS>((const u8 *)p.a, p.lda, p.m, m0, k0, stage, tid);
        copy_tile<B_CHUNKS>((const u8 *)p.b, p.ldb, N, n0, k0, stage + A_TILE_BYTES, tid);
    }

    /* One K tile: K_STEPS k32 steps, each loading the B fragments of the warp's columns, then
     * per m16 row block one A fragment and its MMAs. Fragment layout of m16n8k32 (g = lane / 4,
     * t = lane % 4): A regs 0..3 = rows g, g+8 x K bytes 4t.. and 16+4t..; B regs 0, 1 = column
     * g x K bytes 4t.. and 16+4t... One ldmatrix.x4 gives an A fragment (16 rows x 32 bytes) or
     * the B fragments of two n8 tiles. */
    static __device__ __forceinline__ void compute_stage(u32 stage, int warp_m, int warp_n,
                                                         int lane,
                                                         float (&acc)[MMA_M][MMA_N][4]) {
        const u32 a_tile = stage, b_tile = stage + A_TILE_BYTES;
        /* Not unrolled: unrolling lets ptxas hoist every fragment of the K tile, which raised
         * the band-4 tile from 128 to 190 registers on sm_90a in ptxas' report. */
#pragma unroll 1
        for (int ks = 0; ks < K_STEPS; ks++) {
            u32 bf[MMA_N][2];
#pragma unroll
            for (int j = 0; j < MMA_N; j += 2) {
                /* matrices: tile j K 0-15, tile j K 16-31, tile j+1 K 0-15, tile j+1 K 16-31 */
                const int row = warp_n * WARP_TILE_N + j * 8 + (lane & 7) + (lane >> 4) * 8;
                u32 r[4];
                ldmatrix_x4(r, b_tile + tile_offset(row, ks * 2 + ((lane >> 3) & 1)));
                bf[j][0] = r[0];
                bf[j][1] = r[1];
                bf[j + 1][0] = r[2];
                bf[j + 1][1] = r[3];
            }
#pragma unroll
            for (int i = 0; i < MMA_M; i++) {
                /* matrices: rows 0-7 | rows 8-15, each at K bytes 0-15 | 16-31 */
                const int row = warp_m * WARP_TILE_M + i * 16 + (lane & 7) + ((lane >> 3) & 1) * 8;
                u32 af[4];
                ldmatrix_x4(af, a_tile + tile_offset(row, ks * 2 + (lane >> 4)));
#pragma unroll
                for (int j = 0; j < MMA_N; j++)
                    mma_e4m3_16x8x32(acc[i][j], af, bf[j][0], bf[j][1]);
            }
        }
    }

    /* Scale, apply the epilogue in FP32, round once to BF16 and store. Thread (g, t) of a warp
     * holds rows g and g+8 and B rows 2t, 2t+1 of each m16n8 tile: a BF16 pair for linear and
     * linear_add, and for linear_swiglu a whole gate/up pair (B rows 2j, 2j+1), so the SwiGLU
     * needs no data from other threads. Nothing out of range is stored. */
    static __device__ __forceinline__ void epilogue(const jitgemm_mma_sync_params &p,
                                                    const float (&acc)[MMA_M][MMA_N][4], i64 m0,
                                                    i64 n0, int warp_m, int warp_n, int lane) {
        const int g = lane >> 2, t = lane & 3;
#pragma unroll
        for (int i = 0; i < MMA_M; i++) {
#pragma unroll
            for (int h = 0; h < 2; h++) {
                const i64 row = m0 + warp_m * WARP_TILE_M + i * 16 + g + h * 8;
                if (row >= p.m)
                    continue;
                const float row_scale = p.alpha * p.sa[row];
                u16 *drow = (u16 *)p.d + row * p.ldd;
                const u16 *rrow = (const u16 *)p.residual + row * p.ldr;
                /* Pairs go out as one 32-bit store where the row keeps 4-byte alignment (the
                 * bases are 4-byte aligned, so that is an even element offset); an odd stride
                 * puts every other row on a 2-byte boundary, stored element by element. */
                const bool pairs = ((row * p.ldd) & 1) == 0 &&
                                   (EPILOGUE != MMA_SYNC_LINEAR_ADD || ((row * p.ldr) & 1) == 0);
#pragma unroll
                for (int j = 0; j < MMA_N; j++) {
                    const i64 col = n0 + warp_n * WARP_TILE_N + j * 8 + 2 * t;
                    if (col >= N)
                        continue;
                    const float v0 = acc[i][j][2 * h] * row_scale * p.sb[col];
                    if (EPILOGUE == MMA_SYNC_LINEAR_SWIGLU) {
                        /* n is even, so col + 1 < N whenever col < N. */
                        const float v1 = acc[i][j][2 * h + 1] * row_scale * p.sb[col + 1];
                        drow[col >> 1] = to_bf16(swiglu(v0, v1));
                    } else if (col + 1 < N) {
                        float v1 = acc[i][j][2 * h + 1] * row_scale * p.sb[col + 1];
                        float r0 = 0.0f, r1 = 0.0f;
                        if (EPILOGUE == MMA_SYNC_LINEAR_ADD) {
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
                            EPILOGUE == MMA_SYNC_LINEAR_ADD ? bf16_to_float(rrow[col]) : 0.0f;
                        drow[col] = to_bf16(v0 + r0);
                    }
                }
            }
        }
    }

    /* Grid: x over tiles of TILE_N B rows, y over tiles of TILE_M tokens. The K loop keeps
     * STAGES - 1 tiles in flight; every iteration commits one cp.async group (empty ones too),
     * so wait_group<STAGES - 2> always means "tile kt has landed". The barrier after it also
     * proves every warp is done with the stage the next copy overwrites. */
    static __device__ __forceinline__ void run(const jitgemm_mma_sync_params &p, u8 *smem) {
        const int tid = (int)threadIdx.x, lane = tid & 31, warp = tid >> 5;
        const int warp_m = warp / WARPS_N, warp_n = warp % WARPS_N;
        const i64 n0 = (i64)blockIdx.x * TILE_N, m0 = (i64)blockIdx.y * TILE_M;
        if (m0 >= p.m)
            return;
        const u32 base = smem_u32(smem);

        float acc[MMA_M][MMA_N][4];
#pragma unroll
        for (int i = 0; i < MMA_M; i++)
#pragma unroll
            for (int j = 0; j < MMA_N; j++)
#pragma unroll
                for (int e = 0; e < 4; e++)
                    acc[i][j][e] = 0.0f;

#pragma unroll
        for (int s = 0; s < STAGES - 1; s++) {
            if (s < K_TILES)
                load_stage(p, base + s * STAGE_BYTES, m0, n0, s, tid);
            cp_async_commit();
        }
        for (int kt = 0; kt < K_TILES; kt++) {
            cp_async_wait<STAGES - 2>();
            __syncthreads();
            const int next = kt + STAGES - 1;
            if (next < K_TILES)
                load_stage(p, base + (next % STAGES) * STAGE_BYTES, m0, n0, next, tid);
            cp_async_commit();
            compute_stage(base + (kt % STAGES) * STAGE_BYTES, warp_m, warp_n, lane, acc);
        }
        cp_async_wait<0>();
        epilogue(p, acc, m0, n0, warp_m, warp_n, lane);
    }
};

#endif /* JITGEMM_FP8_MMA_SYNC_CUH */
