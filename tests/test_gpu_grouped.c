/*
 * The grouped GEMM on the GPU through the public API (jit_gemm_grouped, a fresh cache
 * directory), against the grouped FP64 host reference from the same bytes, with the wgmma
 * family's tolerance (FP8 tensor-core accumulation promoted every 128 K).
 *
 * Inputs are fresh random E4M3 codes (no zeros, no NaN) and positive scales chosen so outputs
 * are O(1..10) (SwiGLU sees its curved part); N is ragged against every tile width and K = 1552
 * is not a multiple of 128. Rows of A that belong to no expert (contiguous: past offsets[G];
 * masked: past an expert's count) hold NaN codes, and D is poisoned with 0xFF bytes (BF16 NaN)
 * before each call: every expert row must be within tolerance, and every row of no expert and
 * every padding column must still hold the poison, so a kernel that stores a row of the next
 * expert, or reads one into an expert's result, fails. Per-expert counts include 0, 1, counts
 * around the 128-row tile, one large expert, uniform routing and skewed (Zipf-like) routing,
 * in both layouts and both epilogues, and with a planning hint far from the real counts; the
 * swap-AB route (decode) forced with each token tile, with counts either side of every N bucket.
 * CUDA-graph capture: one captured call replayed with other counts written to the same device
 * buffer before each replay, each replay checked. Without a GPU every test skips and says why.
 */
#include <criterion/criterion.h>
#include <dlfcn.h>
#include <math.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "driver.h"
#include "family.h"
#include "formats.h"
#include "gpu_main.h"
#include "jitgemm.h"
#include "plan.h"
#include "reference.h"
#include "support.h"

#define K_DIM 1552
#define NAN_CODE 0x7F

JT_GPU_TEST_MAIN()

/* ---- inputs ------------------------------------------------------------------------------- */

static uint8_t nonzero_code(uint64_t *rng) {
    for (;;) {
        uint8_t c = (uint8_t)(jt_rng_next(rng) >> 40);
        if ((c & 0x7F) != 0x7F && (c & 0x7F) != 0)
            return c;
    }
}

static double row_rms(const uint8_t *row, int64_t k) {
    double s = 0;
    for (int64_t i = 0; i < k; i++) {
        double v = jit__e4m3_decode(row[i]);
        s += v * v;
    }
    return sqrt(s / (double)k);
}

/* One grouped problem's host side. `rows` is what the kernel reads: offsets[G + 1] or
 * counts[G]. */
typedef struct gcase {
    jit_group_layout_t layout;
    jit_epilogue_t ep;
    int64_t groups, n, k, m, max_m, lda, ldd, nout, expected_m;
    uint8_t *a, *b;
    float *sa, *sb;
    int32_t *rows;
    float alpha;
} gcase_t;

/* The rows array of `counts` in the case's layout; contiguous A gets `slack` rows past the
 * last expert, masked A max_m rows per expert. */
static void set_counts(gcase_t *c, const int32_t *counts) {
    if (c->layout == JIT_GROUPS_CONTIGUOUS) {
        c->rows[0] = 0;
        for (int64_t g = 0; g < c->groups; g++)
            c->rows[g + 1] = c->rows[g] + counts[g];
        cr_assert_leq(c->rows[c->groups], c->m, "the counts fit A");
    } else {
        for (int64_t g = 0; g < c->groups; g++) {
            cr_assert_leq(counts[g], c->max_m);
            c->rows[g] = counts[g];
        }
    }
}

/* Fill A: rows of an expert random, the others NaN codes (never part of a result). */
static void fill_a(gcase_t *c, uint64_t *rng) {
    memset(c->a, NAN_CODE, (size_t)(c->m * c->lda));
    for (int64_t g = 0; g < c->groups; g++) {
        int64_t r0, cnt;
        jit__ref_grouped_rows(c->layout, c->groups, c->m, c->rows, g, &r0, &cnt);
        for (int64_t r = r0; r < r0 + cnt; r++) {
            for (int64_t i = 0; i < c->k; i++)
                c->a[r * c->lda + i] = nonzero_code(rng);
            c->sa[r] = (float)(jt_rng_uniform(rng, 0.5, 2.0) * 4.0 /
                               (row_rms(c->a + r * c->lda, c->k) * sqrt((double)c->k) * c->alpha));
        }
    }
}

