/*
 * The FP8 mma.sync family: deterministic text, a header that quotes the key and the plan, one
 * #include (the family's device file), inline PTX only inside the shared building blocks, a
 * parameter struct laid out exactly like the host's jit__mma_sync_params_t, plan checks, and NVRTC
 * + nvJitLink compiles of every token band and epilogue for sm_90a, sm_100a, sm_103a, sm_120a and
 * (with an NVRTC that has it) sm_107a, with registers reported and no spills.
 */
#include <criterion/criterion.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "compile.h"
#include "device_files.h"
#include "families.h"
#include "family.h"
#include "fp8_mma_sync/abi.h"
#include "fp8_mma_sync/fp8_mma_sync.h"
#include "key.h"
#include "plan.h"
#include "ptx_check.h"
#include "toolchain.h"

static const jit_epilogue_t k_epilogues[] = {JIT_EPILOGUE_LINEAR, JIT_EPILOGUE_LINEAR_ADD,
                                             JIT_EPILOGUE_LINEAR_SWIGLU};

static jit__gemm_spec_t spec_of(int64_t n, int64_t k, jit_epilogue_t ep) {
    jit__gemm_spec_t s = {.n = n,
                          .k = k,
                          .a = JIT_DTYPE_E4M3,
                          .b = JIT_DTYPE_E4M3,
                          .out = JIT_DTYPE_BF16,
                          .scales = JIT_SCALE_ROW,
                          .epilogue = ep};
    return s;
}

static void make_plan(const char *arch, int band, int64_t n, int64_t k, jit_epilogue_t ep,
                      jit__plan_t *p) {
    jit__diag_t d;
    jit__diag_init(&d);
    jit__gemm_spec_t s = spec_of(n, k, ep);
    /* On sm_90a the wgmma family's model wins; this file is about the mma.sync family. */
    setenv("JITGEMM_FAMILY", "fp8_mma_sync", 1);
    const jit__arch_profile_t *prof = jit__arch_find(arch);
    cr_assert_not_null(prof, "no profile %s", arch);
    cr_assert_eq(jit__plan_make(&s, band, prof->default_sm_count, prof, p, &d), JIT_OK, "%s",
                 d.msg);
    cr_assert_eq(p->family, &jit__family_fp8_mma_sync, "%s band %d: FP8 row scales planned by %s",
                 arch, band, p->family->name);
}

static void make_key(const jit__plan_t *p, const char *target, jit__key_t *key) {
    jit__key_make(p, target, 0, key, NULL);
}

static char *gen(const jit__plan_t *p, const jit__key_t *key) {
    jit__diag_t d;
    jit__diag_init(&d);
    char *src = NULL;
    cr_assert_eq(jit__gen_fp8_mma_sync(p, key, &src, &d), JIT_OK, "%s", d.msg);
    cr_assert_not_null(src);
    return src;
}

/* ---- text --------------------------------------------------------------------------------- */

Test(fp8_mma_sync, same_plan_and_key_give_identical_text) {
    for (int band = 0; band < JIT_TOKEN_BANDS; band++) {
        for (size_t e = 0; e < 3; e++) {
            jit__plan_t p1, p2;
            make_plan("sm_90a", band, 1176, 1552, k_epilogues[e], &p1);
            make_plan("sm_90a", band, 1176, 1552, k_epilogues[e], &p2);
            jit__key_t k1, k2;
            make_key(&p1, "sm_90a", &k1);
            make_key(&p2, "sm_90a", &k2);
            char *a = gen(&p1, &k1), *b = gen(&p2, &k2), *c = gen(&p1, &k1);
            cr_expect_str_eq(a, b, "band %d epilogue %zu: two plans, different text", band, e);
            cr_expect_str_eq(a, c, "band %d epilogue %zu: same plan twice, different text", band,
                             e);
            free(a);
            free(b);
            free(c);
        }
    }
}

