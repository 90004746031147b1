/*
 * jit_quantize_fp8_1x128: validate, find the quantizer's kernel (the same hot path as jit_gemm:
 * no I/O, no allocation, no lock once it is loaded), launch. The problem is the caller's with
 * the fields the op does not read set to their defaults, so that every call of one K and band
 * finds one entry of the kernel table whatever those fields held.
 */
#include <stdint.h>
#include <string.h>

#include "context.h"
#include "driver.h"
#include "kernel_table.h"
#include "pipeline.h"
#include "quant_fp8_1x128/quant.h"

#undef jit_quantize_operands_init

void jit_quantize_operands_init_sized(jit_quantize_operands_t *o, size_t size) {
    jit_quantize_operands_t d;
    memset(&d, 0, sizeof(d));
    uint32_t n = (uint32_t)(size < sizeof(d) ? size : sizeof(d));
    d.struct_size = n;
    memcpy(o, &d, n);
}

void jit_quantize_operands_init(jit_quantize_operands_t *o) {
    jit_quantize_operands_init_sized(o, sizeof(*o));
}

static int aligned(const void *p, uintptr_t a) {
    return ((uintptr_t)p & (a - 1)) == 0;
}

/* Where each scale goes: element (m, kb) at m * args->sfa_stride_m + kb * args->sfa_stride_k,
 * by the rules of the 128x128 GEMM's SFA (api/gemm.c). */
