/*
 * The FP8 wgmma family's launch: the state kept per loaded kernel (the decode route's split-K
 * workspace, the co-resident clusters of a cluster plan, the last tensor maps), and one call's
 * parameter block and cuLaunchKernelEx.
 */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "abi.h"
#include "fp8_wgmma.h"

#define BK 128

/* The last tensor map encoded for each operand: a serving loop calls with the same weights
 * (and often the same activation buffer) every time, and encoding costs about a microsecond. */
typedef struct tmap_memo {
    const void *ptr;
    int64_t rows, ld;
    jit__wgmma_tmap_t map;
} tmap_memo_t;

/* Decode with split K also keeps the partials' workspace and the per-tile counters, sized for
 * the band's largest M and zeroed once (the kernel leaves the counters at zero). Launches that
 * share them are ordered on the GPU: each waits for the previous one's event, whatever its
 * stream. Under stream capture the event may only be waited on when it was recorded in the same
 * capture (the driver refuses a dependency on work outside it), so the state remembers which
 * capture, if any, recorded it last; the launches of one graph are ordered by the graph itself
 * and its replays by the stream they are launched on. */
typedef struct wgmma_state {
    pthread_mutex_t lock;
    tmap_memo_t a, b;
    CUdeviceptr workspace, counters;
    CUevent done;
    int recorded;            /* `done` has been recorded at least once */
    cuuint64_t done_capture; /* capture id of the last record, 0 outside capture */
    int max_clusters;        /* co-resident clusters (cluster plans), 0 if not known */
} wgmma_state_t;

void jit__wgmma_release(const jit__driver_t *drv, void *state) {
    wgmma_state_t *s = state;
    if (s->done)
        drv->cuEventDestroy(s->done);
    if (s->workspace)
        drv->cuMemFree(s->workspace);
    if (s->counters)
        drv->cuMemFree(s->counters);
    pthread_mutex_destroy(&s->lock);
    free(s);
}

jit_status_t jit__wgmma_prepare(const jit__driver_t *drv, CUfunction fn, const jit__plan_t *plan,
                                void **state, jit__diag_t *d) {
    (void)fn;
    wgmma_state_t *s = calloc(1, sizeof(*s));
    if (!s)
        return jit__fail(d, JIT_OUT_OF_MEMORY, "wgmma launch state");
    pthread_mutex_init(&s->lock, NULL);
    int64_t lo, hi;
    jit__token_band_range(plan->token_band, &lo, &hi);
    size_t ws = jit__wgmma_decode_workspace_bytes(plan, hi),
           counters = jit__wgmma_decode_counter_bytes(plan, hi);
    CUresult r = CUDA_SUCCESS;
    if (jit__wgmma_cof(plan)->route == JIT_WGMMA_DECODE && ws > 0) {
        r = drv->cuMemAlloc(&s->workspace, ws);
        if (r == CUDA_SUCCESS)
            r = drv->cuMemAlloc(&s->counters, counters);
        if (r == CUDA_SUCCESS)
            r = drv->cuMemsetD8(s->counters, 0, counters);
        if (r == CUDA_SUCCESS)
            r = drv->cuEventCreate(&s->done, CU_EVENT_DISABLE_TIMING);
    }
    if (r != CUDA_SUCCESS) {
        jit_status_t st = jit__cuda_fail(drv, r, "allocating the decode workspace", d);
        jit__wgmma_release(drv, s);
        return st;
    }
    const jit__wgmma_plan_t *wp = jit__wgmma_cof(plan);
    if (wp->cluster > 1 && drv->cuOccupancyMaxActiveClusters) {
        CUlaunchConfig cfg;
        memset(&cfg, 0, sizeof(cfg));
        cfg.gridDimX = (unsigned)(plan->sm_count / wp->cluster * wp->cluster);
        cfg.gridDimY = cfg.gridDimZ = 1;
        cfg.blockDimX = (unsigned)plan->threads;
        cfg.blockDimY = cfg.blockDimZ = 1;
        cfg.sharedMemBytes = plan->smem_bytes;
        CUlaunchAttribute attr;
        memset(&attr, 0, sizeof(attr));
        attr.id = CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION;
        attr.value.clusterDim.x = (unsigned)wp->cluster;
        attr.value.clusterDim.y = attr.value.clusterDim.z = 1;
        cfg.attrs = &attr;
        cfg.numAttrs = 1;
        int n = 0;
        r = drv->cuOccupancyMaxActiveClusters(&n, fn, &cfg);
        if (r != CUDA_SUCCESS || n < 1) {
            jit_status_t st =
                r != CUDA_SUCCESS
                    ? jit__cuda_fail(drv, r, "cuOccupancyMaxActiveClusters", d)
                    : jit__fail(d, JIT_CUDA_ERROR,
                                "no cluster of %d CTAs with %u bytes of shared memory fits the "
                                "device",
                                wp->cluster, plan->smem_bytes);
            jit__wgmma_release(drv, s);
            return st;
        }
        s->max_clusters = n;
    }
    *state = s;
    return JIT_OK;
}

