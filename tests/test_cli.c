/*
 * The `jitgemm` command line: help, version, and every error case, run as a user would (the
 * built binary, a scratch cache directory). Usage errors must exit 2 with "jitgemm: error:" and
 * a pointer to --help; bad input files and failed work exit 1 with a message that says where.
 */
#include <criterion/criterion.h>
#include <jansson.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "jitgemm.h"
#include "test_cli_helpers.h"

static char *g_dir;

static void setup(void) {
    g_dir = jt_mkdtemp("cli");
    cr_assert_not_null(g_dir);
}

static void teardown(void) {
    jt_rmtree(g_dir);
    free(g_dir);
}

TestSuite(cli, .init = setup, .fini = teardown);

static const char *const k_verbs[] = {"prewarm", "inspect", "cache", "run"};

Test(cli, no_arguments_is_a_usage_error) {
    cli_result_t r = CLI(g_dir, NULL, NULL);
    CLI_EXPECT(r, 2, "Usage: jitgemm VERB");
    cli_free(&r);
}

Test(cli, unknown_verb_and_option) {
    cli_result_t r = CLI(g_dir, NULL, "frobnicate");
    CLI_EXPECT(r, 2, "jitgemm: error: unknown verb 'frobnicate'");
    CLI_EXPECT(r, 2, "Try 'jitgemm --help'");
    cli_free(&r);
    r = CLI(g_dir, NULL, "--frobnicate");
    CLI_EXPECT(r, 2, "unknown option '--frobnicate'");
    cli_free(&r);
    r = CLI(g_dir, NULL, "help", "frobnicate");
    CLI_EXPECT(r, 2, "unknown verb 'frobnicate'");
    cli_free(&r);
}

Test(cli, global_help_lists_every_verb) {
    const char *forms[] = {"--help", "-h", "help"};
    for (int f = 0; f < 3; f++) {
        cli_result_t r = CLI(g_dir, NULL, forms[f]);
        cr_expect_eq(r.rc, 0, "%s: exit %d", forms[f], r.rc);
        cr_expect(strstr(r.out, "Usage: jitgemm VERB") != NULL, "%s", r.out);
        for (size_t v = 0; v < 4; v++)
            cr_expect(strstr(r.out, k_verbs[v]) != NULL, "%s missing from help", k_verbs[v]);
        cr_expect(strstr(r.out, "JITGEMM_CACHE_DIR") != NULL);
        cr_expect_str_eq(r.err, "");
        cli_free(&r);
    }
}

Test(cli, version) {
    cli_result_t r = CLI(g_dir, NULL, "--version");
    cr_expect_eq(r.rc, 0);
    char want[64];
    snprintf(want, sizeof(want), "jitgemm %d.%d.%d", JITGEMM_VERSION_MAJOR, JITGEMM_VERSION_MINOR,
             JITGEMM_VERSION_PATCH);
    cr_expect(strncmp(r.out, want, strlen(want)) == 0, "%s", r.out);
    cr_expect(strstr(r.out, "toolchain:") != NULL, "%s", r.out);
    cli_free(&r);
}

Test(cli, every_verb_has_help) {
    for (size_t v = 0; v < 4; v++) {
        char usage[64];
        snprintf(usage, sizeof(usage), "Usage: jitgemm %s", k_verbs[v]);
        cli_result_t forms[] = {
            CLI(g_dir, NULL, "help", k_verbs[v]),
            CLI(g_dir, NULL, k_verbs[v], "--help"),
            CLI(g_dir, NULL, k_verbs[v], "-h"),
            /* --help wins over everything else on the line, even bad options. */
            CLI(g_dir, NULL, k_verbs[v], "--bogus", "--help"),
        };
        for (size_t f = 0; f < 4; f++) {
            cr_expect_eq(forms[f].rc, 0, "%s form %zu: exit %d, %s", k_verbs[v], f, forms[f].rc,
                         forms[f].err);
            cr_expect(strstr(forms[f].out, usage) != NULL, "%s form %zu: %s", k_verbs[v], f,
                      forms[f].out);
            cr_expect(strstr(forms[f].out, "--cache-dir") != NULL, "%s", k_verbs[v]);
            cli_free(&forms[f]);
        }
    }
    cli_result_t r = CLI(g_dir, NULL, "cache", "list", "--help");
    cr_expect_eq(r.rc, 0);
    cr_expect(strstr(r.out, "Usage: jitgemm cache list") != NULL);
    cli_free(&r);
}

typedef struct usage_case {
    const char *args[16];
    const char *needle;
} usage_case_t;

