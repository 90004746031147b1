/*
 * The tcgen05 generator and its host side, checked without a Blackwell or Rubin GPU (none was
 * available; nothing here executes a kernel):
 *
 * - a representative subset of the variant matrix compiles (NVRTC -> PTX -> ptxas through
 *   nvJitLink) for sm_100a and sm_103a with an NVRTC older than 13.4 when one is installed (the
 *   system toolkit), and for sm_107a natively with NVRTC >= 13.4 (skipped with a message when
 *   none is found); a ptxas error fails, registers must be reported, spills must be zero and
 *   the plan's SMEM must fit the arch;
 * - the PTX spells what the plan says (kind, block-scale suffix, cta_group, collector hints,
 *   TMEM column count) and holds no .global data; the generated source's plan constants (idesc,
 *   SMEM descriptors) equal the host encoders', it includes only the family's device files, and
 *   generation is deterministic;
 * - the sm_107a fallback (sm_100f cubin, sm_100a check) is refused with a clear message: it
 *   would run sm_100 K, and needs exclusive TMEM for more than 512 columns;
 * - the host side encodes every tensor map within the TMA rules of cuda.h (checked by a
 *   recording driver table), the boxes add up to the plan's expect_tx bytes, and the launch
 *   carries the preferred and fallback cluster shapes with a floor-divided grid.
 * The full matrix is scripts/tcgen05-checks/compile-matrix.sh (bench/compile_matrix.c).
 */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "compile.h"
#include "device_files.h"
#include "family.h"
#include "ptx_check.h"
#include "tcgen05/generate.h"
#include "tcgen05/launch.h"
#include "toolchain.h"

/* ---- helpers ----------------------------------------------------------------------------- */

typedef struct fmt {
    const char *name;
    jit_dtype_t a, b;
    jit_scale_mode_t scales;
} fmt_t;

static const fmt_t NVFP4 = {"nvfp4", JIT_DTYPE_E2M1, JIT_DTYPE_E2M1, JIT_SCALE_UE4M3_16};
static const fmt_t MXFP4 = {"mxfp4", JIT_DTYPE_E2M1, JIT_DTYPE_E2M1, JIT_SCALE_UE8M0_32};
static const fmt_t MXFP8 = {"mxfp8", JIT_DTYPE_E4M3, JIT_DTYPE_E4M3, JIT_SCALE_UE8M0_32};
/* FP8 activations (A) with E2M1 weights (B): kind::mxf8f6f4. */
static const fmt_t MIXED = {"mixed", JIT_DTYPE_E4M3, JIT_DTYPE_E2M1, JIT_SCALE_UE8M0_32};
static const fmt_t UE5M3 = {"fp4/ue5m3", JIT_DTYPE_E2M1, JIT_DTYPE_E2M1, JIT_SCALE_UE5M3_16};

static const jit__arch_profile_t *arch(const char *name) {
    const jit__arch_profile_t *a = jit__arch_find(name);
    cr_assert_not_null(a, "%s", name);
    return a;
}

static void plan_of(const char *archname, fmt_t f, int cta_group, int tile_n, int breuse,
                    jit_epilogue_t epi, jit__plan_t *plan) {
    jit__gemm_spec_t s = {.n = 4096,
                          .k = 4096,
                          .a = f.a,
                          .b = f.b,
                          .out = JIT_DTYPE_BF16,
                          .scales = f.scales,
                          .epilogue = epi};
    const jit__arch_profile_t *ap = arch(archname);
    jit__tc_variant_t v = {cta_group, tile_n, breuse};
    jit__diag_t d;
    jit__diag_init(&d);
    jit_status_t st = jit__plan_tc_make_variant(&s, 5, ap->default_sm_count, ap, &v, plan, &d);
    cr_assert_eq(st, JIT_OK, "plan %s %s cta_group %d N %d breuse %d: %s", archname, f.name,
                 cta_group, tile_n, breuse, d.msg);
}

/* A key as the generator sees it, for a build the key itself refuses to make. */
static void hand_key(jit__key_t *key, const char *target, int fallback) {
    memset(key, 0, sizeof(*key));
    snprintf(key->target, sizeof(key->target), "%s", target);
    key->fallback = fallback;
}

static char *generate(const jit__plan_t *plan, const char *target, int fallback) {
    jit__key_t key;
    jit__key_make(plan, target, fallback, &key, NULL);
    char *src = NULL;
    jit__diag_t d;
    jit__diag_init(&d);
    jit_status_t st = jit__generate(plan, &key, &src, &d);
    cr_assert_eq(st, JIT_OK, "generate for %s: %s", target, d.msg);
    cr_assert_not_null(src);
    return src;
}

static int count(const char *hay, const char *needle) {
    int n = 0;
    for (const char *p = strstr(hay, needle); p; p = strstr(p + 1, needle))
        n++;
    return n;
}

/* A toolchain older than 13.4 (the system NVRTC here), else the newest one. */
static const jit__toolchain_t *pre_rubin_toolchain(void) {
    const jit__toolchain_t *tc = jit__toolchain_newest_up_to(13, 3);
    if (tc)
        return tc;
    jit__diag_t d;
    jit__diag_init(&d);
    if (jit__toolchain_get(NULL, &tc, &d) != JIT_OK)
        cr_skip("no NVRTC found: %s", d.msg);
    return tc;
}

static const jit__toolchain_t *rubin_toolchain(void) {
    const jit__toolchain_t *tc;
    jit__diag_t d;
    jit__diag_init(&d);
    if (jit__toolchain_get(NULL, &tc, &d) != JIT_OK || !jit__toolchain_supports(tc, 107))
        cr_skip("no NVRTC >= 13.4 with sm_107a found (run scripts/setup.sh): sm_107a native "
                "compiles not checked");
    return tc;
}

static const char *device_text(const char *name) {
    const jit__device_file_t *f = jit__device_file(name);
    cr_assert_not_null(f, "device file %s is not embedded", name);
    return f->text;
}

static void assert_no_global_data(const char *ptx, const char *what) {
    const char *g = ptx_global_data_line(ptx);
    if (g) {
        const char *eol = strchr(g, '\n');
        cr_assert_fail("%s: .global data in the PTX: %.*s", what, (int)(eol ? eol - g : 80), g);
    }
}

/* The PTX of the plan's source for `target` (NVRTC -> LTO-IR -> nvJitLink -ptx, no cubin). */
static char *ptx_of(const jit__toolchain_t *tc, const char *src, const char *target) {
    jit__compiled_t c;
    memset(&c, 0, sizeof(c));
    jit__diag_t d;
    jit__diag_init(&d);
    jit_status_t st = jit__compile(tc, src, "tcgen05.cu", target, JIT__COMPILE_PTX, &c, &d);
    cr_assert_eq(st, JIT_OK, "PTX for %s: %s\n%s", target, d.msg, d.log ? d.log : "");
    cr_assert_not_null(c.ptx);
    char *ptx = strdup(c.ptx);
    jit__compiled_free(&c);
    jit__diag_clear(&d);
    return ptx;
}

/* Compile the plan's source for `target` and hold ptxas to the rules: no error, a register
 * count, no spills, the plan's SMEM within the arch budget, the PTX ISA version it needs. */
