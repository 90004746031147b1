/*
 * Inline-PTX device wrappers for the tcgen05 kernel: one small static __device__ function per
 * instruction, each with the exact spelling the PTX ISA and the CUDA 13.0 CCCL headers give.
 *
 * Why raw asm and not cuda::ptx: CUDA 13.0's wrappers are guarded for sm_100a/sm_101a only and
 * fail at ptxas time for sm_103a and sm_100f; the generated source also includes no header. The
 * block-scale suffix is the `.block16`/`.block32` spelling (or none for mxf8f6f4), which
 * assembles for arch-specific and family targets alike, never `.scale_vec::NX`. Loops inside
 * asm use `%=` labels so that every inlined copy gets its own.
 *
 * Plan-dependent spellings (cta_group, MMA kind and suffix, B collector hints, the TMEM column
 * count and `.exclusive`) are written into the wrappers here; the role code calls the wrappers
 * by fixed names, so nothing else in the generated source spells an instruction.
 *
 * NOTE on `.exclusive`: ptxas 13.5 rejects an immediate column count above 512 or not a power
 * of two for tcgen05.alloc/dealloc ("expected to be in range [32..512]", "must be power of 2")
 * unless the PTX 9.4 `.exclusive` qualifier is present, with which multiples of 32 are accepted.
 * The PTX 9.4 text for it was not available; this is read from the assembler's checks.
 */
#include <string.h>

#include "tcgen05_gen.h"

const char *const jit__tcg_ptx_wrapper_names[] = {"jg_smem_addr",
                                                  "jg_trap",
                                                  "jg_elect_one",
                                                  "jg_syncwarp",
                                                  "jg_ballot",
                                                  "jg_shfl0",
                                                  "jg_cluster_ctarank",
                                                  "jg_cluster_ctaid_x",
                                                  "jg_cluster_ctaid_y",
                                                  "jg_cluster_nctaid_x",
                                                  "jg_cluster_nctaid_y",
                                                  "jg_mapa",
                                                  "jg_cluster_arrive",
                                                  "jg_cluster_wait",
                                                  "jg_mbar_init",
                                                  "jg_fence_mbar_init",
                                                  "jg_mbar_wait",
                                                  "jg_mbar_wait_cluster",
                                                  "jg_mbar_arrive_remote",
                                                  "jg_mbar_expect_arrive",
                                                  "jg_mbar_expect_arrive_remote",
                                                  "jg_st_async_v2",
                                                  "jg_tma_prefetch",
                                                  "jg_tma_load_2d",
                                                  "jg_tma_load_2d_mc",
                                                  "jg_tma_load_3d",
                                                  "jg_tma_store_2d",
                                                  "jg_bulk_commit",
                                                  "jg_bulk_wait_read_slack",
                                                  "jg_bulk_wait_all",
                                                  "jg_fence_proxy_async",
                                                  "jg_st_shared_v4",
                                                  "jg_tmem_alloc",
                                                  "jg_tmem_relinquish",
                                                  "jg_tmem_dealloc",
                                                  "jg_utccp",
                                                  "jg_mma",
                                                  "jg_mma_keep",
                                                  "jg_mma_reuse",
                                                  "jg_mma_commit",
                                                  "jg_mma_commit_mc",
                                                  "jg_tc_fence_before",
                                                  "jg_tc_fence_after",
                                                  "jg_tmem_ld16",
                                                  "jg_tmem_wait_ld",
                                                  "jg_atom_add_relaxed",
                                                  "jg_atom_add_acq_rel",
                                                  "jg_ld_relaxed_u64",
                                                  "jg_st_relaxed_u64",
                                                  "jg_nanosleep",
                                                  "jg_cvt_bf16x2",
                                                  "jg_as_f32",
                                                  "jg_ex2",
                                                  NULL};

#define FN "static __device__ __forceinline__ "

static void put(const jit__tcg_t *g, const char *text) {
    jit__sb_append(g->sb, text);
}

/* ---- addresses, warps, cluster geometry -------------------------------------------------- */

