/*
 * Benchmark 4b (GPU only): jit_gemm's host overhead over a raw cuLaunchKernelEx when several
 * threads launch the same kernel at once, each on a stream of its own (target: the overhead per
 * call with 8 threads within 1.5x of the overhead with one thread).
 *
 * A launch that took a lock shared by every launch of a kernel would make the threads queue on
 * it, and the overhead would grow with the threads; a lock-free hit path keeps it flat, up to
 * what the driver's own launches cost when issued from several threads at once, which the raw
 * path pays too. Each thread alternates batches of jit_gemm calls and of raw cuLaunchKernelEx
 * calls of the very kernel jit_gemm loaded (its CUfunction, the parameter block filled once by
 * hand, as bench_launch_overhead does), on its own stream and into its own output; all threads
 * start each batch together (a barrier) and synchronise their streams between batches, outside
 * the clock. Before timing, each thread checks that one launch of each path wrote the same
 * output. The kernel is the one the cost model picks on this GPU: the wgmma family's tile
 * kernel at the default 128 tokens on an H200, its split-K decode kernel with --tokens 16, the
 * mma.sync family elsewhere.
 *
 * Without a GPU it prints why and a record with "skipped": true, and exits 0.
 *
 *   bench_launch_threads [--threads 8] [--tokens 128] [--batch 200] [--samples 15]
 *                        [--commit C] [--quiet]
 */
#include <dlfcn.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench_common.h"
#include "context.h"
#include "driver.h"
#include "fp8_mma_sync/abi.h"
#include "fp8_mma_sync/fp8_mma_sync.h"
#include "fp8_wgmma/abi.h"
#include "fp8_wgmma/fp8_wgmma.h"

#define TARGET_RATIO 1.5
#define MAX_SAMPLES 101
#define MAX_THREADS 64
#define PROB_N 2048
#define PROB_K 2048

typedef CUresult (*stream_create_fn)(CUstream *, unsigned);
typedef CUresult (*stream_destroy_fn)(CUstream);

/* What every thread shares: the problem, its inputs, the kernel and the driver. */
typedef struct shared {
    const jit__driver_t *drv;
    CUcontext cuctx;
    jit_context_t *ctx;
    const jit__kernel_t *kernel;
    jit_problem_t prob;
    CUdeviceptr a, b, sa, sb;
    int batch, samples;
    pthread_barrier_t barrier;
} shared_t;

/* One thread's stream, outputs, raw launch and timings. */
typedef struct worker {
    shared_t *sh;
    int index;
    CUstream stream;
    CUdeviceptr d_jit, d_raw, workspace;
    union {
        jit__mma_sync_params_t mma_sync;
        jit__wgmma_params_t tiles;
        jit__wgmma_decode_params_t decode;
    } params;
    CUlaunchConfig cfg;
    CUlaunchAttribute attr;
    double jit_us[MAX_SAMPLES], raw_us[MAX_SAMPLES];
    int failed;
} worker_t;

static int cu_ok(const jit__driver_t *drv, CUresult r, const char *what) {
    if (r == CUDA_SUCCESS)
        return 1;
    const char *name = "?";
    drv->cuGetErrorName(r, &name);
    fprintf(stderr, "bench_launch_threads: %s: %s\n", what, name);
    return 0;
}

static void skip(const bench_args_t *ba, const char *why) {
    if (!ba->quiet)
        printf("launch overhead with threads: skipped (%s)\n", why);
    json_t *rec = bench_record("launch_threads", ba);
    json_object_set_new(rec, "skipped", json_true());
    json_object_set_new(rec, "reason", json_string(why));
    json_object_set_new(rec, "target_ratio", json_real(TARGET_RATIO));
    bench_emit(rec);
}

