/*
 * What the FP8 wgmma kernels are given. The parameter blocks the host passes by value, as
 * `const __grid_constant__` (the tensor maps must live in parameter space for TMA), mirrored field
 * for field by kernel_src/fp8_wgmma/abi.h: Fp8WgmmaParams for the tile kernel (kernel.cuh),
 * Fp8WgmmaDecodeParams for the decode route (decode.cuh). And the plan's numbers with what follows
 * from them, which every role of a kernel reads: Fp8WgmmaShape (the tile kernel's tile, ring,
 * staging and shared-memory layout; the host's jit__wgmma_smem_bytes computes the same size) and
 * Fp8WgmmaDecodeShape (the decode kernel's). The shapes hold enumerators only, so that no
 * constant becomes .global data.
 */
#ifndef JITGEMM_FP8_WGMMA_PARAMS_CUH
#define JITGEMM_FP8_WGMMA_PARAMS_CUH

#include "device/common.cuh"

/* ---- the tile kernel ---------------------------------------------------------------------- */

/* The kernel's only parameter, passed by value as `const __grid_constant__` (the tensor maps must
 * live in parameter space for TMA). Mirrored field for field by kernel_src/fp8_wgmma/abi.h. */
struct Fp8WgmmaParams {
    jit_tmap tmap_a;     /*   0: A [M, K] u8, box 128 x BM, 128B swizzle */
    jit_tmap tmap_b;     /* 128: B [N, K] u8, box 128 x BN, 128B swizzle */
    const float *sa;     /* 256: [M] row scales */
    const float *sb;     /* 264: [N] column (B row) scales */
    const u16 *residual; /* 272: BF16 [M, ldr], linear_add only (else unused, may be null) */
    u16 *d;              /* 280: BF16 [M, ldd] output */
    i64 m;               /* 288: rows of A and D, >= 1 */
    i64 ldd;             /* 296: D row stride in elements, >= Nout */
    i64 ldr;             /* 304: residual row stride in elements */
    float alpha;         /* 312 */
    u32 reserved;        /* 316: keep 0 */
};

enum Fp8WgmmaEpilogueKind {
    FP8W_EPI_LINEAR = 0,
    FP8W_EPI_LINEAR_ADD = 1,
    FP8W_EPI_LINEAR_SWIGLU = 2,
};

/*
 * BM        128 (two consumer warpgroups x 64 rows) or 256 (x 128 rows: two m64 waves each)
 * BN        32..256, multiple of 32 (of 64 for swiglu); one wgmma m64nBNk32 per wave and k32
 * STAGES    depth of the TMA ring, >= 2; SMEM_BYTES must stay within 232448
 * N, K      problem size; K % 16 == 0, N even for swiglu
 * EPILOGUE  Fp8WgmmaEpilogueKind
 * PROMOTE   3 FP32 promotion every 128 K in two column halves (the default), 0 no promotion (the
 *           whole K in wgmma's accumulators: the fast form), 1 every 128 K after one wait for the
 *           whole block (a comparison form, mainloop_whole.cuh)
 * GROUP_M   m-tile groups per raster group (>= 1)
 * PRODUCER_REGS / CONSUMER_REGS  setmaxnreg budgets: 40/232 or 24/240
 * STORE_WARPS  1: the store warps write D (linear and swiglu; not linear_add, whose residual
 *           is added before the one rounding to BF16); 0: the consumers write D
 * CLUSTER   1, or 2: the two CTAs of a cluster take m-tiles 2i and 2i+1 of one n-tile, and each
 *           loads half of the shared B tile with TMA multicast into both, so B costs each SM
 *           half the L2 reads (docs/kernels-fp8-wgmma.md, "Clusters of two")
 */
template <int BM_, int BN_, int STAGES_, int N_, int K_, int EPILOGUE_, int PROMOTE_, int GROUP_M_,
          int PRODUCER_REGS_, int CONSUMER_REGS_, int CLUSTER_, int STORE_WARPS_>
