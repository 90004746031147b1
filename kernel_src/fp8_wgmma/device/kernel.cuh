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
 *   warpgroup 0  producer (producer.cuh): gives registers away (setmaxnreg.dec); one thread issues
 *                the TMA loads of A (BM x 128) and B (BN x 128) per 128-K block into a STAGES-deep
 *                ring. With STORE_WARPS its other three warps are the store warps
 *                (epilogue_store_warps.cuh): they put each tile's scales in shared memory while
 *                the tile's MMAs run, and write the finished BF16 tile from shared memory to D
 *                while the consumers run the next tile.
 *   warpgroups 1, 2  consumers: each owns BM/2 rows of the BM x BN tile (one or two m64 wgmma
 *                waves) and all BN columns; they run the main loop (mainloop.cuh: wait on
 *                full[s], issue four wgmma k32 steps, hand the slot back through empty[s]), then
 *                the epilogue for their rows: with STORE_WARPS only scale, round and stage the
 *                whole tile in shared memory (the tensor cores wait for that part alone), else
 *                also store it to D themselves (epilogue.cuh).
 * The grid is persistent (scheduler.cuh): CTA b takes tiles b, b + gridDim.x, ... in grouped
 * raster order. params.cuh holds the parameter block and the plan's numbers (Fp8WgmmaShape).
 *
 * Ragged M, N and K come from TMA: boxes past the tensor edge are zero-filled (and still count in
 * the transaction bytes). The epilogue never reads sa/sb past M/N and never writes past M/Nout.
 * Where M >= BM, the last m-tile of a ragged M is moved up to end at row M (tile_row0), so that
 * no A box runs past M: a zero-filled part of a box costs load time (measured).
 */
#ifndef JITGEMM_FP8_WGMMA_KERNEL_CUH
#define JITGEMM_FP8_WGMMA_KERNEL_CUH

#include "device/common.cuh"
#include "device/sm90.cuh"
#include "fp8_wgmma/device/epilogue.cuh"
#include "fp8_wgmma/device/epilogue_store_warps.cuh"
#include "fp8_wgmma/device/mainloop.cuh"
#include "fp8_wgmma/device/params.cuh"
#include "fp8_wgmma/device/producer.cuh"
#include "fp8_wgmma/device/scheduler.cuh"

/* The template parameters are Fp8WgmmaShape's (params.cuh says what each one is). */
template <int BM, int BN, int STAGES, int N, int K, int EPILOGUE, int PROMOTE, int GROUP_M = 8,
          int PRODUCER_REGS = 40, int CONSUMER_REGS = 232, int CLUSTER = 1, int STORE_WARPS = 0>
struct Fp8WgmmaKernel {
    typedef Fp8WgmmaShape<BM, BN, STAGES, N, K, EPILOGUE, PROMOTE, GROUP_M, PRODUCER_REGS,
                          CONSUMER_REGS, CLUSTER, STORE_WARPS>
        C;
    typedef Fp8WgmmaScheduler<C> Scheduler;
    typedef Fp8WgmmaProducer<C> Producer;
    typedef Fp8WgmmaMainloop<C> Mainloop;
    typedef Fp8WgmmaEpilogue<C> Epilogue;
    typedef Fp8WgmmaStoreWarps<C> StoreWarps;
    enum : int { THREADS = C::THREADS, SMEM_BYTES = C::SMEM_BYTES };

    static __device__ __forceinline__ void consumer(const Fp8WgmmaParams &p, u32 smem, u8 *smem_ptr,
                                                    u32 full_bar, u32 empty_bar, int cwg,
                                                    const typename Scheduler::Work &w) {
        const int tid = threadIdx.x & 127;
        u8 *staging = smem_ptr + C::STAGING_OFFSET + cwg * C::WG_ROWS * C::EPI_PITCH;
        float acc[C::WAVES][C::ACC];
        float part[C::WAVES][C::ACC]; /* promotion only; optimised away otherwise */
        int stage = 0;
        u32 phase = 0, tile_parity = 0;
        for (int unit = w.first; unit < w.units; unit += w.stride) {
            int mg, nt;
            Scheduler::unit_coords(unit, w.m_groups, mg, nt);
            Mainloop::run(acc, part, smem, full_bar, empty_bar, cwg, tid & 31, stage, phase);
            if (C::STORE_WARPS) {
                StoreWarps::stage(acc, smem_ptr, StoreWarps::handoff_of(full_bar), tile_parity, cwg,
                                  tid);
                tile_parity ^= 1;
            } else if (C::EPILOGUE == FP8W_EPI_LINEAR_ADD) {
                Epilogue::store_tile_add(p, acc, staging, mg * C::CLUSTER + w.rank, nt, cwg, tid);
            } else {
                Epilogue::store_tile(p, acc, staging, mg * C::CLUSTER + w.rank, nt, cwg, tid);
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
        const u32 full_bar = smem + C::BAR_OFFSET;
        const u32 empty_bar = full_bar + C::STAGES * 8;

        if (threadIdx.x == 0) {
            for (int s = 0; s < C::STAGES; s++) {
                mbar_init(full_bar + s * 8, 1); /* the producer's arrive.expect_tx */
                mbar_init(empty_bar + s * 8, C::EMPTY_ARRIVALS);
            }
            if (C::STORE_WARPS) {
                const typename StoreWarps::Handoff h = StoreWarps::handoff_of(full_bar);
                mbar_init(h.scales, C::STORE_THREADS);
                mbar_init(h.staged, C::CONSUMER_THREADS);
                mbar_init(h.drained, C::STORE_THREADS);
            }
            fence_mbarrier_init();
        } else if (threadIdx.x == 32) {
            prefetch_tmap(&p.tmap_a);
            prefetch_tmap(&p.tmap_b);
        }
        /* With a cluster, the peer's producer multicasts into this CTA's ring and its consumers
         * arrive on these barriers: every barrier of both CTAs must exist before either starts. */
        if (C::CLUSTER == 1)
            __syncthreads();
        else
            cluster_sync();

        /* Each role computes its work after setmaxnreg: a value live across it must fit the
         * smaller budget, and ptxas spilled one there (w.units) at 40 registers. */
        const int wg = threadIdx.x >> 7;
        if (wg == 0) {
            setmaxnreg_dec<C::PRODUCER_REGS>();
            if (threadIdx.x == 0)
                Producer::run(p, smem, full_bar, empty_bar, Scheduler::work_of(p.m));
            else if (C::STORE_WARPS && threadIdx.x >= 32)
                StoreWarps::run(p, smem_ptr, StoreWarps::handoff_of(full_bar),
                                Scheduler::work_of(p.m));
        } else {
            setmaxnreg_inc<C::CONSUMER_REGS>();
            consumer(p, smem, smem_ptr, full_bar, empty_bar, wg - 1, Scheduler::work_of(p.m));
        }
        /* Nobody leaves while the peer may still write into this CTA's shared memory or arrive
         * on its barriers: every multicast slice is consumed and every release sent by the time
         * both CTAs' consumers get here. The producer warp diverged (one thread worked), and the
         * cluster barrier is .aligned: reconverge first. */
        if (C::CLUSTER > 1) {
            __syncwarp();
            cluster_sync();
        }
    }
};

#endif /* JITGEMM_FP8_WGMMA_KERNEL_CUH */
