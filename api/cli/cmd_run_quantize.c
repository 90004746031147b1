/*
 * `jitgemm run --op quantize_fp8_1x128`: the activation quantizer on the GPU with fresh random
 * BF16 input, checked bit for bit against the host reference, then timed. As for a GEMM, the
 * check comes first and decides the exit status.
 *
 * The input mixes group magnitudes (from BF16 subnormals to 2^120, zeros, one value among
 * zeros) so every branch of the recipe runs. The scales go m-major with M rounded up to a
 * multiple of 4 as the leading dimension, the padded layout a serving stack hands the GEMM. Q
 * and the scales are poisoned (0xAA, NaN bytes) and followed by guard bytes that must come back
 * untouched; every byte and scale is compared (a NaN code may come back with either sign). The
 * time is reported as effective bandwidth: X read, Q and the scales written.
 */
#include <inttypes.h>
#include <jansson.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "driver.h"
#include "formats.h"
#include "reference.h"

#define GUARD_BYTES 4096
#define MAX_SHOWN 5
#define Q_POISON 0xAA

typedef struct quant_bufs {
    int64_t m, k, groups, ld_sfa;
    size_t x_bytes, q_bytes, s_bytes; /* q and s without their guard */
    uint16_t *x;
    uint8_t *q, *qr;
    uint32_t *s, *sr;
    CUdeviceptr dx, dq, ds;
} quant_bufs_t;

static uint64_t rng_next(uint64_t *s) {
    uint64_t x = *s;
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    return *s = x;
}

static int cuda_ok(const jit__driver_t *drv, CUresult r, const char *what) {
    if (r == CUDA_SUCCESS)
        return 0;
    const char *name = "?", *text = "";
    drv->cuGetErrorName(r, &name);
    drv->cuGetErrorString(r, &text);
    jit__cli_error("%s: %s (%s)", what, name, text);
    return JIT_CLI_FAILED;
}

/* One group: values around 1, BF16 subnormals, large values, zeros, or one value among zeros. */
static void fill_group(uint16_t *x, int64_t n, uint64_t *rng) {
    static const int k_lo[] = {-8, -133, 90, -40}, k_span[] = {16, 14, 30, 80};
    const int kind = (int)(rng_next(rng) % 6);
    memset(x, 0, (size_t)n * sizeof(*x));
    if (kind == 4)
        return;
    const int t = kind == 5 ? 0 : kind;
    const int64_t count = kind == 5 ? 1 : n;
    for (int64_t i = 0; i < count; i++) {
        const int e = k_lo[t] + (int)(rng_next(rng) % (uint64_t)k_span[t]);
        const double mant = 1.0 + (double)(rng_next(rng) % 128) / 128.0;
        const int64_t at = kind == 5 ? (int64_t)(rng_next(rng) % (uint64_t)n) : i;
        x[at] = jit__bf16_encode((float)ldexp(rng_next(rng) & 1 ? -mant : mant, e));
    }
}

static int alloc_all(const jit__driver_t *drv, quant_bufs_t *b, uint64_t seed) {
    b->groups = (b->k + 127) / 128;
    b->ld_sfa = (b->m + 3) / 4 * 4;
    b->x_bytes = (size_t)(b->m * b->k) * 2;
    b->q_bytes = (size_t)(b->m * b->k);
    b->s_bytes = (size_t)(b->groups * b->ld_sfa) * 4;
    b->x = malloc(b->x_bytes);
    b->q = malloc(b->q_bytes + GUARD_BYTES);
    b->qr = malloc(b->q_bytes + GUARD_BYTES);
    b->s = malloc(b->s_bytes + GUARD_BYTES);
    b->sr = malloc(b->s_bytes + GUARD_BYTES);
    if (!b->x || !b->q || !b->qr || !b->s || !b->sr) {
        jit__cli_error("out of host memory for M=%" PRId64 " K=%" PRId64, b->m, b->k);
        return JIT_CLI_FAILED;
    }
    uint64_t rng = seed;
    for (int64_t r = 0; r < b->m; r++)
        for (int64_t k0 = 0; k0 < b->k; k0 += 128)
            fill_group(b->x + r * b->k + k0, k0 + 128 < b->k ? 128 : b->k - k0, &rng);
    int rc;
    if ((rc = cuda_ok(drv, drv->cuMemAlloc(&b->dx, b->x_bytes), "cuMemAlloc")) ||
        (rc = cuda_ok(drv, drv->cuMemcpyHtoD(b->dx, b->x, b->x_bytes), "cuMemcpyHtoD")) ||
        (rc = cuda_ok(drv, drv->cuMemAlloc(&b->dq, b->q_bytes + GUARD_BYTES), "cuMemAlloc")) ||
        (rc = cuda_ok(drv, drv->cuMemsetD8(b->dq, Q_POISON, b->q_bytes + GUARD_BYTES),
                      "cuMemsetD8")) ||
        (rc = cuda_ok(drv, drv->cuMemAlloc(&b->ds, b->s_bytes + GUARD_BYTES), "cuMemAlloc")) ||
        (rc = cuda_ok(drv, drv->cuMemsetD8(b->ds, 0xFF, b->s_bytes + GUARD_BYTES), "cuMemsetD8")))
        return rc;
    return 0;
}

