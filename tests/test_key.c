/* Key canonicalization and hash stability. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "device_files.h"
#include "family.h"
#include "key.h"
#include "plan.h"

static jit__plan_t plan_for(const char *arch, int64_t n, int64_t k, jit_dtype_t ab,
                            jit_scale_mode_t scales, jit_epilogue_t epi, int band, int sm_count) {
    jit__gemm_spec_t s = {
        .n = n, .k = k, .a = ab, .b = ab, .out = JIT_DTYPE_BF16, .scales = scales, .epilogue = epi};
    jit__plan_t p;
    jit__diag_t d;
    jit__diag_init(&d);
    cr_assert_eq(jit__plan_make(&s, band, sm_count, jit__arch_find(arch), &p, &d), JIT_OK, "%s",
                 d.msg);
    return p;
}

static jit__plan_t make_plan(const char *arch, int64_t n, int64_t k, jit_epilogue_t epi, int band) {
    return plan_for(arch, n, k, JIT_DTYPE_E4M3, JIT_SCALE_ROW, epi, band, 132);
}

static jit__key_t key_of(const jit__plan_t *p, const char *target, int fallback) {
    jit__key_t key;
    jit__diag_t d;
    jit__diag_init(&d);
    cr_assert_eq(jit__key_make(p, target, fallback, &key, &d), JIT_OK, "%s", d.msg);
    return key;
}

/* The generated code with its comments taken out, as the key hashes it. */
static char *code_of(const jit__plan_t *p, const jit__key_t *key) {
    char *src = NULL;
    cr_assert_eq(jit__generate(p, key, &src, NULL), JIT_OK);
    char *code = malloc(strlen(src) + 1);
    code[jit__code_strip_comments(src, code)] = '\0';
    free(src);
    return code;
}

Test(key, hash_matches_an_independent_xxh3_128) {
    /* Reference digests from the Python xxhash package (xxh3_128().hexdigest()), so the
     * byte order and the algorithm are pinned, not just self-consistent. */
    char hex[JIT_KEY_HASH_LEN + 1];
    jit__hash_hex("", 0, hex);
    cr_assert_str_eq(hex, "99aa06d3014798d86001c324468d497f");
    jit__hash_hex("jitgemm", 7, hex);
    cr_assert_str_eq(hex, "d96e253db08b6b5241029ee61df3caeb");
    const char *t = "jitgemm gen=1 route=mma_sync";
    jit__hash_hex(t, strlen(t), hex);
    cr_assert_str_eq(hex, "5006e0c8e29a41e5af1b42fcaa12e5fd");
}

Test(key, canonical_text_is_exact) {
    jit__plan_t p = make_plan("sm_120a", 5120, 5120, JIT_EPILOGUE_LINEAR, 2);
    jit__key_t key = key_of(&p, "sm_120a", 0);
    char expect[JIT_KEY_TEXT_MAX];
    snprintf(expect, sizeof(expect),
             "jitgemm key=%d family=fp8_mma_sync device=%s arch=sm_120a target=sm_120a "
             "fallback=0 band=2 n=5120 k=5120 a=e4m3 b=e4m3 out=bf16 scales=row epilogue=linear "
             "tile=64x128x128 stages=2 threads=256 cluster=1x1 fallback_cluster=0x0 warps=2x4 "
             "code=",
             JIT_KEY_FORMAT_VERSION, jit__device_files_hash());
    cr_assert_eq(strncmp(key.text, expect, strlen(expect)), 0, "%s", key.text);
    const char *code = key.text + strlen(expect);
    cr_assert_eq(strlen(code), 32, "%s", key.text);
    cr_assert_eq(strspn(code, "0123456789abcdef"), 32, "%s", key.text);
    /* The code hash is the hash of the generated code without its comments. */
    char *stripped = code_of(&p, &key);
    char hex[JIT_KEY_HASH_LEN + 1];
    jit__hash_hex(stripped, strlen(stripped), hex);
    cr_assert_str_eq(code, hex);
    free(stripped);
    jit__hash_hex(key.text, strlen(key.text), hex);
    cr_assert_str_eq(key.hash, hex);
    cr_assert_eq(strlen(key.hash), 32);
}