static void emit_basics(const jit__tcg_t *g) {
    put(g, "/* 32-bit shared::cta address of a generic pointer into shared memory. */\n" FN
           "u32 jg_smem_addr(const void *p) {\n"
           "    return (u32)__cvta_generic_to_shared(p);\n"
           "}\n\n");
    put(g,
        "/* Abort the grid: used only for a broken launch invariant. */\n" FN "void jg_trap() {\n"
        "    asm volatile(\"trap;\");\n"
        "}\n\n");
    put(g, "/* 1 in exactly one active lane of the warp (elect.sync, sm_90+). */\n" FN
           "u32 jg_elect_one() {\n"
           "    u32 r;\n"
           "    asm volatile(\"{\\n\\t.reg .pred P;\\n\\telect.sync _|P, 0xffffffff;\\n\\t\"\n"
           "                 \"selp.u32 %0, 1, 0, P;\\n\\t}\" : \"=r\"(r));\n"
           "    return r;\n"
           "}\n\n");
    put(g, FN "void jg_syncwarp() {\n"
              "    asm volatile(\"bar.warp.sync 0xffffffff;\" ::: \"memory\");\n"
              "}\n\n");
    if (g->has_fallback) /* the fallback-group token poll */
        put(g,
            FN "u32 jg_ballot(u32 pred) {\n"
               "    u32 r;\n"
               "    asm volatile(\"{\\n\\t.reg .pred P;\\n\\tsetp.ne.u32 P, %1, 0;\\n\\t\"\n"
               "                 \"vote.sync.ballot.b32 %0, P, 0xffffffff;\\n\\t}\" : \"=r\"(r) : "
               "\"r\"(pred));\n"
               "    return r;\n"
               "}\n\n");
    put(g, "/* Lane 0's value in every lane. */\n" FN "u32 jg_shfl0(u32 v) {\n"
           "    u32 r;\n"
           "    asm volatile(\"shfl.sync.idx.b32 %0, %1, 0, 0x1f, 0xffffffff;\" : \"=r\"(r) : "
           "\"r\"(v));\n"
           "    return r;\n"
           "}\n\n");
    static const char *const sregs[][2] = {{"jg_cluster_ctarank", "cluster_ctarank"},
                                           {"jg_cluster_ctaid_x", "cluster_ctaid.x"},
                                           {"jg_cluster_ctaid_y", "cluster_ctaid.y"},
                                           {"jg_cluster_nctaid_x", "cluster_nctaid.x"},
                                           {"jg_cluster_nctaid_y", "cluster_nctaid.y"}};
    put(g,
        "/* Cluster special registers: the shape of the cluster this CTA actually runs in, which\n"
        " * in a mixed-cluster launch is either the preferred or the fallback shape. */\n");
    for (size_t i = 0; i < sizeof(sregs) / sizeof(sregs[0]); i++)
        jit__sb_printf(g->sb,
                       FN "u32 %s() {\n"
                          "    u32 r;\n"
                          "    asm volatile(\"mov.u32 %%0, %%%%%s;\" : \"=r\"(r));\n"
                          "    return r;\n"
                          "}\n",
                       sregs[i][0], sregs[i][1]);
    put(g, "\n/* The shared::cluster address of `addr` (a local shared::cta address) in CTA "
           "`rank`. */\n" FN "u32 jg_mapa(u32 addr, u32 rank) {\n"
           "    u32 r;\n"
           "    asm volatile(\"mapa.shared::cluster.u32 %0, %1, %2;\" : \"=r\"(r) : \"r\"(addr), "
           "\"r\"(rank));\n"
           "    return r;\n"
           "}\n\n");
    put(g, FN "void jg_cluster_arrive() {\n"
              "    asm volatile(\"barrier.cluster.arrive.release.aligned;\" ::: \"memory\");\n"
              "}\n" FN "void jg_cluster_wait() {\n"
              "    asm volatile(\"barrier.cluster.wait.acquire.aligned;\" ::: \"memory\");\n"
              "}\n\n");
}

/* ---- mbarriers --------------------------------------------------------------------------- */

