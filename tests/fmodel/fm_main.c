/*
 * fmodel: run a generated tcgen05 kernel on the functional model and compare it with the FP64
 * block-scaled reference (docs/blackwell-rubin.md, "Functional model").
 *
 *   fmodel gen CASE OUT.cu          plan CASE, write the generated source (with the two host
 *                                   rewrites below) and print the entry point's name
 *   fmodel run CASE KERNEL.so [--seed S] [--yield P]
 *                                   the kernel, compiled as host C++ against the model's device
 *                                   headers, over random data; exit 0 only if every output
 *                                   element is within tolerance and no hazard was reported
 *
 * CASE is comma-separated key=value: arch (sm_100a, sm_103a, sm_107a), fmt (nvfp4, mxfp4, mxfp8,
 * mixed, ue5m3), cg (1, 2), tile_n (64..256, 0: planner), breuse (0, 1), epi (linear, add,
 * swiglu), out (bf16, f32), m, n, k, clusters (clusters in the grid), band (the token band the
 * plan is made for, 0-4; default: the band of m, so a large-M plan can run on a small M),
 * fallback (how many of the preferred-cluster regions run as fallback-shape clusters),
 * cluster_n (force a cluster this wide along N, with A multicast: a plan the planner never makes),
 * launches (grids run one after another over the same workspace).
 */
#include <dlfcn.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "family.h"
#include "fm_runtime.h"
#include "key.h"
#include "plan.h"
#include "reference.h"
#include "tcgen05/launch.h"
#include "tcgen05/tcgen05.h"

typedef struct fm_case {
    char arch[16], fmt[16];
    int cg, tile_n, breuse, clusters, band; /* band -1: the band of m */
    int fallback;                           /* clusters launched in the fallback shape */
    int cluster_n; /* 0: the planner's; else forced, with A multicast along it */
    int launches;  /* grids run one after another over one workspace */
    jit_epilogue_t epi;
    jit_dtype_t out;
    int64_t m, n, k;
} fm_case_t;

static int parse_case(const char *text, fm_case_t *c) {
    memset(c, 0, sizeof(*c));
    strcpy(c->arch, "sm_100a");
    strcpy(c->fmt, "nvfp4");
    c->cg = 1;
    c->epi = JIT_EPILOGUE_LINEAR;
    c->out = JIT_DTYPE_BF16;
    c->m = 200;
    c->n = 256;
    c->k = 512;
    c->clusters = 2;
    c->band = -1;
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
        if (!strcmp(key, "arch"))
            snprintf(c->arch, sizeof(c->arch), "%s", v);
        else if (!strcmp(key, "fmt"))
            snprintf(c->fmt, sizeof(c->fmt), "%s", v);
        else if (!strcmp(key, "cg"))
            c->cg = atoi(v);
        else if (!strcmp(key, "tile_n"))
            c->tile_n = atoi(v);
        else if (!strcmp(key, "breuse"))
            c->breuse = atoi(v);
        else if (!strcmp(key, "launches"))
            c->launches = atoi(v);
        else if (!strcmp(key, "cluster_n"))
            c->cluster_n = atoi(v);
        else if (!strcmp(key, "fallback"))
            c->fallback = atoi(v);
        else if (!strcmp(key, "band"))
            c->band = atoi(v);
        else if (!strcmp(key, "clusters"))
            c->clusters = atoi(v);
        else if (!strcmp(key, "m"))
            c->m = atoll(v);
        else if (!strcmp(key, "n"))
            c->n = atoll(v);
        else if (!strcmp(key, "k"))
            c->k = atoll(v);
        else if (!strcmp(key, "epi"))
            c->epi = !strcmp(v, "add")      ? JIT_EPILOGUE_LINEAR_ADD
                     : !strcmp(v, "swiglu") ? JIT_EPILOGUE_LINEAR_SWIGLU
                                            : JIT_EPILOGUE_LINEAR;
        else if (!strcmp(key, "out"))
            c->out = !strcmp(v, "f32") ? JIT_DTYPE_F32 : JIT_DTYPE_BF16;
        else
            ok = 0;
    }
    free(dup);
    if (!ok)
        fprintf(stderr, "fmodel: bad case '%s' (want key=value,...)\n", text);
    return ok;
}

