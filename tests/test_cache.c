/*
 * The on-disk cache's basic contract: where it lives, how it is created, what a publish leaves
 * on disk (and leaves behind when it fails), the entry JSON, and that a hit neither reads nor
 * rewrites the manifest. Damage, permissions and concurrency have their own test files.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "cache_private.h"
#include "test_cache_fixture.h"

TestSuite(cache_dir, .fini = tc_cleanup);
TestSuite(cache_store, .fini = tc_cleanup);

/* ---- directory resolution ------------------------------------------------------------------ */

static const char *resolve(const char *dir) {
    static char out[4096];
    cr_assert_eq(jit__cache_resolve_dir(dir, out, sizeof(out), NULL), JIT_OK);
    return out;
}

Test(cache_dir, resolution_order) {
    setenv("JITGEMM_CACHE_DIR", "/srv/env-cache", 1);
    setenv("XDG_CACHE_HOME", "/srv/xdg", 1);
    setenv("HOME", "/home/someone", 1);
    cr_assert_str_eq(resolve("/explicit/dir"), "/explicit/dir");
    cr_assert_str_eq(resolve(NULL), "/srv/env-cache");
    cr_assert_str_eq(resolve(""), "/srv/env-cache", "an empty argument means 'not given'");
    unsetenv("JITGEMM_CACHE_DIR");
    cr_assert_str_eq(resolve(NULL), "/srv/xdg/jitgemm");
    setenv("XDG_CACHE_HOME", "relative/xdg", 1); /* invalid per the XDG spec: ignored */
    cr_assert_str_eq(resolve(NULL), "/home/someone/.cache/jitgemm");
    unsetenv("XDG_CACHE_HOME");
    cr_assert_str_eq(resolve(NULL), "/home/someone/.cache/jitgemm");
    cr_assert_str_eq(resolve("/explicit/dir///"), "/explicit/dir");
}

Test(cache_dir, too_long_is_an_error) {
    char small[16];
    jit__diag_t d;
    jit__diag_init(&d);
    cr_assert_eq(jit__cache_resolve_dir("/a/rather/long/directory", small, sizeof(small), &d),
                 JIT_INVALID_ARGUMENT);
    cr_assert(strstr(d.msg, "too long"), "%s", d.msg);
    cr_assert_str_eq(small, "");
}

Test(cache_dir, created_private_with_parents) {
    char *root = tc_mkdtemp("cache-create");
    char dir[4200], sub[4300];
    snprintf(dir, sizeof(dir), "%s/a/b/cache", root);
    umask(0277); /* a hostile umask must not leave the cache unwritable or half-open */
    jit__cache_t *c = tc_open(dir, 0);
    umask(022);
    cr_assert(jit__cache_writable(c));
    cr_assert(jit__cache_readable(c));
    cr_assert_str_eq(jit__cache_dir(c), dir);
    const char *paths[] = {
        "a", "a/b", "a/b/cache", "a/b/cache/kernels", "a/b/cache/locks", "a/b/cache/tmp"};
    for (size_t i = 0; i < sizeof(paths) / sizeof(paths[0]); i++) {
        struct stat st;
        snprintf(sub, sizeof(sub), "%s/%s", root, paths[i]);
        cr_assert_eq(stat(sub, &st), 0, "%s missing", paths[i]);
        cr_assert(S_ISDIR(st.st_mode));
        cr_assert_eq(st.st_mode & 07777, 0700, "%s has mode %o", paths[i], st.st_mode & 07777);
    }
    tc_put(c, 1, 100, NULL);
    cr_assert(tc_hit(c, 1, 100));
    jit__cache_close(c);
    jt_rmtree(root);
    free(root);
}

