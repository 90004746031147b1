/*
 * jit_gemm: validate, find the kernel (the hot path: no I/O, no allocation, no lock), launch.
 * Every check on the caller's input happens before anything is compiled or launched.
 */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "driver.h"
#include "family.h"
#include "kernel_table.h"
#include "pipeline.h"

static int aligned(const void *p, uintptr_t a) {
    return ((uintptr_t)p & (a - 1)) == 0;
}

/* Resolved strides: 0 in the problem means packed. */
typedef struct strides {
    int64_t lda, ldb, ldd, ldr;
    int64_t sfa_m, sfa_k; /* 128x128: SFA's element (m, kb) at m * sfa_m + kb * sfa_k */
} strides_t;

/* The 128x128 mode's SFA layout and leading dimension; the other modes leave both 0. */
static jit_status_t sfa_strides(const jit_problem_t *p, strides_t *s, jit__diag_t *d) {
    if (p->scale_mode != JIT_SCALE_BLOCK_1X128_128X128) {
        if (p->sfa_layout != JIT_SFA_K_MAJOR || p->ld_sfa != 0)
            return jit__fail(d, JIT_INVALID_ARGUMENT,
                             "sfa_layout and ld_sfa describe 128x128 scales only (scales are %s; "
                             "sfa_layout=%d, ld_sfa=%lld)",
                             jit_scale_mode_name(p->scale_mode), (int)p->sfa_layout,
                             (long long)p->ld_sfa);
        return JIT_OK;
    }
    if (p->ld_sfa < 0 || p->ld_sfa > INT32_MAX)
        return jit__fail(d, JIT_INVALID_ARGUMENT, "ld_sfa=%lld must be in [0, 2^31)",
                         (long long)p->ld_sfa);
    const int64_t kblocks = (p->k + 127) / 128;
    if (p->sfa_layout == JIT_SFA_K_MAJOR) {
        s->sfa_m = p->ld_sfa ? p->ld_sfa : kblocks;
        s->sfa_k = 1;
        if (s->sfa_m < kblocks)
            return jit__fail(d, JIT_INVALID_ARGUMENT,
                             "k-major SFA holds ceil(K/128) = %lld scales per row: ld_sfa=%lld is "
                             "smaller",
                             (long long)kblocks, (long long)p->ld_sfa);
    } else if (p->sfa_layout == JIT_SFA_M_MAJOR) {
        s->sfa_m = 1;
        s->sfa_k = p->ld_sfa ? p->ld_sfa : p->m;
        if (s->sfa_k < p->m)
            return jit__fail(d, JIT_INVALID_ARGUMENT,
                             "m-major SFA holds M = %lld scales per 128-K group: ld_sfa=%lld is "
                             "smaller",
                             (long long)p->m, (long long)p->ld_sfa);
    } else {
        return jit__fail(d, JIT_INVALID_ARGUMENT,
                         "sfa_layout %d is neither JIT_SFA_K_MAJOR nor JIT_SFA_M_MAJOR",
                         (int)p->sfa_layout);
    }
    return JIT_OK;
}