Test(fp8_mma_sync, different_plans_give_different_text) {
    jit__plan_t base, other;
    jit__key_t kb, ko;
    make_plan("sm_90a", 2, 1176, 1552, JIT_EPILOGUE_LINEAR, &base);
    make_key(&base, "sm_90a", &kb);
    char *ref = gen(&base, &kb);
    struct {
        const char *arch;
        int band;
        int64_t n, k;
        jit_epilogue_t ep;
    } variants[] = {
        {"sm_90a", 0, 1176, 1552, JIT_EPILOGUE_LINEAR},
        {"sm_90a", 4, 1176, 1552, JIT_EPILOGUE_LINEAR},
        {"sm_90a", 2, 1178, 1552, JIT_EPILOGUE_LINEAR},
        {"sm_90a", 2, 1176, 1568, JIT_EPILOGUE_LINEAR},
        {"sm_90a", 2, 1176, 1552, JIT_EPILOGUE_LINEAR_ADD},
        {"sm_90a", 2, 1176, 1552, JIT_EPILOGUE_LINEAR_SWIGLU},
        {"sm_120a", 2, 1176, 1552, JIT_EPILOGUE_LINEAR},
    };
    for (size_t i = 0; i < sizeof(variants) / sizeof(variants[0]); i++) {
        make_plan(variants[i].arch, variants[i].band, variants[i].n, variants[i].k, variants[i].ep,
                  &other);
        make_key(&other, variants[i].arch, &ko);
        char *src = gen(&other, &ko);
        cr_expect_str_neq(src, ref, "variant %zu generated the same text as the base plan", i);
        free(src);
    }
    free(ref);
}

Test(fp8_mma_sync, header_quotes_key_and_plan_and_nothing_is_included) {
    jit__plan_t p;
    jit__key_t k;
    make_plan("sm_90a", 4, 1000, 1552, JIT_EPILOGUE_LINEAR_SWIGLU, &p);
    make_key(&p, "sm_90a", &k);
    char *src = gen(&p, &k);
    cr_assert_eq(strncmp(src, "/*", 2), 0, "the source opens with a comment");
    const char *end = strstr(src, "*/");
    cr_assert_not_null(end);
    const char *key_at = strstr(src, k.text);
    cr_expect(key_at && key_at < end, "the key text is not in the header comment");
    const char *hash_at = strstr(src, k.hash);
    cr_expect(hash_at && hash_at < end, "the key hash is not in the header comment");
    char want[128];
    snprintf(want, sizeof(want), "CTA tile %d tokens x %d B rows x %d K bytes, %d stages", p.tile_m,
             p.tile_n, p.tile_k, p.stages);
    cr_expect(strstr(src, want) && strstr(src, want) < end, "plan line '%s' missing", want);
    snprintf(want, sizeof(want), "dynamic shared memory %u bytes", p.smem_bytes);
    cr_expect(strstr(src, want) && strstr(src, want) < end, "plan line '%s' missing", want);
    cr_expect(strstr(src, "B row 2j is gate_j, row 2j+1 is up_j"), "pairing convention");
    const char *inc = strstr(src, "#include");
    cr_expect(inc && strncmp(inc, "#include \"fp8_mma_sync/device/kernel.cuh\"\n", 42) == 0,
              "the source includes the family's device file");
    cr_expect(inc && !strstr(inc + 1, "#include"), "the source includes one file only");
    free(src);
}

static const char *device_text(const char *name) {
    const jit__device_file_t *f = jit__device_file(name);
    cr_assert_not_null(f, "device file %s is not embedded", name);
    return f->text;
}

/* The generated text has no inline PTX at all, and the family's device files none either: every
 * asm sits in a one-instruction static __device__ __forceinline__ wrapper of the shared
 * building blocks. */
