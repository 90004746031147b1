/*
 * tcgen05 descriptor encoders against hand-derived values (docs/hardware-facts.md F10, F11)
 * and the known traps (F7-F9): format code 1 vs 5, sign-extended SF-ID shifts, N = 0, the sm_107a M
 * rules at 2x K, UE5M3 off sm_107a.
 */
#include <criterion/criterion.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "tcgen05/desc.h"

static const jit__arch_profile_t *arch(const char *name) {
    const jit__arch_profile_t *a = jit__arch_find(name);
    cr_assert_not_null(a, "%s", name);
    return a;
}

static jit__tc_idesc_params_t params(jit__tc_kind_t kind, jit_dtype_t a, jit_dtype_t b,
                                     jit__tc_sf_format_t sf, int vec, int m, int n, int k,
                                     int cta_group) {
    jit__tc_idesc_params_t p = {.kind = kind,
                                .a = a,
                                .b = b,
                                .sf = sf,
                                .sf_vec = vec,
                                .m = m,
                                .n = n,
                                .k = k,
                                .cta_group = cta_group};
    return p;
}

static uint32_t encode_ok(const char *archname, jit__tc_idesc_params_t p) {
    jit__diag_t d;
    jit__diag_init(&d);
    uint32_t v = 0xDEADBEEFu;
    jit_status_t st = jit__tc_idesc(arch(archname), &p, &v, &d);
    cr_assert_eq(st, JIT_OK, "%s: %s", archname, d.msg);
    return v;
}

static jit_status_t encode_err(const char *archname, jit__tc_idesc_params_t p, char *msg,
                               size_t msg_size) {
    jit__diag_t d;
    jit__diag_init(&d);
    uint32_t v = 0x12345678u;
    jit_status_t st = jit__tc_idesc(arch(archname), &p, &v, &d);
    cr_assert_neq(st, JIT_OK, "%s: expected an error", archname);
    cr_assert_eq(v, 0x12345678u, "an illegal combination must not produce a descriptor");
    cr_assert_neq(d.msg[0], '\0');
    if (msg) {
        size_t n = strlen(d.msg);
        if (n >= msg_size)
            n = msg_size - 1;
        memcpy(msg, d.msg, n);
        msg[n] = '\0';
    }
    return st;
}

#define E4M3 JIT_DTYPE_E4M3
#define E5M2 JIT_DTYPE_E5M2
#define E2M1 JIT_DTYPE_E2M1
#define F8 JIT_TC_KIND_MXF8F6F4
#define F4 JIT_TC_KIND_MXF4
#define NV JIT_TC_KIND_MXF4NVF4
#define UE8 JIT_TC_SF_UE8M0
#define UE4 JIT_TC_SF_UE4M3
#define UE5 JIT_TC_SF_UE5M3

Test(tc_idesc, worked_values_of_the_docs) {
    /* hardware-facts.md F10, each derived by hand from the bit map of F7. */
    cr_expect_eq(encode_ok("sm_100a", params(NV, E2M1, E2M1, UE4, 16, 128, 256, 64, 1)),
                 0x08400480u);
    cr_expect_eq(encode_ok("sm_100a", params(F4, E2M1, E2M1, UE8, 32, 128, 256, 64, 1)),
                 0x08C00480u);
    cr_expect_eq(encode_ok("sm_100a", params(F8, E4M3, E4M3, UE8, 32, 128, 256, 32, 1)),
                 0x08C00000u);
    cr_expect_eq(encode_ok("sm_100a", params(F8, E2M1, E4M3, UE8, 32, 128, 128, 32, 1)),
                 0x08A00280u);
    cr_expect_eq(encode_ok("sm_103a", params(NV, E2M1, E2M1, UE4, 16, 256, 256, 96, 2)),
                 0x90400480u);
    cr_expect_eq(encode_ok("sm_107a", params(NV, E2M1, E2M1, UE4, 16, 256, 256, 128, 2)),
                 0x10400488u);
    cr_expect_eq(encode_ok("sm_107a", params(NV, E2M1, E2M1, UE5, 16, 256, 256, 128, 2)),
                 0x11400488u);
    cr_expect_eq(encode_ok("sm_107a", params(F8, E4M3, E4M3, UE8, 32, 256, 256, 64, 2)),
                 0x90C00000u);
    cr_expect_eq(encode_ok("sm_107a", params(F8, E2M1, E4M3, UE8, 32, 128, 128, 64, 1)),
                 0x88A00280u);
}

