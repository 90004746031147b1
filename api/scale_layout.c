/*
 * Host helpers for the 128x4 tiled scale layout that TMA and tcgen05.cp read (the cuBLAS
 * "32_4_4" layout; docs/hardware-facts.md F6, F12). Rows are padded to a multiple of
 * 128 and scales per row to a multiple of 4; each 128-row x 4-scale tile is one 512-byte chunk,
 * tiles ordered row-tile-major with the K tiles of one row tile contiguous. Inside a chunk, line
 * r%32 holds rows r%32, +32, +64, +96 with their 4 scales, so one tcgen05.cp.32x128b.warpx4
 * moves a chunk into 4 TMEM columns.
 */
#include "jitgemm.h"

#include <string.h>

size_t jit_scale_tile_offset(int64_t row, int64_t kblock, int64_t n_kblocks) {
    int64_t col_tiles = (n_kblocks + 3) / 4;
    int64_t tile = (row / 128) * col_tiles + kblock / 4;
    int64_t in_tile = (row % 32) * 16 + ((row % 128) / 32) * 4 + kblock % 4;
    return (size_t)(tile * 512 + in_tile);
}

size_t jit_scale_tile_bytes(int64_t rows, int64_t n_kblocks) {
    if (rows <= 0 || n_kblocks <= 0)
        return 0;
    return (size_t)((rows + 127) / 128 * 128) * (size_t)((n_kblocks + 3) / 4 * 4);
}

void jit_scale_to_tiled(const uint8_t *src, int64_t rows, int64_t n_kblocks, uint8_t pad,
                        uint8_t *dst) {
    size_t bytes = jit_scale_tile_bytes(rows, n_kblocks);
    if (!src || !dst || bytes == 0)
        return;
    /* Pad bytes are scales of rows or K blocks that do not exist. Rows past `rows` take the
     * caller's value: their products land in output rows or columns that are never stored.
     * The K-block pads of a real row do not: the kernel reads whole 4-block chunks, so with a
     * K that ends inside a chunk it multiplies these pads with the zeros TMA fills past K, and
     * a NaN pad (0xFF in UE8M0 and UE5M3) would turn the whole row into NaN. They are 0x00,
     * finite in every scale format (UE8M0 2^-127, UE4M3 and UE5M3 zero), so they add 0. */
    memset(dst, pad, bytes);
    int64_t padded_kblocks = (n_kblocks + 3) / 4 * 4;
    for (int64_t r = 0; r < rows; r++) {
        for (int64_t c = 0; c < n_kblocks; c++)
            dst[jit_scale_tile_offset(r, c, n_kblocks)] = src[r * n_kblocks + c];
        for (int64_t c = n_kblocks; c < padded_kblocks; c++)
            dst[jit_scale_tile_offset(r, c, n_kblocks)] = 0x00;
    }
}
