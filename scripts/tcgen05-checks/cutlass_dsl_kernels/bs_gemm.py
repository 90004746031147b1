"""A small block-scaled GEMM mainloop written with NVIDIA's CUTLASS DSL (nvidia-cutlass-dsl 4.8.1).

It exists only to see what NVIDIA's code generator emits for the tcgen05 block-scaled kinds
jitgemm plans; it is compiled, never run. One output tile per CTA (or per CTA pair), a
two-stage TMA -> tcgen05.cp -> tcgen05.mma loop, then TMEM is freed. There is no epilogue: the
comparison is about the mainloop instructions (MMA, descriptors, scale copies, TMEM
allocation, TMA forms), which do not depend on one.

Warp 0 loads A, B, SFA, SFB with TMA; warp 1 allocates TMEM, copies the scales to TMEM and
issues the MMAs. Not handled, since nothing runs: the SFB column shift of odd N 64/192 tiles
and M/N/K remainders. Run through scripts/tcgen05-checks/cutlass-dsl-compare.py; DEBUG = True
prints the scale layouts at trace time.
"""
import cutlass
import cutlass.cute as cute
import cutlass.pipeline as pipeline
import cutlass.utils as utils
import cutlass.utils.blackwell_helpers as bw
import cutlass.utils.blockscaled_layout as bsl
from cutlass.cute.nvgpu import cpasync, tcgen05

DTYPES = {
    "e2m1": cutlass.Float4E2M1FN,
    "e4m3": cutlass.Float8E4M3FN,
    "ue4m3": cutlass.Float8E4M3FN,
    "ue8m0": cutlass.Float8E8M0FNU,
    "ue5m3": cutlass.FloatNV8E5M3FNU,
}

STAGES = 2
DEBUG = False
K_BLOCKS_PER_TILE = 4  # MMAs per K tile; the compare script sets it from jitgemm's plan


