// Host-only cross-check of jitgemm's tcgen05 encoders (kernel_src/tcgen05/desc.c) against
// NVIDIA's CUTLASS C++ headers (cute, from the PyPI package nvidia-cutlass). Built and run by
// scripts/tcgen05-checks/cutlass-cpp-compare.sh; no GPU and no device code: only the constexpr
// descriptor builders, MMA traits and TMEM fragment layouts of cute are evaluated on the host.
//
// Every comparison prints one row: area, case, field, CUTLASS value, jitgemm value, verdict
// (match / DIFFER / n/a with the reason). Field positions are taken from CUTLASS's own bit-field
// unions (each field set to all ones in an empty descriptor), so a field placed differently by
// the two sides shows as a difference rather than being assumed. Exit status: 0 when every
// compared field matched, 1 otherwise.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <string>
#include <unistd.h>

#include <cute/arch/mma_sm100_desc.hpp>
#include <cute/arch/mma_sm100_umma.hpp>
#include <cute/atom/mma_traits_sm100.hpp>
#include <cute/tensor.hpp>
#include <cutlass/version.h>

// tcgen05.h is C11 (for the scale-copy descriptor's LBO and SBO); its _Static_assert is C++'s.
#define _Static_assert static_assert
extern "C" {
#include "tcgen05/tcgen05.h"
#include "tcgen05/desc.h"
}

using namespace cute;