Test(tc_idesc, k_size_bits_per_kind_and_arch) {
    /* sm_107a FP4 K=128: bit 3 = 1, bit 31 = 0; mxf8f6f4 K=64: bit 3 = 0, bit 31 = 1. */
    uint32_t fp4 = encode_ok("sm_107a", params(NV, E2M1, E2M1, UE8, 32, 128, 128, 128, 1));
    cr_expect_eq((fp4 >> 3) & 1u, 1u);
    cr_expect_eq(fp4 >> 31, 0u);
    uint32_t fp8 = encode_ok("sm_107a", params(F8, E5M2, E4M3, UE8, 32, 128, 128, 64, 1));
    cr_expect_eq((fp8 >> 3) & 1u, 0u);
    cr_expect_eq(fp8 >> 31, 1u);
    /* The 1x K modes stay encodable on sm_107a, with both bits clear. */
    uint32_t fp4_1x = encode_ok("sm_107a", params(NV, E2M1, E2M1, UE8, 32, 128, 128, 64, 1));
    cr_expect_eq(fp4_1x & ((1u << 3) | (1u << 31)), 0u);
    /* sm_100a has one K per kind: FP4 K=128 and FP8 K=64 do not exist there. */
    encode_err("sm_100a", params(NV, E2M1, E2M1, UE8, 32, 128, 128, 128, 1), NULL, 0);
    encode_err("sm_100a", params(F8, E4M3, E4M3, UE8, 32, 128, 128, 64, 1), NULL, 0);
    /* K=96 is sm_103a's (and needs 256xN with cta_group::2). */
    encode_err("sm_100a", params(NV, E2M1, E2M1, UE4, 16, 256, 256, 96, 2), NULL, 0);
    encode_err("sm_103a", params(NV, E2M1, E2M1, UE4, 16, 128, 256, 96, 1), NULL, 0);
}

Test(tc_idesc, e2m1_code_depends_on_the_kind) {
    cr_expect_eq(jit__tc_format_code(F8, E2M1), 5);
    cr_expect_eq(jit__tc_format_code(NV, E2M1), 1);
    cr_expect_eq(jit__tc_format_code(F4, E2M1), 1);
    cr_expect_eq(jit__tc_format_code(F8, E5M2), 1);
    cr_expect_eq(jit__tc_format_code(F8, E4M3), 0);
    cr_expect_eq(jit__tc_format_code(NV, E4M3), -1);
    cr_expect_eq(jit__tc_format_code(F8, JIT_DTYPE_BF16), -1);
    /* The mixed descriptor with E2M1 as A must carry 5; 1 would read as E5M2 (0x88A00080). */
    uint32_t v = encode_ok("sm_107a", params(F8, E2M1, E4M3, UE8, 32, 128, 128, 64, 1));
    cr_expect_neq(v, 0x88A00080u);
    jit__tc_idesc_fields_t f;
    jit__tc_idesc_decode(v, F8, arch("sm_107a"), &f);
    cr_expect_eq(f.a_format, 5u);
    cr_expect_eq(f.b_format, 0u);
    /* E2M1 as B under mxf8f6f4 uses the 3-bit field at 10-12. */
    uint32_t w = encode_ok("sm_100a", params(F8, E4M3, E2M1, UE8, 32, 128, 64, 32, 1));
    cr_expect_eq((w >> 10) & 7u, 5u);
    /* FP4 kinds refuse FP8 operands. */
    char msg[256];
    cr_expect_eq(
        encode_err("sm_100a", params(NV, E4M3, E2M1, UE4, 16, 128, 128, 64, 1), msg, sizeof(msg)),
        JIT_UNSUPPORTED);
}

