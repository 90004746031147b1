/*
 * Generator of the block-scaled wgmma family. The kernel is device code in
 * kernel_src/fp8_block_wgmma/device/; this file checks the plan and writes what varies per
 * plan: the header comment with the key and the plan, the include, the plan as a struct of
 * enumerators, static_asserts tying the template and the parameter block to the plan and to
 * abi.h, and the entry point.
 */
#include <stdio.h>
#include <string.h>

#include "abi_asserts.h"
#include "bsw.h"
#include "strbuf.h"

static jit_status_t check_plan(const jit__plan_t *plan, jit__diag_t *d) {
    const jit__bsw_plan_t *bp = jit__bsw_cof(plan);
    const jit__gemm_spec_t *s = &plan->spec;
    if (plan->family != &jit__family_fp8_block_wgmma)
        return jit__fail(d, JIT_INTERNAL, "block wgmma generator given a plan of family %s",
                         plan->family ? plan->family->name : "(none)");
    if (s->a != JIT_DTYPE_E4M3 || s->b != JIT_DTYPE_E4M3 || s->out != JIT_DTYPE_BF16 ||
        s->scales != JIT_SCALE_BLOCK_1X128_128X128 ||
        jit__scale_type_resolved(s->scales, s->scale_type) != JIT_SCALE_TYPE_F32)
        return jit__fail(d, JIT_UNSUPPORTED,
                         "the block wgmma family generates e4m3 x e4m3 with f32 128x128 scales "
                         "and bf16 out only");
    if (s->k % 16 != 0 || s->n <= 0)
        return jit__fail(d, JIT_INVALID_SHAPE, "block wgmma family: n=%lld, k=%lld",
                         (long long)s->n, (long long)s->k);
    if (bp->route == JIT_BSW_DECODE) {
        const uint32_t want =
            jit__bsw_decode_smem_bytes(bp->bn, bp->bm, bp->stages, bp->ksub, bp->split);
        if ((bp->bn != 128 && bp->bn != 256) ||
            (bp->bm != 8 && bp->bm != 16 && bp->bm != 32 && bp->bm != 64) ||
            (bp->bn == 256 && bp->bm > 16) || bp->split < 1 || bp->split > (s->k + 127) / 128 ||
            (bp->ksub != 1 && bp->ksub != 2 && bp->ksub != 4) || bp->cluster != 1 ||
            plan->smem_bytes != want || want > JIT_BSW_SMEM_LIMIT || bp->stages < 2)
            return jit__fail(d, JIT_PLAN_FAILED,
                             "block wgmma decode: %d weight rows x %d tokens, split %d, %d blocks "
                             "per stage, %u bytes of shared memory (the kernel uses %u) is not "
                             "one it supports",
                             bp->bn, bp->bm, bp->split, bp->ksub, plan->smem_bytes, want);
        return JIT_OK;
    }
    if (bp->route != JIT_BSW_TILES || bp->bm != 128 || bp->bn < 64 || bp->bn > 192 || bp->bn % 32 ||
        (bp->cluster != 1 && bp->cluster != 2) || (bp->bn / bp->cluster) % 8 ||
        (s->epilogue == JIT_EPILOGUE_LINEAR_SWIGLU && bp->bn % 64))
        return jit__fail(d, JIT_PLAN_FAILED,
                         "block wgmma family: tile %dx%d, cluster %d is not one it supports",
                         bp->bm, bp->bn, bp->cluster);
    /* __launch_bounds__(384, 1) starts every thread with 168 registers; the consumers'
     * setmaxnreg.inc waits until the producers' setmaxnreg.dec has given back what it asks. */
    const int at_launch = 65536 / plan->threads / 8 * 8;
    if (plan->threads != 384 || (at_launch - bp->producer_regs) * 128 <
                                    (bp->consumer_regs - at_launch) * (plan->threads - 128))
        return jit__fail(d, JIT_PLAN_FAILED,
                         "block wgmma family: setmaxnreg budgets %d/%d ask the consumers more "
                         "registers than the producers give back (the kernel would hang)",
                         bp->producer_regs, bp->consumer_regs);
    if (bp->store_warps && s->epilogue == JIT_EPILOGUE_LINEAR_ADD)
        return jit__fail(d, JIT_PLAN_FAILED,
                         "block wgmma family: linear_add has no store-warp epilogue (the residual "
                         "is added before rounding)");
    const uint32_t want =
        jit__bsw_smem_bytes(bp->bm, bp->bn, bp->stages, s->epilogue, bp->store_warps);
    if (plan->smem_bytes != want || want > JIT_BSW_SMEM_LIMIT || bp->stages < 2)
        return jit__fail(d, JIT_PLAN_FAILED,
                         "block wgmma family: plan says %u bytes of shared memory and %d stages, "
                         "the kernel uses %u",
                         plan->smem_bytes, bp->stages, want);
    return JIT_OK;
}

