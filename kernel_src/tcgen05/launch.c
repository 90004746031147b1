/*
 * Host side of the tcgen05 kernel: tensor-map geometry and encoding, the scheduler workspace,
 * grid sizing from occupancy and the mixed-cluster launch. See launch.h.
 *
 * Never run against a Blackwell or Rubin device (none was available): the tests drive these
 * functions with a recording driver table and check every argument against the TMA and launch
 * rules of cuda.h.
 */
#include "launch.h"

#include <stdlib.h>
#include <string.h>

#include "stream_workspace.h"

/* Workspace header: work counter, registration counter, exit counter, padding. */
#define WORKSPACE_HEADER 16u

size_t jit__tc_workspace_bytes(uint32_t token_slots) {
    /* At least one slot, so the kernel's tokens[] is never a zero-length array. */
    return WORKSPACE_HEADER + 8u * (size_t)(token_slots ? token_slots : 1u);
}

int jit__tc_tma_k_per_tile(const jit__plan_t *plan, const jit__tc_operand_t *op) {
    /* The unpacked FP4 type counts 4-bit elements; the UINT8 maps count bytes. */
    return op->tma_type == JIT_TC_TMA_16U4_ALIGN16B ? plan->tile_k : (int)op->gmem_row_bytes;
}

int jit__tc_slice_rows(const jit__plan_t *plan, jit__tc_map_t which, int fallback) {
    const jit__tc_plan_t *tc = jit__tc_of(plan);
    int fb = fallback && plan->fallback_cluster_m > 0;
    if (which == JIT_TC_MAP_A) {
        int group = tc->a.multicast ? (fb ? plan->fallback_cluster_n : plan->cluster_n) : 1;
        return group > 0 && 128 % group == 0 ? 128 / group : 0;
    }
    if (which == JIT_TC_MAP_B) {
        int cm = fb ? plan->fallback_cluster_m : plan->cluster_m;
        int group = tc->b.multicast ? cm / tc->cta_group : 1;
        return group > 0 && tc->b.rows % group == 0 ? tc->b.rows / group : 0;
    }
    return 0;
}

jit_status_t jit__tc_c_layout(const jit__plan_t *plan, jit__tc_c_layout_t *out, jit__diag_t *d) {
    memset(out, 0, sizeof(*out));
    int epi = jit__tc_of(plan)->smem.epi_tile_n;
    out->out_bytes = plan->spec.out == JIT_DTYPE_F32 ? 4 : 2;
    out->out_cols = plan->spec.epilogue == JIT_EPILOGUE_LINEAR_SWIGLU ? epi / 2 : epi;
    out->row_bytes = (uint32_t)(out->out_cols * out->out_bytes);
    out->box_bytes = out->row_bytes < 128u ? out->row_bytes : 128u;
    if (out->box_bytes != 32 && out->box_bytes != 64 && out->box_bytes != 128)
        return jit__fail(d, JIT_INTERNAL,
                         "epilogue sub-tile of %u bytes per row has no TMA swizzle span",
                         out->row_bytes);
    if (out->row_bytes % out->box_bytes)
        return jit__fail(d, JIT_INTERNAL, "epilogue row of %u bytes is not whole boxes",
                         out->row_bytes);
    out->boxes = (int)(out->row_bytes / out->box_bytes);
    return JIT_OK;
}

static CUtensorMapSwizzle swizzle_of(jit__tc_swizzle_t s) {
    switch (s) {
    case JIT_TC_SWIZZLE_128B:
        return CU_TENSOR_MAP_SWIZZLE_128B;
    case JIT_TC_SWIZZLE_64B:
        return CU_TENSOR_MAP_SWIZZLE_64B;
    case JIT_TC_SWIZZLE_32B:
        return CU_TENSOR_MAP_SWIZZLE_32B;
    default:
        return CU_TENSOR_MAP_SWIZZLE_NONE;
    }
}

