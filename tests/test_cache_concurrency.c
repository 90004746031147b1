/*
 * Several processes (and threads) on one cache directory at once, as on a serving host with one
 * process per GPU: the same missing kernel is compiled once and loaded by everyone, concurrent
 * publishers of different kernels leave a manifest that lists them all, and a hit in a fresh
 * process stays cheap however large the manifest. Children report through their exit status;
 * "compiles" are counted by appending one byte to a shared file opened with O_APPEND.
 */
#include <criterion/criterion.h>
#include <fcntl.h>
#include <jansson.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "test_cache_fixture.h"

TestSuite(cache_concurrency, .fini = tc_cleanup);

#define CUBIN_BYTES 3000

/* Release all children at once: each blocks reading `gate` until the parent closes it. */
static void wait_for_gate(int gate) {
    char b;
    while (read(gate, &b, 1) > 0)
        ;
}

static void count_compile(const char *counter) {
    int fd = open(counter, O_WRONLY | O_APPEND | O_CREAT, 0600);
    if (fd < 0 || write(fd, "c", 1) != 1)
        _exit(20);
    close(fd);
}

/* The caller's protocol for a missing kernel: lock, look again, compile only if still missing,
 * publish, unlock. Returns 0 if the caller ended with a verified entry. */
static int get_or_compile(jit__cache_t *c, unsigned seed, const char *counter) {
    jit__cache_entry_t e;
    tc_make_entry(&e, seed);
    int token;
    if (jit__cache_lock_key(c, e.hash, &token, NULL) != JIT_OK || token < 0)
        return 11;
    void *bin = NULL;
    size_t n;
    int found = 0;
    jit__cache_entry_t got;
    if (jit__cache_get(c, e.hash, &got, &bin, &n, &found, NULL) != JIT_OK)
        return 12;
    if (!found) {
        struct timespec nap = {0, 150 * 1000 * 1000}; /* a compile takes a while */
        nanosleep(&nap, NULL);
        count_compile(counter);
        void *fresh = tc_make_cubin(seed, CUBIN_BYTES);
        if (jit__cache_put(c, &e, fresh, CUBIN_BYTES, "src", "ptx", NULL) != JIT_OK)
            return 13;
        free(fresh);
    }
    jit__cache_unlock_key(c, token);
    free(bin);
    /* Whoever compiled it, everyone must now load the same bytes. */
    void *want = tc_make_cubin(seed, CUBIN_BYTES);
    if (jit__cache_get(c, e.hash, &got, &bin, &n, &found, NULL) != JIT_OK || !found ||
        n != CUBIN_BYTES || memcmp(bin, want, n))
        return 14;
    free(bin);
    free(want);
    return 0;
}

static void reap(pid_t *pids, int n) {
    for (int i = 0; i < n; i++) {
        int status = 0;
        cr_assert_eq(waitpid(pids[i], &status, 0), pids[i]);
        cr_assert(WIFEXITED(status), "child %d died (signal %d)", i, WTERMSIG(status));
        cr_assert_eq(WEXITSTATUS(status), 0, "child %d failed with %d", i, WEXITSTATUS(status));
    }
}

static pid_t spawn(int gate[2], int (*body)(const char *dir, int index, const char *arg),
                   const char *dir, int index, const char *arg) {
    pid_t pid = fork();
    cr_assert_geq(pid, 0);
    if (pid == 0) {
        close(gate[1]);
        wait_for_gate(gate[0]);
        _exit(body(dir, index, arg));
    }
    return pid;
}

static int same_key_child(const char *dir, int index, const char *counter) {
    (void)index;
    jit__cache_t *c = NULL;
    if (jit__cache_open(dir, 0, JIT_LOG_WARN, &c, NULL) != JIT_OK || !jit__cache_writable(c))
        return 10;
    int r = get_or_compile(c, 42, counter);
    jit__cache_close(c);
    return r;
}

Test(cache_concurrency, one_compile_for_many_processes) {
    char *dir = tc_mkdtemp("cache-samekey");
    char counter[4200];
    snprintf(counter, sizeof(counter), "%s/compiles", dir);
    jit__cache_close(tc_open(dir, 0)); /* the directory exists before the race starts */
    enum { N = 6 };
    pid_t pids[N];
    int gate[2];
    cr_assert_eq(pipe(gate), 0);
    for (int i = 0; i < N; i++)
        pids[i] = spawn(gate, same_key_child, dir, i, counter);
    close(gate[0]);
    close(gate[1]);
    reap(pids, N);
    size_t n = 0;
    free(jt_read_file(counter, &n));
    cr_assert_eq(n, 1, "%zu compiles for one key in %d processes", n, N);
    jit__cache_t *c = tc_open(dir, 0);
    cr_assert(tc_hit(c, 42, CUBIN_BYTES));
    size_t bad = 9;
    cr_assert_eq(jit__cache_verify(c, NULL, NULL, &bad, NULL, NULL), JIT_OK);
    cr_assert_eq(bad, 0);
    jit__cache_close(c);
    jt_rmtree(dir);
    free(dir);
}

