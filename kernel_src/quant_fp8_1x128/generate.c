/*
 * Generator of the activation quantizer. The kernel is device code in
 * kernel_src/quant_fp8_1x128/device/; this file checks the plan and writes what varies per plan:
 * the header comment with the key and the plan, the include, the plan as a struct of
 * enumerators, static_asserts tying the template and the parameter block to the plan and to
 * abi.h, and the entry point.
 */
#include <stdio.h>
#include <string.h>

#include "abi_asserts.h"
#include "quant.h"
#include "strbuf.h"

static jit_status_t check_plan(const jit__plan_t *plan, jit__diag_t *d) {
    const jit__quant_plan_t *qp = jit__quant_cof(plan);
    const jit__gemm_spec_t *s = &plan->spec;
    if (plan->family != &jit__family_quant_fp8_1x128)
        return jit__fail(d, JIT_INTERNAL, "quantizer generator given a plan of family %s",
                         plan->family ? plan->family->name : "(none)");
    if (s->epilogue != JIT_EPILOGUE_QUANTIZE_FP8_1X128 || s->a != JIT_DTYPE_BF16 ||
        s->out != JIT_DTYPE_E4M3 || s->scale_type != JIT_SCALE_TYPE_F32)
        return jit__fail(d, JIT_UNSUPPORTED,
                         "the quantizer generates bf16 -> e4m3 with f32 1x128 scales only");
    if (s->k <= 0 || s->k % 16 != 0 || qp->groups != (int)((s->k + 127) / 128))
        return jit__fail(d, JIT_INVALID_SHAPE, "quantizer: k=%lld with %d groups per row",
                         (long long)s->k, qp->groups);
    if (plan->threads % 32 != 0 || plan->threads < 32 || plan->threads > 1024 || qp->unroll < 1 ||
        qp->unroll > 4 || qp->min_blocks < 1 || qp->min_blocks * plan->threads > 1536 ||
        plan->smem_bytes != 0)
        return jit__fail(d, JIT_PLAN_FAILED,
                         "quantizer: %d threads, unroll %d, %d CTAs per SM, %u bytes of shared "
                         "memory is not a shape it builds",
                         plan->threads, qp->unroll, qp->min_blocks, plan->smem_bytes);
    return JIT_OK;
}

static void emit_header(jit__sb_t *sb, const jit__plan_t *plan, const jit__key_t *key) {
    const jit__quant_plan_t *qp = jit__quant_cof(plan);
    jit__sb_append(sb,
                   "/*\n * jitgemm generated kernel: BF16 -> E4M3 activation quantizer with one "
                   "FP32 scale per 1x128\n * group (the A operand of the 128x128 block-scaled "
                   "GEMM).\n * Family quant_fp8_1x128: a half-warp per group, 16-byte loads, "
                   "amax by shuffles,\n * scale = amax / 448, q = e4m3(x / scale).\n *\n"
                   " * key:    ");
    jit__sb_append_comment_safe(sb, key ? key->text : "(none)");
    jit__sb_printf(sb, "\n * hash:   %s\n", key ? key->hash : "(none)");
    jit__sb_printf(sb, " * target: %s\n *\n * plan:\n", key ? key->target : "(none)");
    jit__sb_printf(sb, " *   arch %s, sm_count %d, token band %d\n", plan->arch->name,
                   plan->sm_count, plan->token_band);
    jit__sb_printf(sb, " *   k %lld: %d groups per row\n", (long long)plan->spec.k, qp->groups);
    jit__sb_printf(sb,
                   " *   %d threads per CTA, %d groups in flight per half-warp, grid-stride over "
                   "M x %d groups,\n *   at most %d CTAs per SM\n",
                   plan->threads, qp->unroll, qp->groups, qp->min_blocks);
    jit__sb_append(sb, " */\n\n");
}

/* The parameter block's offsets, as abi.h has them, asserted in the generated source
 * (kernel_src/abi_asserts.c says how). */
static void emit_abi_asserts(jit__sb_t *sb) {
    static const jit__abi_field_t k_fields[] = {
        {"q", offsetof(jit__quant_params_t, q)},
        {"sfa", offsetof(jit__quant_params_t, sfa)},
        {"m", offsetof(jit__quant_params_t, m)},
        {"ldx", offsetof(jit__quant_params_t, ldx)},
        {"ldq", offsetof(jit__quant_params_t, ldq)},
        {"sfa_stride_m", offsetof(jit__quant_params_t, sfa_stride_m)},
        {"sfa_stride_k", offsetof(jit__quant_params_t, sfa_stride_k)},
        {"pow2_scales", offsetof(jit__quant_params_t, pow2_scales)},
    };
    jit__emit_abi_asserts(sb, "QuantParams", k_fields, sizeof(k_fields) / sizeof(k_fields[0]),
                          sizeof(jit__quant_params_t));
}

jit_status_t jit__gen_quant_fp8_1x128(const jit__plan_t *plan, const jit__key_t *key, char **source,
                                      jit__diag_t *d) {
    *source = NULL;
    jit_status_t st = check_plan(plan, d);
    if (st != JIT_OK)
        return st;
    const jit__quant_plan_t *qp = jit__quant_cof(plan);
    jit__sb_t sb;
    jit__sb_init(&sb);
    emit_header(&sb, plan, key);
    jit__sb_append(&sb, "#include \"quant_fp8_1x128/device/kernel.cuh\"\n\n");
    jit__sb_printf(&sb,
                   "struct Plan {\n"
                   "    enum : int { K = %lld, THREADS = %d, UNROLL = %d, MIN_BLOCKS = %d };\n"
                   "};\n"
                   "typedef QuantKernel<Plan> Kernel;\n",
                   (long long)plan->spec.k, plan->threads, qp->unroll, qp->min_blocks);
    jit__sb_printf(&sb, "static_assert(Kernel::GROUPS == %d, \"the plan's groups per row\");\n",
                   qp->groups);
    emit_abi_asserts(&sb);
    jit__sb_printf(&sb,
                   "\nextern \"C\" __global__ void __launch_bounds__(Plan::THREADS, "
                   "Plan::MIN_BLOCKS)\n"
                   "%s(const QuantParams p) {\n"
                   "    Kernel::run(p);\n"
                   "}\n",
                   plan->family->kernel_name);
    if (jit__sb_failed(&sb)) {
        jit__sb_free(&sb);
        return jit__fail(d, JIT_OUT_OF_MEMORY, "out of memory generating the quantizer kernel");
    }
    *source = jit__sb_take(&sb);
    return JIT_OK;
}
