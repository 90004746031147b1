/*
 * What every benchmark shares: a monotonic clock, the median, scratch cache directories, the
 * command line every benchmark accepts (--commit C, --quiet) and the closing JSON record. CMake
 * makes an executable of every .c file in bench/, so the helpers are static inline here rather
 * than in a .c file that would need a main of its own.
 *
 * The record is one JSON line, the last line a benchmark prints: {"bench", "commit", "date",
 * "host_cores", then the benchmark's own fields, "target", "pass"}. The commit comes from
 * --commit or $JITGEMM_COMMIT (scripts/gpu-check.sh passes `git rev-parse --short HEAD`), so a
 * figure in docs/performance.md or docs/history/ can always be traced to the code that produced
 * it.
 */
#ifndef JIT_BENCH_COMMON_H
#define JIT_BENCH_COMMON_H

/* nftw, mkdtemp and gmtime_r come with _GNU_SOURCE, which the build defines for every target. */
#include <errno.h>
#include <ftw.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/wait.h>
#include <unistd.h>

static inline double bench_now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static inline int bench_cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* Median of v[0..n); sorts v. */
static inline double bench_median(double *v, size_t n) {
    if (n == 0)
        return 0.0;
    qsort(v, n, sizeof(*v), bench_cmp_double);
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

/* A fresh empty directory under $TMPDIR (or /tmp), malloc'd path; NULL on failure. */
static inline char *bench_mkdtemp(const char *tag) {
    const char *tmp = getenv("TMPDIR");
    char path[4096];
    snprintf(path, sizeof(path), "%s/jitgemm-bench-%s-XXXXXX", tmp && *tmp ? tmp : "/tmp", tag);
    if (!mkdtemp(path))
        return NULL;
    return strdup(path);
}

static inline int bench_rm_one(const char *path, const struct stat *sb, int flag, struct FTW *ftw) {
    (void)sb;
    (void)flag;
    (void)ftw;
    remove(path);
    return 0;
}

/* rm -rf path (depth first, so directories are empty when removed). */
static inline void bench_rmtree(const char *path) {
    if (path)
        nftw(path, bench_rm_one, 16, FTW_DEPTH | FTW_PHYS);
}

typedef struct bench_args {
    const char *commit;
    int quiet; /* only the JSON line */
} bench_args_t;

/* Take --commit C and --quiet out of argv (compacting it); the rest is the benchmark's own. */
static inline void bench_args_parse(int *argc, char **argv, bench_args_t *a) {
    const char *env = getenv("JITGEMM_COMMIT");
    a->commit = env && *env ? env : "unknown";
    a->quiet = 0;
    int w = 1;
    for (int i = 1; i < *argc; i++) {
        if (!strcmp(argv[i], "--commit") && i + 1 < *argc)
            a->commit = argv[++i];
        else if (!strcmp(argv[i], "--quiet"))
            a->quiet = 1;
        else
            argv[w++] = argv[i];
    }
    *argc = w;
    argv[w] = NULL;
}

/* The record's common head. */
static inline json_t *bench_record(const char *name, const bench_args_t *a) {
    char date[32];
    time_t now = time(NULL);
    struct tm tm;
    gmtime_r(&now, &tm);
    strftime(date, sizeof(date), "%Y-%m-%dT%H:%M:%SZ", &tm);
    json_t *o = json_object();
    json_object_set_new(o, "bench", json_string(name));
    json_object_set_new(o, "commit", json_string(a->commit));
    json_object_set_new(o, "date", json_string(date));
    json_object_set_new(o, "host_cores", json_integer(sysconf(_SC_NPROCESSORS_ONLN)));
    return o;
}

/* Print the record as the last line and free it. */
static inline void bench_emit(json_t *record) {
    char *text = json_dumps(record, JSON_COMPACT | JSON_PRESERVE_ORDER | JSON_REAL_PRECISION(6));
    if (text) {
        printf("%s\n", text);
        free(text);
    }
    fflush(stdout);
    json_decref(record);
}

/* Start argv with its standard output on a pipe; returns the pipe's read end (the caller reads
 * it, closes it and calls bench_wait) and the child in *pid, or -1 with nothing left open. */
static inline int bench_spawn(char *const argv[], pid_t *pid) {
    int fds[2];
    if (pipe(fds) != 0)
        return -1;
    *pid = fork();
    if (*pid < 0) {
        close(fds[0]);
        close(fds[1]);
        return -1;
    }
    if (*pid == 0) {
        dup2(fds[1], STDOUT_FILENO);
        close(fds[0]);
        close(fds[1]);
        execv(argv[0], argv);
        _exit(127);
    }
    close(fds[1]);
    return fds[0];
}

/* Reap a child of bench_spawn: 1 when it exited with status 0, else 0; its raw status in
 * *status. */
static inline int bench_wait(pid_t pid, int *status) {
    *status = 0;
    while (waitpid(pid, status, 0) < 0 && errno == EINTR) {
    }
    return WIFEXITED(*status) && WEXITSTATUS(*status) == 0;
}

/* Run argv (a child process of the benchmark, typically itself with --child) and read the first
 * line it prints into `line`. 0 when it exited with status 0, else -1 with a message naming
 * `who`; `line` holds what was read either way ("" if nothing). */
static inline int bench_run_child(char *const argv[], char *line, size_t linesz, const char *who) {
    line[0] = '\0';
    pid_t pid;
    int fd = bench_spawn(argv, &pid);
    if (fd < 0)
        return -1;
    FILE *f = fdopen(fd, "r");
    if (!f || !fgets(line, (int)linesz, f))
        line[0] = '\0';
    if (f)
        fclose(f);
    else
        close(fd);
    int status;
    if (!bench_wait(pid, &status)) {
        fprintf(stderr, "%s: child failed: %s", who, line[0] ? line : "(no output)\n");
        return -1;
    }
    return 0;
}

#endif
