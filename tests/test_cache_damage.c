/*
 * A cache as users' caches end up: truncated and bit-flipped cubins, garbage sidecars, torn or
 * tampered manifests, stray files, entries from old toolchains, and a size cap. Each damaged
 * entry must be reported once and recompiled (never loaded), no valid entry may be lost, and
 * verify / gc / clear must see and fix what they claim to.
 */
#include <criterion/criterion.h>
#include <fcntl.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "test_cache_fixture.h"

TestSuite(cache_damage, .fini = tc_cleanup);
TestSuite(cache_verify, .fini = tc_cleanup);
TestSuite(cache_gc, .fini = tc_cleanup);
TestSuite(cache_evict, .fini = tc_cleanup);

static void flip_byte(const char *path, long offset) {
    int fd = open(path, O_RDWR);
    cr_assert_geq(fd, 0, "%s", path);
    unsigned char b;
    cr_assert_eq(pread(fd, &b, 1, offset), 1);
    b ^= 0x20;
    cr_assert_eq(pwrite(fd, &b, 1, offset), 1);
    close(fd);
}

static void set_age(const char *path, int seconds) {
    struct timespec t[2] = {{time(NULL) - seconds, 0}, {time(NULL) - seconds, 0}};
    cr_assert_eq(utimensat(AT_FDCWD, path, t, AT_SYMLINK_NOFOLLOW), 0, "%s", path);
}

/* Damage entry 1 with `harm`, then check: one warning naming the problem, a miss, the files
 * gone, no second warning, and a clean republish. */
static void damaged_entry_is_reported_once(const char *tag,
                                           void (*harm)(const char *dir, const char *hash),
                                           const char *problem) {
    char *dir = tc_mkdtemp(tag);
    jit__cache_t *c = tc_open(dir, 0);
    jit__cache_entry_t e;
    tc_put(c, 1, 4096, &e);
    tc_put(c, 2, 4096, NULL);
    harm(dir, e.hash);

    tc_capture_t cap;
    tc_capture_begin(&cap);
    int first = tc_hit(c, 1, 4096);
    int second = tc_hit(c, 1, 4096);
    char *err = tc_capture_end(&cap);
    cr_assert(!first && !second, "a damaged entry must never load");
    cr_assert_eq(tc_count(err, "warning:"), 1, "want exactly one warning, got: %s", err);
    cr_assert(strstr(err, e.hash) && strstr(err, problem), "warning lacks hash or '%s': %s",
              problem, err);
    free(err);
    cr_assert(!tc_exists(tc_path(dir, e.hash, ".json")), "damaged sidecar not removed");
    cr_assert(!tc_exists(tc_path(dir, e.hash, ".cubin")), "damaged cubin not removed");
    cr_assert(tc_hit(c, 2, 4096), "the neighbour is untouched");

    tc_put(c, 1, 4096, NULL); /* what the caller does after the miss: recompile, publish */
    cr_assert(tc_hit(c, 1, 4096));
    size_t bad = 9;
    cr_assert_eq(jit__cache_verify(c, NULL, NULL, &bad, NULL, NULL), JIT_OK);
    cr_assert_eq(bad, 0);
    jit__cache_close(c);
    jt_rmtree(dir);
    free(dir);
}

static void truncate_cubin(const char *dir, const char *hash) {
    cr_assert_eq(truncate(tc_path(dir, hash, ".cubin"), 1000), 0);
}

static void flip_cubin(const char *dir, const char *hash) {
    flip_byte(tc_path(dir, hash, ".cubin"), 2049);
}

static void garble_sidecar(const char *dir, const char *hash) {
    cr_assert_eq(jt_write_file(tc_path(dir, hash, ".json"), "{\"hash\": \"tru"), 0);
}

static void drop_cubin(const char *dir, const char *hash) {
    cr_assert_eq(unlink(tc_path(dir, hash, ".cubin")), 0);
}