namespace {

int g_rows = 0, g_match = 0, g_differ = 0, g_na = 0;

// Negative control: perturb our side of every comparison; the script expects differences.
bool g_control = false;

// CUTLASS's words by case, for checking the descriptors of real plans (`plan` arguments).
std::map<std::string, uint32_t> g_cutlass_idesc;
uint64_t g_cutlass_kmajor[2]; // K-major 128B and 64B swizzle, start 0
uint64_t g_cutlass_sf_chunk;

void row(const char *area, const std::string &c, const char *field, const std::string &theirs,
         const std::string &ours, const char *verdict) {
    std::printf("%-6s | %-44s | %-18s | %-20s | %-20s | %s\n", area, c.c_str(), field,
                theirs.c_str(), ours.c_str(), verdict);
    g_rows++;
}

std::string hex(uint64_t v, int digits) {
    char b[32];
    std::snprintf(b, sizeof b, "0x%0*llx", digits, (unsigned long long)v);
    return b;
}

std::string dec(uint64_t v) {
    return std::to_string((unsigned long long)v);
}

void cmp(const char *area, const std::string &c, const char *field, uint64_t theirs, uint64_t ours,
         int digits = 0) {
    if (g_control)
        ours ^= 1u;
    bool same = theirs == ours;
    std::string t = digits ? hex(theirs, digits) : dec(theirs);
    std::string o = digits ? hex(ours, digits) : dec(ours);
    row(area, c, field, t, o, same ? "match" : "DIFFER");
    (same ? g_match : g_differ)++;
}

void not_compared(const char *area, const std::string &c, const char *field, const char *why) {
    row(area, c, field, "-", "-", why);
    g_na++;
}

// All ones, read at run time so that filling a narrow bit field with it is not a constant
// overflow.
volatile unsigned g_ones = ~0u;

// Mask of one CUTLASS bit field: set it to all ones in an empty descriptor.
template <class Desc, class Set> uint64_t field_mask(Set set) {
    Desc d{};
    std::memset(static_cast<void *>(&d), 0, sizeof d);
    set(d);
    uint64_t v = 0;
    std::memcpy(&v, &d, sizeof d);
    return v;
}

uint64_t extract(uint64_t word, uint64_t mask) {
    if (!mask)
        return 0;
    int lo = __builtin_ctzll(mask);
    return (word & mask) >> lo;
}

std::string bits_of(uint64_t mask) {
    int lo = __builtin_ctzll(mask), hi = 63 - __builtin_clzll(mask);
    return lo == hi ? std::to_string(lo) : std::to_string(lo) + "-" + std::to_string(hi);
}

// ---------------------------------------------------------------- instruction descriptor

using IDesc = UMMA::InstrDescriptorBlockScaled;

struct IField {
    const char *name;
    uint64_t mask;
};

// Every field of CUTLASS's block-scaled instruction descriptor, with its position as CUTLASS's
// union lays it out (bit 3 and bit 6 are unnamed there; they are checked through the word).
#define IFIELD(f)                                                                                  \
    {                                                                                              \
#f, field_mask < IDesc>([](IDesc &d) { d.f = g_ones; })                                    \
    }
const IField kIFields[] = {
    IFIELD(sparse_id2_), IFIELD(sparse_flag_), IFIELD(b_sf_id_),      IFIELD(a_format_),
    IFIELD(b_format_),   IFIELD(a_negate_),    IFIELD(b_negate_),     IFIELD(a_major_),
    IFIELD(b_major_),    IFIELD(n_dim_),       IFIELD(scale_format_), IFIELD(m_dim_),
    IFIELD(a_sf_id_),    IFIELD(k_size_),
};
#undef IFIELD

const jit__arch_profile_t *sm100a() {
    static const jit__arch_profile_t *a = jit__arch_find("sm_100a");
    return a;
}

bool our_idesc(jit__tc_kind_t kind, jit_dtype_t a, jit_dtype_t b, jit__tc_sf_format_t sf, int vec,
               int m, int n, int k, int cg, uint32_t *out, std::string *err) {
    jit__tc_idesc_params_t p{};
    p.kind = kind;
    p.a = a;
    p.b = b;
    p.sf = sf;
    p.sf_vec = vec;
    p.m = m;
    p.n = n;
    p.k = k;
    p.cta_group = cg;
    jit__diag_t d;
    jit__diag_init(&d);
    if (jit__tc_idesc(sm100a(), &p, out, &d) != JIT_OK) {
        *err = d.msg;
        return false;
    }
    return true;
}

// Compare one idesc word field by field (quiet: only a differing field gets its own row unless
// `all_fields`), then the word.
void cmp_idesc_word(const char *area, const std::string &c, uint32_t theirs, uint32_t ours,
                    bool all_fields) {
    uint64_t named = 0;
    for (const IField &f : kIFields) {
        named |= f.mask;
        uint64_t t = extract(theirs, f.mask), o = extract(ours, f.mask);
        if (all_fields || t != o) {
            std::string name = std::string(f.name) + "[" + bits_of(f.mask) + "]";
            cmp(area, c, name.c_str(), t, o);
        }
    }
    uint64_t unnamed = ~named & 0xFFFFFFFFull;
    if (all_fields || (theirs & unnamed) != (ours & unnamed))
        cmp(area, c, "unnamed bits", theirs & unnamed, ours & unnamed, 8);
    cmp(area, c, "word", theirs, ours, 8);
}

// One case through CUTLASS's MMA atom traits (the descriptor the CUTLASS kernel issues) and
// through jit__tc_idesc with the same kind, types, shape and CTA group.
template <class Op>
void idesc_case(const char *label, jit__tc_kind_t kind, jit_dtype_t a, jit_dtype_t b,
                jit__tc_sf_format_t sf, int vec, int m, int n, int k, int cg, bool all_fields) {
    MMA_Traits<Op> traits;
    uint32_t theirs = uint32_t(traits.idesc_);
    g_cutlass_idesc[std::string(label) + "|" + std::to_string(cg) + "|" + std::to_string(m) + "|" +
                    std::to_string(n)] = theirs;
    // The traits' K must be the K we encode: otherwise the comparison is of different MMAs.
    using MNK = typename MMA_Traits<Op>::Shape_MNK;
    int tk = int(size<2>(MNK{})), tm = int(size<0>(MNK{})), tn = int(size<1>(MNK{}));
    std::string c = std::string(label) + " " + std::to_string(cg) + "cta M" + std::to_string(m) +
                    " N" + std::to_string(n);
    if (tk != k || tm != m || tn != n) {
        cmp("idesc", c, "atom MxNxK", (uint64_t)tm * 1000000 + tn * 1000 + tk,
            (uint64_t)m * 1000000 + n * 1000 + k);
        return;
    }
    uint32_t ours = 0;
    std::string err;
    if (!our_idesc(kind, a, b, sf, vec, m, n, k, cg, &ours, &err)) {
        row("idesc", c, "word", hex(theirs, 8), "error", "DIFFER");
        std::printf("       jitgemm: %s\n", err.c_str());
        g_differ++;
        return;
    }
    cmp_idesc_word("idesc", c, theirs, ours, all_fields);
}

using E4M3 = float_e4m3_t;
using E2M1 = float_e2m1_t;                     // packed FP4: the FP4 kinds
using E2M1U = detail::float_e2m1_unpacksmem_t; // FP4 as kind::mxf8f6f4 takes it
using UE8 = float_ue8m0_t;
using UE4 = float_ue4m3_t;
constexpr auto KM = UMMA::Major::K;

template <int N> void idesc_all_kinds(bool all_fields) {
    const jit__tc_kind_t F8 = JIT_TC_KIND_MXF8F6F4, F4 = JIT_TC_KIND_MXF4,
                         NV = JIT_TC_KIND_MXF4NVF4;
    const jit_dtype_t e4 = JIT_DTYPE_E4M3, e2 = JIT_DTYPE_E2M1;
    // 1 CTA, M 128
    idesc_case<SM100_MMA_MXF8F6F4_SS<E4M3, E4M3, float, UE8, 128, N, KM, KM>>(
        "mxf8f6f4 e4m3xe4m3 ue8m0/32", F8, e4, e4, JIT_TC_SF_UE8M0, 32, 128, N, 32, 1, all_fields);
    idesc_case<SM100_MMA_MXF8F6F4_SS<E4M3, E2M1U, float, UE8, 128, N, KM, KM>>(
        "mxf8f6f4 e4m3xe2m1 ue8m0/32", F8, e4, e2, JIT_TC_SF_UE8M0, 32, 128, N, 32, 1, all_fields);
    idesc_case<SM100_MMA_MXF8F6F4_SS<E2M1U, E4M3, float, UE8, 128, N, KM, KM>>(
        "mxf8f6f4 e2m1xe4m3 ue8m0/32", F8, e2, e4, JIT_TC_SF_UE8M0, 32, 128, N, 32, 1, all_fields);
    idesc_case<SM100_MMA_MXF4_SS<E2M1, E2M1, float, UE8, 128, N, 32, KM, KM>>(
        "mxf4 e2m1 ue8m0/32", F4, e2, e2, JIT_TC_SF_UE8M0, 32, 128, N, 64, 1, all_fields);
    idesc_case<SM100_MMA_MXF4_SS<E2M1, E2M1, float, UE4, 128, N, 16, KM, KM>>(
        "mxf4nvf4 e2m1 ue4m3/16", NV, e2, e2, JIT_TC_SF_UE4M3, 16, 128, N, 64, 1, all_fields);
    idesc_case<SM100_MMA_MXF4_SS<E2M1, E2M1, float, UE8, 128, N, 32, KM, KM>>(
        "mxf4nvf4 e2m1 ue8m0/32", NV, e2, e2, JIT_TC_SF_UE8M0, 32, 128, N, 64, 1, all_fields);
    // 2 CTAs, M 256 over the pair (CUTLASS's 2x1SM atoms take M = 256 only)
    if constexpr (N % 16 == 0) {
        idesc_case<SM100_MMA_MXF8F6F4_2x1SM_SS<E4M3, E4M3, float, UE8, 256, N, KM, KM>>(
            "mxf8f6f4 e4m3xe4m3 ue8m0/32", F8, e4, e4, JIT_TC_SF_UE8M0, 32, 256, N, 32, 2,
            all_fields);
        idesc_case<SM100_MMA_MXF8F6F4_2x1SM_SS<E4M3, E2M1U, float, UE8, 256, N, KM, KM>>(
            "mxf8f6f4 e4m3xe2m1 ue8m0/32", F8, e4, e2, JIT_TC_SF_UE8M0, 32, 256, N, 32, 2,
            all_fields);
        idesc_case<SM100_MMA_MXF4_2x1SM_SS<E2M1, E2M1, float, UE8, 256, N, 32, KM, KM>>(
            "mxf4 e2m1 ue8m0/32", F4, e2, e2, JIT_TC_SF_UE8M0, 32, 256, N, 64, 2, all_fields);
        idesc_case<SM100_MMA_MXF4_2x1SM_SS<E2M1, E2M1, float, UE4, 256, N, 16, KM, KM>>(
            "mxf4nvf4 e2m1 ue4m3/16", NV, e2, e2, JIT_TC_SF_UE4M3, 16, 256, N, 64, 2, all_fields);
        idesc_case<SM100_MMA_MXF4_2x1SM_SS<E2M1, E2M1, float, UE8, 256, N, 32, KM, KM>>(
            "mxf4nvf4 e2m1 ue8m0/32", NV, e2, e2, JIT_TC_SF_UE8M0, 32, 256, N, 64, 2, all_fields);
        // 2 CTAs, M 128 over the pair: CUTLASS has it for the FP4 kinds only
        idesc_case<SM100_MMA_MXF4_2x1SM_SS<E2M1, E2M1, float, UE8, 128, N, 32, KM, KM>>(
            "mxf4 e2m1 ue8m0/32", F4, e2, e2, JIT_TC_SF_UE8M0, 32, 128, N, 64, 2, all_fields);
        idesc_case<SM100_MMA_MXF4_2x1SM_SS<E2M1, E2M1, float, UE4, 128, N, 16, KM, KM>>(
            "mxf4nvf4 e2m1 ue4m3/16", NV, e2, e2, JIT_TC_SF_UE4M3, 16, 128, N, 64, 2, all_fields);
    }
}

template <int... Ns> void idesc_sweep(std::integer_sequence<int, Ns...>) {
    // N = 64 + 8 i; every field is printed for N 128 and 256, only the words (and any differing
    // field) for the others.
    (idesc_all_kinds<64 + 8 * Ns>(64 + 8 * Ns == 128 || 64 + 8 * Ns == 256), ...);
}

void idesc_sf_ids() {
    // CUTLASS ORs the SF IDs (bits 31:30 of the scale TMEM addresses) into the descriptor at
    // issue time; ours patches the same fields.
    const uint32_t addrs[][2] = {{0x00000000u, 0x00000000u},
                                 {0x40000000u | 100u, 0x80000000u | 104u},
                                 {0xC0000000u | 0x7F0004u, 0x40000000u | 0x200u},
                                 {0x80000000u | 36u, 0xC0000000u | 44u}};
    auto base = UMMA::make_instr_desc_block_scaled<E2M1, E2M1, float, UE4, 128, 256, KM, KM>();
    uint32_t ours_base = 0;
    std::string err;
    if (!our_idesc(JIT_TC_KIND_MXF4NVF4, JIT_DTYPE_E2M1, JIT_DTYPE_E2M1, JIT_TC_SF_UE4M3, 16, 128,
                   256, 64, 1, &ours_base, &err)) {
        row("sfid", "mxf4nvf4 1cta M128 N256", "word", "-", "error", "DIFFER");
        g_differ++;
        return;
    }
    for (auto &ab : addrs) {
        uint32_t theirs =
            uint32_t(UMMA::make_runtime_instr_desc_block_scaled<>(base, ab[0], ab[1]) >> 32);
        uint32_t ours = jit__tc_idesc_with_sf_ids(ours_base, ab[0], ab[1]);
        cmp("sfid", "sfa " + hex(ab[0], 8) + " sfb " + hex(ab[1], 8), "word", theirs, ours, 8);
    }
}

// ---------------------------------------------------------------- shared-memory descriptor

using SDesc = UMMA::SmemDescriptor;

struct SField {
    const char *name;
    uint64_t mask;
    uint64_t ours_mask; // the same field as desc.c's decoder reads it
};

#define SFIELD(f, om)                                                                              \
    {                                                                                              \
#f, field_mask < SDesc>([](SDesc &d) { d.f = g_ones; }), om                                \
    }
const SField kSFields[] = {
    SFIELD(start_address_, 0x3FFFull),
    SFIELD(leading_byte_offset_, 0x3FFFull << 16),
    SFIELD(stride_byte_offset_, 0x3FFFull << 32),
    SFIELD(version_, 0x7ull << 46),
    SFIELD(base_offset_, 0x7ull << 49),
    SFIELD(lbo_mode_, 0x1ull << 52),
    SFIELD(layout_type_, 0x7ull << 61),
};
#undef SFIELD

// make_umma_desc reads the start address with a device intrinsic; on the host cute prints an
// error line and uses 0. Silence that line so the table stays readable.
template <class F> SDesc quietly(F f) {
    std::fflush(stdout);
    int saved = dup(1);
    FILE *null = std::fopen("/dev/null", "w");
    if (null)
        dup2(fileno(null), 1);
    SDesc d = f();
    std::fflush(stdout);
    if (saved >= 0) {
        dup2(saved, 1);
        close(saved);
    }
    if (null)
        std::fclose(null);
    return d;
}

void cmp_smem_desc(const std::string &c, uint64_t theirs, uint64_t ours) {
    for (const SField &f : kSFields) {
        std::string name = std::string(f.name) + "[" + bits_of(f.mask) + "]";
        if (f.mask != f.ours_mask) {
            // Positions differ: report where each side has the field, then the values.
            bool differ = (f.mask & ~f.ours_mask) || g_control;
            row("smem", c, (std::string(f.name) + " bits").c_str(), bits_of(f.mask),
                bits_of(f.ours_mask), differ ? "DIFFER" : "match (ours 1 bit wider)");
            if (differ)
                g_differ++;
            else
                g_match++;
        }
        cmp("smem", c, name.c_str(), extract(theirs, f.mask), extract(ours, f.mask));
    }
    cmp("smem", c, "word", theirs, ours, 16);
}

alignas(1024) static uint8_t g_buf[64 * 1024];

template <class T> void smem_k_sw128(const char *label) {
    // A K-major, 128-byte-swizzled operand tile of 128 rows x 128 bytes of K, as CUTLASS's
    // collective lays it out (Layout_K_SW128_Atom tiled to the tile) and as our planner does
    // (kernel_src/tcgen05/plan.c: SBO = 8 rows x 128 bytes, LBO 16, swizzle 128B).
    constexpr int kElems = 128 * 8 / int(sizeof_bits_v<T>); // 128 bytes of K
    auto layout = tile_to_shape(UMMA::Layout_K_SW128_Atom<T>{}, Shape<_128, Int<kElems>>{});
    auto t = make_tensor(make_smem_ptr(reinterpret_cast<T *>(g_buf)), layout);
    SDesc d = quietly([&] { return UMMA::make_umma_desc<UMMA::Major::K>(t); });
    uint64_t ours = jit__tc_smem_desc(14, 0, 16, 1024, JIT_TC_SWIZZLE_128B, 0);
    cmp_smem_desc(std::string(label) + " K-major SW128 (addr 0)", d.desc_, ours);

    // Start address: CUTLASS's field filled with a real shared::cta address (the host cannot
    // convert a pointer), against ours for the same address. 0x1A400: 1 KiB reserved + a tile
    // at 104 KiB, 1024-aligned.
    const uint32_t addrs[] = {0x400u, 0x1A400u, 0x3FC00u};
    for (uint32_t addr : addrs) {
        SDesc da = d;
        da.start_address_ = uint16_t(addr >> 4);
        uint64_t o = jit__tc_smem_desc(14, addr, 16, 1024, JIT_TC_SWIZZLE_128B, 0);
        cmp("smem", std::string(label) + " start " + hex(addr, 5), "word", da.desc_, o, 16);
        // K step inside the 128-byte atom: CUTLASS's DescriptorIterator adds 16-byte units to
        // the low word; ours advances the start field.
        for (uint32_t step : {32u, 64u, 96u}) {
            UMMA::DescriptorIterator it{da};
            uint64_t theirs = (*(it + int(step / 16))).desc_;
            uint64_t adv = jit__tc_smem_desc_advance(14, o, step);
            cmp("smem", std::string(label) + " start " + hex(addr, 5) + " +" + dec(step) + "B",
                "word", theirs, adv, 16);
        }
    }
}

void smem_scale_copy() {
    // The tcgen05.cp source: one 512-byte scale chunk, 32 lines of 16 bytes, K-major, no
    // swizzle. CUTLASS builds it with make_umma_desc<K> over the copy's core-matrix tensor
    // (get_utccp_smem_desc_tensor); ours is sf_desc_hi in kernel_src/tcgen05/generate.c.
    auto t = make_tensor(make_smem_ptr(reinterpret_cast<uint8_t *>(g_buf)),
                         Layout<Shape<_32, _16>, Stride<_16, _1>>{});
    SDesc d = quietly([&] { return UMMA::make_umma_desc<UMMA::Major::K>(t); });
    uint64_t ours =
        jit__tc_smem_desc(14, 0, JIT_TC_SF_DESC_LBO, JIT_TC_SF_DESC_SBO, JIT_TC_SWIZZLE_NONE, 0);
    cmp_smem_desc("scale chunk 32x16B no swizzle", d.desc_, ours);
    g_cutlass_sf_chunk = d.desc_;
}

// CUTLASS's descriptors for 128 rows of K-major bytes with 128- and 64-byte swizzle (the two
// layouts our plans give A and B), start address 0.
void cutlass_kmajor_bytes() {
    auto t128 =
        make_tensor(make_smem_ptr(reinterpret_cast<uint8_t *>(g_buf)),
                    tile_to_shape(UMMA::Layout_K_SW128_Atom<uint8_t>{}, Shape<_128, _128>{}));
    auto t64 = make_tensor(make_smem_ptr(reinterpret_cast<uint8_t *>(g_buf)),
                           tile_to_shape(UMMA::Layout_K_SW64_Atom<uint8_t>{}, Shape<_128, _64>{}));
    g_cutlass_kmajor[0] = quietly([&] { return UMMA::make_umma_desc<UMMA::Major::K>(t128); }).desc_;
    g_cutlass_kmajor[1] = quietly([&] { return UMMA::make_umma_desc<UMMA::Major::K>(t64); }).desc_;
}

// A real plan's descriptors (from `jitgemm inspect --plan --json`, passed by the script):
// idesc against CUTLASS's atom of the same kind and shape, the A/B and scale-copy descriptors
// against CUTLASS's for the same layout in every field but the start address (which CUTLASS
// cannot compute on the host; the plan's own start field is kept on both sides).
void plan_case(const std::string &name, const std::string &label, int cg, int m, int n,
               uint32_t idesc, uint64_t adesc, uint64_t bdesc, uint64_t sfdesc) {
    std::string key =
        label + "|" + std::to_string(cg) + "|" + std::to_string(m) + "|" + std::to_string(n);
    auto it = g_cutlass_idesc.find(key);
    if (it == g_cutlass_idesc.end())
        not_compared("plan", name, "idesc", "n/a: no CUTLASS atom for this kind/shape");
    else
        cmp_idesc_word("plan", name, it->second, idesc, false);
    const uint64_t start = 0x3FFFull;
    const uint64_t *ops[2] = {&adesc, &bdesc};
    const char *op_names[2] = {"A desc", "B desc"};
    for (int i = 0; i < 2; i++) {
        uint64_t ours = *ops[i];
        unsigned sw = unsigned(ours >> 61);
        int which = sw == JIT_TC_SWIZZLE_128B ? 0 : sw == JIT_TC_SWIZZLE_64B ? 1 : -1;
        if (which < 0) {
            not_compared("plan", name, op_names[i], "n/a: swizzle other than 128B/64B");
            continue;
        }
        cmp("plan", name, op_names[i], (g_cutlass_kmajor[which] & ~start) | (ours & start), ours,
            16);
    }
    cmp("plan", name, "scale cp desc", (g_cutlass_sf_chunk & ~start) | (sfdesc & start), sfdesc,
        16);
}

// ---------------------------------------------------------------- scale-factor TMEM layout

// docs/blackwell-rubin.md / hardware-facts.md F12: row r's scale j of an MMA sits at lane r % 32
// of every lane quarter, column (j / 4) * stride + r / 32, byte j % 4 (the byte is what the SF
// ID selects). Within one MMA (at most 4 scales per row) that is column r / 32, byte j.
template <class Frg, int MN, int VS, int NSF> void sf_tmem_case(const char *label) {
    auto shape = make_shape(make_shape(Int<MN>{}, make_shape(Int<VS>{}, Int<NSF>{})), _1{}, _1{});
    auto frg = Frg::make(shape);
    auto lay = frg.layout();
    int bad = 0, checked = 0;
    std::string first;
    for (int r = 0; r < MN; r++) {
        for (int j = 0; j < NSF; j++) {
            for (int v = 0; v < VS; v += VS - 1) {
                auto crd = make_coord(make_coord(r, make_coord(v, j)), 0, 0);
                uint32_t off = uint32_t(lay(crd));
                uint32_t addr = (frg.data() + off).get();
                uint32_t lane = (addr >> 16) & 0xFFu, col = addr & 0xFFFFu, byte = addr >> 30;
                uint32_t olane = r % 32, ocol = r / 32 + (g_control ? 1 : 0), obyte = j;
                checked++;
                if (lane != olane || col != ocol || byte != obyte) {
                    if (!bad++) {
                        char b[160];
                        std::snprintf(b, sizeof b,
                                      "row %d scale %d: cutlass lane %u col %u byte %u, docs "
                                      "lane %u col %u byte %u",
                                      r, j, lane, col, byte, olane, ocol, obyte);
                        first = b;
                    }
                }
            }
        }
    }
    cmp("sftmem", label, "cells differing", (uint64_t)bad, 0);
    if (bad)
        std::printf("       first: %s (%d of %d cells)\n", first.c_str(), bad, checked);
    // The replicas: CUTLASS's REP mode puts copies 32 lanes apart (all four lane quarters), as
    // tcgen05.cp.32x128b.warpx4 writes them.
    int rep_bad = 0;
    for (int q = 0; q < 4 && MN >= 128; q++) {
        auto crd = make_coord(make_coord(make_coord(make_coord(5, 1), q), make_coord(0, 0)), 0, 0);
        uint32_t addr = (frg.data() + uint32_t(lay(crd))).get();
        if (((addr >> 16) & 0xFFu) != 5u + 32u * q || (addr & 0xFFFFu) != 1u)
            rep_bad++;
    }
    cmp("sftmem", label, "replica lanes off", (uint64_t)rep_bad, 0);
}

} // namespace

