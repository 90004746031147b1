/*
 * The tcgen05 family's plan payload: instruction kind, shape and descriptor,
 * operand SMEM layouts, the SMEM and TMEM maps, cluster shapes and the grid estimate. Filled by
 * the tcgen05 planner (kernel_src/tcgen05/plan.c); the generator reads it and makes no decision
 * of its own that depends on arch or shape. Figures and rules: docs/hardware-facts.md F7-F15.
 *
 * Conventions. plan->tile_m/tile_n/tile_k are the MMA tile over the CTA pair (tile_m 128 for
 * one CTA, 256 for cta_group::2, 512 with B-reuse); the per-CTA shares are cta_rows_a and
 * cta_rows_b. SMEM offsets are bytes from the start of dynamic shared memory; stage s of a
 * staged buffer starts at offset + s * stage_bytes. TMEM columns are relative to the address
 * tcgen05.alloc returns.
 *
 * The payload lives in the plan's family-private bytes (jit/plan.h); jit__tc_of() reads it.
 */
#ifndef JIT_TCGEN05_H
#define JIT_TCGEN05_H

#include <stdint.h>

#include "arch.h"
#include "desc.h"
#include "diag.h"
#include "families.h"
#include "jitgemm.h"
#include "plan.h"

/* How an operand sits in SMEM, as its TMA box and MMA descriptor see it. */
typedef enum jit__tc_operand_storage {
    JIT_TC_STORE_8BIT = 1,       /* FP8, one byte per element */
    JIT_TC_STORE_FP4_PACKED = 2, /* two E2M1 per byte (FP4 kinds; mixed on sm_107a) */
    JIT_TC_STORE_FP4_UNPACKED =
        3 /* 16U4_ALIGN16B: 8 packed bytes + 8-byte gap (mixed, sm_100/103) */
} jit__tc_operand_storage_t;

/* TMA element type for an operand (CUtensorMapDataType names). */
typedef enum jit__tc_tma_type {
    JIT_TC_TMA_UINT8 = 1,         /* FP8, and packed FP4 as bytes (K/2 per row) */
    JIT_TC_TMA_16U4_ALIGN16B = 2, /* unpacked FP4 container (U4_UNPACK_U8) */
    JIT_TC_TMA_UINT16 = 3         /* scale-factor chunks: 256 two-byte elements per 512 B */
} jit__tc_tma_type_t;

typedef struct jit__tc_operand {
    jit_dtype_t dtype;
    int format_code; /* idesc code under the plan's kind */
    jit__tc_operand_storage_t storage;
    jit__tc_tma_type_t tma_type;
    int rows;                 /* rows this CTA loads per stage (A: M rows, B: N rows) */
    uint32_t row_bytes;       /* SMEM bytes of one row of one K tile */
    uint32_t gmem_row_bytes;  /* GMEM bytes of one row of one K tile (expect_tx basis) */
    uint32_t stage_bytes;     /* SMEM bytes per stage = rows * row_bytes */
    uint32_t box_inner_bytes; /* TMA box inner extent in SMEM bytes (<= swizzle span) */
    int boxes_per_stage;      /* TMA boxes along K per stage (row_bytes / box_inner) */
    jit__tc_swizzle_t swizzle;
    uint32_t lbo, sbo;     /* descriptor LBO/SBO in bytes */
    uint32_t align;        /* required base alignment (swizzle repeat) */
    uint32_t k_step_bytes; /* descriptor start advance per MMA instruction */
    int multicast;         /* loaded with multicast across the cluster */
} jit__tc_operand_t;

/* One SMEM buffer. `count` stages of `stage_bytes` each (count 1: a single buffer). */
typedef struct jit__tc_smem_buffer {
    const char *name; /* "barriers", "tmem_ptr", "a", "b", "sfa", "sfb", "c" */
    uint32_t offset;
    uint32_t stage_bytes;
    int count;
    uint32_t size; /* stage_bytes * count */
    uint32_t align;
    int mma_operand;   /* read by tcgen05.mma or tcgen05.cp: must stay below 256 KiB */
    int cp_async_dest; /* written by cp.async.cg: must stay below arch->cp_async_cg_limit */
} jit__tc_smem_buffer_t;

#define JIT_TC_MAX_BUFFERS 8
enum {
    JIT_TC_BUF_BARRIERS = 0,
    JIT_TC_BUF_TMEM_PTR = 1,
    JIT_TC_BUF_A = 2,
    JIT_TC_BUF_B = 3,
    JIT_TC_BUF_SFA = 4,
    JIT_TC_BUF_SFB = 5,
    JIT_TC_BUF_C = 6,
    JIT_TC_BUF_COUNT = 7
};

