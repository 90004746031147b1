/*
 * The activation quantizer's launch: the parameter block from jit_quantize_fp8_1x128's
 * arguments and a grid-stride grid sized from M (the kernel keeps no launch state).
 */
#include <string.h>

#include "quant.h"

void jit__quant_params(const jit__launch_args_t *a, const jit_quantize_operands_t *o,
                       jit__quant_params_t *out) {
    memset(out, 0, sizeof(*out));
    out->x = (const uint16_t *)o->x;
    out->q = (uint8_t *)o->q;
    out->sfa = o->scales;
    out->m = a->problem->m;
    out->ldx = a->lda;
    out->ldq = a->ldd;
    out->sfa_stride_m = a->sfa_stride_m;
    out->sfa_stride_k = a->sfa_stride_k;
    out->pow2_scales = o->pow2_scales ? 1u : 0u;
}

jit_status_t jit__quant_launch(const jit__driver_t *drv, CUfunction fn, const jit__plan_t *plan,
                               const jit__launch_args_t *a, const jit_quantize_operands_t *o,
                               jit__diag_t *d) {
    jit__quant_params_t params;
    jit__quant_params(a, o, &params);
    CUlaunchConfig cfg;
    memset(&cfg, 0, sizeof(cfg));
    cfg.gridDimX = jit__quant_grid(plan, a->problem->m);
    cfg.gridDimY = cfg.gridDimZ = 1;
    cfg.blockDimX = (unsigned)plan->threads;
    cfg.blockDimY = cfg.blockDimZ = 1;
    cfg.sharedMemBytes = 0;
    cfg.hStream = a->stream;
    void *args[] = {&params};
    CUresult r = drv->cuLaunchKernelEx(&cfg, fn, args, NULL);
    return r == CUDA_SUCCESS ? JIT_OK : jit__cuda_fail(drv, r, "cuLaunchKernelEx", d);
}
