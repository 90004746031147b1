/*
 * The 128x128 block-scaled FP8 kernels' parameter block, and the numbers the tile kernel
 * derives from its plan.
 *
 * BswParams is the kernel's only parameter, passed by value as `const __grid_constant__` (TMA
 * reads the tensor maps through their parameter-space address). It is mirrored field for field
 * by jit__bsw_params_t in kernel_src/fp8_block_wgmma/abi.h, and the generated source asserts the
 * offsets.
 */
#ifndef JITGEMM_BSW_PARAMS_CUH
#define JITGEMM_BSW_PARAMS_CUH

#include "device/common.cuh"

struct BswParams {
    jit_tmap tmap_a;     /*   0: A [M, K] u8 (tokens), 128B swizzle */
    jit_tmap tmap_b;     /* 128: B [N, K] u8 (weights), 128B swizzle */
    const float *sfa;    /* 256: SFA, element (m, kb) at m * sfa_stride_m + kb * sfa_stride_k */
    const float *sfb;    /* 264: SFB [ceil(N/128)][ceil(K/128)], row-major */
    const u16 *residual; /* 272: BF16 [M, ldr], linear_add only (else unused, may be null) */
    u16 *d;              /* 280: BF16 [M, ldd] output */
    float *workspace;    /* 288: the decode kernel's split-K partials (else unused) */
    u32 *counters;       /* 296: the decode kernel's per-tile counters, zero at rest */
    i64 m;               /* 304: rows of A and D, >= 1 */
    i64 ldd;             /* 312: D row stride in elements, >= Nout */
    i64 ldr;             /* 320: residual row stride in elements */
    i64 sfa_stride_m;    /* 328: elements between SFA of rows m and m + 1 */
    i64 sfa_stride_k;    /* 336: elements between SFA of k-blocks kb and kb + 1 */
    float alpha;         /* 344 */
    u32 reserved[9];     /* 348..383: keep 0 */
};

enum BswEpilogue {
    BSW_EPI_LINEAR = 0,
    BSW_EPI_LINEAR_ADD = 1,
    BSW_EPI_LINEAR_SWIGLU = 2,
};

/*
 * The tile kernel's plan P (written by the generator as a struct of enumerators, so that no
 * number becomes .global data):
 *   BM            128: two consumer warpgroups x one m64 wgmma wave of 64 rows
 *   BN            B rows per tile: a multiple of 32 from 64 to 192 (promotion keeps 2 x BN/2
 *                 accumulators per thread)
 *   STAGES        depth of the TMA ring
 *   N, K          the problem; K % 16 == 0, N even for swiglu
 *   EPILOGUE      BswEpilogue
 *   GROUP_M       m-groups per raster group of the persistent order
 *   PRODUCER_REGS, CONSUMER_REGS  setmaxnreg budgets (40/232)
 *   CLUSTER       1, or 2: B tiles shared by TMA multicast
 *   STORE_WARPS   1: the producer warpgroup's spare warps store D (not linear_add)
 * BswTile<P> adds what follows from them.
 */
