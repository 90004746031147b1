/*
 * `jitgemm prewarm --target ARCH:all`: one target per SM count of the arch's shipping parts
 * (jit/arch_parts.c), and a kernel an earlier target of the run covered is a duplicate at a later
 * one: reported with the target that covered it, not compiled or checked again, no failure.
 * The expected keys come from the library itself (jit_inspect at each SM count), so the tests
 * hold whatever the cost model picks at each count.
 */
#include <criterion/criterion.h>
#include <dirent.h>
#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#include "arch.h"
#include "arch_parts.h"
#include "jitgemm.h"
#include "test_cli_helpers.h"

static char *g_dir;
static char g_cache[512], g_list[512];

/* Two shapes whose sm_90a plans differ at some SM counts and agree at others (the cost model
 * weighs waves over the SMs), and one small shape, one kernel whatever the count. */
static const char k_list[] =
    "{\"gemms\": [\n"
    "  {\"name\": \"proj\", \"op\": \"linear\", \"n\": 5120, \"k\": 5120, \"tokens\": [1024]},\n"
    "  {\"name\": \"qkv\", \"op\": \"linear\", \"n\": 6144, \"k\": 4096, \"tokens\": [4096]},\n"
    "  {\"name\": \"small\", \"op\": \"linear\", \"n\": 256, \"k\": 128, \"tokens\": [300]}\n"
    "]}\n";

static void setup(void) {
    g_dir = jt_mkdtemp("cli-targets");
    cr_assert_not_null(g_dir);
    snprintf(g_cache, sizeof(g_cache), "%s/cache", g_dir);
    snprintf(g_list, sizeof(g_list), "%s/shapes.json", g_dir);
    cr_assert_eq(jt_write_file(g_list, k_list), 0);
}

static void teardown(void) {
    jt_rmtree(g_dir);
    free(g_dir);
}

TestSuite(cli_prewarm_targets, .init = setup, .fini = teardown, .timeout = 600);

/* The key hash the library builds for (n, k, tokens) on arch at sms SMs. */
static void key_at(const char *arch, int sms, int64_t n, int64_t k, int64_t m, char out[33]) {
    jit_context_options_t opt;
    jit_context_options_init(&opt);
    opt.arch = arch;
    opt.sm_count = sms;
    opt.cache_dir = g_cache;
    jit_context_t *ctx = NULL;
    cr_assert_eq(jit_context_create(&opt, &ctx), JIT_OK, "%s", jit_last_error(NULL));
    jit_problem_t p;
    jit_problem_init(&p);
    p.n = n;
    p.k = k;
    p.m = m;
    char *text = NULL;
    cr_assert_eq(jit_inspect(ctx, &p, JIT_INSPECT_KEY, &text), JIT_OK, "%s", jit_last_error(ctx));
    cr_assert_eq(sscanf(text, "hash %32s", out), 1, "%s", text);
    jit_free(text);
    jit_context_destroy(ctx);
}

typedef struct line {
    char name[16], key[33], status[16], same_as[48];
    long long sm_count;
} line_t;

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
        const char *same_as = json_string_value(json_object_get(o, "same_as"));
        snprintf(r->name, sizeof(r->name), "%s", json_string_value(json_object_get(o, "name")));
        snprintf(r->key, sizeof(r->key), "%s", json_string_value(json_object_get(o, "key")));
        snprintf(r->status, sizeof(r->status), "%s",
                 json_string_value(json_object_get(o, "status")));
        snprintf(r->same_as, sizeof(r->same_as), "%s", same_as ? same_as : "");
        cr_expect(json_is_null(json_object_get(o, "same_as")) == !same_as);
        r->sm_count = json_integer_value(json_object_get(o, "sm_count"));
        json_decref(o);
        line = end + 1;
    }
    return n;
}

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

static const struct {
    const char *name;
    int64_t n, k, m;
} k_problems[] = {{"proj", 5120, 5120, 1024}, {"qkv", 6144, 4096, 4096}, {"small", 256, 128, 300}};
#define N_PROBLEMS (sizeof(k_problems) / sizeof(k_problems[0]))

/* --check over sm_90a:all: one summary per SM count of the table, in ascending order; each
 * problem missing where its kernel is new to the run, a duplicate of the first count that
 * planned it where it is not; nothing compiled. */
