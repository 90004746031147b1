/*
 * The decode route of the 128x128 block-scaled kernels (M <= 64): swap AB and a deterministic
 * split K, as the row-scaled decode kernel (kernel_src/fp8_wgmma/device/fp8_wgmma_decode.cuh)
 * does it. At such M the GEMM is bound by reading B (N x K bytes) once, so the weights fill
 * wgmma's M = 64 side (the A operand: BW weight rows per tile, 64 per consumer warpgroup and
 * wave) and the tokens its N side (the B operand: m64nTOKk32), and K is split so that every SM
 * streams weights. The accumulator holds acc[weight row][token]; the scales are applied when each
 * 128-K block is promoted (decode_mainloop.cuh), so the split partials are already scaled and
 * their reduction is a plain sum in a fixed order (decode_epilogue.cuh).
 *
 * This file: the plan's numbers (P, written by the generator) and what follows from them, and
 * the work units.
 *   BW        weight rows per tile: 128 (two consumer warpgroups x one m64 wave) or 256 (x two)
 *   TOK       tokens per tile, the wgmma N: 8, 16, 32 or 64
 *   STAGES    depth of the TMA ring
 *   N, K      the problem; K % 16 == 0, N even for swiglu
 *   EPILOGUE  BswEpilogue
 *   SPLIT     k-splits per tile, 1 <= SPLIT <= ceil(K / 128)
 *   KSUB      128-K blocks per stage (1, 2 or 4); a unit's last stage may hold fewer
 *   PRODUCER_REGS, CONSUMER_REGS  setmaxnreg budgets
 */
#ifndef JITGEMM_BSW_DECODE_TILE_CUH
#define JITGEMM_BSW_DECODE_TILE_CUH

#include "device/common.cuh"
#include "fp8_block_wgmma/device/params.cuh"

template <class P> struct BswDecodeTile : P {
    enum : int {
        THREADS = 384,
        CONSUMER_THREADS = 256,
        CONSUMER_WARPS = 8,
        BK = 128,                 /* K per block: one 128-byte swizzle span, one scale group */
        WAVES = P::BW / 128,      /* m64 waves per consumer warpgroup */
        WG_ROWS = P::BW / 2,      /* weight rows of one consumer warpgroup */
        ACC = P::TOK / 2,         /* f32 accumulator registers per wave and thread */
        TJ = P::TOK / 8,          /* 8-token groups of the accumulator */
        K_BLOCKS = (P::K + BK - 1) / BK,
        N_TILES = (P::N + P::BW - 1) / P::BW,
        N_BLOCKS = (P::N + 127) / 128,
        W_BYTES = P::BW * BK,     /* one 128-K block of the weight tile */
        X_BYTES = P::TOK * BK,    /* one 128-K block of the token tile */
        W_STAGE = P::KSUB * W_BYTES,
        X_STAGE = P::KSUB * X_BYTES,
        W_OFFSET = 0,
        X_OFFSET = P::STAGES * W_STAGE,
        STAGING_OFFSET = X_OFFSET + P::STAGES * X_STAGE,
        /* SPLIT == 1: the tile goes [token][row] through shared memory; 4 floats of padding per
         * token row put the 4 tokens one warp store writes in different banks. */
        STAGING_PITCH = P::BW + 4,
        STAGING_BYTES = P::SPLIT == 1 ? P::TOK * STAGING_PITCH * 4 : 0,
        FLAG_OFFSET = STAGING_OFFSET + STAGING_BYTES, /* "this CTA is the tile's last" */
        BAR_OFFSET = FLAG_OFFSET + 16,
        SMEM_BYTES = BAR_OFFSET + 2 * P::STAGES * 8 + 1024, /* + slack to align to 1024 */
        SLICE_FLOATS = P::TOK * P::BW, /* one k-split's partial tile in the workspace */
        BAR_CONSUMERS = 1,             /* named barrier of the 256 consumer threads */
        SWIGLU = P::EPILOGUE == BSW_EPI_LINEAR_SWIGLU,
        ADD = P::EPILOGUE == BSW_EPI_LINEAR_ADD,
    };

    static_assert(P::BW == 128 || P::BW == 256, "BW is 128 or 256");
    static_assert(P::TOK == 8 || P::TOK == 16 || P::TOK == 32 || P::TOK == 64,
                  "TOK is 8, 16, 32 or 64");
    static_assert(P::K % 16 == 0 && P::K > 0 && P::N > 0, "K % 16 == 0 (16-byte TMA strides)");
    static_assert(!SWIGLU || P::N % 2 == 0, "swiglu needs even N");
    static_assert(P::EPILOGUE >= 0 && P::EPILOGUE <= 2, "unknown epilogue");
    static_assert(P::SPLIT >= 1 && P::SPLIT <= K_BLOCKS, "1 <= SPLIT <= ceil(K / 128)");
    static_assert(P::STAGES >= 2, "at least two stages");
    static_assert(P::KSUB == 1 || P::KSUB == 2 || P::KSUB == 4, "KSUB is 1, 2 or 4");
    static_assert(W_BYTES % 1024 == 0 && X_BYTES % 1024 == 0,
                  "every 128B-swizzled tile must start on a 1024-byte boundary");
    static_assert(SMEM_BYTES <= 232448, "over the 227 KB dynamic shared memory limit");
    /* Each warpgroup's WG_ROWS weight rows lie in one 128-row N block (64 rows from a multiple
     * of 64, or 128 from a multiple of 128): one SFB value per warpgroup and block. */
    static_assert(WG_ROWS == 64 || WG_ROWS == 128, "a warpgroup's rows in one N block");
    static_assert(P::PRODUCER_REGS * 128 + P::CONSUMER_REGS * 256 <= 168 * THREADS,
                  "setmaxnreg budgets over the CTA's 168 x 384 registers: .inc would never "
                  "return");

    /* One work unit: token tile mt, weight tile nt, k-split s over blocks [kb0, kb1). Units are
     * numbered tile-major (u = tile * SPLIT + j), so the SPLIT units of a tile run at about the
     * same time and tiles complete (and are reduced) all through the kernel. The k-split of
     * slot j is rotated by the tile index, s = (j + tile) % SPLIT, so that a CTA whose stride is
     * a multiple of SPLIT does not get the longer split of every tile when K_BLOCKS % SPLIT != 0.
     * Split s covers blocks [s * K_BLOCKS / SPLIT, (s + 1) * K_BLOCKS / SPLIT). */
    struct Unit {
        int tile, mt, nt, s, kb0, kb1;
    };

    static __device__ __forceinline__ Unit unit_of(int u) {
        Unit w;
        w.tile = u / P::SPLIT;
        const int j = u - w.tile * P::SPLIT;
        w.s = (j + w.tile) % P::SPLIT;
        w.mt = w.tile / N_TILES;
        w.nt = w.tile - w.mt * N_TILES;
        w.kb0 = w.s * K_BLOCKS / P::SPLIT;
        w.kb1 = (w.s + 1) * K_BLOCKS / P::SPLIT;
        return w;
    }
};

#endif /* JITGEMM_BSW_DECODE_TILE_CUH */
