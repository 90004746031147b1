/*
 * What every plan shares: token bands, the spec of a problem and the checks every family relies
 * on. Which family plans a spec is the registry's business (kernel_src/registry.c). Pure
 * functions only: the same inputs give the same result on every machine.
 */
#include "plan.h"

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const int64_t k_band_hi[JIT_TOKEN_BANDS] = {16, 64, 128, 256, 1024, INT64_MAX};

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

int64_t jit__token_band_model_m(int band) {
    /* About the geometric middle of each band, and 4096 for the open last one. */
    static const int64_t k_model_m[JIT_TOKEN_BANDS] = {4, 32, 96, 192, 512, 4096};
    if (band < 0)
        band = 0;
    if (band >= JIT_TOKEN_BANDS)
        band = JIT_TOKEN_BANDS - 1;
    return k_model_m[band];
}

void jit__plan_add_candidate(jit__plan_t *plan, const char *route, int tile_m, int tile_n,
                             int stages, double modelled_us) {
    if (plan->n_candidates >= JIT_PLAN_MAX_CANDIDATES)
        return;
    jit__plan_candidate_t *c = &plan->candidates[plan->n_candidates++];
    snprintf(c->route, sizeof(c->route), "%s", route);
    c->tile_m = tile_m;
    c->tile_n = tile_n;
    c->stages = stages;
    c->modelled_us = modelled_us;
}

jit_scale_type_t jit__scale_type_resolved(jit_scale_mode_t mode, jit_scale_type_t type) {
    if (mode == JIT_SCALE_BLOCK_1X128_128X128 && type == JIT_SCALE_TYPE_DEFAULT)
        return JIT_SCALE_TYPE_F32;
    return type;
}

int64_t jit__spec_out_cols(const jit__gemm_spec_t *spec) {
    return spec->epilogue == JIT_EPILOGUE_LINEAR_SWIGLU ? spec->n / 2 : spec->n;
}

jit_status_t jit__spec_from_problem(const jit_problem_t *p, jit__gemm_spec_t *out, jit__diag_t *d) {
    memset(out, 0, sizeof(*out));
    if (!p)
        return jit__fail(d, JIT_INVALID_ARGUMENT, "problem is NULL");
    /* A caller built against the header before the grouped fields has a shorter struct: it
     * describes a dense problem. */
    if (p->struct_size < offsetof(jit_problem_t, groups))
        return jit__fail(d, JIT_INVALID_ARGUMENT,
                         "problem.struct_size is %u, expected %zu: call jit_problem_init first",
                         p->struct_size, sizeof(jit_problem_t));
    if (p->epilogue == JIT_EPILOGUE_QUANTIZE_FP8_1X128) {
        /* The op fixes the quantizer's formats (api/jitgemm.h): BF16 in, E4M3 and the 128x128
         * mode's FP32 SFA out, no B (n 0), so every problem of one K names one kernel. */
        out->k = p->k;
        out->a = JIT_DTYPE_BF16;
        out->b = JIT_DTYPE_NONE;
        out->out = JIT_DTYPE_E4M3;
        out->scales = JIT_SCALE_BLOCK_1X128_128X128;
        out->epilogue = p->epilogue;
        out->scale_type = jit__scale_type_resolved(out->scales, p->scale_type);
        return JIT_OK;
    }
    out->n = p->n;
    out->k = p->k;
    out->a = p->a_dtype;
    out->b = p->b_dtype;
    out->out = p->out_dtype;
    out->scales = p->scale_mode;
    out->epilogue = p->epilogue;
    out->scale_type = jit__scale_type_resolved(p->scale_mode, p->scale_type);
    if (JIT__PROBLEM_HAS_GROUPS(p)) {
        out->groups = p->groups;
        out->layout = p->layout;
    }
    return JIT_OK;
}

int64_t jit__problem_band_m(const jit_problem_t *p) {
    if (!JIT__PROBLEM_HAS_GROUPS(p) || p->groups <= 0)
        return p->m;
    if (p->expected_m > 0)
        return p->expected_m;
    return p->m <= 0 ? p->m : (p->m + p->groups - 1) / p->groups;
}

jit_status_t jit__spec_check(const jit__gemm_spec_t *spec, int token_band, int sm_count,
                             jit__diag_t *d) {
    /* The quantizer has no B: its n is 0 (jit__spec_from_problem). */
    const int no_b = spec->epilogue == JIT_EPILOGUE_QUANTIZE_FP8_1X128 && spec->n == 0;
    if (no_b && spec->k <= 0)
        return jit__fail(d, JIT_INVALID_SHAPE, "k=%lld must be positive", (long long)spec->k);
    if ((spec->n <= 0 && !no_b) || spec->k <= 0)
        return jit__fail(d, JIT_INVALID_SHAPE, "n=%lld and k=%lld must be positive",
                         (long long)spec->n, (long long)spec->k);
    if (spec->n > INT32_MAX || spec->k > INT32_MAX)
        return jit__fail(d, JIT_INVALID_SHAPE, "n=%lld or k=%lld exceeds 2^31-1",
                         (long long)spec->n, (long long)spec->k);
    if (token_band < 0 || token_band >= JIT_TOKEN_BANDS)
        return jit__fail(d, JIT_INVALID_ARGUMENT, "token band %d out of range", token_band);
    if (sm_count <= 0)
        return jit__fail(d, JIT_INVALID_ARGUMENT, "sm_count %d must be positive", sm_count);
    if (spec->epilogue < JIT_EPILOGUE_LINEAR || spec->epilogue > JIT_EPILOGUE_QUANTIZE_FP8_1X128)
        return jit__fail(d, JIT_UNSUPPORTED, "unknown epilogue %d", (int)spec->epilogue);
    /* Only 128x128 lets the caller name the scales' element type; the other modes' words name
     * it already. */
    const jit_scale_type_t type = jit__scale_type_resolved(spec->scales, spec->scale_type);
    if (spec->scales == JIT_SCALE_BLOCK_1X128_128X128
            ? type != JIT_SCALE_TYPE_F32 && type != JIT_SCALE_TYPE_UE8M0
            : type != JIT_SCALE_TYPE_DEFAULT)
        return jit__fail(d, JIT_INVALID_ARGUMENT,
                         "scale_type %d (%s) does not go with %s scales: only 128x128 takes one "
                         "(f32 or ue8m0)",
                         (int)spec->scale_type, jit_scale_type_name(spec->scale_type),
                         jit_scale_mode_name(spec->scales));
    if (spec->epilogue == JIT_EPILOGUE_LINEAR_SWIGLU && spec->n % 2 != 0)
        return jit__fail(d, JIT_INVALID_SHAPE,
                         "linear_swiglu needs an even n (gate/up row pairs), got %lld",
                         (long long)spec->n);
    if (spec->groups < 0 || spec->groups > JIT_MAX_GROUPS)
        return jit__fail(d, JIT_INVALID_SHAPE, "groups=%lld must be in 1..%d (0: not grouped)",
                         (long long)spec->groups, JIT_MAX_GROUPS);
    int has_layout = spec->layout == JIT_GROUPS_CONTIGUOUS || spec->layout == JIT_GROUPS_MASKED;
    if (spec->groups > 0 && !has_layout)
        return jit__fail(d, JIT_INVALID_ARGUMENT,
                         "a grouped problem needs layout contiguous or masked (got %d)",
                         (int)spec->layout);
    if (spec->groups == 0 && spec->layout != JIT_GROUPS_NONE)
        return jit__fail(d, JIT_INVALID_ARGUMENT, "layout %s is set on a problem without groups",
                         jit_group_layout_name(spec->layout));
    return JIT_OK;
}
