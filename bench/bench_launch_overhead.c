/*
 * Benchmark 4 (GPU only): jit_gemm's host overhead over a raw cuLaunchKernelEx of the same
 * cubin (target: <= 1 microsecond per call).
 *
 * Both paths launch the same kernel with the same parameters on the same stream. The raw path
 * is what a hand-written launcher would do with the cubin jitgemm produced: the cubin read from
 * the cache, loaded into a module of its own, its parameter block (kernel_src/kernel_abi.h)
 * filled once, the grid from jit__plan_grid, then nothing but cuLaunchKernelEx in the loop.
 * The jit_gemm path adds what every call pays: validating the problem and the operands, finding
 * the current CUDA context, the in-memory lookup, filling the parameters.
 *
 * Host time only: the clock covers issuing a batch of launches, not their execution. The
 * problem is small (a few microseconds of GPU time) and each batch is far shorter than the
 * driver's launch queue, so issuing never waits for the GPU; the stream is synchronised
 * between batches, outside the clock. Batches of the two paths alternate, so clock drift and
 * background noise fall on both. Before timing, one launch of each writes its own output and
 * the two outputs must be identical, which shows the raw launch really is the same kernel with
 * the same arguments.
 *
 * Without a GPU it prints why and a record with "skipped": true, and exits 0.
 *
 *   bench_launch_overhead [--batch 200] [--samples 15] [--commit C] [--quiet]
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench_common.h"
#include "cache.h"
#include "context.h"
#include "driver.h"
#include "fp8_mma_sync/abi.h"
#include "fp8_mma_sync/fp8_mma_sync.h"

#define TARGET_US 1.0
#define MAX_SAMPLES 101

#define PROB_M 16
#define PROB_N 1024
#define PROB_K 1024

typedef struct device_bufs {
    CUdeviceptr a, b, sa, sb, d1, d2;
} device_bufs_t;

static int cu_ok(const jit__driver_t *drv, CUresult r, const char *what) {
    if (r == CUDA_SUCCESS)
        return 1;
    const char *name = "?";
    drv->cuGetErrorName(r, &name);
    fprintf(stderr, "bench_launch_overhead: %s: %s\n", what, name);
    return 0;
}

static int upload(const jit__driver_t *drv, device_bufs_t *buf) {
    size_t out_bytes = (size_t)PROB_M * PROB_N * 2;
    uint8_t *a = malloc((size_t)PROB_M * PROB_K), *b = malloc((size_t)PROB_N * PROB_K);
    float *sa = malloc(PROB_M * sizeof(float)), *sb = malloc(PROB_N * sizeof(float));
    int ok = a && b && sa && sb;
    /* E4M3 values of small magnitude; the bit patterns 0x7f and 0xff (NaN) are never made. */
    uint64_t x = 0x9e3779b97f4a7c15ull;
    for (size_t i = 0; ok && i < (size_t)PROB_M * PROB_K; i++, x = x * 6364136223846793005ull + 1)
        a[i] = (uint8_t)((x >> 33) & 0xb7);
    for (size_t i = 0; ok && i < (size_t)PROB_N * PROB_K; i++, x = x * 6364136223846793005ull + 1)
        b[i] = (uint8_t)((x >> 33) & 0xb7);
    for (int i = 0; ok && i < PROB_M; i++)
        sa[i] = 1.0f / 64;
    for (int i = 0; ok && i < PROB_N; i++)
        sb[i] = 1.0f / 64;
    ok = ok && cu_ok(drv, drv->cuMemAlloc(&buf->a, (size_t)PROB_M * PROB_K), "cuMemAlloc") &&
         cu_ok(drv, drv->cuMemAlloc(&buf->b, (size_t)PROB_N * PROB_K), "cuMemAlloc") &&
         cu_ok(drv, drv->cuMemAlloc(&buf->sa, PROB_M * sizeof(float)), "cuMemAlloc") &&
         cu_ok(drv, drv->cuMemAlloc(&buf->sb, PROB_N * sizeof(float)), "cuMemAlloc") &&
         cu_ok(drv, drv->cuMemAlloc(&buf->d1, out_bytes), "cuMemAlloc") &&
         cu_ok(drv, drv->cuMemAlloc(&buf->d2, out_bytes), "cuMemAlloc") &&
         cu_ok(drv, drv->cuMemcpyHtoD(buf->a, a, (size_t)PROB_M * PROB_K), "cuMemcpyHtoD") &&
         cu_ok(drv, drv->cuMemcpyHtoD(buf->b, b, (size_t)PROB_N * PROB_K), "cuMemcpyHtoD") &&
         cu_ok(drv, drv->cuMemcpyHtoD(buf->sa, sa, PROB_M * sizeof(float)), "cuMemcpyHtoD") &&
         cu_ok(drv, drv->cuMemcpyHtoD(buf->sb, sb, PROB_N * sizeof(float)), "cuMemcpyHtoD") &&
         /* Different poison in the two outputs, so equality afterwards means both wrote. */
         cu_ok(drv, drv->cuMemsetD8(buf->d1, 0xa5, out_bytes), "cuMemsetD8") &&
         cu_ok(drv, drv->cuMemsetD8(buf->d2, 0x5a, out_bytes), "cuMemsetD8");
    free(a);
    free(b);
    free(sa);
    free(sb);
    return ok ? 0 : -1;
}

