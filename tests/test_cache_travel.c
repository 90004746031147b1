/*
 * Caches that travel: a key holds no toolchain and no SM count, so a cache filled by one
 * toolchain serves a host with another NVRTC, or none at all, without compiling; what a
 * toolchain may replace is decided by the target it can build (docs/cache.md, "Caches that
 * travel"). Criterion runs each test in a process of its own, which the process-wide toolchain
 * table needs. The second toolchain is the system toolkit ($CUDA_HOME or /usr/local/cuda); the
 * tests that need two versions skip without it, except one that simulates an older NVRTC with
 * a toolchain record (toolchains.json) claiming NVRTC 13.2 without sm_107.
 */
#include <criterion/criterion.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "context.h"
#include "jitgemm.h"
#include "support.h"
#include "test_cli_helpers.h"

static char *g_dir;

static void setup(void) {
    g_dir = jt_mkdtemp("travel");
    cr_assert_not_null(g_dir);
}

static void teardown(void) {
    jt_rmtree(g_dir);
    free(g_dir);
}

TestSuite(travel, .init = setup, .fini = teardown, .timeout = 600);

static jit_context_t *ctx_for(const char *arch, int sm_count, const char *toolkit) {
    jit_context_options_t o;
    jit_context_options_init(&o);
    char cache[1024];
    snprintf(cache, sizeof(cache), "%s/cache", g_dir);
    o.cache_dir = cache;
    o.arch = arch;
    o.sm_count = sm_count;
    o.toolkit_dir = toolkit;
    o.log_level = JIT_LOG_ERROR;
    jit_context_t *ctx = NULL;
    cr_assert_eq(jit_context_create(&o, &ctx), JIT_OK, "%s", jit_last_error(NULL));
    return ctx;
}

static jit_problem_t fp8_problem(int64_t m, int64_t n, int64_t k) {
    jit_problem_t p;
    jit_problem_init(&p);
    p.m = m;
    p.n = n;
    p.k = k;
    return p;
}

typedef struct seen {
    jit_prewarm_result_t result;
    jit_status_t status;
    char error[1024];
} seen_t;

static void on_event(const jit_prewarm_event_t *ev, void *user) {
    seen_t *s = user;
    s->result = ev->result;
    s->status = ev->status;
    snprintf(s->error, sizeof(s->error), "%s", ev->error);
}

/* Prewarm one problem; what happened to it. */
static seen_t prewarm_one(jit_context_t *ctx, const jit_problem_t *p) {
    seen_t s = {JIT_PREWARM_FAILED, JIT_INTERNAL, ""};
    jit_prewarm(ctx, p, 1, 1, on_event, &s);
    return s;
}

/* The entry a context serves for p, as JSON text (caller frees with jit_free). */
static char *entry_of(jit_context_t *ctx, const jit_problem_t *p) {
    char *text = NULL;
    cr_assert_eq(jit_inspect(ctx, p, JIT_INSPECT_ENTRY, &text), JIT_OK, "%s", jit_last_error(ctx));
    return text;
}

static const char *system_toolkit(void) {
    const char *home = getenv("CUDA_HOME");
    return home && *home ? home : "/usr/local/cuda";
}

/* The system toolchain if it is another NVRTC version than the automatic choice, else skip. */
static const jit__toolchain_t *other_toolchain(const jit__toolchain_t **automatic) {
    const jit__toolchain_t *sys = NULL;
    if (jit__toolchain_get(NULL, automatic, NULL) != JIT_OK)
        cr_skip("no NVRTC found; run scripts/setup.sh");
    if (jit__toolchain_get(system_toolkit(), &sys, NULL) != JIT_OK)
        cr_skip("no system toolkit at %s", system_toolkit());
    if (memcmp(&sys->id, &(*automatic)->id, sizeof(sys->id)) == 0)
        cr_skip("the system NVRTC is the automatic one (%d.%d)", sys->id.nvrtc_major,
                sys->id.nvrtc_minor);
    return sys;
}