/* Why the stage count is what it is. */
typedef enum jit__tc_stage_limit {
    JIT_TC_STAGES_BY_SMEM = 1,         /* (cap - reserved - C) / per-stage */
    JIT_TC_STAGES_BY_OPERAND_256K = 2, /* MMA/UTCCP operands must end below 256 KiB */
    JIT_TC_STAGES_BY_MAX = 3,          /* planner's ceiling (JIT_TC_MAX_STAGES) */
} jit__tc_stage_limit_t;
#define JIT_TC_MAX_STAGES 16
#define JIT_TC_SMEM_RESERVED 1024u /* barriers + TMEM pointer slot, counted as one block */
/* One 512-byte scale-factor chunk: 32 lines of 16 bytes, the unit of TMA, UTCCP and TMEM. */
#define JIT_TC_SF_CHUNK_BYTES 512u
/* The tcgen05.cp source descriptor of a scale chunk: 32 lines of 16 bytes, no swizzle, 8-line
 * core matrices 128 bytes apart (SBO). A chunk is one core matrix wide, so LBO should not be
 * read; it is 16 bytes, the value NVIDIA's CUTLASS C++ headers (make_umma_desc in
 * cute/atom/mma_traits_sm100.hpp) and CUTLASS DSL 4.8.1 both emit (docs/blackwell-rubin.md). */
#define JIT_TC_SF_DESC_LBO 16u
#define JIT_TC_SF_DESC_SBO 128u

typedef struct jit__tc_smem_plan {
    int stages;
    jit__tc_stage_limit_t stage_limit;
    uint32_t per_stage_bytes; /* A + B + SFA + SFB */
    uint32_t c_bytes;         /* epilogue staging, all C stages */
    int c_stages;
    int epi_tile_n;       /* output columns per epilogue sub-tile (C stage) */
    uint32_t bytes;       /* total dynamic SMEM (== plan->smem_bytes) */
    uint32_t cap;         /* arch->smem_per_cta */
    uint32_t operand_end; /* end of the last MMA/UTCCP operand byte */
    int n_buffers;
    jit__tc_smem_buffer_t buffers[JIT_TC_MAX_BUFFERS]; /* indexed by JIT_TC_BUF_* */
    /* mbarriers (8 bytes each) at the start of the "barriers" buffer, in this order:
     * full[stages], empty[stages], acc_full[acc_stages], acc_empty[acc_stages], then two for
     * the work-ID broadcast. The buffer spans the reserved KiB up to "tmem_ptr"; what the
     * barriers leave is free for small metadata (a work-ID ring). */
    int n_barriers;
} jit__tc_smem_plan_t;

typedef struct jit__tc_tmem_acc {
    int first_column; /* of this accumulator stage (first M-half with B-reuse) */
    int columns;      /* tile N (times m_halves with B-reuse) */
} jit__tc_tmem_acc_t;

typedef struct jit__tc_tmem_plan {
    int capacity;          /* arch->tmem_columns */
    int used_columns;      /* highest column used + 1 */
    int allocated_columns; /* nCols for tcgen05.alloc */
    int acc_stages;        /* 1 or 2 */
    int m_halves;          /* accumulators per stage (2 with B-reuse, else 1) */
    int acc_half_stride;   /* columns between the two M-half accumulators (B-reuse), else 0 */
    jit__tc_tmem_acc_t acc[2];
    int overlap;         /* stages share columns (sm_100a/103a, 2 x 256 + SF > 512) */
    int overlap_columns; /* columns stage 0 and stage 1 share */
    /* With overlap: stage 0 is drained in reverse sub-tile order and its shared columns are
     * released after sub-tile `early_release_subtile` (counted in drain order); -1 if none. */
    int reverse_traversal;
    int early_release_subtile;
    int early_release_column;          /* first column of stage 0 that stage 1 reuses; -1 if none */
    int sfa_first_column, sfa_columns; /* all SFA columns (both M-halves with B-reuse) */
    int sfa_half_stride;               /* columns between the M-halves' SFA, else 0 */
    int sfb_first_column, sfb_columns;
} jit__tc_tmem_plan_t;

typedef struct jit__tc_grid {
    int ctas_per_sm;           /* occupancy estimate (1: SMEM-bound persistent CTAs) */
    int fallback_capacity;     /* CTAs that fit as fallback clusters: (sm_count / F) * F */
    int preferred_clusters;    /* z extent = fallback_capacity / preferred cluster size */
    int x, y, z;               /* launch grid in CTAs: (cluster_m, cluster_n, z) */
    int split_factor;          /* preferred size / fallback size */
    int fallback_groups_whole; /* fallback cluster count divisible by split_factor */
    int fallback_clusters;     /* estimated fallback clusters beside the preferred ones,
                                * rounded down to whole groups of split_factor */
} jit__tc_grid_t;

