/*
 * FP8 (E4M3 x E4M3) row-scaled GEMM for sm_90a: TMA + mbarrier ring + wgmma, warp-specialised,
 * persistent.
 *
 *   acc[m][n] = sum_k A[m][k] * B[n][k]            A [M, K] and B [N, K], both K-major E4M3
 *   linear        D[m][n] = bf16(alpha * sa[m] * sb[n] * acc[m][n])
 *   linear_add    D[m][n] = bf16(alpha * sa[m] * sb[n] * acc[m][n] + float(R[m][n]))
 *   linear_swiglu D[m][j] = bf16(silu(g) * u), g / u = scaled acc of B rows 2j / 2j+1
 *
 * Block of 384 threads = 3 warpgroups, one CTA per SM:
 *   warpgroup 0  producer: gives registers away (setmaxnreg.dec); one thread issues the TMA loads
 *                of A (BM x 128) and B (BN x 128) per 128-K block into a STAGES-deep ring. With
 *                STORE_WARPS its other three warps are the store warps: they put each tile's
 *                scales in shared memory while the tile's MMAs run, and write the finished
 *                BF16 tile from shared memory to D while the consumers run the next tile.
 *   warpgroups 1, 2  consumers: each owns BM/2 rows of the BM x BN tile (one or two m64 wgmma
 *                waves) and all BN columns; they wait on full[s], issue 4 wgmma k32 steps, and
 *                hand the slot back through empty[s]; then the epilogue for their rows: with
 *                STORE_WARPS only scale, round and stage the whole tile in shared memory (the
 *                tensor cores wait for that part alone), else also store it to D themselves.
 * The grid is persistent: CTA b takes tiles b, b + gridDim.x, ... in grouped raster order (GROUP_M
 * m-tiles walk the n-tiles together, so concurrently running CTAs share A and B rows in L2). The
 * stage/phase counters run on across tiles, so the producer streams the next tile's K blocks while
 * the consumers are still in the epilogue of the last one.
 *
 * Ragged M, N and K come from TMA: boxes past the tensor edge are zero-filled (and still count in
 * the transaction bytes). The epilogue never reads sa/sb past M/N and never writes past M/Nout.
 * Where M >= BM, the last m-tile of a ragged M is moved up to end at row M (tile_row0), so that
 * no A box runs past M: a zero-filled part of a box costs load time (measured).
 *
 * Accumulation (PROMOTE):
 *   0  "fast": the whole K accumulates in the wgmma accumulators (FP8 wgmma keeps ~14 mantissa bits
 *      in its internal sums, so error grows with K);
 *   1  "promotion": each 128-K block goes into a fresh accumulator (scale_d = 0 on its first k32)
 *      and is added into FP32 registers after a full wgmma wait (one partial accumulator: two
 *      alternating ones make ptxas serialise the wgmmas, docs/kernels-fp8-wgmma.md).
 *   2  diagnostic: promotion after every k32 wgmma (slow; isolates the in-instruction error).
 *   3  as 1, in two column halves committed as separate wgmma batches: the first half is added
 *      while the second half's wgmmas run (the default).
 */
#ifndef JITGEMM_FP8_WGMMA_CUH
#define JITGEMM_FP8_WGMMA_CUH

#include "device/common.cuh"
#include "device/sm90.cuh"

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

enum Fp8WgmmaEpilogue {
    FP8W_EPI_LINEAR = 0,
    FP8W_EPI_LINEAR_ADD = 1,
    FP8W_EPI_LINEAR_SWIGLU = 2,
};

/*
 * BM        128 (two consumer warpgroups x 64 rows) or 256 (x 128 rows: two m64 waves each)
 * BN        32..256, multiple of 32 (of 64 for swiglu); one wgmma m64nBNk32 per wave and k32
 * STAGES    depth of the TMA ring, >= 2; SMEM_BYTES must stay within 232448
 * N, K      problem size; K % 16 == 0, N even for swiglu
 * EPILOGUE  Fp8WgmmaEpilogue
 * PROMOTE   0 fast accumulation, 1 FP32 promotion every 128 K, 2 every 32 K (diagnostic, slow),
 *           3 every 128 K in two column halves
 * GROUP_M   m-tile groups per raster group (>= 1)
 * PRODUCER_REGS / CONSUMER_REGS  setmaxnreg budgets: 40/232 or 24/240
 * STORE_WARPS  1: the store warps write D (linear and swiglu; not linear_add, whose residual
 *           is added before the one rounding to BF16); 0: the consumers write D
 * CLUSTER   1, or 2: the two CTAs of a cluster take m-tiles 2i and 2i+1 of one n-tile, and each
 *           loads half of the shared B tile with TMA multicast into both, so B costs each SM
 *           half the L2 reads (the kernel is bound by L2-to-SM bandwidth at large M:
 *           docs/kernels-fp8-wgmma.md)
 */
template <int BM, int BN, int STAGES, int N, int K, int EPILOGUE, int PROMOTE, int GROUP_M = 8,
          int PRODUCER_REGS = 40, int CONSUMER_REGS = 232, int CLUSTER = 1, int STORE_WARPS = 0>