static void compile_checked(const jit__toolchain_t *tc, const jit__plan_t *plan, const char *target,
                            int fallback, const char *what) {
    char *src = generate(plan, target, fallback);
    jit__compiled_t c;
    memset(&c, 0, sizeof(c));
    jit__diag_t d;
    jit__diag_init(&d);
    jit_status_t st =
        jit__compile(tc, src, "tcgen05.cu", target, JIT__COMPILE_CUBIN_AND_PTX, &c, &d);
    cr_assert_eq(st, JIT_OK, "%s for %s (NVRTC %d.%d): %s\n%s", what, target, tc->id.nvrtc_major,
                 tc->id.nvrtc_minor, d.msg, d.log ? d.log : "");
    cr_assert_gt(c.cubin_size, 0);
    cr_assert_gt(c.registers, 0, "%s: no register count in the ptxas report:\n%s", what, c.log);
    cr_assert_eq(c.spill_stores + c.spill_loads, 0, "%s for %s spills:\n%s", what, target, c.log);
    uint32_t smem = plan->smem_bytes + (uint32_t)c.smem_static_bytes;
    cr_assert_leq(smem, plan->arch->smem_per_cta, "%s: %u bytes of SMEM > %u on %s", what, smem,
                  plan->arch->smem_per_cta, plan->arch->name);
    cr_assert(strstr(c.ptx, ".entry jitgemm_tcgen05_blockscaled"), "%s", what);
    assert_no_global_data(c.ptx, what);
    int vmaj = 0, vmin = 0, nmaj = 0, nmin = 0;
    const char *v = strstr(c.ptx, ".version ");
    cr_assert(v && sscanf(v, ".version %d.%d", &vmaj, &vmin) == 2);
    /* A fallback build needs only the .block16/.block32 spelling (PTX 8.8), not sm_107a's 9.4. */
    cr_assert_eq(
        sscanf(fallback ? "8.8" : jit__tc_of(plan)->ptx_version_min, "%d.%d", &nmaj, &nmin), 2);
    cr_assert(vmaj * 10 + vmin >= nmaj * 10 + nmin, "%s: PTX %d.%d < %s", what, vmaj, vmin,
              jit__tc_of(plan)->ptx_version_min);
    jit__compiled_free(&c);
    jit__diag_clear(&d);
    free(src);
}

/* The rest of the PTX line that starts with `prefix`, or NULL. */
static const char *ptx_line(const char *ptx, const char *prefix, char *line, size_t size) {
    const char *p = strstr(ptx, prefix);
    if (!p)
        return NULL;
    const char *eol = strchr(p, '\n');
    size_t n = eol ? (size_t)(eol - p) : strlen(p);
    if (n >= size)
        n = size - 1;
    memcpy(line, p, n);
    line[n] = '\0';
    return line;
}

static int ends_with(const char *s, const char *tail) {
    size_t n = strlen(s), m = strlen(tail);
    return n >= m && !strcmp(s + n - m, tail);
}

/* The PTX spells what the plan says; the generated source carries the plan's constants. */
static void check_spellings(const jit__plan_t *plan, const char *src, const char *ptx, int native) {
    const jit__tc_plan_t *tc = jit__tc_of(plan);
    char want[256], line[512];
    snprintf(want, sizeof(want), "tcgen05.mma.cta_group::%d.kind::%s.block_scale%s", tc->cta_group,
             jit__tc_kind_name(tc->kind), tc->kind_suffix);
    cr_assert(strstr(ptx, want), "missing %s", want);
    /* One kernel cannot mix cta_group::1 and ::2 tcgen05 instructions (ptxas error). */
    cr_assert_null(strstr(ptx, tc->cta_group == 2 ? ".cta_group::1" : ".cta_group::2"));
    if (tc->kind == JIT_TC_KIND_MXF8F6F4) {
        cr_assert_null(strstr(ptx, ".block16"));
    }
    if (plan->spec.scales == JIT_SCALE_UE4M3_16 || plan->spec.scales == JIT_SCALE_UE5M3_16)
        cr_assert(strstr(ptx, ".block_scale.block16"));
    if (plan->spec.scales == JIT_SCALE_UE8M0_32 && tc->kind != JIT_TC_KIND_MXF8F6F4)
        cr_assert(strstr(ptx, ".block_scale.block32"));
    cr_assert_null(strstr(ptx, "scale_vec"), "the family-safe .blockN spelling only");

    /* The column count is an immediate: the line ends with ", <columns>;". */
    int exclusive = tc->tmem.allocated_columns > 512;
    char cols[32];
    snprintf(cols, sizeof(cols), ", %d;", tc->tmem.allocated_columns);
    snprintf(want, sizeof(want), "tcgen05.alloc.cta_group::%d%s.sync.aligned.shared::cta.b32 [",
             tc->cta_group, exclusive ? ".exclusive" : "");
    cr_assert(ptx_line(ptx, want, line, sizeof(line)), "missing %s", want);
    cr_assert(ends_with(line, cols), "%s does not allocate %s", line, cols);
    snprintf(want, sizeof(want), "tcgen05.dealloc.cta_group::%d%s.sync.aligned.b32 ", tc->cta_group,
             exclusive ? ".exclusive" : "");
    cr_assert(ptx_line(ptx, want, line, sizeof(line)), "missing %s", want);
    cr_assert(ends_with(line, cols), "%s does not free %s", line, cols);
    if (!exclusive)
        cr_assert_null(strstr(ptx, ".exclusive"));

    int collectors = tc->breuse && native;
    cr_assert_eq(strstr(ptx, ".collector::b::fill") != NULL, collectors);
    cr_assert_eq(strstr(ptx, ".collector::b::lastuse") != NULL, collectors);
    assert_no_global_data(ptx, "tcgen05 kernel");

    /* The descriptor constants are the host encoders' values. */
    jit__tc_idesc_params_t ip = {.kind = tc->kind,
                                 .a = plan->spec.a,
                                 .b = plan->spec.b,
                                 .sf = tc->scale_format,
                                 .sf_vec = tc->sf_vec,
                                 .m = tc->instr_m,
                                 .n = tc->instr_n,
                                 .k = tc->instr_k,
                                 .cta_group = tc->cta_group};
    uint32_t idesc = 0;
    jit__diag_t d;
    jit__diag_init(&d);
    cr_assert_eq(jit__tc_idesc(plan->arch, &ip, &idesc, &d), JIT_OK, "%s", d.msg);
    snprintf(want, sizeof(want), "    IDESC = 0x%08Xu,", idesc);
    cr_assert(strstr(src, want), "missing %s", want);
    snprintf(want, sizeof(want), "    A_DESC_HI = 0x%016llXull,",
             (unsigned long long)jit__tc_smem_desc(jit__tc_smem_desc_addr_bits(plan->arch), 0,
                                                   tc->a.lbo, tc->a.sbo, tc->a.swizzle, 0));
    cr_assert(strstr(src, want), "missing %s", want);
    snprintf(want, sizeof(want), "    B_DESC_HI = 0x%016llXull,",
             (unsigned long long)jit__tc_smem_desc(jit__tc_smem_desc_addr_bits(plan->arch), 0,
                                                   tc->b.lbo, tc->b.sbo, tc->b.swizzle, 0));
    cr_assert(strstr(src, want), "missing %s", want);
    /* Descriptors take the absolute address in the arch's field width, and the kernel traps
     * at start if its last operand stage would not fit it (a device that reserves more shared
     * memory than the arch profile says). */
    snprintf(want, sizeof(want), "    DESC_ADDR_MASK = %u,",
             (1u << jit__tc_smem_desc_addr_bits(plan->arch)) - 1u);
    cr_assert(strstr(src, want), "missing %s", want);
    snprintf(want, sizeof(want), "    OPERAND_END = %u,", tc->smem.operand_end);
    cr_assert(strstr(src, want), "missing %s", want);
    /* Only the offset in the window: the address's rank bits (bit 24 up) made every odd CTA
     * of a cluster trap (found by the functional model, tests/fmodel). */
    cr_assert(strstr(device_text("tcgen05/device/kernel.cuh"),
                     "if ((c.smem & 0x00FFFFFFu) + P::OPERAND_END > P::DESC_ADDR_LIMIT)\n"
                     "            device_trap();"));
    /* The SF IDs are masked before and after the shift (trap: sign extension). */
    const char *mma = device_text("tcgen05/device/mma.cuh");
    cr_assert(strstr(mma, "return hi | (u64)((addr >> 4) & P::DESC_ADDR_MASK);"));
    cr_assert(!strstr(mma, "0x3FFFF"));
    cr_assert(strstr(mma, "(((sfa_tmem & 0xC0000000u) >> 30) << 29)"));
    cr_assert(strstr(mma, "(((sfb_tmem & 0xC0000000u) >> 30) << 4)"));

    /* One tcgen05.cp per 512-byte scale chunk of a stage, one MMA per instruction and M-half. */
    int halves = tc->breuse ? 2 : 1;
    int chunks = tc->sfa_chunks_k * (halves + tc->sfb_row_blocks);
    /* The compiler may emit the K-tile body more than once (peeled or unswitched on the
     * accumulate flag), so the counts are checked per copy of the body. */
    int copies = count(ptx, "tcgen05.cp.cta_group"), mmas = count(ptx, "tcgen05.mma.cta_group");
    int bodies = copies / chunks;
    cr_assert(bodies >= 1 && copies == bodies * chunks, "%d copies for %d chunks (%s cg%d N%d)",
              copies, chunks, plan->arch->name, tc->cta_group, plan->tile_n);
    cr_assert_eq(mmas, bodies * tc->instrs_per_tile_k * halves, "%d MMAs in %d bodies", mmas,
                 bodies);
    /* The generated code includes the family's kernel file and nothing else. */
    const char *inc = strstr(src, "#include");
    cr_assert(inc && !strncmp(inc, "#include \"tcgen05/device/kernel.cuh\"\n",
                              strlen("#include \"tcgen05/device/kernel.cuh\"\n")),
              "generated code includes the family's device files");
    cr_assert_null(strstr(inc + 1, "#include"), "generated code includes one file only");
}

