/*
 * The block-scaled wgmma family's decode route (M <= 64): BswDecodeKernel
 * (device/decode_kernel.cuh) puts the weights on wgmma's M side and the tokens on its N side and
 * splits K so that every SM streams weights; the last CTA of a tile adds the k-splits' partials
 * in a fixed order. This file holds its sizes, its candidates for the cost model and the
 * workspace it needs.
 */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "bsw.h"

#define BK 128

uint32_t jit__bsw_decode_smem_bytes(int bw, int tok, int stages, int ksub, int split) {
    /* The ring of KSUB blocks of weights and tokens per stage, the SPLIT == 1 staging tile
     * (TOK rows of BW + 4 floats), a 16-byte flag, the barriers and the 1 KiB alignment slack:
     * the kernel's SMEM_BYTES, which the generated source asserts. */
    uint32_t ring = (uint32_t)stages * (uint32_t)ksub * (uint32_t)(bw + tok) * BK;
    uint32_t staging = split == 1 ? (uint32_t)tok * (uint32_t)(bw + 4) * 4u : 0u;
    return ring + staging + 16u + 16u * (uint32_t)stages + 1024u;
}

static int64_t tiles_of(const jit__plan_t *p, int64_t m) {
    const jit__bsw_plan_t *bp = jit__bsw_cof(p);
    return (m + bp->bm - 1) / bp->bm * ((p->spec.n + bp->bn - 1) / bp->bn);
}

size_t jit__bsw_decode_workspace_bytes(const jit__plan_t *p, int64_t m) {
    const jit__bsw_plan_t *bp = jit__bsw_cof(p);
    if (bp->route != JIT_BSW_DECODE || bp->split <= 1)
        return 0;
    return (size_t)tiles_of(p, m) * (size_t)bp->split * (size_t)bp->bm * (size_t)bp->bn *
           sizeof(float);
}

size_t jit__bsw_decode_counter_bytes(const jit__plan_t *p, int64_t m) {
    const jit__bsw_plan_t *bp = jit__bsw_cof(p);
    if (bp->route != JIT_BSW_DECODE || bp->split <= 1)
        return 0;
    return (size_t)tiles_of(p, m) * sizeof(uint32_t);
}

unsigned jit__bsw_decode_grid(const jit__plan_t *p, int64_t m) {
    return (unsigned)(tiles_of(p, m) * jit__bsw_cof(p)->split);
}

/* ---- candidates -------------------------------------------------------------------------- */

/* The row-scaled decode kernel's fit on the H200 (kernel_src/fp8_wgmma/decode.c, the sweep of
 * docs/performance.md): the weights stream from HBM at up to the first rate, one SM takes in at
 * most the second, each further round of units costs about the third, the last CTA of a tile
 * reads the split partials back at the fourth rate, and a launch with its ramp costs the fifth
 * figure; the two streaming limits meet smoothly (a power mean with the last exponent). This
 * kernel streams the same operands through the same ring; what the block scales add (SFB,
 * ceil(N/128) x ceil(K/128) floats, and SFA, M x ceil(K/128)) is counted with the weights. It
 * has not been fitted to this kernel's own timings: none exist yet. */
#define DECODE_HBM_BYTES_PER_S 4.088e12
#define DECODE_SM_BYTES_PER_S 132.1e9
#define DECODE_ROUND_US 1.582
#define DECODE_REDUCE_BYTES_PER_S 1.999e12
#define DECODE_FIXED_US 5.062
#define DECODE_LIMIT_EXPONENT 3.902

static double decode_us(const jit__plan_t *p, int bw, int tok, int split, int64_t m) {
    const double k = (double)p->spec.k, kb = (double)((p->spec.k + BK - 1) / BK);
    int64_t units = (m + tok - 1) / tok * ((p->spec.n + bw - 1) / bw) * split;
    int64_t rounds = (units + p->sm_count - 1) / p->sm_count;
    const double scale_bytes = 4.0 * kb * ((double)((p->spec.n + 127) / 128) + (double)m);
    double hbm = ((double)p->spec.n * k + scale_bytes) / DECODE_HBM_BYTES_PER_S * 1e6;
    double per_sm = (double)rounds * (double)(bw + tok) * k / split / DECODE_SM_BYTES_PER_S * 1e6;
    double reduce = split > 1 ? (double)split * (double)m * (double)p->spec.n * 4.0 * 2.0 /
                                    DECODE_REDUCE_BYTES_PER_S * 1e6
                              : 0;
    double stream = pow(pow(hbm, DECODE_LIMIT_EXPONENT) + pow(per_sm, DECODE_LIMIT_EXPONENT),
                        1.0 / DECODE_LIMIT_EXPONENT);
    return stream + reduce + DECODE_ROUND_US * (double)(rounds - 1) + DECODE_FIXED_US;
}

/* The token tile of a band: one tile holds every M of it (16 up to 16, 64 up to 64), and a
 * stage holds two 128-K blocks where the token tile is small. */
static int band_tok(int band) {
    return band == 0 ? 16 : 64;
}

static int ksub_of(int tok) {
    return tok <= 32 ? 2 : 1;
}

int jit__bsw_decode_candidates(jit__plan_t *p, const int64_t *ms, int n_ms,
                               double t[][JIT_BSW_BAND_SAMPLES]) {
    static const int k_bw[] = {128, 256};
    static const int k_split[] = {1, 2, 3, 6, 12, 23};
    if (p->token_band > 1)
        return 0;
    const int tok = band_tok(p->token_band), ksub = ksub_of(tok);
    const int k_blocks = (int)((p->spec.k + BK - 1) / BK);
    int added = 0;
    for (size_t b = 0; b < sizeof(k_bw) / sizeof(k_bw[0]); b++) {
        const int bw = k_bw[b];
        /* Two m64 waves of 64 tokens need more accumulator registers than a warpgroup has. */
        if (bw == 256 && tok > 16)
            continue;
        int stages = 6;
        for (size_t s = 0; s < sizeof(k_split) / sizeof(k_split[0]); s++) {
            const int split = k_split[s];
            if (split > k_blocks || p->n_candidates >= JIT_PLAN_MAX_CANDIDATES)
                continue;
            while (stages >= 2 &&
                   jit__bsw_decode_smem_bytes(bw, tok, stages, ksub, split) > JIT_BSW_SMEM_LIMIT)
                stages--;
            if (stages < 3)
                continue;
            char route[24];
            snprintf(route, sizeof(route), "block_decode_s%d", split);
            for (int j = 0; j < n_ms; j++)
                t[p->n_candidates][j] = decode_us(p, bw, tok, split, ms[j]);
            jit__plan_add_candidate(p, route, tok, bw, stages,
                                    decode_us(p, bw, tok, split, p->model_m));
            added++;
        }
    }
    return added;
}

int jit__bsw_decode_apply(jit__plan_t *p, const jit__plan_candidate_t *c) {
    int split = 0;
    if (sscanf(c->route, "block_decode_s%d", &split) != 1 || split < 1)
        return 0;
    jit__bsw_plan_t *bp = jit__bsw_of(p);
    bp->route = JIT_BSW_DECODE;
    bp->bm = c->tile_m; /* tokens per tile */
    bp->bn = c->tile_n; /* weight rows per tile */
    bp->stages = c->stages;
    bp->split = split;
    bp->ksub = ksub_of(c->tile_m);
    bp->cluster = 1;
    bp->store_warps = 0;
    p->smem_bytes = jit__bsw_decode_smem_bytes(bp->bn, bp->bm, bp->stages, bp->ksub, split);
    p->persistent = 0;
    return 1;
}