Test(key, same_inputs_same_key_and_no_paths) {
    jit__plan_t a = make_plan("sm_107a", 4096, 7168, JIT_EPILOGUE_LINEAR_ADD, 4);
    jit__plan_t b = make_plan("sm_107a", 4096, 7168, JIT_EPILOGUE_LINEAR_ADD, 4);
    jit__key_t ka = key_of(&a, "sm_107a", 0), kb = key_of(&b, "sm_107a", 0);
    cr_assert_str_eq(ka.text, kb.text);
    cr_assert_str_eq(ka.hash, kb.hash);
    cr_assert_null(strchr(ka.text, '/'), "a key must hold no path: %s", ka.text);
}

Test(key, every_input_changes_the_hash) {
    jit__plan_t base = make_plan("sm_90a", 5120, 5120, JIT_EPILOGUE_LINEAR, 2);
    jit__key_t k0 = key_of(&base, "sm_90a", 0);
    jit__plan_t variants[] = {
        make_plan("sm_90a", 5128, 5120, JIT_EPILOGUE_LINEAR, 2),
        make_plan("sm_90a", 5120, 5136, JIT_EPILOGUE_LINEAR, 2),
        make_plan("sm_90a", 5120, 5120, JIT_EPILOGUE_LINEAR_ADD, 2),
        make_plan("sm_90a", 5120, 5120, JIT_EPILOGUE_LINEAR_SWIGLU, 2),
        make_plan("sm_90a", 5120, 5120, JIT_EPILOGUE_LINEAR, 3),
        make_plan("sm_120a", 5120, 5120, JIT_EPILOGUE_LINEAR, 2),
    };
    for (size_t i = 0; i < sizeof(variants) / sizeof(variants[0]); i++) {
        jit__key_t k = key_of(&variants[i], variants[i].arch->native_target, 0);
        cr_assert_str_neq(k.hash, k0.hash, "variant %zu collides: %s", i, k.text);
    }
    /* Target and fallback are part of the key too: the cubins differ. */
    jit__plan_t rubin = make_plan("sm_107a", 5120, 5120, JIT_EPILOGUE_LINEAR, 2);
    jit__key_t native = key_of(&rubin, "sm_107a", 0), fallback = key_of(&rubin, "sm_100f", 1);
    cr_assert_str_neq(native.hash, fallback.hash);
    cr_assert(strstr(fallback.text, "target=sm_100f fallback=1"));
}

Test(key, holds_no_toolchain_and_no_sm_count) {
    jit__plan_t p = make_plan("sm_90a", 5120, 5120, JIT_EPILOGUE_LINEAR, 2);
    jit__key_t k = key_of(&p, "sm_90a", 0);
    cr_assert_null(strstr(k.text, "nvrtc"), "%s", k.text);
    cr_assert_null(strstr(k.text, "nvjitlink"), "%s", k.text);
    cr_assert_null(strstr(k.text, "sm_count"), "%s", k.text);
}

/* The SM count enters a key only through what the planner chose with it: over SM counts from
 * 2 to 264, two plans share a key exactly when their generated code (comments aside) is the
 * same. The FP8 generators print the SM count in a comment; that must not split keys, and a
 * choice the SM count changed (tcgen05's tile N, wgmma's tile) must. */