static const jit__toolchain_t *rubin_toolchain(void);

static void check_plan_source(const char *archname, fmt_t f, int cg, int tile_n, int breuse) {
    const jit__toolchain_t *tc = rubin_toolchain();
    jit__plan_t plan;
    plan_of(archname, f, cg, tile_n, breuse, JIT_EPILOGUE_LINEAR, &plan);
    char *src = generate(&plan, plan.arch->native_target, 0);
    char *ptx = ptx_of(tc, src, plan.arch->native_target);
    check_spellings(&plan, src, ptx, 1);
    free(ptx);
    free(src);
}

/* ---- compiles ---------------------------------------------------------------------------- */

static void compile_subset(const jit__toolchain_t *tc, const char *archname) {
    jit__plan_t plan;
    plan_of(archname, NVFP4, 1, 128, -1, JIT_EPILOGUE_LINEAR, &plan);
    compile_checked(tc, &plan, archname, 0, "NVFP4 1-CTA N128");
    plan_of(archname, MXFP8, 2, 256, -1, JIT_EPILOGUE_LINEAR_ADD, &plan);
    compile_checked(tc, &plan, archname, 0, "MXFP8 2-CTA N256 linear_add");
    plan_of(archname, MIXED, 2, 256, -1, JIT_EPILOGUE_LINEAR_SWIGLU, &plan);
    compile_checked(tc, &plan, archname, 0, "FP8 x FP4 2-CTA N256 swiglu");
}

Test(codegen_tc, compiles_for_sm_100a, .timeout = 300) {
    compile_subset(pre_rubin_toolchain(), "sm_100a");
}

Test(codegen_tc, compiles_for_sm_103a, .timeout = 300) {
    compile_subset(pre_rubin_toolchain(), "sm_103a");
}

Test(codegen_tc, compiles_for_sm_107a_natively, .timeout = 300) {
    const jit__toolchain_t *tc = rubin_toolchain();
    compile_subset(tc, "sm_107a");
    jit__plan_t plan;
    plan_of("sm_107a", NVFP4, 2, 256, 1, JIT_EPILOGUE_LINEAR, &plan);
    cr_assert_eq(jit__tc_of(&plan)->tmem.allocated_columns, 576, "B-reuse at N 256 fills TMEM");
    compile_checked(tc, &plan, "sm_107a", 0, "NVFP4 B-reuse M512 N256");
    plan_of("sm_107a", UE5M3, 2, 256, -1, JIT_EPILOGUE_LINEAR, &plan);
    compile_checked(tc, &plan, "sm_107a", 0, "FP4 with UE5M3 scales");
}

/* The sm_100a overlapping accumulators (2 x 256 + scales > 512): reverse traversal and an
 * early release at the plan's sub-tile. */
Test(codegen_tc, overlapping_accumulators_on_sm_100a, .timeout = 120) {
    jit__plan_t plan;
    plan_of("sm_100a", NVFP4, 2, 256, -1, JIT_EPILOGUE_LINEAR, &plan);
    cr_assert(jit__tc_of(&plan)->tmem.overlap, "2 x 256 + 48 columns do not fit in 512");
    const jit__toolchain_t *tc = pre_rubin_toolchain();
    char *src = generate(&plan, "sm_100a", 0);
    char *ptx = ptx_of(tc, src, "sm_100a");
    check_spellings(&plan, src, ptx, 1);
    free(ptx);
    char want[96];
    snprintf(want, sizeof(want), "    ACC_COL1 = %d,", jit__tc_of(&plan)->tmem.acc[1].first_column);
    cr_assert(strstr(src, want), "missing %s", want);
    snprintf(want, sizeof(want), "    RELEASE_AFTER = %d,",
             jit__tc_of(&plan)->tmem.early_release_subtile + 1);
    cr_assert(strstr(src, want), "missing %s", want);
    cr_assert(strstr(src, "    REVERSE_DRAIN = 1,"), "stage 0 drains backwards");
    cr_assert(strstr(device_text("tcgen05/device/epilogue.cuh"),
                     "sub = as == 0 ? P::EPI_SUBTILES - 1 - j : j"));
    free(src);
    compile_checked(tc, &plan, "sm_100a", 0, "NVFP4 2-CTA N256 overlapping accumulators");
    /* sm_107a has the columns: the same tile gets disjoint stages and no reverse drain. */
    plan_of("sm_107a", NVFP4, 2, 256, -1, JIT_EPILOGUE_LINEAR, &plan);
    cr_assert_not(jit__tc_of(&plan)->tmem.overlap);
    src = generate(&plan, "sm_107a", 0);
    cr_assert_null(strstr(src, "RELEASE_AFTER"));
    cr_assert(strstr(src, "    REVERSE_DRAIN = 0,"), "no reverse drain");
    free(src);
}

/* Plan constants are enumerators and the kernel is a template: nothing may become .global data
 * (a namespace-scope constexpr under -default-device would). */
Test(codegen_tc, no_global_data_in_the_ptx, .timeout = 300) {
    cr_assert_not_null(ptx_global_data_line("\t.entry k(\n.visible .global .align 4 .u32 x;\n"),
                       "the detector sees a .visible .global variable");
    cr_assert_not_null(ptx_global_data_line(".global .align 8 .b8 t[16];\n"));
    cr_assert_null(ptx_global_data_line(".visible .entry k(\n\tld.global.u32 %r1, [%rd1];\n"),
                   "an .entry and a global load are no data");
    const jit__toolchain_t *old = pre_rubin_toolchain();
    jit__plan_t plan;
    const struct {
        const char *arch;
        fmt_t f;
        int cg, n, breuse;
        jit_epilogue_t epi;
    } cases[] = {{"sm_100a", NVFP4, 1, 128, -1, JIT_EPILOGUE_LINEAR},
                 {"sm_100a", MIXED, 2, 256, -1, JIT_EPILOGUE_LINEAR_SWIGLU},
                 {"sm_107a", NVFP4, 2, 256, 1, JIT_EPILOGUE_LINEAR_ADD},
                 {"sm_107a", MXFP8, 1, 192, -1, JIT_EPILOGUE_LINEAR}};
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        const jit__toolchain_t *tc = old;
        if (!strcmp(cases[i].arch, "sm_107a"))
            tc = rubin_toolchain();
        plan_of(cases[i].arch, cases[i].f, cases[i].cg, cases[i].n, cases[i].breuse, cases[i].epi,
                &plan);
        char *src = generate(&plan, cases[i].arch, 0);
        char *ptx = ptx_of(tc, src, cases[i].arch);
        assert_no_global_data(ptx, cases[i].arch);
        free(ptx);
        free(src);
    }
}

