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
#include "prewarm_targets.h"
#include "shapes.h"

const char jit__cli_prewarm_help[] =
    "Usage: jitgemm prewarm FILE [--arch A] [--sm-count N] [--target A:N ...] [--jobs J]\n"
    "                       [--cache-dir D] [--check] [--json]\n"
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
    "  --target A:N    prewarm for arch A planned for N SMs (':N' optional: then the file's\n"
    "                  target.sm_count if the file names arch A, else the arch's default);\n"
    "                  repeat it for several\n"
    "                  targets, e.g. --target sm_90a:132 --target sm_107a:160. Replaces\n"
    "                  --arch, --sm-count and the file's target\n"
    "  --target A:all  one target per SM count of arch A's shipping parts (docs/plan.md;\n"
    "                  MIG slices not included): a cache that serves every one of them\n"
    "  --jobs J        parallel compiles (default 0: one per core)\n"
    "  --cache-dir D   cache directory (default $JITGEMM_CACHE_DIR, $XDG_CACHE_HOME/jitgemm,\n"
    "                  ~/.cache/jitgemm)\n"
    "  --check         compile nothing: list every kernel the list needs that the cache does\n"
    "                  not hold (keys are computed without a compiler run); exit 0 when all\n"
    "                  are there, 1 when any is missing\n"
    "  --json          one JSON object per line per (target, entry, tokens) on stdout: name,\n"
    "                  op, n, k, tokens, arch, sm_count, key, status (compiled|cached|missing|\n"
    "                  duplicate|failed), seconds, error, same_as\n"
    "\n"
    "A progress bar is drawn on stderr when it is a terminal (never with --json). The summary\n"
    "(compiled / already cached / failed, with total and median seconds, and the context's\n"
    "counters) goes to stdout, or to stderr with --json, once per target, and ends with how\n"
    "many of the kernels the cache directory now holds. A kernel an earlier target of the run\n"
    "already covered (another SM count that plans the same kernel) is a 'duplicate': not\n"
    "prewarmed or checked again, and no failure. With --check, each missing kernel is\n"
    "one 'missing' line on stdout. With JITGEMM_COMPILE=never a kernel not in the cache is\n"
    "'missing' and not compiled.\n"
    "Exit status: 0 all compiled or cached and stored, 1 any failed or missing, any kernel is\n"
    "not on disk afterwards (cache refused or not writable, disk full, size cap too small), or\n"
    "FILE is invalid, 2 bad command line.\n";

typedef struct record {
    int done;
    jit_prewarm_result_t result;
    jit_status_t status;
    double seconds;
    char key[JIT_KEY_HASH_LEN + 1];
    char *error;
    /* The kernel of an earlier target of the run (the target it was first seen at): reported,
     * not prewarmed again. */
    int duplicate;
    char same_as[48];
} record_t;

typedef struct state {
    const jit__shape_list_t *list;
    const size_t *entry_of;
    const jit_problem_t *problems;
    record_t *rec;
    size_t count;
    int json, bar;
    const char *arch;
    int sm_count;
    const char *parts;      /* " (H100 PCIe)" for an ARCH:all target, else "" */
    const size_t *index_of; /* problem index of each one handed to jit_prewarm */
    size_t prewarmed;       /* how many were */
    jit__cli_progress_t progress;
} state_t;

/* A kernel refused by compile mode never is "missing", not "failed": the shape list is fine,
 * the cache lacks it. */
static int is_missing(const record_t *r) {
    return r->done && r->result == JIT_PREWARM_FAILED && r->status == JIT_NOT_IN_CACHE;
}