class BsGemm:
    def __init__(self, arch, a, b, sf, sf_vec, tile_n, two_cta, tmem_cols=0, halves=1):
        self.arch = arch  # "sm_100" or "sm_107"
        self.tmem_cols = tmem_cols  # 0: the arch's maximum
        self.a_dtype = DTYPES[a]
        self.b_dtype = DTYPES[b]
        self.sf_dtype = DTYPES[sf]
        self.sf_vec = sf_vec
        self.two_cta = two_cta
        self.cta_group = tcgen05.CtaGroup.TWO if two_cta else tcgen05.CtaGroup.ONE
        self.mma_mn = (256 if two_cta else 128, tile_n)
        # halves 2: B reuse, two M halves of A per B tile; the first MMA of each K block keeps
        # B in the collector (with_bkeep), the second consumes it (with_breuse). sm_107 only.
        self.halves = halves
        self.cluster_mn = (2, 1) if two_cta else (1, 1)
        self.tma_warp = 0
        self.mma_warp = 1
        self.threads = 64

    def _tiled_mma(self, cta_group, mn):
        km = tcgen05.OperandMajorMode.K
        if self.arch == "sm_107":
            import cutlass.utils.rubin_helpers as rubin
            fp4 = self.a_dtype == self.b_dtype == cutlass.Float4E2M1FN
            inst_k = 128 if fp4 else 64  # kind::mxf4nvf4 has K 128 on sm_107, mxf8f6f4 K 64
            return rubin.make_blockscaled_trivial_tiled_mma(
                self.a_dtype, self.b_dtype, km, km, self.sf_dtype, self.sf_vec,
                cta_group, (*mn, inst_k))
        return bw.make_blockscaled_trivial_tiled_mma(
            self.a_dtype, km, km, self.sf_dtype, self.sf_vec, cta_group, mn)

    @cute.jit
    def __call__(self, a_ptr: cute.Pointer, b_ptr: cute.Pointer, sfa_ptr: cute.Pointer,
                 sfb_ptr: cute.Pointer, m: cutlass.Constexpr, n: cutlass.Constexpr,
                 k: cutlass.Constexpr):
        tiled_mma = self._tiled_mma(self.cta_group, self.mma_mn)
        sfb_mn = (self.mma_mn[0] // (2 if self.two_cta else 1), cute.round_up(self.mma_mn[1], 128))
        tiled_mma_sfb = self._tiled_mma(tcgen05.CtaGroup.ONE, sfb_mn)
        inst_k = cute.size(tiled_mma.shape_mnk, mode=[2])
        self.mma_tiler = (self.mma_mn[0] * self.halves, self.mma_mn[1], inst_k * K_BLOCKS_PER_TILE)
        self.mma_tiler_sfb = (*sfb_mn, inst_k * K_BLOCKS_PER_TILE)
        self.cluster_vmnk = cute.tiled_divide(cute.make_layout((*self.cluster_mn, 1)),
                                              (tiled_mma.thr_id.shape,))
        self.cluster_sfb_vmnk = cute.tiled_divide(cute.make_layout((*self.cluster_mn, 1)),
                                                  (tiled_mma_sfb.thr_id.shape,))

        a_sl = bw.make_smem_layout_a(tiled_mma, self.mma_tiler, self.a_dtype, STAGES)
        b_sl = bw.make_smem_layout_b(tiled_mma, self.mma_tiler, self.b_dtype, STAGES)
        sfa_sl = bsl.make_smem_layout_sfa(tiled_mma, self.mma_tiler, self.sf_vec, STAGES)
        sfb_sl = bsl.make_smem_layout_sfb(tiled_mma, self.mma_tiler, self.sf_vec, STAGES)

        a = cute.make_tensor(a_ptr, cute.make_ordered_layout((m, k, 1), order=(1, 0, 2)))
        b = cute.make_tensor(b_ptr, cute.make_ordered_layout((n, k, 1), order=(1, 0, 2)))
        sfa = cute.make_tensor(sfa_ptr, bsl.tile_atom_to_shape_SF(a.shape, self.sf_vec))
        sfb = cute.make_tensor(sfb_ptr, bsl.tile_atom_to_shape_SF(b.shape, self.sf_vec))

        a_op = bw.cluster_shape_to_tma_atom_A(self.cluster_mn, tiled_mma.thr_id)
        b_op = bw.cluster_shape_to_tma_atom_B(self.cluster_mn, tiled_mma.thr_id)
        sfb_op = bw.cluster_shape_to_tma_atom_SFB(self.cluster_mn, tiled_mma.thr_id)
        one = (None, None, None, 0)
        tma_a, g_a = cute.nvgpu.make_tiled_tma_atom_A(
            a_op, a, cute.slice_(a_sl, one), self.mma_tiler, tiled_mma, self.cluster_vmnk.shape)
        tma_b, g_b = cute.nvgpu.make_tiled_tma_atom_B(
            b_op, b, cute.slice_(b_sl, one), self.mma_tiler, tiled_mma, self.cluster_vmnk.shape)
        tma_sfa, g_sfa = cute.nvgpu.make_tiled_tma_atom_A(
            a_op, sfa, cute.slice_(sfa_sl, one), self.mma_tiler, tiled_mma,
            self.cluster_vmnk.shape, internal_type=cutlass.Int16)
        tma_sfb, g_sfb = cute.nvgpu.make_tiled_tma_atom_B(
            sfb_op, sfb, cute.slice_(sfb_sl, one), self.mma_tiler_sfb, tiled_mma_sfb,
            self.cluster_sfb_vmnk.shape, internal_type=cutlass.Int16)
        per_cta = (cute.size_in_bytes(self.a_dtype, cute.slice_(a_sl, one))
                   + cute.size_in_bytes(self.b_dtype, cute.slice_(b_sl, one))
                   + cute.size_in_bytes(self.sf_dtype, cute.slice_(sfa_sl, one))
                   + cute.size_in_bytes(self.sf_dtype, cute.slice_(sfb_sl, one)))
        self.tx_bytes = per_cta * cute.size(tiled_mma.thr_id.shape)

        @cute.struct
        class Smem:
            full: cute.struct.MemRange[cutlass.Int64, STAGES]
            empty: cute.struct.MemRange[cutlass.Int64, STAGES]
            acc: cute.struct.MemRange[cutlass.Int64, 1]
            dealloc: cutlass.Int64
            tmem_base: cutlass.Int32
            sA: cute.struct.Align[cute.struct.MemRange[self.a_dtype, cute.cosize(a_sl.outer)], 1024]
            sB: cute.struct.Align[cute.struct.MemRange[self.b_dtype, cute.cosize(b_sl.outer)], 1024]
            sSFA: cute.struct.Align[cute.struct.MemRange[self.sf_dtype, cute.cosize(sfa_sl)], 1024]
            sSFB: cute.struct.Align[cute.struct.MemRange[self.sf_dtype, cute.cosize(sfb_sl)], 1024]

        self.smem_t = Smem
        grid = (m // self.mma_tiler[0] * cute.size(tiled_mma.thr_id.shape), n // self.mma_mn[1], 1)
        self.kernel(tiled_mma, tiled_mma_sfb, tma_a, g_a, tma_b, g_b, tma_sfa, g_sfa,
                    tma_sfb, g_sfb, a_sl, b_sl, sfa_sl, sfb_sl, self.cluster_vmnk,
                    self.cluster_sfb_vmnk).launch(
            grid=grid, block=[self.threads, 1, 1], cluster=(*self.cluster_mn, 1))

    @cute.kernel
    def kernel(self, tiled_mma: cute.TiledMma, tiled_mma_sfb: cute.TiledMma,
               tma_a: cute.CopyAtom, g_a: cute.Tensor, tma_b: cute.CopyAtom, g_b: cute.Tensor,
               tma_sfa: cute.CopyAtom, g_sfa: cute.Tensor, tma_sfb: cute.CopyAtom,
               g_sfb: cute.Tensor, a_sl: cute.ComposedLayout, b_sl: cute.ComposedLayout,
               sfa_sl: cute.Layout, sfb_sl: cute.Layout, cluster_vmnk: cute.Layout,
               cluster_sfb_vmnk: cute.Layout):
        warp = cute.arch.make_warp_uniform(cute.arch.warp_idx())
        two = cute.size(tiled_mma.thr_id.shape) == 2
        bidx, bidy, _ = cute.arch.block_idx()
        v = bidx % cute.size(tiled_mma.thr_id.shape)
        leader = v == 0
        rank = cute.arch.make_warp_uniform(cute.arch.block_idx_in_cluster())
        coord = cluster_vmnk.get_flat_coord(rank)
        coord_sfb = cluster_sfb_vmnk.get_flat_coord(rank)

        st = utils.SmemAllocator().allocate(self.smem_t)
        ab = pipeline.PipelineTmaUmma.create(
            barrier_storage=st.full.data_ptr(), num_stages=STAGES,
            producer_group=pipeline.CooperativeGroup(pipeline.Agent.Thread),
            consumer_group=pipeline.CooperativeGroup(pipeline.Agent.Thread, 1),
            tx_count=self.tx_bytes, cta_layout_vmnk=cluster_vmnk, defer_sync=True)
        alloc_bar = pipeline.NamedBarrier(barrier_id=1, num_threads=32)
        tmem = utils.TmemAllocator(st.tmem_base, barrier_for_retrieve=alloc_bar,
                                   allocator_warp_id=self.mma_warp, is_two_cta=two,
                                   two_cta_tmem_dealloc_mbar_ptr=st.dealloc, arch=self.arch)
        if warp == self.mma_warp:
            with cute.arch.elect_one():
                cute.arch.mbarrier_init(st.acc.data_ptr(), 1)
        pipeline.pipeline_init_arrive(cluster_shape_mn=self.cluster_mn, is_relaxed=True)

        sA = st.sA.get_tensor(a_sl.outer, swizzle=a_sl.inner)
        sB = st.sB.get_tensor(b_sl.outer, swizzle=b_sl.inner)
        sSFA = st.sSFA.get_tensor(sfa_sl)
        sSFB = st.sSFB.get_tensor(sfb_sl)

        gA = cute.local_tile(g_a, cute.slice_(self.mma_tiler, (None, 0, None)), (None, None, None))
        gB = cute.local_tile(g_b, cute.slice_(self.mma_tiler, (0, None, None)), (None, None, None))
        gSFA = cute.local_tile(g_sfa, cute.slice_(self.mma_tiler, (None, 0, None)), (None, None, None))
        gSFB = cute.local_tile(g_sfb, cute.slice_(self.mma_tiler_sfb, (0, None, None)), (None, None, None))
        k_tiles = cute.size(gA, mode=[3])
        thr = tiled_mma.get_slice(v)
        thr_sfb = tiled_mma_sfb.get_slice(v)
        a_cta = cute.make_layout(cute.slice_(cluster_vmnk, (0, 0, None, 0)).shape)
        b_cta = cute.make_layout(cute.slice_(cluster_vmnk, (0, None, 0, 0)).shape)
        sfb_cta = cute.make_layout(cute.slice_(cluster_sfb_vmnk, (0, None, 0, 0)).shape)
        tAsA, tAgA = cpasync.tma_partition(tma_a, coord[2], a_cta, cute.group_modes(sA, 0, 3),
                                           cute.group_modes(thr.partition_A(gA), 0, 3))
        tBsB, tBgB = cpasync.tma_partition(tma_b, coord[1], b_cta, cute.group_modes(sB, 0, 3),
                                           cute.group_modes(thr.partition_B(gB), 0, 3))
        tAsF, tAgF = cpasync.tma_partition(tma_sfa, coord[2], a_cta, cute.group_modes(sSFA, 0, 3),
                                           cute.group_modes(thr.partition_A(gSFA), 0, 3))
        tBsF, tBgF = cpasync.tma_partition(tma_sfb, coord_sfb[1], sfb_cta,
                                           cute.group_modes(sSFB, 0, 3),
                                           cute.group_modes(thr_sfb.partition_B(gSFB), 0, 3))
        tAsF = cute.filter_zeros(tAsF)
        tAgF = cute.filter_zeros(tAgF)
        tBsF = cute.filter_zeros(tBsF)
        tBgF = cute.filter_zeros(tBgF)
        mask_a = None
        mask_b = None
        mask_sfb = None
        if cutlass.const_expr(self.two_cta):
            mask_a = cpasync.create_tma_multicast_mask(cluster_vmnk, coord, mcast_mode=2)
            mask_b = cpasync.create_tma_multicast_mask(cluster_vmnk, coord, mcast_mode=1)
            mask_sfb = cpasync.create_tma_multicast_mask(cluster_sfb_vmnk, coord_sfb, mcast_mode=1)

        tCrA = tiled_mma.make_fragment_A(sA)
        tCrB = tiled_mma.make_fragment_B(sB)
        acc_shape = tiled_mma.partition_shape_C(self.mma_tiler[:2])
        acc_fake = tiled_mma.make_fragment_C(acc_shape)
        pipeline.pipeline_init_wait(cluster_shape_mn=self.cluster_mn)
        mt = (bidx // cute.size(tiled_mma.thr_id.shape), bidy, 0)

        if warp == self.tma_warp:
            ps = pipeline.make_pipeline_state(pipeline.PipelineUserType.Producer, STAGES)
            for kt in cutlass.range(0, k_tiles, 1, unroll=1):
                ab.producer_acquire(ps)
                bar = ab.producer_get_barrier(ps)
                cute.copy(tma_a, tAgA[(None, mt[0], ps.count, 0)], tAsA[(None, ps.index)],
                          tma_bar_ptr=bar, mcast_mask=mask_a)
                cute.copy(tma_b, tBgB[(None, mt[1], ps.count, 0)], tBsB[(None, ps.index)],
                          tma_bar_ptr=bar, mcast_mask=mask_b)
                cute.copy(tma_sfa, tAgF[(None, mt[0], ps.count, 0)], tAsF[(None, ps.index)],
                          tma_bar_ptr=bar, mcast_mask=mask_a)
                cute.copy(tma_sfb, tBgF[(None, mt[1], ps.count, 0)], tBsF[(None, ps.index)],
                          tma_bar_ptr=bar, mcast_mask=mask_sfb)
                ps.advance()
            ab.producer_tail(ps)

        if warp == self.mma_warp:
            cols = self.tmem_cols or cute.arch.get_max_tmem_alloc_cols(self.arch)
            tmem.allocate(cols)
            tmem.wait_for_alloc()
            acc_ptr = tmem.retrieve_ptr(cutlass.Float32)
            acc = cute.make_tensor(acc_ptr, acc_fake.layout)
            n_acc = self.mma_tiler[1] * self.halves
            # 4 columns per 4-scale chunk of 128 rows; NVFP4 at MMA K 128 takes 2 chunks per MMA.
            chunks = max(1, cute.size(tiled_mma.shape_mnk, mode=[2]) // self.sf_vec // 4)
            cta_m = self.mma_tiler[0] // cute.size(tiled_mma.thr_id.shape)
            n_sfa = 4 * (cta_m // 128) * K_BLOCKS_PER_TILE * chunks
            tSFA = cute.make_tensor(
                cute.recast_ptr(acc_ptr + n_acc, dtype=self.sf_dtype),
                bsl.make_tmem_layout_sfa(tiled_mma, self.mma_tiler, self.sf_vec,
                                         cute.slice_(sfa_sl, one_stage())))
            tSFB = cute.make_tensor(
                cute.recast_ptr(acc_ptr + n_acc + n_sfa, dtype=self.sf_dtype),
                bsl.make_tmem_layout_sfb(tiled_mma, self.mma_tiler, self.sf_vec,
                                         cute.slice_(sfb_sl, one_stage())))
            cp_a, sF_a, tF_a = self.s2t(sSFA, tSFA)
            cp_b, sF_b, tF_b = self.s2t(sSFB, tSFB)
            cs = pipeline.make_pipeline_state(pipeline.PipelineUserType.Consumer, STAGES)
            # Plain locals, not a list: the tracer threads field updates (ACCUMULATE, SFA, SFB)
            # through local variables only.
            mma0 = tiled_mma.with_bkeep() if self.halves == 2 else tiled_mma
            mma1 = tiled_mma.with_breuse() if self.halves == 2 else None
            mma0.set(tcgen05.Field.ACCUMULATE, False)
            if cutlass.const_expr(self.halves == 2):
                mma1.set(tcgen05.Field.ACCUMULATE, False)
            for kt in range(k_tiles):
                if leader:
                    ab.consumer_wait(cs)
                    cute.copy(cp_a, sF_a[(None, None, None, None, cs.index)], tF_a)
                    cute.copy(cp_b, sF_b[(None, None, None, None, cs.index)], tF_b)
                    for kb in cutlass.range(cute.size(tCrA, mode=[2]), unroll_full=True):
                        mma0.set(tcgen05.Field.SFA, tSFA[(None, 0, kb)].iterator)
                        mma0.set(tcgen05.Field.SFB, tSFB[(None, None, kb)].iterator)
                        cute.gemm(mma0, acc[(None, 0, 0)], tCrA[(None, 0, kb, cs.index)],
                                  tCrB[(None, 0, kb, cs.index)], acc[(None, 0, 0)])
                        if cutlass.const_expr(self.halves == 2):
                            mma1.set(tcgen05.Field.SFA, tSFA[(None, 1, kb)].iterator)
                            mma1.set(tcgen05.Field.SFB, tSFB[(None, None, kb)].iterator)
                            cute.gemm(mma1, acc[(None, 1, 0)], tCrA[(None, 1, kb, cs.index)],
                                      tCrB[(None, 0, kb, cs.index)], acc[(None, 1, 0)])
                            mma1.set(tcgen05.Field.ACCUMULATE, True)
                        mma0.set(tcgen05.Field.ACCUMULATE, True)
                    ab.consumer_release(cs)
                cs.advance()
            if leader:
                with cute.arch.elect_one():
                    if cutlass.const_expr(self.two_cta):
                        # arrive on the accumulator barrier of both CTAs of the pair
                        tcgen05.commit(st.acc.data_ptr(), cutlass.Int16(3), self.cta_group)
                    else:
                        tcgen05.commit(st.acc.data_ptr())
            cute.arch.mbarrier_wait(st.acc.data_ptr(), 0)
            tmem.relinquish_alloc_permit()
            tmem.free(acc_ptr)

    def s2t(self, sSF, tSF):
        s_c = split_chunks(cute.filter_zeros(sSF))
        t_c = split_chunks(cute.filter_zeros(tSF))
        atom = cute.make_copy_atom(tcgen05.Cp4x32x128bOp(self.cta_group), self.sf_dtype)
        tc = tcgen05.make_s2t_copy(atom, t_c)
        thr = tc.get_slice(0)
        src = tcgen05.get_s2t_smem_desc_tensor(tc, thr.partition_S(s_c))
        dst = thr.partition_D(t_c)
        if DEBUG:
            print("sSF", sSF.layout, "\ntSF", tSF.layout, "\ns_c", s_c.layout, "\nt_c", t_c.layout,
                  "\nsrc", src.layout, "\ndst", dst.layout)
        return tc, src, dst


def split_chunks(t):
    """View a scale tensor whose per-MMA K atom holds several 4-scale chunks, ((.., (1, (4, c))),
    MN, KB[, STAGE]), as one chunk per K step, ((.., (1, 4)), MN, KB*c[, STAGE]).

    A 32x128b scale copy moves one chunk (128 rows x 4 scales); NVFP4 at MMA K 128 (sm_107)
    needs 8 scales per row and MMA, i.e. two chunks, which the DSL's s2t partitioning does not
    split by itself. The chunks of one MMA must sit right below the next MMA's (checked)."""
    shp, std = t.layout.shape, t.layout.stride
    katom_s, katom_d = shp[0][1], std[0][1]
    if not isinstance(katom_s[1], tuple):
        return t
    (four, c), (one_d, chunk_d) = katom_s[1], katom_d[1]
    assert std[2] == c * chunk_d, (std, "chunks of one MMA are not contiguous")
    new_shape = ((shp[0][0], (katom_s[0], four)), shp[1], shp[2] * c) + tuple(shp[3:])
    new_stride = ((std[0][0], (katom_d[0], one_d)), std[1], chunk_d) + tuple(std[3:])
    return cute.make_tensor(t.iterator, cute.make_layout(new_shape, stride=new_stride))


def one_stage():
    return (None, None, None, 0)


def compile_kernel(arch, a, b, sf, sf_vec, tile_n, two_cta, tmem_cols=0, halves=1, m=1024, n=768,
                   k=2048):
    """Compile one kernel; PTX/cubin land where CUTE_DSL_DUMP_DIR points."""
    from cutlass.cute.runtime import make_ptr
    g = BsGemm(arch, a, b, sf, sf_vec, tile_n, two_cta, tmem_cols, halves)
    ptrs = [make_ptr(g.a_dtype, 1 << 20, cute.AddressSpace.gmem, assumed_align=32),
            make_ptr(g.b_dtype, 1 << 20, cute.AddressSpace.gmem, assumed_align=32),
            make_ptr(g.sf_dtype, 1 << 20, cute.AddressSpace.gmem, assumed_align=16),
            make_ptr(g.sf_dtype, 1 << 20, cute.AddressSpace.gmem, assumed_align=16)]
    return cute.compile(g, *ptrs, m, n, k)
