/*
 * Toolchain discovery and the NVRTC -> nvJitLink path on a small hand-written kernel, for
 * every arch profile: native targets, and the sm_107a fallback (sm_100a check + sm_100f cubin)
 * with an NVRTC that lacks sm_107a.
 */
#include <criterion/criterion.h>
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "compile.h"
#include "cubin_info.h"
#include "toolchain.h"

static const char *k_src = "extern \"C\" __global__ void probe(float *x, int n) {\n"
                           "    __shared__ float s[256];\n"
                           "    int i = threadIdx.x;\n"
                           "    s[i] = i < n ? x[i] : 0.f;\n"
                           "    __syncthreads();\n"
                           "    if (i < n) x[i] = s[255 - i] * 2.f;\n"
                           "}\n";

static const char *system_toolkit(void) {
    const char *h = getenv("CUDA_HOME");
    return h && *h ? h : "/usr/local/cuda";
}

Test(compile, automatic_choice_is_the_newest) {
    const jit__toolchain_t *tc, *sys;
    jit__diag_t d;
    jit__diag_init(&d);
    cr_assert_eq(jit__toolchain_get(NULL, &tc, &d), JIT_OK, "%s", d.msg);
    if (jit__toolchain_get(system_toolkit(), &sys, &d) != JIT_OK)
        cr_skip("no system toolkit at %s: %s", system_toolkit(), d.msg);
    int v = tc->id.nvrtc_major * 100 + tc->id.nvrtc_minor;
    int vs = sys->id.nvrtc_major * 100 + sys->id.nvrtc_minor;
    cr_assert_geq(v, vs, "auto picked %d, system has %d", v, vs);
    cr_assert(jit__toolchain_supports(tc, 90));
    cr_assert_eq(jit__toolchain_get(NULL, &sys, &d), JIT_OK);
    cr_assert_eq(sys, tc, "the choice is made once and kept");
}

/* NVRTC finds its builtins library through its own RPATH, which a dlopen interceptor (ASan's)
 * defeats; loading a toolchain must already have opened the builtins beside libnvrtc, so that
 * NVRTC's by-name open of it needs no search at all. */
Test(compile, loading_opens_the_builtins_beside_nvrtc) {
    const jit__toolchain_t *tc;
    jit__diag_t d;
    jit__diag_init(&d);
    cr_assert_eq(jit__toolchain_get(NULL, &tc, &d), JIT_OK, "%s", d.msg);
    cr_assert_eq(jit__toolchain_load(tc, &d), JIT_OK, "%s", d.msg);
    const char *slash = strrchr(tc->nvrtc_path, '/');
    if (!slash)
        cr_skip("NVRTC came from the loader's search path, not a toolkit directory");
    char name[64], path[sizeof(tc->nvrtc_path) + 64];
    snprintf(name, sizeof(name), "libnvrtc-builtins.so.%d.%d", tc->id.nvrtc_major,
             tc->id.nvrtc_minor);
    snprintf(path, sizeof(path), "%.*s/%s", (int)(slash - tc->nvrtc_path), tc->nvrtc_path, name);
    if (access(path, R_OK) != 0)
        cr_skip("no %s beside %s", name, tc->nvrtc_path);
    cr_assert_not_null(tc->builtins_lib, "%s was not opened", path);
    void *h = dlopen(name, RTLD_NOW | RTLD_NOLOAD);
    cr_assert_not_null(h, "%s is not resolvable by name without a search", name);
    dlclose(h);
}

Test(compile, a_missing_directory_is_a_clear_error) {
    const jit__toolchain_t *tc;
    jit__diag_t d;
    jit__diag_init(&d);
    cr_assert_eq(jit__toolchain_get("/nonexistent/toolkit", &tc, &d), JIT_TOOLCHAIN_NOT_FOUND);
    cr_assert(strstr(d.msg, "/nonexistent/toolkit"), "%s", d.msg);
}

