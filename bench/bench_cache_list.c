/*
 * Benchmark: what `jitgemm cache list` costs a fresh process as the cache grows (the target,
 * docs/performance.md: <= 0.2 s at 10,000 entries).
 *
 * Three caches are filled to 10, N/10 and N entries (N = --entries) through the cache's own
 * API (jit__cache_put), with synthetic entries as in bench_publish: plausible metadata under
 * distinct key texts, a source text and random bytes as the cubin. Each then gets a few more
 * publishes, so that its journal holds lines as a cache in use has (a listing reads the
 * manifest and then applies the journal).
 *
 * Each run executes a new process and times it from fork to exit:
 *   - `cli`: the CLI itself, `jitgemm cache list` (the binary next to this one, or --cli);
 *   - `cli_json`: `jitgemm cache list --json`;
 *   - `library`: this program again (--child): open the cache, jit__cache_list, close.
 * The parent reads the CLI's whole output and checks that it lists every entry, so a listing
 * that loses entries fails the benchmark instead of being timed. Figures are medians of --runs.
 *
 *   bench_cache_list [--entries 10000] [--runs 9] [--cli PATH] [--keep] [--commit C] [--quiet]
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "bench_common.h"
#include "bench_entries.h"
#include "cache.h"

#define LIST_TARGET_S 0.2
#define CUBIN_BYTES 4096
#define JOURNAL_PUTS 20
#define N_CACHES 3

static int publish(jit__cache_t *c, size_t seed, unsigned char *cubin) {
    jit__cache_entry_t e;
    bench_make_entry(&e, seed, "sm_100a");
    bench_fill_random(cubin, CUBIN_BYTES, seed);
    jit__diag_t d;
    jit__diag_init(&d);
    jit_status_t st = jit__cache_put(c, &e, cubin, CUBIN_BYTES, "// bench source\n", NULL, &d);
    if (st != JIT_OK)
        fprintf(stderr, "bench_cache_list: publishing entry %zu: %s\n", seed, d.msg);
    jit__diag_clear(&d);
    return st == JIT_OK ? 0 : -1;
}

/* --child DIR N: list through the library; exit 0 if it gives N entries. */
static int child_main(const char *dir, size_t want) {
    jit__diag_t d;
    jit__diag_init(&d);
    jit__cache_t *c = NULL;
    jit__cache_entry_t *all = NULL;
    size_t n = 0;
    int ok = jit__cache_open(dir, 0, JIT_LOG_WARN, &c, &d) == JIT_OK &&
             jit__cache_list(c, &all, &n, &d) == JIT_OK && n == want;
    if (!ok)
        fprintf(stderr, "bench_cache_list: child: %s (%zu entries, want %zu)\n", d.msg, n, want);
    free(all);
    jit__cache_close(c);
    jit__diag_clear(&d);
    return ok ? 0 : 1;
}

/* Runs argv, reads all its output, and times it from fork to exit. The output must have
 * `want_lines` lines (0: any). 0 on success. */
static int run_timed(char *const argv[], size_t want_lines, double *seconds) {
    double t0 = bench_now();
    pid_t pid;
    int fd = bench_spawn(argv, &pid);
    if (fd < 0)
        return -1;
    char buf[65536];
    size_t lines = 0;
    ssize_t r;
    while ((r = read(fd, buf, sizeof(buf))) != 0) {
        if (r < 0 && errno == EINTR)
            continue;
        if (r < 0)
            break;
        for (ssize_t i = 0; i < r; i++)
            lines += buf[i] == '\n';
    }
    close(fd);
    int status;
    int ok = bench_wait(pid, &status);
    *seconds = bench_now() - t0;
    if (!ok) {
        fprintf(stderr, "bench_cache_list: %s %s failed (status %d)\n", argv[0],
                argv[1] ? argv[1] : "", status);
        return -1;
    }
    if (want_lines && lines != want_lines) {
        fprintf(stderr, "bench_cache_list: %s printed %zu lines, want %zu\n", argv[0], lines,
                want_lines);
        return -1;
    }
    return 0;
}

enum { MODE_CLI, MODE_CLI_JSON, MODE_LIBRARY, N_MODES };
static const char *const k_mode_name[N_MODES] = {"cli", "cli_json", "library"};

