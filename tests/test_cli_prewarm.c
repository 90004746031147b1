/*
 * `jitgemm prewarm` and `jitgemm cache` end to end, with the real compiler: a tiny shape list
 * for sm_90a is compiled into a scratch cache, prewarmed again (everything must now be
 * "cached", under the same keys), and the cache verbs are run on the result, including a
 * deliberately damaged cubin.
 */
#include <criterion/criterion.h>
#include <ftw.h>
#include <jansson.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "plan.h"
#include "test_cli_helpers.h"

static char *g_dir;

static void setup(void) {
    g_dir = jt_mkdtemp("cli-prewarm");
    cr_assert_not_null(g_dir);
}

static void teardown(void) {
    jt_rmtree(g_dir);
    free(g_dir);
}

TestSuite(cli_prewarm, .init = setup, .fini = teardown, .timeout = 600);

/* Two entries x two token counts in different bands: four distinct kernels. */
static const char k_list[] =
    "{\"target\": {\"arch\": \"sm_90a\", \"sm_count\": 132}, \"gemms\": [\n"
    "  {\"name\": \"q_proj\", \"op\": \"linear\", \"n\": 512, \"k\": 256, \"tokens\": [1, 300]},\n"
    "  {\"name\": \"gate_up\", \"op\": \"linear_swiglu\", \"n\": 256, \"k\": 128,\n"
    "   \"tokens\": [1, 300]}\n"
    "]}\n";

typedef struct line_rec {
    char name[32];
    long long tokens;
    char key[33];
    char status[16];
} line_rec_t;

static int is_hex32(const char *s) {
    if (strlen(s) != 32)
        return 0;
    for (int i = 0; i < 32; i++)
        if (!strchr("0123456789abcdef", s[i]))
            return 0;
    return 1;
}

/* Parse --json output; every line must be an object with the documented fields. */
static size_t parse_lines(const char *out, line_rec_t *recs, size_t max) {
    size_t n = 0;
    const char *line = out;
    while (*line) {
        const char *end = strchr(line, '\n');
        cr_assert_not_null(end, "unterminated line: %s", line);
        json_error_t e;
        json_t *o = json_loadb(line, (size_t)(end - line), 0, &e);
        cr_assert_not_null(o, "not JSON (%s): %.*s", e.text, (int)(end - line), line);
        cr_assert(json_is_object(o));
        const char *fields[] = {"name", "tokens", "key", "status", "seconds", "error"};
        for (int f = 0; f < 6; f++)
            cr_expect_not_null(json_object_get(o, fields[f]), "line lacks \"%s\"", fields[f]);
        cr_assert_lt(n, max);
        line_rec_t *r = &recs[n++];
        snprintf(r->name, sizeof(r->name), "%s", json_string_value(json_object_get(o, "name")));
        r->tokens = json_integer_value(json_object_get(o, "tokens"));
        const char *status = json_string_value(json_object_get(o, "status"));
        cr_assert_not_null(status);
        snprintf(r->status, sizeof(r->status), "%s", status);
        json_t *err = json_object_get(o, "error"), *key = json_object_get(o, "key");
        json_t *secs = json_object_get(o, "seconds");
        cr_expect(json_is_number(secs) && json_number_value(secs) >= 0.0);
        if (!strcmp(status, "failed")) {
            cr_expect(json_is_string(err) && json_string_length(err) > 0);
            r->key[0] = '\0';
        } else {
            cr_expect(!strcmp(status, "compiled") || !strcmp(status, "cached"), "%s", status);
            cr_expect(json_is_null(err), "error should be null on success");
            cr_assert(json_is_string(key));
            cr_expect(is_hex32(json_string_value(key)), "%s", json_string_value(key));
            snprintf(r->key, sizeof(r->key), "%s", json_string_value(key));
        }
        json_decref(o);
        line = end + 1;
    }
    return n;
}

