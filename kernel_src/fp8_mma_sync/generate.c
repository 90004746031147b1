/*
 * Generator of the FP8 mma.sync family. The kernel itself is device code in
 * kernel_src/fp8_mma_sync/device/kernel.cuh; this file checks the plan and writes what varies
 * per plan: the header comment with the key and the plan, the include, and the entry point that
 * instantiates MmaSyncKernel with the plan's numbers. Template parameters rather than
 * namespace-scope constants keep the PTX free of .global data.
 */
#include <stddef.h>
#include <string.h>

#include "abi.h"
#include "fp8_mma_sync.h"
#include "strbuf.h"

/* The plan's shape, and what follows from it, as the generator checks and emits it. */
typedef struct shape {
    int tile_m, tile_n, tile_k, stages, warps_m, warps_n, threads;
    int warp_m, warp_n; /* warp tile */
    uint32_t smem_bytes;
} shape_t;

static int is_one_of(int v, int a, int b, int c) {
    return v == a || v == b || v == c;
}

static jit_status_t check_plan(const jit__plan_t *plan, shape_t *s, jit__diag_t *d) {
    if (plan->family != &jit__family_fp8_mma_sync)
        return jit__fail(d, JIT_INTERNAL, "mma.sync generator given a plan of family %s",
                         plan->family ? plan->family->name : "(none)");
    const jit__gemm_spec_t *spec = &plan->spec;
    if (spec->a != JIT_DTYPE_E4M3 || spec->b != JIT_DTYPE_E4M3 || spec->out != JIT_DTYPE_BF16 ||
        spec->scales != JIT_SCALE_ROW)
        return jit__fail(d, JIT_UNSUPPORTED,
                         "mma.sync route generates e4m3 x e4m3 with row scales and bf16 out only");
    if (spec->epilogue != JIT_EPILOGUE_LINEAR && spec->epilogue != JIT_EPILOGUE_LINEAR_ADD &&
        spec->epilogue != JIT_EPILOGUE_LINEAR_SWIGLU)
        return jit__fail(d, JIT_UNSUPPORTED, "mma.sync route: unknown epilogue %d",
                         (int)spec->epilogue);
    if (spec->n <= 0 || spec->k <= 0 || spec->k % 16 != 0)
        return jit__fail(d, JIT_INVALID_SHAPE,
                         "mma.sync route needs n > 0 and k a positive multiple of 16 "
                         "(n=%lld, k=%lld)",
                         (long long)spec->n, (long long)spec->k);
    if (spec->epilogue == JIT_EPILOGUE_LINEAR_SWIGLU && spec->n % 2 != 0)
        return jit__fail(d, JIT_INVALID_SHAPE, "linear_swiglu needs an even n, got %lld",
                         (long long)spec->n);
    if (!plan->arch)
        return jit__fail(d, JIT_INTERNAL, "plan without an arch profile");

    s->tile_m = plan->tile_m;
    s->tile_n = plan->tile_n;
    s->tile_k = plan->tile_k;
    s->stages = plan->stages;
    s->warps_m = jit__mma_sync_cof(plan)->warps_m;
    s->warps_n = jit__mma_sync_cof(plan)->warps_n;
    s->threads = plan->threads;
    if (s->tile_k != 64 && s->tile_k != 128)
        return jit__fail(d, JIT_PLAN_FAILED, "mma.sync route: tile_k %d is not 64 or 128",
                         s->tile_k);
    if (s->stages < 2 || s->stages > 4)
        return jit__fail(d, JIT_PLAN_FAILED, "mma.sync route: %d stages, supported 2..4",
                         s->stages);
    if (s->warps_m <= 0 || s->warps_n <= 0 || s->tile_m <= 0 || s->tile_n <= 0 ||
        s->tile_m % s->warps_m != 0 || s->tile_n % s->warps_n != 0)
        return jit__fail(d, JIT_PLAN_FAILED,
                         "mma.sync route: tile %dx%d does not split over "
                         "%dx%d warps",
                         s->tile_m, s->tile_n, s->warps_m, s->warps_n);
    s->warp_m = s->tile_m / s->warps_m;
    s->warp_n = s->tile_n / s->warps_n;
    if (!is_one_of(s->warp_m, 16, 32, 64) || !is_one_of(s->warp_n, 16, 32, 64))
        return jit__fail(d, JIT_PLAN_FAILED,
                         "mma.sync route: warp tile %dx%d, supported M and N in {16, 32, 64}",
                         s->warp_m, s->warp_n);
    if (s->threads != 32 * s->warps_m * s->warps_n)
        return jit__fail(d, JIT_PLAN_FAILED, "mma.sync route: %d threads for %dx%d warps",
                         s->threads, s->warps_m, s->warps_n);
    s->smem_bytes = (uint32_t)(s->stages * (s->tile_m + s->tile_n) * s->tile_k);
    if (s->smem_bytes != plan->smem_bytes)
        return jit__fail(d, JIT_PLAN_FAILED,
                         "mma.sync route: plan says %u bytes of shared memory, the kernel "
                         "uses %u",
                         plan->smem_bytes, s->smem_bytes);
    if (plan->arch->cp_async_cg_limit && s->smem_bytes > plan->arch->cp_async_cg_limit)
        return jit__fail(d, JIT_PLAN_FAILED,
                         "mma.sync route: %u bytes of shared memory exceed the cp.async.cg limit "
                         "of %s (%u)",
                         s->smem_bytes, plan->arch->name, plan->arch->cp_async_cg_limit);
    return JIT_OK;
}

