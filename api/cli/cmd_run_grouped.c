/*
 * `jitgemm run --groups G ...`: one grouped GEMM on the GPU, checked against the host FP64
 * reference, then timed, as `run` does for a dense one (cmd_run.c). The routing is random: each
 * expert gets 0 to 2 x T/G rows (contiguous: as many as fit in T; masked: up to max_M = T/G),
 * so empty experts and ragged ones occur, and the rows of no expert must keep the output's
 * poison. A spread of expert rows is checked within a host budget, always the first and last
 * expert row; the kernel reads the rows per expert on the device only.
 */
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "driver.h"
#include "family.h"
#include "formats.h"
#include "plan.h"
#include "reference.h"

#define REF_BUDGET_MACS (1ll << 31)
#define MAX_SHOWN 5

typedef struct grouped_host {
    int64_t m, nout, covered_rows;
    uint8_t *a, *b;
    float *sa, *sb;
    int32_t *rows;   /* offsets[G + 1] or counts[G] */
    int32_t *expert; /* expert of each row of A, -1 for none */
    uint16_t *d;
} grouped_host_t;

static uint64_t next(uint64_t *s) {
    uint64_t x = *s;
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    return *s = x;
}

static void routing(const jit_problem_t *p, grouped_host_t *h, uint64_t *rng) {
    const int64_t g_count = p->groups, per = p->m / g_count > 0 ? p->m / g_count : 1;
    int64_t used = 0;
    if (p->layout == JIT_GROUPS_CONTIGUOUS)
        h->rows[0] = 0;
    for (int64_t g = 0; g < g_count; g++) {
        int64_t want = (int64_t)(next(rng) % (uint64_t)(2 * per + 1));
        if (p->layout == JIT_GROUPS_CONTIGUOUS) {
            want = want < p->m - used ? want : p->m - used;
            used += want;
            h->rows[g + 1] = (int32_t)used;
        } else {
            h->rows[g] = (int32_t)(want < per ? want : per);
        }
    }
    for (int64_t r = 0; r < h->m; r++)
        h->expert[r] = -1;
    h->covered_rows = 0;
    for (int64_t g = 0; g < g_count; g++) {
        int64_t r0, cnt;
        jit__ref_grouped_rows(p->layout, g_count, p->m, h->rows, g, &r0, &cnt);
        for (int64_t r = r0; r < r0 + cnt; r++)
            h->expert[r] = (int32_t)g;
        h->covered_rows += cnt;
    }
}

static void fill(const jit_problem_t *p, grouped_host_t *h, uint64_t *rng) {
    for (int64_t i = 0; i < h->m * p->k; i++)
        h->a[i] = jit__e4m3_encode((float)((double)(next(rng) >> 11) / 9007199254740992.0 * 4 - 2));
    for (int64_t i = 0; i < p->groups * p->n * p->k; i++)
        h->b[i] = jit__e4m3_encode((float)((double)(next(rng) >> 11) / 9007199254740992.0 * 4 - 2));
    h->a[0] = jit__e4m3_encode(1.0f); /* never all zero */
    for (int64_t i = 0; i < h->m; i++)
        h->sa[i] = (float)(0.25 + 0.75 * (double)(next(rng) >> 11) / 9007199254740992.0);
    for (int64_t i = 0; i < p->groups * p->n; i++)
        h->sb[i] = (float)(0.25 + 0.75 * (double)(next(rng) >> 11) / 9007199254740992.0);
}

/* Checks a spread of expert rows (and every row of no expert for the poison); returns the
 * mismatch count and fills the worst ratio. */
