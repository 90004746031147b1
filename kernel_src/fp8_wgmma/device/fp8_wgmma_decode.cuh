/*
 * FP8 (E4M3 x E4M3) row-scaled GEMM for sm_90a, decode / small-M route: swap AB + deterministic
 * split-K. Same math as fp8_wgmma.cuh:
 *
 *   acc[m][n] = sum_k A[m][k] * B[n][k]            A [M, K] tokens, B [N, K] weights, K-major E4M3
 *   linear        D[m][n] = bf16(alpha * sa[m] * sb[n] * acc[m][n])
 *   linear_add    D[m][n] = bf16(alpha * sa[m] * sb[n] * acc[m][n] + float(R[m][n]))
 *   linear_swiglu D[m][j] = bf16(silu(g) * u), g / u = scaled acc of B rows 2j / 2j+1
 *
 * At M <= 64 the GEMM is bound by reading B (N x K bytes) once, so the kernel is built to stream
 * the weights from every SM at full bandwidth:
 *
 *   Swap AB: the weights fill wgmma's M = 64 side (A operand: BW weight rows of the tile, 64 per
 *   consumer warpgroup and wave), the tokens its N side (B operand: m64nTOKk32 with TOK tokens).
 *   Both operands are K-major 128B-swizzled TMA tiles, as FP8 wgmma requires. The accumulator
 *   holds acc[weight row][token]; the tile is transposed on the way out.
 *
 *   Split-K: a work unit is (token tile mt, weight tile nt of BW rows, k-split s of SPLIT). The
 *   SPLIT units of one (mt, nt) tile write FP32 partials to a workspace; the last of them to
 *   finish (an atomic counter per tile, bumped after a GPU-scope fence) adds the SPLIT partials in
 *   the fixed order s = 0, 1, ..., SPLIT-1, so D is bit-identical run to run whatever order the
 *   units finish in, applies the scales and the epilogue, writes D, and sets the counter back to
 *   0 (the counters are zeroed once, when the workspace is allocated). SPLIT == 1 uses no
 *   workspace: the tile goes through shared memory straight to the epilogue.
 *
 * Block of 384 threads = 3 warpgroups, one CTA per SM, persistent grid: CTA b takes units b,
 * b + gridDim.x, ... (a grid of `units` CTAs is one CTA per unit, also correct):
 *   warpgroup 0  producer: gives registers away (setmaxnreg.dec); one thread issues the TMA loads of
 *                the weight tile (BW x 128 bytes) and the token tile (TOK x 128 bytes) of KSUB
 *                consecutive 128-K blocks per stage into a STAGES-deep ring (KSUB > 1 asks for
 *                several consecutive 128-byte pieces of every weight row at once). The ring runs
 *                on across units, so the next unit's weights stream in while the consumers reduce
 *                and store the last one.
 *   warpgroups 1, 2  consumers: each owns BW/2 weight rows (one or two m64 waves) and all TOK
 *                tokens; per stage they wait on full[s], then per 128-K block issue 4 k32 wgmmas
 *                into a fresh partial accumulator, wait for them and add the partial into FP32
 *                registers (promotion every 128 K: FP8 wgmma keeps about 14 bits of its running
 *                sum, not enough over long K), and free the slot (empty[s]). After a unit they
 *                store its partial and, if this CTA completed the tile, reduce it and write D
 *                (unit_epilogue). That epilogue stalls the weight stream: once the ring is full
 *                the producer issues nothing until the consumers are back (measured on the H200:
 *                about 3.6 us per unit at 1 token), so prefer few units per CTA.
 *
 * Ragged M, N and K come from TMA: boxes past the tensor edge are zero-filled (and still count in
 * the transaction bytes). Nothing reads sa/sb/residual past M/N or writes D past M/Nout.
 *
 * Workspace (SPLIT > 1): per tile (mt, nt) -- tile index mt * N_TILES + nt -- SPLIT slices of
 * TOK x BW floats, token-major ([s][token][row], so a gate/up row pair is one 8-byte load); only
 * tokens < M are written and read. Bytes: ceil(M / TOK) * N_TILES * SPLIT * TOK * BW * 4. Counters:
 * ceil(M / TOK) * N_TILES u32, zero before the first launch; every launch leaves them zero.
 * Launches that share a workspace must not run concurrently (stream order is enough).
 */
