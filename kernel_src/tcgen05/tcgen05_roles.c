/*
 * The warp roles of the persistent tcgen05 kernel, emitted as device functions:
 *
 *   jg_cta_make        the CTA's place in its cluster (preferred or fallback shape), masks
 *   jg_work_get/...    the work-ID ring every role reads, one slot per output tile
 *   jg_role_scheduler  claims work IDs from the global counter (or, in a fallback cluster,
 *                      through its group's 64-bit token) and publishes them to the cluster
 *   jg_role_producer   the single TMA warp: A, B, SFA and SFB of every K tile
 *   jg_role_mma        one thread of the pair leader: tcgen05.cp of the scales, tcgen05.mma
 *   jg_role_epilogue   four warps: tcgen05.ld, alpha, epilogue, TMA store
 *
 * The plan gives six warps (four epilogue, MMA, TMA) and no spare one, so the scheduler runs on
 * the producer warp of the cluster's first CTA, one step before that warp loads each tile: the
 * producer is the first role to need a tile, and the ring's depth bounds how far it may run
 * ahead of the slowest reader (the epilogue).
 *
 * Cross-CTA rules. Every CTA of a cluster processes the same tile sequence, so the SMEM ring
 * positions agree across the cluster. A stage of CTA c may be written by any producer of the
 * cluster (multicast), so every MMA issuer commits each consumed stage to every CTA of the
 * cluster and each CTA's empty barrier counts one arrival per issuer (runtime counts and masks
 * from %cluster_nctaid, so the preferred and the fallback shape share the code). With
 * cta_group::2 the leader's full barrier receives both CTAs' bytes and its accumulator-empty
 * barrier both CTAs' epilogue warps. Every role waits, before it exits, for the arrivals still
 * owed to its barriers by other CTAs, so no remote arrival lands in an exited CTA.
 */
#include "tcgen05_gen.h"

const char *const jit__tcg_role_names[] = {
    "jg_cta_make",      "jg_work_get", "jg_work_release",  "jg_tile_coords",    "jg_role_scheduler",
    "jg_role_producer", "jg_role_mma", "jg_role_epilogue", "jg_workspace_exit", NULL};

static void put(const jit__tcg_t *g, const char *text) {
    jit__sb_append(g->sb, text);
}

static void emit_geometry(const jit__tcg_t *g) {
    const jit__tc_plan_t *tc = g->tc;
    put(g, "/* ---- the CTA in its cluster ------------------------------------------------------- "
           "*/\n\n"
           "struct jg_cta_t {\n"
           "    unsigned char *base; /* dynamic shared memory */\n"
           "    u32 smem;            /* its shared::cta address */\n"
           "    u32 rank, ncta, cm, cn;\n"
           "    u32 fallback;        /* this cluster runs the fallback shape */\n"
           "    u32 pair_pos;        /* cm % CTA_GROUP */\n"
           "    u32 mma_issuer;      /* the pair leader issues the MMAs */\n"
           "    u16 cluster_mask, pair_mask, a_mask, b_mask;\n"
           "    u32 a_slice, a_slice_rows, b_slice, b_slice_rows;\n"
           "    u32 work_empty0;     /* cluster address of work_empty[0] in rank 0 */\n"
           "    u32 acc_empty0;      /* cluster address of acc_empty[0] in the pair leader */\n"
           "    u32 tiles_m, total;  /* work IDs: tiles_m x N_TILES_N */\n"
           "    long long m;         /* rows of A and D */\n"
           "};\n\n"
           "static __device__ jg_cta_t jg_cta_make(const jg_params_t &p, unsigned char *base) {\n"
           "    jg_cta_t c;\n"
           "    c.base = base;\n"
           "    c.smem = jg_smem_addr(base);\n"
           "    const u32 nx = jg_cluster_nctaid_x(), ny = jg_cluster_nctaid_y();\n"
           "    c.cm = jg_cluster_ctaid_x();\n"
           "    c.cn = jg_cluster_ctaid_y();\n"
           "    c.rank = jg_cluster_ctarank();\n"
           "    c.ncta = nx * ny;\n");
    if (g->has_fallback)
        put(g, "    /* All extents are compared, not only M: safe whatever the two shapes are. */\n"
               "    c.fallback = nx != PREF_M || ny != PREF_N;\n");
    else
        put(g, "    c.fallback = 0;\n");
    put(g, "    c.pair_pos = c.cm % CTA_GROUP;\n"
           "    c.mma_issuer = c.pair_pos == 0;\n"
           "    c.cluster_mask = (u16)((1u << c.ncta) - 1u);\n"
           "    c.pair_mask = (u16)(((1u << CTA_GROUP) - 1u) << (c.rank - c.pair_pos));\n");
    if (tc->a.multicast)
        put(g, "    /* A is shared along N: the CTAs of one cluster row load a slice each. */\n"
               "    u32 am = 0;\n"
               "    for (u32 y = 0; y < ny; ++y)\n"
               "        am |= 1u << (c.cm + y * nx);\n"
               "    c.a_mask = (u16)am;\n"
               "    c.a_slice = c.cn;\n"
               "    c.a_slice_rows = 128u / ny;\n");
    else
        put(g, "    c.a_mask = 0;\n"
               "    c.a_slice = 0;\n"
               "    c.a_slice_rows = 128u;\n");
    if (tc->b.multicast)
        put(g,
            "    /* B is shared along M by the CTAs that hold the same half of B (the same pair\n"
            "     * position); each loads a slice and multicasts it to the others. */\n"
            "    u32 bm = 0;\n"
            "    for (u32 x = c.pair_pos; x < nx; x += CTA_GROUP)\n"
            "        bm |= 1u << (x + c.cn * nx);\n"
            "    c.b_mask = (u16)bm;\n"
            "    c.b_slice = c.cm / CTA_GROUP;\n"
            "    c.b_slice_rows = B_ROWS / (nx / CTA_GROUP);\n");
    else
        put(g, "    c.b_mask = 0;\n"
               "    c.b_slice = 0;\n"
               "    c.b_slice_rows = B_ROWS;\n");
    put(g, "    c.work_empty0 = jg_mapa(c.smem + OFF_WORK_EMPTY, 0);\n"
           "    c.acc_empty0 = jg_mapa(c.smem + OFF_ACC_EMPTY, c.rank - c.pair_pos);\n"
           "    c.m = p.m;\n"
           "    c.tiles_m = (u32)((p.m + CLUSTER_TILE_M - 1) / CLUSTER_TILE_M);\n"
           "    c.total = c.tiles_m * N_TILES_N;\n"
           "    return c;\n"
           "}\n\n");

    put(g, "/* One thread initialises every barrier. Counts that depend on the cluster shape are\n"
           " * taken from %cluster_nctaid at run time. */\n"
           "static __device__ void jg_barriers_init(const jg_cta_t &c) {\n"
           "    for (u32 s = 0; s < STAGES; ++s) {\n"
           "        jg_mbar_init(c.smem + OFF_FULL + 8 * s, 1);\n"
           "        jg_mbar_init(c.smem + OFF_EMPTY + 8 * s, c.ncta / CTA_GROUP);\n"
           "    }\n"
           "    for (u32 s = 0; s < ACC_STAGES; ++s) {\n"
           "        jg_mbar_init(c.smem + OFF_ACC_FULL + 8 * s, 1);\n"
           "        jg_mbar_init(c.smem + OFF_ACC_EMPTY + 8 * s, EPI_WARPS * CTA_GROUP);\n"
           "    }\n"
           "    for (u32 s = 0; s < WORK_SLOTS; ++s) {\n"
           "        jg_mbar_init(c.smem + OFF_WORK_FULL + 8 * s, 1);\n"
           "        jg_mbar_init(c.smem + OFF_WORK_EMPTY + 8 * s, c.ncta * WORK_READERS);\n"
           "    }\n"
           "    jg_fence_mbar_init();\n"
           "}\n\n");
}