Test(fp8_mma_sync, inline_ptx_only_in_wrappers) {
    for (size_t e = 0; e < 3; e++) {
        jit__plan_t p;
        jit__key_t k;
        make_plan("sm_100a", 1, 4096, 4096, k_epilogues[e], &p);
        make_key(&p, "sm_100a", &k);
        char *src = gen(&p, &k);
        cr_expect_null(strstr(src, "asm"), "inline asm in the generated text");
        free(src);
    }
    static const char *const roles[] = {"params", "producer", "mainloop", "epilogue", "kernel"};
    for (size_t r = 0; r < sizeof(roles) / sizeof(roles[0]); r++) {
        char name[64];
        snprintf(name, sizeof(name), "fp8_mma_sync/device/%s.cuh", roles[r]);
        cr_expect_null(strstr(device_text(name), "asm"), "inline asm in %s", name);
    }
    const char *warp = device_text("device/warp_mma.cuh");
    cr_expect(strstr(warp, "mma.sync.aligned.m16n8k32.row.col.f32.e4m3.e4m3.f32"));
    cr_expect(strstr(warp, "cp.async.cg.shared.global [%0], [%1], 16, %2;"));
    cr_expect(strstr(warp, "ldmatrix.sync.aligned.m8n8.x4.shared.b16"));
    cr_expect(strstr(warp, "cp.async.wait_group"));
    const char *blocks[] = {warp, device_text("device/convert.cuh")};
    for (size_t b = 0; b < 2; b++) {
        const char *src = blocks[b];
        for (const char *q = strstr(src, "asm"); q; q = strstr(q + 3, "asm")) {
            const char *fn = NULL;
            for (const char *r = src; (r = strstr(r, "static __device__ __forceinline__")) && r < q;
                 r++)
                fn = r;
            cr_expect_not_null(fn, "asm at offset %td outside a wrapper", q - src);
        }
    }
}

/* Read "type name;" lines of the emitted struct and lay them out with the sizes and natural
 * alignment of the x86-64/CUDA ABI, then compare with the host struct field by field. */