/* ---- the sm_107a fallback ---------------------------------------------------------------- */

/* The sm_107a B-reuse plan's native build keeps its PTX 9.4 collector hints. (Its fallback build
 * is refused: see sm_107a_fallback_refuses_widened_k.) */
Test(codegen_tc, sm_107a_native_breuse_keeps_collector_hints, .timeout = 300) {
    jit__plan_t plan;
    plan_of("sm_107a", NVFP4, 2, 64, 1, JIT_EPILOGUE_LINEAR, &plan);
    const jit__toolchain_t *rt = NULL;
    jit__diag_t d;
    jit__diag_init(&d);
    if (jit__toolchain_get(NULL, &rt, &d) != JIT_OK || !jit__toolchain_supports(rt, 107))
        cr_skip("no NVRTC that targets sm_107a; run scripts/setup.sh");
    char *native = generate(&plan, "sm_107a", 0);
    char *native_ptx = ptx_of(rt, native, "sm_107a");
    check_spellings(&plan, native, native_ptx, 1);
    free(native_ptx);
    free(native);
}

Test(codegen_tc, sm_107a_fallback_refuses_a_576_column_plan) {
    jit__plan_t plan;
    plan_of("sm_107a", NVFP4, 2, 256, 1, JIT_EPILOGUE_LINEAR, &plan);
    jit__key_t key;
    jit__diag_t d;
    jit__diag_init(&d);
    /* The key runs the generator, so it is refused there first, with the same reason. */
    cr_assert_eq(jit__key_make(&plan, "sm_100f", 1, &key, &d), JIT_TOOLCHAIN_NOT_FOUND);
    cr_assert(strstr(d.msg, "576 TMEM columns"), "%s", d.msg);
    hand_key(&key, "sm_100f", 1);
    char *src = (char *)"untouched";
    jit__diag_init(&d);
    cr_assert_eq(jit__generate(&plan, &key, &src, &d), JIT_TOOLCHAIN_NOT_FOUND);
    cr_assert_null(src);
    cr_assert(strstr(d.msg, "576 TMEM columns") && strstr(d.msg, "exclusive") &&
                  strstr(d.msg, "13.4"),
              "%s", d.msg);
}

/* An sm_100f cubin runs sm_100 MMA semantics (the scale-vector mode and K
 * are in the opcode: UTCOMMA.4X, K=64 FP4), while an sm_107a plan's descriptor asks for its
 * widened K (128 FP4, 64 mxf8f6f4). Every block-scaled sm_107a plan is refused for the fallback
 * build, with a message that says why and what to install, even where TMEM would fit. */
Test(codegen_tc, sm_107a_fallback_refuses_widened_k) {
    const struct {
        fmt_t f;
        int cta_group, tile_n;
    } rows[] = {{NVFP4, 1, 128}, {MXFP4, 2, 64}, {MIXED, 1, 64}, {MXFP8, 2, 192}};
    for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
        jit__plan_t plan;
        plan_of("sm_107a", rows[i].f, rows[i].cta_group, rows[i].tile_n, -1, JIT_EPILOGUE_LINEAR,
                &plan);
        cr_assert_leq(jit__tc_of(&plan)->tmem.allocated_columns, 512);
        jit__key_t key;
        jit__diag_t d;
        jit__diag_init(&d);
        cr_assert_eq(jit__key_make(&plan, "sm_100f", 1, &key, &d), JIT_TOOLCHAIN_NOT_FOUND);
        hand_key(&key, "sm_100f", 1);
        char *src = (char *)"untouched";
        jit__diag_init(&d);
        cr_assert_eq(jit__generate(&plan, &key, &src, &d), JIT_TOOLCHAIN_NOT_FOUND, "%s",
                     rows[i].f.name);
        cr_assert_null(src);
        cr_assert(strstr(d.msg, "sm_100f") && strstr(d.msg, "K=") && strstr(d.msg, "13.4"), "%s",
                  d.msg);
        /* The native build of the same plan is unaffected. */
        jit__key_make(&plan, "sm_107a", 0, &key, NULL);
        jit__diag_init(&d);
        cr_assert_eq(jit__generate(&plan, &key, &src, &d), JIT_OK, "%s", d.msg);
        free(src);
    }
}

/* ---- source properties ------------------------------------------------------------------- */

Test(codegen_tc, spellings_follow_the_plan) {
    check_plan_source("sm_100a", NVFP4, 1, 128, -1);
    check_plan_source("sm_100a", MXFP4, 1, 256, -1);
    check_plan_source("sm_100a", MXFP8, 2, 256, -1);
    check_plan_source("sm_100a", MIXED, 1, 64, -1);
    check_plan_source("sm_103a", MIXED, 2, 192, -1);
    check_plan_source("sm_107a", NVFP4, 1, 128, -1);
    check_plan_source("sm_107a", MIXED, 2, 256, -1);
    check_plan_source("sm_107a", MXFP4, 2, 192, 1);
    check_plan_source("sm_107a", UE5M3, 1, 64, -1);
}

Test(codegen_tc, mixed_precision_reads_e2m1_as_code_5) {
    jit__plan_t plan;
    plan_of("sm_107a", MIXED, 1, 128, -1, JIT_EPILOGUE_LINEAR, &plan);
    cr_assert_eq(jit__tc_of(&plan)->kind, JIT_TC_KIND_MXF8F6F4);
    jit__tc_idesc_fields_t f;
    jit__tc_idesc_decode(jit__tc_of(&plan)->idesc, jit__tc_of(&plan)->kind, plan.arch, &f);
    cr_assert_eq(f.a_format, 0u, "E4M3 under mxf8f6f4");
    cr_assert_eq(f.b_format, 5u, "E2M1 under mxf8f6f4 is 5; 1 would read as E5M2");
    cr_assert_eq(f.k, 64);
    char *src = generate(&plan, "sm_107a", 0);
    cr_assert(strstr(src, "kind::mxf8f6f4"));
    /* The packed FP4 operand of an sm_107a mixed MMA is SW64 with 64-byte rows. */
    cr_assert_eq(jit__tc_of(&plan)->b.swizzle, JIT_TC_SWIZZLE_64B);
    cr_assert(strstr(src, "    B_BOX_BYTES = 64,"));
    free(src);
}

/* B-reuse: per K-block the copies go keep-SFA, SFB, reuse-SFA, then the keep and reuse MMAs,
 * which read the same B descriptor. The order is the template's (mma.cuh), the constants are
 * tied to the planner's by the generated static_asserts, and the PTX shows the sequence. */