static void emit_work_ring(const jit__tcg_t *g) {
    (void)g;
    put(g,
        "/* ---- the work-ID ring ------------------------------------------------------------- "
        "*/\n\n"
        "struct jg_work_t {\n"
        "    u32 id;    /* >= total: no more work */\n"
        "    u32 sub_m; /* M offset, in CTAs, of a fallback cluster inside the preferred tile */\n"
        "};\n\n"
        "/* Wait for slot i of the ring and read it. */\n"
        "static __device__ __forceinline__ jg_work_t jg_work_get(const jg_cta_t &c, u32 i) {\n"
        "    const u32 s = i % WORK_SLOTS;\n"
        "    jg_mbar_wait_cluster(c.smem + OFF_WORK_FULL + 8 * s, (i / WORK_SLOTS) & 1);\n"
        "    const volatile u32 *slot = (const volatile u32 *)(c.base + OFF_WORK_IDS + 8 * s);\n"
        "    jg_work_t w;\n"
        "    w.id = slot[0];\n"
        "    w.sub_m = slot[1];\n"
        "    return w;\n"
        "}\n\n"
        "/* Tell the scheduler (cluster rank 0) that this reader is done with slot i. */\n"
        "static __device__ __forceinline__ void jg_work_release(const jg_cta_t &c, u32 i) {\n"
        "    jg_mbar_arrive_remote(c.work_empty0 + 8 * (i % WORK_SLOTS));\n"
        "}\n\n"
        "struct jg_tile_t {\n"
        "    int row0; /* first A row of this CTA's first M-half */\n"
        "    int n0;   /* first B row of the MMA tile (the pair's, with cta_group::2) */\n"
        "};\n\n"
        "/* Work ID -> this CTA's rows. M runs fastest, so the CTAs that share a B tile (the\n"
        " * weights) run at about the same time. The pair's rows interleave as the cta_group::2\n"
        " * data path wants: CTA 0 holds rows 0-127 and CTA 1 rows 128-255 of each 256-row MMA;\n"
        " * with B-reuse the second M-half (the reuse MMA) is the next 256 rows. */\n"
        "static __device__ __forceinline__ jg_tile_t jg_tile_coords(const jg_cta_t &c, jg_work_t "
        "w) {\n"
        "    const u32 tm = w.id % c.tiles_m, tn = w.id / c.tiles_m;\n"
        "    const u32 cm = w.sub_m + c.cm;\n"
        "    jg_tile_t t;\n"
        "    t.row0 = (int)(tm * CLUSTER_TILE_M + (cm / CTA_GROUP) * (CTA_GROUP * 128u * HALVES) "
        "+\n"
        "                   c.pair_pos * 128u);\n"
        "    t.n0 = (int)(tn * (PREF_N * TILE_N) + c.cn * TILE_N);\n"
        "    return t;\n"
        "}\n\n");
}