/* A case with room for `capacity` rows (contiguous) or max_m rows per expert (masked). */
static void case_init(gcase_t *c, jit_group_layout_t layout, jit_epilogue_t ep, int64_t groups,
                      int64_t n, int64_t capacity, int64_t max_m, int odd_ldd, uint64_t *rng) {
    memset(c, 0, sizeof(*c));
    c->layout = layout;
    c->ep = ep;
    c->groups = groups;
    c->n = n;
    c->k = K_DIM;
    c->max_m = max_m;
    c->m = layout == JIT_GROUPS_CONTIGUOUS ? capacity : groups * max_m;
    c->lda = c->k + 32;
    c->nout = ep == JIT_EPILOGUE_LINEAR_SWIGLU ? n / 2 : n;
    c->ldd = odd_ldd ? c->nout + 7 : (c->nout + 7) / 8 * 8 + 8;
    c->alpha = ep == JIT_EPILOGUE_LINEAR ? 1.0f : 1.25f;
    c->a = malloc((size_t)(c->m * c->lda));
    c->b = malloc((size_t)(groups * n * c->k));
    c->sa = calloc((size_t)c->m, sizeof(float));
    c->sb = malloc(sizeof(float) * (size_t)(groups * n));
    c->rows = calloc((size_t)groups + 1, sizeof(int32_t));
    cr_assert(c->a && c->b && c->sa && c->sb && c->rows);
    for (int64_t i = 0; i < groups * n * c->k; i++)
        c->b[i] = nonzero_code(rng);
    for (int64_t r = 0; r < groups * n; r++)
        c->sb[r] = (float)(jt_rng_uniform(rng, 0.5, 2.0) / row_rms(c->b + r * c->k, c->k));
}

static void case_free(gcase_t *c) {
    free(c->a);
    free(c->b);
    free(c->sa);
    free(c->sb);
    free(c->rows);
}

/* ---- the reference, split over host threads by rows -------------------------------------- */

typedef struct ref_job {
    const gcase_t *c;
    const jit__gemm_spec_t *spec;
    int64_t r0, r1;
    double *out, *mag;
} ref_job_t;

static void *ref_worker(void *arg) {
    ref_job_t *j = arg;
    const gcase_t *c = j->c;
    jit__gemm_spec_t dense = *j->spec;
    dense.groups = 0;
    dense.layout = JIT_GROUPS_NONE;
    for (int64_t g = 0; g < c->groups; g++) {
        int64_t e0, cnt;
        jit__ref_grouped_rows(c->layout, c->groups, c->m, c->rows, g, &e0, &cnt);
        int64_t lo = e0 > j->r0 ? e0 : j->r0, hi = e0 + cnt < j->r1 ? e0 + cnt : j->r1;
        if (lo >= hi)
            continue;
        jit__ref_fp8_rowscaled(&dense, hi - lo, c->a + lo * c->lda, c->lda, c->b + g * c->n * c->k,
                               c->k, c->sa + lo, c->sb + g * c->n, NULL, 0, c->alpha,
                               j->out + lo * c->nout, j->mag + lo * c->nout);
    }
    return NULL;
}

static void reference(const gcase_t *c, const jit__gemm_spec_t *spec, double *out, double *mag) {
    long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
    int nt = ncpu < 1 ? 1 : ncpu > 32 ? 32 : (int)ncpu;
    pthread_t th[32];
    ref_job_t jobs[32];
    int started[32] = {0};
    int64_t per = (c->m + nt - 1) / nt;
    for (int t = 0; t < nt; t++) {
        jobs[t] =
            (ref_job_t){c, spec, t * per, (t + 1) * per < c->m ? (t + 1) * per : c->m, out, mag};
        if (pthread_create(&th[t], NULL, ref_worker, &jobs[t]) == 0)
            started[t] = 1;
        else
            ref_worker(&jobs[t]);
    }
    for (int t = 0; t < nt; t++)
        if (started[t])
            pthread_join(th[t], NULL);
}

/* ---- the device side ---------------------------------------------------------------------- */

typedef struct gpu {
    const jit__driver_t *drv;
    const jit__family_t *fam;
    jit_context_t *ctx;
    char *dir;
} gpu_t;

typedef struct dev_case {
    CUdeviceptr a, b, sa, sb, d, rows;
    size_t d_bytes;
} dev_case_t;

