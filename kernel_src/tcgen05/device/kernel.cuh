/*
 * The persistent, warp-specialized block-scaled GEMM for tcgen05 targets (sm_100a, sm_103a,
 * sm_107a): TMA -> SMEM ring -> tcgen05.cp (scales) + tcgen05.mma (TMEM accumulators) ->
 * tcgen05.ld -> epilogue -> TMA store, with a persistent tile scheduler and (optionally) a
 * mixed preferred/fallback cluster launch.
 *
 * The generated source defines the plan-constants struct P (TcPlan: every number and every
 * structural choice of the plan, as enumerators so that nothing becomes .global data) and
 * calls Tcgen05Kernel<P>::run from its entry point. The roles live in cta.cuh, scheduler.cuh,
 * producer.cuh, mma.cuh and epilogue.cuh.
 *
 * Nothing here has run on hardware: no Blackwell or Rubin GPU was available. It is compiled by
 * ptxas (through nvJitLink) for every target in the compile matrix and checked statically, and
 * it runs as host C++ on the functional model in tests/fmodel (docs/blackwell-rubin.md).
 */
#ifndef JITGEMM_TCGEN05_KERNEL_CUH
#define JITGEMM_TCGEN05_KERNEL_CUH

#include "device/cluster.cuh"
#include "device/sm100.cuh"
#include "tcgen05/device/cta.cuh"
#include "tcgen05/device/epilogue.cuh"
#include "tcgen05/device/mma.cuh"
#include "tcgen05/device/producer.cuh"

template <class P> struct Tcgen05Kernel {
    static_assert(P::EPI_WARPS == 4 && P::EPI_WARP0 % 4 == 0, "four aligned epilogue warps");
    static_assert(P::NUM_THREADS == 192, "four epilogue warps, one MMA and one TMA warp");
    static_assert(P::CTA_GROUP == 1 || P::CTA_GROUP == 2, "cta_group");
    static_assert(P::HALVES == 1 || P::HALVES == 2, "M-halves");

    /* The last CTA to finish resets the counters and token slots for the next launch (the tail
     * reset): every other CTA has released the workspace by then, so no grid-wide barrier is
     * needed. */
    static __device__ void workspace_exit(const jitgemm_tc_params &p) {
        TcWorkspace *ws = (TcWorkspace *)p.workspace;
        const u32 ctas = gridDim.x * gridDim.y * gridDim.z;
        if (gmem::atom_add_acq_rel(&ws->exit_count, 1) + 1 == ctas) {
            volatile TcWorkspace *v = ws;
            v->work_counter = 0;
            v->registration = 0;
            for (u32 i = 0; i < p.token_slots; ++i)
                v->tokens[i] = 0;
            v->exit_count = 0;
        }
    }

    /* Set up barriers and TMEM, dispatch warps to roles, tear down. */
    static __device__ __forceinline__ void run(const jitgemm_tc_params &p, unsigned char *smem) {
        constexpr int CG = P::CTA_GROUP;
        const u32 warp = threadIdx.x / 32;
        const TcCtaState c = TcCta<P>::make(p, smem);
        /* Swizzled tiles assume a 1024-byte-aligned base (the planner checked every offset
         * from it); a misaligned base would silently shift every swizzle pattern. */
        if (c.smem & 1023u)
            device_trap();
        /* Descriptors hold the absolute address >> 4 in a field of DESC_ADDR_MASK's width, and
         * the dynamic window starts after a reserved block the planner assumed (1 KiB): on a
         * device that reserves more, the last operand stage would wrap to a low address and
         * the MMAs would read the wrong bytes without any fault. Stop instead. Only the
         * offset inside the CTA's window counts: a shared::cta address is also the CTA's
         * shared::cluster address and carries its cluster rank from bit 24 up (the peer bit the
         * cta_group::2 TMA clears to name the pair leader's barrier), which the descriptor's
         * start field never holds. Comparing the whole address trapped in every odd CTA. */
        if ((c.smem & 0x00FFFFFFu) + P::OPERAND_END > P::DESC_ADDR_LIMIT)
            device_trap();
        if (threadIdx.x == 0)
            TcCta<P>::barriers_init(c);
        if (warp == P::MMA_WARP) {
            /* One warp allocates (with cta_group::2, one in each CTA of the pair) and gives up
             * the right to allocate more at once. */
            sm100::tmem_alloc<CG, P::TMEM_COLS, P::TMEM_EXCLUSIVE>(c.smem + P::OFF_TMEM_PTR);
            sm100::tmem_relinquish<CG>();
        }
        /* Barriers and the TMEM address become visible to the whole cluster. */
        sm100::fence_before();
        cluster::arrive();
        cluster::wait();
        sm100::fence_after();
        const u32 tmem = *(const volatile u32 *)(smem + P::OFF_TMEM_PTR);
        if (warp == P::TMA_WARP) {
            TcProducer<P>::run(c, p);
        } else if (warp == P::MMA_WARP) {
            if (warp_ops::elect_one())
                TcMma<P>::run(c, tmem);
            warp_ops::sync();
        } else if (warp - P::EPI_WARP0 < P::EPI_WARPS) { /* unsigned: also warp < EPI_WARP0 */
            TcEpilogue<P>::run(c, p, tmem, warp % 4);
        }
        /* No CTA leaves while a peer may still use its TMEM or arrive on its barriers. */
        sm100::fence_before();
        cluster::arrive();
        cluster::wait();
        if (warp == P::MMA_WARP) {
            sm100::fence_after();
            sm100::tmem_dealloc<CG, P::TMEM_COLS, P::TMEM_EXCLUSIVE>(tmem);
        }
        if (threadIdx.x == 0)
            workspace_exit(p);
    }
};

#endif /* JITGEMM_TCGEN05_KERNEL_CUH */
