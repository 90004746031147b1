/*
 * jit_prewarm: the pipeline without the launch, over a list of problems, in parallel. Problems
 * that map to one key are compiled once; workers take distinct keys from a shared counter.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "pipeline.h"

typedef struct job {
    jit__plan_t plan;
    jit__key_set_t keys;
    char hash[JIT_KEY_HASH_LEN + 1]; /* the key that served it, else the set's main key */
    jit_status_t plan_status;
    char plan_error[JIT__MSG_MAX];
    int first_of_key; /* index of the first problem with the same key, or -1 if this is it */
} job_t;

typedef struct pool {
    jit_context_t *ctx;
    const jit__toolchain_t *tc; /* NULL: none found; only cache hits are possible */
    char tc_why[JIT__MSG_MAX];
    const jit_problem_t *problems;
    job_t *jobs;
    size_t count;
    size_t next; /* guarded by lock */
    pthread_mutex_t lock;
    jit_progress_fn progress;
    void *user;
    jit_status_t first_failure;
    char first_error[JIT__MSG_MAX];
} pool_t;

static double now_seconds(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* Report every problem that shares job i's key; caller holds pool->lock. */
static void report(pool_t *pool, size_t i, jit_prewarm_result_t result, jit_status_t st,
                   double seconds, const char *error) {
    if (st != JIT_OK && pool->first_failure == JIT_OK) {
        pool->first_failure = st;
        snprintf(pool->first_error, sizeof(pool->first_error), "%s", error);
    }
    for (size_t j = i; j < pool->count; j++) {
        job_t *job = &pool->jobs[j];
        if (j != i && (size_t)job->first_of_key != i)
            continue;
        if (!pool->progress)
            continue;
        jit_prewarm_event_t ev;
        memset(&ev, 0, sizeof(ev));
        ev.index = j;
        ev.total = pool->count;
        ev.problem = &pool->problems[j];
        /* A duplicate of a compiled key is served by that compile: it is cached for it. */
        ev.result = (j == i || result == JIT_PREWARM_FAILED) ? result : JIT_PREWARM_CACHED;
        ev.status = st;
        ev.seconds = j == i ? seconds : 0.0;
        ev.key_hash = job->hash;
        ev.error = error ? error : "";
        pool->progress(&ev, pool->user);
    }
}

static void *worker(void *arg) {
    pool_t *pool = arg;
    for (;;) {
        pthread_mutex_lock(&pool->lock);
        size_t i = pool->next;
        while (i < pool->count &&
               (pool->jobs[i].first_of_key >= 0 || pool->jobs[i].plan_status != JIT_OK))
            i++;
        pool->next = i + 1;
        pthread_mutex_unlock(&pool->lock);
        if (i >= pool->count)
            return NULL;
        job_t *job = &pool->jobs[i];
        jit__diag_t d;
        jit__diag_init(&d);
        jit__obtained_t got;
        double t0 = now_seconds();
        jit_status_t st = jit__ctx_obtain(pool->ctx, pool->tc, &job->plan, &job->keys, 0, &got, &d);
        double dt = now_seconds() - t0;
        pthread_mutex_lock(&pool->lock);
        if (st == JIT_OK) /* what a duplicate of this job reports too */
            for (size_t j = i; j < pool->count; j++)
                if (j == i || (size_t)pool->jobs[j].first_of_key == i)
                    snprintf(pool->jobs[j].hash, sizeof(pool->jobs[j].hash), "%s", got.entry.hash);
        if (st == JIT_OK)
            report(pool, i, got.compiled ? JIT_PREWARM_COMPILED : JIT_PREWARM_CACHED, st, dt, "");
        else
            report(pool, i, JIT_PREWARM_FAILED, st, dt, d.msg);
        pthread_mutex_unlock(&pool->lock);
        jit__diag_clear(&d);
    }
}

jit_status_t jit_prewarm(jit_context_t *ctx, const jit_problem_t *problems, size_t count,
                         int jobs, jit_progress_fn progress, void *user) {
    jit__diag_t d;
    jit__diag_init(&d);
    if (!ctx) {
        jit__fail(&d, JIT_INVALID_ARGUMENT, "jit_prewarm: context is NULL");
        return jit__ctx_error(NULL, &d);
    }
    if (count && !problems) {
        jit__fail(&d, JIT_INVALID_ARGUMENT, "jit_prewarm: problems is NULL");
        return jit__ctx_error(ctx, &d);
    }
    if (jobs < 0) {
        jit__fail(&d, JIT_INVALID_ARGUMENT, "jit_prewarm: jobs=%d is negative", jobs);
        return jit__ctx_error(ctx, &d);
    }
    pool_t pool;
    memset(&pool, 0, sizeof(pool));
    pool.ctx = ctx;
    pool.problems = problems;
    pool.count = count;
    pool.progress = progress;
    pool.user = user;
    pthread_mutex_init(&pool.lock, NULL);
    /* Without a toolchain a prewarm still checks that every kernel is in the cache. */
    pool.tc = jit__ctx_toolchain(ctx, pool.tc_why, sizeof(pool.tc_why));
    if (pool.tc)
        jit__log(ctx->log_level, JIT_LOG_INFO, "prewarm: %zu problems, NVRTC %d.%d (%s)%s", count,
                 pool.tc->id.nvrtc_major, pool.tc->id.nvrtc_minor,
                 pool.tc->dir[0] ? pool.tc->dir : "loader default path",
                 ctx->compile_mode == JIT_COMPILE_NEVER
                     ? "; misses are not built (compile mode never)"
                     : " builds the misses");
    else
        jit__log(ctx->log_level, JIT_LOG_INFO,
                 "prewarm: %zu problems, no NVRTC (%s): cached kernels only", count, pool.tc_why);
    pool.jobs = calloc(count ? count : 1, sizeof(job_t));
    if (!pool.jobs) {
        pthread_mutex_destroy(&pool.lock);
        jit__fail(&d, JIT_OUT_OF_MEMORY, "jit_prewarm: %zu jobs", count);
        return jit__ctx_error(ctx, &d);
    }
    /* Plan and key every problem first (cheap), so duplicates are known before any compile
     * starts and bad entries fail before the slow work. */
    for (size_t i = 0; i < count; i++) {
        job_t *job = &pool.jobs[i];
        jit__diag_t pd;
        jit__diag_init(&pd);
        job->first_of_key = -1;
        job->plan_status = jit__ctx_plan(ctx, &problems[i], &job->plan, &pd);
        if (job->plan_status == JIT_OK)
            job->plan_status =
                jit__ctx_keys(ctx, pool.tc, pool.tc_why, &job->plan, &job->keys, &pd);
        if (job->plan_status == JIT_OK)
            snprintf(job->hash, sizeof(job->hash), "%s", jit__key_set_main(&job->keys)->hash);
        if (job->plan_status != JIT_OK) {
            snprintf(job->plan_error, sizeof(job->plan_error), "%s", pd.msg);
            jit__diag_clear(&pd);
            continue;
        }
        for (size_t j = 0; j < i; j++) {
            if (pool.jobs[j].plan_status == JIT_OK && pool.jobs[j].first_of_key < 0 &&
                strcmp(pool.jobs[j].keys.keys[0].hash, job->keys.keys[0].hash) == 0) {
                job->first_of_key = (int)j;
                break;
            }
        }
    }
    for (size_t i = 0; i < count; i++) {
        if (pool.jobs[i].plan_status != JIT_OK) {
            pool.jobs[i].first_of_key = (int)count; /* reported alone */
            pthread_mutex_lock(&pool.lock);
            if (pool.first_failure == JIT_OK) {
                pool.first_failure = pool.jobs[i].plan_status;
                snprintf(pool.first_error, sizeof(pool.first_error), "%s",
                         pool.jobs[i].plan_error);
            }
            if (progress) {
                jit_prewarm_event_t ev;
                memset(&ev, 0, sizeof(ev));
                ev.index = i;
                ev.total = count;
                ev.problem = &problems[i];
                ev.result = JIT_PREWARM_FAILED;
                ev.status = pool.jobs[i].plan_status;
                ev.key_hash = "";
                ev.error = pool.jobs[i].plan_error;
                progress(&ev, user);
            }
            pthread_mutex_unlock(&pool.lock);
        }
    }
    if (jobs == 0) {
        long n = sysconf(_SC_NPROCESSORS_ONLN);
        jobs = n > 0 ? (int)n : 1;
    }
    if (jobs > 64)
        jobs = 64;
    pthread_t threads[64];
    int started = 0;
    for (int t = 1; t < jobs; t++)
        if (pthread_create(&threads[started], NULL, worker, &pool) == 0)
            started++;
    worker(&pool); /* the calling thread works too */
    for (int t = 0; t < started; t++)
        pthread_join(threads[t], NULL);
    jit_status_t st = pool.first_failure;
    if (st != JIT_OK)
        jit__fail(&d, st, "%s", pool.first_error);
    free(pool.jobs);
    pthread_mutex_destroy(&pool.lock);
    if (st != JIT_OK)
        return jit__ctx_error(ctx, &d);
    return JIT_OK;
}
