/*
 * The block-scaled host reference (jit__ref_blockscaled) against numbers that do not come from
 * it: the worked MXFP8 and NVFP4 blocks of docs/hardware-facts.md F19 with hand-decoded
 * values, one-hot probes that read back which scale byte was used for every (row, k-block)
 * (the tiled layout written here from the formula of hardware-facts.md F6, not the
 * library's), mixed E2M1 x E4M3 random data against a naive loop over row-major scales with
 * its own decoders, the special scale bytes, and the three epilogues on numbers worked out in
 * the comments. Bytes at or past K and pad scales hold junk (NaN codes, 6.0 nibbles, NaN
 * scales) so reading them shows.
 */
#include <criterion/criterion.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "formats.h"
#include "jitgemm.h"
#include "plan.h"
#include "reference.h"
#include "support.h"

/* ---- independent decoders (fields of hardware-facts.md F1, F2, no library codec) ---------- */

static double naive_e2m1(uint8_t nib) {
    static const double mag[8] = {0.0, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0};
    return (nib & 8) ? -mag[nib & 7] : mag[nib & 7];
}

static double naive_e4m3(uint8_t c) {
    int e = (c >> 3) & 0xF, m = c & 7;
    double v = e == 0 ? m / 512.0 : ldexp(1.0 + m / 8.0, e - 7);
    return (c & 0x80) ? -v : v;
}

/* Scale decoders; NaN codes answer NaN. */
static double naive_scale(jit_scale_mode_t mode, uint8_t c) {
    int e, m;
    switch (mode) {
    case JIT_SCALE_UE8M0_32:
        return c == 0xFF ? NAN : ldexp(1.0, c - 127);
    case JIT_SCALE_UE4M3_16:
        if (c >= 0x7F)
            return NAN;
        e = c >> 3;
        m = c & 7;
        return e == 0 ? m / 512.0 : ldexp(1.0 + m / 8.0, e - 7);
    default: /* UE5M3 */
        if (c == 0xFF)
            return NAN;
        e = c >> 3;
        m = c & 7;
        return e == 0 ? ldexp(m, -17) : ldexp(1.0 + m / 8.0, e - 15);
    }
}

static int64_t block_of(jit_scale_mode_t mode) {
    return mode == JIT_SCALE_UE4M3_16 || mode == JIT_SCALE_UE5M3_16 ? 16 : 32;
}

/* The code whose value is 1.0 in each scale format. */
static uint8_t scale_one(jit_scale_mode_t mode) {
    return mode == JIT_SCALE_UE8M0_32 ? 0x7F : mode == JIT_SCALE_UE4M3_16 ? 0x38 : 0x78;
}

/* hardware-facts.md F6: ((r/128)*ceil(nkb/4) + c/4)*512 + (r%32)*16 + ((r%128)/32)*4 + c%4 */
static size_t doc_offset(int64_t r, int64_t c, int64_t nkb) {
    int64_t col_tiles = (nkb + 3) / 4;
    return (size_t)(((r / 128) * col_tiles + c / 4) * 512 + (r % 32) * 16 + ((r % 128) / 32) * 4 +
                    c % 4);
}

/* Row-major scales -> a tiled buffer whose pads are 0xFF (NaN in every scale format). */
static uint8_t *tile_scales(const uint8_t *rm, int64_t rows, int64_t nkb) {
    size_t bytes = (size_t)((rows + 127) / 128 * 128) * (size_t)((nkb + 3) / 4 * 4);
    uint8_t *t = malloc(bytes);
    memset(t, 0xFF, bytes);
    for (int64_t r = 0; r < rows; r++)
        for (int64_t c = 0; c < nkb; c++)
            t[doc_offset(r, c, nkb)] = rm[r * nkb + c];
    return t;
}

static jit__gemm_spec_t spec_of(jit_dtype_t a, jit_dtype_t b, jit_scale_mode_t sc, int64_t n,
                                int64_t k, jit_epilogue_t ep) {
    jit__gemm_spec_t s = {
        .n = n, .k = k, .a = a, .b = b, .out = JIT_DTYPE_BF16, .scales = sc, .epilogue = ep};
    return s;
}

/* Operand buffers: `rows` rows of `ld` bytes. FP8 junk is the E4M3/E5M2 NaN code 0x7F; FP4
 * junk is the nibble 0x7 (6.0), since E2M1 has no NaN. */
static uint8_t *operand(jit_dtype_t t, int64_t rows, int64_t ld) {
    uint8_t *p = malloc((size_t)(rows * ld));
    memset(p, t == JIT_DTYPE_E2M1 ? 0x77 : 0x7F, (size_t)(rows * ld));
    return p;
}

/* Zero the first k elements of every row (the rest stays junk). */
static void zero_k(jit_dtype_t t, uint8_t *p, int64_t rows, int64_t ld, int64_t k) {
    for (int64_t r = 0; r < rows; r++) {
        if (t != JIT_DTYPE_E2M1) {
            memset(p + r * ld, 0x00, (size_t)k);
            continue;
        }
        memset(p + r * ld, 0x00, (size_t)(k / 2));
        if (k & 1) /* the low nibble is element k-1; the high one stays junk */
            p[r * ld + k / 2] = 0x70;
    }
}

static void put(jit_dtype_t t, uint8_t *p, int64_t ld, int64_t r, int64_t k, uint8_t code) {
    if (t != JIT_DTYPE_E2M1) {
        p[r * ld + k] = code;
        return;
    }
    uint8_t *byte = p + r * ld + k / 2;
    *byte = (k & 1) ? (uint8_t)((*byte & 0x0F) | (code << 4)) : (uint8_t)((*byte & 0xF0) | code);
}

static uint8_t get(jit_dtype_t t, const uint8_t *p, int64_t ld, int64_t r, int64_t k) {
    if (t != JIT_DTYPE_E2M1)
        return p[r * ld + k];
    uint8_t byte = p[r * ld + k / 2];
    return (k & 1) ? byte >> 4 : byte & 0x0F;
}

static double naive_elem(jit_dtype_t t, uint8_t code) {
    return t == JIT_DTYPE_E2M1 ? naive_e2m1(code) : naive_e4m3(code);
}

