/*
 * The activation quantizer family (every arch): BF16 X [M, K] -> E4M3 Q [M, K] and one FP32
 * scale per 1x128 group, the A operand of the 128x128 block-scaled GEMM, for the op
 * JIT_EPILOGUE_QUANTIZE_FP8_1X128 (api/jitgemm.h, jit_quantize_fp8_1x128). A memory-bound
 * elementwise kernel: one half-warp per group, 16-byte loads, a grid-stride loop
 * (kernel_src/quant_fp8_1x128/device/kernel.cuh; docs/kernels-quantize.md). Internal prefix:
 * jit__quant_.
 */
#ifndef JIT_QUANT_FP8_1X128_H
#define JIT_QUANT_FP8_1X128_H

#include "abi.h"
#include "families.h"

/* The plan's payload: the numbers the generator writes into the kernel's plan struct. */
typedef struct jit__quant_plan {
    int groups;     /* ceil(K / 128): scales per row */
    int unroll;     /* groups each half-warp has in flight */
    int min_blocks; /* CTAs per SM the launch bounds promise, and the grid's cap per SM */
} jit__quant_plan_t;

_Static_assert(sizeof(jit__quant_plan_t) <= JIT_PLAN_PAYLOAD_BYTES, "quantizer payload");

static inline jit__quant_plan_t *jit__quant_of(jit__plan_t *plan) {
    return (jit__quant_plan_t *)(void *)plan->payload.bytes;
}
static inline const jit__quant_plan_t *jit__quant_cof(const jit__plan_t *plan) {
    return (const jit__quant_plan_t *)(const void *)plan->payload.bytes;
}

/* The plan: the same kernel shape on every arch and in every band (plan.c). */
jit_status_t jit__quant_plan(jit__plan_t *plan, jit__diag_t *d);

/* CTAs of a launch for M rows: enough for every group once, at most min_blocks per SM. */
unsigned jit__quant_grid(const jit__plan_t *plan, int64_t m);

/* The source of a plan of this family (generate.c). */
jit_status_t jit__gen_quant_fp8_1x128(const jit__plan_t *plan, const jit__key_t *key, char **source,
                                      jit__diag_t *d);

/* The launch (launch.c). Its arguments are not a GEMM's, so jit_quantize_fp8_1x128 calls it
 * directly: `a` holds the problem, X's and Q's row strides (lda, ldd), where each scale goes
 * (sfa_stride_m, _k) and the stream; `o` the pointers and the scale rounding. The family
 * table's `launch`, which jit_gemm would call, refuses (family.c). */
jit_status_t jit__quant_launch(const jit__driver_t *drv, CUfunction fn, const jit__plan_t *plan,
                               const jit__launch_args_t *a, const jit_quantize_operands_t *o,
                               jit__diag_t *d);

/* The kernel's parameter block for one call. */
void jit__quant_params(const jit__launch_args_t *a, const jit_quantize_operands_t *o,
                       jit__quant_params_t *out);

#endif