Test(cache_damage, truncated_cubin) {
    damaged_entry_is_reported_once("cache-trunc", truncate_cubin, "size mismatch");
}

Test(cache_damage, flipped_byte) {
    damaged_entry_is_reported_once("cache-flip", flip_cubin, "checksum mismatch");
}

Test(cache_damage, unparsable_sidecar) {
    damaged_entry_is_reported_once("cache-sidecar", garble_sidecar, "sidecar unparsable");
}

Test(cache_damage, missing_cubin) {
    damaged_entry_is_reported_once("cache-nocubin", drop_cubin, "missing cubin");
}

/* ---- the manifest ------------------------------------------------------------------------- */

static const char *const bad_manifests[] = {
    NULL, /* missing */
    "",
    "{\"format\": 1, \"entries\": {\"",           /* truncated */
    "\x89PNG\r\n\x1a\n garbage \x01\x02",         /* garbage */
    "[1, 2, 3]",                                  /* wrong root type */
    "{\"format\": \"1\", \"entries\": {}}",       /* wrong type for format */
    "{\"format\": 2, \"entries\": {}}",           /* unknown format */
    "{\"format\": 1, \"entries\": [1, 2]}",       /* wrong type for entries */
    "{\"format\": 1}",                            /* entries missing */
    "{\"format\": 1, \"entries\": {\"abc\": 5}}", /* an entry of the wrong type */
};

Test(cache_damage, corrupt_manifest_is_rebuilt_without_losing_entries) {
    for (size_t v = 0; v < sizeof(bad_manifests) / sizeof(bad_manifests[0]); v++) {
        char *dir = tc_mkdtemp("cache-badmanifest");
        jit__cache_t *c = tc_open(dir, 0);
        for (unsigned i = 1; i <= 3; i++)
            tc_put(c, i, 500 * i, NULL);
        char mpath[4200];
        snprintf(mpath, sizeof(mpath), "%s/manifest.json", dir);
        if (bad_manifests[v])
            cr_assert_eq(jt_write_file(mpath, bad_manifests[v]), 0);
        else
            cr_assert_eq(unlink(mpath), 0);

        tc_capture_t cap;
        tc_capture_begin(&cap);
        jit__cache_entry_t *all = NULL;
        size_t n = 0;
        jit_status_t st = jit__cache_list(c, &all, &n, NULL);
        char *err = tc_capture_end(&cap);
        cr_assert_eq(st, JIT_OK, "variant %zu", v);
        cr_assert_eq(n, 3, "variant %zu: %zu entries listed", v, n);
        for (size_t i = 1; i < n; i++)
            cr_assert_lt(strcmp(all[i - 1].hash, all[i].hash), 0, "sorted by hash");
        for (unsigned i = 1; i <= 3; i++) {
            int seen = 0;
            for (size_t j = 0; j < n; j++)
                seen |= !strcmp(all[j].hash, tc_hash(i)) && all[j].size == 500 * i;
            cr_assert(seen, "variant %zu lost entry %u", v, i);
        }
        free(all);
        if (bad_manifests[v])
            cr_assert(strstr(err, "rebuilt"), "variant %zu: no warning: %s", v, err);
        free(err);

        /* The rewritten manifest is whole, and a second list reads it without a rebuild. */
        json_t *m = json_load_file(mpath, 0, NULL);
        cr_assert_not_null(m, "variant %zu: manifest not rewritten", v);
        cr_assert_eq(json_object_size(json_object_get(m, "entries")), 3);
        json_decref(m);
        size_t bad = 9;
        cr_assert_eq(jit__cache_verify(c, NULL, NULL, &bad, NULL, NULL), JIT_OK);
        cr_assert_eq(bad, 0, "variant %zu", v);
        for (unsigned i = 1; i <= 3; i++)
            cr_assert(tc_hit(c, i, 500 * i));
        jit__cache_close(c);
        jt_rmtree(dir);
        free(dir);
    }
}

