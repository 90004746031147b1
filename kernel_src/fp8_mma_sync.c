/*
 * Generator of the mma.sync route: FP8 E4M3 x E4M3 with FP32 row scales (per token, per output
 * channel), BF16 out, epilogue linear, linear_add or linear_swiglu. This is the baseline route
 * of the second source document: cp.async moves 16-byte chunks of A and B into a shared-memory
 * ring of `stages` K tiles, ldmatrix.x4 feeds mma.sync.m16n8k32, FP32 accumulators stay in
 * registers and the epilogue stores BF16 straight from them.
 *
 * Design decisions:
 * - N and K are compile-time constants of the kernel (they are in the key); M is the only
 *   runtime size, so every M of a token band shares one cubin.
 * - Shared tiles are [rows][tile_k] bytes, read as 128-byte lines whose 16-byte chunks are
 *   permuted by XOR with line % 8. The eight row addresses of each ldmatrix phase then hit eight
 *   different bank groups, for tile_k 128 (one row per line) and 64 (two rows per line) alike.
 *   The permutation is a function of the offset inside a tile and tiles start on 128-byte
 *   multiples, so it is correct at any base; the 1024-byte alignment only keeps it conflict-free.
 * - Accumulation is plain FP32 through the MMA's C operand, in K order per m16n8 tile. On
 *   sm_90a, mma.sync with E4M3 appears to be lowered to FP16 tensor-core MMAs (with the k32
 *   loop unrolled ptxas needed 190 registers there against 138 on sm_100a) [inferred], which
 *   keep FP32 accumulation; the reduced-precision FP8 accumulation reported for Hopper
 *   concerns wgmma (shared/ref/hopper-fp8-facts.md section 4.3). Promoting partials once per
 *   K tile was tried and costs 64 more registers at warp tile 64x32, which spills on sm_90a;
 *   the GPU tests report the worst error relative to sum |a*b| on every run.
 * - Ragged tails never need predicates in the main loop: rows past M or N and 16-byte chunks
 *   past K are zero-filled by cp.async's src-size operand; the epilogue stores only in-range
 *   elements.
 * - The output is rounded to BF16 once, after the whole epilogue is done in FP32.
 * - The generated text has no #include: everything it needs (integer types, the parameter
 *   struct, one wrapper per PTX instruction) is emitted here, which keeps NVRTC fast and the
 *   source self-explanatory.
 */
#include <stddef.h>
#include <string.h>

#include "generate.h"
#include "kernel_abi.h"
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
    if (plan->route != JIT_ROUTE_MMA_SYNC)
        return jit__fail(d, JIT_INTERNAL, "mma.sync generator given a plan of route %d",
                         (int)plan->route);
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
    s->warps_m = plan->warps_m;
    s->warps_n = plan->warps_n;
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

/* Key text inside a block comment: a stray comment terminator would end it early. */
static void append_comment_safe(jit__sb_t *sb, const char *text) {
    for (const char *p = text; *p; p++) {
        jit__sb_appendn(sb, p, 1);
        if (p[0] == '*' && p[1] == '/')
            jit__sb_append(sb, " ");
    }
}

