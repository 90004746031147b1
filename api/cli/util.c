/*
 * Option, number and word parsing for the verbs, and the error printers. Every word goes
 * through the library's parsers (jit_*_parse, jit__arch_find) so the command line accepts
 * exactly what the shape list and the API accept; this file only adds which words make sense
 * for each option and lists them when a word is wrong.
 */
#include "cli.h"

#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "arch.h"

void jit__cli_error(const char *fmt, ...) {
    char msg[2048];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    fprintf(stderr, "jitgemm: error: %s\n", msg);
}

int jit__cli_usage(const char *verb, const char *fmt, ...) {
    char msg[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    if (verb) {
        fprintf(stderr, "jitgemm: error: %s: %s\n", verb, msg);
        fprintf(stderr, "Try 'jitgemm %s --help'.\n", verb);
    } else {
        fprintf(stderr, "jitgemm: error: %s\n", msg);
        fprintf(stderr, "Try 'jitgemm --help'.\n");
    }
    return JIT_CLI_USAGE;
}

int jit__cli_wants_help(int argc, char **argv) {
    for (int i = 0; i < argc; i++) {
        if (!strcmp(argv[i], "--"))
            return 0;
        if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h"))
            return 1;
    }
    return 0;
}

static const jit__cli_opt_t *find_opt(const jit__cli_opt_t *opts, size_t n, const char *name,
                                      size_t len) {
    for (size_t i = 0; i < n; i++)
        if (strlen(opts[i].name) == len && !strncmp(opts[i].name, name, len))
            return &opts[i];
    return NULL;
}

int jit__cli_parse(const char *verb, int argc, char **argv, const jit__cli_opt_t *opts,
                   size_t n_opts, const char **pos, size_t max_pos, size_t *n_pos) {
    return jit__cli_parse_multi(verb, argc, argv, opts, n_opts, NULL, 0, pos, max_pos, n_pos);
}

static jit__cli_multi_t *find_multi(jit__cli_multi_t *multi, size_t n, const char *name,
                                    size_t len) {
    for (size_t i = 0; i < n; i++)
        if (strlen(multi[i].name) == len && !strncmp(multi[i].name, name, len))
            return &multi[i];
    return NULL;
}

int jit__cli_parse_multi(const char *verb, int argc, char **argv, const jit__cli_opt_t *opts,
                         size_t n_opts, jit__cli_multi_t *multi, size_t n_multi, const char **pos,
                         size_t max_pos, size_t *n_pos) {
    int options_done = 0;
    *n_pos = 0;
    for (int i = 0; i < argc; i++) {
        const char *arg = argv[i];
        if (!options_done && !strcmp(arg, "--")) {
            options_done = 1;
            continue;
        }
        if (options_done || arg[0] != '-' || !strcmp(arg, "-")) {
            if (*n_pos >= max_pos)
                return max_pos == 0
                           ? jit__cli_usage(verb, "unexpected argument '%s'", arg)
                           : jit__cli_usage(verb, "too many arguments (unexpected '%s')", arg);
            pos[(*n_pos)++] = arg;
            continue;
        }
        if (arg[1] != '-')
            return jit__cli_usage(verb, "unknown option '%s'", arg);
        const char *name = arg + 2;
        const char *eq = strchr(name, '=');
        size_t len = eq ? (size_t)(eq - name) : strlen(name);
        const jit__cli_opt_t *o = find_opt(opts, n_opts, name, len);
        jit__cli_multi_t *m = o ? NULL : find_multi(multi, n_multi, name, len);
        if (m) {
            const char *text = eq ? eq + 1 : i + 1 < argc ? argv[++i] : NULL;
            if (!text)
                return jit__cli_usage(verb, "option '--%s' needs a value (%s)", m->name,
                                      m->metavar);
            if (m->count >= m->max)
                return jit__cli_usage(verb, "option '--%s' given more than %zu times", m->name,
                                      m->max);
            m->items[m->count++] = text;
            continue;
        }
        if (!o)
            return jit__cli_usage(verb, "unknown option '--%.*s'", (int)len, name);
        if (!o->metavar) {
            if (eq)
                return jit__cli_usage(verb, "option '--%s' takes no value", o->name);
            *o->flag = 1;
            continue;
        }
        if (eq) {
            *o->value = eq + 1;
        } else {
            if (i + 1 >= argc)
                return jit__cli_usage(verb, "option '--%s' needs a value (%s)", o->name,
                                      o->metavar);
            *o->value = argv[++i];
        }
    }
    return 0;
}

int jit__cli_int(const char *verb, const char *opt, const char *text, int64_t lo, int64_t hi,
                 int64_t *out) {
    if (!text)
        return 0;
    char *end = NULL;
    errno = 0;
    long long v = strtoll(text, &end, 10);
    if (errno || end == text || *end != '\0' || v < lo || v > hi) {
        if (hi == INT64_MAX)
            return jit__cli_usage(verb, "--%s: expected an integer >= %" PRId64 ", got '%s'", opt,
                                  lo, text);
        return jit__cli_usage(verb,
                              "--%s: expected an integer in [%" PRId64 ", %" PRId64 "], got '%s'",
                              opt, lo, hi, text);
    }
    *out = (int64_t)v;
    return 0;
}

int jit__cli_u64(const char *verb, const char *opt, const char *text, uint64_t *out) {
    if (!text)
        return 0;
    char *end = NULL;
    errno = 0;
    unsigned long long v = strtoull(text, &end, 0);
    if (errno || end == text || *end != '\0' || text[0] == '-')
        return jit__cli_usage(
            verb, "--%s: expected an unsigned integer (decimal or 0x...), got '%s'", opt, text);
    *out = (uint64_t)v;
    return 0;
}

/* "a, b or c" from names. */
static void word_list(const char *const *words, size_t n, char *out, size_t outsz) {
    out[0] = '\0';
    for (size_t i = 0; i < n; i++) {
        size_t used = strlen(out);
        snprintf(out + used, outsz - used, "%s%s", i == 0 ? "" : (i + 1 == n ? " or " : ", "),
                 words[i]);
    }
}

int jit__cli_op(const char *verb, const char *text, jit_epilogue_t *out) {
    static const jit_epilogue_t ok[] = {JIT_EPILOGUE_LINEAR, JIT_EPILOGUE_LINEAR_ADD,
                                        JIT_EPILOGUE_LINEAR_SWIGLU,
                                        JIT_EPILOGUE_QUANTIZE_FP8_1X128};
    enum { N_OPS = sizeof(ok) / sizeof(ok[0]) };
    if (!text)
        return 0;
    jit_epilogue_t e = JIT_EPILOGUE_NONE;
    if (jit_epilogue_parse(text, &e) == JIT_OK)
        for (size_t i = 0; i < N_OPS; i++)
            if (ok[i] == e) {
                *out = e;
                return 0;
            }
    const char *names[N_OPS];
    char list[128];
    for (size_t i = 0; i < N_OPS; i++)
        names[i] = jit_epilogue_name(ok[i]);
    word_list(names, N_OPS, list, sizeof(list));
    return jit__cli_usage(verb, "--op: unknown op '%s' (expected %s)", text, list);
}

static int dtype_in(const char *verb, const char *opt, const char *text, const jit_dtype_t *ok,
                    size_t n, jit_dtype_t *out) {
    if (!text)
        return 0;
    jit_dtype_t t = JIT_DTYPE_NONE;
    if (jit_dtype_parse(text, &t) == JIT_OK)
        for (size_t i = 0; i < n; i++)
            if (ok[i] == t) {
                *out = t;
                return 0;
            }
    const char *names[8];
    char list[128];
    for (size_t i = 0; i < n && i < 8; i++)
        names[i] = jit_dtype_name(ok[i]);
    word_list(names, n, list, sizeof(list));
    return jit__cli_usage(verb, "--%s: unknown dtype '%s' (expected %s)", opt, text, list);
}

int jit__cli_operand_dtype(const char *verb, const char *opt, const char *text, jit_dtype_t *out) {
    static const jit_dtype_t ok[] = {JIT_DTYPE_E4M3, JIT_DTYPE_E5M2, JIT_DTYPE_E2M1};
    return dtype_in(verb, opt, text, ok, 3, out);
}

int jit__cli_out_dtype(const char *verb, const char *text, jit_dtype_t *out) {
    static const jit_dtype_t ok[] = {JIT_DTYPE_BF16, JIT_DTYPE_F32};
    return dtype_in(verb, "out-dtype", text, ok, 2, out);
}

int jit__cli_scales(const char *verb, const char *text, jit_scale_mode_t *out) {
    static const jit_scale_mode_t ok[] = {JIT_SCALE_ROW,      JIT_SCALE_UE8M0_32,
                                          JIT_SCALE_UE4M3_16, JIT_SCALE_UE5M3_16,
                                          JIT_SCALE_UE5M3_32, JIT_SCALE_BLOCK_1X128_128X128};
    enum { N_OK = sizeof(ok) / sizeof(ok[0]) };
    if (!text)
        return 0;
    jit_scale_mode_t s = JIT_SCALE_NONE;
    if (jit_scale_mode_parse(text, &s) == JIT_OK && s != JIT_SCALE_NONE) {
        *out = s;
        return 0;
    }
    const char *names[N_OK];
    char list[160];
    for (size_t i = 0; i < N_OK; i++)
        names[i] = jit_scale_mode_name(ok[i]);
    word_list(names, N_OK, list, sizeof(list));
    return jit__cli_usage(verb, "--scales: unknown scale mode '%s' (expected %s)", text, list);
}

int jit__cli_arch(const char *verb, const char *text) {
    if (!text || jit__arch_find(text))
        return 0;
    int n = 0;
    const jit__arch_profile_t *all = jit__arch_all(&n);
    const char *names[16];
    char list[160];
    for (int i = 0; i < n && i < 16; i++)
        names[i] = all[i].name;
    word_list(names, (size_t)(n < 16 ? n : 16), list, sizeof(list));
    return jit__cli_usage(verb, "--arch: unknown architecture '%s' (known: %s)", text, list);
}

int jit__cli_context(const char *cache_dir, const char *arch, int sm_count, jit_context_t **out) {
    return jit__cli_context_mode(cache_dir, arch, sm_count, JIT_COMPILE_ALWAYS, out);
}

int jit__cli_context_mode(const char *cache_dir, const char *arch, int sm_count,
                          jit_compile_mode_t mode, jit_context_t **out) {
    jit_context_options_t opt;
    jit_context_options_init(&opt);
    opt.cache_dir = cache_dir;
    opt.arch = arch;
    opt.sm_count = sm_count;
    opt.compile_mode = mode;
    *out = NULL;
    jit_status_t st = jit_context_create(&opt, out);
    if (st != JIT_OK) {
        const char *msg = jit_last_error(NULL);
        jit__cli_error("%s", msg && *msg ? msg : jit_status_string(st));
        if (st == JIT_NO_GPU && !arch)
            fprintf(stderr, "Without a GPU, name the target with --arch (e.g. --arch sm_90a).\n");
        return JIT_CLI_FAILED;
    }
    return 0;
}

/* The quantizer's problem: the op fixes every format and there is no B, so only --k and
 * --tokens describe it; a GEMM option given with it is a mistake worth naming. */
static int quantize_problem(const char *verb, const jit__cli_problem_args_t *args,
                            jit_problem_t *p) {
    static const char *const gemm_only[] = {"n", "a", "b", "scales", "out-dtype"};
    const char *given[] = {args->n, args->a, args->b, args->scales, args->out_dtype};
    for (size_t i = 0; i < 5; i++)
        if (given[i])
            return jit__cli_usage(verb,
                                  "--%s describes a GEMM; --op quantize_fp8_1x128 takes --k and "
                                  "--tokens only (BF16 in, E4M3 and FP32 1x128 scales out)",
                                  gemm_only[i]);
    int rc;
    if ((rc = jit__cli_int(verb, "k", args->k, 1, INT64_MAX, &p->k)) ||
        (rc = jit__cli_int(verb, "tokens", args->tokens, 1, INT64_MAX, &p->m)))
        return rc;
    return 0;
}

int jit__cli_problem(const char *verb, const jit__cli_problem_args_t *args, jit_problem_t *p) {
    jit_problem_init(p);
    int rc;
    if (!args->op)
        return jit__cli_usage(verb, "missing required option --op");
    if ((rc = jit__cli_op(verb, args->op, &p->epilogue)))
        return rc;
    const int quantize = p->epilogue == JIT_EPILOGUE_QUANTIZE_FP8_1X128;
    static const char *const required[] = {"n", "k", "tokens"};
    const char *given[] = {args->n, args->k, args->tokens};
    for (size_t i = quantize ? 1 : 0; i < 3; i++)
        if (!given[i])
            return jit__cli_usage(verb, "missing required option --%s", required[i]);
    if (quantize)
        return quantize_problem(verb, args, p);
    if ((rc = jit__cli_int(verb, "n", args->n, 1, INT64_MAX, &p->n)) ||
        (rc = jit__cli_int(verb, "k", args->k, 1, INT64_MAX, &p->k)) ||
        (rc = jit__cli_int(verb, "tokens", args->tokens, 1, INT64_MAX, &p->m)) ||
        (rc = jit__cli_operand_dtype(verb, "a", args->a, &p->a_dtype)) ||
        (rc = jit__cli_operand_dtype(verb, "b", args->b, &p->b_dtype)) ||
        (rc = jit__cli_scales(verb, args->scales, &p->scale_mode)) ||
        (rc = jit__cli_out_dtype(verb, args->out_dtype, &p->out_dtype)))
        return rc;
    if (!args->groups && (args->layout || args->expected_m))
        return jit__cli_usage(verb, "--%s describes a grouped problem: add --groups G",
                              args->layout ? "layout" : "expected-m");
    if (!args->groups)
        return 0;
    p->layout = JIT_GROUPS_CONTIGUOUS;
    if ((rc = jit__cli_int(verb, "groups", args->groups, 1, JIT_MAX_GROUPS, &p->groups)) ||
        (rc = jit__cli_int(verb, "expected-m", args->expected_m, 1, INT32_MAX, &p->expected_m)))
        return rc;
    if (args->layout && jit_group_layout_parse(args->layout, &p->layout) != JIT_OK)
        return jit__cli_usage(verb, "--layout %s: expected contiguous or masked", args->layout);
    return 0;
}

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

double jit__cli_median(double *v, size_t n) {
    if (n == 0)
        return 0.0;
    qsort(v, n, sizeof(*v), cmp_double);
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

double jit__cli_now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

void jit__cli_format_bytes(uint64_t bytes, char *out, size_t outsz) {
    if (bytes >= ((uint64_t)1 << 30))
        snprintf(out, outsz, "%.1f GiB", (double)bytes / (double)((uint64_t)1 << 30));
    else if (bytes >= (1u << 20))
        snprintf(out, outsz, "%.1f MiB", (double)bytes / (1 << 20));
    else if (bytes >= 1024)
        snprintf(out, outsz, "%.1f KiB", (double)bytes / 1024);
    else
        snprintf(out, outsz, "%llu B", (unsigned long long)bytes);
}

void jit__cli_format_time(int64_t t, char *out, size_t outsz) {
    time_t tt = (time_t)t;
    struct tm tm;
    if (t <= 0 || !localtime_r(&tt, &tm) || !strftime(out, outsz, "%Y-%m-%d %H:%M:%S", &tm))
        snprintf(out, outsz, "-");
}