static const line_rec_t *find(const line_rec_t *recs, size_t n, const char *name, long long t) {
    for (size_t i = 0; i < n; i++)
        if (!strcmp(recs[i].name, name) && recs[i].tokens == t)
            return &recs[i];
    return NULL;
}

static char *list_path(void) {
    size_t n = strlen(g_dir) + 32;
    char *p = malloc(n);
    snprintf(p, n, "%s/shapes.json", g_dir);
    cr_assert_eq(jt_write_file(p, k_list), 0);
    return p;
}

Test(cli_prewarm, json_lines_then_everything_cached) {
    char *path = list_path();
    char cache[1024];
    snprintf(cache, sizeof(cache), "%s/cache", g_dir);

    cli_result_t r = CLI(cache, NULL, "prewarm", path, "--json", "--jobs", "2");
    cr_assert_eq(r.rc, 0, "exit %d: %s", r.rc, r.err);
    line_rec_t first[8], second[8];
    size_t n1 = parse_lines(r.out, first, 8);
    cr_expect_eq(n1, 4);
    size_t compiled = 0;
    for (size_t i = 0; i < n1; i++)
        compiled += !strcmp(first[i].status, "compiled");
    cr_expect_eq(compiled, 4, "four token bands x entries are four distinct kernels");
    /* With --json the summary goes to stderr and stdout holds only the lines. */
    cr_expect(strstr(r.err, "compiled") != NULL, "%s", r.err);
    cr_expect(strstr(r.err, "already cached") != NULL, "%s", r.err);
    cli_free(&r);

    r = CLI(cache, NULL, "prewarm", path, "--json");
    cr_assert_eq(r.rc, 0, "exit %d: %s", r.rc, r.err);
    size_t n2 = parse_lines(r.out, second, 8);
    cr_expect_eq(n2, 4);
    for (size_t i = 0; i < n2; i++) {
        cr_expect_str_eq(second[i].status, "cached", "%s/%lld", second[i].name, second[i].tokens);
        const line_rec_t *was = find(first, n1, second[i].name, second[i].tokens);
        cr_assert_not_null(was);
        cr_expect_str_eq(second[i].key, was->key, "same problem, same key");
    }
    cli_free(&r);

    /* The text form says the same in its summary, on stdout. */
    r = CLI(cache, NULL, "prewarm", path);
    cr_assert_eq(r.rc, 0, "%s", r.err);
    unsigned long cached = 0;
    const char *s = strstr(r.out, "already cached");
    cr_assert_not_null(s, "%s", r.out);
    cr_expect_eq(sscanf(s, "already cached %lu", &cached), 1);
    cr_expect_eq(cached, 4);
    cr_expect(strstr(r.out, "4 problems, 4 distinct kernels") != NULL, "%s", r.out);
    cli_free(&r);
    free(path);
}

Test(cli_prewarm, failures_are_reported_and_exit_1) {
    const char *list =
        "{\"target\": {\"arch\": \"sm_90a\"}, \"gemms\": [\n"
        "  {\"name\": \"good\", \"op\": \"linear\", \"n\": 256, \"k\": 128, \"tokens\": [4]},\n"
        "  {\"name\": \"odd_swiglu\", \"op\": \"linear_swiglu\", \"n\": 255, \"k\": 128, "
        "\"tokens\": [3]}\n"
        "]}\n";
    cli_result_t r = CLI(g_dir, list, "prewarm", "-", "--json");
    cr_expect_eq(r.rc, 1, "%s", r.err);
    line_rec_t recs[4];
    size_t n = parse_lines(r.out, recs, 4);
    cr_assert_eq(n, 2);
    const line_rec_t *good = find(recs, n, "good", 4), *bad = find(recs, n, "odd_swiglu", 3);
    cr_assert(good && bad);
    cr_expect_str_eq(good->status, "compiled");
    cr_expect_str_eq(bad->status, "failed");
    /* Each failure's reason is printed, naming the entry and its token count. */
    cr_expect(strstr(r.err, "jitgemm: error: odd_swiglu (tokens 3): ") != NULL, "%s", r.err);
    cr_expect(strstr(r.err, "255") != NULL, "%s", r.err);
    cli_free(&r);

    r = CLI(g_dir, list, "prewarm", "-");
    cr_expect_eq(r.rc, 1);
    const char *f = strstr(r.out, "failed");
    unsigned long failed = 0;
    cr_assert_not_null(f, "%s", r.out);
    cr_expect_eq(sscanf(f, "failed %lu", &failed), 1);
    cr_expect_eq(failed, 1);
    cli_free(&r);
}