static void emit_scheduler(const jit__tcg_t *g) {
    put(g, "/* ---- scheduler ------------------------------------------------------------------- "
           "*/\n\n"
           "struct jg_workspace_t {\n"
           "    u32 work_counter;  /* next work ID */\n"
           "    u32 registration;  /* fallback clusters registered so far */\n"
           "    u32 exit_count;    /* CTAs finished; the last one resets the workspace */\n"
           "    u32 pad_;\n"
           "    u64 tokens[1];     /* token_slots entries: one per fallback cluster */\n"
           "};\n\n"
           "struct jg_sched_t {\n"
           "    u32 group, member; /* fallback group and place in it */\n"
           "    u64 prev;          /* the last token this member saw */\n"
           "    u64 gen;           /* member 0: generation of the next token */\n"
           "};\n\n");
    if (g->has_fallback)
        put(g,
            "/* A fallback cluster covers 1/SPLIT of a work ID, so SPLIT of them form a fixed "
            "group\n"
            " * for the whole launch, by the order in which they register. */\n"
            "static __device__ jg_sched_t jg_sched_init(const jg_cta_t &c, const jg_params_t "
            "&p) {\n"
            "    jg_sched_t s;\n"
            "    s.group = 0;\n"
            "    s.member = 0;\n"
            "    s.prev = 0;\n"
            "    s.gen = 1;\n"
            "    if (c.rank == 0 && c.fallback) {\n"
            "        u32 ord = 0;\n"
            "        if (threadIdx.x % 32 == 0)\n"
            "            ord = jg_atom_add_relaxed(&((jg_workspace_t "
            "*)p.workspace)->registration, 1);\n"
            "        ord = jg_shfl0(ord);\n"
            "        s.group = ord / SPLIT;\n"
            "        s.member = ord % SPLIT;\n"
            "        /* The host sizes the slots for every fallback cluster the grid can form; a\n"
            "         * group without slots would wait forever, so stop loudly instead. */\n"
            "        if ((s.group + 1) * SPLIT > p.token_slots)\n"
            "            jg_trap();\n"
            "    }\n"
            "    return s;\n"
            "}\n\n");
    else
        put(g, "static __device__ jg_sched_t jg_sched_init(const jg_cta_t &c, const jg_params_t "
               "&p) {\n"
               "    (void)c;\n"
               "    (void)p;\n"
               "    jg_sched_t s;\n"
               "    s.group = 0;\n"
               "    s.member = 0;\n"
               "    s.prev = 0;\n"
               "    s.gen = 1;\n"
               "    return s;\n"
               "}\n\n");
    put(g,
        "/* Whole warp, cluster rank 0 only: claim work ID number i and publish it to every CTA "
        "of\n"
        " * the cluster with st.async, which completes 8 bytes on the reader's ring barrier. */\n"
        "static __device__ void jg_role_scheduler(const jg_cta_t &c, const jg_params_t &p, "
        "jg_sched_t &sc, u32 i) {\n"
        "    const u32 lane = threadIdx.x % 32, s = i % WORK_SLOTS;\n"
        "    jg_workspace_t *ws = (jg_workspace_t *)p.workspace;\n"
        "    jg_mbar_wait_cluster(c.smem + OFF_WORK_EMPTY + 8 * s, ((i / WORK_SLOTS) & 1) ^ 1);\n"
        "    u32 id = 0, sub_m = 0;\n");
    if (g->has_fallback) {
        put(g,
            "    if (!c.fallback) {\n"
            "        if (lane == 0)\n"
            "            id = jg_atom_add_relaxed(&ws->work_counter, 1);\n"
            "    } else if (sc.member == 0) {\n"
            "        /* Claim only once every partner has echoed the previous token, i.e. has "
            "read\n"
            "         * the previous work ID. Slot 0 is this member's own and matches at once. */\n"
            "        u64 *group_slots = ws->tokens + sc.group * SPLIT;\n"
            "        for (;;) {\n"
            "            const u64 t = lane < SPLIT ? jg_ld_relaxed_u64(group_slots + lane) : "
            "sc.prev;\n"
            "            if (jg_ballot(t == sc.prev) == 0xffffffffu)\n"
            "                break;\n"
            "            jg_nanosleep(500);\n"
            "        }\n"
            "        if (lane == 0) {\n"
            "            id = jg_atom_add_relaxed(&ws->work_counter, 1);\n"
            "            /* The work ID travels inside the token: one 64-bit load gives a partner\n"
            "             * the new generation and the ID together. */\n"
            "            jg_st_relaxed_u64(group_slots, (sc.gen << 32) | id);\n"
            "        }\n"
            "        id = jg_shfl0(id);\n"
            "        sc.prev = (sc.gen << 32) | id;\n"
            "        sc.gen += 1;\n"
            "    } else {\n"
            "        u64 *group_slots = ws->tokens + sc.group * SPLIT;\n"
            "        u64 t = sc.prev;\n"
            "        if (lane == 0) {\n"
            "            while ((t = jg_ld_relaxed_u64(group_slots)) == sc.prev)\n"
            "                jg_nanosleep(500);\n"
            "            jg_st_relaxed_u64(group_slots + sc.member, t); /* echo: read it */\n"
            "        }\n"
            "        const u32 lo = jg_shfl0((u32)t), hi = jg_shfl0((u32)(t >> 32));\n"
            "        sc.prev = ((u64)hi << 32) | lo;\n"
            "        id = lo;\n"
            "    }\n"
            "    /* Member k of a group takes the k-th fallback-sized part of the tile. */\n"
            "    sub_m = c.fallback ? sc.member * FB_M : 0;\n");
    } else {
        put(g, "    (void)sc;\n"
               "    if (lane == 0)\n"
               "        id = jg_atom_add_relaxed(&ws->work_counter, 1);\n");
    }
    put(g, "    id = jg_shfl0(id);\n"
           "    if (id > c.total)\n"
           "        id = c.total; /* one terminal value for every reader */\n"
           "    if (lane < c.ncta) {\n"
           "        const u32 bar = jg_mapa(c.smem + OFF_WORK_FULL + 8 * s, lane);\n"
           "        jg_mbar_expect_arrive_remote(bar, 8);\n"
           "        jg_st_async_v2(jg_mapa(c.smem + OFF_WORK_IDS + 8 * s, lane), id, sub_m, bar);\n"
           "    }\n"
           "    jg_syncwarp();\n"
           "}\n\n");
}

