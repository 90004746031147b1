/*
 * The tcgen05 compile matrix: every variant of formats x arch x cta_group x tile N x B-reuse
 * is planned, generated and compiled (NVRTC -> PTX -> ptxas via nvJitLink), and one Markdown
 * table row per variant gives stages, SMEM, TMEM, registers, spills and compile time. This is
 * the static verification of the Blackwell/Rubin kernels: no such GPU was available, so none
 * of them has been executed.
 *
 * Toolchains: sm_100a and sm_103a are compiled with the newest NVRTC older than 13.4 (the
 * system toolkit) when one is installed; sm_107a natively with the newest NVRTC that lists it
 * (13.4 or later), and again as the fallback build (sm_100f cubin, source also assembled for
 * sm_100a) with the older NVRTC. A variant the planner refuses is listed with its reason; a
 * compile error or a spill makes the exit status 1.
 *
 *   compile_matrix [--jobs J] [--n N] [--k K] [--arch sm_107a] [--no-fallback]
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "compile.h"
#include "family.h"
#include "key.h"
#include "plan.h"
#include "tcgen05/tcgen05.h"
#include "toolchain.h"

typedef struct fmt {
    const char *name;
    jit_dtype_t a, b;
    jit_scale_mode_t scales;
} fmt_t;

static const fmt_t k_formats[] = {
    {"mxfp8 e4m3", JIT_DTYPE_E4M3, JIT_DTYPE_E4M3, JIT_SCALE_UE8M0_32},
    {"mxfp8 e5m2", JIT_DTYPE_E5M2, JIT_DTYPE_E5M2, JIT_SCALE_UE8M0_32},
    {"mxfp4", JIT_DTYPE_E2M1, JIT_DTYPE_E2M1, JIT_SCALE_UE8M0_32},
    {"nvfp4", JIT_DTYPE_E2M1, JIT_DTYPE_E2M1, JIT_SCALE_UE4M3_16},
    {"e4m3 x e2m1", JIT_DTYPE_E4M3, JIT_DTYPE_E2M1, JIT_SCALE_UE8M0_32},
    {"fp4 ue5m3/16", JIT_DTYPE_E2M1, JIT_DTYPE_E2M1, JIT_SCALE_UE5M3_16},
    {"fp4 ue5m3/32", JIT_DTYPE_E2M1, JIT_DTYPE_E2M1, JIT_SCALE_UE5M3_32},
};
#define N_FORMATS (int)(sizeof(k_formats) / sizeof(k_formats[0]))
static const int k_tile_n[] = {64, 128, 192, 256};

typedef struct job {
    const jit__arch_profile_t *arch;
    const fmt_t *fmt;
    int cta_group, tile_n, breuse;
    int fallback; /* 1: the sm_107a fallback build */
    const jit__toolchain_t *tc;
    /* results */
    int planned, generated, compiled, checked;
    jit_status_t gen_status;
    jit__plan_t plan;
    jit__compiled_t out;
    char error[256];
} job_t;

static job_t *g_jobs;
static int g_n_jobs, g_next;
static pthread_mutex_t g_lock = PTHREAD_MUTEX_INITIALIZER;
static int64_t g_n = 4096, g_k = 4096;

static void first_line(char *dst, size_t n, const char *src) {
    snprintf(dst, n, "%s", src ? src : "");
    char *nl = strchr(dst, '\n');
    if (nl)
        *nl = '\0';
    for (char *p = dst; *p; p++)
        if (*p == '|')
            *p = '/';
}

