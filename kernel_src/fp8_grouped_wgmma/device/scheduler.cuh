/*
 * The grouped kernels' device-side scheduler. The rows per expert are on the device (offsets or
 * counts), never on the host, so every CTA turns them into a table in its shared memory when it
 * starts, and every role walks the same work sequence from that table:
 *
 *   row0[g]   first row of expert g in A, D and scale_a
 *   rows[g]   its row count (contiguous: offsets clamped to 0 <= offsets[g] <= offsets[g+1] <= m,
 *             so a decreasing pair is an empty expert and no row lies past A; masked: counts[g]
 *             clamped to 0 .. max_M)
 *   tile0[g]  row tiles of the experts before g (an exclusive prefix sum; tile0[G] is the total)
 *
 * A row tile is TILE_ROWS rows of one expert: expert g has ceil(rows[g] / TILE_ROWS) of them,
 * so an expert with no rows has none and nobody loads its weights. Work unit u is (row tile T,
 * column tile nt) in grouped raster order (GROUP_M row tiles walk the column tiles together, so
 * CTAs running at once share B and A in L2), and T is found in the table by binary search:
 * expert g is the last with tile0[g] <= T, and T - tile0[g] is the tile within it.
 */
#ifndef JITGEMM_FP8_GROUPED_SCHEDULER_CUH
#define JITGEMM_FP8_GROUPED_SCHEDULER_CUH

#include "device/common.cuh"
#include "fp8_grouped_wgmma/device/params.cuh"

/* One unit of work: rows row0 .. row0 + valid - 1 of A and D (valid <= TILE_ROWS; the tile's
 * other rows belong to the next expert or lie past A, and are computed but never stored),
 * expert g, column tile nt. */
struct GroupedTile {
    i64 row0;
    int valid, g, nt;
};

template <int G, int TILE_ROWS, int N_TILES, int GROUP_M, int LAYOUT> struct GroupedScheduler {
    enum : int {
        /* i32 entries: row0[G], rows[G], tile0[G + 1]; rounded to 8 bytes for what follows */
        TABLE_BYTES = ((3 * G + 1) * 4 + 7) / 8 * 8,
    };
    static_assert(G >= 1 && G <= 1024, "1..1024 experts");
    static_assert(LAYOUT == GROUPED_CONTIGUOUS || LAYOUT == GROUPED_MASKED, "layout");

    static __device__ __forceinline__ i32 *row0_of(u8 *table) {
        return (i32 *)table;
    }
    static __device__ __forceinline__ i32 *rows_of(u8 *table) {
        return (i32 *)table + G;
    }
    static __device__ __forceinline__ i32 *tile0_of(u8 *table) {
        return (i32 *)table + 2 * G;
    }

    /* Fill the table; every thread of the CTA calls it, and it ends with __syncthreads, after
     * which any thread may read it. Loads of the offsets are spread over the threads; one warp
     * then scans the tile counts 32 experts at a time. */
    static __device__ __forceinline__ void build(const GroupedParams &p, u8 *table) {
        i32 *row0 = row0_of(table), *rows = rows_of(table), *tile0 = tile0_of(table);
        const i64 m = p.m;
        for (int g = threadIdx.x; g < G; g += blockDim.x) {
            i64 lo, hi;
            if (LAYOUT == GROUPED_CONTIGUOUS) {
                lo = min_of(max_of((i64)p.rows[g], (i64)0), m);
                hi = min_of(max_of((i64)p.rows[g + 1], lo), m);
            } else {
                const i64 max_m = m / G;
                lo = (i64)g * max_m;
                hi = lo + min_of(max_of((i64)p.rows[g], (i64)0), max_m);
            }
            row0[g] = (i32)lo;
            rows[g] = (i32)(hi - lo);
            tile0[g + 1] = (i32)((hi - lo + TILE_ROWS - 1) / TILE_ROWS); /* scanned below */
        }
        __syncthreads();
        if (threadIdx.x < 32) {
            const int lane = threadIdx.x;
            i32 carry = 0;
            for (int base = 0; base < G; base += 32) {
                const int g = base + lane;
                i32 v = g < G ? tile0[g + 1] : 0;
#pragma unroll
                for (int d = 1; d < 32; d <<= 1) {
                    const i32 up = __shfl_up_sync(0xffffffffu, v, d);
                    if (lane >= d)
                        v += up;
                }
                if (g < G)
                    tile0[g + 1] = carry + v;
                carry += __shfl_sync(0xffffffffu, v, 31);
            }
            if (lane == 0)
                tile0[0] = 0;
        }
        __syncthreads();
    }

    /* Units of the whole launch: every row tile times every column tile. */
    static __device__ __forceinline__ int units(const u8 *table) {
        return ((const i32 *)table)[3 * G] * N_TILES;
    }

    static __device__ __forceinline__ GroupedTile tile(const u8 *table, int unit) {
        const i32 *row0 = (const i32 *)table, *rows = row0 + G, *tile0 = row0 + 2 * G;
        const int total = tile0[G];
        const int per_group = GROUP_M * N_TILES;
        const int group = unit / per_group;
        const int first = group * GROUP_M;
        const int in_group = unit - group * per_group;
        const int tiles_here = min_of(total - first, (int)GROUP_M);
        const int t = first + in_group % tiles_here;
        GroupedTile w;
        w.nt = in_group / tiles_here;
        /* The last expert with tile0[g] <= t: tile0[0] = 0 <= t, and tile0[G] = total > t. */
        int lo = 0, hi = G;
        while (hi - lo > 1) {
            const int mid = (lo + hi) >> 1;
            if (tile0[mid] <= t)
                lo = mid;
            else
                hi = mid;
        }
        w.g = lo;
        const int mt = t - tile0[lo];
        w.row0 = (i64)row0[lo] + (i64)mt * TILE_ROWS;
        w.valid = min_of(rows[lo] - mt * TILE_ROWS, (int)TILE_ROWS);
        return w;
    }
};

#endif /* JITGEMM_FP8_GROUPED_SCHEDULER_CUH */