/* One TMA load per M-half (A) or per CTA (B), sliced for multicast when the plan says so. */
static void emit_loads(const jit__tcg_t *g) {
    const jit__tc_plan_t *tc = g->tc;
    put(g,
        "                const u32 full = c.smem + OFF_FULL + 8 * s;\n"
        "                /* The pair leader expects every byte that lands in the pair this stage,\n"
        "                 * whoever issued it (its peer, or a multicasting CTA). */\n"
        "                if (c.mma_issuer)\n"
        "                    jg_mbar_expect_arrive(full, EXPECT_TX * CTA_GROUP);\n"
        "                const u32 a = c.smem + OFF_A + s * A_STAGE, b = c.smem + OFF_B + s * "
        "B_STAGE;\n"
        "                const u32 sfa = c.smem + OFF_SFA + s * SFA_STAGE;\n"
        "                const u32 sfb = c.smem + OFF_SFB + s * SFB_STAGE;\n"
        "                for (u32 h = 0; h < HALVES; ++h) {\n"
        "                    const int row = t.row0 + (int)(h * CTA_GROUP * 128u);\n"
        "                    for (u32 j = 0; j < A_BOXES; ++j) {\n"
        "                        const u32 dst = a + (h * A_BOXES + j) * 128u * A_BOX_BYTES +\n"
        "                                        c.a_slice * c.a_slice_rows * A_BOX_BYTES;\n"
        "                        const int k0 = (int)(kt * A_KC_TILE + j * A_KC_BOX);\n");
    if (tc->a.multicast)
        put(g, "                        jg_tma_load_2d_mc(dst, ta, k0, row + (int)(c.a_slice * "
               "c.a_slice_rows), full, c.a_mask);\n");
    else
        put(g, "                        jg_tma_load_2d(dst, ta, k0, row, full);\n");
    put(g, "                    }\n"
           "                    jg_tma_load_3d(sfa + h * SF_CHUNKS_K * 512u, &p.sfa, 0, (int)(kt * "
           "SF_CHUNKS_K), row / 128, full);\n"
           "                }\n"
           "                for (u32 j = 0; j < B_BOXES; ++j) {\n"
           "                    const u32 dst = b + j * B_ROWS * B_BOX_BYTES + c.b_slice * "
           "c.b_slice_rows * B_BOX_BYTES;\n"
           "                    const int k0 = (int)(kt * B_KC_TILE + j * B_KC_BOX);\n"
           "                    const int row = t.n0 + (int)(c.pair_pos * B_ROWS + c.b_slice * "
           "c.b_slice_rows);\n");
    if (tc->b.multicast)
        put(g, "                    jg_tma_load_2d_mc(dst, tb, k0, row, full, c.b_mask);\n");
    else
        put(g, "                    jg_tma_load_2d(dst, tb, k0, row, full);\n");
    put(g,
        "                }\n"
        "                /* SFB covers the whole MMA N in both CTAs of a pair, from the 128-row\n"
        "                 * scale block the tile starts in. */\n"
        "                jg_tma_load_3d(sfb, &p.sfb, 0, (int)(kt * SF_CHUNKS_K), t.n0 / 128, "
        "full);\n");
}

static void emit_producer(const jit__tcg_t *g) {
    put(g, "/* ---- TMA producer (one warp; lane 0 issues) "
           "---------------------------------------- */\n\n"
           "static __device__ void jg_role_producer(const jg_cta_t &c, const jg_params_t &p) {\n"
           "    const u32 lane = threadIdx.x % 32;\n"
           "    /* The multicast split is baked into a tensor map's box, so the fallback cluster\n"
           "     * shape has its own A and B maps. */\n"
           "    const void *ta = &p.a[c.fallback], *tb = &p.b[c.fallback];\n"
           "    if (lane == 0) {\n"
           "        jg_tma_prefetch(ta);\n"
           "        jg_tma_prefetch(tb);\n"
           "        jg_tma_prefetch(&p.sfa);\n"
           "        jg_tma_prefetch(&p.sfb);\n"
           "    }\n"
           "    jg_sched_t sched = jg_sched_init(c, p);\n"
           "    u32 it = 0, i = 0;\n"
           "    for (;; ++i) {\n"
           "        if (c.rank == 0)\n"
           "            jg_role_scheduler(c, p, sched, i);\n"
           "        const jg_work_t w = jg_work_get(c, i);\n"
           "        jg_syncwarp();\n"
           "        if (lane == 0)\n"
           "            jg_work_release(c, i);\n"
           "        if (w.id >= c.total)\n"
           "            break;\n"
           "        if (lane == 0) {\n"
           "            const jg_tile_t t = jg_tile_coords(c, w);\n"
           "            for (u32 kt = 0; kt < K_TILES; ++kt, ++it) {\n"
           "                const u32 s = it % STAGES;\n"
           "                /* Free once every MMA issuer of the cluster has consumed it. */\n"
           "                jg_mbar_wait_cluster(c.smem + OFF_EMPTY + 8 * s, ((it / STAGES) & 1) ^ "
           "1);\n");
    emit_loads(g);
    put(g, "            }\n"
           "        }\n"
           "        jg_syncwarp();\n"
           "    }\n"
           "    if (lane == 0) {\n"
           "        /* The last commits of other CTAs' issuers still arrive on our empty barriers. "
           "*/\n"
           "        for (u32 j = 0; j < STAGES; ++j, ++it)\n"
           "            jg_mbar_wait_cluster(c.smem + OFF_EMPTY + 8 * (it % STAGES), ((it / "
           "STAGES) & 1) "
           "^ 1);\n"
           "        if (c.rank == 0) /* and every reader's release of the work ring */\n"
           "            for (u32 j = i + 1; j <= i + WORK_SLOTS; ++j)\n"
           "                jg_mbar_wait_cluster(c.smem + OFF_WORK_EMPTY + 8 * (j % WORK_SLOTS),\n"
           "                                     ((j / WORK_SLOTS) & 1) ^ 1);\n"
           "    }\n"
           "    jg_syncwarp();\n"
           "}\n\n");
}