/* ---- hardware-facts.md F19: the MXFP8 block under round-up scaling ------------------------- */

static const uint8_t k_mxfp8_codes[32] = {
    0x77, 0xED, 0x60, 0x45, 0xB2, 0x6B, 0x00, 0x80, 0x73, 0xF6, 0x40, 0x52, 0x61, 0xE2, 0x69, 0x70,
    0x2A, 0xA2, 0x71, 0xF2, 0x5D, 0x59, 0xD6, 0x74, 0x47, 0xDE, 0x66, 0x6C, 0xF6, 0x02, 0x6D, 0xEA};

/* Each code decoded by hand from its fields and multiplied by the scale 0x7A = 2^-5, e.g.
 * 0x77 = 0 1110 111 = 1.875 * 2^7 = 240 -> 7.5; 0xED = 1 1101 101 = -1.625 * 2^6 = -104 -> -3.25;
 * 0x02 = subnormal 2 * 2^-9 -> 2^-13. */
static const double k_mxfp8_dequant[32] = {
    7.5,         -3.25,         1.0,    0.1015625, -0.01953125, 2.75,    0.0,     -0.0,
    5.5,         -7.0,          0.0625, 0.3125,    1.125,       -1.25,   2.25,    4.0,
    0.009765625, -0.0048828125, 4.5,    -5.0,      0.8125,      0.5625,  -0.4375, 6.0,
    0.1171875,   -0.875,        1.75,   3.0,       -7.0,        0x1p-13, 3.25,    -2.5};

/*
 * A is the one block (scale 0x7A). B row i (i < 32) is one-hot with 1.0 at k = i, so
 * D[0][i] is element i dequantized; row 32 is all ones, so D[0][32] is the block's sum,
 * 141449 * 2^-13 = 17.2667236328125 by hand from the table above, and its mag the sum of
 * magnitudes, 589337 * 2^-13. Row 33 is all 2.0 with scale 0x7E (0.5): the same sum again.
 */
Test(blockscaled_ref, mxfp8_worked_block) {
    const int64_t k = 32, n = 34, ld = 48;
    uint8_t *a = operand(JIT_DTYPE_E4M3, 1, ld), *b = operand(JIT_DTYPE_E4M3, n, ld);
    memcpy(a, k_mxfp8_codes, 32);
    zero_k(JIT_DTYPE_E4M3, b, n, ld, k);
    for (int i = 0; i < 32; i++) {
        b[i * ld + i] = 0x38;
        b[32 * ld + i] = 0x38;
        b[33 * ld + i] = 0x40;
    }
    uint8_t sa_rm[1] = {0x7A}, sb_rm[34];
    memset(sb_rm, 0x7F, sizeof(sb_rm));
    sb_rm[33] = 0x7E;
    uint8_t *sfa = tile_scales(sa_rm, 1, 1), *sfb = tile_scales(sb_rm, n, 1);
    jit__gemm_spec_t s =
        spec_of(JIT_DTYPE_E4M3, JIT_DTYPE_E4M3, JIT_SCALE_UE8M0_32, n, k, JIT_EPILOGUE_LINEAR);
    double out[34], mag[34];
    jit__ref_blockscaled(&s, 1, a, ld, b, ld, sfa, sfb, NULL, 0, 1.0f, out, mag);
    for (int i = 0; i < 32; i++) {
        cr_expect_eq(out[i], k_mxfp8_dequant[i], "element %d (code 0x%02X): %.17g, expected %.17g",
                     i, k_mxfp8_codes[i], out[i], k_mxfp8_dequant[i]);
        cr_expect_eq(mag[i], fabs(k_mxfp8_dequant[i]));
        /* the same value from the library's decoder (hardware-facts.md F1) */
        cr_expect_eq(out[i], jit__e4m3_decode(k_mxfp8_codes[i]) * 0x1p-5);
    }
    cr_expect_eq(out[32], 17.2667236328125, "block sum %.17g", out[32]);
    cr_expect_eq(out[32], 141449.0 * 0x1p-13);
    cr_expect_eq(mag[32], 589337.0 * 0x1p-13, "block |sum| %.17g", mag[32]);
    cr_expect_eq(out[33], 17.2667236328125, "block sum with scales 2^-5 * 2^-1 and data 2: %.17g",
                 out[33]);
    /* Element 0 is 7.5 exactly under round-up scaling (no clipping, unlike the floor scale). */
    cr_expect_eq(out[0], 7.5);
    free(a);
    free(b);
    free(sfa);
    free(sfb);
}

/* ---- hardware-facts.md F19: the NVFP4 block ------------------------------------------------ */

static const uint8_t k_nvfp4_bytes[8] = {0xB4, 0x72, 0x68, 0xD0, 0x63, 0x29, 0x4F, 0xE0};
/* codes 4 B 2 7 8 6 0 D 3 6 9 2 F 4 0 E (low nibble first) */
static const double k_nvfp4_values[16] = {2.0, -1.5, 1.0,  6.0, -0.0, 4.0, 0.0, -3.0,
                                          1.5, 4.0,  -0.5, 1.0, -6.0, 2.0, 0.0, -4.0};

/*
 * A is the block with UE4M3 scale 0x77 = 240 and alpha = S_dec = 1 / (2688 / 10) in FP32.
 * B rows 0-15 are one-hot (1.0 at k = i, scale 0x38 = 1), row 16 is all ones: by hand the
 * block sums to 6.5, so D = 1560 * alpha. The dequantized values of F19: 6 -> 5.3571432,
 * 4 -> 3.5714288, 1.5 -> 1.3392858. Then A against itself (B = A, both scales 0x77,
 * alpha = S_dec^2 in FP32): the sum of squares is 143.75 by hand, times 240^2 = 8280000.
 */