typedef struct thread_arg {
    jit__cache_t *cache;
    const char *counter;
    int result;
} thread_arg_t;

static void *same_key_thread(void *p) {
    thread_arg_t *a = p;
    a->result = get_or_compile(a->cache, 77, a->counter);
    return NULL;
}

Test(cache_concurrency, one_compile_for_many_threads) {
    /* Threads of one process share the cache object; flock locks open files, not processes,
     * so the per-key lock must hold between threads too. */
    char *dir = tc_mkdtemp("cache-threads");
    char counter[4200];
    snprintf(counter, sizeof(counter), "%s/compiles", dir);
    jit__cache_t *c = tc_open(dir, 0);
    enum { N = 4 };
    pthread_t th[N];
    thread_arg_t args[N];
    for (int i = 0; i < N; i++) {
        args[i] = (thread_arg_t){c, counter, -1};
        cr_assert_eq(pthread_create(&th[i], NULL, same_key_thread, &args[i]), 0);
    }
    for (int i = 0; i < N; i++) {
        pthread_join(th[i], NULL);
        cr_assert_eq(args[i].result, 0, "thread %d failed with %d", i, args[i].result);
    }
    size_t n = 0;
    free(jt_read_file(counter, &n));
    cr_assert_eq(n, 1, "%zu compiles for one key in %d threads", n, N);
    jit__cache_close(c);
    jt_rmtree(dir);
    free(dir);
}

enum { KEYS_PER_CHILD = 15 };

static int publisher_child(const char *dir, int index, const char *unused) {
    (void)unused;
    jit__cache_t *c = NULL;
    if (jit__cache_open(dir, 0, JIT_LOG_WARN, &c, NULL) != JIT_OK || !jit__cache_writable(c))
        return 10;
    for (unsigned k = 0; k < KEYS_PER_CHILD; k++) {
        unsigned seed = 1000 + (unsigned)index * 100 + k;
        jit__cache_entry_t e;
        tc_make_entry(&e, seed);
        void *bin = tc_make_cubin(seed, CUBIN_BYTES + k);
        if (jit__cache_put(c, &e, bin, CUBIN_BYTES + k, "src", "ptx", NULL) != JIT_OK)
            return 11;
        free(bin);
    }
    jit__cache_close(c);
    return 0;
}

Test(cache_concurrency, concurrent_publishers_leave_a_whole_manifest) {
    char *dir = tc_mkdtemp("cache-publishers");
    jit__cache_close(tc_open(dir, 0));
    enum { N = 6 };
    pid_t pids[N];
    int gate[2];
    cr_assert_eq(pipe(gate), 0);
    for (int i = 0; i < N; i++)
        pids[i] = spawn(gate, publisher_child, dir, i, NULL);
    close(gate[0]);
    close(gate[1]);
    reap(pids, N);

    /* The index is manifest.json plus its journal once the manifest is large; list reads both,
     * and lists only entries the index holds, so a dropped publish shows as a missing key. */
    jit__cache_t *c = tc_open(dir, 0);
    jit__cache_entry_t *all = NULL;
    size_t n = 0;
    cr_assert_eq(jit__cache_list(c, &all, &n, NULL), JIT_OK);
    cr_assert_eq(n, N * KEYS_PER_CHILD, "the index lists %zu entries", n);
    for (int i = 0; i < N; i++)
        for (unsigned k = 0; k < KEYS_PER_CHILD; k++) {
            unsigned seed = 1000 + (unsigned)i * 100 + k;
            int listed = 0;
            for (size_t j = 0; j < n; j++)
                listed |= !strcmp(all[j].hash, tc_hash(seed));
            cr_assert(listed, "key %u not listed", seed);
            cr_assert(tc_hit(c, seed, CUBIN_BYTES + k), "key %u not loadable", seed);
        }
    free(all);
    size_t bad = 9;
    cr_assert_eq(jit__cache_verify(c, NULL, NULL, &bad, NULL, NULL), JIT_OK);
    cr_assert_eq(bad, 0);
    cr_assert_eq(tc_count_files(dir, "tmp"), 0, "torn temporaries left behind");
    jit__cache_close(c);
    jt_rmtree(dir);
    free(dir);
}