Test(key, sm_count_enters_only_through_the_code) {
    static const struct {
        const char *arch;
        jit_dtype_t ab;
        jit_scale_mode_t scales;
    } cases[] = {
        {"sm_90a", JIT_DTYPE_E4M3, JIT_SCALE_ROW},
        {"sm_120a", JIT_DTYPE_E4M3, JIT_SCALE_ROW},
        {"sm_100a", JIT_DTYPE_E4M3, JIT_SCALE_UE8M0_32},
        {"sm_107a", JIT_DTYPE_E2M1, JIT_SCALE_UE4M3_16},
    };
    static const int sms[] = {2, 16, 66, 132, 148, 264};
    int same = 0, differ = 0;
    for (size_t c = 0; c < sizeof(cases) / sizeof(cases[0]); c++) {
        for (int band = 0; band < JIT_TOKEN_BANDS; band++) {
            jit__key_t keys[6];
            char *codes[6];
            for (int i = 0; i < 6; i++) {
                jit__plan_t p = plan_for(cases[c].arch, 4096, 4096, cases[c].ab, cases[c].scales,
                                         JIT_EPILOGUE_LINEAR, band, sms[i]);
                keys[i] = key_of(&p, p.arch->native_target, 0);
                codes[i] = code_of(&p, &keys[i]);
            }
            for (int i = 1; i < 6; i++) {
                int same_code = strcmp(codes[0], codes[i]) == 0;
                int same_key = strcmp(keys[0].hash, keys[i].hash) == 0;
                cr_expect_eq(same_key, same_code,
                             "%s band %d: %d vs %d SMs: same code %d, same key %d", cases[c].arch,
                             band, sms[0], sms[i], same_code, same_key);
                same += same_code;
                differ += !same_code;
            }
            for (int i = 0; i < 6; i++)
                free(codes[i]);
        }
    }
    /* Both sides of the rule are exercised. */
    cr_expect_gt(same, 0);
    cr_expect_gt(differ, 0);
}

Test(key, comments_do_not_reach_the_code_hash) {
    const char *a = "/* sm_count 132 */\n__global__ void f() { // 132 SMs\n"
                    "  asm(\"// a PTX comment stays\"); /* gone */\n\n  int x = '/';\n}\n";
    const char *b = "__global__ void f() {\n  /* a note\n     on two lines */\n"
                    "  asm(\"// a PTX comment stays\");   \n  int x = '/';\n}";
    char oa[256], ob[256];
    size_t na = jit__code_strip_comments(a, oa), nb = jit__code_strip_comments(b, ob);
    oa[na] = ob[nb] = '\0';
    cr_assert_str_eq(oa, ob);
    cr_assert(strstr(oa, "\"// a PTX comment stays\""), "%s", oa);
    cr_assert_null(strstr(oa, "132"), "%s", oa);
    /* Code is not a comment: a changed statement changes the text. */
    const char *c = "__global__ void f() {\n  asm(\"// a PTX comment stays\");\n  int x = '*';\n}";
    char oc[256];
    oc[jit__code_strip_comments(c, oc)] = '\0';
    cr_assert_str_neq(oa, oc);
    /* A quote escaped inside a string does not end it. */
    const char *e = "s = \"a \\\" /* not a comment */\";";
    char oe[64];
    oe[jit__code_strip_comments(e, oe)] = '\0';
    cr_assert_str_eq(oe, e);
}

Test(key, band_boundaries) {
    cr_assert_eq(jit__token_band(1), 0);
    cr_assert_eq(jit__token_band(16), 0);
    cr_assert_eq(jit__token_band(17), 1);
    cr_assert_eq(jit__token_band(64), 1);
    cr_assert_eq(jit__token_band(65), 2);
    cr_assert_eq(jit__token_band(128), 2);
    cr_assert_eq(jit__token_band(129), 3);
    cr_assert_eq(jit__token_band(256), 3);
    cr_assert_eq(jit__token_band(257), 4);
    cr_assert_eq(jit__token_band(1024), 4);
    cr_assert_eq(jit__token_band(1025), 5);
    cr_assert_eq(jit__token_band(1 << 30), 5);
    for (int b = 0; b < JIT_TOKEN_BANDS; b++) {
        int64_t lo, hi;
        jit__token_band_range(b, &lo, &hi);
        cr_assert_eq(jit__token_band(lo), b);
        cr_assert_eq(jit__token_band(hi), b);
        if (b > 0)
            cr_assert_eq(jit__token_band(lo - 1), b - 1);
    }
}
