/*
 * `jitgemm run`: one GEMM on the GPU with fresh random inputs, checked against the host FP64
 * reference, then timed. The check comes first and decides the exit status; timing a wrong
 * kernel is worthless.
 *
 * Design choices. The output is poisoned (0xFF bytes: BF16 NaN) and followed by a guard region
 * that must come back untouched, so a kernel that skips a tile or writes past the last row
 * fails. The reference costs N*K multiply-adds per row in double on the host, so for large
 * problems a spread of rows (always the first and the last, where the ragged M tail is) is
 * checked instead of all of them, within a fixed budget; every column of a checked row is
 * compared. The tolerance is that of the family that computed the result (its `tolerance`):
 * |gpu - ref| <= 2^-8 |ref| + c * mag + 2^-100, the first term BF16's rounding, the second the
 * accumulation error, which scales with sum_k |a*b| (mag, from the reference), not with the
 * possibly cancelled result (c = 1e-5 for FP32 accumulation, 2^-12 for FP8 tensor-core
 * accumulation promoted every 128 K), the third what FP32's flush to zero can lose.
 */
#include <inttypes.h>
#include <jansson.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"
#include "driver.h"
#include "formats.h"
#include "family.h"
#include "plan.h"
#include "reference.h"

const char jit__cli_run_help[] =
    "Usage: jitgemm run --op OP --n N --k K --tokens T [--a A] [--b B] [--scales S]\n"
    "                   [--sfa-layout L] [--out-dtype D] [--groups G [--layout L]\n"
    "                   [--expected-m E]] [--iters I] [--seed S] [--arch A] [--sm-count N]\n"
    "                   [--cache-dir D] [--json]\n"
    "\n"
    "Run one GEMM on the GPU: random inputs (a fresh seed unless --seed), poisoned output, one\n"
    "call checked against the host FP64 reference, then I timed calls (CUDA events).\n"
    "Prints the worst error, the mismatch count and PASS or FAIL, then the median time,\n"
    "TFLOP/s (2*M*N*K / t) and effective GB/s (bytes of A, B, scales, residual and D / t).\n"
    "The check covers E4M3 x E4M3 with BF16 output and row scales or 128x128 block scales\n"
    "(FP32, one per 1x128 group of A and per 128x128 block of B), the formats with an sm_90a\n"
    "kernel; for large problems it checks a spread of rows, always the first and last.\n"
    "--op quantize_fp8_1x128 --k K --tokens T runs the activation quantizer instead: BF16 input\n"
    "of mixed magnitudes, Q and m-major scales (ld_sfa = M rounded up to 4) compared bit for\n"
    "bit with the host reference, guard bytes after both, the time as GB/s of X, Q and scales.\n"
    "\n"
    "Options:\n"
    "  --op OP --n N --k K --tokens T   the problem, as for 'jitgemm inspect'\n"
    "  --a A --b B --scales S --out-dtype D\n"
    "  --sfa-layout L  128x128 scales: SFA k-major ([M][ceil(K/128)], the default) or m-major\n"
    "                  ([ceil(K/128)][M], as DeepGEMM and torch store it)\n"
    "  --groups G --layout L --expected-m E   a grouped (mixture-of-experts) problem, as for\n"
    "                  'jitgemm inspect': T rows of A routed at random, each expert 0 to 2 T/G\n"
    "                  of them (masked: at most T/G); the check also wants every row of no\n"
    "                  expert untouched; TFLOP/s counts the routed rows. --json gives the\n"
    "                  problem, groups, layout and pass\n"
    "  --iters I       timed iterations (default 20)\n"
    "  --seed S        random seed (decimal or 0x hex), to repeat a run\n"
    "  --arch A        plan for A instead of the GPU's own arch (the kernel must run here)\n"
    "  --sm-count N    plan for N SMs instead of the GPU's count\n"
    "  --cache-dir D   cache directory (default $JITGEMM_CACHE_DIR, ...)\n"
    "  --json          the text goes to stderr; stdout gets one JSON object: the problem,\n"
    "                  arch, device, seed, first_call_s, check {rows_checked, values,\n"
    "                  max_abs_err, worst_err_over_tol, mismatches, guard_ok}, pass, and\n"
    "                  (when it passed) iters, median_us, tflops, gbps\n"
    "\n"
    "Exit status: 0 PASS, 1 FAIL, no GPU or the call failed, 2 bad command line.\n";

