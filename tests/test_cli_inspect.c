/*
 * `jitgemm inspect` with the real pipeline: every stage, the JSON forms, and --out. The stages
 * are cross-checked against each other (the key's hash appears in the source header, the
 * manifest entry and the files --out writes), so a stage printing the wrong problem fails.
 */
#include <criterion/criterion.h>
#include <dirent.h>
#include <jansson.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "test_cli_helpers.h"

static char *g_dir;

static void setup(void) {
    g_dir = jt_mkdtemp("cli-inspect");
    cr_assert_not_null(g_dir);
}

static void teardown(void) {
    jt_rmtree(g_dir);
    free(g_dir);
}

TestSuite(cli_inspect, .init = setup, .fini = teardown, .timeout = 600);

#define PROBLEM "--op", "linear_add", "--n", "384", "--k", "256", "--tokens", "40"

static json_t *parse_json(const char *text) {
    json_error_t e;
    json_t *j = json_loads(text, 0, &e);
    cr_assert_not_null(j, "not JSON (%s at %d:%d): %s", e.text, e.line, e.column, text);
    return j;
}

/* The key as --key --json reports it: {hash, text, target, fallback}. */
static json_t *key_of(const char *arch) {
    cli_result_t r = CLI(g_dir, NULL, "inspect", PROBLEM, "--arch", arch, "--key", "--json");
    cr_assert_eq(r.rc, 0, "%s", r.err);
    json_t *k = parse_json(r.out);
    cli_free(&r);
    const char *hash = json_string_value(json_object_get(k, "hash"));
    cr_assert_not_null(hash, "no hash");
    cr_expect_eq(strlen(hash), 32);
    cr_expect_eq(strspn(hash, "0123456789abcdef"), 32, "%s", hash);
    cr_expect(json_string_length(json_object_get(k, "text")) > 0, "no key text");
    cr_expect(json_is_string(json_object_get(k, "target")));
    cr_expect(json_is_boolean(json_object_get(k, "fallback")));
    return k;
}

Test(cli_inspect, default_prints_key_then_plan) {
    json_t *k = key_of("sm_90a");
    const char *hash = json_string_value(json_object_get(k, "hash"));
    cli_result_t r = CLI(g_dir, NULL, "inspect", PROBLEM, "--arch", "sm_90a");
    cr_assert_eq(r.rc, 0, "%s", r.err);
    cr_expect(strstr(r.out, hash) != NULL, "hash missing: %s", r.out);
    cr_expect(strstr(r.out, json_string_value(json_object_get(k, "text"))) != NULL);
    const char *brace = strstr(r.out, "\n{");
    cr_assert_not_null(brace, "no plan JSON after the key: %s", r.out);
    json_t *plan = parse_json(brace + 1);
    cr_expect_str_eq(json_string_value(json_object_get(plan, "arch")), "sm_90a");
    json_decref(plan);
    cli_free(&r);

    /* The JSON form holds both, parsed. */
    r = CLI(g_dir, NULL, "inspect", PROBLEM, "--arch", "sm_90a", "--json");
    cr_assert_eq(r.rc, 0, "%s", r.err);
    json_t *both = parse_json(r.out);
    cr_expect_str_eq(json_string_value(json_object_get(json_object_get(both, "key"), "hash")),
                     hash);
    cr_expect(json_is_object(json_object_get(both, "plan")));
    json_decref(both);
    cli_free(&r);
    json_decref(k);
}

Test(cli_inspect, plan_json_is_the_library_json) {
    cli_result_t r = CLI(g_dir, NULL, "inspect", PROBLEM, "--arch", "sm_90a", "--plan", "--json");
    cr_assert_eq(r.rc, 0, "%s", r.err);
    json_t *plan = parse_json(r.out);
    cr_expect(json_is_object(plan));
    cr_expect_str_eq(json_string_value(json_object_get(plan, "arch")), "sm_90a");
    json_decref(plan);
    cli_free(&r);
    /* --sm-count reaches the planner. */
    r = CLI(g_dir, NULL, "inspect", PROBLEM, "--arch", "sm_90a", "--sm-count", "77", "--plan",
            "--json");
    cr_assert_eq(r.rc, 0, "%s", r.err);
    plan = parse_json(r.out);
    cr_expect_eq(json_integer_value(json_object_get(plan, "sm_count")), 77, "%s", r.out);
    json_decref(plan);
    cli_free(&r);
}