struct Fp8WgmmaKernel {
    enum : int {
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
    static_assert(PROMOTE >= 0 && PROMOTE <= 3, "promotion mode");
    static_assert(CLUSTER == 1 || CLUSTER == 2, "clusters of 1 or 2 CTAs");
    static_assert(B_SLICE_ROWS % 8 == 0, "each multicast slice starts on a whole 1024-byte atom");
    static_assert(!STORE_WARPS || EPILOGUE != FP8W_EPI_LINEAR_ADD,
                  "linear_add adds the residual before rounding: the consumers store it");
    static_assert(TILE_NOUT % 32 == 0, "staged rows are whole 64-byte multiples");

    /* Work unit `unit` of the persistent sequence -> (m-group, n-tile), grouped raster: GROUP_M
     * m-groups walk the n-tiles together, so CTAs running at the same time share A and B rows
     * in L2. An m-group is CLUSTER consecutive m-tiles, one per CTA of the cluster. */
    static __device__ __forceinline__ void unit_coords(int unit, int m_groups, int &mg, int &nt) {
        const int per_group = GROUP_M * N_TILES;
        const int group = unit / per_group;
        const int first_m = group * GROUP_M;
        const int rows = min_of(m_groups - first_m, (int)GROUP_M);
        const int in_group = unit - group * per_group;
        mg = first_m + in_group % rows;
        nt = in_group / rows;
    }

    /* The first row of m-tile mt's A box and MMA rows: the tile's own first row, except for the
     * last m-tile of a ragged M >= BM, which is moved up to end at row M so that its box lies
     * wholly inside A. A box partly past the edge is zero-filled by TMA, and that measured up to
     * 1.3x the tile's time where loads were not hidden behind the MMAs (128x96 at M = 192 on the
     * H200). The rows it then shares with m-tile mt - 1 belong to that tile: every epilogue
     * stores only rows from mt * BM on. */
    static __device__ __forceinline__ i64 tile_row0(int mt, i64 m) {
        const i64 r = (i64)mt * BM;
        return (m >= BM && r + BM > m) ? m - BM : r;
    }

    /* The work of this CTA: units first, first + stride, ... below `units`; the CTA's m-tile in a
     * unit's m-group is its rank in the cluster. A CTA whose m-tile lies past M (odd m-tile
     * counts) still loads its share of B for its peer; its epilogue stores nothing. */
    struct Work {
        int first, stride, units, m_tiles, m_groups, rank;
    };
    static __device__ __forceinline__ Work work_of(i64 m) {
        Work w;
        w.m_tiles = (int)((m + BM - 1) / BM);
        w.m_groups = (w.m_tiles + CLUSTER - 1) / CLUSTER;
        w.units = w.m_groups * N_TILES;
        w.rank = CLUSTER == 1 ? 0 : (int)cluster_ctarank();
        w.first = (int)blockIdx.x / CLUSTER;
        w.stride = (int)gridDim.x / CLUSTER;
        return w;
    }

    /* ---- producer: one thread streams A and B K-blocks into the ring ----
     * Each stage holds this CTA's A tile and the whole B tile; with a cluster of 2 each CTA loads
     * its half of B into the same offset of both CTAs (multicast), and the full barrier of each
     * CTA expects the whole stage, its own loads and the peer's half alike. */
    static __device__ __forceinline__ void producer(const Fp8WgmmaParams &p, u32 smem, u32 full_bar,
                                                    u32 empty_bar, const Work &w) {
        int stage = 0;
        u32 phase = 0;
        for (int unit = w.first; unit < w.units; unit += w.stride) {
            int mg, nt;
            unit_coords(unit, w.m_groups, mg, nt);
            /* A CTA whose m-tile lies past M (the second of an odd count) reads the last real
             * m-tile's rows instead of a box wholly outside the tensor: its results are never
             * stored, and every load it issues stays an ordinary, in-bounds one. */
            const int mt = min_of(mg * CLUSTER + w.rank, w.m_tiles - 1);
            const int a_row = (int)tile_row0(mt, p.m);
            for (int kb = 0; kb < K_BLOCKS; kb++) {
                /* First pass: parity phase^1 = 1 is "the phase before", complete at once. */
                mbar_wait(empty_bar + stage * 8, phase ^ 1);
                const u32 bar = full_bar + stage * 8;
                mbar_arrive_expect_tx(bar, STAGE_BYTES);
                tma_load_2d(smem + stage * A_BYTES, &p.tmap_a, bar, kb * BK, a_row);
                const u32 b_dst = smem + STAGES * A_BYTES + stage * B_BYTES + w.rank * B_SLICE_BYTES;
                const int b_row = nt * BN + w.rank * B_SLICE_ROWS;
                if (CLUSTER == 1)
                    tma_load_2d(b_dst, &p.tmap_b, bar, kb * BK, b_row);
                else
                    tma_load_2d_multicast(b_dst, &p.tmap_b, bar, kb * BK, b_row,
                                          (u16)((1u << CLUSTER) - 1));
                if (++stage == STAGES) {
                    stage = 0;
                    phase ^= 1;
                }
            }
        }
    }

    /* Open a batch of wgmmas on `acc`: the compiler may not move an access of its registers
     * across this point, and wgmma.fence orders the warpgroup's earlier register writes before
     * the wgmmas that read them. */
    static __device__ __forceinline__ void open_batch(float (&acc)[WAVES][ACC]) {
#pragma unroll
        for (int w = 0; w < WAVES; w++)
            reg_fence_all(acc[w]);
        wgmma_fence();
    }

