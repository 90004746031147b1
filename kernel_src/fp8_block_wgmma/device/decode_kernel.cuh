/*
 * FP8 (E4M3 x E4M3) GEMM with 128x128 block scales for sm_90a, the decode route (M <= 64): swap
 * AB and a deterministic split K (decode_tile.cuh), the same arithmetic as the tile route:
 *
 *   acc[m][n] = sum_kb SFA[m][kb] * SFB[n / 128][kb] * sum_{k in block kb} A[m][k] * B[n][k]
 *   linear        D[m][n] = bf16(alpha * acc[m][n])
 *   linear_add    D[m][n] = bf16(alpha * acc[m][n] + float(R[m][n]))
 *   linear_swiglu D[m][j] = bf16(silu(g) * u), g / u = alpha * acc of B rows 2j / 2j + 1
 *
 * Block of 384 threads = 3 warpgroups; CTA b takes units b, b + gridDim.x, ... (the host launches
 * one CTA per unit):
 *   warpgroup 0  producer (decode_producer.cuh): gives registers away; one thread streams the
 *                weight and token tiles of KSUB blocks per stage into the ring.
 *   warpgroups 1, 2  consumers: BW/2 weight rows each (one or two m64 waves) and all TOK tokens;
 *                the scaled main loop (decode_mainloop.cuh), then the unit's epilogue
 *                (decode_epilogue.cuh). The next unit's first scales are loaded before it.
 * Ragged M, N and K come from TMA's zero fill; no scale past M, N or K is read, and nothing is
 * stored past M or Nout.
 */
#ifndef JITGEMM_BSW_DECODE_KERNEL_CUH
#define JITGEMM_BSW_DECODE_KERNEL_CUH

#include "device/sm90.cuh"
#include "fp8_block_wgmma/device/decode_epilogue.cuh"
#include "fp8_block_wgmma/device/decode_mainloop.cuh"
#include "fp8_block_wgmma/device/decode_producer.cuh"
#include "fp8_block_wgmma/device/decode_tile.cuh"
#include "fp8_block_wgmma/device/params.cuh"

template <class P> struct BswDecodeKernel {
    typedef BswDecodeTile<P> T;
    typedef BswDecodeMainloop<T> ML;
    typedef BswDecodeEpilogue<T> EP;
    enum : int { THREADS = T::THREADS, SMEM_BYTES = T::SMEM_BYTES };

    static __device__ __forceinline__ void consumer(const BswParams &p, u32 smem, u8 *smem_ptr,
                                                    u32 full_bar, u32 empty_bar, int cwg,
                                                    int units) {
        const int ctid = threadIdx.x - 128; /* 0..255 over both consumer warpgroups */
        const int t = ctid & 3;
        float acc[T::WAVES][T::ACC];
        int stage = 0;
        u32 phase = 0;
        typename ML::Scales cur;
        if ((int)blockIdx.x < units) {
            const typename T::Unit w0 = T::unit_of(blockIdx.x);
            cur = ML::load_scales(p, ML::scale_src(w0, cwg, t), w0.kb0, true);
        }
        for (int u = blockIdx.x; u < units; u += gridDim.x) {
            const typename T::Unit w = T::unit_of(u);
            ML::run(p, acc, w, ML::scale_src(w, cwg, t), cur, smem, full_bar, empty_bar, cwg,
                    ctid & 31, stage, phase);
            /* The next unit's first scales, loaded before this unit's epilogue. */
            const int next = u + (int)gridDim.x;
            if (next < units) {
                const typename T::Unit nw = T::unit_of(next);
                cur = ML::load_scales(p, ML::scale_src(nw, cwg, t), nw.kb0, true);
            }
            EP::unit(p, acc, smem_ptr, w, cwg, ctid);
        }
    }

    /* `jit_smem`: the dynamic shared memory, declared by the entry point. */
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
                mbar_init(full_bar + s * 8, 1);                  /* the producer's expect_tx */
                mbar_init(empty_bar + s * 8, T::CONSUMER_WARPS); /* one arrival per warp */
            }
            fence_mbarrier_init();
        } else if (threadIdx.x == 32) {
            prefetch_tmap(&p.tmap_a);
            prefetch_tmap(&p.tmap_b);
        }
        __syncthreads();

        const int m_tiles = (int)((p.m + T::TOK - 1) / T::TOK);
        const int units = m_tiles * T::N_TILES * T::SPLIT;
        const int wg = threadIdx.x >> 7;
        if (wg == 0) {
            setmaxnreg_dec<T::PRODUCER_REGS>();
            if (threadIdx.x == 0)
                BswDecodeProducer<T>::run(p, smem, full_bar, empty_bar, units);
        } else {
            setmaxnreg_inc<T::CONSUMER_REGS>();
            consumer(p, smem, smem_ptr, full_bar, empty_bar, wg - 1, units);
        }
    }
};

#endif /* JITGEMM_BSW_DECODE_KERNEL_CUH */
