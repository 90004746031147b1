/*
 * The FP8 mma.sync family's planner: one tile per token band, the cost model that lets the
 * family compete where another one also plans (sm_90a), and the grid of a launch.
 */
#include "fp8_mma_sync.h"

typedef struct mma_sync_tile {
    int tile_m, tile_n, warps_m, warps_n, stages;
} mma_sync_tile_t;

/* One row per token band. Small bands use short, narrow tiles so that decode-sized M still
 * spreads over many CTAs; the middle bands are the cp.async + mma.sync baseline tile (64
 * tokens x 128 rows, warp tile 32x32, two stages of K=128, eight warps). */
static const mma_sync_tile_t k_tiles[JIT_TOKEN_BANDS] = {
    {16, 64, 1, 4, 4},  {32, 128, 1, 4, 3}, {64, 128, 2, 4, 2},
    {64, 128, 2, 4, 2}, {64, 128, 2, 4, 2}, {128, 128, 2, 4, 2},
};

/* The cost model, so that the family competes with others on arches where it is not the only
 * one (sm_90a). Rates of an H200 running this kernel (docs/performance.md): tensor-core work
 * through mma.sync reaches about a fifth of wgmma's, and the cp.async loads of one CTA reach
 * far less bandwidth than a TMA ring. */
typedef struct mma_sync_model {
    double mma_flops_per_sm;  /* achieved mma.sync FP8 rate of one SM, FLOP/s */
    double load_bytes_per_sm; /* operand bytes one SM takes in from L2 per second */
    double dram_bytes_per_s;
    double tile_overhead_us;
    double launch_us;
} mma_sync_model_t;

static const mma_sync_model_t k_model = {
    .mma_flops_per_sm = 2.1e12,
    .load_bytes_per_sm = 40e9,
    .dram_bytes_per_s = 3.9e12,
    .tile_overhead_us = 1.0,
    .launch_us = 4.0,
};

static double modelled_us(const jit__plan_t *p, int64_t m) {
    const jit__gemm_spec_t *s = &p->spec;
    const mma_sync_model_t *c = &k_model;
    /* CTAs that share an SM split its rates; shared memory decides how many fit. */
    int per_sm = (int)(p->arch->smem_per_sm / (p->smem_bytes + 1024));
    if (per_sm < 1)
        per_sm = 1;
    if (per_sm * p->threads > 2048)
        per_sm = 2048 / p->threads;
    double k = (double)s->k;
    int64_t ctas = (m + p->tile_m - 1) / p->tile_m * ((s->n + p->tile_n - 1) / p->tile_n);
    /* No cluster, and a grid of one CTA per output tile whatever the SM count: the SM count
     * (at least 1, jit__spec_check) only sets how many waves the tiles take. */
    int64_t slots = (int64_t)p->sm_count * per_sm;
    int64_t waves = (ctas + slots - 1) / slots;
    double t_mma = 2.0 * p->tile_m * p->tile_n * k / (c->mma_flops_per_sm / per_sm);
    double t_load = (double)(p->tile_m + p->tile_n) * k / (c->load_bytes_per_sm / per_sm);
    double t_tile = (t_mma > t_load ? t_mma : t_load) * 1e6 + c->tile_overhead_us;
    double out_bytes = 2.0 * (double)m * (double)jit__spec_out_cols(s);
    double dram = ((double)m * k + (double)s->n * k + out_bytes) / c->dram_bytes_per_s * 1e6;
    double compute = (double)waves * t_tile;
    return (compute > dram ? compute : dram) + c->launch_us;
}

jit_status_t jit__mma_sync_plan(jit__plan_t *p, jit__diag_t *d) {
    const mma_sync_tile_t *t = &k_tiles[p->token_band];
    jit__mma_sync_plan_t *mp = jit__mma_sync_of(p);
    p->tile_m = t->tile_m;
    p->tile_n = t->tile_n;
    p->tile_k = 128;
    p->stages = t->stages;
    mp->warps_m = t->warps_m;
    mp->warps_n = t->warps_n;
    p->threads = 32 * t->warps_m * t->warps_n;
    p->smem_bytes = (uint32_t)(p->stages * (p->tile_m + p->tile_n) * p->tile_k);
    p->persistent = 0;
    p->cluster_m = p->cluster_n = 1;
    if (p->smem_bytes > p->arch->smem_per_cta)
        return jit__fail(d, JIT_PLAN_FAILED,
                         "mma.sync plan needs %u bytes of shared memory, %s allows %u",
                         p->smem_bytes, p->arch->name, p->arch->smem_per_cta);
    p->modelled_us = modelled_us(p, p->model_m);
    jit__plan_add_candidate(p, "mma_sync", p->tile_m, p->tile_n, p->stages, p->modelled_us);
    p->chosen = p->n_candidates - 1;
    return JIT_OK;
}

void jit__mma_sync_grid(const jit__plan_t *plan, int64_t m, unsigned grid[3]) {
    int64_t n_tiles = (plan->spec.n + plan->tile_n - 1) / plan->tile_n;
    int64_t m_tiles = (m + plan->tile_m - 1) / plan->tile_m;
    grid[0] = (unsigned)n_tiles;
    grid[1] = (unsigned)m_tiles;
    grid[2] = 1;
}
