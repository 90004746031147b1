/*
 * The tcgen05 block-scaled family's registry row (sm_100a, sm_103a, sm_107a): which problems it
 * takes, its key fields and its reference; the planner is plan.c, the plan's JSON plan_json.c,
 * the generator generate.c and the launch launch.c. Its kernels are generated, compiled and
 * checked statically only: no Blackwell or Rubin GPU was available to run them, so launching one
 * needs the user's explicit opt-in (launch_opt_in below).
 */
#include "generate.h"
#include "launch.h"
#include "reference.h"
#include "tcgen05.h"

static int is_block_mode(jit_scale_mode_t s) {
    return s == JIT_SCALE_UE8M0_32 || s == JIT_SCALE_UE4M3_16 || s == JIT_SCALE_UE5M3_16 ||
           s == JIT_SCALE_UE5M3_32;
}

static jit_status_t supports(const jit__gemm_spec_t *s, const jit__arch_profile_t *arch,
                             jit__diag_t *d) {
    if (!is_block_mode(s->scales))
        return JIT_UNSUPPORTED;
    if (!arch->has_tcgen05)
        return jit__fail(d, JIT_UNSUPPORTED_ARCH, "block-scaled %s is not supported on %s yet",
                         jit__tc_format_name(s->a, s->b, s->scales), arch->name);
    return JIT_OK;
}

static jit_status_t plan(jit__plan_t *p, jit__diag_t *d) {
    jit__gemm_spec_t spec = p->spec;
    return jit__plan_tc_make(&spec, p->token_band, p->sm_count, p->arch, p, d);
}

/* Everything the tcgen05 plan decides follows from the common key fields. */
static void key_fields(const jit__plan_t *p, jit__sb_t *sb) {
    (void)p;
    (void)sb;
}

static void reference(const jit__gemm_spec_t *spec, const jit__ref_inputs_t *in, double *out,
                      double *mag) {
    jit__ref_blockscaled(spec, in->m, in->a, in->lda_bytes, in->b, in->ldb_bytes,
                         (const uint8_t *)in->scale_a, (const uint8_t *)in->scale_b, in->residual,
                         in->ldr, in->alpha, out, mag);
}

const jit__family_t jit__family_tcgen05 = {
    .name = "tcgen05_blockscaled",
    .kernel_name = "jitgemm_tcgen05_blockscaled",
    .supports = supports,
    .plan = plan,
    .key_fields = key_fields,
    .generate = jit__gen_tcgen05,
    .plan_to_json = jit__plan_tc_to_json,
    .prepare = jit__tc_prepare,
    .launch = jit__tc_launch,
    .release = jit__tc_release,
    .reference = reference,
    .tolerance = jit__ref_tolerance,
    .launch_opt_in = "JITGEMM_ALLOW_UNVERIFIED_TCGEN05",
};
