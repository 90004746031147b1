/*
 * What `jitgemm cache gc` removes. A valid entry is servable by some host: by one with another
 * NVRTC (a key holds no toolchain), or by one still running another jitgemm version in a
 * rolling upgrade (another key format or device code). So gc keeps every valid entry unless it
 * is told what to drop (--drop-toolchain X.Y, --drop-other-versions), removes damage and
 * leftovers as ever, and trims the cache to its size cap, least recently used first. It needs
 * no NVRTC for any of that, a dry run included.
 *
 * The entries are synthetic (random bytes stand in for cubins, which gc never interprets),
 * published through jit__cache_put as the other cache tests do, with key texts of the form the
 * library writes; gc runs through the built CLI, as a user runs it.
 */
#include <criterion/criterion.h>
#include <jansson.h>
#include <time.h>

#include "device_files.h"
#include "test_cache_fixture.h"
#include "test_cli_helpers.h"

TestSuite(gc, .fini = tc_cleanup);

#define OTHER_DEVICE "0123456789abcdef0123456789abcdef"

typedef struct version {
    int key_format;     /* the key format the entry's library wrote */
    const char *device; /* its device-code hash; NULL: this library's */
    int nvrtc_major, nvrtc_minor;
} version_t;

static const version_t k_current = {JIT_KEY_FORMAT_VERSION, NULL, 13, 5};

/* Publish entry `seed` as a library of version `v` would: the key text names its key format and
 * device code, the hash is the key text's. Returns the entry's hash (static, one at a time). */
static const char *put_entry(jit__cache_t *c, unsigned seed, version_t v, size_t size) {
    static jit__cache_entry_t e;
    tc_make_entry(&e, seed);
    const char *device = v.device ? v.device : jit__device_files_hash();
    snprintf(e.key_text, sizeof(e.key_text),
             "jitgemm key=%d family=fp8_mma_sync device=%s arch=sm_90a target=sm_90a "
             "fallback=0 band=2 n=%u k=4096 a=e4m3 b=e4m3 out=bf16 scales=row",
             v.key_format, device, seed);
    jit__hash_hex(e.key_text, strlen(e.key_text), e.hash);
    snprintf(e.device_hash, sizeof(e.device_hash), "%s", device);
    e.generator_version = v.key_format;
    e.toolchain = (jit__toolchain_id_t){v.nvrtc_major, v.nvrtc_minor, v.nvrtc_major, v.nvrtc_minor};
    void *bin = tc_make_cubin(seed, size);
    jit__diag_t d;
    jit__diag_init(&d);
    cr_assert_eq(jit__cache_put(c, &e, bin, size, "// source\n", NULL, &d), JIT_OK, "%s", d.msg);
    free(bin);
    return e.hash;
}

/* 1 if `hash` is a verified hit. */
static int served(jit__cache_t *c, const char *hash) {
    jit__cache_entry_t e;
    void *bin = NULL;
    size_t n = 0;
    int found = 0;
    cr_assert_eq(jit__cache_get(c, hash, &e, &bin, &n, &found, NULL), JIT_OK);
    free(bin);
    return found;
}

/* The integer `field` of the last JSON line of `out`. */
static long long json_field(const char *out, const char *field) {
    const char *last = out + strlen(out);
    while (last > out && last[-1] == '\n')
        last--;
    while (last > out && last[-1] != '\n')
        last--;
    json_t *o = json_loads(last, JSON_DISABLE_EOF_CHECK, NULL);
    cr_assert_not_null(o, "not JSON: %s", out);
    json_t *v = json_object_get(o, field);
    cr_assert(json_is_integer(v), "no integer '%s' in %s", field, out);
    long long n = json_integer_value(v);
    json_decref(o);
    return n;
}

/* Run `jitgemm cache gc EXTRA... --json` on dir, check that it exited 0, and return the integer
 * `field` of its output ({"removed": N, "evicted": E}). */
static long long gc_json(const char *dir, const char *field, const char *const *extra) {
    const char *args[16] = {"cache", "gc"};
    size_t n = 2;
    for (; *extra && n < 14; extra++)
        args[n++] = *extra;
    args[n++] = "--json";
    args[n] = NULL;
    cli_result_t r = cli_run(dir, NULL, args);
    cr_assert_eq(r.rc, 0, "gc exited %d: %s", r.rc, r.err);
    long long v = json_field(r.out, field);
    cli_free(&r);
    return v;
}
#define GC_REMOVED(dir, ...) gc_json((dir), "removed", (const char *const[]){__VA_ARGS__, NULL})

/* An empty toolkit directory named explicitly: no NVRTC can be found, and gc must not need one. */
static void no_nvrtc(void) {
    char *dir = tc_mkdtemp("gc-no-toolkit");
    cr_assert_eq(setenv("JITGEMM_TOOLKIT_DIR", dir, 1), 0);
    free(dir);
}