#ifndef JITGEMM_FP8_WGMMA_DECODE_CUH
#define JITGEMM_FP8_WGMMA_DECODE_CUH

#include "device/common.cuh"
#include "device/sm90.cuh"
#include "device/convert.cuh"

/* The kernel's only parameter, passed by value as `const __grid_constant__` (TMA reads the tensor
 * maps through their parameter-space address). 384 bytes, 64-byte aligned. */
struct Fp8WgmmaDecodeParams {
    jit_tmap tmap_x;     /*   0: X = A [M, K] u8 tokens, box {128, TOK}, 128B swizzle */
    jit_tmap tmap_w;     /* 128: W = B [N, K] u8 weights, box {128, BW}, 128B swizzle */
    const float *sa;     /* 256: [M] token (row) scales */
    const float *sb;     /* 264: [N] weight-row (column) scales */
    const u16 *residual; /* 272: BF16 [M, ldr], linear_add only (else unused, may be null) */
    u16 *d;              /* 280: BF16 [M, ldd] output */
    float *workspace;    /* 288: split-K partials, 8-byte aligned (SPLIT == 1: unused, may be null) */
    u32 *counters;       /* 296: per-tile arrival counters, zero at rest (SPLIT == 1: unused) */
    i64 m;               /* 304: rows of A and D (tokens), >= 1 */
    i64 ldd;             /* 312: D row stride in elements, >= Nout (any parity) */
    i64 ldr;             /* 320: residual row stride in elements */
    float alpha;         /* 328 */
    u32 reserved[13];    /* 332..383: keep 0 */
};

enum Fp8WgmmaDecodeEpilogue {
    FP8WD_EPI_LINEAR = 0,
    FP8WD_EPI_LINEAR_ADD = 1,
    FP8WD_EPI_LINEAR_SWIGLU = 2,
};

/*
 * BW        weight rows per tile: 128 (two consumer warpgroups x one m64 wave) or 256 (x two)
 * TOK       tokens per tile, the wgmma N: 8, 16, 32 or 64
 * STAGES    depth of the TMA ring, >= 2; SMEM_BYTES must stay within 232448
 * N, K      problem size; K % 16 == 0, N even for swiglu
 * EPILOGUE  Fp8WgmmaDecodeEpilogue
 * SPLIT     k-splits per tile, 1 <= SPLIT <= ceil(K / 128)
 * KSUB      128-K blocks per stage (1, 2 or 4); a unit's last stage may hold fewer
 * W_HINT    1: weight loads carry an L2 evict-first policy (read once); 0: no hint
 * PRODUCER_REGS / CONSUMER_REGS  setmaxnreg budgets: 40/232 (or 24/240). 128 P + 256 C must not
 *           exceed 168 x 384 = 64512, the registers __launch_bounds__(384, 1) gives the CTA:
 *           setmaxnreg.inc takes from the CTA's own pool, so e.g. 80/216 blocks forever.
 */
template <int BW, int TOK, int STAGES, int N, int K, int EPILOGUE, int SPLIT, int KSUB = 1,
          int W_HINT = 0, int PRODUCER_REGS = 40, int CONSUMER_REGS = 232>
struct Fp8WgmmaDecodeKernel {
    enum : int {
        THREADS = 384,
        CONSUMER_THREADS = 256,
        CONSUMER_WARPS = 8,
        BK = 128,                 /* K per stage: one 128-byte swizzle span per row */
        WAVES = BW / 128,         /* m64 wgmma waves per consumer warpgroup */
        WG_ROWS = BW / 2,         /* weight rows owned by one consumer warpgroup */
        ACC = TOK / 2,            /* f32 accumulator registers per wave and thread */
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