/* `cache list --json` lines as parsed objects; caller json_decref's each. */
static size_t list_entries(const char *cache, json_t **out, size_t max) {
    cli_result_t r = CLI(cache, NULL, "cache", "list", "--json");
    cr_assert_eq(r.rc, 0, "%s", r.err);
    size_t n = 0;
    for (const char *line = r.out; *line;) {
        const char *end = strchr(line, '\n');
        cr_assert_not_null(end);
        cr_assert_lt(n, max);
        out[n] = json_loadb(line, (size_t)(end - line), 0, NULL);
        cr_assert_not_null(out[n], "not JSON: %.*s", (int)(end - line), line);
        n++;
        line = end + 1;
    }
    cli_free(&r);
    return n;
}

Test(cli_prewarm, arch_and_sm_count_options_override_the_file) {
    char *path = list_path(); /* says sm_90a with 132 SMs */
    cli_result_t r = CLI(g_dir, NULL, "prewarm", path, "--arch", "sm_120a", "--sm-count", "100");
    cr_assert_eq(r.rc, 0, "%s", r.err);
    cr_expect(strstr(r.out, "sm_120a with 100 SMs") != NULL, "%s", r.out);
    cli_free(&r);
    json_t *e[8];
    size_t n = list_entries(g_dir, e, 8);
    cr_expect_eq(n, 4);
    for (size_t i = 0; i < n; i++) {
        cr_expect_str_eq(json_string_value(json_object_get(e[i], "arch")), "sm_120a");
        /* The SM count reaches the key only through the plan's choices (docs/cache.md). */
        const char *text = json_string_value(json_object_get(e[i], "key_text"));
        cr_expect(text && !strstr(text, "sm_count"), "%s", text ? text : "(none)");
        json_decref(e[i]);
    }
    free(path);
}

