/*
 * The family registry and what every family shares: a toy family registered at run time takes
 * the problems it claims (through the public API too) without any other family's code knowing;
 * refusals name the family that would compute such a problem; the hash of the embedded device
 * code is in every key, so editing a device header changes the key; and the generated sources
 * of a few plans are pinned in tests/golden/ so an accidental change of a generator shows in
 * review (JITGEMM_UPDATE_GOLDEN=1 rewrites them after an intended one).
 */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "device_files.h"
#include "families.h"
#include "family.h"
#include "jitgemm.h"
#include "key.h"
#include "plan.h"
#include "reference.h"
#include "support.h"

#define TOY_N 4242

static jit__gemm_spec_t row_spec(int64_t n, int64_t k) {
    jit__gemm_spec_t s = {.n = n,
                          .k = k,
                          .a = JIT_DTYPE_E4M3,
                          .b = JIT_DTYPE_E4M3,
                          .out = JIT_DTYPE_BF16,
                          .scales = JIT_SCALE_ROW,
                          .epilogue = JIT_EPILOGUE_LINEAR};
    return s;
}

/* ---- a toy family: takes row-scaled problems with n = TOY_N, nothing else ---------------- */

static jit_status_t toy_supports(const jit__gemm_spec_t *s, const jit__arch_profile_t *arch,
                                 jit__diag_t *d) {
    (void)arch;
    (void)d;
    return s->n == TOY_N && s->scales == JIT_SCALE_ROW ? JIT_OK : JIT_UNSUPPORTED;
}

static jit_status_t toy_plan(jit__plan_t *p, jit__diag_t *d) {
    (void)d;
    p->tile_m = p->tile_n = 64;
    p->tile_k = 32;
    p->stages = 1;
    p->threads = 32;
    p->cluster_m = p->cluster_n = 1;
    p->payload.bytes[0] = 42;
    return JIT_OK;
}

static void toy_key_fields(const jit__plan_t *p, jit__sb_t *sb) {
    jit__sb_printf(sb, " toy=%d", p->payload.bytes[0]);
}

static jit_status_t toy_generate(const jit__plan_t *p, const jit__key_t *key, char **source,
                                 jit__diag_t *d) {
    (void)p;
    (void)key;
    (void)d;
    *source = strdup("extern \"C\" __global__ void jitgemm_toy() {}\n");
    return JIT_OK;
}

static jit_status_t toy_launch(const jit__driver_t *drv, CUfunction fn, const jit__plan_t *plan,
                               void *state, const jit__launch_args_t *args, jit__diag_t *d) {
    (void)drv, (void)fn, (void)plan, (void)state, (void)args;
    return jit__fail(d, JIT_INTERNAL, "the toy family launches nothing");
}

static const jit__family_t k_toy = {
    .name = "toy",
    .kernel_name = "jitgemm_toy",
    .supports = toy_supports,
    .plan = toy_plan,
    .key_fields = toy_key_fields,
    .generate = toy_generate,
    .launch = toy_launch,
};

Test(families, a_registered_family_takes_its_problems_and_only_those) {
    cr_assert_eq(jit__family_register(&k_toy), JIT_OK);
    cr_assert_eq(jit__family_find("toy"), &k_toy);
    size_t n;
    const jit__family_t *const *t = jit__families(&n);
    cr_assert_eq(t[0], &k_toy, "a registered family is asked first");

    const jit__arch_profile_t *arch = jit__arch_find("sm_90a");
    jit__plan_t p;
    jit__diag_t d;
    jit__diag_init(&d);
    jit__gemm_spec_t s = row_spec(TOY_N, 1024);
    cr_assert_eq(jit__plan_make(&s, 2, 132, arch, &p, &d), JIT_OK, "%s", d.msg);
    cr_assert_eq(p.family, &k_toy);
    cr_assert_str_eq(jit__plan_kernel_name(&p), "jitgemm_toy");
    jit__key_t key;
    jit__key_make(&p, "sm_90a", 0, &key, NULL);
    cr_expect(strstr(key.text, "family=toy") && strstr(key.text, " toy=42"), "%s", key.text);
    char *src = NULL;
    cr_assert_eq(jit__generate(&p, &key, &src, &d), JIT_OK);
    cr_expect(strstr(src, "jitgemm_toy"));
    free(src);

    /* Problems it does not claim still go to the built-in families. */
    s = row_spec(4096, 1024);
    cr_assert_eq(jit__plan_make(&s, 2, 132, arch, &p, &d), JIT_OK, "%s", d.msg);
    cr_expect_neq(p.family, &k_toy);

    /* The public API routes through the registry too. */
    jit_context_options_t opt;
    jit_context_options_init(&opt);
    opt.arch = "sm_90a";
    opt.log_level = JIT_LOG_ERROR;
    char *dir = jt_mkdtemp("families");
    opt.cache_dir = dir;
    jit_context_t *ctx;
    cr_assert_eq(jit_context_create(&opt, &ctx), JIT_OK, "%s", jit_last_error(NULL));
    jit_problem_t prob;
    jit_problem_init(&prob);
    prob.m = 100;
    prob.n = TOY_N;
    prob.k = 1024;
    char *out = NULL;
    cr_assert_eq(jit_inspect(ctx, &prob, JIT_INSPECT_SOURCE, &out), JIT_OK, "%s",
                 jit_last_error(ctx));
    cr_expect(strstr(out, "jitgemm_toy"), "inspect --source went to the toy family");
    jit_free(out);
    cr_assert_eq(jit_inspect(ctx, &prob, JIT_INSPECT_PLAN, &out), JIT_OK);
    cr_expect(strstr(out, "\"family\": \"toy\""), "%s", out);
    jit_free(out);
    jit_context_destroy(ctx);
    jt_rmtree(dir);
    free(dir);

    jit__family_unregister(&k_toy);
    cr_expect_null(jit__family_find("toy"));
    s = row_spec(TOY_N, 1024);
    cr_assert_eq(jit__plan_make(&s, 2, 132, arch, &p, &d), JIT_OK, "%s", d.msg);
    cr_expect_neq(p.family, &k_toy);
}