    /* One work unit. Units are numbered tile-major (u = tile * SPLIT + j), so the SPLIT units of a
     * tile run at about the same time on neighbouring CTAs and tiles complete (and are reduced)
     * all through the kernel, not all at its end. The k-split of slot j is rotated by the tile
     * index, s = (j + tile) % SPLIT: when K_BLOCKS % SPLIT != 0 some splits are one 128-K block
     * longer, and without the rotation a persistent CTA whose stride is a multiple of SPLIT would
     * get the long split of every tile it visits. Split s covers blocks
     * [s * K_BLOCKS / SPLIT, (s + 1) * K_BLOCKS / SPLIT). */
    struct Unit {
        int tile, mt, nt, s, kb0, kb1;
    };

    static __device__ __forceinline__ Unit unit_of(int u) {
        Unit w;
        w.tile = u / SPLIT;
        const int j = u - w.tile * SPLIT;
        w.s = (j + w.tile) % SPLIT;
        w.mt = w.tile / N_TILES;
        w.nt = w.tile - w.mt * N_TILES;
        w.kb0 = w.s * K_BLOCKS / SPLIT;
        w.kb1 = (w.s + 1) * K_BLOCKS / SPLIT;
        return w;
    }

    /* ---- producer: one thread streams weight and token K-blocks into the ring ---- */
    static __device__ __forceinline__ void producer(const Fp8WgmmaDecodeParams &p, u32 smem,
                                                    u32 full_bar, u32 empty_bar, int units) {
        const u64 policy = W_HINT ? l2_policy_evict_first() : 0;
        int stage = 0;
        u32 phase = 0;
        for (int u = blockIdx.x; u < units; u += gridDim.x) {
            const Unit w = unit_of(u);
            for (int kb = w.kb0; kb < w.kb1; kb += KSUB) {
                /* First pass: parity phase^1 = 1 is "the phase before", complete at once. */
                mbar_wait(empty_bar + stage * 8, phase ^ 1);
                const int nsub = min_of(KSUB, w.kb1 - kb);
                const u32 bar = full_bar + stage * 8;
                mbar_arrive_expect_tx(bar, (u32)(nsub * (W_BYTES + X_BYTES)));
#pragma unroll
                for (int i = 0; i < KSUB; i++) {
                    if (i < nsub) {
                        const u32 w_dst = smem + W_OFFSET + stage * W_STAGE + i * W_BYTES;
                        if (W_HINT)
                            tma_load_2d_hint(w_dst, &p.tmap_w, bar, (kb + i) * BK, w.nt * BW, policy);
                        else
                            tma_load_2d(w_dst, &p.tmap_w, bar, (kb + i) * BK, w.nt * BW);
                    }
                }
#pragma unroll
                for (int i = 0; i < KSUB; i++) {
                    if (i < nsub)
                        tma_load_2d(smem + X_OFFSET + stage * X_STAGE + i * X_BYTES, &p.tmap_x, bar,
                                    (kb + i) * BK, w.mt * TOK);
                }
                if (++stage == STAGES) {
                    stage = 0;
                    phase ^= 1;
                }
            }
        }
    }