static CUdeviceptr dev_upload(const jit__driver_t *drv, const void *host, size_t bytes) {
    CUdeviceptr p = 0;
    cr_assert_eq(drv->cuMemAlloc(&p, bytes), CUDA_SUCCESS, "cuMemAlloc(%zu)", bytes);
    if (host)
        cr_assert_eq(drv->cuMemcpyHtoD(p, host, bytes), CUDA_SUCCESS);
    return p;
}

static void upload(const gpu_t *gp, const gcase_t *c, dev_case_t *dv) {
    const jit__driver_t *drv = gp->drv;
    dv->a = dev_upload(drv, c->a, (size_t)(c->m * c->lda));
    dv->b = dev_upload(drv, c->b, (size_t)(c->groups * c->n * c->k));
    dv->sa = dev_upload(drv, c->sa, sizeof(float) * (size_t)c->m);
    dv->sb = dev_upload(drv, c->sb, sizeof(float) * (size_t)(c->groups * c->n));
    dv->rows = dev_upload(drv, c->rows, sizeof(int32_t) * (size_t)(c->groups + 1));
    dv->d_bytes = sizeof(uint16_t) * (size_t)(c->m * c->ldd);
    dv->d = dev_upload(drv, NULL, dv->d_bytes);
}

static void dev_free(const jit__driver_t *drv, dev_case_t *dv) {
    CUdeviceptr p[] = {dv->a, dv->b, dv->sa, dv->sb, dv->d, dv->rows};
    for (size_t i = 0; i < sizeof(p) / sizeof(p[0]); i++)
        drv->cuMemFree(p[i]);
}

static void problem_of(const gcase_t *c, const dev_case_t *dv, jit_problem_t *p,
                       jit_operands_t *o) {
    jit_problem_init(p);
    p->m = c->m;
    p->n = c->n;
    p->k = c->k;
    p->epilogue = c->ep;
    p->lda = c->lda;
    p->ldd = c->ldd;
    p->alpha = c->alpha;
    p->groups = c->groups;
    p->layout = c->layout;
    p->expected_m = c->expected_m;
    jit_operands_init(o);
    o->a = (const void *)(uintptr_t)dv->a;
    o->b = (const void *)(uintptr_t)dv->b;
    o->scale_a = (const void *)(uintptr_t)dv->sa;
    o->scale_b = (const void *)(uintptr_t)dv->sb;
    o->d = (void *)(uintptr_t)dv->d;
    const int32_t *rows = (const int32_t *)(uintptr_t)dv->rows;
    if (c->layout == JIT_GROUPS_CONTIGUOUS)
        o->group_offsets = rows;
    else
        o->group_counts = rows;
}

/* D from the device against the reference: expert rows within tolerance, every other element
 * still the poison. */
static void check(const gpu_t *gp, const gcase_t *c, const dev_case_t *dv, const char *what) {
    jit__gemm_spec_t spec = {.n = c->n,
                             .k = c->k,
                             .a = JIT_DTYPE_E4M3,
                             .b = JIT_DTYPE_E4M3,
                             .out = JIT_DTYPE_BF16,
                             .scales = JIT_SCALE_ROW,
                             .epilogue = c->ep,
                             .groups = c->groups,
                             .layout = c->layout};
    uint16_t *d = malloc(dv->d_bytes);
    double *ref = malloc(sizeof(double) * (size_t)(c->m * c->nout));
    double *mag = malloc(sizeof(double) * (size_t)(c->m * c->nout));
    uint8_t *covered = calloc((size_t)c->m, 1);
    cr_assert(d && ref && mag && covered);
    cr_assert_eq(gp->drv->cuMemcpyDtoH(d, dv->d, dv->d_bytes), CUDA_SUCCESS);
    reference(c, &spec, ref, mag);
    int64_t expert_rows = 0;
    for (int64_t g = 0; g < c->groups; g++) {
        int64_t r0, cnt;
        jit__ref_grouped_rows(c->layout, c->groups, c->m, c->rows, g, &r0, &cnt);
        memset(covered + r0, 1, (size_t)cnt);
        expert_rows += cnt;
    }
    int64_t bad = 0, poisoned = 0, stray = 0;
    double worst = 0;
    for (int64_t r = 0; r < c->m; r++)
        for (int64_t j = 0; j < c->ldd; j++) {
            uint16_t bits = d[r * c->ldd + j];
            if (!covered[r] || j >= c->nout) {
                if (bits != 0xFFFF && stray++ < 4)
                    cr_log_error("%s: D[%lld][%lld] = 0x%04X written outside every expert's "
                                 "rows and columns",
                                 what, (long long)r, (long long)j, bits);
                continue;
            }
            poisoned += bits == 0xFFFF;
            double want = ref[r * c->nout + j], got = (double)jit__bf16_decode(bits);
            double tol = gp->fam->tolerance(want, mag[r * c->nout + j]);
            double err = fabs(got - want);
            if (!(err <= tol)) {
                if (bad++ < 6)
                    cr_log_error("%s: D[%lld][%lld] = %.8g, reference %.8g, |err| %.3g > %.3g",
                                 what, (long long)r, (long long)j, got, want, err, tol);
            } else if (err / tol > worst) {
                worst = err / tol;
            }
        }
    cr_log_info("%s: %lld expert rows of %lld, worst |err|/tol %.3g", what, (long long)expert_rows,
                (long long)c->m, worst);
    cr_expect_eq(bad, 0, "%s: %lld outputs out of tolerance", what, (long long)bad);
    cr_expect_eq(poisoned, 0, "%s: %lld outputs never written", what, (long long)poisoned);
    cr_expect_eq(stray, 0, "%s: %lld elements written outside the experts' rows", what,
                 (long long)stray);
    free(d);
    free(ref);
    free(mag);
    free(covered);
}