Test(cli_inspect, rubin_target_is_native_or_a_declared_fallback) {
    json_t *k = key_of("sm_107a");
    const char *target = json_string_value(json_object_get(k, "target"));
    int fallback = json_is_true(json_object_get(k, "fallback"));
    if (fallback) {
        cr_expect_str_eq(target, "sm_100f");
        cr_expect(strstr(json_string_value(json_object_get(k, "note")), "fallback") != NULL);
    } else {
        cr_expect_str_eq(target, "sm_107a");
    }
    json_decref(k);
}

Test(cli_inspect, source_is_deterministic_and_carries_the_key) {
    json_t *k = key_of("sm_90a");
    const char *hash = json_string_value(json_object_get(k, "hash"));
    cli_result_t a = CLI(g_dir, NULL, "inspect", PROBLEM, "--arch", "sm_90a", "--source");
    cli_result_t b = CLI(g_dir, NULL, "inspect", PROBLEM, "--arch", "sm_90a", "--source");
    cr_assert_eq(a.rc, 0, "%s", a.err);
    cr_assert_eq(b.rc, 0, "%s", b.err);
    cr_expect_str_eq(a.out, b.out, "same problem, different source");
    cr_expect(strstr(a.out, hash) != NULL, "source header lacks the key hash");
    cr_expect(strstr(a.out, "__global__") != NULL);
    cli_result_t j = CLI(g_dir, NULL, "inspect", PROBLEM, "--arch", "sm_90a", "--source", "--json");
    cr_assert_eq(j.rc, 0, "%s", j.err);
    json_t *o = parse_json(j.out);
    const char *src = json_string_value(json_object_get(o, "source"));
    cr_assert_not_null(src);
    /* Text mode adds at most a final newline. */
    cr_expect_eq(strncmp(src, a.out, strlen(src)), 0);
    json_decref(o);
    cli_free(&a);
    cli_free(&b);
    cli_free(&j);
    json_decref(k);
}

Test(cli_inspect, ptx_and_entry_compile_for_the_target) {
    json_t *k = key_of("sm_90a");
    const char *hash = json_string_value(json_object_get(k, "hash"));
    cli_result_t r = CLI(g_dir, NULL, "inspect", PROBLEM, "--arch", "sm_90a", "--ptx");
    cr_assert_eq(r.rc, 0, "%s", r.err);
    cr_expect(strstr(r.out, ".version") != NULL);
    cr_expect(strstr(r.out, ".target sm_90a") != NULL, "%.300s", r.out);
    cli_free(&r);
    r = CLI(g_dir, NULL, "inspect", PROBLEM, "--arch", "sm_90a", "--entry", "--json");
    cr_assert_eq(r.rc, 0, "%s", r.err);
    json_t *e = parse_json(r.out);
    cr_expect_str_eq(json_string_value(json_object_get(e, "hash")), hash);
    cr_expect_str_eq(json_string_value(json_object_get(e, "target")), "sm_90a");
    cr_expect(json_integer_value(json_object_get(e, "registers")) > 0);
    json_decref(e);
    cli_free(&r);
    json_decref(k);
}

/* A build compiles the cubin only; the PTX is made when inspect asks for it, so a cold compile
 * leaves no .ptx in the cache and --ptx still answers from a warm one. */
Test(cli_inspect, ptx_is_compiled_on_demand_not_at_build) {
    json_t *k = key_of("sm_90a");
    const char *hash = json_string_value(json_object_get(k, "hash"));
    cli_result_t r = CLI(g_dir, NULL, "inspect", PROBLEM, "--arch", "sm_90a", "--entry");
    cr_assert_eq(r.rc, 0, "%s", r.err);
    cli_free(&r);
    char path[1200];
    struct stat st;
    snprintf(path, sizeof(path), "%s/kernels/%s.cubin", g_dir, hash);
    cr_expect_eq(stat(path, &st), 0, "the build published no cubin at %s", path);
    snprintf(path, sizeof(path), "%s/kernels/%s.ptx", g_dir, hash);
    cr_expect_neq(stat(path, &st), 0, "the build wrote PTX nobody asked for");
    r = CLI(g_dir, NULL, "inspect", PROBLEM, "--arch", "sm_90a", "--ptx");
    cr_assert_eq(r.rc, 0, "%s", r.err);
    cr_expect(strstr(r.out, ".target sm_90a") != NULL, "%.300s", r.out);
    cr_expect(strstr(r.out, ".entry") != NULL, "%.300s", r.out);
    cli_free(&r);
    json_decref(k);
}

static char *read_out(const char *dir, const char *name) {
    char path[1200];
    snprintf(path, sizeof(path), "%s/%s", dir, name);
    char *text = jt_read_file(path, NULL);
    cr_assert_not_null(text, "%s was not written", path);
    return text;
}

