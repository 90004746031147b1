/*
 * The persistent schedule of the FP8 wgmma tile kernel: CTA b takes work units b, b + grid, ...
 * A unit is an m-group (CLUSTER consecutive m-tiles, one per CTA of the cluster) and an n-tile,
 * numbered in grouped raster order (GROUP_M m-groups walk the n-tiles together, so CTAs running
 * at the same time share A and B rows in L2). Every role walks the same sequence: the producer,
 * the consumers and the store warps each call work_of() and unit_coords().
 */
#ifndef JITGEMM_FP8_WGMMA_SCHEDULER_CUH
#define JITGEMM_FP8_WGMMA_SCHEDULER_CUH

#include "device/common.cuh"
#include "device/sm90.cuh"
#include "fp8_wgmma/device/params.cuh"

template <class C> struct Fp8WgmmaScheduler {
    /* Work unit `unit` of the persistent sequence -> (m-group, n-tile), grouped raster: GROUP_M
     * m-groups walk the n-tiles together, so CTAs running at the same time share A and B rows
     * in L2. An m-group is CLUSTER consecutive m-tiles, one per CTA of the cluster. */
    static __device__ __forceinline__ void unit_coords(int unit, int m_groups, int &mg, int &nt) {
        const int per_group = C::GROUP_M * C::N_TILES;
        const int group = unit / per_group;
        const int first_m = group * C::GROUP_M;
        const int rows = min_of(m_groups - first_m, (int)C::GROUP_M);
        const int in_group = unit - group * per_group;
        mg = first_m + in_group % rows;
        nt = in_group / rows;
    }

    /* The first row of m-tile mt's A box and MMA rows: the tile's own first row, except for the
     * last m-tile of a ragged M >= BM, which is moved up to end at row M so that its box lies
     * wholly inside A. A box partly past the edge is zero-filled by TMA, and that measured up to
     * 1.3x the tile's time where loads were not hidden behind the MMAs (128x96 at M = 192 on the
     * H200). The rows it then shares with m-tile mt - 1 belong to that tile: every epilogue
     * stores only rows from mt * BM on. */
    static __device__ __forceinline__ i64 tile_row0(int mt, i64 m) {
        const i64 r = (i64)mt * C::BM;
        return (m >= C::BM && r + C::BM > m) ? m - C::BM : r;
    }

    /* The work of this CTA: units first, first + stride, ... below `units`; the CTA's m-tile in a
     * unit's m-group is its rank in the cluster. A CTA whose m-tile lies past M (odd m-tile
     * counts) still loads its share of B for its peer; its epilogue stores nothing. */
    struct Work {
        int first, stride, units, m_tiles, m_groups, rank;
    };
    static __device__ __forceinline__ Work work_of(i64 m) {
        Work w;
        w.m_tiles = (int)((m + C::BM - 1) / C::BM);
        w.m_groups = (w.m_tiles + C::CLUSTER - 1) / C::CLUSTER;
        w.units = w.m_groups * C::N_TILES;
        w.rank = C::CLUSTER == 1 ? 0 : (int)cluster_ctarank();
        w.first = (int)blockIdx.x / C::CLUSTER;
        w.stride = (int)gridDim.x / C::CLUSTER;
        return w;
    }
};

#endif /* JITGEMM_FP8_WGMMA_SCHEDULER_CUH */
