/*
 * fmodel_bsw: run a generated 128x128 block-scaled wgmma kernel (family fp8_block_wgmma,
 * sm_90a) on the functional model and compare it with the FP64 reference
 * (jit__ref_fp8_block128), through the family's own launch code: its tensor maps, parameter
 * block and persistent grid, as jit_gemm would launch it.
 *
 *   fmodel_bsw gen CASE OUT.cu      plan CASE, write the generated source (the extern
 *                                   __shared__ array made a call of the model) and print the
 *                                   entry point's name
 *   fmodel_bsw run CASE KERNEL.so [--seed S] [--yield P] [--verbose]
 *                                   the kernel, compiled as host C++ against the model's device
 *                                   headers, over random data; exit 0 only if every output is
 *                                   within the family's tolerance, nothing outside D was
 *                                   written, and no hazard was reported
 *
 * CASE is comma-separated key=value: m, n, k, epi (linear, add, swiglu), layout (k, m: SFA
 * k-major or m-major, padded by 3 and 5 with NaN), force (a candidate, e.g. block_tma_mc2:128x96;
 * default: the planner's), band (the token band to plan for; default: the band of m), sms (the
 * SM count the plan and the grid are sized for: a few, so that each CTA runs several tiles),
 * launches (grids run one after another; the decode route's split-K counters must be back at
 * zero after each, and D right after each).
 */
#include <dlfcn.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "family.h"
#include "fm_runtime.h"
#include "fp8_block_wgmma/bsw.h"
#include "key.h"
#include "plan.h"
#include "reference.h"

typedef struct bsw_case {
    int64_t m, n, k;
    jit_epilogue_t epi;
    int m_major, band, sms, launches;
    char force[48];
} bsw_case_t;

static int parse_case(const char *text, bsw_case_t *c) {
    memset(c, 0, sizeof(*c));
    c->m = 200;
    c->n = 300;
    c->k = 400;
    c->epi = JIT_EPILOGUE_LINEAR;
    c->band = -1;
    c->sms = 3;
    c->launches = 1;
    char *dup = strdup(text), *save = NULL;
    int ok = 1;
    for (char *tok = strtok_r(dup, ",", &save); tok && ok; tok = strtok_r(NULL, ",", &save)) {
        char *eq = strchr(tok, '=');
        if (!eq) {
            ok = 0;
            break;
        }
        *eq = 0;
        const char *key = tok, *v = eq + 1;
        if (!strcmp(key, "m"))
            c->m = atoll(v);
        else if (!strcmp(key, "n"))
            c->n = atoll(v);
        else if (!strcmp(key, "k"))
            c->k = atoll(v);
        else if (!strcmp(key, "epi"))
            c->epi = !strcmp(v, "add")      ? JIT_EPILOGUE_LINEAR_ADD
                     : !strcmp(v, "swiglu") ? JIT_EPILOGUE_LINEAR_SWIGLU
                                            : JIT_EPILOGUE_LINEAR;
        else if (!strcmp(key, "layout"))
            c->m_major = !strcmp(v, "m");
        else if (!strcmp(key, "force"))
            snprintf(c->force, sizeof(c->force), "%s", v);
        else if (!strcmp(key, "band"))
            c->band = atoi(v);
        else if (!strcmp(key, "sms"))
            c->sms = atoi(v);
        else if (!strcmp(key, "launches"))
            c->launches = atoi(v);
        else
            ok = 0;
    }
    free(dup);
    if (!ok || c->m < 1 || c->n < 1 || c->k < 16 || c->sms < 1)
        fprintf(stderr, "fmodel_bsw: bad case '%s' (want key=value,...)\n", text);
    return ok && c->m >= 1 && c->n >= 1 && c->k >= 16 && c->sms >= 1;
}