static int64_t check(const jit_problem_t *p, const jit__family_t *fam, const grouped_host_t *h,
                     int64_t *rows_checked, double *worst) {
    jit__gemm_spec_t spec;
    jit__spec_from_problem(p, &spec, NULL);
    spec.groups = 0;
    spec.layout = JIT_GROUPS_NONE;
    double *ref = malloc(sizeof(double) * (size_t)h->nout);
    double *mag = malloc(sizeof(double) * (size_t)h->nout);
    int64_t bad = 0, budget = REF_BUDGET_MACS / (p->n * p->k), seen = 0, checked = 0;
    int64_t every = h->covered_rows / (budget > 1 ? budget : 1) + 1;
    *worst = 0;
    for (int64_t r = 0; ref && mag && r < h->m; r++) {
        const uint16_t *row = h->d + r * h->nout;
        int g = h->expert[r];
        if (g < 0) {
            for (int64_t j = 0; j < h->nout; j++)
                if (row[j] != 0xFFFF && bad++ < MAX_SHOWN)
                    fprintf(stderr, "  D[%" PRId64 "][%" PRId64 "] written: no expert owns it\n", r,
                            j);
            continue;
        }
        if (seen++ % every != 0 && seen != h->covered_rows)
            continue;
        checked++;
        jit__ref_fp8_rowscaled(&spec, 1, h->a + r * p->k, p->k, h->b + g * p->n * p->k, p->k,
                               h->sa + r, h->sb + g * p->n, NULL, 0, p->alpha, ref, mag);
        for (int64_t j = 0; j < h->nout; j++) {
            double got = (double)jit__bf16_decode(row[j]), err = fabs(got - ref[j]);
            double tol = fam->tolerance(ref[j], mag[j]);
            if (!(err <= tol)) {
                if (bad++ < MAX_SHOWN)
                    fprintf(stderr,
                            "  mismatch D[%" PRId64 "][%" PRId64 "] (expert %d): gpu %.6g "
                            "ref %.6g\n",
                            r, j, g, got, ref[j]);
                *worst = INFINITY;
            } else if (tol > 0 && err / tol > *worst) {
                *worst = err / tol;
            }
        }
    }
    free(ref);
    free(mag);
    *rows_checked = checked;
    return bad;
}

static int cuda_ok(const jit__driver_t *drv, CUresult r, const char *what) {
    if (r == CUDA_SUCCESS)
        return 1;
    const char *name = "?";
    drv->cuGetErrorName(r, &name);
    jit__cli_error("%s: %s", what, name);
    return 0;
}

static int call(jit_context_t *ctx, const jit_problem_t *p, const jit_operands_t *o) {
    jit_status_t st = jit_gemm_grouped(ctx, p, o, NULL);
    if (st == JIT_OK)
        return 1;
    jit__cli_error("jit_gemm_grouped: %s", jit_last_error(ctx));
    return 0;
}

/* Median of `iters` timed calls, in seconds; -1 on failure. */
static double timed(const jit__driver_t *drv, jit_context_t *ctx, const jit_problem_t *p,
                    const jit_operands_t *o, int iters) {
    CUevent e0, e1;
    double *t = calloc((size_t)iters, sizeof(double)), med = -1;
    if (!t || !cuda_ok(drv, drv->cuEventCreate(&e0, 0), "cuEventCreate"))
        return free(t), -1;
    if (cuda_ok(drv, drv->cuEventCreate(&e1, 0), "cuEventCreate")) {
        int i = 0;
        for (; i < iters; i++) {
            float ms = 0;
            if (!cuda_ok(drv, drv->cuEventRecord(e0, NULL), "cuEventRecord") || !call(ctx, p, o) ||
                !cuda_ok(drv, drv->cuEventRecord(e1, NULL), "cuEventRecord") ||
                !cuda_ok(drv, drv->cuEventSynchronize(e1), "cuEventSynchronize") ||
                !cuda_ok(drv, drv->cuEventElapsedTime(&ms, e0, e1), "cuEventElapsedTime"))
                break;
            t[i] = 1e-3 * ms;
        }
        if (i == iters)
            med = jit__cli_median(t, (size_t)iters);
        drv->cuEventDestroy(e1);
    }
    drv->cuEventDestroy(e0);
    free(t);
    return med;
}

