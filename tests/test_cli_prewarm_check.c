/*
 * `jitgemm prewarm --check` and `--target`: the check computes the same keys a prewarm compiles,
 * compiles nothing, and lists exactly the kernels the cache lacks; several targets are prewarmed
 * (and checked) in one run, each under its own arch and SM count.
 */
#include <criterion/criterion.h>
#include <dirent.h>
#include <jansson.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "test_cli_helpers.h"

static char *g_dir;
static char g_cache[512], g_list[512];

/* Two problems in two token bands: two kernels per target. */
static const char k_list[] =
    "{\"target\": {\"arch\": \"sm_90a\", \"sm_count\": 132}, \"gemms\": [\n"
    "  {\"name\": \"proj\", \"op\": \"linear\", \"n\": 256, \"k\": 128, \"tokens\": [1, 300]}\n"
    "]}\n";

static void setup(void) {
    g_dir = jt_mkdtemp("cli-check");
    cr_assert_not_null(g_dir);
    snprintf(g_cache, sizeof(g_cache), "%s/cache", g_dir);
    snprintf(g_list, sizeof(g_list), "%s/shapes.json", g_dir);
    cr_assert_eq(jt_write_file(g_list, k_list), 0);
}

static void teardown(void) {
    jt_rmtree(g_dir);
    free(g_dir);
}

TestSuite(cli_prewarm_check, .init = setup, .fini = teardown, .timeout = 600);

typedef struct line {
    char arch[16], key[33], status[16];
    long long tokens, sm_count;
} line_t;

/* Parse --json lines into recs; returns how many. */
static size_t parse_lines(const char *out, line_t *recs, size_t max) {
    size_t n = 0;
    for (const char *line = out; *line;) {
        const char *end = strchr(line, '\n');
        cr_assert_not_null(end);
        json_t *o = json_loadb(line, (size_t)(end - line), 0, NULL);
        cr_assert_not_null(o, "not JSON: %.*s", (int)(end - line), line);
        cr_assert_lt(n, max);
        line_t *r = &recs[n++];
        memset(r, 0, sizeof(*r));
        const char *arch = json_string_value(json_object_get(o, "arch"));
        const char *key = json_string_value(json_object_get(o, "key"));
        const char *status = json_string_value(json_object_get(o, "status"));
        cr_assert(arch && status, "line lacks arch or status: %.*s", (int)(end - line), line);
        snprintf(r->arch, sizeof(r->arch), "%s", arch);
        snprintf(r->key, sizeof(r->key), "%s", key ? key : "");
        snprintf(r->status, sizeof(r->status), "%s", status);
        r->tokens = json_integer_value(json_object_get(o, "tokens"));
        r->sm_count = json_integer_value(json_object_get(o, "sm_count"));
        json_decref(o);
        line = end + 1;
    }
    return n;
}

/* How many *.cubin files the cache holds. */
static size_t cubins(void) {
    char dir[1100];
    snprintf(dir, sizeof(dir), "%s/kernels", g_cache);
    DIR *d = opendir(dir);
    size_t n = 0;
    if (!d)
        return 0;
    for (struct dirent *e; (e = readdir(d));) {
        size_t len = strlen(e->d_name);
        n += len > 6 && !strcmp(e->d_name + len - 6, ".cubin");
    }
    closedir(d);
    return n;
}

Test(cli_prewarm_check, an_empty_cache_lacks_every_kernel_and_nothing_is_compiled) {
    /* JITGEMM_COMPILE=always cannot make a check compile. */
    const char *argv[] = {JITGEMM_CLI_PATH, "prewarm", g_list, "--check",
                          "--cache-dir",    g_cache,   NULL};
    const char *env[] = {"JITGEMM_COMPILE=always", NULL};
    char *out = NULL, *err = NULL;
    int rc = jt_run(argv, env, NULL, &out, &err);
    cr_expect_eq(rc, 1, "exit %d: %s", rc, err);
    cr_expect_eq(cubins(), 0, "a check compiled something");
    cr_expect(strstr(out, "missing sm_90a:132 proj tokens 1 kernel "), "%s", out);
    cr_expect(strstr(out, "missing sm_90a:132 proj tokens 300 kernel "), "%s", out);
    cr_expect(strstr(out, "missing             2 kernels (2 problems)"), "%s", out);
    cr_expect(!strstr(err, "error"), "missing kernels are listed, not reported as errors: %s", err);
    free(out);
    free(err);
}

