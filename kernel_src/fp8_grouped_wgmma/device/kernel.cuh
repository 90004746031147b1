/*
 * Grouped FP8 (E4M3 x E4M3) row-scaled GEMM for sm_90a, for mixture-of-experts: one persistent
 * launch computes every expert g,
 *
 *   acc[r][n] = sum_k A[r][k] * B[g][n][k]     for the rows r of expert g
 *
 * with the rows per expert read on the device (scheduler.cuh), so one kernel serves every
 * routing and the launch can be captured in a CUDA graph.
 *
 * Block of 384 threads = 3 warpgroups, one CTA per SM (the dense wgmma kernel's structure):
 *   warpgroup 0  thread 0 is the producer (producer.cuh: TMA into the ring); warps 1..3 are the
 *                store warps (epilogue.cuh: scales in, the staged tile out to D). The warpgroup
 *                gives registers away (setmaxnreg.dec).
 *   warpgroups 1, 2  the consumers: each owns BM/2 rows of the BM x BN tile (mainloop.cuh), then
 *                stages its rows of the result (epilogue.cuh).
 * Every CTA builds the expert table in its shared memory first (all 384 threads), then each
 * role walks units blockIdx.x, blockIdx.x + gridDim.x, ... of the same sequence.
 *
 * Shared memory: the ring (STAGES x (A tile + B tile), 1024-byte aligned for the 128-byte
 * swizzle), the staging tile, the scales, the expert table, the barriers.
 */
#ifndef JITGEMM_FP8_GROUPED_KERNEL_CUH
#define JITGEMM_FP8_GROUPED_KERNEL_CUH

#include "device/common.cuh"
#include "device/sm90.cuh"
#include "fp8_grouped_wgmma/device/epilogue.cuh"
#include "fp8_grouped_wgmma/device/mainloop.cuh"
#include "fp8_grouped_wgmma/device/params.cuh"
#include "fp8_grouped_wgmma/device/producer.cuh"
#include "fp8_grouped_wgmma/device/scheduler.cuh"

/*
 * BM        128 (two consumer warpgroups x one m64 wave) or 256 (x two waves, BN <= 96)
 * BN        64..192, a multiple of 32 (of 64 for SwiGLU); two wgmma m64n(BN/2)k32 per wave
 * STAGES    ring depth, >= 2
 * N, K      one expert's B is [N, K]; K % 16 == 0, N even for SwiGLU
 * G         experts (1..1024); LAYOUT GroupedLayout; EPILOGUE GroupedEpilogue
 * GROUP_M   row tiles per raster group
 * PRODUCER_REGS / CONSUMER_REGS  setmaxnreg budgets (40 / 232)
 */
template <int BM_, int BN_, int STAGES_, int N_, int K_, int G_, int LAYOUT_, int EPILOGUE_,
          int GROUP_M_, int PRODUCER_REGS_, int CONSUMER_REGS_>
struct GroupedTileCfg {
    enum : int {
        BM = BM_,
        BN = BN_,
        STAGES = STAGES_,
        N = N_,
        K = K_,
        G = G_,
        EPILOGUE = EPILOGUE_,
        PRODUCER_REGS = PRODUCER_REGS_,
        CONSUMER_REGS = CONSUMER_REGS_,
        THREADS = 384,
        BK = 128, /* K per stage: one 128-byte swizzle span per row */
        WAVES = BM / 128,
        WG_ROWS = BM / 2,
        ACC = BN / 2, /* f32 accumulator registers per wave and thread */
        NOUT = EPILOGUE == GROUPED_EPI_SWIGLU ? N / 2 : N,
        TILE_NOUT = EPILOGUE == GROUPED_EPI_SWIGLU ? BN / 2 : BN,
        N_TILES = (N + BN - 1) / BN,
        K_BLOCKS = (K + BK - 1) / BK,
        A_BYTES = BM * BK,
        B_BYTES = BN * BK,
        STAGE_BYTES = A_BYTES + B_BYTES,
        /* A staged output row; the pad puts the 8 rows of a fragment on distinct banks. */
        OUT_PITCH = TILE_NOUT * 2 + 16,
        STAGING_OFFSET = STAGES * STAGE_BYTES,
        SCALES_OFFSET = STAGING_OFFSET + BM * OUT_PITCH, /* alpha * sa of BM rows, sb of BN */
        TABLE_OFFSET = SCALES_OFFSET + (BM + BN) * 4,
        BAR_OFFSET = TABLE_OFFSET + GroupedScheduler<G_, BM_, 1, 1, LAYOUT_>::TABLE_BYTES,
        BAR_COUNT = 2 * STAGES + 3, /* full, empty; scales, staged, drained */
        SMEM_BYTES = BAR_OFFSET + BAR_COUNT * 8 + 1024, /* + slack to align the base */
        REGS_AT_LAUNCH = 65536 / THREADS / 8 * 8,       /* 168 */
        CONSUMER_THREADS = 256,
        CONSUMER_WARPS = 8,
    };
    typedef GroupedScheduler<G_, BM_, N_TILES, GROUP_M_, LAYOUT_> Sched;

