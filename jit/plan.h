/*
 * The plan: what the kernel of one problem looks like. A plan is a common header, which every
 * stage after planning reads (tile, stages, threads, shared memory, cluster), plus a payload
 * that only the plan's own family reads (jit/family.h). The header never depends on a family,
 * so this file includes no family's headers and a new family adds no field here.
 *
 * Planning is a pure function of (N, K, dtypes, scale mode, epilogue, token band, SM count,
 * arch profile). M never enters except through its token band, so every M in one band shares
 * one kernel and M stays a runtime argument.
 */
#ifndef JIT_PLAN_H
#define JIT_PLAN_H

#include <stddef.h>
#include <stdint.h>

#include "arch.h"
#include "diag.h"
#include "jitgemm.h"

/* The version of the key's format: bumped when the key text gains, loses or re-orders a field.
 * Changes to device code need no bump: the hash of every embedded device file is in each key
 * (kernel_src/device_files.h). Entries of another version are removed by `cache gc`. */
#define JIT_KEY_FORMAT_VERSION 5

/* The problem without M and without pointers: what a kernel is specialized on. */
typedef struct jit__gemm_spec {
    int64_t n, k;
    jit_dtype_t a, b, out;
    jit_scale_mode_t scales;
    jit_epilogue_t epilogue;
    /* The scales' element type, resolved (jit__scale_type_resolved): F32 for 128x128, DEFAULT
     * for the modes whose word names their format. Not a common key field: the families whose
     * modes have a choice put it in their own. */
    jit_scale_type_t scale_type;
    /* Grouped GEMM: G experts (0: dense) and where their A rows are. Only families that
     * declare `grouped` (jit/family.h) see a spec with groups > 0. */
    int64_t groups;
    jit_group_layout_t layout;
} jit__gemm_spec_t;

/* Token bands: M in [1,16], [17,64], [65,128], [129,256], [257,1024], [1025, inf). One m-tile
 * of 128 rows covers every M up to 128, and two of them from 129: the best tile changes there
 * (docs/performance.md, the sweep), so that is a band edge. */
#define JIT_TOKEN_BANDS 6
int jit__token_band(int64_t m);
/* The smallest and largest M of a band (the largest of the last band is INT64_MAX). */
void jit__token_band_range(int band, int64_t *lo, int64_t *hi);

struct jit__family;

/* One configuration a cost model weighed: which family and route, its tile and depth, and the
 * time the model gave it for the band's representative M. */
#define JIT_PLAN_MAX_CANDIDATES 24
typedef struct jit__plan_candidate {
    char route[24]; /* the family's name for the variant, e.g. "wgmma_tma" */
    int tile_m, tile_n, stages;
    double modelled_us;
} jit__plan_candidate_t;

/* Bytes a family may keep in its plan payload. The largest today is the tcgen05 plan
 * (kernel_src/tcgen05/tcgen05.h); each family asserts that its payload fits. */
#define JIT_PLAN_PAYLOAD_BYTES 832

typedef struct jit__plan {
    const struct jit__family *family;
    const jit__arch_profile_t *arch;
    jit__gemm_spec_t spec;
    int token_band;
    int sm_count;
    /* CTA tile and pipeline. For linear_swiglu, tile_n counts B rows (gate and up), so a CTA
     * writes tile_n / 2 output columns. */
    int tile_m, tile_n, tile_k;
    int stages;
    int threads;
    uint32_t smem_bytes; /* dynamic shared memory per CTA */
    /* 0: one CTA per output tile; 1: persistent, the grid is sized at load time. */
    int persistent;
    int cluster_m, cluster_n;                   /* preferred cluster shape */
    int fallback_cluster_m, fallback_cluster_n; /* 0 if none */
    /* The cost model (families that have one): the modelled time of this plan at the band's
     * representative M (0: the family has no model, and the registry's order decides), every
     * candidate weighed (across families), which one was chosen and why. Not part of the key:
     * the chosen configuration is, through the fields above and the family's own. */
    double modelled_us;
    int64_t model_m;
    int n_candidates, chosen;
    jit__plan_candidate_t candidates[JIT_PLAN_MAX_CANDIDATES];
    char reason[160];
    /* Family-private: read only through the family's own accessor. Plain bytes with the
     * strictest alignment, so a plan is copied by value like any struct. */
    union {
        max_align_t align_;
        unsigned char bytes[JIT_PLAN_PAYLOAD_BYTES];
    } payload;
} jit__plan_t;

/* The M a cost model plans a band for: one that is typical of the band's traffic. */
int64_t jit__token_band_model_m(int band);

/* Append a candidate to the plan's list (dropped silently when the list is full). */
void jit__plan_add_candidate(jit__plan_t *plan, const char *route, int tile_m, int tile_n,
                             int stages, double modelled_us);

/* Spec from a public problem (checks only what the spec itself holds). */
jit_status_t jit__spec_from_problem(const jit_problem_t *p, jit__gemm_spec_t *out, jit__diag_t *d);

/* A problem's scale type with DEFAULT made explicit where the mode has a choice (128x128:
 * F32); what the spec and the launch key hold, so that DEFAULT and F32 are one kernel. */
jit_scale_type_t jit__scale_type_resolved(jit_scale_mode_t mode, jit_scale_type_t type);
/* Whether the caller's problem struct has the grouped fields (one built against an older
 * header ends before them, and describes a dense problem). */
#define JIT__PROBLEM_HAS_GROUPS(p)                                                                 \
    ((p)->struct_size >= offsetof(jit_problem_t, group_flags) + sizeof((p)->group_flags))

/* The M a problem's token band is taken from: m for a dense problem; for a grouped one the
 * rows an expert is expected to have (expected_m, else m / groups rounded up), since one kernel
 * serves every routing and its tile suits the experts' sizes, not their sum. The grouped fields
 * are read only when struct_size covers them. */
int64_t jit__problem_band_m(const jit_problem_t *p);

/* Output columns: N, or N/2 for linear_swiglu. */
int64_t jit__spec_out_cols(const jit__gemm_spec_t *spec);

/* The checks every family relies on (positive n and k below 2^31, band and SM count in range,
 * a known epilogue, an even n for linear_swiglu, a scale type only where the mode has a
 * choice, and for a grouped spec 1..JIT_MAX_GROUPS groups with a layout). */
jit_status_t jit__spec_check(const jit__gemm_spec_t *spec, int token_band, int sm_count,
                             jit__diag_t *d);

#endif