/* The tcgen05.cp of the chunks instruction `k` is the first to read. `which` 0: SFA of M-half
 * `half`, 1: SFB. Returns the number of copies emitted. */
static int emit_sf_copies(const jit__tcg_t *g, int which, int half, int k) {
    const jit__tc_plan_t *tc = g->tc;
    int spi = tc->sf_per_instr;
    int kc_lo = (k * spi + 3) / 4, kc_hi = ((k + 1) * spi + 3) / 4;
    int blocks = which ? tc->sfb_row_blocks : 1;
    int n = 0;
    for (int kc = kc_lo; kc < kc_hi; kc++)
        for (int mn = 0; mn < blocks; mn++) {
            int col = jit__tc_sf_chunk_column(tc, which, mn, kc);
            uint32_t off = (uint32_t)((which ? mn : half) * tc->sfa_chunks_k + kc) * 512u;
            if (which)
                jit__sb_printf(
                    g->sb,
                    "                    jg_utccp(tmem + SFB_COL + %du, jg_desc(SF_DESC_HI, "
                    "sfb + %uu));\n",
                    col, off);
            else
                jit__sb_printf(
                    g->sb,
                    "                    jg_utccp(tmem + SFA_COL + %du, jg_desc(SF_DESC_HI, "
                    "sfa + %uu));\n",
                    col + half * tc->tmem.sfa_half_stride, off);
            n++;
        }
    return n;
}

static uint32_t a_offset(const jit__tcg_t *g, int half, int k) {
    const jit__tc_operand_t *op = &g->tc->a;
    uint32_t kb = (uint32_t)k * op->k_step_bytes;
    uint32_t box = kb / op->box_inner_bytes;
    return ((uint32_t)half * (uint32_t)op->boxes_per_stage + box) * 128u * op->box_inner_bytes +
           kb % op->box_inner_bytes;
}

static uint32_t b_offset(const jit__tcg_t *g, int k) {
    const jit__tc_operand_t *op = &g->tc->b;
    uint32_t kb = (uint32_t)k * op->k_step_bytes;
    uint32_t box = kb / op->box_inner_bytes;
    return box * (uint32_t)op->rows * op->box_inner_bytes + kb % op->box_inner_bytes;
}

static void emit_one_mma_call(const jit__tcg_t *g, const char *fn, int half, int k) {
    const jit__tc_plan_t *tc = g->tc;
    int acol, bcol;
    unsigned aid, bid;
    jit__tc_sf_slot(tc, 0, k, &acol, &aid);
    jit__tc_sf_slot(tc, 1, k, &bcol, &bid);
    acol += half * tc->tmem.sfa_half_stride;
    jit__sb_printf(
        g->sb,
        "                    {\n"
        "                        const u32 sa = tmem + SFA_COL + %du + 0x%08Xu;\n"
        "                        const u32 sb = tmem + SFB_COL + %du + sfb_shift + 0x%08Xu;\n"
        "                        %s(acc + %du, jg_desc(A_DESC_HI, a + %uu), jg_desc(B_DESC_HI, b + "
        "%uu),\n"
        "                               jg_idesc(sa, sb), sa, sb, %s);\n"
        "                    }\n",
        acol, aid << 30, bcol, bid << 30, fn, half * tc->tmem.acc_half_stride, a_offset(g, half, k),
        b_offset(g, k), k == 0 ? "kt > 0" : "1u");
}