static void run_once(const gpu_t *gp, const gcase_t *c, const char *what) {
    dev_case_t dv;
    upload(gp, c, &dv);
    cr_assert_eq(gp->drv->cuMemsetD8(dv.d, 0xFF, dv.d_bytes), CUDA_SUCCESS);
    jit_problem_t p;
    jit_operands_t o;
    problem_of(c, &dv, &p, &o);
    jit_status_t st = jit_gemm_grouped(gp->ctx, &p, &o, NULL);
    cr_assert_eq(st, JIT_OK, "%s: %s: %s", what, jit_status_name(st), jit_last_error(gp->ctx));
    CUresult r = gp->drv->cuCtxSynchronize();
    cr_assert_eq(r, CUDA_SUCCESS, "%s: the kernel failed (%d)", what, (int)r);
    check(gp, c, &dv, what);
    dev_free(gp->drv, &dv);
}

static void require_gpu(gpu_t *gp) {
    const char *why = NULL;
    if (!jt_gpu_available(&why))
        cr_skip("GPU test skipped: %s", why ? why : "unknown reason");
    jit__diag_t dg;
    jit__diag_init(&dg);
    cr_assert_eq(jit__driver_get(&gp->drv, &dg), JIT_OK, "%s", dg.msg);
    CUcontext cuctx;
    CUdevice dev;
    cr_assert_eq(jit__driver_current_context(gp->drv, &cuctx, &dev, &dg), JIT_OK, "%s", dg.msg);
    gp->fam = jit__family_find("fp8_grouped_wgmma");
    cr_assert_not_null(gp->fam);
    gp->dir = jt_mkdtemp("gpu-grouped");
    jit_context_options_t opt;
    jit_context_options_init(&opt);
    opt.cache_dir = gp->dir;
    cr_assert_eq(jit_context_create(&opt, &gp->ctx), JIT_OK, "%s", jit_last_error(NULL));
    if (strcmp(jit_context_arch(gp->ctx), "sm_90a") != 0)
        cr_skip("GPU test skipped: grouped GEMM runs on sm_90a, this device is %s",
                jit_context_arch(gp->ctx));
}

static void release_gpu(gpu_t *gp) {
    jit_context_destroy(gp->ctx);
    jt_rmtree(gp->dir);
    free(gp->dir);
}

/* ---- routings ----------------------------------------------------------------------------- */

/* Zipf-like: expert of rank i gets a share proportional to 1 / (i + 1)^1.1, in a shuffled
 * order; `total` rows overall, so the tail experts get 0 or 1. */
static void zipf_counts(int64_t groups, int64_t total, uint64_t *rng, int32_t *counts) {
    double norm = 0;
    for (int64_t i = 0; i < groups; i++)
        norm += pow((double)(i + 1), -1.1);
    for (int64_t i = 0; i < groups; i++)
        counts[i] = (int32_t)floor((double)total * pow((double)(i + 1), -1.1) / norm);
    for (int64_t i = groups - 1; i > 0; i--) {
        int64_t j = (int64_t)(jt_rng_next(rng) % (uint64_t)(i + 1));
        int32_t t = counts[i];
        counts[i] = counts[j];
        counts[j] = t;
    }
}

