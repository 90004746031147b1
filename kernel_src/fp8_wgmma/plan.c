/*
 * The FP8 wgmma family's planner: the tiles it weighs, the shared memory each needs, the cost
 * model that picks one per token band (the decode route's candidates come from decode.c), and
 * the persistent grid of a tile plan.
 */
#include <stdio.h>
#include <string.h>

#include "fp8_wgmma.h"

/* Shared memory per CTA the kernel may use (sm_90a's opt-in maximum, 227 KiB). */
#define SMEM_LIMIT 232448u
#define BK 128
#define MAX_STAGES 8

uint32_t jit__wgmma_smem_bytes(int bm, int bn, int stages, jit_epilogue_t epilogue,
                               int store_warps) {
    /* The ring, then the epilogue staging, the barriers, and 1 KiB of slack so the kernel can
     * round its base up to the 1024-byte swizzle atom. Staging: with store warps the whole BF16
     * tile (BM rows of out_cols, plus a 16-byte pad) and the tile's BM + BN scales, and three
     * more barriers; else two warpgroups x BM/2 rows x 80 bytes (32 BF16 columns plus a pad), or
     * for linear_add x 160 bytes (32 FP32 columns plus a pad: the residual is added after
     * staging). */
    uint32_t ring = (uint32_t)stages * (uint32_t)(bm + bn) * BK;
    if (store_warps) {
        int out_cols = epilogue == JIT_EPILOGUE_LINEAR_SWIGLU ? bn / 2 : bn;
        uint32_t staging = (uint32_t)bm * (uint32_t)(2 * out_cols + 16);
        uint32_t scales = 4u * (uint32_t)(bm + bn);
        return ring + staging + scales + 8u * (2u * (uint32_t)stages + 3u) + 1024u;
    }
    uint32_t staging = (uint32_t)bm * (epilogue == JIT_EPILOGUE_LINEAR_ADD ? 160u : 80u);
    return ring + staging + 16u * (uint32_t)stages + 1024u;
}

static int max_stages(const jit__gemm_spec_t *spec, int bm, int bn) {
    int store = jit__wgmma_store_warps(spec);
    int s = MAX_STAGES;
    while (s >= 2 && jit__wgmma_smem_bytes(bm, bn, s, spec->epilogue, store) > SMEM_LIMIT)
        s--;
    return s;
}

/* ---- the cost model ----------------------------------------------------------------------- */

/* Rates of an H200 (sm_90a, 132 SMs) running this kernel, fitted to the sweep of
 * bench/torch_anchor.py --sweep (every candidate timed at 22 cells of M x N x K;
 * docs/performance.md gives the cells, the fit and how far the choice lands from the fastest
 * measured candidate). A 128-K block runs at the slower of the tensor cores and the SM's operand
 * loads, plus a fixed cost (the wgmma wait and the FP32 promotion); both rates rise when fewer SMs
 * are busy (the clock has headroom then). The grid's last round is whole: a persistent CTA with one
 * more tile than the others sets the time. When M < BM, TMA zero-fills the rows of A's box past M,
 * and that costs load time in proportion to the rows filled (a larger M moves its last m-tile
 * instead, so that no box runs past M: tile_row0 in device/scheduler.cuh). */
typedef struct wgmma_model {
    double mma_flops_per_sm; /* wgmma FLOP/s per SM, all SMs busy */
    double sm_load;          /* operand bytes per second into one SM, all SMs busy */
    double idle_boost;       /* rates x (1 + idle_boost * share of idle SMs) */
    double block_us;         /* per 128-K block: wgmma.wait_group and the promotion adds */
    double wide_block_us;    /* per 128-K block and 32 tile columns past 128 */
    double zero_fill;        /* M < BM: A's loads x (1 + this x share of the box past M) */
    double cluster_block;    /* clusters of two: block time x this */
    double tile_overhead_us; /* per tile: pipeline fill and epilogue */
    double dram_bytes_per_s; /* HBM, a floor for tiny M */
    double launch_us;
} wgmma_model_t;

