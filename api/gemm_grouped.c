/*
 * jit_gemm_grouped: validate a grouped (mixture-of-experts) problem, then the same lookup and
 * launch as jit_gemm (jit__ctx_launch). The rows per expert stay on the device: nothing here
 * reads them, so the call can be captured in a CUDA graph and replayed with other counts.
 */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "family.h"
#include "pipeline.h"

static int aligned(const void *p, uintptr_t a) {
    return ((uintptr_t)p & (a - 1)) == 0;
}

/* What the grouped kernels compute: E4M3 x E4M3 with row scales into BF16, linear or SwiGLU. */
static jit_status_t check_kind(const jit_problem_t *p, jit__diag_t *d) {
    if (p->a_dtype != JIT_DTYPE_E4M3 || p->b_dtype != JIT_DTYPE_E4M3 ||
        p->out_dtype != JIT_DTYPE_BF16 || p->scale_mode != JIT_SCALE_ROW)
        return jit__fail(d, JIT_UNSUPPORTED,
                         "grouped GEMM computes e4m3 x e4m3 with row scales into bf16; got %s x "
                         "%s, %s scales, %s out",
                         jit_dtype_name(p->a_dtype), jit_dtype_name(p->b_dtype),
                         jit_scale_mode_name(p->scale_mode), jit_dtype_name(p->out_dtype));
    if (p->epilogue != JIT_EPILOGUE_LINEAR && p->epilogue != JIT_EPILOGUE_LINEAR_SWIGLU)
        return jit__fail(d, JIT_UNSUPPORTED,
                         "grouped GEMM has the epilogues linear and linear_swiglu, not %s",
                         jit_epilogue_name(p->epilogue));
    if (p->group_flags != 0)
        return jit__fail(d, JIT_INVALID_ARGUMENT,
                         "problem.group_flags=0x%x: no flag is defined yet (keep 0)",
                         (unsigned)p->group_flags);
    return JIT_OK;
}

static jit_status_t check_shape(const jit_problem_t *p, jit__diag_t *d) {
    if (p->groups < 1 || p->groups > JIT_MAX_GROUPS)
        return jit__fail(d, JIT_INVALID_SHAPE, "groups=%lld must be in 1..%d", (long long)p->groups,
                         JIT_MAX_GROUPS);
    if (p->layout != JIT_GROUPS_CONTIGUOUS && p->layout != JIT_GROUPS_MASKED)
        return jit__fail(d, JIT_INVALID_ARGUMENT,
                         "problem.layout must be JIT_GROUPS_CONTIGUOUS or JIT_GROUPS_MASKED "
                         "(got %d)",
                         (int)p->layout);
    if (p->m <= 0 || p->n <= 0 || p->k <= 0)
        return jit__fail(d, JIT_INVALID_SHAPE,
                         "m=%lld (rows of A), n=%lld and k=%lld must be positive", (long long)p->m,
                         (long long)p->n, (long long)p->k);
    if (p->m > INT32_MAX || p->k > INT32_MAX || p->n * p->groups > INT32_MAX)
        return jit__fail(d, JIT_INVALID_SHAPE, "m, k and groups x n must be below 2^31");
    if (p->layout == JIT_GROUPS_MASKED && p->m % p->groups != 0)
        return jit__fail(d, JIT_INVALID_SHAPE,
                         "masked layout: m=%lld must be groups x max_M (groups=%lld)",
                         (long long)p->m, (long long)p->groups);
    if (p->expected_m < 0)
        return jit__fail(d, JIT_INVALID_SHAPE,
                         "expected_m=%lld must not be negative (0: m / groups)",
                         (long long)p->expected_m);
    if (p->epilogue == JIT_EPILOGUE_LINEAR_SWIGLU && p->n % 2)
        return jit__fail(d, JIT_INVALID_SHAPE,
                         "linear_swiglu needs an even n (gate/up row pairs), got %lld",
                         (long long)p->n);
    return JIT_OK;
}