/* Host multiply-adds the reference may spend; about a second or two on one core. */
#define REF_BUDGET_MACS (1ll << 31)
#define GUARD_BYTES 4096
#define MAX_SHOWN 5

/* sa/sb: row scales (M and N floats), or 128x128 SFA (element (m, kb) at m * sfa_m + kb *
 * sfa_k) and SFB ([ceil(N/128)][ceil(K/128)]). */
typedef struct host_data {
    uint8_t *a, *b;
    float *sa, *sb;
    uint16_t *res, *d;
    int64_t sa_count, sb_count, sfa_m, sfa_k;
} host_data_t;

static int block_scaled(const jit_problem_t *p) {
    return p->scale_mode == JIT_SCALE_BLOCK_1X128_128X128;
}

/* How many scales each operand has, and SFA's strides for 128x128 scales (packed). */
static void scale_shape(const jit_problem_t *p, host_data_t *h) {
    const int64_t kb = (p->k + 127) / 128, nb = (p->n + 127) / 128;
    if (!block_scaled(p)) {
        h->sa_count = p->m, h->sb_count = p->n, h->sfa_m = 1, h->sfa_k = 0;
        return;
    }
    h->sa_count = p->m * kb;
    h->sb_count = nb * kb;
    h->sfa_m = p->sfa_layout == JIT_SFA_M_MAJOR ? 1 : kb;
    h->sfa_k = p->sfa_layout == JIT_SFA_M_MAJOR ? p->m : 1;
}

typedef struct dev_data {
    CUdeviceptr a, b, sa, sb, res, d;
} dev_data_t;

static uint64_t rng_next(uint64_t *s) {
    uint64_t x = *s;
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    return *s = x;
}

static double rng_uniform(uint64_t *s, double lo, double hi) {
    return lo + (hi - lo) * (double)(rng_next(s) >> 11) * (1.0 / 9007199254740992.0);
}

static uint64_t fresh_seed(void) {
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    uint64_t s = ((uint64_t)ts.tv_nsec * 0x9E3779B97F4A7C15ull) ^ (uint64_t)ts.tv_sec ^
                 ((uint64_t)getpid() << 32);
    return s ? s : 0x2545F4914F6CDD1Dull;
}

/* E4M3 values in [-2, 2]; never all zero, so a kernel that reads nothing cannot pass. */
static void fill_e4m3(uint8_t *v, size_t n, uint64_t *rng) {
    int nonzero = 0;
    for (size_t i = 0; i < n; i++) {
        v[i] = jit__e4m3_encode((float)rng_uniform(rng, -2.0, 2.0));
        nonzero |= (v[i] & 0x7F) != 0;
    }
    if (!nonzero && n)
        v[0] = jit__e4m3_encode(1.0f);
}

static int cuda_check(const jit__driver_t *drv, CUresult r, const char *what) {
    if (r == CUDA_SUCCESS)
        return 0;
    const char *name = "?", *text = "";
    drv->cuGetErrorName(r, &name);
    drv->cuGetErrorString(r, &text);
    jit__cli_error("%s: %s (%s)", what, name, text);
    return JIT_CLI_FAILED;
}

static int gemm_call(jit_context_t *ctx, const jit_problem_t *p, const jit_operands_t *ops) {
    jit_status_t st = jit_gemm(ctx, p, ops, NULL);
    if (st != JIT_OK) {
        const char *msg = jit_last_error(ctx);
        jit__cli_error("jit_gemm: %s", msg && *msg ? msg : jit_status_string(st));
        return JIT_CLI_FAILED;
    }
    return 0;
}

typedef struct check_result {
    int64_t rows, values, mismatches, guard_bad;
    double max_abs, max_ratio; /* worst |err| and worst |err| / tolerance */
} check_result_t;

