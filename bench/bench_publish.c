/*
 * Benchmark: what a publish costs as the cache grows (the target, docs/performance.md: at most
 * 2x at 10,000 entries what it costs at 10), and what a fresh process pays to hit one entry
 * (<= 2 ms) and to list the cache (<= 0.2 s) when it holds 10,000.
 *
 * Entries are synthetic and go through the cache's own API (jit__cache_put): plausible metadata
 * under distinct key texts, a source text, and random bytes for the cubin. The cache never
 * interprets a cubin, only checksums it, so the bytes on disk and the index are what a real
 * prewarm leaves, without a compiler.
 *
 * Three caches are filled to 10, N/10 and N entries (N = --entries). Then, in rounds, each
 * cache gets one publish in turn, each timed alone (files, fsyncs, the index update), so all
 * three see the same disk: on a shared machine the disk's speed drifts over minutes, and caches
 * measured one after the other would compare the drift. A timed publish re-publishes one of the
 * cache's own keys, in turn, so the cache stays at its size while being measured; it does the
 * same work as a new key's (four renames, their fsyncs, one index update) and moves the journal
 * towards its compaction the same way. The rounds number max(--rounds, N/2), enough for the
 * largest cache's journal to be compacted at least once inside them, so the mean carries the
 * amortized cost of compacting rather than dodging it.
 *
 * With --at-cap each cache is reopened, once filled, with its size cap set to the bytes it
 * holds, so that the timed publishes run a cache at its cap: publishes that cross it scan
 * kernels/ and evict. The figures are then publishes only (entries come and go, so the hit and
 * the listing of a fixed entry count are not measured).
 *
 * The hit and the listing run in children that this program executes afresh (--child), so each
 * starts with nothing in memory: open the cache, get (checksum included) or list, close. They
 * use the largest cache as the rounds left it, journal included.
 *
 *   bench_publish [--entries 10000] [--rounds 200] [--cubin-bytes 16384] [--runs 9] [--at-cap]
 *                 [--keep] [--commit C] [--quiet]
 *
 * --keep leaves the cache directories in place (their paths go to stderr) for a closer look,
 * e.g. `bench_publish --child DIR list N` under a profiler.
 */
#include <dirent.h>
#include <fcntl.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "bench_common.h"
#include "bench_entries.h"
#include "cache.h"

#define PUBLISH_RATIO_TARGET 2.0
#define HIT_TARGET_S 0.002
#define LIST_TARGET_S 0.2

/* ---- the children -------------------------------------------------------------------------- */

/* Prints "ok SECONDS" or "error ...". mode "hit": get entry `seed`; "list": list all. */
static int child_main(const char *dir, const char *mode, size_t seed) {
    jit__diag_t d;
    jit__diag_init(&d);
    double t0 = bench_now();
    jit__cache_t *c = NULL;
    if (jit__cache_open(dir, 0, JIT_LOG_WARN, &c, &d) != JIT_OK) {
        printf("error open: %s\n", d.msg);
        return 1;
    }
    int ok;
    if (!strcmp(mode, "hit")) {
        jit__cache_entry_t want, e;
        bench_make_entry(&want, seed, "sm_90a");
        void *cubin = NULL;
        size_t size = 0;
        int found = 0;
        ok = jit__cache_get(c, want.hash, &e, &cubin, &size, &found, &d) == JIT_OK && found;
        free(cubin);
    } else {
        jit__cache_entry_t *all = NULL;
        size_t n = 0;
        ok = jit__cache_list(c, &all, &n, &d) == JIT_OK && n == seed;
        free(all);
    }
    jit__cache_close(c);
    double t = bench_now() - t0;
    if (!ok) {
        printf("error %s: %s\n", mode, d.msg[0] ? d.msg : "not found, or a wrong count");
        return 1;
    }
    printf("ok %.9f\n", t);
    return 0;
}

static int run_child(const char *self, const char *dir, const char *mode, size_t seed,
                     double *seconds) {
    char s[32];
    snprintf(s, sizeof(s), "%zu", seed);
    char *const argv[] = {(char *)self, "--child", (char *)dir, (char *)mode, s, NULL};
    char line[1024];
    if (bench_run_child(argv, line, sizeof(line), "bench_publish") != 0)
        return -1;
    if (sscanf(line, "ok %lf", seconds) != 1) {
        fprintf(stderr, "bench_publish: %s child failed: %s", mode,
                line[0] ? line : "(no output)\n");
        return -1;
    }
    return 0;
}

/* ---- the parent ---------------------------------------------------------------------------- */