Test(cli_prewarm, cache_verbs_on_a_prewarmed_cache) {
    char *path = list_path();
    cli_result_t r = CLI(g_dir, NULL, "prewarm", path, "--json");
    cr_assert_eq(r.rc, 0, "%s", r.err);
    line_rec_t recs[8];
    size_t n = parse_lines(r.out, recs, 8);
    cli_free(&r);

    /* list: one line per entry, every prewarmed key present, with its columns. */
    r = CLI(g_dir, NULL, "cache", "list");
    cr_assert_eq(r.rc, 0, "%s", r.err);
    for (size_t i = 0; i < n; i++)
        cr_expect(strstr(r.out, recs[i].key) != NULL, "%s missing from list", recs[i].key);
    cr_expect(strstr(r.out, "4 entries") != NULL, "%s", r.out);
    cr_expect(strstr(r.out, "sm_90a") != NULL);
    cr_expect_eq(cli_count_lines(r.out), 1 + 4 + 1, "header, four entries, summary: %s", r.out);
    cli_free(&r);

    r = CLI(g_dir, NULL, "cache", "verify");
    cr_expect_eq(r.rc, 0, "%s%s", r.out, r.err);
    cr_expect(strstr(r.out, "verified 4 entries") != NULL, "%s", r.out);
    cli_free(&r);

    /* Damage one cubin: verify reports that entry and fails; gc removes it. */
    char cubin[1200];
    snprintf(cubin, sizeof(cubin), "%s/kernels/%s.cubin", g_dir, recs[0].key);
    cr_assert_eq(jt_write_file(cubin, "not a cubin"), 0);
    r = CLI(g_dir, NULL, "cache", "verify");
    cr_expect_eq(r.rc, 1);
    cr_expect(strstr(r.out, recs[0].key) != NULL, "%s", r.out);
    cli_free(&r);
    r = CLI(g_dir, NULL, "cache", "verify", "--json");
    cr_expect_eq(r.rc, 1);
    json_t *o = json_loads(r.out, JSON_DISABLE_EOF_CHECK, NULL);
    cr_assert_not_null(o, "%s", r.out);
    cr_expect_str_eq(json_string_value(json_object_get(o, "hash")), recs[0].key);
    cr_expect(json_is_string(json_object_get(o, "problem")));
    json_decref(o);
    cli_free(&r);

    r = CLI(g_dir, NULL, "cache", "gc", "--json");
    cr_assert_eq(r.rc, 0, "%s", r.err);
    o = json_loads(r.out, 0, NULL);
    cr_assert_not_null(o, "%s", r.out);
    cr_expect_geq(json_integer_value(json_object_get(o, "removed")), 1);
    json_decref(o);
    cli_free(&r);
    r = CLI(g_dir, NULL, "cache", "list");
    cr_expect(strstr(r.out, recs[0].key) == NULL, "damaged entry survived gc");
    cr_expect(strstr(r.out, "3 entries") != NULL, "%s", r.out);
    cli_free(&r);
    r = CLI(g_dir, NULL, "cache", "verify");
    cr_expect_eq(r.rc, 0, "%s", r.out);
    cli_free(&r);

    /* A second gc finds nothing: every valid entry is kept. */
    r = CLI(g_dir, NULL, "cache", "gc");
    cr_expect_eq(r.rc, 0);
    cr_expect(strstr(r.out, "removed 0 entries") != NULL, "%s", r.out);
    cli_free(&r);

    r = CLI(g_dir, NULL, "cache", "clear");
    cr_expect_eq(r.rc, 0);
    cr_expect(strstr(r.out, "removed 3 entries") != NULL, "%s", r.out);
    cli_free(&r);
    r = CLI(g_dir, NULL, "cache", "list");
    cr_expect(strstr(r.out, "0 entries") != NULL, "%s", r.out);
    cli_free(&r);
    free(path);
}

Test(cli_prewarm, cache_dir_option_beats_the_environment) {
    char *path = list_path();
    char env_dir[1024], opt_dir[1024], manifest[1100];
    snprintf(env_dir, sizeof(env_dir), "%s/from-env", g_dir);
    snprintf(opt_dir, sizeof(opt_dir), "%s/from-option", g_dir);
    cli_result_t r = CLI(env_dir, NULL, "prewarm", path, "--cache-dir", opt_dir);
    cr_assert_eq(r.rc, 0, "%s", r.err);
    cr_expect(strstr(r.out, opt_dir) != NULL, "summary names the cache: %s", r.out);
    cli_free(&r);
    struct stat st;
    snprintf(manifest, sizeof(manifest), "%s/manifest.json", opt_dir);
    cr_expect_eq(stat(manifest, &st), 0, "no manifest in the --cache-dir directory");
    snprintf(manifest, sizeof(manifest), "%s/manifest.json", env_dir);
    cr_expect_neq(stat(manifest, &st), 0, "the environment's directory was used");
    free(path);
}

/* Rewrite one field of an entry's sidecar (kernels/<hash>.json), as an older build would have. */
static void edit_sidecar(const char *hash, const char *field, json_t *value) {
    char path[1200];
    snprintf(path, sizeof(path), "%s/kernels/%s.json", g_dir, hash);
    json_t *o = json_load_file(path, 0, NULL);
    cr_assert_not_null(o, "no sidecar at %s", path);
    if (!strcmp(field, "nvrtc")) {
        json_t *tc = json_object_get(o, "toolchain");
        cr_assert(json_is_object(tc), "sidecar has no toolchain object");
        json_object_set_new(tc, "nvrtc", value);
    } else {
        json_object_set_new(o, field, value);
    }
    cr_assert_eq(json_dump_file(o, path, JSON_COMPACT), 0);
    json_decref(o);
}

