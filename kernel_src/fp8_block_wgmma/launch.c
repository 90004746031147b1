/*
 * The block-scaled wgmma family's launch: the tensor maps of A and B (kept per operand pointer
 * and shape, since a serving loop calls with the same weights every time and an encode costs
 * about a microsecond), the parameter block, the grid and the cluster attribute, and for the
 * decode route with split K its workspace.
 */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "bsw.h"

#define BK 128

typedef struct tmap_memo {
    const void *ptr;
    int64_t rows, ld;
    int box_rows;
    jit__bsw_tmap_t map;
} tmap_memo_t;

/* Decode with split K also keeps the partials' workspace and the per-tile counters, sized for
 * the band's largest M and zeroed once (the kernel leaves the counters at zero). Launches that
 * share them are ordered on the GPU: each waits for the previous one's event, whatever its
 * stream. Under stream capture the event may only be waited on when it was recorded in the same
 * capture (the driver refuses a dependency on work outside it), so the state remembers which
 * capture, if any, recorded it last; the launches of one graph are ordered by the graph itself
 * and its replays by the stream they are launched on. */
typedef struct bsw_state {
    pthread_mutex_t lock;
    tmap_memo_t a, b;
    int max_clusters; /* co-resident clusters (cluster plans), 0 if not known */
    CUdeviceptr workspace, counters;
    CUevent done;
    int recorded;            /* `done` has been recorded at least once */
    cuuint64_t done_capture; /* capture id of the last record, 0 outside capture */
} bsw_state_t;

void jit__bsw_release(const jit__driver_t *drv, void *state) {
    bsw_state_t *s = state;
    if (s->done)
        drv->cuEventDestroy(s->done);
    if (s->workspace)
        drv->cuMemFree(s->workspace);
    if (s->counters)
        drv->cuMemFree(s->counters);
    pthread_mutex_destroy(&s->lock);
    free(s);
}

/* The split-K workspace and counters of a decode plan, for the band's largest M. */
static jit_status_t alloc_workspace(const jit__driver_t *drv, const jit__plan_t *plan,
                                    bsw_state_t *s, jit__diag_t *d) {
    int64_t lo, hi;
    jit__token_band_range(plan->token_band, &lo, &hi);
    const size_t ws = jit__bsw_decode_workspace_bytes(plan, hi),
                 counters = jit__bsw_decode_counter_bytes(plan, hi);
    if (ws == 0)
        return JIT_OK;
    CUresult r = drv->cuMemAlloc(&s->workspace, ws);
    if (r == CUDA_SUCCESS)
        r = drv->cuMemAlloc(&s->counters, counters);
    if (r == CUDA_SUCCESS)
        r = drv->cuMemsetD8(s->counters, 0, counters);
    if (r == CUDA_SUCCESS)
        r = drv->cuEventCreate(&s->done, CU_EVENT_DISABLE_TIMING);
    return r == CUDA_SUCCESS ? JIT_OK
                             : jit__cuda_fail(drv, r, "allocating the decode workspace", d);
}

/* How many clusters of the plan's shape the device can hold at once. */
static jit_status_t resident_clusters(const jit__driver_t *drv, CUfunction fn,
                                      const jit__plan_t *plan, int *out, jit__diag_t *d) {
    const jit__bsw_plan_t *bp = jit__bsw_cof(plan);
    *out = 0;
    if (bp->cluster <= 1 || !drv->cuOccupancyMaxActiveClusters)
        return JIT_OK;
    CUlaunchConfig cfg;
    memset(&cfg, 0, sizeof(cfg));
    cfg.gridDimX = (unsigned)(plan->sm_count / bp->cluster * bp->cluster);
    cfg.gridDimY = cfg.gridDimZ = 1;
    cfg.blockDimX = (unsigned)plan->threads;
    cfg.blockDimY = cfg.blockDimZ = 1;
    cfg.sharedMemBytes = plan->smem_bytes;
    CUlaunchAttribute attr;
    memset(&attr, 0, sizeof(attr));
    attr.id = CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION;
    attr.value.clusterDim.x = (unsigned)bp->cluster;
    attr.value.clusterDim.y = attr.value.clusterDim.z = 1;
    cfg.attrs = &attr;
    cfg.numAttrs = 1;
    int n = 0;
    CUresult r = drv->cuOccupancyMaxActiveClusters(&n, fn, &cfg);
    if (r != CUDA_SUCCESS)
        return jit__cuda_fail(drv, r, "cuOccupancyMaxActiveClusters", d);
    if (n < 1)
        return jit__fail(d, JIT_CUDA_ERROR,
                         "no cluster of %d CTAs with %u bytes of shared memory fits the device",
                         bp->cluster, plan->smem_bytes);
    *out = n;
    return JIT_OK;
}

