/*
 * The 128x4 tiled scale layout (docs/hardware-facts.md F6): the documented offsets, the chunk
 * structure tcgen05.cp relies on, bijectivity, and jit_scale_to_tiled's padding.
 */
#include <criterion/criterion.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "jitgemm.h"

Test(scale_layout, documented_offsets) {
    /* NVFP4, 128 rows, K = 128: 8 k-blocks, 2 column tiles. */
    const struct {
        int64_t r, c;
        size_t off;
    } cases[] = {{5, 2, 82},  {5, 5, 593},    {0, 0, 0},     {1, 0, 16},
                 {32, 0, 4},  {33, 2, 22},    {31, 3, 499},  {127, 3, 511},
                 {0, 4, 512}, {128, 0, 1024}, {130, 5, 1569}};
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
        cr_expect_eq(jit_scale_tile_offset(cases[i].r, cases[i].c, 8), cases[i].off,
                     "(%lld,%lld) -> %zu, expected %zu", (long long)cases[i].r,
                     (long long)cases[i].c, jit_scale_tile_offset(cases[i].r, cases[i].c, 8),
                     cases[i].off);
}

Test(scale_layout, chunk_lines_hold_four_rows) {
    /* Line r%32 of a chunk holds rows r, r+32, r+64, r+96 with 4 scales each: the 16 bytes one
     * TMEM lane receives from tcgen05.cp.32x128b.warpx4, i.e. column c = rows 32c.. */
    for (int64_t l = 0; l < 32; l++)
        for (int64_t q = 0; q < 4; q++)
            for (int64_t j = 0; j < 4; j++)
                cr_assert_eq(jit_scale_tile_offset(l + 32 * q, j, 4), (size_t)(l * 16 + q * 4 + j));
    /* K tiles of one 128-row block are contiguous chunks; the next row block follows. */
    cr_expect_eq(jit_scale_tile_offset(0, 8, 12), 1024u);
    cr_expect_eq(jit_scale_tile_offset(128, 0, 12), 1536u);
}

Test(scale_layout, sizes_pad_rows_and_columns) {
    cr_expect_eq(jit_scale_tile_bytes(128, 8), 1024u);
    cr_expect_eq(jit_scale_tile_bytes(200, 6), 256u * 8u);
    cr_expect_eq(jit_scale_tile_bytes(1, 1), 512u);
    cr_expect_eq(jit_scale_tile_bytes(129, 5), 256u * 8u);
    cr_expect_eq(jit_scale_tile_bytes(0, 4), 0u);
    /* MXFP8 K=7168 (224 k-blocks) x N=4096: no padding at all. */
    cr_expect_eq(jit_scale_tile_bytes(4096, 224), 4096u * 224u);
}

Test(scale_layout, bijection_over_200_by_6) {
    const int64_t rows = 200, nk = 6;
    size_t bytes = jit_scale_tile_bytes(rows, nk);
    unsigned char *hit = calloc(bytes, 1);
    cr_assert_not_null(hit);
    for (int64_t r = 0; r < 256; r++) /* padded rows included */
        for (int64_t c = 0; c < 8; c++) {
            size_t off = jit_scale_tile_offset(r, c, nk);
            cr_assert_lt(off, bytes, "(%lld,%lld) -> %zu out of %zu", (long long)r, (long long)c,
                         off, bytes);
            cr_assert_eq(hit[off], 0, "(%lld,%lld) collides at %zu", (long long)r, (long long)c,
                         off);
            hit[off] = 1;
        }
    for (size_t i = 0; i < bytes; i++)
        cr_assert_eq(hit[i], 1, "byte %zu never addressed", i);
    free(hit);
}

Test(scale_layout, to_tiled_places_every_scale_and_pads) {
    const int64_t rows = 200, nk = 6;
    uint8_t *src = malloc((size_t)(rows * nk));
    size_t bytes = jit_scale_tile_bytes(rows, nk);
    uint8_t *dst = malloc(bytes);
    cr_assert(src && dst);
    /* Values 0..126 never equal the pad byte 0xFF, so padding is told apart from data. */
    for (int64_t i = 0; i < rows * nk; i++)
        src[i] = (uint8_t)((i * 37 + 11) % 127);
    memset(dst, 0x5A, bytes);
    jit_scale_to_tiled(src, rows, nk, 0xFF, dst);
    for (int64_t r = 0; r < rows; r++)
        for (int64_t c = 0; c < nk; c++)
            cr_assert_eq(dst[jit_scale_tile_offset(r, c, nk)], src[r * nk + c]);
    /* Padded rows hold the caller's pad byte; the padded k-blocks of real rows hold 0x00 (the
     * kernel reads whole 4-block scale chunks and multiplies the pads with TMA's zero fill past
     * K, and 0 x NaN is NaN), a finite scale in UE8M0 (2^-127), UE4M3 and UE5M3 (0). */
    size_t rowpad = 0;
    for (int64_t r = 0; r < 256; r++)
        for (int64_t c = 0; c < 8; c++) {
            uint8_t v = dst[jit_scale_tile_offset(r, c, nk)];
            if (r >= rows) {
                cr_expect_eq(v, 0xFF, "row %lld (padding) k-block %lld", (long long)r,
                             (long long)c);
                rowpad++;
            } else if (c >= nk) {
                cr_expect_eq(v, 0x00, "row %lld k-block %lld (K padding) = 0x%02X", (long long)r,
                             (long long)c, v);
            }
        }
    cr_expect_eq(rowpad, (size_t)(56 * 8));
    cr_expect_eq(bytes, (size_t)(256 * 8));
    free(src);
    free(dst);
}
