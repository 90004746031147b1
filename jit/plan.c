/*
 * The planner. jit__plan_make validates the spec against the arch, then hands block-scaled
 * specs to the tcgen05 planner (jit/plan_tc.c) and row-scaled FP8 specs to the mma.sync table
 * below. Pure functions only: the same inputs give the same plan on every machine.
 */
#include "plan.h"

#include <jansson.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

static const int64_t k_band_hi[JIT_TOKEN_BANDS] = {16, 64, 256, 1024, INT64_MAX};

int jit__token_band(int64_t m) {
    for (int b = 0; b < JIT_TOKEN_BANDS; b++)
        if (m <= k_band_hi[b])
            return b;
    return JIT_TOKEN_BANDS - 1;
}

void jit__token_band_range(int band, int64_t *lo, int64_t *hi) {
    if (band < 0)
        band = 0;
    if (band >= JIT_TOKEN_BANDS)
        band = JIT_TOKEN_BANDS - 1;
    *lo = band == 0 ? 1 : k_band_hi[band - 1] + 1;
    *hi = k_band_hi[band];
}

int64_t jit__spec_out_cols(const jit__gemm_spec_t *spec) {
    return spec->epilogue == JIT_EPILOGUE_LINEAR_SWIGLU ? spec->n / 2 : spec->n;
}

jit_status_t jit__spec_from_problem(const jit_problem_t *p, jit__gemm_spec_t *out,
                                    jit__diag_t *d) {
    memset(out, 0, sizeof(*out));
    if (!p)
        return jit__fail(d, JIT_INVALID_ARGUMENT, "problem is NULL");
    if (p->struct_size < sizeof(jit_problem_t))
        return jit__fail(d, JIT_INVALID_ARGUMENT,
                         "problem.struct_size is %u, expected %zu: call jit_problem_init first",
                         p->struct_size, sizeof(jit_problem_t));
    out->n = p->n;
    out->k = p->k;
    out->a = p->a_dtype;
    out->b = p->b_dtype;
    out->out = p->out_dtype;
    out->scales = p->scale_mode;
    out->epilogue = p->epilogue;
    return JIT_OK;
}

/* ---- the mma.sync route ---------------------------------------------------------------- */

typedef struct mma_sync_tile {
    int tile_m, tile_n, warps_m, warps_n, stages;
} mma_sync_tile_t;

/* One row per token band. Small bands use short, narrow tiles so that decode-sized M still
 * spreads over many CTAs; the middle bands are the second source document's baseline (64
 * tokens x 128 rows, warp tile 32x32, two stages of K=128, eight warps). */
static const mma_sync_tile_t k_mma_sync_tiles[JIT_TOKEN_BANDS] = {
    {16, 64, 1, 4, 4},
    {32, 128, 1, 4, 3},
    {64, 128, 2, 4, 2},
    {64, 128, 2, 4, 2},
    {128, 128, 2, 4, 2},
};

static jit_status_t plan_mma_sync(const jit__gemm_spec_t *s, int band, jit__plan_t *p,
                                  jit__diag_t *d) {
    if (s->a != JIT_DTYPE_E4M3 || s->b != JIT_DTYPE_E4M3)
        return jit__fail(d, JIT_UNSUPPORTED,
                         "row scales need e4m3 x e4m3 operands (got %s x %s)",
                         jit_dtype_name(s->a), jit_dtype_name(s->b));
    if (s->out != JIT_DTYPE_BF16)
        return jit__fail(d, JIT_UNSUPPORTED, "row-scaled FP8 writes bf16 output (got %s)",
                         jit_dtype_name(s->out));
    const mma_sync_tile_t *t = &k_mma_sync_tiles[band];
    p->route = JIT_ROUTE_MMA_SYNC;
    p->tile_m = t->tile_m;
    p->tile_n = t->tile_n;
    p->tile_k = 128;
    p->stages = t->stages;
    p->warps_m = t->warps_m;
    p->warps_n = t->warps_n;
    p->threads = 32 * t->warps_m * t->warps_n;
    p->smem_bytes = (uint32_t)(p->stages * (p->tile_m + p->tile_n) * p->tile_k);
    p->persistent = 0;
    p->cluster_m = p->cluster_n = 1;
    if (p->smem_bytes > p->arch->smem_per_cta)
        return jit__fail(d, JIT_PLAN_FAILED, "mma.sync plan needs %u bytes of shared memory, %s "
                         "allows %u", p->smem_bytes, p->arch->name, p->arch->smem_per_cta);
    return JIT_OK;
}

static int is_block_mode(jit_scale_mode_t s) {
    return s == JIT_SCALE_UE8M0_32 || s == JIT_SCALE_UE4M3_16 || s == JIT_SCALE_UE5M3_16 ||
           s == JIT_SCALE_UE5M3_32;
}