/* Compare rows of D against the reference; prints the first few mismatches. */
static int check(const jit_problem_t *p, const jit__gemm_spec_t *spec, const jit__family_t *fam,
                 const host_data_t *h, check_result_t *cr) {
    const int64_t m = p->m, n = p->n, k = p->k, nout = jit__spec_out_cols(spec);
    int64_t rows = REF_BUDGET_MACS / (n * k > 0 ? n * k : 1);
    if (rows < 2)
        rows = 2;
    if (rows > m)
        rows = m;
    double *ref = malloc((size_t)nout * sizeof(double));
    double *mag = malloc((size_t)nout * sizeof(double));
    if (!ref || !mag) {
        free(ref);
        free(mag);
        jit__cli_error("out of host memory for the reference");
        return JIT_CLI_FAILED;
    }
    memset(cr, 0, sizeof(*cr));
    for (int64_t i = 0; i < rows; i++) {
        /* Evenly spread, first and last included; distinct because rows <= m. */
        int64_t r = rows == 1 ? 0 : (i * (m - 1)) / (rows - 1);
        const uint16_t *res = h->res ? h->res + r * n : NULL;
        if (block_scaled(p))
            jit__ref_fp8_block128(spec, 1, h->a + r * k, k, h->b, k, h->sa + r * h->sfa_m, h->sfa_m,
                                  h->sfa_k, h->sb, res, n, p->alpha, ref, mag);
        else
            jit__ref_fp8_rowscaled(spec, 1, h->a + r * k, k, h->b, k, h->sa + r, h->sb, res, n,
                                   p->alpha, ref, mag);
        for (int64_t j = 0; j < nout; j++) {
            double gpu = (double)jit__bf16_decode(h->d[r * nout + j]);
            double err = fabs(gpu - ref[j]);
            double tol = fam->tolerance(ref[j], mag[j]);
            cr->values++;
            /* NaN (the poison) compares false, so test for the pass, not for the failure. */
            if (!(err <= tol)) {
                if (cr->mismatches < MAX_SHOWN)
                    fprintf(stderr,
                            "  mismatch D[%" PRId64 "][%" PRId64 "]: gpu %.6g ref %.6g "
                            "(|err| %.3g > tol %.3g)\n",
                            r, j, gpu, ref[j], err, tol);
                cr->mismatches++;
                cr->max_ratio = INFINITY;
            } else if (tol > 0 && err / tol > cr->max_ratio) {
                cr->max_ratio = err / tol;
            }
            if (err > cr->max_abs || isnan(err))
                cr->max_abs = isnan(err) ? INFINITY : err;
        }
    }
    cr->rows = rows;
    const uint8_t *guard = (const uint8_t *)(h->d + m * nout);
    for (size_t i = 0; i < GUARD_BYTES; i++)
        cr->guard_bad += guard[i] != 0xFF;
    free(ref);
    free(mag);
    return 0;
}

static int timed(const jit__driver_t *drv, jit_context_t *ctx, const jit_problem_t *p,
                 const jit_operands_t *ops, int iters, double *median_s) {
    CUevent *ev = calloc((size_t)iters + 1, sizeof(*ev));
    double *t = calloc((size_t)iters, sizeof(*t));
    int rc = (!ev || !t) ? JIT_CLI_FAILED : 0, made = 0;
    if (rc)
        jit__cli_error("out of host memory");
    for (; !rc && made <= iters; made++)
        rc = cuda_check(drv, drv->cuEventCreate(&ev[made], CU_EVENT_DEFAULT), "cuEventCreate");
    if (rc)
        made--;
    for (int i = 0; !rc && i < iters; i++) {
        rc = cuda_check(drv, drv->cuEventRecord(ev[i], NULL), "cuEventRecord");
        if (!rc)
            rc = gemm_call(ctx, p, ops);
    }
    if (!rc)
        rc = cuda_check(drv, drv->cuEventRecord(ev[iters], NULL), "cuEventRecord");
    if (!rc)
        rc = cuda_check(drv, drv->cuEventSynchronize(ev[iters]), "cuEventSynchronize");
    for (int i = 0; !rc && i < iters; i++) {
        float ms = 0;
        rc = cuda_check(drv, drv->cuEventElapsedTime(&ms, ev[i], ev[i + 1]), "cuEventElapsedTime");
        t[i] = 1e-3 * ms;
    }
    if (!rc)
        *median_s = jit__cli_median(t, (size_t)iters);
    for (int i = 0; i < made; i++)
        drv->cuEventDestroy(ev[i]);
    free(ev);
    free(t);
    return rc;
}