static void compile_ok(const jit__toolchain_t *tc, const char *target) {
    jit__compiled_t c;
    jit__diag_t d;
    jit__diag_init(&d);
    jit_status_t st = jit__compile(tc, k_src, "probe", target, JIT__COMPILE_CUBIN_AND_PTX, &c, &d);
    cr_assert_eq(st, JIT_OK, "%s: %s\n%s", target, d.msg, d.log ? d.log : "");
    cr_assert_gt(c.cubin_size, 0);
    cr_assert_gt(c.registers, 0, "no register count for %s:\n%s", target, c.log);
    /* The cubin's own attributes agree with what ptxas reported. */
    int regs = 0, frame = -1;
    cr_assert_eq(jit__cubin_resources(c.cubin, c.cubin_size, &regs, &frame), 0);
    cr_assert_eq(regs, c.registers, "%s: ELF says %d registers", target, regs);
    cr_assert(strstr(c.log, "registers"), "%s: ptxas report missing:\n%s", target, c.log);
    cr_assert_eq(frame, 0);
    cr_assert_eq(c.smem_static_bytes, 1024, "%s:\n%s", target, c.log);
    cr_assert(strstr(c.ptx, ".entry probe"));
    cr_assert_str_eq(c.target, target);
    /* An ELF cubin. */
    cr_assert_eq(memcmp(c.cubin, "\177ELF", 4), 0);
    jit__compiled_free(&c);
    jit__diag_clear(&d);
}

Test(compile, every_native_target_of_the_system_toolkit) {
    const jit__toolchain_t *tc;
    jit__diag_t d;
    jit__diag_init(&d);
    if (jit__toolchain_get(system_toolkit(), &tc, &d) != JIT_OK)
        cr_skip("no system toolkit: %s", d.msg);
    compile_ok(tc, "sm_90a");
    compile_ok(tc, "sm_100a");
    compile_ok(tc, "sm_103a");
    compile_ok(tc, "sm_120a");
    compile_ok(tc, "sm_100f");
}

Test(compile, sm_107a_natively_with_a_new_enough_nvrtc) {
    const jit__toolchain_t *tc;
    jit__diag_t d;
    jit__diag_init(&d);
    cr_assert_eq(jit__toolchain_get(NULL, &tc, &d), JIT_OK, "%s", d.msg);
    if (!jit__toolchain_supports(tc, 107))
        cr_skip("NVRTC %d.%d does not list sm_107 (run scripts/setup.sh for 13.4+)",
                tc->id.nvrtc_major, tc->id.nvrtc_minor);
    compile_ok(tc, "sm_107a");
}

Test(compile, cubin_attributes_reject_non_elf_input) {
    int regs, frame;
    cr_assert_eq(jit__cubin_resources("not an elf at all, just text padding it out to 64 bytes!!",
                                      57, &regs, &frame),
                 -1);
    unsigned char zeros[128] = {0};
    cr_assert_eq(jit__cubin_resources(zeros, sizeof(zeros), &regs, &frame), -1);
}

Test(compile, errors_carry_the_nvrtc_log) {
    const jit__toolchain_t *tc;
    jit__diag_t d;
    jit__diag_init(&d);
    cr_assert_eq(jit__toolchain_get(NULL, &tc, &d), JIT_OK);
    jit__compiled_t c;
    jit_status_t st = jit__compile(tc, "extern \"C\" __global__ void k() { undeclared(); }", "bad",
                                   "sm_90a", JIT__COMPILE_CUBIN_AND_PTX, &c, &d);
    cr_assert_eq(st, JIT_COMPILE_FAILED);
    cr_assert(strstr(d.msg, "bad"), "%s", d.msg);
    cr_assert_not_null(d.log);
    cr_assert(strstr(d.log, "undeclared"), "%s", d.log);
    jit__compiled_free(&c);
    jit__diag_clear(&d);
    /* PTX that ptxas rejects fails in the link step, with its log. */
    jit__diag_init(&d);
    st = jit__compile(tc,
                      "extern \"C\" __global__ void k(int *p) { asm volatile(\"bogus.op %0;\" :: "
                      "\"r\"(*p)); }",
                      "badptx", "sm_90a", JIT__COMPILE_CUBIN_AND_PTX, &c, &d);
    cr_assert_eq(st, JIT_LINK_FAILED, "%s", d.msg);
    cr_assert_not_null(d.log);
    jit__compiled_free(&c);
    jit__diag_clear(&d);
    jit__diag_init(&d);
    st = jit__compile(tc, k_src, "probe", "compute_90", JIT__COMPILE_CUBIN_AND_PTX, &c, &d);
    cr_assert_eq(st, JIT_UNKNOWN_ARCH);
    jit__compiled_free(&c);
    jit__diag_clear(&d);
}