static void emit_header(jit__sb_t *sb, const jit__plan_t *plan, const jit__key_t *key) {
    const jit__gemm_spec_t *s = &plan->spec;
    const jit__bsw_plan_t *bp = jit__bsw_cof(plan);
    jit__sb_append(sb, "/*\n * jitgemm generated kernel: FP8 E4M3 x E4M3 GEMM with FP32 scales per "
                       "1x128 group of A and\n * per 128x128 block of B, BF16 out.\n"
                       " * Family fp8_block_wgmma: TMA (128B swizzle) -> mbarrier ring -> wgmma "
                       "m64nNk32 -> scaled FP32\n * promotion every 128 K -> epilogue.\n *\n"
                       " * key:    ");
    jit__sb_append_comment_safe(sb, key ? key->text : "(none)");
    jit__sb_printf(sb, "\n * hash:   %s\n", key ? key->hash : "(none)");
    jit__sb_printf(sb, " * target: %s\n *\n * plan:\n", key ? key->target : "(none)");
    jit__sb_printf(sb, " *   arch %s, sm_count %d, token band %d\n", plan->arch->name,
                   plan->sm_count, plan->token_band);
    jit__sb_printf(sb, " *   n %lld, k %lld, epilogue %s\n", (long long)s->n, (long long)s->k,
                   jit_epilogue_name(s->epilogue));
    if (bp->route == JIT_BSW_DECODE)
        jit__sb_printf(sb,
                       " *   decode route: weights on wgmma's M side, %d weight rows x %d tokens "
                       "per unit, K split %d ways\n *   with a fixed-order reduction, %d x 128 K "
                       "bytes per stage, %d stages; each 128-K block promoted to FP32\n"
                       " *   times SFB[row block] x SFA[token], the scales read one block ahead\n",
                       bp->bn, bp->bm, bp->split, bp->ksub, bp->stages);
    else
        jit__sb_printf(sb,
                       " *   CTA tile %d tokens x %d B rows x 128 K bytes, %d stages; each 128-K "
                       "block promoted to FP32\n *   in 2 column halves, times SFA[row] x "
                       "SFB[column block], the scales read one block ahead\n",
                       bp->bm, bp->bn, bp->stages);
    jit__sb_printf(sb,
                   " *   384 threads: 1 producer warpgroup (%d registers), 2 consumer "
                   "warpgroups (%d)\n",
                   bp->producer_regs, bp->consumer_regs);
    if (bp->route == JIT_BSW_DECODE) {
        jit__sb_printf(sb,
                       " *   dynamic shared memory %u bytes; one CTA per (token tile, weight "
                       "tile, k-split) unit\n",
                       plan->smem_bytes);
    } else {
        jit__sb_printf(sb, " *   epilogue stores: %s\n",
                       bp->store_warps ? "the producer warpgroup's 3 store warps, from the whole "
                                         "tile staged in shared memory"
                                       : "the consumer warpgroups, 32 columns at a time");
        jit__sb_printf(sb,
                       " *   dynamic shared memory %u bytes; persistent grid, raster groups of %d "
                       "m-groups; clusters of %d%s\n",
                       plan->smem_bytes, bp->group_m, bp->cluster,
                       bp->cluster > 1 ? " CTAs sharing each B tile by TMA multicast" : " CTA");
    }
    if (plan->chosen >= 0 && plan->reason[0]) {
        jit__sb_append(sb, " *   model: ");
        jit__sb_append_comment_safe(sb, plan->reason);
        jit__sb_append(sb, "\n");
    }
    if (s->epilogue == JIT_EPILOGUE_LINEAR_SWIGLU)
        jit__sb_append(sb, " *   SwiGLU pairing: B row 2j is gate_j, row 2j+1 is up_j; output "
                           "column j\n");
    jit__sb_append(sb, " */\n\n");
}

/* The parameter block's offsets, as abi.h has them, asserted in the generated source
 * (kernel_src/abi_asserts.c says how). */