    static_assert(BM == 128 || BM == 256, "BM is 128 or 256");
    static_assert(BN >= 64 && BN <= 192 && BN % 32 == 0, "BN is a multiple of 32 in [64, 192]");
    static_assert(EPILOGUE != GROUPED_EPI_SWIGLU || (BN % 64 == 0 && N % 2 == 0),
                  "SwiGLU needs BN % 64 == 0 and an even N");
    static_assert(K % 16 == 0 && K > 0 && N > 0, "K % 16 == 0 (16-byte TMA strides)");
    static_assert(STAGES >= 2, "at least two stages");
    static_assert(A_BYTES % 1024 == 0 && B_BYTES % 1024 == 0,
                  "every 128B-swizzled tile starts on a 1024-byte boundary");
    static_assert(SMEM_BYTES <= 232448, "over the 227 KB dynamic shared memory limit");
    static_assert(BAR_OFFSET % 8 == 0, "barriers are 8-byte aligned");
    /* setmaxnreg.inc waits until the pool holds what it asks, and only the producers'
     * setmaxnreg.dec fills it: asking more than they give back waits forever. */
    static_assert((REGS_AT_LAUNCH - PRODUCER_REGS) * (THREADS - CONSUMER_THREADS) >=
                      (CONSUMER_REGS - REGS_AT_LAUNCH) * CONSUMER_THREADS,
                  "the consumers' setmaxnreg.inc asks more than the producers give back");
    static_assert(TILE_NOUT % 32 == 0, "staged rows are whole 64-byte multiples");
};

template <class C> struct GroupedTileKernel {
    enum : int { THREADS = C::THREADS, SMEM_BYTES = C::SMEM_BYTES };

    static __device__ __forceinline__ GroupedHandoff handoff_of(u32 full_bar) {
        const u32 first = full_bar + 2 * C::STAGES * 8;
        return GroupedHandoff{first, first + 8, first + 16};
    }

    static __device__ __forceinline__ void consumer(const u8 *table, u32 smem, u8 *smem_ptr,
                                                    u32 full_bar, u32 empty_bar, int cwg) {
        const int tid = threadIdx.x & 127;
        float acc[C::WAVES][C::ACC];
        float part[C::WAVES][C::ACC];
        int stage = 0;
        u32 phase = 0, tile_parity = 0;
        const int units = C::Sched::units(table);
        for (int unit = blockIdx.x; unit < units; unit += gridDim.x) {
            GroupedMainloop<C>::run(acc, part, smem, full_bar, empty_bar, cwg, tid & 31, stage,
                                    phase);
            GroupedEpilogue<C>::stage(acc, smem_ptr, handoff_of(full_bar), tile_parity, cwg, tid);
            tile_parity ^= 1;
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
            const GroupedHandoff h = handoff_of(full_bar);
            mbar_init(h.scales, GroupedEpilogue<C>::STORE_THREADS);
            mbar_init(h.staged, C::CONSUMER_THREADS);
            mbar_init(h.drained, GroupedEpilogue<C>::STORE_THREADS);
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
            else if (threadIdx.x >= 32)
                GroupedEpilogue<C>::store_warps(p, table, smem_ptr, handoff_of(full_bar));
        } else {
            setmaxnreg_inc<C::CONSUMER_REGS>();
            consumer(table, smem, smem_ptr, full_bar, empty_bar, wg - 1);
        }
    }
};

#endif /* JITGEMM_FP8_GROUPED_KERNEL_CUH */