Test(cli_prewarm_check, it_lists_the_keys_a_prewarm_builds_and_only_what_is_missing) {
    cli_result_t r = CLI(g_cache, NULL, "prewarm", g_list, "--check", "--json");
    cr_assert_eq(r.rc, 1, "exit %d: %s", r.rc, r.err);
    line_t before[4];
    cr_assert_eq(parse_lines(r.out, before, 4), 2, "%s", r.out);
    for (int i = 0; i < 2; i++) {
        cr_expect_str_eq(before[i].status, "missing");
        cr_expect_str_eq(before[i].arch, "sm_90a");
        cr_expect_eq(before[i].sm_count, 132);
        cr_expect_eq(strlen(before[i].key), 32);
    }
    cli_free(&r);

    r = CLI(g_cache, NULL, "prewarm", g_list, "--json", "--jobs", "2");
    cr_assert_eq(r.rc, 0, "exit %d: %s", r.rc, r.err);
    line_t built[4];
    cr_assert_eq(parse_lines(r.out, built, 4), 2);
    for (int i = 0; i < 2; i++) {
        int same = 0;
        for (int j = 0; j < 2; j++)
            same |= built[i].tokens == before[j].tokens && !strcmp(built[i].key, before[j].key);
        cr_expect(same, "prewarm built %s for tokens %lld; the check named another key",
                  built[i].key, built[i].tokens);
    }
    cli_free(&r);

    r = CLI(g_cache, NULL, "prewarm", g_list, "--check");
    cr_expect_eq(r.rc, 0, "exit %d: %s\n%s", r.rc, r.out, r.err);
    cr_expect(!strstr(r.out, "missing sm_"), "%s", r.out);
    cr_expect(strstr(r.out, "in the cache        2 kernels"), "%s", r.out);
    cli_free(&r);

    /* Take one kernel away: the check names exactly that one. */
    const char *gone = built[0].tokens == 300 ? built[0].key : built[1].key;
    char path[1200];
    snprintf(path, sizeof(path), "%s/kernels/%s.cubin", g_cache, gone);
    cr_assert_eq(unlink(path), 0, "%s", path);
    size_t left = cubins();
    r = CLI(g_cache, NULL, "prewarm", g_list, "--check");
    cr_expect_eq(r.rc, 1, "exit %d: %s", r.rc, r.err);
    char want[128];
    snprintf(want, sizeof(want), "missing sm_90a:132 proj tokens 300 kernel %s\n", gone);
    cr_expect(strstr(r.out, want), "want '%s' in:\n%s", want, r.out);
    cr_expect(!strstr(r.out, "proj tokens 1 kernel"), "%s", r.out);
    cr_expect_eq(cubins(), left, "the check compiled the missing kernel");
    cli_free(&r);
}

