/*
 * `jitgemm inspect --out DIR` writes the whole unit NVRTC compiled (kernel.cu, every device
 * header it includes at the path its #include names, and build-options.txt), and
 * `jitgemm rebuild DIR` compiles it again from DIR. Rebuilt unedited, it gives the SASS of the
 * cached cubin; with a header in DIR edited, it gives another cubin, so the rebuild really reads
 * DIR and not the library's embedded copy. Both for an sm_90a wgmma kernel and an sm_100a
 * tcgen05 one. `inspect --source --full` prints the same unit as one text, which rebuilds alone.
 * The folders --out creates are held to the same rules as DIR: no link followed, none another
 * user owns or can write. SASS comes from the nvdisasm scripts/setup.sh installs (sass.c's
 * finder, compiled in here); without one those comparisons skip with a message.
 */
#include <criterion/criterion.h>
#include <jansson.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../api/cli/sass.c"
#include "compile.h"
#include "device_files.h"
#include "test_cli_helpers.h"

static char *g_dir;
static char g_cache[600], g_out[600];

static void setup(void) {
    g_dir = jt_mkdtemp("cli-rebuild");
    cr_assert_not_null(g_dir);
    snprintf(g_cache, sizeof(g_cache), "%s/cache", g_dir);
    snprintf(g_out, sizeof(g_out), "%s/kernel-dir", g_dir);
}

static void teardown(void) {
    jt_rmtree(g_dir);
    free(g_dir);
}

TestSuite(cli_rebuild, .init = setup, .fini = teardown, .timeout = 600);

#define WGMMA "--op", "linear", "--n", "256", "--k", "128", "--tokens", "1", "--arch", "sm_90a"
#define TCGEN05                                                                                    \
    "--op", "linear", "--n", "256", "--k", "256", "--tokens", "128", "--arch", "sm_100a", "--a",   \
        "e2m1", "--b", "e2m1", "--scales", "ue4m3/16"

static char *read_in(const char *dir, const char *name, size_t *len) {
    char path[1400];
    snprintf(path, sizeof(path), "%s/%s", dir, name);
    char *text = jt_read_file(path, len);
    cr_assert_not_null(text, "%s was not written", path);
    return text;
}

/* The cached cubin of the kernel whose entry.json --out wrote into `dir`. */
static char *cached_cubin(const char *dir, size_t *len) {
    char *entry = read_in(dir, "entry.json", NULL);
    json_t *e = json_loads(entry, 0, NULL);
    cr_assert_not_null(e, "%s", entry);
    char name[200];
    snprintf(name, sizeof(name), "kernels/%s.cubin", json_string_value(json_object_get(e, "hash")));
    json_decref(e);
    free(entry);
    return read_in(g_cache, name, len);
}

/* SASS of a cubin; NULL (and the test skipped) without nvdisasm. */
static char *sass_of(const void *cubin, size_t len) {
    char nvdisasm[4096], why[1024];
    if (!jit__cli_find_nvdisasm(nvdisasm, sizeof(nvdisasm)))
        cr_skip_test("no nvdisasm (scripts/setup.sh installs it): the SASS is not compared");
    char *sass = NULL;
    cr_assert_eq(jit__cli_disassemble(nvdisasm, cubin, len, &sass, why, sizeof(why)), 0, "%s", why);
    return sass;
}

static int rebuild(const char *dir, char **err) {
    cli_result_t r = CLI(NULL, NULL, "rebuild", dir);
    int rc = r.rc;
    if (rc == 0)
        cr_expect(strstr(r.out, "wrote ") && strstr(r.out, "kernel.cubin"), "%s", r.out);
    if (err)
        *err = strdup(r.err);
    cli_free(&r);
    return rc;
}

/* Every header the unit includes is in DIR at its include path, byte for byte the embedded one,
 * and build-options.txt states the library's options for the target. Returns the header count. */
