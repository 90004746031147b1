/*
 * The functional model of a tcgen05 GPU that runs the generated kernel source as host C++
 * (docs/blackwell-rubin.md, "Functional model").
 *
 * Execution: every thread of the grid is a fiber (ucontext); one scheduler picks the next
 * runnable fiber at random from a seed. A fiber runs until it blocks (mbarrier wait, warp
 * collective, cluster barrier) or yields: at every wait, and at other wrapper calls by a seeded
 * chance. Warp-collective
 * instructions (elect, shuffles, ballot, bar.warp.sync, tcgen05.alloc/ld ...) are rendezvous of
 * the 32 lane fibers. No runnable fiber while some are unfinished is a deadlock: every waiting
 * fiber is reported with its kernel line.
 *
 * Asynchronous operations (TMA, tcgen05.cp/mma, commit, st.async, bulk stores) execute when they
 * are issued. Ordering is checked instead of timed: a happens-before analysis with vector clocks
 * (one generic and one async-proxy agent per warp) records every shared-memory and TMEM access
 * of the modelled operations and reports an access that is not ordered after a conflicting
 * earlier one (read before write, write after read, write after write). Ordering comes only
 * from what the ISA guarantees: mbarrier phase completion (arrivals and complete_tx), cluster
 * barriers, cp.async.bulk.wait_group (the older groups only), fence.proxy.async for generic
 * writes that the async proxy reads, and program order of one warp's tcgen05 operations.
 */
#include "fm_runtime.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <ucontext.h>

#include <map>
#include <random>
#include <string>
#include <vector>

#include "fm_api.h"

namespace {

const uint32_t RESERVED = 1024; /* shared memory the system keeps before the dynamic window */
const int sm100_kind_mxf8f6f4 = 1, sm100_kind_mxf4 = 2; /* sm100::MmaKind */
const uint64_t TMAP_MAGIC = 0x504D54454D4F4446ull;
const size_t STACK_BYTES = 256 * 1024;

/* ---- vector clocks ------------------------------------------------------------------------- */

struct VC {
    std::vector<uint32_t> c;
    void join(const VC &o) {
        for (size_t i = 0; i < c.size(); i++)
            if (o.c[i] > c[i])
                c[i] = o.c[i];
    }
};

struct Access {
    uint32_t clock = 0;
    const char *file = nullptr;
    int line = 0;
};

/* Shadow state of one 16-byte shared-memory granule or one TMEM (lane quarter, column). */
struct Cell {
    int w_agent = -1;
    Access w;
    std::vector<Access> r; /* per agent: its last read */
};

/* ---- machine state ------------------------------------------------------------------------- */

struct Fiber {
    ucontext_t ctx;
    char *stack = nullptr;
    int cta = 0, tid = 0, warp = 0, lane = 0;
    bool done = false;
    const char *wfile = nullptr, *what = nullptr;
    int wline = 0;
    uint32_t cl_arrivals = 0, cl_waits = 0;
    int64_t wbar = -1;           /* the mbarrier (CTA << 32 | offset) it waits on */
    const char *yfile = nullptr; /* where it last gave way */
    int yline = 0;
    uint32_t wparity = 0;
};

struct Warp {
    int cta = 0, w = 0, gen = 0, async = 0; /* agent ids */
    VC gvc, avc, fvc; /* generic, async proxy, what the async proxy may assume (fenced) */
    int c_arrived = 0;
    uint32_t c_gen = 0;
    int c_op = 0;
    const char *c_file = nullptr;
    int c_line = 0;
    uint32_t c_val[32] = {}, c_res[32] = {};
    std::vector<int> waiters;
    std::vector<VC> groups; /* committed bulk groups, oldest first */
    VC open;                /* async clock of the stores not committed yet */
    bool fill_valid = false;
    uint64_t fill_bdesc = 0;
};

struct Mbar {
    bool init = false;
    uint32_t count = 0, pending = 0, phase = 0;
    int64_t tx = 0;
    VC cur, done;
    std::vector<int> waiters;
};

/* A CTA's named barrier (bar.sync id, threads): counted per generation. */
struct NamedBar {
    uint32_t arrived = 0, gen = 0, threads = 0;
    VC cur, done;
    std::vector<int> waiters;
};

struct Cta {
    int index = 0, cluster = 0, rank = 0;
    unsigned bx = 0, by = 0, bz = 0;
    unsigned cx = 1, cy = 1; /* the shape of the cluster this CTA runs in */
    std::vector<uint8_t> smem;
    std::vector<uint32_t> tmem; /* [128 lanes][capacity columns] */
    int alloc_base = -1, alloc_cols = 0;
    bool relinquished = false, exited = false;
    int live = 0;
    std::vector<Cell> sshadow, tshadow;
    NamedBar nbar[16];
};

struct Cluster {
    std::vector<int> ctas; /* by rank */
    uint32_t arrived = 0, gen = 0;
    VC cur, done;
    std::vector<int> waiters;
};

struct Hazard {
    std::string text;
};

struct Model {
    fm_launch_t L;
    int capacity = 512, desc_bits = 14;
    bool packed_mixed = false;
    int nwarps = 0, nagents = 0;
    std::vector<Fiber> fibers;
    std::vector<Warp> warps;
    std::vector<Cta> ctas;
    std::vector<Cluster> clusters;
    std::map<uint64_t, Mbar> mbars;
    std::vector<int> runnable;
    std::mt19937_64 rng;
    ucontext_t sched;
    int current = -1, live = 0;
    bool aborted = false;
    std::map<std::string, int> hazard_seen;
    int hazards = 0;
    long cp_after_mma = 0;
    uint64_t progress = 0; /* events that move the kernel on: phases, barriers, exits, ops */
};

Model *M = nullptr;

Fiber &F() {
    return M->fibers[(size_t)M->current];
}
Warp &W() {
    Fiber &f = F();
    return M->warps[(size_t)(f.cta * M->nwarps + f.warp)];
}
Cta &C() {
    return M->ctas[(size_t)F().cta];
}

const char *base_name(const char *p) {
    if (!p)
        return "?";
    const char *k = strstr(p, "kernel_src/");
    return k ? k : p;
}

std::string where() {
    char buf[96];
    if (M->current < 0)
        return "the model";
    Fiber &f = F();
    snprintf(buf, sizeof(buf), "CTA %d warp %d lane %d", f.cta, f.warp, f.lane);
    return buf;
}

[[noreturn]] void fatal(const char *file, int line, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "fmodel: ERROR at %s:%d (%s): ", base_name(file), line, where().c_str());
    vfprintf(stderr, fmt, ap);
    fprintf(stderr, "\n");
    va_end(ap);
    M->aborted = true;
    swapcontext(&F().ctx, &M->sched);
    abort(); /* never resumed */
}

/* ---- scheduling ---------------------------------------------------------------------------- */

void switch_out() {
    swapcontext(&F().ctx, &M->sched);
    if (M->aborted) /* another fiber stopped the run while this one waited */
        swapcontext(&F().ctx, &M->sched);
}

void yield_now() {
    M->runnable.push_back(M->current);
    switch_out();
}

void block_on(std::vector<int> &wl, const char *what, const char *file, int line) {
    Fiber &f = F();
    f.what = what;
    f.wfile = file;
    f.wline = line;
    f.yfile = file;
    f.yline = line;
    wl.push_back(M->current);
    switch_out();
    f.what = nullptr;
}

void wake(std::vector<int> &wl) {
    for (int id : wl)
        M->runnable.push_back(id);
    wl.clear();
}

bool chance() {
    return std::uniform_real_distribution<double>(0.0, 1.0)(M->rng) < M->L.yield_prob;
}

/* ---- happens-before ------------------------------------------------------------------------ */

void tick(VC &vc, int agent) {
    vc.c[(size_t)agent]++;
}

/* Snapshot of a warp's generic clock for a release, then advance it. */
VC release_generic(Warp &w) {
    VC s = w.gvc;
    tick(w.gvc, w.gen);
    return s;
}

void acquire(Warp &w, const VC &vc) {
    w.gvc.join(vc);
    w.fvc.join(vc);
}

/* Start an async operation of the current warp: the async proxy sees what was fenced. */
VC &async_begin(Warp &w) {
    w.avc.join(w.fvc);
    tick(w.avc, w.async);
    return w.avc;
}

/* What the plan keeps at a shared-window offset or a TMEM column, for messages. */
std::string region_of(bool tmem, uint32_t off) {
    std::string out;
    const fm_region_t *r = tmem ? M->L.tmem_regions : M->L.smem_regions;
    int n = tmem ? M->L.n_tmem_regions : M->L.n_smem_regions;
    uint32_t x = tmem ? (off & 0xFFFF) : off - RESERVED;
    for (int i = 0; i < n; i++) {
        uint32_t stride = r[i].stride ? r[i].stride : 1;
        if (x < r[i].first || x >= r[i].first + stride * r[i].count)
            continue;
        char buf[96];
        if (r[i].count > 1)
            snprintf(buf, sizeof(buf), "%s%s stage %u", out.empty() ? "" : ", ", r[i].name,
                     (x - r[i].first) / stride);
        else
            snprintf(buf, sizeof(buf), "%s%s", out.empty() ? "" : ", ", r[i].name);
        out += buf;
    }
    return out.empty() ? "outside the plan's buffers" : out;
}