Test(cache_dir, max_bytes_from_environment) {
    char *dir = tc_mkdtemp("cache-env");
    jit__cache_t *c = NULL;
    jit__diag_t d;
    jit__diag_init(&d);
    setenv("JITGEMM_CACHE_MAX_BYTES", "lots", 1);
    cr_assert_eq(jit__cache_open(dir, 0, JIT_LOG_WARN, &c, &d), JIT_INVALID_ARGUMENT);
    cr_assert_null(c);
    cr_assert(strstr(d.msg, "JITGEMM_CACHE_MAX_BYTES"), "%s", d.msg);

    const char *fine[] = {"1048576", "512M", "4GiB", "2gb"};
    for (size_t i = 0; i < sizeof(fine) / sizeof(fine[0]); i++) {
        setenv("JITGEMM_CACHE_MAX_BYTES", fine[i], 1);
        cr_assert_eq(jit__cache_open(dir, 0, JIT_LOG_WARN, &c, NULL), JIT_OK, "%s", fine[i]);
        jit__cache_close(c);
    }
    const char *wrong[] = {"-5", "0", "12Q", "99999999999T"};
    for (size_t i = 0; i < sizeof(wrong) / sizeof(wrong[0]); i++) {
        setenv("JITGEMM_CACHE_MAX_BYTES", wrong[i], 1);
        cr_assert_eq(jit__cache_open(dir, 0, JIT_LOG_WARN, &c, NULL), JIT_INVALID_ARGUMENT, "%s",
                     wrong[i]);
    }

    /* 5K holds two 1200-byte entries (plus their small text files) but not three. */
    setenv("JITGEMM_CACHE_MAX_BYTES", "5K", 1);
    c = tc_open(dir, 0);
    for (unsigned i = 1; i <= 3; i++)
        tc_put(c, i, 1200, NULL);
    cr_assert_eq(tc_count_files(dir, "kernels"), 8, "the cap from the environment evicts");
    jit__cache_close(c);

    /* An explicit cap wins over the environment. */
    c = tc_open(dir, 1 << 20);
    for (unsigned i = 4; i <= 6; i++)
        tc_put(c, i, 1200, NULL);
    cr_assert_eq(tc_count_files(dir, "kernels"), 20);
    jit__cache_close(c);
    jt_rmtree(dir);
    free(dir);
}

/* ---- publish and load ---------------------------------------------------------------------- */

static json_t *load_json(const char *path) {
    json_error_t err;
    json_t *j = json_load_file(path, 0, &err);
    cr_assert_not_null(j, "%s: %s", path, err.text);
    return j;
}