static size_t expect_whole_unit(const char *dir, const char *target) {
    size_t n = 0, listed = 0;
    const jit__device_file_t *all = jit__device_files(&n);
    for (size_t i = 0; i < n; i++) {
        char path[1400];
        snprintf(path, sizeof(path), "%s/%s", dir, all[i].name);
        size_t len = 0;
        char *text = jt_read_file(path, &len);
        if (!text)
            continue;
        listed++;
        cr_expect(len == all[i].size && !memcmp(text, all[i].text, len), "%s differs", path);
        free(text);
    }
    char *cu = read_in(dir, "kernel.cu", NULL);
    for (const char *p = cu; (p = strstr(p, "#include \"")); p++) {
        char name[256], path[1400];
        cr_assert_eq(sscanf(p, "#include \"%255[^\"]\"", name), 1);
        snprintf(path, sizeof(path), "%s/%s", dir, name);
        cr_expect_eq(access(path, R_OK), 0, "kernel.cu includes %s; it was not written", name);
    }
    free(cu);
    char *opts = read_in(dir, "build-options.txt", NULL);
    jit__compile_options_t o;
    cr_assert_eq(jit__compile_options(target, &o), 0);
    char want[256];
    snprintf(want, sizeof(want), "\ntarget    %s\n", target);
    cr_expect(strstr(opts, want), "%s", opts);
    snprintf(want, sizeof(want), "\nnvrtc     %s %s %s", o.nvrtc[0], o.nvrtc[1], o.nvrtc[2]);
    cr_expect(strstr(opts, want), "want '%s' in %s", want + 1, opts);
    snprintf(want, sizeof(want), "\nnvjitlink %s %s", o.link[0], o.link[1]);
    cr_expect(strstr(opts, want), "want '%s' in %s", want + 1, opts);
    free(opts);
    cr_expect_gt(listed, 1, "no device header was written");
    return listed;
}

/* Add a kernel to DIR's device/common.cuh, which every family includes, inside its include
 * guard (before the last #endif), so it is compiled once. */
static void edit_common_header(const char *dir) {
    char path[1400];
    snprintf(path, sizeof(path), "%s/device/common.cuh", dir);
    char *text = jt_read_file(path, NULL);
    cr_assert_not_null(text, "%s", path);
    char *guard_end = NULL;
    for (char *p = text; (p = strstr(p, "#endif")); p++)
        guard_end = p;
    cr_assert_not_null(guard_end, "no include guard in %s", path);
    FILE *f = fopen(path, "w");
    cr_assert_not_null(f, "%s", path);
    fprintf(f, "%.*sextern \"C\" __global__ void jitgemm_rebuild_read_this(int *p) { *p = 7; }\n%s",
            (int)(guard_end - text), text, guard_end);
    fclose(f);
    free(text);
}

/* inspect --out, rebuild, compare with the cache; then edit a header in DIR and rebuild. */
static void rebuild_round_trip(const char *const *problem, const char *target) {
    const char *argv[32] = {"inspect"};
    size_t n = 1;
    for (; problem[n - 1]; n++)
        argv[n] = problem[n - 1];
    argv[n++] = "--out";
    argv[n++] = g_out;
    argv[n] = NULL;
    cli_result_t r = cli_run(g_cache, NULL, argv);
    cr_assert_eq(r.rc, 0, "%s", r.err);
    cr_expect(strstr(r.out, "build-options.txt"), "%s", r.out);
    cli_free(&r);
    expect_whole_unit(g_out, target);

    char *err = NULL;
    cr_assert_eq(rebuild(g_out, &err), 0, "%s", err);
    free(err);
    size_t n_cached = 0, n_rebuilt = 0;
    char *cached = cached_cubin(g_out, &n_cached);
    char *rebuilt = read_in(g_out, "kernel.cubin", &n_rebuilt);

    edit_common_header(g_out);
    cr_assert_eq(rebuild(g_out, &err), 0, "%s", err);
    free(err);
    size_t n_edited = 0;
    char *edited = read_in(g_out, "kernel.cubin", &n_edited);
    cr_expect(n_edited != n_rebuilt || memcmp(edited, rebuilt, n_edited) != 0,
              "editing a header in DIR did not change the rebuilt cubin");
    cr_expect(memmem(edited, n_edited, "jitgemm_rebuild_read_this", 25) != NULL,
              "the edited header's kernel is not in the rebuilt cubin");

    char *sass_cached = sass_of(cached, n_cached);
    char *sass_rebuilt = sass_of(rebuilt, n_rebuilt);
    char *sass_edited = sass_of(edited, n_edited);
    cr_expect_str_eq(sass_rebuilt, sass_cached, "the rebuild from DIR is not the cached kernel");
    cr_expect(strstr(sass_edited, "jitgemm_rebuild_read_this"), "%.300s", sass_edited);
    free(sass_cached);
    free(sass_rebuilt);
    free(sass_edited);
    free(cached);
    free(rebuilt);
    free(edited);
}