Test(blockscaled_ref, nvfp4_worked_block) {
    const int64_t k = 16, n = 17, ld = 16;
    const float s_enc = 2688.0f / 10.0f, s_dec = 1.0f / s_enc;
    cr_assert(fabs((double)s_dec - 0.0037202383) < 1e-10, "S_dec %.10g", (double)s_dec);
    uint8_t *a = operand(JIT_DTYPE_E2M1, 1, ld), *b = operand(JIT_DTYPE_E2M1, n, ld);
    memcpy(a, k_nvfp4_bytes, 8);
    zero_k(JIT_DTYPE_E2M1, b, n, ld, k);
    for (int i = 0; i < 16; i++) {
        put(JIT_DTYPE_E2M1, b, ld, i, i, 0x2);
        put(JIT_DTYPE_E2M1, b, ld, 16, i, 0x2);
    }
    uint8_t sa_rm[1] = {0x77}, sb_rm[17];
    memset(sb_rm, 0x38, sizeof(sb_rm));
    uint8_t *sfa = tile_scales(sa_rm, 1, 1), *sfb = tile_scales(sb_rm, n, 1);
    jit__gemm_spec_t s =
        spec_of(JIT_DTYPE_E2M1, JIT_DTYPE_E2M1, JIT_SCALE_UE4M3_16, n, k, JIT_EPILOGUE_LINEAR);
    double out[17], mag[17];
    jit__ref_blockscaled(&s, 1, a, ld, b, ld, sfa, sfb, NULL, 0, s_dec, out, mag);
    for (int i = 0; i < 16; i++)
        cr_expect_eq(out[i], k_nvfp4_values[i] * 240.0 * (double)s_dec,
                     "element %d: %.17g, expected %g * 240 * S_dec", i, out[i], k_nvfp4_values[i]);
    cr_expect(fabs(out[3] - 5.3571432) < 5e-8, "6 dequantizes to %.9g", out[3]);
    cr_expect(fabs(out[5] - 3.5714288) < 5e-8, "4 dequantizes to %.9g", out[5]);
    cr_expect(fabs(out[8] - 1.3392858) < 5e-8, "1.5 dequantizes to %.9g", out[8]);
    cr_expect(fabs(out[12] + 5.3571432) < 5e-8, "-6 dequantizes to %.9g", out[12]);
    cr_expect_eq(out[16], 1560.0 * (double)s_dec, "block sum %.17g", out[16]);
    cr_expect_eq(mag[16], 36.5 * 240.0 * (double)s_dec, "sum of |values| is 36.5: %.17g", mag[16]);

    /* A . A: B is the same packed row; 143.75 * 240 * 240 = 8280000 */
    uint8_t sb2[1] = {0x77};
    uint8_t *sfb2 = tile_scales(sb2, 1, 1);
    jit__gemm_spec_t s2 =
        spec_of(JIT_DTYPE_E2M1, JIT_DTYPE_E2M1, JIT_SCALE_UE4M3_16, 1, k, JIT_EPILOGUE_LINEAR);
    const float alpha2 = s_dec * s_dec;
    double dot, dot_mag;
    jit__ref_blockscaled(&s2, 1, a, ld, a, ld, sfa, sfb2, NULL, 0, alpha2, &dot, &dot_mag);
    cr_expect_eq(dot, 8280000.0 * (double)alpha2, "A.A = %.17g", dot);
    cr_expect_eq(dot_mag, dot, "all terms of A.A are >= 0");
    cr_expect(fabs(dot - 114.596631) < 1e-5, "A.A = %.9g", dot);
    free(a);
    free(b);
    free(sfa);
    free(sfb);
    free(sfb2);
}

/* ---- one-hot layout probes (hardware-facts.md F20) ---------------------------------------- */

/* Codes of `mode` whose value is a power of two, smallest first (at most 255). */
static int power_ladder(jit_scale_mode_t mode, uint8_t *ladder) {
    int n = 0;
    for (int c = 0; c < 256; c++) {
        double v = naive_scale(mode, (uint8_t)c);
        int e;
        if (isfinite(v) && v > 0 && frexp(v, &e) == 0.5)
            ladder[n++] = (uint8_t)c;
    }
    return n;
}

/* Patterned nonzero codes in which neighbours along K always differ (a nibble or element swap
 * changes the value). */
static uint8_t pattern_code(jit_dtype_t t, int64_t r, int64_t k) {
    int neg = (r + 2 * k) % 3 == 0;
    if (t == JIT_DTYPE_E2M1)
        return (uint8_t)((1 + (r + k) % 7) | (neg ? 8 : 0));
    return (uint8_t)((0x30 + (r + k) % 13) | (neg ? 0x80 : 0)); /* E4M3 0.5 ... 1.5 */
}

/*
 * The probed operand P (A when probe_a, else B) has `rows` rows of patterned data; the other,
 * I, has K rows with a one-hot 1.0 at k = its row and all scales 1.0. Then
 * D[r][k] (or D[k][r] when B is probed) = P[r, k] * SP[r, k / block]: one term, exact. Every
 * (row, k-block) of P gets a power-of-two scale that no other entry has in that pass: the
 * ladder holds too few codes for all of them at once, so passes take a window of entries each
 * and give everything outside it the ladder's first code. Every D entry is checked in every
 * pass, so a read of any other byte, a pad (NaN), a swapped nibble or an element at K shows.
 */
