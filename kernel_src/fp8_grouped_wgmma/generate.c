/*
 * Generator of the grouped FP8 wgmma family. The kernel is device code under
 * kernel_src/fp8_grouped_wgmma/device/; this file checks the plan and writes what varies per plan:
 * the header comment with the key and the plan, the include, the typedefs instantiating the
 * kernel with the plan's numbers, static_asserts tying it to the plan and to the host's
 * parameter block (abi.h), and the entry point.
 */
#include <stddef.h>
#include <stdio.h>

#include "abi_asserts.h"
#include "grouped.h"
#include "strbuf.h"

static jit_status_t check_plan(const jit__plan_t *plan, jit__diag_t *d) {
    const jit__grouped_plan_t *gp = jit__grouped_cof(plan);
    const jit__gemm_spec_t *s = &plan->spec;
    if (plan->family != &jit__family_fp8_grouped_wgmma)
        return jit__fail(d, JIT_INTERNAL, "grouped generator given a plan of family %s",
                         plan->family ? plan->family->name : "(none)");
    if (s->a != JIT_DTYPE_E4M3 || s->b != JIT_DTYPE_E4M3 || s->out != JIT_DTYPE_BF16 ||
        s->scales != JIT_SCALE_ROW ||
        (s->epilogue != JIT_EPILOGUE_LINEAR && s->epilogue != JIT_EPILOGUE_LINEAR_SWIGLU))
        return jit__fail(d, JIT_UNSUPPORTED,
                         "the grouped family generates e4m3 x e4m3 with row scales, bf16 out, "
                         "linear or linear_swiglu only");
    if (s->groups < 1 || s->groups > JIT_MAX_GROUPS ||
        (s->layout != JIT_GROUPS_CONTIGUOUS && s->layout != JIT_GROUPS_MASKED) || s->k % 16 ||
        s->n <= 0)
        return jit__fail(d, JIT_INVALID_SHAPE,
                         "grouped family: groups=%lld, layout %d, n=%lld, "
                         "k=%lld",
                         (long long)s->groups, (int)s->layout, (long long)s->n, (long long)s->k);
    int tile_ok = gp->route == JIT_GROUPED_SWAP
                      ? (gp->bm == 16 || gp->bm == 32 || gp->bm == 64) && gp->bn == 128
                      : gp->bm == 128 && gp->bn >= 64 && gp->bn <= 192 && gp->bn % 32 == 0 &&
                            (s->epilogue != JIT_EPILOGUE_LINEAR_SWIGLU || gp->bn % 64 == 0);
    if (!tile_ok || gp->stages < 2 ||
        (gp->route != JIT_GROUPED_TILES && gp->route != JIT_GROUPED_SWAP))
        return jit__fail(d, JIT_PLAN_FAILED,
                         "grouped family: route %d, tile %dx%d, %d stages is not one it supports",
                         (int)gp->route, gp->bm, gp->bn, gp->stages);
    /* 384 threads start with 168 registers each; the consumers' setmaxnreg.inc waits until the
     * producers' setmaxnreg.dec gave back what it asks, so asking more never returns. */
    const int at_launch = 65536 / plan->threads / 8 * 8;
    if ((at_launch - gp->producer_regs) * 128 <
        (gp->consumer_regs - at_launch) * (plan->threads - 128))
        return jit__fail(d, JIT_PLAN_FAILED,
                         "grouped family: setmaxnreg budgets %d/%d ask the consumers more "
                         "registers than the producers give back (the kernel would hang)",
                         gp->producer_regs, gp->consumer_regs);
    uint32_t want =
        gp->route == JIT_GROUPED_SWAP
            ? jit__grouped_swap_smem_bytes(gp->bm, gp->stages, s->groups)
            : jit__grouped_smem_bytes(gp->bm, gp->bn, gp->stages, s->epilogue, s->groups);
    if (plan->smem_bytes != want || want > JIT_GROUPED_SMEM_LIMIT)
        return jit__fail(d, JIT_PLAN_FAILED,
                         "grouped family: plan says %u bytes of shared memory, the kernel uses %u "
                         "(limit %u)",
                         plan->smem_bytes, want, JIT_GROUPED_SMEM_LIMIT);
    return JIT_OK;
}

