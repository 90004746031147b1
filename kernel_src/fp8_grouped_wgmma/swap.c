/*
 * The grouped family's swap-AB route (few rows per expert, decode): its shared memory, its
 * candidates for the cost model and how a candidate becomes the plan. The kernel is
 * device/swap_kernel.cuh: weights on wgmma's M side, a token tile of up to TOK rows of one
 * expert on its N side, with the N bucket (8, 16, 32 or 64) chosen per tile at run time from
 * the tile's real token count.
 */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "grouped.h"

#define BK 128
#define BW 128
#define MAX_STAGES 8

uint32_t jit__grouped_swap_smem_bytes(int tok, int stages, int64_t groups) {
    uint32_t ring = (uint32_t)stages * (uint32_t)(tok + BW) * BK;
    uint32_t staging = (uint32_t)tok * (BW + 4u) * 4u;
    uint32_t table = ((3u * (uint32_t)groups + 1u) * 4u + 7u) / 8u * 8u;
    return ring + staging + table + 16u * (uint32_t)stages + 1024u;
}

/* The dense wgmma family's decode fit (kernel_src/fp8_wgmma/decode.c, fitted to the H200 sweep
 * of its decode cells; docs/performance.md): the weights stream from HBM at up to the first
 * rate, one SM takes in at most the second, each further round of units costs about the third,
 * a launch with its ramp the fourth; the HBM and per-SM limits meet in a power mean with the
 * last exponent. The grouped swap kernel streams weights the same way with no split of K (its
 * experts make the units), so the same rates apply; the expert table's cost is the tile
 * model's estimate (plan.c). Not yet fitted to a sweep of the grouped kernel. */
#define SWAP_HBM_BYTES_PER_S 4.088e12
#define SWAP_SM_BYTES_PER_S 132.1e9
#define SWAP_ROUND_US 1.582
#define SWAP_FIXED_US 5.062
#define SWAP_LIMIT_EXPONENT 3.902
#define SWAP_TABLE_US 1.0
#define SWAP_TABLE_US_PER_32_GROUPS 0.05

/* Every one of G experts at `rows` rows: ceil(rows / TOK) token tiles each, every one reading
 * the expert's weights once more. */
static double swap_us(const jit__plan_t *p, int tok, int64_t rows) {
    const jit__gemm_spec_t *s = &p->spec;
    double k = (double)s->k, g = (double)s->groups;
    int64_t token_tiles = (rows + tok - 1) / tok;
    int64_t units = s->groups * token_tiles * ((s->n + BW - 1) / BW);
    int64_t rounds = (units + p->sm_count - 1) / p->sm_count;
    if (rounds < 1)
        rounds = 1;
    double weights = g * (double)token_tiles * (double)s->n * k;
    double hbm = (weights + g * (double)rows * k) / SWAP_HBM_BYTES_PER_S * 1e6;
    double per_sm = (double)rounds * (double)(BW + tok) * k / SWAP_SM_BYTES_PER_S * 1e6;
    double stream = pow(pow(hbm, SWAP_LIMIT_EXPONENT) + pow(per_sm, SWAP_LIMIT_EXPONENT),
                        1.0 / SWAP_LIMIT_EXPONENT);
    double table = SWAP_TABLE_US + SWAP_TABLE_US_PER_32_GROUPS * (double)((s->groups + 31) / 32);
    return stream + SWAP_ROUND_US * (double)(rounds - 1) + SWAP_FIXED_US + table;
}

int jit__grouped_swap_candidates(jit__plan_t *p, const int64_t *rows, int n_rows, double t[][3]) {
    static const int k_tok[] = {16, 32, 64};
    if (p->token_band > 1)
        return 0;
    int added = 0;
    for (size_t i = 0; i < sizeof(k_tok) / sizeof(k_tok[0]); i++) {
        int tok = k_tok[i], stages = MAX_STAGES;
        while (stages >= 2 &&
               jit__grouped_swap_smem_bytes(tok, stages, p->spec.groups) > JIT_GROUPED_SMEM_LIMIT)
            stages--;
        if (stages < 3 || p->n_candidates >= JIT_PLAN_MAX_CANDIDATES)
            continue;
        for (int j = 0; j < n_rows; j++)
            t[p->n_candidates][j] = swap_us(p, tok, rows[j]);
        jit__plan_add_candidate(p, "grouped_swap", tok, BW, stages, swap_us(p, tok, p->model_m));
        added++;
    }
    return added;
}

int jit__grouped_swap_apply(jit__plan_t *p, const jit__plan_candidate_t *c) {
    if (strcmp(c->route, "grouped_swap") != 0)
        return 0;
    jit__grouped_plan_t *gp = jit__grouped_of(p);
    gp->route = JIT_GROUPED_SWAP;
    gp->bm = c->tile_m;
    gp->bn = c->tile_n;
    gp->stages = c->stages;
    p->smem_bytes = jit__grouped_swap_smem_bytes(gp->bm, gp->stages, p->spec.groups);
    return 1;
}