/* An entry of another NVRTC or another key format is valid, and other hosts serve it: gc keeps
 * it unless told to drop that toolchain or other versions. */
Test(cli_prewarm, gc_removes_other_toolchains_and_generators_only_when_told) {
    char *path = list_path();
    cli_result_t r = CLI(g_dir, NULL, "prewarm", path, "--json");
    cr_assert_eq(r.rc, 0, "%s", r.err);
    line_rec_t recs[8];
    size_t n = parse_lines(r.out, recs, 8);
    cr_assert_eq(n, 4);
    cli_free(&r);

    edit_sidecar(recs[0].key, "nvrtc", json_string("9.9"));
    edit_sidecar(recs[1].key, "generator_version", json_integer(JIT_KEY_FORMAT_VERSION + 7));
    r = CLI(g_dir, NULL, "cache", "gc");
    cr_assert_eq(r.rc, 0, "%s", r.err);
    cr_expect(strstr(r.out, "removed 0 entries") != NULL, "%s", r.out);
    cli_free(&r);
    r = CLI(g_dir, NULL, "cache", "gc", "--drop-toolchain", "9.9", "--drop-other-versions",
            "--json");
    cr_assert_eq(r.rc, 0, "%s", r.err);
    json_t *o = json_loads(r.out, 0, NULL);
    cr_assert_not_null(o, "%s", r.out);
    cr_expect_eq(json_integer_value(json_object_get(o, "removed")), 2, "%s", r.out);
    json_decref(o);
    cli_free(&r);

    r = CLI(g_dir, NULL, "cache", "list");
    cr_expect(strstr(r.out, recs[0].key) == NULL, "other toolchain's entry kept");
    cr_expect(strstr(r.out, recs[1].key) == NULL, "other generator's entry kept");
    cr_expect(strstr(r.out, recs[2].key) != NULL, "current entry removed");
    cr_expect(strstr(r.out, recs[3].key) != NULL, "current entry removed");
    cli_free(&r);

    /* gc uses no toolchain: naming one is a usage error, and removes nothing. */
    r = CLI(g_dir, NULL, "cache", "gc", "--toolkit-dir", "/nonexistent-toolkit");
    CLI_EXPECT(r, 2, "--drop-toolchain");
    cli_free(&r);
    r = CLI(g_dir, NULL, "cache", "list");
    cr_expect(strstr(r.out, "2 entries") != NULL, "a refused gc removed something: %s", r.out);
    cli_free(&r);
    free(path);
}

/* Every file under the cache with its size and modification time, one per line (malloc'd):
 * equal snapshots mean nothing was written, renamed or removed. */
static char *g_snap;
static size_t g_snap_len;
static int snap_one(const char *path, const struct stat *st, int type, struct FTW *ftw) {
    (void)type;
    (void)ftw;
    char line[1400];
    int n = snprintf(line, sizeof(line), "%s %lld %lld.%09ld\n", path, (long long)st->st_size,
                     (long long)st->st_mtim.tv_sec, st->st_mtim.tv_nsec);
    g_snap = realloc(g_snap, g_snap_len + (size_t)n + 1);
    memcpy(g_snap + g_snap_len, line, (size_t)n + 1);
    g_snap_len += (size_t)n;
    return 0;
}
static char *snapshot(const char *dir) {
    g_snap = NULL;
    g_snap_len = 0;
    cr_assert_eq(nftw(dir, snap_one, 16, FTW_PHYS), 0);
    return g_snap;
}

