/*
 * The grouped swap-AB kernel, for few rows per expert (decode: 1 to 64 tokens an expert): one
 * persistent launch for every expert, as the tile kernel (kernel.cuh), but a unit is (token tile
 * of TOK rows of one expert, weight tile of 128 rows of its B) and the MMA is transposed
 * (swap_mainloop.cuh): acc[weight row][token], the tile's real token count choosing the wgmma N.
 *
 * Block of 384 threads, one CTA per SM: thread 0 the producer (producer.cuh, the token tile in
 * the A slot of the ring and the weight tile in the B slot), warpgroups 1 and 2 the consumers,
 * 64 weight rows each. After a tile's main loop the consumers write acc to a staging tile in
 * shared memory ([token][weight row], tokens < the tile's count only), synchronise on a named
 * barrier, and write D from it: each thread a pair of adjacent weight rows of one token (a
 * gate/up pair for SwiGLU, two output columns otherwise), scaled and rounded once to BF16. Rows
 * of the token tile past the expert's count (the next expert's, or past A) are never stored.
 */
#ifndef JITGEMM_FP8_GROUPED_SWAP_KERNEL_CUH
#define JITGEMM_FP8_GROUPED_SWAP_KERNEL_CUH

#include "device/common.cuh"
#include "device/sm90.cuh"
#include "fp8_grouped_wgmma/device/params.cuh"
#include "fp8_grouped_wgmma/device/producer.cuh"
#include "fp8_grouped_wgmma/device/scheduler.cuh"
#include "fp8_grouped_wgmma/device/swap_mainloop.cuh"

/*
 * TOK       tokens per tile, the largest wgmma N the tile may use: 16, 32 or 64
 * STAGES    ring depth, >= 2
 * N, K, G, LAYOUT, EPILOGUE, GROUP_M, PRODUCER_REGS, CONSUMER_REGS  as for GroupedTileCfg
 * The names the producer reads (BM, BN, A_BYTES, B_BYTES, STAGE_BYTES) are the token and
 * weight tiles.
 */
template <int TOK_, int STAGES_, int N_, int K_, int G_, int LAYOUT_, int EPILOGUE_, int GROUP_M_,
          int PRODUCER_REGS_, int CONSUMER_REGS_>
struct GroupedSwapCfg {
    enum : int {
        TOK = TOK_,
        BW = 128, /* weight rows per tile: two consumer warpgroups x one m64 wave */
        BM = TOK, /* the producer's "A" rows: tokens */
        BN = BW,  /* its "B" rows: weights */
        STAGES = STAGES_,
        N = N_,
        K = K_,
        G = G_,
        EPILOGUE = EPILOGUE_,
        PRODUCER_REGS = PRODUCER_REGS_,
        CONSUMER_REGS = CONSUMER_REGS_,
        THREADS = 384,
        CONSUMER_THREADS = 256,
        CONSUMER_WARPS = 8,
        BK = 128,
        N_TILES = (N + BW - 1) / BW,
        K_BLOCKS = (K + BK - 1) / BK,
        A_BYTES = TOK * BK,
        B_BYTES = BW * BK,
        STAGE_BYTES = A_BYTES + B_BYTES,
        /* [token][weight row] floats; 4 floats of padding put the 4 tokens one warp store writes
         * on different banks */
        STAGING_PITCH = BW + 4,
        STAGING_OFFSET = STAGES * STAGE_BYTES,
        TABLE_OFFSET = STAGING_OFFSET + TOK * STAGING_PITCH * 4,
        BAR_OFFSET = TABLE_OFFSET + GroupedScheduler<G_, TOK_, 1, 1, LAYOUT_>::TABLE_BYTES,
        SMEM_BYTES = BAR_OFFSET + 2 * STAGES * 8 + 1024, /* + slack to align the base */
        REGS_AT_LAUNCH = 65536 / THREADS / 8 * 8,
        BAR_CONSUMERS = 1, /* named barrier of the 256 consumer threads */
    };
    typedef GroupedScheduler<G_, TOK_, N_TILES, GROUP_M_, LAYOUT_> Sched;

    static_assert(TOK == 16 || TOK == 32 || TOK == 64, "TOK is 16, 32 or 64");
    static_assert(K % 16 == 0 && K > 0 && N > 0, "K % 16 == 0 (16-byte TMA strides)");
    static_assert(EPILOGUE != GROUPED_EPI_SWIGLU || N % 2 == 0, "SwiGLU needs an even N");
    static_assert(STAGES >= 2, "at least two stages");
    static_assert(A_BYTES % 1024 == 0 && B_BYTES % 1024 == 0,
                  "every 128B-swizzled tile starts on a 1024-byte boundary");
    static_assert(SMEM_BYTES <= 232448, "over the 227 KB dynamic shared memory limit");
    static_assert(TABLE_OFFSET % 8 == 0 && BAR_OFFSET % 8 == 0, "aligned table and barriers");
    static_assert((REGS_AT_LAUNCH - PRODUCER_REGS) * (THREADS - CONSUMER_THREADS) >=
                      (CONSUMER_REGS - REGS_AT_LAUNCH) * CONSUMER_THREADS,
                  "the consumers' setmaxnreg.inc asks more than the producers give back");
};

