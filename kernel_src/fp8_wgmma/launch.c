/*
 * The FP8 wgmma family's launch: the state kept per loaded kernel (the co-resident clusters of a
 * cluster plan; the decode route's split-K workspaces, one per stream), and one call's parameter
 * block and cuLaunchKernelEx. A call takes no lock: its tensor maps come from this thread's cache
 * (kernel_src/tmap_cache.h), and a split-K launch finds its stream's workspace without one
 * (kernel_src/stream_workspace.h says where a lock remains: captures, and streams past the
 * table).
 */
#include <stdlib.h>
#include <string.h>

#include "abi.h"
#include "fp8_wgmma.h"
#include "stream_workspace.h"
#include "tmap_cache.h"

#define BK 128

/* The split-K workspace holds the per-tile counters (which the kernel expects zero and leaves
 * zero) and then, from a 256-byte boundary, the partials. */
#define PARTIALS_ALIGN 256u

typedef struct wgmma_state {
    jit__ws_set_t *split; /* decode with split K: the partials and counters; else NULL */
    size_t partials_at;   /* the partials' offset in a workspace */
    int max_clusters;     /* co-resident clusters (cluster plans), 0 if not known */
} wgmma_state_t;

void jit__wgmma_release(const jit__driver_t *drv, void *state) {
    wgmma_state_t *s = state;
    jit__ws_set_destroy(drv, s->split);
    free(s);
}

static jit_status_t cluster_occupancy(const jit__driver_t *drv, CUfunction fn,
                                      const jit__plan_t *plan, int *out, jit__diag_t *d) {
    const jit__wgmma_plan_t *wp = jit__wgmma_cof(plan);
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
    CUresult r = drv->cuOccupancyMaxActiveClusters(&n, fn, &cfg);
    if (r != CUDA_SUCCESS)
        return jit__cuda_fail(drv, r, "cuOccupancyMaxActiveClusters", d);
    if (n < 1)
        return jit__fail(d, JIT_CUDA_ERROR,
                         "no cluster of %d CTAs with %u bytes of shared memory fits the device",
                         wp->cluster, plan->smem_bytes);
    *out = n;
    return JIT_OK;
}

jit_status_t jit__wgmma_prepare(const jit__driver_t *drv, CUfunction fn, const jit__plan_t *plan,
                                void **state, jit__diag_t *d) {
    wgmma_state_t *s = calloc(1, sizeof(*s));
    if (!s)
        return jit__fail(d, JIT_OUT_OF_MEMORY, "wgmma launch state");
    const jit__wgmma_plan_t *wp = jit__wgmma_cof(plan);
    jit_status_t st = JIT_OK;
    int64_t lo, hi;
    jit__token_band_range(plan->token_band, &lo, &hi);
    /* Sized for the band's largest M, so any M of the band fits. */
    size_t partials = jit__wgmma_decode_workspace_bytes(plan, hi),
           counters = jit__wgmma_decode_counter_bytes(plan, hi);
    if (wp->route == JIT_WGMMA_DECODE && partials > 0) {
        s->partials_at = (counters + PARTIALS_ALIGN - 1) / PARTIALS_ALIGN * PARTIALS_ALIGN;
        st = jit__ws_set_create(drv, s->partials_at + partials, counters, &s->split, d);
    }
    if (st == JIT_OK && wp->cluster > 1 && drv->cuOccupancyMaxActiveClusters)
        st = cluster_occupancy(drv, fn, plan, &s->max_clusters, d);
    if (st != JIT_OK) {
        jit__wgmma_release(drv, s);
        return st;
    }
    *state = s;
    return JIT_OK;
}

/* A or B as the kernel reads it: UINT8 rows of K bytes, boxes of 128 K bytes and `box_rows` rows,
 * 128-byte swizzle (abi.h). */