static jit__gemm_spec_t spec_of(const bsw_case_t *c) {
    jit__gemm_spec_t s = {.n = c->n,
                          .k = c->k,
                          .a = JIT_DTYPE_E4M3,
                          .b = JIT_DTYPE_E4M3,
                          .out = JIT_DTYPE_BF16,
                          .scales = JIT_SCALE_BLOCK_1X128_128X128,
                          .epilogue = c->epi,
                          .scale_type = JIT_SCALE_TYPE_F32};
    return s;
}

static int make_plan(const bsw_case_t *c, jit__plan_t *plan) {
    jit__gemm_spec_t spec = spec_of(c);
    jit__diag_t d;
    jit__diag_init(&d);
    if (c->force[0])
        setenv("JITGEMM_FORCE_CANDIDATE", c->force, 1);
    jit_status_t st = jit__plan_make(&spec, c->band >= 0 ? c->band : jit__token_band(c->m), c->sms,
                                     jit__arch_find("sm_90a"), plan, &d);
    unsetenv("JITGEMM_FORCE_CANDIDATE");
    if (st != JIT_OK || plan->family != &jit__family_fp8_block_wgmma) {
        fprintf(stderr, "fmodel_bsw: plan: %s\n", st != JIT_OK ? d.msg : "another family");
        jit__diag_clear(&d);
        return 0;
    }
    return 1;
}

/* Replace the first `from` in *src by `to`; 0 if absent. */
static int replace(char **src, const char *from, const char *to) {
    char *at = strstr(*src, from);
    if (!at)
        return 0;
    size_t head = (size_t)(at - *src), fl = strlen(from), tl = strlen(to), len = strlen(*src);
    char *out = malloc(len - fl + tl + 1);
    memcpy(out, *src, head);
    memcpy(out + head, to, tl);
    memcpy(out + head + tl, at + fl, len - head - fl + 1);
    free(*src);
    *src = out;
    return 1;
}

/* NVRTC's __INTADDR__(&((BswParams *)0)->field) as GCC's __builtin_offsetof(BswParams, field);
 * 0 where the source has none (the asserts moved) or a field name does not fit. */
static int intaddr_to_offsetof(char **src) {
    const char *pre = "__INTADDR__(&((BswParams *)0)->";
    int n = 0;
    char *at;
    while ((at = strstr(*src, pre)) != NULL) {
        char field[64], from[160], to[160];
        const char *f = at + strlen(pre);
        size_t fl = strcspn(f, ")");
        if (fl >= sizeof(field))
            return 0;
        memcpy(field, f, fl);
        field[fl] = 0;
        snprintf(from, sizeof(from), "%s%s)", pre, field);
        snprintf(to, sizeof(to), "__builtin_offsetof(BswParams, %s)", field);
        if (!replace(src, from, to))
            return 0;
        n++;
    }
    return n > 0;
}

static int cmd_gen(const bsw_case_t *c, const char *out) {
    jit__plan_t plan;
    if (!make_plan(c, &plan))
        return 2;
    jit__key_t key;
    char *src = NULL;
    jit__diag_t d;
    jit__diag_init(&d);
    if (jit__key_make(&plan, "sm_90a", 0, &key, &d) != JIT_OK ||
        jit__generate(&plan, &key, &src, &d) != JIT_OK) {
        fprintf(stderr, "fmodel_bsw: generate: %s\n", d.msg);
        return 2;
    }
    /* The two host-specific places: the extern __shared__ array (one per CTA here) and NVRTC's
     * __INTADDR__ in the parameter offset asserts (GCC's __builtin_offsetof). */
    if (!replace(&src, "extern __shared__ __align__(1024) unsigned char smem[];",
                 "unsigned char *const smem = fm::dynamic_smem();") ||
        !intaddr_to_offsetof(&src)) {
        fprintf(stderr, "fmodel_bsw: the generated source no longer has the expected entry\n");
        free(src);
        return 2;
    }
    FILE *f = fopen(out, "w");
    if (!f || fputs(src, f) < 0 || fclose(f) != 0) {
        fprintf(stderr, "fmodel_bsw: cannot write %s\n", out);
        free(src);
        return 2;
    }
    free(src);
    printf("%s\n", plan.family->kernel_name);
    return 0;
}

