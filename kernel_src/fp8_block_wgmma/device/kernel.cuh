/*
 * FP8 (E4M3 x E4M3) GEMM with 128x128 block scales for sm_90a, the tile route: TMA +
 * mbarrier ring + wgmma, warp-specialised, persistent.
 *
 *   acc[m][n] = sum_kb SFA[m][kb] * SFB[n / 128][kb] * sum_{k in block kb} A[m][k] * B[n][k]
 *   linear        D[m][n] = bf16(alpha * acc[m][n])
 *   linear_add    D[m][n] = bf16(alpha * acc[m][n] + float(R[m][n]))
 *   linear_swiglu D[m][j] = bf16(silu(g) * u), g / u = alpha * acc of B rows 2j / 2j + 1
 *
 * Block of 384 threads = 3 warpgroups, one CTA per SM:
 *   warpgroup 0  producer (producer.cuh): gives registers away (setmaxnreg.dec); warp 0
 *                streams A and B (TMA, lane 0) and their scales (cp.async, every lane) into
 *                the ring; with STORE_WARPS its warps 1..3 store each finished tile from
 *                shared memory (epilogue.cuh).
 *   warpgroups 1, 2  consumers: 64 rows of the 128 x BN tile each; per 128-K block they
 *                issue the wgmmas, read their rows' scales from the stage and add the
 *                scaled partial sums into FP32 (mainloop.cuh), then run the epilogue.
 * The grid is persistent (scheduler.cuh). Ragged M, N and K come from TMA's zero fill; the
 * scales past M and N are zero-filled, not read, and nothing is stored past M or Nout.
 */
#ifndef JITGEMM_BSW_KERNEL_CUH
#define JITGEMM_BSW_KERNEL_CUH

#include "device/sm90.cuh"
#include "fp8_block_wgmma/device/epilogue.cuh"
#include "fp8_block_wgmma/device/mainloop.cuh"
#include "fp8_block_wgmma/device/params.cuh"
#include "fp8_block_wgmma/device/producer.cuh"
#include "fp8_block_wgmma/device/scheduler.cuh"

template <class P> struct BswTileKernel {
    typedef BswTile<P> T;
    typedef BswSchedule<T> S;
    typedef BswMainloop<T> ML;
    typedef BswEpilogueStore<T> EP;
    enum : int { THREADS = T::THREADS, SMEM_BYTES = T::SMEM_BYTES };

    static __device__ __forceinline__ void consumer(const BswParams &p, u32 smem, u8 *smem_ptr,
                                                    u32 full_bar, u32 empty_bar, int cwg,
                                                    const typename S::Work &w) {
        const int tid = threadIdx.x & 127, warp = tid >> 5, g = (tid & 31) >> 2;
        u8 *staging = smem_ptr + T::STAGING_OFFSET + cwg * T::WG_ROWS * T::EPI_PITCH;
        float acc[T::ACC];
        float part[T::ACC];
        int stage = 0;
        u32 phase = 0, tile_parity = 0;
        /* Rows of the scales this thread reads: the same in every tile. */
        const typename ML::ScaleRows rows0 = ML::scale_rows(cwg * T::WG_ROWS, 0, warp, g);
        typename ML::Scales even = {0.0f, 0.0f, 0.0f, 0.0f}, odd = even;
        if (w.first < w.units)
            ML::first_scales(rows0, smem, full_bar, even);
        for (int unit = w.first; unit < w.units; unit += w.stride) {
            int mg, nt;
            S::unit_coords(unit, w.m_groups, mg, nt);
            const int mt = mg * T::CLUSTER + w.rank;
            const typename ML::ScaleRows rows =
                ML::scale_rows(cwg * T::WG_ROWS, nt * T::BN, warp, g);
            ML::run(acc, part, rows, even, odd, unit + w.stride < w.units, smem, full_bar,
                    empty_bar, cwg, tid & 31, stage, phase);
            if (T::STORE_WARPS) {
                EP::staged(acc, p.alpha, smem_ptr, EP::handoff_of(full_bar), tile_parity, cwg,
                           tid);
                tile_parity ^= 1;
            } else if (T::EPILOGUE == BSW_EPI_LINEAR_ADD) {
                EP::add(p, acc, staging, mt, nt, cwg, tid);
            } else {
                EP::direct(p, acc, staging, mt, nt, cwg, tid);
            }
        }
    }

    /* `jit_smem`: the dynamic shared memory, declared by the entry point (so that a host model
     * of the GPU can hand its own in: tests/fmodel). */
    static __device__ __forceinline__ void run(const BswParams &p, u8 *jit_smem) {
        /* Align the ring to 1024 bytes in the shared window: the 128B swizzle is a function of
         * the absolute address, so a misaligned base silently scrambles every tile. */
        const u32 raw = smem_addr(jit_smem);
        const u32 smem = (raw + 1023) & ~1023u;
        u8 *smem_ptr = jit_smem + (smem - raw);
        const u32 full_bar = smem + T::BAR_OFFSET;
        const u32 empty_bar = full_bar + T::STAGES * 8;

        if (threadIdx.x == 0) {
            for (int s = 0; s < T::STAGES; s++) {
                mbar_init(full_bar + s * 8, T::FULL_ARRIVALS); /* producer.cuh */
                mbar_init(empty_bar + s * 8, T::EMPTY_ARRIVALS);
            }
            if (T::STORE_WARPS) {
                const typename EP::Handoff h = EP::handoff_of(full_bar);
                mbar_init(h.staged, T::CONSUMER_THREADS);
                mbar_init(h.drained, T::STORE_THREADS);
            }
            fence_mbarrier_init();
        } else if (threadIdx.x == 32) {
            prefetch_tmap(&p.tmap_a);
            prefetch_tmap(&p.tmap_b);
        }
        /* With a cluster, the peer's producer multicasts into this CTA's ring and its consumers
         * arrive on these barriers: every barrier of both CTAs must exist before either
         * starts. */
        if (T::CLUSTER == 1)
            __syncthreads();
        else
            cluster_sync();

        /* Each role computes its work after setmaxnreg: a value live across it must fit the
         * smaller budget. */
        const int wg = threadIdx.x >> 7;
        if (wg == 0) {
            setmaxnreg_dec<T::PRODUCER_REGS>();
            if (threadIdx.x < 32)
                BswProducer<T>::run(p, smem, full_bar, empty_bar, S::work_of(p.m),
                                    (int)threadIdx.x);
            else if (T::STORE_WARPS && threadIdx.x >= 32)
                EP::store_warps(p, smem_ptr, EP::handoff_of(full_bar), S::work_of(p.m));
        } else {
            setmaxnreg_inc<T::CONSUMER_REGS>();
            consumer(p, smem, smem_ptr, full_bar, empty_bar, wg - 1, S::work_of(p.m));
        }
        /* Nobody leaves while the peer may still write into this CTA's shared memory or arrive
         * on its barriers. The producer warp diverged (lane 0 alone issued TMA), and the cluster
         * barrier is .aligned: reconverge first. */
        if (T::CLUSTER > 1) {
            __syncwarp();
            cluster_sync();
        }
    }
};

#endif /* JITGEMM_BSW_KERNEL_CUH */