    /* One 128-K block: 4 k32 steps for every wave of this warpgroup. scale_d == 0 on the first
     * step starts a fresh accumulation run. `da` and `db` describe the stage's A rows of this
     * warpgroup and its B tile; each step is one descriptor add further on (K-major, 128B
     * swizzle: the next 32 K bytes of a row start 32 bytes on, the next m64 wave 64 rows on). */
    static __device__ __forceinline__ void mma_block(float (&acc)[WAVES][ACC], u64 da, u64 db,
                                                     bool fresh) {
        open_batch(acc);
#pragma unroll
        for (int kk = 0; kk < BK / 32; kk++) {
#pragma unroll
            for (int w = 0; w < WAVES; w++)
                WgmmaFp8<BN>::mma(acc[w], wgmma_desc_advance(da, w * 64 * BK + kk * 32),
                                  wgmma_desc_advance(db, kk * 32), (fresh && kk == 0) ? 0u : 1u);
        }
        wgmma_commit();
#pragma unroll
        for (int w = 0; w < WAVES; w++)
            reg_fence_all(acc[w]);
    }

    /* Column part h of PARTS of one wave's accumulators: registers [h * ACC/PARTS, ...) hold
     * columns [h * BN/PARTS, (h + 1) * BN/PARTS) (the m64nN layout puts columns 8j..8j+7 in
     * registers 4j..4j+3), so an m64n(BN/PARTS) wgmma on that part computes exactly those
     * columns. */
    enum : int { PARTS = 2 }; /* PROMOTE 3; four parts measured 13% slower (shared memory) */
    typedef float Part[ACC / PARTS];
    static __device__ __forceinline__ Part &part_of(float (&r)[ACC], int h) {
        return *reinterpret_cast<Part *>(&r[h * (ACC / PARTS)]);
    }

    /* One 128-K block into column part h of the partials (PROMOTE 3), committed as its
     * own batch: the part's B rows start h * BN/PARTS rows (whole 1024-byte swizzle atoms of
     * 8 rows) into the stage's B tile. The caller fences the registers. */
    static __device__ __forceinline__ void mma_part(float (&part)[WAVES][ACC], u64 da, u64 db,
                                                    int h) {
#pragma unroll
        for (int kk = 0; kk < BK / 32; kk++) {
#pragma unroll
            for (int w = 0; w < WAVES; w++)
                WgmmaFp8<BN / PARTS>::mma(
                    part_of(part[w], h), wgmma_desc_advance(da, w * 64 * BK + kk * 32),
                    wgmma_desc_advance(db, h * (BN / PARTS) * BK + kk * 32), kk == 0 ? 0u : 1u);
        }
        wgmma_commit();
    }

    /* Wait until at most `left` batches are in flight; `left` is a constant once the caller's
     * loop is unrolled, and wait_group takes an immediate. */
    static __device__ __forceinline__ void wgmma_wait_left(int left) {
        if (left == 0)
            wgmma_wait<0>();
        else
            wgmma_wait<1>();
    }

    /* acc part h += part part h, once that part's batch has completed. */
    static __device__ __forceinline__ void promote_part(float (&acc)[WAVES][ACC],
                                                        float (&part)[WAVES][ACC], int h) {
#pragma unroll
        for (int w = 0; w < WAVES; w++) {
            reg_fence_all(part_of(part[w], h));
#pragma unroll
            for (int i = 0; i < ACC / PARTS; i++)
                acc[w][h * (ACC / PARTS) + i] += part[w][h * (ACC / PARTS) + i];
        }
    }

    /* One k32 step into a fresh accumulator (PROMOTE == 2 only). */
    static __device__ __forceinline__ void mma_k32(float (&acc)[WAVES][ACC], u64 da, u64 db) {
        open_batch(acc);
#pragma unroll
        for (int w = 0; w < WAVES; w++)
            WgmmaFp8<BN>::mma(acc[w], wgmma_desc_advance(da, w * 64 * BK), db, 0u);
        wgmma_commit();
    }

    /* Hand slot `stage` back to the producers: one arrival per consumer warp on the empty
     * barrier of every CTA of the cluster, since each of them wrote part of the slot. */
    static __device__ __forceinline__ void release(u32 empty_bar, int stage, int lane) {
        if (lane == 0) {
            if (CLUSTER == 1) {
                mbar_arrive(empty_bar + stage * 8);
            } else {
#pragma unroll
                for (int r = 0; r < CLUSTER; r++)
                    mbar_arrive_cluster(empty_bar + stage * 8, (u32)r);
            }
        }
    }

