/*
 * Directories and files the cache must not write to or must not trust. A read-only cache keeps
 * serving what it holds and stores nothing, with one warning; a cache another user owns or can
 * write is not used at all; files another user owns or could have written are never loaded (a
 * cubin is code that runs on the GPU). Ownership cases need root to chown a file to uid 65534
 * and are skipped, with a message, otherwise.
 */
#include <criterion/criterion.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "test_cache_fixture.h"

TestSuite(cache_security, .fini = tc_cleanup);

#define NOBODY 65534

static void need_root(void) {
    if (geteuid() != 0)
        cr_skip_test("needs root to give files to another user (uid %d)", NOBODY);
}

/* ---- read-only --------------------------------------------------------------------------- */

static void read_only_cache_serves_and_stores_nothing(const char *sub) {
    char *dir = tc_mkdtemp("cache-ro");
    jit__cache_t *c = tc_open(dir, 0);
    tc_put(c, 1, 800, NULL);
    tc_put(c, 2, 800, NULL);
    jit__cache_close(c);
    char path[4200];
    snprintf(path, sizeof(path), "%s%s", dir, sub);
    /* As root, access() would call this writable; the mode bits are what the owner meant. */
    cr_assert_eq(chmod(path, 0500), 0);

    tc_capture_t cap;
    tc_capture_begin(&cap);
    c = tc_open(dir, 0);
    int writable = jit__cache_writable(c), readable = jit__cache_readable(c);
    int hit1 = tc_hit(c, 1, 800), hit2 = tc_hit(c, 2, 800);
    jit__cache_entry_t e;
    tc_make_entry(&e, 3);
    void *bin = tc_make_cubin(3, 800);
    jit_status_t put = jit__cache_put(c, &e, bin, 800, "src", "ptx", NULL);
    jit_status_t put2 = jit__cache_put(c, &e, bin, 800, "src", "ptx", NULL);
    int token = 0;
    jit_status_t lock = jit__cache_lock_key(c, e.hash, &token, NULL);
    jit__cache_unlock_key(c, token);
    int hit3 = tc_hit(c, 3, 800);
    jit__cache_entry_t *all;
    size_t n = 0;
    jit_status_t list = jit__cache_list(c, &all, &n, NULL);
    char *err = tc_capture_end(&cap);

    cr_assert(!writable && readable);
    cr_assert(hit1 && hit2, "existing entries are served");
    cr_assert_eq(put, JIT_OK, "put on a read-only cache is a no-op, not an error");
    cr_assert_eq(put2, JIT_OK);
    cr_assert(!hit3 && !tc_exists(tc_path(dir, e.hash, ".cubin")), "nothing was stored");
    cr_assert_eq(lock, JIT_OK);
    cr_assert_eq(token, -1, "no lock files in a read-only cache");
    cr_assert_eq(list, JIT_OK);
    cr_assert_eq(n, 2);
    free(all);
    cr_assert_eq(tc_count(err, "warning:"), 1, "want one warning, got: %s", err);
    cr_assert(strstr(err, "read-only"), "%s", err);
    free(err);
    free(bin);
    jit__cache_close(c);
    jt_rmtree(dir);
    free(dir);
}

Test(cache_security, read_only_directory) {
    read_only_cache_serves_and_stores_nothing("");
}

Test(cache_security, read_only_kernels_directory) {
    read_only_cache_serves_and_stores_nothing("/kernels");
}

Test(cache_security, damage_in_a_read_only_cache_is_reported_once_and_left) {
    char *dir = tc_mkdtemp("cache-ro-damage");
    jit__cache_t *c = tc_open(dir, 0);
    jit__cache_entry_t e;
    tc_put(c, 1, 800, &e);
    jit__cache_close(c);
    cr_assert_eq(truncate(tc_path(dir, e.hash, ".cubin"), 10), 0);
    cr_assert_eq(chmod(dir, 0500), 0);
    tc_capture_t cap;
    tc_capture_begin(&cap);
    c = tc_open(dir, 0);
    int hits = tc_hit(c, 1, 800) + tc_hit(c, 1, 800) + tc_hit(c, 1, 800);
    char *err = tc_capture_end(&cap);
    cr_assert_eq(hits, 0);
    /* One for the read-only directory, one for the damaged entry, however often it is asked. */
    cr_assert_eq(tc_count(err, "warning:"), 2, "%s", err);
    cr_assert_eq(tc_count(err, "size mismatch"), 1, "%s", err);
    cr_assert(tc_exists(tc_path(dir, e.hash, ".cubin")), "a read-only cache is not modified");
    free(err);
    jit__cache_close(c);
    jt_rmtree(dir);
    free(dir);
}