static void emit_header(jit__sb_t *sb, const jit__plan_t *plan, const jit__key_t *key,
                        const shape_t *s) {
    const jit__gemm_spec_t *spec = &plan->spec;
    jit__sb_append(sb, "/*\n * jitgemm generated kernel: FP8 E4M3 x E4M3 GEMM with FP32 row "
                       "scales, BF16 out.\n");
    jit__sb_append(sb, " * Route mma.sync: cp.async -> shared ring -> ldmatrix.x4 -> "
                       "mma.sync.m16n8k32 (FP32) -> epilogue.\n *\n");
    jit__sb_append(sb, " * key:    ");
    append_comment_safe(sb, key ? key->text : "(none)");
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

/* The parameter block, field for field jit__mma_sync_params_t (kernel_abi.h). One field per
 * line, "type name;", so a test can read it back and compare layouts. */
static void emit_types_and_params(jit__sb_t *sb) {
    jit__sb_append(sb, "typedef unsigned char u8;\n"
                       "typedef unsigned short u16;\n"
                       "typedef unsigned int u32;\n"
                       "typedef long long i64;\n"
                       "\n"
                       "/* The kernel's only parameter, passed by value; the host fills the same "
                       "layout\n"
                       " * (jit__mma_sync_params_t). */\n"
                       "struct jitgemm_mma_sync_params {\n"
                       "    const void *a;\n"
                       "    const void *b;\n"
                       "    const float *sa;\n"
                       "    const float *sb;\n"
                       "    const void *residual;\n"
                       "    void *d;\n"
                       "    i64 m;\n"
                       "    i64 lda;\n"
                       "    i64 ldb;\n"
                       "    i64 ldd;\n"
                       "    i64 ldr;\n"
                       "    float alpha;\n"
                       "    int pad_;\n"
                       "};\n\n");
}

static void emit_constants(jit__sb_t *sb, const jit__plan_t *plan, const shape_t *s) {
    jit__sb_append(sb, "/* ---- specialization ---- */\n\n");
    jit__sb_printf(sb,
                   "constexpr i64 kN = %lld; /* rows of B: output channels (gate/up pairs "
                   "for swiglu) */\n",
                   (long long)plan->spec.n);
    jit__sb_printf(sb, "constexpr i64 kK = %lld; /* reduction length = bytes per A or B row */\n",
                   (long long)plan->spec.k);
    jit__sb_printf(sb, "constexpr int kTileM = %d, kTileN = %d, kTileK = %d, kStages = %d;\n",
                   s->tile_m, s->tile_n, s->tile_k, s->stages);
    jit__sb_printf(sb, "constexpr int kWarpsM = %d, kWarpsN = %d, kThreads = %d;\n", s->warps_m,
                   s->warps_n, s->threads);
    jit__sb_append(
        sb,
        "constexpr int kWarpTileM = kTileM / kWarpsM, kWarpTileN = kTileN / kWarpsN;\n"
        "constexpr int kMmaM = kWarpTileM / 16, kMmaN = kWarpTileN / 8; /* m16n8 tiles per warp "
        "*/\n"
        "constexpr int kKSteps = kTileK / 32;                              /* k32 MMAs per K tile "
        "*/\n"
        "constexpr int kKTiles = (int)((kK + kTileK - 1) / kTileK);\n"
        "constexpr int kChunksPerRow = kTileK / 16; /* 16-byte cp.async chunks per tile row */\n"
        "constexpr int kAChunks = kTileM * kChunksPerRow, kBChunks = kTileN * kChunksPerRow;\n"
        "constexpr int kATileBytes = kTileM * kTileK, kBTileBytes = kTileN * kTileK;\n"
        "constexpr int kStageBytes = kATileBytes + kBTileBytes;\n");
    jit__sb_printf(sb, "static_assert(kStages * kStageBytes == %u, \"shared memory size\");\n",
                   s->smem_bytes);
    jit__sb_append(sb, "static_assert(kWarpTileM % 16 == 0 && kWarpTileN % 16 == 0, \"warp "
                       "tile\");\n"
                       "static_assert(kStageBytes % 1024 == 0, \"stage bases keep the "
                       "swizzle's alignment\");\n\n");
}

static const char k_ptx_wrappers[] =
    "/* ---- PTX wrappers, one instruction each ---- */\n"
    "\n"
    "/* Shared-window address of a generic pointer to shared memory. */\n"
    "static __device__ __forceinline__ u32 smem_u32(const void *p) {\n"
    "    u32 r;\n"
    "    asm(\"{ .reg .u64 t; cvta.to.shared.u64 t, %1; cvt.u32.u64 %0, t; }\" : \"=r\"(r) : "
    "\"l\"(p));\n"
    "    return r;\n"
    "}\n"
    "\n"
    "/* 16 bytes global -> shared through L2 only; with src_bytes 0 nothing is read and the 16\n"
    " * bytes are zero-filled, which is how ragged M, N and K tails are padded. */\n"
    "static __device__ __forceinline__ void cp_async_16(u32 dst, const void *src, u32 "
    "src_bytes) {\n"
    "    asm volatile(\"cp.async.cg.shared.global [%0], [%1], 16, %2;\" ::\"r\"(dst), "
    "\"l\"(src),\n"
    "                 \"r\"(src_bytes)\n"
    "                 : \"memory\");\n"
    "}\n"
    "\n"
    "static __device__ __forceinline__ void cp_async_commit() {\n"
    "    asm volatile(\"cp.async.commit_group;\" ::: \"memory\");\n"
    "}\n"
    "\n"
    "/* Wait until at most Pending of this thread's committed groups are still in flight. */\n"
    "template <int Pending> static __device__ __forceinline__ void cp_async_wait() {\n"
    "    asm volatile(\"cp.async.wait_group %0;\" ::\"n\"(Pending) : \"memory\");\n"
    "}\n"
    "\n"
    "/* Four 8x8 b16 matrices; lane l gives the row address of matrix l / 8, row l % 8. */\n"
    "static __device__ __forceinline__ void ldmatrix_x4(u32 (&r)[4], u32 addr) {\n"
    "    asm volatile(\"ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];\"\n"
    "                 : \"=r\"(r[0]), \"=r\"(r[1]), \"=r\"(r[2]), \"=r\"(r[3])\n"
    "                 : \"r\"(addr)\n"
    "                 : \"memory\");\n"
    "}\n"
    "\n"
    "/* d += A(16x32, row) * B(32x8, col), E4M3 in, FP32 accumulate. */\n"
    "static __device__ __forceinline__ void mma_e4m3_16x8x32(float (&d)[4], const u32 (&a)[4], "
    "u32 b0,\n"
    "                                                        u32 b1) {\n"
    "    asm(\"mma.sync.aligned.m16n8k32.row.col.f32.e4m3.e4m3.f32 \"\n"
    "        \"{%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, {%0, %1, %2, %3};\"\n"
    "        : \"+f\"(d[0]), \"+f\"(d[1]), \"+f\"(d[2]), \"+f\"(d[3])\n"
    "        : \"r\"(a[0]), \"r\"(a[1]), \"r\"(a[2]), \"r\"(a[3]), \"r\"(b0), \"r\"(b1));\n"
    "}\n"
    "\n"
    "static __device__ __forceinline__ u16 to_bf16(float x) {\n"
    "    u16 r;\n"
    "    asm(\"cvt.rn.bf16.f32 %0, %1;\" : \"=h\"(r) : \"f\"(x));\n"
    "    return r;\n"
    "}\n"
    "\n";

static const char k_ptx_pack_bf16x2[] =
    "/* Two floats to packed BF16, RNE; cvt puts its first source in the upper half. */\n"
    "static __device__ __forceinline__ u32 pack_bf16x2(float lo, float hi) {\n"
    "    u32 r;\n"
    "    asm(\"cvt.rn.bf16x2.f32 %0, %1, %2;\" : \"=r\"(r) : \"f\"(hi), \"f\"(lo));\n"
    "    return r;\n"
    "}\n"
    "\n";

static const char k_ptx_bits_to_float[] =
    "/* The float whose bits are `bits` (BF16 values widen by a 16-bit shift). */\n"
    "static __device__ __forceinline__ float bits_to_float(u32 bits) {\n"
    "    float r;\n"
    "    asm(\"mov.b32 %0, %1;\" : \"=f\"(r) : \"r\"(bits));\n"
    "    return r;\n"
    "}\n"
    "\n";

static const char k_ptx_exp2[] =
    "/* 2^x, approximate: far finer than the BF16 rounding that follows it. */\n"
    "static __device__ __forceinline__ float exp2_approx(float x) {\n"
    "    float r;\n"
    "    asm(\"ex2.approx.ftz.f32 %0, %1;\" : \"=f\"(r) : \"f\"(x));\n"
    "    return r;\n"
    "}\n"
    "\n";

static const char k_swizzle[] =
    "/* ---- shared-memory layout ---- */\n"
    "\n"
    "/* Byte offset of 16-byte chunk `chunk` of row `row` in a [rows][kTileK] tile. The tile is\n"
    " * read as 128-byte lines and a chunk's slot in its line is XORed with line % 8, so the "
    "eight\n"
    " * rows one ldmatrix phase reads land in eight different bank groups. A stage holds the A\n"
    " * tile, then the B tile. */\n"
    "static __device__ __forceinline__ u32 tile_offset(int row, int chunk) {\n"
    "    const u32 linear = (u32)(row * kTileK + chunk * 16);\n"
    "    const u32 line = linear >> 7, slot = (linear >> 4) & 7;\n"
    "    return (line << 7) | ((slot ^ (line & 7)) << 4);\n"
    "}\n"
    "\n";

/* Emit the copy loop of one operand. The guard is emitted only where the chunk count is not a
 * multiple of the thread count. */
static void emit_copy_loop(jit__sb_t *sb, const char *chunks, int n_chunks, int threads,
                           const char *ptr, const char *ld, const char *rows_limit,
                           const char *row0, const char *tile_base) {
    int guard = n_chunks % threads != 0;
    jit__sb_line(sb, 0, "#pragma unroll");
    jit__sb_line(sb, 1, "for (int it = 0; it < (%s + kThreads - 1) / kThreads; it++) {", chunks);
    jit__sb_line(sb, 2, "const int idx = it * kThreads + tid;");
    if (guard)
        jit__sb_line(sb, 2, "if (idx < %s) {", chunks);
    int in = guard ? 3 : 2;
    jit__sb_line(sb, in, "const int row = idx / kChunksPerRow, chunk = idx %% kChunksPerRow;");
    jit__sb_line(sb, in, "const i64 grow = %s + row, gk = k0 + chunk * 16;", row0);
    jit__sb_line(sb, in, "const bool ok = grow < %s && gk < kK;", rows_limit);
    jit__sb_line(sb, in, "const u8 *src = (const u8 *)%s + (ok ? grow * %s + gk : 0);", ptr, ld);
    jit__sb_line(sb, in, "cp_async_16(%s + tile_offset(row, chunk), src, ok ? 16u : 0u);",
                 tile_base);
    if (guard)
        jit__sb_line(sb, 2, "}");
    jit__sb_line(sb, 1, "}");
}

static void emit_load_stage(jit__sb_t *sb, const shape_t *s) {
    jit__sb_append(sb, "/* ---- roles ---- */\n\n");
    jit__sb_append(sb, "/* Issue the cp.async copies of K tile `kt`: A rows m0.. and B rows n0.. "
                       "into the stage at\n"
                       " * `stage`. Consecutive threads take consecutive 16-byte chunks of a "
                       "row, so each warp\n"
                       " * reads whole 128-byte segments. Out-of-range rows and K chunks are "
                       "zero-filled. */\n");
    jit__sb_append(sb, "static __device__ __forceinline__ void load_stage(const "
                       "jitgemm_mma_sync_params &p, u32 stage,\n"
                       "                                                  i64 m0, i64 n0, int "
                       "kt, int tid) {\n");
    jit__sb_line(sb, 1, "const i64 k0 = (i64)kt * kTileK;");
    emit_copy_loop(sb, "kAChunks", s->tile_m * (s->tile_k / 16), s->threads, "p.a", "p.lda", "p.m",
                   "m0", "stage");
    emit_copy_loop(sb, "kBChunks", s->tile_n * (s->tile_k / 16), s->threads, "p.b", "p.ldb", "kN",
                   "n0", "stage + kATileBytes");
    jit__sb_append(sb, "}\n\n");
}

static const char k_compute_stage[] =
    "/* One K tile: kKSteps k32 steps, each loading the B fragments of the warp's columns, then "
    "per\n"
    " * m16 row block one A fragment and its MMAs. Fragment layout of m16n8k32 (g = lane / 4,\n"
    " * t = lane % 4): A regs 0..3 = rows g, g+8 x K bytes 4t.. and 16+4t..; B regs 0, 1 = column\n"
    " * g x K bytes 4t.. and 16+4t... One ldmatrix.x4 gives an A fragment (16 rows x 32 bytes) or\n"
    " * the B fragments of two n8 tiles. */\n"
    "static __device__ __forceinline__ void compute_stage(u32 stage, int warp_m, int warp_n, int "
    "lane,\n"
    "                                                     float (&acc)[kMmaM][kMmaN][4]) {\n"
    "    const u32 a_tile = stage, b_tile = stage + kATileBytes;\n"
    "    /* Not unrolled: unrolling lets ptxas hoist every fragment of the K tile, which raised\n"
    "     * the band-4 tile from 128 to 190 registers on sm_90a in ptxas' report. */\n"
    "#pragma unroll 1\n"
    "    for (int ks = 0; ks < kKSteps; ks++) {\n"
    "        u32 bf[kMmaN][2];\n"
    "#pragma unroll\n"
    "        for (int j = 0; j < kMmaN; j += 2) {\n"
    "            /* matrices: tile j K 0-15, tile j K 16-31, tile j+1 K 0-15, tile j+1 K 16-31 */\n"
    "            const int row = warp_n * kWarpTileN + j * 8 + (lane & 7) + (lane >> 4) * 8;\n"
    "            u32 r[4];\n"
    "            ldmatrix_x4(r, b_tile + tile_offset(row, ks * 2 + ((lane >> 3) & 1)));\n"
    "            bf[j][0] = r[0];\n"
    "            bf[j][1] = r[1];\n"
    "            bf[j + 1][0] = r[2];\n"
    "            bf[j + 1][1] = r[3];\n"
    "        }\n"
    "#pragma unroll\n"
    "        for (int i = 0; i < kMmaM; i++) {\n"
    "            /* matrices: rows 0-7 | rows 8-15, each at K bytes 0-15 | 16-31 */\n"
    "            const int row = warp_m * kWarpTileM + i * 16 + (lane & 7) + ((lane >> 3) & 1) * "
    "8;\n"
    "            u32 af[4];\n"
    "            ldmatrix_x4(af, a_tile + tile_offset(row, ks * 2 + (lane >> 4)));\n"
    "#pragma unroll\n"
    "            for (int j = 0; j < kMmaN; j++)\n"
    "                mma_e4m3_16x8x32(acc[i][j], af, bf[j][0], bf[j][1]);\n"
    "        }\n"
    "    }\n"
    "}\n"
    "\n";

/* The per-element tail of the epilogue, one variant per epilogue kind. In scope: row, col (the
 * even B row of the thread's pair), v0 and v1 (scaled values of B rows col and col + 1; v1 only
 * when col + 1 < kN), drow (the output row). */
static void emit_epilogue(jit__sb_t *sb, jit_epilogue_t ep) {
    jit__sb_append(
        sb, "/* Scale, apply the epilogue in FP32, round once to BF16 and store. Thread (g, t) of "
            "a warp\n"
            " * holds rows g and g+8 and B rows 2t, 2t+1 of each m16n8 tile: a BF16 pair for "
            "linear and\n"
            " * linear_add, and for linear_swiglu a whole gate/up pair (B rows 2j, 2j+1), so the "
            "SwiGLU\n"
            " * needs no data from other threads. Nothing out of range is stored. */\n");
    jit__sb_append(sb, "static __device__ __forceinline__ void epilogue(const "
                       "jitgemm_mma_sync_params &p,\n"
                       "                                                const float "
                       "(&acc)[kMmaM][kMmaN][4], i64 m0,\n"
                       "                                                i64 n0, int warp_m, int "
                       "warp_n, int lane) {\n");
    jit__sb_line(sb, 1, "const int g = lane >> 2, t = lane & 3;");
    jit__sb_line(sb, 0, "#pragma unroll");
    jit__sb_line(sb, 1, "for (int i = 0; i < kMmaM; i++) {");
    jit__sb_line(sb, 0, "#pragma unroll");
    jit__sb_line(sb, 2, "for (int h = 0; h < 2; h++) {");
    jit__sb_line(sb, 3, "const i64 row = m0 + warp_m * kWarpTileM + i * 16 + g + h * 8;");
    jit__sb_line(sb, 3, "if (row >= p.m)");
    jit__sb_line(sb, 4, "continue;");
    jit__sb_line(sb, 3, "const float row_scale = p.alpha * p.sa[row];");
    jit__sb_line(sb, 3, "u16 *drow = (u16 *)p.d + row * p.ldd;");
    if (ep == JIT_EPILOGUE_LINEAR_ADD)
        jit__sb_line(sb, 3, "const u16 *rrow = (const u16 *)p.residual + row * p.ldr;");
    jit__sb_line(sb, 0, "#pragma unroll");
    jit__sb_line(sb, 3, "for (int j = 0; j < kMmaN; j++) {");
    jit__sb_line(sb, 4, "const i64 col = n0 + warp_n * kWarpTileN + j * 8 + 2 * t;");
    jit__sb_line(sb, 4, "if (col >= kN)");
    jit__sb_line(sb, 5, "continue;");
    jit__sb_line(sb, 4, "const float v0 = acc[i][j][2 * h] * row_scale * p.sb[col];");
    switch (ep) {
    case JIT_EPILOGUE_LINEAR_SWIGLU:
        /* n is even, so col + 1 < kN whenever col < kN. */
        jit__sb_line(sb, 4, "const float v1 = acc[i][j][2 * h + 1] * row_scale * p.sb[col + 1];");
        jit__sb_line(sb, 4, "/* silu(gate) * up, silu(x) = x / (1 + e^-x) */");
        jit__sb_line(sb, 4,
                     "const float gate_silu = v0 / (1.0f + exp2_approx(-v0 * "
                     "1.4426950408889634f));");
        jit__sb_line(sb, 4, "drow[col >> 1] = to_bf16(gate_silu * v1);");
        break;
    case JIT_EPILOGUE_LINEAR_ADD:
        jit__sb_line(sb, 4, "if (col + 1 < kN) {");
        jit__sb_line(sb, 5, "const u32 res = *(const u32 *)(rrow + col);");
        jit__sb_line(sb, 5, "const float v1 = acc[i][j][2 * h + 1] * row_scale * p.sb[col + 1];");
        jit__sb_line(sb, 5, "*(u32 *)(drow + col) = pack_bf16x2(v0 + bits_to_float(res << 16),");
        jit__sb_line(sb, 5,
                     "                                   v1 + bits_to_float(res & "
                     "0xFFFF0000u));");
        jit__sb_line(sb, 4, "} else {");
        jit__sb_line(sb, 5, "drow[col] = to_bf16(v0 + bits_to_float((u32)rrow[col] << 16));");
        jit__sb_line(sb, 4, "}");
        break;
    default:
        jit__sb_line(sb, 4, "if (col + 1 < kN) {");
        jit__sb_line(sb, 5, "const float v1 = acc[i][j][2 * h + 1] * row_scale * p.sb[col + 1];");
        jit__sb_line(sb, 5, "*(u32 *)(drow + col) = pack_bf16x2(v0, v1);");
        jit__sb_line(sb, 4, "} else {");
        jit__sb_line(sb, 5, "drow[col] = to_bf16(v0);");
        jit__sb_line(sb, 4, "}");
        break;
    }
    jit__sb_line(sb, 3, "}");
    jit__sb_line(sb, 2, "}");
    jit__sb_line(sb, 1, "}");
    jit__sb_append(sb, "}\n\n");
}

static void emit_kernel(jit__sb_t *sb, const char *name) {
    jit__sb_append(sb, "/* ---- the kernel ---- */\n\n");
    jit__sb_append(sb, "/* Grid: x over tiles of kTileN B rows, y over tiles of kTileM tokens. "
                       "The K loop keeps\n"
                       " * kStages - 1 tiles in flight; every iteration commits one cp.async "
                       "group (empty ones\n"
                       " * too), so wait_group<kStages - 2> always means \"tile kt has landed\". "
                       "The barrier after\n"
                       " * it also proves every warp is done with the stage the next copy "
                       "overwrites. */\n");
    jit__sb_printf(sb,
                   "extern \"C\" __global__ void __launch_bounds__(kThreads)\n"
                   "%s(const jitgemm_mma_sync_params p) {\n",
                   name);
    jit__sb_append(
        sb,
        "    extern __shared__ __align__(1024) u8 smem[];\n"
        "    const int tid = (int)threadIdx.x, lane = tid & 31, warp = tid >> 5;\n"
        "    const int warp_m = warp / kWarpsN, warp_n = warp % kWarpsN;\n"
        "    const i64 n0 = (i64)blockIdx.x * kTileN, m0 = (i64)blockIdx.y * kTileM;\n"
        "    if (m0 >= p.m)\n"
        "        return;\n"
        "    const u32 base = smem_u32(smem);\n"
        "\n"
        "    float acc[kMmaM][kMmaN][4];\n"
        "#pragma unroll\n"
        "    for (int i = 0; i < kMmaM; i++)\n"
        "#pragma unroll\n"
        "        for (int j = 0; j < kMmaN; j++)\n"
        "#pragma unroll\n"
        "            for (int e = 0; e < 4; e++)\n"
        "                acc[i][j][e] = 0.0f;\n"
        "\n"
        "#pragma unroll\n"
        "    for (int s = 0; s < kStages - 1; s++) {\n"
        "        if (s < kKTiles)\n"
        "            load_stage(p, base + s * kStageBytes, m0, n0, s, tid);\n"
        "        cp_async_commit();\n"
        "    }\n"
        "    for (int kt = 0; kt < kKTiles; kt++) {\n"
        "        cp_async_wait<kStages - 2>();\n"
        "        __syncthreads();\n"
        "        const int next = kt + kStages - 1;\n"
        "        if (next < kKTiles)\n"
        "            load_stage(p, base + (next % kStages) * kStageBytes, m0, n0, next, tid);\n"
        "        cp_async_commit();\n"
        "        compute_stage(base + (kt % kStages) * kStageBytes, warp_m, warp_n, lane, acc);\n"
        "    }\n"
        "    cp_async_wait<0>();\n"
        "    epilogue(p, acc, m0, n0, warp_m, warp_n, lane);\n"
        "}\n");
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
    emit_types_and_params(&sb);
    emit_constants(&sb, plan, &s);
    jit__sb_append(&sb, k_ptx_wrappers);
    /* Only the wrappers the epilogue uses, so NVRTC has no unused-function warnings to report. */
    if (plan->spec.epilogue != JIT_EPILOGUE_LINEAR_SWIGLU)
        jit__sb_append(&sb, k_ptx_pack_bf16x2);
    if (plan->spec.epilogue == JIT_EPILOGUE_LINEAR_ADD)
        jit__sb_append(&sb, k_ptx_bits_to_float);
    if (plan->spec.epilogue == JIT_EPILOGUE_LINEAR_SWIGLU)
        jit__sb_append(&sb, k_ptx_exp2);
    jit__sb_append(&sb, k_swizzle);
    emit_load_stage(&sb, &s);
    jit__sb_append(&sb, k_compute_stage);
    emit_epilogue(&sb, plan->spec.epilogue);
    emit_kernel(&sb, jit__plan_kernel_name(plan));

    if (jit__sb_failed(&sb)) {
        jit__sb_free(&sb);
        return jit__fail(d, JIT_OUT_OF_MEMORY, "out of memory generating the mma.sync kernel");
    }
    *source = jit__sb_take(&sb);
    return JIT_OK;
}