static void emit_mbarrier(const jit__tcg_t *g) {
    put(g, FN "void jg_mbar_init(u32 bar, u32 count) {\n"
              "    asm volatile(\"mbarrier.init.shared::cta.b64 [%0], %1;\" :: \"r\"(bar), "
              "\"r\"(count) : \"memory\");\n"
              "}\n\n");
    put(g, "/* Makes the barrier initialisations visible to the cluster (and to the async proxy). "
           "*/\n" FN "void jg_fence_mbar_init() {\n"
           "    asm volatile(\"fence.mbarrier_init.release.cluster;\" ::: \"memory\");\n"
           "}\n\n");
    put(g,
        "/* Spin until phase `parity` of the barrier has completed. The CTA-scope form serves\n"
        " * barriers that only this CTA and the async proxy (TMA, tcgen05.commit) signal. */\n" FN
        "void jg_mbar_wait(u32 bar, u32 parity) {\n"
        "    asm volatile(\"{\\n\\t.reg .pred P;\\n\\tJG_WAIT_%=:\\n\\t\"\n"
        "                 \"mbarrier.try_wait.parity.shared::cta.b64 P, [%0], %1;\\n\\t\"\n"
        "                 \"@!P bra JG_WAIT_%=;\\n\\t}\" :: \"r\"(bar), \"r\"(parity) : "
        "\"memory\");\n"
        "}\n\n");
    put(g, "/* The same with cluster-scope acquire, for barriers that other CTAs arrive on. */\n" FN
           "void jg_mbar_wait_cluster(u32 bar, u32 parity) {\n"
           "    asm volatile(\"{\\n\\t.reg .pred P;\\n\\tJG_WAITC_%=:\\n\\t\"\n"
           "                 \"mbarrier.try_wait.parity.acquire.cluster.shared::cta.b64 P, [%0], "
           "%1;\\n\\t\"\n"
           "                 \"@!P bra JG_WAITC_%=;\\n\\t}\" :: \"r\"(bar), \"r\"(parity) : "
           "\"memory\");\n"
           "}\n\n");
    put(g, "/* Arrive on a barrier in another CTA of the cluster (address from jg_mapa). */\n" FN
           "void jg_mbar_arrive_remote(u32 cluster_bar) {\n"
           "    asm volatile(\"mbarrier.arrive.release.cluster.shared::cluster.b64 _, [%0];\" :: "
           "\"r\"(cluster_bar) : \"memory\");\n"
           "}\n\n");
    put(g, "/* Arrive once and expect `bytes` more transaction bytes in the current phase. */\n" FN
           "void jg_mbar_expect_arrive(u32 bar, u32 bytes) {\n"
           "    asm volatile(\"mbarrier.arrive.expect_tx.release.cta.shared::cta.b64 _, [%0], "
           "%1;\" :: \"r\"(bar), \"r\"(bytes) : \"memory\");\n"
           "}\n\n");
    put(g, FN "void jg_mbar_expect_arrive_remote(u32 cluster_bar, u32 bytes) {\n"
              "    asm volatile(\"mbarrier.arrive.expect_tx.release.cluster.shared::cluster.b64 _, "
              "[%0], %1;\" :: \"r\"(cluster_bar), \"r\"(bytes) : \"memory\");\n"
              "}\n\n");
    put(g,
        "/* Store two words into another CTA's shared memory and complete 8 transaction bytes on\n"
        " * its barrier: the data and the signal travel together, so no fence is needed. */\n" FN
        "void jg_st_async_v2(u32 cluster_addr, u32 x, u32 y, u32 cluster_bar) {\n"
        "    asm volatile(\"st.async.shared::cluster.mbarrier::complete_tx::bytes.v2.b32 [%0], "
        "{%1, %2}, [%3];\"\n"
        "                 :: \"r\"(cluster_addr), \"r\"(x), \"r\"(y), \"r\"(cluster_bar) : "
        "\"memory\");\n"
        "}\n\n");
}

/* ---- TMA --------------------------------------------------------------------------------- */