Test(cli_prewarm, gc_dry_run_reports_what_gc_removes_and_changes_nothing) {
    char *path = list_path();
    cli_result_t r = CLI(g_dir, NULL, "prewarm", path, "--json");
    cr_assert_eq(r.rc, 0, "%s", r.err);
    line_rec_t recs[8];
    size_t n = parse_lines(r.out, recs, 8);
    cr_assert_eq(n, 4);
    cli_free(&r);
    edit_sidecar(recs[0].key, "nvrtc", json_string("9.9"));
    edit_sidecar(recs[1].key, "generator_version", json_integer(JIT_KEY_FORMAT_VERSION + 7));
    char cubin[1200];
    snprintf(cubin, sizeof(cubin), "%s/kernels/%s.cubin", g_dir, recs[2].key);
    cr_assert_eq(jt_write_file(cubin, "not a cubin"), 0);

    char *before = snapshot(g_dir);
    /* By default only the damaged entry goes. */
    r = CLI(g_dir, NULL, "cache", "gc", "--dry-run");
    cr_assert_eq(r.rc, 0, "%s", r.err);
    cr_expect(strstr(r.out, "would remove 1 item") != NULL, "%s", r.out);
    cr_expect(strstr(r.out, recs[0].key) == NULL && strstr(r.out, recs[1].key) == NULL,
              "a valid entry would be removed:\n%s", r.out);
    cli_free(&r);
    r = CLI(g_dir, NULL, "cache", "gc", "--dry-run", "--drop-toolchain", "9.9",
            "--drop-other-versions");
    cr_assert_eq(r.rc, 0, "%s", r.err);
    const char *want[][2] = {{recs[0].key, "built by NVRTC 9.9, a toolchain gc was told to drop"},
                             {recs[1].key, "key format"},
                             {recs[2].key, "damaged"}};
    for (size_t i = 0; i < 3; i++) {
        char line[256];
        snprintf(line, sizeof(line), "would remove %s: %s", want[i][0], want[i][1]);
        cr_expect(strstr(r.out, line) != NULL, "'%s' missing:\n%s", line, r.out);
    }
    cr_expect(strstr(r.out, recs[3].key) == NULL, "a current entry reported:\n%s", r.out);
    cr_expect(strstr(r.out, "would remove 3 items") != NULL, "%s", r.out);
    cli_free(&r);
    r = CLI(g_dir, NULL, "cache", "gc", "--dry-run", "--json", "--drop-toolchain=9.9",
            "--drop-other-versions");
    cr_assert_eq(r.rc, 0, "%s", r.err);
    cr_expect_eq(cli_count_lines(r.out), 4, "three items and the count:\n%s", r.out);
    const char *last = r.out + strlen(r.out) - 1;
    while (last > r.out && last[-1] != '\n')
        last--;
    json_t *o = json_loads(last, 0, NULL);
    cr_assert_not_null(o, "%s", r.out);
    cr_expect_eq(json_integer_value(json_object_get(o, "would_remove")), 3, "%s", r.out);
    json_decref(o);
    cli_free(&r);
    char *after = snapshot(g_dir);
    cr_expect_str_eq(after, before, "a dry run changed the cache");
    free(before);
    free(after);

    /* The real gc removes exactly what the dry run listed. */
    r = CLI(g_dir, NULL, "cache", "gc", "--json", "--drop-toolchain", "9.9",
            "--drop-other-versions");
    cr_assert_eq(r.rc, 0, "%s", r.err);
    o = json_loads(r.out, 0, NULL);
    cr_assert_not_null(o, "%s", r.out);
    cr_expect_eq(json_integer_value(json_object_get(o, "removed")), 3, "%s", r.out);
    json_decref(o);
    cli_free(&r);

    r = CLI(g_dir, NULL, "cache", "list", "--dry-run");
    CLI_EXPECT(r, 2, "--dry-run applies to 'cache gc' only");
    cli_free(&r);
    free(path);
}

/* ---- what reached the disk ---------------------------------------------------------------- */

/* A prewarm exists to fill the disk: a directory the library refuses (here: writable by
 * everyone) leaves the kernels in memory only, and that must be a failure that says so. */
