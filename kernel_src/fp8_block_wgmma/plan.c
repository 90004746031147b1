/*
 * The block-scaled wgmma family's planner: every tile it can run, each as one CTA and as a
 * cluster of two, and for the decode bands the decode route's configurations (decode.c), each
 * with a modelled time at the band's sample M, and the choice of the one with the least mean
 * slowdown against the modelled best (the rule of the row-scaled wgmma family,
 * docs/kernels-fp8-wgmma.md, "The cost model").
 */
#include <stdio.h>
#include <string.h>

#include "bsw.h"

#define BK 128
#define MAX_STAGES 8

uint32_t jit__bsw_smem_bytes(int bm, int bn, int stages, jit_epilogue_t epilogue, int store_warps) {
    /* The ring (A and B tiles and the stage's scales: SFA of BM rows and two SFB values padded
     * to 16 bytes), the epilogue staging, the barriers and 1 KiB of slack to round the base up to
     * the 1024-byte swizzle atom. Staging: with store warps the whole BF16 tile (BM rows of its
     * output columns plus a 16-byte pad) and two more barriers; else two warpgroups x 64 rows
     * x 80 bytes (32 BF16 columns plus a pad), or for linear_add x 160 bytes (32 FP32 columns
     * plus a pad: the residual is added after staging). */
    uint32_t ring = (uint32_t)stages * ((uint32_t)(bm + bn) * BK + (uint32_t)bm * 4u + 16u);
    if (store_warps) {
        int out_cols = epilogue == JIT_EPILOGUE_LINEAR_SWIGLU ? bn / 2 : bn;
        uint32_t staging = (uint32_t)bm * (uint32_t)(2 * out_cols + 16);
        return ring + staging + 8u * (2u * (uint32_t)stages + 2u) + 1024u;
    }
    uint32_t staging = (uint32_t)bm * (epilogue == JIT_EPILOGUE_LINEAR_ADD ? 160u : 80u);
    return ring + staging + 16u * (uint32_t)stages + 1024u;
}

/* linear and swiglu hand their stores to the store warps; linear_add's consumers store, since
 * the residual is added before the one rounding. */
static int store_warps_of(jit_epilogue_t epilogue) {
    return epilogue != JIT_EPILOGUE_LINEAR_ADD;
}

static int max_stages(const jit__gemm_spec_t *spec, int bm, int bn) {
    int store = store_warps_of(spec->epilogue);
    int s = MAX_STAGES;
    while (s >= 2 && jit__bsw_smem_bytes(bm, bn, s, spec->epilogue, store) > JIT_BSW_SMEM_LIMIT)
        s--;
    return s;
}

/* ---- the cost model ----------------------------------------------------------------------- */

/* The row-scaled wgmma kernel's rates on the H200 (kernel_src/fp8_wgmma/family.c, fitted to
 * its sweeps: docs/kernels-fp8-wgmma.md), since this kernel moves the same operands through the
 * same ring and wgmmas. What block scaling adds is one term: per 128-K block, the promotion
 * multiplies by a scale (an FFMA where the row-scaled kernel adds) chosen per column group
 * between the tile's two N blocks, and four scale loads. That term is an estimate from the
 * instruction count (about one select per 8 columns and row, 24 at BN 192, against the
 * row-scaled kernel's per-block time of 0.07 us), not a fit: this kernel has not been timed on
 * a GPU yet. */
typedef struct bsw_model {
    double mma_flops_per_sm; /* wgmma FLOP/s per SM, all SMs busy */
    double sm_load;          /* operand bytes per second into one SM, all SMs busy */
    double idle_boost;       /* rates x (1 + idle_boost * share of idle SMs) */
    double block_us;         /* per 128-K block: wgmma.wait_group and the promotion adds */
    double wide_block_us;    /* per 128-K block and 32 tile columns past 128 */
    double scale_block_us;   /* per 128-K block and 32 tile columns: the scaled promotion */
    double zero_fill;        /* M < BM: A's loads x (1 + this x share of the box past M) */
    double cluster_block;    /* clusters of two: block time x this */
    double tile_overhead_us; /* per tile: pipeline fill and epilogue */
    double dram_bytes_per_s; /* HBM, a floor for tiny M */
    double launch_us;
} bsw_model_t;