Test(cache_store, put_then_get_round_trips_every_field) {
    char *dir = tc_mkdtemp("cache-rt");
    jit__cache_t *c = tc_open(dir, 0);
    jit__cache_entry_t want, got;
    tc_make_entry(&want, 7);
    want.fallback = 1;
    snprintf(want.target, sizeof(want.target), "sm_100f");
    snprintf(want.check_target, sizeof(want.check_target), "sm_100a");
    want.cluster[0] = 2;
    want.spill_stores = 4;
    want.spill_loads = 8;
    want.stack_bytes = 16;
    void *bin = tc_make_cubin(7, 5000);
    time_t before = time(NULL);
    cr_assert_eq(
        jit__cache_put(c, &want, bin, 5000, "__global__ void k() {}\n", ".version 9.0\n", NULL),
        JIT_OK);
    void *loaded = NULL;
    size_t n = 0;
    int found = 0;
    cr_assert_eq(jit__cache_get(c, want.hash, &got, &loaded, &n, &found, NULL), JIT_OK);
    cr_assert_eq(found, 1);
    cr_assert_eq(n, 5000);
    cr_assert_eq(memcmp(loaded, bin, n), 0);
    cr_assert_str_eq(got.hash, want.hash);
    cr_assert_str_eq(got.key_text, want.key_text);
    cr_assert_str_eq(got.arch, "sm_90a");
    cr_assert_str_eq(got.target, "sm_100f");
    cr_assert_eq(got.fallback, 1);
    cr_assert_str_eq(got.check_target, "sm_100a");
    cr_assert_eq(got.toolchain.nvrtc_major, 13);
    cr_assert_eq(got.toolchain.nvrtc_minor, 5);
    cr_assert_eq(got.toolchain.nvjitlink_minor, 5);
    cr_assert_eq(got.generator_version, 1);
    cr_assert_str_eq(got.kernel_name, "jitgemm_test_7");
    cr_assert_eq(got.block[0], 128);
    cr_assert_eq(got.cluster[0], 2);
    cr_assert_eq(got.smem_bytes, 7168);
    cr_assert_eq(got.registers, 96);
    cr_assert_eq(got.spill_stores, 4);
    cr_assert_eq(got.spill_loads, 8);
    cr_assert_eq(got.stack_bytes, 16);
    cr_assert_float_eq(got.compile_seconds, 0.25, 1e-9);
    cr_assert_eq(got.size, 5000);
    char sum[JIT_KEY_HASH_LEN + 1];
    jit__hash_hex(bin, 5000, sum);
    cr_assert_str_eq(got.checksum, sum);
    cr_assert_geq(got.created, (int64_t)before);
    cr_assert_geq(got.last_used, got.created);

    char *text = NULL;
    cr_assert_eq(jit__cache_read_file(c, want.hash, ".cu", &text, NULL), JIT_OK);
    cr_assert_str_eq(text, "__global__ void k() {}\n");
    free(text);
    cr_assert_eq(jit__cache_read_file(c, want.hash, ".ptx", &text, NULL), JIT_OK);
    cr_assert_str_eq(text, ".version 9.0\n");
    free(text);
    cr_assert_eq(jit__cache_read_file(c, want.hash, ".cubin", &text, NULL), JIT_INVALID_ARGUMENT);
    cr_assert_eq(jit__cache_read_file(c, tc_hash(99), ".cu", &text, NULL), JIT_CACHE_ERROR);
    cr_assert_eq(tc_count_files(dir, "tmp"), 0, "temporaries are renamed away");
    free(bin);
    free(loaded);
    jit__cache_close(c);
    jt_rmtree(dir);
    free(dir);
}

Test(cache_store, manifest_holds_the_entry_object) {
    char *dir = tc_mkdtemp("cache-manifest");
    jit__cache_t *c = tc_open(dir, 0);
    jit__cache_entry_t e;
    tc_put(c, 1, 300, NULL);
    tc_put(c, 2, 300, &e);
    char path[4200];
    snprintf(path, sizeof(path), "%s/manifest.json", dir);
    json_t *m = load_json(path);
    cr_assert_eq(json_integer_value(json_object_get(m, "format")), 1);
    json_t *ents = json_object_get(m, "entries");
    cr_assert_eq(json_object_size(ents), 2);
    json_t *mine = json_object_get(ents, e.hash);
    cr_assert_not_null(mine);

    /* The manifest's object, the sidecar and jit__cache_entry_to_json agree field by field. */
    json_t *side = load_json(tc_path(dir, e.hash, ".json"));
    cr_assert(json_equal(mine, side), "manifest entry and sidecar differ");
    jit__cache_entry_t got;
    void *bin;
    size_t n;
    int found;
    cr_assert_eq(jit__cache_get(c, e.hash, &got, &bin, &n, &found, NULL), JIT_OK);
    free(bin);
    got.last_used = json_integer_value(json_object_get(mine, "last_used"));
    char *text = jit__cache_entry_to_json(&got);
    json_t *fromapi = json_loads(text, 0, NULL);
    free(text);
    cr_assert(json_equal(mine, fromapi), "jit__cache_entry_to_json differs from the manifest");

    static const char *const fields[] = {"hash",        "key_text",          "arch",
                                         "target",      "fallback",          "check_target",
                                         "toolchain",   "generator_version", "device_hash",
                                         "kernel_name",
                                         "block",       "cluster",           "smem_bytes",
                                         "registers",   "spill_stores",      "spill_loads",
                                         "stack_bytes", "compile_seconds",   "checksum",
                                         "size",        "created",           "last_used"};
    cr_assert_eq(json_object_size(mine), sizeof(fields) / sizeof(fields[0]));
    for (size_t i = 0; i < sizeof(fields) / sizeof(fields[0]); i++)
        cr_assert_not_null(json_object_get(mine, fields[i]), "no field %s", fields[i]);
    cr_assert_str_eq(
        json_string_value(json_object_get(json_object_get(mine, "toolchain"), "nvrtc")), "13.5");
    cr_assert(json_is_integer(json_object_get(mine, "created")), "times are Unix seconds");
    json_decref(fromapi);
    json_decref(side);
    json_decref(m);
    jit__cache_close(c);
    jt_rmtree(dir);
    free(dir);
}

