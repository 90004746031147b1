/* Route dispatch for code generation. */
#include "generate.h"

jit_status_t jit__generate(const jit__plan_t *plan, const jit__key_t *key, char **source,
                           jit__diag_t *d) {
    *source = NULL;
    switch (plan->route) {
    case JIT_ROUTE_MMA_SYNC:
        return jit__gen_fp8_mma_sync(plan, key, source, d);
    case JIT_ROUTE_TCGEN05:
        return jit__gen_tcgen05(plan, key, source, d);
    default:
        return jit__fail(d, JIT_INTERNAL, "plan has no route");
    }
}