Test(tc_idesc, legal_m_and_n_per_cta_group_and_arch) {
    char msg[256];
    /* sm_107a 2x K: M=64 (any group) and 2-CTA M=128 are illegal. */
    cr_expect_eq(
        encode_err("sm_107a", params(F8, E4M3, E4M3, UE8, 32, 64, 128, 64, 1), msg, sizeof(msg)),
        JIT_UNSUPPORTED);
    cr_expect(strstr(msg, "M=128") != NULL, "%s", msg);
    encode_err("sm_107a", params(F8, E4M3, E4M3, UE8, 32, 128, 128, 64, 2), NULL, 0);
    encode_err("sm_107a", params(NV, E2M1, E2M1, UE4, 16, 128, 128, 128, 2), NULL, 0);
    encode_err("sm_107a", params(NV, E2M1, E2M1, UE4, 16, 256, 128, 128, 1), NULL, 0);
    /* sm_100a: block-scaled M=64 does not exist; 2-CTA takes M=128 and 256. */
    encode_err("sm_100a", params(F8, E4M3, E4M3, UE8, 32, 64, 128, 32, 1), NULL, 0);
    encode_ok("sm_100a", params(F8, E4M3, E4M3, UE8, 32, 128, 128, 32, 2));
    encode_ok("sm_100a", params(F8, E4M3, E4M3, UE8, 32, 256, 128, 32, 2));
    /* N: multiple of 8 up to 256 with ::1, of 16 with ::2; 0 never. */
    encode_ok("sm_107a", params(NV, E2M1, E2M1, UE4, 16, 128, 8, 128, 1));
    encode_ok("sm_107a", params(NV, E2M1, E2M1, UE4, 16, 128, 248, 128, 1));
    encode_err("sm_107a", params(NV, E2M1, E2M1, UE4, 16, 256, 24, 128, 2), NULL, 0);
    encode_err("sm_107a", params(NV, E2M1, E2M1, UE4, 16, 128, 0, 128, 1), NULL, 0);
    encode_err("sm_107a", params(NV, E2M1, E2M1, UE4, 16, 128, 264, 128, 1), NULL, 0);
    encode_err("sm_100a", params(NV, E2M1, E2M1, UE4, 16, 128, 12, 64, 1), NULL, 0);
}

Test(tc_idesc, scale_format_rules) {
    char msg[256];
    /* UE5M3 is an sm_107a format. */
    cr_expect_eq(
        encode_err("sm_100a", params(NV, E2M1, E2M1, UE5, 16, 128, 128, 64, 1), msg, sizeof(msg)),
        JIT_UNSUPPORTED_ARCH);
    cr_expect(strstr(msg, "ue5m3") != NULL, "%s", msg);
    /* mxf8f6f4 and mxf4 take UE8M0 per 32 only. */
    encode_err("sm_107a", params(F8, E4M3, E4M3, UE4, 16, 128, 128, 64, 1), NULL, 0);
    encode_err("sm_100a", params(F4, E2M1, E2M1, UE4, 16, 128, 128, 64, 1), NULL, 0);
    /* block32 with UE4M3: sm_107a's valid-combination table only. */
    encode_err("sm_100a", params(NV, E2M1, E2M1, UE4, 32, 128, 128, 64, 1), NULL, 0);
    uint32_t v = encode_ok("sm_107a", params(NV, E2M1, E2M1, UE4, 32, 128, 128, 128, 1));
    cr_expect_eq((v >> 23) & 3u, 0u);
    /* UE8M0 sets bit 23 on both arch generations; UE5M3 is code 2, bits 23-24. */
    cr_expect_eq(
        (encode_ok("sm_100a", params(NV, E2M1, E2M1, UE8, 16, 128, 128, 64, 1)) >> 23) & 1u, 1u);
    cr_expect_eq(
        (encode_ok("sm_107a", params(NV, E2M1, E2M1, UE5, 32, 128, 128, 128, 1)) >> 23) & 3u, 2u);
    /* sm_90a has no tcgen05 at all. */
    cr_expect_eq(encode_err("sm_90a", params(NV, E2M1, E2M1, UE4, 16, 128, 128, 64, 1), NULL, 0),
                 JIT_UNSUPPORTED_ARCH);
}