Test(cache_store, entry_json_round_trip) {
    jit__cache_entry_t e, back;
    tc_make_entry(&e, 3);
    jit__hash_hex("x", 1, e.checksum);
    e.size = 123;
    e.created = 1700000000;
    e.last_used = 1700000100;
    char *text = jit__cache_entry_to_json(&e);
    cr_assert_not_null(text);
    char why[256];
    cr_assert_eq(jit__cache_entry_from_text(text, strlen(text), &back, why, sizeof(why)), 0, "%s",
                 why);
    cr_assert(jit__cache_entry_equal(&e, &back));
    cr_assert_eq(back.created, 1700000000);
    cr_assert_eq(back.last_used, 1700000100);
    free(text);

    /* Strict parsing: one wrong type spoils the entry. */
    json_t *o = jit__cache_entry_to_object(&e);
    json_object_set_new(o, "size", json_string("123"));
    cr_assert_eq(jit__cache_entry_from_object(o, &back, why, sizeof(why)), -1);
    cr_assert(strstr(why, "\"size\""), "%s", why);
    json_decref(o);
    o = jit__cache_entry_to_object(&e);
    json_object_del(o, "kernel_name");
    cr_assert_eq(jit__cache_entry_from_object(o, &back, why, sizeof(why)), -1);
    cr_assert(strstr(why, "missing"), "%s", why);
    json_decref(o);
    o = jit__cache_entry_to_object(&e);
    json_object_set_new(json_object_get(o, "toolchain"), "nvrtc", json_string("13"));
    cr_assert_eq(jit__cache_entry_from_object(o, &back, why, sizeof(why)), -1);
    json_decref(o);
}

Test(cache_store, bad_arguments) {
    char *dir = tc_mkdtemp("cache-args");
    jit__cache_t *c = tc_open(dir, 0);
    jit__cache_entry_t e;
    void *bin = NULL;
    size_t n;
    int found = 7;
    jit__diag_t d;
    jit__diag_init(&d);
    cr_assert_eq(jit__cache_get(c, "../../etc/passwd", &e, &bin, &n, &found, &d),
                 JIT_INVALID_ARGUMENT);
    cr_assert_eq(found, 0);
    cr_assert_eq(jit__cache_get(c, "0123456789ABCDEF0123456789ABCDEF", &e, &bin, &n, &found, NULL),
                 JIT_INVALID_ARGUMENT, "upper-case hex is not the canonical spelling");
    cr_assert_eq(jit__cache_get(c, tc_hash(5), &e, &bin, &n, &found, NULL), JIT_OK);
    cr_assert_eq(found, 0, "a missing entry is a plain miss");

    tc_make_entry(&e, 5);
    cr_assert_eq(jit__cache_put(c, &e, NULL, 10, NULL, NULL, NULL), JIT_INVALID_ARGUMENT);
    /* A key naming a path would not serve another machine: refused, nothing written. */
    snprintf(e.key_text, sizeof(e.key_text), "jitgemm gen=1 include=/home/me/kernels n=5");
    jit__diag_clear(&d);
    cr_assert_eq(jit__cache_put(c, &e, "abc", 3, NULL, NULL, &d), JIT_INVALID_ARGUMENT);
    cr_assert(strstr(d.msg, "path"), "%s", d.msg);
    cr_assert_eq(tc_count_files(dir, "kernels"), 0);
    int token = 0;
    cr_assert_eq(jit__cache_lock_key(c, "nothex", &token, NULL), JIT_INVALID_ARGUMENT);
    cr_assert_eq(token, -1);
    jit__cache_close(c);
    jt_rmtree(dir);
    free(dir);
}