static void uniform_counts(int64_t groups, int32_t lo, int32_t hi, uint64_t *rng, int32_t *counts) {
    for (int64_t i = 0; i < groups; i++)
        counts[i] = lo + (int32_t)(jt_rng_next(rng) % (uint64_t)(hi - lo + 1));
}

static int64_t sum_of(const int32_t *v, int64_t n) {
    int64_t s = 0;
    for (int64_t i = 0; i < n; i++)
        s += v[i];
    return s;
}

static int32_t max_of_counts(const int32_t *v, int64_t n) {
    int32_t m = 0;
    for (int64_t i = 0; i < n; i++)
        m = v[i] > m ? v[i] : m;
    return m;
}

/* One routing in one layout and epilogue; `hint` the expected rows per expert (0: the
 * library's default). Contiguous A has 37 rows past the last expert. */
static void run_routing(gpu_t *gp, jit_group_layout_t layout, jit_epilogue_t ep, int64_t n,
                        const int32_t *counts, int64_t groups, int64_t hint, int odd_ldd,
                        uint64_t seed, const char *name) {
    uint64_t rng = seed;
    gcase_t c;
    int64_t total = sum_of(counts, groups), max_m = max_of_counts(counts, groups) + 5;
    case_init(&c, layout, ep, groups, n, total + 37, max_m, odd_ldd, &rng);
    c.expected_m = hint;
    set_counts(&c, counts);
    fill_a(&c, &rng);
    char what[160];
    snprintf(what, sizeof(what), "%s %s %s G=%lld rows=%lld hint=%lld seed 0x%016llx", name,
             jit_group_layout_name(layout), jit_epilogue_name(ep), (long long)groups,
             (long long)total, (long long)hint, (unsigned long long)seed);
    run_once(gp, &c, what);
    case_free(&c);
}

static void run_routings(jit_group_layout_t layout, jit_epilogue_t ep, int64_t n) {
    gpu_t gp;
    require_gpu(&gp);
    uint64_t seed = jt_fresh_seed(), rng = seed;
    /* Empty experts first, inside and last; one row; around the 128-row tile; a larger one. */
    static const int32_t edges[] = {0, 1, 127, 128, 129, 0, 600, 3, 0};
    run_routing(&gp, layout, ep, n, edges, 9, 0, 0, seed, "edges");
    /* One large expert among empty and tiny ones. */
    static const int32_t large[] = {0, 0, 2500, 1, 0, 5, 0, 0};
    run_routing(&gp, layout, ep, n, large, 8, 0, 1, seed + 1, "one large expert");
    int32_t counts[64];
    uniform_counts(16, 60, 100, &rng, counts);
    run_routing(&gp, layout, ep, n, counts, 16, 0, 0, seed + 2, "uniform");
    zipf_counts(64, 3000, &rng, counts);
    run_routing(&gp, layout, ep, n, counts, 64, 0, 1, seed + 3, "zipf");
    /* A hint far from the counts plans another band's kernel; the result must not change. */
    run_routing(&gp, layout, ep, n, counts, 64, 4, 0, seed + 4, "zipf, hint 4");
    release_gpu(&gp);
}

Test(gpu_grouped, contiguous_linear, .timeout = 900) {
    run_routings(JIT_GROUPS_CONTIGUOUS, JIT_EPILOGUE_LINEAR, 1000);
}

Test(gpu_grouped, contiguous_swiglu, .timeout = 900) {
    run_routings(JIT_GROUPS_CONTIGUOUS, JIT_EPILOGUE_LINEAR_SWIGLU, 1048);
}

Test(gpu_grouped, masked_linear, .timeout = 900) {
    run_routings(JIT_GROUPS_MASKED, JIT_EPILOGUE_LINEAR, 1000);
}

Test(gpu_grouped, masked_swiglu, .timeout = 900) {
    run_routings(JIT_GROUPS_MASKED, JIT_EPILOGUE_LINEAR_SWIGLU, 1048);
}

/* ---- the swap-AB route --------------------------------------------------------------------- */

/* The decode route, forced with each token tile: counts on both sides of every N bucket (8, 16,
 * 32, 64), experts with more rows than a token tile (several tiles, each reading the weights),
 * empty experts, and Zipf-like decode routing. The hint keeps the problem in the bands the route
 * is planned for (up to 64 rows per expert). */