/* ---- the defaults: every valid entry stays ------------------------------------------------ */

Test(gc, keeps_entries_of_every_toolchain_and_needs_no_nvrtc) {
    char *dir = tc_mkdtemp("gc-toolchains");
    jit__cache_t *c = tc_open(dir, 0);
    char hashes[3][JIT_KEY_HASH_LEN + 1];
    const version_t v[3] = {
        k_current, {JIT_KEY_FORMAT_VERSION, NULL, 13, 0}, {JIT_KEY_FORMAT_VERSION, NULL, 12, 8}};
    for (unsigned i = 0; i < 3; i++)
        snprintf(hashes[i], sizeof(hashes[i]), "%s", put_entry(c, i + 1, v[i], 512));
    no_nvrtc();

    cli_result_t r = CLI(dir, NULL, "cache", "gc", "--dry-run");
    cr_assert_eq(r.rc, 0, "a dry run failed without NVRTC: %s", r.err);
    cr_expect(strstr(r.out, "would remove 0 items"), "%s", r.out);
    cli_free(&r);
    cr_assert_eq(GC_REMOVED(dir, NULL), 0);
    for (unsigned i = 0; i < 3; i++)
        cr_assert(served(c, hashes[i]), "entry %u (NVRTC %d.%d) is gone", i, v[i].nvrtc_major,
                  v[i].nvrtc_minor);
    jit__cache_close(c);
    free(dir);
}

Test(gc, keeps_entries_of_other_jitgemm_versions) {
    char *dir = tc_mkdtemp("gc-versions");
    jit__cache_t *c = tc_open(dir, 0);
    char hashes[3][JIT_KEY_HASH_LEN + 1];
    /* This library's; another build's device code (a rolling upgrade's old hosts serve it);
     * another key format with another device code. */
    const version_t v[3] = {k_current,
                            {JIT_KEY_FORMAT_VERSION, OTHER_DEVICE, 13, 5},
                            {JIT_KEY_FORMAT_VERSION - 1, OTHER_DEVICE, 13, 5}};
    for (unsigned i = 0; i < 3; i++)
        snprintf(hashes[i], sizeof(hashes[i]), "%s", put_entry(c, i + 1, v[i], 512));
    cli_result_t r = CLI(dir, NULL, "cache", "gc", "--dry-run", "--json");
    cr_expect_eq(json_field(r.out, "would_remove"), 0, "%s", r.out);
    cli_free(&r);
    cr_assert_eq(GC_REMOVED(dir, NULL), 0);
    for (unsigned i = 0; i < 3; i++)
        cr_assert(served(c, hashes[i]), "entry %u is gone", i);
    jit__cache_close(c);
    free(dir);
}

/* ---- the explicit prunes ------------------------------------------------------------------ */

Test(gc, drop_toolchain_removes_exactly_the_named_nvrtc_versions) {
    char *dir = tc_mkdtemp("gc-drop-toolchain");
    jit__cache_t *c = tc_open(dir, 0);
    char hashes[4][JIT_KEY_HASH_LEN + 1];
    const version_t v[4] = {k_current,
                            {JIT_KEY_FORMAT_VERSION, NULL, 13, 0},
                            {JIT_KEY_FORMAT_VERSION, NULL, 12, 8},
                            {JIT_KEY_FORMAT_VERSION, NULL, 13, 1}};
    for (unsigned i = 0; i < 4; i++)
        snprintf(hashes[i], sizeof(hashes[i]), "%s", put_entry(c, i + 1, v[i], 512));
    no_nvrtc();

    cli_result_t r = CLI(dir, NULL, "cache", "gc", "--dry-run", "--drop-toolchain", "13.0",
                         "--drop-toolchain=12.8");
    cr_assert_eq(r.rc, 0, "%s", r.err);
    char line[256];
    snprintf(line, sizeof(line), "would remove %s: built by NVRTC 13.0", hashes[1]);
    cr_expect(strstr(r.out, line), "'%s' missing:\n%s", line, r.out);
    snprintf(line, sizeof(line), "would remove %s: built by NVRTC 12.8", hashes[2]);
    cr_expect(strstr(r.out, line), "'%s' missing:\n%s", line, r.out);
    cr_expect(strstr(r.out, "would remove 2 items"), "%s", r.out);
    cli_free(&r);

    cr_assert_eq(GC_REMOVED(dir, "--drop-toolchain", "13.0", "--drop-toolchain", "12.8"), 2);
    cr_assert(served(c, hashes[0]) && served(c, hashes[3]), "an unnamed toolchain's entry went");
    cr_assert(!served(c, hashes[1]) && !served(c, hashes[2]), "a named toolchain's entry stayed");

    /* A version that is not MAJOR.MINOR is a usage error, and removes nothing. */
    const char *bad[] = {"13", "13.x", "v13.5", "13.5.1", "100.0", ""};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        r = CLI(dir, NULL, "cache", "gc", "--drop-toolchain", bad[i]);
        CLI_EXPECT(r, 2, "--drop-toolchain");
        cli_free(&r);
    }
    r = CLI(dir, NULL, "cache", "list", "--drop-toolchain", "13.5");
    CLI_EXPECT(r, 2, "'cache gc' only");
    cli_free(&r);
    cr_assert(served(c, hashes[0]) && served(c, hashes[3]));
    jit__cache_close(c);
    free(dir);
}