Test(cli_prewarm_targets, all_checks_each_kernel_once) {
    const jit__arch_profile_t *arch = jit__arch_find("sm_90a");
    int counts[16];
    int n_counts = jit__arch_part_sm_counts(arch, counts, 16);
    cr_assert(n_counts >= 2 && n_counts <= 16, "%d SM counts", n_counts);
    char keys[16][N_PROBLEMS][33];
    for (int c = 0; c < n_counts; c++)
        for (size_t i = 0; i < N_PROBLEMS; i++)
            key_at("sm_90a", counts[c], k_problems[i].n, k_problems[i].k, k_problems[i].m,
                   keys[c][i]);

    cli_result_t r =
        CLI(g_cache, NULL, "prewarm", g_list, "--check", "--json", "--target", "sm_90a:all");
    cr_expect_eq(r.rc, 1, "missing kernels: exit %d: %s", r.rc, r.err);
    cr_expect_eq(cubins(), 0, "a check compiled something");
    line_t lines[64];
    size_t n = parse_lines(r.out, lines, 64);
    cr_assert_eq(n, (size_t)n_counts * N_PROBLEMS, "%s", r.out);
    size_t missing = 0, duplicates = 0;
    for (size_t l = 0; l < n; l++) {
        int c = 0;
        while (c < n_counts && counts[c] != lines[l].sm_count)
            c++;
        cr_assert_lt(c, n_counts, "sm_count %lld is not in the table", lines[l].sm_count);
        size_t i = 0;
        while (i < N_PROBLEMS && strcmp(k_problems[i].name, lines[l].name) != 0)
            i++;
        cr_assert_lt(i, N_PROBLEMS, "%s", lines[l].name);
        cr_expect_str_eq(lines[l].key, keys[c][i], "%s at %d SMs", lines[l].name, counts[c]);
        int first = 0;
        while (strcmp(keys[first][i], keys[c][i]) != 0)
            first++;
        if (first == c) {
            cr_expect_str_eq(lines[l].status, "missing", "%s at %d", lines[l].name, counts[c]);
            cr_expect_str_eq(lines[l].same_as, "");
            missing++;
        } else {
            char want[48];
            snprintf(want, sizeof(want), "sm_90a:%d", counts[first]);
            cr_expect_str_eq(lines[l].status, "duplicate", "%s at %d", lines[l].name, counts[c]);
            cr_expect_str_eq(lines[l].same_as, want, "%s at %d", lines[l].name, counts[c]);
            duplicates++;
        }
    }
    /* The small shape is one kernel at every count, and this list's two projections differ
     * somewhere in the table (so both cases ran). */
    cr_expect_geq(duplicates, (size_t)n_counts - 1);
    cr_expect_gt(missing, N_PROBLEMS, "no SM count planned a kernel of its own");
    for (int c = 0; c < n_counts; c++) {
        char want[64];
        snprintf(want, sizeof(want), "sm_90a with %d SMs (", counts[c]);
        cr_expect(strstr(r.err, want), "no summary '%s': %s", want, r.err);
    }
    cr_expect(strstr(r.err, "of an earlier target, not prewarmed again"), "%s", r.err);
    cr_expect(!strstr(r.err, "error"), "duplicates are no failure: %s", r.err);
    cli_free(&r);
}

/* sm_120a plans one kernel per band whatever the SM count: ARCH:all compiles it once, and every
 * later count reports it as a duplicate of the first and is stored all the same. */