static void run_swap(jit_group_layout_t layout, jit_epilogue_t ep, int64_t n) {
    static const char *const forced[] = {"grouped_swap:16x128", "grouped_swap:32x128",
                                         "grouped_swap:64x128"};
    static const int64_t hints[] = {8, 40, 40};
    static const int32_t buckets[] = {0, 1, 7, 8, 9, 16, 17, 33, 64, 65, 130, 0, 2};
    uint64_t seed = jt_fresh_seed(), rng = seed;
    int32_t zipf[64];
    zipf_counts(64, 600, &rng, zipf);
    for (size_t f = 0; f < 3; f++) {
        /* A context of its own for each forced form: the loaded kernels are found by problem
         * (launch key), which a forced candidate does not change. */
        gpu_t gp;
        require_gpu(&gp);
        setenv("JITGEMM_FORCE_CANDIDATE", forced[f], 1);
        char name[64];
        snprintf(name, sizeof(name), "%s buckets", forced[f]);
        run_routing(&gp, layout, ep, n, buckets, 13, hints[f], (int)f & 1, seed + f, name);
        snprintf(name, sizeof(name), "%s zipf", forced[f]);
        run_routing(&gp, layout, ep, n, zipf, 64, hints[f], 0, seed + 10 + f, name);
        unsetenv("JITGEMM_FORCE_CANDIDATE");
        release_gpu(&gp);
    }
}

Test(gpu_grouped, swap_contiguous_linear, .timeout = 900) {
    run_swap(JIT_GROUPS_CONTIGUOUS, JIT_EPILOGUE_LINEAR, 1000);
}

Test(gpu_grouped, swap_masked_swiglu, .timeout = 900) {
    run_swap(JIT_GROUPS_MASKED, JIT_EPILOGUE_LINEAR_SWIGLU, 1048);
}

Test(gpu_grouped, swap_contiguous_swiglu, .timeout = 900) {
    run_swap(JIT_GROUPS_CONTIGUOUS, JIT_EPILOGUE_LINEAR_SWIGLU, 1048);
}

Test(gpu_grouped, swap_masked_linear, .timeout = 900) {
    run_swap(JIT_GROUPS_MASKED, JIT_EPILOGUE_LINEAR, 1000);
}

/* ---- CUDA graphs -------------------------------------------------------------------------- */

/* The graph entry points the library's driver table has no use for, fetched here. */
typedef struct graph_api {
    CUresult (*stream_create)(CUstream *, unsigned);
    CUresult (*stream_destroy)(CUstream);
    CUresult (*begin)(CUstream, CUstreamCaptureMode);
    CUresult (*end)(CUstream, CUgraph *);
    CUresult (*instantiate)(CUgraphExec *, CUgraph, unsigned long long);
    CUresult (*launch)(CUgraphExec, CUstream);
    CUresult (*exec_destroy)(CUgraphExec);
    CUresult (*graph_destroy)(CUgraph);
} graph_api_t;

typedef CUresult (*get_proc_fn)(const char *, void **, int, cuuint64_t,
                                CUdriverProcAddressQueryResult *);

static void graph_api(graph_api_t *g) {
    void *lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    cr_assert_not_null(lib);
    get_proc_fn gp = (get_proc_fn)dlsym(lib, "cuGetProcAddress_v2");
    cr_assert_not_null(gp);
    struct {
        const char *name;
        void **slot;
    } fns[] = {{"cuStreamCreate", (void **)&g->stream_create},
               {"cuStreamDestroy", (void **)&g->stream_destroy},
               {"cuStreamBeginCapture", (void **)&g->begin},
               {"cuStreamEndCapture", (void **)&g->end},
               {"cuGraphInstantiateWithFlags", (void **)&g->instantiate},
               {"cuGraphLaunch", (void **)&g->launch},
               {"cuGraphExecDestroy", (void **)&g->exec_destroy},
               {"cuGraphDestroy", (void **)&g->graph_destroy}};
    for (size_t i = 0; i < sizeof(fns) / sizeof(fns[0]); i++) {
        CUdriverProcAddressQueryResult q;
        cr_assert_eq(gp(fns[i].name, fns[i].slot, 12000, CU_GET_PROC_ADDRESS_DEFAULT, &q),
                     CUDA_SUCCESS, "%s", fns[i].name);
        cr_assert_not_null(*fns[i].slot, "%s", fns[i].name);
    }
}