    /* One 128-K block into a fresh partial accumulator: 4 k32 steps for every wave. `dw` describes
     * this warpgroup's weight rows of the stage (wgmma A), `dx` the stage's token tile (wgmma B);
     * each step is one descriptor add on (K-major, 128B swizzle: the next 32 K bytes of a row
     * start 32 bytes on, the next m64 wave 64 rows on). scale_d = 0 on the first step. */
    static __device__ __forceinline__ void mma_block(float (&part)[WAVES][ACC], u64 dw, u64 dx) {
#pragma unroll
        for (int v = 0; v < WAVES; v++)
            reg_fence_all(part[v]);
        wgmma_fence();
#pragma unroll
        for (int kk = 0; kk < BK / 32; kk++) {
#pragma unroll
            for (int v = 0; v < WAVES; v++)
                WgmmaFp8<TOK>::mma(part[v], wgmma_desc_advance(dw, v * 64 * BK + kk * 32),
                                   wgmma_desc_advance(dx, kk * 32), kk == 0 ? 0u : 1u);
        }
        wgmma_commit();
#pragma unroll
        for (int v = 0; v < WAVES; v++)
            reg_fence_all(part[v]);
    }

    /* ---- consumer main loop for one unit: acc = this warpgroup's weight rows x TOK tokens over
     * the unit's K blocks, promoted to FP32 after every block. The partial is read only after
     * wgmma_wait<0>, with no other wgmma of this warpgroup in flight, so ptxas keeps the wgmma
     * pipeline (no C7514 serialisation). Memory-bound: the consumers idle most of the time, so
     * overlapping the add with the next block's wgmmas would buy nothing. */
    static __device__ __forceinline__ void mainloop(float (&acc)[WAVES][ACC], u32 smem, u32 full_bar,
                                                    u32 empty_bar, int cwg, int lane, const Unit &w,
                                                    int &stage, u32 &phase) {
        const u64 dw0 = wgmma_desc_sw128(smem + W_OFFSET + cwg * WG_ROWS * BK);
        const u64 dx0 = wgmma_desc_sw128(smem + X_OFFSET);
        float part[WAVES][ACC];
#pragma unroll
        for (int v = 0; v < WAVES; v++)
#pragma unroll
            for (int i = 0; i < ACC; i++)
                acc[v][i] = 0.0f;
        for (int kb = w.kb0; kb < w.kb1; kb += KSUB) {
            mbar_wait(full_bar + stage * 8, phase);
            const int nsub = min_of(KSUB, w.kb1 - kb);
#pragma unroll
            for (int b = 0; b < KSUB; b++) {
                if (b < nsub) {
                    mma_block(part, wgmma_desc_advance(dw0, stage * W_STAGE + b * W_BYTES),
                              wgmma_desc_advance(dx0, stage * X_STAGE + b * X_BYTES));
                    wgmma_wait<0>();
#pragma unroll
                    for (int v = 0; v < WAVES; v++)
                        reg_fence_all(part[v]);
                    /* The slot is free once the wgmmas that read its last block are done: one
                     * arrival per warp. */
                    if (b == nsub - 1 && lane == 0)
                        mbar_arrive(empty_bar + stage * 8);
#pragma unroll
                    for (int v = 0; v < WAVES; v++)
#pragma unroll
                        for (int i = 0; i < ACC; i++)
                            acc[v][i] += part[v][i];
                }
            }
            if (++stage == STAGES) {
                stage = 0;
                phase ^= 1;
            }
        }
    }

    /* Accumulator -> dst[token * pitch + row] (generic pointer: a workspace slice in global memory
     * or the staging tile in shared memory), tokens < m_valid only.
     * Accumulator layout (m64nTOK f32): warp q of the warpgroup, lane = 4g + t holds weight rows
     * 16q + g (regs 4j, 4j+1) and 16q + g + 8 (regs 4j+2, 4j+3) of each wave at tokens 8j + 2t and
     * 8j + 2t + 1. One store instruction of a warp writes 8 consecutive rows of 4 tokens: four
     * full 32-byte sectors. */
    static __device__ __forceinline__ void store_partial(float *dst, int pitch,
                                                         const float (&acc)[WAVES][ACC], int cwg,
                                                         int warp, int lane, int m_valid) {
        const int g = lane >> 2, t = lane & 3;
#pragma unroll
        for (int v = 0; v < WAVES; v++)
#pragma unroll
            for (int j = 0; j < TOK / 8; j++)
#pragma unroll
                for (int h = 0; h < 2; h++)
#pragma unroll
                    for (int e = 0; e < 2; e++) {
                        const int tok = 8 * j + 2 * t + e;
                        const int row = cwg * WG_ROWS + v * 64 + warp * 16 + g + 8 * h;
                        if (tok < m_valid)
                            dst[tok * pitch + row] = acc[v][4 * j + 2 * h + e];
                    }
    }