static void release(const jit__driver_t *drv, device_bufs_t *buf) {
    CUdeviceptr *all[] = {&buf->a, &buf->b, &buf->sa, &buf->sb, &buf->d1, &buf->d2};
    for (size_t i = 0; i < sizeof(all) / sizeof(all[0]); i++)
        if (*all[i])
            drv->cuMemFree(*all[i]);
}

static void skip(const bench_args_t *ba, const char *why) {
    if (!ba->quiet)
        printf("launch overhead: skipped, no GPU (%s)\n", why);
    json_t *rec = bench_record("launch_overhead", ba);
    json_object_set_new(rec, "skipped", json_true());
    json_object_set_new(rec, "reason", json_string(why));
    json_object_set_new(rec, "target_us", json_real(TARGET_US));
    bench_emit(rec);
}

int main(int argc, char **argv) {
    bench_args_t ba;
    bench_args_parse(&argc, argv, &ba);
    /* The bare launch below fills the mma.sync family's parameter block, so the context must
     * load that family's kernel whatever the cost models would pick on this GPU. */
    setenv("JITGEMM_FAMILY", "fp8_mma_sync", 1);
    int batch = 200, samples = 15;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--batch") && i + 1 < argc) {
            batch = atoi(argv[++i]);
        } else if (!strcmp(argv[i], "--samples") && i + 1 < argc) {
            samples = atoi(argv[++i]);
        } else {
            fprintf(stderr, "usage: %s [--batch PROB_N] [--samples S] [--commit C] [--quiet]\n",
                    argv[0]);
            return 2;
        }
    }
    if (batch < 1 || batch > 1000 || samples < 1 || samples > MAX_SAMPLES) {
        fprintf(stderr, "bench_launch_overhead: --batch 1..1000, --samples 1..%d\n", MAX_SAMPLES);
        return 2;
    }

    jit__diag_t d;
    jit__diag_init(&d);
    const jit__driver_t *drv = NULL;
    CUcontext cuctx = NULL;
    CUdevice dev = 0;
    if (jit__driver_get(&drv, &d) != JIT_OK ||
        jit__driver_current_context(drv, &cuctx, &dev, &d) != JIT_OK) {
        skip(&ba, d.msg);
        jit__diag_clear(&d);
        return 0;
    }

    char *dir = bench_mkdtemp("launch");
    jit_context_options_t opt;
    jit_context_options_init(&opt);
    opt.cache_dir = dir;
    jit_context_t *ctx = NULL;
    device_bufs_t buf;
    memset(&buf, 0, sizeof(buf));
    CUmodule module = NULL;
    void *cubin = NULL;
    uint16_t *h1 = NULL, *h2 = NULL;
    int rc = 1;
    if (!dir || jit_context_create(&opt, &ctx) != JIT_OK) {
        fprintf(stderr, "bench_launch_overhead: context: %s\n", jit_last_error(NULL));
        goto done;
    }
    if (upload(drv, &buf) != 0)
        goto done;

    jit_problem_t p;
    jit_problem_init(&p);
    p.m = PROB_M;
    p.n = PROB_N;
    p.k = PROB_K;
    jit_operands_t o;
    jit_operands_init(&o);
    o.a = (const void *)(uintptr_t)buf.a;
    o.b = (const void *)(uintptr_t)buf.b;
    o.scale_a = (const void *)(uintptr_t)buf.sa;
    o.scale_b = (const void *)(uintptr_t)buf.sb;
    o.d = (void *)(uintptr_t)buf.d1;

    /* The first call compiles and loads; it is not timed. */
    if (jit_gemm(ctx, &p, &o, NULL) != JIT_OK) {
        fprintf(stderr, "bench_launch_overhead: jit_gemm: %s\n", jit_last_error(ctx));
        goto done;
    }
    const jit__kernel_t *k = jit__ctx_lookup(ctx, &p, cuctx);
    if (!k) {
        fprintf(stderr, "bench_launch_overhead: the kernel jit_gemm loaded is not in the table\n");
        goto done;
    }

    /* The raw path: the same cubin, from the cache, in a module of our own. */
    jit__cache_entry_t entry;
    size_t size = 0;
    int found = 0;
    CUfunction fn = NULL;
    if (jit__cache_get(ctx->cache, k->hash, &entry, &cubin, &size, &found, &d) != JIT_OK ||
        !found) {
        fprintf(stderr, "bench_launch_overhead: cubin %s not in the cache: %s\n", k->hash, d.msg);
        goto done;
    }
    if (!cu_ok(drv, drv->cuModuleLoadData(&module, cubin), "cuModuleLoadData") ||
        !cu_ok(drv, drv->cuModuleGetFunction(&fn, module, entry.kernel_name),
               "cuModuleGetFunction") ||
        !cu_ok(drv,
               drv->cuFuncSetAttribute(fn, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                                       (int)k->plan.smem_bytes),
               "cuFuncSetAttribute"))
        goto done;
    jit__mma_sync_params_t params;
    memset(&params, 0, sizeof(params));
    params.a = o.a;
    params.b = o.b;
    params.sa = (const float *)o.scale_a;
    params.sb = (const float *)o.scale_b;
    params.d = (void *)(uintptr_t)buf.d2;
    params.m = PROB_M;
    params.lda = PROB_K;
    params.ldb = PROB_K;
    params.ldd = PROB_N;
    params.ldr = PROB_N;
    params.alpha = 1.0f;
    unsigned grid[3];
    jit__mma_sync_grid(&k->plan, PROB_M, grid);
    CUlaunchConfig cfg;
    memset(&cfg, 0, sizeof(cfg));
    cfg.gridDimX = grid[0];
    cfg.gridDimY = grid[1];
    cfg.gridDimZ = grid[2];
    cfg.blockDimX = (unsigned)k->plan.threads;
    cfg.blockDimY = cfg.blockDimZ = 1;
    cfg.sharedMemBytes = k->plan.smem_bytes;
    cfg.hStream = NULL;
    void *args[] = {&params};
    if (!cu_ok(drv, drv->cuLaunchKernelEx(&cfg, fn, args, NULL), "cuLaunchKernelEx") ||
        !cu_ok(drv, drv->cuCtxSynchronize(), "cuCtxSynchronize"))
        goto done;

    size_t out_bytes = (size_t)PROB_M * PROB_N * 2;
    h1 = malloc(out_bytes);
    h2 = malloc(out_bytes);
    if (!h1 || !h2 || !cu_ok(drv, drv->cuMemcpyDtoH(h1, buf.d1, out_bytes), "cuMemcpyDtoH") ||
        !cu_ok(drv, drv->cuMemcpyDtoH(h2, buf.d2, out_bytes), "cuMemcpyDtoH"))
        goto done;
    if (memcmp(h1, h2, out_bytes) != 0) {
        fprintf(stderr, "bench_launch_overhead: the raw launch and jit_gemm wrote different "
                        "outputs; they are not the same launch\n");
        goto done;
    }

    double jit_us[MAX_SAMPLES], raw_us[MAX_SAMPLES];
    for (int s = -1; s < samples; s++) { /* s = -1 warms both paths up */
        double t0 = bench_now();
        for (int i = 0; i < batch; i++)
            if (jit_gemm(ctx, &p, &o, NULL) != JIT_OK) {
                fprintf(stderr, "bench_launch_overhead: jit_gemm: %s\n", jit_last_error(ctx));
                goto done;
            }
        double t1 = bench_now();
        if (!cu_ok(drv, drv->cuCtxSynchronize(), "cuCtxSynchronize"))
            goto done;
        double t2 = bench_now();
        for (int i = 0; i < batch; i++)
            if (!cu_ok(drv, drv->cuLaunchKernelEx(&cfg, fn, args, NULL), "cuLaunchKernelEx"))
                goto done;
        double t3 = bench_now();
        if (!cu_ok(drv, drv->cuCtxSynchronize(), "cuCtxSynchronize"))
            goto done;
        if (s >= 0) {
            jit_us[s] = (t1 - t0) * 1e6 / batch;
            raw_us[s] = (t3 - t2) * 1e6 / batch;
        }
    }
    double diff[MAX_SAMPLES];
    for (int s = 0; s < samples; s++)
        diff[s] = jit_us[s] - raw_us[s];
    double med_diff = bench_median(diff, (size_t)samples);
    double med_jit = bench_median(jit_us, (size_t)samples);
    double med_raw = bench_median(raw_us, (size_t)samples);
    char name[128] = "?";
    drv->cuDeviceGetName(name, sizeof(name), dev);
    if (!ba.quiet) {
        printf("launch overhead on %s, m=%d n=%d k=%d, %d launches x %d samples, host time\n", name,
               PROB_M, PROB_N, PROB_K, batch, samples);
        printf("%-28s %12s\n", "", "us per call");
        printf("%-28s %12.3f\n", "jit_gemm", med_jit);
        printf("%-28s %12.3f\n", "raw cuLaunchKernelEx", med_raw);
        printf("%-28s %12.3f\n", "overhead (median of diffs)", med_diff);
        printf("target <= %.1f us: %s\n", TARGET_US, med_diff <= TARGET_US ? "met" : "NOT met");
    }
    json_t *rec = bench_record("launch_overhead", &ba);
    json_object_set_new(rec, "device", json_string(name));
    json_object_set_new(rec, "batch", json_integer(batch));
    json_object_set_new(rec, "samples", json_integer(samples));
    json_object_set_new(rec, "jit_gemm_us", json_real(med_jit));
    json_object_set_new(rec, "raw_launch_us", json_real(med_raw));
    json_object_set_new(rec, "overhead_us", json_real(med_diff));
    json_object_set_new(rec, "target_us", json_real(TARGET_US));
    json_object_set_new(rec, "pass", json_boolean(med_diff <= TARGET_US));
    bench_emit(rec);
    rc = 0;
done:
    free(h1);
    free(h2);
    free(cubin);
    if (module)
        drv->cuModuleUnload(module);
    release(drv, &buf);
    jit_context_destroy(ctx);
    bench_rmtree(dir);
    free(dir);
    jit__diag_clear(&d);
    return rc;
}