Test(families, incomplete_families_are_refused) {
    jit__family_t bad = k_toy;
    bad.generate = NULL;
    cr_expect_eq(jit__family_register(&bad), JIT_INVALID_ARGUMENT);
    cr_expect_eq(jit__family_register(NULL), JIT_INVALID_ARGUMENT);
    cr_expect_null(jit__family_find("toy"));
}

Test(families, a_refusal_names_the_family_that_would_compute_it) {
    jit__gemm_spec_t s = row_spec(4096, 4096);
    s.a = s.b = JIT_DTYPE_E2M1;
    s.scales = JIT_SCALE_UE4M3_16;
    jit__plan_t p;
    jit__diag_t d;
    jit__diag_init(&d);
    cr_expect_eq(jit__plan_make(&s, 2, 132, jit__arch_find("sm_90a"), &p, &d),
                 JIT_UNSUPPORTED_ARCH);
    cr_expect(strstr(d.msg, "nvfp4 is not supported on sm_90a"), "%s", d.msg);
    jit__diag_init(&d);
    s = row_spec(4096, 4096);
    s.out = JIT_DTYPE_F32;
    cr_expect_eq(jit__plan_make(&s, 2, 132, jit__arch_find("sm_90a"), &p, &d), JIT_UNSUPPORTED);
    cr_expect(strstr(d.msg, "bf16 output"), "%s", d.msg);
}

/* ---- device code in the key ---------------------------------------------------------------- */

Test(families, editing_an_embedded_header_changes_every_key) {
    size_t n;
    const jit__device_file_t *files = jit__device_files(&n);
    cr_assert_gt(n, 0);
    char hash[JIT_DEVICE_HASH_LEN + 1];
    jit__device_files_hash_of(files, n, hash);
    cr_assert_str_eq(hash, jit__device_files_hash(), "the key's hash is the table's");

    jit__gemm_spec_t s = row_spec(5120, 5120);
    jit__plan_t p;
    jit__diag_t d;
    jit__diag_init(&d);
    cr_assert_eq(jit__plan_make(&s, 3, 132, jit__arch_find("sm_120a"), &p, &d), JIT_OK);
    jit__key_t before, after, back;
    jit__key_make(&p, "sm_120a", 0, &before, NULL);
    char want[64];
    snprintf(want, sizeof(want), " device=%s ", hash);
    cr_expect(strstr(before.text, want), "%s", before.text);

    /* One byte of the mma.sync kernel file, edited in a copy of the table. */
    jit__device_file_t *copy = calloc(n, sizeof(*copy));
    char *edited = NULL;
    for (size_t i = 0; i < n; i++) {
        copy[i] = files[i];
        if (strcmp(files[i].name, "fp8_mma_sync/device/kernel.cuh") == 0) {
            edited = strdup(files[i].text);
            edited[files[i].size / 2] ^= 1;
            copy[i].text = edited;
        }
    }
    cr_assert_not_null(edited, "the mma.sync device file is embedded");
    jit__device_files_override(copy, n);
    jit__key_make(&p, "sm_120a", 0, &after, NULL);
    jit__device_files_override(NULL, 0);
    jit__key_make(&p, "sm_120a", 0, &back, NULL);
    cr_expect_str_neq(before.hash, after.hash, "an edited device file kept the key");
    cr_expect_str_eq(before.hash, back.hash, "the embedded table is back");
    free(edited);
    free(copy);
}