Test(cli_prewarm_targets, all_compiles_a_shared_kernel_once) {
    const char *list = "{\"gemms\": [{\"name\": \"small\", \"op\": \"linear\", \"n\": 256, "
                       "\"k\": 128, \"tokens\": [300]}]}";
    int counts[16];
    int n_counts = jit__arch_part_sm_counts(jit__arch_find("sm_120a"), counts, 16);
    cr_assert(n_counts >= 2 && n_counts <= 16, "%d SM counts", n_counts);
    cli_result_t r = CLI(g_cache, list, "prewarm", "-", "--json", "--target", "sm_120a:all");
    cr_assert_eq(r.rc, 0, "exit %d: %s", r.rc, r.err);
    line_t lines[16];
    cr_assert_eq(parse_lines(r.out, lines, 16), (size_t)n_counts, "%s", r.out);
    char first[48];
    snprintf(first, sizeof(first), "sm_120a:%d", counts[0]);
    for (int c = 0; c < n_counts; c++) {
        cr_expect_eq(lines[c].sm_count, counts[c]);
        cr_expect_str_eq(lines[c].key, lines[0].key);
        cr_expect_str_eq(lines[c].status, c == 0 ? "compiled" : "duplicate");
        cr_expect_str_eq(lines[c].same_as, c == 0 ? "" : first);
    }
    cr_expect_eq(cubins(), 1);
    cr_expect(strstr(r.err, "duplicates          1 kernel (1 problem)"), "%s", r.err);
    cli_free(&r);
    /* A later run finds it cached at the first count, and the rest are duplicates again. */
    r = CLI(g_cache, list, "prewarm", "-", "--check", "--target", "sm_120a:all");
    cr_expect_eq(r.rc, 0, "exit %d: %s\n%s", r.rc, r.out, r.err);
    cr_expect(!strstr(r.out, "missing sm_"), "%s", r.out);
    cli_free(&r);
}

/* No Rubin part has a public SM count: ARCH:all says so and plans the profile's default. */
Test(cli_prewarm_targets, an_arch_without_public_counts_plans_its_default) {
    const jit__arch_profile_t *rubin = jit__arch_find("sm_107a");
    int counts[4];
    cr_assert_eq(jit__arch_part_sm_counts(rubin, counts, 4), 0);
    cli_result_t r = CLI(g_cache, NULL, "prewarm", g_list, "--check", "--target", "sm_107a:all");
    cr_expect_eq(r.rc, 1, "exit %d: %s", r.rc, r.err);
    cr_expect(strstr(r.err, "warning: no sm_107a part has a public SM count"), "%s", r.err);
    char want[64];
    snprintf(want, sizeof(want), "check: 3 problems, sm_107a with %d SMs\n",
             rubin->default_sm_count);
    cr_expect(strstr(r.out, want), "want '%s': %s", want, r.out);
    cli_free(&r);
}

Test(cli_prewarm_targets, bad_all_targets_are_usage_errors) {
    const char *bad[][2] = {
        {"sm_90a:al", "--target: expected an integer"},
        {"sm_99a:all", "unknown architecture 'sm_99a'"},
        {":all", "expected ARCH, ARCH:SM_COUNT or ARCH:all"},
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        cli_result_t r = CLI(g_cache, NULL, "prewarm", g_list, "--check", "--target", bad[i][0]);
        cr_expect_eq(r.rc, 2, "%s: exit %d", bad[i][0], r.rc);
        cr_expect(strstr(r.err, bad[i][1]), "%s: %s", bad[i][0], r.err);
        cli_free(&r);
    }
    cli_result_t r = CLI(NULL, NULL, "prewarm", "--help");
    cr_expect(strstr(r.out, "--target A:all"), "%s", r.out);
    cli_free(&r);
}

/* One SM, from --target and from the shape list's target: every problem plans (none fails),
 * and the check lists what is missing. */
Test(cli_prewarm_targets, one_sm_plans_every_problem) {
    cli_result_t r = CLI(g_cache, NULL, "prewarm", g_list, "--check", "--target", "sm_90a:1");
    cr_expect_eq(r.rc, 1, "missing kernels: exit %d: %s", r.rc, r.err);
    cr_expect(strstr(r.out, "check: 3 problems, sm_90a with 1 SMs"), "%s", r.out);
    cr_expect(strstr(r.out, "failed              0 problems"), "%s", r.out);
    cli_free(&r);
    const char *list = "{\"target\": {\"arch\": \"sm_90a\", \"sm_count\": 1}, \"gemms\": ["
                       "{\"name\": \"p\", \"op\": \"linear_swiglu\", \"n\": 1024, \"k\": 1024,"
                       " \"tokens\": [1, 64, 4096]}]}";
    r = CLI(g_cache, list, "prewarm", "-", "--check");
    cr_expect_eq(r.rc, 1, "missing kernels: exit %d: %s", r.rc, r.err);
    cr_expect(strstr(r.out, "missing             3 kernels (3 problems)"), "%s", r.out);
    cli_free(&r);
}