Test(cache_concurrency, gc_leaves_held_locks_alone) {
    char *dir = tc_mkdtemp("cache-gclocks");
    jit__cache_t *c = tc_open(dir, 0);
    int held, idle;
    cr_assert_eq(jit__cache_lock_key(c, tc_hash(1), &held, NULL), JIT_OK);
    cr_assert_eq(jit__cache_lock_key(c, tc_hash(2), &idle, NULL), JIT_OK);
    jit__cache_unlock_key(c, idle);
    cr_assert_eq(tc_count_files(dir, "locks"), 2);
    cr_assert_eq(jit__cache_gc(c, NULL, NULL, NULL), JIT_OK);
    char path[4200];
    snprintf(path, sizeof(path), "%s/locks/%s.lock", dir, tc_hash(1));
    cr_assert(tc_exists(path), "gc removed a lock that a compile holds");
    cr_assert_eq(tc_count_files(dir, "locks"), 1, "an idle lock file stays behind");

    /* While key 1 is held, a second locker (another process) must wait for it. */
    pid_t pid = fork();
    cr_assert_geq(pid, 0);
    if (pid == 0) {
        /* A forked child shares the parent's open lock file, and with it the flock; it must
         * let go of that copy, or the parent's unlock would not release the key. */
        close(held);
        jit__cache_t *cc = NULL;
        int t;
        if (jit__cache_open(dir, 0, JIT_LOG_SILENT, &cc, NULL) != JIT_OK ||
            jit__cache_lock_key(cc, tc_hash(1), &t, NULL) != JIT_OK || t < 0)
            _exit(10);
        _exit(0);
    }
    struct timespec nap = {0, 300 * 1000 * 1000};
    nanosleep(&nap, NULL);
    int status;
    cr_assert_eq(waitpid(pid, &status, WNOHANG), 0, "the second locker did not wait");
    jit__cache_unlock_key(c, held);
    cr_assert_eq(waitpid(pid, &status, 0), pid);
    cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    jit__cache_close(c);
    jt_rmtree(dir);
    free(dir);
}

/* ---- a hit in a fresh process --------------------------------------------------------------- */