static void emit_abi_asserts(jit__sb_t *sb) {
    static const jit__abi_field_t k_fields[] = {
        {"tmap_b", offsetof(jit__bsw_params_t, tmap_b)},
        {"sfa", offsetof(jit__bsw_params_t, sfa)},
        {"sfb", offsetof(jit__bsw_params_t, sfb)},
        {"workspace", offsetof(jit__bsw_params_t, workspace)},
        {"m", offsetof(jit__bsw_params_t, m)},
        {"sfa_stride_m", offsetof(jit__bsw_params_t, sfa_stride_m)},
        {"sfa_stride_k", offsetof(jit__bsw_params_t, sfa_stride_k)},
        {"alpha", offsetof(jit__bsw_params_t, alpha)},
    };
    jit__emit_abi_asserts(sb, "BswParams", k_fields, sizeof(k_fields) / sizeof(k_fields[0]),
                          sizeof(jit__bsw_params_t));
}

jit_status_t jit__gen_fp8_block_wgmma(const jit__plan_t *plan, const jit__key_t *key, char **source,
                                      jit__diag_t *d) {
    *source = NULL;
    jit_status_t st = check_plan(plan, d);
    if (st != JIT_OK)
        return st;
    static const char *const k_epilogue[] = {"", "BSW_EPI_LINEAR", "BSW_EPI_LINEAR_ADD",
                                             "BSW_EPI_LINEAR_SWIGLU"};
    const jit__bsw_plan_t *bp = jit__bsw_cof(plan);
    jit__sb_t sb;
    jit__sb_init(&sb);
    emit_header(&sb, plan, key);
    if (bp->route == JIT_BSW_DECODE) {
        jit__sb_append(&sb, "#include \"fp8_block_wgmma/device/decode_kernel.cuh\"\n\n");
        jit__sb_printf(&sb,
                       "struct Plan {\n"
                       "    enum : int {\n"
                       "        BW = %d, TOK = %d, STAGES = %d, N = %lld, K = %lld,\n"
                       "        EPILOGUE = %s, SPLIT = %d, KSUB = %d, PRODUCER_REGS = %d,\n"
                       "        CONSUMER_REGS = %d\n"
                       "    };\n"
                       "};\n"
                       "typedef BswDecodeKernel<Plan> Kernel;\n",
                       bp->bn, bp->bm, bp->stages, (long long)plan->spec.n, (long long)plan->spec.k,
                       k_epilogue[plan->spec.epilogue], bp->split, bp->ksub, bp->producer_regs,
                       bp->consumer_regs);
    } else {
        jit__sb_append(&sb, "#include \"fp8_block_wgmma/device/kernel.cuh\"\n\n");
        jit__sb_printf(&sb,
                       "struct Plan {\n"
                       "    enum : int {\n"
                       "        BM = %d, BN = %d, STAGES = %d, N = %lld, K = %lld,\n"
                       "        EPILOGUE = %s, GROUP_M = %d, PRODUCER_REGS = %d, "
                       "CONSUMER_REGS = %d,\n"
                       "        CLUSTER = %d, STORE_WARPS = %d\n"
                       "    };\n"
                       "};\n"
                       "typedef BswTileKernel<Plan> Kernel;\n",
                       bp->bm, bp->bn, bp->stages, (long long)plan->spec.n, (long long)plan->spec.k,
                       k_epilogue[plan->spec.epilogue], bp->group_m, bp->producer_regs,
                       bp->consumer_regs, bp->cluster, bp->store_warps);
    }
    jit__sb_printf(&sb, "static_assert(Kernel::SMEM_BYTES == %u, \"the plan's shared memory\");\n",
                   plan->smem_bytes);
    jit__sb_printf(&sb, "static_assert(Kernel::THREADS == %d, \"the plan's threads\");\n",
                   plan->threads);
    emit_abi_asserts(&sb);
    jit__sb_printf(&sb,
                   "\nextern \"C\" __global__ void __launch_bounds__(Kernel::THREADS, 1)\n"
                   "%s(const __grid_constant__ BswParams p) {\n"
                   "    extern __shared__ __align__(1024) unsigned char smem[];\n"
                   "    Kernel::run(p, smem);\n"
                   "}\n",
                   plan->family->kernel_name);
    if (jit__sb_failed(&sb)) {
        jit__sb_free(&sb);
        return jit__fail(d, JIT_OUT_OF_MEMORY, "out of memory generating the block wgmma kernel");
    }
    *source = jit__sb_take(&sb);
    return JIT_OK;
}