static jit_status_t operand_geom(const jit__plan_t *plan, jit__tc_map_t which, int fallback,
                                 const jit__tc_shape_t *sh, jit__tc_tma_geom_t *g, jit__diag_t *d) {
    const jit__tc_operand_t *op =
        which == JIT_TC_MAP_A ? &jit__tc_of(plan)->a : &jit__tc_of(plan)->b;
    const char *name = which == JIT_TC_MAP_A ? "A" : "B";
    int64_t rows = which == JIT_TC_MAP_A ? sh->m : sh->n;
    int64_t ld = which == JIT_TC_MAP_A ? sh->lda : sh->ldb;
    if (ld == 0)
        ld = sh->k;
    if (ld < sh->k)
        return jit__fail(d, JIT_INVALID_ARGUMENT, "%s stride %lld is below k=%lld", name,
                         (long long)ld, (long long)sh->k);
    int fp4 = op->dtype == JIT_DTYPE_E2M1;
    if (fp4 && ld % 2)
        return jit__fail(d, JIT_MISALIGNED, "%s stride %lld splits a byte of two e2m1 values", name,
                         (long long)ld);
    uint64_t stride = fp4 ? (uint64_t)ld / 2 : (uint64_t)ld;
    int unpacked = op->tma_type == JIT_TC_TMA_16U4_ALIGN16B;
    uint64_t need = unpacked ? 32 : 16;
    if (stride % need)
        return jit__fail(d, JIT_MISALIGNED,
                         "%s row stride of %llu bytes must be a multiple of %llu for TMA", name,
                         (unsigned long long)stride, (unsigned long long)need);
    if (unpacked && sh->k % 128)
        return jit__fail(d, JIT_MISALIGNED,
                         "k=%lld must be a multiple of 128 for the unpacked e2m1 TMA type of %s",
                         (long long)sh->k, name);
    g->dtype = unpacked ? CU_TENSOR_MAP_DATA_TYPE_16U4_ALIGN16B : CU_TENSOR_MAP_DATA_TYPE_UINT8;
    g->rank = 2;
    g->dims[0] = unpacked ? (uint64_t)sh->k : (fp4 ? (uint64_t)sh->k / 2 : (uint64_t)sh->k);
    g->dims[1] = (uint64_t)rows;
    g->strides[0] = stride;
    g->box[0] = op->box_inner_bytes;
    g->box[1] = (uint32_t)jit__tc_slice_rows(plan, which, fallback);
    g->swizzle = swizzle_of(op->swizzle);
    g->box_smem_bytes = op->box_inner_bytes * g->box[1];
    return JIT_OK;
}

jit_status_t jit__tc_tma_geom(const jit__plan_t *plan, jit__tc_map_t which, int fallback,
                              const jit__tc_shape_t *sh, jit__tc_tma_geom_t *g, jit__diag_t *d) {
    memset(g, 0, sizeof(*g));
    const jit__tc_plan_t *tc = jit__tc_of(plan);
    if (sh->m <= 0 || sh->n <= 0 || sh->k <= 0)
        return jit__fail(d, JIT_INVALID_SHAPE, "m=%lld, n=%lld, k=%lld must be positive",
                         (long long)sh->m, (long long)sh->n, (long long)sh->k);
    switch (which) {
    case JIT_TC_MAP_A:
    case JIT_TC_MAP_B:
        return operand_geom(plan, which, fallback, sh, g, d);
    case JIT_TC_MAP_SFA:
    case JIT_TC_MAP_SFB: {
        /* The 128x4 tiled layout as [row blocks][K chunks][512 bytes], read as UINT16 so that
         * one chunk is one 256-element box row (a box dimension holds at most 256). Chunks
         * past K and row blocks past M or N are zero-filled. */
        uint64_t rk = (uint64_t)((sh->k / tc->sf_vec + 3) / 4);
        uint64_t rows = which == JIT_TC_MAP_SFA ? (uint64_t)sh->m : (uint64_t)sh->n;
        g->dtype = CU_TENSOR_MAP_DATA_TYPE_UINT16;
        g->rank = 3;
        g->dims[0] = 256;
        g->dims[1] = rk;
        g->dims[2] = (rows + 127) / 128;
        g->strides[0] = 512;
        g->strides[1] = rk * 512;
        g->box[0] = 256;
        g->box[1] = (uint32_t)tc->sfa_chunks_k;
        g->box[2] = which == JIT_TC_MAP_SFA ? 1u : (uint32_t)tc->sfb_row_blocks;
        g->swizzle = CU_TENSOR_MAP_SWIZZLE_NONE;
        g->box_smem_bytes = 512u * g->box[1] * g->box[2];
        return JIT_OK;
    }
    case JIT_TC_MAP_D: {
        jit__tc_c_layout_t cl;
        jit_status_t st = jit__tc_c_layout(plan, &cl, d);
        if (st != JIT_OK)
            return st;
        int64_t cols = plan->spec.epilogue == JIT_EPILOGUE_LINEAR_SWIGLU ? sh->n / 2 : sh->n;
        int64_t ld = sh->ldd ? sh->ldd : cols;
        if (ld < cols)
            return jit__fail(d, JIT_INVALID_ARGUMENT, "D stride %lld is below %lld columns",
                             (long long)ld, (long long)cols);
        uint64_t stride = (uint64_t)ld * (uint64_t)cl.out_bytes;
        if (stride % 16)
            return jit__fail(d, JIT_MISALIGNED,
                             "D row stride of %llu bytes must be a multiple of 16 for TMA",
                             (unsigned long long)stride);
        g->dtype =
            cl.out_bytes == 4 ? CU_TENSOR_MAP_DATA_TYPE_FLOAT32 : CU_TENSOR_MAP_DATA_TYPE_BFLOAT16;
        g->rank = 2;
        g->dims[0] = (uint64_t)cols;
        g->dims[1] = (uint64_t)sh->m;
        g->strides[0] = stride;
        g->box[0] = cl.box_bytes / (uint32_t)cl.out_bytes;
        g->box[1] = 32; /* one epilogue warp's rows */
        g->swizzle = cl.box_bytes == 128  ? CU_TENSOR_MAP_SWIZZLE_128B
                     : cl.box_bytes == 64 ? CU_TENSOR_MAP_SWIZZLE_64B
                                          : CU_TENSOR_MAP_SWIZZLE_32B;
        g->box_smem_bytes = cl.box_bytes * 32u;
        return JIT_OK;
    }
    }
    return jit__fail(d, JIT_INTERNAL, "unknown tensor map %d", (int)which);
}