Test(cli_prewarm_check, several_targets_in_one_run) {
    cli_result_t r = CLI(g_cache, NULL, "prewarm", g_list, "--json", "--target", "sm_90a:132",
                         "--target=sm_120a:84", "--jobs", "2");
    cr_assert_eq(r.rc, 0, "exit %d: %s", r.rc, r.err);
    line_t lines[8];
    size_t n = parse_lines(r.out, lines, 8);
    cr_expect_eq(n, 4, "%s", r.out);
    size_t hopper = 0, consumer = 0;
    for (size_t i = 0; i < n; i++) {
        cr_expect_str_eq(lines[i].status, "compiled");
        if (!strcmp(lines[i].arch, "sm_90a") && lines[i].sm_count == 132)
            hopper++;
        if (!strcmp(lines[i].arch, "sm_120a") && lines[i].sm_count == 84)
            consumer++;
    }
    cr_expect(hopper == 2 && consumer == 2, "sm_90a:132 x%zu, sm_120a:84 x%zu", hopper, consumer);
    cr_expect_eq(cubins(), 4);
    /* One summary per target, each with the context's counters. */
    cr_expect(strstr(r.err, "sm_90a with 132 SMs") && strstr(r.err, "sm_120a with 84 SMs"), "%s",
              r.err);
    cr_expect(strstr(r.err, "counters        0 memory hits, 0 disk hits, 2 compiles"), "%s", r.err);
    cli_free(&r);

    /* Both present; "sm_90a" alone takes the file's SM count (132): the same kernels. */
    r = CLI(g_cache, NULL, "prewarm", g_list, "--check", "--target", "sm_90a:132", "--target",
            "sm_120a:84", "--target", "sm_90a");
    cr_expect_eq(r.rc, 0, "exit %d: %s\n%s", r.rc, r.out, r.err);
    cr_expect(!strstr(r.out, "missing sm_"), "%s", r.out);
    cr_expect(strstr(r.out, "check: 2 problems, sm_120a with 84 SMs"), "%s", r.out);
    cli_free(&r);
    /* Another arch without :N does not take the file's SM count (132, for sm_90a) but its own
     * default (170 for sm_120a); the SM count is not in a key (docs/cache.md), so those are the
     * kernels the sm_120a:84 prewarm stored. */
    r = CLI(g_cache, NULL, "prewarm", g_list, "--check", "--target", "sm_120a");
    cr_expect_eq(r.rc, 0, "exit %d: %s", r.rc, r.err);
    cr_expect(strstr(r.out, "sm_120a with 170 SMs"), "%s", r.out);
    cli_free(&r);
    /* An arch the cache has no kernels for: every kernel is listed as missing. */
    r = CLI(g_cache, NULL, "prewarm", g_list, "--check", "--target", "sm_100a:100");
    cr_expect_eq(r.rc, 1, "exit %d: %s", r.rc, r.err);
    cr_expect(strstr(r.out, "missing sm_100a:100 proj tokens 1 kernel"), "%s", r.out);
    cli_free(&r);
}

Test(cli_prewarm_check, bad_targets_are_usage_errors) {
    const char *bad[][2] = {
        {"sm_99a:132", "unknown"},
        {"sm_90a:0", "--target: expected an integer"},
        {"sm_90a:x", "--target: expected an integer"},
        {":132", "expected ARCH, ARCH:SM_COUNT or ARCH:all"},
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        cli_result_t r = CLI(g_cache, NULL, "prewarm", g_list, "--check", "--target", bad[i][0]);
        cr_expect_eq(r.rc, 2, "%s: exit %d", bad[i][0], r.rc);
        cr_expect(strstr(r.err, bad[i][1]), "%s: %s", bad[i][0], r.err);
        cli_free(&r);
    }
    cli_result_t r =
        CLI(g_cache, NULL, "prewarm", g_list, "--target", "sm_90a:132", "--arch", "sm_90a");
    CLI_EXPECT(r, 2, "does not combine with --arch");
    cli_free(&r);
    r = CLI(g_cache, NULL, "prewarm", g_list, "--target");
    CLI_EXPECT(r, 2, "option '--target' needs a value");
    cli_free(&r);
}

Test(cli_prewarm_check, help_names_the_new_options) {
    cli_result_t r = CLI(NULL, NULL, "prewarm", "--help");
    cr_expect_eq(r.rc, 0);
    cr_expect(strstr(r.out, "--check") && strstr(r.out, "--target A:N"), "%s", r.out);
    cli_free(&r);
    r = CLI(NULL, NULL, "--help");
    cr_expect(strstr(r.out, "JITGEMM_COMPILE"), "%s", r.out);
    cr_expect(strstr(r.out, "--target ARCH:SMS") && strstr(r.out, "--check"), "%s", r.out);
    cr_expect(strstr(r.out, "--sass") && strstr(r.out, "(stats)"), "%s", r.out);
    cli_free(&r);
    r = CLI(NULL, NULL, "help", "inspect");
    cr_expect(strstr(r.out, "--sass") && strstr(r.out, "--cubin"), "%s", r.out);
    cli_free(&r);
    r = CLI(NULL, NULL, "cache", "--help");
    cr_expect(strstr(r.out, "jitgemm cache stats"), "%s", r.out);
    cli_free(&r);
}