static uint64_t g_rng = 0x9E3779B97F4A7C15ull;
static uint64_t rnd(void) {
    g_rng ^= g_rng << 13;
    g_rng ^= g_rng >> 7;
    g_rng ^= g_rng << 17;
    return g_rng;
}
/* A non-zero, non-NaN E4M3 code. */
static uint8_t rnd_e4m3(void) {
    for (;;) {
        uint8_t v = (uint8_t)(rnd() >> 40);
        if ((v & 0x7F) != 0 && (v & 0x7F) != 0x7F)
            return v;
    }
}
/* mantissa in [1, 2) x 2^e, e in [base - spread, base + spread]. */
static float rnd_scale(int base, int spread) {
    int e = base + (int)(rnd() % (uint64_t)(2 * spread + 1)) - spread;
    return ldexpf(1.0f + (float)(rnd() >> 40) / 16777216.0f, e);
}
static uint16_t bf16_bits(float x) {
    uint32_t u;
    memcpy(&u, &x, 4);
    return (uint16_t)((u + 0x7FFFu + ((u >> 16) & 1u)) >> 16);
}
static double bf16_value(uint16_t b) {
    uint32_t u = (uint32_t)b << 16;
    float f;
    memcpy(&f, &u, 4);
    return f;
}

static void *zalloc(size_t bytes) {
    void *p = calloc(1, bytes ? bytes : 1);
    if (!p) {
        fprintf(stderr, "fmodel_bsw: out of memory\n");
        exit(2);
    }
    return p;
}

/* The launch, as the family's launch code configures it: captured instead of launched. */
static CUlaunchConfig g_cfg;
static unsigned g_cluster = 1;
static jit__bsw_params_t g_params;
static int g_sms;

static CUresult capture_launch(const CUlaunchConfig *cfg, CUfunction f, void **args, void **ex) {
    (void)f, (void)ex;
    g_cfg = *cfg;
    g_cluster = 1;
    for (unsigned i = 0; i < cfg->numAttrs; i++)
        if (cfg->attrs[i].id == CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION)
            g_cluster = cfg->attrs[i].value.clusterDim.x;
    memcpy(&g_params, args[0], sizeof(g_params));
    return CUDA_SUCCESS;
}
static CUresult resident_clusters(int *n, CUfunction f, const CUlaunchConfig *cfg) {
    (void)f;
    *n = g_sms / (int)cfg->attrs[0].value.clusterDim.x;
    return CUDA_SUCCESS;
}

/* The decode route's workspace lives in host memory here; launches are sequential, so the
 * event ordering has nothing to do. */
static void *g_allocs[4];
static size_t g_alloc_bytes[4];
static int g_n_allocs;
static CUresult host_alloc(CUdeviceptr *p, size_t bytes) {
    if (g_n_allocs == 4)
        return CUDA_ERROR_OUT_OF_MEMORY;
    g_allocs[g_n_allocs] = zalloc(bytes);
    g_alloc_bytes[g_n_allocs] = bytes;
    *p = (CUdeviceptr)(uintptr_t)g_allocs[g_n_allocs++];
    return CUDA_SUCCESS;
}
static CUresult host_free(CUdeviceptr p) {
    (void)p;
    return CUDA_SUCCESS;
}
static CUresult host_memset(CUdeviceptr p, unsigned char v, size_t n) {
    memset((void *)(uintptr_t)p, v, n);
    return CUDA_SUCCESS;
}
static CUresult no_event(CUevent *e, unsigned flags) {
    (void)flags;
    *e = (CUevent)(uintptr_t)1;
    return CUDA_SUCCESS;
}
static CUresult no_event_destroy(CUevent e) {
    (void)e;
    return CUDA_SUCCESS;
}
static CUresult no_wait(CUstream s, CUevent e, unsigned flags) {
    (void)s, (void)e, (void)flags;
    return CUDA_SUCCESS;
}
static CUresult no_record(CUevent e, CUstream s) {
    (void)e, (void)s;
    return CUDA_SUCCESS;
}

