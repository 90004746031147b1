/*
 * Code generation: plan + key -> CUDA C with inline PTX, self-contained (no CUTLASS, CuTe or
 * CCCL includes, so NVRTC stays fast), deterministic (same plan and key, byte-identical text)
 * and readable (indented, a header comment with the key and the plan, one function per role).
 */
#ifndef JIT_GENERATE_H
#define JIT_GENERATE_H

#include "diag.h"
#include "key.h"
#include "plan.h"

/* Generate the source for `plan`; `key` is quoted in the header comment. *source malloc'd. */
jit_status_t jit__generate(const jit__plan_t *plan, const jit__key_t *key, char **source,
                           jit__diag_t *d);

/* Per-route generators, called by jit__generate. */
jit_status_t jit__gen_fp8_mma_sync(const jit__plan_t *plan, const jit__key_t *key, char **source,
                                   jit__diag_t *d);
jit_status_t jit__gen_tcgen05(const jit__plan_t *plan, const jit__key_t *key, char **source,
                              jit__diag_t *d);

#endif