static int formats_of(const fm_case_t *c, jit_dtype_t *a, jit_dtype_t *b, jit_scale_mode_t *s) {
    *a = *b = JIT_DTYPE_E2M1;
    if (!strcmp(c->fmt, "nvfp4"))
        *s = JIT_SCALE_UE4M3_16;
    else if (!strcmp(c->fmt, "mxfp4"))
        *s = JIT_SCALE_UE8M0_32;
    else if (!strcmp(c->fmt, "ue5m3"))
        *s = JIT_SCALE_UE5M3_16;
    else if (!strcmp(c->fmt, "mxfp8")) {
        *a = *b = JIT_DTYPE_E4M3;
        *s = JIT_SCALE_UE8M0_32;
    } else if (!strcmp(c->fmt, "mixed")) {
        *a = JIT_DTYPE_E4M3;
        *s = JIT_SCALE_UE8M0_32;
    } else {
        fprintf(stderr, "fmodel: unknown format %s\n", c->fmt);
        return 0;
    }
    return 1;
}

static int make_plan(const fm_case_t *c, jit__gemm_spec_t *spec, jit__plan_t *plan) {
    memset(spec, 0, sizeof(*spec));
    spec->n = c->n;
    spec->k = c->k;
    spec->out = c->out;
    spec->epilogue = c->epi;
    if (!formats_of(c, &spec->a, &spec->b, &spec->scales))
        return 0;
    const jit__arch_profile_t *ap = jit__arch_find(c->arch);
    if (!ap) {
        fprintf(stderr, "fmodel: unknown arch %s\n", c->arch);
        return 0;
    }
    jit__tc_variant_t v = {c->cg, c->tile_n, c->breuse ? 1 : -1};
    jit__diag_t d;
    jit__diag_init(&d);
    jit_status_t st =
        jit__plan_tc_make_variant(spec, c->band >= 0 ? c->band : jit__token_band(c->m),
                                  ap->default_sm_count, ap, &v, plan, &d);
    if (st != JIT_OK) {
        fprintf(stderr, "fmodel: plan: %s\n", d.msg);
        return 0;
    }
    if (c->cluster_n > 0) {
        /* The planner always picks cluster N 1, which leaves the kernel's A-multicast path
         * unused; forcing a wider cluster runs that code (a plan the library never makes). */
        jit__tc_plan_t *tc = jit__tc_of(plan);
        plan->cluster_n = tc->cluster_n = c->cluster_n;
        tc->a.multicast = c->cluster_n > 1;
        if (plan->fallback_cluster_m)
            plan->fallback_cluster_n = tc->fallback_cluster_n = c->cluster_n;
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

/* The two places where the generated source is host-specific: the extern __shared__ array (one
 * per CTA here, so a function call) and NVRTC's __INTADDR__ (GCC's __builtin_offsetof). */
static int host_rewrites(char **src) {
    if (!replace(src, "extern __shared__ __align__(1024) unsigned char smem[];",
                 "unsigned char *const smem = fm::dynamic_smem();"))
        return 0;
    const char *pre = "__INTADDR__(&((jitgemm_tc_params *)0)->";
    int n = 0;
    char *at;
    while ((at = strstr(*src, pre)) != NULL) {
        char field[64];
        const char *f = at + strlen(pre);
        size_t fl = strcspn(f, ")");
        if (fl >= sizeof(field))
            return 0;
        memcpy(field, f, fl);
        field[fl] = 0;
        char from[160], to[160];
        snprintf(from, sizeof(from), "%s%s)", pre, field);
        snprintf(to, sizeof(to), "__builtin_offsetof(jitgemm_tc_params, %s)", field);
        if (!replace(src, from, to))
            return 0;
        n++;
    }
    return n > 0;
}

static int cmd_gen(const fm_case_t *c, const char *out) {
    jit__gemm_spec_t spec;
    jit__plan_t plan;
    if (!make_plan(c, &spec, &plan))
        return 2;
    jit__key_t key;
    char *src = NULL;
    jit__diag_t d;
    jit__diag_init(&d);
    if (jit__key_make(&plan, plan.arch->native_target, 0, &key, &d) != JIT_OK) {
        fprintf(stderr, "fmodel: key: %s\n", d.msg);
        return 2;
    }
    if (jit__generate(&plan, &key, &src, &d) != JIT_OK) {
        fprintf(stderr, "fmodel: generate: %s\n", d.msg);
        return 2;
    }
    if (!host_rewrites(&src)) {
        fprintf(stderr, "fmodel: the generated source no longer has the expected entry form\n");
        free(src);
        return 2;
    }
    FILE *f = fopen(out, "w");
    if (!f || fputs(src, f) < 0 || fclose(f) != 0) {
        fprintf(stderr, "fmodel: cannot write %s\n", out);
        free(src);
        return 2;
    }
    free(src);
    printf("%s\n", jit__plan_kernel_name(&plan));
    return 0;
}

/* ---- data ------------------------------------------------------------------------------------ */

static uint64_t g_rng = 0x9E3779B97F4A7C15ull;
static uint32_t rnd(void) {
    g_rng ^= g_rng << 13;
    g_rng ^= g_rng >> 7;
    g_rng ^= g_rng << 17;
    return (uint32_t)(g_rng >> 16);
}

static uint8_t rnd_elem(jit_dtype_t t) {
    if (t == JIT_DTYPE_E2M1)
        return (uint8_t)(rnd() & 0xFF); /* two nibbles, every code finite */
    for (;;) {
        uint8_t v = (uint8_t)rnd();
        if ((v & 0x7F) != 0x7F)
            return v;
    }
}

static uint8_t rnd_scale(jit_scale_mode_t s) {
    uint32_t r = rnd();
    switch (s) {
    case JIT_SCALE_UE8M0_32:
        return (uint8_t)(124 + r % 7);
    case JIT_SCALE_UE4M3_16:
        return (uint8_t)((5 + r % 5) << 3 | (r >> 8) % 8);
    default: /* UE5M3 */
        return (uint8_t)((13 + r % 5) << 3 | (r >> 8) % 8);
    }
}

static void *zalloc(size_t bytes) {
    size_t n = (bytes + 255) / 256 * 256 + 256;
    void *p = aligned_alloc(256, n);
    if (p)
        memset(p, 0, n);
    return p;
}

static uint16_t bf16_bits(double x) {
    float f = (float)x;
    uint32_t u;
    memcpy(&u, &f, 4);
    u += 0x7FFFu + ((u >> 16) & 1u);
    return (uint16_t)(u >> 16);
}

static double bf16_value(uint16_t b) {
    uint32_t u = (uint32_t)b << 16;
    float f;
    memcpy(&f, &u, 4);
    return f;
}

static int cmd_run(const fm_case_t *c, const char *so, uint64_t seed, double yield_prob,
                   int verbose) {
    jit__gemm_spec_t spec;
    jit__plan_t plan;
    if (!make_plan(c, &spec, &plan))
        return 2;
    const jit__tc_plan_t *tc = jit__tc_of(&plan);
    void *h = dlopen(so, RTLD_NOW | RTLD_LOCAL);
    if (!h) {
        fprintf(stderr, "fmodel: %s\n", dlerror());
        return 2;
    }
    void (*entry)(const void *) = (void (*)(const void *))dlsym(h, "fm_kernel_entry");
    if (!entry) {
        fprintf(stderr, "fmodel: %s has no fm_kernel_entry\n", so);
        return 2;
    }
    int64_t m = c->m, n = c->n, k = c->k;
    int64_t nout = c->epi == JIT_EPILOGUE_LINEAR_SWIGLU ? n / 2 : n;
    int64_t lda = spec.a == JIT_DTYPE_E2M1 ? k / 2 : k, ldb = spec.b == JIT_DTYPE_E2M1 ? k / 2 : k;
    int64_t vec = tc->sf_vec, nkb = (k + vec - 1) / vec;
    size_t sfa_bytes = (size_t)((m + 127) / 128 * 128) * (size_t)((nkb + 3) / 4 * 4);
    size_t sfb_bytes = (size_t)((n + 127) / 128 * 128) * (size_t)((nkb + 3) / 4 * 4);
    size_t ob = c->out == JIT_DTYPE_F32 ? 4 : 2, d_bytes = (size_t)(m * nout) * ob, guard = 4096;
    uint8_t *a = zalloc((size_t)(m * lda)), *b = zalloc((size_t)(n * ldb));
    uint8_t *sfa = zalloc(sfa_bytes), *sfb = zalloc(sfb_bytes);
    uint16_t *res = zalloc((size_t)(m * n) * 2);
    uint8_t *dout = zalloc(d_bytes + guard);
    double *ref = malloc(sizeof(double) * (size_t)(m * nout));
    double *mag = malloc(sizeof(double) * (size_t)(m * nout));
    for (int64_t i = 0; i < m * lda; i++)
        a[i] = rnd_elem(spec.a);
    for (int64_t i = 0; i < n * ldb; i++)
        b[i] = rnd_elem(spec.b);
    for (size_t i = 0; i < sfa_bytes; i++)
        sfa[i] = rnd_scale(spec.scales);
    for (size_t i = 0; i < sfb_bytes; i++)
        sfb[i] = rnd_scale(spec.scales);
    for (int64_t i = 0; i < m * n; i++)
        res[i] = bf16_bits(((int)(rnd() % 2001) - 1000) / 64.0);
    memset(dout, 0xFF, d_bytes + guard); /* NaN in BF16 and FP32: an unwritten element shows */

    if (c->fallback > c->clusters || (c->fallback && !plan.fallback_cluster_m)) {
        fprintf(stderr, "fmodel: fallback=%d: the plan has %s\n", c->fallback,
                plan.fallback_cluster_m ? "fewer clusters" : "no fallback cluster shape");
        return 2;
    }
    /* The host's grid sizing, with the occupancies a device holding `clusters` preferred-size
     * regions would report, of which all but `fallback` start as preferred clusters. */
    jit__diag_t d;
    jit__diag_init(&d);
    int split = plan.fallback_cluster_m ? plan.cluster_m / plan.fallback_cluster_m : 1;
    jit__tc_launch_dims_t dims;
    if (jit__tc_launch_dims(&plan, c->clusters - c->fallback, c->clusters * split, &dims, &d) !=
        JIT_OK) {
        fprintf(stderr, "fmodel: launch dimensions: %s\n", d.msg);
        return 2;
    }
    if (dims.grid[2] != (unsigned)c->clusters) {
        fprintf(stderr, "fmodel: the host sized %u clusters, the case asks for %d\n", dims.grid[2],
                c->clusters);
        return 2;
    }
    uint32_t slots = dims.token_slots;
    void *ws = zalloc(jit__tc_workspace_bytes(slots));
    jit__driver_t drv;
    memset(&drv, 0, sizeof(drv));
    drv.cuTensorMapEncodeTiled = fm_encode_tiled;
    jit_operands_t ops;
    jit_operands_init(&ops);
    ops.a = a;
    ops.b = b;
    ops.scale_a = sfa;
    ops.scale_b = sfb;
    ops.residual = c->epi == JIT_EPILOGUE_LINEAR_ADD ? res : NULL;
    ops.d = dout;
    jit__tc_shape_t shape = {m, n, k, 0, 0, 0};
    jit__tc_params_t params;
    const float alpha = 0.75f;
    if (jit__tc_params_build(&drv, &plan, &shape, &ops, alpha, 0, ws, slots, &params, &d) !=
        JIT_OK) {
        fprintf(stderr, "fmodel: parameters: %s\n", d.msg);
        return 2;
    }
    fm_launch_t L;
    memset(&L, 0, sizeof(L));
    /* With a fallback shape, CLUSTER_DIMENSION is the fallback and PREFERRED_CLUSTER_DIMENSION
     * the preferred one (jit__tc_launch_config). */
    int pref = dims.preferred_cluster[0] != 0;
    for (int i = 0; i < 3; i++)
        L.grid[i] = dims.grid[i];
    for (int i = 0; i < 2; i++) {
        L.cluster[i] = pref ? dims.preferred_cluster[i] : dims.cluster[i];
        L.fb_cluster[i] = pref ? dims.cluster[i] : 0;
    }
    L.fb_regions = (unsigned)c->fallback;
    L.threads = (unsigned)plan.threads;
    L.smem_bytes = plan.smem_bytes;
    L.arch = !strcmp(c->arch, "sm_107a") ? 107 : !strcmp(c->arch, "sm_103a") ? 103 : 100;
    L.entry = entry;
    L.params = &params;
    L.seed = seed;
    L.yield_prob = yield_prob;
    L.verbose = verbose;
    static const char *const buf_names[JIT_TC_BUF_COUNT] = {
        "barriers", "TMEM address", "A", "B", "SFA", "SFB", "C staging"};
    for (int i = 0; i < JIT_TC_BUF_COUNT; i++) {
        const jit__tc_smem_buffer_t *bb = &tc->smem.buffers[i];
        fm_region_t r = {buf_names[i], bb->offset, bb->stage_bytes, (uint32_t)bb->count};
        L.smem_regions[L.n_smem_regions++] = r;
    }
    for (int i = 0; i < tc->tmem.acc_stages; i++) {
        fm_region_t r = {i ? "accumulator stage 1" : "accumulator stage 0",
                         (uint32_t)tc->tmem.acc[i].first_column, (uint32_t)tc->tmem.acc[i].columns,
                         1};
        L.tmem_regions[L.n_tmem_regions++] = r;
    }
    fm_region_t sfa_cols = {"SFA scale columns", (uint32_t)tc->tmem.sfa_first_column,
                            (uint32_t)tc->tmem.sfa_columns, 1};
    fm_region_t sfb_cols = {"SFB scale columns", (uint32_t)tc->tmem.sfb_first_column,
                            (uint32_t)tc->tmem.sfb_columns, 1};
    L.tmem_regions[L.n_tmem_regions++] = sfa_cols;
    L.tmem_regions[L.n_tmem_regions++] = sfb_cols;
    if (verbose)
        fprintf(stderr,
                "fmodel: %s %s cta_group::%d tile %dx%dx%d, %d stages, cluster %dx%d (fallback "
                "%dx%d) x %d, M %lld N %lld K %lld\n",
                c->arch, c->fmt, tc->cta_group, plan.tile_m, plan.tile_n, plan.tile_k,
                tc->smem.stages, plan.cluster_m, plan.cluster_n, plan.fallback_cluster_m,
                plan.fallback_cluster_n, c->clusters, (long long)m, (long long)n, (long long)k);
    /* The kernel's last CTA resets the workspace (the tail reset), so a second launch over the
     * same workspace must run as the first: `launches` > 1 checks that, and every launch must
     * leave the workspace zeroed. */
    int rc = 0;
    size_t ws_bytes = jit__tc_workspace_bytes(slots);
    for (int l = 0; l < c->launches; l++) {
        memset(dout, 0xFF, d_bytes + guard);
        L.seed = seed + (uint64_t)l;
        rc |= fm_run(&L);
        if (rc & 2)
            return 2;
        for (size_t i = 0; i < ws_bytes; i++)
            if (((const uint8_t *)ws)[i]) {
                fprintf(
                    stderr,
                    "fmodel: FAIL: launch %d left workspace byte %zu non-zero (no tail reset)\n",
                    l + 1, i);
                return 1;
            }
    }

    jit__ref_blockscaled(&spec, m, a, lda, b, ldb, sfa, sfb,
                         c->epi == JIT_EPILOGUE_LINEAR_ADD ? res : NULL, n, alpha, ref, mag);
    int64_t bad = 0;
    double worst = 0;
    for (int64_t r = 0; r < m; r++)
        for (int64_t j = 0; j < nout; j++) {
            size_t i = (size_t)(r * nout + j);
            double got;
            if (ob == 4) {
                float f;
                memcpy(&f, dout + 4 * i, 4);
                got = f;
            } else {
                uint16_t u;
                memcpy(&u, dout + 2 * i, 2);
                got = bf16_value(u);
            }
            /* BF16: the library's bound (half an ulp of the output rounding plus FP32
             * accumulation). FP32: the same accumulation term, the output rounding at 2^-20 of
             * |ref| instead of BF16's 2^-8, so a small error cannot hide in a BF16-sized bound. */
            double tol = ob == 4 ? ldexp(fabs(ref[i]), -20) + 1e-5 * mag[i] + ldexp(1.0, -100)
                                 : jit__ref_tolerance(ref[i], mag[i]);
            double err = fabs(got - ref[i]);
            if (!(err <= tol)) {
                if (bad < 5)
                    fprintf(stderr,
                            "fmodel: D[%lld][%lld] = %.8g, reference %.8g (tolerance %.3g)\n",
                            (long long)r, (long long)j, got, ref[i], tol);
                bad++;
            } else if (tol > 0 && err / tol > worst) {
                worst = err / tol;
            }
        }
    for (size_t i = 0; i < guard; i++)
        if (dout[d_bytes + i] != 0xFF) {
            fprintf(stderr, "fmodel: a store wrote past the end of D (byte %zu)\n", i);
            bad++;
            break;
        }
    printf("fmodel: %s: %lld of %lld outputs outside tolerance (worst inside: %.2f of it)%s\n",
           bad ? "FAIL" : (rc ? "HAZARDS" : "ok"), (long long)bad, (long long)(m * nout), worst,
           rc ? ", hazards reported" : "");
    free(a);
    free(b);
    free(sfa);
    free(sfb);
    free(res);
    free(dout);
    free(ref);
    free(mag);
    free(ws);
    return bad || rc ? 1 : 0;
}

int main(int argc, char **argv) {
    if (argc < 4) {
        fprintf(stderr, "usage: fmodel gen CASE OUT.cu | fmodel run CASE KERNEL.so [--seed S] "
                        "[--yield P] [--verbose]\n");
        return 2;
    }
    fm_case_t c;
    if (!parse_case(argv[2], &c))
        return 2;
    if (!strcmp(argv[1], "gen"))
        return cmd_gen(&c, argv[3]);
    if (strcmp(argv[1], "run")) {
        fprintf(stderr, "fmodel: unknown command %s\n", argv[1]);
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
            fprintf(stderr, "fmodel: unknown option %s\n", argv[i]);
            return 2;
        }
    }
    return cmd_run(&c, argv[3], seed, yield_prob, verbose);
}
