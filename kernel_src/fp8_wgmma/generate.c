/*
 * Generator of the FP8 wgmma family. The kernels are device code in kernel_src/fp8_wgmma/device/
 * (kernel.cuh for the tile kernel, decode.cuh for the decode route, each including its roles);
 * this file checks the plan and writes what varies per plan: the header comment with the key and
 * the plan, the include, a typedef instantiating Fp8WgmmaKernel or Fp8WgmmaDecodeKernel with the
 * plan's numbers, static_asserts tying it to the plan, and the entry point.
 */
#include <stdio.h>
#include <string.h>

#include "fp8_wgmma.h"
#include "strbuf.h"

static jit_status_t check_plan(const jit__plan_t *plan, jit__diag_t *d) {
    const jit__wgmma_plan_t *wp = jit__wgmma_cof(plan);
    if (plan->family != &jit__family_fp8_wgmma)
        return jit__fail(d, JIT_INTERNAL, "wgmma generator given a plan of family %s",
                         plan->family ? plan->family->name : "(none)");
    const jit__gemm_spec_t *s = &plan->spec;
    if (s->a != JIT_DTYPE_E4M3 || s->b != JIT_DTYPE_E4M3 || s->out != JIT_DTYPE_BF16 ||
        s->scales != JIT_SCALE_ROW)
        return jit__fail(
            d, JIT_UNSUPPORTED,
            "the wgmma family generates e4m3 x e4m3 with row scales and bf16 out only");
    if (s->k % 16 != 0 || s->n <= 0)
        return jit__fail(d, JIT_INVALID_SHAPE, "wgmma family: n=%lld, k=%lld", (long long)s->n,
                         (long long)s->k);
    if (wp->route == JIT_WGMMA_DECODE) {
        uint32_t want =
            jit__wgmma_decode_smem_bytes(wp->bn, wp->bm, wp->stages, wp->ksub, wp->split);
        if ((wp->bn != 128 && wp->bn != 256) ||
            (wp->bm != 8 && wp->bm != 16 && wp->bm != 32 && wp->bm != 64) || wp->split < 1 ||
            wp->split > (s->k + 127) / 128 || plan->smem_bytes != want)
            return jit__fail(d, JIT_PLAN_FAILED,
                             "wgmma decode: %d weight rows x %d tokens, split %d, %u bytes of "
                             "shared memory (the kernel uses %u) is not one it supports",
                             wp->bn, wp->bm, wp->split, plan->smem_bytes, want);
        return JIT_OK;
    }
    /* The tile kernel builds three forms of accumulation (device/mainloop.cuh): 3, the default;
     * 0, no promotion; 1, the whole-block comparison form. */
    if (wp->promote != 3 && wp->promote != 0 && wp->promote != 1)
        return jit__fail(d, JIT_PLAN_FAILED,
                         "wgmma family: promotion form %d is not one the kernel builds (3, 0 or 1)",
                         wp->promote);
    if ((wp->bm != 128 && wp->bm != 256) || wp->bn < 32 || wp->bn > 256 || wp->bn % 32 ||
        (wp->cluster != 1 && wp->cluster != 2) || (wp->bn / wp->cluster) % 8 ||
        (s->epilogue == JIT_EPILOGUE_LINEAR_SWIGLU && wp->bn % 64))
        return jit__fail(d, JIT_PLAN_FAILED, "wgmma family: tile %dx%d is not one it supports",
                         wp->bm, wp->bn);
    /* One CTA per SM starts every thread with the register file's share (168 of 65536 at 384
     * threads, in multiples of 8); the consumers' setmaxnreg.inc waits until the producers'
     * setmaxnreg.dec has given back what it asks, so asking more never returns. The producer
     * warpgroup is 128 threads, the consumers the rest. */
    const int at_launch = 65536 / plan->threads / 8 * 8;
    if ((at_launch - wp->producer_regs) * 128 <
        (wp->consumer_regs - at_launch) * (plan->threads - 128))
        return jit__fail(d, JIT_PLAN_FAILED,
                         "wgmma family: setmaxnreg budgets %d/%d ask the consumers more registers "
                         "than the producers give back (the kernel would hang)",
                         wp->producer_regs, wp->consumer_regs);
    if (wp->store_warps && s->epilogue == JIT_EPILOGUE_LINEAR_ADD)
        return jit__fail(d, JIT_PLAN_FAILED,
                         "wgmma family: linear_add has no store-warp epilogue (the residual is "
                         "added before rounding)");
    uint32_t want =
        jit__wgmma_smem_bytes(wp->bm, wp->bn, wp->stages, s->epilogue, wp->store_warps);
    if (plan->smem_bytes != want)
        return jit__fail(d, JIT_PLAN_FAILED,
                         "wgmma family: plan says %u bytes of shared memory, the kernel uses %u",
                         plan->smem_bytes, want);
    return JIT_OK;
}