Test(families, every_include_of_a_generated_source_is_embedded) {
    jit__gemm_spec_t s = row_spec(5120, 5120);
    jit__plan_t p;
    jit__diag_t d;
    jit__diag_init(&d);
    cr_assert_eq(jit__plan_make(&s, 3, 132, jit__arch_find("sm_120a"), &p, &d), JIT_OK);
    char *src = NULL;
    cr_assert_eq(jit__generate(&p, NULL, &src, &d), JIT_OK, "%s", d.msg);
    size_t n;
    const jit__device_file_t *files = jit__device_files(&n);
    /* Every #include in the source and in the files it reaches names an embedded file. */
    const char *texts[64];
    size_t nt = 0;
    texts[nt++] = src;
    for (size_t i = 0; i < n && nt < 64; i++)
        texts[nt++] = files[i].text;
    for (size_t t = 0; t < nt; t++) {
        for (const char *q = strstr(texts[t], "#include \""); q; q = strstr(q + 1, "#include \"")) {
            char name[128];
            const char *b = q + 10, *e = strchr(b, '"');
            cr_assert(e && (size_t)(e - b) < sizeof(name));
            memcpy(name, b, (size_t)(e - b));
            name[e - b] = '\0';
            cr_expect_not_null(jit__device_file(name), "#include \"%s\" is not embedded", name);
        }
    }
    free(src);
}

/* ---- golden sources -------------------------------------------------------------------------- */

/* The generated text with the device hash (which moves with every device edit) blanked out, so
 * the golden files pin what the generator writes and nothing else. */
static char *normalized_source(const jit__plan_t *p) {
    jit__key_t key;
    jit__key_make(p, p->arch->name, 0, &key, NULL);
    char *src = NULL;
    jit__diag_t d;
    jit__diag_init(&d);
    cr_assert_eq(jit__generate(p, &key, &src, &d), JIT_OK, "%s", d.msg);
    const char *h = jit__device_files_hash();
    for (char *q = strstr(src, h); q; q = strstr(q, h))
        memset(q, 'x', strlen(h));
    /* The key hash covers the device hash too. */
    for (char *q = strstr(src, key.hash); q; q = strstr(q, key.hash))
        memset(q, 'k', strlen(key.hash));
    return src;
}

static void check_golden(const char *name, const jit__gemm_spec_t *s, int band, const char *arch) {
    jit__plan_t p;
    jit__diag_t d;
    jit__diag_init(&d);
    cr_assert_eq(jit__plan_make(s, band, jit__arch_find(arch)->default_sm_count,
                                jit__arch_find(arch), &p, &d),
                 JIT_OK, "%s", d.msg);
    char *src = normalized_source(&p);
    char path[1024];
    snprintf(path, sizeof(path), "%s/tests/golden/%s.cu", JITGEMM_SOURCE_DIR, name);
    const char *update = getenv("JITGEMM_UPDATE_GOLDEN");
    if (update && strcmp(update, "1") == 0) {
        cr_assert_eq(jt_write_file(path, src), 0, "cannot write %s", path);
    } else {
        char *want = jt_read_file(path, NULL);
        cr_assert_not_null(want, "%s is missing: run the test with JITGEMM_UPDATE_GOLDEN=1", path);
        cr_expect_str_eq(src, want,
                         "%s: the generated source changed; if that was intended, rerun with "
                         "JITGEMM_UPDATE_GOLDEN=1 and review the diff",
                         path);
        free(want);
    }
    free(src);
}