Test(gc, drop_other_versions_removes_exactly_other_key_formats_and_device_code) {
    char *dir = tc_mkdtemp("gc-drop-versions");
    jit__cache_t *c = tc_open(dir, 0);
    char hashes[4][JIT_KEY_HASH_LEN + 1];
    const version_t v[4] = {k_current,
                            {JIT_KEY_FORMAT_VERSION, OTHER_DEVICE, 13, 5},
                            {JIT_KEY_FORMAT_VERSION - 1, OTHER_DEVICE, 13, 5},
                            {JIT_KEY_FORMAT_VERSION, NULL, 13, 0}};
    for (unsigned i = 0; i < 4; i++)
        snprintf(hashes[i], sizeof(hashes[i]), "%s", put_entry(c, i + 1, v[i], 512));
    no_nvrtc();

    cli_result_t r = CLI(dir, NULL, "cache", "gc", "--dry-run", "--drop-other-versions");
    cr_assert_eq(r.rc, 0, "%s", r.err);
    char line[256];
    snprintf(line, sizeof(line), "would remove %s: built from other device code", hashes[1]);
    cr_expect(strstr(r.out, line), "'%s' missing:\n%s", line, r.out);
    snprintf(line, sizeof(line), "would remove %s: key format %d", hashes[2],
             JIT_KEY_FORMAT_VERSION - 1);
    cr_expect(strstr(r.out, line), "'%s' missing:\n%s", line, r.out);
    cr_expect(strstr(r.out, "would remove 2 items"), "%s", r.out);
    cli_free(&r);

    cr_assert_eq(GC_REMOVED(dir, "--drop-other-versions"), 2);
    cr_assert(served(c, hashes[0]), "this library's entry went");
    cr_assert(served(c, hashes[3]), "another toolchain's entry went: not asked for");
    cr_assert(!served(c, hashes[1]) && !served(c, hashes[2]), "another version's entry stayed");
    jit__cache_close(c);
    free(dir);
}

/* ---- damage is still removed -------------------------------------------------------------- */

Test(gc, still_removes_a_damaged_entry_and_nothing_else) {
    char *dir = tc_mkdtemp("gc-damage");
    jit__cache_t *c = tc_open(dir, 0);
    char good[JIT_KEY_HASH_LEN + 1], bad[JIT_KEY_HASH_LEN + 1];
    snprintf(good, sizeof(good), "%s",
             put_entry(c, 1, (version_t){JIT_KEY_FORMAT_VERSION, OTHER_DEVICE, 12, 8}, 512));
    snprintf(bad, sizeof(bad), "%s", put_entry(c, 2, k_current, 512));
    cr_assert_eq(jt_write_file(tc_path(dir, bad, ".cubin"), "flipped bits"), 0);
    cli_result_t r = CLI(dir, NULL, "cache", "gc", "--dry-run");
    char line[256];
    snprintf(line, sizeof(line), "would remove %s: damaged", bad);
    cr_expect(strstr(r.out, line), "'%s' missing:\n%s", line, r.out);
    cli_free(&r);
    cr_assert_eq(GC_REMOVED(dir, NULL), 1);
    cr_assert(served(c, good) && !tc_exists(tc_path(dir, bad, ".json")));
    jit__cache_close(c);
    free(dir);
}

/* ---- the size cap ------------------------------------------------------------------------- */

static void set_age(const char *path, int seconds) {
    struct timespec t[2] = {{time(NULL) - seconds, 0}, {time(NULL) - seconds, 0}};
    cr_assert_eq(utimensat(AT_FDCWD, path, t, AT_SYMLINK_NOFOLLOW), 0, "%s", path);
}

/* Bytes of every file of entry `hash` in kernels/: what the cap counts. */
static long long entry_bytes(const char *dir, const char *hash) {
    static const char *const ext[] = {".cubin", ".cu", ".ptx", ".json"};
    long long n = 0;
    for (size_t i = 0; i < 4; i++) {
        struct stat st;
        if (lstat(tc_path(dir, hash, ext[i]), &st) == 0)
            n += st.st_size;
    }
    return n;
}

