/*
 * `jitgemm cache stats`: entries, bytes and the per-arch and per-toolchain breakdown agree with
 * the files a two-target prewarm left in the cache, and the cap is the one in force.
 */
#include <criterion/criterion.h>
#include <dirent.h>
#include <jansson.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "test_cli_helpers.h"

static char *g_dir;
static char g_cache[512];

static void setup(void) {
    g_dir = jt_mkdtemp("cli-stats");
    cr_assert_not_null(g_dir);
    snprintf(g_cache, sizeof(g_cache), "%s/cache", g_dir);
}

static void teardown(void) {
    jt_rmtree(g_dir);
    free(g_dir);
}

TestSuite(cli_cache_stats, .init = setup, .fini = teardown, .timeout = 600);

/* Sum of the sizes of kernels/ *.cubin, and how many there are. */
static uint64_t cubin_bytes(size_t *count) {
    char dir[1100];
    snprintf(dir, sizeof(dir), "%s/kernels", g_cache);
    DIR *d = opendir(dir);
    cr_assert_not_null(d);
    uint64_t total = 0;
    *count = 0;
    for (struct dirent *e; (e = readdir(d));) {
        size_t len = strlen(e->d_name);
        if (len <= 6 || strcmp(e->d_name + len - 6, ".cubin"))
            continue;
        char path[1400];
        snprintf(path, sizeof(path), "%s/%s", dir, e->d_name);
        struct stat st;
        cr_assert_eq(stat(path, &st), 0);
        total += (uint64_t)st.st_size;
        (*count)++;
    }
    closedir(d);
    return total;
}

static json_t *stats_json(const char *extra_env) {
    const char *argv[] = {JITGEMM_CLI_PATH, "cache", "stats", "--json",
                          "--cache-dir",    g_cache, NULL};
    const char *env[] = {extra_env, NULL};
    char *out = NULL, *err = NULL;
    int rc = jt_run(argv, env, NULL, &out, &err);
    cr_assert_eq(rc, 0, "exit %d: %s", rc, err);
    json_error_t je;
    json_t *o = json_loads(out, 0, &je);
    cr_assert_not_null(o, "not JSON (%s): %s", je.text, out);
    free(out);
    free(err);
    return o;
}

static long long num(json_t *o, const char *path1, const char *path2, const char *field) {
    json_t *v = o;
    if (path1)
        v = json_object_get(v, path1);
    if (path2)
        v = json_object_get(v, path2);
    v = json_object_get(v, field);
    cr_assert(json_is_integer(v), "%s.%s.%s is not an integer", path1 ? path1 : "",
              path2 ? path2 : "", field);
    return json_integer_value(v);
}

Test(cli_cache_stats, an_empty_cache_has_nothing_and_the_cap_in_force) {
    json_t *o = stats_json("JITGEMM_CACHE_MAX_BYTES=64M");
    cr_expect_eq(num(o, NULL, NULL, "entries"), 0);
    cr_expect_eq(num(o, NULL, NULL, "cubin_bytes"), 0);
    cr_expect_eq(num(o, NULL, NULL, "max_bytes"), 64LL << 20);
    cr_expect_eq(json_object_size(json_object_get(o, "archs")), 0);
    cr_expect(json_is_null(json_object_get(o, "oldest_last_used")));
    json_decref(o);
}

Test(cli_cache_stats, counts_and_bytes_per_arch_match_the_files) {
    const char *list = "{\"gemms\": [{\"name\": \"p\", \"op\": \"linear\", \"n\": 256, \"k\": 128,"
                       " \"tokens\": [1, 300]}]}";
    cli_result_t r = CLI(g_cache, list, "prewarm", "-", "--target", "sm_90a:132", "--target",
                         "sm_120a:84", "--jobs", "2");
    cr_assert_eq(r.rc, 0, "exit %d: %s\n%s", r.rc, r.out, r.err);
    cli_free(&r);
    size_t files = 0;
    uint64_t bytes = cubin_bytes(&files);
    cr_assert_eq(files, 4);

    json_t *o = stats_json("JITGEMM_LOG=warn");
    cr_expect_eq(num(o, NULL, NULL, "entries"), 4);
    cr_expect_eq((uint64_t)num(o, NULL, NULL, "cubin_bytes"), bytes);
    cr_expect_gt((uint64_t)num(o, NULL, NULL, "disk_bytes"), bytes, "sidecars and sources too");
    cr_expect_eq(num(o, "archs", "sm_90a", "entries"), 2);
    cr_expect_eq(num(o, "archs", "sm_120a", "entries"), 2);
    cr_expect_eq(num(o, "archs", "sm_90a", "bytes") + num(o, "archs", "sm_120a", "bytes"),
                 (long long)bytes);
    cr_expect_eq(num(o, "archs", "sm_90a", "fallback"), 0);
    json_t *tcs = json_object_get(o, "toolchains");
    cr_expect_eq(json_object_size(tcs), 1);
    const char *name;
    json_t *v;
    json_object_foreach(tcs, name, v) {
        cr_expect(strstr(name, "nvrtc ") && strstr(name, "nvjitlink "), "%s", name);
        cr_expect_eq(json_integer_value(json_object_get(v, "entries")), 4);
    }
    json_t *secs = json_object_get(o, "compile_seconds_total");
    cr_expect(json_is_number(secs) && json_number_value(secs) > 0);
    cr_expect(json_is_integer(json_object_get(o, "newest_last_used")));
    json_decref(o);

    r = CLI(g_cache, NULL, "cache", "stats");
    cr_expect_eq(r.rc, 0);
    cr_expect(strstr(r.out, "entries         4 (0 fallback)"), "%s", r.out);
    cr_expect(strstr(r.out, "    sm_120a         2 entries"), "%s", r.out);
    cr_expect(strstr(r.out, "    sm_90a          2 entries"), "%s", r.out);
    cli_free(&r);
}

Test(cli_cache_stats, options_of_other_actions_are_refused) {
    cli_result_t r = CLI(g_cache, NULL, "cache", "stats", "--dry-run");
    CLI_EXPECT(r, 2, "--dry-run applies to 'cache gc' only");
    cli_free(&r);
    r = CLI(g_cache, NULL, "cache", "statz");
    CLI_EXPECT(r, 2, "expected list, verify, gc, clear, stats, export or import");
    cli_free(&r);
}