static void probe(jit_scale_mode_t mode, jit_dtype_t tp, jit_dtype_t ti, int probe_a) {
    const int64_t kb = block_of(mode), k = 4 * kb + 7, nkb = 5, rows = 130;
    const int64_t ldp = (tp == JIT_DTYPE_E2M1 ? (k + 1) / 2 : k) + 9;
    const int64_t ldi = (ti == JIT_DTYPE_E2M1 ? (k + 1) / 2 : k) + 5;
    uint8_t *p = operand(tp, rows, ldp), *id = operand(ti, k, ldi);
    zero_k(ti, id, k, ldi, k);
    for (int64_t r = 0; r < rows; r++)
        for (int64_t q = 0; q < k; q++)
            put(tp, p, ldp, r, q, pattern_code(tp, r, q));
    for (int64_t q = 0; q < k; q++)
        put(ti, id, ldi, q, q, ti == JIT_DTYPE_E2M1 ? 0x2 : 0x38);

    uint8_t ladder[256];
    int nl = power_ladder(mode, ladder);
    cr_assert(nl >= 18, "only %d power-of-two codes", nl);
    const int64_t window = nl - 1, entries = rows * nkb;
    uint8_t *sp_rm = malloc((size_t)entries), *si_rm = malloc((size_t)(k * nkb));
    memset(si_rm, scale_one(mode), (size_t)(k * nkb));
    uint8_t *sfi = tile_scales(si_rm, k, nkb);

    jit__gemm_spec_t s = probe_a ? spec_of(tp, ti, mode, k, k, JIT_EPILOGUE_LINEAR)
                                 : spec_of(ti, tp, mode, rows, k, JIT_EPILOGUE_LINEAR);
    double *out = malloc(sizeof(double) * (size_t)(rows * k));
    int64_t failures = 0;
    for (int64_t lo = 0; lo < entries && failures < 8; lo += window) {
        for (int64_t e = 0; e < entries; e++)
            sp_rm[e] = e >= lo && e < lo + window ? ladder[1 + e - lo] : ladder[0];
        uint8_t *sfp = tile_scales(sp_rm, rows, nkb);
        if (probe_a)
            jit__ref_blockscaled(&s, rows, p, ldp, id, ldi, sfp, sfi, NULL, 0, 1.0f, out, NULL);
        else
            jit__ref_blockscaled(&s, k, id, ldi, p, ldp, sfi, sfp, NULL, 0, 1.0f, out, NULL);
        for (int64_t r = 0; r < rows; r++) {
            for (int64_t q = 0; q < k; q++) {
                double x = naive_elem(tp, get(tp, p, ldp, r, q));
                uint8_t want = sp_rm[r * nkb + q / kb];
                double got = probe_a ? out[r * k + q] : out[q * rows + r];
                if (got == x * naive_scale(mode, want))
                    continue;
                int used = -1;
                for (int c = 0; c < 256 && used < 0; c++)
                    if (got == x * naive_scale(mode, (uint8_t)c))
                        used = c;
                cr_expect(0,
                          "%s probe, row %lld, k %lld (k-block %lld): D = %.17g reads scale %d, "
                          "expected byte 0x%02X",
                          probe_a ? "A" : "B", (long long)r, (long long)q, (long long)(q / kb), got,
                          used, want);
                if (++failures >= 8)
                    break;
            }
            if (failures >= 8)
                break;
        }
        free(sfp);
    }
    free(p);
    free(id);
    free(sp_rm);
    free(si_rm);
    free(sfi);
    free(out);
}

Test(blockscaled_ref, probe_mxfp4_scales_of_a) {
    probe(JIT_SCALE_UE8M0_32, JIT_DTYPE_E2M1, JIT_DTYPE_E2M1, 1);
}
Test(blockscaled_ref, probe_mxfp4_scales_of_b) {
    probe(JIT_SCALE_UE8M0_32, JIT_DTYPE_E2M1, JIT_DTYPE_E2M1, 0);
}
Test(blockscaled_ref, probe_mxfp8_scales_of_a) {
    probe(JIT_SCALE_UE8M0_32, JIT_DTYPE_E4M3, JIT_DTYPE_E4M3, 1);
}
Test(blockscaled_ref, probe_mixed_e4m3_a_e2m1_b) {
    probe(JIT_SCALE_UE8M0_32, JIT_DTYPE_E4M3, JIT_DTYPE_E2M1, 1);
    probe(JIT_SCALE_UE8M0_32, JIT_DTYPE_E2M1, JIT_DTYPE_E4M3, 0);
}
Test(blockscaled_ref, probe_nvfp4_ue4m3_16) {
    probe(JIT_SCALE_UE4M3_16, JIT_DTYPE_E2M1, JIT_DTYPE_E2M1, 1);
    probe(JIT_SCALE_UE4M3_16, JIT_DTYPE_E2M1, JIT_DTYPE_E2M1, 0);
}
Test(blockscaled_ref, probe_fp4_ue5m3_16) {
    probe(JIT_SCALE_UE5M3_16, JIT_DTYPE_E2M1, JIT_DTYPE_E2M1, 1);
    probe(JIT_SCALE_UE5M3_16, JIT_DTYPE_E2M1, JIT_DTYPE_E2M1, 0);
}
Test(blockscaled_ref, probe_fp4_ue5m3_32) {
    probe(JIT_SCALE_UE5M3_32, JIT_DTYPE_E2M1, JIT_DTYPE_E2M1, 1);
    probe(JIT_SCALE_UE5M3_32, JIT_DTYPE_E2M1, JIT_DTYPE_E2M1, 0);
}

/* ---- mixed E2M1 x E4M3 on random data against a naive loop -------------------------------- */

static uint8_t random_scale(jit_scale_mode_t mode, uint64_t *rng) {
    uint64_t x = jt_rng_next(rng) >> 20;
    switch (mode) {
    case JIT_SCALE_UE8M0_32:
        return (uint8_t)(0x70 + x % 32); /* 2^-15 ... 2^16 */
    case JIT_SCALE_UE4M3_16:
        return (uint8_t)(x % 0x7F); /* 0 ... 448, zero included */
    default:
        return (uint8_t)(x % 0xFF); /* 0 ... 114688 */
    }
}

static uint8_t random_elem(jit_dtype_t t, uint64_t *rng) {
    for (;;) {
        uint8_t c = (uint8_t)(jt_rng_next(rng) >> 24);
        if (t == JIT_DTYPE_E2M1)
            return c & 0x0F;
        if ((c & 0x7F) != 0x7F)
            return c;
    }
}

/*
 * One term per element, scales read from the row-major arrays, long double sums: a different
 * summation structure and a different layout path than the reference's. The tiled buffers are
 * made by the public jit_scale_to_tiled with NaN pads.
 */