struct Fp8WgmmaShape {
    enum : int {
        BM = BM_,
        BN = BN_,
        STAGES = STAGES_,
        N = N_,
        K = K_,
        EPILOGUE = EPILOGUE_,
        PROMOTE = PROMOTE_,
        GROUP_M = GROUP_M_,
        PRODUCER_REGS = PRODUCER_REGS_,
        CONSUMER_REGS = CONSUMER_REGS_,
        CLUSTER = CLUSTER_,
        STORE_WARPS = STORE_WARPS_,
        THREADS = 384,
        BK = 128,         /* K per stage: one 128-byte swizzle span per row */
        WAVES = BM / 128, /* m64 wgmma waves per consumer warpgroup */
        WG_ROWS = BM / 2, /* rows owned by one consumer warpgroup */
        ACC = BN / 2,     /* f32 accumulator registers per wave and thread */
        NOUT = EPILOGUE == FP8W_EPI_LINEAR_SWIGLU ? N / 2 : N,
        TILE_NOUT = EPILOGUE == FP8W_EPI_LINEAR_SWIGLU ? BN / 2 : BN,
        EPI_CH = 32, /* output columns staged per epilogue chunk */
        EPI_CH_IN = EPILOGUE == FP8W_EPI_LINEAR_SWIGLU ? 2 * EPI_CH : EPI_CH, /* acc columns */
        /* Staged row bytes: EPI_CH BF16 values, or for linear_add EPI_CH FP32 values (the
         * residual is added after staging, before the one rounding). The pad puts the rows one
         * accumulator fragment writes on distinct banks. */
        EPI_PITCH = EPILOGUE == FP8W_EPI_LINEAR_ADD ? EPI_CH * 4 + 32 : EPI_CH * 2 + 16,
        A_BYTES = BM * BK,
        B_BYTES = BN * BK,
        STAGE_BYTES = A_BYTES + B_BYTES,
        OUT_PITCH = TILE_NOUT * 2 + 16, /* a staged output row (store warps); the pad puts the
                                           8 rows of an accumulator fragment on distinct banks */
        STAGING_OFFSET = STAGES * STAGE_BYTES,
        STAGING_BYTES = STORE_WARPS ? BM * OUT_PITCH : 2 * WG_ROWS * EPI_PITCH,
        SCALES_OFFSET = STAGING_OFFSET + STAGING_BYTES, /* alpha * sa of BM rows, sb of BN */
        SCALES_BYTES = STORE_WARPS ? (BM + BN) * 4 : 0,
        BAR_OFFSET = SCALES_OFFSET + SCALES_BYTES,
        BAR_COUNT = 2 * STAGES + (STORE_WARPS ? 3 : 0), /* full, empty; scales, staged, drained */
        SMEM_BYTES = BAR_OFFSET + BAR_COUNT * 8 + 1024, /* + slack to align the base to 1024 */
        /* 168: the registers per thread at launch (__launch_bounds__(THREADS, 1)) */
        REGS_AT_LAUNCH = 65536 / THREADS / 8 * 8,
        STORE_THREADS = 96, /* warps 1..3 of the producer warpgroup */
        CONSUMER_THREADS = 256,
        K_BLOCKS = (K + BK - 1) / BK,
        N_TILES = (N + BN - 1) / BN,
        CONSUMER_WARPS = 8,
        B_SLICE_ROWS = BN / CLUSTER, /* rows of the B tile each CTA of a cluster loads */
        B_SLICE_BYTES = B_SLICE_ROWS * BK,
        /* A stage is free again once every consumer warp of every CTA it was written into has
         * read it, so its empty barrier counts the consumer warps of the whole cluster. */
        EMPTY_ARRIVALS = CONSUMER_WARPS * CLUSTER,
    };