typedef struct jit__tc_plan {
    int valid;
    jit__tc_kind_t kind;
    const char *kind_suffix; /* ".block16", ".block32" or "" (mxf8f6f4) */
    int instr_m, instr_n, instr_k;
    int cta_group;         /* 1 or 2 */
    int breuse;            /* B reuse (tile M 512, collector::b fill/lastuse), sm_107a */
    int instrs_per_tile_k; /* tile_k / instr_k */
    int cta_rows_a;        /* A rows per CTA (128, or 256 with B-reuse) */
    int cta_rows_b;        /* B rows per CTA (tile_n / cta_group) */
    uint32_t idesc;        /* SF IDs 0; patched per instruction */
    jit__tc_sf_format_t scale_format;
    int sf_vec;         /* 16 or 32 */
    int sf_per_instr;   /* scales per row one instruction reads */
    int sfa_chunks_k;   /* 512-byte SF chunks along K per stage per 128 rows */
    int sfb_row_blocks; /* 128-row SFB blocks per stage (ceil(tile_n / 128)) */
    int packed_fp4;     /* an FP4 operand is packed in SMEM under mxf8f6f4 (sm_107a) */
    int fp6_packed;     /* always 0: FP6 is never packed (kept for the rule's record) */
    jit__tc_operand_t a, b;
    uint32_t sfa_stage_bytes, sfb_stage_bytes;
    uint32_t expect_tx_bytes; /* per stage per CTA, GMEM bytes (packed FP4 counts half) */
    int tma_warps;            /* 1: one warp loads A, B, SFA and SFB */
    int circular_desc;        /* 0: no absolute-LBO descriptors (no K=96 mode) */
    int mid_tile_release;     /* 0: a stage is released only after its whole tile */
    int epilogue_warps;       /* 4 */
    int mma_warp, tma_warp, first_epilogue_warp;
    jit__tc_smem_plan_t smem;
    jit__tc_tmem_plan_t tmem;
    int cluster_m, cluster_n;                   /* preferred */
    int fallback_cluster_m, fallback_cluster_n; /* 0 if none */
    jit__tc_grid_t grid;
    const char *ptx_version_min;    /* the .block16/.block32 spellings need PTX ISA 8.8 */
    jit__tc_tma_type_t sf_tma_type; /* UINT16: a 512-byte chunk is 256 elements, one box row */
    /* B-reuse: per K block, tcgen05.cp keep-SFA, SFB, reuse-SFA, then the keep and reuse MMAs
     * (instead of every copy of the tile up front), so the first MMA waits on 3 copies. */
    int utccp_interleaved;
} jit__tc_plan_t;

/* A forced variant, for the compile matrix and tests: 0 in a field means the planner's choice.
 * breuse: -1 off, 0 planner's choice, 1 on. */
typedef struct jit__tc_variant {
    int cta_group; /* 1 or 2 */
    int tile_n;    /* 64, 128, 192 or 256 */
    int breuse;
} jit__tc_variant_t;

_Static_assert(sizeof(jit__tc_plan_t) <= JIT_PLAN_PAYLOAD_BYTES, "tcgen05 plan payload");

/* The tcgen05 payload of a plan of this family (const in, const out). */
#define jit__tc_of(plan)                                                                           \
    _Generic((plan),                                                                            \
        const jit__plan_t *: (const jit__tc_plan_t *)(const void *)(plan)->payload.bytes,     \
        jit__plan_t *: (jit__tc_plan_t *)(void *)(plan)->payload.bytes)

/* Plan a block-scaled GEMM for tcgen05. Fills plan->family, tile_*, stages, threads,
 * smem_bytes, persistent = 1, cluster fields and the payload (jit__tc_of); the caller has set
 * nothing else it relies on. JIT_UNSUPPORTED_ARCH on an arch without tcgen05 ("block-scaled
 * <format> is not supported on <arch> yet"), JIT_UNSUPPORTED for an illegal format combination,
 * JIT_INVALID_SHAPE for N/K the kernel cannot tile, JIT_PLAN_FAILED when SMEM or TMEM does not
 * fit. Pure. */
jit_status_t jit__plan_tc_make(const jit__gemm_spec_t *spec, int token_band, int sm_count,
                               const jit__arch_profile_t *arch, jit__plan_t *plan, jit__diag_t *d);

/* The same with parts of the variant forced; an illegal forced variant is an error (e.g.
 * B-reuse off sm_107a, JIT_UNSUPPORTED_ARCH), never a silently different plan. */