Test(tc_idesc, decode_round_trips_every_field) {
    const jit__arch_profile_t *a = arch("sm_107a");
    jit__tc_idesc_fields_t f;
    jit__tc_idesc_decode(0x11400488u, NV, a, &f);
    cr_expect_eq(f.k_size_hi, 1u);
    cr_expect_eq(f.k_size_lo, 0u);
    cr_expect_eq(f.a_format, 1u);
    cr_expect_eq(f.b_format, 1u);
    cr_expect_eq(f.scale_format, 2u);
    cr_expect_eq(f.m, 256);
    cr_expect_eq(f.n, 256);
    cr_expect_eq(f.k, 128);
    cr_expect_eq(f.sfa_id, 0u);
    cr_expect_eq(f.sfb_id, 0u);
    jit__tc_idesc_decode(0x90C00000u, F8, a, &f);
    cr_expect_eq(f.k, 64);
    cr_expect_eq(f.scale_format, 1u);
    /* The same bits mean K=32 for mxf8f6f4 on sm_100a when bit 31 is clear, and nothing legal
     * when it is set. */
    jit__tc_idesc_decode(0x08C00000u, F8, arch("sm_100a"), &f);
    cr_expect_eq(f.k, 32);
    jit__tc_idesc_decode(0x88C00000u, F8, arch("sm_100a"), &f);
    cr_expect_eq(f.k, 0);
    jit__tc_idesc_decode(0x90400480u, NV, arch("sm_103a"), &f);
    cr_expect_eq(f.k, 96);
    /* Every encodable combination decodes back to its inputs. */
    const int ms[] = {128, 256};
    const int ns[] = {16, 64, 128, 192, 256};
    for (int i = 0; i < 2; i++)
        for (int j = 0; j < 5; j++) {
            int g = ms[i] == 256 ? 2 : 1;
            uint32_t v = encode_ok("sm_107a", params(F8, E5M2, E2M1, UE8, 32, ms[i], ns[j], 64, g));
            jit__tc_idesc_decode(v, F8, a, &f);
            cr_expect_eq(f.m, ms[i]);
            cr_expect_eq(f.n, ns[j]);
            cr_expect_eq(f.k, 64);
            cr_expect_eq(f.a_format, 1u);
            cr_expect_eq(f.b_format, 5u);
        }
}

Test(tc_idesc, sf_ids_use_masked_unsigned_shifts) {
    uint32_t base = 0x10400488u;
    /* Bit 31 set in a TMEM address must land in the ID field and nowhere else. */
    uint32_t v = jit__tc_idesc_with_sf_ids(base, 0x80000010u, 0x00000000u);
    cr_expect_eq(v, base | (2u << 29));
    v = jit__tc_idesc_with_sf_ids(base, 0xC0000010u, 0xC0000020u);
    cr_expect_eq(v, base | (3u << 29) | (3u << 4));
    v = jit__tc_idesc_with_sf_ids(base, 0x40000000u, 0x80000000u);
    cr_expect_eq(v, base | (1u << 29) | (2u << 4));
    /* For contrast, what an unmasked arithmetic shift of the SFB address does (gcc and clang
     * shift signed values arithmetically): every bit from 5 up, M/N/formats included, floods. */
    int32_t signed_addr = (int32_t)0x80000010u;
    uint32_t flooded = base | ((uint32_t)(signed_addr >> 30) << 4);
    cr_expect_eq(flooded & 0xFFFFFFE0u, 0xFFFFFFE0u);
    v = jit__tc_idesc_with_sf_ids(base, 0, 0x80000010u);
    cr_expect_eq(v, base | (2u << 4));
    cr_expect_neq(v, flooded);
    /* Old IDs are replaced, not ORed. */
    v = jit__tc_idesc_with_sf_ids(base | (3u << 29) | (3u << 4), 0x40000000u, 0);
    cr_expect_eq(v, base | (1u << 29));
    /* Low address bits (lane, column) never leak into the descriptor. */
    cr_expect_eq(jit__tc_idesc_with_sf_ids(base, 0x3FFFFFFFu, 0x3FFFFFFFu), base);
}

