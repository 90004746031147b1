/*
 * Benchmark 1: cold compile time per specialization (target: median <= 0.5 s on the project's
 * 2-core build machine).
 *
 * Each measured key is compiled from nothing: a new context on a new, empty cache directory,
 * so neither the context's memory nor the disk can answer, and the time covers plan, key,
 * generation, NVRTC, nvJitLink and the atomic publish (jit_inspect with JIT_INSPECT_ENTRY, the
 * same path prewarm takes). The keys differ in N, K, epilogue and token band, and each is
 * checked to be distinct by its key text, so no two measurements share a kernel. One compile of
 * another key runs first and is reported apart: it pays for loading NVRTC into the process,
 * which a serving process pays once, not per kernel.
 *
 *   bench_cold_compile [--arch sm_90a] [--keys 8] [--scales row|128x128] [--commit C] [--quiet]
 *
 * --scales 128x128 times the same shapes with 128x128 block scales (the fp8_block_wgmma family
 * on sm_90a).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench_common.h"
#include "jitgemm.h"

#define TARGET_SECONDS 0.5

typedef struct shape {
    int64_t n, k, tokens;
    jit_epilogue_t epilogue;
} shape_t;

/* More than the default count, so that --keys can ask for up to this many. */
static const shape_t k_shapes[] = {
    {4096, 4096, 1024, JIT_EPILOGUE_LINEAR},
    {5120, 5120, 1024, JIT_EPILOGUE_LINEAR},
    {5120, 5120, 8, JIT_EPILOGUE_LINEAR},
    {6144, 5120, 4096, JIT_EPILOGUE_LINEAR},
    {5120, 5120, 1024, JIT_EPILOGUE_LINEAR_ADD},
    {8192, 4096, 128, JIT_EPILOGUE_LINEAR_ADD},
    {27648, 5120, 1024, JIT_EPILOGUE_LINEAR_SWIGLU},
    {13824, 4096, 32, JIT_EPILOGUE_LINEAR_SWIGLU},
    {7168, 2048, 512, JIT_EPILOGUE_LINEAR},
    {3072, 8192, 2048, JIT_EPILOGUE_LINEAR_ADD},
    {2048, 7168, 64, JIT_EPILOGUE_LINEAR},
    {11008, 4096, 256, JIT_EPILOGUE_LINEAR_SWIGLU},
};
#define N_SHAPES (sizeof(k_shapes) / sizeof(k_shapes[0]))

/* The warm-up key, outside the measured set. */
static const shape_t k_warmup = {1024, 1024, 1024, JIT_EPILOGUE_LINEAR};

typedef struct result {
    double seconds;   /* wall time of jit_inspect(ENTRY) */
    double compile_s; /* NVRTC + nvJitLink, as the manifest entry records it */
    int registers;
    char hash[33];
    char toolchain[16];
    char target[16];
} result_t;

static jit_scale_mode_t g_scales = JIT_SCALE_ROW;

static void problem_of(const shape_t *s, jit_problem_t *p) {
    jit_problem_init(p);
    p->m = s->tokens;
    p->n = s->n;
    p->k = s->k;
    p->epilogue = s->epilogue;
    p->scale_mode = g_scales;
}

static void read_entry(const char *text, result_t *r) {
    json_error_t err;
    json_t *o = json_loads(text, 0, &err);
    if (!o)
        return;
    /* Either the entry itself or an object holding it under "entry". */
    json_t *e = json_object_get(o, "entry") ? json_object_get(o, "entry") : o;
    json_t *v;
    if ((v = json_object_get(e, "compile_seconds")) && json_is_number(v))
        r->compile_s = json_number_value(v);
    if ((v = json_object_get(e, "registers")) && json_is_integer(v))
        r->registers = (int)json_integer_value(v);
    if ((v = json_object_get(e, "hash")) && json_is_string(v))
        snprintf(r->hash, sizeof(r->hash), "%s", json_string_value(v));
    if ((v = json_object_get(e, "target")) && json_is_string(v))
        snprintf(r->target, sizeof(r->target), "%s", json_string_value(v));
    json_t *tc = json_object_get(e, "toolchain");
    if ((v = json_object_get(tc, "nvrtc")) && json_is_string(v))
        snprintf(r->toolchain, sizeof(r->toolchain), "%s", json_string_value(v));
    json_decref(o);
}

/* Compile `s` from nothing. Writes its key text (malloc'd) to *key_text. 0 on success. */
static int cold_compile(const char *arch, const shape_t *s, result_t *r, char **key_text) {
    memset(r, 0, sizeof(*r));
    r->registers = -1;
    char *dir = bench_mkdtemp("cold");
    if (!dir) {
        perror("bench_cold_compile: mkdtemp");
        return -1;
    }
    int rc = -1;
    jit_context_options_t opt;
    jit_context_options_init(&opt);
    opt.cache_dir = dir;
    opt.arch = arch;
    jit_context_t *ctx = NULL;
    jit_problem_t p;
    problem_of(s, &p);
    char *entry = NULL;
    if (jit_context_create(&opt, &ctx) != JIT_OK) {
        fprintf(stderr, "bench_cold_compile: context: %s\n", jit_last_error(NULL));
        goto done;
    }
    if (jit_inspect(ctx, &p, JIT_INSPECT_KEY, key_text) != JIT_OK) {
        fprintf(stderr, "bench_cold_compile: key: %s\n", jit_last_error(ctx));
        goto done;
    }
    double t0 = bench_now();
    jit_status_t st = jit_inspect(ctx, &p, JIT_INSPECT_ENTRY, &entry);
    r->seconds = bench_now() - t0;
    if (st != JIT_OK) {
        fprintf(stderr, "bench_cold_compile: compile n=%lld k=%lld %s: %s\n", (long long)s->n,
                (long long)s->k, jit_epilogue_name(s->epilogue), jit_last_error(ctx));
        goto done;
    }
    read_entry(entry, r);
    rc = 0;
done:
    jit_free(entry);
    jit_context_destroy(ctx);
    bench_rmtree(dir);
    free(dir);
    return rc;
}