/* Strides (0: packed) into ld[0..3] = lda, ldb, ldd, ld_residual (unused: no linear_add). */
static jit_status_t check_strides(const jit_problem_t *p, int64_t ld[6], jit__diag_t *d) {
    const int64_t nout = p->epilogue == JIT_EPILOGUE_LINEAR_SWIGLU ? p->n / 2 : p->n;
    ld[0] = p->lda ? p->lda : p->k;
    ld[1] = p->ldb ? p->ldb : p->k;
    ld[2] = p->ldd ? p->ldd : nout;
    ld[3] = p->n;
    if (ld[0] < p->k || ld[1] < p->k || ld[2] < nout)
        return jit__fail(d, JIT_INVALID_ARGUMENT,
                         "a stride is smaller than its row (lda=%lld ldb=%lld ldd=%lld for "
                         "k=%lld, output columns %lld)",
                         (long long)ld[0], (long long)ld[1], (long long)ld[2], (long long)p->k,
                         (long long)nout);
    /* TMA reads A and B: 16-byte row strides. */
    if (ld[0] % 16 || ld[1] % 16)
        return jit__fail(d, JIT_MISALIGNED,
                         "row strides of A and B must be multiples of 16 bytes (lda=%lld, "
                         "ldb=%lld elements)",
                         (long long)ld[0], (long long)ld[1]);
    if (ld[0] > INT32_MAX || ld[1] > INT32_MAX || ld[2] > INT32_MAX)
        return jit__fail(d, JIT_INVALID_SHAPE, "lda, ldb and ldd must be below 2^31");
    return JIT_OK;
}

static jit_status_t check_operands(const jit_problem_t *p, const jit_operands_t *o,
                                   jit__diag_t *d) {
    if (!o->a || !o->b || !o->d || !o->scale_a || !o->scale_b)
        return jit__fail(d, JIT_INVALID_ARGUMENT, "operand pointer %s is NULL",
                         !o->a         ? "a"
                         : !o->b       ? "b"
                         : !o->d       ? "d"
                         : !o->scale_a ? "scale_a"
                                       : "scale_b");
    const int contiguous = p->layout == JIT_GROUPS_CONTIGUOUS;
    const int32_t *rows = contiguous ? o->group_offsets : o->group_counts;
    const int32_t *other = contiguous ? o->group_counts : o->group_offsets;
    if (!rows)
        return jit__fail(d, JIT_INVALID_ARGUMENT, "%s layout needs operands.%s (device int32 [%s])",
                         jit_group_layout_name(p->layout),
                         contiguous ? "group_offsets" : "group_counts",
                         contiguous ? "groups + 1" : "groups");
    if (other)
        return jit__fail(d, JIT_INVALID_ARGUMENT, "%s layout takes no operands.%s",
                         jit_group_layout_name(p->layout),
                         contiguous ? "group_counts" : "group_offsets");
    if (o->gather_index)
        return jit__fail(d, JIT_INVALID_ARGUMENT,
                         "operands.gather_index is reserved for a later form: keep it NULL");
    if (o->residual)
        return jit__fail(d, JIT_INVALID_ARGUMENT,
                         "grouped GEMM has no linear_add: operands.residual must be NULL");
    if (!aligned(o->a, 16) || !aligned(o->b, 16))
        return jit__fail(d, JIT_MISALIGNED, "a and b must be 16-byte aligned");
    if (!aligned(o->d, 4) || !aligned(o->scale_a, 4) || !aligned(o->scale_b, 4) ||
        !aligned(rows, 4))
        return jit__fail(d, JIT_MISALIGNED,
                         "d, the scales and the offsets or counts must be 4-byte aligned");
    return JIT_OK;
}

jit_status_t jit_gemm_grouped(jit_context_t *ctx, const jit_problem_t *problem,
                              const jit_operands_t *operands, void *stream) {
    jit__diag_t d;
    d.status = JIT_OK;
    d.msg[0] = '\0';
    d.log = NULL;
    if (!ctx) {
        jit__fail(&d, JIT_INVALID_ARGUMENT, "jit_gemm_grouped: context is NULL");
        return jit__ctx_error(NULL, &d);
    }
    jit_status_t st = JIT_OK;
    int64_t ld[6] = {0, 0, 0, 0, 0, 0};
    if (!problem || !operands)
        st = jit__fail(&d, JIT_INVALID_ARGUMENT, "problem or operands is NULL");
    else if (problem->struct_size < sizeof(jit_problem_t))
        st = jit__fail(&d, JIT_INVALID_ARGUMENT,
                       "problem.struct_size is %u, expected %zu: call jit_problem_init first",
                       problem->struct_size, sizeof(jit_problem_t));
    else if (operands->struct_size < sizeof(jit_operands_t))
        st = jit__fail(&d, JIT_INVALID_ARGUMENT,
                       "operands.struct_size is %u, expected %zu: call jit_operands_init first",
                       operands->struct_size, sizeof(jit_operands_t));
    if (st == JIT_OK)
        st = check_kind(problem, &d);
    if (st == JIT_OK)
        st = check_shape(problem, &d);
    if (st == JIT_OK)
        st = check_strides(problem, ld, &d);
    if (st == JIT_OK)
        st = check_operands(problem, operands, &d);
    if (st == JIT_OK)
        st = jit__ctx_launch(ctx, problem, operands, ld, stream, &d);
    if (st != JIT_OK)
        return jit__ctx_error(ctx, &d);
    return JIT_OK;
}