Test(cache_damage, put_repairs_a_corrupt_manifest) {
    char *dir = tc_mkdtemp("cache-putrepair");
    jit__cache_t *c = tc_open(dir, 0);
    tc_put(c, 1, 100, NULL);
    tc_put(c, 2, 100, NULL);
    char mpath[4200];
    snprintf(mpath, sizeof(mpath), "%s/manifest.json", dir);
    cr_assert_eq(jt_write_file(mpath, "{\"format\": 1, \"entr"), 0);
    tc_capture_t cap;
    tc_capture_begin(&cap);
    tc_put(c, 3, 100, NULL);
    free(tc_capture_end(&cap));
    json_t *m = json_load_file(mpath, 0, NULL);
    cr_assert_not_null(m);
    cr_assert_eq(json_object_size(json_object_get(m, "entries")), 3,
                 "the merge kept the entries the torn manifest had lost");
    json_decref(m);
    jit__cache_close(c);
    jt_rmtree(dir);
    free(dir);
}

/* ---- verify ------------------------------------------------------------------------------- */

typedef struct seen {
    char text[8192];
    int calls;
} seen_t;

static void collect(const char *hash, const char *problem, void *user) {
    seen_t *s = user;
    size_t len = strlen(s->text);
    snprintf(s->text + len, sizeof(s->text) - len, "%s: %s\n", hash, problem);
    s->calls++;
}

static int reported(const seen_t *s, const char *hash, const char *problem) {
    char line[512];
    snprintf(line, sizeof(line), "%s: %s", hash, problem);
    return strstr(s->text, line) != NULL;
}

/* Entries 1..8; 1 and 2 stay whole, 3..8 are damaged in six different ways, plus a stray. */
static void build_damaged_cache(const char *dir, jit__cache_t *c) {
    for (unsigned i = 1; i <= 8; i++)
        tc_put(c, i, 2048, NULL);
    cr_assert_eq(truncate(tc_path(dir, tc_hash(3), ".cubin"), 2000), 0);
    flip_byte(tc_path(dir, tc_hash(4), ".cubin"), 7);
    cr_assert_eq(unlink(tc_path(dir, tc_hash(5), ".cubin")), 0);
    cr_assert_eq(jt_write_file(tc_path(dir, tc_hash(6), ".json"), "not json"), 0);
    /* 7: files gone, manifest still lists it. */
    for (int i = 0; i < 4; i++)
        unlink(tc_path(dir, tc_hash(7), (const char *[]){".cubin", ".cu", ".ptx", ".json"}[i]));
    /* 8: files present, the sidecar gone: an orphan, and a manifest entry without its files. */
    cr_assert_eq(unlink(tc_path(dir, tc_hash(8), ".json")), 0);
    char stray[4200];
    snprintf(stray, sizeof(stray), "%s/kernels/notes.txt", dir);
    cr_assert_eq(jt_write_file(stray, "left by hand"), 0);
}