    /* ---- consumer main loop for one tile: acc = A rows x B rows over all of K ---- */
    static __device__ __forceinline__ void mainloop(float (&acc)[WAVES][ACC],
                                                    float (&part)[WAVES][ACC], u32 smem,
                                                    u32 full_bar, u32 empty_bar, int cwg, int lane,
                                                    int &stage, u32 &phase) {
        /* Descriptors of stage 0, built once; a stage is a descriptor add away. */
        const u64 da0 = wgmma_desc_sw128(smem + cwg * WG_ROWS * BK);
        const u64 db0 = wgmma_desc_sw128(smem + STAGES * A_BYTES);
        int prev_stage = 0;
        if (PROMOTE) {
            /* Zeroed once per tile, so each block's promotion is a plain add, not a select of
             * "first block or not" on every accumulator. */
#pragma unroll
            for (int w = 0; w < WAVES; w++)
#pragma unroll
                for (int i = 0; i < ACC; i++)
                    acc[w][i] = 0.0f;
        }
        for (int kb = 0; kb < K_BLOCKS; kb++) {
            mbar_wait(full_bar + stage * 8, phase);
            const u64 da = wgmma_desc_advance(da0, stage * A_BYTES);
            const u64 db = wgmma_desc_advance(db0, stage * B_BYTES);
            if (PROMOTE == 2) {
                /* Diagnostic: promote after every k32 step (each wgmma into a fresh accumulator).
                 * Slow; shows how much of the error is inside one wgmma. */
#pragma unroll
                for (int kk = 0; kk < BK / 32; kk++) {
                    mma_k32(part, wgmma_desc_advance(da, kk * 32), wgmma_desc_advance(db, kk * 32));
                    wgmma_wait<0>();
#pragma unroll
                    for (int w = 0; w < WAVES; w++) {
                        reg_fence_all(part[w]);
#pragma unroll
                        for (int i = 0; i < ACC; i++)
                            acc[w][i] += part[w][i];
                    }
                }
                release(empty_bar, stage, lane);
            } else if (PROMOTE == 3) {
                /* One batch per column part: each part's partial is added while the later
                 * parts' wgmmas still run, so only the last part's adds wait on an empty tensor
                 * pipe (nothing stays in flight past the block: ptxas serialises wgmmas left in
                 * flight across the loop, docs/kernels-fp8-wgmma.md). */
                open_batch(part);
#pragma unroll
                for (int h = 0; h < PARTS; h++)
                    mma_part(part, da, db, h);
#pragma unroll
                for (int h = 0; h < PARTS; h++) {
                    wgmma_wait_left(PARTS - 1 - h);
                    if (h == PARTS - 1)
                        release(empty_bar, stage, lane);
                    promote_part(acc, part, h);
                }
            } else if (PROMOTE) {
                mma_block(part, da, db, true);
                wgmma_wait<0>();
#pragma unroll
                for (int w = 0; w < WAVES; w++)
                    reg_fence_all(part[w]);
                release(empty_bar, stage, lane);
#pragma unroll
                for (int w = 0; w < WAVES; w++)
#pragma unroll
                    for (int i = 0; i < ACC; i++)
                        acc[w][i] += part[w][i];
            } else {
                mma_block(acc, da, db, kb == 0);
                /* Keep one batch in flight: the previous block's wgmmas are done, so its slot is
                 * free. */
                wgmma_wait<1>();
                if (kb > 0)
                    release(empty_bar, prev_stage, lane);
                prev_stage = stage;
            }
            if (++stage == STAGES) {
                stage = 0;
                phase ^= 1;
            }
        }
        if (!PROMOTE) {
            wgmma_wait<0>();
#pragma unroll
            for (int w = 0; w < WAVES; w++)
                reg_fence_all(acc[w]);
            release(empty_bar, prev_stage, lane);
        }
    }

    /* Whether every row of a BF16 matrix (`base`, `ld` elements apart) starts on a 16-byte
     * boundary, so that its rows take 16-byte loads and stores: D's, and linear_add's residual. */
    static __device__ __forceinline__ bool rows_16b(const u16 *base, i64 ld) {
        return (ld % 8 == 0) && (((u64)base & 15) == 0);
    }
    static __device__ __forceinline__ bool d_rows_16b(const Fp8WgmmaParams &p) {
        return rows_16b(p.d, p.ldd);
    }

    /* The consumers' store pass covers a warp's 16 staged rows of a wave in 8-column units, u
     * from 0 to 16 * EPI_CH / 8: unit u of wave w is row unit_row(w, warp, u) of the
     * warpgroup's rows, columns (u % (EPI_CH / 8)) * 8 .. + 7 of the chunk. */
    static __device__ __forceinline__ int unit_row(int w, int warp, int u) {
        return w * 64 + warp * 16 + u / (EPI_CH / 8);
    }

    /* Eight staged BF16 outputs to D at column gcol: one 16-byte store when D's rows allow it
     * and all eight lie below NOUT, else element by element up to NOUT. */
    static __device__ __forceinline__ void store_bf16x8(u16 *dst, const uint4 &v, int gcol,
                                                        bool d_vec) {
        if (d_vec && gcol + 8 <= NOUT) {
            st_global_v4(dst, v.x, v.y, v.z, v.w);
        } else {
            const u32 words[4] = {v.x, v.y, v.z, v.w};
#pragma unroll
            for (int e = 0; e < 8; e++)
                if (gcol + e < NOUT)
                    dst[e] = (u16)(words[e >> 1] >> (16 * (e & 1)));
        }
    }

    /* alpha * sa of the rows this thread holds in the accumulator layout (warp q, lane 4g + t:
     * rows 16q + g and 16q + g + 8 of each wave, from the warpgroup's first row row0); rows
     * past M get 0 and are never stored. */
    static __device__ __forceinline__ void load_row_scales(const Fp8WgmmaParams &p, i64 row0,
                                                           int warp, int g, float (&rs)[WAVES][2]) {
#pragma unroll
        for (int w = 0; w < WAVES; w++)
#pragma unroll
            for (int h = 0; h < 2; h++) {
                const i64 r = row0 + w * 64 + warp * 16 + g + 8 * h;
                rs[w][h] = r < p.m ? p.alpha * p.sa[r] : 0.0f;
            }
    }