static void check_random(jit_scale_mode_t mode, jit_dtype_t ta, jit_dtype_t tb, jit_epilogue_t ep,
                         uint64_t seed) {
    uint64_t rng = seed;
    const int64_t m = 133, n = 36, k = 5 * 32 + 13, kb = block_of(mode);
    const int64_t nkb = (k + kb - 1) / kb, ldr = n + 3;
    const int64_t lda = (ta == JIT_DTYPE_E2M1 ? (k + 1) / 2 : k) + 11;
    const int64_t ldb = (tb == JIT_DTYPE_E2M1 ? (k + 1) / 2 : k) + 3;
    uint8_t *a = operand(ta, m, lda), *b = operand(tb, n, ldb);
    for (int64_t r = 0; r < m; r++)
        for (int64_t q = 0; q < k; q++)
            put(ta, a, lda, r, q, random_elem(ta, &rng));
    for (int64_t r = 0; r < n; r++)
        for (int64_t q = 0; q < k; q++)
            put(tb, b, ldb, r, q, random_elem(tb, &rng));
    uint8_t *sa = malloc((size_t)(m * nkb)), *sb = malloc((size_t)(n * nkb));
    for (int64_t i = 0; i < m * nkb; i++)
        sa[i] = random_scale(mode, &rng);
    for (int64_t i = 0; i < n * nkb; i++)
        sb[i] = random_scale(mode, &rng);
    uint8_t *sfa = malloc(jit_scale_tile_bytes(m, nkb)),
            *sfb = malloc(jit_scale_tile_bytes(n, nkb));
    jit_scale_to_tiled(sa, m, nkb, 0xFF, sfa);
    jit_scale_to_tiled(sb, n, nkb, 0xFF, sfb);
    uint16_t *res = malloc(sizeof(uint16_t) * (size_t)(m * ldr));
    for (int64_t i = 0; i < m * ldr; i++)
        res[i] = jit__bf16_encode((float)jt_rng_uniform(&rng, -1e3, 1e3));
    const float alpha = (float)jt_rng_uniform(&rng, 0.25, 4.0);

    jit__gemm_spec_t s = spec_of(ta, tb, mode, n, k, ep);
    const int64_t nout = jit__spec_out_cols(&s);
    double *out = malloc(sizeof(double) * (size_t)(m * nout));
    double *mag = malloc(sizeof(double) * (size_t)(m * nout));
    jit__ref_blockscaled(&s, m, a, lda, b, ldb, sfa, sfb, res, ldr, alpha, out, mag);

    int64_t failures = 0;
    for (int64_t r = 0; r < m && failures < 8; r++) {
        for (int64_t j = 0; j < nout && failures < 8; j++) {
            long double acc[2] = {0, 0}, acc_abs[2] = {0, 0};
            int pairs = ep == JIT_EPILOGUE_LINEAR_SWIGLU ? 2 : 1;
            for (int h = 0; h < pairs; h++) {
                int64_t bn = pairs == 2 ? 2 * j + h : j;
                for (int64_t q = 0; q < k; q++) {
                    long double t = (long double)naive_elem(ta, get(ta, a, lda, r, q)) *
                                    naive_elem(tb, get(tb, b, ldb, bn, q)) *
                                    naive_scale(mode, sa[r * nkb + q / kb]) *
                                    naive_scale(mode, sb[bn * nkb + q / kb]);
                    acc[h] += t;
                    acc_abs[h] += fabsl(t);
                }
                acc[h] *= alpha;
                acc_abs[h] *= alpha;
            }
            long double want = acc[0], want_mag = acc_abs[0];
            if (ep == JIT_EPILOGUE_LINEAR_ADD) {
                long double rv = jit__bf16_decode(res[r * ldr + j]);
                want += rv;
                want_mag += fabsl(rv);
            } else if (ep == JIT_EPILOGUE_LINEAR_SWIGLU) {
                /* |u| times the slope bounded over the gate's error (|silu'(g)| + 2^-9 mag_g,
                 * at most 1.1) times mag_g, plus |silu(g)| mag_u */
                long double g = acc[0], u = acc[1], sig = 1.0L / (1.0L + expl(-g));
                long double slope = fabsl(sig * (1.0L + g * (1.0L - sig))) + acc_abs[0] / 512.0L;
                want = g * sig * u;
                want_mag = fabsl(u) * (slope < 1.1L ? slope : 1.1L) * acc_abs[0] +
                           fabsl(g * sig) * acc_abs[1];
            }
            double got = out[r * nout + j];
            /* 2^-1000: silu of a gate near -745 underflows double, not long double */
            double tol = 1e-13 * (double)want_mag + 1e-13 * fabs((double)want) + 0x1p-1000;
            if (!(fabs(got - (double)want) <= tol)) {
                failures++;
                cr_expect(0, "%s %s x %s %s [%lld][%lld]: %.17g, naive %.17Lg",
                          jit_scale_mode_name(mode), ta == JIT_DTYPE_E2M1 ? "e2m1" : "e4m3",
                          tb == JIT_DTYPE_E2M1 ? "e2m1" : "e4m3", jit_epilogue_name(ep),
                          (long long)r, (long long)j, got, want);
            }
            if (!(fabs(mag[r * nout + j] - (double)want_mag) <=
                  1e-12 * (double)want_mag + 0x1p-1000)) {
                failures++;
                cr_expect(0, "mag [%lld][%lld]: %.17g, naive %.17Lg", (long long)r, (long long)j,
                          mag[r * nout + j], want_mag);
            }
        }
    }
    free(a);
    free(b);
    free(sa);
    free(sb);
    free(sfa);
    free(sfb);
    free(res);
    free(out);
    free(mag);
}

static void check_both_orders(jit_scale_mode_t mode) {
    check_random(mode, JIT_DTYPE_E4M3, JIT_DTYPE_E2M1, JIT_EPILOGUE_LINEAR, jt_fresh_seed());
    check_random(mode, JIT_DTYPE_E2M1, JIT_DTYPE_E4M3, JIT_EPILOGUE_LINEAR, jt_fresh_seed());
}

Test(blockscaled_ref, mixed_random_ue8m0_32) {
    check_both_orders(JIT_SCALE_UE8M0_32);
}
Test(blockscaled_ref, mixed_random_ue4m3_16) {
    check_both_orders(JIT_SCALE_UE4M3_16);
}
Test(blockscaled_ref, mixed_random_ue5m3_16) {
    check_both_orders(JIT_SCALE_UE5M3_16);
}
Test(blockscaled_ref, mixed_random_ue5m3_32) {
    check_both_orders(JIT_SCALE_UE5M3_32);
}
Test(blockscaled_ref, mixed_random_epilogues) {
    check_random(JIT_SCALE_UE8M0_32, JIT_DTYPE_E4M3, JIT_DTYPE_E2M1, JIT_EPILOGUE_LINEAR_ADD,
                 jt_fresh_seed());
    check_random(JIT_SCALE_UE8M0_32, JIT_DTYPE_E4M3, JIT_DTYPE_E2M1, JIT_EPILOGUE_LINEAR_SWIGLU,
                 jt_fresh_seed());
}