int main(int argc, char **argv) {
    bench_args_t ba;
    bench_args_parse(&argc, argv, &ba);
    const char *arch = "sm_90a";
    size_t want = 8;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--arch") && i + 1 < argc) {
            arch = argv[++i];
        } else if (!strcmp(argv[i], "--keys") && i + 1 < argc) {
            want = (size_t)atoi(argv[++i]);
        } else if (!strcmp(argv[i], "--scales") && i + 1 < argc &&
                   jit_scale_mode_parse(argv[i + 1], &g_scales) == JIT_OK) {
            i++;
        } else {
            fprintf(stderr,
                    "usage: %s [--arch A] [--keys N<=%zu] [--scales row|128x128] [--commit C] "
                    "[--quiet]\n",
                    argv[0], N_SHAPES);
            return 2;
        }
    }
    if (want < 1 || want > N_SHAPES) {
        fprintf(stderr, "bench_cold_compile: --keys must be 1..%zu\n", N_SHAPES);
        return 2;
    }

    result_t first;
    char *first_key = NULL;
    if (cold_compile(arch, &k_warmup, &first, &first_key) != 0)
        return 1;

    double times[N_SHAPES], compile_times[N_SHAPES];
    char *keys[N_SHAPES + 1];
    keys[0] = first_key;
    size_t n_keys = 1, n = 0;
    if (!ba.quiet) {
        printf("cold compile per specialization, %s, NVRTC %s, fresh cache per key\n", arch,
               first.toolchain[0] ? first.toolchain : "?");
        printf("first compile in the process (loads NVRTC, not counted): %.3f s\n\n",
               first.seconds);
        printf("%-14s %6s %6s %6s %9s %11s %5s  %s\n", "op", "n", "k", "tokens", "seconds",
               "nvrtc+link", "regs", "key hash");
    }
    for (size_t i = 0; i < N_SHAPES && n < want; i++) {
        result_t r;
        char *key = NULL;
        if (cold_compile(arch, &k_shapes[i], &r, &key) != 0)
            return 1;
        int dup = 0;
        for (size_t j = 0; j < n_keys; j++)
            dup |= !strcmp(keys[j], key);
        if (dup) {
            /* Two shapes the planner maps to one kernel would time a cache hit, not a compile. */
            if (!ba.quiet)
                printf("(n=%lld k=%lld shares a key with an earlier shape; skipped)\n",
                       (long long)k_shapes[i].n, (long long)k_shapes[i].k);
            free(key);
            continue;
        }
        keys[n_keys++] = key;
        times[n] = r.seconds;
        compile_times[n] = r.compile_s;
        n++;
        if (!ba.quiet)
            printf("%-14s %6lld %6lld %6lld %9.3f %11.3f %5d  %.12s\n",
                   jit_epilogue_name(k_shapes[i].epilogue), (long long)k_shapes[i].n,
                   (long long)k_shapes[i].k, (long long)k_shapes[i].tokens, r.seconds, r.compile_s,
                   r.registers, r.hash);
    }
    for (size_t j = 0; j < n_keys; j++)
        free(keys[j]);
    if (n < want) {
        fprintf(stderr, "bench_cold_compile: only %zu distinct keys, %zu asked for\n", n, want);
        return 1;
    }

    double lo = 1e30, hi = 0;
    for (size_t i = 0; i < n; i++) {
        lo = times[i] < lo ? times[i] : lo;
        hi = times[i] > hi ? times[i] : hi;
    }
    double med = bench_median(times, n);
    double med_compile = bench_median(compile_times, n);
    if (!ba.quiet)
        printf("\nmedian %.3f s over %zu keys (min %.3f, max %.3f; NVRTC+nvJitLink median "
               "%.3f s); target <= %.1f s: %s\n",
               med, n, lo, hi, med_compile, TARGET_SECONDS,
               med <= TARGET_SECONDS ? "met" : "NOT met");

    json_t *rec = bench_record("cold_compile", &ba);
    json_object_set_new(rec, "arch", json_string(arch));
    json_object_set_new(rec, "scales", json_string(jit_scale_mode_name(g_scales)));
    json_object_set_new(rec, "target_compiled", json_string(first.target));
    json_object_set_new(rec, "nvrtc", json_string(first.toolchain));
    json_object_set_new(rec, "keys", json_integer((json_int_t)n));
    json_object_set_new(rec, "first_compile_s", json_real(first.seconds));
    json_object_set_new(rec, "median_s", json_real(med));
    json_object_set_new(rec, "min_s", json_real(lo));
    json_object_set_new(rec, "max_s", json_real(hi));
    json_object_set_new(rec, "median_nvrtc_link_s", json_real(med_compile));
    json_object_set_new(rec, "target_s", json_real(TARGET_SECONDS));
    json_object_set_new(rec, "pass", json_boolean(med <= TARGET_SECONDS));
    bench_emit(rec);
    return 0;
}