static void emit_header(jit__sb_t *sb, const jit__plan_t *plan, const jit__key_t *key) {
    const jit__gemm_spec_t *s = &plan->spec;
    const jit__wgmma_plan_t *wp = jit__wgmma_cof(plan);
    jit__sb_append(sb,
                   "/*\n * jitgemm generated kernel: FP8 E4M3 x E4M3 GEMM with FP32 row scales, "
                   "BF16 out.\n * Family fp8_wgmma: TMA (128B swizzle) -> mbarrier ring -> "
                   "wgmma m64nNk32 -> epilogue.\n *\n * key:    ");
    jit__sb_append_comment_safe(sb, key ? key->text : "(none)");
    jit__sb_printf(sb, "\n * hash:   %s\n", key ? key->hash : "(none)");
    jit__sb_printf(sb, " * target: %s\n *\n * plan:\n", key ? key->target : "(none)");
    jit__sb_printf(sb, " *   arch %s, sm_count %d, token band %d\n", plan->arch->name,
                   plan->sm_count, plan->token_band);
    jit__sb_printf(sb, " *   n %lld, k %lld, epilogue %s\n", (long long)s->n, (long long)s->k,
                   jit_epilogue_name(s->epilogue));
    if (wp->route == JIT_WGMMA_DECODE)
        jit__sb_printf(sb,
                       " *   decode route: weights on wgmma's M side, %d weight rows x %d tokens "
                       "per unit, K split %d ways, %d x 128 K bytes per stage\n",
                       wp->bn, wp->bm, wp->split, wp->ksub);
    const char *accumulation = wp->promote == 3 ? "FP32-promoted (in 2 column parts)"
                               : wp->promote    ? "FP32-promoted"
                                                : "wgmma";
    jit__sb_printf(sb,
                   " *   CTA tile %d tokens x %d B rows x 128 K bytes, %d stages, %s "
                   "accumulation\n",
                   wp->bm, wp->bn, wp->stages, accumulation);
    jit__sb_printf(sb,
                   " *   384 threads: 1 producer warpgroup (%d registers), 2 consumer "
                   "warpgroups (%d)\n",
                   wp->producer_regs, wp->consumer_regs);
    if (wp->route != JIT_WGMMA_DECODE)
        jit__sb_printf(sb, " *   epilogue stores: %s\n",
                       wp->store_warps ? "the producer warpgroup's 3 store warps, from the "
                                         "whole tile staged in shared memory"
                                       : "the consumer warpgroups, 32 columns at a time");
    if (wp->route == JIT_WGMMA_DECODE)
        jit__sb_printf(sb,
                       " *   dynamic shared memory %u bytes; one CTA per (token tile, weight "
                       "tile, k-split) unit\n",
                       plan->smem_bytes);
    else
        jit__sb_printf(sb,
                       " *   dynamic shared memory %u bytes; persistent grid, raster groups of %d "
                       "m-groups; clusters of %d%s\n",
                       plan->smem_bytes, wp->group_m, wp->cluster,
                       wp->cluster > 1 ? " CTAs sharing each B tile by TMA multicast" : " CTA");
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

jit_status_t jit__gen_fp8_wgmma(const jit__plan_t *plan, const jit__key_t *key, char **source,
                                jit__diag_t *d) {
    *source = NULL;
    jit_status_t st = check_plan(plan, d);
    if (st != JIT_OK)
        return st;
    static const char *const k_epilogue[] = {"", "FP8W_EPI_LINEAR", "FP8W_EPI_LINEAR_ADD",
                                             "FP8W_EPI_LINEAR_SWIGLU"};
    const jit__wgmma_plan_t *wp = jit__wgmma_cof(plan);
    jit__sb_t sb;
    jit__sb_init(&sb);
    emit_header(&sb, plan, key);
    const char *params = "Fp8WgmmaParams";
    if (wp->route == JIT_WGMMA_DECODE) {
        static const char *const k_decode_epilogue[] = {
            "", "FP8WD_EPI_LINEAR", "FP8WD_EPI_LINEAR_ADD", "FP8WD_EPI_LINEAR_SWIGLU"};
        params = "Fp8WgmmaDecodeParams";
        jit__sb_append(&sb, "#include \"fp8_wgmma/device/decode.cuh\"\n\n");
        jit__sb_printf(&sb,
                       "typedef Fp8WgmmaDecodeKernel<%d, %d, %d, %lld, %lld, %s, %d, %d> Kernel;\n",
                       wp->bn, wp->bm, wp->stages, (long long)plan->spec.n, (long long)plan->spec.k,
                       k_decode_epilogue[plan->spec.epilogue], wp->split, wp->ksub);
    } else {
        jit__sb_append(&sb, "#include \"fp8_wgmma/device/kernel.cuh\"\n\n");
        jit__sb_printf(
            &sb,
            "typedef Fp8WgmmaKernel<%d, %d, %d, %lld, %lld, %s, %d, %d, %d, %d, %d, %d> Kernel;\n",
            wp->bm, wp->bn, wp->stages, (long long)plan->spec.n, (long long)plan->spec.k,
            k_epilogue[plan->spec.epilogue], wp->promote, wp->group_m, wp->producer_regs,
            wp->consumer_regs, wp->cluster, wp->store_warps);
    }
    jit__sb_printf(&sb, "static_assert(Kernel::SMEM_BYTES == %u, \"the plan's shared memory\");\n",
                   plan->smem_bytes);
    jit__sb_printf(&sb, "static_assert(Kernel::THREADS == %d, \"the plan's threads\");\n\n",
                   plan->threads);
    jit__sb_printf(&sb,
                   "extern \"C\" __global__ void __launch_bounds__(Kernel::THREADS, 1)\n"
                   "%s(const __grid_constant__ %s p) {\n"
                   "    Kernel::run(p);\n"
                   "}\n",
                   plan->family->kernel_name, params);
    if (jit__sb_failed(&sb)) {
        jit__sb_free(&sb);
        return jit__fail(d, JIT_OUT_OF_MEMORY, "out of memory generating the wgmma kernel");
    }
    *source = jit__sb_take(&sb);
    return JIT_OK;
}
