/*
 * Kernel families. A family is one way of computing the GEMM on some archs (the FP8 mma.sync
 * family, the tcgen05 block-scaled family, ...): it lives in one folder under kernel_src/ and
 * is one row of the ordered registry in kernel_src/registry.c. The pipeline asks the registry
 * which family takes a problem and then calls only through this table; nothing else switches on
 * a family. docs/architecture.md ("How to add a family") lists what a new family provides.
 */
#ifndef JIT_FAMILY_H
#define JIT_FAMILY_H

#include <cuda.h>

#include "diag.h"
#include "driver.h"
#include "key.h"
#include "plan.h"
#include "strbuf.h"

/* What a launch needs besides the plan: the caller's problem and operands, with the row
 * strides resolved (elements; never 0), and the stream. For 128x128 scales, where SFA's element
 * (m, kb) is: sfa[m * sfa_stride_m + kb * sfa_stride_k] (1 and ld_sfa m-major, ld_sfa and 1
 * k-major; 0 for the other modes). */
typedef struct jit__launch_args {
    const jit_problem_t *problem;
    const jit_operands_t *operands;
    int64_t lda, ldb, ldd, ldr;
    CUstream stream;
    int64_t sfa_stride_m, sfa_stride_k;
} jit__launch_args_t;

/* Host inputs of a family's FP64 reference, as the GPU reads them. scale_a and scale_b are FP32
 * vectors for row scales, the 128x4 tiled block-scale bytes for the 8-bit block formats, and for
 * 128x128 FP32 SFA (element (m, kb) at sfa_stride_m * m + sfa_stride_k * kb) and SFB
 * ([ceil(N/128)][ceil(K/128)]). */
typedef struct jit__ref_inputs {
    int64_t m;
    const uint8_t *a;
    int64_t lda_bytes;
    const uint8_t *b;
    int64_t ldb_bytes;
    const void *scale_a, *scale_b;
    const uint16_t *residual; /* BF16 bits [M][ldr], linear_add only */
    int64_t ldr;
    float alpha;
    int64_t sfa_stride_m, sfa_stride_k; /* 128x128 only */
} jit__ref_inputs_t;

typedef struct jit__family {
    const char *name;        /* in keys, plan JSON and the manifest: "fp8_mma_sync" */
    const char *kernel_name; /* the generated entry point */
    /* JIT_OK when the family computes `spec` on `arch`. A problem of a kind the family never
     * computes is declined with JIT_UNSUPPORTED and no message (the diag untouched); one of
     * its kind that it cannot take here fails the diag with a status and a message, which the
     * registry reports if no later family takes the problem. */
    jit_status_t (*supports)(const jit__gemm_spec_t *spec, const jit__arch_profile_t *arch,
                             jit__diag_t *d);
    /* Optional: check the family's comparison switches (environment variables that select
     * another form of its kernels). A value it does not know fails planning outright, for
     * every problem, instead of quietly building the default under the switch's name. */
    jit_status_t (*check_switches)(jit__diag_t *d);
    /* Fill the plan; family, arch, spec, token_band and sm_count are already set. Pure. */
    jit_status_t (*plan)(jit__plan_t *plan, jit__diag_t *d);
    /* Optional, for families with a cost model: make the plan use candidate `index` of its own
     * candidate list instead of the model's choice (the sweep benchmark times every
     * candidate through JITGEMM_FORCE_CANDIDATE). */
    jit_status_t (*replan)(jit__plan_t *plan, int index, jit__diag_t *d);
    /* Append the key fields this family owns (" name=value" each) beyond the common ones. */
    void (*key_fields)(const jit__plan_t *plan, jit__sb_t *sb);
    /* The CUDA source of the plan; `key` is quoted in its header comment. *source malloc'd. */
    jit_status_t (*generate)(const jit__plan_t *plan, const jit__key_t *key, char **source,
                             jit__diag_t *d);
    /* Add the family's own fields to the plan's JSON object (a json_t *). 0 on success. */
    int (*plan_to_json)(const jit__plan_t *plan, void *json_object);
    /* Once per loaded kernel: the launch state the family keeps (NULL when it keeps none). */
    jit_status_t (*prepare)(const jit__driver_t *drv, CUfunction fn, const jit__plan_t *plan,
                            void **state, jit__diag_t *d);
    jit_status_t (*launch)(const jit__driver_t *drv, CUfunction fn, const jit__plan_t *plan,
                           void *state, const jit__launch_args_t *args, jit__diag_t *d);
    /* Free what prepare made (called with the state prepare returned, never NULL). */
    void (*release)(const jit__driver_t *drv, void *state);
    /* The FP64 host reference: out[m][j] for j < Nout before rounding, and the accumulation
     * magnitude `mag` a tolerance scales with (kernel_src/reference/reference.h). */
    void (*reference)(const jit__gemm_spec_t *spec, const jit__ref_inputs_t *in, double *out,
                      double *mag);
    /* The tolerance a result of this family is checked with against `reference`: it encodes
     * the family's accumulation numerics (kernel_src/reference/reference.h). */
    double (*tolerance)(double ref, double mag);
    /* An environment variable that must be "1" before this family's kernels are launched
     * (kernels never run on hardware), or NULL. */
    const char *launch_opt_in;
    /* 1: the family computes grouped problems (spec.groups > 0, jit_gemm_grouped) and only
     * those; 0: dense problems only. The registry asks a family only for its own kind. */
    int grouped;
} jit__family_t;

/* ---- the registry (kernel_src/registry.c) ---- */

/* The families in the order they are asked, registered ones first. *count receives how many. */
const jit__family_t *const *jit__families(size_t *count);

/* Put a family in front of the built-in ones (for tests and out-of-tree families). Not
 * thread-safe: call it before any context plans. Returns JIT_INVALID_ARGUMENT for a family
 * without a name or a required function, JIT_OUT_OF_MEMORY when the table is full. */
jit_status_t jit__family_register(const jit__family_t *family);
/* Remove a registered family again (tests). */
void jit__family_unregister(const jit__family_t *family);

/* The family of that name, or NULL. */
const jit__family_t *jit__family_find(const char *name);

/* Validate the spec, pick the first family that supports it on `arch`, and plan with it. */
jit_status_t jit__plan_make(const jit__gemm_spec_t *spec, int token_band, int sm_count,
                            const jit__arch_profile_t *arch, jit__plan_t *out, jit__diag_t *d);

/* The kernel's entry point name (the family's). */
const char *jit__plan_kernel_name(const jit__plan_t *plan);

/* The plan as JSON text (newly allocated, free()). Fields are documented in docs/plan.md. */
char *jit__plan_to_json(const jit__plan_t *plan);

/* The plan's source: the family's generator. */
jit_status_t jit__generate(const jit__plan_t *plan, const jit__key_t *key, char **source,
                           jit__diag_t *d);

#endif