    /* sb of every column this thread holds (8j + 2t and 8j + 2t + 1 from the tile's first
     * column n0), 0 past N. */
    static __device__ __forceinline__ void load_col_scales(const Fp8WgmmaParams &p, int n0, int t,
                                                           float (&cs)[ACC / 4][2]) {
#pragma unroll
        for (int j = 0; j < ACC / 4; j++) {
            const int col = n0 + 8 * j + 2 * t;
            cs[j][0] = col < N ? p.sb[col] : 0.0f;
            cs[j][1] = col + 1 < N ? p.sb[col + 1] : 0.0f;
        }
    }

    /* ---- epilogue (linear, swiglu): scale, apply, round once to BF16, stage, store ----
     * Accumulator layout (m64nBN f32): warp q of the warpgroup, lane = 4g + t holds rows
     * 16q + g (regs 4j, 4j+1) and 16q + g + 8 (regs 4j+2, 4j+3) at columns 8j + 2t, 8j + 2t + 1.
     * The tile is written in chunks of EPI_CH output columns through this warpgroup's staging
     * buffer (WG_ROWS x EPI_PITCH bytes), then stored row by row: 16-byte stores when D's rows are
     * 16-byte aligned and the chunk is whole, else element stores. */
    static __device__ __forceinline__ void epilogue(const Fp8WgmmaParams &p,
                                                    const float (&acc)[WAVES][ACC], u8 *staging,
                                                    int mt, int nt, int cwg, int tid) {
        const int warp = tid >> 5, lane = tid & 31, g = lane >> 2, t = lane & 3;
        const i64 m = p.m;
        const i64 row0 = tile_row0(mt, m) + cwg * WG_ROWS; /* first row of this warpgroup */
        const i64 own0 = (i64)mt * BM;                      /* rows below are the last tile's */
        const int n0 = nt * BN;                             /* first acc column of the tile */

        float rs[WAVES][2];
        load_row_scales(p, row0, warp, g, rs);

        const bool d_vec = d_rows_16b(p);

        /* The column scales of every column this thread holds, loaded in one batch before the
         * chunks: the warp syncs between chunks are memory clobbers, so loads left inside
         * a chunk could not be hoisted and each chunk would wait out one global-load latency.
         * (The promotion registers are dead here, so this costs no occupancy.) */
        float cs[ACC / 4][2];
        load_col_scales(p, n0, t, cs);

#pragma unroll
        for (int c = 0; c < TILE_NOUT / EPI_CH; c++) {
            /* 1. registers -> staging (this chunk's accumulator columns only) */
#pragma unroll
            for (int jj = 0; jj < EPI_CH_IN / 8; jj++) {
                const int j = c * (EPI_CH_IN / 8) + jj;
                const float s0 = cs[j][0];
                const float s1 = cs[j][1];
#pragma unroll
                for (int w = 0; w < WAVES; w++)
#pragma unroll
                    for (int h = 0; h < 2; h++) {
                        const int srow = w * 64 + warp * 16 + g + 8 * h;
                        float v0 = acc[w][4 * j + 2 * h] * rs[w][h] * s0;
                        float v1 = acc[w][4 * j + 2 * h + 1] * rs[w][h] * s1;
                        if (EPILOGUE == FP8W_EPI_LINEAR_SWIGLU) {
                            /* gate/up pair (acc columns 2i, 2i+1) -> output column i */
                            *(u16 *)(staging + srow * EPI_PITCH + (4 * j + t - c * EPI_CH) * 2) =
                                to_bf16(swiglu(v0, v1));
                        } else {
                            *(u32 *)(staging + srow * EPI_PITCH + (8 * j + 2 * t - c * EPI_CH) * 2) =
                                pack_bf16x2(v0, v1);
                        }
                    }
            }
            /* Each warp stores the 16 rows (per wave) it staged itself, so a warp-level sync
             * orders the staging and no warp waits on the others. */
            __syncwarp();

            /* 2. staging -> global: EPI_CH / 8 16-byte units per row */
            enum : int { UNITS = EPI_CH / 8 };
#pragma unroll
            for (int w = 0; w < WAVES; w++)
#pragma unroll
                for (int it = 0; it < 16 * UNITS / 32; it++) {
                    const int u = lane + 32 * it;
                    const int r = unit_row(w, warp, u), cu = u % UNITS;
                    const i64 grow = row0 + r;
                    const int gcol = nt * TILE_NOUT + c * EPI_CH + cu * 8;
                    if (grow >= own0 && grow < m && gcol < NOUT) {
                        const uint4 v = *(const uint4 *)(staging + r * EPI_PITCH + cu * 16);
                        store_bf16x8(p.d + grow * p.ldd + gcol, v, gcol, d_vec);
                    }
                }
            /* The next chunk (or tile) overwrites this warp's rows of the staging buffer. */
            __syncwarp();
        }
    }

    /* 2 x BF16 (the low and high halves of a word) plus 2 x FP32, rounded once to 2 x BF16. */
    static __device__ __forceinline__ u32 add_bf16x2(u32 r, float lo, float hi) {
        return pack_bf16x2(lo + bits_to_float(r << 16), hi + bits_to_float(r & 0xFFFF0000u));
    }

