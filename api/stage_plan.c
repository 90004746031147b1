/*
 * The plan stage: problem -> spec, token band and plan, through the family registry
 * (jit__plan_make), for the context's arch and SM count; and whether the plan's kernels may be
 * launched. Needs no toolchain and no GPU.
 */
#include <stdlib.h>
#include <string.h>

#include "family.h"
#include "pipeline.h"

jit_status_t jit__ctx_plan(jit_context_t *ctx, const jit_problem_t *p, jit__plan_t *plan,
                           jit__diag_t *d) {
    if (!ctx->arch)
        return jit__fail(d, JIT_NO_GPU,
                         "no arch given and no GPU to detect it from: set an arch (e.g. "
                         "--arch sm_90a, or jit_context_options_t.arch)");
    jit__gemm_spec_t spec;
    jit_status_t st = jit__spec_from_problem(p, &spec, d);
    if (st != JIT_OK)
        return st;
    if (p->m <= 0)
        return jit__fail(d, JIT_INVALID_SHAPE, "m=%lld must be at least 1", (long long)p->m);
    int64_t band_m = jit__problem_band_m(p);
    if (band_m <= 0)
        return jit__fail(d, JIT_INVALID_SHAPE, "expected_m=%lld must be at least 1 (0: m / groups)",
                         (long long)band_m);
    return jit__plan_make(&spec, jit__token_band(band_m), ctx->sm_count, ctx->arch, plan, d);
}

jit_status_t jit__check_launch_opt_in(const jit__plan_t *plan, jit__diag_t *d) {
    const char *var = plan->family->launch_opt_in;
    if (!var)
        return JIT_OK;
    const char *v = getenv(var);
    if (v && strcmp(v, "1") == 0)
        return JIT_OK;
    return jit__fail(d, JIT_UNSUPPORTED_ARCH,
                     "%s %s kernels are generated and compiled but have never been run "
                     "on hardware; set %s=1 to launch them anyway (and check the results)",
                     plan->arch->name, plan->family->name, var);
}