static void run_job(job_t *j) {
    jit__gemm_spec_t spec = {.n = g_n,
                             .k = g_k,
                             .a = j->fmt->a,
                             .b = j->fmt->b,
                             .out = JIT_DTYPE_BF16,
                             .scales = j->fmt->scales,
                             .epilogue = JIT_EPILOGUE_LINEAR};
    jit__tc_variant_t v = {j->cta_group, j->tile_n, j->breuse ? 1 : -1};
    jit__diag_t d;
    jit__diag_init(&d);
    if (jit__plan_tc_make_variant(&spec, 5, j->arch->default_sm_count, j->arch, &v, &j->plan, &d) !=
        JIT_OK) {
        first_line(j->error, sizeof(j->error), d.msg);
        jit__diag_clear(&d);
        return;
    }
    j->planned = 1;
    if (!j->tc) {
        snprintf(j->error, sizeof(j->error), "no NVRTC that targets %s found",
                 j->arch->native_target);
        return;
    }
    const char *target = j->fallback ? j->arch->fallback_target : j->arch->native_target;
    jit__key_t key;
    char *src = NULL;
    /* The key runs the generator too: a build the generator refuses fails there. */
    j->gen_status = jit__key_make(&j->plan, target, j->fallback, &key, &d);
    if (j->gen_status == JIT_OK)
        j->gen_status = jit__generate(&j->plan, &key, &src, &d);
    if (j->gen_status != JIT_OK) {
        if (j->gen_status == JIT_TOOLCHAIN_NOT_FOUND && strstr(d.msg, "exclusive"))
            snprintf(j->error, sizeof(j->error),
                     "fallback refused: %d TMEM columns need tcgen05.alloc.exclusive (PTX 9.4)",
                     jit__tc_of(&j->plan)->tmem.allocated_columns);
        else if (j->gen_status == JIT_TOOLCHAIN_NOT_FOUND && strstr(d.msg, "K="))
            snprintf(
                j->error, sizeof(j->error),
                "fallback refused: an sm_100f cubin runs K=%d MMAs, the plan's idesc asks "
                "K=%d",
                jit__tc_instr_k(jit__arch_find(j->arch->check_target), jit__tc_of(&j->plan)->kind),
                jit__tc_of(&j->plan)->instr_k);
        else
            first_line(j->error, sizeof(j->error), d.msg);
        jit__diag_clear(&d);
        return;
    }
    j->generated = 1;
    if (jit__compile(j->tc, src, "tcgen05.cu", target, JIT__COMPILE_CUBIN, &j->out, &d) != JIT_OK) {
        first_line(j->error, sizeof(j->error), d.log && *d.log ? d.log : d.msg);
        jit__diag_clear(&d);
        free(src);
        return;
    }
    j->compiled = 1;
    if (j->fallback && j->arch->check_target) {
        /* The fallback's check: the same source assembles for the check target too. */
        jit__compiled_t chk;
        memset(&chk, 0, sizeof(chk));
        if (jit__compile(j->tc, src, "tcgen05.cu", j->arch->check_target, JIT__COMPILE_CUBIN, &chk,
                         &d) != JIT_OK) {
            first_line(j->error, sizeof(j->error), d.log && *d.log ? d.log : d.msg);
            j->compiled = 0;
        } else {
            j->checked = 1;
        }
        jit__compiled_free(&chk);
    }
    jit__diag_clear(&d);
    free(src);
}

static void *worker(void *arg) {
    (void)arg;
    for (;;) {
        pthread_mutex_lock(&g_lock);
        int i = g_next < g_n_jobs ? g_next++ : -1;
        pthread_mutex_unlock(&g_lock);
        if (i < 0)
            return NULL;
        run_job(&g_jobs[i]);
    }
}

static void add_job(const jit__arch_profile_t *arch, const fmt_t *f, int cg, int tn, int breuse,
                    int fallback, const jit__toolchain_t *tc) {
    job_t *j = &g_jobs[g_n_jobs++];
    memset(j, 0, sizeof(*j));
    j->arch = arch;
    j->fmt = f;
    j->cta_group = cg;
    j->tile_n = tn;
    j->breuse = breuse;
    j->fallback = fallback;
    j->tc = tc;
}

static const char *tc_name(const jit__toolchain_t *tc, char *buf, size_t n) {
    if (!tc)
        return "none";
    snprintf(buf, n, "NVRTC %d.%d / nvJitLink %d.%d", tc->id.nvrtc_major, tc->id.nvrtc_minor,
             tc->id.nvjitlink_major, tc->id.nvjitlink_minor);
    return buf;
}