    static_assert(BM == 128 || BM == 256, "BM is 128 or 256");
    static_assert(BN >= 32 && BN <= 256 && BN % 32 == 0, "BN is a multiple of 32 in [32, 256]");
    static_assert(EPILOGUE != FP8W_EPI_LINEAR_SWIGLU || (BN % 64 == 0 && N % 2 == 0),
                  "swiglu needs BN % 64 == 0 and even N");
    static_assert(K % 16 == 0 && K > 0 && N > 0, "K % 16 == 0 (16-byte TMA strides)");
    static_assert(STAGES >= 2, "at least two stages");
    static_assert(A_BYTES % 1024 == 0 && B_BYTES % 1024 == 0,
                  "every 128B-swizzled tile must start on a 1024-byte boundary");
    static_assert(SMEM_BYTES <= 232448, "over the 227 KB dynamic shared memory limit");
    /* __launch_bounds__(384, 1) gives every thread 168 registers. setmaxnreg.inc waits until
     * the CTA's pool holds what it asks, and only the producers' setmaxnreg.dec fills the pool:
     * asking more than they give back waits forever (it hung the H200 at 48 / 232). */
    static_assert((REGS_AT_LAUNCH - PRODUCER_REGS) * (THREADS - CONSUMER_THREADS) >=
                      (CONSUMER_REGS - REGS_AT_LAUNCH) * CONSUMER_THREADS,
                  "the consumers' setmaxnreg.inc asks more than the producers give back");
    static_assert(!PROMOTE || WAVES * BN <= 192, "promotion needs 2 x WAVES x BN/2 accumulators");
    static_assert(PROMOTE == 0 || PROMOTE == 1 || PROMOTE == 3, "promotion mode");
    static_assert(CLUSTER == 1 || CLUSTER == 2, "clusters of 1 or 2 CTAs");
    static_assert(B_SLICE_ROWS % 8 == 0, "each multicast slice starts on a whole 1024-byte atom");
    static_assert(!STORE_WARPS || EPILOGUE != FP8W_EPI_LINEAR_ADD,
                  "linear_add adds the residual before rounding: the consumers store it");
    static_assert(TILE_NOUT % 32 == 0, "staged rows are whole 64-byte multiples");
};

/* ---- the decode route --------------------------------------------------------------------- */

/* The kernel's only parameter, passed by value as `const __grid_constant__` (TMA reads the tensor
 * maps through their parameter-space address). 384 bytes, 64-byte aligned. */
struct Fp8WgmmaDecodeParams {
    jit_tmap tmap_x;     /*   0: X = A [M, K] u8 tokens, box {128, TOK}, 128B swizzle */
    jit_tmap tmap_w;     /* 128: W = B [N, K] u8 weights, box {128, BW}, 128B swizzle */
    const float *sa;     /* 256: [M] token (row) scales */
    const float *sb;     /* 264: [N] weight-row (column) scales */
    const u16 *residual; /* 272: BF16 [M, ldr], linear_add only (else unused, may be null) */
    u16 *d;              /* 280: BF16 [M, ldd] output */
    float *workspace; /* 288: split-K partials, 8-byte aligned (SPLIT == 1: unused, may be null) */
    u32 *counters;    /* 296: per-tile arrival counters, zero at rest (SPLIT == 1: unused) */
    i64 m;            /* 304: rows of A and D (tokens), >= 1 */
    i64 ldd;          /* 312: D row stride in elements, >= Nout (any parity) */
    i64 ldr;          /* 320: residual row stride in elements */
    float alpha;      /* 328 */
    u32 reserved[13]; /* 332..383: keep 0 */
};

enum Fp8WgmmaDecodeEpilogueKind {
    FP8WD_EPI_LINEAR = 0,
    FP8WD_EPI_LINEAR_ADD = 1,
    FP8WD_EPI_LINEAR_SWIGLU = 2,
};

/*
 * BW        weight rows per tile: 128 (two consumer warpgroups x one m64 wave) or 256 (x two)
 * TOK       tokens per tile, the wgmma N: 8, 16, 32 or 64
 * STAGES    depth of the TMA ring, >= 2; SMEM_BYTES must stay within 232448
 * N, K      problem size; K % 16 == 0, N even for swiglu
 * EPILOGUE  Fp8WgmmaDecodeEpilogueKind
 * SPLIT     k-splits per tile, 1 <= SPLIT <= ceil(K / 128)
 * KSUB      128-K blocks per stage (1, 2 or 4); a unit's last stage may hold fewer
 * W_HINT    1: weight loads carry an L2 evict-first policy (read once); 0: no hint
 * PRODUCER_REGS / CONSUMER_REGS  setmaxnreg budgets: 40/232 (or 24/240). 128 P + 256 C must not
 *           exceed 168 x 384 = 64512, the registers __launch_bounds__(384, 1) gives the CTA:
 *           setmaxnreg.inc takes from the CTA's own pool, so e.g. 80/216 blocks forever.
 */
template <int BW_, int TOK_, int STAGES_, int N_, int K_, int EPILOGUE_, int SPLIT_, int KSUB_,
          int W_HINT_, int PRODUCER_REGS_, int CONSUMER_REGS_>