Test(tc_idesc, runtime_n_rejects_empty_tiles) {
    jit__diag_t d;
    jit__diag_init(&d);
    uint32_t out = 0xABCDu;
    cr_expect_eq(jit__tc_idesc_with_n(0x10400488u, 0, 2, &out, &d), JIT_INVALID_SHAPE);
    cr_expect_eq(out, 0xABCDu);
    cr_expect(strstr(d.msg, "N=0") != NULL, "%s", d.msg);
    jit__diag_init(&d);
    cr_expect_eq(jit__tc_idesc_with_n(0x10400488u, 24, 2, &out, &d), JIT_INVALID_SHAPE);
    jit__diag_init(&d);
    cr_expect_eq(jit__tc_idesc_with_n(0x10400488u, 272, 1, &out, &d), JIT_INVALID_SHAPE);
    /* 23 tokens rounded to 32: N field 4, everything else untouched. */
    cr_expect_eq(jit__tc_idesc_with_n(0x10400488u, 32, 2, &out, NULL), JIT_OK);
    cr_expect_eq(out, 0x10080488u);
    cr_expect_eq(jit__tc_idesc_with_n(0x08400480u, 8, 1, &out, NULL), JIT_OK);
    cr_expect_eq(out, 0x08020480u);
}

Test(tc_smem_desc, worked_examples) {
    /* SW128 K-major tile at 0x1000, SBO 1024, LBO 16 (unused). */
    uint64_t v = jit__tc_smem_desc(14, 0x1000, 16, 1024, JIT_TC_SWIZZLE_128B, 0);
    cr_expect_eq(v, 0x4000404000010100ull);
    cr_expect_eq(jit__tc_smem_desc_advance(14, v, 64), 0x4000404000010104ull);
    /* sm_107a 2x K: instruction 1 of a tile starts 64 B further; four 32 B steps on sm_100a. */
    cr_expect_eq(jit__tc_smem_desc_advance(14, v, 32), 0x4000404000010102ull);
    /* UTCCP source for one 512-byte SF chunk at 0x2000: no swizzle, LBO = SBO = 128. */
    cr_expect_eq(jit__tc_smem_desc(14, 0x2000, 128, 128, JIT_TC_SWIZZLE_NONE, 0),
                 0x0000400800080200ull);
    /* SW64 (sm_107a packed FP4 in mixed, tile K=128): SBO 512, code 4 at 61-63. */
    uint64_t w = jit__tc_smem_desc(14, 0x8200, 16, 512, JIT_TC_SWIZZLE_64B, 0);
    cr_expect_eq(w >> 61, 4u);
    cr_expect_eq((w >> 32) & 0x3FFFu, 32u);
    cr_expect_eq(w & 0x3FFFu, 0x820u);
    jit__tc_smem_desc_fields_t f;
    jit__tc_smem_desc_decode(14, w, &f);
    cr_expect_eq(f.start_addr, 0x8200u);
    cr_expect_eq(f.sbo, 512u);
    cr_expect_eq(f.lbo, 16u);
    cr_expect_eq(f.version, 1u);
    cr_expect_eq(f.swizzle, 4u);
    cr_expect_eq(f.base_offset, 0u);
    cr_expect_eq(f.lbo_mode, 0u);
    /* Base offset lands at 49-51. */
    cr_expect_eq((jit__tc_smem_desc(14, 0x1080, 16, 1024, JIT_TC_SWIZZLE_128B, 1) >> 49) & 7u, 1u);
}

Test(tc_smem_desc, check_rejects_unrepresentable_inputs) {
    cr_expect_eq(jit__tc_smem_desc_check(14, 0x1000, 16, 1024, JIT_TC_SWIZZLE_128B, 0, NULL),
                 JIT_OK);
    cr_expect_eq(jit__tc_smem_desc_check(14, 0x8200, 16, 512, JIT_TC_SWIZZLE_64B, 0, NULL), JIT_OK);
    /* A SW128 tile 512 bytes off its repeat (hardware-facts.md F11: an SF chunk placed before it). */
    cr_expect_neq(jit__tc_smem_desc_check(14, 0x1200, 16, 1024, JIT_TC_SWIZZLE_128B, 0, NULL),
                  JIT_OK);
    /* ... which is legal for SW64. */
    cr_expect_eq(jit__tc_smem_desc_check(14, 0x1200, 16, 512, JIT_TC_SWIZZLE_64B, 0, NULL), JIT_OK);
    /* At or above 256 KiB the 14-bit start field wraps (hardware-facts.md F11). */
    cr_expect_neq(jit__tc_smem_desc_check(14, 0x40000, 16, 1024, JIT_TC_SWIZZLE_128B, 0, NULL),
                  JIT_OK);
    cr_expect_eq(jit__tc_smem_desc(14, 0x41000, 16, 1024, JIT_TC_SWIZZLE_128B, 0),
                 jit__tc_smem_desc(14, 0x01000, 16, 1024, JIT_TC_SWIZZLE_128B, 0));
    /* sm_107a's field has a 15th bit: 0x40000 is representable there, 0x80000 is not. */
    cr_expect_eq(jit__tc_smem_desc_check(15, 0x40000, 16, 1024, JIT_TC_SWIZZLE_128B, 0, NULL),
                 JIT_OK);
    cr_expect_neq(jit__tc_smem_desc_check(15, 0x80000, 16, 1024, JIT_TC_SWIZZLE_128B, 0, NULL),
                  JIT_OK);
    cr_expect_neq(jit__tc_smem_desc_check(14, 0x1008, 16, 1024, JIT_TC_SWIZZLE_128B, 0, NULL),
                  JIT_OK);
    cr_expect_neq(jit__tc_smem_desc_check(14, 0x1000, 16, 1024, (jit__tc_swizzle_t)3, 0, NULL),
                  JIT_OK);
    cr_expect_neq(jit__tc_smem_desc_check(14, 0x1000, 16, 1024, JIT_TC_SWIZZLE_128B, 8, NULL),
                  JIT_OK);
}