Test(families, golden_sources) {
    jit__gemm_spec_t s = row_spec(5120, 17408);
    check_golden("fp8_mma_sync_linear_band5_sm_120a", &s, 5, "sm_120a");
    s = row_spec(1001, 1552);
    s.epilogue = JIT_EPILOGUE_LINEAR_ADD;
    check_golden("fp8_mma_sync_add_band0_sm_100a", &s, 0, "sm_100a");
    s = row_spec(27648, 5120);
    s.epilogue = JIT_EPILOGUE_LINEAR_SWIGLU;
    check_golden("fp8_mma_sync_swiglu_band2_sm_120a", &s, 2, "sm_120a");
    s = row_spec(5120, 17408);
    check_golden("fp8_wgmma_linear_band5_sm_90a", &s, 5, "sm_90a");
    s = row_spec(27648, 5120);
    s.epilogue = JIT_EPILOGUE_LINEAR_SWIGLU;
    check_golden("fp8_wgmma_swiglu_band1_sm_90a", &s, 1, "sm_90a");
    s = row_spec(7168, 16384);
    s.scales = JIT_SCALE_BLOCK_1X128_128X128;
    check_golden("fp8_block_wgmma_linear_band5_sm_90a", &s, 5, "sm_90a");
    s.epilogue = JIT_EPILOGUE_LINEAR_ADD;
    check_golden("fp8_block_wgmma_add_band0_sm_90a", &s, 0, "sm_90a");
    const jit__gemm_spec_t quant = {.k = 7184,
                                    .a = JIT_DTYPE_BF16,
                                    .out = JIT_DTYPE_E4M3,
                                    .scales = JIT_SCALE_BLOCK_1X128_128X128,
                                    .epilogue = JIT_EPILOGUE_QUANTIZE_FP8_1X128,
                                    .scale_type = JIT_SCALE_TYPE_F32};
    check_golden("quant_fp8_1x128_band4_sm_90a", &quant, 4, "sm_90a");
    s = row_spec(4096, 7168);
    s.groups = 8;
    s.layout = JIT_GROUPS_CONTIGUOUS;
    check_golden("fp8_grouped_wgmma_linear_band5_sm_90a", &s, 5, "sm_90a");
    s = row_spec(4096, 7168);
    s.epilogue = JIT_EPILOGUE_LINEAR_SWIGLU;
    s.groups = 256;
    s.layout = JIT_GROUPS_MASKED;
    setenv("JITGEMM_FORCE_CANDIDATE", "grouped_swap:16x128", 1);
    check_golden("fp8_grouped_wgmma_swap_swiglu_band0_sm_90a", &s, 0, "sm_90a");
    unsetenv("JITGEMM_FORCE_CANDIDATE");
}

/* Every GEMM family has a reference and a tolerance; the FP8 families' reference is the
 * row-scaled one, argument for argument (a wrapper that swapped lda and ldb would show here).
 * The quantizer computes no D: its reference is bit-exact (jit__ref_quant_fp8_1x128), so it has
 * no tolerance to keep. */
Test(families, every_family_has_a_reference_and_a_tolerance) {
    size_t n;
    const jit__family_t *const *t = jit__families(&n);
    for (size_t i = 0; i < n; i++) {
        if (t[i] == &jit__family_quant_fp8_1x128)
            continue;
        cr_expect_not_null(t[i]->reference, "%s has no reference", t[i]->name);
        cr_expect_not_null(t[i]->tolerance, "%s has no tolerance", t[i]->name);
    }
    enum { M = 3, N = 5, K = 48, LDA = 64, LDB = 80 };
    uint8_t a[M * LDA], b[N * LDB];
    float sa[M], sb[N];
    uint64_t rng = 0x1234;
    for (size_t i = 0; i < sizeof(a); i++)
        a[i] = (uint8_t)(1 + jt_rng_next(&rng) % 0x7e);
    for (size_t i = 0; i < sizeof(b); i++)
        b[i] = (uint8_t)(0x80 | (1 + jt_rng_next(&rng) % 0x7e));
    for (int i = 0; i < M; i++)
        sa[i] = (float)jt_rng_uniform(&rng, 0.5, 2.0);
    for (int i = 0; i < N; i++)
        sb[i] = (float)jt_rng_uniform(&rng, 0.5, 2.0);
    jit__gemm_spec_t s = row_spec(N, K);
    jit__ref_inputs_t in = {M, a, LDA, b, LDB, sa, sb, NULL, 0, 1.5f, 0, 0};
    const char *fams[] = {"fp8_wgmma", "fp8_mma_sync"};
    for (size_t f = 0; f < 2; f++) {
        double want[M * N], want_mag[M * N], got[M * N], got_mag[M * N];
        jit__ref_fp8_rowscaled(&s, M, a, LDA, b, LDB, sa, sb, NULL, 0, 1.5f, want, want_mag);
        jit__family_find(fams[f])->reference(&s, &in, got, got_mag);
        for (int i = 0; i < M * N; i++) {
            cr_expect_eq(got[i], want[i], "%s [%d]", fams[f], i);
            cr_expect_eq(got_mag[i], want_mag[i], "%s mag [%d]", fams[f], i);
        }
    }
    /* The wgmma family's tolerance is the wider one of FP8 tensor-core accumulation. */
    cr_expect_gt(jit__family_find("fp8_wgmma")->tolerance(1.0, 1000.0),
                 jit__family_find("fp8_mma_sync")->tolerance(1.0, 1000.0));
}