struct Fp8WgmmaDecodeShape {
    enum : int {
        BW = BW_,
        TOK = TOK_,
        STAGES = STAGES_,
        N = N_,
        K = K_,
        EPILOGUE = EPILOGUE_,
        SPLIT = SPLIT_,
        KSUB = KSUB_,
        W_HINT = W_HINT_,
        PRODUCER_REGS = PRODUCER_REGS_,
        CONSUMER_REGS = CONSUMER_REGS_,
        THREADS = 384,
        CONSUMER_THREADS = 256,
        CONSUMER_WARPS = 8,
        BK = 128,         /* K per stage: one 128-byte swizzle span per row */
        WAVES = BW / 128, /* m64 wgmma waves per consumer warpgroup */
        WG_ROWS = BW / 2, /* weight rows owned by one consumer warpgroup */
        ACC = TOK / 2,    /* f32 accumulator registers per wave and thread */
        K_BLOCKS = (K + BK - 1) / BK,
        N_TILES = (N + BW - 1) / BW,
        W_BYTES = BW * BK,        /* one 128-K block of the weight tile */
        X_BYTES = TOK * BK,       /* one 128-K block of the token tile */
        W_STAGE = KSUB * W_BYTES, /* a stage: KSUB blocks, [block][row][128 bytes] */
        X_STAGE = KSUB * X_BYTES,
        W_OFFSET = 0,
        X_OFFSET = STAGES * W_STAGE,
        STAGING_OFFSET = X_OFFSET + STAGES * X_STAGE,
        /* SPLIT == 1: the tile goes [token][row] through shared memory; 4 floats of padding per
         * token row put the 4 tokens one warp store writes in different banks. */
        STAGING_PITCH = BW + 4,
        STAGING_BYTES = SPLIT == 1 ? TOK * STAGING_PITCH * 4 : 0,
        FLAG_OFFSET = STAGING_OFFSET + STAGING_BYTES, /* "this CTA is the tile's last" broadcast */
        BAR_OFFSET = FLAG_OFFSET + 16,
        /* mbarriers: full[STAGES], empty[STAGES] */
        SMEM_BYTES = BAR_OFFSET + 2 * STAGES * 8 + 1024, /* + slack to align the base to 1024 */
        SLICE_FLOATS = TOK * BW, /* one k-split's partial tile in the workspace */
        BAR_CONSUMERS = 1,       /* named barrier of the 256 consumer threads */
        SWIGLU = EPILOGUE == FP8WD_EPI_LINEAR_SWIGLU,
        ADD = EPILOGUE == FP8WD_EPI_LINEAR_ADD,
    };

    static_assert(BW == 128 || BW == 256, "BW is 128 or 256");
    static_assert(TOK == 8 || TOK == 16 || TOK == 32 || TOK == 64, "TOK is 8, 16, 32 or 64");
    static_assert(K % 16 == 0 && K > 0 && N > 0, "K % 16 == 0 (16-byte TMA strides)");
    static_assert(!SWIGLU || N % 2 == 0, "swiglu needs even N");
    static_assert(EPILOGUE >= 0 && EPILOGUE <= 2, "unknown epilogue");
    static_assert(SPLIT >= 1 && SPLIT <= K_BLOCKS, "1 <= SPLIT <= ceil(K / 128)");
    static_assert(STAGES >= 2, "at least two stages");
    static_assert(KSUB == 1 || KSUB == 2 || KSUB == 4, "KSUB is 1, 2 or 4");
    static_assert(W_BYTES % 1024 == 0 && X_BYTES % 1024 == 0,
                  "every 128B-swizzled tile must start on a 1024-byte boundary");
    static_assert(SMEM_BYTES <= 232448, "over the 227 KB dynamic shared memory limit");
    static_assert(PRODUCER_REGS * 128 + CONSUMER_REGS * 256 <= 168 * THREADS,
                  "setmaxnreg budgets over the CTA's 168 x 384 registers: .inc would never return");
};

/* One work unit of the decode kernel: tile (mt, nt) and its k-split s, K blocks [kb0, kb1)
 * (decode.cuh's unit_of numbers them). */
struct Fp8WgmmaDecodeUnit {
    int tile, mt, nt, s, kb0, kb1;
};

#endif /* JITGEMM_FP8_WGMMA_PARAMS_CUH */