Test(cache_verify, reports_every_problem) {
    char *dir = tc_mkdtemp("cache-verify");
    jit__cache_t *c = tc_open(dir, 0);
    /* An entry that exists but that the manifest does not list (a crash before the merge). It
     * is published first: a later publish would heal the index (docs/cache.md, "Healing the
     * index") before verify could see the drift this test wants reported. */
    tc_put(c, 9, 100, NULL);
    build_damaged_cache(dir, c);
    char mpath[4200];
    snprintf(mpath, sizeof(mpath), "%s/manifest.json", dir);
    json_t *m = json_load_file(mpath, 0, NULL);
    json_object_del(json_object_get(m, "entries"), tc_hash(9));
    cr_assert_eq(json_dump_file(m, mpath, 0), 0);
    json_decref(m);

    seen_t s = {{0}, 0};
    size_t bad = 0;
    cr_assert_eq(jit__cache_verify(c, collect, &s, &bad, NULL, NULL), JIT_OK);
    cr_assert(reported(&s, tc_hash(3), "size mismatch"), "%s", s.text);
    cr_assert(reported(&s, tc_hash(4), "checksum mismatch"), "%s", s.text);
    cr_assert(reported(&s, tc_hash(5), "missing cubin"), "%s", s.text);
    cr_assert(reported(&s, tc_hash(6), "sidecar unparsable"), "%s", s.text);
    cr_assert(reported(&s, tc_hash(7), "manifest entry without files"), "%s", s.text);
    cr_assert(reported(&s, tc_hash(8), "orphan files"), "%s", s.text);
    cr_assert(reported(&s, tc_hash(9), "files without manifest entry"), "%s", s.text);
    cr_assert(reported(&s, "kernels/notes.txt", "unexpected file"), "%s", s.text);
    cr_assert(!strstr(s.text, tc_hash(1)) && !strstr(s.text, tc_hash(2)), "%s", s.text);
    cr_assert_eq(bad, 8, "3..9 and the stray, got %zu:\n%s", bad, s.text);

    /* verify repairs nothing: a second run sees the same. */
    seen_t again = {{0}, 0};
    cr_assert_eq(jit__cache_verify(c, collect, &again, &bad, NULL, NULL), JIT_OK);
    cr_assert_str_eq(again.text, s.text);

    /* Foreign manifest damage is reported as such. */
    cr_assert_eq(jt_write_file(mpath, "{"), 0);
    seen_t torn = {{0}, 0};
    cr_assert_eq(jit__cache_verify(c, collect, &torn, &bad, NULL, NULL), JIT_OK);
    cr_assert(reported(&torn, "manifest.json", "manifest unusable"), "%s", torn.text);
    jit__cache_close(c);
    jt_rmtree(dir);
    free(dir);
}

/* ---- gc and clear ------------------------------------------------------------------------- */

Test(cache_gc, removes_damage_orphans_and_stale_temporaries) {
    char *dir = tc_mkdtemp("cache-gc");
    jit__cache_t *c = tc_open(dir, 0);
    build_damaged_cache(dir, c);
    char path[4200];
    /* Strays and orphans must be older than a minute: younger ones may be a publish in flight. */
    snprintf(path, sizeof(path), "%s/kernels/notes.txt", dir);
    set_age(path, 120);
    set_age(tc_path(dir, tc_hash(8), ".cubin"), 120);
    set_age(tc_path(dir, tc_hash(8), ".cu"), 120);
    set_age(tc_path(dir, tc_hash(8), ".ptx"), 120);
    snprintf(path, sizeof(path), "%s/tmp/123.0.old.cubin", dir);
    cr_assert_eq(jt_write_file(path, "stale"), 0);
    set_age(path, 120);
    snprintf(path, sizeof(path), "%s/tmp/124.0.young.cubin", dir);
    cr_assert_eq(jt_write_file(path, "in flight"), 0);
    /* An orphan written just now (its sidecar may be about to land) survives this gc. */
    char young[4200];
    snprintf(young, sizeof(young), "%s", tc_path(dir, tc_hash(10), ".cubin"));
    cr_assert_eq(jt_write_file(young, "cubin being published"), 0);

    jit__cache_gc_counts_t gc;
    cr_assert_eq(jit__cache_gc(c, NULL, &gc, NULL), JIT_OK);
    /* 3, 4, 5, 6 damaged; 8 orphaned; the stray; the old temporary. 7 has no files left. */
    cr_assert_eq(gc.removed, 7, "removed %zu", gc.removed);
    cr_assert_eq(gc.evicted, 0, "evicted %zu under a 4 GiB cap", gc.evicted);
    cr_assert(tc_exists(path), "a young temporary was removed");
    cr_assert(tc_exists(young), "a young orphan was removed");
    cr_assert_eq(tc_count_files(dir, "kernels"), 9, "entries 1 and 2 (4 files each) + young");
    cr_assert(tc_hit(c, 1, 2048) && tc_hit(c, 2, 2048));

    jit__cache_entry_t *all;
    size_t n;
    cr_assert_eq(jit__cache_list(c, &all, &n, NULL), JIT_OK);
    cr_assert_eq(n, 2, "the manifest was rewritten from what was kept");
    free(all);
    unlink(young);
    size_t bad = 9;
    cr_assert_eq(jit__cache_verify(c, NULL, NULL, &bad, NULL, NULL), JIT_OK);
    cr_assert_eq(bad, 0);
    jit__cache_close(c);
    jt_rmtree(dir);
    free(dir);
}