static void expect_usage_errors(const usage_case_t *cases, size_t n, int want_rc) {
    for (size_t i = 0; i < n; i++) {
        cli_result_t r = cli_run(g_dir, NULL, cases[i].args);
        cr_expect_eq(r.rc, want_rc, "case %zu (%s %s): exit %d, stderr %s", i, cases[i].args[0],
                     cases[i].args[1] ? cases[i].args[1] : "", r.rc, r.err);
        cr_expect(strncmp(r.err, "jitgemm: error: ", 16) == 0, "case %zu: %s", i, r.err);
        cr_expect(strstr(r.err, cases[i].needle) != NULL, "case %zu: stderr lacks '%s': %s", i,
                  cases[i].needle, r.err);
        if (want_rc == 2) {
            char hint[64];
            snprintf(hint, sizeof(hint), "Try 'jitgemm %s --help'", cases[i].args[0]);
            cr_expect(strstr(r.err, hint) != NULL, "case %zu: %s", i, r.err);
        }
        cli_free(&r);
    }
}

Test(cli, prewarm_usage_errors) {
    static const usage_case_t cases[] = {
        {{"prewarm"}, "missing shape list FILE"},
        {{"prewarm", "a.json", "b.json"}, "too many arguments"},
        {{"prewarm", "f.json", "--frob"}, "unknown option '--frob'"},
        {{"prewarm", "f.json", "-x"}, "unknown option '-x'"},
        {{"prewarm", "f.json", "--jobs", "many"},
         "--jobs: expected an integer in [0, 1024], got 'many'"},
        {{"prewarm", "f.json", "--jobs", "-1"}, "--jobs: expected"},
        {{"prewarm", "f.json", "--sm-count", "0"}, "--sm-count: expected"},
        {{"prewarm", "f.json", "--sm-count", "12abc"}, "got '12abc'"},
        {{"prewarm", "f.json", "--arch", "sm_99"}, "--arch: unknown architecture 'sm_99'"},
        {{"prewarm", "f.json", "--arch"}, "option '--arch' needs a value"},
        {{"prewarm", "f.json", "--json=yes"}, "option '--json' takes no value"},
    };
    expect_usage_errors(cases, sizeof(cases) / sizeof(cases[0]), 2);
}

Test(cli, prewarm_input_errors_say_where) {
    char bad_syntax[512], bad_field[512];
    snprintf(bad_syntax, sizeof(bad_syntax), "%s/examples/shapes-bad-syntax.json",
             JITGEMM_SOURCE_DIR);
    snprintf(bad_field, sizeof(bad_field), "%s/examples/shapes-bad-field.json", JITGEMM_SOURCE_DIR);
    cli_result_t r = CLI(g_dir, NULL, "prewarm", "/nonexistent/shapes.json");
    CLI_EXPECT(r, 1, "cannot read /nonexistent/shapes.json");
    cli_free(&r);
    r = CLI(g_dir, NULL, "prewarm", g_dir);
    CLI_EXPECT(r, 1, "is a directory");
    cli_free(&r);
    r = CLI(g_dir, NULL, "prewarm", bad_syntax);
    CLI_EXPECT(r, 1, "shapes-bad-syntax.json:4:");
    CLI_EXPECT(r, 1, "malformed JSON");
    cli_free(&r);
    r = CLI(g_dir, NULL, "prewarm", bad_field);
    CLI_EXPECT(r, 1, "gemms[2].n: expected a positive integer, got \"abc\"");
    cli_free(&r);
    r = CLI(g_dir, "{\n  oops\n}", "prewarm", "-");
    CLI_EXPECT(r, 1, "<stdin>:2:");
    cli_free(&r);
    r = CLI(g_dir,
            "{\"target\": {\"arch\": \"sm_42\"}, \"gemms\": [{\"name\": \"g\", \"op\": "
            "\"linear\", \"n\": 64, \"k\": 64, \"tokens\": [1]}]}",
            "prewarm", "-");
    CLI_EXPECT(r, 1, "<stdin>: target.arch: expected a known architecture");
    cli_free(&r);
    r = CLI(g_dir,
            "{\"gemms\": [{\"name\": \"g\", \"op\": \"linear\", \"n\": 64, \"k\": 64, "
            "\"tokns\": [1]}]}",
            "prewarm", "-");
    CLI_EXPECT(r, 1, "gemms[0].tokns: unknown key");
    cli_free(&r);

    /* Permission bits do not stop root, so this case only means something for other users. */
    if (geteuid() != 0) {
        char path[512];
        snprintf(path, sizeof(path), "%s/locked.json", g_dir);
        cr_assert_eq(jt_write_file(path, "{}"), 0);
        chmod(path, 0);
        r = CLI(g_dir, NULL, "prewarm", path);
        CLI_EXPECT(r, 1, "cannot read");
        CLI_EXPECT(r, 1, "Permission denied");
        cli_free(&r);
    }
}