int main(int argc, char **argv) {
    if (argc == 4 && !strcmp(argv[1], "--child"))
        return child_main(argv[2], (size_t)atol(argv[3]));
    bench_args_t ba;
    bench_args_parse(&argc, argv, &ba);
    size_t entries = 10000;
    int runs = 9, keep = 0;
    char cli[4200] = "";
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--keep")) {
            keep = 1;
        } else if (!strcmp(argv[i], "--entries") && i + 1 < argc) {
            entries = (size_t)atol(argv[++i]);
        } else if (!strcmp(argv[i], "--runs") && i + 1 < argc) {
            runs = atoi(argv[++i]);
        } else if (!strcmp(argv[i], "--cli") && i + 1 < argc) {
            snprintf(cli, sizeof(cli), "%s", argv[++i]);
        } else {
            fprintf(stderr,
                    "usage: %s [--entries N] [--runs R] [--cli PATH] [--keep] [--commit C] "
                    "[--quiet]\n",
                    argv[0]);
            return 2;
        }
    }
    if (entries < 1000 || runs < 1) {
        fprintf(stderr, "bench_cache_list: --entries must be >= 1000, --runs > 0\n");
        return 2;
    }
    if (!cli[0]) { /* the CLI is built next to the benchmarks */
        const char *slash = strrchr(argv[0], '/');
        int dirlen = slash ? (int)(slash - argv[0]) : 1;
        snprintf(cli, sizeof(cli), "%.*s/jitgemm", dirlen, slash ? argv[0] : ".");
    }
    if (access(cli, X_OK) != 0) {
        fprintf(stderr, "bench_cache_list: no CLI at %s (give --cli PATH)\n", cli);
        return 2;
    }
    const size_t size_of[N_CACHES] = {10, entries / 10, entries};
    char *dir[N_CACHES] = {NULL, NULL, NULL};
    double fig[N_CACHES][N_MODES];
    double *t = calloc((size_t)runs, sizeof(double));
    unsigned char *cubin = malloc(CUBIN_BYTES);
    int rc = 1;
    double fill0 = bench_now();
    for (int k = 0; k < N_CACHES; k++) {
        char tag[32];
        snprintf(tag, sizeof(tag), "list-%zu", size_of[k]);
        dir[k] = bench_mkdtemp(tag);
        jit__cache_t *c = NULL;
        jit__diag_t d;
        jit__diag_init(&d);
        if (!t || !cubin || !dir[k] || jit__cache_open(dir[k], 0, JIT_LOG_WARN, &c, &d) != JIT_OK) {
            fprintf(stderr, "bench_cache_list: set-up: %s\n", d.msg[0] ? d.msg : "out of memory");
            jit__diag_clear(&d);
            goto done;
        }
        int failed = 0;
        for (size_t i = 0; i < size_of[k] && !failed; i++)
            failed = publish(c, i, cubin) != 0;
        /* Re-publish a few keys: lines in the journal, as a cache in use has. */
        for (size_t i = 0; i < JOURNAL_PUTS && !failed; i++)
            failed = publish(c, (i * 7919) % size_of[k], cubin) != 0;
        jit__cache_close(c);
        if (failed)
            goto done;
    }
    double fill = bench_now() - fill0;
    for (int k = 0; k < N_CACHES; k++) {
        char count[32];
        snprintf(count, sizeof(count), "%zu", size_of[k]);
        char self[] = "--child", cache_list[] = "list", cache_dir[] = "--cache-dir",
             json[] = "--json", cache[] = "cache";
        char *cli_argv[] = {cli, cache, cache_list, cache_dir, dir[k], NULL};
        char *json_argv[] = {cli, cache, cache_list, cache_dir, dir[k], json, NULL};
        char *lib_argv[] = {argv[0], self, dir[k], count, NULL};
        char *const *mode_argv[N_MODES] = {cli_argv, json_argv, lib_argv};
        /* The text listing has a header and a summary line around the entries. */
        const size_t want_lines[N_MODES] = {size_of[k] + 2, size_of[k], 0};
        for (int m = 0; m < N_MODES; m++) {
            for (int r = 0; r < runs; r++)
                if (run_timed(mode_argv[m], want_lines[m], &t[r]) != 0)
                    goto done;
            fig[k][m] = bench_median(t, (size_t)runs);
        }
    }
    int pass = fig[N_CACHES - 1][MODE_CLI] <= LIST_TARGET_S;
    if (!ba.quiet) {
        printf("set-up: %zu entries published in %.1f s (cubin %d bytes, with a source)\n",
               size_of[0] + size_of[1] + size_of[2], fill, CUBIN_BYTES);
        printf("%8s %12s %12s %12s   (fresh process, median of %d)\n", "entries", "cli", "cli_json",
               "library", runs);
        for (int k = 0; k < N_CACHES; k++)
            printf("%8zu %10.4f s %10.4f s %10.4f s\n", size_of[k], fig[k][MODE_CLI],
                   fig[k][MODE_CLI_JSON], fig[k][MODE_LIBRARY]);
        printf("cache list at %zu entries: %.3f s (target <= %.1f s)\n", entries,
               fig[N_CACHES - 1][MODE_CLI], LIST_TARGET_S);
    }
    json_t *rec = bench_record("cache_list", &ba);
    json_object_set_new(rec, "entries", json_integer((json_int_t)entries));
    json_object_set_new(rec, "runs", json_integer(runs));
    for (int k = 0; k < N_CACHES; k++)
        for (int m = 0; m < N_MODES; m++) {
            char key[64];
            snprintf(key, sizeof(key), "%s_s_at_%zu", k_mode_name[m], size_of[k]);
            json_object_set_new(rec, key, json_real(fig[k][m]));
        }
    json_object_set_new(rec, "target", json_string("cache list at max <= 0.2 s"));
    json_object_set_new(rec, "pass", json_boolean(pass));
    bench_emit(rec);
    rc = pass ? 0 : 1;
done:
    for (int k = 0; k < N_CACHES; k++) {
        if (keep && dir[k])
            fprintf(stderr, "bench_cache_list: kept %s\n", dir[k]);
        else if (dir[k])
            bench_rmtree(dir[k]);
        free(dir[k]);
    }
    free(t);
    free(cubin);
    return rc;
}