static void emit_mma(const jit__tcg_t *g) {
    const jit__tc_plan_t *tc = g->tc;
    const jit__tc_tmem_plan_t *tm = &tc->tmem;
    put(g,
        "/* ---- MMA (one thread of the pair leader) ------------------------------------------- "
        "*/\n\n"
        "/* SF IDs live in bits 31:30 of the scale TMEM addresses. The shifts are unsigned and\n"
        " * masked: an arithmetic shift of a signed address would copy bit 31 over the whole\n"
        " * descriptor. */\n"
        "static __device__ __forceinline__ u32 jg_idesc(u32 sfa_tmem, u32 sfb_tmem) {\n"
        "    return IDESC | (((sfa_tmem & 0xC0000000u) >> 30) << 29) |\n"
        "           (((sfb_tmem & 0xC0000000u) >> 30) << 4);\n"
        "}\n\n"
        "/* An SMEM matrix descriptor: the constant fields of the plan plus the start address. */\n"
        "static __device__ __forceinline__ u64 jg_desc(u64 hi, u32 addr) {\n"
        "    return hi | (u64)((addr & 0x3FFFFu) >> 4);\n"
        "}\n\n"
        "static __device__ void jg_role_mma(const jg_cta_t &c, u32 tmem) {\n"
        "    u32 it = 0, tile = 0;\n"
        "    for (u32 i = 0;; ++i) {\n"
        "        const jg_work_t w = jg_work_get(c, i);\n"
        "        jg_work_release(c, i);\n"
        "        if (w.id >= c.total)\n"
        "            break;\n"
        "        if (!c.mma_issuer)\n"
        "            continue; /* the pair's second CTA only follows the ring */\n"
        "        const jg_tile_t t = jg_tile_coords(c, w);\n");
    if (tm->overlap)
        put(g, "        /* Overlapping stages: tile i may start once the epilogue has drained the\n"
               "         * columns tile i-1 shares with it (its early release). */\n"
               "        if (tile > 0)\n"
               "            jg_mbar_wait_cluster(c.smem + OFF_ACC_EMPTY, (tile - 1) & 1);\n");
    else
        put(g, "        jg_mbar_wait_cluster(c.smem + OFF_ACC_EMPTY + 8 * (tile % ACC_STAGES),\n"
               "                             ((tile / ACC_STAGES) & 1) ^ 1);\n");
    put(g, "        jg_tc_fence_after();\n");
    if (tm->acc_stages > 1)
        put(g, "        const u32 acc = tmem + ((tile % ACC_STAGES) ? ACC_COL1 : ACC_COL0);\n");
    else
        put(g, "        const u32 acc = tmem + ACC_COL0;\n");
    put(g,
        "        /* A tile that starts halfway into a 128-row scale block (N 64 or 192) reads its\n"
        "         * SFB 2 columns on: column c of a chunk holds rows 32c..32c+31. */\n"
        "        const u32 sfb_shift = ((u32)t.n0 % 128u) / 32u;\n"
        "        /* A pair whose rows all lie past M gets no MMA (its A is all padding); the\n"
        "         * barriers still turn over so every pipeline stays balanced. */\n"
        "        const bool live = (long long)t.row0 < c.m;\n"
        "        for (u32 kt = 0; kt < K_TILES; ++kt, ++it) {\n"
        "            const u32 s = it % STAGES;\n"
        "            jg_mbar_wait(c.smem + OFF_FULL + 8 * s, (it / STAGES) & 1);\n"
        "            jg_tc_fence_after();\n"
        "            const u32 a = c.smem + OFF_A + s * A_STAGE, b = c.smem + OFF_B + s * "
        "B_STAGE;\n"
        "            const u32 sfa = c.smem + OFF_SFA + s * SFA_STAGE;\n"
        "            const u32 sfb = c.smem + OFF_SFB + s * SFB_STAGE;\n"
        "            if (live) {\n");
    for (int k = 0; k < tc->instrs_per_tile_k; k++) {
        jit__sb_printf(g->sb, "                /* K-block %d */\n", k);
        if (tc->breuse) {
            put(g, "                {\n");
            /* Interleaved copies: keep-SFA, SFB, reuse-SFA, then the keep and reuse MMAs. */
            emit_sf_copies(g, 0, 0, k);
            emit_sf_copies(g, 1, 0, k);
            emit_sf_copies(g, 0, 1, k);
            emit_one_mma_call(g, "jg_mma_keep", 0, k);
            emit_one_mma_call(g, "jg_mma_reuse", 1, k);
            put(g, "                }\n");
        } else {
            put(g, "                {\n");
            emit_sf_copies(g, 0, 0, k);
            emit_sf_copies(g, 1, 0, k);
            emit_one_mma_call(g, "jg_mma", 0, k);
            put(g, "                }\n");
        }
    }
    put(g,
        "            }\n"
        "            /* Free the stage in every CTA of the cluster once these MMAs are done. */\n"
        "            jg_mma_commit_mc(c.smem + OFF_EMPTY + 8 * s, c.cluster_mask);\n"
        "        }\n");
    if (tc->cta_group == 2)
        put(g, "        /* Both CTAs' epilogues wait on their own copy of the barrier. */\n"
               "        jg_mma_commit_mc(c.smem + OFF_ACC_FULL + 8 * (tile % ACC_STAGES), "
               "c.pair_mask);\n");
    else
        put(g, "        jg_mma_commit(c.smem + OFF_ACC_FULL + 8 * (tile % ACC_STAGES));\n");
    put(g, "        ++tile;\n"
           "    }\n"
           "    if (c.mma_issuer) {\n"
           "        /* The peer CTA's epilogue warps still arrive on our barrier. */\n");
    if (tm->overlap)
        put(g, "        if (tile > 0)\n"
               "            jg_mbar_wait_cluster(c.smem + OFF_ACC_EMPTY, (tile - 1) & 1);\n");
    else
        put(g, "        for (u32 j = tile; j < tile + ACC_STAGES; ++j)\n"
               "            jg_mbar_wait_cluster(c.smem + OFF_ACC_EMPTY + 8 * (j % ACC_STAGES),\n"
               "                                 ((j / ACC_STAGES) & 1) ^ 1);\n");
    put(g, "    }\n"
           "}\n\n");
}