static const bsw_model_t k_model = {
    .mma_flops_per_sm = 11.71e12,
    .sm_load = 147.8e9,
    .idle_boost = 0.671,
    .block_us = 0.0718,
    .wide_block_us = 0.02,
    .scale_block_us = 0.004,
    .zero_fill = 2.60,
    .cluster_block = 1.016,
    .tile_overhead_us = 3.12,
    .dram_bytes_per_s = 4.0e12,
    .launch_us = 2.39,
};

static double modelled_us(const jit__plan_t *p, int bm, int bn, int cluster, int64_t m) {
    const jit__gemm_spec_t *s = &p->spec;
    const bsw_model_t *c = &k_model;
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
    double t_mma = 2.0 * bm * bn * BK / (c->mma_flops_per_sm * boost);
    double t_load = ((double)bm * a_scale + (double)bn / cluster) * BK / (c->sm_load * boost);
    double t_block = (t_mma > t_load ? t_mma : t_load) * 1e6;
    if (cluster > 1)
        t_block *= c->cluster_block;
    double wide = bn > 128 ? c->wide_block_us * (bn - 128) / 32.0 : 0.0;
    double scale = c->scale_block_us * bn / 32.0;
    double t_tile = k_blocks * (t_block + c->block_us + wide + scale) + c->tile_overhead_us;
    double out_bytes = 2.0 * (double)m * (double)jit__spec_out_cols(s);
    if (s->epilogue == JIT_EPILOGUE_LINEAR_ADD)
        out_bytes *= 2;
    double k = (double)s->k;
    /* The scales: SFA per row and 128 K, SFB per 128 x 128 block, four bytes each. */
    double scale_bytes = 4.0 * k_blocks * ((double)m + (double)((s->n + 127) / 128));
    double dram =
        ((double)m * k + (double)s->n * k + out_bytes + scale_bytes) / c->dram_bytes_per_s * 1e6;
    double compute = (double)per_cta * t_tile;
    return (compute > dram ? compute : dram) + c->launch_us;
}

/* The tiles weighed: BM 128 (one m64 wave per consumer warpgroup) and BN up to 192, since
 * promotion keeps a partial and a running accumulator, 2 x BN/2 registers per thread; swiglu
 * needs BN a multiple of 64 (gate/up pairs stay in one thread). */
static const int k_bn[] = {64, 96, 128, 160, 192};

/* One CTA per cluster, or two that share the B tile by multicast. */
static const char *const k_routes[2] = {"block_tma", "block_tma_mc2"};

static jit_status_t apply(jit__plan_t *p, int index) {
    jit__bsw_plan_t *bp = jit__bsw_of(p);
    const jit__plan_candidate_t *w = &p->candidates[index];
    p->chosen = index;
    p->modelled_us = w->modelled_us;
    memset(bp, 0, sizeof(*bp));
    bp->group_m = 8;
    bp->producer_regs = 40;
    bp->consumer_regs = 232;
    if (!jit__bsw_decode_apply(p, w)) {
        bp->route = JIT_BSW_TILES;
        bp->bm = w->tile_m;
        bp->bn = w->tile_n;
        bp->stages = w->stages;
        bp->cluster = strcmp(w->route, k_routes[1]) == 0 ? 2 : 1;
        bp->store_warps = store_warps_of(p->spec.epilogue);
        bp->split = 1;
        p->smem_bytes =
            jit__bsw_smem_bytes(bp->bm, bp->bn, bp->stages, p->spec.epilogue, bp->store_warps);
        p->persistent = 1;
    }
    p->tile_m = bp->bm;
    p->tile_n = bp->bn;
    p->tile_k = BK;
    p->stages = bp->stages;
    p->threads = 384;
    p->cluster_m = bp->cluster;
    p->cluster_n = 1;
    return JIT_OK;
}

/* M values a band's kernel must serve: its ends and its model M; the open last band is
 * sampled where prefill batches are (2048, 4096, 8192), as the row-scaled family does. */
static int band_samples(int band, int64_t m[JIT_BSW_BAND_SAMPLES]) {
    int64_t lo, hi;
    jit__token_band_range(band, &lo, &hi);
    if (hi == INT64_MAX) {
        m[0] = 2048, m[1] = 4096, m[2] = 8192;
    } else {
        m[0] = lo, m[1] = jit__token_band_model_m(band), m[2] = hi;
    }
    return JIT_BSW_BAND_SAMPLES;
}