static void emit_tma(const jit__tcg_t *g) {
    int pair = g->tc->cta_group == 2;
    int mc = g->tc->a.multicast || g->tc->b.multicast;
    int plain = !g->tc->a.multicast || !g->tc->b.multicast;
    put(g, FN "void jg_tma_prefetch(const void *tmap) {\n"
              "    asm volatile(\"prefetch.tensormap [%0];\" :: \"l\"(tmap) : \"memory\");\n"
              "}\n\n");
    /* With cta_group::2 the bytes complete on the pair leader's barrier, which the address
     * names once its peer bit (bit 24) is cleared; the leader expects both CTAs' bytes. */
    const char *bar = pair ? "bar & 0xFEFFFFFFu" : "bar";
    const char *cta = pair ? ".cta_group::2" : "";
    const char *dst = pair ? "shared::cta" : "shared::cluster";
    if (plain)
        jit__sb_printf(g->sb,
                       "/* One box into this CTA's shared memory%s. */\n" FN
                       "void jg_tma_load_2d(u32 dst, const void *tmap, int c0, int c1, u32 bar) {\n"
                       "    asm volatile(\"cp.async.bulk.tensor.2d.%s.global.tile.mbarrier::"
                       "complete_tx::bytes%s [%%0], [%%1, {%%2, %%3}], [%%4];\"\n"
                       "                 :: \"r\"(dst), \"l\"(tmap), \"r\"(c0), \"r\"(c1), "
                       "\"r\"(%s) : \"memory\");\n"
                       "}\n\n",
                       pair ? "; the bytes count on the pair leader's barrier (peer bit 24 cleared)"
                            : "",
                       dst, cta, bar);
    if (mc)
        jit__sb_printf(g->sb,
                       "/* Multicast: every CTA in `mask` receives the box at `dst` and the bytes\n"
                       " * complete on %s at the same offset. */\n" FN
                       "void jg_tma_load_2d_mc(u32 dst, const void *tmap, int c0, int c1, u32 bar, "
                       "u16 mask) {\n"
                       "    asm volatile(\"cp.async.bulk.tensor.2d.shared::cluster.global.tile."
                       "mbarrier::complete_tx::bytes.multicast::cluster%s [%%0], [%%1, {%%2, "
                       "%%3}], [%%4], %%5;\"\n"
                       "                 :: \"r\"(dst), \"l\"(tmap), \"r\"(c0), \"r\"(c1), "
                       "\"r\"(%s), \"h\"(mask) : \"memory\");\n"
                       "}\n\n",
                       pair ? "each destination's pair leader" : "each destination's barrier", cta,
                       bar);
    jit__sb_printf(
        g->sb,
        "/* A scale-factor box: [256 x u16 = one 512-byte chunk][chunks][row blocks]. */\n" FN
        "void jg_tma_load_3d(u32 dst, const void *tmap, int c0, int c1, int c2, u32 bar) "
        "{\n"
        "    asm volatile(\"cp.async.bulk.tensor.3d.%s.global.tile.mbarrier::"
        "complete_tx::bytes%s [%%0], [%%1, {%%2, %%3, %%4}], [%%5];\"\n"
        "                 :: \"r\"(dst), \"l\"(tmap), \"r\"(c0), \"r\"(c1), \"r\"(c2), "
        "\"r\"(%s) : \"memory\");\n"
        "}\n\n",
        dst, cta, bar);
    put(g, "/* Store a box from shared memory; the tensor map clips rows and columns past the end. "
           "*/\n" FN "void jg_tma_store_2d(const void *tmap, u32 src, int c0, int c1) {\n"
           "    asm volatile(\"cp.async.bulk.tensor.2d.global.shared::cta.tile.bulk_group [%0, "
           "{%1, %2}], [%3];\"\n"
           "                 :: \"l\"(tmap), \"r\"(c0), \"r\"(c1), \"r\"(src) : \"memory\");\n"
           "}\n\n");
    put(g, FN "void jg_bulk_commit() {\n"
              "    asm volatile(\"cp.async.bulk.commit_group;\" ::: \"memory\");\n"
              "}\n\n");
    jit__sb_printf(g->sb,
                   "/* Wait until at most C_STAGES - 1 stores still read shared memory, so the\n"
                   " * oldest C stage may be rewritten. */\n" FN
                   "void jg_bulk_wait_read_slack() {\n"
                   "    asm volatile(\"cp.async.bulk.wait_group.read %d;\" ::: \"memory\");\n"
                   "}\n\n",
                   g->tc->smem.c_stages - 1);
    put(g, FN "void jg_bulk_wait_all() {\n"
              "    asm volatile(\"cp.async.bulk.wait_group 0;\" ::: \"memory\");\n"
              "}\n\n");
    put(g, "/* Orders this thread's generic-proxy shared-memory writes before async-proxy reads. "
           "*/\n" FN "void jg_fence_proxy_async() {\n"
           "    asm volatile(\"fence.proxy.async.shared::cta;\" ::: \"memory\");\n"
           "}\n\n");
    put(g, FN "void jg_st_shared_v4(u32 addr, u32 a, u32 b, u32 c, u32 d) {\n"
              "    asm volatile(\"st.shared.v4.b32 [%0], {%1, %2, %3, %4};\" :: \"r\"(addr), "
              "\"r\"(a), \"r\"(b), \"r\"(c), \"r\"(d) : \"memory\");\n"
              "}\n\n");
}