    /* ---- epilogue (linear_add): scale, stage in FP32, add the residual, round, store ----
     * As epilogue(), but the chunk is staged in FP32 and the residual is added in step 2, where
     * each lane holds 8 consecutive columns of one row: the residual is read in whole 16-byte
     * units (whole 32-byte sectors per row), where in the accumulator layout each load took 4
     * bytes and a warp's load touched 8 half-used sectors. Every residual unit of the tile is
     * loaded before the first chunk, so the tile waits out one memory latency, not one per
     * chunk. The value stored is the scaled product plus the residual in FP32, rounded once.
     *
     * The 16-byte path is straight-line code under a predicate (ptxas's compile time grows
     * with every branch in this unrolled function: docs/kernels-fp8-wgmma.md). What it cannot
     * take goes element by element in a loop that is not unrolled, once per chunk: every unit
     * when R's or D's rows are not 16-byte aligned, and the unit that straddles N when N % 8 is
     * not 0 (N is a template parameter, so that test folds away when it is). */
    static __device__ __forceinline__ void epilogue_add(const Fp8WgmmaParams &p,
                                                        const float (&acc)[WAVES][ACC], u8 *staging,
                                                        int mt, int nt, int cwg, int tid) {
        enum : int {
            UNITS = EPI_CH / 8,       /* 8-column units per staged row */
            PASSES = 16 * UNITS / 32, /* units per lane and wave: the warp's 16 rows */
            WAVE_UNITS = 16 * UNITS,  /* units of one warp and wave */
            CHUNKS = TILE_NOUT / EPI_CH,
        };
        const int warp = tid >> 5, lane = tid & 31, g = lane >> 2, t = lane & 3;
        const i64 m = p.m;
        const i64 row0 = tile_row0(mt, m) + cwg * WG_ROWS;
        const i64 own0 = (i64)mt * BM; /* rows below are the last tile's */
        const int n0 = nt * BN;
        /* In registers: the stores below are memory clobbers, after which fields of p would be
         * read from parameter space again. */
        const u16 *const residual = p.residual;
        u16 *const dout = p.d;
        const i64 ldr = p.ldr, ldd = p.ldd;
        const bool vec = rows_16b(dout, ldd) && rows_16b(residual, ldr);

        /* The residual of unit u = lane + 32 * it of wave w and chunk c (unit_row()). A unit
         * goes as one 16-byte load and store when it is one of this tile's rows inside M and
         * lies wholly below N. */
        auto whole_unit = [&](i64 grow, int gcol) {
            return vec && grow >= own0 && grow < m && gcol + 8 <= N;
        };
        uint4 res[CHUNKS][WAVES][PASSES];
#pragma unroll
        for (int c = 0; c < CHUNKS; c++)
#pragma unroll
            for (int w = 0; w < WAVES; w++)
#pragma unroll
                for (int it = 0; it < PASSES; it++) {
                    const int u = lane + 32 * it;
                    const i64 grow = row0 + unit_row(w, warp, u);
                    const int gcol = n0 + c * EPI_CH + (u % UNITS) * 8;
                    res[c][w][it] =
                        ld_global_v4_if(whole_unit(grow, gcol), residual + grow * ldr + gcol);
                }

        float rs[WAVES][2];
        load_row_scales(p, row0, warp, g, rs);
        float cs[ACC / 4][2];
        load_col_scales(p, n0, t, cs);

#pragma unroll
        for (int c = 0; c < CHUNKS; c++) {
            /* 1. registers -> staging, FP32 */
#pragma unroll
            for (int jj = 0; jj < EPI_CH / 8; jj++) {
                const int j = c * (EPI_CH / 8) + jj;
#pragma unroll
                for (int w = 0; w < WAVES; w++)
#pragma unroll
                    for (int h = 0; h < 2; h++) {
                        const int srow = w * 64 + warp * 16 + g + 8 * h;
                        const float v0 = acc[w][4 * j + 2 * h] * rs[w][h] * cs[j][0];
                        const float v1 = acc[w][4 * j + 2 * h + 1] * rs[w][h] * cs[j][1];
                        *(float2 *)(staging + srow * EPI_PITCH + (8 * jj + 2 * t) * 4) =
                            make_float2(v0, v1);
                    }
            }
            __syncwarp();

            /* 2. staging + residual -> BF16 -> D, 16 bytes a unit */
#pragma unroll
            for (int w = 0; w < WAVES; w++)
#pragma unroll
                for (int it = 0; it < PASSES; it++) {
                    const int u = lane + 32 * it;
                    const int r = unit_row(w, warp, u), cu = u % UNITS;
                    const i64 grow = row0 + r;
                    const int gcol = n0 + c * EPI_CH + cu * 8;
                    const u8 *src = staging + r * EPI_PITCH + cu * 32;
                    const float4 lo = *(const float4 *)src;
                    const float4 hi = *(const float4 *)(src + 16);
                    const uint4 rv = res[c][w][it];
                    st_global_v4_if(whole_unit(grow, gcol), dout + grow * ldd + gcol,
                                    add_bf16x2(rv.x, lo.x, lo.y), add_bf16x2(rv.y, lo.z, lo.w),
                                    add_bf16x2(rv.z, hi.x, hi.y), add_bf16x2(rv.w, hi.z, hi.w));
                }
            /* 2b. what the 16-byte path left: element by element */
            if (!vec || (N % 8 != 0 && n0 + (c + 1) * EPI_CH > N)) {
#pragma unroll 1
                for (int u = lane; u < WAVES * WAVE_UNITS; u += 32) {
                    const int r = unit_row(u / WAVE_UNITS, warp, u % WAVE_UNITS);
                    const i64 grow = row0 + r;
                    const int gcol = n0 + c * EPI_CH + u % UNITS * 8;
                    if (grow < own0 || grow >= m || gcol >= N || whole_unit(grow, gcol))
                        continue;
                    const float *src = (const float *)(staging + r * EPI_PITCH) + u % UNITS * 8;
                    const u16 *rrow = residual + grow * ldr + gcol;
                    u16 *drow = dout + grow * ldd + gcol;
#pragma unroll 1
                    for (int e = 0; e < 8 && gcol + e < N; e++)
                        drow[e] = to_bf16(src[e] + bf16_to_float(rrow[e]));
                }
            }
            /* The next chunk (or tile) overwrites this warp's rows of the staging buffer. */
            __syncwarp();
        }
    }

