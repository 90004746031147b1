/* Key canonicalization and hash stability. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <string.h>

#include "device_files.h"
#include "family.h"
#include "key.h"
#include "plan.h"

static jit__plan_t make_plan(const char *arch, int64_t n, int64_t k, jit_epilogue_t epi, int band) {
    jit__gemm_spec_t s = {.n = n,
                          .k = k,
                          .a = JIT_DTYPE_E4M3,
                          .b = JIT_DTYPE_E4M3,
                          .out = JIT_DTYPE_BF16,
                          .scales = JIT_SCALE_ROW,
                          .epilogue = epi};
    jit__plan_t p;
    jit__diag_t d;
    jit__diag_init(&d);
    cr_assert_eq(jit__plan_make(&s, band, 132, jit__arch_find(arch), &p, &d), JIT_OK, "%s", d.msg);
    return p;
}

static const jit__toolchain_id_t k_tc = {13, 5, 13, 5};

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
    jit__key_t key;
    jit__key_make(&p, &k_tc, "sm_120a", 0, &key);
    char expect[JIT_KEY_TEXT_MAX];
    snprintf(expect, sizeof(expect),
             "jitgemm key=%d family=fp8_mma_sync device=%s arch=sm_120a target=sm_120a "
             "fallback=0 nvrtc=13.5 nvjitlink=13.5 sm_count=132 band=2 n=5120 k=5120 a=e4m3 "
             "b=e4m3 out=bf16 scales=row epilogue=linear tile=64x128x128 stages=2 threads=256 "
             "cluster=1x1 fallback_cluster=0x0 warps=2x4",
             JIT_KEY_FORMAT_VERSION, jit__device_files_hash());
    cr_assert_str_eq(key.text, expect);
    char hex[JIT_KEY_HASH_LEN + 1];
    jit__hash_hex(key.text, strlen(key.text), hex);
    cr_assert_str_eq(key.hash, hex);
    cr_assert_eq(strlen(key.hash), 32);
}

Test(key, same_inputs_same_key_and_no_paths) {
    jit__plan_t a = make_plan("sm_107a", 4096, 7168, JIT_EPILOGUE_LINEAR_ADD, 4);
    jit__plan_t b = make_plan("sm_107a", 4096, 7168, JIT_EPILOGUE_LINEAR_ADD, 4);
    jit__key_t ka, kb;
    jit__key_make(&a, &k_tc, "sm_107a", 0, &ka);
    jit__key_make(&b, &k_tc, "sm_107a", 0, &kb);
    cr_assert_str_eq(ka.text, kb.text);
    cr_assert_str_eq(ka.hash, kb.hash);
    cr_assert_null(strchr(ka.text, '/'), "a key must hold no path: %s", ka.text);
}

Test(key, every_input_changes_the_hash) {
    jit__plan_t base = make_plan("sm_90a", 5120, 5120, JIT_EPILOGUE_LINEAR, 2);
    jit__key_t k0;
    jit__key_make(&base, &k_tc, "sm_90a", 0, &k0);
    jit__plan_t variants[] = {
        make_plan("sm_90a", 5128, 5120, JIT_EPILOGUE_LINEAR, 2),
        make_plan("sm_90a", 5120, 5136, JIT_EPILOGUE_LINEAR, 2),
        make_plan("sm_90a", 5120, 5120, JIT_EPILOGUE_LINEAR_ADD, 2),
        make_plan("sm_90a", 5120, 5120, JIT_EPILOGUE_LINEAR_SWIGLU, 2),
        make_plan("sm_90a", 5120, 5120, JIT_EPILOGUE_LINEAR, 3),
        make_plan("sm_120a", 5120, 5120, JIT_EPILOGUE_LINEAR, 2),
    };
    for (size_t i = 0; i < sizeof(variants) / sizeof(variants[0]); i++) {
        jit__key_t k;
        jit__key_make(&variants[i], &k_tc, variants[i].arch->native_target, 0, &k);
        cr_assert_str_neq(k.hash, k0.hash, "variant %zu collides: %s", i, k.text);
    }
    /* Toolchain, target and fallback are part of the key too. */
    jit__toolchain_id_t other = {13, 0, 13, 0};
    jit__key_t k;
    jit__key_make(&base, &other, "sm_90a", 0, &k);
    cr_assert_str_neq(k.hash, k0.hash);
    jit__plan_t rubin = make_plan("sm_107a", 5120, 5120, JIT_EPILOGUE_LINEAR, 2);
    jit__key_t native, fallback;
    jit__key_make(&rubin, &k_tc, "sm_107a", 0, &native);
    jit__key_make(&rubin, &k_tc, "sm_100f", 1, &fallback);
    cr_assert_str_neq(native.hash, fallback.hash);
    cr_assert(strstr(fallback.text, "target=sm_100f fallback=1"));
}

Test(key, band_boundaries) {
    cr_assert_eq(jit__token_band(1), 0);
    cr_assert_eq(jit__token_band(16), 0);
    cr_assert_eq(jit__token_band(17), 1);
    cr_assert_eq(jit__token_band(64), 1);
    cr_assert_eq(jit__token_band(65), 2);
    cr_assert_eq(jit__token_band(256), 2);
    cr_assert_eq(jit__token_band(1024), 3);
    cr_assert_eq(jit__token_band(1025), 4);
    cr_assert_eq(jit__token_band(1 << 30), 4);
    for (int b = 0; b < JIT_TOKEN_BANDS; b++) {
        int64_t lo, hi;
        jit__token_band_range(b, &lo, &hi);
        cr_assert_eq(jit__token_band(lo), b);
        cr_assert_eq(jit__token_band(hi), b);
        if (b > 0)
            cr_assert_eq(jit__token_band(lo - 1), b - 1);
    }
}