/* ---- special scale bytes ------------------------------------------------------------------- */

/*
 * MXFP8, K = 64 (two blocks), all data 1.0, scales 1.0 except SA[0][1] = 0xFF and
 * SB[1][0] = 0xFF. A row 0's block 1 data is zero: a NaN scale still poisons it. D[1][0] is
 * 32 + 32 = 64 and the other three are NaN.
 */
Test(blockscaled_ref, ue8m0_nan_scale_poisons_its_outputs) {
    const int64_t k = 64, ld = 80;
    uint8_t *a = operand(JIT_DTYPE_E4M3, 2, ld), *b = operand(JIT_DTYPE_E4M3, 2, ld);
    for (int r = 0; r < 2; r++) {
        memset(a + r * ld, 0x38, (size_t)k);
        memset(b + r * ld, 0x38, (size_t)k);
    }
    memset(a + 32, 0x00, 32);
    uint8_t sa[4] = {0x7F, 0xFF, 0x7F, 0x7F}, sb[4] = {0x7F, 0x7F, 0xFF, 0x7F};
    uint8_t *sfa = tile_scales(sa, 2, 2), *sfb = tile_scales(sb, 2, 2);
    jit__gemm_spec_t s =
        spec_of(JIT_DTYPE_E4M3, JIT_DTYPE_E4M3, JIT_SCALE_UE8M0_32, 2, k, JIT_EPILOGUE_LINEAR);
    double out[4], mag[4];
    jit__ref_blockscaled(&s, 2, a, ld, b, ld, sfa, sfb, NULL, 0, 1.0f, out, mag);
    cr_expect(isnan(out[0]), "D[0][0] = %g (SA[0][1] is 0xFF over zero data)", out[0]);
    cr_expect(isnan(out[1]), "D[0][1] = %g", out[1]);
    cr_expect_eq(out[2], 64.0, "D[1][0] = %g", out[2]);
    cr_expect_eq(mag[2], 64.0);
    cr_expect(isnan(out[3]), "D[1][1] = %g (SB[1][0] is 0xFF)", out[3]);
    free(a);
    free(b);
    free(sfa);
    free(sfb);
}

/* UE8M0 0x00 is 2^-127, not zero: two of them over 32 ones give 32 * 2^-254 = 2^-249. */
Test(blockscaled_ref, ue8m0_smallest_scale_is_not_zero) {
    uint8_t a[32], b[32];
    memset(a, 0x38, 32);
    memset(b, 0x38, 32);
    uint8_t s0[1] = {0x00};
    uint8_t *sfa = tile_scales(s0, 1, 1), *sfb = tile_scales(s0, 1, 1);
    jit__gemm_spec_t s =
        spec_of(JIT_DTYPE_E4M3, JIT_DTYPE_E4M3, JIT_SCALE_UE8M0_32, 1, 32, JIT_EPILOGUE_LINEAR);
    double out;
    jit__ref_blockscaled(&s, 1, a, 32, b, 32, sfa, sfb, NULL, 0, 1.0f, &out, NULL);
    cr_expect_eq(out, 0x1p-249, "%.17g", out);
    free(sfa);
    free(sfb);
}

/*
 * NVFP4, K = 32 (two blocks of 16), all data 1.0 and B scales 1.0 (0x38). A row 0 has
 * scales (0x00, 0x38): 0 * 16 + 1 * 16 = 16. Row 1 has (0x00, 0x00): exactly 0, not NaN.
 * Row 2 has (0x7F, 0x38): 0x7F is UE4M3's NaN.
 */
Test(blockscaled_ref, ue4m3_zero_scale_gives_zero_not_nan) {
    const int64_t k = 32, ld = 16;
    uint8_t a[48], b[16];
    memset(a, 0x22, sizeof(a));
    memset(b, 0x22, sizeof(b));
    uint8_t sa[6] = {0x00, 0x38, 0x00, 0x00, 0x7F, 0x38}, sb[2] = {0x38, 0x38};
    uint8_t *sfa = tile_scales(sa, 3, 2), *sfb = tile_scales(sb, 1, 2);
    jit__gemm_spec_t s =
        spec_of(JIT_DTYPE_E2M1, JIT_DTYPE_E2M1, JIT_SCALE_UE4M3_16, 1, k, JIT_EPILOGUE_LINEAR);
    double out[3], mag[3];
    jit__ref_blockscaled(&s, 3, a, ld, b, ld, sfa, sfb, NULL, 0, 1.0f, out, mag);
    cr_expect_eq(out[0], 16.0, "%g", out[0]);
    cr_expect_eq(out[1], 0.0, "%g", out[1]);
    cr_expect(!isnan(out[1]) && !isnan(mag[1]), "zero scale gave NaN");
    cr_expect_eq(mag[1], 0.0);
    cr_expect(isnan(out[2]), "UE4M3 0x7F gave %g", out[2]);
    free(sfa);
    free(sfb);
}

/* UE5M3: 0x00 is zero, 0xFF is NaN (block 16, same data as above). */
Test(blockscaled_ref, ue5m3_zero_and_nan_scales) {
    const int64_t k = 32, ld = 16;
    uint8_t a[32], b[16];
    memset(a, 0x22, sizeof(a));
    memset(b, 0x22, sizeof(b));
    uint8_t sa[4] = {0x00, 0x78, 0xFF, 0x78}, sb[2] = {0x78, 0x80}; /* 0x80 = 2.0 */
    uint8_t *sfa = tile_scales(sa, 2, 2), *sfb = tile_scales(sb, 1, 2);
    jit__gemm_spec_t s =
        spec_of(JIT_DTYPE_E2M1, JIT_DTYPE_E2M1, JIT_SCALE_UE5M3_16, 1, k, JIT_EPILOGUE_LINEAR);
    double out[2];
    jit__ref_blockscaled(&s, 2, a, ld, b, ld, sfa, sfb, NULL, 0, 1.0f, out, NULL);
    cr_expect_eq(out[0], 32.0, "0 * 16 + 1 * 2 * 16 = 32, got %g", out[0]);
    cr_expect(isnan(out[1]), "UE5M3 0xFF gave %g", out[1]);
    free(sfa);
    free(sfb);
}