    /* ---- the store-warp path (STORE_WARPS) ----
     * Three barriers pass each tile between the consumers and the store warps, one phase per
     * tile (so tile i waits on parity i & 1):
     *   scales   the store warps wrote the tile's alpha * sa and sb (96 arrivals)
     *   staged   the consumers wrote the tile's BF16 values to the staging buffer (256)
     *   drained  the store warps read the staging buffer out (96)
     * The store warps write tile i's scales only after waiting for staged(i - 1), when the
     * consumers have read tile i - 1's; the consumers overwrite the staging buffer only after
     * drained(i - 1). Neither side gets two phases ahead of the other. */
    struct Handoff {
        u32 scales, staged, drained;
    };
    static __device__ __forceinline__ Handoff handoff_of(u32 bars) {
        const u32 first = bars + 2 * STAGES * 8;
        return Handoff{first, first + 8, first + 16};
    }

    static __device__ __forceinline__ void store_warps(const Fp8WgmmaParams &p, u8 *smem_ptr,
                                                       Handoff h, const Work &w) {
        const int sid = (int)threadIdx.x - 32; /* 0 .. STORE_THREADS - 1 */
        float *scales = (float *)(smem_ptr + SCALES_OFFSET);
        const u8 *staging = smem_ptr + STAGING_OFFSET;
        const i64 m = p.m;
        const bool d_vec = d_rows_16b(p);
        u32 parity = 0;
        for (int unit = w.first; unit < w.units; unit += w.stride) {
            int mg, nt;
            unit_coords(unit, w.m_groups, mg, nt);
            const int mt = mg * CLUSTER + w.rank; /* past the last m-tile for a spare CTA */
            const i64 row0 = tile_row0(mt, m);    /* the MMA rows' first */
            /* Rows of the tile inside M, and the first one this tile stores (the rows below it
             * belong to the tile before, when the last m-tile was moved up); ints and two base
             * pointers keep the loops within the store warps' 40 registers. */
            const int in_m = (int)min_of((i64)BM, m - row0); /* <= 0 for a spare CTA */
            const int first = (int)max_of((i64)0, (i64)mt * BM - row0);
            const int n0 = nt * BN;
            /* 1. this tile's scales; rows and columns past the edges get 0 (never stored) */
            const float *sa = p.sa + row0;
            for (int i = sid; i < BM + BN; i += STORE_THREADS) {
                float v;
                if (i < BM) {
                    v = i < in_m ? p.alpha * sa[i] : 0.0f;
                } else {
                    const int c = n0 + i - BM;
                    v = c < N ? p.sb[c] : 0.0f;
                }
                scales[i] = v;
            }
            mbar_arrive(h.scales);
            /* 2. the staged tile -> D, 16 bytes per thread and step, rows in order */
            mbar_wait(h.staged, parity);
            enum : int { UNITS = TILE_NOUT / 8 };
            const int col0 = nt * TILE_NOUT;
            u16 *d = p.d + row0 * p.ldd + col0;
            for (int u = first * UNITS + sid; u < in_m * UNITS; u += STORE_THREADS) {
                const int r = u / UNITS, cu = u % UNITS;
                const int gcol = col0 + cu * 8;
                if (gcol >= NOUT)
                    continue;
                const uint4 v = *(const uint4 *)(staging + r * OUT_PITCH + cu * 16);
                store_bf16x8(d + r * p.ldd + cu * 8, v, gcol, d_vec);
            }
            mbar_arrive(h.drained);
            parity ^= 1;
        }
    }

