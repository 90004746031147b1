/*
 * The FP8 mma.sync family's launch: the parameter block (abi.h) filled for one call, and a grid
 * of token tiles x B-row tiles. The family keeps no launch state.
 */
#include <string.h>

#include "abi.h"
#include "fp8_mma_sync.h"

jit_status_t jit__mma_sync_launch(const jit__driver_t *drv, CUfunction fn, const jit__plan_t *plan,
                                  void *state, const jit__launch_args_t *a, jit__diag_t *d) {
    (void)state;
    const jit_operands_t *o = a->operands;
    jit__mma_sync_params_t params;
    memset(&params, 0, sizeof(params));
    params.a = o->a;
    params.b = o->b;
    params.sa = (const float *)o->scale_a;
    params.sb = (const float *)o->scale_b;
    params.residual = o->residual;
    params.d = o->d;
    params.m = a->problem->m;
    params.lda = a->lda;
    params.ldb = a->ldb;
    params.ldd = a->ldd;
    params.ldr = a->ldr;
    params.alpha = a->problem->alpha;
    unsigned grid[3];
    jit__mma_sync_grid(plan, a->problem->m, grid);
    CUlaunchConfig cfg;
    memset(&cfg, 0, sizeof(cfg));
    cfg.gridDimX = grid[0];
    cfg.gridDimY = grid[1];
    cfg.gridDimZ = grid[2];
    cfg.blockDimX = (unsigned)plan->threads;
    cfg.blockDimY = cfg.blockDimZ = 1;
    cfg.sharedMemBytes = plan->smem_bytes;
    cfg.hStream = a->stream;
    void *args[] = {&params};
    CUresult r = drv->cuLaunchKernelEx(&cfg, fn, args, NULL);
    if (r != CUDA_SUCCESS)
        return jit__cuda_fail(drv, r, "cuLaunchKernelEx", d);
    return JIT_OK;
}
