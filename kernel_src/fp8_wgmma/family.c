/*
 * The FP8 wgmma family's registry row (sm_90a): which problems it takes, its comparison
 * switches, its key fields and plan JSON, and its reference (the row-scaled one the mma.sync
 * family shares). The planner and cost model are plan.c (decode.c for the decode route), the
 * generator generate.c and the launch launch.c.
 */
#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#include "fp8_wgmma.h"
#include "reference.h"

static jit_status_t supports(const jit__gemm_spec_t *s, const jit__arch_profile_t *arch,
                             jit__diag_t *d) {
    if (s->scales != JIT_SCALE_ROW || !arch->has_wgmma || arch->sm != 90)
        return JIT_UNSUPPORTED;
    if (s->a != JIT_DTYPE_E4M3 || s->b != JIT_DTYPE_E4M3 || s->out != JIT_DTYPE_BF16)
        return JIT_UNSUPPORTED; /* the mma.sync family words the refusal */
    /* TMA needs 16-byte global strides: K bytes per row. */
    if (s->k % 16 != 0)
        return jit__fail(d, JIT_MISALIGNED, "k=%lld must be a multiple of 16 for FP8 operands",
                         (long long)s->k);
    return JIT_OK;
}

/* The comparison switches (README's environment table). Each reads its variable and gives
 * the form it names, the default when it is unset or empty, or -1 for a value this family does
 * not build; check_switches refuses those before anything is planned, so the getters below
 * never see -1 in a plan (they fall back to the default should one be called outside it). */
enum { DEFAULT_PROMOTE = 3, DEFAULT_GROUP_M = 8 };

static int promote_switch(void) {
    const char *e = getenv("JITGEMM_WGMMA_PROMOTE");
    if (!e || !*e || strcmp(e, "halves") == 0)
        return DEFAULT_PROMOTE;
    return strcmp(e, "whole") == 0 ? 1 : -1;
}

/* 1: the consumers store D themselves; 0: the store warps (the default). */
static int consumers_switch(void) {
    const char *e = getenv("JITGEMM_WGMMA_EPILOGUE");
    if (!e || !*e)
        return 0;
    return strcmp(e, "consumers") == 0 ? 1 : -1;
}

static int group_m_switch(void) {
    const char *e = getenv("JITGEMM_WGMMA_GROUP_M");
    if (!e || !*e)
        return DEFAULT_GROUP_M;
    char *end = NULL;
    long v = strtol(e, &end, 10);
    return (end != e && *end == '\0' && v >= 1 && v <= 64) ? (int)v : -1;
}

int jit__wgmma_store_warps(const jit__gemm_spec_t *spec) {
    return spec->epilogue != JIT_EPILOGUE_LINEAR_ADD && consumers_switch() != 1;
}

int jit__wgmma_group_m(void) {
    int v = group_m_switch();
    return v > 0 ? v : DEFAULT_GROUP_M;
}

int jit__wgmma_promote_mode(void) {
    int v = promote_switch();
    return v > 0 ? v : DEFAULT_PROMOTE;
}

static jit_status_t check_switches(jit__diag_t *d) {
    if (promote_switch() < 0)
        return jit__fail(d, JIT_INVALID_ARGUMENT,
                         "JITGEMM_WGMMA_PROMOTE=%s: expected halves (the default) or whole",
                         getenv("JITGEMM_WGMMA_PROMOTE"));
    if (consumers_switch() < 0)
        return jit__fail(d, JIT_INVALID_ARGUMENT,
                         "JITGEMM_WGMMA_EPILOGUE=%s: expected consumers (or unset, for the store "
                         "warps)",
                         getenv("JITGEMM_WGMMA_EPILOGUE"));
    if (group_m_switch() < 0)
        return jit__fail(d, JIT_INVALID_ARGUMENT,
                         "JITGEMM_WGMMA_GROUP_M=%s: expected a whole number from 1 to 64",
                         getenv("JITGEMM_WGMMA_GROUP_M"));
    return JIT_OK;
}

static void key_fields(const jit__plan_t *p, jit__sb_t *sb) {
    const jit__wgmma_plan_t *wp = jit__wgmma_cof(p);
    jit__sb_printf(sb, " route=%s promote=%d group_m=%d regs=%d/%d",
                   wp->route == JIT_WGMMA_DECODE ? "decode" : "tiles", wp->promote, wp->group_m,
                   wp->producer_regs, wp->consumer_regs);
    if (wp->route == JIT_WGMMA_DECODE)
        jit__sb_printf(sb, " ksub=%d split=%d", wp->ksub, wp->split);
    else
        jit__sb_printf(sb, " store_warps=%d", wp->store_warps);
}

static int plan_to_json(const jit__plan_t *p, void *json_object) {
    const jit__wgmma_plan_t *wp = jit__wgmma_cof(p);
    json_t *o = json_pack("{sssisisisisis{sisi}}", "route",
                          wp->route == JIT_WGMMA_DECODE ? "decode" : "tiles", "promote",
                          wp->promote, "cluster", wp->cluster, "group_m", wp->group_m,
                          "consumer_warpgroups", 2, "producer_warpgroups", 1, "setmaxnreg",
                          "producer", wp->producer_regs, "consumer", wp->consumer_regs);
    if (o && wp->route == JIT_WGMMA_DECODE) {
        json_object_set_new(o, "ksub", json_integer(wp->ksub));
        json_object_set_new(o, "split", json_integer(wp->split));
    } else if (o) {
        json_object_set_new(o, "store_warps", json_boolean(wp->store_warps));
    }
    return json_object_set_new((json_t *)json_object, "wgmma", o);
}

const jit__family_t jit__family_fp8_wgmma = {
    .name = "fp8_wgmma",
    .kernel_name = "jitgemm_fp8_wgmma",
    .supports = supports,
    .check_switches = check_switches,
    .plan = jit__wgmma_plan,
    .replan = jit__wgmma_replan,
    .key_fields = key_fields,
    .generate = jit__gen_fp8_wgmma,
    .plan_to_json = plan_to_json,
    .prepare = jit__wgmma_prepare,
    .launch = jit__wgmma_launch,
    .release = jit__wgmma_release,
    .reference = jit__ref_fp8_rowscaled_of,
    .tolerance = jit__ref_tolerance_fp8_tensor,
};