    /* The consumers' part of the store-warp epilogue: scale, apply, round once to BF16 and write
     * this warpgroup's rows of the tile to the staging buffer (fragment layout as in
     * epilogue()); the store warps write it to D while the next tile's MMAs run. */
    static __device__ __forceinline__ void epilogue_staged(const float (&acc)[WAVES][ACC],
                                                           u8 *smem_ptr, Handoff h, u32 parity,
                                                           int cwg, int tid) {
        const int warp = tid >> 5, lane = tid & 31, g = lane >> 2, t = lane & 3;
        const float *scales = (const float *)(smem_ptr + SCALES_OFFSET);
        u8 *staging = smem_ptr + STAGING_OFFSET;
        mbar_wait(h.drained, parity ^ 1); /* the last tile is out (tile 0: at once) */
        mbar_wait(h.scales, parity);
        float rs[WAVES][2];
#pragma unroll
        for (int w = 0; w < WAVES; w++)
#pragma unroll
            for (int hh = 0; hh < 2; hh++)
                rs[w][hh] = scales[cwg * WG_ROWS + w * 64 + warp * 16 + g + 8 * hh];
#pragma unroll
        for (int j = 0; j < ACC / 4; j++) {
            const float2 cs = *(const float2 *)(scales + BM + 8 * j + 2 * t);
#pragma unroll
            for (int w = 0; w < WAVES; w++)
#pragma unroll
                for (int hh = 0; hh < 2; hh++) {
                    const int srow = cwg * WG_ROWS + w * 64 + warp * 16 + g + 8 * hh;
                    const float v0 = acc[w][4 * j + 2 * hh] * rs[w][hh] * cs.x;
                    const float v1 = acc[w][4 * j + 2 * hh + 1] * rs[w][hh] * cs.y;
                    if (EPILOGUE == FP8W_EPI_LINEAR_SWIGLU)
                        *(u16 *)(staging + srow * OUT_PITCH + (4 * j + t) * 2) =
                            to_bf16(swiglu(v0, v1));
                    else
                        *(u32 *)(staging + srow * OUT_PITCH + (8 * j + 2 * t) * 2) =
                            pack_bf16x2(v0, v1);
                }
        }
        mbar_arrive(h.staged);
    }

    static __device__ __forceinline__ void consumer(const Fp8WgmmaParams &p, u32 smem,
                                                    u8 *smem_ptr, u32 full_bar, u32 empty_bar,
                                                    int cwg, const Work &w) {
        const int tid = threadIdx.x & 127;
        u8 *staging = smem_ptr + STAGING_OFFSET + cwg * WG_ROWS * EPI_PITCH;
        float acc[WAVES][ACC];
        float part[WAVES][ACC]; /* promotion only; optimised away otherwise */
        int stage = 0;
        u32 phase = 0, tile_parity = 0;
        for (int unit = w.first; unit < w.units; unit += w.stride) {
            int mg, nt;
            unit_coords(unit, w.m_groups, mg, nt);
            mainloop(acc, part, smem, full_bar, empty_bar, cwg, tid & 31, stage, phase);
            if (STORE_WARPS) {
                epilogue_staged(acc, smem_ptr, handoff_of(full_bar), tile_parity, cwg, tid);
                tile_parity ^= 1;
            } else if (EPILOGUE == FP8W_EPI_LINEAR_ADD) {
                epilogue_add(p, acc, staging, mg * CLUSTER + w.rank, nt, cwg, tid);
            } else {
                epilogue(p, acc, staging, mg * CLUSTER + w.rank, nt, cwg, tid);
            }
        }
    }

    static __device__ __forceinline__ void run(const Fp8WgmmaParams &p) {
        extern __shared__ __align__(1024) u8 jit_smem[];
        /* Align the ring to 1024 bytes in the shared window: the 128B swizzle is a function of
         * the absolute address, so a misaligned base silently scrambles every tile. */
        const u32 raw = smem_addr(jit_smem);
        const u32 smem = (raw + 1023) & ~1023u;
        u8 *smem_ptr = jit_smem + (smem - raw);
        const u32 full_bar = smem + BAR_OFFSET;
        const u32 empty_bar = full_bar + STAGES * 8;

        if (threadIdx.x == 0) {
            for (int s = 0; s < STAGES; s++) {
                mbar_init(full_bar + s * 8, 1); /* the producer's arrive.expect_tx */
                mbar_init(empty_bar + s * 8, EMPTY_ARRIVALS);
            }
            if (STORE_WARPS) {
                const Handoff h = handoff_of(full_bar);
                mbar_init(h.scales, STORE_THREADS);
                mbar_init(h.staged, CONSUMER_THREADS);
                mbar_init(h.drained, STORE_THREADS);
            }
            fence_mbarrier_init();
        } else if (threadIdx.x == 32) {
            prefetch_tmap(&p.tmap_a);
            prefetch_tmap(&p.tmap_b);
        }
        /* With a cluster, the peer's producer multicasts into this CTA's ring and its consumers
         * arrive on these barriers: every barrier of both CTAs must exist before either starts. */
        if (CLUSTER == 1)
            __syncthreads();
        else
            cluster_sync();

        /* Each role computes its work after setmaxnreg: a value live across it must fit the
         * smaller budget, and ptxas spilled one there (w.units) at 40 registers. */
        const int wg = threadIdx.x >> 7;
        if (wg == 0) {
            setmaxnreg_dec<PRODUCER_REGS>();
            if (threadIdx.x == 0)
                producer(p, smem, full_bar, empty_bar, work_of(p.m));
            else if (STORE_WARPS && threadIdx.x >= 32)
                store_warps(p, smem_ptr, handoff_of(full_bar), work_of(p.m));
        } else {
            setmaxnreg_inc<CONSUMER_REGS>();
            consumer(p, smem, smem_ptr, full_bar, empty_bar, wg - 1, work_of(p.m));
        }
        /* Nobody leaves while the peer may still write into this CTA's shared memory or arrive
         * on its barriers: every multicast slice is consumed and every release sent by the time
         * both CTAs' consumers get here. The producer warp diverged (one thread worked), and the
         * cluster barrier is .aligned: reconverge first. */
        if (CLUSTER > 1) {
            __syncwarp();
            cluster_sync();
        }
    }
};

#endif /* JITGEMM_FP8_WGMMA_CUH */