static void emit_epi_chunk(const jit__tcg_t *g) {
    const jit__gemm_spec_t *s = &g->plan->spec;
    int swiglu = s->epilogue == JIT_EPILOGUE_LINEAR_SWIGLU;
    int outs = swiglu ? JIT_TCG_LD_COLUMNS / 2 : JIT_TCG_LD_COLUMNS;
    put(g,
        "/* ---- epilogue (four warps; warp q drains TMEM lanes 32q..32q+31) -------------------- "
        "*/\n\n"
        "/* Byte offset of (row, column byte) in a warp's C slab: boxes of C_BOX_BYTES-wide rows,\n"
        " * swizzled as the TMA store expects (16-byte chunk index XOR address bits 7 and up). */\n"
        "static __device__ __forceinline__ u32 jg_c_offset(u32 row, u32 colbyte) {\n"
        "    const u32 lin = (colbyte / C_BOX_BYTES) * 32u * C_BOX_BYTES + row * C_BOX_BYTES +\n"
        "                    colbyte % C_BOX_BYTES;\n"
        "    return lin ^ (((lin >> 7) & C_SWIZZLE_MASK) << 4);\n"
        "}\n\n");
    put(g, "/* 16 accumulator columns of one row: alpha, the epilogue, conversion, into the C "
           "slab. */\n"
           "static __device__ __forceinline__ void jg_epi_chunk(const jg_params_t &p, const u32 "
           "(&r)[16], u32 slab,\n"
           "                                                    u32 lane, int row, int col, u32 "
           "k) {\n"
           "    float v[16];\n"
           "#pragma unroll\n"
           "    for (int e = 0; e < 16; ++e)\n"
           "        v[e] = jg_as_f32(r[e]) * p.alpha;\n");
    if (s->epilogue == JIT_EPILOGUE_LINEAR_ADD)
        put(g, "    /* D = alpha * acc + residual, rounded once. */\n"
               "    if ((long long)row < p.m) {\n"
               "        const unsigned short *res =\n"
               "            (const unsigned short *)p.residual + (long long)row * p.ld_residual + "
               "col;\n"
               "#pragma unroll\n"
               "        for (int e = 0; e < 16; ++e)\n"
               "            if ((u32)(col + e) < N_TOTAL)\n"
               "                v[e] += jg_as_f32((u32)res[e] << 16);\n"
               "    }\n");
    else
        put(g, "    (void)row;\n"
               "    (void)col;\n");
    if (swiglu)
        put(g, "    /* B row 2j is gate_j and 2j+1 is up_j: out_j = silu(gate_j) * up_j. */\n"
               "    float o[8];\n"
               "#pragma unroll\n"
               "    for (int e = 0; e < 8; ++e) {\n"
               "        const float gate = v[2 * e], up = v[2 * e + 1];\n"
               "        o[e] = gate / (1.0f + jg_ex2(-gate * 1.4426950408889634f)) * up;\n"
               "    }\n");
    else
        put(g, "    const float *o = v;\n");
    /* Pack and store 16 bytes at a time. */
    if (g->out_bytes == 2) {
        for (int piece = 0; piece < outs * 2 / 16; piece++)
            jit__sb_printf(g->sb,
                           "    jg_st_shared_v4(slab + jg_c_offset(lane, k * %du + %du), "
                           "jg_cvt_bf16x2(o[%d], o[%d]),\n"
                           "                    jg_cvt_bf16x2(o[%d], o[%d]), jg_cvt_bf16x2(o[%d], "
                           "o[%d]), jg_cvt_bf16x2(o[%d], o[%d]));\n",
                           outs * 2, piece * 16, piece * 8, piece * 8 + 1, piece * 8 + 2,
                           piece * 8 + 3, piece * 8 + 4, piece * 8 + 5, piece * 8 + 6,
                           piece * 8 + 7);
    } else {
        for (int piece = 0; piece < outs * 4 / 16; piece++)
            jit__sb_printf(g->sb,
                           "    jg_st_shared_v4(slab + jg_c_offset(lane, k * %du + %du), "
                           "__float_as_uint(o[%d]),\n"
                           "                    __float_as_uint(o[%d]), __float_as_uint(o[%d]), "
                           "__float_as_uint(o[%d]));\n",
                           outs * 4, piece * 16, piece * 4, piece * 4 + 1, piece * 4 + 2,
                           piece * 4 + 3);
    }
    put(g, "}\n\n");
}