Test(fp8_mma_sync, params_struct_matches_kernel_abi) {
    static const struct {
        const char *name;
        size_t offset, size;
    } host[] = {
        {"a", offsetof(jit__mma_sync_params_t, a), sizeof(((jit__mma_sync_params_t *)0)->a)},
        {"b", offsetof(jit__mma_sync_params_t, b), sizeof(((jit__mma_sync_params_t *)0)->b)},
        {"sa", offsetof(jit__mma_sync_params_t, sa), sizeof(((jit__mma_sync_params_t *)0)->sa)},
        {"sb", offsetof(jit__mma_sync_params_t, sb), sizeof(((jit__mma_sync_params_t *)0)->sb)},
        {"residual", offsetof(jit__mma_sync_params_t, residual),
         sizeof(((jit__mma_sync_params_t *)0)->residual)},
        {"d", offsetof(jit__mma_sync_params_t, d), sizeof(((jit__mma_sync_params_t *)0)->d)},
        {"m", offsetof(jit__mma_sync_params_t, m), sizeof(((jit__mma_sync_params_t *)0)->m)},
        {"lda", offsetof(jit__mma_sync_params_t, lda), sizeof(((jit__mma_sync_params_t *)0)->lda)},
        {"ldb", offsetof(jit__mma_sync_params_t, ldb), sizeof(((jit__mma_sync_params_t *)0)->ldb)},
        {"ldd", offsetof(jit__mma_sync_params_t, ldd), sizeof(((jit__mma_sync_params_t *)0)->ldd)},
        {"ldr", offsetof(jit__mma_sync_params_t, ldr), sizeof(((jit__mma_sync_params_t *)0)->ldr)},
        {"alpha", offsetof(jit__mma_sync_params_t, alpha),
         sizeof(((jit__mma_sync_params_t *)0)->alpha)},
        {"pad_", offsetof(jit__mma_sync_params_t, pad_),
         sizeof(((jit__mma_sync_params_t *)0)->pad_)},
    };
    const size_t n_host = sizeof(host) / sizeof(host[0]);
    static const struct {
        const char *type;
        size_t size;
    } types[] = {{"const void *", 8}, {"void *", 8}, {"const float *", 8},
                 {"i64", 8},          {"float", 4},  {"int", 4}};
    /* "const void *a;" reads as type "const void *" (the star stays with the type) */

    jit__plan_t p;
    jit__key_t k;
    make_plan("sm_90a", 2, 1000, 1040, JIT_EPILOGUE_LINEAR_ADD, &p);
    make_key(&p, "sm_90a", &k);
    char *src = gen(&p, &k);
    const char *open =
        strstr(device_text("fp8_mma_sync/device/params.cuh"), "struct jitgemm_mma_sync_params {\n");
    cr_assert_not_null(open);
    const char *line = strchr(open, '\n') + 1;
    size_t offset = 0, max_align = 1, i = 0;
    for (; strncmp(line, "};", 2) != 0; i++) {
        const char *eol = strchr(line, '\n');
        cr_assert_not_null(eol);
        char buf[128];
        size_t len = (size_t)(eol - line);
        cr_assert_lt(len, sizeof(buf));
        memcpy(buf, line, len);
        buf[len] = '\0';
        const char *t = buf;
        while (*t == ' ')
            t++;
        char *semi = strrchr(buf, ';');
        cr_assert_not_null(semi, "field line without ';': %s", buf);
        *semi = '\0';
        /* the name is the trailing identifier; the type is what precedes it, trimmed */
        char *name = semi;
        while (name > t && (name[-1] == '_' || (name[-1] >= 'a' && name[-1] <= 'z') ||
                            (name[-1] >= '0' && name[-1] <= '9')))
            name--;
        char type[64];
        size_t tlen = (size_t)(name - t);
        cr_assert_lt(tlen, sizeof(type));
        memcpy(type, t, tlen);
        while (tlen > 0 && type[tlen - 1] == ' ')
            tlen--;
        type[tlen] = '\0';
        size_t size = 0;
        for (size_t j = 0; j < sizeof(types) / sizeof(types[0]); j++)
            if (strcmp(types[j].type, type) == 0)
                size = types[j].size;
        cr_assert_gt(size, 0, "unknown field type '%s' in '%s'", type, buf);
        offset = (offset + size - 1) / size * size;
        if (size > max_align)
            max_align = size;
        cr_assert_lt(i, n_host, "generated struct has more fields than the host's");
        cr_expect_str_eq(name, host[i].name, "field %zu", i);
        cr_expect_eq(offset, host[i].offset, "field %s at %zu, host %zu", name, offset,
                     host[i].offset);
        cr_expect_eq(size, host[i].size, "field %s size %zu, host %zu", name, size, host[i].size);
        offset += size;
        line = eol + 1;
    }
    cr_expect_eq(i, n_host, "generated struct has %zu fields, host %zu", i, n_host);
    size_t total = (offset + max_align - 1) / max_align * max_align;
    cr_expect_eq(total, sizeof(jit__mma_sync_params_t));
    cr_expect(strstr(src, "extern \"C\" __global__ void __launch_bounds__(Kernel::THREADS)\n"
                          "jitgemm_fp8_mma_sync(const jitgemm_mma_sync_params p)"),
              "kernel entry with the by-value parameter struct");
    cr_expect_str_eq(jit__plan_kernel_name(&p), "jitgemm_fp8_mma_sync");
    free(src);
}

/* The planner's smem_bytes and the kernel's ring agree for every band and arch. */
Test(fp8_mma_sync, shared_memory_size_matches_the_plan) {
    const char *archs[] = {"sm_90a", "sm_100a", "sm_103a", "sm_107a", "sm_120a"};
    for (size_t a = 0; a < 5; a++) {
        for (int band = 0; band < JIT_TOKEN_BANDS; band++) {
            jit__plan_t p;
            jit__key_t k;
            make_plan(archs[a], band, 1000, 1040, JIT_EPILOGUE_LINEAR, &p);
            cr_expect_eq(p.smem_bytes, (uint32_t)(p.stages * (p.tile_m + p.tile_n) * p.tile_k));
            make_key(&p, archs[a], &k);
            char *src = gen(&p, &k);
            char want[96];
            snprintf(want, sizeof(want), "static_assert(Kernel::SMEM_BYTES == %u,", p.smem_bytes);
            cr_expect(strstr(src, want), "%s band %d: '%s' missing", archs[a], band, want);
            free(src);
        }
    }
}

