/*
 * `jitgemm prewarm FILE`: compile every kernel a deployment's shape list needs, so that the
 * serving host never compiles on a request. One problem per (entry, token count); the library
 * dedups problems that share a key and compiles in parallel. Results are reported as they
 * finish (the progress callback runs one at a time), so `--json` output streams and carries
 * each line's entry name and token count rather than relying on order.
 */
#include <jansson.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "arch.h"
#include "cache.h"
#include "cli.h"
#include "shapes.h"

const char jit__cli_prewarm_help[] =
    "Usage: jitgemm prewarm FILE [--arch A] [--sm-count N] [--jobs J] [--cache-dir D] [--json]\n"
    "\n"
    "Compile every kernel the shape list FILE needs into the cache (FILE '-' reads stdin).\n"
    "One problem per (gemm entry, token count); problems that share a kernel are compiled\n"
    "once. Needs no GPU. Format of FILE: docs/shape-list.md.\n"
    "\n"
    "Options:\n"
    "  --arch A        target architecture (sm_90a, sm_100a, sm_103a, sm_107a, sm_120a);\n"
    "                  overrides the file's target.arch (default: the current GPU)\n"
    "  --sm-count N    SM count to plan for; overrides the file's target.sm_count, which\n"
    "                  applies only to the file's own arch (with --arch naming another, that\n"
    "                  arch's default SM count is used)\n"
    "  --jobs J        parallel compiles (default 0: one per core)\n"
    "  --cache-dir D   cache directory (default $JITGEMM_CACHE_DIR, $XDG_CACHE_HOME/jitgemm,\n"
    "                  ~/.cache/jitgemm)\n"
    "  --json          one JSON object per line per (entry, tokens) on stdout: name, op, n, k,\n"
    "                  tokens, key, status (compiled|cached|failed), seconds, error\n"
    "\n"
    "A progress bar is drawn on stderr when it is a terminal (never with --json). The summary\n"
    "(compiled / already cached / failed, with total and median seconds) goes to stdout, or to\n"
    "stderr with --json, and ends with how many of the kernels the cache directory now holds.\n"
    "Exit status: 0 all compiled or cached and stored, 1 any failed, any kernel is not on disk\n"
    "afterwards (cache refused or not writable, disk full, size cap too small), or FILE is\n"
    "invalid, 2 bad command line.\n";

typedef struct record {
    int done;
    jit_prewarm_result_t result;
    double seconds;
    char key[JIT_KEY_HASH_LEN + 1];
    char *error;
} record_t;

typedef struct state {
    const jit__shape_list_t *list;
    const size_t *entry_of;
    const jit_problem_t *problems;
    record_t *rec;
    size_t count;
    int json, bar;
    jit__cli_progress_t progress;
} state_t;

static const char *result_word(jit_prewarm_result_t r) {
    switch (r) {
    case JIT_PREWARM_COMPILED:
        return "compiled";
    case JIT_PREWARM_CACHED:
        return "cached";
    default:
        return "failed";
    }
}

static void print_json_line(const state_t *s, size_t i) {
    const jit__shape_entry_t *e = &s->list->entries[s->entry_of[i]];
    const record_t *r = &s->rec[i];
    json_t *o = json_object();
    json_object_set_new(o, "name", json_string(e->name));
    json_object_set_new(o, "op", json_string(jit_epilogue_name(e->op)));
    json_object_set_new(o, "n", json_integer(e->n));
    json_object_set_new(o, "k", json_integer(e->k));
    json_object_set_new(o, "tokens", json_integer(s->problems[i].m));
    json_object_set_new(o, "key", r->key[0] ? json_string(r->key) : json_null());
    json_object_set_new(o, "status", json_string(result_word(r->result)));
    json_object_set_new(o, "seconds", json_real(r->seconds));
    json_object_set_new(o, "error",
                        r->result == JIT_PREWARM_FAILED
                            ? json_string(r->error && *r->error ? r->error : "unknown error")
                            : json_null());
    /* Microseconds are plenty; the default 17 digits only show the clock's noise. */
    char *text = json_dumps(o, JSON_COMPACT | JSON_PRESERVE_ORDER | JSON_REAL_PRECISION(6));
    json_decref(o);
    if (text) {
        puts(text);
        fflush(stdout);
        free(text);
    }
}

static void on_progress(const jit_prewarm_event_t *ev, void *user) {
    state_t *s = user;
    if (ev->index >= s->count)
        return;
    record_t *r = &s->rec[ev->index];
    r->done = 1;
    r->result = ev->result;
    r->seconds = ev->seconds;
    snprintf(r->key, sizeof(r->key), "%s", ev->key_hash ? ev->key_hash : "");
    if (ev->result == JIT_PREWARM_FAILED) {
        const char *why = ev->error && *ev->error ? ev->error : jit_status_string(ev->status);
        r->error = strdup(why);
    }
    s->progress.done++;
    if (ev->result == JIT_PREWARM_COMPILED)
        s->progress.compiled++;
    else if (ev->result == JIT_PREWARM_CACHED)
        s->progress.cached++;
    else
        s->progress.failed++;
    if (s->json)
        print_json_line(s, ev->index);
    if (s->bar)
        jit__cli_progress_draw(&s->progress, stderr, 0);
}