static void put_variant(jit__cache_t *c, unsigned seed, int gen, int nvrtc_minor) {
    jit__cache_entry_t e;
    tc_make_entry(&e, seed);
    e.generator_version = gen;
    e.toolchain.nvrtc_minor = nvrtc_minor;
    void *bin = tc_make_cubin(seed, 64);
    cr_assert_eq(jit__cache_put(c, &e, bin, 64, NULL, NULL, NULL), JIT_OK);
    free(bin);
}

/* Entries of another key format or another toolchain are valid (other hosts serve them): gc
 * keeps them unless its rules name them, and then removes exactly those. */
Test(cache_gc, removes_other_generators_and_toolchains_only_when_told) {
    char *dir = tc_mkdtemp("cache-gc-versions");
    jit__cache_t *c = tc_open(dir, 0);
    put_variant(c, 1, 2, 5); /* current generator, kept toolchain */
    put_variant(c, 2, 1, 5); /* old generator */
    put_variant(c, 3, 2, 0); /* toolchain 13.0, dropped */
    put_variant(c, 4, 2, 4); /* toolchain 13.4, not named */
    jit__cache_gc_counts_t n;
    cr_assert_eq(jit__cache_gc(c, NULL, &n, NULL), JIT_OK);
    cr_assert_eq(n.removed, 0, "the default rules removed %zu valid entries", n.removed);
    const jit__cache_nvrtc_t drop[] = {{13, 0}, {12, 8}};
    const jit__cache_gc_rules_t rules = {drop, 2, 2, NULL};
    cr_assert_eq(jit__cache_gc(c, &rules, &n, NULL), JIT_OK);
    cr_assert_eq(n.removed, 2);
    jit__cache_entry_t *all;
    size_t count;
    cr_assert_eq(jit__cache_list(c, &all, &count, NULL), JIT_OK);
    cr_assert_eq(count, 2);
    for (size_t i = 0; i < count; i++)
        cr_assert(!strcmp(all[i].hash, tc_hash(1)) || !strcmp(all[i].hash, tc_hash(4)));
    free(all);
    cr_assert(tc_hit(c, 1, 64) && tc_hit(c, 4, 64) && !tc_hit(c, 2, 64) && !tc_hit(c, 3, 64));
    jit__cache_close(c);
    jt_rmtree(dir);
    free(dir);
}

/* Entries built from other device code, or written before device code was hashed (no
 * device_hash), are removed when the rules name this library's device code; the current ones
 * stay. */
Test(cache_gc, removes_entries_of_other_device_code_when_told) {
    char *dir = tc_mkdtemp("cache-gc-device");
    jit__cache_t *c = tc_open(dir, 0);
    static const char *const hashes[] = {"0123456789abcdef0123456789abcdef",
                                         "fedcba9876543210fedcba9876543210", ""};
    for (unsigned i = 0; i < 3; i++) {
        jit__cache_entry_t e;
        tc_make_entry(&e, i + 1);
        snprintf(e.device_hash, sizeof(e.device_hash), "%s", hashes[i]);
        void *bin = tc_make_cubin(i + 1, 64);
        cr_assert_eq(jit__cache_put(c, &e, bin, 64, NULL, NULL, NULL), JIT_OK);
        free(bin);
    }
    const jit__cache_gc_rules_t rules = {NULL, 0, 0, hashes[0]};
    jit__cache_gc_counts_t n;
    cr_assert_eq(jit__cache_gc(c, &rules, &n, NULL), JIT_OK);
    cr_assert_eq(n.removed, 2, "removed %zu", n.removed);
    cr_assert(tc_hit(c, 1, 64) && !tc_hit(c, 2, 64) && !tc_hit(c, 3, 64));
    jit__cache_close(c);
    jt_rmtree(dir);
    free(dir);
}