Test(fp8_mma_sync, plans_outside_the_family_are_refused) {
    jit__plan_t good, p;
    jit__key_t k;
    make_plan("sm_90a", 2, 1000, 1040, JIT_EPILOGUE_LINEAR, &good);
    make_key(&good, "sm_90a", &k);
    char *src = NULL;
    jit__diag_t d;

    p = good;
    p.smem_bytes += 16;
    jit__diag_init(&d);
    cr_expect_eq(jit__gen_fp8_mma_sync(&p, &k, &src, &d), JIT_PLAN_FAILED);
    cr_expect(strstr(d.msg, "shared memory"), "%s", d.msg);
    cr_expect_null(src);

    p = good;
    jit__mma_sync_of(&p)->warps_n = 8; /* warp tile 32 x 16 is fine, but threads no longer match */
    jit__diag_init(&d);
    cr_expect_eq(jit__gen_fp8_mma_sync(&p, &k, &src, &d), JIT_PLAN_FAILED);

    p = good;
    p.tile_m = 256; /* warp tile 128 rows */
    p.smem_bytes = (uint32_t)(p.stages * (p.tile_m + p.tile_n) * p.tile_k);
    jit__diag_init(&d);
    cr_expect_eq(jit__gen_fp8_mma_sync(&p, &k, &src, &d), JIT_PLAN_FAILED);
    cr_expect(strstr(d.msg, "warp tile"), "%s", d.msg);

    p = good;
    p.stages = 5;
    p.smem_bytes = (uint32_t)(p.stages * (p.tile_m + p.tile_n) * p.tile_k);
    jit__diag_init(&d);
    cr_expect_eq(jit__gen_fp8_mma_sync(&p, &k, &src, &d), JIT_PLAN_FAILED);

    p = good;
    p.family = &jit__family_tcgen05;
    jit__diag_init(&d);
    cr_expect_eq(jit__gen_fp8_mma_sync(&p, &k, &src, &d), JIT_INTERNAL);

    p = good;
    p.spec.scales = JIT_SCALE_UE8M0_32;
    jit__diag_init(&d);
    cr_expect_eq(jit__gen_fp8_mma_sync(&p, &k, &src, &d), JIT_UNSUPPORTED);

    /* tile_k 64 and warp tiles of 16..64 outside the planner's table are still generated */
    p = good;
    p.tile_k = 64;
    p.tile_m = 32;
    p.tile_n = 64;
    jit__mma_sync_of(&p)->warps_m = 2;
    jit__mma_sync_of(&p)->warps_n = 2;
    p.threads = 128;
    p.stages = 3;
    p.smem_bytes = (uint32_t)(p.stages * (p.tile_m + p.tile_n) * p.tile_k);
    jit__diag_init(&d);
    cr_expect_eq(jit__gen_fp8_mma_sync(&p, &k, &src, &d), JIT_OK, "%s", d.msg);
    cr_expect(src && strstr(src, "LL, 32, 64, 64, 3, 2, 2, MMA_SYNC_LINEAR> Kernel;"), "%s",
              src ? src : "");
    free(src);
}

/* ---- NVRTC + nvJitLink -------------------------------------------------------------------- */

static const char *system_toolkit(void) {
    const char *h = getenv("CUDA_HOME");
    return h && *h ? h : "/usr/local/cuda";
}