Test(cache_store, failed_publish_leaves_nothing) {
    char *dir = tc_mkdtemp("cache-fail");
    jit__cache_t *c = tc_open(dir, 0);
    jit__cache_entry_t e;
    tc_make_entry(&e, 4);
    /* A directory squatting on the sidecar's name makes the last rename fail after the cubin,
     * source and PTX are already in place: all of them must be taken back. */
    cr_assert_eq(mkdir(tc_path(dir, e.hash, ".json"), 0700), 0);
    void *bin = tc_make_cubin(4, 256);
    jit__diag_t d;
    jit__diag_init(&d);
    cr_assert_eq(jit__cache_put(c, &e, bin, 256, "src", "ptx", &d), JIT_IO_ERROR);
    cr_assert(strstr(d.msg, e.hash), "%s", d.msg);
    cr_assert(!tc_exists(tc_path(dir, e.hash, ".cubin")));
    cr_assert(!tc_exists(tc_path(dir, e.hash, ".cu")));
    cr_assert(!tc_exists(tc_path(dir, e.hash, ".ptx")));
    cr_assert_eq(tc_count_files(dir, "tmp"), 0, "no temporaries left");
    int found = 1;
    void *out;
    size_t n;
    jit__cache_entry_t got;
    cr_assert_eq(jit__cache_get(c, e.hash, &got, &out, &n, &found, NULL), JIT_OK);
    cr_assert_eq(found, 0);
    rmdir(tc_path(dir, e.hash, ".json"));
    tc_put(c, 4, 256, NULL);
    cr_assert(tc_hit(c, 4, 256), "the same entry publishes once the obstacle is gone");
    free(bin);
    jit__cache_close(c);
    jt_rmtree(dir);
    free(dir);
}

Test(cache_store, survives_its_directory_being_emptied) {
    /* Someone empties the cache directory while a service runs: the next put and lock recreate
     * what they need. */
    char *dir = tc_mkdtemp("cache-emptied");
    jit__cache_t *c = tc_open(dir, 0);
    tc_put(c, 1, 500, NULL);
    char cmd[4300];
    snprintf(cmd, sizeof(cmd), "rm -rf '%s'/*", dir);
    cr_assert_eq(system(cmd), 0);
    cr_assert_eq(tc_count_files(dir, ""), 0);
    cr_assert(!tc_hit(c, 1, 500));
    int token = -1;
    cr_assert_eq(jit__cache_lock_key(c, tc_hash(2), &token, NULL), JIT_OK);
    cr_assert_geq(token, 0, "the lock directory was not recreated");
    tc_put(c, 2, 500, NULL);
    jit__cache_unlock_key(c, token);
    cr_assert(tc_hit(c, 2, 500));
    size_t bad = 9;
    cr_assert_eq(jit__cache_verify(c, NULL, NULL, &bad, NULL, NULL), JIT_OK);
    cr_assert_eq(bad, 0);
    jit__cache_close(c);
    jt_rmtree(dir);
    free(dir);
}

/* ---- the hit path ------------------------------------------------------------------------- */

