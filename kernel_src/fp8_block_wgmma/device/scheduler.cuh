/*
 * The tile kernel's persistent order. CTA b takes work units b, b + G, b + 2G, ... (G = the
 * grid's clusters); a unit is an m-group (CLUSTER consecutive m-tiles, one per CTA of a
 * cluster) and an n-tile, in grouped raster order: GROUP_M m-groups walk the n-tiles together,
 * so CTAs running at the same time share A and B rows in L2. Every role walks the same
 * sequence, so the producer, the consumers and the store warps agree on each tile without
 * talking about it.
 */
#ifndef JITGEMM_BSW_SCHEDULER_CUH
#define JITGEMM_BSW_SCHEDULER_CUH

#include "device/sm90.cuh"
#include "fp8_block_wgmma/device/params.cuh"

template <class T> struct BswSchedule {
    struct Work {
        int first, stride, units, m_tiles, m_groups, rank;
    };

    /* This CTA's share of the units for M rows; its m-tile in a unit's m-group is its rank in
     * the cluster. A CTA whose m-tile lies past M (the second of an odd count) still loads its
     * share of B for its peer; its epilogue stores nothing. */
    static __device__ __forceinline__ Work work_of(i64 m) {
        Work w;
        w.m_tiles = (int)((m + T::BM - 1) / T::BM);
        w.m_groups = (w.m_tiles + T::CLUSTER - 1) / T::CLUSTER;
        w.units = w.m_groups * T::N_TILES;
        w.rank = T::CLUSTER == 1 ? 0 : (int)cluster_ctarank();
        w.first = (int)blockIdx.x / T::CLUSTER;
        w.stride = (int)gridDim.x / T::CLUSTER;
        return w;
    }

    /* Unit `unit` -> (m-group, n-tile). */
    static __device__ __forceinline__ void unit_coords(int unit, int m_groups, int &mg, int &nt) {
        const int per_group = T::GROUP_M * T::N_TILES;
        const int group = unit / per_group;
        const int first_m = group * T::GROUP_M;
        const int rows = min_of(m_groups - first_m, (int)T::GROUP_M);
        const int in_group = unit - group * per_group;
        mg = first_m + in_group % rows;
        nt = in_group / rows;
    }

    /* The first row of m-tile mt's A box and MMA rows: the tile's own first row, except for the
     * last m-tile of a ragged M >= BM, which is moved up to end at row M so that its box lies
     * wholly inside A (a zero-filled part of a box costs TMA load time). The rows it then shares
     * with m-tile mt - 1 belong to that tile: every epilogue stores only rows from mt * BM on. */
    static __device__ __forceinline__ i64 tile_row0(int mt, i64 m) {
        const i64 r = (i64)mt * T::BM;
        return (m >= T::BM && r + T::BM > m) ? m - T::BM : r;
    }
};

#endif /* JITGEMM_BSW_SCHEDULER_CUH */