static void emit_epilogue(const jit__tcg_t *g) {
    const jit__tc_tmem_plan_t *tm = &g->tc->tmem;
    int swiglu = g->plan->spec.epilogue == JIT_EPILOGUE_LINEAR_SWIGLU;
    emit_epi_chunk(g);
    put(g,
        "static __device__ void jg_role_epilogue(const jg_cta_t &c, const jg_params_t &p, u32 "
        "tmem, u32 q) {\n"
        "    const u32 lane = threadIdx.x % 32;\n"
        "    const u32 lanes = (32u * q) << 16; /* TMEM lane field of this warp's quarter */\n"
        "    u32 tile = 0, cs = 0;\n"
        "    for (u32 i = 0;; ++i) {\n"
        "        const jg_work_t w = jg_work_get(c, i);\n"
        "        jg_syncwarp();\n"
        "        if (lane == 0)\n"
        "            jg_work_release(c, i);\n"
        "        if (w.id >= c.total)\n"
        "            break;\n"
        "        const jg_tile_t t = jg_tile_coords(c, w);\n"
        "        const u32 as = tile % ACC_STAGES;\n"
        "        jg_mbar_wait_cluster(c.smem + OFF_ACC_FULL + 8 * as, (tile / ACC_STAGES) & 1);\n"
        "        jg_tc_fence_after();\n"
        "        for (u32 h = 0; h < HALVES; ++h) {\n");
    if (tm->acc_stages > 1)
        put(g, "            const u32 col0 = (as ? ACC_COL1 : ACC_COL0) + h * ACC_HALF_STRIDE;\n");
    else
        put(g, "            const u32 col0 = ACC_COL0 + h * ACC_HALF_STRIDE;\n");
    put(g,
        "            const int row = t.row0 + (int)(h * CTA_GROUP * 128u + 32u * q);\n"
        "            /* Rows past M: nothing to store (the MMA skipped them too). */\n"
        "            const bool live = (long long)(t.row0 + (int)(h * CTA_GROUP * 128u)) < c.m;\n"
        "            for (u32 j = 0; j < EPI_SUBTILES; ++j, ++cs) {\n");
    if (tm->overlap && tm->reverse_traversal)
        put(g, "                /* Stage 0 shares its last columns with stage 1: drain it "
               "backwards so\n"
               "                 * the shared columns go first and can be released early. */\n"
               "                const u32 sub = as == 0 ? EPI_SUBTILES - 1 - j : j;\n");
    else
        put(g, "                const u32 sub = j;\n");
    put(g,
        "                const u32 slab = c.smem + OFF_C + (cs % C_STAGES) * C_STAGE + q * "
        "C_SLAB;\n"
        "                const int col = t.n0 + (int)(sub * EPI_ACC_COLS);\n"
        "                if (live) {\n"
        "                    /* The store that last read this C stage must be done reading. */\n"
        "                    if (lane == 0)\n"
        "                        jg_bulk_wait_read_slack();\n"
        "                    jg_syncwarp();\n"
        "#pragma unroll\n"
        "                    for (u32 k = 0; k < EPI_ACC_COLS / 16; ++k) {\n"
        "                        u32 r[16];\n"
        "                        jg_tmem_ld16(tmem + lanes + col0 + sub * EPI_ACC_COLS + 16 * k, "
        "r);\n"
        "                        jg_tmem_wait_ld();\n"
        "                        jg_epi_chunk(p, r, slab, lane, row + (int)lane, col + (int)(16 * "
        "k), k);\n"
        "                    }\n"
        "                }\n");
    if (tm->overlap)
        put(g,
            "                if (h == 0 && j + 1 == RELEASE_AFTER) {\n"
            "                    /* Early release: the columns the next tile's stage shares with\n"
            "                     * this one are in registers now. */\n"
            "                    jg_tc_fence_before();\n"
            "                    jg_syncwarp();\n"
            "                    if (lane == 0)\n"
            "                        jg_mbar_arrive_remote(c.acc_empty0);\n"
            "                }\n");
    jit__sb_printf(
        g->sb,
        "                if (live) {\n"
        "                    jg_fence_proxy_async();\n"
        "                    jg_syncwarp();\n"
        "                    if (lane == 0) {\n"
        "                        for (u32 bx = 0; bx < C_BOXES; ++bx)\n"
        "                            jg_tma_store_2d(&p.d, slab + bx * 32u * C_BOX_BYTES,\n"
        "                                            %s + (int)(bx * C_BOX_COLS), row);\n"
        "                        jg_bulk_commit();\n"
        "                    }\n"
        "                }\n"
        "            }\n"
        "        }\n",
        swiglu ? "col / 2" : "col");
    if (!tm->overlap)
        put(g, "        /* The stage is drained: hand it back to the MMA issuer. */\n"
               "        jg_tc_fence_before();\n"
               "        jg_syncwarp();\n"
               "        if (lane == 0)\n"
               "            jg_mbar_arrive_remote(c.acc_empty0 + 8 * as);\n");
    put(g, "        ++tile;\n"
           "    }\n"
           "    if (lane == 0)\n"
           "        jg_bulk_wait_all(); /* shared memory must outlive the stores that read it */\n"
           "    jg_syncwarp();\n"
           "}\n\n");
}

static void emit_exit(const jit__tcg_t *g) {
    put(g,
        "/* ---- workspace reset ------------------------------------------------------------- "
        "*/\n\n"
        "/* The last CTA to finish resets the counters and token slots for the next launch (the\n"
        " * tail reset): every other CTA has released the workspace by then, so no grid-wide\n"
        " * barrier is needed. */\n"
        "static __device__ void jg_workspace_exit(const jg_params_t &p) {\n"
        "    jg_workspace_t *ws = (jg_workspace_t *)p.workspace;\n"
        "    const u32 ctas = gridDim.x * gridDim.y * gridDim.z;\n"
        "    if (jg_atom_add_acq_rel(&ws->exit_count, 1) + 1 == ctas) {\n"
        "        volatile jg_workspace_t *v = ws;\n"
        "        v->work_counter = 0;\n"
        "        v->registration = 0;\n"
        "        for (u32 i = 0; i < p.token_slots; ++i)\n"
        "            v->tokens[i] = 0;\n"
        "        v->exit_count = 0;\n"
        "    }\n"
        "}\n\n");
}

void jit__tcg_emit_roles(const jit__tcg_t *g) {
    emit_geometry(g);
    emit_work_ring(g);
    emit_scheduler(g);
    emit_producer(g);
    emit_mma(g);
    emit_epilogue(g);
    emit_exit(g);
}