void report_hazard(const char *kind, const char *space, int cta, uint32_t where_off, int agent_a,
                   const Access &a, int agent_b, const Access &b) {
    char key[512];
    snprintf(key, sizeof(key), "%s|%s|%s:%d|%s:%d", kind, space, base_name(a.file), a.line,
             base_name(b.file), b.line);
    if (M->hazard_seen[key]++)
        return;
    M->hazards++;
    int wa = agent_a / 2, wb = agent_b / 2;
    if (&a == &b) {
        fprintf(stderr,
                "fmodel: HAZARD %s on %s of CTA %d at 0x%x (%s): %s of CTA %d warp %d at %s:%d "
                "reads what nothing wrote\n",
                kind, space, cta, where_off, region_of(space[0] == 'T', where_off).c_str(),
                agent_a % 2 ? "an async operation" : "an access", wa / M->nwarps, wa % M->nwarps,
                base_name(a.file), a.line);
        return;
    }
    fprintf(stderr,
            "fmodel: HAZARD %s on %s of CTA %d at 0x%x (%s): %s of CTA %d warp %d at %s:%d is "
            "not ordered after %s of CTA %d warp %d at %s:%d\n",
            kind, space, cta, where_off, region_of(space[0] == 'T', where_off).c_str(),
            agent_a % 2 ? "an async operation" : "an access", wa / M->nwarps, wa % M->nwarps,
            base_name(a.file), a.line, agent_b % 2 ? "an async operation" : "an access",
            wb / M->nwarps, wb % M->nwarps, base_name(b.file), b.line);
}

void access(Cell &c, int agent, const VC &vc, bool write, const char *file, int line,
            const char *space, int cta, uint32_t off) {
    Access me;
    me.clock = vc.c[(size_t)agent];
    me.file = file;
    me.line = line;
    if (c.r.empty())
        c.r.resize((size_t)M->nagents);
    /* Every byte the modelled operations read (TMA boxes, scale chunks, C slabs, accumulators,
     * scale columns) is first written by one of them in a correct kernel. */
    if (!write && c.w_agent < 0)
        report_hazard("read-of-unwritten-data", space, cta, off, agent, me, agent, me);
    if (c.w_agent >= 0 && c.w_agent != agent && vc.c[(size_t)c.w_agent] < c.w.clock)
        report_hazard(write ? "write-after-write" : "read-before-write", space, cta, off, agent, me,
                      c.w_agent, c.w);
    if (write) {
        for (int a = 0; a < M->nagents; a++) {
            const Access &r = c.r[(size_t)a];
            if (a != agent && r.clock && vc.c[(size_t)a] < r.clock)
                report_hazard("write-after-read", space, cta, off, agent, me, a, r);
        }
        for (auto &r : c.r)
            r.clock = 0;
        c.w_agent = agent;
        c.w = me;
    } else {
        c.r[(size_t)agent] = me;
    }
}

void smem_access(Cta &cta, uint32_t off, uint32_t len, int agent, const VC &vc, bool write,
                 const char *file, int line) {
    for (uint32_t g = off / 16; g <= (off + len - 1) / 16; g++)
        access(cta.sshadow[g], agent, vc, write, file, line, "shared memory", cta.index, g * 16);
}

void tmem_access(Cta &cta, int quarter, int col, int agent, const VC &vc, bool write,
                 const char *file, int line) {
    access(cta.tshadow[(size_t)(quarter * M->capacity + col)], agent, vc, write, file, line, "TMEM",
           cta.index, (uint32_t)(quarter * 32) << 16 | (uint32_t)col);
}

/* ---- addresses ----------------------------------------------------------------------------- */

Cluster &my_cluster() {
    return M->clusters[(size_t)C().cluster];
}

/* A shared-window address -> (CTA, offset), checked against the CTA's dynamic window. */
Cta &shared_loc(uint32_t addr, uint32_t len, uint32_t *off, bool local_only, const char *file,
                int line) {
    uint32_t rank = addr >> 24;
    Cluster &cl = my_cluster();
    if (rank >= cl.ctas.size())
        fatal(file, line, "shared address 0x%08x names CTA rank %u of a %zu-CTA cluster", addr,
              rank, cl.ctas.size());
    if (local_only && (int)rank != C().rank)
        fatal(file, line, "shared::cta address 0x%08x is in CTA rank %u, not this CTA (%d)", addr,
              rank, C().rank);
    Cta &cta = M->ctas[(size_t)cl.ctas[rank]];
    *off = addr & 0xFFFFFFu;
    if (*off < RESERVED || (uint64_t)*off + len > cta.smem.size())
        fatal(file, line,
              "shared address 0x%08x (+%u bytes) is outside the dynamic window [0x%x, 0x%zx)", addr,
              len, RESERVED, cta.smem.size());
    return cta;
}

Mbar &mbar_at(Cta &cta, uint32_t off, const char *file, int line, bool need_init = true) {
    Mbar &m = M->mbars[(uint64_t)cta.index << 32 | off];
    if (off % 8)
        fatal(file, line, "mbarrier at 0x%x is not 8-byte aligned", off);
    if (need_init && !m.init)
        fatal(file, line, "mbarrier at 0x%x of CTA %d used before mbarrier.init", off, cta.index);
    if (m.cur.c.empty()) {
        m.cur.c.assign((size_t)M->nagents, 0);
        m.done.c.assign((size_t)M->nagents, 0);
    }
    return m;
}

void mbar_complete_check(Mbar &m) {
    if (m.pending == 0 && m.tx == 0) {
        M->progress++;
        m.phase++;
        m.done.join(m.cur);
        m.pending = m.count;
        wake(m.waiters);
    }
}

void mbar_signal(Cta &cta, uint32_t off, int arrivals, int64_t expect, int64_t complete,
                 const VC &vc, const char *file, int line) {
    if (cta.exited)
        fatal(file, line, "signal on the mbarrier at 0x%x of CTA %d, which has exited", off,
              cta.index);
    Mbar &m = mbar_at(cta, off, file, line);
    m.cur.join(vc);
    m.tx += expect;
    m.tx -= complete;
    if (arrivals) {
        if (m.pending == 0)
            fatal(file, line, "arrival on the mbarrier at 0x%x of CTA %d beyond its count %u", off,
                  cta.index, m.count);
        m.pending -= (uint32_t)arrivals;
    }
    mbar_complete_check(m);
}

/* ---- tensor maps ----------------------------------------------------------------------------- */

struct Tmap {
    CUtensorMapDataType dt;
    unsigned rank;
    const uint8_t *addr;
    uint64_t dims[3], strides[2];
    unsigned box[3];
    CUtensorMapSwizzle sw;
};

Tmap tmap_decode(const void *p, const char *file, int line) {
    const uint64_t *w = (const uint64_t *)p;
    if (w[0] != TMAP_MAGIC)
        fatal(file, line, "the tensor map at %p was not encoded by cuTensorMapEncodeTiled", p);
    Tmap t;
    t.dt = (CUtensorMapDataType)w[1];
    t.rank = (unsigned)w[2];
    t.addr = (const uint8_t *)(uintptr_t)w[3];
    for (int i = 0; i < 3; i++) {
        t.dims[i] = w[4 + i];
        t.box[i] = (unsigned)w[9 + i];
    }
    t.strides[0] = w[7];
    t.strides[1] = w[8];
    t.sw = (CUtensorMapSwizzle)w[12];
    return t;
}

unsigned elem_bytes(CUtensorMapDataType t) {
    switch (t) {
    case CU_TENSOR_MAP_DATA_TYPE_UINT8:
        return 1;
    case CU_TENSOR_MAP_DATA_TYPE_UINT16:
    case CU_TENSOR_MAP_DATA_TYPE_BFLOAT16:
        return 2;
    case CU_TENSOR_MAP_DATA_TYPE_FLOAT32:
        return 4;
    default:
        return 0;
    }
}

/* Swizzle of a shared-window offset: the 16-byte chunk index XOR address bits 7 and up. */
uint32_t swizzle(uint32_t off, int span) {
    uint32_t mask = span == 128 ? 7u : span == 64 ? 3u : span == 32 ? 1u : 0u;
    return off ^ (((off >> 7) & mask) << 4);
}

int tmap_span(CUtensorMapSwizzle s) {
    return s == CU_TENSOR_MAP_SWIZZLE_128B  ? 128
           : s == CU_TENSOR_MAP_SWIZZLE_64B ? 64
           : s == CU_TENSOR_MAP_SWIZZLE_32B ? 32
                                            : 0;
}

/* ---- fiber entry ----------------------------------------------------------------------------- */

void fiber_main(unsigned lo, unsigned hi) {
    (void)lo;
    (void)hi;
    Fiber &f = F();
    M->L.entry(M->L.params);
    f.done = true;
    M->live--;
    M->progress++;
    Cta &cta = M->ctas[(size_t)f.cta];
    if (--cta.live == 0) {
        cta.exited = true;
        if (cta.alloc_base >= 0)
            fatal(__FILE__, __LINE__, "CTA %d exited with %d TMEM columns still allocated",
                  cta.index, cta.alloc_cols);
    }
    swapcontext(&f.ctx, &M->sched);
}

/* ---- element and scale decoding (docs/hardware-facts.md F1, F2) ----------------------------- */

double dec_minifloat(unsigned code, int ebits, int mbits, int bias) {
    int s = (int)(code >> (ebits + mbits)) & 1;
    int e = (int)(code >> mbits) & ((1 << ebits) - 1);
    int m = (int)code & ((1 << mbits) - 1);
    double v = e == 0 ? ldexp((double)m, 1 - bias - mbits)
                      : ldexp((double)((1 << mbits) + m), e - bias - mbits);
    return s ? -v : v;
}