/* One call captured, then replayed with a new routing written to the same offsets or counts
 * buffer before each replay (and D poisoned again): every replay is checked against the
 * reference of its own routing. The first routing is warmed up outside the capture, so the
 * capture records only the launch. */
static void run_graph(jit_group_layout_t layout, jit_epilogue_t ep, int64_t n) {
    gpu_t gp;
    require_gpu(&gp);
    graph_api_t g;
    graph_api(&g);
    enum { GROUPS = 16, REPLAYS = 5, MAX_M = 300 };
    uint64_t seed = jt_fresh_seed(), rng = seed;
    gcase_t c;
    case_init(&c, layout, ep, GROUPS, n, GROUPS * MAX_M, MAX_M, 0, &rng);
    int32_t counts[GROUPS];
    /* A's rows are all random here, so every routing finds data wherever its experts are. */
    for (int64_t i = 0; i < GROUPS; i++)
        counts[i] = MAX_M;
    set_counts(&c, counts);
    fill_a(&c, &rng);
    uniform_counts(GROUPS, 0, 200, &rng, counts);
    set_counts(&c, counts);
    dev_case_t dv;
    upload(&gp, &c, &dv);
    jit_problem_t p;
    jit_operands_t o;
    problem_of(&c, &dv, &p, &o);
    p.expected_m = 100;
    CUstream s;
    cr_assert_eq(g.stream_create(&s, CU_STREAM_NON_BLOCKING), CUDA_SUCCESS);
    /* The uploads went through the legacy stream, which a non-blocking one does not wait for. */
    cr_assert_eq(gp.drv->cuCtxSynchronize(), CUDA_SUCCESS);
    cr_assert_eq(jit_gemm_grouped(gp.ctx, &p, &o, s), JIT_OK, "%s", jit_last_error(gp.ctx));
    cr_assert_eq(gp.drv->cuStreamSynchronize(s), CUDA_SUCCESS);
    CUgraph graph;
    CUgraphExec exec;
    cr_assert_eq(g.begin(s, CU_STREAM_CAPTURE_MODE_THREAD_LOCAL), CUDA_SUCCESS);
    jit_status_t st = jit_gemm_grouped(gp.ctx, &p, &o, s);
    cr_assert_eq(g.end(s, &graph), CUDA_SUCCESS);
    cr_assert_eq(st, JIT_OK, "captured call: %s", jit_last_error(gp.ctx));
    cr_assert_eq(g.instantiate(&exec, graph, 0), CUDA_SUCCESS);
    for (int replay = 0; replay < REPLAYS; replay++) {
        /* 0 and a full expert in every routing, the rest from nothing to MAX_M. */
        uniform_counts(GROUPS, 0, MAX_M, &rng, counts);
        counts[replay % GROUPS] = 0;
        counts[(replay + 5) % GROUPS] = MAX_M;
        set_counts(&c, counts);
        cr_assert_eq(gp.drv->cuMemcpyHtoD(dv.rows, c.rows, sizeof(int32_t) * (GROUPS + 1)),
                     CUDA_SUCCESS);
        cr_assert_eq(gp.drv->cuMemsetD8(dv.d, 0xFF, dv.d_bytes), CUDA_SUCCESS);
        cr_assert_eq(gp.drv->cuCtxSynchronize(), CUDA_SUCCESS);
        cr_assert_eq(g.launch(exec, s), CUDA_SUCCESS);
        cr_assert_eq(gp.drv->cuStreamSynchronize(s), CUDA_SUCCESS, "replay %d", replay);
        char what[128];
        snprintf(what, sizeof(what), "graph replay %d %s %s seed 0x%016llx", replay,
                 jit_group_layout_name(layout), jit_epilogue_name(ep), (unsigned long long)seed);
        check(&gp, &c, &dv, what);
    }
    g.exec_destroy(exec);
    g.graph_destroy(graph);
    g.stream_destroy(s);
    dev_free(gp.drv, &dv);
    case_free(&c);
    release_gpu(&gp);
}

Test(gpu_grouped, graph_replays_with_new_offsets, .timeout = 900) {
    run_graph(JIT_GROUPS_CONTIGUOUS, JIT_EPILOGUE_LINEAR, 1000);
}

Test(gpu_grouped, graph_replays_with_new_counts, .timeout = 900) {
    run_graph(JIT_GROUPS_MASKED, JIT_EPILOGUE_LINEAR_SWIGLU, 1048);
}