static jit_status_t sfa_strides(const jit_problem_t *p, jit__launch_args_t *a, jit__diag_t *d) {
    if (p->ld_sfa < 0 || p->ld_sfa > INT32_MAX)
        return jit__fail(d, JIT_INVALID_ARGUMENT, "ld_sfa=%lld must be in [0, 2^31)",
                         (long long)p->ld_sfa);
    const int64_t groups = (p->k + 127) / 128;
    if (p->sfa_layout == JIT_SFA_K_MAJOR) {
        a->sfa_stride_m = p->ld_sfa ? p->ld_sfa : groups;
        a->sfa_stride_k = 1;
        if (a->sfa_stride_m < groups)
            return jit__fail(d, JIT_INVALID_ARGUMENT,
                             "k-major SFA holds ceil(K/128) = %lld scales per row: ld_sfa=%lld is "
                             "smaller",
                             (long long)groups, (long long)p->ld_sfa);
    } else if (p->sfa_layout == JIT_SFA_M_MAJOR) {
        a->sfa_stride_m = 1;
        a->sfa_stride_k = p->ld_sfa ? p->ld_sfa : p->m;
        if (a->sfa_stride_k < p->m)
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

/* The checks on the caller's input, before anything is compiled or launched; fills the strides
 * of `a` and the canonical problem `c` the kernel table is keyed by. */
static jit_status_t validate(const jit_problem_t *p, const jit_quantize_operands_t *o,
                             jit_problem_t *c, jit__launch_args_t *a, jit__diag_t *d) {
    if (!p || !o)
        return jit__fail(d, JIT_INVALID_ARGUMENT, "problem or operands is NULL");
    if (p->struct_size < sizeof(jit_problem_t))
        return jit__fail(d, JIT_INVALID_ARGUMENT,
                         "problem.struct_size is %u: call jit_problem_init first", p->struct_size);
    if (o->struct_size < sizeof(jit_quantize_operands_t))
        return jit__fail(d, JIT_INVALID_ARGUMENT,
                         "operands.struct_size is %u: call jit_quantize_operands_init first",
                         o->struct_size);
    if (p->epilogue != JIT_EPILOGUE_QUANTIZE_FP8_1X128)
        return jit__fail(d, JIT_INVALID_ARGUMENT,
                         "problem.epilogue is %s: set it to JIT_EPILOGUE_QUANTIZE_FP8_1X128",
                         jit_epilogue_name(p->epilogue));
    if (p->m <= 0 || p->k <= 0 || p->m > INT32_MAX || p->k > INT32_MAX)
        return jit__fail(d, JIT_INVALID_SHAPE, "m=%lld and k=%lld must be in [1, 2^31)",
                         (long long)p->m, (long long)p->k);
    if (p->k % 16 != 0)
        return jit__fail(d, JIT_MISALIGNED,
                         "k=%lld must be a multiple of 16 (the GEMM reads Q in 16-byte rows)",
                         (long long)p->k);
    a->lda = p->lda ? p->lda : p->k;
    a->ldd = p->ldd ? p->ldd : p->k;
    if (a->lda < p->k || a->ldd < p->k || a->lda > INT32_MAX || a->ldd > INT32_MAX)
        return jit__fail(d, JIT_INVALID_ARGUMENT,
                         "lda=%lld (X) and ldd=%lld (Q) must be in [k, 2^31) for k=%lld",
                         (long long)a->lda, (long long)a->ldd, (long long)p->k);
    /* 16-byte loads of X and rows of Q the GEMM's TMA can read. */
    if (a->lda % 8 || a->ldd % 16)
        return jit__fail(d, JIT_MISALIGNED,
                         "row strides must be multiples of 16 bytes: lda=%lld BF16 elements (a "
                         "multiple of 8), ldd=%lld E4M3 elements (a multiple of 16)",
                         (long long)a->lda, (long long)a->ldd);
    if (!o->x || !o->q || !o->scales)
        return jit__fail(d, JIT_INVALID_ARGUMENT, "operand pointer %s is NULL",
                         !o->x   ? "x"
                         : !o->q ? "q"
                                 : "scales");
    if (!aligned(o->x, 16) || !aligned(o->q, 16))
        return jit__fail(d, JIT_MISALIGNED, "x and q must be 16-byte aligned");
    if (!aligned(o->scales, 4))
        return jit__fail(d, JIT_MISALIGNED, "scales must be 4-byte aligned");
    if (p->scale_type != JIT_SCALE_TYPE_DEFAULT && p->scale_type != JIT_SCALE_TYPE_F32)
        return jit__fail(d, JIT_UNSUPPORTED,
                         "quantize_fp8_1x128 writes f32 scales, not %s (pow2_scales rounds them "
                         "to powers of two)",
                         jit_scale_type_name(p->scale_type));
    jit_status_t st = sfa_strides(p, a, d);
    if (st != JIT_OK)
        return st;
    /* What the op reads and nothing else: jit_problem_init's values for the rest. */
    memset(c, 0, sizeof(*c));
    c->struct_size = sizeof(*c);
    c->m = p->m;
    c->k = p->k;
    c->epilogue = JIT_EPILOGUE_QUANTIZE_FP8_1X128;
    c->lda = a->lda;
    c->ldd = a->ldd;
    c->sfa_layout = p->sfa_layout;
    c->ld_sfa = p->ld_sfa;
    c->scale_type = JIT_SCALE_TYPE_F32;
    c->alpha = 1.0f;
    return JIT_OK;
}

jit_status_t jit_quantize_fp8_1x128(jit_context_t *ctx, const jit_problem_t *problem,
                                    const jit_quantize_operands_t *operands, void *stream) {
    jit__diag_t d;
    /* As jit_gemm: only the status is read on success, so the full init waits for a failure. */
    d.status = JIT_OK;
    d.msg[0] = '\0';
    d.log = NULL;
    if (!ctx) {
        jit__fail(&d, JIT_INVALID_ARGUMENT, "jit_quantize_fp8_1x128: context is NULL");
        return jit__ctx_error(NULL, &d);
    }
    jit_problem_t c;
    jit__launch_args_t args;
    memset(&args, 0, sizeof(args));
    if (validate(problem, operands, &c, &args, &d) != JIT_OK)
        return jit__ctx_error(ctx, &d);
    const jit__driver_t *drv;
    if (jit__driver_get(&drv, &d) != JIT_OK)
        return jit__ctx_error(ctx, &d);
    CUcontext cuctx = NULL;
    CUdevice dev;
    if (drv->cuCtxGetCurrent(&cuctx) != CUDA_SUCCESS || !cuctx) {
        if (jit__driver_current_context(drv, &cuctx, &dev, &d) != JIT_OK)
            return jit__ctx_error(ctx, &d);
    }
    const jit__kernel_t *k = jit__ctx_lookup(ctx, &c, cuctx);
    if (!k && jit__ctx_kernel(ctx, &c, cuctx, &k, &d) != JIT_OK)
        return jit__ctx_error(ctx, &d);
    /* A family registered at run time could claim the op; only this one launches it. */
    if (k->plan.family != &jit__family_quant_fp8_1x128) {
        jit__fail(&d, JIT_INTERNAL, "quantize_fp8_1x128 was planned by family %s",
                  k->plan.family->name);
        return jit__ctx_error(ctx, &d);
    }
    args.problem = &c;
    args.stream = (CUstream)stream;
    if (jit__quant_launch(drv, k->function, &k->plan, &args, operands, &d) != JIT_OK)
        return jit__ctx_error(ctx, &d);
    return JIT_OK;
}