Test(cache_store, hit_refreshes_last_used_without_touching_the_manifest) {
    char *dir = tc_mkdtemp("cache-lru");
    jit__cache_t *c = tc_open(dir, 0);
    jit__cache_entry_t e;
    tc_put(c, 1, 400, &e);
    char mpath[4200];
    snprintf(mpath, sizeof(mpath), "%s/manifest.json", dir);
    size_t before_len, after_len;
    char *before = jt_read_file(mpath, &before_len);
    struct timespec old[2] = {{time(NULL) - 1000, 0}, {time(NULL) - 1000, 0}};
    cr_assert_eq(utimensat(AT_FDCWD, tc_path(dir, e.hash, ".json"), old, 0), 0);

    jit__cache_entry_t listed;
    jit__cache_entry_t *all;
    size_t n;
    cr_assert_eq(jit__cache_list(c, &all, &n, NULL), JIT_OK);
    cr_assert_eq(n, 1);
    listed = all[0];
    free(all);
    cr_assert_lt(listed.last_used, (int64_t)time(NULL) - 900, "listing reports the old use");

    cr_assert(tc_hit(c, 1, 400));
    struct stat st;
    cr_assert_eq(stat(tc_path(dir, e.hash, ".json"), &st), 0);
    cr_assert_geq((int64_t)st.st_mtime, (int64_t)time(NULL) - 5, "hit refreshed the sidecar");
    cr_assert_eq(jit__cache_list(c, &all, &n, NULL), JIT_OK);
    cr_assert_geq(all[0].last_used, (int64_t)time(NULL) - 5, "listing sees the refresh");
    free(all);
    char *after = jt_read_file(mpath, &after_len);
    cr_assert(before_len == after_len && !memcmp(before, after, before_len),
              "a hit must not rewrite the manifest");
    free(before);
    free(after);
    jit__cache_close(c);
    jt_rmtree(dir);
    free(dir);
}

Test(cache_store, get_never_reads_the_manifest) {
    char *dir = tc_mkdtemp("cache-nomanifest");
    jit__cache_t *c = tc_open(dir, 0);
    tc_put(c, 1, 400, NULL);
    char mpath[4200];
    snprintf(mpath, sizeof(mpath), "%s/manifest.json", dir);
    cr_assert_eq(jt_write_file(mpath, "this is not json {"), 0);
    jit__cache_close(c);
    c = tc_open(dir, 0);
    tc_capture_t cap;
    tc_capture_begin(&cap);
    int hit = tc_hit(c, 1, 400);
    char *err = tc_capture_end(&cap);
    cr_assert(hit, "a hit needs only the sidecar and the cubin");
    cr_assert_str_eq(err, "", "the manifest was looked at: %s", err);
    char *text = jt_read_file(mpath, NULL);
    cr_assert_str_eq(text, "this is not json {", "get must leave the manifest alone");
    free(text);
    free(err);
    jit__cache_close(c);
    jt_rmtree(dir);
    free(dir);
}

/* ---- relocation --------------------------------------------------------------------------- */

Test(cache_store, a_copied_cache_works_elsewhere) {
    char *a = tc_mkdtemp("cache-build-host");
    char *b = tc_mkdtemp("cache-serve-host");
    jit__cache_t *c = tc_open(a, 0);
    for (unsigned i = 1; i <= 3; i++)
        tc_put(c, i, 700 + i, NULL);
    jit__cache_close(c);

    /* Nothing on disk may name the directory it was written in. */
    const char *files[] = {"manifest.json", "kernels"};
    for (size_t i = 0; i < 2; i++) {
        char cmd[9000];
        snprintf(cmd, sizeof(cmd), "grep -rqF '%s' '%s/%s'", a, a, files[i]);
        cr_assert_neq(system(cmd), 0, "%s names the cache's absolute path", files[i]);
    }
    char cmd[9000];
    snprintf(cmd, sizeof(cmd), "cp -a '%s/.' '%s/'", a, b);
    cr_assert_eq(system(cmd), 0);
    jt_rmtree(a);

    c = tc_open(b, 0);
    for (unsigned i = 1; i <= 3; i++)
        cr_assert(tc_hit(c, i, 700 + i), "entry %u not usable after the copy", i);
    size_t bad = 99;
    cr_assert_eq(jit__cache_verify(c, NULL, NULL, &bad, NULL, NULL), JIT_OK);
    cr_assert_eq(bad, 0);
    jit__cache_entry_t *all;
    size_t n;
    cr_assert_eq(jit__cache_list(c, &all, &n, NULL), JIT_OK);
    cr_assert_eq(n, 3);
    free(all);
    jit__cache_close(c);
    jt_rmtree(b);
    free(a);
    free(b);
}