static void emit_header(jit__sb_t *sb, const jit__plan_t *plan, const jit__key_t *key,
                        const shape_t *s) {
    const jit__gemm_spec_t *spec = &plan->spec;
    jit__sb_append(sb, "/*\n * jitgemm generated kernel: FP8 E4M3 x E4M3 GEMM with FP32 row "
                       "scales, BF16 out.\n");
    jit__sb_append(sb, " * Family fp8_mma_sync: cp.async -> shared ring -> ldmatrix.x4 -> "
                       "mma.sync.m16n8k32 (FP32) -> epilogue.\n *\n");
    jit__sb_append(sb, " * key:    ");
    jit__sb_append_comment_safe(sb, key ? key->text : "(none)");
    jit__sb_printf(sb, "\n * hash:   %s\n", key ? key->hash : "(none)");
    jit__sb_printf(sb, " * target: %s%s\n *\n", key ? key->target : "(none)",
                   key && key->fallback ? " (fallback build for this arch)" : "");
    jit__sb_append(sb, " * plan:\n");
    jit__sb_printf(sb, " *   arch %s, sm_count %d, token band %d\n", plan->arch->name,
                   plan->sm_count, plan->token_band);
    jit__sb_printf(sb, " *   n %lld, k %lld, epilogue %s\n", (long long)spec->n, (long long)spec->k,
                   jit_epilogue_name(spec->epilogue));
    jit__sb_printf(sb, " *   CTA tile %d tokens x %d B rows x %d K bytes, %d stages\n", s->tile_m,
                   s->tile_n, s->tile_k, s->stages);
    jit__sb_printf(sb, " *   warps %d x %d (%d threads), warp tile %d x %d\n", s->warps_m,
                   s->warps_n, s->threads, s->warp_m, s->warp_n);
    jit__sb_printf(sb, " *   dynamic shared memory %u bytes\n", s->smem_bytes);
    jit__sb_printf(sb,
                   " *   grid x: ceil(%lld / %d) B-row tiles, grid y: ceil(m / %d) token tiles\n",
                   (long long)spec->n, s->tile_n, s->tile_m);
    if (spec->epilogue == JIT_EPILOGUE_LINEAR_SWIGLU)
        jit__sb_append(sb, " *   SwiGLU pairing: B row 2j is gate_j, row 2j+1 is up_j; output "
                           "column j\n");
    jit__sb_append(sb, " */\n\n");
}

static int epilogue_enum(jit_epilogue_t e) {
    return e; /* MmaSyncEpilogue numbers the kinds as jit_epilogue_t does */
}

static void emit_entry(jit__sb_t *sb, const jit__plan_t *plan, const shape_t *s, const char *name) {
    static const char *const k_epilogue[] = {"", "MMA_SYNC_LINEAR", "MMA_SYNC_LINEAR_ADD",
                                             "MMA_SYNC_LINEAR_SWIGLU"};
    jit__sb_append(sb, "#include \"fp8_mma_sync/device/kernel.cuh\"\n\n");
    jit__sb_printf(
        sb, "typedef MmaSyncKernel<%lldLL, %lldLL, %d, %d, %d, %d, %d, %d, %s> Kernel;\n",
        (long long)plan->spec.n, (long long)plan->spec.k, s->tile_m, s->tile_n, s->tile_k,
        s->stages, s->warps_m, s->warps_n, k_epilogue[epilogue_enum(plan->spec.epilogue)]);
    jit__sb_printf(sb, "static_assert(Kernel::SMEM_BYTES == %u, \"the plan's shared memory\");\n",
                   s->smem_bytes);
    jit__sb_printf(sb, "static_assert(Kernel::THREADS == %d, \"the plan's threads\");\n\n",
                   s->threads);
    jit__sb_printf(sb,
                   "extern \"C\" __global__ void __launch_bounds__(Kernel::THREADS)\n"
                   "%s(const jitgemm_mma_sync_params p) {\n"
                   "    extern __shared__ __align__(1024) u8 smem[];\n"
                   "    Kernel::run(p, smem);\n"
                   "}\n",
                   name);
}

jit_status_t jit__gen_fp8_mma_sync(const jit__plan_t *plan, const jit__key_t *key, char **source,
                                   jit__diag_t *d) {
    *source = NULL;
    shape_t s = {0};
    jit_status_t st = check_plan(plan, &s, d);
    if (st != JIT_OK)
        return st;

    jit__sb_t sb;
    jit__sb_init(&sb);
    emit_header(&sb, plan, key, &s);
    emit_entry(&sb, plan, &s, jit__plan_kernel_name(plan));

    if (jit__sb_failed(&sb)) {
        jit__sb_free(&sb);
        return jit__fail(d, JIT_OUT_OF_MEMORY, "out of memory generating the mma.sync kernel");
    }
    *source = jit__sb_take(&sb);
    return JIT_OK;
}