/* A spec outside the family (row scales; BF16 operands) answers NaN, never numbers. */
Test(blockscaled_ref, unsupported_spec_gives_nan) {
    uint8_t a[32], b[32], sf[512];
    memset(a, 0x38, 32);
    memset(b, 0x38, 32);
    memset(sf, 0x7F, sizeof(sf));
    double out = 0, mag = 0;
    jit__gemm_spec_t s =
        spec_of(JIT_DTYPE_E4M3, JIT_DTYPE_E4M3, JIT_SCALE_ROW, 1, 32, JIT_EPILOGUE_LINEAR);
    jit__ref_blockscaled(&s, 1, a, 32, b, 32, sf, sf, NULL, 0, 1.0f, &out, &mag);
    cr_expect(isnan(out) && isnan(mag), "row scales gave %g", out);
    s = spec_of(JIT_DTYPE_BF16, JIT_DTYPE_E4M3, JIT_SCALE_UE8M0_32, 1, 32, JIT_EPILOGUE_LINEAR);
    out = 0;
    jit__ref_blockscaled(&s, 1, a, 32, b, 32, sf, sf, NULL, 0, 1.0f, &out, NULL);
    cr_expect(isnan(out), "BF16 A gave %g", out);
}

/* ---- the three epilogues by hand ------------------------------------------------------------ */

/*
 * MXFP4, K = 40: block 0 is k 0-31, block 1 the partial k 32-39; rows are 32 bytes, so k 40-63
 * are junk 6.0 nibbles. Nonzero elements (all others 0):
 *   A0: k0 = 1, k1 = 2, k33 = 3             SA0 = (2^0, 2^1)
 *   A1: k0 = -1, k2 = 0.5, k34 = 4          SA1 = (2^-1, 2^2)
 *   B0: k0 = k1 = k2 = k33 = k34 = 1        SB0 = (1, 1)
 *   B1: k0 = 2, k33 = -1, k34 = 0.5         SB1 = (2^1, 2^-1)
 *   B2: k1 = 1.5                            SB2 = (2^-2, 2^3)
 *   B3: k1 = -0.5, k2 = -2, k34 = 6         SB3 = (1, 2^-3)
 * Block partials (block 0; block 1) and acc = sum SA SB partial:
 *   A0.B0 = 3; 3 -> 3 + 6 = 9      A0.B1 = 2; -3 -> 4 - 3 = 1     A0.B2 = 3; 0 -> 0.75
 *   A0.B3 = -1; 0 -> -1            A1.B0 = -0.5; 4 -> -0.25 + 16 = 15.75
 *   A1.B1 = -2; 2 -> -2 + 4 = 2    A1.B2 = 0; 0 -> 0              A1.B3 = -1; 24 -> -0.5 + 12
 * With alpha = 0.5: linear D = [[4.5, 0.5, 0.375, -0.5], [7.875, 1, 0, 5.75]].
 * mag = 0.5 * sum |SA SB| sum |a b|: [[4.5, 3.5, 0.375, 0.5], [8.375, 3, 0, 6.25]].
 */
static const uint8_t k_ep_sa[4] = {0x7F, 0x80, 0x7E, 0x81};
static const uint8_t k_ep_sb[8] = {0x7F, 0x7F, 0x80, 0x7E, 0x7D, 0x82, 0x7F, 0x7C};

static void epilogue_case(jit_epilogue_t ep, const uint16_t *res, int64_t ldr, double *out,
                          double *mag) {
    const int64_t k = 40, ld = 32;
    uint8_t *a = operand(JIT_DTYPE_E2M1, 2, ld), *b = operand(JIT_DTYPE_E2M1, 4, ld);
    zero_k(JIT_DTYPE_E2M1, a, 2, ld, k);
    zero_k(JIT_DTYPE_E2M1, b, 4, ld, k);
    const jit_dtype_t f = JIT_DTYPE_E2M1;
    put(f, a, ld, 0, 0, 0x2);
    put(f, a, ld, 0, 1, 0x4);
    put(f, a, ld, 0, 33, 0x5);
    put(f, a, ld, 1, 0, 0xA);
    put(f, a, ld, 1, 2, 0x1);
    put(f, a, ld, 1, 34, 0x6);
    for (int q = 0; q < 3; q++)
        put(f, b, ld, 0, q, 0x2);
    put(f, b, ld, 0, 33, 0x2);
    put(f, b, ld, 0, 34, 0x2);
    put(f, b, ld, 1, 0, 0x4);
    put(f, b, ld, 1, 33, 0xA);
    put(f, b, ld, 1, 34, 0x1);
    put(f, b, ld, 2, 1, 0x3);
    put(f, b, ld, 3, 1, 0x9);
    put(f, b, ld, 3, 2, 0xC);
    put(f, b, ld, 3, 34, 0x7);
    uint8_t *sfa = tile_scales(k_ep_sa, 2, 2), *sfb = tile_scales(k_ep_sb, 4, 2);
    jit__gemm_spec_t s = spec_of(f, f, JIT_SCALE_UE8M0_32, 4, k, ep);
    jit__ref_blockscaled(&s, 2, a, ld, b, ld, sfa, sfb, res, ldr, 0.5f, out, mag);
    free(a);
    free(b);
    free(sfa);
    free(sfb);
}

Test(blockscaled_ref, linear_by_hand) {
    double out[8], mag[8];
    epilogue_case(JIT_EPILOGUE_LINEAR, NULL, 0, out, mag);
    const double want[8] = {4.5, 0.5, 0.375, -0.5, 7.875, 1.0, 0.0, 5.75};
    const double want_mag[8] = {4.5, 3.5, 0.375, 0.5, 8.375, 3.0, 0.0, 6.25};
    for (int i = 0; i < 8; i++) {
        cr_expect_eq(out[i], want[i], "out[%d] = %.17g, expected %.17g", i, out[i], want[i]);
        cr_expect_eq(mag[i], want_mag[i], "mag[%d] = %.17g, expected %.17g", i, mag[i],
                     want_mag[i]);
    }
}