/* ---- tcgen05 ----------------------------------------------------------------------------- */

static void emit_tmem_alloc(const jit__tcg_t *g) {
    int cg = g->tc->cta_group;
    int cols = g->tc->tmem.allocated_columns;
    const char *ex = g->tmem_exclusive ? ".exclusive" : "";
    jit__sb_printf(
        g->sb,
        "/* Warp-wide: allocate the plan's %d TMEM columns and write the base address to\n"
        " * shared memory. With cta_group::2 one warp of each CTA of the pair allocates. */\n" FN
        "void jg_tmem_alloc(u32 dst_smem) {\n"
        "    asm volatile(\"tcgen05.alloc.cta_group::%d%s.sync.aligned.shared::cta.b32 "
        "[%%0], %d;\" :: \"r\"(dst_smem) : \"memory\");\n"
        "}\n\n",
        cols, cg, ex, cols);
    jit__sb_printf(
        g->sb,
        FN "void jg_tmem_relinquish() {\n"
           "    asm volatile(\"tcgen05.relinquish_alloc_permit.cta_group::%d.sync.aligned;\" "
           "::: \"memory\");\n"
           "}\n\n",
        cg);
    jit__sb_printf(g->sb,
                   FN
                   "void jg_tmem_dealloc(u32 taddr) {\n"
                   "    asm volatile(\"tcgen05.dealloc.cta_group::%d%s.sync.aligned.b32 %%0, %d;\" "
                   ":: \"r\"(taddr) : \"memory\");\n"
                   "}\n\n",
                   cg, ex, cols);
}

static void emit_utccp(const jit__tcg_t *g) {
    jit__sb_printf(
        g->sb,
        "/* One 512-byte scale-factor chunk (32 lines x 16 bytes) from SMEM to 4 TMEM columns,\n"
        " * replicated into all four 32-lane quarters as the block-scaled MMA expects. Pipelined\n"
        " * with the following tcgen05.mma of the same cta_group: no fence in between. */\n" FN
        "void jg_utccp(u32 taddr, u64 sdesc) {\n"
        "    asm volatile(\"tcgen05.cp.cta_group::%d.32x128b.warpx4 [%%0], %%1;\" :: \"r\"(taddr), "
        "\"l\"(sdesc) : \"memory\");\n"
        "}\n\n",
        g->tc->cta_group);
}