jit_status_t jit__bsw_prepare(const jit__driver_t *drv, CUfunction fn, const jit__plan_t *plan,
                              void **state, jit__diag_t *d) {
    bsw_state_t *s = calloc(1, sizeof(*s));
    if (!s)
        return jit__fail(d, JIT_OUT_OF_MEMORY, "block wgmma launch state");
    pthread_mutex_init(&s->lock, NULL);
    jit_status_t st = resident_clusters(drv, fn, plan, &s->max_clusters, d);
    if (st == JIT_OK)
        st = alloc_workspace(drv, plan, s, d);
    if (st != JIT_OK) {
        jit__bsw_release(drv, s);
        return st;
    }
    *state = s;
    return JIT_OK;
}

static jit_status_t encode(const jit__driver_t *drv, tmap_memo_t *memo, const void *ptr,
                           int64_t rows, int64_t k, int64_t ld, int box_rows, const char *what,
                           jit__diag_t *d) {
    if (memo->ptr == ptr && memo->rows == rows && memo->ld == ld && memo->box_rows == box_rows &&
        ptr)
        return JIT_OK;
    cuuint64_t dims[2] = {(cuuint64_t)k, (cuuint64_t)rows};
    cuuint64_t strides[1] = {(cuuint64_t)ld};
    cuuint32_t box[2] = {BK, (cuuint32_t)box_rows};
    cuuint32_t elem[2] = {1, 1};
    CUtensorMap map;
    CUresult r = drv->cuTensorMapEncodeTiled(
        &map, CU_TENSOR_MAP_DATA_TYPE_UINT8, 2, (void *)(uintptr_t)ptr, dims, strides, box, elem,
        CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_SWIZZLE_128B,
        CU_TENSOR_MAP_L2_PROMOTION_L2_256B, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
    if (r != CUDA_SUCCESS) {
        memo->ptr = NULL;
        return jit__cuda_fail(drv, r, what, d);
    }
    _Static_assert(sizeof(map) == sizeof(memo->map), "CUtensorMap is 128 bytes");
    memcpy(&memo->map, &map, sizeof(map));
    memo->ptr = ptr;
    memo->rows = rows;
    memo->ld = ld;
    memo->box_rows = box_rows;
    return JIT_OK;
}

/* A launch that shares the split-K workspace with every other launch of the kernel: after the
 * previous one (its event), unless that was recorded in another stream capture. */
static jit_status_t launch_ordered(const jit__driver_t *drv, CUfunction fn, bsw_state_t *s,
                                   const CUlaunchConfig *cfg, void **args, CUstream stream,
                                   jit__diag_t *d) {
    CUstreamCaptureStatus capturing = CU_STREAM_CAPTURE_STATUS_NONE;
    cuuint64_t capture = 0;
    CUresult r = CUDA_SUCCESS;
    if (drv->cuStreamGetCaptureInfo)
        r = drv->cuStreamGetCaptureInfo(stream, &capturing, &capture, NULL, NULL, NULL);
    if (r != CUDA_SUCCESS)
        return jit__cuda_fail(drv, r, "cuStreamGetCaptureInfo", d);
    if (capturing != CU_STREAM_CAPTURE_STATUS_ACTIVE)
        capture = 0;
    pthread_mutex_lock(&s->lock);
    if (s->recorded && s->done_capture == capture)
        r = drv->cuStreamWaitEvent(stream, s->done, 0);
    if (r == CUDA_SUCCESS)
        r = drv->cuLaunchKernelEx(cfg, fn, args, NULL);
    if (r == CUDA_SUCCESS)
        r = drv->cuEventRecord(s->done, stream);
    if (r == CUDA_SUCCESS) {
        s->recorded = 1;
        s->done_capture = capture;
    }
    pthread_mutex_unlock(&s->lock);
    return r == CUDA_SUCCESS ? JIT_OK : jit__cuda_fail(drv, r, "launching the decode kernel", d);
}

void jit__bsw_params(const jit__launch_args_t *a, const jit__bsw_tmap_t *ta,
                     const jit__bsw_tmap_t *tb, jit__bsw_params_t *out) {
    memset(out, 0, sizeof(*out));
    out->tmap_a = *ta;
    out->tmap_b = *tb;
    out->sfa = (const float *)a->operands->scale_a;
    out->sfb = (const float *)a->operands->scale_b;
    out->residual = (const uint16_t *)a->operands->residual;
    out->d = (uint16_t *)a->operands->d;
    out->m = a->problem->m;
    out->ldd = a->ldd;
    out->ldr = a->ldr;
    out->sfa_stride_m = a->sfa_stride_m;
    out->sfa_stride_k = a->sfa_stride_k;
    out->alpha = a->problem->alpha;
}

jit_status_t jit__bsw_launch(const jit__driver_t *drv, CUfunction fn, const jit__plan_t *plan,
                             void *state, const jit__launch_args_t *a, jit__diag_t *d) {
    bsw_state_t *s = state;
    const jit__bsw_plan_t *bp = jit__bsw_cof(plan);
    const jit_problem_t *p = a->problem;
    const jit_operands_t *o = a->operands;
    jit__bsw_params_t params;
    /* A's box is the token tile; B's the weight tile, or with a cluster each CTA's slice of it
     * (multicast to both). */
    pthread_mutex_lock(&s->lock);
    jit_status_t st =
        encode(drv, &s->a, o->a, p->m, p->k, a->lda, bp->bm, "encoding the tensor map of A", d);
    if (st == JIT_OK)
        st = encode(drv, &s->b, o->b, p->n, p->k, a->ldb, bp->bn / bp->cluster,
                    "encoding the tensor map of B", d);
    if (st == JIT_OK) {
        jit__bsw_params(a, &s->a.map, &s->b.map, &params);
        params.workspace = (float *)(uintptr_t)s->workspace;
        params.counters = (uint32_t *)(uintptr_t)s->counters;
    }
    pthread_mutex_unlock(&s->lock);
    if (st != JIT_OK)
        return st;
    CUlaunchConfig cfg;
    memset(&cfg, 0, sizeof(cfg));
    cfg.gridDimX = jit__bsw_grid(plan, p->m, s->max_clusters);
    cfg.gridDimY = cfg.gridDimZ = 1;
    cfg.blockDimX = (unsigned)plan->threads;
    cfg.blockDimY = cfg.blockDimZ = 1;
    cfg.sharedMemBytes = plan->smem_bytes;
    cfg.hStream = a->stream;
    CUlaunchAttribute attr;
    memset(&attr, 0, sizeof(attr));
    if (bp->cluster > 1) {
        attr.id = CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION;
        attr.value.clusterDim.x = (unsigned)bp->cluster;
        attr.value.clusterDim.y = attr.value.clusterDim.z = 1;
        cfg.attrs = &attr;
        cfg.numAttrs = 1;
    }
    void *args[] = {&params};
    if (!s->done) {
        CUresult r = drv->cuLaunchKernelEx(&cfg, fn, args, NULL);
        return r == CUDA_SUCCESS ? JIT_OK : jit__cuda_fail(drv, r, "cuLaunchKernelEx", d);
    }
    return launch_ordered(drv, fn, s, &cfg, args, a->stream, d);
}