static jit_status_t validate(const jit_problem_t *p, const jit_operands_t *o, strides_t *s,
                             jit__diag_t *d) {
    if (!p || !o)
        return jit__fail(d, JIT_INVALID_ARGUMENT, "problem or operands is NULL");
    /* jit_gemm works on full-size copies (full_size below), so these are the full sizes. */
    if (p->struct_size < sizeof(jit_problem_t))
        return jit__fail(d, JIT_INVALID_ARGUMENT,
                         "problem.struct_size is %u: call jit_problem_init first", p->struct_size);
    if (o->struct_size < sizeof(jit_operands_t))
        return jit__fail(d, JIT_INVALID_ARGUMENT,
                         "operands.struct_size is %u: call jit_operands_init first",
                         o->struct_size);
    if (p->epilogue == JIT_EPILOGUE_QUANTIZE_FP8_1X128)
        return jit__fail(d, JIT_INVALID_ARGUMENT,
                         "quantize_fp8_1x128 is not a GEMM: call jit_quantize_fp8_1x128");
    if (p->groups != 0 || p->layout != JIT_GROUPS_NONE)
        return jit__fail(d, JIT_INVALID_ARGUMENT,
                         "problem.groups=%lld: a grouped problem goes to jit_gemm_grouped",
                         (long long)p->groups);
    if (p->m <= 0 || p->n <= 0 || p->k <= 0)
        return jit__fail(d, JIT_INVALID_SHAPE, "m=%lld, n=%lld and k=%lld must be positive",
                         (long long)p->m, (long long)p->n, (long long)p->k);
    if (p->m > INT32_MAX || p->n > INT32_MAX || p->k > INT32_MAX)
        return jit__fail(d, JIT_INVALID_SHAPE, "m, n and k must be below 2^31");
    int64_t nout = p->epilogue == JIT_EPILOGUE_LINEAR_SWIGLU ? p->n / 2 : p->n;
    int fp4_a = p->a_dtype == JIT_DTYPE_E2M1, fp4_b = p->b_dtype == JIT_DTYPE_E2M1;
    s->lda = p->lda ? p->lda : p->k;
    s->ldb = p->ldb ? p->ldb : p->k;
    s->ldd = p->ldd ? p->ldd : nout;
    s->ldr = p->ld_residual ? p->ld_residual : p->n;
    if (s->lda < p->k || s->ldb < p->k || s->ldd < nout ||
        (p->epilogue == JIT_EPILOGUE_LINEAR_ADD && s->ldr < p->n))
        return jit__fail(d, JIT_INVALID_ARGUMENT,
                         "a stride is smaller than its row (lda=%lld ldb=%lld ldd=%lld "
                         "ld_residual=%lld for k=%lld, n=%lld)",
                         (long long)s->lda, (long long)s->ldb, (long long)s->ldd, (long long)s->ldr,
                         (long long)p->k, (long long)p->n);
    /* Row strides in bytes must be multiples of 16: cp.async and TMA move 16-byte pieces. */
    int64_t lda_bytes = fp4_a ? s->lda / 2 : s->lda, ldb_bytes = fp4_b ? s->ldb / 2 : s->ldb;
    if (lda_bytes % 16 || ldb_bytes % 16)
        return jit__fail(d, JIT_MISALIGNED,
                         "row strides of A and B must be multiples of 16 bytes (lda=%lld, "
                         "ldb=%lld elements)",
                         (long long)s->lda, (long long)s->ldb);
    if (!o->a || !o->b || !o->d || !o->scale_a || !o->scale_b)
        return jit__fail(d, JIT_INVALID_ARGUMENT, "operand pointer %s is NULL",
                         !o->a         ? "a"
                         : !o->b       ? "b"
                         : !o->d       ? "d"
                         : !o->scale_a ? "scale_a"
                                       : "scale_b");
    if (p->epilogue == JIT_EPILOGUE_LINEAR_ADD && !o->residual)
        return jit__fail(d, JIT_INVALID_ARGUMENT, "linear_add needs operands.residual");
    if (!aligned(o->a, 16) || !aligned(o->b, 16))
        return jit__fail(d, JIT_MISALIGNED, "a and b must be 16-byte aligned");
    if (!aligned(o->d, 4) || (o->residual && !aligned(o->residual, 4)) || !aligned(o->scale_a, 4) ||
        !aligned(o->scale_b, 4))
        return jit__fail(d, JIT_MISALIGNED, "d, residual and the scales must be 4-byte aligned");
    /* The 8-bit block-scaled operands go through TMA, which needs 16-byte aligned base
     * addresses. (128x128 scales are read by the threads, 4 bytes at a time.) */
    if (p->scale_mode != JIT_SCALE_ROW && p->scale_mode != JIT_SCALE_BLOCK_1X128_128X128 &&
        (!aligned(o->scale_a, 16) || !aligned(o->scale_b, 16) || !aligned(o->d, 16)))
        return jit__fail(d, JIT_MISALIGNED,
                         "block-scaled problems need 16-byte aligned scales and d (TMA)");
    return sfa_strides(p, s, d);
}

jit_status_t jit__ctx_launch(jit_context_t *ctx, const jit_problem_t *problem,
                             const jit_operands_t *operands, const int64_t ld[6], void *stream,
                             jit__diag_t *d) {
    const jit__driver_t *drv;
    jit_status_t st = jit__driver_get(&drv, d);
    if (st != JIT_OK)
        return st;
    CUcontext cuctx = NULL;
    CUdevice dev;
    if (drv->cuCtxGetCurrent(&cuctx) != CUDA_SUCCESS || !cuctx) {
        if ((st = jit__driver_current_context(drv, &cuctx, &dev, d)) != JIT_OK)
            return st;
    }
    const jit__kernel_t *k = jit__ctx_lookup(ctx, problem, cuctx);
    if (!k && (st = jit__ctx_kernel(ctx, problem, cuctx, &k, d)) != JIT_OK)
        return st;
    jit__launch_args_t args = {problem, operands, ld[0], ld[1], ld[2], ld[3], (CUstream)stream,
                               ld[4], ld[5]};
    return k->plan.family->launch(drv, k->function, &k->plan, k->launch_state, &args, d);
}

/* A caller built against an older header passes shorter structs: the fields it has, and the
 * defaults (zero: not grouped) for the rest, in `full`. NULL and too-short structs are left to
 * validate(). */
static const void *full_size(const void *in, size_t min_size, void *full, size_t size) {
    if (!in || *(const uint32_t *)in >= size || *(const uint32_t *)in < min_size)
        return in;
    memset(full, 0, size);
    memcpy(full, in, *(const uint32_t *)in);
    *(uint32_t *)full = (uint32_t)size;
    return full;
}

jit_status_t jit_gemm(jit_context_t *ctx, const jit_problem_t *problem,
                      const jit_operands_t *operands, void *stream) {
    jit__diag_t d;
    /* Only the status is read on success, so the full init (1 KiB memset) is left for the
     * failure paths. */
    d.status = JIT_OK;
    d.msg[0] = '\0';
    d.log = NULL;
    if (!ctx) {
        jit__fail(&d, JIT_INVALID_ARGUMENT, "jit_gemm: context is NULL");
        return jit__ctx_error(NULL, &d);
    }
    jit_problem_t p_full;
    jit_operands_t o_full;
    problem = full_size(problem, offsetof(jit_problem_t, groups), &p_full, sizeof(p_full));
    operands =
        full_size(operands, offsetof(jit_operands_t, group_offsets), &o_full, sizeof(o_full));
    strides_t s = {0, 0, 0, 0, 0, 0};
    if (validate(problem, operands, &s, &d) != JIT_OK)
        return jit__ctx_error(ctx, &d);
    const int64_t ld[6] = {s.lda, s.ldb, s.ldd, s.ldr, s.sfa_m, s.sfa_k};
    if (jit__ctx_launch(ctx, problem, operands, ld, stream, &d) != JIT_OK)
        return jit__ctx_error(ctx, &d);
    return JIT_OK;
}