static void emit_one_mma(const jit__tcg_t *g, const char *name, const char *collector,
                         const char *why) {
    jit__sb_printf(
        g->sb,
        "/* %s */\n" FN "void %s(u32 d_tmem, u64 a_desc, u64 b_desc, u32 idesc, u32 sfa_tmem, "
        "u32 sfb_tmem, u32 accumulate) {\n"
        "    asm volatile(\"{\\n\\t.reg .pred P;\\n\\tsetp.ne.u32 P, %%6, 0;\\n\\t\"\n"
        "                 \"tcgen05.mma.cta_group::%d.kind::%s.block_scale%s%s [%%0], %%1, %%2, "
        "%%3, "
        "[%%4], [%%5], P;\\n\\t}\"\n"
        "                 :: \"r\"(d_tmem), \"l\"(a_desc), \"l\"(b_desc), \"r\"(idesc), "
        "\"r\"(sfa_tmem), \"r\"(sfb_tmem), \"r\"(accumulate) : \"memory\");\n"
        "}\n\n",
        why, name, g->tc->cta_group, jit__tc_kind_name(g->tc->kind), g->tc->kind_suffix, collector);
}

static void emit_mma(const jit__tcg_t *g) {
    if (!g->tc->breuse) {
        emit_one_mma(g, "jg_mma", "",
                     "D (+)= A x B with per-block scales read from TMEM; issued by one thread.");
        return;
    }
    if (g->collector_b) {
        emit_one_mma(g, "jg_mma_keep", ".collector::b::fill",
                     "B-reuse, first M-half: read B from SMEM and keep it in the collector.");
        emit_one_mma(g, "jg_mma_reuse", ".collector::b::lastuse",
                     "B-reuse, second M-half: read B from the collector (last use frees it).");
    } else {
        emit_one_mma(g, "jg_mma_keep", "",
                     "B-reuse without collector hints (fallback target, PTX < 9.4): B is read\n"
                     " * from SMEM again, which gives the same result.");
        emit_one_mma(g, "jg_mma_reuse", "", "See jg_mma_keep.");
    }
}

static void emit_commit(const jit__tcg_t *g) {
    int cg = g->tc->cta_group;
    if (cg == 1) /* with cta_group::2 every commit multicasts */
        jit__sb_printf(
            g->sb,
            "/* Arrive once on `bar` when every earlier tcgen05 op of this thread is done. */\n" FN
            "void jg_mma_commit(u32 bar) {\n"
            "    asm volatile(\"tcgen05.commit.cta_group::%d.mbarrier::arrive::one.shared::"
            "cluster.b64 [%%0];\" :: \"r\"(bar) : \"memory\");\n"
            "}\n\n",
            cg);
    jit__sb_printf(
        g->sb,
        "/* The same, arriving on the barrier at this offset in every CTA of `mask`. */\n" FN
        "void jg_mma_commit_mc(u32 bar, u16 mask) {\n"
        "    asm volatile(\"tcgen05.commit.cta_group::%d.mbarrier::arrive::one.shared::"
        "cluster.multicast::cluster.b64 [%%0], %%1;\" :: \"r\"(bar), \"h\"(mask) : "
        "\"memory\");\n"
        "}\n\n",
        cg);
    put(g, FN "void jg_tc_fence_before() {\n"
              "    asm volatile(\"tcgen05.fence::before_thread_sync;\" ::: \"memory\");\n"
              "}\n" FN "void jg_tc_fence_after() {\n"
              "    asm volatile(\"tcgen05.fence::after_thread_sync;\" ::: \"memory\");\n"
              "}\n\n");
}

static void emit_tmem_ld(const jit__tcg_t *g) {
    put(g, "/* 16 consecutive accumulator columns of this thread's TMEM lane (lane = row). The\n"
           " * registers are valid only after jg_tmem_wait_ld. */\n" FN
           "void jg_tmem_ld16(u32 taddr, u32 (&r)[16]) {\n"
           "    asm volatile(\"tcgen05.ld.sync.aligned.32x32b.x16.b32 {%0, %1, %2, %3, %4, %5, %6, "
           "%7, %8, %9, %10, %11, %12, %13, %14, %15}, [%16];\"\n"
           "                 : \"=r\"(r[0]), \"=r\"(r[1]), \"=r\"(r[2]), \"=r\"(r[3]), "
           "\"=r\"(r[4]), \"=r\"(r[5]), \"=r\"(r[6]), \"=r\"(r[7]),\n"
           "                   \"=r\"(r[8]), \"=r\"(r[9]), \"=r\"(r[10]), \"=r\"(r[11]), "
           "\"=r\"(r[12]), \"=r\"(r[13]), \"=r\"(r[14]), \"=r\"(r[15])\n"
           "                 : \"r\"(taddr) : \"memory\");\n"
           "}\n\n");
    put(g, FN "void jg_tmem_wait_ld() {\n"
              "    asm volatile(\"tcgen05.wait::ld.sync.aligned;\" ::: \"memory\");\n"
              "}\n\n");
}