static double now_seconds(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

/* When this executable is started with these variables set, it is the "fresh process": before
 * Criterion's main runs, open the cache, load one entry, print the microseconds that took and
 * exit. A fork would not do: the child inherits a warmed-up heap and page tables. */
__attribute__((constructor)) static void first_hit_probe(void) {
    const char *dir = getenv("JITGEMM_TEST_FIRST_HIT_DIR");
    const char *hash = getenv("JITGEMM_TEST_FIRST_HIT_HASH");
    if (!dir || !hash)
        return;
    double t0 = now_seconds();
    jit__cache_t *c = NULL;
    if (jit__cache_open(dir, 0, JIT_LOG_WARN, &c, NULL) != JIT_OK)
        _exit(10);
    jit__cache_entry_t e;
    void *bin;
    size_t n;
    int found = 0;
    if (jit__cache_get(c, hash, &e, &bin, &n, &found, NULL) != JIT_OK || !found)
        _exit(11);
    printf("%.1f\n", (now_seconds() - t0) * 1e6);
    fflush(stdout);
    _exit(0);
}

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

Test(cache_concurrency, first_hit_in_a_fresh_process_ignores_manifest_size, .timeout = 600) {
    char *dir = tc_mkdtemp("cache-firsthit");
    jit__cache_t *c = tc_open(dir, 0);
    enum { ENTRIES = 1000 };
    for (unsigned i = 0; i < ENTRIES; i++)
        tc_put(c, i, 256, NULL);
    jit__cache_close(c);
    c = tc_open(dir, 0);
    jit__cache_entry_t *all = NULL;
    size_t listed = 0;
    cr_assert_eq(jit__cache_list(c, &all, &listed, NULL), JIT_OK);
    cr_assert_eq(listed, ENTRIES);
    free(all);
    jit__cache_close(c);

    char self[4096];
    ssize_t len = readlink("/proc/self/exe", self, sizeof(self) - 1);
    cr_assert_gt(len, 0);
    self[len] = '\0';
    enum { RUNS = 7 };
    double us[RUNS];
    for (int r = 0; r < RUNS; r++) {
        char env_dir[4300], env_hash[128];
        snprintf(env_dir, sizeof(env_dir), "JITGEMM_TEST_FIRST_HIT_DIR=%s", dir);
        snprintf(env_hash, sizeof(env_hash), "JITGEMM_TEST_FIRST_HIT_HASH=%s",
                 tc_hash(100u * (unsigned)r));
        const char *argv[] = {self, NULL};
        const char *env[] = {env_dir, env_hash, NULL};
        char *out = NULL, *err = NULL;
        int rc = jt_run(argv, env, NULL, &out, &err);
        cr_assert_eq(rc, 0, "fresh process %d failed (%d): %s", r, rc, err);
        cr_assert_eq(sscanf(out, "%lf", &us[r]), 1, "%s", out);
        free(out);
        free(err);
    }
    qsort(us, RUNS, sizeof(us[0]), cmp_double);
    cr_log_info("first hit with a %d-entry manifest: median %.0f us, max %.0f us", ENTRIES,
                us[RUNS / 2], us[RUNS - 1]);
    cr_assert_leq(us[RUNS / 2], 5000.0, "median first hit %.0f us exceeds 5 ms", us[RUNS / 2]);
    jt_rmtree(dir);
    free(dir);
}

/* ---- concurrent prewarms of one shape list ----------------------------------------------- */

/* One entry in two token bands: two kernels, for sm_90a, whose kernels compile fastest. */
static const char k_prewarm_list[] =
    "{\"target\": {\"arch\": \"sm_90a\", \"sm_count\": 132}, \"gemms\": [\n"
    "  {\"name\": \"proj\", \"op\": \"linear\", \"n\": 256, \"k\": 128, \"tokens\": [1, 300]}\n"
    "]}\n";
enum { PREWARMS = 8, PREWARM_KERNELS = 2 };

/* Start `jitgemm prewarm LIST --json --jobs 1 --cache-dir CACHE` once the gate opens; its
 * stdout and stderr go to work/out.<index> and work/err.<index>. */
static pid_t spawn_prewarm(int gate[2], const char *work, const char *list, const char *cache,
                           int index) {
    pid_t pid = fork();
    cr_assert_geq(pid, 0);
    if (pid == 0) {
        close(gate[1]);
        char out[4200], err[4200];
        snprintf(out, sizeof(out), "%s/out.%d", work, index);
        snprintf(err, sizeof(err), "%s/err.%d", work, index);
        int ofd = open(out, O_WRONLY | O_CREAT | O_TRUNC, 0600);
        int efd = open(err, O_WRONLY | O_CREAT | O_TRUNC, 0600);
        if (ofd < 0 || efd < 0)
            _exit(120);
        wait_for_gate(gate[0]);
        dup2(ofd, 1);
        dup2(efd, 2);
        execl(JITGEMM_CLI_PATH, JITGEMM_CLI_PATH, "prewarm", list, "--json", "--jobs", "1",
              "--cache-dir", cache, (char *)NULL);
        _exit(127);
    }
    return pid;
}

typedef struct prewarm_run {
    int rc[PREWARMS];
    char *out[PREWARMS], *err[PREWARMS];
} prewarm_run_t;

/* PREWARMS prewarms of one list into `cache`, released at once. */
static void run_prewarms(const char *work, const char *cache, prewarm_run_t *run) {
    char list[4200];
    snprintf(list, sizeof(list), "%s/shapes.json", work);
    cr_assert_eq(jt_write_file(list, k_prewarm_list), 0);
    pid_t pids[PREWARMS];
    int gate[2];
    cr_assert_eq(pipe(gate), 0);
    for (int i = 0; i < PREWARMS; i++)
        pids[i] = spawn_prewarm(gate, work, list, cache, i);
    close(gate[0]);
    close(gate[1]);
    for (int i = 0; i < PREWARMS; i++) {
        int status = 0;
        cr_assert_eq(waitpid(pids[i], &status, 0), pids[i]);
        cr_assert(WIFEXITED(status), "prewarm %d died (signal %d)", i, WTERMSIG(status));
        run->rc[i] = WEXITSTATUS(status);
        char path[4200];
        snprintf(path, sizeof(path), "%s/out.%d", work, i);
        run->out[i] = jt_read_file(path, NULL);
        snprintf(path, sizeof(path), "%s/err.%d", work, i);
        run->err[i] = jt_read_file(path, NULL);
        cr_assert(run->out[i] && run->err[i]);
    }
}

static void free_prewarms(prewarm_run_t *run) {
    for (int i = 0; i < PREWARMS; i++) {
        free(run->out[i]);
        free(run->err[i]);
    }
}

Test(cache_concurrency, eight_prewarms_of_one_list_compile_each_key_once, .timeout = 600) {
    char *work = tc_mkdtemp("prewarm-8");
    char cache[1024];
    snprintf(cache, sizeof(cache), "%s/cache", work);
    prewarm_run_t run;
    run_prewarms(work, cache, &run);
    /* Every key and how many of the prewarms compiled it. */
    char keys[PREWARM_KERNELS][JIT_KEY_HASH_LEN + 1];
    int compiles[PREWARM_KERNELS] = {0}, n_keys = 0;
    for (int i = 0; i < PREWARMS; i++) {
        cr_expect_eq(run.rc[i], 0, "prewarm %d exited %d: %s", i, run.rc[i], run.err[i]);
        cr_expect(strstr(run.err[i], "stored in cache     2 of 2") != NULL,
                  "prewarm %d: summary: %s", i, run.err[i]);
        int lines = 0;
        for (char *line = run.out[i]; *line;) {
            char *end = strchr(line, '\n');
            cr_assert_not_null(end);
            json_t *o = json_loadb(line, (size_t)(end - line), 0, NULL);
            cr_assert(json_is_object(o), "prewarm %d: %.*s", i, (int)(end - line), line);
            const char *status = json_string_value(json_object_get(o, "status"));
            const char *key = json_string_value(json_object_get(o, "key"));
            cr_assert(status && key, "prewarm %d: %.*s", i, (int)(end - line), line);
            cr_expect(!strcmp(status, "compiled") || !strcmp(status, "cached"), "%s", status);
            int k = 0;
            while (k < n_keys && strcmp(keys[k], key) != 0)
                k++;
            if (k == n_keys) {
                cr_assert_lt(n_keys, PREWARM_KERNELS, "more keys than kernels in the list");
                snprintf(keys[n_keys++], sizeof(keys[0]), "%s", key);
            }
            compiles[k] += !strcmp(status, "compiled");
            json_decref(o);
            lines++;
            line = end + 1;
        }
        cr_expect_eq(lines, PREWARM_KERNELS, "prewarm %d printed %d lines", i, lines);
    }
    cr_assert_eq(n_keys, PREWARM_KERNELS);
    for (int k = 0; k < n_keys; k++)
        cr_expect_eq(compiles[k], 1, "key %s compiled %d times by %d prewarms", keys[k],
                     compiles[k], PREWARMS);
    /* What they said was stored is there, whole. */
    jit__cache_t *c = tc_open(cache, 0);
    jit__cache_entry_t *all = NULL;
    size_t listed = 0, bad = 9;
    cr_assert_eq(jit__cache_list(c, &all, &listed, NULL), JIT_OK);
    cr_expect_eq(listed, PREWARM_KERNELS);
    free(all);
    for (int k = 0; k < n_keys; k++) {
        jit__cache_entry_t e;
        void *bin = NULL;
        size_t size = 0;
        int found = 0;
        cr_expect_eq(jit__cache_get(c, keys[k], &e, &bin, &size, &found, NULL), JIT_OK);
        cr_expect(found, "key %s is not on disk", keys[k]);
        free(bin);
    }
    cr_assert_eq(jit__cache_verify(c, NULL, NULL, &bad, NULL, NULL), JIT_OK);
    cr_expect_eq(bad, 0);
    jit__cache_close(c);
    free_prewarms(&run);
    free(work);
}

/* A cache whose directory refuses writes (owner write bit clear: the library treats it as
 * read-only, whoever runs it) stores nothing, and every prewarm must say so by its exit. */
Test(cache_concurrency, eight_prewarms_into_a_cache_that_refuses_writes_all_fail, .timeout = 600) {
    char *work = tc_mkdtemp("prewarm-8-ro");
    char cache[1024];
    snprintf(cache, sizeof(cache), "%s/cache", work);
    jit__cache_close(tc_open(cache, 0));
    cr_assert_eq(chmod(cache, 0500), 0);
    prewarm_run_t run;
    run_prewarms(work, cache, &run);
    for (int i = 0; i < PREWARMS; i++) {
        cr_expect_eq(run.rc[i], 1, "prewarm %d exited %d: %s", i, run.rc[i], run.err[i]);
        cr_expect(strstr(run.err[i], "0 of 2 kernels") != NULL, "prewarm %d: %s", i, run.err[i]);
    }
    cr_assert_eq(chmod(cache, 0700), 0);
    cr_expect_eq(tc_count_files(cache, "kernels"), 0);
    free_prewarms(&run);
    free(work);
}
