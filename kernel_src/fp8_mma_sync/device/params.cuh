/*
 * What the FP8 mma.sync kernel is given: the parameter block the host passes
 * (jit__mma_sync_params_t in kernel_src/fp8_mma_sync/abi.h fills the same layout), and the
 * plan's numbers with what follows from them (MmaSyncShape: warp tiles, K steps, the
 * shared-memory ring and the swizzled offset of a chunk in it), which every role of the kernel
 * reads.
 *
 * Shared tiles are [rows][TILE_K] bytes, read as 128-byte lines whose 16-byte chunks are
 * permuted by XOR with line % 8. The eight row addresses of each ldmatrix phase then hit eight
 * different bank groups, for TILE_K 128 (one row per line) and 64 (two rows per line) alike.
 * The permutation is a function of the offset inside a tile and tiles start on 128-byte
 * multiples, so it is correct at any base; the 1024-byte alignment only keeps it conflict-free.
 */
#ifndef JITGEMM_FP8_MMA_SYNC_PARAMS_CUH
#define JITGEMM_FP8_MMA_SYNC_PARAMS_CUH

#include "device/common.cuh"

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
enum MmaSyncEpilogueKind {
    MMA_SYNC_LINEAR = 1,
    MMA_SYNC_LINEAR_ADD = 2,
    MMA_SYNC_LINEAR_SWIGLU = 3,
};

template <i64 N_, i64 K_, int TILE_M_, int TILE_N_, int TILE_K_, int STAGES_, int WARPS_M_,
          int WARPS_N_, int EPILOGUE_>
struct MmaSyncShape {
    /* The plan's numbers: N and K as i64, as the kernel's template parameters have them (never
     * odr-used, so they stay constants and never become .global data), the others as enumerators
     * with what follows from them. */
    static constexpr i64 N = N_, K = K_;
    enum : int {
        TILE_M = TILE_M_,
        TILE_N = TILE_N_,
        TILE_K = TILE_K_,
        STAGES = STAGES_,
        WARPS_M = WARPS_M_,
        WARPS_N = WARPS_N_,
        EPILOGUE = EPILOGUE_,
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
};

#endif /* JITGEMM_FP8_MMA_SYNC_PARAMS_CUH */