static void emit_header(jit__sb_t *sb, const jit__plan_t *plan, const jit__key_t *key) {
    const jit__gemm_spec_t *s = &plan->spec;
    const jit__grouped_plan_t *gp = jit__grouped_cof(plan);
    jit__sb_append(sb, "/*\n * jitgemm generated kernel: grouped FP8 E4M3 x E4M3 GEMM with FP32 "
                       "row scales, BF16 out.\n * Family fp8_grouped_wgmma: one launch for every "
                       "expert, rows per expert read on the device.\n *\n * key:    ");
    jit__sb_append_comment_safe(sb, key ? key->text : "(none)");
    jit__sb_printf(sb, "\n * hash:   %s\n", key ? key->hash : "(none)");
    jit__sb_printf(sb, " * target: %s\n *\n * plan:\n", key ? key->target : "(none)");
    jit__sb_printf(sb, " *   arch %s, sm_count %d, token band %d (rows per expert)\n",
                   plan->arch->name, plan->sm_count, plan->token_band);
    jit__sb_printf(sb, " *   %lld experts, %s layout, n %lld, k %lld, epilogue %s\n",
                   (long long)s->groups, jit_group_layout_name(s->layout), (long long)s->n,
                   (long long)s->k, jit_epilogue_name(s->epilogue));
    if (gp->route == JIT_GROUPED_SWAP)
        jit__sb_printf(sb,
                       " *   swap AB: 128 weight rows x a token tile of up to %d rows of one "
                       "expert, wgmma N chosen per tile from 8..%d, %d stages, FP32-promoted\n",
                       gp->bm, gp->bm, gp->stages);
    else
        jit__sb_printf(sb,
                       " *   tile %d rows of one expert x %d B rows x 128 K bytes, %d stages, "
                       "FP32-promoted (in 2 column parts)\n",
                       gp->bm, gp->bn, gp->stages);
    jit__sb_printf(sb,
                   " *   384 threads: producer%s (%d registers), 2 consumer warpgroups (%d); "
                   "dynamic shared memory %u bytes\n",
                   gp->route == JIT_GROUPED_SWAP ? "" : " + 3 store warps", gp->producer_regs,
                   gp->consumer_regs, plan->smem_bytes);
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
        {"tmap_b", offsetof(jit__grouped_params_t, tmap_b)},
        {"sa", offsetof(jit__grouped_params_t, sa)},
        {"d", offsetof(jit__grouped_params_t, d)},
        {"rows", offsetof(jit__grouped_params_t, rows)},
        {"m", offsetof(jit__grouped_params_t, m)},
        {"ldd", offsetof(jit__grouped_params_t, ldd)},
        {"alpha", offsetof(jit__grouped_params_t, alpha)},
    };
    jit__emit_abi_asserts(sb, "GroupedParams", k_fields, sizeof(k_fields) / sizeof(k_fields[0]),
                          sizeof(jit__grouped_params_t));
}

jit_status_t jit__gen_fp8_grouped(const jit__plan_t *plan, const jit__key_t *key, char **source,
                                  jit__diag_t *d) {
    *source = NULL;
    jit_status_t st = check_plan(plan, d);
    if (st != JIT_OK)
        return st;
    const jit__gemm_spec_t *s = &plan->spec;
    const jit__grouped_plan_t *gp = jit__grouped_cof(plan);
    const char *layout =
        s->layout == JIT_GROUPS_CONTIGUOUS ? "GROUPED_CONTIGUOUS" : "GROUPED_MASKED";
    const char *epilogue =
        s->epilogue == JIT_EPILOGUE_LINEAR_SWIGLU ? "GROUPED_EPI_SWIGLU" : "GROUPED_EPI_LINEAR";
    jit__sb_t sb;
    jit__sb_init(&sb);
    emit_header(&sb, plan, key);
    if (gp->route == JIT_GROUPED_SWAP) {
        jit__sb_append(&sb, "#include \"fp8_grouped_wgmma/device/swap_kernel.cuh\"\n\n");
        jit__sb_printf(&sb,
                       "typedef GroupedSwapCfg<%d, %d, %lld, %lld, %lld, %s, %s, %d, %d, %d> Cfg;\n"
                       "typedef GroupedSwapKernel<Cfg> Kernel;\n",
                       gp->bm, gp->stages, (long long)s->n, (long long)s->k, (long long)s->groups,
                       layout, epilogue, gp->group_m, gp->producer_regs, gp->consumer_regs);
    } else {
        jit__sb_append(&sb, "#include \"fp8_grouped_wgmma/device/kernel.cuh\"\n\n");
        jit__sb_printf(
            &sb,
            "typedef GroupedTileCfg<%d, %d, %d, %lld, %lld, %lld, %s, %s, %d, %d, %d> Cfg;\n"
            "typedef GroupedTileKernel<Cfg> Kernel;\n",
            gp->bm, gp->bn, gp->stages, (long long)s->n, (long long)s->k, (long long)s->groups,
            layout, epilogue, gp->group_m, gp->producer_regs, gp->consumer_regs);
    }
    jit__sb_printf(&sb, "static_assert(Kernel::SMEM_BYTES == %u, \"the plan's shared memory\");\n",
                   plan->smem_bytes);
    jit__sb_printf(&sb, "static_assert(Kernel::THREADS == %d, \"the plan's threads\");\n",
                   plan->threads);
    emit_abi_asserts(&sb);
    jit__sb_printf(&sb,
                   "\nextern \"C\" __global__ void __launch_bounds__(Kernel::THREADS, 1)\n"
                   "%s(const __grid_constant__ GroupedParams p) {\n"
                   "    Kernel::run(p);\n"
                   "}\n",
                   plan->family->kernel_name);
    if (jit__sb_failed(&sb)) {
        jit__sb_free(&sb);
        return jit__fail(d, JIT_OUT_OF_MEMORY, "out of memory generating the grouped kernel");
    }
    *source = jit__sb_take(&sb);
    return JIT_OK;
}