static const wgmma_model_t k_model = {
    .mma_flops_per_sm = 11.71e12,
    .sm_load = 147.8e9,
    .idle_boost = 0.671,
    .block_us = 0.0718,
    /* Past 128 columns a tile costs more per column than the MMA rate: on an H200 sweep of the
     * halves kernel at 1024 x 8192 x 8192 a 128-K block took 0.39, 0.45, 0.57 and 0.68 µs at BN
     * 96, 128, 160 and 192 (0.06 per 32 columns up to 128, 0.10-0.13 past it). Those tiles keep
     * 2 x BN/2 accumulators near the register limit and a shallower ring. Any value from 0.015
     * to 0.06 chose within 5% of the fastest in 79-80 of the 84 cells of the three sweeps of
     * the halves kernel, against 73 with none; the larger values move more large-M shapes to
     * 128x128, which the anchor, timed against torch, measured slower than 128x160 and 128x192
     * there (docs/kernels-fp8-wgmma.md, "The cost model"), so the value is near the low end. */
    .wide_block_us = 0.02,
    .zero_fill = 2.60,
    .cluster_block = 1.016,
    .tile_overhead_us = 3.12,
    .dram_bytes_per_s = 4.0e12,
    .launch_us = 2.39,
};

/* One tile: K blocks at the slower of the tensor cores and the loads (A's bytes x a_scale),
 * plus the per-block and per-tile costs. */
static double tile_us(const wgmma_model_t *c, int bm, int bn, int cluster, double boost,
                      double k_blocks, double a_scale) {
    double t_mma = 2.0 * bm * bn * BK / (c->mma_flops_per_sm * boost);
    double t_load = ((double)bm * a_scale + (double)bn / cluster) * BK / (c->sm_load * boost);
    double t_block = (t_mma > t_load ? t_mma : t_load) * 1e6;
    if (cluster > 1)
        t_block *= c->cluster_block;
    double wide = bn > 128 ? c->wide_block_us * (bn - 128) / 32.0 : 0.0;
    return k_blocks * (t_block + c->block_us + wide) + c->tile_overhead_us;
}

static double modelled_us(const jit__plan_t *p, int bm, int bn, int cluster, int64_t m) {
    const jit__gemm_spec_t *s = &p->spec;
    const wgmma_model_t *c = &k_model;
    int64_t m_tiles = (m + bm - 1) / bm, n_tiles = (s->n + bn - 1) / bn;
    /* A cluster works on `cluster` m-tiles of one n-tile; odd m-tile counts leave a CTA idle. */
    int64_t tiles = (m_tiles + cluster - 1) / cluster * cluster * n_tiles;
    int64_t grid = p->sm_count / cluster * cluster;
    if (tiles < grid)
        grid = tiles;
    int64_t per_cta = (tiles + grid - 1) / grid;
    double boost = 1.0 + c->idle_boost * (1.0 - (double)grid / (double)p->sm_count);
    double k_blocks = (double)((s->k + BK - 1) / BK);
    double a_scale = m < bm ? 1.0 + c->zero_fill * (double)(bm - m) / (double)bm : 1.0;
    double t_tile = tile_us(c, bm, bn, cluster, boost, k_blocks, a_scale);
    double out_bytes = 2.0 * (double)m * (double)jit__spec_out_cols(s);
    if (s->epilogue == JIT_EPILOGUE_LINEAR_ADD)
        out_bytes *= 2;
    double k = (double)s->k;
    double dram = ((double)m * k + (double)s->n * k + out_bytes) / c->dram_bytes_per_s * 1e6;
    double compute = (double)per_cta * t_tile;
    return (compute > dram ? compute : dram) + c->launch_us;
}

/* The tiles the model weighs. Promotion keeps a partial and a running accumulator per thread,
 * 2 x BN/2 registers for BM 128 (one m64 wave per consumer warpgroup), so BN stops at 192;
 * swiglu needs BN a multiple of 64 (gate/up pairs stay in one thread). */
static const int k_tiles[][2] = {{128, 64}, {128, 96}, {128, 128}, {128, 160}, {128, 192}};

/* The two forms of the kernel the model weighs per tile: one CTA per cluster, or two that
 * share the B tile by multicast. */
static const char *const k_routes[2] = {"wgmma_tma", "wgmma_tma_mc2"};