Test(travel, a_host_without_nvrtc_serves_the_cache_and_compiles_nothing) {
    jit_context_t *build = ctx_for("sm_120a", 0, NULL);
    jit_problem_t p = fp8_problem(64, 256, 256);
    seen_t s = prewarm_one(build, &p);
    if (s.status == JIT_TOOLCHAIN_NOT_FOUND)
        cr_skip("no NVRTC found; run scripts/setup.sh");
    cr_assert_eq(s.result, JIT_PREWARM_COMPILED, "%s", s.error);
    jit_context_destroy(build);

    /* The serving host: its toolkit directory holds no NVRTC at all, and it has another SM
     * count. */
    char empty[1024];
    snprintf(empty, sizeof(empty), "%s/no-toolkit", g_dir);
    cr_assert_eq(mkdir(empty, 0700), 0);
    setenv("JITGEMM_TOOLKIT_DIR", empty, 1);
    jit_context_t *serve = ctx_for("sm_120a", 84, NULL);
    s = prewarm_one(serve, &p);
    cr_assert_eq(s.status, JIT_OK, "%s", s.error);
    cr_assert_eq(s.result, JIT_PREWARM_CACHED);
    char *entry = entry_of(serve, &p);
    cr_expect(strstr(entry, "\"nvrtc\""), "the entry names the toolchain that built it: %s", entry);
    jit_free(entry);
    /* A kernel that is not there cannot be made here, and the message says so. */
    jit_problem_t other = fp8_problem(64, 512, 256);
    s = prewarm_one(serve, &other);
    cr_assert_eq(s.result, JIT_PREWARM_FAILED);
    cr_expect_eq(s.status, JIT_TOOLCHAIN_NOT_FOUND);
    cr_expect(strstr(s.error, "not in the cache") && strstr(s.error, "no-toolkit"), "%s", s.error);
    jit_context_destroy(serve);
    unsetenv("JITGEMM_TOOLKIT_DIR");
}

Test(travel, an_older_nvrtc_serves_a_native_entry_it_could_not_build) {
    const jit__toolchain_t *newer, *older = other_toolchain(&newer);
    if (!jit__toolchain_supports(newer, 107) || jit__toolchain_supports(older, 107))
        cr_skip("needs one NVRTC with sm_107 and one without");
    jit_problem_t p = fp8_problem(64, 256, 256);
    jit_context_t *build = ctx_for("sm_107a", 0, newer->dir);
    seen_t s = prewarm_one(build, &p);
    cr_assert_eq(s.result, JIT_PREWARM_COMPILED, "%s", s.error);
    jit_context_destroy(build);

    jit_context_t *serve = ctx_for("sm_107a", 0, older->dir);
    s = prewarm_one(serve, &p);
    cr_assert_eq(s.status, JIT_OK, "%s", s.error);
    cr_assert_eq(s.result, JIT_PREWARM_CACHED, "the native entry is served, not rebuilt");
    char *entry = entry_of(serve, &p);
    cr_expect(strstr(entry, "\"target\": \"sm_107a\""), "%s", entry);
    jit_free(entry);
    jit_context_destroy(serve);
}

Test(travel, a_newer_nvrtc_replaces_only_a_fallback_entry) {
    const jit__toolchain_t *newer, *older = other_toolchain(&newer);
    if (!jit__toolchain_supports(newer, 107) || jit__toolchain_supports(older, 107))
        cr_skip("needs one NVRTC with sm_107 and one without");
    jit_problem_t p = fp8_problem(64, 256, 256);
    /* The older NVRTC can build only the fallback target for sm_107a. */
    jit_context_t *old_ctx = ctx_for("sm_107a", 0, older->dir);
    seen_t s = prewarm_one(old_ctx, &p);
    cr_assert_eq(s.result, JIT_PREWARM_COMPILED, "%s", s.error);
    char *entry = entry_of(old_ctx, &p);
    cr_assert(strstr(entry, "\"fallback\": true"), "%s", entry);
    jit_free(entry);
    jit_context_destroy(old_ctx);

    /* A toolchain that targets the arch natively does not serve the fallback: it builds the
     * native cubin once, under the native key. */
    jit_context_t *new_ctx = ctx_for("sm_107a", 0, newer->dir);
    s = prewarm_one(new_ctx, &p);
    cr_assert_eq(s.result, JIT_PREWARM_COMPILED, "%s", s.error);
    s = prewarm_one(new_ctx, &p);
    cr_assert_eq(s.result, JIT_PREWARM_CACHED);
    jit_context_destroy(new_ctx);

    /* From then on the older one is served the native entry. */
    old_ctx = ctx_for("sm_107a", 0, older->dir);
    s = prewarm_one(old_ctx, &p);
    cr_assert_eq(s.result, JIT_PREWARM_CACHED, "%s", s.error);
    entry = entry_of(old_ctx, &p);
    cr_expect(strstr(entry, "\"fallback\": false"), "%s", entry);
    jit_free(entry);
    jit_context_destroy(old_ctx);
}