Test(cli, inspect_usage_errors) {
#define P "--op", "linear", "--n", "256", "--k", "256", "--tokens", "16"
    static const usage_case_t cases[] = {
        {{"inspect", "--n", "256", "--k", "256", "--tokens", "1"}, "missing required option --op"},
        {{"inspect", "--op", "linear", "--k", "256", "--tokens", "1"},
         "missing required option --n"},
        {{"inspect", "--op", "linear", "--n", "256", "--tokens", "1"},
         "missing required option --k"},
        {{"inspect", "--op", "linear", "--n", "256", "--k", "256"},
         "missing required option --tokens"},
        {{"inspect", "--op", "linear", "--n", "abc", "--k", "256", "--tokens", "1"},
         "--n: expected an integer >= 1, got 'abc'"},
        {{"inspect", "--op", "linear", "--n", "0", "--k", "256", "--tokens", "1"}, "--n: expected"},
        {{"inspect", "--op", "linear", "--n", "64", "--k", "-4", "--tokens", "1"}, "--k: expected"},
        {{"inspect", "--op", "linear", "--n", "64", "--k", "64", "--tokens", "1.5"},
         "--tokens: expected an integer >= 1, got '1.5'"},
        {{"inspect", "--op", "linear", "--n", "99999999999999999999", "--k", "64", "--tokens", "1"},
         "--n: expected"},
        {{"inspect", "--op", "bogus", "--n", "64", "--k", "64", "--tokens", "1"},
         "--op: unknown op 'bogus' (expected linear, linear_add, linear_swiglu or "
         "quantize_fp8_1x128)"},
        {{"inspect", P, "--a", "bf16"}, "--a: unknown dtype 'bf16' (expected e4m3, e5m2 or e2m1)"},
        {{"inspect", P, "--b", "int8"}, "--b: unknown dtype 'int8'"},
        {{"inspect", P, "--scales", "ue8m0/16"}, "--scales: unknown scale mode 'ue8m0/16'"},
        {{"inspect", P, "--out-dtype", "e4m3"}, "--out-dtype: unknown dtype 'e4m3'"},
        {{"inspect", P, "--plan", "--ptx"}, "choose one stage"},
        {{"inspect", P, "--out", "d", "--json"}, "--out writes files; it does not combine"},
        {{"inspect", P, "--arch", "sm_99"}, "unknown architecture 'sm_99'"},
        {{"inspect", P, "extra"}, "unexpected argument 'extra'"},
    };
#undef P
    expect_usage_errors(cases, sizeof(cases) / sizeof(cases[0]), 2);
}

Test(cli, cache_usage_errors) {
    static const usage_case_t cases[] = {
        {{"cache"}, "missing action: list, verify, gc, clear, stats, export or import"},
        {{"cache", "purge"}, "unknown action 'purge'"},
        {{"cache", "list", "extra"}, "too many arguments"},
        {{"cache", "gc", "--toolkit-dir", "/x"}, "--toolkit-dir: no cache action uses a toolchain"},
        {{"cache", "list", "--drop-other-versions"}, "apply to 'cache gc' only"},
        {{"cache", "import", "f", "--drop-toolchain", "13.0"}, "apply to 'cache gc' only"},
        {{"cache", "gc", "--drop-toolchain", "13"}, "expected an NVRTC version MAJOR.MINOR"},
        {{"cache", "list", "--verbose"}, "unknown option '--verbose'"},
    };
    expect_usage_errors(cases, sizeof(cases) / sizeof(cases[0]), 2);
}

Test(cli, run_usage_errors) {
    static const usage_case_t cases[] = {
        {{"run", "--n", "64", "--k", "64", "--tokens", "1"}, "missing required option --op"},
        {{"run", "--op", "linear", "--n", "64", "--k", "64", "--tokens", "0"},
         "--tokens: expected"},
        {{"run", "--op", "linear", "--n", "64", "--k", "64", "--tokens", "1", "--iters", "0"},
         "--iters: expected an integer in [1, 100000], got '0'"},
        {{"run", "--op", "linear", "--n", "64", "--k", "64", "--tokens", "1", "--seed", "xyz"},
         "--seed: expected an unsigned integer"},
        {{"run", "--op", "swiglu", "--n", "64", "--k", "64", "--tokens", "1"},
         "unknown op 'swiglu'"},
        {{"run", "--op", "linear", "--n", "64", "--k", "64", "--tokens", "1", "--sfa-layout",
          "m-major"},
         "--sfa-layout: k-major or m-major, with --scales 128x128 only (got 'm-major')"},
        {{"run", "--op", "linear", "--n", "64", "--k", "64", "--tokens", "1", "--scales",
          "128x128", "--sfa-layout", "row-major"},
         "--sfa-layout: k-major or m-major, with --scales 128x128 only (got 'row-major')"},
    };
    expect_usage_errors(cases, sizeof(cases) / sizeof(cases[0]), 2);
}

