/*
 * The activation quantizer's registry row (every arch): which problems it takes (the op
 * quantize_fp8_1x128, whose spec jit__spec_from_problem fixes to BF16 -> E4M3 with FP32 1x128
 * scales), its key fields and the plan's JSON. Its reference is bit-exact, not an FP64 GEMM, so
 * it has no `reference` or `tolerance` in the GEMM's sense: tests call
 * jit__ref_quant_fp8_1x128 (kernel_src/reference/quant_fp8_1x128.c) directly. The planner is
 * plan.c, the generator generate.c, the launch launch.c.
 */
#include <jansson.h>

#include "quant.h"

static jit_status_t supports(const jit__gemm_spec_t *s, const jit__arch_profile_t *arch,
                             jit__diag_t *d) {
    (void)arch; /* every profile is sm_90 or later, where cvt to e4m3x2 exists (sm_89+) */
    if (s->epilogue != JIT_EPILOGUE_QUANTIZE_FP8_1X128)
        return JIT_UNSUPPORTED;
    if (s->scale_type != JIT_SCALE_TYPE_F32)
        return jit__fail(d, JIT_UNSUPPORTED,
                         "quantize_fp8_1x128 writes f32 scales, not %s (pow2_scales rounds them "
                         "to powers of two)",
                         jit_scale_type_name(s->scale_type));
    /* Q's rows are the block-scaled GEMM's A rows, which TMA reads in 16-byte strides. */
    if (s->k % 16 != 0)
        return jit__fail(d, JIT_MISALIGNED,
                         "quantize_fp8_1x128: k=%lld must be a multiple of 16 (the GEMM reads Q "
                         "in 16-byte rows)",
                         (long long)s->k);
    return JIT_OK;
}

static void key_fields(const jit__plan_t *p, jit__sb_t *sb) {
    const jit__quant_plan_t *qp = jit__quant_cof(p);
    jit__sb_printf(sb, " scale_type=%s unroll=%d min_blocks=%d",
                   jit_scale_type_name(p->spec.scale_type), qp->unroll, qp->min_blocks);
}

static int plan_to_json(const jit__plan_t *p, void *json_object) {
    const jit__quant_plan_t *qp = jit__quant_cof(p);
    json_t *o = json_object;
    /* No N tiles: the grid strides over M x groups and is sized from M at launch. */
    json_t *grid =
        json_pack("{sisssi}", "x_tiles", 0, "policy", "grid-stride over the M x ceil(K/128) groups",
                  "max_ctas_per_sm", qp->min_blocks);
    json_t *q = json_pack("{sssisisisiss}", "scale_type", jit_scale_type_name(p->spec.scale_type),
                          "groups", qp->groups, "group_lanes", 16, "unroll", qp->unroll,
                          "load_bytes", 16, "scale", "amax / 448 (1 for a group of zeros)");
    if (!grid || !q) {
        json_decref(grid);
        json_decref(q);
        return -1;
    }
    json_object_set_new(o, "grid", grid);
    return json_object_set_new(o, "quantize", q);
}

/* What jit_gemm would call: the quantizer's pointers are not in a GEMM's arguments, and
 * jit_gemm refuses the op before it gets here (api/gemm.c); jit_quantize_fp8_1x128 launches
 * through jit__quant_launch. */
static jit_status_t gemm_launch(const jit__driver_t *drv, CUfunction fn, const jit__plan_t *plan,
                                void *state, const jit__launch_args_t *args, jit__diag_t *d) {
    (void)drv, (void)fn, (void)plan, (void)state, (void)args;
    return jit__fail(d, JIT_INVALID_ARGUMENT,
                     "quantize_fp8_1x128 is not a GEMM: call jit_quantize_fp8_1x128");
}

const jit__family_t jit__family_quant_fp8_1x128 = {
    .name = "quant_fp8_1x128",
    .kernel_name = "jitgemm_quant_fp8_1x128",
    .supports = supports,
    .plan = jit__quant_plan,
    .key_fields = key_fields,
    .generate = jit__gen_quant_fp8_1x128,
    .plan_to_json = plan_to_json,
    .launch = gemm_launch,
};