static jit_status_t operand_map(const jit__driver_t *drv, const void *ptr, int64_t rows, int64_t k,
                                int64_t ld, int box_rows, const char *what, jit__wgmma_tmap_t *out,
                                jit__diag_t *d) {
    jit__tmap_args_t m;
    jit__tmap_args_init(&m);
    m.dtype = CU_TENSOR_MAP_DATA_TYPE_UINT8;
    m.rank = 2;
    m.addr = ptr;
    m.dims[0] = (uint64_t)k;
    m.dims[1] = (uint64_t)rows;
    m.strides[0] = (uint64_t)ld;
    m.box[0] = BK;
    m.box[1] = (uint32_t)box_rows;
    m.elem_strides[0] = m.elem_strides[1] = 1;
    m.interleave = CU_TENSOR_MAP_INTERLEAVE_NONE;
    m.swizzle = CU_TENSOR_MAP_SWIZZLE_128B;
    m.l2 = CU_TENSOR_MAP_L2_PROMOTION_L2_256B;
    m.oob = CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE;
    return jit__tmap_encode_cached(drv, &m, out, what, d);
}

/* One decode launch with split K, given its stream's workspace. */
typedef struct split_launch {
    const CUlaunchConfig *cfg;
    CUfunction fn;
    jit__wgmma_decode_params_t *params;
    size_t partials_at;
} split_launch_t;

static jit_status_t launch_split(const jit__driver_t *drv, CUdeviceptr ws, CUstream stream,
                                 void *arg, jit__diag_t *d) {
    split_launch_t *l = arg;
    l->params->counters = (uint32_t *)(uintptr_t)ws;
    l->params->workspace = (float *)(uintptr_t)(ws + l->partials_at);
    CUlaunchConfig cfg = *l->cfg;
    cfg.hStream = stream;
    void *args[] = {l->params};
    CUresult r = drv->cuLaunchKernelEx(&cfg, l->fn, args, NULL);
    return r == CUDA_SUCCESS ? JIT_OK : jit__cuda_fail(drv, r, "launching the decode kernel", d);
}

jit_status_t jit__wgmma_launch(const jit__driver_t *drv, CUfunction fn, const jit__plan_t *plan,
                               void *state, const jit__launch_args_t *a, jit__diag_t *d) {
    wgmma_state_t *s = state;
    const jit__wgmma_plan_t *wp = jit__wgmma_cof(plan);
    const jit_problem_t *p = a->problem;
    const jit_operands_t *o = a->operands;
    union {
        jit__wgmma_params_t tiles;
        jit__wgmma_decode_params_t decode;
    } params;
    memset(&params, 0, sizeof(params));
    /* A's box is the token tile (BM, or the decode kernel's TOK); B's the weight tile, or with
     * a cluster each CTA's slice of it (multicast to both). */
    jit__wgmma_tmap_t map_a, map_b;
    jit_status_t st = operand_map(drv, o->a, p->m, p->k, a->lda, wp->bm,
                                  "encoding the tensor map of A", &map_a, d);
    if (st == JIT_OK)
        st = operand_map(drv, o->b, p->n, p->k, a->ldb, wp->bn / wp->cluster,
                         "encoding the tensor map of B", &map_b, d);
    if (st != JIT_OK)
        return st;
    if (wp->route == JIT_WGMMA_DECODE) {
        jit__wgmma_decode_params(a, &map_a, &map_b, 0, 0, &params.decode);
    } else {
        params.tiles.tmap_a = map_a;
        params.tiles.tmap_b = map_b;
        params.tiles.sa = (const float *)o->scale_a;
        params.tiles.sb = (const float *)o->scale_b;
        params.tiles.residual = (const uint16_t *)o->residual;
        params.tiles.d = (uint16_t *)o->d;
        params.tiles.m = p->m;
        params.tiles.ldd = a->ldd;
        params.tiles.ldr = a->ldr;
        params.tiles.alpha = p->alpha;
    }
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
    if (s->split) {
        split_launch_t l = {&cfg, fn, &params.decode, s->partials_at};
        return jit__ws_launch(drv, s->split, a->stream, launch_split, &l, d);
    }
    void *args[] = {&params};
    CUresult r = drv->cuLaunchKernelEx(&cfg, fn, args, NULL);
    return r == CUDA_SUCCESS ? JIT_OK : jit__cuda_fail(drv, r, "cuLaunchKernelEx", d);
}