Test(cli_prewarm, refused_cache_directory_fails_and_says_nothing_was_stored) {
    char *path = list_path();
    char cache[1024];
    snprintf(cache, sizeof(cache), "%s/open", g_dir);
    cr_assert_eq(mkdir(cache, 0700), 0);
    cr_assert_eq(chmod(cache, 0777), 0);
    cli_result_t r = CLI(NULL, NULL, "prewarm", path, "--cache-dir", cache);
    cr_expect_eq(r.rc, 1, "exit %d; stdout: %s stderr: %s", r.rc, r.out, r.err);
    cr_expect(strstr(r.err, "0 of 4 kernels") && strstr(r.err, cache), "%s", r.err);
    cr_expect(strstr(r.out, "stored in cache") != NULL, "summary: %s", r.out);
    cli_free(&r);
    free(path);
}

/* A size cap below one kernel keeps only the last one published: the prewarm fails, says how
 * many of its kernels the disk holds, and the cap is warned about once. */
Test(cli_prewarm, kernels_evicted_by_the_cap_fail_the_prewarm) {
    char *path = list_path();
    char cache[1024], env_dir[1100];
    snprintf(cache, sizeof(cache), "%s/capped", g_dir);
    snprintf(env_dir, sizeof(env_dir), "JITGEMM_CACHE_DIR=%s", cache);
    const char *argv[] = {JITGEMM_CLI_PATH, "prewarm", path, "--jobs", "1", NULL};
    const char *env[] = {env_dir, "JITGEMM_CACHE_MAX_BYTES=1K", NULL};
    cli_result_t r = {0};
    r.rc = jt_run(argv, env, NULL, &r.out, &r.err);
    cr_expect_eq(r.rc, 1, "exit %d; stdout: %s stderr: %s", r.rc, r.out, r.err);
    cr_expect(strstr(r.err, "1 of 4 kernels") != NULL, "%s", r.err);
    cr_expect(strstr(r.err, "size cap") != NULL, "%s", r.err);
    cr_expect_eq(strstr(r.err, "size cap") ? strstr(strstr(r.err, "size cap") + 1, "size cap (")
                                           : NULL,
                 NULL, "the cap is warned about once: %s", r.err);
    cli_free(&r);

    /* The same list into a cache with room: everything stored, exit 0. */
    r = CLI(cache, NULL, "prewarm", path);
    cr_expect_eq(r.rc, 0, "%s", r.err);
    cr_expect(strstr(r.out, "stored in cache") != NULL, "%s", r.out);
    cli_free(&r);
    free(path);
}

/* The file's SM count is the file's arch's: --arch naming another arch without --sm-count plans
 * for that arch's own default, not for the count the file gives its own arch. */
Test(cli_prewarm, arch_without_sm_count_uses_that_archs_default) {
    size_t n = strlen(g_dir) + 32;
    char *path = malloc(n);
    snprintf(path, n, "%s/shapes-77.json", g_dir);
    cr_assert_eq(jt_write_file(path, "{\"target\": {\"arch\": \"sm_90a\", \"sm_count\": 77}, "
                                     "\"gemms\": [{\"name\": \"q\", \"op\": \"linear\", "
                                     "\"n\": 256, \"k\": 128, \"tokens\": [1]}]}\n"),
                 0);
    char want[64];
    snprintf(want, sizeof(want), "sm_120a with %d SMs",
             jit__arch_find("sm_120a")->default_sm_count);
    cli_result_t r = CLI(g_dir, NULL, "prewarm", path, "--arch", "sm_120a");
    cr_assert_eq(r.rc, 0, "%s", r.err);
    cr_expect(strstr(r.out, want) != NULL, "want '%s': %s", want, r.out);
    cli_free(&r);
    /* The same arch, spelt another way, keeps the file's count. */
    r = CLI(g_dir, NULL, "prewarm", path, "--arch", "90a");
    cr_assert_eq(r.rc, 0, "%s", r.err);
    cr_expect(strstr(r.out, "sm_90a with 77 SMs") != NULL, "%s", r.out);
    cli_free(&r);
    free(path);
}