Test(travel, an_entry_from_another_nvrtc_of_the_same_target_is_kept) {
    const jit__toolchain_t *newer, *older = other_toolchain(&newer);
    jit_problem_t p = fp8_problem(64, 256, 256);
    jit_context_t *old_ctx = ctx_for("sm_90a", 0, older->dir);
    seen_t s = prewarm_one(old_ctx, &p);
    cr_assert_eq(s.result, JIT_PREWARM_COMPILED, "%s", s.error);
    jit_context_destroy(old_ctx);
    /* Same target, newer NVRTC, another SM count whose plan is the same: a hit. */
    jit_context_t *new_ctx = ctx_for("sm_90a", 114, newer->dir);
    s = prewarm_one(new_ctx, &p);
    cr_assert_eq(s.result, JIT_PREWARM_CACHED, "%s", s.error);
    char *entry = entry_of(new_ctx, &p);
    char want[64];
    snprintf(want, sizeof(want), "\"nvrtc\": \"%d.%d\"", older->id.nvrtc_major,
             older->id.nvrtc_minor);
    cr_expect(strstr(entry, want), "the entry still names its builder %s: %s", want, entry);
    jit_free(entry);
    jit_context_destroy(new_ctx);
}

/* A cache prewarmed by one NVRTC loses nothing to a gc run where another one is found (or
 * none): gc needs no toolchain, and every entry stays, served by either NVRTC without a
 * compile. */
Test(travel, gc_where_another_nvrtc_is_found_keeps_every_entry) {
    const jit__toolchain_t *newer, *older = other_toolchain(&newer);
    jit_problem_t p[2] = {fp8_problem(64, 256, 256), fp8_problem(64, 512, 256)};
    jit_context_t *build = ctx_for("sm_90a", 0, newer->dir);
    for (size_t i = 0; i < 2; i++) {
        seen_t s = prewarm_one(build, &p[i]);
        cr_assert_eq(s.result, JIT_PREWARM_COMPILED, "%s", s.error);
    }
    jit_context_destroy(build);

    char cache[1100], empty[1100];
    snprintf(cache, sizeof(cache), "%s/cache", g_dir);
    snprintf(empty, sizeof(empty), "%s/no-toolkit", g_dir);
    cr_assert_eq(mkdir(empty, 0700), 0);
    const char *toolkits[] = {older->dir, empty, newer->dir};
    for (size_t i = 0; i < 3; i++) {
        cr_assert_eq(setenv("JITGEMM_TOOLKIT_DIR", toolkits[i], 1), 0);
        cli_result_t r = CLI(cache, NULL, "cache", "gc", "--json");
        cr_assert_eq(r.rc, 0, "gc with %s: %s", toolkits[i], r.err);
        cr_expect(strstr(r.out, "\"removed\": 0"), "gc with %s: %s", toolkits[i], r.out);
        cli_free(&r);
    }
    unsetenv("JITGEMM_TOOLKIT_DIR");

    cr_assert_eq(setenv("JITGEMM_COMPILE", "never", 1), 0);
    const jit__toolchain_t *serving[] = {older, newer};
    for (size_t t = 0; t < 2; t++) {
        jit_context_t *serve = ctx_for("sm_90a", 0, serving[t]->dir);
        for (size_t i = 0; i < 2; i++) {
            seen_t s = prewarm_one(serve, &p[i]);
            cr_expect_eq(s.result, JIT_PREWARM_CACHED, "NVRTC %d.%d, problem %zu: %s",
                         serving[t]->id.nvrtc_major, serving[t]->id.nvrtc_minor, i, s.error);
        }
        jit_context_destroy(serve);
    }
    unsetenv("JITGEMM_COMPILE");
}