typedef struct host_data {
    uint8_t *a, *b;
    float *sfa, *sfb;
    uint16_t *res, *d;
    int64_t lda, ldd, ldr, sm, sk;
    size_t d_elems;
} host_data_t;

static void make_data(const bsw_case_t *c, host_data_t *h) {
    const int64_t m = c->m, n = c->n, k = c->k, kb = (k + 127) / 128, nb = (n + 127) / 128;
    const int64_t nout = c->epi == JIT_EPILOGUE_LINEAR_SWIGLU ? n / 2 : n;
    const int swiglu = c->epi == JIT_EPILOGUE_LINEAR_SWIGLU;
    h->lda = k + 16;
    h->ldd = nout + 3; /* a poisoned gap after each row */
    h->ldr = n + 5;
    h->sm = c->m_major ? 1 : kb + 3;
    h->sk = c->m_major ? m + 5 : 1;
    h->a = zalloc((size_t)(m * h->lda));
    h->b = zalloc((size_t)(n * k));
    h->sfa = zalloc(sizeof(float) * (size_t)(c->m_major ? kb * h->sk : m * h->sm));
    h->sfb = zalloc(sizeof(float) * (size_t)(nb * kb));
    h->res = zalloc(sizeof(uint16_t) * (size_t)(m * h->ldr));
    h->d_elems = (size_t)((m + 2) * h->ldd); /* two guard rows */
    h->d = zalloc(sizeof(uint16_t) * h->d_elems);
    for (int64_t i = 0; i < m * h->lda; i++)
        h->a[i] = rnd_e4m3();
    for (int64_t i = 0; i < n * k; i++)
        h->b[i] = rnd_e4m3();
    const size_t sfa_n = (size_t)(c->m_major ? kb * h->sk : m * h->sm);
    for (size_t i = 0; i < sfa_n; i++)
        h->sfa[i] = NAN;
    for (int64_t r = 0; r < m; r++)
        for (int64_t g = 0; g < kb; g++)
            h->sfa[r * h->sm + g * h->sk] = rnd_scale(swiglu ? -7 : 0, swiglu ? 3 : 20);
    for (int64_t i = 0; i < nb * kb; i++)
        h->sfb[i] = (rnd() & 1 ? -1.0f : 1.0f) * rnd_scale(swiglu ? -7 : 0, swiglu ? 3 : 20);
    for (int64_t i = 0; i < m * h->ldr; i++)
        h->res[i] = bf16_bits((float)((int)(rnd() % 2001) - 1000) / 256.0f);
    memset(h->d, 0xFF, sizeof(uint16_t) * h->d_elems);
}