static void free_all(const jit__driver_t *drv, quant_bufs_t *b) {
    CUdeviceptr d[] = {b->dx, b->dq, b->ds};
    for (size_t i = 0; i < 3; i++)
        if (d[i])
            drv->cuMemFree(d[i]);
    free(b->x);
    free(b->q);
    free(b->qr);
    free(b->s);
    free(b->sr);
}

static int call(jit_context_t *ctx, const jit_problem_t *p, const jit_quantize_operands_t *o) {
    jit_status_t st = jit_quantize_fp8_1x128(ctx, p, o, NULL);
    if (st == JIT_OK)
        return 0;
    const char *msg = jit_last_error(ctx);
    jit__cli_error("jit_quantize_fp8_1x128: %s", msg && *msg ? msg : jit_status_string(st));
    return JIT_CLI_FAILED;
}

/* Every byte of Q and every scale, guards included; returns the differences (shown first). */
static int64_t compare(const quant_bufs_t *b) {
    int64_t bad = 0;
    for (size_t i = 0; i < b->q_bytes + GUARD_BYTES; i++) {
        const int nan_either = i < b->q_bytes && b->qr[i] == 0x7F && (b->q[i] & 0x7F) == 0x7F;
        if (b->q[i] == b->qr[i] || nan_either)
            continue;
        if (bad++ < MAX_SHOWN)
            fprintf(stderr, "  mismatch Q byte %zu: gpu 0x%02x ref 0x%02x%s\n", i, b->q[i],
                    b->qr[i], i >= b->q_bytes ? " (guard)" : "");
    }
    for (size_t i = 0; i < (b->s_bytes + GUARD_BYTES) / 4; i++)
        if (b->s[i] != b->sr[i] && bad++ < MAX_SHOWN)
            fprintf(stderr, "  mismatch scale element %zu: gpu 0x%08x ref 0x%08x\n", i, b->s[i],
                    b->sr[i]);
    return bad;
}

/* The median time of `iters` calls issued back to back, one event before each and one after
 * the last, as `jitgemm run` times a GEMM. */