static int upload(shared_t *sh) {
    const jit__driver_t *drv = sh->drv;
    int64_t m = sh->prob.m;
    size_t na = (size_t)m * PROB_K, nb = (size_t)PROB_N * PROB_K;
    uint8_t *a = malloc(na), *b = malloc(nb);
    float *sa = malloc((size_t)m * sizeof(float)), *sb = malloc(PROB_N * sizeof(float));
    int ok = a && b && sa && sb;
    /* E4M3 values of small magnitude; the bit patterns 0x7f and 0xff (NaN) are never made. */
    uint64_t x = 0x9e3779b97f4a7c15ull;
    for (size_t i = 0; ok && i < na; i++, x = x * 6364136223846793005ull + 1)
        a[i] = (uint8_t)((x >> 33) & 0xb7);
    for (size_t i = 0; ok && i < nb; i++, x = x * 6364136223846793005ull + 1)
        b[i] = (uint8_t)((x >> 33) & 0xb7);
    for (int64_t i = 0; ok && i < m; i++)
        sa[i] = 1.0f / 64;
    for (int i = 0; ok && i < PROB_N; i++)
        sb[i] = 1.0f / 64;
    ok = ok && cu_ok(drv, drv->cuMemAlloc(&sh->a, na), "cuMemAlloc") &&
         cu_ok(drv, drv->cuMemAlloc(&sh->b, nb), "cuMemAlloc") &&
         cu_ok(drv, drv->cuMemAlloc(&sh->sa, (size_t)m * sizeof(float)), "cuMemAlloc") &&
         cu_ok(drv, drv->cuMemAlloc(&sh->sb, PROB_N * sizeof(float)), "cuMemAlloc") &&
         cu_ok(drv, drv->cuMemcpyHtoD(sh->a, a, na), "cuMemcpyHtoD") &&
         cu_ok(drv, drv->cuMemcpyHtoD(sh->b, b, nb), "cuMemcpyHtoD") &&
         cu_ok(drv, drv->cuMemcpyHtoD(sh->sa, sa, (size_t)m * sizeof(float)), "cuMemcpyHtoD") &&
         cu_ok(drv, drv->cuMemcpyHtoD(sh->sb, sb, PROB_N * sizeof(float)), "cuMemcpyHtoD");
    free(a);
    free(b);
    free(sa);
    free(sb);
    return ok ? 0 : -1;
}

static jit_operands_t operands_of(const shared_t *sh, CUdeviceptr d) {
    jit_operands_t o;
    jit_operands_init(&o);
    o.a = (const void *)(uintptr_t)sh->a;
    o.b = (const void *)(uintptr_t)sh->b;
    o.scale_a = (const void *)(uintptr_t)sh->sa;
    o.scale_b = (const void *)(uintptr_t)sh->sb;
    o.d = (void *)(uintptr_t)d;
    return o;
}