static int check(const bsw_case_t *c, const host_data_t *h, float alpha) {
    const int64_t m = c->m, nout = c->epi == JIT_EPILOGUE_LINEAR_SWIGLU ? c->n / 2 : c->n;
    jit__gemm_spec_t spec = spec_of(c);
    double *ref = zalloc(sizeof(double) * (size_t)(m * nout));
    double *mag = zalloc(sizeof(double) * (size_t)(m * nout));
    jit__ref_fp8_block128(&spec, m, h->a, h->lda, h->b, c->k, h->sfa, h->sm, h->sk, h->sfb, h->res,
                          h->ldr, alpha, ref, mag);
    int64_t bad = 0, outside = 0, worst_i = -1;
    double worst = 0;
    for (int64_t r = 0; r < m + 2; r++)
        for (int64_t j = 0; j < h->ldd; j++) {
            const uint16_t bits = h->d[r * h->ldd + j];
            if (r >= m || j >= nout) {
                outside += bits != 0xFFFF;
                continue;
            }
            const size_t i = (size_t)(r * nout + j);
            const double got = bf16_value(bits),
                         tol = jit__ref_tolerance_fp8_tensor(ref[i], mag[i]);
            const double err = fabs(got - ref[i]);
            if (!(err <= tol)) {
                if (bad < 6)
                    fprintf(stderr,
                            "fmodel_bsw: D[%lld][%lld] = %.8g, reference %.8g (tolerance "
                            "%.3g)\n",
                            (long long)r, (long long)j, got, ref[i], tol);
                bad++;
            } else if (tol > 0 && err / tol > worst) {
                worst = err / tol;
                worst_i = (int64_t)i;
            }
        }
    if (worst_i >= 0 && getenv("FMODEL_BSW_WORST"))
        fprintf(stderr, "fmodel_bsw: worst at [%lld][%lld]: reference %.10g, mag %.6g, got %.10g\n",
                (long long)(worst_i / nout), (long long)(worst_i % nout), ref[worst_i],
                mag[worst_i], bf16_value(h->d[worst_i / nout * h->ldd + worst_i % nout]));
    if (outside)
        fprintf(stderr, "fmodel_bsw: %lld elements written outside D (row gaps, guard rows)\n",
                (long long)outside);
    printf("fmodel_bsw: %s: %lld of %lld outputs outside tolerance (worst inside: %.2f of it)\n",
           bad || outside ? "FAIL" : "ok", (long long)bad, (long long)(m * nout), worst);
    free(ref);
    free(mag);
    return bad || outside ? 1 : 0;
}