static int timed(const jit__driver_t *drv, jit_context_t *ctx, const jit_problem_t *p,
                 const jit_quantize_operands_t *o, int iters, double *median_s) {
    CUevent *ev = calloc((size_t)iters + 1, sizeof(*ev));
    double *t = calloc((size_t)iters, sizeof(*t));
    int rc = (!ev || !t) ? JIT_CLI_FAILED : 0, made = 0;
    if (rc)
        jit__cli_error("out of host memory");
    for (; !rc && made <= iters; made++)
        rc = cuda_ok(drv, drv->cuEventCreate(&ev[made], CU_EVENT_DEFAULT), "cuEventCreate");
    if (rc)
        made--;
    for (int i = 0; !rc && i < iters; i++)
        if (!(rc = cuda_ok(drv, drv->cuEventRecord(ev[i], NULL), "cuEventRecord")))
            rc = call(ctx, p, o);
    if (!rc)
        rc = cuda_ok(drv, drv->cuEventRecord(ev[iters], NULL), "cuEventRecord");
    if (!rc)
        rc = cuda_ok(drv, drv->cuEventSynchronize(ev[iters]), "cuEventSynchronize");
    for (int i = 0; !rc && i < iters; i++) {
        float ms = 0;
        rc = cuda_ok(drv, drv->cuEventElapsedTime(&ms, ev[i], ev[i + 1]), "cuEventElapsedTime");
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

/* Runs, checks and times; human-readable lines go to `txt`, figures into `report`. */
static int run_checked(const jit__driver_t *drv, jit_context_t *ctx, const jit_problem_t *prob,
                       uint64_t seed, int iters, FILE *txt, json_t *report) {
    quant_bufs_t b;
    memset(&b, 0, sizeof(b));
    b.m = prob->m;
    b.k = prob->k;
    int rc = alloc_all(drv, &b, seed);
    if (rc) {
        free_all(drv, &b);
        return rc;
    }
    jit_problem_t p = *prob;
    p.sfa_layout = JIT_SFA_M_MAJOR;
    p.ld_sfa = b.ld_sfa;
    jit_quantize_operands_t o;
    jit_quantize_operands_init(&o);
    o.x = (const void *)(uintptr_t)b.dx;
    o.q = (void *)(uintptr_t)b.dq;
    o.scales = (float *)(uintptr_t)b.ds;
    const double t0 = jit__cli_now();
    if ((rc = call(ctx, &p, &o)) || (rc = cuda_ok(drv, drv->cuCtxSynchronize(), "first call")))
        goto done;
    const double first = jit__cli_now() - t0;
    if ((rc =
             cuda_ok(drv, drv->cuMemcpyDtoH(b.q, b.dq, b.q_bytes + GUARD_BYTES), "cuMemcpyDtoH")) ||
        (rc = cuda_ok(drv, drv->cuMemcpyDtoH(b.s, b.ds, b.s_bytes + GUARD_BYTES), "cuMemcpyDtoH")))
        goto done;
    memset(b.qr, Q_POISON, b.q_bytes + GUARD_BYTES);
    memset(b.sr, 0xFF, b.s_bytes + GUARD_BYTES);
    jit__ref_quant_fp8_1x128(b.m, b.k, b.x, b.k, 0, b.qr, b.k, (float *)b.sr, 1, b.ld_sfa);
    const int64_t bad = compare(&b);
    json_object_set_new(report, "first_call_s", json_real(first));
    json_object_set_new(report, "check",
                        json_pack("{sIsIss}", "values", (json_int_t)(b.m * b.k), "mismatches",
                                  (json_int_t)bad, "rule", "bit-exact"));
    json_object_set_new(report, "pass", json_boolean(bad == 0));
    fprintf(txt, "first call %.3f s (includes compile or cache load)\n", first);
    fprintf(txt,
            "check: %" PRId64 " codes and %" PRId64 " scales (m-major, ld_sfa %" PRId64
            "), bit-exact: %" PRId64 " mismatches\n%s\n",
            b.m * b.k, b.m * b.groups, b.ld_sfa, bad, bad ? "FAIL" : "PASS");
    if (bad) {
        jit__cli_error("check failed (seed 0x%016" PRIx64 ")", seed);
        rc = JIT_CLI_FAILED;
        goto done;
    }
    double t = 0;
    if ((rc = timed(drv, ctx, &p, &o, iters, &t)))
        goto done;
    const double bytes = (double)b.x_bytes + (double)b.q_bytes + 4.0 * (double)(b.m * b.groups);
    fprintf(txt, "time: median %.2f us over %d iterations, %.1f GB/s\n", t * 1e6, iters,
            bytes / t * 1e-9);
    json_object_set_new(report, "iters", json_integer(iters));
    json_object_set_new(report, "median_us", json_real(t * 1e6));
    json_object_set_new(report, "gbps", json_real(bytes / t * 1e-9));
done:
    free_all(drv, &b);
    return rc;
}

int jit__cli_run_quantize(const jit_problem_t *p, const char *cache_dir, const char *arch,
                          int sm_count, uint64_t seed, int iters, int json) {
    const jit__driver_t *drv = NULL;
    jit__diag_t d;
    jit__diag_init(&d);
    if (jit__driver_get(&drv, &d) != JIT_OK) {
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
    jit_context_t *ctx = NULL;
    int rc = jit__cli_context(cache_dir, arch, sm_count, &ctx);
    if (rc)
        return rc;
    char name[128] = "?";
    drv->cuDeviceGetName(name, sizeof(name), dev);
    FILE *txt = json ? stderr : stdout;
    fprintf(txt,
            "run: quantize_fp8_1x128 M=%" PRId64 " K=%" PRId64 ", bf16 -> e4m3 + f32 1x128 "
            "scales\n",
            p->m, p->k);
    fprintf(txt, "device: %s, %s with %d SMs; seed 0x%016" PRIx64 "\n", name, jit_context_arch(ctx),
            jit_context_sm_count(ctx), seed);
    char seed_hex[24];
    snprintf(seed_hex, sizeof(seed_hex), "0x%016" PRIx64, seed);
    json_t *report = json_pack("{sssIsIsssisssssss}", "op", "quantize_fp8_1x128", "k",
                               (json_int_t)p->k, "tokens", (json_int_t)p->m, "arch",
                               jit_context_arch(ctx), "sm_count", jit_context_sm_count(ctx),
                               "device", name, "seed", seed_hex, "family", "quant_fp8_1x128");
    rc = run_checked(drv, ctx, p, seed, iters, txt, report);
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