    /* Two adjacent floats of a partial: from global memory through L2 (other SMs wrote them in
     * this kernel, L1 could hold stale lines), or from the shared staging tile. */
    template <bool GLOBAL>
    static __device__ __forceinline__ void load_pair(const float *q, float &a, float &b) {
        if (GLOBAL) {
            ld_global_cg_v2f32(q, a, b);
        } else {
            a = q[0];
            b = q[1];
        }
    }

    /* ---- epilogue of one tile, by the 256 consumer threads: sum the SPLIT partials in order
     * s = 0..SPLIT-1 (slice s at src + s * slice_stride, [token][pitch] floats), scale, apply the
     * epilogue, round once to BF16 and store. Each thread takes a pair of adjacent weight rows of
     * one token: a gate/up pair for swiglu, two output columns otherwise; consecutive threads take
     * consecutive pairs, so partial loads and D stores are coalesced. D is stored element by
     * element (ldd may be odd). */
    template <bool GLOBAL>
    static __device__ __forceinline__ void finish(const Fp8WgmmaDecodeParams &p, const float *src,
                                                  int pitch, int slice_stride, const Unit &w,
                                                  int m_valid, int ctid) {
        enum : int { PAIRS = BW / 2 };
        const int n0 = w.nt * BW;
        for (int idx = ctid; idx < m_valid * PAIRS; idx += CONSUMER_THREADS) {
            const int tok = idx / PAIRS;
            const int r = 2 * (idx - tok * PAIRS);
            const int n = n0 + r;
            if (n >= N)
                continue;
            const float *q = src + tok * pitch + r;
            float v0, v1;
            load_pair<GLOBAL>(q, v0, v1);
#pragma unroll 16
            for (int s = 1; s < SPLIT; s++) {
                float a, b;
                load_pair<GLOBAL>(q + s * slice_stride, a, b);
                v0 += a;
                v1 += b;
            }
            const i64 m = (i64)w.mt * TOK + tok;
            const float rs = p.alpha * p.sa[m];
            u16 *drow = p.d + m * p.ldd;
            if (SWIGLU) {
                /* N is even, so the up row n + 1 exists whenever the gate row n does. */
                const float gate = v0 * rs * p.sb[n];
                const float up = v1 * rs * p.sb[n + 1];
                drow[n >> 1] = to_bf16(swiglu(gate, up));
            } else {
                float o0 = v0 * rs * p.sb[n];
                if (ADD)
                    o0 += bf16_to_float(p.residual[m * p.ldr + n]);
                drow[n] = to_bf16(o0);
                if (n + 1 < N) {
                    float o1 = v1 * rs * p.sb[n + 1];
                    if (ADD)
                        o1 += bf16_to_float(p.residual[m * p.ldr + n + 1]);
                    drow[n + 1] = to_bf16(o1);
                }
            }
        }
    }