double dec_elem(int code, unsigned bits) {
    switch (code) {
    case 0: /* E4M3 */
        if ((bits & 0x7F) == 0x7F)
            return NAN;
        return dec_minifloat(bits, 4, 3, 7);
    case 1: /* E5M2 */
        if ((bits & 0x7C) == 0x7C)
            return (bits & 3) ? NAN : ((bits & 0x80) ? -INFINITY : INFINITY);
        return dec_minifloat(bits, 5, 2, 15);
    default: /* E2M1 */
        return dec_minifloat(bits & 0xF, 2, 1, 1);
    }
}

double dec_scale(int fmt, unsigned c) {
    switch (fmt) {
    case 0: /* UE4M3 */
        return (c & 0x7F) == 0x7F ? NAN : dec_minifloat(c & 0x7F, 4, 3, 7);
    case 1: /* UE8M0 */
        return c == 0xFF ? NAN : ldexp(1.0, (int)c - 127);
    default: /* UE5M3 */
        return c == 0xFF ? NAN : dec_minifloat(c, 5, 3, 15);
    }
}

/* ---- shared-memory matrix descriptors (docs/hardware-facts.md F11, from the PTX ISA) ------- */

struct SDesc {
    uint32_t start, lbo, sbo;
    int span; /* swizzle span in bytes, 0: none */
};

SDesc sdesc_decode(uint64_t d, const char *file, int line) {
    SDesc s;
    s.start = (uint32_t)(d & ((1ull << M->desc_bits) - 1)) << 4;
    if (M->desc_bits < 16 && (d >> M->desc_bits) & ((1ull << (16 - M->desc_bits)) - 1))
        fatal(file, line, "descriptor 0x%016llx sets reserved bits above its %d-bit start field",
              (unsigned long long)d, M->desc_bits);
    s.lbo = (uint32_t)((d >> 16) & 0x3FFF) << 4;
    s.sbo = (uint32_t)((d >> 32) & 0x3FFF) << 4;
    if (((d >> 46) & 7) != 1)
        fatal(file, line, "descriptor 0x%016llx: bits 46-48 must be 0b001", (unsigned long long)d);
    if ((d >> 49) & 7)
        fatal(file, line, "descriptor 0x%016llx: a base offset is not modelled",
              (unsigned long long)d);
    if ((d >> 52) & 1)
        fatal(file, line, "descriptor 0x%016llx: absolute LBO mode is not modelled",
              (unsigned long long)d);
    unsigned sw = (unsigned)(d >> 61);
    s.span = sw == 0 ? 0 : sw == 2 ? 128 : sw == 4 ? 64 : sw == 6 ? 32 : -1;
    if (s.span < 0)
        fatal(file, line, "descriptor 0x%016llx: swizzle mode %u is not modelled",
              (unsigned long long)d, sw);
    return s;
}

/* Offset of byte `kb` of row `r` of a K-major operand. */
uint32_t operand_offset(const SDesc &s, uint32_t r, uint32_t kb, uint32_t kbytes, const char *file,
                        int line) {
    if (s.span) {
        if ((s.start % (uint32_t)s.span) + kbytes > (uint32_t)s.span)
            fatal(file, line, "operand K extent of %u bytes from 0x%x crosses the swizzle atom",
                  kbytes, s.start);
        uint32_t logical = s.start + (r / 8) * s.sbo + (r % 8) * (uint32_t)s.span + kb;
        return swizzle(logical, s.span);
    }
    return s.start + (r / 8) * s.sbo + (r % 8) * 16 + (kb / 16) * s.lbo + kb % 16;
}

const uint8_t *smem_byte(Cta &cta, uint32_t off, const char *file, int line) {
    if (off < RESERVED || off >= cta.smem.size())
        fatal(file, line,
              "descriptor address 0x%x is outside CTA %d's dynamic shared window [0x%x, 0x%zx)",
              off, cta.index, RESERVED, cta.smem.size());
    return &cta.smem[off];
}

/* ---- TMEM ------------------------------------------------------------------------------------ */

uint32_t &tmem_word(Cta &cta, int lane, int col) {
    return cta.tmem[(size_t)lane * (size_t)M->capacity + (size_t)col];
}

void tmem_check_cols(Cta &cta, int col, int n, const char *file, int line) {
    if (cta.alloc_base < 0 || col < cta.alloc_base || col + n > cta.alloc_base + cta.alloc_cols)
        fatal(file, line, "TMEM columns %d..%d of CTA %d are outside its allocation (%d + %d)", col,
              col + n - 1, cta.index, cta.alloc_base, cta.alloc_cols);
}

Cta &pair_cta(int k) {
    Cluster &cl = my_cluster();
    return M->ctas[(size_t)cl.ctas[(size_t)(C().rank + k)]];
}

} // namespace

/* ======================================================================================== */