static const char *result_word(const record_t *rec) {
    if (rec->duplicate)
        return "duplicate";
    if (is_missing(rec))
        return "missing";
    switch (rec->result) {
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
    json_object_set_new(o, "arch", json_string(s->arch));
    json_object_set_new(o, "sm_count", json_integer(s->sm_count));
    json_object_set_new(o, "key", r->key[0] ? json_string(r->key) : json_null());
    json_object_set_new(o, "status", json_string(result_word(r)));
    json_object_set_new(o, "seconds", json_real(r->seconds));
    json_object_set_new(o, "error",
                        r->result == JIT_PREWARM_FAILED
                            ? json_string(r->error && *r->error ? r->error : "unknown error")
                            : json_null());
    json_object_set_new(o, "same_as", r->duplicate ? json_string(r->same_as) : json_null());
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
    if (ev->index >= s->prewarmed)
        return;
    size_t index = s->index_of[ev->index];
    record_t *r = &s->rec[index];
    r->done = 1;
    r->result = ev->result;
    r->status = ev->status;
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
        print_json_line(s, index);
    if (s->bar)
        jit__cli_progress_draw(&s->progress, stderr, 0);
}

static void summary_line(FILE *f, const state_t *s, jit_prewarm_result_t which, const char *label) {
    double *t = calloc(s->count ? s->count : 1, sizeof(double));
    size_t n = 0;
    double total = 0;
    for (size_t i = 0; i < s->count && t; i++)
        if (s->rec[i].done && !s->rec[i].duplicate && s->rec[i].result == which) {
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

enum { KEYS_GOOD, KEYS_MISSING };

/* The distinct keys of the problems that did not fail (KEYS_GOOD) or were missing from the cache
 * (KEYS_MISSING), duplicates of an earlier target left out (that target counted them), into
 * *keys (malloc'd, pointing into the records), by sorting: a list may hold a million problems. */
static size_t distinct_keys(const state_t *s, int which, const char ***keys) {
    const char **k = malloc((s->count ? s->count : 1) * sizeof(*k));
    size_t n = 0, w = 0;
    *keys = k;
    if (!k)
        return 0;
    for (size_t i = 0; i < s->count; i++)
        if (s->rec[i].done && s->rec[i].key[0] && !s->rec[i].duplicate &&
            (which == KEYS_MISSING ? is_missing(&s->rec[i])
                                   : s->rec[i].result != JIT_PREWARM_FAILED))
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

static void print_counters(FILE *f, jit_context_t *ctx) {
    jit_stats_t st;
    jit_stats_init(&st);
    if (jit_context_stats(ctx, &st) != JIT_OK)
        return;
    fprintf(f,
            "  counters        %llu memory hits, %llu disk hits, %llu compiles (%.2f s), %llu not "
            "in cache, %llu failures\n",
            (unsigned long long)st.memory_hits, (unsigned long long)st.disk_hits,
            (unsigned long long)st.compiles, st.compile_seconds,
            (unsigned long long)st.not_in_cache, (unsigned long long)st.failures);
}

/* The problems whose kernel an earlier target of the run covered, and how many kernels that
 * is; nothing when there are none, so a single target's summary is as it always was. */
static void duplicates_line(FILE *f, const state_t *s) {
    const char **k = malloc((s->count ? s->count : 1) * sizeof(*k));
    size_t problems = 0, kernels = 0;
    for (size_t i = 0; i < s->count && k; i++)
        if (s->rec[i].duplicate)
            k[problems++] = s->rec[i].key;
    if (problems > 1)
        qsort(k, problems, sizeof(*k), cmp_key);
    for (size_t i = 0; i < problems; i++)
        kernels += i == 0 || strcmp(k[i - 1], k[i]) != 0;
    free(k);
    if (problems)
        fprintf(f, "  duplicates      %5zu %s (%zu %s) of an earlier target, not prewarmed again\n",
                kernels, kernels == 1 ? "kernel" : "kernels", problems,
                problems == 1 ? "problem" : "problems");
}

static void print_summary(FILE *f, const state_t *s, jit_context_t *ctx, const char *dir,
                          size_t kernels, size_t stored, double wall) {
    fprintf(f, "prewarm: %zu %s, %zu distinct %s, %s with %d SMs%s, %.2f s\n", s->count,
            s->count == 1 ? "problem" : "problems", kernels, kernels == 1 ? "kernel" : "kernels",
            jit_context_arch(ctx), jit_context_sm_count(ctx), s->parts, wall);
    fprintf(f, "  cache           %s\n", dir);
    summary_line(f, s, JIT_PREWARM_COMPILED, "compiled");
    summary_line(f, s, JIT_PREWARM_CACHED, "already cached");
    duplicates_line(f, s);
    summary_line(f, s, JIT_PREWARM_FAILED, "failed");
    print_counters(f, ctx);
    fprintf(f, "  stored in cache %5zu of %zu\n", stored, kernels);
}

/* What every target's run shares. */
typedef struct run_opts {
    const char *source; /* FILE as given, for messages */
    const char *cache_dir;
    int jobs, json, check, several_targets;
    const jit__shape_list_t *list;
    const jit_problem_t *problems;
    const size_t *entry_of;
    size_t count;
    /* With several targets: the kernels the earlier ones covered (NULL with one target). */
    jit__cli_keyset_t *seen;
} run_opts_t;

/* --check: one line per missing problem, then the summary. The keys are the ones a compile
 * would have produced, so a later prewarm fills exactly these. */
static void report_check(const state_t *s, jit_context_t *ctx, const char *dir) {
    if (!s->json)
        for (size_t i = 0; i < s->count; i++)
            if (is_missing(&s->rec[i]))
                printf("missing %s:%d %s tokens %lld kernel %s\n", jit_context_arch(ctx),
                       jit_context_sm_count(ctx), s->list->entries[s->entry_of[i]].name,
                       (long long)s->problems[i].m, s->rec[i].key);
    const char **keys = NULL;
    size_t present = distinct_keys(s, KEYS_GOOD, &keys);
    free(keys);
    size_t missing = distinct_keys(s, KEYS_MISSING, &keys);
    free(keys);
    size_t failed = 0, missing_problems = 0;
    for (size_t i = 0; i < s->count; i++) {
        missing_problems += is_missing(&s->rec[i]);
        failed +=
            s->rec[i].done && s->rec[i].result == JIT_PREWARM_FAILED && !is_missing(&s->rec[i]);
    }
    FILE *f = s->json ? stderr : stdout;
    fprintf(f, "check: %zu %s, %s with %d SMs%s\n", s->count,
            s->count == 1 ? "problem" : "problems", jit_context_arch(ctx),
            jit_context_sm_count(ctx), s->parts);
    fprintf(f, "  cache           %s\n", dir);
    fprintf(f, "  in the cache    %5zu %s\n", present, present == 1 ? "kernel" : "kernels");
    fprintf(f, "  missing         %5zu %s (%zu %s)\n", missing, missing == 1 ? "kernel" : "kernels",
            missing_problems, missing_problems == 1 ? "problem" : "problems");
    duplicates_line(f, s);
    fprintf(f, "  failed          %5zu %s\n", failed, failed == 1 ? "problem" : "problems");
}

/* The problems a target hands to jit_prewarm, into `todo` (s->index_of maps them back): every
 * one, or with several targets those whose kernel no earlier target of the run covered. The
 * others are recorded (and with --json printed) as duplicates now. Each problem's key goes to
 * keys[i] ("" where it does not plan: the prewarm reports why), computed as the prewarm
 * computes it, so that two SM counts whose plans give one kernel share it. */
static void split_duplicates(const run_opts_t *o, jit_context_t *ctx, state_t *s, size_t *index_of,
                             jit_problem_t *todo, char (*keys)[JIT_KEY_HASH_LEN + 1]) {
    s->prewarmed = 0;
    s->index_of = index_of;
    for (size_t i = 0; i < s->count; i++) {
        long seen = -1;
        keys[i][0] = '\0';
        if (o->seen && jit__cli_problem_key(ctx, &o->problems[i], keys[i]) == 0)
            seen = jit__cli_keyset_find(o->seen, keys[i]);
        if (seen < 0) {
            index_of[s->prewarmed] = i;
            todo[s->prewarmed++] = o->problems[i];
            continue;
        }
        record_t *r = &s->rec[i];
        r->done = r->duplicate = 1;
        r->result = JIT_PREWARM_CACHED;
        snprintf(r->key, sizeof(r->key), "%s", keys[i]);
        snprintf(r->same_as, sizeof(r->same_as), "%s", o->seen->where[seen]);
        s->progress.done++;
        s->progress.cached++;
        if (s->json)
            print_json_line(s, i);
    }
}

/* After a target: its kernels are covered for the later targets of the run. */
static int remember_keys(const run_opts_t *o, const state_t *s,
                         char (*keys)[JIT_KEY_HASH_LEN + 1]) {
    char where[48];
    snprintf(where, sizeof(where), "%s:%d", s->arch, s->sm_count);
    for (size_t i = 0; o->seen && i < s->count; i++)
        if (keys[i][0] && jit__cli_keyset_add(o->seen, keys[i], where) != 0)
            return -1;
    return 0;
}

/* Each failed problem as an error (a missing one too, unless --check lists it on stdout). */
static void report_failures(const run_opts_t *o, const state_t *s, size_t *failed,
                            size_t *missing) {
    for (size_t i = 0; i < s->count; i++) {
        if (!s->rec[i].done || s->rec[i].result != JIT_PREWARM_FAILED)
            continue;
        if (is_missing(&s->rec[i])) {
            (*missing)++;
            if (o->check)
                continue; /* listed on stdout by report_check */
        } else {
            (*failed)++;
        }
        /* Which target failed matters only when there are several. */
        char where[48] = "";
        if (o->several_targets)
            snprintf(where, sizeof(where), " on %s:%d", s->arch, s->sm_count);
        jit__cli_error("%s (tokens %lld)%s: %s", o->list->entries[o->entry_of[i]].name,
                       (long long)o->problems[i].m, where,
                       s->rec[i].error ? s->rec[i].error : "failed");
    }
}

static int prewarm_target(const run_opts_t *o, const jit__cli_target_t *t) {
    const jit__shape_list_t *list = o->list;
    jit_context_t *ctx = NULL;
    /* The file's SM count belongs to the file's arch: a target naming another arch without a
     * count plans for that arch's own (the GPU's if it is that arch, else the profile's
     * default). */
    int sm_count = t->sm_count;
    if (sm_count <= 0)
        sm_count = !t->arch || (list->arch && jit__arch_find(list->arch) == jit__arch_find(t->arch))
                       ? list->sm_count
                       : 0;
    int rc = jit__cli_context_mode(o->cache_dir, t->arch ? t->arch : list->arch, sm_count,
                                   o->check ? JIT_COMPILE_NEVER : JIT_COMPILE_ALWAYS, &ctx);
    if (rc)
        return rc;

    /* Without a target every problem would fail the same way; say it once, with the fix. */
    const char *arch = jit_context_arch(ctx);
    if (!arch || !*arch) {
        jit__cli_error("no target arch: %s has no target.arch, --arch was not given, and there "
                       "is no GPU to detect it from (e.g. --arch sm_90a)",
                       strcmp(o->source, "-") ? o->source : "<stdin>");
        jit_context_destroy(ctx);
        return JIT_CLI_FAILED;
    }

    char parts[192] = "";
    if (t->parts && *t->parts)
        snprintf(parts, sizeof(parts), " (%s)", t->parts);
    state_t s = {.list = list,
                 .json = o->json,
                 .problems = o->problems,
                 .entry_of = o->entry_of,
                 .count = o->count,
                 .arch = arch,
                 .sm_count = jit_context_sm_count(ctx),
                 .parts = parts};
    size_t alloc = s.count ? s.count : 1;
    s.rec = calloc(alloc, sizeof(*s.rec));
    size_t *index_of = malloc(alloc * sizeof(*index_of));
    jit_problem_t *todo = malloc(alloc * sizeof(*todo));
    char(*problem_keys)[JIT_KEY_HASH_LEN + 1] = malloc(alloc * sizeof(*problem_keys));
    if (!s.rec || !index_of || !todo || !problem_keys) {
        jit__cli_error("out of memory");
        free(s.rec), free(index_of), free(todo), free(problem_keys);
        jit_context_destroy(ctx);
        return JIT_CLI_FAILED;
    }
    s.bar = !o->json && isatty(2);
    s.progress.total = s.count;
    s.progress.width = 30;

    double t0 = jit__cli_now();
    split_duplicates(o, ctx, &s, index_of, todo, problem_keys);
    if (s.bar)
        jit__cli_progress_draw(&s.progress, stderr, 0);
    jit_status_t st = jit_prewarm(ctx, todo, s.prewarmed, o->jobs, on_progress, &s);
    double wall = jit__cli_now() - t0;
    if (s.bar)
        jit__cli_progress_draw(&s.progress, stderr, 1);
    int remembered = remember_keys(o, &s, problem_keys) == 0;
    free(todo);
    free(problem_keys);

    size_t failed = 0, missing = 0;
    report_failures(o, &s, &failed, &missing);
    if (!remembered) {
        jit__cli_error("out of memory: the later targets may prewarm this one's kernels again");
        failed++;
    }
    /* A failure the callback never saw (bad arguments, no toolchain) still has to be shown. */
    if (st != JIT_OK && failed == 0 && missing == 0) {
        const char *msg = jit_last_error(ctx);
        jit__cli_error("%s", msg && *msg ? msg : jit_status_string(st));
        failed = 1;
    }
    char dir[PATH_MAX];
    jit__diag_t d;
    jit__diag_init(&d);
    int resolved = jit__cache_resolve_dir(o->cache_dir, dir, sizeof(dir), &d) == JIT_OK;
    if (!resolved)
        snprintf(dir, sizeof(dir), "(unresolved: %s)", d.msg);
    jit__diag_clear(&d);
    if (o->check) {
        report_check(&s, ctx, dir);
        rc = (failed || missing) ? JIT_CLI_FAILED : JIT_CLI_OK;
    } else {
        const char **keys = NULL;
        size_t kernels = distinct_keys(&s, KEYS_GOOD, &keys);
        size_t stored = resolved ? count_stored(o->cache_dir, keys, kernels) : 0;
        free(keys);
        print_summary(o->json ? stderr : stdout, &s, ctx, dir, kernels, stored, wall);
        if (stored < kernels)
            jit__cli_error(
                "only %zu of %zu kernels are in the cache %s after the prewarm; a later "
                "process will compile the rest again (see the warnings above: a directory "
                "refused or not writable, a full disk, or a cap too small for them)",
                stored, kernels, dir);
        rc = (failed || missing || stored < kernels) ? JIT_CLI_FAILED : JIT_CLI_OK;
    }
    for (size_t i = 0; i < s.count; i++)
        free(s.rec[i].error);
    free(s.rec);
    free(index_of);
    jit_context_destroy(ctx);
    return rc;
}

int jit__cli_prewarm(int argc, char **argv) {
    const char *verb = "prewarm";
    const char *arch = NULL, *sm_text = NULL, *jobs_text = NULL, *cache_dir = NULL;
    int json = 0, check = 0;
    const char *target_texts[JIT_CLI_MAX_TARGETS_GIVEN];
    jit__cli_multi_t targets_given = {"target", "A:N", target_texts, 0, JIT_CLI_MAX_TARGETS_GIVEN};
    const jit__cli_opt_t opts[] = {
        {"arch", "A", &arch, NULL},      {"sm-count", "N", &sm_text, NULL},
        {"jobs", "J", &jobs_text, NULL}, {"cache-dir", "D", &cache_dir, NULL},
        {"check", NULL, NULL, &check},   {"json", NULL, NULL, &json},
    };
    const char *pos[1];
    size_t n_pos = 0;
    int64_t sm_count = 0, jobs = 0;
    int rc = jit__cli_parse_multi(verb, argc, argv, opts, sizeof(opts) / sizeof(opts[0]),
                                  &targets_given, 1, pos, 1, &n_pos);
    if (rc)
        return rc;
    if (n_pos == 0)
        return jit__cli_usage(verb, "missing shape list FILE (or '-' for stdin)");
    if ((rc = jit__cli_arch(verb, arch)) ||
        (rc = jit__cli_int(verb, "sm-count", sm_text, 1, 1000000, &sm_count)) ||
        (rc = jit__cli_int(verb, "jobs", jobs_text, 0, 1024, &jobs)))
        return rc;
    if (targets_given.count && (arch || sm_text))
        return jit__cli_usage(verb,
                              "--target names the arch and SM count; it does not combine "
                              "with --%s",
                              arch ? "arch" : "sm-count");
    static jit__cli_targets_t targets;
    if ((rc = jit__cli_targets_parse(verb, target_texts, targets_given.count, &targets)))
        return rc;
    if (targets.count == 0) {
        targets.items[0] = (jit__cli_target_t){arch, (int)sm_count, ""};
        targets.count = 1;
    }

    jit__shape_list_t list;
    jit__diag_t d;
    jit__diag_init(&d);
    if (jit__shapes_parse_file(pos[0], &list, &d) != JIT_OK) {
        jit__cli_error("%s", d.msg);
        jit__diag_clear(&d);
        return JIT_CLI_FAILED;
    }
    jit__diag_clear(&d);

    run_opts_t o = {.source = pos[0],
                    .cache_dir = cache_dir,
                    .jobs = (int)jobs,
                    .json = json,
                    .check = check,
                    .list = &list};
    o.count = jit__shapes_problem_count(&list);
    jit_problem_t *problems = calloc(o.count ? o.count : 1, sizeof(*problems));
    size_t *entry_of = calloc(o.count ? o.count : 1, sizeof(*entry_of));
    jit__cli_keyset_t seen = {0};
    if (!problems || !entry_of) {
        jit__cli_error("out of memory");
        rc = JIT_CLI_FAILED;
    } else {
        jit__shapes_problems(&list, problems, entry_of);
        o.problems = problems;
        o.entry_of = entry_of;
        o.several_targets = targets.count > 1;
        o.seen = o.several_targets ? &seen : NULL;
        /* Every target runs even after one fails: a fleet wants the whole picture at once. */
        for (size_t t = 0; t < targets.count; t++) {
            int trc = prewarm_target(&o, &targets.items[t]);
            if (trc > rc)
                rc = trc;
        }
    }
    jit__cli_keyset_free(&seen);
    free(problems);
    free(entry_of);
    jit__shapes_free(&list);
    return rc;
}