static int alloc_copy(const jit__driver_t *drv, CUdeviceptr *dst, const void *src, size_t bytes) {
    int rc = cuda_check(drv, drv->cuMemAlloc(dst, bytes), "cuMemAlloc");
    if (!rc && src)
        rc = cuda_check(drv, drv->cuMemcpyHtoD(*dst, src, bytes), "cuMemcpyHtoD");
    return rc;
}

/* A number for the --json report; JSON has no infinity or NaN, so those become null. */
static json_t *num(double v) {
    return isfinite(v) ? json_real(v) : json_null();
}

/* Runs, checks and times; human-readable lines go to `txt`, figures into `report`. */
static int run_checked(const jit__driver_t *drv, jit_context_t *ctx, const jit__family_t *fam,
                       const jit_problem_t *p,
                       const jit__gemm_spec_t *spec, uint64_t seed, int iters, FILE *txt,
                       json_t *report) {
    const int64_t m = p->m, n = p->n, k = p->k, nout = jit__spec_out_cols(spec);
    const int has_res = p->epilogue == JIT_EPILOGUE_LINEAR_ADD;
    const size_t d_bytes = (size_t)(m * nout) * 2;
    host_data_t h = {0};
    dev_data_t dv = {0};
    int rc = 0;
    h.a = malloc((size_t)(m * k));
    h.b = malloc((size_t)(n * k));
    scale_shape(p, &h);
    h.sa = malloc((size_t)h.sa_count * sizeof(float));
    h.sb = malloc((size_t)h.sb_count * sizeof(float));
    h.res = has_res ? malloc((size_t)(m * n) * 2) : NULL;
    h.d = malloc(d_bytes + GUARD_BYTES);
    if (!h.a || !h.b || !h.sa || !h.sb || (has_res && !h.res) || !h.d) {
        jit__cli_error("out of host memory for a %" PRId64 "x%" PRId64 "x%" PRId64 " problem", m, n,
                       k);
        rc = JIT_CLI_FAILED;
        goto done;
    }
    uint64_t rng = seed;
    fill_e4m3(h.a, (size_t)(m * k), &rng);
    fill_e4m3(h.b, (size_t)(n * k), &rng);
    for (int64_t i = 0; i < h.sa_count; i++)
        h.sa[i] = (float)rng_uniform(&rng, 0.25, 1.0);
    for (int64_t i = 0; i < h.sb_count; i++)
        h.sb[i] = (float)rng_uniform(&rng, 0.25, 1.0);
    for (int64_t i = 0; has_res && i < m * n; i++)
        h.res[i] = jit__bf16_encode((float)rng_uniform(&rng, -4.0, 4.0));

    if ((rc = alloc_copy(drv, &dv.a, h.a, (size_t)(m * k))) ||
        (rc = alloc_copy(drv, &dv.b, h.b, (size_t)(n * k))) ||
        (rc = alloc_copy(drv, &dv.sa, h.sa, (size_t)h.sa_count * sizeof(float))) ||
        (rc = alloc_copy(drv, &dv.sb, h.sb, (size_t)h.sb_count * sizeof(float))) ||
        (has_res && (rc = alloc_copy(drv, &dv.res, h.res, (size_t)(m * n) * 2))) ||
        (rc = alloc_copy(drv, &dv.d, NULL, d_bytes + GUARD_BYTES)) ||
        (rc = cuda_check(drv, drv->cuMemsetD8(dv.d, 0xFF, d_bytes + GUARD_BYTES), "cuMemsetD8")))
        goto done;

    jit_operands_t ops;
    jit_operands_init(&ops);
    ops.a = (const void *)(uintptr_t)dv.a;
    ops.b = (const void *)(uintptr_t)dv.b;
    ops.scale_a = (const void *)(uintptr_t)dv.sa;
    ops.scale_b = (const void *)(uintptr_t)dv.sb;
    ops.residual = has_res ? (const void *)(uintptr_t)dv.res : NULL;
    ops.d = (void *)(uintptr_t)dv.d;

    double t0 = jit__cli_now();
    if ((rc = gemm_call(ctx, p, &ops)) ||
        (rc = cuda_check(drv, drv->cuCtxSynchronize(), "first call")))
        goto done;
    double first = jit__cli_now() - t0;
    if ((rc = cuda_check(drv, drv->cuMemcpyDtoH(h.d, dv.d, d_bytes + GUARD_BYTES), "cuMemcpyDtoH")))
        goto done;

    check_result_t cr;
    if ((rc = check(p, spec, fam, &h, &cr)))
        goto done;
    int pass = cr.mismatches == 0 && cr.guard_bad == 0;
    json_t *jc = json_object();
    json_object_set_new(jc, "rows_checked", json_integer(cr.rows));
    json_object_set_new(jc, "values", json_integer(cr.values));
    json_object_set_new(jc, "max_abs_err", num(cr.max_abs));
    json_object_set_new(jc, "worst_err_over_tol", num(cr.max_ratio));
    json_object_set_new(jc, "mismatches", json_integer(cr.mismatches));
    json_object_set_new(jc, "guard_ok", json_boolean(cr.guard_bad == 0));
    json_object_set_new(report, "first_call_s", json_real(first));
    json_object_set_new(report, "check", jc);
    json_object_set_new(report, "pass", json_boolean(pass));
    fprintf(txt, "first call %.3f s (includes compile or cache load)\n", first);
    fprintf(txt,
            "check: %" PRId64 " of %" PRId64 " rows, %" PRId64 " values: max |err| %.3g, "
            "worst err/tol %.3g, mismatches %" PRId64 "%s\n",
            cr.rows, m, cr.values, cr.max_abs, cr.max_ratio, cr.mismatches,
            cr.guard_bad ? ", WRITES PAST THE OUTPUT" : "");
    fprintf(txt, "%s\n", pass ? "PASS" : "FAIL");
    if (!pass) {
        jit__cli_error("check failed (seed 0x%016" PRIx64 ")", seed);
        rc = JIT_CLI_FAILED;
        goto done;
    }

    double t = 0;
    if ((rc = timed(drv, ctx, p, &ops, iters, &t)))
        goto done;
    double flops = 2.0 * (double)m * (double)n * (double)k;
    double bytes = (double)(m * k + n * k) + 4.0 * (double)(h.sa_count + h.sb_count) +
                   (double)d_bytes + (has_res ? 2.0 * (double)(m * n) : 0.0);
    fprintf(txt, "time: median %.2f us over %d iterations, %.2f TFLOP/s, %.1f GB/s\n", t * 1e6,
            iters, flops / t * 1e-12, bytes / t * 1e-9);
    json_object_set_new(report, "iters", json_integer(iters));
    json_object_set_new(report, "median_us", num(t * 1e6));
    json_object_set_new(report, "tflops", num(flops / t * 1e-12));
    json_object_set_new(report, "gbps", num(bytes / t * 1e-9));

done:;
    CUdeviceptr bufs[] = {dv.a, dv.b, dv.sa, dv.sb, dv.res, dv.d};
    for (size_t i = 0; i < sizeof(bufs) / sizeof(bufs[0]); i++)
        if (bufs[i])
            drv->cuMemFree(bufs[i]);
    free(h.a);
    free(h.b);
    free(h.sa);
    free(h.sb);
    free(h.res);
    free(h.d);
    return rc;
}

