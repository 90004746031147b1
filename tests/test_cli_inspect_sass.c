/*
 * `jitgemm inspect --cubin --out DIR` and `--sass`: the cubin written is byte for byte the one
 * the cache holds, written by the same safe rules as the other --out files; the SASS comes from
 * the nvdisasm setup installs (found beside the program, as the toolkit is), and without one the
 * message says how to get it. The finder is CLI code, so its source is compiled in here.
 */
#include <criterion/criterion.h>
#include <fcntl.h>
#include <jansson.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../api/cli/sass.c"
#include "test_cli_helpers.h"

static char *g_dir;
static char g_cache[512];

#define PROBLEM "--op", "linear", "--n", "256", "--k", "128", "--tokens", "1", "--arch", "sm_90a"

static void setup(void) {
    g_dir = jt_mkdtemp("cli-sass");
    cr_assert_not_null(g_dir);
    snprintf(g_cache, sizeof(g_cache), "%s/cache", g_dir);
}

static void teardown(void) {
    jt_rmtree(g_dir);
    free(g_dir);
}

TestSuite(cli_inspect_sass, .init = setup, .fini = teardown, .timeout = 300);

static void key_hash(char *hash) {
    cli_result_t r = CLI(g_cache, NULL, "inspect", PROBLEM, "--key", "--json");
    cr_assert_eq(r.rc, 0, "%s", r.err);
    json_t *o = json_loads(r.out, 0, NULL);
    cr_assert_not_null(o, "%s", r.out);
    snprintf(hash, 33, "%s", json_string_value(json_object_get(o, "hash")));
    json_decref(o);
    cli_free(&r);
}

Test(cli_inspect_sass, cubin_out_writes_the_cached_cubin) {
    char out[700];
    snprintf(out, sizeof(out), "%s/out", g_dir);
    cli_result_t r = CLI(g_cache, NULL, "inspect", PROBLEM, "--cubin", "--out", out);
    cr_assert_eq(r.rc, 0, "%s", r.err);
    cr_expect_eq(cli_count_lines(r.out), 1, "only kernel.cubin: %s", r.out);
    cli_free(&r);
    char hash[33], path[1400];
    key_hash(hash);
    snprintf(path, sizeof(path), "%s/kernel.cubin", out);
    size_t n_out = 0, n_cache = 0;
    char *written = jt_read_file(path, &n_out);
    snprintf(path, sizeof(path), "%s/kernels/%s.cubin", g_cache, hash);
    char *cached = jt_read_file(path, &n_cache);
    cr_assert(written && cached, "missing file");
    cr_expect_gt(n_out, 64);
    cr_expect_eq(n_out, n_cache);
    cr_expect(n_out == n_cache && memcmp(written, cached, n_out) == 0, "cubins differ");
    cr_expect(memcmp(written, "\177ELF", 4) == 0, "not an ELF file");
    free(written);
    free(cached);
}

Test(cli_inspect_sass, cubin_needs_out_and_out_refuses_json) {
    cli_result_t r = CLI(g_cache, NULL, "inspect", PROBLEM, "--cubin");
    CLI_EXPECT(r, 2, "--cubin is binary: add --out DIR");
    cli_free(&r);
    r = CLI(g_cache, NULL, "inspect", PROBLEM, "--sass", "--json", "--out", g_dir);
    CLI_EXPECT(r, 2, "does not combine with --json");
    cli_free(&r);
}

Test(cli_inspect_sass, cubin_out_keeps_the_safe_write_rules) {
    char open_dir[700], planted[700], victim[800], link[800];
    snprintf(open_dir, sizeof(open_dir), "%s/open", g_dir);
    cr_assert_eq(mkdir(open_dir, 0700), 0);
    cr_assert_eq(chmod(open_dir, 0777), 0);
    cli_result_t r = CLI(g_cache, NULL, "inspect", PROBLEM, "--cubin", "--out", open_dir);
    cr_expect_eq(r.rc, 1, "exit %d: %s", r.rc, r.err);
    cr_expect(strstr(r.err, "another user can write to it"), "%s", r.err);
    cli_free(&r);

    snprintf(planted, sizeof(planted), "%s/planted", g_dir);
    snprintf(victim, sizeof(victim), "%s/victim", g_dir);
    snprintf(link, sizeof(link), "%s/kernel.cubin", planted);
    cr_assert_eq(mkdir(planted, 0700), 0);
    cr_assert_eq(jt_write_file(victim, "precious\n"), 0);
    cr_assert_eq(symlink(victim, link), 0);
    r = CLI(g_cache, NULL, "inspect", PROBLEM, "--cubin", "--out", planted);
    cr_expect_eq(r.rc, 0, "%s", r.err);
    cli_free(&r);
    char *v = jt_read_file(victim, NULL);
    cr_expect_str_eq(v, "precious\n", "the cubin was written through a planted link");
    free(v);
    struct stat st;
    cr_assert_eq(lstat(link, &st), 0);
    cr_expect(S_ISREG(st.st_mode));
}

