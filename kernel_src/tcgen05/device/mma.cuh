/*
 * The MMA issuer: one thread of the pair leader. Per stage and K-block it copies the scale
 * chunks that K-block is the first to read from SMEM to TMEM (tcgen05.cp) and issues one
 * block-scaled tcgen05.mma per M-half; with B-reuse the two M-halves read the same B, the second
 * through the collector. The K-blocks of a stage are unrolled at compile time (template
 * recursion), so every column, SF ID and SMEM offset below is a constant; the generated source
 * checks them against the planner's values with static_asserts.
 */
#ifndef JITGEMM_TCGEN05_MMA_CUH
#define JITGEMM_TCGEN05_MMA_CUH

#include "device/mbarrier.cuh"
#include "device/sm100.cuh"
#include "tcgen05/device/cta.cuh"

template <class P> struct TcMma {
    /* ---- the K-block schedule, as the planner lays it out (jit__tc_sf_slot & co.) ---- */

    /* TMEM column (from SFA_COL / SFB_COL) of the scales K-block k reads; which 0: A, 1: B. */
    static __host__ __device__ constexpr u32 sf_column(int which, int k) {
        return (u32)((k * (int)P::SF_PER_INSTR) / 4 * (which ? (int)P::SFB_ROW_BLOCKS : 1) * 4);
    }
    /* Fewer than 4 scales per instruction share a 32-bit word: the SF ID picks the byte. */
    static __host__ __device__ constexpr u32 sf_id(int k) {
        return P::SF_PER_INSTR < 4 ? (u32)((k * (int)P::SF_PER_INSTR) % 4) : 0u;
    }
    /* TMEM column of 512-byte scale chunk kc of row block mn. */
    static __host__ __device__ constexpr u32 sf_chunk_column(int which, int mn, int kc) {
        return (u32)((kc * (which ? (int)P::SFB_ROW_BLOCKS : 1) + mn) * 4);
    }
    /* SMEM byte offset of K-block k of M-half `half` in an A stage, and of K-block k in B. */
    static __host__ __device__ constexpr u32 a_offset(int half, int k) {
        return ((u32)half * P::A_BOXES + (u32)k * P::A_K_STEP / P::A_BOX_BYTES) * 128u *
                   P::A_BOX_BYTES +
               (u32)k * P::A_K_STEP % P::A_BOX_BYTES;
    }
    static __host__ __device__ constexpr u32 b_offset(int k) {
        return ((u32)k * P::B_K_STEP / P::B_BOX_BYTES) * P::B_ROWS * P::B_BOX_BYTES +
               (u32)k * P::B_K_STEP % P::B_BOX_BYTES;
    }

    /* SF IDs live in bits 31:30 of the scale TMEM addresses. The shifts are unsigned and masked:
     * an arithmetic shift of a signed address would copy bit 31 over the whole descriptor. */
    static __device__ __forceinline__ u32 idesc(u32 sfa_tmem, u32 sfb_tmem) {
        return P::IDESC | (((sfa_tmem & 0xC0000000u) >> 30) << 29) |
               (((sfb_tmem & 0xC0000000u) >> 30) << 4);
    }

    /* An SMEM matrix descriptor: the constant fields of the plan plus the absolute start
     * address >> 4, in the arch's field width (14 bits, 15 on sm_107a). Kernel start traps
     * if any operand ends past what the field can hold, so the mask never wraps. */
    static __device__ __forceinline__ u64 desc(u64 hi, u32 addr) {
        return hi | (u64)((addr >> 4) & P::DESC_ADDR_MASK);
    }

    /* Operands of one stage, as the K-blocks see them. */
    struct Stage {
        u32 tmem, acc, a, b, sfa, sfb, sfb_shift, kt;
    };

    /* The tcgen05.cp of the chunks K-block K is the first to read. WHICH 0: SFA of M-half
     * HALF, 1: SFB. */
    template <int WHICH, int HALF, int K> static __device__ __forceinline__ void sf_copies(const Stage &st) {
        constexpr int KC_LO = (K * (int)P::SF_PER_INSTR + 3) / 4;
        constexpr int KC_HI = ((K + 1) * (int)P::SF_PER_INSTR + 3) / 4;
        constexpr int BLOCKS = WHICH ? (int)P::SFB_ROW_BLOCKS : 1;
#pragma unroll
        for (int kc = KC_LO; kc < KC_HI; kc++)
#pragma unroll
            for (int mn = 0; mn < BLOCKS; mn++) {
                const u32 off = (u32)((WHICH ? mn : HALF) * (int)P::SF_CHUNKS_K + kc) * 512u;
                if constexpr (WHICH)
                    sm100::utccp<P::CTA_GROUP>(st.tmem + P::SFB_COL + sf_chunk_column(1, mn, kc),
                                               desc(P::SF_DESC_HI, st.sfb + off));
                else
                    sm100::utccp<P::CTA_GROUP>(st.tmem + P::SFA_COL + sf_chunk_column(0, mn, kc) +
                                                   HALF * P::SFA_HALF_STRIDE,
                                               desc(P::SF_DESC_HI, st.sfa + off));
            }
    }

    /* One MMA of K-block K for M-half HALF; the first K-block of a tile overwrites. */
    template <int COLLECTOR, int HALF, int K>
    static __device__ __forceinline__ void mma_call(const Stage &st) {
        const u32 sa = st.tmem + P::SFA_COL + sf_column(0, K) + HALF * P::SFA_HALF_STRIDE +
                       (sf_id(K) << 30);
        const u32 sb = st.tmem + P::SFB_COL + sf_column(1, K) + st.sfb_shift + (sf_id(K) << 30);
        sm100::mma<P::CTA_GROUP, P::KIND, P::SF_VEC, COLLECTOR>(
            st.acc + HALF * P::ACC_HALF_STRIDE, desc(P::A_DESC_HI, st.a + a_offset(HALF, K)),
            desc(P::B_DESC_HI, st.b + b_offset(K)), idesc(sa, sb), sa, sb,
            K == 0 ? st.kt > 0 : 1u);
    }

    template <int K> static __device__ __forceinline__ void k_blocks(const Stage &st) {
        if constexpr (P::HALVES == 2) {
            /* B-reuse: interleaved copies keep-SFA, SFB, reuse-SFA, then the keep and reuse
             * MMAs, which read the same B. Without collector hints (fallback target, PTX < 9.4)
             * B is read from SMEM again, which gives the same result. */
            constexpr int KEEP = P::COLLECTOR_B ? sm100::COLLECTOR_FILL : sm100::COLLECTOR_NONE;
            constexpr int REUSE =
                P::COLLECTOR_B ? sm100::COLLECTOR_LASTUSE : sm100::COLLECTOR_NONE;
            sf_copies<0, 0, K>(st);
            sf_copies<1, 0, K>(st);
            sf_copies<0, 1, K>(st);
            mma_call<KEEP, 0, K>(st);
            mma_call<REUSE, 1, K>(st);
        } else {
            sf_copies<0, 0, K>(st);
            sf_copies<1, 0, K>(st);
            mma_call<sm100::COLLECTOR_NONE, 0, K>(st);
        }
        if constexpr (K + 1 < (int)P::K_BLOCKS)
            k_blocks<K + 1>(st);
    }

    static __device__ void run(const TcCtaState &c, u32 tmem) {
        constexpr int CG = P::CTA_GROUP;
        u32 it = 0, tile = 0;
        for (u32 i = 0;; ++i) {
            const TcWork w = TcCta<P>::work_get(c, i);
            TcCta<P>::work_release(c, i);
            if (w.id >= c.total)
                break;
            if (!c.mma_issuer)
                continue; /* the pair's second CTA only follows the ring */
            const TcTile t = TcCta<P>::tile_coords(c, w);
            if constexpr (P::OVERLAP) {
                /* Overlapping stages: tile i may start once the epilogue has drained the
                 * columns tile i-1 shares with it (its early release). */
                if (tile > 0)
                    mbar::wait_cluster(c.smem + P::OFF_ACC_EMPTY, (tile - 1) & 1);
            } else {
                mbar::wait_cluster(c.smem + P::OFF_ACC_EMPTY + 8 * (tile % P::ACC_STAGES),
                                   ((tile / P::ACC_STAGES) & 1) ^ 1);
            }
            sm100::fence_after();
            Stage st;
            st.tmem = tmem;
            if constexpr (P::ACC_STAGES > 1)
                st.acc = tmem + ((tile % P::ACC_STAGES) ? P::ACC_COL1 : P::ACC_COL0);
            else
                st.acc = tmem + P::ACC_COL0;
            /* A tile that starts halfway into a 128-row scale block (N 64 or 192) reads its SFB
             * 2 columns on: column c of a chunk holds rows 32c..32c+31. */
            st.sfb_shift = ((u32)t.n0 % 128u) / 32u;
            /* A pair whose rows all lie past M gets no MMA (its A is all padding); the barriers
             * still turn over so every pipeline stays balanced. */
            const bool live = (i64)t.row0 < c.m;
            for (u32 kt = 0; kt < P::K_TILES; ++kt, ++it) {
                const u32 s = it % P::STAGES;
                mbar::wait(c.smem + P::OFF_FULL + 8 * s, (it / P::STAGES) & 1);
                sm100::fence_after();
                st.a = c.smem + P::OFF_A + s * P::A_STAGE;
                st.b = c.smem + P::OFF_B + s * P::B_STAGE;
                st.sfa = c.smem + P::OFF_SFA + s * P::SFA_STAGE;
                st.sfb = c.smem + P::OFF_SFB + s * P::SFB_STAGE;
                st.kt = kt;
                if (live)
                    k_blocks<0>(st);
                /* Free the stage in every CTA of the cluster once these MMAs are done. */
                sm100::commit_mc<CG>(c.smem + P::OFF_EMPTY + 8 * s, c.cluster_mask);
            }
            if constexpr (CG == 2)
                /* Both CTAs' epilogues wait on their own copy of the barrier. */
                sm100::commit_mc<CG>(c.smem + P::OFF_ACC_FULL + 8 * (tile % P::ACC_STAGES),
                                     c.pair_mask);
            else
                sm100::commit<CG>(c.smem + P::OFF_ACC_FULL + 8 * (tile % P::ACC_STAGES));
            ++tile;
        }
        if (c.mma_issuer) {
            /* The peer CTA's epilogue warps still arrive on our barrier. */
            if constexpr (P::OVERLAP) {
                if (tile > 0)
                    mbar::wait_cluster(c.smem + P::OFF_ACC_EMPTY, (tile - 1) & 1);
            } else {
                for (u32 j = tile; j < tile + P::ACC_STAGES; ++j)
                    mbar::wait_cluster(c.smem + P::OFF_ACC_EMPTY + 8 * (j % P::ACC_STAGES),
                                       ((j / P::ACC_STAGES) & 1) ^ 1);
            }
        }
    }
};

#endif /* JITGEMM_TCGEN05_MMA_CUH */