int jit__cli_run(int argc, char **argv) {
    const char *verb = "run";
    jit__cli_problem_args_t pa = {0};
    const char *arch = NULL, *sm_text = NULL, *cache_dir = NULL, *iters_text = NULL;
    const char *seed_text = NULL, *sfa_layout = NULL;
    int json = 0;
    const jit__cli_opt_t opts[] = {
        {"op", "OP", &pa.op, NULL},
        {"n", "N", &pa.n, NULL},
        {"k", "K", &pa.k, NULL},
        {"tokens", "T", &pa.tokens, NULL},
        {"a", "A", &pa.a, NULL},
        {"b", "B", &pa.b, NULL},
        {"scales", "S", &pa.scales, NULL},
        {"out-dtype", "D", &pa.out_dtype, NULL},
        {"sfa-layout", "L", &sfa_layout, NULL},
        {"groups", "G", &pa.groups, NULL},
        {"layout", "L", &pa.layout, NULL},
        {"expected-m", "E", &pa.expected_m, NULL},
        {"iters", "I", &iters_text, NULL},
        {"seed", "S", &seed_text, NULL},
        {"arch", "A", &arch, NULL},
        {"sm-count", "N", &sm_text, NULL},
        {"cache-dir", "D", &cache_dir, NULL},
        {"json", NULL, NULL, &json},
    };
    size_t n_pos = 0;
    int rc =
        jit__cli_parse(verb, argc, argv, opts, sizeof(opts) / sizeof(opts[0]), NULL, 0, &n_pos);
    if (rc)
        return rc;
    jit_problem_t p;
    int64_t sm_count = 0, iters = 20;
    uint64_t seed = 0;
    if ((rc = jit__cli_problem(verb, &pa, &p)) || (rc = jit__cli_arch(verb, arch)) ||
        (rc = jit__cli_int(verb, "sm-count", sm_text, 1, 1000000, &sm_count)) ||
        (rc = jit__cli_int(verb, "iters", iters_text, 1, 100000, &iters)) ||
        (rc = jit__cli_u64(verb, "seed", seed_text, &seed)))
        return rc;
    if (sfa_layout && (p.scale_mode != JIT_SCALE_BLOCK_1X128_128X128 ||
                       jit_sfa_layout_parse(sfa_layout, &p.sfa_layout) != JIT_OK))
        return jit__cli_usage(verb,
                              "--sfa-layout: k-major or m-major, with --scales 128x128 only "
                              "(got '%s')",
                              sfa_layout);
    if (!seed_text)
        seed = fresh_seed();
    if (seed == 0) /* xorshift stays at zero forever */
        seed = 0x2545F4914F6CDD1Dull;
    if (p.epilogue == JIT_EPILOGUE_QUANTIZE_FP8_1X128)
        return jit__cli_run_quantize(&p, cache_dir, arch, (int)sm_count, seed, (int)iters, json);

    const jit__driver_t *drv = NULL;
    jit__diag_t d;
    jit__diag_init(&d);
    if (jit__driver_get(&drv, &d) != JIT_OK) {
        /* The driver loader's message may already say "no GPU"; the prefix is the contract. */
        jit__cli_error("%s%s", strncmp(d.msg, "no GPU", 6) ? "no GPU: " : "", d.msg);
        jit__diag_clear(&d);
        return JIT_CLI_FAILED;
    }
    CUcontext cuctx;
    CUdevice dev;
    if (jit__driver_current_context(drv, &cuctx, &dev, &d) != JIT_OK) {
        jit__cli_error("%s", d.msg);
        jit__diag_clear(&d);
        return JIT_CLI_FAILED;
    }
    jit__gemm_spec_t spec;
    jit__spec_from_problem(&p, &spec, &d);
    jit__diag_clear(&d);

    jit_context_t *ctx = NULL;
    if ((rc = jit__cli_context(cache_dir, arch, (int)sm_count, &ctx)))
        return rc;
    /* Planning first lets the library explain an unsupported combination in its own words. */
    char *plan = NULL;
    jit_status_t st = jit_inspect(ctx, &p, JIT_INSPECT_PLAN, &plan);
    if (st != JIT_OK) {
        const char *msg = jit_last_error(ctx);
        jit__cli_error("%s", msg && *msg ? msg : jit_status_string(st));
        jit_context_destroy(ctx);
        return JIT_CLI_FAILED;
    }
    /* The family decides the tolerance: each has its own accumulation numerics. */
    json_t *pj = json_loads(plan, 0, NULL);
    const char *fam_name = json_string_value(json_object_get(pj, "family"));
    const jit__family_t *fam = fam_name ? jit__family_find(fam_name) : NULL;
    char tile[48] = "?";
    json_t *tj = json_object_get(pj, "tile");
    snprintf(tile, sizeof(tile), "%lldx%lld, %lld stages",
             (long long)json_integer_value(json_object_get(tj, "m")),
             (long long)json_integer_value(json_object_get(tj, "n")),
             (long long)json_integer_value(json_object_get(pj, "stages")));
    json_decref(pj);
    jit_free(plan);
    if (!fam || !fam->tolerance) {
        jit__cli_error("run: the plan names no family with a tolerance to check against");
        jit_context_destroy(ctx);
        return JIT_CLI_FAILED;
    }
    if (p.a_dtype != JIT_DTYPE_E4M3 || p.b_dtype != JIT_DTYPE_E4M3 ||
        (p.scale_mode != JIT_SCALE_ROW && !block_scaled(&p)) || p.out_dtype != JIT_DTYPE_BF16) {
        jit__cli_error("run: only e4m3 x e4m3 with row or 128x128 scales and bf16 output has a "
                       "host reference to check against; got %s x %s, %s, %s",
                       jit_dtype_name(p.a_dtype), jit_dtype_name(p.b_dtype),
                       jit_scale_mode_name(p.scale_mode), jit_dtype_name(p.out_dtype));
        jit_context_destroy(ctx);
        return JIT_CLI_FAILED;
    }

    char name[128] = "?";
    drv->cuDeviceGetName(name, sizeof(name), dev);
    /* With --json, stdout holds only the report line, so scripts can collect one per run. */
    FILE *txt = json ? stderr : stdout;
    fprintf(txt, "run: %s M=%" PRId64 " N=%" PRId64 " K=%" PRId64 ", %s x %s, %s scales -> %s\n",
            jit_epilogue_name(p.epilogue), p.m, p.n, p.k, jit_dtype_name(p.a_dtype),
            jit_dtype_name(p.b_dtype), jit_scale_mode_name(p.scale_mode),
            jit_dtype_name(p.out_dtype));
    fprintf(txt, "device: %s, %s with %d SMs; seed 0x%016" PRIx64 "\n", name, jit_context_arch(ctx),
            jit_context_sm_count(ctx), seed);
    fprintf(txt, "family: %s, tile %s\n", fam->name, tile);
    fflush(txt);
    char seed_hex[24];
    snprintf(seed_hex, sizeof(seed_hex), "0x%016" PRIx64, seed);
    json_t *report = json_object();
    json_object_set_new(report, "op", json_string(jit_epilogue_name(p.epilogue)));
    json_object_set_new(report, "n", json_integer(p.n));
    json_object_set_new(report, "k", json_integer(p.k));
    json_object_set_new(report, "tokens", json_integer(p.m));
    json_object_set_new(report, "a", json_string(jit_dtype_name(p.a_dtype)));
    json_object_set_new(report, "b", json_string(jit_dtype_name(p.b_dtype)));
    json_object_set_new(report, "scales", json_string(jit_scale_mode_name(p.scale_mode)));
    if (block_scaled(&p))
        json_object_set_new(report, "sfa_layout", json_string(jit_sfa_layout_name(p.sfa_layout)));
    json_object_set_new(report, "out", json_string(jit_dtype_name(p.out_dtype)));
    json_object_set_new(report, "arch", json_string(jit_context_arch(ctx)));
    json_object_set_new(report, "sm_count", json_integer(jit_context_sm_count(ctx)));
    json_object_set_new(report, "device", json_string(name));
    json_object_set_new(report, "seed", json_string(seed_hex));
    json_object_set_new(report, "family", json_string(fam->name));
    if (p.groups > 0) {
        json_object_set_new(report, "groups", json_integer(p.groups));
        json_object_set_new(report, "layout", json_string(jit_group_layout_name(p.layout)));
        rc = jit__cli_run_grouped(drv, ctx, fam, &p, seed, (int)iters, txt);
        json_object_set_new(report, "pass", json_boolean(rc == 0));
    } else {
        rc = run_checked(drv, ctx, fam, &p, &spec, seed, (int)iters, txt, report);
    }
    if (json) {
        if (!json_object_get(report, "pass"))
            json_object_set_new(report, "pass", json_false());
        char *line =
            json_dumps(report, JSON_COMPACT | JSON_PRESERVE_ORDER | JSON_REAL_PRECISION(6));
        if (line)
            puts(line);
        free(line);
    }
    json_decref(report);
    jit_context_destroy(ctx);
    return rc;
}