Test(codegen_tc, breuse_interleaves_scale_copies_per_k_block, .timeout = 120) {
    const char *mma = device_text("tcgen05/device/mma.cuh");
    const char *order[] = {"sf_copies<0, 0, K>(st);", "sf_copies<1, 0, K>(st);",
                           "sf_copies<0, 1, K>(st);", "mma_call<KEEP, 0, K>(st);",
                           "mma_call<REUSE, 1, K>(st);"};
    const char *at = strstr(mma, "if constexpr (P::HALVES == 2)");
    cr_assert_not_null(at);
    for (size_t i = 0; i < sizeof(order) / sizeof(order[0]); i++) {
        const char *next = strstr(at, order[i]);
        cr_assert_not_null(next, "copy/MMA order inside a K-block: %s", order[i]);
        at = next;
    }
    /* Both MMAs of a K-block read B at b_offset(K): one expression serves both halves. */
    cr_assert_eq(count(mma, "b_offset(K)"), 1);
    const jit__toolchain_t *tc = rubin_toolchain();
    jit__plan_t plan;
    plan_of("sm_107a", NVFP4, 2, 256, 1, JIT_EPILOGUE_LINEAR, &plan);
    char *src = generate(&plan, "sm_107a", 0);
    char want[160];
    snprintf(want, sizeof(want), "Mma::sf_column(0, 0) == 0u && Mma::sf_column(1, 0) == 0u");
    cr_assert(strstr(src, want), "missing %s", want);
    cr_assert(strstr(src, "Mma::a_offset(0, 0) == 0u"));
    char *ptx = ptx_of(tc, src, "sm_107a");
    /* In K-block 0: every copy it needs, then the keep MMA (fill), then the reuse (lastuse). */
    const char *first_mma = strstr(ptx, "tcgen05.mma.");
    const char *fill = strstr(ptx, ".collector::b::fill");
    const char *last = strstr(ptx, ".collector::b::lastuse");
    cr_assert(first_mma && fill && last && first_mma < fill && fill < last);
    int copies = 0;
    for (const char *p = strstr(ptx, "tcgen05.cp."); p && p < first_mma;
         p = strstr(p + 1, "tcgen05.cp."))
        copies++;
    cr_assert_geq(copies, 3, "keep-SFA, SFB and reuse-SFA copies come before the first MMA");
    free(ptx);
    free(src);
}

Test(codegen_tc, generation_is_deterministic) {
    jit__plan_t p1, p2;
    plan_of("sm_107a", NVFP4, 2, 256, 1, JIT_EPILOGUE_LINEAR_SWIGLU, &p1);
    plan_of("sm_107a", NVFP4, 2, 256, 1, JIT_EPILOGUE_LINEAR_SWIGLU, &p2);
    char *a = generate(&p1, "sm_107a", 0);
    char *b = generate(&p2, "sm_107a", 0);
    cr_assert_str_eq(a, b, "same plan, same source");
    free(b);
    plan_of("sm_107a", NVFP4, 2, 192, 1, JIT_EPILOGUE_LINEAR_SWIGLU, &p2);
    b = generate(&p2, "sm_107a", 0);
    cr_assert_str_neq(a, b, "another tile, another source");
    free(a);
    free(b);
}

/* The parameter block the host fills is the one the kernel reads: the generated struct carries
 * static_asserts with the host's offsets, so a drift fails the compile above. */
Test(codegen_tc, parameter_block_layout) {
    cr_assert_eq(sizeof(jit__tc_tmap_t), 128);
    cr_assert_eq(sizeof(jit__tc_params_t) % 64, 0);
    cr_assert_eq(offsetof(jit__tc_params_t, sfa) % 64, 0);
    cr_assert_eq(offsetof(jit__tc_params_t, d) % 64, 0);
    jit__plan_t plan;
    plan_of("sm_100a", MXFP8, 1, 128, -1, JIT_EPILOGUE_LINEAR, &plan);
    char *src = generate(&plan, "sm_100a", 0);
    char want[128];
    snprintf(want, sizeof(want), "static_assert(sizeof(jitgemm_tc_params) == %zu,",
             sizeof(jit__tc_params_t));
    cr_assert(strstr(src, want), "missing %s", want);
    snprintf(want, sizeof(want),
             "static_assert(__INTADDR__(&((jitgemm_tc_params *)0)->alpha) == %zu,",
             offsetof(jit__tc_params_t, alpha));
    cr_assert(strstr(src, want), "missing %s", want);
    free(src);
}

/* ---- host side with a recording driver --------------------------------------------------- */

typedef struct recorded_map {
    CUtensorMapDataType dtype;
    unsigned rank;
    cuuint64_t dims[5], strides[4];
    cuuint32_t box[5];
    CUtensorMapSwizzle swizzle;
} recorded_map_t;

static recorded_map_t g_maps[16];
static int g_n_maps;
static CUlaunchConfig g_cfg;
static CUlaunchAttribute g_attrs[4];
static int g_launches;
static int g_occ_preferred = 37, g_occ_fallback = 74;
static jit__tc_params_t g_hook_params;

static unsigned elem_bytes(CUtensorMapDataType t) {
    switch (t) {
    case CU_TENSOR_MAP_DATA_TYPE_UINT8:
        return 1;
    case CU_TENSOR_MAP_DATA_TYPE_UINT16:
    case CU_TENSOR_MAP_DATA_TYPE_BFLOAT16:
        return 2;
    case CU_TENSOR_MAP_DATA_TYPE_FLOAT32:
        return 4;
    default:
        return 0; /* the 4-bit types are checked separately */
    }
}

/* The cuTensorMapEncodeTiled rules of cuda.h (docs/hardware-facts.md F14), enforced. */
static CUresult fake_encode(CUtensorMap *map, CUtensorMapDataType dt, cuuint32_t rank, void *addr,
                            const cuuint64_t *dims, const cuuint64_t *strides,
                            const cuuint32_t *box, const cuuint32_t *es, CUtensorMapInterleave il,
                            CUtensorMapSwizzle sw, CUtensorMapL2promotion l2,
                            CUtensorMapFloatOOBfill oob) {
    (void)l2;
    if (rank < 1 || rank > 5 || il != CU_TENSOR_MAP_INTERLEAVE_NONE ||
        oob != CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE)
        return CUDA_ERROR_INVALID_VALUE;
    int u4 = dt == CU_TENSOR_MAP_DATA_TYPE_16U4_ALIGN16B;
    if ((uintptr_t)addr % (u4 ? 32 : 16))
        return CUDA_ERROR_INVALID_VALUE;
    for (unsigned i = 0; i < rank; i++) {
        if (dims[i] == 0 || dims[i] > (1ull << 32) || box[i] == 0 || box[i] > 256 || es[i] != 1)
            return CUDA_ERROR_INVALID_VALUE;
        if (i > 0 && (strides[i - 1] % (u4 ? 32 : 16) || strides[i - 1] >= (1ull << 40)))
            return CUDA_ERROR_INVALID_VALUE;
    }
    unsigned inner = u4 ? box[0] : box[0] * elem_bytes(dt);
    if (!u4 && (elem_bytes(dt) == 0 || inner % 16))
        return CUDA_ERROR_INVALID_VALUE;
    if (u4 && (box[0] != 128 || dims[0] % 128))
        return CUDA_ERROR_INVALID_VALUE;
    unsigned span = sw == CU_TENSOR_MAP_SWIZZLE_128B  ? 128
                    : sw == CU_TENSOR_MAP_SWIZZLE_64B ? 64
                    : sw == CU_TENSOR_MAP_SWIZZLE_32B ? 32
                                                      : 0;
    if (span && inner > span)
        return CUDA_ERROR_INVALID_VALUE;
    cr_assert_lt(g_n_maps, 16);
    recorded_map_t *r = &g_maps[g_n_maps++];
    r->dtype = dt;
    r->rank = rank;
    r->swizzle = sw;
    for (unsigned i = 0; i < rank; i++) {
        r->dims[i] = dims[i];
        r->box[i] = box[i];
        if (i > 0)
            r->strides[i - 1] = strides[i - 1];
    }
    memset(map, 0xA5, sizeof(*map));
    return CUDA_SUCCESS;
}