template <class C> struct GroupedSwapKernel {
    enum : int { THREADS = C::THREADS, SMEM_BYTES = C::SMEM_BYTES, ACC = C::TOK / 2 };

    /* acc -> staging[token][row] for tokens < valid. Accumulator layout (m64nN f32): warp q of
     * the warpgroup, lane 4g + t holds weight rows 16q + g (registers 4j, 4j+1) and 16q + g + 8
     * (4j+2, 4j+3) at tokens 8j + 2t and 8j + 2t + 1. */
    static __device__ __forceinline__ void stage_tile(float *staging, const float (&acc)[ACC],
                                                      int cwg, int warp, int lane, int valid) {
        const int g = lane >> 2, t = lane & 3;
#pragma unroll
        for (int j = 0; j < C::TOK / 8; j++)
#pragma unroll
            for (int h = 0; h < 2; h++)
#pragma unroll
                for (int e = 0; e < 2; e++) {
                    const int tok = 8 * j + 2 * t + e;
                    const int row = cwg * 64 + warp * 16 + g + 8 * h;
                    if (tok < valid)
                        staging[tok * C::STAGING_PITCH + row] = acc[4 * j + 2 * h + e];
                }
    }

    /* staging -> D: each consumer thread a pair of adjacent weight rows of one token. */
    static __device__ __forceinline__ void store_tile(const GroupedParams &p, const float *staging,
                                                      const GroupedTile &t, int ctid) {
        enum : int { PAIRS = C::BW / 2 };
        const int n0 = t.nt * C::BW;
        const float *sb = p.sb + (i64)t.g * C::N;
        for (int idx = ctid; idx < t.valid * PAIRS; idx += C::CONSUMER_THREADS) {
            const int tok = idx / PAIRS;
            const int r = 2 * (idx - tok * PAIRS);
            const int n = n0 + r;
            if (n >= C::N)
                continue;
            const float v0 = staging[tok * C::STAGING_PITCH + r];
            const float v1 = staging[tok * C::STAGING_PITCH + r + 1];
            const i64 row = t.row0 + tok;
            const float rs = p.alpha * p.sa[row];
            u16 *drow = p.d + row * p.ldd;
            if (C::EPILOGUE == GROUPED_EPI_SWIGLU) {
                /* N is even, so the up row n + 1 exists whenever the gate row n does. */
                drow[n >> 1] = to_bf16(swiglu(v0 * rs * sb[n], v1 * rs * sb[n + 1]));
            } else {
                drow[n] = to_bf16(v0 * rs * sb[n]);
                if (n + 1 < C::N)
                    drow[n + 1] = to_bf16(v1 * rs * sb[n + 1]);
            }
        }
    }

    static __device__ __forceinline__ void consumer(const GroupedParams &p, const u8 *table,
                                                    u32 smem, u8 *smem_ptr, u32 full_bar,
                                                    u32 empty_bar, int cwg) {
        const int ctid = threadIdx.x - 128; /* 0..255 over both consumer warpgroups */
        const int warp = (ctid >> 5) & 3, lane = ctid & 31;
        float *staging = (float *)(smem_ptr + C::STAGING_OFFSET);
        float acc[ACC];
        int stage = 0;
        u32 phase = 0;
        const int units = C::Sched::units(table);
        for (int unit = blockIdx.x; unit < units; unit += gridDim.x) {
            const GroupedTile t = C::Sched::tile(table, unit);
            GroupedSwapMainloop<C>::run(acc, smem, full_bar, empty_bar, cwg, lane, t.valid, stage,
                                        phase);
            stage_tile(staging, acc, cwg, warp, lane, t.valid);
            named_bar_sync(C::BAR_CONSUMERS, C::CONSUMER_THREADS);
            store_tile(p, staging, t, ctid);
            /* The next tile overwrites the staging tile. */
            named_bar_sync(C::BAR_CONSUMERS, C::CONSUMER_THREADS);
        }
    }

    static __device__ __forceinline__ void run(const GroupedParams &p) {
        extern __shared__ __align__(1024) u8 jit_smem[];
        /* The 128B swizzle is a function of the absolute address: align the ring to 1024. */
        const u32 raw = smem_addr(jit_smem);
        const u32 smem = (raw + 1023) & ~1023u;
        u8 *smem_ptr = jit_smem + (smem - raw);
        const u32 full_bar = smem + C::BAR_OFFSET;
        const u32 empty_bar = full_bar + C::STAGES * 8;
        u8 *table = smem_ptr + C::TABLE_OFFSET;
        if (threadIdx.x == 0) {
            for (int s = 0; s < C::STAGES; s++) {
                mbar_init(full_bar + s * 8, 1); /* the producer's arrive.expect_tx */
                mbar_init(empty_bar + s * 8, C::CONSUMER_WARPS);
            }
            fence_mbarrier_init();
        } else if (threadIdx.x == 32) {
            prefetch_tmap(&p.tmap_a);
            prefetch_tmap(&p.tmap_b);
        }
        /* Ends with __syncthreads, which also publishes the barrier inits. */
        C::Sched::build(p, table);
        const int wg = threadIdx.x >> 7;
        if (wg == 0) {
            setmaxnreg_dec<C::PRODUCER_REGS>();
            if (threadIdx.x == 0)
                GroupedProducer<C>::run(p, table, smem, full_bar, empty_bar);
        } else {
            setmaxnreg_inc<C::CONSUMER_REGS>();
            consumer(p, table, smem, smem_ptr, full_bar, empty_bar, wg - 1);
        }
    }
};

#endif /* JITGEMM_FP8_GROUPED_SWAP_KERNEL_CUH */