Test(cache_security, uncreatable_directory_is_memory_only) {
    char *root = tc_mkdtemp("cache-nodir");
    char file[4200], dir[4300];
    snprintf(file, sizeof(file), "%s/a-file", root);
    cr_assert_eq(jt_write_file(file, "x"), 0);
    snprintf(dir, sizeof(dir), "%s/cache", file); /* under a regular file: cannot exist */
    tc_capture_t cap;
    tc_capture_begin(&cap);
    jit__cache_t *c = tc_open(dir, 0);
    tc_put(c, 1, 100, NULL);
    int hit = tc_hit(c, 1, 100);
    char *err = tc_capture_end(&cap);
    cr_assert(!jit__cache_readable(c) && !jit__cache_writable(c) && !hit);
    cr_assert_eq(tc_count(err, "warning:"), 1, "%s", err);
    cr_assert(strstr(err, "cannot be created"), "%s", err);
    jit__cache_entry_t *all;
    size_t n;
    cr_assert_eq(jit__cache_list(c, &all, &n, NULL), JIT_CACHE_ERROR);
    free(err);
    jit__cache_close(c);
    jt_rmtree(root);
    free(root);
}

/* ---- untrusted directories --------------------------------------------------------------- */

static void untrusted_directory_is_not_used(void (*spoil)(const char *dir), const char *why) {
    char *dir = tc_mkdtemp("cache-untrusted");
    jit__cache_t *c = tc_open(dir, 0);
    tc_put(c, 1, 500, NULL);
    jit__cache_close(c);
    spoil(dir);

    tc_capture_t cap;
    tc_capture_begin(&cap);
    c = tc_open(dir, 0);
    int hit = tc_hit(c, 1, 500);
    tc_put(c, 2, 500, NULL);
    char *err = tc_capture_end(&cap);
    cr_assert(!jit__cache_readable(c) && !jit__cache_writable(c));
    cr_assert(!hit, "a cubin from an untrusted directory was loaded");
    cr_assert(!tc_exists(tc_path(dir, tc_hash(2), ".cubin")), "wrote into an untrusted dir");
    cr_assert_eq(tc_count(err, "warning:"), 1, "%s", err);
    cr_assert(strstr(err, why), "want '%s' in: %s", why, err);
    free(err);
    size_t bad;
    cr_assert_eq(jit__cache_verify(c, NULL, NULL, &bad, NULL, NULL), JIT_CACHE_ERROR);
    jit__cache_close(c);
    jt_rmtree(dir);
    free(dir);
}

static void give_dir_away(const char *dir) {
    cr_assert_eq(chown(dir, NOBODY, NOBODY), 0);
}

static void make_dir_group_writable(const char *dir) {
    cr_assert_eq(chmod(dir, 0770), 0);
}

static void make_kernels_world_writable(const char *dir) {
    char path[4200];
    snprintf(path, sizeof(path), "%s/kernels", dir);
    cr_assert_eq(chmod(path, 0777), 0);
}

Test(cache_security, foreign_owned_directory) {
    need_root();
    untrusted_directory_is_not_used(give_dir_away, "owned by uid 65534");
}

Test(cache_security, group_writable_directory) {
    untrusted_directory_is_not_used(make_dir_group_writable, "writable by its group");
}

Test(cache_security, world_writable_kernels_directory) {
    untrusted_directory_is_not_used(make_kernels_world_writable, "writable by others");
}

/* ---- untrusted files --------------------------------------------------------------------- */

static void untrusted_file_is_refused(const char *ext, int chown_away, mode_t mode) {
    char *dir = tc_mkdtemp("cache-foreignfile");
    jit__cache_t *c = tc_open(dir, 0);
    jit__cache_entry_t e;
    tc_put(c, 1, 600, &e);
    tc_put(c, 2, 600, NULL);
    const char *path = tc_path(dir, e.hash, ext);
    if (chown_away)
        cr_assert_eq(chown(path, NOBODY, NOBODY), 0);
    if (mode)
        cr_assert_eq(chmod(path, mode), 0);

    tc_capture_t cap;
    tc_capture_begin(&cap);
    int hit = tc_hit(c, 1, 600) + tc_hit(c, 1, 600);
    char *err = tc_capture_end(&cap);
    cr_assert_eq(hit, 0, "an untrusted %s was loaded", ext);
    cr_assert_eq(tc_count(err, "warning:"), 1, "%s", err);
    cr_assert(strstr(err, e.hash) && strstr(err, "refused"), "%s", err);
    cr_assert(tc_hit(c, 2, 600), "other entries still load");
    free(err);

    size_t bad = 0;
    cr_assert_eq(jit__cache_verify(c, NULL, NULL, &bad, NULL, NULL), JIT_OK);
    cr_assert_eq(bad, 1);
    /* Recompiling and publishing replaces the untrusted file with one of ours. */
    tc_put(c, 1, 600, NULL);
    cr_assert(tc_hit(c, 1, 600));
    jit__cache_close(c);
    jt_rmtree(dir);
    free(dir);
}