namespace fm {

dim3_t thread_idx() {
    return {(unsigned)F().tid, 0, 0};
}
dim3_t block_idx() {
    Cta &c = C();
    return {c.bx, c.by, c.bz};
}
dim3_t grid_dim() {
    return {M->L.grid[0], M->L.grid[1], M->L.grid[2]};
}
dim3_t block_dim() {
    return {M->L.threads, 1, 1};
}

void maybe_yield(const char *file, int line) {
    F().yfile = file;
    F().yline = line;
    if (chance())
        yield_now();
}

void trap(const char *file, int line) {
    fatal(file, line, "the kernel executed trap");
}

unsigned char *dynamic_smem() {
    return C().smem.data() + RESERVED;
}

uint32_t smem_addr(const void *p, const char *file, int line) {
    Cta &c = C();
    const uint8_t *b = (const uint8_t *)p;
    if (b < c.smem.data() || b >= c.smem.data() + c.smem.size())
        fatal(file, line, "cvta.to.shared of a pointer outside this CTA's shared memory");
    return (uint32_t)c.rank << 24 | (uint32_t)(b - c.smem.data());
}

/* ---- TMA ------------------------------------------------------------------------------------ */

void tma_load(int cg, uint32_t dst, const void *tmap, int rank, const int *co, uint32_t bar,
              uint16_t mask, bool multicast, const char *file, int line) {
    maybe_yield(file, line);
    Tmap t = tmap_decode(tmap, file, line);
    if ((int)t.rank != rank)
        fatal(file, line, "a %d-D TMA load through a rank-%u tensor map", rank, t.rank);
    bool u4 = t.dt == CU_TENSOR_MAP_DATA_TYPE_16U4_ALIGN16B;
    unsigned eb = u4 ? 1 : elem_bytes(t.dt);
    if (!eb)
        fatal(file, line, "tensor-map data type %d is not modelled", (int)t.dt);
    unsigned box[3] = {t.box[0], rank > 1 ? t.box[1] : 1, rank > 2 ? t.box[2] : 1};
    uint32_t row_bytes = box[0] * eb; /* 16U4_ALIGN16B: 16 nibbles + 8-byte gap = 16 bytes */
    uint32_t smem_bytes = row_bytes * box[1] * box[2];
    uint64_t tx = u4 ? (uint64_t)box[0] / 2 * box[1] * box[2] : smem_bytes;
    int span = tmap_span(t.sw);
    Cluster &cl = my_cluster();
    std::vector<int> dests;
    if (multicast) {
        for (unsigned r = 0; r < 16; r++)
            if (mask >> r & 1) {
                if (r >= cl.ctas.size())
                    fatal(file, line, "multicast mask 0x%x names rank %u of a %zu-CTA cluster",
                          mask, r, cl.ctas.size());
                dests.push_back((int)r);
            }
        if (dests.empty())
            fatal(file, line, "multicast TMA load with an empty CTA mask");
    } else {
        if ((int)(dst >> 24) != C().rank)
            fatal(file, line, "TMA destination 0x%08x is not in this CTA", dst);
        dests.push_back(C().rank);
    }
    if ((dst & 0xFFFFFFu) % 128)
        fatal(file, line, "TMA destination 0x%08x is not 128-byte aligned", dst);
    Warp &w = W();
    VC &avc = async_begin(w);
    for (int r : dests) {
        uint32_t off;
        Cta &d =
            shared_loc((uint32_t)r << 24 | (dst & 0xFFFFFFu), smem_bytes, &off, false, file, line);
        for (unsigned i2 = 0; i2 < box[2]; i2++)
            for (unsigned i1 = 0; i1 < box[1]; i1++) {
                uint32_t rowoff = off + (i2 * box[1] + i1) * row_bytes;
                int64_t g1 = rank > 1 ? (int64_t)co[1] + i1 : 0;
                int64_t g2 = rank > 2 ? (int64_t)co[2] + i2 : 0;
                bool row_in = g1 >= 0 && (rank < 2 || (uint64_t)g1 < t.dims[1]) && g2 >= 0 &&
                              (rank < 3 || (uint64_t)g2 < t.dims[2]);
                const uint8_t *grow = t.addr + (rank > 1 ? (uint64_t)g1 * t.strides[0] : 0) +
                                      (rank > 2 ? (uint64_t)g2 * t.strides[1] : 0);
                for (uint32_t b = 0; b < row_bytes; b++)
                    d.smem[swizzle(rowoff + b, span)] = 0;
                for (unsigned i0 = 0; i0 < box[0]; i0++) {
                    int64_t g0 = (int64_t)co[0] + i0;
                    bool in = row_in && g0 >= 0 && (uint64_t)g0 < t.dims[0];
                    if (!in)
                        continue;
                    if (u4) {
                        uint8_t nib = (uint8_t)(grow[g0 / 2] >> (4 * (g0 & 1)) & 0xF);
                        uint32_t o = swizzle(rowoff + (i0 / 16) * 16 + (i0 % 16) / 2, span);
                        d.smem[o] = (uint8_t)(d.smem[o] | nib << (4 * (i0 & 1)));
                    } else {
                        for (unsigned b = 0; b < eb; b++)
                            d.smem[swizzle(rowoff + i0 * eb + b, span)] = grow[g0 * eb + b];
                    }
                }
            }
        smem_access(d, off, smem_bytes, w.async, avc, true, file, line);
        /* The bytes complete on the destination's barrier, or its pair leader's with
         * cta_group::2 (the address's peer bit cleared names it). */
        int bar_rank;
        if (multicast)
            bar_rank = cg == 2 ? (r & ~1) : r;
        else
            bar_rank = (int)(bar >> 24);
        if (cg == 1 && bar_rank != r)
            fatal(file, line,
                  "cta_group::1 TMA completes on a barrier of CTA rank %d, not the "
                  "destination's (%d)",
                  bar_rank, r);
        if (cg == 2 && (bar_rank >> 1) != (r >> 1))
            fatal(file, line, "cta_group::2 TMA completes on a barrier outside the pair");
        uint32_t boff;
        Cta &bc =
            shared_loc((uint32_t)bar_rank << 24 | (bar & 0xFFFFFFu), 8, &boff, false, file, line);
        mbar_signal(bc, boff, 0, 0, (int64_t)tx, avc, file, line);
    }
}

void tma_store(const void *tmap, uint32_t src, int c0, int c1, const char *file, int line) {
    maybe_yield(file, line);
    Tmap t = tmap_decode(tmap, file, line);
    unsigned eb = elem_bytes(t.dt);
    if (t.rank != 2 || !eb)
        fatal(file, line, "TMA store through a rank-%u map of type %d", t.rank, (int)t.dt);
    uint32_t row_bytes = t.box[0] * eb, bytes = row_bytes * t.box[1], off;
    Cta &c = shared_loc(src, bytes, &off, true, file, line);
    if (off % 128)
        fatal(file, line, "TMA store source 0x%08x is not 128-byte aligned", src);
    Warp &w = W();
    VC &avc = async_begin(w);
    smem_access(c, off, bytes, w.async, avc, false, file, line);
    int span = tmap_span(t.sw);
    uint8_t *base = (uint8_t *)(uintptr_t)t.addr;
    for (unsigned i1 = 0; i1 < t.box[1]; i1++) {
        int64_t g1 = (int64_t)c1 + i1;
        if (g1 < 0 || (uint64_t)g1 >= t.dims[1])
            continue;
        for (unsigned i0 = 0; i0 < t.box[0]; i0++) {
            int64_t g0 = (int64_t)c0 + i0;
            if (g0 < 0 || (uint64_t)g0 >= t.dims[0])
                continue;
            for (unsigned b = 0; b < eb; b++)
                base[(uint64_t)g1 * t.strides[0] + (uint64_t)g0 * eb + b] =
                    c.smem[swizzle(off + i1 * row_bytes + i0 * eb + b, span)];
        }
    }
    w.open.join(avc);
}

void bulk_commit(const char *file, int line) {
    maybe_yield(file, line);
    Warp &w = W();
    w.groups.push_back(w.open);
}

/* Completion is only guaranteed for all but the newest `pending` groups: only those order.
 * `.read` (the sources have been read) and the full wait order the same here: the model tracks
 * the stores' shared-memory reads, not their global writes. */
void bulk_wait(int pending, bool read, const char *file, int line) {
    (void)read;
    maybe_yield(file, line);
    Warp &w = W();
    while ((int)w.groups.size() > pending) {
        acquire(w, w.groups.front());
        w.groups.erase(w.groups.begin());
    }
}

void fence_proxy_async(const char *file, int line) {
    maybe_yield(file, line);
    Warp &w = W();
    w.fvc.join(w.gvc);
    tick(w.gvc, w.gen);
}

void st_shared_v4(uint32_t addr, const uint32_t v[4], const char *file, int line) {
    uint32_t off;
    Cta &c = shared_loc(addr, 16, &off, true, file, line);
    if (off % 16)
        fatal(file, line, "st.shared.v4 at 0x%08x is not 16-byte aligned", addr);
    memcpy(&c.smem[off], v, 16);
    Warp &w = W();
    smem_access(c, off, 16, w.gen, w.gvc, true, file, line);
    maybe_yield(file, line);
}

void st_shared_b32(uint32_t addr, uint32_t v, const char *file, int line) {
    uint32_t off;
    Cta &c = shared_loc(addr, 4, &off, true, file, line);
    if (off % 4)
        fatal(file, line, "a 4-byte shared store at 0x%08x is not 4-byte aligned", addr);
    memcpy(&c.smem[off], &v, 4);
    Warp &w = W();
    smem_access(c, off, 4, w.gen, w.gvc, true, file, line);
    maybe_yield(file, line);
}

uint32_t ld_shared_b32(uint32_t addr, const char *file, int line) {
    uint32_t off, v;
    Cta &c = shared_loc(addr, 4, &off, true, file, line);
    if (off % 4)
        fatal(file, line, "a 4-byte shared load at 0x%08x is not 4-byte aligned", addr);
    memcpy(&v, &c.smem[off], 4);
    Warp &w = W();
    smem_access(c, off, 4, w.gen, w.gvc, false, file, line);
    maybe_yield(file, line);
    return v;
}

/* ---- TMEM allocation --------------------------------------------------------------------------
 */

void tmem_alloc(int cg, int cols, bool exclusive, uint32_t dst, const char *file, int line) {
    warp_collective(WOP_ALLOC, dst, file, line);
    if (F().lane != 0)
        return;
    Cta &c = C();
    bool pow2 = cols >= 32 && (cols & (cols - 1)) == 0 && cols <= 512;
    if (!exclusive && !pow2)
        fatal(file, line,
              "tcgen05.alloc of %d columns: a power of two in 32..512 without "
              ".exclusive",
              cols);
    if (exclusive && (cols % 32 || cols < 32))
        fatal(file, line, "tcgen05.alloc.exclusive of %d columns: not a multiple of 32", cols);
    if (cols > M->capacity)
        fatal(file, line, "tcgen05.alloc of %d columns: the arch has %d", cols, M->capacity);
    if (c.relinquished)
        fatal(file, line, "tcgen05.alloc after relinquish_alloc_permit");
    if (c.alloc_base >= 0)
        fatal(file, line, "a second tcgen05.alloc in CTA %d is not modelled", c.index);
    if (cg == 2 && my_cluster().ctas.size() < 2)
        fatal(file, line, "cta_group::2 allocation outside a CTA pair");
    c.alloc_base = 0;
    c.alloc_cols = cols;
    uint32_t off;
    Cta &d = shared_loc(dst, 4, &off, true, file, line);
    uint32_t taddr = 0; /* lane 0, column 0 */
    memcpy(&d.smem[off], &taddr, 4);
    Warp &w = W();
    smem_access(d, off, 4, w.gen, w.gvc, true, file, line);
    /* Fresh columns hold junk: NaN patterns, so a read of an unwritten column shows. */
    for (int l = 0; l < 128; l++)
        for (int col = 0; col < cols; col++)
            tmem_word(c, l, col) = 0x7FC0DEADu;
}

void tmem_relinquish(int cg, const char *file, int line) {
    (void)cg;
    warp_collective(WOP_RELINQUISH, 0, file, line);
    C().relinquished = true;
}

void tmem_dealloc(int cg, uint32_t taddr, int cols, bool exclusive, const char *file, int line) {
    (void)cg;
    (void)exclusive;
    warp_collective(WOP_DEALLOC, taddr, file, line);
    if (F().lane != 0)
        return;
    Cta &c = C();
    if (c.alloc_base < 0 || (int)(taddr & 0xFFFF) != c.alloc_base || cols != c.alloc_cols)
        fatal(file, line, "tcgen05.dealloc of %d columns at 0x%x does not match the allocation",
              cols, taddr);
    /* Freeing is a write of every column: each MMA, copy and load of them (this CTA's or the
     * pair leader's) must be ordered before it. */
    Warp &w = W();
    for (int q = 0; q < 4; q++)
        for (int col = c.alloc_base; col < c.alloc_base + c.alloc_cols; col++) {
            Cell &cell = c.tshadow[(size_t)(q * M->capacity + col)];
            if (cell.w_agent >= 0 || !cell.r.empty())
                tmem_access(c, q, col, w.gen, w.gvc, true, file, line);
            cell = Cell();
        }
    c.alloc_base = -1;
}

/* ---- tcgen05.cp, mma, commit ---------------------------------------------------------------- */

void utccp(int cg, uint32_t taddr, uint64_t sdesc, const char *file, int line) {
    maybe_yield(file, line);
    if (cg == 2 && C().rank % 2)
        fatal(file, line, "cta_group::2 tcgen05.cp issued by the odd CTA of a pair");
    SDesc s = sdesc_decode(sdesc, file, line);
    if (s.span)
        fatal(file, line, "tcgen05.cp 32x128b from a swizzled source is not modelled");
    if (taddr >> 16)
        fatal(file, line,
              "tcgen05.cp.warpx4 to lane %u: the copy fills all four lane quarters "
              "from lane 0",
              taddr >> 16);
    int col = (int)(taddr & 0xFFFF);
    Warp &w = W();
    VC &avc = async_begin(w);
    for (int k = 0; k < cg; k++) {
        Cta &c = pair_cta(k);
        tmem_check_cols(c, col, 4, file, line);
        for (uint32_t r = 0; r < 32; r++) {
            uint32_t off = operand_offset(s, r, 0, 16, file, line);
            const uint8_t *p = smem_byte(c, off, file, line);
            smem_byte(c, off + 15, file, line);
            smem_access(c, off, 16, w.async, avc, false, file, line);
            for (int j = 0; j < 4; j++) {
                uint32_t v;
                memcpy(&v, p + 4 * j, 4);
                for (int q = 0; q < 4; q++)
                    tmem_word(c, q * 32 + (int)r, col + j) = v;
            }
        }
        for (int q = 0; q < 4; q++)
            for (int j = 0; j < 4; j++) {
                /* Read last by an MMA of this thread with nothing completed in between: ordered
                 * only if the hardware keeps mma -> cp in issue order (assumed, not in the ISA
                 * text; counted, and reported once at the end). */
                Cell &cell = c.tshadow[(size_t)(q * M->capacity + col + j)];
                if (!cell.r.empty() && cell.r[(size_t)w.async].clock)
                    M->cp_after_mma++;
                tmem_access(c, q, col + j, w.async, avc, true, file, line);
            }
    }
}

namespace {

struct IDesc {
    int m, n, k, atype, btype, sf_fmt, a_sfid, b_sfid;
    bool nega, negb;
};

IDesc idesc_decode(int kind, int sf_vec, int cg, uint32_t id, const char *file, int line) {
    IDesc d;
    const bool fp4_kind = kind != sm100_kind_mxf8f6f4;
    if (id & 3)
        fatal(file, line, "idesc 0x%08x: reserved bits 0-1 set", id);
    if (id >> 2 & 1)
        fatal(file, line, "idesc 0x%08x: sparsity is not modelled", id);
    if (id >> 6 & 1)
        fatal(file, line, "idesc 0x%08x: reserved bit 6 set", id);
    d.b_sfid = (int)(id >> 4 & 3);
    d.atype = (int)(id >> 7 & 7);
    d.btype = (int)(id >> 10 & (fp4_kind ? 3 : 7));
    if (fp4_kind && (id >> 12 & 1))
        fatal(file, line, "idesc 0x%08x: bit 12 is reserved under the FP4 kinds", id);
    d.nega = id >> 13 & 1;
    d.negb = id >> 14 & 1;
    if (id >> 15 & 3)
        fatal(file, line, "idesc 0x%08x: MN-major operands are not modelled", id);
    d.n = (int)(id >> 17 & 63) << 3;
    if (M->L.arch == 107) {
        d.sf_fmt = (int)(id >> 23 & 3);
    } else {
        d.sf_fmt = (int)(id >> 23 & 1);
        if (id >> 24 & 1)
            fatal(file, line, "idesc 0x%08x: bit 24 is reserved on sm_%d", id, M->L.arch);
    }
    if (id >> 25 & 3)
        fatal(file, line, "idesc 0x%08x: reserved bits 25-26 set", id);
    d.m = (int)(id >> 27 & 3) << 7;
    d.a_sfid = (int)(id >> 29 & 3);
    if (fp4_kind) {
        int kf = (int)((id >> 3 & 1) << 1 | (id >> 31 & 1));
        d.k = kf == 0 ? 64 : kf == 1 ? 96 : kf == 2 ? 128 : 0;
        if (d.k == 0 || (d.k == 96 && M->L.arch == 100) || (d.k == 128 && M->L.arch != 107))
            fatal(file, line, "idesc 0x%08x: K field %d names no K of sm_%d", id, kf, M->L.arch);
        if (d.k == 96)
            fatal(file, line, "idesc 0x%08x: K 96 is not modelled", id);
        if (d.atype != 1 || d.btype != 1)
            fatal(file, line, "idesc 0x%08x: FP4 kinds take E2M1 (code 1), got %d x %d", id,
                  d.atype, d.btype);
    } else {
        if (id >> 3 & 1)
            fatal(file, line, "idesc 0x%08x: bit 3 is reserved under kind::mxf8f6f4", id);
        d.k = (id >> 31 & 1) ? 64 : 32;
        if (d.k == 64 && M->L.arch != 107)
            fatal(file, line, "idesc 0x%08x: K 64 under kind::mxf8f6f4 needs sm_107", id);
        for (int t : {d.atype, d.btype})
            if (t != 0 && t != 1 && t != 5)
                fatal(file, line, "idesc 0x%08x: element code %d is not modelled", id, t);
    }
    if (d.sf_fmt == 3 || (d.sf_fmt == 2 && M->L.arch != 107))
        fatal(file, line, "idesc 0x%08x: scale format %d is not defined on sm_%d", id, d.sf_fmt,
              M->L.arch);
    /* Scale format and vector per kind (hardware-facts.md F8). */
    bool ok;
    if (kind == sm100_kind_mxf8f6f4 || kind == sm100_kind_mxf4)
        ok = d.sf_fmt == 1 && sf_vec == 32;
    else
        ok = (sf_vec == 16 && (d.sf_fmt == 0 || (d.sf_fmt == 2))) ||
             (sf_vec == 32 && (d.sf_fmt == 1 || (M->L.arch == 107 && d.sf_fmt != 1)));
    if (!ok)
        fatal(file, line, "idesc 0x%08x: scale format %d with block %d is illegal for the kind", id,
              d.sf_fmt, sf_vec);
    if (cg == 1 && d.m != 128)
        fatal(file, line, "idesc 0x%08x: M %d with cta_group::1 (block-scaled M is 128)", id, d.m);
    if (cg == 2 && d.m != 256)
        fatal(file, line, "idesc 0x%08x: M %d with cta_group::2 is not modelled", id, d.m);
    if (d.n < 8 * cg || d.n > 256 || d.n % (8 * cg))
        fatal(file, line, "idesc 0x%08x: N %d is illegal with cta_group::%d", id, d.n, cg);
    return d;
}

/* How an operand element sits in SMEM: E4M3 or E5M2 bytes, E2M1 packed two per byte (element
 * 2i in the low nibble), or E2M1 unpacked: 16 nibbles in 8 bytes and an 8-byte gap
 * (16U4_ALIGN16B), which kind::mxf8f6f4 reads on sm_100/103 while sm_107 reads it packed. */
enum Storage { ST_E4M3, ST_E5M2, ST_FP4_PACKED, ST_FP4_UNPACKED };

Storage storage_of(int kind, int t) {
    if (kind != sm100_kind_mxf8f6f4)
        return ST_FP4_PACKED; /* the FP4 kinds: code 1 is E2M1 */
    if (t == 0)
        return ST_E4M3;
    if (t == 1)
        return ST_E5M2;
    return M->packed_mixed ? ST_FP4_PACKED : ST_FP4_UNPACKED;
}

uint32_t row_bytes_of(int kind, int t, int k) {
    return storage_of(kind, t) == ST_FP4_PACKED ? (uint32_t)k / 2 : (uint32_t)k;
}

double operand_elem(int kind, int t, const uint8_t *(*byte)(uint32_t, void *), void *ctx, int e) {
    switch (storage_of(kind, t)) {
    case ST_E4M3:
        return dec_elem(0, *byte((uint32_t)e, ctx));
    case ST_E5M2:
        return dec_elem(1, *byte((uint32_t)e, ctx));
    case ST_FP4_PACKED:
        return dec_elem(5, (unsigned)(*byte((uint32_t)e / 2, ctx) >> (4 * (e & 1))) & 0xF);
    default: {
        uint32_t b = (uint32_t)(e / 16) * 16 + (uint32_t)(e % 16) / 2;
        return dec_elem(5, (unsigned)(*byte(b, ctx) >> (4 * (e & 1))) & 0xF);
    }
    }
}

struct RowCtx {
    Cta *cta;
    const SDesc *s;
    uint32_t row, kbytes;
    const char *file;
    int line;
};

const uint8_t *row_byte(uint32_t kb, void *p) {
    RowCtx *r = (RowCtx *)p;
    return smem_byte(*r->cta, operand_offset(*r->s, r->row, kb, r->kbytes, r->file, r->line),
                     r->file, r->line);
}

void read_rows(int kind, int t, Cta &cta, const SDesc &s, uint32_t row0, uint32_t rows,
               uint32_t row_dst, int k, std::vector<double> &out, int agent, const VC &vc,
               const char *file, int line) {
    uint32_t kbytes = row_bytes_of(kind, t, k);
    for (uint32_t r = 0; r < rows; r++) {
        RowCtx ctx = {&cta, &s, row0 + r, kbytes, file, line};
        for (int e = 0; e < k; e++)
            out[(size_t)(row_dst + r) * (size_t)k + (size_t)e] =
                operand_elem(kind, t, row_byte, &ctx, e);
        for (uint32_t kb = 0; kb < kbytes; kb += 16)
            smem_access(cta, operand_offset(s, row0 + r, kb, kbytes, file, line), 16, agent, vc,
                        false, file, line);
    }
}

} // namespace

void mma(int cg, int kind, int sf_vec, int collector, uint32_t dt, uint64_t adesc, uint64_t bdesc,
         uint32_t idesc, uint32_t sfa, uint32_t sfb, uint32_t accumulate, const char *file,
         int line) {
    maybe_yield(file, line);
    if (cg == 2 && C().rank % 2)
        fatal(file, line, "cta_group::2 tcgen05.mma issued by the odd CTA of a pair");
    IDesc d = idesc_decode(kind, sf_vec, cg, idesc, file, line);
    Warp &w = W();
    /* .collector::b: lastuse reads the B a fill of the same B put in the collector. */
    if (collector == 2 && (!w.fill_valid || w.fill_bdesc != bdesc))
        fatal(file, line, "collector::b::lastuse without a preceding fill of the same B");
    w.fill_valid = collector == 1;
    w.fill_bdesc = bdesc;
    SDesc as = sdesc_decode(adesc, file, line), bs = sdesc_decode(bdesc, file, line);
    if ((dt >> 16) != 0)
        fatal(file, line, "accumulator address 0x%08x: lane field must be 0", dt);
    for (uint32_t a : {sfa, sfb})
        if ((a >> 16 & 0x3FFF) != 0)
            fatal(file, line, "scale TMEM address 0x%08x: lane field must be 0", a);
    int spi = d.k / sf_vec;
    for (int id : {d.a_sfid, d.b_sfid})
        if ((spi >= 4 && id != 0) || (spi < 4 && (id % spi || id + spi > 4)))
            fatal(file, line, "SF ID %d with %d scales per instruction", id, spi);
    VC &avc = async_begin(w);
    const int rows = d.m / cg, n = d.n, k = d.k, nb = n / cg;
    std::vector<double> bv((size_t)n * (size_t)k), av((size_t)rows * (size_t)k);
    for (int p = 0; p < cg; p++)
        read_rows(kind, d.btype, pair_cta(p), bs, 0, (uint32_t)nb, (uint32_t)(p * nb), k, bv,
                  w.async, avc, file, line);
    const int dcol = (int)(dt & 0xFFFF), acol = (int)(sfa & 0xFFFF), bcol = (int)(sfb & 0xFFFF);
    const int bstride = 4 * ((n + 127) / 128), astride = 4 * ((rows + 127) / 128);
    for (int p = 0; p < cg; p++) {
        Cta &c = pair_cta(p);
        read_rows(kind, d.atype, c, as, 0, (uint32_t)rows, 0, k, av, w.async, avc, file, line);
        tmem_check_cols(c, dcol, n, file, line);
        int words = (spi + 3) / 4;
        tmem_check_cols(c, acol, astride * (words - 1) + (rows - 1) / 32 + 1, file, line);
        tmem_check_cols(c, bcol, bstride * (words - 1) + (n - 1) / 32 + 1, file, line);
        /* Scales: row r's byte j at lane r, column base + (j / 4) * stride + r / 32 (F12). */
        auto scale = [&](int base, int stride, int sfid, int r, int j) {
            int b = sfid + j;
            uint32_t word = tmem_word(c, r % 128, base + (b / 4) * stride + r / 32);
            return dec_scale(d.sf_fmt, word >> (8 * (b % 4)) & 0xFF);
        };
        for (int q = 0; q < 4; q++)
            for (int x = 0; x < words; x++) {
                for (int g = 0; g < (rows + 31) / 32; g++)
                    tmem_access(c, q, acol + x * astride + g, w.async, avc, false, file, line);
                for (int g = 0; g < (n + 31) / 32; g++)
                    tmem_access(c, q, bcol + x * bstride + g, w.async, avc, false, file, line);
            }
        std::vector<double> sa((size_t)rows * (size_t)spi), sb((size_t)n * (size_t)spi);
        for (int r = 0; r < rows; r++)
            for (int j = 0; j < spi; j++)
                sa[(size_t)(r * spi + j)] = scale(acol, astride, d.a_sfid, r, j);
        for (int r = 0; r < n; r++)
            for (int j = 0; j < spi; j++)
                sb[(size_t)(r * spi + j)] = scale(bcol, bstride, d.b_sfid, r, j);
        for (int r = 0; r < rows; r++)
            for (int col = 0; col < n; col++) {
                double sum = 0;
                for (int j = 0; j < spi; j++) {
                    double blk = 0;
                    for (int e = j * sf_vec; e < (j + 1) * sf_vec; e++)
                        blk += av[(size_t)(r * k + e)] * bv[(size_t)(col * k + e)];
                    sum += blk * sa[(size_t)(r * spi + j)] * sb[(size_t)(col * spi + j)];
                }
                if (d.nega != d.negb)
                    sum = -sum;
                uint32_t &word = tmem_word(c, r, dcol + col);
                float old;
                memcpy(&old, &word, 4);
                float nv = accumulate ? old + (float)sum : (float)sum;
                memcpy(&word, &nv, 4);
            }
        for (int q = 0; q < rows / 32; q++)
            for (int col = 0; col < n; col++) {
                if (accumulate)
                    tmem_access(c, q, dcol + col, w.async, avc, false, file, line);
                tmem_access(c, q, dcol + col, w.async, avc, true, file, line);
            }
    }
}

void commit(int cg, uint32_t bar, uint16_t mask, bool multicast, const char *file, int line) {
    maybe_yield(file, line);
    (void)cg;
    Warp &w = W();
    VC &avc = async_begin(w);
    VC snap = avc;
    Cluster &cl = my_cluster();
    if (multicast) {
        for (unsigned r = 0; r < 16; r++)
            if (mask >> r & 1) {
                if (r >= cl.ctas.size())
                    fatal(file, line, "commit multicast mask 0x%x names rank %u", mask, r);
                uint32_t off;
                Cta &c = shared_loc(r << 24 | (bar & 0xFFFFFFu), 8, &off, false, file, line);
                mbar_signal(c, off, 1, 0, 0, snap, file, line);
            }
    } else {
        uint32_t off;
        Cta &c = shared_loc(bar, 8, &off, false, file, line);
        mbar_signal(c, off, 1, 0, 0, snap, file, line);
    }
}

void tcgen05_fence(const char *file, int line) {
    maybe_yield(file, line);
}

void tmem_ld16(uint32_t taddr, uint32_t r[16], const char *file, int line) {
    uint32_t same = warp_collective(WOP_LD, taddr, file, line);
    Fiber &f = F();
    Warp &w = W();
    if (!same)
        fatal(file, line, "tcgen05.ld with different addresses across the warp");
    int lane0 = (int)(taddr >> 16), col = (int)(taddr & 0xFFFF);
    if (lane0 != 32 * (f.warp % 4))
        fatal(file, line, "tcgen05.ld of lanes %d..%d from warp %d, which reaches lanes %d..%d",
              lane0, lane0 + 31, f.warp, 32 * (f.warp % 4), 32 * (f.warp % 4) + 31);
    Cta &c = C();
    tmem_check_cols(c, col, 16, file, line);
    for (int j = 0; j < 16; j++)
        r[j] = tmem_word(c, lane0 + f.lane, col + j);
    if (f.lane == 0)
        for (int j = 0; j < 16; j++)
            tmem_access(c, f.warp % 4, col + j, w.gen, w.gvc, false, file, line);
}

void tmem_wait_ld(const char *file, int line) {
    /* tcgen05.ld completes at issue in the model: nothing to wait for. */
    maybe_yield(file, line);
}

/* ---- mbarriers ------------------------------------------------------------------------------ */

void mbar_init(uint32_t bar, uint32_t count, const char *file, int line) {
    uint32_t off;
    Cta &c = shared_loc(bar, 8, &off, true, file, line);
    Mbar &m = mbar_at(c, off, file, line, false);
    if (count == 0 || count >= (1u << 20))
        fatal(file, line, "mbarrier.init with count %u", count);
    m.init = true;
    m.count = m.pending = count;
    m.phase = 0;
    m.tx = 0;
    maybe_yield(file, line);
}

void mbar_fence_init(const char *file, int line) {
    maybe_yield(file, line);
}

void mbar_wait(uint32_t bar, uint32_t parity, const char *file, int line) {
    yield_now(); /* every wait is a switch point, complete or not */
    uint32_t off;
    Cta &c = shared_loc(bar, 8, &off, true, file, line);
    Mbar &m = mbar_at(c, off, file, line);
    F().wbar = (int64_t)((uint64_t)c.index << 32 | off);
    F().wparity = parity & 1;
    while ((m.phase & 1) == (parity & 1))
        block_on(m.waiters, "mbarrier wait", file, line);
    F().wbar = -1;
    acquire(W(), m.done);
}

void mbar_arrive(uint32_t bar, const char *file, int line) {
    maybe_yield(file, line);
    uint32_t off;
    Cta &c = shared_loc(bar, 8, &off, false, file, line);
    mbar_signal(c, off, 1, 0, 0, release_generic(W()), file, line);
}

void mbar_expect_arrive(uint32_t bar, uint32_t bytes, const char *file, int line) {
    maybe_yield(file, line);
    uint32_t off;
    Cta &c = shared_loc(bar, 8, &off, false, file, line);
    mbar_signal(c, off, 1, bytes, 0, release_generic(W()), file, line);
}

void st_async_v2(uint32_t addr, uint32_t x, uint32_t y, uint32_t bar, const char *file, int line) {
    maybe_yield(file, line);
    uint32_t off, boff;
    Cta &c = shared_loc(addr, 8, &off, false, file, line);
    Cta &bc = shared_loc(bar, 8, &boff, false, file, line);
    if (&c != &bc)
        fatal(file, line, "st.async data and barrier in different CTAs");
    uint32_t v[2] = {x, y};
    memcpy(&c.smem[off], v, 8);
    Warp &w = W();
    smem_access(c, off, 8, w.gen, w.gvc, true, file, line);
    mbar_signal(bc, boff, 0, 0, 8, release_generic(w), file, line);
}

/* ---- cluster ------------------------------------------------------------------------------- */

uint32_t cluster_reg(int which) {
    Cta &c = C();
    switch (which) {
    case 0:
        return (uint32_t)c.rank;
    case 1:
        return c.bx % c.cx;
    case 2:
        return c.by % c.cy;
    case 3:
        return c.cx;
    default:
        return c.cy;
    }
}

uint32_t mapa(uint32_t addr, uint32_t rank, const char *file, int line) {
    if (rank >= my_cluster().ctas.size())
        fatal(file, line, "mapa to rank %u of a %zu-CTA cluster", rank, my_cluster().ctas.size());
    return rank << 24 | (addr & 0xFFFFFFu);
}

void cluster_arrive(const char *file, int line) {
    maybe_yield(file, line);
    Cluster &cl = my_cluster();
    Fiber &f = F();
    if (f.cl_arrivals != f.cl_waits)
        fatal(file, line, "barrier.cluster.arrive twice without a wait");
    f.cl_arrivals++;
    cl.cur.join(release_generic(W()));
    if (++cl.arrived == cl.ctas.size() * M->L.threads) {
        cl.arrived = 0;
        cl.gen++;
        M->progress++;
        cl.done.join(cl.cur);
        wake(cl.waiters);
    }
}

void cluster_wait(const char *file, int line) {
    Cluster &cl = my_cluster();
    Fiber &f = F();
    if (f.cl_waits + 1 != f.cl_arrivals)
        fatal(file, line, "barrier.cluster.wait without an arrive");
    f.cl_waits++;
    yield_now();
    while (cl.gen < f.cl_arrivals)
        block_on(cl.waiters, "cluster barrier", file, line);
    acquire(W(), cl.done);
}

/* ---- sm_90a: named barriers and wgmma -------------------------------------------------------- */

void named_barrier(uint32_t id, uint32_t threads, const char *file, int line) {
    maybe_yield(file, line);
    if (id >= 16 || threads == 0 || threads % 32 || threads > M->L.threads)
        fatal(file, line, "bar.sync %u, %u: id 0..15 and a thread count that is a multiple of 32 "
                          "up to the CTA's %u",
              id, threads, M->L.threads);
    NamedBar &b = C().nbar[id];
    if (b.cur.c.empty()) {
        b.cur.c.assign((size_t)M->nagents, 0);
        b.done.c.assign((size_t)M->nagents, 0);
    }
    if (b.arrived == 0)
        b.threads = threads;
    else if (b.threads != threads)
        fatal(file, line, "bar.sync %u with %u threads while others wait on it with %u", id,
              threads, b.threads);
    b.cur.join(release_generic(W()));
    const uint32_t gen = b.gen;
    if (++b.arrived == threads) {
        b.arrived = 0;
        b.gen++;
        M->progress++;
        b.done.join(b.cur);
        wake(b.waiters);
    } else {
        while (b.gen == gen)
            block_on(b.waiters, "named barrier", file, line);
    }
    acquire(W(), b.done);
}

/* One K-major operand of a wgmma from shared memory: the byte of row r (of 8-row atoms SBO
 * apart, 128-byte rows) and K byte k, through the 128-byte swizzle the TMA wrote it with. */
struct WgDesc {
    uint32_t start, sbo;
};

WgDesc wg_desc(uint64_t desc, const char *what, const char *file, int line) {
    WgDesc d;
    d.start = (uint32_t)(desc & 0x3FFF) << 4;
    d.sbo = (uint32_t)((desc >> 32) & 0x3FFF) << 4;
    const unsigned swz = (unsigned)(desc >> 62), base = (unsigned)((desc >> 49) & 7);
    if (swz != 1 || base != 0 || d.sbo != 1024)
        fatal(file, line,
              "wgmma %s descriptor 0x%016llx: the model reads K-major operands with 128-byte "
              "swizzle, base offset 0 and 1024-byte atoms only (swizzle %u, base %u, SBO %u)",
              what, (unsigned long long)desc, swz, base, d.sbo);
    return d;
}

uint32_t wg_offset(const WgDesc &d, uint32_t r, uint32_t k) {
    return swizzle(d.start + (r / 8) * d.sbo + (r % 8) * 128 + k, 128);
}

void wgmma_fp8(int n, float *acc, uint64_t adesc, uint64_t bdesc, uint32_t scale_d, int a_fmt,
               int b_fmt, const char *file, int line) {
    maybe_yield(file, line);
    if (n < 8 || n > 256 || n % 8)
        fatal(file, line, "wgmma m64n%dk32: N is a multiple of 8 from 8 to 256", n);
    const WgDesc da = wg_desc(adesc, "A", file, line), db = wg_desc(bdesc, "B", file, line);
    Fiber &f = F();
    Cta &cta = C();
    /* The operands lie in this CTA's window: the descriptor holds no CTA rank. */
    const uint32_t lo = RESERVED, hi = (uint32_t)cta.smem.size();
    for (uint32_t r = 0; r < 64; r += 8)
        for (uint32_t k = 0; k < 32; k += 16)
            if (wg_offset(da, r, k) < lo || wg_offset(da, r + 7, k) + 16 > hi)
                fatal(file, line, "wgmma A operand outside the dynamic window");
    for (uint32_t r = 0; r < (uint32_t)n; r += 8)
        if (wg_offset(db, r, 0) < lo || wg_offset(db, r + 7, 16) + 16 > hi)
            fatal(file, line, "wgmma B operand outside the dynamic window");
    /* The accumulator fragment of thread t of the warpgroup (PTX ISA, the wgmma D layout for
     * .m64nNk*: warp w = (t / 32) % 4, lane 4g + q): register i holds row 16w + g + 8 * ((i % 4)
     * / 2) and column 8 * (i / 4) + 2q + i % 2. */
    const int tid = f.tid % 128, w = tid / 32, g = (tid % 32) / 4, q = tid % 4;
    static double tab[2][256];
    static bool tab_ready = false;
    if (!tab_ready) {
        for (int c = 0; c < 256; c++) {
            tab[0][c] = dec_elem(0, (unsigned)c);
            tab[1][c] = dec_elem(1, (unsigned)c);
        }
        tab_ready = true;
    }
    if (a_fmt < 0 || a_fmt > 1 || b_fmt < 0 || b_fmt > 1)
        fatal(file, line, "wgmma operand formats %d, %d: E4M3 (0) or E5M2 (1)", a_fmt, b_fmt);
    double arow[2][32];
    for (int h = 0; h < 2; h++)
        for (uint32_t k = 0; k < 32; k++)
            arow[h][k] = tab[a_fmt][cta.smem[wg_offset(da, (uint32_t)(16 * w + g + 8 * h), k)]];
    for (int i = 0; i < n / 2; i++) {
        const int h = (i % 4) / 2;
        const uint32_t col = (uint32_t)(8 * (i / 4) + 2 * q + i % 2);
        float sum = 0.0f;
        for (uint32_t k = 0; k < 32; k++)
            sum += (float)(arow[h][k] * tab[b_fmt][cta.smem[wg_offset(db, col, k)]]);
        acc[i] = (scale_d ? acc[i] : 0.0f) + sum;
    }
    /* The reads, once per warp: ordered after the TMA writes (full barrier) and before the
     * stage's next writes (empty barrier), or the model reports a hazard. */
    if (f.lane == 0) {
        Warp &wp = W();
        for (uint32_t r = 0; r < 64; r++)
            for (uint32_t k = 0; k < 32; k += 16)
                smem_access(cta, wg_offset(da, r, k), 16, wp.gen, wp.gvc, false, file, line);
        for (uint32_t r = 0; r < (uint32_t)n; r++)
            for (uint32_t k = 0; k < 32; k += 16)
                smem_access(cta, wg_offset(db, r, k), 16, wp.gen, wp.gvc, false, file, line);
    }
}

/* ---- warp collectives ------------------------------------------------------------------------ */

uint32_t warp_collective(int op, uint32_t value, const char *file, int line) {
    Warp &w = W();
    Fiber &f = F();
    bool aligned = op == WOP_ALLOC || op == WOP_DEALLOC || op == WOP_RELINQUISH || op == WOP_LD;
    if (w.c_arrived == 0) {
        w.c_op = op;
        w.c_file = file;
        w.c_line = line;
    } else if (w.c_op != op || (aligned && (w.c_line != line || strcmp(w.c_file, file)))) {
        fatal(file, line,
              "divergent warp: this lane reached a warp-wide instruction (%d) while "
              "others wait at %s:%d (%d)",
              op, base_name(w.c_file), w.c_line, w.c_op);
    }
    w.c_val[f.lane] = value;
    uint32_t gen = w.c_gen;
    if (++w.c_arrived == 32) {
        uint32_t res = 0;
        switch (op) {
        case WOP_ELECT: {
            int pick = (int)(M->rng() % 32);
            for (int l = 0; l < 32; l++)
                w.c_res[l] = l == pick;
            break;
        }
        case WOP_BALLOT:
            for (int l = 0; l < 32; l++)
                res |= (w.c_val[l] != 0) << l;
            for (int l = 0; l < 32; l++)
                w.c_res[l] = res;
            break;
        case WOP_SHFL0:
        case WOP_LD:
            for (int l = 0; l < 32; l++)
                w.c_res[l] = w.c_val[0];
            if (op == WOP_LD) /* 1: every lane gave the same address */
                for (int l = 0; l < 32; l++)
                    w.c_res[l] = w.c_val[l] == w.c_val[0];
            break;
        default:
            for (int l = 0; l < 32; l++)
                w.c_res[l] = 0;
        }
        w.c_arrived = 0;
        w.c_gen++;
        wake(w.waiters);
    } else {
        while (w.c_gen == gen)
            block_on(w.waiters, "warp-wide instruction", file, line);
    }
    uint32_t r = w.c_res[f.lane];
    maybe_yield(file, line);
    return r;
}

uint32_t atom_add(uint32_t *p, uint32_t v, const char *file, int line) {
    maybe_yield(file, line);
    uint32_t old = *p;
    *p = old + v;
    return old;
}

uint64_t ld_relaxed(const uint64_t *p, const char *file, int line) {
    maybe_yield(file, line);
    return *p;
}

void st_relaxed(uint64_t *p, uint64_t v, const char *file, int line) {
    maybe_yield(file, line);
    *p = v;
}

} // namespace fm