jit_status_t jit__plan_tc_make_variant(const jit__gemm_spec_t *spec, int token_band, int sm_count,
                                       const jit__arch_profile_t *arch,
                                       const jit__tc_variant_t *variant, jit__plan_t *plan,
                                       jit__diag_t *d);

/* Add the tcgen05 fields (docs/plan.md) to the plan's JSON object (a json_t*). 0 on success,
 * -1 on allocation failure. */
int jit__plan_tc_to_json(const jit__plan_t *plan, void *json_object);

/* Short format name for messages: "mxfp8", "mxfp4", "nvfp4", "fp4/ue5m3", "mixed fp8 x fp4",
 * or "block-scaled" if the combination has no name. */
const char *jit__tc_format_name(jit_dtype_t a, jit_dtype_t b, jit_scale_mode_t scales);

/* ---- building blocks, exposed for the generator and the tests ---------------------------- */

/* Instruction K (elements) for a kind on an arch: sm_100a/103a FP4 64, mxf8f6f4 32; sm_107a
 * FP4 128, mxf8f6f4 64. 0 if the arch has no tcgen05. */
int jit__tc_instr_k(const jit__arch_profile_t *arch, jit__tc_kind_t kind);

/* Whether a 4-bit (or 6-bit, bits = 6) operand of mxf8f6f4 is packed in SMEM on `arch`:
 * FP4 packed only where arch->packed_fp4_in_mixed, FP6 never. */
int jit__tc_subbyte_packed(const jit__arch_profile_t *arch, int bits);

/* TMEM allocation for `columns` used: power of two >= 32 up to 512; above 512, a multiple of
 * 32 (only where capacity > 512). 0 if it cannot be allocated within `capacity`. */
int jit__tc_tmem_alloc_columns(int columns, int capacity);

/* TMEM map for the accumulators and scales. acc_columns = tile N (B rows of the MMA), sfa/sfb
 * = scale columns per stage (sfa for one M-half), m_halves 2 with B-reuse, acc_stages 1 or 2.
 * Disjoint stages when they fit; otherwise, if allow_overlap, stage 1 starts at
 * 256 - (sfa+sfb) (reverse traversal, early release after sub-tile sf_cols / epi_tile_n);
 * else JIT_PLAN_FAILED. */
jit_status_t jit__tc_tmem_plan(int capacity, int acc_columns, int m_halves, int acc_stages,
                               int sfa_columns, int sfb_columns, int allow_overlap, int epi_tile_n,
                               jit__tc_tmem_plan_t *out, jit__diag_t *d);

/* Stage count of the SMEM budget formula: (cap - reserved - c_bytes) / per_stage, 0 if none. */
/* plan_smem.c: the stage count and SMEM layout of `tc` (operands already set), checked. */
jit_status_t jit__tc_plan_smem(jit__tc_plan_t *tc, const jit__arch_profile_t *arch, int acc_stages,
                               jit__diag_t *d);

int jit__tc_stage_count(uint32_t cap, uint32_t reserved, uint32_t c_bytes, uint32_t per_stage);

/* Check every buffer of an SMEM map: base alignment, no overlap, MMA/UTCCP operands below
 * 256 KiB, cp.async.cg destinations below arch->cp_async_cg_limit, total <= cap. */
jit_status_t jit__tc_smem_check(const jit__tc_smem_plan_t *smem, const jit__arch_profile_t *arch,
                                jit__diag_t *d);

/* Scale TMEM placement for K instruction `k_instr` of a tile: column offset (relative to the
 * SFA/SFB first column) and SF ID (byte inside the word), so the TMEM address passed to the
 * MMA is base + column with the ID in bits 31:30. which: 0 = SFA, 1 = SFB. For SFA with
 * B-reuse add tmem.sfa_half_stride for the second M-half. */
void jit__tc_sf_slot(const jit__tc_plan_t *tc, int which, int k_instr, int *column,
                     unsigned *sf_id);

/* TMEM column (relative to the SFA/SFB first column) that SF chunk (row block `mn`, K chunk
 * `kc`) of one stage is copied to with tcgen05.cp: K-chunk-major, row-block-minor, 4 columns
 * per chunk. Its SMEM offset inside the stage is (mn * chunks_k + kc) * 512. */
int jit__tc_sf_chunk_column(const jit__tc_plan_t *tc, int which, int mn, int kc);

/* The host's guard for a mixed-cluster launch with a dynamic scheduler: fallback clusters
 * pair up in groups of split_factor, so a count that is not a whole number of groups would
 * leave a member waiting forever. JIT_INVALID_ARGUMENT unless fallback_clusters >= 0 is a
 * multiple of split_factor and split_factor is a power of two <= 16. */
jit_status_t jit__tc_check_fallback_groups(int fallback_clusters, int split_factor, jit__diag_t *d);

#endif
