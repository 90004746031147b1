/*
 * FP8 (E4M3 x E4M3) row-scaled GEMM for sm_90a, decode / small-M route: swap AB + deterministic
 * split-K. Same math as the tile kernel (kernel.cuh):
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
 *   warpgroup 0  producer: gives registers away (setmaxnreg.dec); one thread issues the TMA loads
 *                of the weight tile (BW x 128 bytes) and the token tile (TOK x 128 bytes) of KSUB
 *                consecutive 128-K blocks per stage into a STAGES-deep ring (KSUB > 1 asks for
 *                several consecutive 128-byte pieces of every weight row at once). The ring runs
 *                on across units, so the next unit's weights stream in while the consumers reduce
 *                and store the last one.
 *   warpgroups 1, 2  consumers: each owns BW/2 weight rows (one or two m64 waves) and all TOK
 *                tokens; per stage they wait on full[s], then per 128-K block issue four k32 wgmmas
 *                into a fresh partial accumulator, wait for them and add the partial into FP32
 *                registers (promotion every 128 K: FP8 wgmma keeps about 14 bits of its running
 *                sum, not enough over long K), and free the slot (empty[s]). After a unit they
 *                store its partial and, if this CTA completed the tile, reduce it and write D
 *                (decode_epilogue.cuh). That epilogue stalls the weight stream: once the ring is
 *                full the producer issues nothing until the consumers are back (measured on the
 *                H200: about 3.6 us per unit at 1 token), so prefer few units per CTA.
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
#include "device/convert.cuh"
#include "device/sm90.cuh"
#include "fp8_wgmma/device/decode_epilogue.cuh"
#include "fp8_wgmma/device/params.cuh"

/* The template parameters are Fp8WgmmaDecodeShape's (params.cuh says what each one is). */
template <int BW, int TOK, int STAGES, int N, int K, int EPILOGUE, int SPLIT, int KSUB = 1,
          int W_HINT = 0, int PRODUCER_REGS = 40, int CONSUMER_REGS = 232>
struct Fp8WgmmaDecodeKernel {
    typedef Fp8WgmmaDecodeShape<BW, TOK, STAGES, N, K, EPILOGUE, SPLIT, KSUB, W_HINT, PRODUCER_REGS,
                                CONSUMER_REGS>
        D;
    enum : int { THREADS = D::THREADS, SMEM_BYTES = D::SMEM_BYTES };

    /* One work unit. Units are numbered tile-major (u = tile * SPLIT + j), so the SPLIT units of a
     * tile run at about the same time on neighbouring CTAs and tiles complete (and are reduced)
     * all through the kernel, not all at its end. The k-split of slot j is rotated by the tile
     * index, s = (j + tile) % SPLIT: when K_BLOCKS % SPLIT != 0 some splits are one 128-K block
     * longer, and without the rotation a persistent CTA whose stride is a multiple of SPLIT would
     * get the long split of every tile it visits. Split s covers blocks
     * [s * K_BLOCKS / SPLIT, (s + 1) * K_BLOCKS / SPLIT). */
    static __device__ __forceinline__ Fp8WgmmaDecodeUnit unit_of(int u) {
        Fp8WgmmaDecodeUnit w;
        w.tile = u / D::SPLIT;
        const int j = u - w.tile * D::SPLIT;
        w.s = (j + w.tile) % D::SPLIT;
        w.mt = w.tile / D::N_TILES;
        w.nt = w.tile - w.mt * D::N_TILES;
        w.kb0 = w.s * D::K_BLOCKS / D::SPLIT;
        w.kb1 = (w.s + 1) * D::K_BLOCKS / D::SPLIT;
        return w;
    }