/* ======================================================================================== */

extern "C" CUresult fm_encode_tiled(CUtensorMap *map, CUtensorMapDataType dt, cuuint32_t rank,
                                    void *addr, const cuuint64_t *dims, const cuuint64_t *strides,
                                    const cuuint32_t *box, const cuuint32_t *es,
                                    CUtensorMapInterleave il, CUtensorMapSwizzle sw,
                                    CUtensorMapL2promotion l2, CUtensorMapFloatOOBfill oob) {
    (void)l2;
    bool u4 = dt == CU_TENSOR_MAP_DATA_TYPE_16U4_ALIGN16B;
    if (rank < 1 || rank > 3 || il != CU_TENSOR_MAP_INTERLEAVE_NONE ||
        oob != CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE || (!u4 && !elem_bytes(dt)))
        return CUDA_ERROR_INVALID_VALUE;
    if ((uintptr_t)addr % (u4 ? 32 : 16))
        return CUDA_ERROR_INVALID_VALUE;
    for (unsigned i = 0; i < rank; i++) {
        if (dims[i] == 0 || dims[i] > (1ull << 32) || box[i] == 0 || box[i] > 256 || es[i] != 1)
            return CUDA_ERROR_INVALID_VALUE;
        if (i > 0 && (strides[i - 1] % (u4 ? 32 : 16) || strides[i - 1] >= (1ull << 40)))
            return CUDA_ERROR_INVALID_VALUE;
    }
    unsigned inner = u4 ? box[0] : box[0] * elem_bytes(dt);
    if (inner % 16 || (u4 && (box[0] != 128 || dims[0] % 128)))
        return CUDA_ERROR_INVALID_VALUE;
    int span = tmap_span(sw);
    if ((span && inner > (unsigned)span) || (sw != CU_TENSOR_MAP_SWIZZLE_NONE && !span))
        return CUDA_ERROR_INVALID_VALUE;
    uint64_t w[16] = {0};
    w[0] = TMAP_MAGIC;
    w[1] = (uint64_t)dt;
    w[2] = rank;
    w[3] = (uint64_t)(uintptr_t)addr;
    for (unsigned i = 0; i < 3; i++) {
        w[4 + i] = i < rank ? dims[i] : 1;
        w[9 + i] = i < rank ? box[i] : 1;
    }
    w[7] = rank > 1 ? strides[0] : 0;
    w[8] = rank > 2 ? strides[1] : 0;
    w[12] = (uint64_t)sw;
    memcpy(map, w, sizeof(w));
    return CUDA_SUCCESS;
}