static jit_status_t encode(const jit__driver_t *drv, const jit__tc_tma_geom_t *g, const void *ptr,
                           const char *what, jit__tc_tmap_t *out, jit__diag_t *d) {
    uintptr_t need = g->dtype == CU_TENSOR_MAP_DATA_TYPE_16U4_ALIGN16B ? 32 : 16;
    if (!ptr)
        return jit__fail(d, JIT_INVALID_ARGUMENT, "%s pointer is NULL", what);
    if ((uintptr_t)ptr % need)
        return jit__fail(d, JIT_MISALIGNED, "%s pointer %p is not %u-byte aligned", what, ptr,
                         (unsigned)need);
    const cuuint32_t elem_strides[3] = {1, 1, 1};
    cuuint64_t dims[3], strides[2];
    cuuint32_t box[3];
    for (unsigned i = 0; i < 3; i++) {
        dims[i] = g->dims[i];
        box[i] = g->box[i];
    }
    strides[0] = g->strides[0];
    strides[1] = g->strides[1];
    CUtensorMap map;
    CUresult r = drv->cuTensorMapEncodeTiled(
        &map, g->dtype, g->rank, (void *)(uintptr_t)ptr, dims, strides, box, elem_strides,
        CU_TENSOR_MAP_INTERLEAVE_NONE, g->swizzle, CU_TENSOR_MAP_L2_PROMOTION_L2_256B,
        CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
    if (r != CUDA_SUCCESS)
        return jit__cuda_fail(drv, r, what, d);
    _Static_assert(sizeof(map) == sizeof(*out), "CUtensorMap is 128 bytes");
    memcpy(out, &map, sizeof(map));
    return JIT_OK;
}

jit_status_t jit__tc_params_build(const jit__driver_t *drv, const jit__plan_t *plan,
                                  const jit__tc_shape_t *shape, const jit_operands_t *ops,
                                  float alpha, int64_t ld_residual, void *workspace,
                                  uint32_t token_slots, jit__tc_params_t *out, jit__diag_t *d) {
    memset(out, 0, sizeof(*out));
    if (!workspace)
        return jit__fail(d, JIT_INVALID_ARGUMENT, "the tcgen05 kernel needs a workspace");
    if (plan->spec.epilogue == JIT_EPILOGUE_LINEAR_ADD && !ops->residual)
        return jit__fail(d, JIT_INVALID_ARGUMENT, "linear_add needs a residual");
    struct {
        jit__tc_map_t which;
        int fallback;
        const void *ptr;
        const char *what;
        jit__tc_tmap_t *dst;
    } maps[] = {
        {JIT_TC_MAP_A, 0, ops->a, "TMA map of A", &out->a[0]},
        {JIT_TC_MAP_A, 1, ops->a, "TMA map of A (fallback cluster)", &out->a[1]},
        {JIT_TC_MAP_B, 0, ops->b, "TMA map of B", &out->b[0]},
        {JIT_TC_MAP_B, 1, ops->b, "TMA map of B (fallback cluster)", &out->b[1]},
        {JIT_TC_MAP_SFA, 0, ops->scale_a, "TMA map of the A scales", &out->sfa},
        {JIT_TC_MAP_SFB, 0, ops->scale_b, "TMA map of the B scales", &out->sfb},
        {JIT_TC_MAP_D, 0, ops->d, "TMA map of D", &out->d},
    };
    for (size_t i = 0; i < sizeof(maps) / sizeof(maps[0]); i++) {
        jit__tc_tma_geom_t g;
        jit_status_t st = jit__tc_tma_geom(plan, maps[i].which, maps[i].fallback, shape, &g, d);
        if (st == JIT_OK)
            st = encode(drv, &g, maps[i].ptr, maps[i].what, maps[i].dst, d);
        if (st != JIT_OK)
            return st;
    }
    out->residual = ops->residual;
    out->workspace = workspace;
    out->m = shape->m;
    out->ld_residual = ld_residual ? ld_residual : shape->n;
    out->alpha = alpha;
    out->token_slots = token_slots;
    return JIT_OK;
}

jit_status_t jit__tc_launch_dims(const jit__plan_t *plan, int max_preferred_clusters,
                                 int max_fallback_clusters, jit__tc_launch_dims_t *out,
                                 jit__diag_t *d) {
    memset(out, 0, sizeof(*out));
    int pm = plan->cluster_m, pn = plan->cluster_n;
    int fm = plan->fallback_cluster_m, fn = plan->fallback_cluster_n;
    int psize = pm * pn, fsize = fm ? fm * fn : psize;
    if (psize <= 0 || (fm && (pm % fm || pn % fn)))
        return jit__fail(d, JIT_INTERNAL,
                         "preferred cluster %dx%d is not a multiple of the fallback %dx%d", pm, pn,
                         fm, fn);
    int z;
    if (fm) {
        /* Floor division: the CTAs that fit as fallback clusters, in preferred-sized groups. */
        z = max_fallback_clusters * fsize / psize;
    } else {
        z = max_preferred_clusters;
    }
    if (z <= 0)
        return jit__fail(d, JIT_PLAN_FAILED,
                         "the device holds no %dx%d cluster of this kernel (occupancy %d "
                         "preferred, %d fallback)",
                         pm, pn, max_preferred_clusters, max_fallback_clusters);
    out->grid[0] = (unsigned)pm;
    out->grid[1] = (unsigned)pn;
    out->grid[2] = (unsigned)z;
    out->split_factor = psize / fsize;
    if (fm) {
        out->cluster[0] = (unsigned)fm;
        out->cluster[1] = (unsigned)fn;
        out->preferred_cluster[0] = (unsigned)pm;
        out->preferred_cluster[1] = (unsigned)pn;
        out->preferred_cluster[2] = 1;
        /* Every preferred-sized region the hardware does not launch as one cluster becomes
         * split_factor fallback clusters, so at most z * split_factor of them exist. */
        out->token_slots = (uint32_t)z * (uint32_t)out->split_factor;
        int preferred_running = max_preferred_clusters < z ? max_preferred_clusters : z;
        int expected_fallback = (z - preferred_running) * out->split_factor;
        jit_status_t st = jit__tc_check_fallback_groups(expected_fallback, out->split_factor, d);
        if (st != JIT_OK)
            return st;
    } else {
        out->cluster[0] = (unsigned)pm;
        out->cluster[1] = (unsigned)pn;
    }
    out->cluster[2] = 1;
    return JIT_OK;
}

static void cluster_config(const jit__plan_t *plan, unsigned cx, unsigned cy, CUstream stream,
                           CUlaunchConfig *cfg, CUlaunchAttribute *attr) {
    memset(cfg, 0, sizeof(*cfg));
    memset(attr, 0, sizeof(*attr));
    cfg->gridDimX = cx;
    cfg->gridDimY = cy;
    cfg->gridDimZ = 1;
    cfg->blockDimX = (unsigned)plan->threads;
    cfg->blockDimY = 1;
    cfg->blockDimZ = 1;
    cfg->sharedMemBytes = plan->smem_bytes;
    cfg->hStream = stream;
    attr->id = CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION;
    attr->value.clusterDim.x = cx;
    attr->value.clusterDim.y = cy;
    attr->value.clusterDim.z = 1;
    cfg->attrs = attr;
    cfg->numAttrs = 1;
}

jit_status_t jit__tc_launch_dims_query(const jit__driver_t *drv, CUfunction fn,
                                       const jit__plan_t *plan, CUstream stream,
                                       jit__tc_launch_dims_t *out, jit__diag_t *d) {
    CUresult r = drv->cuFuncSetAttribute(fn, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                                         (int)plan->smem_bytes);
    if (r != CUDA_SUCCESS)
        return jit__cuda_fail(drv, r, "cuFuncSetAttribute(max dynamic shared memory)", d);
    if (plan->cluster_m * plan->cluster_n > 8) {
        r = drv->cuFuncSetAttribute(fn, CU_FUNC_ATTRIBUTE_NON_PORTABLE_CLUSTER_SIZE_ALLOWED, 1);
        if (r != CUDA_SUCCESS)
            return jit__cuda_fail(drv, r, "cuFuncSetAttribute(non-portable cluster size)", d);
    }
    CUlaunchConfig cfg;
    CUlaunchAttribute attr;
    int preferred = 0, fallback = 0;
    cluster_config(plan, (unsigned)plan->cluster_m, (unsigned)plan->cluster_n, stream, &cfg, &attr);
    r = drv->cuOccupancyMaxActiveClusters(&preferred, fn, &cfg);
    if (r != CUDA_SUCCESS)
        return jit__cuda_fail(drv, r, "cuOccupancyMaxActiveClusters(preferred cluster)", d);
    if (plan->fallback_cluster_m) {
        cluster_config(plan, (unsigned)plan->fallback_cluster_m, (unsigned)plan->fallback_cluster_n,
                       stream, &cfg, &attr);
        r = drv->cuOccupancyMaxActiveClusters(&fallback, fn, &cfg);
        if (r != CUDA_SUCCESS)
            return jit__cuda_fail(drv, r, "cuOccupancyMaxActiveClusters(fallback cluster)", d);
    }
    return jit__tc_launch_dims(plan, preferred, fallback, out, d);
}

void jit__tc_launch_config(const jit__plan_t *plan, const jit__tc_launch_dims_t *dims,
                           CUstream stream, CUlaunchConfig *cfg, CUlaunchAttribute attrs[2]) {
    memset(cfg, 0, sizeof(*cfg));
    memset(attrs, 0, 2 * sizeof(*attrs));
    cfg->gridDimX = dims->grid[0];
    cfg->gridDimY = dims->grid[1];
    cfg->gridDimZ = dims->grid[2];
    cfg->blockDimX = (unsigned)plan->threads;
    cfg->blockDimY = 1;
    cfg->blockDimZ = 1;
    cfg->sharedMemBytes = plan->smem_bytes;
    cfg->hStream = stream;
    attrs[0].id = CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION;
    attrs[0].value.clusterDim.x = dims->cluster[0];
    attrs[0].value.clusterDim.y = dims->cluster[1];
    attrs[0].value.clusterDim.z = dims->cluster[2];
    cfg->attrs = attrs;
    cfg->numAttrs = 1;
    if (dims->preferred_cluster[0]) {
        attrs[1].id = CU_LAUNCH_ATTRIBUTE_PREFERRED_CLUSTER_DIMENSION;
        attrs[1].value.preferredClusterDim.x = dims->preferred_cluster[0];
        attrs[1].value.preferredClusterDim.y = dims->preferred_cluster[1];
        attrs[1].value.preferredClusterDim.z = dims->preferred_cluster[2];
        cfg->numAttrs = 2;
    }
}

jit_status_t jit__tc_launch_kernel(const jit__driver_t *drv, CUfunction fn, const jit__plan_t *plan,
                                   const jit__tc_launch_dims_t *dims,
                                   const jit__tc_params_t *params, CUstream stream,
                                   jit__diag_t *d) {
    if (params->token_slots < dims->token_slots)
        return jit__fail(d, JIT_INVALID_ARGUMENT,
                         "the workspace has %u token slots; this grid can form %u fallback "
                         "clusters",
                         params->token_slots, dims->token_slots);
    CUlaunchConfig cfg;
    CUlaunchAttribute attrs[2];
    jit__tc_launch_config(plan, dims, stream, &cfg, attrs);
    void *args[1] = {(void *)(uintptr_t)params};
    CUresult r = drv->cuLaunchKernelEx(&cfg, fn, args, NULL);
    if (r != CUDA_SUCCESS)
        return jit__cuda_fail(drv, r, "cuLaunchKernelEx (tcgen05 kernel)", d);
    return JIT_OK;
}

/* ---- the family's launch state and hooks ------------------------------------------------ */

/* The occupancy-sized launch shape, made once per loaded kernel, and the scheduler's workspaces:
 * the kernel's last CTA resets its workspace for the next launch, so two launches must never
 * share one while they run. Each stream has its own (kernel_src/stream_workspace.h), so
 * launches on different streams run at once and a launch takes no lock; launches into a stream
 * capture share one, in order. */
typedef struct tc_state {
    jit__tc_launch_dims_t dims;
    jit__ws_set_t *workspaces;
} tc_state_t;

void jit__tc_release(const jit__driver_t *drv, void *state) {
    tc_state_t *s = state;
    jit__ws_set_destroy(drv, s->workspaces);
    free(s);
}

jit_status_t jit__tc_prepare(const jit__driver_t *drv, CUfunction fn, const jit__plan_t *plan,
                             void **state, jit__diag_t *d) {
    tc_state_t *s = calloc(1, sizeof(*s));
    if (!s)
        return jit__fail(d, JIT_OUT_OF_MEMORY, "tcgen05 launch state");
    jit_status_t st = jit__tc_launch_dims_query(drv, fn, plan, NULL, &s->dims, d);
    if (st == JIT_OK) {
        /* All of it is counters and token slots, which the kernel expects zero. */
        size_t bytes = jit__tc_workspace_bytes(s->dims.token_slots);
        st = jit__ws_set_create(drv, bytes, bytes, &s->workspaces, d);
    }
    if (st != JIT_OK) {
        jit__tc_release(drv, s);
        return st;
    }
    *state = s;
    return JIT_OK;
}

/* One call, given the workspace of its stream. */
typedef struct tc_call {
    CUfunction fn;
    const jit__plan_t *plan;
    const tc_state_t *state;
    const jit__launch_args_t *args;
} tc_call_t;

static jit_status_t launch_with(const jit__driver_t *drv, CUdeviceptr ws, CUstream stream,
                                void *arg, jit__diag_t *d) {
    const tc_call_t *c = arg;
    const jit__launch_args_t *a = c->args;
    const jit_problem_t *p = a->problem;
    /* The tensor maps hold the operands' addresses, so they are encoded for every call. */
    jit__tc_shape_t shape = {p->m, p->n, p->k, a->lda, a->ldb, a->ldd};
    jit__tc_params_t params;
    jit_status_t st =
        jit__tc_params_build(drv, c->plan, &shape, a->operands, p->alpha, a->ldr,
                             (void *)(uintptr_t)ws, c->state->dims.token_slots, &params, d);
    if (st != JIT_OK)
        return st;
    return jit__tc_launch_kernel(drv, c->fn, c->plan, &c->state->dims, &params, stream, d);
}

jit_status_t jit__tc_launch(const jit__driver_t *drv, CUfunction fn, const jit__plan_t *plan,
                            void *state, const jit__launch_args_t *a, jit__diag_t *d) {
    tc_state_t *s = state;
    tc_call_t call = {fn, plan, s, a};
    return jit__ws_launch(drv, s->workspaces, a->stream, launch_with, &call, d);
}