    /* ---- producer: one thread streams weight and token K-blocks into the ring ---- */
    static __device__ __forceinline__ void producer(const Fp8WgmmaDecodeParams &p, u32 smem,
                                                    u32 full_bar, u32 empty_bar, int units) {
        const u64 policy = D::W_HINT ? l2_policy_evict_first() : 0;
        int stage = 0;
        u32 phase = 0;
        for (int u = blockIdx.x; u < units; u += gridDim.x) {
            const Fp8WgmmaDecodeUnit w = unit_of(u);
            for (int kb = w.kb0; kb < w.kb1; kb += D::KSUB) {
                /* First pass: parity phase^1 = 1 is "the phase before", complete at once. */
                mbar_wait(empty_bar + stage * 8, phase ^ 1);
                const int nsub = min_of((int)D::KSUB, w.kb1 - kb);
                const u32 bar = full_bar + stage * 8;
                mbar_arrive_expect_tx(bar, (u32)(nsub * (D::W_BYTES + D::X_BYTES)));
#pragma unroll
                for (int i = 0; i < D::KSUB; i++) {
                    if (i < nsub) {
                        const u32 w_dst = smem + D::W_OFFSET + stage * D::W_STAGE + i * D::W_BYTES;
                        if (D::W_HINT)
                            tma_load_2d_hint(w_dst, &p.tmap_w, bar, (kb + i) * D::BK, w.nt * D::BW,
                                             policy);
                        else
                            tma_load_2d(w_dst, &p.tmap_w, bar, (kb + i) * D::BK, w.nt * D::BW);
                    }
                }
#pragma unroll
                for (int i = 0; i < D::KSUB; i++) {
                    if (i < nsub)
                        tma_load_2d(smem + D::X_OFFSET + stage * D::X_STAGE + i * D::X_BYTES,
                                    &p.tmap_x, bar, (kb + i) * D::BK, w.mt * D::TOK);
                }
                if (++stage == D::STAGES) {
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
    static __device__ __forceinline__ void mma_block(float (&part)[D::WAVES][D::ACC], u64 dw,
                                                     u64 dx) {
#pragma unroll
        for (int v = 0; v < D::WAVES; v++)
            reg_fence_all(part[v]);
        wgmma_fence();
#pragma unroll
        for (int kk = 0; kk < D::BK / 32; kk++) {
#pragma unroll
            for (int v = 0; v < D::WAVES; v++)
                WgmmaFp8<D::TOK>::mma(part[v], wgmma_desc_advance(dw, v * 64 * D::BK + kk * 32),
                                      wgmma_desc_advance(dx, kk * 32), kk == 0 ? 0u : 1u);
        }
        wgmma_commit();
#pragma unroll
        for (int v = 0; v < D::WAVES; v++)
            reg_fence_all(part[v]);
    }

    /* ---- consumer main loop for one unit: acc = this warpgroup's weight rows x TOK tokens over
     * the unit's K blocks, promoted to FP32 after every block. The partial is read only after
     * wgmma_wait<0>, with no other wgmma of this warpgroup in flight, so ptxas keeps the wgmma
     * pipeline (no C7514 serialisation). Memory-bound: the consumers idle most of the time, so
     * overlapping the add with the next block's wgmmas would buy nothing. */
    static __device__ __forceinline__ void mainloop(float (&acc)[D::WAVES][D::ACC], u32 smem,
                                                    u32 full_bar, u32 empty_bar, int cwg, int lane,
                                                    const Fp8WgmmaDecodeUnit &w, int &stage,
                                                    u32 &phase) {
        const u64 dw0 = wgmma_desc_sw128(smem + D::W_OFFSET + cwg * D::WG_ROWS * D::BK);
        const u64 dx0 = wgmma_desc_sw128(smem + D::X_OFFSET);
        float part[D::WAVES][D::ACC];
#pragma unroll
        for (int v = 0; v < D::WAVES; v++)
#pragma unroll
            for (int i = 0; i < D::ACC; i++)
                acc[v][i] = 0.0f;
        for (int kb = w.kb0; kb < w.kb1; kb += D::KSUB) {
            mbar_wait(full_bar + stage * 8, phase);
            const int nsub = min_of((int)D::KSUB, w.kb1 - kb);
#pragma unroll
            for (int b = 0; b < D::KSUB; b++) {
                if (b < nsub) {
                    mma_block(part, wgmma_desc_advance(dw0, stage * D::W_STAGE + b * D::W_BYTES),
                              wgmma_desc_advance(dx0, stage * D::X_STAGE + b * D::X_BYTES));
                    wgmma_wait<0>();
#pragma unroll
                    for (int v = 0; v < D::WAVES; v++)
                        reg_fence_all(part[v]);
                    /* The slot is free once the wgmmas that read its last block are done: one
                     * arrival per warp. */
                    if (b == nsub - 1 && lane == 0)
                        mbar_arrive(empty_bar + stage * 8);
#pragma unroll
                    for (int v = 0; v < D::WAVES; v++)
#pragma unroll
                        for (int i = 0; i < D::ACC; i++)
                            acc[v][i] += part[v][i];
                }
            }
            if (++stage == D::STAGES) {
                stage = 0;
                phase ^= 1;
            }
        }
    }

    static __device__ __forceinline__ void consumer(const Fp8WgmmaDecodeParams &p, u32 smem,
                                                    u8 *smem_ptr, u32 full_bar, u32 empty_bar,
                                                    int cwg, int units) {
        const int ctid = threadIdx.x - 128; /* 0..255 over both consumer warpgroups */
        float acc[D::WAVES][D::ACC];
        int stage = 0;
        u32 phase = 0;
        for (int u = blockIdx.x; u < units; u += gridDim.x) {
            const Fp8WgmmaDecodeUnit w = unit_of(u);
            mainloop(acc, smem, full_bar, empty_bar, cwg, ctid & 31, w, stage, phase);
            Fp8WgmmaDecodeEpilogue<D>::run(p, acc, smem_ptr, w, cwg, ctid);
        }
    }

    static __device__ __forceinline__ void run(const Fp8WgmmaDecodeParams &p) {
        extern __shared__ __align__(1024) u8 jit_smem[];
        /* Align the ring to 1024 bytes in the shared window: the 128B swizzle is a function of
         * the absolute address, so a misaligned base silently scrambles every tile. */
        const u32 raw = smem_addr(jit_smem);
        const u32 smem = (raw + 1023) & ~1023u;
        u8 *smem_ptr = jit_smem + (smem - raw);
        const u32 full_bar = smem + D::BAR_OFFSET;
        const u32 empty_bar = full_bar + D::STAGES * 8;

        if (threadIdx.x == 0) {
            for (int s = 0; s < D::STAGES; s++) {
                mbar_init(full_bar + s * 8, 1);                  /* producer's arrive.expect_tx */
                mbar_init(empty_bar + s * 8, D::CONSUMER_WARPS); /* one arrival per consumer warp */
            }
            fence_mbarrier_init();
        } else if (threadIdx.x == 32) {
            prefetch_tmap(&p.tmap_w);
            prefetch_tmap(&p.tmap_x);
        }
        __syncthreads();

        const int m_tiles = (int)((p.m + D::TOK - 1) / D::TOK);
        const int units = m_tiles * D::N_TILES * D::SPLIT;
        const int wg = threadIdx.x >> 7;
        if (wg == 0) {
            setmaxnreg_dec<D::PRODUCER_REGS>();
            if (threadIdx.x == 0)
                producer(p, smem, full_bar, empty_bar, units);
        } else {
            setmaxnreg_inc<D::CONSUMER_REGS>();
            consumer(p, smem, smem_ptr, full_bar, empty_bar, wg - 1, units);
        }
    }
};

#endif /* JITGEMM_FP8_WGMMA_DECODE_CUH */