Test(cache_gc, clear_removes_everything) {
    char *dir = tc_mkdtemp("cache-clear");
    jit__cache_t *c = tc_open(dir, 0);
    for (unsigned i = 1; i <= 5; i++)
        tc_put(c, i, 300, NULL);
    int token;
    cr_assert_eq(jit__cache_lock_key(c, tc_hash(1), &token, NULL), JIT_OK);
    jit__cache_unlock_key(c, token);
    size_t removed = 0;
    cr_assert_eq(jit__cache_clear(c, &removed, NULL), JIT_OK);
    cr_assert_eq(removed, 5);
    cr_assert_eq(tc_count_files(dir, "kernels"), 0);
    cr_assert_eq(tc_count_files(dir, "locks"), 0);
    char mpath[4200];
    snprintf(mpath, sizeof(mpath), "%s/manifest.json", dir);
    cr_assert(!tc_exists(mpath));
    for (unsigned i = 1; i <= 5; i++)
        cr_assert(!tc_hit(c, i, 300));
    jit__cache_entry_t *all;
    size_t n = 9;
    cr_assert_eq(jit__cache_list(c, &all, &n, NULL), JIT_OK);
    cr_assert_eq(n, 0);
    free(all);
    tc_put(c, 6, 300, NULL);
    cr_assert(tc_hit(c, 6, 300), "a cleared cache is usable at once");
    jit__cache_close(c);
    jt_rmtree(dir);
    free(dir);
}

/* ---- the size cap ------------------------------------------------------------------------- */

Test(cache_evict, least_recently_used_go_first) {
    char *dir = tc_mkdtemp("cache-evict");
    /* Each entry is 3000 cubin bytes plus ~0.7 KB of sidecar and text: three fit in 12000. */
    jit__cache_t *c = tc_open(dir, 12000);
    tc_put(c, 1, 3000, NULL);
    tc_put(c, 2, 3000, NULL);
    tc_put(c, 3, 3000, NULL);
    set_age(tc_path(dir, tc_hash(1), ".json"), 300);
    set_age(tc_path(dir, tc_hash(2), ".json"), 200);
    set_age(tc_path(dir, tc_hash(3), ".json"), 100);
    cr_assert(tc_hit(c, 1, 3000)); /* 1 is now the most recently used */
    tc_put(c, 4, 3000, NULL);
    cr_assert(!tc_hit(c, 2, 3000), "the least recently used entry (2) was not evicted");
    cr_assert(tc_hit(c, 1, 3000) && tc_hit(c, 3, 3000) && tc_hit(c, 4, 3000));
    cr_assert(!tc_exists(tc_path(dir, tc_hash(2), ".cu")), "every file of 2 goes");

    jit__cache_entry_t *all;
    size_t n;
    cr_assert_eq(jit__cache_list(c, &all, &n, NULL), JIT_OK);
    cr_assert_eq(n, 3, "the manifest drops evicted entries");
    free(all);

    /* An entry bigger than the cap evicts everything else but stays itself. */
    tc_put(c, 5, 20000, NULL);
    cr_assert(tc_hit(c, 5, 20000));
    cr_assert_eq(tc_count_files(dir, "kernels"), 4);
    size_t bad = 9;
    cr_assert_eq(jit__cache_verify(c, NULL, NULL, &bad, NULL, NULL), JIT_OK);
    cr_assert_eq(bad, 0);
    jit__cache_close(c);
    jt_rmtree(dir);
    free(dir);
}