/* The field holds the absolute address, counted from the start of the shared window. The
 * sm_107a mixed FP8 x FP4 plan's last SFB stage at offset 251904 + 9 * 1024 sits at absolute 0x3FC00 + 0x400 = 0x40000: 0 in
 * a 14-bit field, 0x4000 in sm_107a's 15-bit field (mask 0x7FFF on addr >> 4). */
Test(tc_smem_desc, start_field_width_per_arch) {
    cr_expect_eq(jit__tc_smem_desc_addr_bits(jit__arch_find("sm_100a")), 14);
    cr_expect_eq(jit__tc_smem_desc_addr_bits(jit__arch_find("sm_103a")), 14);
    cr_expect_eq(jit__tc_smem_desc_addr_bits(jit__arch_find("sm_107a")), 15);
    cr_expect_eq(jit__tc_smem_desc_addr_limit(jit__arch_find("sm_100a")), 256u * 1024u);
    cr_expect_eq(jit__tc_smem_desc_addr_limit(jit__arch_find("sm_107a")), 512u * 1024u);
    /* Every Rubin address (reserved KiB + 327 KiB) fits the 15-bit field. */
    const jit__arch_profile_t *r = jit__arch_find("sm_107a");
    cr_expect_leq(r->smem_reserved_per_cta + r->smem_per_cta, jit__tc_smem_desc_addr_limit(r));
    uint32_t abs = 1024u + 251904u + 9u * 1024u;
    cr_expect_eq(abs, 0x40000u);
    cr_expect_eq(jit__tc_smem_desc(14, abs, 128, 128, JIT_TC_SWIZZLE_NONE, 0) & 0x7FFFu, 0u);
    cr_expect_eq(jit__tc_smem_desc(15, abs, 128, 128, JIT_TC_SWIZZLE_NONE, 0) & 0x7FFFu, 0x4000u);
    /* The 15th bit is bit 14 of the descriptor and does not touch LBO (bits 16-29). */
    jit__tc_smem_desc_fields_t f;
    jit__tc_smem_desc_decode(15, jit__tc_smem_desc(15, 0x4FC00, 16, 1024, JIT_TC_SWIZZLE_128B, 0),
                             &f);
    cr_expect_eq(f.start_addr, 0x4FC00u);
    cr_expect_eq(f.lbo, 16u);
    cr_expect_eq(f.sbo, 1024u);
}

Test(tc_smem_desc, swizzle_repeats) {
    cr_expect_eq(jit__tc_swizzle_repeat_bytes(JIT_TC_SWIZZLE_128B), 1024u);
    cr_expect_eq(jit__tc_swizzle_repeat_bytes(JIT_TC_SWIZZLE_64B), 512u);
    cr_expect_eq(jit__tc_swizzle_repeat_bytes(JIT_TC_SWIZZLE_32B), 256u);
    cr_expect_eq(jit__tc_swizzle_repeat_bytes(JIT_TC_SWIZZLE_NONE), 16u);
    cr_expect_eq(jit__tc_swizzle_repeat_bytes((jit__tc_swizzle_t)5), 0u);
}
