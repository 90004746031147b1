/*
 * The grouped family's candidates and cost model. A grouped kernel serves every routing, so
 * the plan is made for the rows an expert is expected to have (the token band of the problem's
 * expected_m, jit__problem_band_m): every candidate is timed by the model at the band's sample
 * counts with every expert at that count, and the one with the least mean slowdown against the
 * modelled best is chosen, as the dense wgmma family chooses its tile. The tile route's
 * candidates are here; the swap route's (up to 64 rows per expert) in swap.c.
 */
#include <stdio.h>
#include <string.h>

#include "grouped.h"

#define BK 128
#define MAX_STAGES 8
#define SAMPLES 3

uint32_t jit__grouped_smem_bytes(int bm, int bn, int stages, jit_epilogue_t epilogue,
                                 int64_t groups) {
    int out_cols = epilogue == JIT_EPILOGUE_LINEAR_SWIGLU ? bn / 2 : bn;
    uint32_t ring = (uint32_t)stages * (uint32_t)(bm + bn) * BK;
    uint32_t staging = (uint32_t)bm * (uint32_t)(2 * out_cols + 16);
    uint32_t scales = 4u * (uint32_t)(bm + bn);
    uint32_t table = ((3u * (uint32_t)groups + 1u) * 4u + 7u) / 8u * 8u;
    return ring + staging + scales + table + 8u * (2u * (uint32_t)stages + 3u) + 1024u;
}

static int max_stages(const jit__gemm_spec_t *s, int bm, int bn) {
    int st = MAX_STAGES;
    while (st >= 2 &&
           jit__grouped_smem_bytes(bm, bn, st, s->epilogue, s->groups) > JIT_GROUPED_SMEM_LIMIT)
        st--;
    return st;
}

/* The dense wgmma kernel's rates on the H200 (kernel_src/fp8_wgmma/family.c, fitted to its
 * sweep: docs/performance.md): the grouped tile kernel runs the same ring, wgmma, promotion and
 * store-warp epilogue per tile. What the grouped kernel adds is an estimate until an H200
 * sweep of it is fitted: reading the offsets and scanning them into the expert table at the
 * start of every CTA (one global load latency, then a warp scan of G / 32 steps). */
typedef struct grouped_model {
    double mma_flops_per_sm, sm_load, idle_boost, block_us, wide_block_us;
    double tile_overhead_us, dram_bytes_per_s, launch_us;
    double table_us, table_us_per_32_groups;
} grouped_model_t;

static const grouped_model_t k_model = {
    .mma_flops_per_sm = 11.71e12,
    .sm_load = 147.8e9,
    .idle_boost = 0.671,
    .block_us = 0.0718,
    .wide_block_us = 0.02,
    .tile_overhead_us = 3.12,
    .dram_bytes_per_s = 4.0e12,
    .launch_us = 2.39,
    .table_us = 1.0,
    .table_us_per_32_groups = 0.05,
};

static double tile_us(const grouped_model_t *c, int bm, int bn, double boost, double k_blocks) {
    double t_mma = 2.0 * bm * bn * BK / (c->mma_flops_per_sm * boost);
    double t_load = (double)(bm + bn) * BK / (c->sm_load * boost);
    double t_block = (t_mma > t_load ? t_mma : t_load) * 1e6;
    double wide = bn > 128 ? c->wide_block_us * (bn - 128) / 32.0 : 0.0;
    return k_blocks * (t_block + c->block_us + wide) + c->tile_overhead_us;
}

/* The modelled time of the tile kernel with every one of G experts at `rows` rows. A partial
 * row tile loads whole boxes (rows of the next expert), so it costs a whole tile. HBM is a
 * floor: every expert's weights are read once, and its rows and outputs. */
static double tiles_us(const jit__plan_t *p, int bm, int bn, int64_t rows) {
    const jit__gemm_spec_t *s = &p->spec;
    const grouped_model_t *c = &k_model;
    int64_t tiles = s->groups * ((rows + bm - 1) / bm) * ((s->n + bn - 1) / bn);
    int64_t grid = tiles < p->sm_count ? tiles : p->sm_count;
    if (grid < 1)
        grid = 1;
    int64_t per_cta = (tiles + grid - 1) / grid;
    double boost = 1.0 + c->idle_boost * (1.0 - (double)grid / (double)p->sm_count);
    double k = (double)s->k, g = (double)s->groups, m = g * (double)rows;
    double compute = (double)per_cta * tile_us(c, bm, bn, boost, (double)((s->k + BK - 1) / BK));
    double bytes = m * k + g * (double)s->n * k + 2.0 * m * (double)jit__spec_out_cols(s);
    double dram = bytes / c->dram_bytes_per_s * 1e6;
    double table = c->table_us + c->table_us_per_32_groups * (double)((s->groups + 31) / 32);
    return (compute > dram ? compute : dram) + table + c->launch_us;
}

/* The rows per expert a band's kernel must serve: its ends and its model M; the open band at
 * 2048, 4096 and 8192 (its bottom edge would weigh a ninth, one-row tile like the others). */