template <class P> struct BswTile : P {
    enum : int {
        THREADS = 384,
        BK = 128,          /* K per stage: one 128-byte swizzle span per row, one scale group */
        WG_ROWS = 64,      /* rows of one consumer warpgroup: one m64 wave */
        ACC = P::BN / 2,   /* f32 accumulator registers per thread */
        PARTS = 2,         /* column halves, each its own wgmma batch */
        J = P::BN / 8,     /* 8-column groups of the accumulator (registers 4j..4j+3) */
        NOUT = P::EPILOGUE == BSW_EPI_LINEAR_SWIGLU ? P::N / 2 : P::N,
        TILE_NOUT = P::EPILOGUE == BSW_EPI_LINEAR_SWIGLU ? P::BN / 2 : P::BN,
        EPI_CH = 32, /* output columns staged per chunk of the consumers' epilogue */
        EPI_CH_IN = P::EPILOGUE == BSW_EPI_LINEAR_SWIGLU ? 2 * EPI_CH : EPI_CH,
        /* A staged row: EPI_CH BF16 values, or for linear_add EPI_CH FP32 values (the residual
         * is added after staging, before the one rounding); the pad puts the rows one
         * accumulator fragment writes on distinct banks. */
        EPI_PITCH = P::EPILOGUE == BSW_EPI_LINEAR_ADD ? EPI_CH * 4 + 32 : EPI_CH * 2 + 16,
        OUT_PITCH = TILE_NOUT * 2 + 16, /* a staged output row of the store-warp epilogue */
        A_BYTES = P::BM * BK,
        B_BYTES = P::BN * BK,
        STAGE_BYTES = A_BYTES + B_BYTES,
        STAGING_OFFSET = P::STAGES * STAGE_BYTES,
        STAGING_BYTES = P::STORE_WARPS ? P::BM * OUT_PITCH : 2 * WG_ROWS * EPI_PITCH,
        /* A stage's scales (producer.cuh): SFA of the tile's BM rows, then SFB of its first
         * and second N block, padded to 16 bytes. */
        SCALE_BYTES = P::BM * 4 + 16,
        SCALE_OFFSET = STAGING_OFFSET + STAGING_BYTES,
        BAR_OFFSET = SCALE_OFFSET + P::STAGES * SCALE_BYTES,
        /* full[STAGES], empty[STAGES], then staged and drained (store warps) */
        BAR_COUNT = 2 * P::STAGES + (P::STORE_WARPS ? 2 : 0),
        SMEM_BYTES = BAR_OFFSET + BAR_COUNT * 8 + 1024, /* + slack to align the base to 1024 */
        REGS_AT_LAUNCH = 65536 / THREADS / 8 * 8, /* 168 under __launch_bounds__(384, 1) */
        STORE_THREADS = 96,                       /* warps 1..3 of the producer warpgroup */
        CONSUMER_THREADS = 256,
        CONSUMER_WARPS = 8,
        K_BLOCKS = (P::K + BK - 1) / BK,
        N_TILES = (P::N + P::BN - 1) / P::BN,
        B_SLICE_ROWS = P::BN / P::CLUSTER, /* rows of the B tile each CTA of a cluster loads */
        B_SLICE_BYTES = B_SLICE_ROWS * BK,
        /* A stage is free once every consumer warp of every CTA it was written into has read
         * it. */
        EMPTY_ARRIVALS = CONSUMER_WARPS * P::CLUSTER,
        /* A stage is full after lane 0's arrive.expect_tx (and the TMA bytes it announced) and
         * one arrival per producer lane once its scale copies have landed. */
        FULL_ARRIVALS = 1 + 32,
        /* Tile n0 = nt * BN starts at 128 - gcd(BN, 128) past an N block's start at the most,
         * so a tile spans two N blocks (two SFB rows) unless BN divides 128. */
        BN_GCD = (P::BN % 128 == 0) ? 128 : (P::BN % 64 == 0) ? 64 : (P::BN % 32 == 0) ? 32 : 16,
        SPANS = (128 - BN_GCD) + P::BN > 128,
    };

    static_assert(P::BM == 128, "BM is 128: one m64 wave per consumer warpgroup");
    static_assert(P::BN >= 64 && P::BN <= 192 && P::BN % 32 == 0,
                  "BN is a multiple of 32 in [64, 192]: two column halves of whole 8-row atoms "
                  "(an m64n(BN/2) wgmma each), whole 32-column epilogue chunks, and 2 x BN/2 "
                  "accumulators per thread");
    static_assert((128 - BN_GCD) + P::BN <= 256, "a tile spans at most two N blocks");
    static_assert(P::EPILOGUE != BSW_EPI_LINEAR_SWIGLU || (P::BN % 64 == 0 && P::N % 2 == 0),
                  "swiglu needs BN % 64 == 0 and even N");
    static_assert(P::EPILOGUE >= 0 && P::EPILOGUE <= 2, "unknown epilogue");
    static_assert(P::K % 16 == 0 && P::K > 0 && P::N > 0, "K % 16 == 0 (16-byte TMA strides)");
    static_assert(P::STAGES >= 2, "at least two stages");
    static_assert(A_BYTES % 1024 == 0 && B_BYTES % 1024 == 0 && (P::BN / PARTS) % 8 == 0,
                  "every 128B-swizzled tile and column half starts on a 1024-byte boundary");
    static_assert(SMEM_BYTES <= 232448, "over the 227 KB dynamic shared memory limit");
    /* setmaxnreg.inc waits until the CTA's pool holds what it asks, and only the producers'
     * setmaxnreg.dec fills it: asking more than they give back waits forever. */
    static_assert((REGS_AT_LAUNCH - P::PRODUCER_REGS) * (THREADS - CONSUMER_THREADS) >=
                      (P::CONSUMER_REGS - REGS_AT_LAUNCH) * CONSUMER_THREADS,
                  "the consumers' setmaxnreg.inc asks more than the producers give back");
    static_assert(P::CLUSTER == 1 || P::CLUSTER == 2, "clusters of 1 or 2 CTAs");
    static_assert(B_SLICE_ROWS % 8 == 0, "each multicast slice starts on a whole 1024-byte atom");
    static_assert(!P::STORE_WARPS || P::EPILOGUE != BSW_EPI_LINEAR_ADD,
                  "linear_add adds the residual before rounding: the consumers store it");
    static_assert(TILE_NOUT % EPI_CH == 0, "whole epilogue chunks per tile");
};

#endif /* JITGEMM_BSW_PARAMS_CUH */