/* Make every record of <cache>/toolchains.json claim NVRTC 13.2 without sm_107: what an older
 * NVRTC reports, as a process that identifies its toolchain from the record believes it. */
static void forge_older_record(void) {
    char path[1200];
    snprintf(path, sizeof(path), "%s/cache/toolchains.json", g_dir);
    json_t *root = json_load_file(path, 0, NULL);
    cr_assert_not_null(root, "no toolchain record at %s", path);
    json_t *list = json_object_get(root, "toolchains");
    size_t i;
    json_t *rec;
    json_array_foreach(list, i, rec) {
        json_object_set_new(rec, "nvrtc", json_pack("[ii]", 13, 2));
        json_t *archs = json_object_get(rec, "archs"), *kept = json_array();
        size_t j;
        json_t *a;
        json_array_foreach(archs, j, a) if (json_integer_value(a) != 107)
            json_array_append(kept, a);
        json_object_set_new(rec, "archs", kept);
    }
    cr_assert_eq(json_dump_file(root, path, JSON_INDENT(1)), 0);
    cr_assert_eq(chmod(path, 0600), 0);
    json_decref(root);
}

/* The same as an_older_nvrtc_serves_a_native_entry_it_could_not_build, without a second
 * toolkit: the serving process (a fresh one: this one has identified the real toolchain) takes
 * its toolchain's identity from a record that says NVRTC 13.2 without sm_107. */
Test(travel, a_simulated_older_nvrtc_serves_the_native_entry) {
    /* The context first: it makes its cache the place toolchain identities are recorded. */
    jit_context_t *build = ctx_for("sm_107a", 0, NULL);
    const jit__toolchain_t *tc = NULL;
    if (jit__toolchain_get(NULL, &tc, NULL) != JIT_OK || !jit__toolchain_supports(tc, 107)) {
        jit_context_destroy(build);
        cr_skip("needs an NVRTC with sm_107 (scripts/setup.sh)");
    }
    jit_problem_t p = fp8_problem(64, 256, 256);
    seen_t s = prewarm_one(build, &p);
    cr_assert_eq(s.result, JIT_PREWARM_COMPILED, "%s", s.error);
    jit_context_destroy(build);
    forge_older_record();

    char cache[1100], list[1100];
    snprintf(cache, sizeof(cache), "%s/cache", g_dir);
    snprintf(list, sizeof(list), "%s/shapes.json", g_dir);
    cr_assert_eq(jt_write_file(list, "{\"gemms\": [{\"name\": \"g\", \"op\": \"linear\", "
                                     "\"n\": 256, \"k\": 256, \"tokens\": [64]}]}\n"),
                 0);
    /* The simulation takes: this toolchain would build the fallback. */
    cli_result_t r = CLI(cache, NULL, "inspect", "--op", "linear", "--n", "256", "--k", "256",
                         "--tokens", "64", "--arch", "sm_107a", "--key");
    cr_assert_eq(r.rc, 0, "%s", r.err);
    cr_assert(strstr(r.out, "NVRTC 13.2 cannot target sm_107a"), "%s", r.out);
    cli_free(&r);
    /* And still the native entry is served, not compiled. */
    r = CLI(cache, NULL, "prewarm", list, "--arch", "sm_107a", "--json");
    cr_assert_eq(r.rc, 0, "%s", r.err);
    cr_assert(strstr(r.out, "\"status\":\"cached\""), "%s", r.out);
    cli_free(&r);
}