static void band_samples(int band, int64_t m[SAMPLES]) {
    int64_t lo, hi;
    jit__token_band_range(band, &lo, &hi);
    if (hi == INT64_MAX) {
        m[0] = 2048, m[1] = 4096, m[2] = 8192;
        return;
    }
    m[0] = lo, m[1] = jit__token_band_model_m(band), m[2] = hi;
}

/* Tiles weighed: BM 128 (one m64 wave per consumer warpgroup), BN up to 192, where the
 * promotion's 2 x BN/2 accumulators per thread reach the register budget; SwiGLU needs BN a
 * multiple of 64 (gate/up pairs stay in one thread). */
static const int k_tiles[][2] = {{128, 64}, {128, 96}, {128, 128}, {128, 160}, {128, 192}};

static jit_status_t apply(jit__plan_t *p, int index, jit__diag_t *d) {
    if (index < 0 || index >= p->n_candidates)
        return jit__fail(d, JIT_INVALID_ARGUMENT, "grouped family: no candidate %d", index);
    const jit__plan_candidate_t *w = &p->candidates[index];
    jit__grouped_plan_t *gp = jit__grouped_of(p);
    memset(gp, 0, sizeof(*gp));
    gp->group_m = 8;
    gp->producer_regs = 40;
    gp->consumer_regs = 232;
    p->chosen = index;
    p->modelled_us = w->modelled_us;
    if (!jit__grouped_swap_apply(p, w)) {
        gp->route = JIT_GROUPED_TILES;
        gp->bm = w->tile_m;
        gp->bn = w->tile_n;
        gp->stages = w->stages;
        p->smem_bytes =
            jit__grouped_smem_bytes(gp->bm, gp->bn, gp->stages, p->spec.epilogue, p->spec.groups);
    }
    p->tile_m = gp->bm;
    p->tile_n = gp->bn;
    p->tile_k = BK;
    p->stages = gp->stages;
    p->threads = 384;
    p->persistent = 1;
    p->cluster_m = 1;
    p->cluster_n = 1;
    return JIT_OK;
}

jit_status_t jit__grouped_replan(jit__plan_t *p, int index, jit__diag_t *d) {
    return apply(p, index, d);
}

/* The least mean slowdown over the band's samples; the reason says which and by how much. */
static int choose(const jit__plan_t *p, double t[][SAMPLES], double *mean_out, double *worst_out) {
    double fastest[SAMPLES];
    for (int j = 0; j < SAMPLES; j++) {
        fastest[j] = t[0][j];
        for (int c = 1; c < p->n_candidates; c++)
            if (t[c][j] < fastest[j])
                fastest[j] = t[c][j];
    }
    int best = 0;
    for (int c = 0; c < p->n_candidates; c++) {
        double mean = 0, worst = 0;
        for (int j = 0; j < SAMPLES; j++) {
            mean += t[c][j] / fastest[j] / SAMPLES;
            if (t[c][j] / fastest[j] > worst)
                worst = t[c][j] / fastest[j];
        }
        if (c == 0 || mean < *mean_out - 1e-9 ||
            (mean < *mean_out + 1e-9 &&
             p->candidates[c].modelled_us < p->candidates[best].modelled_us)) {
            best = c;
            *mean_out = mean;
            *worst_out = worst;
        }
    }
    return best;
}

jit_status_t jit__grouped_plan(jit__plan_t *p, jit__diag_t *d) {
    int64_t ms[SAMPLES];
    band_samples(p->token_band, ms);
    double t[JIT_PLAN_MAX_CANDIDATES][SAMPLES];
    for (size_t i = 0; i < sizeof(k_tiles) / sizeof(k_tiles[0]); i++) {
        int bm = k_tiles[i][0], bn = k_tiles[i][1];
        int stages = max_stages(&p->spec, bm, bn);
        if ((p->spec.epilogue == JIT_EPILOGUE_LINEAR_SWIGLU && bn % 64 != 0) || stages < 3)
            continue;
        for (int j = 0; j < SAMPLES; j++)
            t[p->n_candidates][j] = tiles_us(p, bm, bn, ms[j]);
        jit__plan_add_candidate(p, "grouped_tiles", bm, bn, stages,
                                tiles_us(p, bm, bn, p->model_m));
    }
    jit__grouped_swap_candidates(p, ms, SAMPLES, t);
    if (p->n_candidates == 0)
        return jit__fail(d, JIT_PLAN_FAILED,
                         "no grouped tile fits %u bytes of shared memory with %lld experts",
                         JIT_GROUPED_SMEM_LIMIT, (long long)p->spec.groups);
    double mean = 0, worst = 0;
    int best = choose(p, t, &mean, &worst);
    jit_status_t st = apply(p, best, d);
    const jit__plan_candidate_t *w = &p->candidates[best];
    snprintf(p->reason, sizeof(p->reason),
             "least mean slowdown over %lld experts x {%lld, %lld, %lld} rows: %s %dx%d, mean "
             "%.3fx, within %.3fx of the modelled best",
             (long long)p->spec.groups, (long long)ms[0], (long long)ms[1], (long long)ms[2],
             w->route, w->tile_m, w->tile_n, mean, worst);
    return st;
}