static void summary_line(FILE *f, const state_t *s, jit_prewarm_result_t which, const char *label) {
    double *t = calloc(s->count ? s->count : 1, sizeof(double));
    size_t n = 0;
    double total = 0;
    for (size_t i = 0; i < s->count && t; i++)
        if (s->rec[i].done && s->rec[i].result == which) {
            t[n++] = s->rec[i].seconds;
            total += s->rec[i].seconds;
        }
    /* A failure's time says nothing useful (it may be a planning error that took nothing). */
    if (n == 0 || which == JIT_PREWARM_FAILED)
        fprintf(f, "  %-15s %5zu\n", label, n);
    else
        fprintf(f, "  %-15s %5zu   total %8.3f s   median %7.3f s\n", label, n, total,
                jit__cli_median(t, n));
    free(t);
}

static int cmp_key(const void *a, const void *b) {
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* The distinct keys of the problems that did not fail, into *keys (malloc'd, pointing into the
 * records), by sorting: a list may hold a million problems. */
static size_t distinct_keys(const state_t *s, const char ***keys) {
    const char **k = malloc((s->count ? s->count : 1) * sizeof(*k));
    size_t n = 0, w = 0;
    *keys = k;
    if (!k)
        return 0;
    for (size_t i = 0; i < s->count; i++)
        if (s->rec[i].done && s->rec[i].key[0] && s->rec[i].result != JIT_PREWARM_FAILED)
            k[n++] = s->rec[i].key;
    if (n > 1)
        qsort(k, n, sizeof(*k), cmp_key);
    for (size_t i = 0; i < n; i++)
        if (w == 0 || strcmp(k[w - 1], k[i]))
            k[w++] = k[i];
    return w;
}

/* How many of `keys` the cache directory now holds as whole, trusted entries. A prewarm is run
 * for the disk, and the library carries on in memory when the disk fails it (a directory it
 * refuses or cannot write, a full disk, a cap that evicts what it just stored), so what the
 * compiles returned says nothing about what a later process will find. */
/* How many of `keys` the cache `dir` (as given: NULL for the environment's; a list names its
 * read-only layers too, where a kernel may be found) serves. */
static size_t count_stored(const char *dir, const char *const *keys, size_t n) {
    jit__cache_t *c = NULL;
    size_t stored = 0;
    /* Silent: the context already warned about this directory. */
    if (jit__cache_open(dir, 0, JIT_LOG_SILENT, &c, NULL) != JIT_OK)
        return 0;
    for (size_t i = 0; i < n; i++) {
        jit__cache_entry_t e;
        void *bin = NULL;
        size_t size = 0;
        int found = 0;
        if (jit__cache_get(c, keys[i], &e, &bin, &size, &found, NULL) == JIT_OK && found)
            stored++;
        free(bin);
    }
    jit__cache_close(c);
    return stored;
}

static void print_summary(FILE *f, const state_t *s, jit_context_t *ctx, const char *dir,
                          size_t kernels, size_t stored, double wall) {
    fprintf(f, "prewarm: %zu %s, %zu distinct %s, %s with %d SMs, %.2f s\n", s->count,
            s->count == 1 ? "problem" : "problems", kernels, kernels == 1 ? "kernel" : "kernels",
            jit_context_arch(ctx), jit_context_sm_count(ctx), wall);
    fprintf(f, "  cache           %s\n", dir);
    summary_line(f, s, JIT_PREWARM_COMPILED, "compiled");
    summary_line(f, s, JIT_PREWARM_CACHED, "already cached");
    summary_line(f, s, JIT_PREWARM_FAILED, "failed");
    fprintf(f, "  stored in cache %5zu of %zu\n", stored, kernels);
}

int jit__cli_prewarm(int argc, char **argv) {
    const char *verb = "prewarm";
    const char *arch = NULL, *sm_text = NULL, *jobs_text = NULL, *cache_dir = NULL;
    int json = 0;
    const jit__cli_opt_t opts[] = {
        {"arch", "A", &arch, NULL},      {"sm-count", "N", &sm_text, NULL},
        {"jobs", "J", &jobs_text, NULL}, {"cache-dir", "D", &cache_dir, NULL},
        {"json", NULL, NULL, &json},
    };
    const char *pos[1];
    size_t n_pos = 0;
    int64_t sm_count = 0, jobs = 0;
    int rc = jit__cli_parse(verb, argc, argv, opts, sizeof(opts) / sizeof(opts[0]), pos, 1, &n_pos);
    if (rc)
        return rc;
    if (n_pos == 0)
        return jit__cli_usage(verb, "missing shape list FILE (or '-' for stdin)");
    if ((rc = jit__cli_arch(verb, arch)) ||
        (rc = jit__cli_int(verb, "sm-count", sm_text, 1, 1000000, &sm_count)) ||
        (rc = jit__cli_int(verb, "jobs", jobs_text, 0, 1024, &jobs)))
        return rc;

    jit__shape_list_t list;
    jit__diag_t d;
    jit__diag_init(&d);
    if (jit__shapes_parse_file(pos[0], &list, &d) != JIT_OK) {
        jit__cli_error("%s", d.msg);
        jit__diag_clear(&d);
        return JIT_CLI_FAILED;
    }
    jit__diag_clear(&d);

    /* The file's SM count belongs to the file's arch: --arch naming another one plans for that
     * arch's own count (the GPU's if it is that arch, else the profile's default). */
    int file_sms = list.sm_count;
    if (arch && (!list.arch || jit__arch_find(arch) != jit__arch_find(list.arch)))
        file_sms = 0;
    jit_context_t *ctx = NULL;
    rc = jit__cli_context(cache_dir, arch ? arch : list.arch, sm_count ? (int)sm_count : file_sms,
                          &ctx);
    if (rc) {
        jit__shapes_free(&list);
        return rc;
    }

    /* Without a target every problem would fail the same way; say it once, with the fix. */
    const char *target = jit_context_arch(ctx);
    if (!target || !*target) {
        jit__cli_error("no target arch: %s has no target.arch, --arch was not given, and there "
                       "is no GPU to detect it from (e.g. --arch sm_90a)",
                       strcmp(pos[0], "-") ? pos[0] : "<stdin>");
        jit_context_destroy(ctx);
        jit__shapes_free(&list);
        return JIT_CLI_FAILED;
    }

    state_t s = {.list = &list, .json = json};
    s.count = jit__shapes_problem_count(&list);
    jit_problem_t *problems = calloc(s.count, sizeof(*problems));
    size_t *entry_of = calloc(s.count, sizeof(*entry_of));
    s.rec = calloc(s.count, sizeof(*s.rec));
    if (!problems || !entry_of || !s.rec) {
        jit__cli_error("out of memory");
        rc = JIT_CLI_FAILED;
        goto done;
    }
    jit__shapes_problems(&list, problems, entry_of);
    s.problems = problems;
    s.entry_of = entry_of;
    s.bar = !json && isatty(2);
    s.progress.total = s.count;
    s.progress.width = 30;
    if (s.bar)
        jit__cli_progress_draw(&s.progress, stderr, 0);

    double t0 = jit__cli_now();
    jit_status_t st = jit_prewarm(ctx, problems, s.count, (int)jobs, on_progress, &s);
    double wall = jit__cli_now() - t0;
    if (s.bar)
        jit__cli_progress_draw(&s.progress, stderr, 1);

    size_t failed = 0;
    for (size_t i = 0; i < s.count; i++) {
        if (!s.rec[i].done || s.rec[i].result != JIT_PREWARM_FAILED)
            continue;
        failed++;
        jit__cli_error("%s (tokens %lld): %s", list.entries[entry_of[i]].name,
                       (long long)problems[i].m, s.rec[i].error ? s.rec[i].error : "failed");
    }
    /* A failure the callback never saw (bad arguments, no toolchain) still has to be shown. */
    if (st != JIT_OK && failed == 0) {
        const char *msg = jit_last_error(ctx);
        jit__cli_error("%s", msg && *msg ? msg : jit_status_string(st));
    }
    char dir[PATH_MAX];
    jit__diag_init(&d);
    int resolved = jit__cache_resolve_dir(cache_dir, dir, sizeof(dir), &d) == JIT_OK;
    if (!resolved)
        snprintf(dir, sizeof(dir), "(unresolved: %s)", d.msg);
    jit__diag_clear(&d);
    const char **keys = NULL;
    size_t kernels = distinct_keys(&s, &keys);
    size_t stored = resolved ? count_stored(cache_dir, keys, kernels) : 0;
    free(keys);
    print_summary(json ? stderr : stdout, &s, ctx, dir, kernels, stored, wall);
    if (stored < kernels)
        jit__cli_error("only %zu of %zu kernels are in the cache %s after the prewarm; a later "
                       "process will compile the rest again (see the warnings above: a directory "
                       "refused or not writable, a full disk, or a cap too small for them)",
                       stored, kernels, dir);
    rc = (st != JIT_OK || failed || stored < kernels) ? JIT_CLI_FAILED : JIT_CLI_OK;

done:
    if (s.rec)
        for (size_t i = 0; i < s.count; i++)
            free(s.rec[i].error);
    free(s.rec);
    free(problems);
    free(entry_of);
    jit_context_destroy(ctx);
    jit__shapes_free(&list);
    return rc;
}