int main(int argc, char **argv) {
    int jobs = (int)sysconf(_SC_NPROCESSORS_ONLN);
    int with_fallback = 1;
    const char *only_arch = NULL;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--jobs") && i + 1 < argc)
            jobs = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--n") && i + 1 < argc)
            g_n = atoll(argv[++i]);
        else if (!strcmp(argv[i], "--k") && i + 1 < argc)
            g_k = atoll(argv[++i]);
        else if (!strcmp(argv[i], "--arch") && i + 1 < argc)
            only_arch = argv[++i];
        else if (!strcmp(argv[i], "--no-fallback"))
            with_fallback = 0;
        else {
            fprintf(stderr,
                    "usage: %s [--jobs J] [--n N] [--k K] [--arch sm_100a|sm_103a|sm_107a] "
                    "[--no-fallback]\n",
                    argv[0]);
            return 2;
        }
    }
    if (jobs < 1)
        jobs = 1;

    jit__diag_t d;
    jit__diag_init(&d);
    const jit__toolchain_t *newest = NULL;
    if (jit__toolchain_get(NULL, &newest, &d) != JIT_OK) {
        fprintf(stderr, "compile_matrix: %s\n", d.msg);
        return 1;
    }
    const jit__toolchain_t *older = jit__toolchain_newest_up_to(13, 3);
    const jit__toolchain_t *blackwell = older ? older : newest;
    const jit__toolchain_t *rubin = jit__toolchain_supports(newest, 107) ? newest : NULL;

    static const char *const archs[] = {"sm_100a", "sm_103a", "sm_107a"};
    g_jobs = calloc(1024, sizeof(job_t));
    for (int a = 0; a < 3; a++) {
        if (only_arch && strcmp(only_arch, archs[a]))
            continue;
        const jit__arch_profile_t *ap = jit__arch_find(archs[a]);
        int rubin_arch = ap->fallback_target != NULL;
        for (int pass = 0; pass < (rubin_arch && with_fallback ? 2 : 1); pass++)
            for (int f = 0; f < N_FORMATS; f++)
                for (int cg = 1;
                     cg <= 2 && (ap->has_ue5m3 || k_formats[f].scales < JIT_SCALE_UE5M3_16); cg++)
                    for (int t = 0; t < 4; t++)
                        for (int br = 0; br <= (rubin_arch && cg == 2 ? 1 : 0); br++) {
                            const jit__toolchain_t *tc =
                                !rubin_arch ? blackwell : (pass ? blackwell : rubin);
                            add_job(ap, &k_formats[f], cg, k_tile_n[t], br, pass, tc);
                        }
    }

    pthread_t th[64];
    if (jobs > 64)
        jobs = 64;
    for (int i = 0; i < jobs; i++)
        pthread_create(&th[i], NULL, worker, NULL);
    for (int i = 0; i < jobs; i++)
        pthread_join(th[i], NULL);

    char b1[64], b2[64], date[32];
    time_t now = time(NULL);
    strftime(date, sizeof(date), "%Y-%m-%d", gmtime(&now));
    printf("tcgen05 compile matrix, %s, N=%lld K=%lld, epilogue linear, BF16 out, token band 5 (M > 1024).\n",
           date, (long long)g_n, (long long)g_k);
    printf("sm_100a/sm_103a and the sm_107a fallback: %s; sm_107a native: %s.\n",
           tc_name(blackwell, b1, sizeof(b1)), tc_name(rubin, b2, sizeof(b2)));
    printf("Compiled and assembled only: no Blackwell or Rubin GPU was available, so no "
           "variant has been executed. UE5M3 rows exist for sm_107a only (the planner refuses "
           "them elsewhere).\n\n");
    printf("| arch | target | format | cta | N | B-reuse | stages | SMEM B | TMEM used/alloc | "
           "regs | spills | result |\n");
    printf("|---|---|---|---|---|---|---|---|---|---|---|---|\n");
    int compiled = 0, failed = 0, refused = 0, spilled = 0, stacked = 0;
    double seconds = 0;
    for (int i = 0; i < g_n_jobs; i++) {
        job_t *j = &g_jobs[i];
        const char *target = j->fallback ? j->arch->fallback_target : j->arch->native_target;
        printf("| %s | %s | %s | %d | %d | %s |", j->arch->name, target, j->fmt->name, j->cta_group,
               j->tile_n, j->breuse ? "on" : "off");
        if (!j->planned) {
            refused++;
            printf(" | | | | | not planned: %s |\n", j->error);
            continue;
        }
        printf(" %d | %u | %d/%d |", j->plan.stages, j->plan.smem_bytes,
               jit__tc_of(&j->plan)->tmem.used_columns,
               jit__tc_of(&j->plan)->tmem.allocated_columns);
        if (!j->compiled) {
            if (j->generated || !j->tc) {
                failed += j->generated;
                printf(" | | %s: %s |\n", j->generated ? "COMPILE FAILED" : "skipped", j->error);
            } else {
                refused++;
                printf(" | | %s |\n", j->error);
            }
            continue;
        }
        int spills = j->out.spill_stores + j->out.spill_loads;
        compiled++;
        spilled += spills > 0;
        stacked += j->out.stack_bytes > 0;
        seconds += j->out.seconds;
        printf(" %d | %d | %s%s, %.2f s |\n", j->out.registers, spills, spills ? "SPILLS" : "ok",
               j->checked ? " (+ sm_100a check)" : "", j->out.seconds);
    }
    printf("\n%d variants compiled (%.1f s of NVRTC + nvJitLink), %d with spills, %d with a stack "
           "frame, %d compile failures, %d not planned or refused with a reason.\n",
           compiled, seconds, spilled, stacked, failed, refused);
    for (int i = 0; i < g_n_jobs; i++)
        jit__compiled_free(&g_jobs[i].out);
    free(g_jobs);
    return failed || spilled ? 1 : 0;
}
