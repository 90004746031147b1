/*
 * The wgmma family's decode route (M <= 64): Fp8WgmmaDecodeKernel (device/decode.cuh)
 * puts the weights on wgmma's M side and the tokens on its N side, and splits K so that every SM
 * streams weights; the last CTA of a tile adds the k-splits' partials in a fixed order. This file
 * holds its sizes, its candidates for the cost model and its parameter block.
 */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "abi.h"
#include "fp8_wgmma.h"

#define BK 128
#define SMEM_LIMIT 232448u

uint32_t jit__wgmma_decode_smem_bytes(int bw, int tok, int stages, int ksub, int split) {
    /* The ring of KSUB blocks of weights and tokens per stage, the SPLIT == 1 staging tile
     * (TOK rows of BW + 4 floats), a 16-byte flag, the barriers and the 1 KiB alignment slack:
     * the kernel's SMEM_BYTES, which the generated source asserts. */
    uint32_t ring = (uint32_t)stages * (uint32_t)ksub * (uint32_t)(bw + tok) * BK;
    uint32_t staging = split == 1 ? (uint32_t)tok * (uint32_t)(bw + 4) * 4u : 0u;
    return ring + staging + 16u + 16u * (uint32_t)stages + 1024u;
}

static int64_t token_tiles(const jit__plan_t *p, int64_t m) {
    return (m + jit__wgmma_cof(p)->bm - 1) / jit__wgmma_cof(p)->bm;
}

static int64_t weight_tiles(const jit__plan_t *p) {
    return (p->spec.n + jit__wgmma_cof(p)->bn - 1) / jit__wgmma_cof(p)->bn;
}

size_t jit__wgmma_decode_workspace_bytes(const jit__plan_t *p, int64_t m) {
    const jit__wgmma_plan_t *wp = jit__wgmma_cof(p);
    if (wp->split <= 1)
        return 0;
    return (size_t)(token_tiles(p, m) * weight_tiles(p)) * (size_t)wp->split * (size_t)wp->bm *
           (size_t)wp->bn * sizeof(float);
}

size_t jit__wgmma_decode_counter_bytes(const jit__plan_t *p, int64_t m) {
    if (jit__wgmma_cof(p)->split <= 1)
        return 0;
    return (size_t)(token_tiles(p, m) * weight_tiles(p)) * sizeof(uint32_t);
}

unsigned jit__wgmma_decode_grid(const jit__plan_t *p, int64_t m) {
    return (unsigned)(token_tiles(p, m) * weight_tiles(p) * jit__wgmma_cof(p)->split);
}

/* ---- candidates -------------------------------------------------------------------------- */

/* Fitted to the decode cells of the H200 sweep (M = 1, 16 and 64 at 5120 x 17408, M = 16 at
 * 8192 x 3584; docs/performance.md): the weights stream from HBM at up to the first rate, one SM
 * takes in at most the second, each further round of units costs about the third (the grid
 * refills as CTAs finish), the last CTA of a tile reads the split partials back at the fourth
 * rate, and a launch with its ramp costs the fifth figure. The HBM and per-SM limits meet
 * smoothly (a power mean with the last exponent): with few SMs streaming, HBM is not reached
 * before the per-SM limit binds (the sweep: 40 SMs took 1.06x the time of 120 at M = 1). */
#define DECODE_HBM_BYTES_PER_S 4.088e12
#define DECODE_SM_BYTES_PER_S 132.1e9
#define DECODE_ROUND_US 1.582
#define DECODE_REDUCE_BYTES_PER_S 1.999e12
#define DECODE_FIXED_US 5.062
#define DECODE_LIMIT_EXPONENT 3.902

static double decode_us(const jit__plan_t *p, int bw, int tok, int split, int64_t m) {
    double k = (double)p->spec.k;
    int64_t units = (m + tok - 1) / tok * ((p->spec.n + bw - 1) / bw) * split;
    int64_t rounds = (units + p->sm_count - 1) / p->sm_count;
    double hbm = (double)p->spec.n * k / DECODE_HBM_BYTES_PER_S * 1e6;
    double per_sm = (double)rounds * (double)(bw + tok) * k / split / DECODE_SM_BYTES_PER_S * 1e6;
    /* The last CTA of a tile reads the split partials back: SPLIT x tokens x rows floats, and
     * they were written once. */
    double reduce = split > 1 ? (double)split * (double)m * (double)p->spec.n * 4.0 * 2.0 /
                                    DECODE_REDUCE_BYTES_PER_S * 1e6
                              : 0;
    double stream = pow(pow(hbm, DECODE_LIMIT_EXPONENT) + pow(per_sm, DECODE_LIMIT_EXPONENT),
                        1.0 / DECODE_LIMIT_EXPONENT);
    return stream + reduce + DECODE_ROUND_US * (double)(rounds - 1) + DECODE_FIXED_US;
}

