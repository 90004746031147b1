/*
 * The block-scaled wgmma family's registry row (sm_90a): which problems it takes (E4M3 x E4M3
 * with FP32 128x128 block scales, BF16 out), its key fields, the plan's JSON, and its
 * reference (kernel_src/reference/fp8_block128.c) and tolerance (that of FP8 tensor-core
 * accumulation promoted every 128 K, as the row-scaled wgmma family's). The planner is plan.c,
 * the generator generate.c, the launch launch.c.
 */
#include <jansson.h>

#include "bsw.h"
#include "reference.h"

static jit_status_t supports(const jit__gemm_spec_t *s, const jit__arch_profile_t *arch,
                             jit__diag_t *d) {
    if (s->scales != JIT_SCALE_BLOCK_1X128_128X128)
        return JIT_UNSUPPORTED;
    if (!arch->has_wgmma || arch->sm != 90)
        return jit__fail(d, JIT_UNSUPPORTED_ARCH,
                         "128x128 block-scaled FP8 is supported on sm_90a only, not on %s yet",
                         arch->name);
    if (jit__scale_type_resolved(s->scales, s->scale_type) != JIT_SCALE_TYPE_F32)
        return jit__fail(d, JIT_UNSUPPORTED,
                         "128x128 scales stored as %s are not supported on %s yet (f32 are)",
                         jit_scale_type_name(s->scale_type), arch->name);
    if (s->a != JIT_DTYPE_E4M3 || s->b != JIT_DTYPE_E4M3)
        return jit__fail(d, JIT_UNSUPPORTED,
                         "128x128 block scales take e4m3 x e4m3 operands "
                         "(got %s x %s)",
                         jit_dtype_name(s->a), jit_dtype_name(s->b));
    if (s->out != JIT_DTYPE_BF16)
        return jit__fail(d, JIT_UNSUPPORTED, "128x128 block-scaled FP8 writes bf16 output (got %s)",
                         jit_dtype_name(s->out));
    /* TMA needs 16-byte global strides: K bytes per row. */
    if (s->k % 16 != 0)
        return jit__fail(d, JIT_MISALIGNED, "k=%lld must be a multiple of 16 for FP8 operands",
                         (long long)s->k);
    return JIT_OK;
}

static const char *route_name(const jit__bsw_plan_t *bp) {
    return bp->route == JIT_BSW_DECODE ? "decode" : "tiles";
}

static void key_fields(const jit__plan_t *p, jit__sb_t *sb) {
    const jit__bsw_plan_t *bp = jit__bsw_cof(p);
    jit__sb_printf(
        sb, " scale_type=%s route=%s regs=%d/%d",
        jit_scale_type_name(jit__scale_type_resolved(p->spec.scales, p->spec.scale_type)),
        route_name(bp), bp->producer_regs, bp->consumer_regs);
    if (bp->route == JIT_BSW_DECODE)
        jit__sb_printf(sb, " ksub=%d split=%d", bp->ksub, bp->split);
    else
        jit__sb_printf(sb, " group_m=%d store_warps=%d", bp->group_m, bp->store_warps);
}

static int plan_to_json(const jit__plan_t *p, void *json_object) {
    const jit__bsw_plan_t *bp = jit__bsw_cof(p);
    json_t *o =
        json_pack("{sssssisisis{sisi}ss}", "route", route_name(bp), "scale_type",
                  jit_scale_type_name(jit__scale_type_resolved(p->spec.scales, p->spec.scale_type)),
                  "cluster", bp->cluster, "consumer_warpgroups", 2, "producer_warpgroups", 1,
                  "setmaxnreg", "producer", bp->producer_regs, "consumer", bp->consumer_regs,
                  "scale_loads", "registers, one 128-K block ahead");
    if (o && bp->route == JIT_BSW_DECODE) {
        json_object_set_new(o, "ksub", json_integer(bp->ksub));
        json_object_set_new(o, "split", json_integer(bp->split));
    } else if (o) {
        json_object_set_new(o, "group_m", json_integer(bp->group_m));
        json_object_set_new(o, "store_warps", json_boolean(bp->store_warps));
    }
    return json_object_set_new((json_t *)json_object, "block_wgmma", o);
}

const jit__family_t jit__family_fp8_block_wgmma = {
    .name = "fp8_block_wgmma",
    .kernel_name = "jitgemm_fp8_block_wgmma",
    .supports = supports,
    .plan = jit__bsw_plan,
    .replan = jit__bsw_replan,
    .key_fields = key_fields,
    .generate = jit__gen_fp8_block_wgmma,
    .plan_to_json = plan_to_json,
    .prepare = jit__bsw_prepare,
    .launch = jit__bsw_launch,
    .release = jit__bsw_release,
    .reference = jit__ref_fp8_block128_of,
    .tolerance = jit__ref_tolerance_fp8_tensor,
};