/* residual [[1, -2, 0.5, 8], [-4, 0.25, 3, -1]] as BF16 with row stride 5 (pad NaN):
 * out = [[5.5, -1.5, 0.875, 7.5], [3.875, 1.25, 3, 4.75]], mag adds |residual|:
 * [[5.5, 5.5, 0.875, 8.5], [12.375, 3.25, 3, 7.25]]. */
Test(blockscaled_ref, linear_add_by_hand) {
    const uint16_t res[10] = {0x3F80, 0xC000, 0x3F00, 0x4100, 0x7FC0,
                              0xC080, 0x3E80, 0x4040, 0xBF80, 0x7FC0};
    double out[8], mag[8];
    epilogue_case(JIT_EPILOGUE_LINEAR_ADD, res, 5, out, mag);
    const double want[8] = {5.5, -1.5, 0.875, 7.5, 3.875, 1.25, 3.0, 4.75};
    const double want_mag[8] = {5.5, 5.5, 0.875, 8.5, 12.375, 3.25, 3.0, 7.25};
    for (int i = 0; i < 8; i++) {
        cr_expect_eq(out[i], want[i], "out[%d] = %.17g, expected %.17g", i, out[i], want[i]);
        cr_expect_eq(mag[i], want_mag[i], "mag[%d] = %.17g, expected %.17g", i, mag[i],
                     want_mag[i]);
    }
}

static double silu_d(double x) {
    return x / (1.0 + exp(-x));
}

static double silu_slope_d(double x) {
    double s = 1.0 / (1.0 + exp(-x));
    return s * (1.0 + x * (1.0 - s));
}

/* SwiGLU pairs B rows (0, 1) and (2, 3): with the linear values above,
 *   row 0: silu(4.5) * 0.5,   silu(0.375) * -0.5
 *   row 1: silu(7.875) * 1,   silu(0) * 5.75 = 0
 * mag of row 0, column 0: 0.5 * min(|silu'(4.5)| + 4.5 / 512, 1.1) * 4.5 + |silu(4.5)| * 3.5
 * (kernel_src/reference/epilogue.c bounds the slope over the gate's error); row 1 column 1 has
 * mag_g = 0 and silu(0) = 0, so 0. silu(4.5) = 4.45061..., so out[0] is about 2.2253. */
Test(blockscaled_ref, linear_swiglu_by_hand) {
    double out[4], mag[4];
    epilogue_case(JIT_EPILOGUE_LINEAR_SWIGLU, NULL, 0, out, mag);
    const double want[4] = {silu_d(4.5) * 0.5, silu_d(0.375) * -0.5, silu_d(7.875), 0.0};
    for (int i = 0; i < 4; i++)
        cr_expect(fabs(out[i] - want[i]) <= 1e-15 * fabs(want[i]),
                  "out[%d] = %.17g, expected %.17g", i, out[i], want[i]);
    cr_expect(out[0] > 2.2252 && out[0] < 2.2254, "out[0] = %.9g", out[0]);
    double want_mag0 = 0.5 * fmin(fabs(silu_slope_d(4.5)) + 0.5 * 4.5 / 256.0, 1.1) * 4.5 +
                       fabs(silu_d(4.5)) * 3.5;
    cr_expect(fabs(mag[0] - want_mag0) <= 1e-14 * want_mag0, "mag[0] = %.17g, expected %.17g",
              mag[0], want_mag0);
    cr_expect_eq(mag[3], 0.0, "mag[3] = %g", mag[3]);
}

/*
 * The scale pad. The kernel reads scales in whole 4-block chunks and TMA fills data
 * past K with zeros, so for a K that ends inside a chunk it multiplies the chunk's pad scales
 * with zero data. The reference run over K rounded up to whole chunks, with zero data there and
 * the tiled scales jit_scale_to_tiled made (even when asked for the NaN pad 0xFF), must equal
 * the reference over K: the pad inside a valid row must be a finite scale (0 x pad = 0).
 */
Test(blockscaled_ref, chunk_padding_of_scales_adds_zero) {
    const int64_t m = 3, n = 5, k = 5 * 32, kpad = 8 * 32, nkb = 5;
    uint8_t *a = operand(JIT_DTYPE_E4M3, m, kpad), *b = operand(JIT_DTYPE_E4M3, n, kpad);
    memset(a, 0, (size_t)(m * kpad));
    memset(b, 0, (size_t)(n * kpad));
    for (int64_t r = 0; r < m; r++)
        for (int64_t q = 0; q < k; q++)
            put(JIT_DTYPE_E4M3, a, kpad, r, q, 0x38); /* E4M3 1.0 */
    for (int64_t r = 0; r < n; r++)
        for (int64_t q = 0; q < k; q++)
            put(JIT_DTYPE_E4M3, b, kpad, r, q, 0x38);
    uint8_t sa[3 * 5], sb[5 * 5];
    memset(sa, 0x7F, sizeof(sa)); /* UE8M0 1.0 */
    memset(sb, 0x7F, sizeof(sb));
    uint8_t *sfa = malloc(jit_scale_tile_bytes(m, nkb)),
            *sfb = malloc(jit_scale_tile_bytes(n, nkb));
    jit_scale_to_tiled(sa, m, nkb, 0xFF, sfa);
    jit_scale_to_tiled(sb, n, nkb, 0xFF, sfb);
    double want[15], got[15], mag[15];
    jit__gemm_spec_t s =
        spec_of(JIT_DTYPE_E4M3, JIT_DTYPE_E4M3, JIT_SCALE_UE8M0_32, n, k, JIT_EPILOGUE_LINEAR);
    jit__ref_blockscaled(&s, m, a, kpad, b, kpad, sfa, sfb, NULL, 0, 1.0f, want, mag);
    s.k = kpad; /* the kernel's view: 8 blocks, the last 3 all padding */
    jit__ref_blockscaled(&s, m, a, kpad, b, kpad, sfa, sfb, NULL, 0, 1.0f, got, mag);
    for (int i = 0; i < m * n; i++) {
        cr_expect_eq(want[i], 160.0, "D[%d] = %g", i, want[i]);
        cr_expect_eq(got[i], want[i], "D[%d] over whole chunks = %g, over K = %g", i, got[i],
                     want[i]);
    }
    free(sfa);
    free(sfb);
    free(a);
    free(b);
}