jit_status_t jit__plan_make(const jit__gemm_spec_t *spec, int token_band, int sm_count,
                            const jit__arch_profile_t *arch, jit__plan_t *out, jit__diag_t *d) {
    memset(out, 0, sizeof(*out));
    if (!arch)
        return jit__fail(d, JIT_UNKNOWN_ARCH, "no arch profile");
    if (spec->n <= 0 || spec->k <= 0)
        return jit__fail(d, JIT_INVALID_SHAPE, "n=%lld and k=%lld must be positive",
                         (long long)spec->n, (long long)spec->k);
    if (spec->n > INT32_MAX || spec->k > INT32_MAX)
        return jit__fail(d, JIT_INVALID_SHAPE, "n=%lld or k=%lld exceeds 2^31-1",
                         (long long)spec->n, (long long)spec->k);
    if (token_band < 0 || token_band >= JIT_TOKEN_BANDS)
        return jit__fail(d, JIT_INVALID_ARGUMENT, "token band %d out of range", token_band);
    if (sm_count <= 0)
        return jit__fail(d, JIT_INVALID_ARGUMENT, "sm_count %d must be positive", sm_count);
    if (spec->epilogue < JIT_EPILOGUE_LINEAR || spec->epilogue > JIT_EPILOGUE_LINEAR_SWIGLU)
        return jit__fail(d, JIT_UNSUPPORTED, "unknown epilogue %d", (int)spec->epilogue);
    if (spec->epilogue == JIT_EPILOGUE_LINEAR_SWIGLU && spec->n % 2 != 0)
        return jit__fail(d, JIT_INVALID_SHAPE,
                         "linear_swiglu needs an even n (gate/up row pairs), got %lld",
                         (long long)spec->n);
    out->arch = arch;
    out->spec = *spec;
    out->token_band = token_band;
    out->sm_count = sm_count;
    if (spec->scales == JIT_SCALE_ROW) {
        /* 16-byte rows: cp.async moves 16 bytes, TMA needs 16-byte strides. */
        if (spec->k % 16 != 0)
            return jit__fail(d, JIT_MISALIGNED,
                             "k=%lld must be a multiple of 16 for FP8 operands",
                             (long long)spec->k);
        return plan_mma_sync(spec, token_band, out, d);
    }
    if (is_block_mode(spec->scales))
        return jit__plan_tc_make(spec, token_band, sm_count, arch, out, d);
    return jit__fail(d, JIT_UNSUPPORTED, "unknown scale mode %d", (int)spec->scales);
}

void jit__plan_grid(const jit__plan_t *plan, int64_t m, unsigned grid[3]) {
    int64_t n_tiles = (plan->spec.n + plan->tile_n - 1) / plan->tile_n;
    int64_t m_tiles = (m + plan->tile_m - 1) / plan->tile_m;
    grid[0] = (unsigned)n_tiles;
    grid[1] = (unsigned)m_tiles;
    grid[2] = 1;
}

const char *jit__plan_kernel_name(const jit__plan_t *plan) {
    return plan->route == JIT_ROUTE_TCGEN05 ? "jitgemm_tcgen05_blockscaled"
                                            : "jitgemm_fp8_mma_sync";
}

static json_t *pair(int a, int b) {
    return json_pack("[ii]", a, b);
}

char *jit__plan_to_json(const jit__plan_t *p) {
    int64_t lo, hi;
    jit__token_band_range(p->token_band, &lo, &hi);
    const jit__gemm_spec_t *s = &p->spec;
    json_t *o = json_object();
    json_object_set_new(o, "route",
                        json_string(p->route == JIT_ROUTE_TCGEN05 ? "tcgen05" : "mma_sync"));
    json_object_set_new(o, "arch", json_string(p->arch->name));
    json_object_set_new(o, "kernel", json_string(jit__plan_kernel_name(p)));
    json_object_set_new(o, "spec",
                        json_pack("{sIsIssssssssss}", "n", (json_int_t)s->n, "k",
                                  (json_int_t)s->k, "a", jit_dtype_name(s->a), "b",
                                  jit_dtype_name(s->b), "out", jit_dtype_name(s->out), "scales",
                                  jit_scale_mode_name(s->scales), "epilogue",
                                  jit_epilogue_name(s->epilogue)));
    json_object_set_new(o, "token_band",
                        json_pack("{sisIso}", "index", p->token_band, "m_min", (json_int_t)lo,
                                  "m_max", hi == INT64_MAX ? json_null() : json_integer(hi)));
    json_object_set_new(o, "sm_count", json_integer(p->sm_count));
    json_object_set_new(o, "tile",
                        json_pack("{sisisi}", "m", p->tile_m, "n", p->tile_n, "k", p->tile_k));
    json_object_set_new(o, "stages", json_integer(p->stages));
    json_object_set_new(o, "warps", json_pack("{sisi}", "m", p->warps_m, "n", p->warps_n));
    json_object_set_new(o, "threads", json_integer(p->threads));
    json_object_set_new(o, "smem_bytes", json_integer(p->smem_bytes));
    json_object_set_new(o, "persistent", json_boolean(p->persistent));
    json_object_set_new(o, "cluster",
                        json_pack("{soso}", "preferred", pair(p->cluster_m, p->cluster_n),
                                  "fallback",
                                  p->fallback_cluster_m
                                      ? pair(p->fallback_cluster_m, p->fallback_cluster_n)
                                      : json_null()));
    json_object_set_new(
        o, "grid",
        json_pack("{sIss}", "x_tiles", (json_int_t)((s->n + p->tile_n - 1) / p->tile_n),
                  "policy", p->persistent ? "persistent" : "one CTA per output tile"));
    if (p->route == JIT_ROUTE_TCGEN05)
        jit__plan_tc_to_json(p, o);
    char *text = json_dumps(o, JSON_INDENT(2) | JSON_PRESERVE_ORDER);
    json_decref(o);
    return text;
}