static int publish(jit__cache_t *c, size_t seed, unsigned char *cubin, size_t size, double *t) {
    jit__cache_entry_t e;
    bench_make_entry(&e, seed, "sm_90a");
    bench_fill_random(cubin, size, seed);
    char src[256];
    snprintf(src, sizeof(src), "// generated source of bench kernel %zu\nextern \"C\" {}\n", seed);
    jit__diag_t d;
    jit__diag_init(&d);
    double t0 = bench_now();
    jit_status_t st = jit__cache_put(c, &e, cubin, size, src, NULL, &d);
    *t = bench_now() - t0;
    if (st != JIT_OK)
        fprintf(stderr, "bench_publish: publishing entry %zu: %s\n", seed, d.msg);
    jit__diag_clear(&d);
    return st == JIT_OK ? 0 : -1;
}

#define N_CACHES 3

/* Bytes of the files in dir/kernels: what the size cap counts. */
static int64_t kernels_bytes(const char *dir) {
    char path[4200];
    snprintf(path, sizeof(path), "%s/kernels", dir);
    DIR *d = opendir(path);
    if (!d)
        return -1;
    int64_t total = 0;
    struct dirent *de;
    while ((de = readdir(d))) {
        struct stat st;
        if (fstatat(dirfd(d), de->d_name, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISREG(st.st_mode))
            total += (int64_t)st.st_size;
    }
    closedir(d);
    return total;
}

int main(int argc, char **argv) {
    if (argc == 5 && !strcmp(argv[1], "--child"))
        return child_main(argv[2], argv[3], (size_t)atol(argv[4]));
    bench_args_t ba;
    bench_args_parse(&argc, argv, &ba);
    size_t entries = 10000, cubin_bytes = 16384, rounds = 200;
    int runs = 9, keep = 0, at_cap = 0;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--keep")) {
            keep = 1;
        } else if (!strcmp(argv[i], "--at-cap")) {
            at_cap = 1;
        } else if (!strcmp(argv[i], "--entries") && i + 1 < argc) {
            entries = (size_t)atol(argv[++i]);
        } else if (!strcmp(argv[i], "--rounds") && i + 1 < argc) {
            rounds = (size_t)atol(argv[++i]);
        } else if (!strcmp(argv[i], "--cubin-bytes") && i + 1 < argc) {
            cubin_bytes = (size_t)atol(argv[++i]);
        } else if (!strcmp(argv[i], "--runs") && i + 1 < argc) {
            runs = atoi(argv[++i]);
        } else {
            fprintf(stderr,
                    "usage: %s [--entries N] [--rounds R] [--cubin-bytes B] [--runs R] [--at-cap] "
                    "[--keep] [--commit C] [--quiet]\n",
                    argv[0]);
            return 2;
        }
    }
    if (entries < 100 || cubin_bytes == 0 || runs < 1 || rounds < 1) {
        fprintf(stderr, "bench_publish: --entries must be >= 100, the others > 0\n");
        return 2;
    }
    /* A compaction comes once the journal reaches a quarter of the manifest, about every 0.3 N
     * publishes (a journal line is a little shorter than the manifest's indented entry). */
    if (rounds < entries / 2)
        rounds = entries / 2;
    const size_t size_of[N_CACHES] = {10, entries / 10, entries};
    char *dir[N_CACHES] = {NULL, NULL, NULL};
    jit__cache_t *c[N_CACHES] = {NULL, NULL, NULL};
    double *t[N_CACHES] = {NULL, NULL, NULL};
    unsigned char *cubin = malloc(cubin_bytes);
    jit__diag_t d;
    jit__diag_init(&d);
    int rc = 1;
    double fill0 = bench_now();
    for (int k = 0; k < N_CACHES; k++) {
        char tag[32];
        snprintf(tag, sizeof(tag), "publish-%zu", size_of[k]);
        dir[k] = bench_mkdtemp(tag);
        t[k] = calloc(rounds, sizeof(double));
        if (!cubin || !dir[k] || !t[k] ||
            jit__cache_open(dir[k], 0, JIT_LOG_WARN, &c[k], &d) != JIT_OK) {
            fprintf(stderr, "bench_publish: set-up: %s\n", d.msg[0] ? d.msg : "out of memory");
            goto done;
        }
        double unused;
        for (size_t i = 0; i < size_of[k]; i++)
            if (publish(c[k], i, cubin, cubin_bytes, &unused) != 0)
                goto done;
        if (at_cap) {
            int64_t full = kernels_bytes(dir[k]);
            jit__cache_close(c[k]);
            c[k] = NULL;
            if (full <= 0 || jit__cache_open(dir[k], full, JIT_LOG_WARN, &c[k], &d) != JIT_OK) {
                fprintf(stderr, "bench_publish: reopening at the cap: %s\n", d.msg);
                goto done;
            }
        }
    }
    double fill = bench_now() - fill0;
    for (size_t r = 0; r < rounds; r++)
        for (int k = 0; k < N_CACHES; k++)
            if (publish(c[k], r % size_of[k], cubin, cubin_bytes, &t[k][r]) != 0)
                goto done;
    for (int k = 0; k < N_CACHES; k++) {
        jit__cache_close(c[k]);
        c[k] = NULL;
    }

    double mean[N_CACHES], median[N_CACHES], worst[N_CACHES];
    for (int k = 0; k < N_CACHES; k++) {
        double sum = 0;
        worst[k] = 0;
        for (size_t r = 0; r < rounds; r++) {
            sum += t[k][r];
            if (t[k][r] > worst[k])
                worst[k] = t[k][r];
        }
        mean[k] = sum / (double)rounds;
        median[k] = bench_median(t[k], rounds);
    }
    double *hits = calloc((size_t)runs, sizeof(double));
    double *lists = calloc((size_t)runs, sizeof(double));
    for (int r = 0; r < runs && hits && lists && !at_cap; r++) {
        if (run_child(argv[0], dir[2], "hit", (size_t)r * (entries / (size_t)runs), &hits[r]) !=
                0 ||
            run_child(argv[0], dir[2], "list", entries, &lists[r]) != 0) {
            free(hits);
            free(lists);
            goto done;
        }
    }
    double hit = at_cap ? 0 : bench_median(hits, (size_t)runs);
    double list = at_cap ? 0 : bench_median(lists, (size_t)runs);
    free(hits);
    free(lists);
    double ratio = mean[2] / mean[0];
    int pass = ratio <= PUBLISH_RATIO_TARGET && hit <= HIT_TARGET_S && list <= LIST_TARGET_S;
    if (!ba.quiet) {
        printf("set-up: %zu entries published in %.1f s (cubin %zu bytes, with a source)\n",
               size_of[0] + size_of[1] + size_of[2], fill, cubin_bytes);
        for (int k = 0; k < N_CACHES; k++)
            printf("publish at %6zu entries: mean %.2f ms, median %.2f ms, worst %.1f ms (%zu "
                   "publishes)\n",
                   size_of[k], mean[k] * 1e3, median[k] * 1e3, worst[k] * 1e3, rounds);
        printf("mean at %zu / mean at 10: %.2f (target <= %.1f)\n", entries, ratio,
               PUBLISH_RATIO_TARGET);
        if (at_cap)
            printf("each cache at its size cap (publishes that cross it evict)\n");
        else
            printf("fresh process, %zu entries: hit %.3f ms (target <= %.0f ms), list %.3f s "
                   "(target <= %.1f s), medians of %d\n",
                   entries, hit * 1e3, HIT_TARGET_S * 1e3, list, LIST_TARGET_S, runs);
    }
    json_t *rec = bench_record("publish", &ba);
    json_object_set_new(rec, "entries", json_integer((json_int_t)entries));
    json_object_set_new(rec, "rounds", json_integer((json_int_t)rounds));
    json_object_set_new(rec, "cubin_bytes", json_integer((json_int_t)cubin_bytes));
    for (int k = 0; k < N_CACHES; k++) {
        char key[64];
        snprintf(key, sizeof(key), "publish_ms_at_%zu", size_of[k]);
        json_object_set_new(rec, key, json_real(mean[k] * 1e3));
    }
    json_object_set_new(rec, "publish_ratio", json_real(ratio));
    json_object_set_new(rec, "at_cap", json_boolean(at_cap));
    if (!at_cap) {
        json_object_set_new(rec, "hit_ms", json_real(hit * 1e3));
        json_object_set_new(rec, "list_s", json_real(list));
    }
    json_object_set_new(rec, "target",
                        json_string("publish at max <= 2x at 10; hit <= 2 ms; list <= 0.2 s"));
    json_object_set_new(rec, "pass", json_boolean(pass));
    bench_emit(rec);
    rc = pass ? 0 : 1;
done:
    for (int k = 0; k < N_CACHES; k++) {
        jit__cache_close(c[k]);
        if (keep && dir[k])
            fprintf(stderr, "bench_publish: kept %s\n", dir[k]);
        else
            bench_rmtree(dir[k]);
        free(dir[k]);
        free(t[k]);
    }
    jit__diag_clear(&d);
    free(cubin);
    return rc;
}