Test(cli_inspect, out_writes_every_stage) {
    char out[1024];
    snprintf(out, sizeof(out), "%s/inspect-out", g_dir);
    cli_result_t r = CLI(g_dir, NULL, "inspect", PROBLEM, "--arch", "sm_90a", "--out", out);
    cr_assert_eq(r.rc, 0, "%s", r.err);
    cr_expect_eq(cli_count_lines(r.out), 5, "one 'wrote' line per file: %s", r.out);
    cli_free(&r);

    json_t *k = key_of("sm_90a");
    const char *hash = json_string_value(json_object_get(k, "hash"));
    char *key = read_out(out, "key.txt"), *plan = read_out(out, "plan.json");
    char *cu = read_out(out, "kernel.cu"), *ptx = read_out(out, "kernel.ptx");
    char *entry = read_out(out, "entry.json");
    cr_expect(strstr(key, hash) != NULL);
    cr_expect(strstr(cu, hash) != NULL);
    cr_expect(strstr(ptx, ".target sm_90a") != NULL);
    json_t *pj = parse_json(plan), *ej = parse_json(entry);
    cr_expect_str_eq(json_string_value(json_object_get(pj, "arch")), "sm_90a");
    cr_expect_str_eq(json_string_value(json_object_get(ej, "hash")), hash);

    /* The files hold exactly what the stage flags print. */
    r = CLI(g_dir, NULL, "inspect", PROBLEM, "--arch=sm_90a", "--plan", "--json");
    cr_assert_eq(r.rc, 0, "%s", r.err);
    json_t *again = parse_json(r.out);
    cr_expect(json_equal(pj, again), "plan.json differs from --plan --json");
    json_decref(again);
    cli_free(&r);

    json_decref(pj);
    json_decref(ej);
    free(key);
    free(plan);
    free(cu);
    free(ptx);
    free(entry);
    json_decref(k);
}

/* ---- --out in a directory others could have prepared ------------------------------------- */

/* A link planted where a stage file goes is replaced; the file it pointed at is untouched. */
Test(cli_inspect, out_never_writes_through_a_planted_link) {
    char out[1024], victim[1100], link[1100];
    snprintf(out, sizeof(out), "%s/planted", g_dir);
    snprintf(victim, sizeof(victim), "%s/victim", g_dir);
    snprintf(link, sizeof(link), "%s/key.txt", out);
    cr_assert_eq(mkdir(out, 0700), 0);
    cr_assert_eq(jt_write_file(victim, "precious\n"), 0);
    cr_assert_eq(symlink(victim, link), 0);
    cli_result_t r = CLI(g_dir, NULL, "inspect", PROBLEM, "--arch", "sm_90a", "--out", out);
    cr_expect_eq(r.rc, 0, "%s", r.err);
    cli_free(&r);
    char *v = jt_read_file(victim, NULL);
    cr_expect_str_eq(v, "precious\n", "inspect --out wrote through a planted link");
    free(v);
    struct stat st;
    cr_assert_eq(lstat(link, &st), 0);
    cr_expect(S_ISREG(st.st_mode), "key.txt should now be a regular file");
}

/* Entries of `dir`, . and .. aside. */
static int tc_files(const char *dir) {
    DIR *d = opendir(dir);
    cr_assert_not_null(d, "%s", dir);
    int n = 0;
    struct dirent *de;
    while ((de = readdir(d)))
        n += strcmp(de->d_name, ".") && strcmp(de->d_name, "..");
    closedir(d);
    return n;
}

/* A directory another user can write into is refused, with its name and the reason. */
Test(cli_inspect, out_refuses_a_directory_others_can_write) {
    char open_dir[1024], foreign[1024];
    snprintf(open_dir, sizeof(open_dir), "%s/open", g_dir);
    snprintf(foreign, sizeof(foreign), "%s/foreign", g_dir);
    cr_assert_eq(mkdir(open_dir, 0700), 0);
    cr_assert_eq(chmod(open_dir, 0777), 0);
    cr_assert_eq(mkdir(foreign, 0755), 0);
    cr_assert_eq(chown(foreign, 12345, 12345), 0);
    const char *dirs[] = {open_dir, foreign};
    for (int i = 0; i < 2; i++) {
        cli_result_t r = CLI(g_dir, NULL, "inspect", PROBLEM, "--arch", "sm_90a", "--out", dirs[i]);
        cr_expect_eq(r.rc, 1, "%s: exit %d: %s", dirs[i], r.rc, r.err);
        cr_expect(strstr(r.err, dirs[i]) && strstr(r.err, "another user"), "%s", r.err);
        cr_expect_eq(tc_files(dirs[i]), 0, "%s: files were written", dirs[i]);
        cli_free(&r);
    }
}
