/*
 * The activation quantizer's planner. The kernel is memory-bound and elementwise, so its shape
 * does not follow the band or the arch: 256 threads per CTA, two groups in flight per half-warp
 * and at most four CTAs per SM. These are sized from the traffic, not timed (the kernel has not
 * run on a GPU yet): four 256-thread CTAs are 1024 threads per SM, which every target holds
 * (sm_120a has 1536), and with two 16-byte loads in flight per thread that is 32 KiB of reads in
 * flight per SM, above the ~22 KiB an H200 needs to cover its memory latency at full bandwidth
 * (4.8 TB/s x about 0.6 us over 132 SMs). docs/kernels-quantize.md.
 */
#include <string.h>

#include "quant.h"

#define THREADS 256
#define UNROLL 2
#define MIN_BLOCKS 4
#define GROUP 128

jit_status_t jit__quant_plan(jit__plan_t *p, jit__diag_t *d) {
    (void)d;
    jit__quant_plan_t *qp = jit__quant_of(p);
    memset(qp, 0, sizeof(*qp));
    qp->groups = (int)((p->spec.k + GROUP - 1) / GROUP);
    qp->unroll = UNROLL;
    qp->min_blocks = MIN_BLOCKS;
    /* A "tile" is one 1x128 group; there is no N, no pipeline and no shared memory. */
    p->tile_m = 1;
    p->tile_n = 1;
    p->tile_k = GROUP;
    p->stages = 1;
    p->threads = THREADS;
    p->smem_bytes = 0;
    p->persistent = 1;
    p->cluster_m = p->cluster_n = 1;
    return JIT_OK;
}

unsigned jit__quant_grid(const jit__plan_t *plan, int64_t m) {
    const jit__quant_plan_t *qp = jit__quant_cof(plan);
    const int64_t per_cta = (int64_t)(plan->threads / 32) * 2 * qp->unroll;
    const int64_t needed = (m * qp->groups + per_cta - 1) / per_cta;
    const int64_t cap = (int64_t)plan->sm_count * qp->min_blocks;
    const int64_t grid = needed < cap ? needed : cap;
    return (unsigned)(grid > 0 ? grid : 1);
}