/* ---- global memory, conversions ---------------------------------------------------------- */

static void emit_global(const jit__tcg_t *g) {
    put(g, "/* Work counter and registration counter: relaxed, the value is all that is shared. "
           "*/\n" FN "u32 jg_atom_add_relaxed(u32 *p, u32 v) {\n"
           "    u32 old;\n"
           "    asm volatile(\"atom.relaxed.gpu.global.add.u32 %0, [%1], %2;\" : \"=r\"(old) : "
           "\"l\"(p), \"r\"(v) : \"memory\");\n"
           "    return old;\n"
           "}\n\n");
    put(g, "/* Exit counter: the last CTA out must see every other CTA's workspace use. */\n" FN
           "u32 jg_atom_add_acq_rel(u32 *p, u32 v) {\n"
           "    u32 old;\n"
           "    asm volatile(\"atom.acq_rel.gpu.global.add.u32 %0, [%1], %2;\" : \"=r\"(old) : "
           "\"l\"(p), \"r\"(v) : \"memory\");\n"
           "    return old;\n"
           "}\n\n");
    if (g->has_fallback) {
        put(g, "/* Token slots: the work ID travels inside the 64-bit token, so relaxed is enough. "
               "*/\n" FN "u64 jg_ld_relaxed_u64(const u64 *p) {\n"
               "    u64 v;\n"
               "    asm volatile(\"ld.relaxed.gpu.global.b64 %0, [%1];\" : \"=l\"(v) : \"l\"(p) : "
               "\"memory\");\n"
               "    return v;\n"
               "}\n" FN "void jg_st_relaxed_u64(u64 *p, u64 v) {\n"
               "    asm volatile(\"st.relaxed.gpu.global.b64 [%0], %1;\" :: \"l\"(p), \"l\"(v) : "
               "\"memory\");\n"
               "}\n\n");
        put(g, FN "void jg_nanosleep(u32 ns) {\n"
                  "    asm volatile(\"nanosleep.u32 %0;\" :: \"r\"(ns));\n"
                  "}\n\n");
    }
    if (g->out_bytes == 2)
        put(g, "/* Two floats to packed BF16, round to nearest even; `lo` in the low half. */\n" FN
               "u32 jg_cvt_bf16x2(float lo, float hi) {\n"
               "    u32 r;\n"
               "    asm(\"cvt.rn.bf16x2.f32 %0, %1, %2;\" : \"=r\"(r) : \"f\"(hi), \"f\"(lo));\n"
               "    return r;\n"
               "}\n\n");
    put(g, FN "float jg_as_f32(u32 x) {\n"
              "    float r;\n"
              "    asm(\"mov.b32 %0, %1;\" : \"=f\"(r) : \"r\"(x));\n"
              "    return r;\n"
              "}\n\n");
    if (g->plan->spec.epilogue == JIT_EPILOGUE_LINEAR_SWIGLU)
        put(g, FN "float jg_ex2(float x) {\n"
                  "    float r;\n"
                  "    asm(\"ex2.approx.ftz.f32 %0, %1;\" : \"=f\"(r) : \"f\"(x));\n"
                  "    return r;\n"
                  "}\n\n");
}

void jit__tcg_emit_ptx(const jit__tcg_t *g) {
    put(g, "/* ---- inline-PTX wrappers, one per instruction ---------------------------------- "
           "*/\n\n");
    emit_basics(g);
    emit_mbarrier(g);
    emit_tma(g);
    emit_tmem_alloc(g);
    emit_utccp(g);
    emit_mma(g);
    emit_commit(g);
    emit_tmem_ld(g);
    emit_global(g);
}