/* A or B as the wgmma kernel reads it (kernel_src/fp8_wgmma/abi.h). */
static int wgmma_map(const jit__driver_t *drv, CUdeviceptr ptr, int64_t rows, int box_rows,
                     jit__wgmma_tmap_t *out) {
    cuuint64_t dims[2] = {PROB_K, (cuuint64_t)rows}, strides[1] = {PROB_K};
    cuuint32_t box[2] = {128, (cuuint32_t)box_rows}, elem[2] = {1, 1};
    CUtensorMap map;
    CUresult r = drv->cuTensorMapEncodeTiled(
        &map, CU_TENSOR_MAP_DATA_TYPE_UINT8, 2, (void *)(uintptr_t)ptr, dims, strides, box, elem,
        CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_SWIZZLE_128B,
        CU_TENSOR_MAP_L2_PROMOTION_L2_256B, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
    memcpy(out, &map, sizeof(map));
    return cu_ok(drv, r, "cuTensorMapEncodeTiled");
}

/* The wgmma family's parameter block and grid for this thread, as its launch fills them; the
 * decode route with split K gets a workspace of the thread's own, zeroed counters first. */
static int raw_wgmma(worker_t *w) {
    shared_t *sh = w->sh;
    const jit__driver_t *drv = sh->drv;
    const jit__plan_t *plan = &sh->kernel->plan;
    const jit__wgmma_plan_t *wp = jit__wgmma_cof(plan);
    jit__wgmma_tmap_t ma, mb;
    if (!wgmma_map(drv, sh->a, sh->prob.m, wp->bm, &ma) ||
        !wgmma_map(drv, sh->b, PROB_N, wp->bn / wp->cluster, &mb))
        return -1;
    /* Not capped at the co-resident clusters as the family caps it: the grid changes when the
     * kernel runs, not what a launch costs the host. */
    w->cfg.gridDimX = jit__wgmma_grid(plan, sh->prob.m, 0);
    if (wp->route == JIT_WGMMA_DECODE) {
        int64_t lo, hi;
        jit__token_band_range(plan->token_band, &lo, &hi);
        size_t counters = jit__wgmma_decode_counter_bytes(plan, hi);
        size_t at = (counters + 255) / 256 * 256;
        size_t bytes = at + jit__wgmma_decode_workspace_bytes(plan, hi);
        if (counters && (!cu_ok(drv, drv->cuMemAlloc(&w->workspace, bytes), "cuMemAlloc") ||
                         !cu_ok(drv, drv->cuMemsetD8(w->workspace, 0, counters), "cuMemsetD8")))
            return -1;
        jit_operands_t o = operands_of(sh, w->d_raw);
        jit__launch_args_t args = {&sh->prob, &o, PROB_K, PROB_K, PROB_N, PROB_N, w->stream, 0, 0};
        jit__wgmma_decode_params(&args, &ma, &mb, w->workspace ? w->workspace + at : 0,
                                 w->workspace, &w->params.decode);
        return 0;
    }
    jit__wgmma_params_t *t = &w->params.tiles;
    t->tmap_a = ma;
    t->tmap_b = mb;
    t->sa = (const float *)(uintptr_t)sh->sa;
    t->sb = (const float *)(uintptr_t)sh->sb;
    t->d = (uint16_t *)(uintptr_t)w->d_raw;
    t->m = sh->prob.m;
    t->ldd = t->ldr = PROB_N;
    t->alpha = 1.0f;
    if (wp->cluster > 1) {
        w->attr.id = CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION;
        w->attr.value.clusterDim.x = (unsigned)wp->cluster;
        w->attr.value.clusterDim.y = w->attr.value.clusterDim.z = 1;
        w->cfg.attrs = &w->attr;
        w->cfg.numAttrs = 1;
    }
    return 0;
}

static int raw_setup(worker_t *w) {
    shared_t *sh = w->sh;
    const jit__plan_t *plan = &sh->kernel->plan;
    memset(&w->params, 0, sizeof(w->params));
    memset(&w->cfg, 0, sizeof(w->cfg));
    w->cfg.gridDimY = w->cfg.gridDimZ = 1;
    w->cfg.blockDimX = (unsigned)plan->threads;
    w->cfg.blockDimY = w->cfg.blockDimZ = 1;
    w->cfg.sharedMemBytes = plan->smem_bytes;
    w->cfg.hStream = w->stream;
    if (plan->family == &jit__family_fp8_wgmma)
        return raw_wgmma(w);
    jit__mma_sync_params_t *q = &w->params.mma_sync;
    q->a = (const void *)(uintptr_t)sh->a;
    q->b = (const void *)(uintptr_t)sh->b;
    q->sa = (const float *)(uintptr_t)sh->sa;
    q->sb = (const float *)(uintptr_t)sh->sb;
    q->d = (void *)(uintptr_t)w->d_raw;
    q->m = sh->prob.m;
    q->lda = q->ldb = PROB_K;
    q->ldd = q->ldr = PROB_N;
    q->alpha = 1.0f;
    unsigned grid[3];
    jit__mma_sync_grid(plan, sh->prob.m, grid);
    w->cfg.gridDimX = grid[0];
    w->cfg.gridDimY = grid[1];
    return 0;
}

static int raw_launch(worker_t *w) {
    void *args[] = {&w->params};
    return cu_ok(w->sh->drv,
                 w->sh->drv->cuLaunchKernelEx(&w->cfg, w->sh->kernel->function, args, NULL),
                 "cuLaunchKernelEx");
}

static int jit_launch(worker_t *w) {
    jit_operands_t o = operands_of(w->sh, w->d_jit);
    if (jit_gemm(w->sh->ctx, &w->sh->prob, &o, w->stream) == JIT_OK)
        return 1;
    fprintf(stderr, "bench_launch_threads: jit_gemm: %s\n", jit_last_error(w->sh->ctx));
    return 0;
}

/* One launch of each path, then the two outputs must be equal: the raw launch is the same
 * kernel with the same arguments. */
static int check_same(worker_t *w) {
    const jit__driver_t *drv = w->sh->drv;
    size_t bytes = (size_t)w->sh->prob.m * PROB_N * 2;
    uint16_t *h1 = malloc(bytes), *h2 = malloc(bytes);
    int ok = h1 && h2 && jit_launch(w) && raw_launch(w) &&
             cu_ok(drv, drv->cuStreamSynchronize(w->stream), "cuStreamSynchronize") &&
             cu_ok(drv, drv->cuMemcpyDtoH(h1, w->d_jit, bytes), "cuMemcpyDtoH") &&
             cu_ok(drv, drv->cuMemcpyDtoH(h2, w->d_raw, bytes), "cuMemcpyDtoH");
    if (ok && memcmp(h1, h2, bytes) != 0) {
        fprintf(stderr,
                "bench_launch_threads: thread %d: jit_gemm and the raw launch wrote "
                "different outputs\n",
                w->index);
        ok = 0;
    }
    free(h1);
    free(h2);
    return ok;
}

static void *run_worker(void *arg) {
    worker_t *w = arg;
    shared_t *sh = w->sh;
    const jit__driver_t *drv = sh->drv;
    w->failed = !cu_ok(drv, drv->cuCtxSetCurrent(sh->cuctx), "cuCtxSetCurrent");
    for (int s = -1; s < sh->samples; s++) { /* s = -1 warms both paths up */
        pthread_barrier_wait(&sh->barrier);
        double t0 = bench_now();
        for (int i = 0; i < sh->batch && !w->failed; i++)
            w->failed = !jit_launch(w);
        double t1 = bench_now();
        if (!w->failed)
            w->failed = !cu_ok(drv, drv->cuStreamSynchronize(w->stream), "cuStreamSynchronize");
        pthread_barrier_wait(&sh->barrier);
        double t2 = bench_now();
        for (int i = 0; i < sh->batch && !w->failed; i++)
            w->failed = !raw_launch(w);
        double t3 = bench_now();
        if (!w->failed)
            w->failed = !cu_ok(drv, drv->cuStreamSynchronize(w->stream), "cuStreamSynchronize");
        if (s >= 0) {
            w->jit_us[s] = (t1 - t0) * 1e6 / sh->batch;
            w->raw_us[s] = (t3 - t2) * 1e6 / sh->batch;
        }
    }
    return NULL;
}

/* Run `n` workers at once; their overheads (median of jit - raw per thread) in over[]. */
static int run_threads(shared_t *sh, worker_t *w, int n, double *over, double *jit_med,
                       double *raw_med) {
    pthread_t tid[MAX_THREADS];
    if (pthread_barrier_init(&sh->barrier, NULL, (unsigned)n) != 0)
        return -1;
    int started = 0, rc = 0;
    for (; started < n; started++)
        if (pthread_create(&tid[started], NULL, run_worker, &w[started]) != 0)
            break;
    if (started < n) {
        /* The barrier would never open: nothing was timed. */
        fprintf(stderr, "bench_launch_threads: could not start %d threads\n", n);
        exit(1);
    }
    for (int i = 0; i < n; i++)
        pthread_join(tid[i], NULL);
    pthread_barrier_destroy(&sh->barrier);
    double all_jit[MAX_THREADS], all_raw[MAX_THREADS];
    for (int i = 0; i < n; i++) {
        double diff[MAX_SAMPLES];
        for (int s = 0; s < sh->samples; s++)
            diff[s] = w[i].jit_us[s] - w[i].raw_us[s];
        over[i] = bench_median(diff, (size_t)sh->samples);
        all_jit[i] = bench_median(w[i].jit_us, (size_t)sh->samples);
        all_raw[i] = bench_median(w[i].raw_us, (size_t)sh->samples);
        rc |= w[i].failed;
    }
    *jit_med = bench_median(all_jit, (size_t)n);
    *raw_med = bench_median(all_raw, (size_t)n);
    return rc ? -1 : 0;
}

static const char *kernel_kind(const jit__plan_t *plan) {
    if (plan->family == &jit__family_fp8_mma_sync)
        return "fp8_mma_sync";
    if (plan->family != &jit__family_fp8_wgmma)
        return NULL;
    const jit__wgmma_plan_t *wp = jit__wgmma_cof(plan);
    if (wp->route == JIT_WGMMA_DECODE)
        return wp->split > 1 ? "fp8_wgmma decode, split K" : "fp8_wgmma decode";
    return wp->cluster > 1 ? "fp8_wgmma tiles, clusters of 2" : "fp8_wgmma tiles";
}

static void report(const bench_args_t *ba, const shared_t *sh, const char *device, int threads,
                   double single, const double *over, double jit_med, double raw_med) {
    double sorted[MAX_THREADS], worst = over[0];
    for (int i = 0; i < threads; i++) {
        sorted[i] = over[i];
        if (over[i] > worst)
            worst = over[i];
    }
    double med = bench_median(sorted, (size_t)threads);
    double ratio = single > 0 ? worst / single : 0;
    int pass = single > 0 && ratio <= TARGET_RATIO;
    const char *kind = kernel_kind(&sh->kernel->plan);
    if (!ba->quiet) {
        printf("launch overhead with %d threads on %s: %s, m=%lld n=%d k=%d, %d launches x %d "
               "samples per thread, host time\n",
               threads, device, kind, (long long)sh->prob.m, PROB_N, PROB_K, sh->batch,
               sh->samples);
        printf("%-40s %10.3f us\n", "one thread: jit_gemm - raw", single);
        for (int i = 0; i < threads; i++)
            printf("%d threads, thread %-2d: jit_gemm - raw       %10.3f us\n", threads, i,
                   over[i]);
        printf("%-40s %10.3f us (median %.3f), %.2fx one thread\n", "worst thread", worst, med,
               ratio);
        printf("%-40s %10.3f / %.3f us per call\n", "jit_gemm / raw, median thread", jit_med,
               raw_med);
        printf("target <= %.1fx: %s\n", TARGET_RATIO, pass ? "met" : "NOT met");
    }
    json_t *rec = bench_record("launch_threads", ba);
    json_object_set_new(rec, "device", json_string(device));
    json_object_set_new(rec, "kernel", json_string(kind));
    json_object_set_new(rec, "threads", json_integer(threads));
    json_object_set_new(rec, "tokens", json_integer(sh->prob.m));
    json_object_set_new(rec, "batch", json_integer(sh->batch));
    json_object_set_new(rec, "samples", json_integer(sh->samples));
    json_object_set_new(rec, "single_thread_overhead_us", json_real(single));
    json_t *per = json_array();
    for (int i = 0; i < threads; i++)
        json_array_append_new(per, json_real(over[i]));
    json_object_set_new(rec, "per_thread_overhead_us", per);
    json_object_set_new(rec, "median_thread_overhead_us", json_real(med));
    json_object_set_new(rec, "worst_thread_overhead_us", json_real(worst));
    json_object_set_new(rec, "jit_gemm_us", json_real(jit_med));
    json_object_set_new(rec, "raw_launch_us", json_real(raw_med));
    json_object_set_new(rec, "ratio", json_real(ratio));
    json_object_set_new(rec, "target_ratio", json_real(TARGET_RATIO));
    json_object_set_new(rec, "pass", json_boolean(pass));
    bench_emit(rec);
}

static int parse(int argc, char **argv, int *threads, int64_t *tokens, int *batch, int *samples) {
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--threads") && i + 1 < argc)
            *threads = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--tokens") && i + 1 < argc)
            *tokens = atoll(argv[++i]);
        else if (!strcmp(argv[i], "--batch") && i + 1 < argc)
            *batch = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--samples") && i + 1 < argc)
            *samples = atoi(argv[++i]);
        else
            return -1;
    }
    if (*threads < 1 || *threads > MAX_THREADS || *tokens < 1 || *tokens > 65536 || *batch < 1 ||
        *batch > 1000 || *samples < 1 || *samples > MAX_SAMPLES)
        return -1;
    return 0;
}