Test(cli, run_without_a_gpu_says_so) {
    const char *why = NULL;
    if (jt_gpu_available(&why))
        cr_skip_test("a GPU is present; the no-GPU message is checked on machines without one");
    cli_result_t r =
        CLI(g_dir, NULL, "run", "--op", "linear", "--n", "256", "--k", "256", "--tokens", "16");
    CLI_EXPECT(r, 1, "jitgemm: error: no GPU: ");
    cli_free(&r);
}

Test(cli, run_on_a_gpu_passes_its_check, .timeout = 300) {
    const char *why = NULL;
    if (!jt_gpu_available(&why))
        cr_skip_test("%s", why);
    const char *ops[] = {"linear", "linear_add", "linear_swiglu"};
    for (int i = 0; i < 3; i++) {
        /* Ragged M and N so the tails are exercised; row checks include the last row. */
        cli_result_t r = CLI(g_dir, NULL, "run", "--op", ops[i], "--n", "392", "--k", "256",
                             "--tokens", "127", "--iters", "3");
        cr_expect_eq(r.rc, 0, "%s: exit %d\n%s\n%s", ops[i], r.rc, r.out, r.err);
        cr_expect(strstr(r.out, "PASS") != NULL, "%s: %s", ops[i], r.out);
        cr_expect(strstr(r.out, "mismatches 0") != NULL, "%s: %s", ops[i], r.out);
        cr_expect(strstr(r.out, "TFLOP/s") != NULL, "%s: %s", ops[i], r.out);
        cli_free(&r);
    }
    /* The --json report: one object on stdout, the check's figures in it. */
    cli_result_t r = CLI(g_dir, NULL, "run", "--op", "linear", "--n", "256", "--k", "128",
                         "--tokens", "1345", "--iters", "3", "--seed", "0x1234", "--json");
    cr_assert_eq(r.rc, 0, "%s", r.err);
    json_t *o = json_loads(r.out, 0, NULL);
    cr_assert_not_null(o, "stdout is not one JSON object: %s", r.out);
    cr_expect(json_is_true(json_object_get(o, "pass")));
    cr_expect_str_eq(json_string_value(json_object_get(o, "seed")), "0x0000000000001234");
    json_t *check = json_object_get(o, "check");
    cr_expect_eq(json_integer_value(json_object_get(check, "mismatches")), 0);
    cr_expect(json_is_true(json_object_get(check, "guard_ok")));
    cr_expect_gt(json_number_value(json_object_get(o, "median_us")), 0.0);
    json_decref(o);
    cli_free(&r);
}

Test(cli, pipeline_errors_exit_1_with_the_library_message) {
    cli_result_t r = CLI(g_dir, NULL, "inspect", "--op", "linear_swiglu", "--n", "255", "--k",
                         "128", "--tokens", "1", "--arch", "sm_90a", "--plan");
    CLI_EXPECT(r, 1, "jitgemm: error: ");
    CLI_EXPECT(r, 1, "255");
    cli_free(&r);
}

Test(cli, cache_dir_option_and_environment) {
    char other[1024];
    snprintf(other, sizeof(other), "%s/explicit", g_dir);
    /* The environment alone names the cache. */
    cli_result_t r = CLI(g_dir, NULL, "cache", "list");
    cr_expect_eq(r.rc, 0, "%s", r.err);
    char want[1100];
    snprintf(want, sizeof(want), "0 entries, 0 B, in %s\n", g_dir);
    cr_expect(strstr(r.out, want) != NULL, "%s", r.out);
    cli_free(&r);
    /* --cache-dir wins over the environment, in both spellings. */
    r = CLI(g_dir, NULL, "cache", "list", "--cache-dir", other);
    cr_expect_eq(r.rc, 0, "%s", r.err);
    snprintf(want, sizeof(want), "in %s\n", other);
    cr_expect(strstr(r.out, want) != NULL, "%s", r.out);
    cli_free(&r);
    char eq[1100];
    snprintf(eq, sizeof(eq), "--cache-dir=%s", other);
    r = CLI(g_dir, NULL, "cache", "verify", eq);
    cr_expect_eq(r.rc, 0, "%s", r.err);
    cr_expect(strstr(r.out, other) != NULL, "%s", r.out);
    cli_free(&r);
}

Test(cli, prewarm_without_any_target_asks_for_arch) {
    const char *why = NULL;
    if (jt_gpu_available(&why))
        cr_skip_test("a GPU is present, so its arch is the target");
    cli_result_t r = CLI(g_dir,
                         "{\"gemms\": [{\"name\": \"g\", \"op\": \"linear\", \"n\": 256, \"k\": "
                         "256, \"tokens\": [1]}]}",
                         "prewarm", "-");
    CLI_EXPECT(r, 1, "no target arch: <stdin> has no target.arch");
    CLI_EXPECT(r, 1, "--arch");
    cli_free(&r);
}