static CUresult fake_error_name(CUresult r, const char **s) {
    (void)r;
    *s = "CUDA_ERROR_INVALID_VALUE";
    return CUDA_SUCCESS;
}

static CUresult fake_launch(const CUlaunchConfig *cfg, CUfunction f, void **args, void **extra) {
    (void)f;
    (void)extra;
    cr_assert_not_null(args);
    g_cfg = *cfg;
    for (unsigned i = 0; i < cfg->numAttrs && i < 4; i++)
        g_attrs[i] = cfg->attrs[i];
    g_launches++;
    return CUDA_SUCCESS;
}

static CUresult fake_occupancy(int *n, CUfunction f, const CUlaunchConfig *cfg) {
    (void)f;
    cr_assert_eq(cfg->numAttrs, 1);
    unsigned size = cfg->attrs[0].value.clusterDim.x * cfg->attrs[0].value.clusterDim.y;
    *n = size >= 4 ? g_occ_preferred : g_occ_fallback;
    return CUDA_SUCCESS;
}

static CUresult fake_set_attr(CUfunction f, CUfunction_attribute a, int v) {
    (void)f;
    (void)a;
    (void)v;
    return CUDA_SUCCESS;
}

static jit__driver_t fake_driver(void) {
    jit__driver_t drv;
    memset(&drv, 0, sizeof(drv));
    drv.cuTensorMapEncodeTiled = fake_encode;
    drv.cuGetErrorName = fake_error_name;
    drv.cuGetErrorString = fake_error_name;
    drv.cuLaunchKernelEx = fake_launch;
    drv.cuOccupancyMaxActiveClusters = fake_occupancy;
    drv.cuFuncSetAttribute = fake_set_attr;
    return drv;
}

/* Bytes one tensor-map box moves from GMEM (packed FP4 counts half a byte per element). */
static uint64_t box_gmem_bytes(const recorded_map_t *m, const jit__tc_operand_t *op) {
    uint64_t n = 1;
    for (unsigned i = 1; i < m->rank; i++)
        n *= m->box[i];
    if (m->dtype == CU_TENSOR_MAP_DATA_TYPE_16U4_ALIGN16B)
        return n * m->box[0] / 2;
    (void)op;
    return n * m->box[0] * elem_bytes(m->dtype);
}

/* Encode the plan's tensor maps through the recording driver (which enforces cuda.h's rules,
 * box dims <= 256 among them) and check that the boxes fill exactly what the plan expects. */
static void check_maps_of(const jit__plan_t *p, const char *archname, const char *fname, int cg,
                          int tile_n) {
    jit__plan_t plan = *p;
    jit__driver_t drv = fake_driver();
    static _Alignas(256) unsigned char buf[6][256];
    jit_operands_t ops;
    jit_operands_init(&ops);
    ops.a = buf[0];
    ops.b = buf[1];
    ops.scale_a = buf[2];
    ops.scale_b = buf[3];
    ops.residual = buf[4];
    ops.d = buf[5];
    jit__tc_shape_t sh = {.m = 1345, .n = plan.spec.n, .k = plan.spec.k};
    jit__tc_params_t params;
    jit__diag_t d;
    jit__diag_init(&d);
    g_n_maps = 0;
    jit_status_t st = jit__tc_params_build(&drv, &plan, &sh, &ops, 1.0f, 0, buf[0], 8, &params, &d);
    cr_assert_eq(st, JIT_OK, "%s %s cg%d N%d: %s", archname, fname, cg, tile_n, d.msg);
    cr_assert_eq(g_n_maps, 7, "A, B (preferred and fallback), SFA, SFB, D");
    const recorded_map_t *a = &g_maps[0], *b = &g_maps[2], *sfa = &g_maps[4], *sfb = &g_maps[5];
    const jit__tc_plan_t *tc = jit__tc_of(&plan);
    int halves = tc->breuse ? 2 : 1;
    /* Every CTA receives its whole A and B tiles (from its own and its multicast partners'
     * slices) and its scales: that sum is what the pair leader's barrier expects. */
    uint64_t bytes = (uint64_t)halves * (uint64_t)tc->a.boxes_per_stage * (128 / a->box[1]) *
                         box_gmem_bytes(a, &tc->a) +
                     (uint64_t)tc->b.boxes_per_stage * ((uint64_t)tc->b.rows / b->box[1]) *
                         box_gmem_bytes(b, &tc->b) +
                     (uint64_t)halves * box_gmem_bytes(sfa, NULL) + box_gmem_bytes(sfb, NULL);
    cr_assert_eq(bytes, tc->expect_tx_bytes, "%s %s cg%d N%d: boxes move %llu bytes, expect_tx %u",
                 archname, fname, cg, tile_n, (unsigned long long)bytes, tc->expect_tx_bytes);
    /* The SMEM the boxes fill is the plan's stage. */
    cr_assert_eq((uint64_t)sfb->box[0] * 2 * sfb->box[1] * sfb->box[2], tc->sfb_stage_bytes);
    cr_assert_eq((uint64_t)halves * sfa->box[0] * 2 * sfa->box[1], tc->sfa_stage_bytes);
    cr_assert_eq(params.m, 1345);
    cr_assert_eq(params.ld_residual, plan.spec.n);
    cr_assert_eq(params.token_slots, 8u);
}

static void encode_and_check(const char *archname, fmt_t f, int cg, int tile_n, int breuse) {
    jit__plan_t plan;
    plan_of(archname, f, cg, tile_n, breuse, JIT_EPILOGUE_LINEAR_ADD, &plan);
    check_maps_of(&plan, archname, f.name, cg, tile_n);
}

Test(codegen_tc, tensor_maps_follow_the_tma_rules) {
    encode_and_check("sm_100a", NVFP4, 1, 128, -1);
    encode_and_check("sm_100a", MIXED, 2, 256, -1); /* the unpacked 16U4 type */
    encode_and_check("sm_103a", MXFP8, 2, 192, -1);
    encode_and_check("sm_107a", NVFP4, 2, 256, 1);
    encode_and_check("sm_107a", MIXED, 1, 64, -1); /* the packed SW64 operand */
    encode_and_check("sm_107a", UE5M3, 2, 128, -1);
}

/* The same checks over every variant the planner accepts: each arch, format, CTA group, tile N
 * and B-reuse setting: the plan-invariant sweep of tests/test_tcgen05_plan.c, for the TMA
 * side. */
Test(codegen_tc, tensor_maps_of_every_variant) {
    const char *arches[] = {"sm_100a", "sm_103a", "sm_107a"};
    const fmt_t E5M2X2 = {"mxfp8/e5m2", JIT_DTYPE_E5M2, JIT_DTYPE_E5M2, JIT_SCALE_UE8M0_32};
    const fmt_t UE5M3_32 = {"fp4/ue5m3-32", JIT_DTYPE_E2M1, JIT_DTYPE_E2M1, JIT_SCALE_UE5M3_32};
    const fmt_t fmts[] = {NVFP4, MXFP4, MXFP8, E5M2X2, MIXED, UE5M3, UE5M3_32};
    const int tiles[] = {64, 128, 192, 256};
    int checked = 0;
    for (int ai = 0; ai < 3; ai++)
        for (size_t fi = 0; fi < sizeof(fmts) / sizeof(fmts[0]); fi++)
            for (int cg = 1; cg <= 2; cg++)
                for (int ti = 0; ti < 4; ti++)
                    for (int br = -1; br <= 1; br += 2) {
                        jit__gemm_spec_t s = {.n = 4096,
                                              .k = 4096,
                                              .a = fmts[fi].a,
                                              .b = fmts[fi].b,
                                              .out = JIT_DTYPE_BF16,
                                              .scales = fmts[fi].scales,
                                              .epilogue = JIT_EPILOGUE_LINEAR_ADD};
                        const jit__arch_profile_t *ap = arch(arches[ai]);
                        jit__tc_variant_t v = {cg, tiles[ti], br};
                        jit__plan_t plan;
                        jit__diag_t d;
                        jit__diag_init(&d);
                        if (jit__plan_tc_make_variant(&s, 5, ap->default_sm_count, ap, &v, &plan,
                                                      &d) != JIT_OK) {
                            jit__diag_clear(&d);
                            continue;
                        }
                        check_maps_of(&plan, arches[ai], fmts[fi].name, cg, tiles[ti]);
                        checked++;
                    }
    /* sm_100a/103a: 5 formats without UE5M3 x 2 groups x 4 tiles; sm_107a: 7 formats x 4 tiles
     * x (1-CTA, 2-CTA, 2-CTA with B-reuse). A change in what plans shows up here. */
    cr_expect_eq(checked, 2 * (5 * 2 * 4) + 7 * 4 * 3, "checked %d variants", checked);
}