/* The streams come from libcuda itself: the library's driver table has no use for them. */
static int stream_functions(stream_create_fn *create, stream_destroy_fn *destroy) {
    void *lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    *create = lib ? (stream_create_fn)dlsym(lib, "cuStreamCreate") : NULL;
    *destroy = lib ? (stream_destroy_fn)dlsym(lib, "cuStreamDestroy_v2") : NULL;
    return *create && *destroy ? 0 : -1;
}

int main(int argc, char **argv) {
    bench_args_t ba;
    bench_args_parse(&argc, argv, &ba);
    int threads = 8, batch = 200, samples = 15;
    int64_t tokens = 128;
    if (parse(argc, argv, &threads, &tokens, &batch, &samples) != 0) {
        fprintf(stderr,
                "usage: %s [--threads 1..%d] [--tokens M] [--batch 1..1000] [--samples 1..%d] "
                "[--commit C] [--quiet]\n",
                argv[0], MAX_THREADS, MAX_SAMPLES);
        return 2;
    }
    jit__diag_t d;
    jit__diag_init(&d);
    shared_t sh;
    memset(&sh, 0, sizeof(sh));
    CUdevice dev = 0;
    stream_create_fn stream_create;
    stream_destroy_fn stream_destroy;
    if (jit__driver_get(&sh.drv, &d) != JIT_OK ||
        jit__driver_current_context(sh.drv, &sh.cuctx, &dev, &d) != JIT_OK) {
        skip(&ba, d.msg);
        jit__diag_clear(&d);
        return 0;
    }
    const jit__driver_t *drv = sh.drv;
    if (stream_functions(&stream_create, &stream_destroy) != 0) {
        fprintf(stderr, "bench_launch_threads: libcuda has no cuStreamCreate\n");
        return 1;
    }
    sh.batch = batch;
    sh.samples = samples;
    jit_problem_init(&sh.prob);
    sh.prob.m = tokens;
    sh.prob.n = PROB_N;
    sh.prob.k = PROB_K;
    char *dir = bench_mkdtemp("threads");
    jit_context_options_t opt;
    jit_context_options_init(&opt);
    opt.cache_dir = dir;
    worker_t *w = calloc((size_t)threads, sizeof(*w));
    int rc = 1;
    if (!dir || !w || jit_context_create(&opt, &sh.ctx) != JIT_OK) {
        fprintf(stderr, "bench_launch_threads: context: %s\n", jit_last_error(NULL));
        goto done;
    }
    if (upload(&sh) != 0)
        goto done;
    for (int i = 0; i < threads; i++) {
        size_t out = (size_t)tokens * PROB_N * 2;
        w[i].sh = &sh;
        w[i].index = i;
        if (!cu_ok(drv, stream_create(&w[i].stream, CU_STREAM_NON_BLOCKING), "cuStreamCreate") ||
            !cu_ok(drv, drv->cuMemAlloc(&w[i].d_jit, out), "cuMemAlloc") ||
            !cu_ok(drv, drv->cuMemAlloc(&w[i].d_raw, out), "cuMemAlloc") ||
            !cu_ok(drv, drv->cuMemsetD8(w[i].d_jit, 0xa5, out), "cuMemsetD8") ||
            !cu_ok(drv, drv->cuMemsetD8(w[i].d_raw, 0x5a, out), "cuMemsetD8"))
            goto done;
    }
    /* The first call compiles and loads; it is not timed. */
    if (!jit_launch(&w[0]))
        goto done;
    sh.kernel = jit__ctx_lookup(sh.ctx, &sh.prob, sh.cuctx);
    if (!sh.kernel) {
        fprintf(stderr, "bench_launch_threads: the kernel jit_gemm loaded is not in the table\n");
        goto done;
    }
    if (!kernel_kind(&sh.kernel->plan)) {
        skip(&ba, "the kernel's family has no raw launch here");
        rc = 0;
        goto done;
    }
    for (int i = 0; i < threads; i++)
        if (raw_setup(&w[i]) != 0 || !check_same(&w[i]))
            goto done;
    double single, over[MAX_THREADS], jit_med, raw_med;
    if (run_threads(&sh, w, 1, &single, &jit_med, &raw_med) != 0 ||
        run_threads(&sh, w, threads, over, &jit_med, &raw_med) != 0)
        goto done;
    char name[128] = "?";
    drv->cuDeviceGetName(name, sizeof(name), dev);
    report(&ba, &sh, name, threads, single, over, jit_med, raw_med);
    rc = 0;
done:
    for (int i = 0; w && i < threads; i++) {
        if (w[i].stream)
            stream_destroy(w[i].stream);
        CUdeviceptr *bufs[] = {&w[i].d_jit, &w[i].d_raw, &w[i].workspace};
        for (size_t j = 0; j < 3; j++)
            if (*bufs[j])
                drv->cuMemFree(*bufs[j]);
    }
    CUdeviceptr *in[] = {&sh.a, &sh.b, &sh.sa, &sh.sb};
    for (size_t j = 0; j < 4; j++)
        if (*in[j])
            drv->cuMemFree(*in[j]);
    free(w);
    jit_context_destroy(sh.ctx);
    bench_rmtree(dir);
    free(dir);
    jit__diag_clear(&d);
    return rc;
}
