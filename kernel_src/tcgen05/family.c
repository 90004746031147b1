/*
 * The tcgen05 block-scaled family's registry row (sm_100a, sm_103a, sm_107a). Its kernels are
 * generated, compiled and checked statically only: no Blackwell or Rubin GPU was available to
 * run them, so launching one needs the user's explicit opt-in (launch_opt_in below).
 *
 * Launch state: the occupancy-sized launch shape and the scheduler's device workspace, made once
 * per loaded kernel. One workspace serves every launch of the kernel, so launches are ordered on
 * the GPU: each waits for the previous one's event, whatever its stream, under `lock`.
 */
#include <pthread.h>
#include <stdlib.h>

#include "plan_tc.h"
#include "reference.h"
#include "tc_launch.h"
#include "tcgen05_gen.h"

static int is_block_mode(jit_scale_mode_t s) {
    return s == JIT_SCALE_UE8M0_32 || s == JIT_SCALE_UE4M3_16 || s == JIT_SCALE_UE5M3_16 ||
           s == JIT_SCALE_UE5M3_32;
}

static jit_status_t supports(const jit__gemm_spec_t *s, const jit__arch_profile_t *arch,
                             jit__diag_t *d) {
    if (!is_block_mode(s->scales))
        return JIT_UNSUPPORTED;
    if (!arch->has_tcgen05)
        return jit__fail(d, JIT_UNSUPPORTED_ARCH, "block-scaled %s is not supported on %s yet",
                         jit__tc_format_name(s->a, s->b, s->scales), arch->name);
    return JIT_OK;
}

static jit_status_t plan(jit__plan_t *p, jit__diag_t *d) {
    jit__gemm_spec_t spec = p->spec;
    return jit__plan_tc_make(&spec, p->token_band, p->sm_count, p->arch, p, d);
}

/* Everything the tcgen05 plan decides follows from the common key fields. */
static void key_fields(const jit__plan_t *p, jit__sb_t *sb) {
    (void)p;
    (void)sb;
}

typedef struct tc_state {
    jit__tc_launch_dims_t dims;
    CUdeviceptr workspace;
    CUevent done;
    pthread_mutex_t lock;
    int lock_made;
} tc_state_t;

static void release(const jit__driver_t *drv, void *state) {
    tc_state_t *s = state;
    if (s->done)
        drv->cuEventDestroy(s->done);
    if (s->workspace)
        drv->cuMemFree(s->workspace);
    if (s->lock_made)
        pthread_mutex_destroy(&s->lock);
    free(s);
}

static jit_status_t prepare(const jit__driver_t *drv, CUfunction fn, const jit__plan_t *plan,
                            void **state, jit__diag_t *d) {
    tc_state_t *s = calloc(1, sizeof(*s));
    if (!s)
        return jit__fail(d, JIT_OUT_OF_MEMORY, "tcgen05 launch state");
    jit_status_t st = jit__tc_launch_dims_query(drv, fn, plan, NULL, &s->dims, d);
    if (st != JIT_OK) {
        release(drv, s);
        return st;
    }
    size_t bytes = jit__tc_workspace_bytes(s->dims.token_slots);
    CUresult r = drv->cuMemAlloc(&s->workspace, bytes);
    if (r == CUDA_SUCCESS)
        r = drv->cuMemsetD8(s->workspace, 0, bytes);
    if (r == CUDA_SUCCESS)
        r = drv->cuEventCreate(&s->done, CU_EVENT_DISABLE_TIMING);
    if (r != CUDA_SUCCESS) {
        st = jit__cuda_fail(drv, r, "allocating the tcgen05 scheduler workspace", d);
        release(drv, s);
        return st;
    }
    pthread_mutex_init(&s->lock, NULL);
    s->lock_made = 1;
    *state = s;
    return JIT_OK;
}

static jit_status_t launch(const jit__driver_t *drv, CUfunction fn, const jit__plan_t *plan,
                           void *state, const jit__launch_args_t *a, jit__diag_t *d) {
    tc_state_t *s = state;
    const jit_problem_t *p = a->problem;
    /* The tensor maps hold the operands' addresses, so they are encoded for every call. */
    jit__tc_shape_t shape = {p->m, p->n, p->k, a->lda, a->ldb, a->ldd};
    jit__tc_params_t params;
    jit_status_t st =
        jit__tc_params_build(drv, plan, &shape, a->operands, p->alpha, a->ldr,
                             (void *)(uintptr_t)s->workspace, s->dims.token_slots, &params, d);
    if (st != JIT_OK)
        return st;
    pthread_mutex_lock(&s->lock);
    CUresult r = drv->cuStreamWaitEvent(a->stream, s->done, 0);
    if (r == CUDA_SUCCESS) {
        st = jit__tc_launch(drv, fn, plan, &s->dims, &params, a->stream, d);
        if (st == JIT_OK)
            r = drv->cuEventRecord(s->done, a->stream);
    }
    pthread_mutex_unlock(&s->lock);
    if (r != CUDA_SUCCESS)
        return jit__cuda_fail(drv, r, "ordering tcgen05 launches", d);
    return st;
}

static void reference(const jit__gemm_spec_t *spec, const jit__ref_inputs_t *in, double *out,
                      double *mag) {
    jit__ref_blockscaled(spec, in->m, in->a, in->lda_bytes, in->b, in->ldb_bytes,
                         (const uint8_t *)in->scale_a, (const uint8_t *)in->scale_b, in->residual,
                         in->ldr, in->alpha, out, mag);
}

const jit__family_t jit__family_tcgen05 = {
    .name = "tcgen05_blockscaled",
    .kernel_name = "jitgemm_tcgen05_blockscaled",
    .supports = supports,
    .plan = plan,
    .key_fields = key_fields,
    .generate = jit__gen_tcgen05,
    .plan_to_json = jit__plan_tc_to_json,
    .prepare = prepare,
    .launch = launch,
    .release = release,
    .reference = reference,
    .tolerance = jit__ref_tolerance,
    .launch_opt_in = "JITGEMM_ALLOW_UNVERIFIED_TCGEN05",
};