    /* ---- after a unit's main loop: hand its partial on and, if it completes the tile, finish ---- */
    static __device__ __forceinline__ void unit_epilogue(const Fp8WgmmaDecodeParams &p,
                                                         const float (&acc)[WAVES][ACC],
                                                         u8 *smem_ptr, const Unit &w, int cwg,
                                                         int ctid) {
        const int warp = (ctid >> 5) & 3, lane = ctid & 31;
        const i64 rest = p.m - (i64)w.mt * TOK;
        const int m_valid = rest < TOK ? (int)rest : TOK;
        if (SPLIT == 1) {
            float *staging = (float *)(smem_ptr + STAGING_OFFSET);
            store_partial(staging, STAGING_PITCH, acc, cwg, warp, lane, m_valid);
            named_bar_sync(BAR_CONSUMERS, CONSUMER_THREADS);
            finish<false>(p, staging, STAGING_PITCH, 0, w, m_valid, ctid);
            /* The next unit overwrites the staging tile. */
            named_bar_sync(BAR_CONSUMERS, CONSUMER_THREADS);
        } else {
            float *tile_ws = p.workspace + (i64)w.tile * (SPLIT * SLICE_FLOATS);
            store_partial(tile_ws + w.s * SLICE_FLOATS, BW, acc, cwg, warp, lane, m_valid);
            /* Release: every thread's partial stores are ordered before the counter bump that
             * follows the barrier. */
            fence_acq_rel_gpu();
            named_bar_sync(BAR_CONSUMERS, CONSUMER_THREADS);
            volatile u32 *flag = (volatile u32 *)(smem_ptr + FLAG_OFFSET);
            if (ctid == 0) {
                const u32 old = atom_add_acq_rel_gpu(p.counters + w.tile, 1u);
                const u32 last = old == (u32)(SPLIT - 1);
                /* All SPLIT units of the tile have arrived: nobody else touches the counter in
                 * this launch, so it can be reset for the next one. */
                if (last)
                    *(volatile u32 *)(p.counters + w.tile) = 0u;
                *flag = last;
            }
            named_bar_sync(BAR_CONSUMERS, CONSUMER_THREADS);
            /* The flag is rewritten only after the next unit's first barrier, which every thread
             * reaches after this read. */
            if (*flag) {
                /* Acquire: the other units' partials, published before their counter bumps. */
                fence_acq_rel_gpu();
                finish<true>(p, tile_ws, BW, SLICE_FLOATS, w, m_valid, ctid);
            }
        }
    }

    static __device__ __forceinline__ void consumer(const Fp8WgmmaDecodeParams &p, u32 smem,
                                                    u8 *smem_ptr, u32 full_bar, u32 empty_bar,
                                                    int cwg, int units) {
        const int ctid = threadIdx.x - 128; /* 0..255 over both consumer warpgroups */
        float acc[WAVES][ACC];
        int stage = 0;
        u32 phase = 0;
        for (int u = blockIdx.x; u < units; u += gridDim.x) {
            const Unit w = unit_of(u);
            mainloop(acc, smem, full_bar, empty_bar, cwg, ctid & 31, w, stage, phase);
            unit_epilogue(p, acc, smem_ptr, w, cwg, ctid);
        }
    }

    static __device__ __forceinline__ void run(const Fp8WgmmaDecodeParams &p) {
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
                mbar_init(full_bar + s * 8, 1);               /* producer's arrive.expect_tx */
                mbar_init(empty_bar + s * 8, CONSUMER_WARPS); /* one arrival per consumer warp */
            }
            fence_mbarrier_init();
        } else if (threadIdx.x == 32) {
            prefetch_tmap(&p.tmap_w);
            prefetch_tmap(&p.tmap_x);
        }
        __syncthreads();

        const int m_tiles = (int)((p.m + TOK - 1) / TOK);
        const int units = m_tiles * N_TILES * SPLIT;
        const int wg = threadIdx.x >> 7;
        if (wg == 0) {
            setmaxnreg_dec<PRODUCER_REGS>();
            if (threadIdx.x == 0)
                producer(p, smem, full_bar, empty_bar, units);
        } else {
            setmaxnreg_inc<CONSUMER_REGS>();
            consumer(p, smem, smem_ptr, full_bar, empty_bar, wg - 1, units);
        }
    }
};

#endif /* JITGEMM_FP8_WGMMA_DECODE_CUH */