static int cmd_run(const bsw_case_t *c, const char *so, uint64_t seed, double yield_prob,
                   int verbose) {
    jit__plan_t plan;
    if (!make_plan(c, &plan))
        return 2;
    void *lib = dlopen(so, RTLD_NOW | RTLD_LOCAL);
    if (!lib) {
        fprintf(stderr, "fmodel_bsw: %s\n", dlerror());
        return 2;
    }
    void (*entry)(const void *) = (void (*)(const void *))dlsym(lib, "fm_kernel_entry");
    if (!entry) {
        fprintf(stderr, "fmodel_bsw: %s has no fm_kernel_entry\n", so);
        return 2;
    }
    g_rng ^= seed * 0x2545F4914F6CDD1Dull;
    host_data_t h;
    make_data(c, &h);
    const float alpha = 0.75f;
    jit_problem_t p;
    jit_problem_init(&p);
    p.m = c->m;
    p.n = c->n;
    p.k = c->k;
    p.epilogue = c->epi;
    p.scale_mode = JIT_SCALE_BLOCK_1X128_128X128;
    p.alpha = alpha;
    jit_operands_t ops;
    jit_operands_init(&ops);
    ops.a = h.a;
    ops.b = h.b;
    ops.scale_a = h.sfa;
    ops.scale_b = h.sfb;
    ops.residual = c->epi == JIT_EPILOGUE_LINEAR_ADD ? h.res : NULL;
    ops.d = h.d;
    jit__launch_args_t args = {.problem = &p,
                               .operands = &ops,
                               .lda = h.lda,
                               .ldb = c->k,
                               .ldd = h.ldd,
                               .ldr = h.ldr,
                               .sfa_stride_m = h.sm,
                               .sfa_stride_k = h.sk};
    jit__driver_t drv;
    memset(&drv, 0, sizeof(drv));
    drv.cuTensorMapEncodeTiled = fm_encode_tiled;
    drv.cuLaunchKernelEx = capture_launch;
    drv.cuOccupancyMaxActiveClusters = resident_clusters;
    drv.cuMemAlloc = host_alloc;
    drv.cuMemFree = host_free;
    drv.cuMemsetD8 = host_memset;
    drv.cuEventCreate = no_event;
    drv.cuEventDestroy = no_event_destroy;
    drv.cuStreamWaitEvent = no_wait;
    drv.cuEventRecord = no_record;
    g_sms = c->sms;
    void *state = NULL;
    jit__diag_t d;
    jit__diag_init(&d);
    if (plan.family->prepare(&drv, NULL, &plan, &state, &d) != JIT_OK ||
        plan.family->launch(&drv, NULL, &plan, state, &args, &d) != JIT_OK) {
        fprintf(stderr, "fmodel_bsw: launch: %s\n", d.msg);
        return 2;
    }
    plan.family->release(&drv, state);
    fm_launch_t L;
    memset(&L, 0, sizeof(L));
    L.grid[0] = g_cfg.gridDimX;
    L.grid[1] = L.grid[2] = 1;
    L.cluster[0] = g_cluster;
    L.cluster[1] = 1;
    L.threads = g_cfg.blockDimX;
    L.smem_bytes = g_cfg.sharedMemBytes;
    L.arch = 90;
    L.entry = entry;
    L.params = &g_params;
    L.seed = seed;
    L.yield_prob = yield_prob;
    L.verbose = verbose;
    if (verbose)
        fprintf(stderr,
                "fmodel_bsw: %s tile %dx%d, %d stages, grid %u x cluster %u, M %lld N %lld "
                "K %lld\n",
                plan.candidates[plan.chosen].route, plan.tile_m, plan.tile_n, plan.stages,
                L.grid[0], L.cluster[0], (long long)c->m, (long long)c->n, (long long)c->k);
    int rc = 0, bad = 0;
    for (int l = 0; l < c->launches && !bad; l++) {
        memset(h.d, 0xFF, sizeof(uint16_t) * h.d_elems);
        L.seed = seed + (uint64_t)l;
        rc |= fm_run(&L);
        if (rc & 2)
            return 2;
        bad = check(c, &h, alpha);
        /* The split-K counters (the second allocation) are zero again after every launch. */
        if (g_n_allocs == 2)
            for (size_t i = 0; i < g_alloc_bytes[1]; i++)
                if (((const uint8_t *)g_allocs[1])[i]) {
                    fprintf(stderr,
                            "fmodel_bsw: launch %d left a split-K counter at byte %zu "
                            "non-zero\n",
                            l + 1, i);
                    bad = 1;
                    break;
                }
    }
    if (rc)
        printf("fmodel_bsw: hazards reported\n");
    free(h.a);
    free(h.b);
    free(h.sfa);
    free(h.sfb);
    free(h.res);
    free(h.d);
    return bad || rc ? 1 : 0;
}

int main(int argc, char **argv) {
    if (argc < 4) {
        fprintf(stderr, "usage: fmodel_bsw gen CASE OUT.cu | fmodel_bsw run CASE KERNEL.so "
                        "[--seed S] [--yield P] [--verbose]\n");
        return 2;
    }
    bsw_case_t c;
    if (!parse_case(argv[2], &c))
        return 2;
    if (!strcmp(argv[1], "gen"))
        return cmd_gen(&c, argv[3]);
    if (strcmp(argv[1], "run")) {
        fprintf(stderr, "fmodel_bsw: unknown command %s\n", argv[1]);
        return 2;
    }
    uint64_t seed = 1;
    double yield_prob = 0.05;
    int verbose = 0;
    for (int i = 4; i < argc; i++) {
        if (!strcmp(argv[i], "--seed") && i + 1 < argc)
            seed = strtoull(argv[++i], NULL, 0);
        else if (!strcmp(argv[i], "--yield") && i + 1 < argc)
            yield_prob = atof(argv[++i]);
        else if (!strcmp(argv[i], "--verbose"))
            verbose = 1;
        else {
            fprintf(stderr, "fmodel_bsw: unknown option %s\n", argv[i]);
            return 2;
        }
    }
    return cmd_run(&c, argv[3], seed, yield_prob, verbose);
}