int main(int argc, char **argv) {
    int argi = 1;
    if (argi < argc && std::strcmp(argv[argi], "--control") == 0) {
        g_control = true;
        argi++;
    }
    std::printf("CUTLASS %d.%d.%d (cute headers), jitgemm desc.c on sm_100a\n", CUTLASS_MAJOR,
                CUTLASS_MINOR, CUTLASS_PATCH);
    std::printf("%-6s | %-44s | %-18s | %-20s | %-20s | %s\n", "area", "case", "field", "CUTLASS",
                "jitgemm", "verdict");

    idesc_sweep(std::make_integer_sequence<int, 25>{});
    not_compared("idesc", "mxf8f6f4 2cta M128", "word",
                 "n/a: CUTLASS's SM100_MMA_MXF8F6F4_2x1SM_SS takes M 256 only");
    not_compared("idesc", "K 96 (k_size_ bit 31)", "word",
                 "n/a: K 96 is sm_103a only (CUTLASS SM103 traits); not an sm_100a MMA");
    idesc_sf_ids();

    smem_k_sw128<float_e4m3_t>("e4m3 A/B");
    smem_k_sw128<float_e2m1_t>("e2m1 packed A/B");
    smem_scale_copy();
    cutlass_kmajor_bytes();
    not_compared("smem", "start address from a pointer", "start_address_",
                 "n/a: needs __cvta_generic_to_shared (device only); field filled by hand above");

    using SFA1 = UMMA::tmem_sf_frg<UE8, 32, 1, true>;
    using SFB1 = UMMA::tmem_sf_frg<UE8, 32, 1, false>;
    using SFA16 = UMMA::tmem_sf_frg<UE4, 16, 1, true>;
    using SFB16 = UMMA::tmem_sf_frg<UE4, 16, 1, false>;
    using SFA2 = UMMA::tmem_sf_frg<UE4, 16, 2, true>;
    using SFB2 = UMMA::tmem_sf_frg<UE4, 16, 2, false>;
    sf_tmem_case<SFA1, 128, 32, 1>("SFA 1cta mxf8f6f4 K32 (1 scale)");
    sf_tmem_case<SFA1, 128, 32, 2>("SFA 1cta mxf4 K64 (2 scales)");
    sf_tmem_case<SFA16, 128, 16, 4>("SFA 1cta nvf4 K64 (4 scales)");
    sf_tmem_case<SFB1, 128, 32, 2>("SFB 1cta N128 mxf4 (2 scales)");
    sf_tmem_case<SFB16, 256, 16, 4>("SFB 1cta N256 nvf4 (4 scales)");
    sf_tmem_case<SFA2, 128, 16, 4>("SFA 2cta M256 nvf4 (per CTA)");
    sf_tmem_case<SFB2, 256, 16, 4>("SFB 2cta N256 nvf4 (4x1)");

    // plan NAME LABEL CTA_GROUP M N IDESC A_DESC B_DESC SF_DESC
    for (; argi + 10 <= argc && std::strcmp(argv[argi], "plan") == 0; argi += 10) {
        char **a = argv + argi;
        plan_case(a[1], a[2], std::atoi(a[3]), std::atoi(a[4]), std::atoi(a[5]),
                  uint32_t(std::strtoul(a[6], nullptr, 0)), std::strtoull(a[7], nullptr, 0),
                  std::strtoull(a[8], nullptr, 0), std::strtoull(a[9], nullptr, 0));
    }
    if (argi != argc) {
        std::fprintf(stderr,
                     "compare_desc: unexpected argument %s (usage: compare_desc "
                     "[--control] [plan NAME LABEL CTA_GROUP M N IDESC A_DESC B_DESC "
                     "SF_DESC]...)\n",
                     argv[argi]);
        return 2;
    }

    std::printf("\n%d rows: %d matched, %d differed, %d not compared\n", g_rows, g_match, g_differ,
                g_na);
    return g_differ ? 1 : 0;
}