/* getcontext returns twice: kept out of fm_run so no local of it can be clobbered. */
static __attribute__((noinline)) void init_fiber(Fiber &f) {
    f.stack = (char *)malloc(STACK_BYTES);
    getcontext(&f.ctx);
    f.ctx.uc_stack.ss_sp = f.stack;
    f.ctx.uc_stack.ss_size = STACK_BYTES;
    f.ctx.uc_link = &M->sched;
    makecontext(&f.ctx, (void (*)())fiber_main, 2, 0u, 0u);
}

extern "C" int fm_run(const fm_launch_t *L) {
    Model model;
    M = &model;
    M->L = *L;
    M->rng.seed(L->seed);
    M->capacity = L->arch == 107 ? 576 : 512;
    M->desc_bits = L->arch == 107 ? 15 : 14;
    M->packed_mixed = L->arch == 107;
    unsigned ncta = L->grid[0] * L->grid[1] * L->grid[2];
    M->nwarps = (int)(L->threads / 32);
    M->nagents = 2 * M->nwarps * (int)ncta;
    M->ctas.resize(ncta);
    std::map<std::pair<unsigned, unsigned>, int> cluster_of; /* (z, cluster in region) */
    for (unsigned z = 0; z < L->grid[2]; z++)
        for (unsigned y = 0; y < L->grid[1]; y++)
            for (unsigned x = 0; x < L->grid[0]; x++) {
                unsigned i = x + L->grid[0] * (y + L->grid[1] * z);
                Cta &c = M->ctas[i];
                c.index = (int)i;
                c.bx = x;
                c.by = y;
                c.bz = z;
                bool fb = z < L->fb_regions;
                c.cx = fb ? L->fb_cluster[0] : L->cluster[0];
                c.cy = fb ? L->fb_cluster[1] : L->cluster[1];
                unsigned in_region = x / c.cx + (L->grid[0] / c.cx) * (y / c.cy);
                auto key = std::make_pair(z, in_region);
                if (!cluster_of.count(key)) {
                    cluster_of[key] = (int)M->clusters.size();
                    M->clusters.emplace_back();
                    M->clusters.back().ctas.assign(c.cx * c.cy, -1);
                }
                c.cluster = cluster_of[key];
                c.rank = (int)(x % c.cx + c.cx * (y % c.cy));
                c.smem.assign(RESERVED + L->smem_bytes, 0xA5);
                c.tmem.assign((size_t)128 * (size_t)M->capacity, 0x7FC0DEADu);
                c.sshadow.resize(c.smem.size() / 16);
                c.tshadow.resize((size_t)4 * (size_t)M->capacity);
                c.live = (int)L->threads;
                M->clusters[(size_t)c.cluster].ctas[(size_t)c.rank] = (int)i;
            }
    for (Cluster &cl : M->clusters) {
        cl.cur.c.assign((size_t)M->nagents, 0);
        cl.done.c.assign((size_t)M->nagents, 0);
    }
    M->warps.resize((size_t)M->nwarps * ncta);
    for (size_t i = 0; i < M->warps.size(); i++) {
        Warp &w = M->warps[i];
        w.cta = (int)i / M->nwarps;
        w.w = (int)i % M->nwarps;
        w.gen = 2 * (int)i;
        w.async = 2 * (int)i + 1;
        for (VC *v : {&w.gvc, &w.avc, &w.fvc, &w.open})
            v->c.assign((size_t)M->nagents, 0);
        w.gvc.c[(size_t)w.gen] = 1;
        w.avc.c[(size_t)w.async] = 1;
    }
    M->fibers.resize((size_t)ncta * L->threads);
    for (size_t i = 0; i < M->fibers.size(); i++) {
        Fiber &f = M->fibers[i];
        f.cta = (int)(i / L->threads);
        f.tid = (int)(i % L->threads);
        f.warp = f.tid / 32;
        f.lane = f.tid % 32;
        init_fiber(f);
        M->runnable.push_back((int)i);
    }
    M->live = (int)M->fibers.size();
    int rc = 0;
    /* Threads that only spin (a polled global flag, nanosleep) stay runnable forever: a run of
     * this many switches with no barrier phase, cluster barrier or thread exit is a livelock. */
    const uint64_t livelock_steps = 20000000;
    uint64_t steps = 0, last_progress = 0, progress_at = 0;
    while (M->live > 0 && !M->aborted) {
        if (M->progress != last_progress) {
            last_progress = M->progress;
            progress_at = steps;
        } else if (steps - progress_at > livelock_steps) {
            fprintf(stderr,
                    "fmodel: LIVELOCK: %llu switches without progress; %d threads "
                    "unfinished\n",
                    (unsigned long long)livelock_steps, M->live);
            std::map<std::string, int> sites;
            for (Fiber &f : M->fibers)
                if (!f.done) {
                    char buf[256];
                    snprintf(buf, sizeof(buf), "CTA %d warp %d: last switch at %s:%d", f.cta,
                             f.warp, base_name(f.yfile), f.yline);
                    sites[buf]++;
                }
            for (auto &site : sites)
                fprintf(stderr, "  %s (%d lanes)\n", site.first.c_str(), site.second);
            rc = 2;
            break;
        }
        steps++;
        if (M->runnable.empty()) {
            fprintf(stderr, "fmodel: DEADLOCK: no runnable thread, %d unfinished. Waiting:\n",
                    M->live);
            std::map<std::string, int> sites;
            for (Fiber &f : M->fibers)
                if (!f.done) {
                    char buf[512], bar[200] = "";
                    if (f.wbar >= 0) {
                        uint32_t off = (uint32_t)f.wbar;
                        const Mbar &m = M->mbars[(uint64_t)f.wbar];
                        snprintf(bar, sizeof(bar),
                                 " on 0x%x (%s): phase %u in progress, waiting for parity %u, "
                                 "%u arrivals and %lld bytes outstanding",
                                 off, region_of(false, off).c_str(), m.phase, f.wparity, m.pending,
                                 (long long)m.tx);
                    }
                    snprintf(buf, sizeof(buf), "CTA %d warp %d: %s at %s:%d%s", f.cta, f.warp,
                             f.what ? f.what : "?", base_name(f.wfile), f.wline, bar);
                    sites[buf]++;
                }
            for (auto &s : sites)
                fprintf(stderr, "  %s (%d lanes)\n", s.first.c_str(), s.second);
            rc = 2;
            break;
        }
        size_t pick = (size_t)(M->rng() % M->runnable.size());
        int id = M->runnable[pick];
        M->runnable[pick] = M->runnable.back();
        M->runnable.pop_back();
        M->current = id;
        swapcontext(&M->sched, &M->fibers[(size_t)id].ctx);
        M->current = -1;
    }
    if (M->aborted)
        rc = 2;
    if (M->cp_after_mma && L->verbose)
        fprintf(stderr,
                "fmodel: note: %ld scale-column writes of tcgen05.cp followed a tcgen05.mma of "
                "the same thread that read them, with no completion in between: ordered only "
                "by the assumed in-order execution of one thread's tcgen05 operations\n",
                M->cp_after_mma);
    if (!rc && M->hazards)
        rc = 1;
    for (Fiber &f : M->fibers)
        free(f.stack);
    M = nullptr;
    return rc;
}
