/*
 * The grouped family's launch: the tensor maps of A (every row, all experts) and B (G * N rows),
 * cached per operand pointer and shape since a serving loop passes the same buffers every step,
 * the parameter block, and a persistent grid. Nothing here reads the rows per expert: they stay
 * on the device, so a launch can be captured in a CUDA graph and replayed after the routing
 * changed in the same offsets or counts buffer.
 */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "grouped.h"

#define BK 128

typedef struct tmap_memo {
    const void *ptr;
    int64_t rows, cols, ld;
    int box_rows;
    jit__grouped_tmap_t map;
} tmap_memo_t;

typedef struct grouped_state {
    pthread_mutex_t lock;
    tmap_memo_t a, b;
} grouped_state_t;

unsigned jit__grouped_grid(const jit__plan_t *plan, int64_t m) {
    const jit__grouped_plan_t *gp = jit__grouped_cof(plan);
    int64_t n_tiles = (plan->spec.n + gp->bn - 1) / gp->bn;
    int64_t most = (m / gp->bm + plan->spec.groups) * n_tiles;
    return (unsigned)(most < plan->sm_count ? most : plan->sm_count);
}

void jit__grouped_release(const jit__driver_t *drv, void *state) {
    (void)drv;
    grouped_state_t *s = state;
    pthread_mutex_destroy(&s->lock);
    free(s);
}

jit_status_t jit__grouped_prepare(const jit__driver_t *drv, CUfunction fn, const jit__plan_t *plan,
                                  void **state, jit__diag_t *d) {
    (void)drv, (void)fn, (void)plan;
    grouped_state_t *s = calloc(1, sizeof(*s));
    if (!s)
        return jit__fail(d, JIT_OUT_OF_MEMORY, "grouped launch state");
    pthread_mutex_init(&s->lock, NULL);
    *state = s;
    return JIT_OK;
}

static jit_status_t encode(const jit__driver_t *drv, tmap_memo_t *memo, const void *ptr,
                           int64_t rows, int64_t k, int64_t ld, int box_rows, const char *what,
                           jit__diag_t *d) {
    if (ptr && memo->ptr == ptr && memo->rows == rows && memo->cols == k && memo->ld == ld &&
        memo->box_rows == box_rows)
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
    memo->cols = k;
    memo->ld = ld;
    memo->box_rows = box_rows;
    return JIT_OK;
}

jit_status_t jit__grouped_launch(const jit__driver_t *drv, CUfunction fn, const jit__plan_t *plan,
                                 void *state, const jit__launch_args_t *a, jit__diag_t *d) {
    grouped_state_t *s = state;
    const jit__grouped_plan_t *gp = jit__grouped_cof(plan);
    const jit_problem_t *p = a->problem;
    const jit_operands_t *o = a->operands;
    /* The scheduler counts work units in int: at most (m / BM + G) row tiles x the column
     * tiles. */
    int64_t n_tiles = (p->n + gp->bn - 1) / gp->bn;
    if ((p->m / gp->bm + p->groups) * n_tiles > INT32_MAX)
        return jit__fail(d, JIT_INVALID_SHAPE,
                         "grouped GEMM: m=%lld rows of %lld experts make more than 2^31 tiles of "
                         "%dx%d",
                         (long long)p->m, (long long)p->groups, gp->bm, gp->bn);
    jit__grouped_params_t params;
    memset(&params, 0, sizeof(params));
    pthread_mutex_lock(&s->lock);
    jit_status_t st =
        encode(drv, &s->a, o->a, p->m, p->k, a->lda, gp->bm, "encoding the tensor map of A", d);
    if (st == JIT_OK)
        st = encode(drv, &s->b, o->b, p->groups * p->n, p->k, a->ldb, gp->bn,
                    "encoding the tensor map of B", d);
    if (st == JIT_OK) {
        params.tmap_a = s->a.map;
        params.tmap_b = s->b.map;
    }
    pthread_mutex_unlock(&s->lock);
    if (st != JIT_OK)
        return st;
    params.sa = (const float *)o->scale_a;
    params.sb = (const float *)o->scale_b;
    params.d = (uint16_t *)o->d;
    params.rows = p->layout == JIT_GROUPS_CONTIGUOUS ? o->group_offsets : o->group_counts;
    params.m = p->m;
    params.ldd = a->ldd;
    params.alpha = p->alpha;
    CUlaunchConfig cfg;
    memset(&cfg, 0, sizeof(cfg));
    cfg.gridDimX = jit__grouped_grid(plan, p->m);
    cfg.gridDimY = cfg.gridDimZ = 1;
    cfg.blockDimX = (unsigned)plan->threads;
    cfg.blockDimY = cfg.blockDimZ = 1;
    cfg.sharedMemBytes = plan->smem_bytes;
    cfg.hStream = a->stream;
    void *args[] = {&params};
    CUresult r = drv->cuLaunchKernelEx(&cfg, fn, args, NULL);
    return r == CUDA_SUCCESS ? JIT_OK : jit__cuda_fail(drv, r, "launching the grouped kernel", d);
}