Test(cli_rebuild, wgmma_sm90a_rebuilds_the_cached_sass_and_reads_dir) {
    const char *problem[] = {WGMMA, NULL};
    rebuild_round_trip(problem, "sm_90a");
}

Test(cli_rebuild, tcgen05_sm100a_rebuilds_the_cached_sass_and_reads_dir) {
    const char *problem[] = {TCGEN05, NULL};
    rebuild_round_trip(problem, "sm_100a");
}

/* --full is the same unit as one text: each header once, and it rebuilds with no header in
 * DIR at all into the cached kernel's SASS. */
Test(cli_rebuild, full_source_is_the_whole_unit) {
    cli_result_t r = CLI(g_cache, NULL, "inspect", WGMMA, "--out", g_out);
    cr_assert_eq(r.rc, 0, "%s", r.err);
    cli_free(&r);
    size_t headers = expect_whole_unit(g_out, "sm_90a");
    r = CLI(g_cache, NULL, "inspect", WGMMA, "--source", "--full");
    cr_assert_eq(r.rc, 0, "%s", r.err);
    size_t begins = 0;
    for (const char *p = r.out; (p = strstr(p, "/* ==== #include \"")); p++)
        begins++;
    cr_expect_eq(begins, headers, "%zu headers inlined, %zu written by --out", begins, headers);
    cr_expect(strstr(r.out, "inlined above"), "a header included twice is inlined once");
    cr_expect_null(strstr(r.out, "\n#include \""), "an #include was left in the full unit");

    char alone[700];
    snprintf(alone, sizeof(alone), "%s/full", g_dir);
    cr_assert_eq(mkdir(alone, 0700), 0);
    char *opts = read_in(g_out, "build-options.txt", NULL);
    char path[800];
    snprintf(path, sizeof(path), "%s/build-options.txt", alone);
    cr_assert_eq(jt_write_file(path, opts), 0);
    snprintf(path, sizeof(path), "%s/kernel.cu", alone);
    cr_assert_eq(jt_write_file(path, r.out), 0);
    cli_free(&r);
    free(opts);
    char *err = NULL;
    cr_assert_eq(rebuild(alone, &err), 0, "the full unit does not compile alone: %s", err);
    free(err);
    size_t n_cached = 0, n_full = 0;
    char *cached = cached_cubin(g_out, &n_cached);
    char *full = read_in(alone, "kernel.cubin", &n_full);
    char *a = sass_of(cached, n_cached), *b = sass_of(full, n_full);
    cr_expect_str_eq(b, a, "the full unit compiles to another kernel");
    free(a);
    free(b);
    free(cached);
    free(full);

    r = CLI(g_cache, NULL, "inspect", WGMMA, "--plan", "--full");
    CLI_EXPECT(r, 2, "--full goes with --source");
    cli_free(&r);
}

/* The rebuild compiles only what DIR holds: a header gone from it is an error that names it,
 * never the embedded copy, and nothing is written. */
Test(cli_rebuild, a_header_missing_from_dir_fails) {
    cli_result_t r = CLI(g_cache, NULL, "inspect", WGMMA, "--source", "--out", g_out);
    cr_assert_eq(r.rc, 0, "%s", r.err);
    cli_free(&r);
    char path[800];
    snprintf(path, sizeof(path), "%s/device/sm90.cuh", g_out);
    cr_assert_eq(unlink(path), 0);
    char *err = NULL;
    cr_expect_eq(rebuild(g_out, &err), 1);
    cr_expect(strstr(err, "device/sm90.cuh") && strstr(err, "No such file"), "%s", err);
    free(err);
    snprintf(path, sizeof(path), "%s/kernel.cubin", g_out);
    cr_expect_neq(access(path, F_OK), 0, "a cubin was written");
}