/* Compile every band x epilogue of `arch` for `target` with `tc`. */
static void compile_family(const jit__toolchain_t *tc, const char *arch, const char *target) {
    int max_regs = 0;
    for (int band = 0; band < JIT_TOKEN_BANDS; band++) {
        for (size_t e = 0; e < 3; e++) {
            jit__plan_t p;
            make_plan(arch, band, 1176, 1552, k_epilogues[e], &p);
            jit__key_t k;
            jit__key_make(&p, target, 0, &k, NULL);
            char *src = gen(&p, &k);
            jit__compiled_t c;
            jit__diag_t d;
            jit__diag_init(&d);
            jit_status_t st = jit__compile(tc, src, jit__plan_kernel_name(&p), target,
                                           JIT__COMPILE_CUBIN_AND_PTX, &c, &d);
            cr_assert_eq(st, JIT_OK, "%s band %d %s with NVRTC %d.%d: %s\n%s", target, band,
                         jit_epilogue_name(k_epilogues[e]), tc->id.nvrtc_major, tc->id.nvrtc_minor,
                         d.msg, d.log ? d.log : "");
            cr_expect_gt(c.registers, 0, "%s band %d: no ptxas report:\n%s", target, band, c.log);
            cr_expect_eq(c.spill_stores, 0, "%s band %d %s spills:\n%s", target, band,
                         jit_epilogue_name(k_epilogues[e]), c.log);
            cr_expect_eq(c.spill_loads, 0, "%s band %d %s spills:\n%s", target, band,
                         jit_epilogue_name(k_epilogues[e]), c.log);
            cr_expect_null(strstr(c.log, "warning"), "%s band %d %s compiles with warnings:\n%s",
                           target, band, jit_epilogue_name(k_epilogues[e]), c.log);
            cr_expect(strstr(c.ptx, ".entry jitgemm_fp8_mma_sync"));
            /* Template parameters, not namespace-scope constants: no .global data. */
            const char *global = ptx_global_data_line(c.ptx);
            cr_expect_null(global, "%s band %d %s: .global data in the PTX: %.60s", target, band,
                           jit_epilogue_name(k_epilogues[e]), global ? global : "");
            cr_expect_str_eq(c.target, target);
            if (c.registers > max_regs)
                max_regs = c.registers;
            jit__compiled_free(&c);
            jit__diag_clear(&d);
            free(src);
        }
    }
    cr_log_info("%s with NVRTC %d.%d: 15 kernels, at most %d registers", target, tc->id.nvrtc_major,
                tc->id.nvrtc_minor, max_regs);
}

static const jit__toolchain_t *auto_toolchain(void) {
    const jit__toolchain_t *tc = NULL;
    jit__diag_t d;
    jit__diag_init(&d);
    if (jit__toolchain_get(NULL, &tc, &d) != JIT_OK)
        cr_skip("no NVRTC/nvJitLink found: %s", d.msg);
    return tc;
}

/* The newest toolchain, and the system one when it is a different one. */
static void compile_with_both(const char *arch) {
    const jit__toolchain_t *tc = auto_toolchain(), *sys = NULL;
    compile_family(tc, arch, arch);
    jit__diag_t d;
    jit__diag_init(&d);
    if (jit__toolchain_get(system_toolkit(), &sys, &d) == JIT_OK && sys != tc)
        compile_family(sys, arch, arch);
}

Test(fp8_mma_sync, compiles_for_sm_90a, .timeout = 600) {
    compile_with_both("sm_90a");
}

Test(fp8_mma_sync, compiles_for_sm_100a, .timeout = 600) {
    compile_with_both("sm_100a");
}

Test(fp8_mma_sync, compiles_for_sm_103a, .timeout = 600) {
    compile_with_both("sm_103a");
}

Test(fp8_mma_sync, compiles_for_sm_120a, .timeout = 600) {
    compile_with_both("sm_120a");
}

Test(fp8_mma_sync, compiles_for_sm_107a_natively, .timeout = 600) {
    const jit__toolchain_t *tc = auto_toolchain();
    if (!jit__toolchain_supports(tc, 107))
        cr_skip("the newest NVRTC found (%d.%d in '%s') does not list sm_107a; run "
                "scripts/setup.sh or set JITGEMM_TOOLKIT_DIR",
                tc->id.nvrtc_major, tc->id.nvrtc_minor, tc->dir);
    compile_family(tc, "sm_107a", "sm_107a");
}