Test(codegen_tc, tensor_maps_refuse_bad_strides) {
    jit__plan_t plan;
    plan_of("sm_100a", MIXED, 1, 128, -1, JIT_EPILOGUE_LINEAR, &plan);
    jit__tc_tma_geom_t g;
    jit__diag_t d;
    jit__diag_init(&d);
    jit__tc_shape_t sh = {.m = 64, .n = 4096, .k = 4096, .ldb = 4112};
    /* 4112 e2m1 = 2056 bytes: 16-byte aligned but not 32, which the unpacked type needs. */
    cr_assert_eq(jit__tc_tma_geom(&plan, JIT_TC_MAP_B, 0, &sh, &g, &d), JIT_MISALIGNED);
    cr_assert(strstr(d.msg, "multiple of 32"), "%s", d.msg);
    jit__diag_init(&d);
    sh.ldb = 0;
    sh.ldd = 4100; /* 8200 bytes of BF16 */
    cr_assert_eq(jit__tc_tma_geom(&plan, JIT_TC_MAP_D, 0, &sh, &g, &d), JIT_MISALIGNED);
}

Test(codegen_tc, mixed_cluster_launch) {
    jit__plan_t plan;
    plan_of("sm_107a", NVFP4, 2, 256, 1, JIT_EPILOGUE_LINEAR, &plan);
    cr_assert_eq(plan.cluster_m, 4);
    cr_assert_eq(plan.fallback_cluster_m, 2);
    jit__driver_t drv = fake_driver();
    jit__tc_launch_dims_t dims;
    jit__diag_t d;
    jit__diag_init(&d);
    g_occ_preferred = 30;
    g_occ_fallback = 73; /* 146 CTAs as 2x1 clusters */
    cr_assert_eq(jit__tc_launch_dims_query(&drv, NULL, &plan, NULL, &dims, &d), JIT_OK, "%s",
                 d.msg);
    /* Floor division: 146 / 4 = 36 preferred-sized regions, never 37 (a second wave). */
    cr_assert_eq(dims.grid[0], 4);
    cr_assert_eq(dims.grid[1], 1);
    cr_assert_eq(dims.grid[2], 36);
    cr_assert_eq(dims.split_factor, 2);
    cr_assert_eq(dims.token_slots, 72u);
    jit__tc_params_t params;
    memset(&params, 0, sizeof(params));
    params.token_slots = dims.token_slots - 1;
    g_launches = 0;
    cr_assert_eq(jit__tc_launch_kernel(&drv, NULL, &plan, &dims, &params, NULL, &d),
                 JIT_INVALID_ARGUMENT, "too few token slots must be refused");
    cr_assert_eq(g_launches, 0);
    params.token_slots = dims.token_slots;
    jit__diag_init(&d);
    cr_assert_eq(jit__tc_launch_kernel(&drv, NULL, &plan, &dims, &params, NULL, &d), JIT_OK, "%s",
                 d.msg);
    cr_assert_eq(g_launches, 1);
    cr_assert_eq(g_cfg.numAttrs, 2);
    cr_assert_eq(g_attrs[0].id, CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION);
    cr_assert_eq(g_attrs[0].value.clusterDim.x, 2, "the regular cluster is the fallback");
    cr_assert_eq(g_attrs[1].id, CU_LAUNCH_ATTRIBUTE_PREFERRED_CLUSTER_DIMENSION);
    cr_assert_eq(g_attrs[1].value.preferredClusterDim.x, 4);
    cr_assert_eq(g_attrs[1].value.preferredClusterDim.x % g_attrs[0].value.clusterDim.x, 0);
    cr_assert_eq(g_cfg.gridDimX % g_attrs[1].value.preferredClusterDim.x, 0);
    cr_assert_eq(g_cfg.blockDimX, (unsigned)plan.threads);
    cr_assert_eq(g_cfg.sharedMemBytes, plan.smem_bytes);
    /* A device too small for one preferred cluster is a clear error. */
    jit__diag_init(&d);
    cr_assert_eq(jit__tc_launch_dims(&plan, 0, 1, &dims, &d), JIT_PLAN_FAILED);
    cr_assert_gt(jit__tc_workspace_bytes(72), 72 * 8);
}

/* The family's hooks: prepare sizes the launch and makes the capture workspace, zeroed; each
 * stream then gets a scheduler workspace of its own on its first launch, zeroed before that
 * launch, and later launches on it find it again with no allocation and no event. Two streams
 * never share one: the kernel's last CTA resets its workspace for the next launch, so launches
 * on two streams would otherwise have to wait for each other. */
static int g_allocs, g_memsets, g_events_waited;
static CUresult hook_alloc(CUdeviceptr *p, size_t bytes) {
    (void)bytes;
    *p = (CUdeviceptr)(0x100000u * (unsigned)++g_allocs);
    return CUDA_SUCCESS;
}
static CUresult hook_free(CUdeviceptr p) {
    (void)p;
    return CUDA_SUCCESS;
}
static CUresult hook_memset(CUdeviceptr p, unsigned char v, size_t n) {
    (void)p, (void)n;
    cr_expect_eq(v, 0);
    g_memsets++;
    return CUDA_SUCCESS;
}
static CUresult hook_event_create(CUevent *e, unsigned f) {
    (void)f;
    *e = (CUevent)(uintptr_t)0x77;
    return CUDA_SUCCESS;
}
static CUresult hook_event(CUevent e) {
    (void)e;
    return CUDA_SUCCESS;
}
static CUresult hook_record(CUevent e, CUstream s) {
    (void)e, (void)s;
    return CUDA_SUCCESS;
}
static CUresult hook_wait(CUstream s, CUevent e, unsigned f) {
    (void)s, (void)e, (void)f;
    g_events_waited++;
    return CUDA_SUCCESS;
}
static CUresult hook_sync(CUstream s) {
    (void)s;
    return CUDA_SUCCESS;
}
static CUresult hook_capture_info(CUstream s, CUstreamCaptureStatus *st, cuuint64_t *id, CUgraph *g,
                                  const CUgraphNode **deps, size_t *n) {
    (void)s, (void)g, (void)deps, (void)n;
    *st = CU_STREAM_CAPTURE_STATUS_NONE;
    *id = 0;
    return CUDA_SUCCESS;
}
static CUresult hook_launch(const CUlaunchConfig *cfg, CUfunction f, void **args, void **extra) {
    fake_launch(cfg, f, args, extra);
    memcpy(&g_hook_params, args[0], sizeof(g_hook_params));
    return CUDA_SUCCESS;
}