int jit__cli_run_grouped(const jit__driver_t *drv, jit_context_t *ctx, const jit__family_t *fam,
                         const jit_problem_t *p, uint64_t seed, int iters, FILE *txt) {
    grouped_host_t h = {0};
    h.m = p->m;
    h.nout = p->epilogue == JIT_EPILOGUE_LINEAR_SWIGLU ? p->n / 2 : p->n;
    size_t a_bytes = (size_t)(h.m * p->k), b_bytes = (size_t)(p->groups * p->n * p->k);
    size_t d_bytes = (size_t)(h.m * h.nout) * 2,
           rows_bytes = sizeof(int32_t) * (size_t)(p->groups + 1);
    h.a = malloc(a_bytes);
    h.b = malloc(b_bytes);
    h.sa = malloc(sizeof(float) * (size_t)h.m);
    h.sb = malloc(sizeof(float) * (size_t)(p->groups * p->n));
    h.rows = calloc((size_t)p->groups + 1, sizeof(int32_t));
    h.expert = malloc(sizeof(int32_t) * (size_t)h.m);
    h.d = malloc(d_bytes);
    CUdeviceptr da = 0, db = 0, dsa = 0, dsb = 0, drows = 0, dd = 0;
    int rc = JIT_CLI_FAILED;
    if (!h.a || !h.b || !h.sa || !h.sb || !h.rows || !h.expert || !h.d) {
        jit__cli_error("out of host memory for the grouped problem");
        goto done;
    }
    uint64_t rng = seed;
    fill(p, &h, &rng);
    routing(p, &h, &rng);
    if (!cuda_ok(drv, drv->cuMemAlloc(&da, a_bytes), "cuMemAlloc") ||
        !cuda_ok(drv, drv->cuMemAlloc(&db, b_bytes), "cuMemAlloc") ||
        !cuda_ok(drv, drv->cuMemAlloc(&dsa, sizeof(float) * (size_t)h.m), "cuMemAlloc") ||
        !cuda_ok(drv, drv->cuMemAlloc(&dsb, sizeof(float) * (size_t)(p->groups * p->n)),
                 "cuMemAlloc") ||
        !cuda_ok(drv, drv->cuMemAlloc(&drows, rows_bytes), "cuMemAlloc") ||
        !cuda_ok(drv, drv->cuMemAlloc(&dd, d_bytes), "cuMemAlloc") ||
        !cuda_ok(drv, drv->cuMemcpyHtoD(da, h.a, a_bytes), "cuMemcpyHtoD") ||
        !cuda_ok(drv, drv->cuMemcpyHtoD(db, h.b, b_bytes), "cuMemcpyHtoD") ||
        !cuda_ok(drv, drv->cuMemcpyHtoD(dsa, h.sa, sizeof(float) * (size_t)h.m), "cuMemcpyHtoD") ||
        !cuda_ok(drv, drv->cuMemcpyHtoD(dsb, h.sb, sizeof(float) * (size_t)(p->groups * p->n)),
                 "cuMemcpyHtoD") ||
        !cuda_ok(drv, drv->cuMemcpyHtoD(drows, h.rows, rows_bytes), "cuMemcpyHtoD") ||
        !cuda_ok(drv, drv->cuMemsetD8(dd, 0xFF, d_bytes), "cuMemsetD8"))
        goto done;
    jit_operands_t o;
    jit_operands_init(&o);
    o.a = (const void *)(uintptr_t)da;
    o.b = (const void *)(uintptr_t)db;
    o.scale_a = (const void *)(uintptr_t)dsa;
    o.scale_b = (const void *)(uintptr_t)dsb;
    o.d = (void *)(uintptr_t)dd;
    if (p->layout == JIT_GROUPS_CONTIGUOUS)
        o.group_offsets = (const int32_t *)(uintptr_t)drows;
    else
        o.group_counts = (const int32_t *)(uintptr_t)drows;
    if (!call(ctx, p, &o) || !cuda_ok(drv, drv->cuCtxSynchronize(), "the grouped kernel") ||
        !cuda_ok(drv, drv->cuMemcpyDtoH(h.d, dd, d_bytes), "cuMemcpyDtoH"))
        goto done;
    int64_t checked = 0;
    double worst = 0;
    int64_t bad = check(p, fam, &h, &checked, &worst);
    fprintf(txt, "routing: %" PRId64 " of %" PRId64 " rows in %" PRId64 " experts (%s)\n",
            h.covered_rows, h.m, p->groups, jit_group_layout_name(p->layout));
    fprintf(txt, "check: %" PRId64 " expert rows, worst err/tol %.3g, mismatches %" PRId64 "\n%s\n",
            checked, worst, bad, bad ? "FAIL" : "PASS");
    if (bad) {
        jit__cli_error("check failed (seed 0x%016" PRIx64 ")", seed);
        goto done;
    }
    double t = timed(drv, ctx, p, &o, iters);
    if (t < 0)
        goto done;
    double flops = 2.0 * (double)h.covered_rows * (double)p->n * (double)p->k;
    fprintf(txt, "time: median %.2f us over %d iterations, %.2f TFLOP/s on the routed rows\n",
            t * 1e6, iters, flops / t * 1e-12);
    rc = 0;
done:;
    CUdeviceptr bufs[] = {da, db, dsa, dsb, drows, dd};
    for (size_t i = 0; i < sizeof(bufs) / sizeof(bufs[0]); i++)
        if (bufs[i])
            drv->cuMemFree(bufs[i]);
    free(h.a);
    free(h.b);
    free(h.sa);
    free(h.sb);
    free(h.rows);
    free(h.expert);
    free(h.d);
    return rc;
}