/* Make candidate `index` the plan. */
static jit_status_t apply(jit__plan_t *p, int index, jit__diag_t *d) {
    (void)d;
    jit__wgmma_plan_t *wp = jit__wgmma_of(p);
    const jit__plan_candidate_t *w = &p->candidates[index];
    p->chosen = index;
    p->modelled_us = w->modelled_us;
    memset(wp, 0, sizeof(*wp));
    wp->group_m = jit__wgmma_group_m();
    wp->producer_regs = 40;
    wp->consumer_regs = 232;
    if (!jit__wgmma_decode_apply(p, w)) {
        wp->route = JIT_WGMMA_TILES;
        wp->bm = w->tile_m;
        wp->bn = w->tile_n;
        wp->stages = w->stages;
        /* FP8 wgmma keeps about 14 bits of its running sum, so partial sums are promoted to
         * FP32 every 128 K, as torch._scaled_mm does by default; accumulating the whole K
         * inside wgmma measured 20-49 times the FP32 tolerance (docs/kernels-fp8-wgmma.md).
         * In two column halves by default: measured faster than the whole block on the H200
         * (docs/performance.md). */
        wp->promote = jit__wgmma_promote_mode();
        wp->cluster = strcmp(w->route, k_routes[1]) == 0 ? 2 : 1;
        wp->store_warps = jit__wgmma_store_warps(&p->spec);
        p->smem_bytes =
            jit__wgmma_smem_bytes(wp->bm, wp->bn, wp->stages, p->spec.epilogue, wp->store_warps);
    }
    p->tile_m = wp->bm;
    p->tile_n = wp->bn;
    p->tile_k = BK;
    p->stages = wp->stages;
    p->threads = 384;
    p->persistent = wp->route == JIT_WGMMA_TILES;
    p->cluster_m = wp->cluster;
    p->cluster_n = 1;
    return JIT_OK;
}

/* M values a band's kernel must serve: its ends and its model M. The open last band is sampled
 * at 2048, 4096 and 8192, where prefill batches are, not at its bottom edge: at M = 1025 every
 * 128-row tile has a ninth m-tile of one row, and weighted like the others that one M took the
 * band to tiles that suit nine m-tiles (on the H200 sweep the model was fitted to, at
 * 14336 x 5120: 128x192, 7.4% off the fastest at M = 2048; sampled here, 128x160, the fastest at
 * 2048 and 4096; docs/kernels-fp8-wgmma.md, "The cost model"). */
static int band_samples(int band, int64_t m[JIT_WGMMA_BAND_SAMPLES]) {
    int64_t lo, hi;
    jit__token_band_range(band, &lo, &hi);
    if (hi == INT64_MAX) {
        m[0] = 2048, m[1] = 4096, m[2] = 8192;
        return 3;
    }
    m[0] = lo, m[1] = jit__token_band_model_m(band), m[2] = hi;
    return 3;
}

/* One kernel serves every M of a band, so the model picks the candidate whose mean slowdown
 * against the modelled best, over the band's sample M, is least. The mean rather than the
 * worst: on the H200 sweep the worst-case rule took 128x128 for the open last band (best at its
 * bottom, M = 2048, by wave counts) and landed 4-8% off the fastest tile at M = 4096 and 8192,
 * where the time goes; the mean picked a tile within 5% in 13 of 14 cells (docs/performance.md).
 * The candidates' modelled times are at the band's model M. */