Test(codegen_tc, family_launch_has_a_workspace_per_stream) {
    jit__plan_t plan;
    plan_of("sm_107a", NVFP4, 2, 256, 1, JIT_EPILOGUE_LINEAR, &plan);
    jit__driver_t drv = fake_driver();
    drv.cuLaunchKernelEx = hook_launch;
    drv.cuMemAlloc = hook_alloc;
    drv.cuMemFree = hook_free;
    drv.cuMemsetD8 = hook_memset;
    drv.cuEventCreate = hook_event_create;
    drv.cuEventDestroy = hook_event;
    drv.cuEventRecord = hook_record;
    drv.cuStreamWaitEvent = hook_wait;
    drv.cuStreamSynchronize = hook_sync;
    drv.cuStreamGetCaptureInfo = hook_capture_info;
    void *state = NULL;
    jit__diag_t d;
    jit__diag_init(&d);
    cr_assert_eq(plan.family->prepare(&drv, NULL, &plan, &state, &d), JIT_OK, "%s", d.msg);
    cr_expect_eq(g_allocs, 1, "the capture workspace");
    cr_expect_eq(g_memsets, 1);
    static _Alignas(256) unsigned char buf[6][256];
    jit_problem_t prob;
    jit_problem_init(&prob);
    prob.m = 1345;
    prob.n = plan.spec.n;
    prob.k = plan.spec.k;
    jit_operands_t ops;
    jit_operands_init(&ops);
    ops.a = buf[0], ops.b = buf[1], ops.scale_a = buf[2], ops.scale_b = buf[3];
    ops.residual = buf[4], ops.d = buf[5];
    jit__launch_args_t args = {&prob, &ops, 0, 0, 0, 0, (CUstream)(uintptr_t)0x20, 0, 0};
    void *first[2];
    for (int round = 0; round < 3; round++) {
        for (int s = 0; s < 2; s++) {
            args.stream = (CUstream)(uintptr_t)(0x20 + 0x20 * s);
            g_launches = g_n_maps = 0;
            cr_assert_eq(plan.family->launch(&drv, NULL, &plan, state, &args, &d), JIT_OK, "%s",
                         d.msg);
            cr_assert_eq(g_launches, 1);
            cr_expect_eq(g_cfg.hStream, args.stream);
            if (round == 0)
                first[s] = g_hook_params.workspace;
            else
                cr_expect_eq(g_hook_params.workspace, first[s], "stream %d, round %d", s, round);
        }
    }
    cr_expect_neq(first[0], first[1], "two streams, two workspaces");
    cr_expect_eq(g_allocs, 3, "one per stream, made on its first launch");
    cr_expect_eq(g_memsets, 3, "each zeroed");
    cr_expect_eq(g_events_waited, 2, "each stream waits once, for its workspace's memset");
    plan.family->release(&drv, state);
}

Test(codegen_tc, single_cluster_shape_launch) {
    jit__plan_t plan;
    jit__gemm_spec_t s = {.n = 4096,
                          .k = 4096,
                          .a = JIT_DTYPE_E4M3,
                          .b = JIT_DTYPE_E4M3,
                          .out = JIT_DTYPE_BF16,
                          .scales = JIT_SCALE_UE8M0_32,
                          .epilogue = JIT_EPILOGUE_LINEAR};
    jit__diag_t d;
    jit__diag_init(&d);
    /* Decode-sized band: one CTA per cluster, no fallback shape. */
    cr_assert_eq(jit__plan_tc_make(&s, 0, 148, arch("sm_100a"), &plan, &d), JIT_OK, "%s", d.msg);
    cr_assert_eq(plan.fallback_cluster_m, 0);
    jit__tc_launch_dims_t dims;
    cr_assert_eq(jit__tc_launch_dims(&plan, 148, 0, &dims, &d), JIT_OK, "%s", d.msg);
    CUlaunchConfig cfg;
    CUlaunchAttribute attrs[2];
    jit__tc_launch_config(&plan, &dims, NULL, &cfg, attrs);
    cr_assert_eq(cfg.numAttrs, 1);
    cr_assert_eq(attrs[0].id, CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION);
    cr_assert_eq(cfg.gridDimZ, 148);
    cr_assert_eq(dims.token_slots, 0u);
}

/* The C staging index. The epilogue waits `cp.async.bulk.wait_group.read C_STAGES-1` before it
 * writes C stage cs % C_STAGES: that guarantees that every store but the newest has finished
 * reading, so it protects the stage only if the newest store went to a different stage, i.e.
 * if cs counts stores. A model of the sequence: each sub-tile is live (stored) or skipped (rows
 * past M); `advance_on_skip` is the old rule. Returns 1 if some live sub-tile writes a stage
 * whose store may still be reading. */
static int c_stage_hazard(const int *live, int n, int c_stages, int advance_on_skip) {
    int cs = 0, last_store_stage = -1;
    for (int i = 0; i < n; i++) {
        if (live[i]) {
            /* After wait_group.read(c_stages - 1) only the newest store may still read. */
            if (cs % c_stages == last_store_stage)
                return 1;
            last_store_stage = cs % c_stages;
            cs++;
        } else if (advance_on_skip) {
            cs++;
        }
    }
    return 0;
}

Test(tc_codegen, epilogue_c_stage_advances_only_on_a_store) {
    /* Tile N 192 (3 sub-tiles of 64) with B-reuse: M-half 0 live, M-half 1 past M, then the
     * next tile live: live, live, live, skip, skip, skip, live, ... */
    const int seq[] = {1, 1, 1, 0, 0, 0, 1, 1, 1};
    cr_expect_eq(c_stage_hazard(seq, 9, 2, 1), 1, "the old rule reuses a stage still read");
    cr_expect_eq(c_stage_hazard(seq, 9, 2, 0), 0);
    const int odd[] = {1, 0, 1};
    cr_expect_eq(c_stage_hazard(odd, 3, 2, 1), 1);
    cr_expect_eq(c_stage_hazard(odd, 3, 2, 0), 0);
    /* The device code follows the store-counting rule: the sub-tile loop does not advance cs,
     * the store block does, right after its commit. */
    const char *epi = device_text("tcgen05/device/epilogue.cuh");
    cr_assert(!strstr(epi, "++j, ++cs)"), "the C stage index advances on skipped sub-tiles");
    const char *commit = strstr(epi, "sm100::bulk_commit();");
    cr_assert(commit);
    const char *adv = strstr(commit, "++cs;");
    cr_assert(adv && adv - commit < 600, "cs must advance with the store it belongs to");
    cr_assert(strstr(epi, "sm100::bulk_wait_read<P::C_STAGES - 1>();"));
}

/* The scale chunks' tcgen05.cp source descriptor is the one NVIDIA's two code generators emit
 * for a 32x128b copy of an unswizzled 512-byte chunk: LBO 16, SBO 128, version 1
 * (0x0000400800010000 | address; CUTLASS C++ make_umma_desc and CUTLASS DSL 4.8.1, compared by
 * scripts/tcgen05-checks/cutlass-cpp-compare.sh and cutlass-dsl-compare.py). It was LBO 128
 * before. */
Test(codegen_tc, scale_copy_descriptor_is_nvidias) {
    static const char *const archs[] = {"sm_100a", "sm_103a", "sm_107a"};
    for (size_t a = 0; a < sizeof(archs) / sizeof(archs[0]); a++) {
        jit__plan_t plan;
        plan_of(archs[a], NVFP4, 1, 128, 0, JIT_EPILOGUE_LINEAR, &plan);
        char *src = generate(&plan, plan.arch->native_target, 0);
        cr_expect(strstr(src, "SF_DESC_HI = 0x0000400800010000ull"), "%s: %s", archs[a],
                  strstr(src, "SF_DESC_HI") ? strstr(src, "SF_DESC_HI") : "no SF_DESC_HI");
        free(src);
    }
}