/* The token tile of a band: one tile holds every M of it (16 for M <= 16, 64 up to 64), and a
 * stage holds two 128-K blocks where the token tile is small (measured slightly better). */
static int band_tok(int band) {
    return band == 0 ? 16 : 64;
}

static int ksub_of(int tok) {
    return tok <= 32 ? 2 : 1;
}

int jit__wgmma_decode_candidates(jit__plan_t *p, const int64_t *ms, int n_ms,
                                 double t[][JIT_WGMMA_BAND_SAMPLES]) {
    static const int k_bw[] = {128, 256};
    static const int k_split[] = {1, 2, 3, 6, 12, 23};
    if (p->token_band > 1 || p->spec.k % 16 != 0)
        return 0;
    int tok = band_tok(p->token_band), ksub = ksub_of(tok), added = 0;
    int k_blocks = (int)((p->spec.k + BK - 1) / BK);
    for (size_t b = 0; b < sizeof(k_bw) / sizeof(k_bw[0]); b++) {
        int bw = k_bw[b];
        /* Two m64 waves of 64 tokens need more accumulator registers than a warpgroup has. */
        if (bw == 256 && tok > 16)
            continue;
        int stages = 6;
        for (size_t s = 0; s < sizeof(k_split) / sizeof(k_split[0]); s++) {
            int split = k_split[s];
            if (split > k_blocks || p->n_candidates >= JIT_PLAN_MAX_CANDIDATES)
                continue;
            while (stages >= 2 &&
                   jit__wgmma_decode_smem_bytes(bw, tok, stages, ksub, split) > SMEM_LIMIT)
                stages--;
            if (stages < 3)
                continue;
            char route[24];
            snprintf(route, sizeof(route), "wgmma_decode_s%d", split);
            for (int j = 0; j < n_ms; j++)
                t[p->n_candidates][j] = decode_us(p, bw, tok, split, ms[j]);
            jit__plan_add_candidate(p, route, tok, bw, stages,
                                    decode_us(p, bw, tok, split, p->model_m));
            added++;
        }
    }
    return added;
}

int jit__wgmma_decode_apply(jit__plan_t *p, const jit__plan_candidate_t *c) {
    int split = 0;
    if (sscanf(c->route, "wgmma_decode_s%d", &split) != 1 || split < 1)
        return 0;
    jit__wgmma_plan_t *wp = jit__wgmma_of(p);
    wp->route = JIT_WGMMA_DECODE;
    wp->bm = c->tile_m;
    wp->bn = c->tile_n;
    wp->stages = c->stages;
    wp->split = split;
    wp->ksub = ksub_of(c->tile_m);
    wp->promote = 1;
    wp->cluster = 1;
    p->smem_bytes = jit__wgmma_decode_smem_bytes(wp->bn, wp->bm, wp->stages, wp->ksub, split);
    return 1;
}

/* ---- the parameter block ------------------------------------------------------------------- */

void jit__wgmma_decode_params(const jit__launch_args_t *a, const jit__wgmma_tmap_t *x,
                              const jit__wgmma_tmap_t *w, CUdeviceptr workspace,
                              CUdeviceptr counters, jit__wgmma_decode_params_t *out) {
    memset(out, 0, sizeof(*out));
    out->tmap_x = *x;
    out->tmap_w = *w;
    out->sa = (const float *)a->operands->scale_a;
    out->sb = (const float *)a->operands->scale_b;
    out->residual = (const uint16_t *)a->operands->residual;
    out->d = (uint16_t *)a->operands->d;
    out->workspace = (float *)(uintptr_t)workspace;
    out->counters = (uint32_t *)(uintptr_t)counters;
    out->m = a->problem->m;
    out->ldd = a->ldd;
    out->ldr = a->ldr;
    out->alpha = a->problem->alpha;
}
