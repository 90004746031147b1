/*
 * The grouped FP8 wgmma family's registry row: which grouped problems it takes (E4M3 x E4M3,
 * row scales, BF16 out, linear or SwiGLU, on sm_90a), its key fields and its plan's JSON. It is
 * the only family that declares `grouped`, so the registry asks it about every grouped problem
 * and no dense one. The per-expert math is the dense row-scaled GEMM's, so its reference and
 * tolerance are the wgmma family's (kernel_src/reference/fp8_grouped.c loops it over experts).
 */
#include <jansson.h>

#include "grouped.h"
#include "reference.h"

static jit_status_t supports(const jit__gemm_spec_t *s, const jit__arch_profile_t *arch,
                             jit__diag_t *d) {
    if (s->a != JIT_DTYPE_E4M3 || s->b != JIT_DTYPE_E4M3 || s->out != JIT_DTYPE_BF16 ||
        s->scales != JIT_SCALE_ROW)
        return jit__fail(d, JIT_UNSUPPORTED,
                         "grouped GEMM computes e4m3 x e4m3 with row scales into bf16; got %s x "
                         "%s, %s scales, %s out",
                         jit_dtype_name(s->a), jit_dtype_name(s->b), jit_scale_mode_name(s->scales),
                         jit_dtype_name(s->out));
    if (!arch->has_wgmma || arch->sm != 90)
        return jit__fail(d, JIT_UNSUPPORTED_ARCH,
                         "grouped GEMM has a kernel for sm_90a only, not for %s yet", arch->name);
    if (s->epilogue != JIT_EPILOGUE_LINEAR && s->epilogue != JIT_EPILOGUE_LINEAR_SWIGLU)
        return jit__fail(d, JIT_UNSUPPORTED,
                         "grouped GEMM has the epilogues linear and linear_swiglu, not %s",
                         jit_epilogue_name(s->epilogue));
    /* TMA needs 16-byte global strides: K bytes per row. */
    if (s->k % 16 != 0)
        return jit__fail(d, JIT_MISALIGNED, "k=%lld must be a multiple of 16 for FP8 operands",
                         (long long)s->k);
    if (s->groups * s->n > INT32_MAX)
        return jit__fail(d, JIT_INVALID_SHAPE, "groups x n = %lld must be below 2^31",
                         (long long)(s->groups * s->n));
    return JIT_OK;
}

static void key_fields(const jit__plan_t *p, jit__sb_t *sb) {
    const jit__grouped_plan_t *gp = jit__grouped_cof(p);
    jit__sb_printf(sb, " groups=%lld layout=%s route=%s group_m=%d regs=%d/%d",
                   (long long)p->spec.groups, jit_group_layout_name(p->spec.layout),
                   gp->route == JIT_GROUPED_SWAP ? "swap" : "tiles", gp->group_m, gp->producer_regs,
                   gp->consumer_regs);
}

static int plan_to_json(const jit__plan_t *p, void *json_object) {
    const jit__grouped_plan_t *gp = jit__grouped_cof(p);
    int64_t lo, hi;
    jit__token_band_range(p->token_band, &lo, &hi);
    json_t *o =
        json_pack("{sIsssss{sIso}sisisis{sisi}}", "groups", (json_int_t)p->spec.groups, "layout",
                  jit_group_layout_name(p->spec.layout), "route",
                  gp->route == JIT_GROUPED_SWAP ? "swap" : "tiles", "rows_per_expert", "min",
                  (json_int_t)lo, "max", hi == INT64_MAX ? json_null() : json_integer(hi),
                  "group_m", gp->group_m, "consumer_warpgroups", 2, "producer_warpgroups", 1,
                  "setmaxnreg", "producer", gp->producer_regs, "consumer", gp->consumer_regs);
    if (!o)
        return -1;
    if (gp->route == JIT_GROUPED_SWAP) {
        /* The wgmma N a tile may take: the buckets up to the token tile. */
        json_t *b = json_array();
        for (int nb = 8; nb <= gp->bm; nb *= 2)
            json_array_append_new(b, json_integer(nb));
        json_object_set_new(o, "token_tile", json_integer(gp->bm));
        json_object_set_new(o, "n_buckets", b);
    }
    return json_object_set_new((json_t *)json_object, "grouped", o);
}

const jit__family_t jit__family_fp8_grouped_wgmma = {
    .name = "fp8_grouped_wgmma",
    .kernel_name = "jitgemm_fp8_grouped_wgmma",
    .supports = supports,
    .plan = jit__grouped_plan,
    .replan = jit__grouped_replan,
    .key_fields = key_fields,
    .generate = jit__gen_fp8_grouped,
    .plan_to_json = plan_to_json,
    .prepare = jit__grouped_prepare,
    .launch = jit__grouped_launch,
    .release = jit__grouped_release,
    .reference = jit__ref_fp8_rowscaled_of,
    .tolerance = jit__ref_tolerance_fp8_tensor,
    .grouped = 1,
};