/* The option lines are the library's; an edited one is refused, not half-honoured. */
Test(cli_rebuild, edited_options_are_refused) {
    cli_result_t r = CLI(g_cache, NULL, "inspect", WGMMA, "--source", "--out", g_out);
    cr_assert_eq(r.rc, 0, "%s", r.err);
    cli_free(&r);
    char *opts = read_in(g_out, "build-options.txt", NULL);
    char *at = strstr(opts, "-std=c++17");
    cr_assert_not_null(at);
    memcpy(at, "-std=c++14", 10);
    char path[800];
    snprintf(path, sizeof(path), "%s/build-options.txt", g_out);
    cr_assert_eq(jt_write_file(path, opts), 0);
    free(opts);
    char *err = NULL;
    cr_expect_eq(rebuild(g_out, &err), 1);
    cr_expect(strstr(err, "'nvrtc' line") && strstr(err, "sm_90a"), "%s", err);
    free(err);
}

/* ---- the folders --out creates are vetted as DIR is --------------------------------------- */

static void expect_out_refused(const char *needle) {
    cli_result_t r = CLI(g_cache, NULL, "inspect", WGMMA, "--source", "--out", g_out);
    cr_expect_eq(r.rc, 1, "exit %d: %s", r.rc, r.err);
    cr_expect(strstr(r.err, "device") && strstr(r.err, needle), "want '%s' in: %s", needle, r.err);
    cli_free(&r);
}

static int entries_of(const char *dir) {
    char cmd[900];
    snprintf(cmd, sizeof(cmd), "ls -A %s | wc -l", dir);
    FILE *p = popen(cmd, "r");
    int n = -1;
    if (p) {
        if (fscanf(p, "%d", &n) != 1)
            n = -1;
        pclose(p);
    }
    return n;
}

Test(cli_rebuild, out_never_follows_a_link_at_a_header_folder) {
    char elsewhere[700], link[700];
    snprintf(elsewhere, sizeof(elsewhere), "%s/elsewhere", g_dir);
    snprintf(link, sizeof(link), "%s/device", g_out);
    cr_assert_eq(mkdir(g_out, 0700), 0);
    cr_assert_eq(mkdir(elsewhere, 0700), 0);
    cr_assert_eq(symlink(elsewhere, link), 0);
    expect_out_refused("symbolic link");
    cr_expect_eq(entries_of(elsewhere), 0, "headers were written where the link points");
}

Test(cli_rebuild, out_refuses_a_header_folder_others_can_write) {
    char sub[700];
    snprintf(sub, sizeof(sub), "%s/device", g_out);
    cr_assert_eq(mkdir(g_out, 0700), 0);
    cr_assert_eq(mkdir(sub, 0700), 0);
    cr_assert_eq(chmod(sub, 0777), 0);
    expect_out_refused("another user can write to it");
    cr_expect_eq(entries_of(sub), 0);
    if (geteuid() != 0)
        return;
    cr_assert_eq(chmod(sub, 0755), 0);
    cr_assert_eq(chown(sub, 12345, 12345), 0);
    expect_out_refused("owned by another user");
    cr_expect_eq(entries_of(sub), 0);
}

/* rebuild reads and writes DIR by the same rules: a link at DIR or at a header is refused. */
Test(cli_rebuild, rebuild_follows_no_link) {
    cli_result_t r = CLI(g_cache, NULL, "inspect", WGMMA, "--source", "--out", g_out);
    cr_assert_eq(r.rc, 0, "%s", r.err);
    cli_free(&r);
    char link[700];
    snprintf(link, sizeof(link), "%s/link", g_dir);
    cr_assert_eq(symlink(g_out, link), 0);
    char *err = NULL;
    cr_expect_eq(rebuild(link, &err), 1);
    cr_expect(strstr(err, "symbolic link"), "%s", err);
    free(err);

    char header[800], moved[800];
    snprintf(header, sizeof(header), "%s/device/common.cuh", g_out);
    snprintf(moved, sizeof(moved), "%s/common.cuh", g_dir);
    cr_assert_eq(rename(header, moved), 0);
    cr_assert_eq(symlink(moved, header), 0);
    cr_expect_eq(rebuild(g_out, &err), 1);
    cr_expect(strstr(err, "device/common.cuh") && strstr(err, "symbolic link"), "%s", err);
    free(err);
}
