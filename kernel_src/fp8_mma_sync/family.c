/*
 * The FP8 mma.sync family's registry row: which problems it takes, its key fields and plan
 * JSON, and its reference. The planner is plan.c, the generator generate.c and the launch
 * launch.c.
 */
#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#include "fp8_mma_sync.h"
#include "reference.h"

static jit_status_t supports(const jit__gemm_spec_t *s, const jit__arch_profile_t *arch,
                             jit__diag_t *d) {
    if (s->scales != JIT_SCALE_ROW)
        return JIT_UNSUPPORTED;
    if (s->a != JIT_DTYPE_E4M3 || s->b != JIT_DTYPE_E4M3)
        return jit__fail(d, JIT_UNSUPPORTED, "row scales need e4m3 x e4m3 operands (got %s x %s)",
                         jit_dtype_name(s->a), jit_dtype_name(s->b));
    if (s->out != JIT_DTYPE_BF16)
        return jit__fail(d, JIT_UNSUPPORTED, "row-scaled FP8 writes bf16 output (got %s)",
                         jit_dtype_name(s->out));
    /* 16-byte rows: cp.async moves 16 bytes. */
    if (s->k % 16 != 0)
        return jit__fail(d, JIT_MISALIGNED, "k=%lld must be a multiple of 16 for FP8 operands",
                         (long long)s->k);
    /* On sm_90a the wgmma family takes every problem this one does and measured 3-6x faster in
     * every cell of the H200 sweep (docs/performance.md): this kernel stays there only for
     * comparison, when JITGEMM_FAMILY names it. */
    const char *only = getenv("JITGEMM_FAMILY");
    if (strcmp(arch->name, "sm_90a") == 0 && !(only && strcmp(only, "fp8_mma_sync") == 0))
        return JIT_UNSUPPORTED;
    return JIT_OK;
}

static void key_fields(const jit__plan_t *p, jit__sb_t *sb) {
    const jit__mma_sync_plan_t *mp = jit__mma_sync_cof(p);
    jit__sb_printf(sb, " warps=%dx%d", mp->warps_m, mp->warps_n);
}

static int plan_to_json(const jit__plan_t *p, void *json_object) {
    const jit__mma_sync_plan_t *mp = jit__mma_sync_cof(p);
    return json_object_set_new((json_t *)json_object, "warps",
                               json_pack("{sisi}", "m", mp->warps_m, "n", mp->warps_n));
}

const jit__family_t jit__family_fp8_mma_sync = {
    .name = "fp8_mma_sync",
    .kernel_name = "jitgemm_fp8_mma_sync",
    .supports = supports,
    .plan = jit__mma_sync_plan,
    .key_fields = key_fields,
    .generate = jit__gen_fp8_mma_sync,
    .plan_to_json = plan_to_json,
    .launch = jit__mma_sync_launch,
    .reference = jit__ref_fp8_rowscaled_of,
    .tolerance = jit__ref_tolerance,
};