Test(cache_security, foreign_cubin) {
    need_root();
    untrusted_file_is_refused(".cubin", 1, 0);
}

Test(cache_security, foreign_sidecar) {
    need_root();
    untrusted_file_is_refused(".json", 1, 0);
}

Test(cache_security, group_writable_cubin) {
    untrusted_file_is_refused(".cubin", 0, 0620);
}

Test(cache_security, world_writable_sidecar) {
    untrusted_file_is_refused(".json", 0, 0606);
}

Test(cache_security, symlinked_cubin) {
    char *dir = tc_mkdtemp("cache-symlink");
    jit__cache_t *c = tc_open(dir, 0);
    jit__cache_entry_t e;
    tc_put(c, 1, 600, &e);
    char real[4200];
    snprintf(real, sizeof(real), "%s/elsewhere.cubin", dir);
    cr_assert_eq(rename(tc_path(dir, e.hash, ".cubin"), real), 0);
    cr_assert_eq(symlink(real, tc_path(dir, e.hash, ".cubin")), 0);
    tc_capture_t cap;
    tc_capture_begin(&cap);
    int hit = tc_hit(c, 1, 600);
    free(tc_capture_end(&cap));
    cr_assert(!hit, "a cubin reached through a symbolic link was loaded");
    jit__cache_close(c);
    jt_rmtree(dir);
    free(dir);
}

Test(cache_security, foreign_manifest_is_replaced_by_a_rebuild) {
    need_root();
    char *dir = tc_mkdtemp("cache-foreignmanifest");
    jit__cache_t *c = tc_open(dir, 0);
    tc_put(c, 1, 600, NULL);
    tc_put(c, 2, 600, NULL);
    char mpath[4200];
    snprintf(mpath, sizeof(mpath), "%s/manifest.json", dir);
    /* Someone else's manifest claiming an entry that does not exist. */
    cr_assert_eq(jt_write_file(mpath, "{\"format\": 1, \"entries\": {}}"), 0);
    cr_assert_eq(chown(mpath, NOBODY, NOBODY), 0);
    tc_capture_t cap;
    tc_capture_begin(&cap);
    jit__cache_entry_t *all;
    size_t n = 0;
    jit_status_t st = jit__cache_list(c, &all, &n, NULL);
    char *err = tc_capture_end(&cap);
    cr_assert_eq(st, JIT_OK);
    cr_assert_eq(n, 2, "the foreign manifest was believed");
    cr_assert(strstr(err, "owned by uid 65534"), "%s", err);
    struct stat st2;
    cr_assert_eq(stat(mpath, &st2), 0);
    cr_assert_eq(st2.st_uid, geteuid(), "the rebuild replaced it with our own");
    free(all);
    free(err);
    jit__cache_close(c);
    jt_rmtree(dir);
    free(dir);
}

/* ---- names printed from the directory ----------------------------------------------------- */

/* A file name in kernels/ is whatever bytes whoever made it chose; verify and gc --dry-run
 * print it with its control bytes escaped, so a listing cannot drive the reader's terminal. */
Test(cache_security, names_from_the_directory_are_printed_escaped) {
    char *dir = tc_mkdtemp("cache-names");
    jit__cache_t *c = tc_open(dir, 0);
    tc_put(c, 1, 300, NULL);
    jit__cache_close(c);
    char path[4200];
    snprintf(path, sizeof(path), "%s/kernels/stray\033]0;title\007", dir);
    cr_assert_eq(jt_write_file(path, "x"), 0);
    /* Older than a minute, so gc does not take it for a publish in flight. */
    struct timespec old[2] = {{time(NULL) - 3600, 0}, {time(NULL) - 3600, 0}};
    cr_assert_eq(utimensat(AT_FDCWD, path, old, 0), 0);
    const char *actions[][2] = {{"verify", NULL}, {"gc", "--dry-run"}};
    for (size_t i = 0; i < 2; i++) {
        const char *argv[] = {JITGEMM_CLI_PATH, "cache", actions[i][0], "--cache-dir", dir,
                              actions[i][1], NULL};
        char *out = NULL, *err = NULL;
        jt_run(argv, NULL, NULL, &out, &err);
        cr_assert_not_null(out);
        cr_expect_null(strchr(out, '\033'), "%s printed a raw escape: %s", actions[i][0], out);
        cr_expect(strstr(out, "stray\\x1b]0;title\\x07"), "%s: %s", actions[i][0], out);
        free(out);
        free(err);
    }
    jt_rmtree(dir);
    free(dir);
}