/* The index of the candidate with the least mean slowdown against the modelled best over the
 * band's sample M (ties: the faster at the model M), and that mean and its worst. */
static int least_mean_slowdown(const jit__plan_t *p, double t[][JIT_BSW_BAND_SAMPLES], int n_ms,
                               double *mean_out, double *worst_out) {
    double fastest[JIT_BSW_BAND_SAMPLES];
    for (int j = 0; j < n_ms; j++) {
        fastest[j] = t[0][j];
        for (int c = 1; c < p->n_candidates; c++)
            if (t[c][j] < fastest[j])
                fastest[j] = t[c][j];
    }
    int best = 0;
    for (int c = 0; c < p->n_candidates; c++) {
        double mean = 0, worst = 0;
        for (int j = 0; j < n_ms; j++) {
            mean += t[c][j] / fastest[j] / n_ms;
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

jit_status_t jit__bsw_plan(jit__plan_t *p, jit__diag_t *d) {
    int64_t ms[JIT_BSW_BAND_SAMPLES];
    const int n_ms = band_samples(p->token_band, ms);
    double t[JIT_PLAN_MAX_CANDIDATES][JIT_BSW_BAND_SAMPLES];
    for (size_t i = 0; i < sizeof(k_bn) / sizeof(k_bn[0]); i++) {
        const int bm = 128, bn = k_bn[i];
        const int stages = max_stages(&p->spec, bm, bn);
        if ((p->spec.epilogue == JIT_EPILOGUE_LINEAR_SWIGLU && bn % 64 != 0) || stages < 3)
            continue;
        /* A cluster of two needs two SMs. */
        for (int cluster = 1;
             cluster <= 2 && cluster <= p->sm_count && p->n_candidates < JIT_PLAN_MAX_CANDIDATES;
             cluster++) {
            for (int j = 0; j < n_ms; j++)
                t[p->n_candidates][j] = modelled_us(p, bm, bn, cluster, ms[j]);
            jit__plan_add_candidate(p, k_routes[cluster - 1], bm, bn, stages,
                                    modelled_us(p, bm, bn, cluster, p->model_m));
        }
    }
    jit__bsw_decode_candidates(p, ms, n_ms, t);
    if (p->n_candidates == 0)
        return jit__fail(d, JIT_PLAN_FAILED,
                         "no block-scaled wgmma tile fits %u bytes of shared "
                         "memory",
                         JIT_BSW_SMEM_LIMIT);
    double mean = 0, worst = 0;
    const int best = least_mean_slowdown(p, t, n_ms, &mean, &worst);
    apply(p, best);
    const jit__plan_candidate_t *w = &p->candidates[best];
    snprintf(p->reason, sizeof(p->reason),
             "least mean slowdown over M in {%lld, %lld, %lld}: %s %dx%d, mean %.3fx, within "
             "%.3fx of the modelled best",
             (long long)ms[0], (long long)ms[1], (long long)ms[2], w->route, w->tile_m, w->tile_n,
             mean, worst);
    return JIT_OK;
}

jit_status_t jit__bsw_replan(jit__plan_t *p, int index, jit__diag_t *d) {
    if (index < 0 || index >= p->n_candidates)
        return jit__fail(d, JIT_INVALID_ARGUMENT, "block wgmma family: no candidate %d", index);
    return apply(p, index);
}

unsigned jit__bsw_grid(const jit__plan_t *plan, int64_t m, int max_clusters) {
    const jit__bsw_plan_t *bp = jit__bsw_cof(plan);
    if (bp->route == JIT_BSW_DECODE)
        return jit__bsw_decode_grid(plan, m);
    const int64_t c = bp->cluster;
    /* Work units are groups of `cluster` m-tiles of one n-tile, one cluster each. */
    int64_t units =
        ((m + bp->bm - 1) / bp->bm + c - 1) / c * ((plan->spec.n + bp->bn - 1) / bp->bn);
    int64_t clusters = plan->sm_count / c;
    /* A persistent CTA that is not resident waits for a whole earlier CTA to finish: with
     * clusters, the GPCs' SM counts can leave fewer co-resident clusters than SMs / cluster. */
    if (max_clusters > 0 && max_clusters < clusters)
        clusters = max_clusters;
    return (unsigned)((units < clusters ? units : clusters) * c);
}