static jit_status_t encode(const jit__driver_t *drv, tmap_memo_t *memo, const void *ptr,
                           int64_t rows, int64_t k, int64_t ld, int box_rows, const char *what,
                           jit__diag_t *d) {
    if (memo->ptr == ptr && memo->rows == rows && memo->ld == ld && ptr)
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
    return JIT_OK;
}

jit_status_t jit__wgmma_launch(const jit__driver_t *drv, CUfunction fn, const jit__plan_t *plan,
                               void *state, const jit__launch_args_t *a, jit__diag_t *d) {
    wgmma_state_t *s = state;
    const jit__wgmma_plan_t *wp = jit__wgmma_cof(plan);
    const int decode = wp->route == JIT_WGMMA_DECODE;
    const jit_problem_t *p = a->problem;
    const jit_operands_t *o = a->operands;
    union {
        jit__wgmma_params_t tiles;
        jit__wgmma_decode_params_t decode;
    } params;
    memset(&params, 0, sizeof(params));
    /* A's box is the token tile (BM, or the decode kernel's TOK); B's the weight tile, or with
     * a cluster each CTA's slice of it (multicast to both). */
    pthread_mutex_lock(&s->lock);
    jit_status_t st =
        encode(drv, &s->a, o->a, p->m, p->k, a->lda, wp->bm, "encoding the tensor map of A", d);
    if (st == JIT_OK)
        st = encode(drv, &s->b, o->b, p->n, p->k, a->ldb, wp->bn / wp->cluster,
                    "encoding the tensor map of B", d);
    if (st == JIT_OK && decode) {
        jit__wgmma_decode_params(a, &s->a.map, &s->b.map, s->workspace, s->counters,
                                 &params.decode);
    } else if (st == JIT_OK) {
        params.tiles.tmap_a = s->a.map;
        params.tiles.tmap_b = s->b.map;
        params.tiles.sa = (const float *)o->scale_a;
        params.tiles.sb = (const float *)o->scale_b;
        params.tiles.residual = (const uint16_t *)o->residual;
        params.tiles.d = (uint16_t *)o->d;
        params.tiles.m = p->m;
        params.tiles.ldd = a->ldd;
        params.tiles.ldr = a->ldr;
        params.tiles.alpha = p->alpha;
    }
    pthread_mutex_unlock(&s->lock);
    if (st != JIT_OK)
        return st;
    CUlaunchConfig cfg;
    memset(&cfg, 0, sizeof(cfg));
    cfg.gridDimX = jit__wgmma_grid(plan, p->m, s->max_clusters);
    cfg.gridDimY = cfg.gridDimZ = 1;
    cfg.blockDimX = (unsigned)plan->threads;
    cfg.blockDimY = cfg.blockDimZ = 1;
    cfg.sharedMemBytes = plan->smem_bytes;
    cfg.hStream = a->stream;
    CUlaunchAttribute attr;
    memset(&attr, 0, sizeof(attr));
    if (wp->cluster > 1) {
        attr.id = CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION;
        attr.value.clusterDim.x = (unsigned)wp->cluster;
        attr.value.clusterDim.y = attr.value.clusterDim.z = 1;
        cfg.attrs = &attr;
        cfg.numAttrs = 1;
    }
    void *args[] = {&params};
    if (!s->done) {
        CUresult r = drv->cuLaunchKernelEx(&cfg, fn, args, NULL);
        return r == CUDA_SUCCESS ? JIT_OK : jit__cuda_fail(drv, r, "cuLaunchKernelEx", d);
    }
    /* The split-K workspace is shared by every launch of this kernel. */
    CUstreamCaptureStatus capturing = CU_STREAM_CAPTURE_STATUS_NONE;
    cuuint64_t capture = 0;
    CUresult r = CUDA_SUCCESS;
    if (drv->cuStreamGetCaptureInfo)
        r = drv->cuStreamGetCaptureInfo(a->stream, &capturing, &capture, NULL, NULL, NULL);
    if (r != CUDA_SUCCESS)
        return jit__cuda_fail(drv, r, "cuStreamGetCaptureInfo", d);
    if (capturing != CU_STREAM_CAPTURE_STATUS_ACTIVE)
        capture = 0;
    pthread_mutex_lock(&s->lock);
    if (s->recorded && s->done_capture == capture)
        r = drv->cuStreamWaitEvent(a->stream, s->done, 0);
    if (r == CUDA_SUCCESS)
        r = drv->cuLaunchKernelEx(&cfg, fn, args, NULL);
    if (r == CUDA_SUCCESS)
        r = drv->cuEventRecord(s->done, a->stream);
    if (r == CUDA_SUCCESS) {
        s->recorded = 1;
        s->done_capture = capture;
    }
    pthread_mutex_unlock(&s->lock);
    return r == CUDA_SUCCESS ? JIT_OK : jit__cuda_fail(drv, r, "launching the decode kernel", d);
}