Test(cli_inspect_sass, never_mode_writes_nothing) {
    char out[700];
    snprintf(out, sizeof(out), "%s/out", g_dir);
    const char *argv[] = {JITGEMM_CLI_PATH, "inspect", PROBLEM, "--cubin", "--out", out,
                          "--cache-dir",    g_cache,   NULL};
    const char *env[] = {"JITGEMM_COMPILE=never", NULL};
    char *o = NULL, *e = NULL;
    int rc = jt_run(argv, env, NULL, &o, &e);
    cr_expect_eq(rc, 1, "exit %d: %s", rc, e);
    cr_expect(strstr(e, "is not in the cache"), "%s", e);
    char path[800];
    snprintf(path, sizeof(path), "%s/kernel.cubin", out);
    cr_expect_neq(access(path, F_OK), 0, "kernel.cubin was written");
    free(o);
    free(e);
}

Test(cli_inspect_sass, sass_from_the_project_local_nvdisasm) {
    char nvdisasm[4096];
    if (!jit__cli_find_nvdisasm(nvdisasm, sizeof(nvdisasm)))
        cr_skip_test("no nvdisasm (scripts/setup.sh installs it)");
    cli_result_t r = CLI(g_cache, NULL, "inspect", PROBLEM, "--sass");
    cr_assert_eq(r.rc, 0, "%s", r.err);
    cr_expect(strstr(r.out, ".target\tsm_90a"), "%.400s", r.out);
    cr_expect(strstr(r.out, "jitgemm_fp8_wgmma:"), "%.400s", r.out);
    cr_expect(strstr(r.out, "EXIT"), "no EXIT instruction in the SASS");
    char *text = r.out;
    r.out = NULL;
    cli_free(&r);

    r = CLI(g_cache, NULL, "inspect", PROBLEM, "--sass", "--json");
    cr_assert_eq(r.rc, 0, "%s", r.err);
    json_t *o = json_loads(r.out, 0, NULL);
    cr_assert_not_null(o, "%.200s", r.out);
    const char *sass = json_string_value(json_object_get(o, "sass"));
    cr_expect(sass && !strcmp(sass, text), "--json's sass differs from the text form");
    json_decref(o);
    cli_free(&r);
    free(text);
}

/* A copy of the CLI in a folder of its own has no toolkit folder beside it; with the toolkit
 * variables empty and PATH pointing nowhere it finds no nvdisasm. */
Test(cli_inspect_sass, without_nvdisasm_the_message_says_how_to_get_it) {
    if (access("/usr/local/cuda/bin/nvdisasm", X_OK) == 0)
        cr_skip_test("/usr/local/cuda/bin/nvdisasm exists: the search would find it");
    size_t size = 0;
    char *bin = jt_read_file(JITGEMM_CLI_PATH, &size);
    cr_assert_not_null(bin);
    char copy[700];
    snprintf(copy, sizeof(copy), "%s/jitgemm", g_dir);
    int fd = open(copy, O_WRONLY | O_CREAT | O_EXCL, 0755);
    cr_assert_geq(fd, 0);
    cr_assert_eq(write(fd, bin, size), (ssize_t)size);
    close(fd);
    free(bin);
    const char *argv[] = {copy, "inspect", PROBLEM, "--sass", "--cache-dir", g_cache, NULL};
    const char *env[] = {"PATH=/nonexistent",
                         "CUDA_HOME=", "CUDA_PATH=", "JITGEMM_TOOLKIT_DIR=", NULL};
    char *out = NULL, *err = NULL;
    int rc = jt_run(argv, env, NULL, &out, &err);
    cr_expect_eq(rc, 1, "exit %d: %s", rc, err);
    cr_expect(strstr(err, "nvdisasm not found"), "%s", err);
    cr_expect(strstr(err, "scripts/setup.sh"), "%s", err);
    free(out);
    free(err);
}