Test(gc, trims_the_cache_to_its_size_cap_least_recently_used_first) {
    char *dir = tc_mkdtemp("gc-cap");
    jit__cache_t *c = tc_open(dir, 0);
    enum { N = 6, KEPT = 3 };
    char hashes[N][JIT_KEY_HASH_LEN + 1];
    long long kept_bytes = 0;
    for (unsigned i = 0; i < N; i++) {
        snprintf(hashes[i], sizeof(hashes[i]), "%s", put_entry(c, i + 1, k_current, 3000));
        /* Entry 0 was used longest ago, entry N-1 last. */
        set_age(tc_path(dir, hashes[i], ".json"), 1000 - 100 * (int)i);
        if (i >= N - KEPT)
            kept_bytes += entry_bytes(dir, hashes[i]);
    }
    /* The cap holds exactly the KEPT most recently used entries: one more byte of any older
     * one would not fit. */
    char cap[32];
    snprintf(cap, sizeof(cap), "%lld", kept_bytes);
    cr_assert_eq(setenv("JITGEMM_CACHE_MAX_BYTES", cap, 1), 0);
    no_nvrtc();

    cli_result_t r = CLI(dir, NULL, "cache", "stats", "--json");
    cr_assert_eq(r.rc, 0, "%s", r.err);
    cr_assert_gt(json_field(r.out, "disk_bytes"), json_field(r.out, "max_bytes"));
    cli_free(&r);

    r = CLI(dir, NULL, "cache", "gc", "--dry-run");
    cr_assert_eq(r.rc, 0, "%s", r.err);
    for (unsigned i = 0; i < N; i++) {
        char line[256];
        snprintf(line, sizeof(line), "would remove %s: least recently used", hashes[i]);
        if (i < N - KEPT)
            cr_expect(strstr(r.out, line), "'%s' missing:\n%s", line, r.out);
        else
            cr_expect(!strstr(r.out, hashes[i]), "%s would go:\n%s", hashes[i], r.out);
    }
    cr_expect(strstr(r.out, "would remove 3 items"), "%s", r.out);
    cli_free(&r);

    r = CLI(dir, NULL, "cache", "gc", "--json");
    cr_assert_eq(r.rc, 0, "%s", r.err);
    cr_expect_eq(json_field(r.out, "removed"), N - KEPT, "%s", r.out);
    cr_expect_eq(json_field(r.out, "evicted"), N - KEPT, "%s", r.out);
    cli_free(&r);
    for (unsigned i = 0; i < N; i++)
        cr_assert_eq(served(c, hashes[i]), i >= N - KEPT, "entry %u", i);

    r = CLI(dir, NULL, "cache", "stats", "--json");
    cr_assert_eq(r.rc, 0, "%s", r.err);
    cr_expect_leq(json_field(r.out, "disk_bytes"), json_field(r.out, "max_bytes"), "%s", r.out);
    cli_free(&r);
    /* At the cap, a second gc has nothing to do. */
    cr_assert_eq(GC_REMOVED(dir, NULL), 0);
    jit__cache_close(c);
    free(dir);
}

/* The cap counts what gc keeps: entries it removes for another reason free room first. */
Test(gc, evicts_only_what_the_other_rules_leave_over_the_cap) {
    char *dir = tc_mkdtemp("gc-cap-rules");
    jit__cache_t *c = tc_open(dir, 0);
    char old[JIT_KEY_HASH_LEN + 1], dropped[JIT_KEY_HASH_LEN + 1], fresh[JIT_KEY_HASH_LEN + 1];
    snprintf(old, sizeof(old), "%s", put_entry(c, 1, k_current, 3000));
    snprintf(dropped, sizeof(dropped), "%s",
             put_entry(c, 2, (version_t){JIT_KEY_FORMAT_VERSION, NULL, 13, 0}, 3000));
    snprintf(fresh, sizeof(fresh), "%s", put_entry(c, 3, k_current, 3000));
    set_age(tc_path(dir, old, ".json"), 300);
    set_age(tc_path(dir, dropped, ".json"), 10);
    char cap[32];
    snprintf(cap, sizeof(cap), "%lld", entry_bytes(dir, old) + entry_bytes(dir, fresh));
    cr_assert_eq(setenv("JITGEMM_CACHE_MAX_BYTES", cap, 1), 0);
    cli_result_t r = CLI(dir, NULL, "cache", "gc", "--drop-toolchain", "13.0", "--json");
    cr_assert_eq(r.rc, 0, "%s", r.err);
    cr_expect_eq(json_field(r.out, "removed"), 1, "%s", r.out);
    cr_expect_eq(json_field(r.out, "evicted"), 0, "%s", r.out);
    cli_free(&r);
    cr_assert(served(c, old) && served(c, fresh) && !served(c, dropped));
    jit__cache_close(c);
    free(dir);
}