jit_status_t jit__wgmma_plan(jit__plan_t *p, jit__diag_t *d) {
    const int max_cluster = 2;
    int64_t ms[JIT_WGMMA_BAND_SAMPLES];
    int n_ms = band_samples(p->token_band, ms);
    double t[JIT_PLAN_MAX_CANDIDATES][JIT_WGMMA_BAND_SAMPLES];
    for (size_t i = 0; i < sizeof(k_tiles) / sizeof(k_tiles[0]); i++) {
        int bm = k_tiles[i][0], bn = k_tiles[i][1];
        int stages = max_stages(&p->spec, bm, bn);
        if (p->spec.epilogue == JIT_EPILOGUE_LINEAR_SWIGLU && bn % 64 != 0)
            continue;
        if (stages < 3)
            continue;
        /* A cluster's CTAs run on distinct SMs at once, so a cluster larger than the GPU can
         * never be resident: not a candidate there (the model would size a grid of no whole
         * cluster, and the launch would be refused). One SM still runs the single-CTA tile. */
        for (int cluster = 1; cluster <= max_cluster && cluster <= p->sm_count &&
                              p->n_candidates < JIT_PLAN_MAX_CANDIDATES;
             cluster++) {
            for (int j = 0; j < n_ms; j++)
                t[p->n_candidates][j] = modelled_us(p, bm, bn, cluster, ms[j]);
            jit__plan_add_candidate(p, k_routes[cluster - 1], bm, bn, stages,
                                    modelled_us(p, bm, bn, cluster, p->model_m));
        }
    }
    jit__wgmma_decode_candidates(p, ms, n_ms, t);
    if (p->n_candidates == 0)
        return jit__fail(d, JIT_PLAN_FAILED, "no wgmma tile fits %u bytes of shared memory",
                         SMEM_LIMIT);
    double fastest[JIT_WGMMA_BAND_SAMPLES];
    for (int j = 0; j < n_ms; j++) {
        fastest[j] = t[0][j];
        for (int c = 1; c < p->n_candidates; c++)
            if (t[c][j] < fastest[j])
                fastest[j] = t[c][j];
    }
    int best = 0;
    double best_mean = 0, best_worst = 0;
    for (int c = 0; c < p->n_candidates; c++) {
        double mean = 0, worst = 0;
        for (int j = 0; j < n_ms; j++) {
            mean += t[c][j] / fastest[j] / n_ms;
            if (t[c][j] / fastest[j] > worst)
                worst = t[c][j] / fastest[j];
        }
        if (c == 0 || mean < best_mean - 1e-9 ||
            (mean < best_mean + 1e-9 &&
             p->candidates[c].modelled_us < p->candidates[best].modelled_us)) {
            best = c;
            best_mean = mean;
            best_worst = worst;
        }
    }
    jit_status_t st = apply(p, best, d);
    const jit__plan_candidate_t *w = &p->candidates[best];
    int len = snprintf(p->reason, sizeof(p->reason), "least mean slowdown over M in {%lld",
                       (long long)ms[0]);
    for (int j = 1; j < n_ms && len > 0 && (size_t)len < sizeof(p->reason); j++)
        len +=
            snprintf(p->reason + len, sizeof(p->reason) - (size_t)len, ", %lld", (long long)ms[j]);
    if (len > 0 && (size_t)len < sizeof(p->reason))
        snprintf(p->reason + len, sizeof(p->reason) - (size_t)len,
                 "}: %s %dx%d, mean %.3fx, within %.3fx of the modelled best", w->route, w->tile_m,
                 w->tile_n, best_mean, best_worst);
    return st;
}

jit_status_t jit__wgmma_replan(jit__plan_t *p, int index, jit__diag_t *d) {
    if (index < 0 || index >= p->n_candidates)
        return jit__fail(d, JIT_INVALID_ARGUMENT, "wgmma family: no candidate %d", index);
    return apply(p, index, d);
}

unsigned jit__wgmma_grid(const jit__plan_t *plan, int64_t m, int max_clusters) {
    const jit__wgmma_plan_t *wp = jit__wgmma_cof(plan);
    if (wp->route == JIT_WGMMA_DECODE)
        return jit__wgmma_decode_grid(plan, m);
    const int64_t c = wp->cluster;
    /* Work units are groups of `cluster` m-tiles of one n-tile, one cluster each. */
    int64_t units =
        ((m + wp->bm - 1) / wp->bm + c - 1) / c * ((plan->spec.n + wp->bn - 1) / wp->bn);
    int64_t clusters = plan->sm_count / c;
    /* A persistent CTA that is not resident waits for a whole earlier CTA to finish: with
     * clusters, the GPCs' SM counts can leave fewer co-resident clusters than SMs / cluster. */
    if (max_clusters > 0 && max_clusters < clusters)
        clusters = max_clusters;
    return (unsigned)((units < clusters ? units : clusters) * c);
}
