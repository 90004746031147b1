/*
 * Defects found by fault injection (scripts/cache-faults.sh; docs/testing.md, "Fault injection
 * on the cache"), each pinned by the test that exposed it: verify that repaired a damaged
 * manifest instead of reporting it, a directory in kernels/ that nothing could remove, a size
 * cap below one cubin that thrashed without a word, and clear deleting the temporaries of
 * publishes still in flight.
 */
#include <criterion/criterion.h>
#include <dirent.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "test_cache_fixture.h"
#include "test_cli_helpers.h"

TestSuite(verify_reports, .fini = tc_cleanup, .timeout = 120);
TestSuite(kernels_subdir, .fini = tc_cleanup);
TestSuite(size_cap, .fini = tc_cleanup);
TestSuite(clear_in_flight, .fini = tc_cleanup);

static void set_age(const char *path, int seconds) {
    struct timespec t[2] = {{time(NULL) - seconds, 0}, {time(NULL) - seconds, 0}};
    cr_assert_eq(utimensat(AT_FDCWD, path, t, AT_SYMLINK_NOFOLLOW), 0, "%s", path);
}

/* ---- a directory, byte for byte ----------------------------------------------------------- */

/* One line per file under `dir` (recursive, links not followed): name, type, mode, owner, size,
 * mtime in ns, and the contents' hash or the link's target. Equal texts mean nothing changed. */
static void snapshot_into(const char *dir, const char *rel, char **text, size_t *len) {
    char path[4200];
    snprintf(path, sizeof(path), "%s%s%s", dir, *rel ? "/" : "", rel);
    DIR *d = opendir(path);
    cr_assert_not_null(d, "%s", path);
    char *names[256];
    size_t n = 0;
    struct dirent *de;
    while ((de = readdir(d)))
        if (strcmp(de->d_name, ".") && strcmp(de->d_name, "..") && n < 256)
            names[n++] = strdup(de->d_name);
    closedir(d);
    for (size_t i = 0; i + 1 < n; i++) /* a few dozen names: insertion order does not matter */
        for (size_t j = i + 1; j < n; j++)
            if (strcmp(names[i], names[j]) > 0) {
                char *t = names[i];
                names[i] = names[j];
                names[j] = t;
            }
    for (size_t i = 0; i < n; i++) {
        char sub[4200], full[8400], extra[4200] = "";
        snprintf(sub, sizeof(sub), "%s%s%s", rel, *rel ? "/" : "", names[i]);
        snprintf(full, sizeof(full), "%s/%s", dir, sub);
        struct stat st;
        cr_assert_eq(lstat(full, &st), 0, "%s", full);
        if (S_ISREG(st.st_mode)) {
            size_t size = 0;
            char *data = jt_read_file(full, &size);
            jit__hash_hex(data ? data : "", data ? size : 0, extra);
            free(data);
        } else if (S_ISLNK(st.st_mode)) {
            ssize_t k = readlink(full, extra, sizeof(extra) - 1);
            extra[k > 0 ? k : 0] = '\0';
        }
        char line[16800];
        int w = snprintf(line, sizeof(line), "%s %o %u %lld %lld.%09ld %s\n", sub,
                         (unsigned)st.st_mode, (unsigned)st.st_uid, (long long)st.st_size,
                         (long long)st.st_mtim.tv_sec, st.st_mtim.tv_nsec, extra);
        *text = realloc(*text, *len + (size_t)w + 1);
        memcpy(*text + *len, line, (size_t)w + 1);
        *len += (size_t)w;
        if (S_ISDIR(st.st_mode))
            snapshot_into(dir, sub, text, len);
        free(names[i]);
    }
}

static char *snapshot(const char *dir) {
    char *text = calloc(1, 1);
    size_t len = 0;
    snapshot_into(dir, "", &text, &len);
    return text;
}

/* ---- verify reports manifest damage and changes nothing ----------------------------------- */

static char *manifest_path(const char *dir) {
    static char p[4200];
    snprintf(p, sizeof(p), "%s/manifest.json", dir);
    return p;
}

static void write_manifest(const char *dir, const char *text) {
    cr_assert_eq(jt_write_file(manifest_path(dir), text), 0);
    cr_assert_eq(chmod(manifest_path(dir), 0600), 0);
}

/* The manifest text with the first `from` replaced by `to`. */
static void edit_manifest(const char *dir, const char *from, const char *to) {
    char *text = jt_read_file(manifest_path(dir), NULL);
    cr_assert_not_null(text);
    char *at = strstr(text, from);
    cr_assert_not_null(at, "manifest lacks '%s'", from);
    size_t n = strlen(text) - strlen(from) + strlen(to) + 1;
    char *out = malloc(n);
    snprintf(out, n, "%.*s%s%s", (int)(at - text), text, to, at + strlen(from));
    write_manifest(dir, out);
    free(out);
    free(text);
}

static void garbage(const char *dir) {
    write_manifest(dir, "garbage\n");
}
static void empty(const char *dir) {
    write_manifest(dir, "");
}
static void truncated(const char *dir) {
    char *text = jt_read_file(manifest_path(dir), NULL);
    text[strlen(text) / 2] = '\0';
    write_manifest(dir, text);
    free(text);
}
static void negative_size(const char *dir) {
    edit_manifest(dir, "\"size\": 4096", "\"size\": -4096");
}
static void path_key(const char *dir) {
    char from[64];
    snprintf(from, sizeof(from), "\"%s\": {", tc_hash(1));
    edit_manifest(dir, from, "\"../../etc/passwd\": {");
}
static void symlinked(const char *dir) {
    char real[4200];
    snprintf(real, sizeof(real), "%s/manifest.real", dir);
    cr_assert_eq(rename(manifest_path(dir), real), 0);
    cr_assert_eq(symlink("manifest.real", manifest_path(dir)), 0);
}
static void foreign_owner(const char *dir) {
    cr_assert_eq(chown(manifest_path(dir), 12345, 12345), 0);
}
static void world_writable(const char *dir) {
    cr_assert_eq(chmod(manifest_path(dir), 0666), 0);
}

static const struct {
    const char *name;
    void (*harm)(const char *dir);
    const char *says; /* part of the reason verify must give */
} k_damage[] = {
    {"garbage", garbage, "invalid JSON"},          {"empty", empty, "invalid JSON"},
    {"truncated", truncated, "invalid JSON"},      {"negative size", negative_size, "size"},
    {"path as key", path_key, "../../etc/passwd"}, {"symlink", symlinked, "refused"},
    {"foreign owner", foreign_owner, "refused"},   {"mode 0666", world_writable, "refused"},
};

Test(verify_reports, every_manifest_damage_without_repairing_it) {
    for (size_t k = 0; k < sizeof(k_damage) / sizeof(k_damage[0]); k++) {
        char *dir = tc_mkdtemp("verify-manifest");
        jit__cache_t *c = tc_open(dir, 0);
        for (unsigned i = 1; i <= 3; i++)
            tc_put(c, i, 4096, NULL);
        jit__cache_close(c);
        k_damage[k].harm(dir);

        char *before = snapshot(dir);
        cli_result_t r = CLI(NULL, NULL, "cache", "verify", "--cache-dir", dir);
        char *after = snapshot(dir);
        cr_expect_eq(r.rc, 1, "%s: exit %d; stdout: %s stderr: %s", k_damage[k].name, r.rc, r.out,
                     r.err);
        cr_expect(strstr(r.out, "manifest.json") && strstr(r.out, k_damage[k].says),
                  "%s: the report must name manifest.json and say '%s': %s", k_damage[k].name,
                  k_damage[k].says, r.out);
        cr_expect(strstr(r.out, "verified 3 entries"), "%s: %s", k_damage[k].name, r.out);
        cr_expect_str_eq(after, before, "%s: verify changed the cache", k_damage[k].name);
        cli_free(&r);

        /* --json says the same, and changes nothing either. */
        r = CLI(NULL, NULL, "cache", "verify", "--json", "--cache-dir", dir);
        char *again = snapshot(dir);
        cr_expect_eq(r.rc, 1, "%s: --json exit %d", k_damage[k].name, r.rc);
        cr_expect(strstr(r.out, "\"manifest.json\""), "%s: %s", k_damage[k].name, r.out);
        cr_expect_str_eq(again, before, "%s: verify --json changed the cache", k_damage[k].name);
        cli_free(&r);
        free(before);
        free(after);
        free(again);

        /* gc is the repair: afterwards verify is clean and every entry is still there. */
        c = tc_open(dir, 0);
        size_t bad = 9;
        cr_assert_eq(jit__cache_gc(c, NULL, NULL, NULL), JIT_OK);
        cr_expect_eq(jit__cache_verify(c, NULL, NULL, &bad, NULL, NULL), JIT_OK);
        cr_expect_eq(bad, 0, "%s: gc did not repair the manifest", k_damage[k].name);
        for (unsigned i = 1; i <= 3; i++)
            cr_expect(tc_hit(c, i, 4096), "%s: entry %u lost", k_damage[k].name, i);
        jit__cache_close(c);
        free(dir);
    }
}

Test(verify_reports, a_healthy_cache_is_clean_and_untouched) {
    char *dir = tc_mkdtemp("verify-clean");
    jit__cache_t *c = tc_open(dir, 0);
    for (unsigned i = 1; i <= 3; i++)
        tc_put(c, i, 4096, NULL);
    jit__cache_close(c);
    char *before = snapshot(dir);
    cli_result_t r = CLI(NULL, NULL, "cache", "verify", "--cache-dir", dir);
    char *after = snapshot(dir);
    cr_expect_eq(r.rc, 0, "%s%s", r.out, r.err);
    cr_expect(strstr(r.out, "verified 3 entries") && strstr(r.out, "0 problems"), "%s", r.out);
    cr_expect_str_eq(after, before);
    cli_free(&r);
    free(before);
    free(after);
    free(dir);
}

/* ---- a directory inside kernels/ ---------------------------------------------------------- */

static void plant_dirs(const char *dir, char *junk, char *named, size_t sz) {
    snprintf(junk, sz, "%s/kernels/junk", dir);
    snprintf(named, sz, "%s/kernels/%s.cubin", dir, tc_hash(7));
    char deep[4300];
    cr_assert_eq(mkdir(junk, 0700), 0);
    snprintf(deep, sizeof(deep), "%s/inner", junk);
    cr_assert_eq(mkdir(deep, 0700), 0);
    snprintf(deep, sizeof(deep), "%s/inner/file", junk);
    cr_assert_eq(jt_write_file(deep, "x"), 0);
    cr_assert_eq(mkdir(named, 0700), 0); /* named like a cubin, but a directory */
}

Test(kernels_subdir, verify_reports_it_and_gc_removes_it) {
    char *dir = tc_mkdtemp("kernels-subdir");
    jit__cache_t *c = tc_open(dir, 0);
    tc_put(c, 1, 4096, NULL);
    char junk[4200], named[4200];
    plant_dirs(dir, junk, named, sizeof(junk));
    set_age(junk, 3600);
    set_age(named, 3600);

    size_t bad = 0;
    cr_assert_eq(jit__cache_verify(c, NULL, NULL, &bad, NULL, NULL), JIT_OK);
    cr_expect_eq(bad, 2, "both directories are problems, got %zu", bad);
    size_t removed = 0;
    cr_assert_eq(jit__cache_gc(c, NULL, NULL, NULL), JIT_OK);
    cr_expect(!tc_exists(junk), "gc left kernels/junk");
    cr_expect(!tc_exists(named), "gc left a directory named like a cubin");
    cr_assert_eq(jit__cache_verify(c, NULL, NULL, &bad, NULL, NULL), JIT_OK);
    cr_expect_eq(bad, 0, "verify still fails after gc");
    cr_expect(tc_hit(c, 1, 4096), "the real entry survived");

    plant_dirs(dir, junk, named, sizeof(junk));
    cr_assert_eq(jit__cache_clear(c, &removed, NULL), JIT_OK);
    cr_expect(!tc_exists(junk) && !tc_exists(named), "clear left a directory in kernels/");
    cr_expect_eq(tc_count_files(dir, "kernels"), 0);
    jit__cache_close(c);
    free(dir);
}

/* A symbolic link planted in kernels/ is removed itself; what it points at is never touched. */
Test(kernels_subdir, removal_never_follows_links) {
    char *dir = tc_mkdtemp("kernels-link");
    char *outside = tc_mkdtemp("kernels-link-target");
    char victim[4200], link[4200], inner[4300];
    snprintf(victim, sizeof(victim), "%s/keep", outside);
    cr_assert_eq(jt_write_file(victim, "keep"), 0);
    jit__cache_t *c = tc_open(dir, 0);
    snprintf(link, sizeof(link), "%s/kernels/sub", dir);
    cr_assert_eq(mkdir(link, 0700), 0);
    snprintf(inner, sizeof(inner), "%s/escape", link);
    cr_assert_eq(symlink(outside, inner), 0);
    size_t removed = 0;
    cr_assert_eq(jit__cache_clear(c, &removed, NULL), JIT_OK);
    cr_expect(!tc_exists(link));
    cr_expect(tc_exists(victim), "clear followed a link out of the cache");
    jit__cache_close(c);
    free(dir);
    free(outside);
}

/* ---- a cap below one cubin ---------------------------------------------------------------- */

Test(size_cap, smaller_than_one_entry_warns_once) {
    char *dir = tc_mkdtemp("cap-tiny");
    jit__cache_t *c = tc_open(dir, 1000);
    tc_capture_t cap;
    tc_capture_begin(&cap);
    for (unsigned i = 1; i <= 4; i++)
        tc_put(c, i, 4096, NULL);
    char *err = tc_capture_end(&cap);
    cr_expect_eq(tc_count(err, "warning:"), 1, "want one warning, got: %s", err);
    cr_expect(strstr(err, "1000") && strstr(err, dir),
              "the warning names the cap and the cache: %s", err);
    free(err);
    cr_expect(tc_hit(c, 4, 4096), "the entry just published is kept");
    jit__cache_close(c);

    /* A cap that fits every entry says nothing. */
    free(dir);
    dir = tc_mkdtemp("cap-roomy");
    c = tc_open(dir, 1 << 20);
    tc_capture_begin(&cap);
    for (unsigned i = 1; i <= 4; i++)
        tc_put(c, i, 4096, NULL);
    err = tc_capture_end(&cap);
    cr_expect_eq(tc_count(err, "warning:"), 0, "%s", err);
    free(err);
    jit__cache_close(c);
    free(dir);
}

/* ---- clear and publishes in flight ------------------------------------------------------- */

Test(clear_in_flight, young_temporaries_and_orphans_are_left_to_gc) {
    char *dir = tc_mkdtemp("clear-young");
    jit__cache_t *c = tc_open(dir, 0);
    tc_put(c, 1, 4096, NULL);
    char young[4200], old[4200], orphan[4200];
    snprintf(young, sizeof(young), "%s/tmp/999.1.%s.cubin", dir, tc_hash(2));
    snprintf(old, sizeof(old), "%s/tmp/999.2.%s.cubin", dir, tc_hash(3));
    snprintf(orphan, sizeof(orphan), "%s", tc_path(dir, tc_hash(4), ".cubin"));
    cr_assert_eq(jt_write_file(young, "in flight"), 0);
    cr_assert_eq(jt_write_file(old, "abandoned"), 0);
    cr_assert_eq(jt_write_file(orphan, "renamed, sidecar not yet"), 0);
    set_age(old, 3600);

    size_t removed = 0;
    cr_assert_eq(jit__cache_clear(c, &removed, NULL), JIT_OK);
    cr_expect_eq(removed, 1, "one entry removed, got %zu", removed);
    cr_expect(tc_exists(young), "clear deleted a temporary of a publish in flight");
    cr_expect(tc_exists(orphan), "clear deleted a cubin whose sidecar is about to follow");
    cr_expect(!tc_exists(old), "clear left an abandoned temporary");
    cr_expect(!tc_hit(c, 1, 4096));

    /* Once they are old, gc (or clear) takes them. */
    set_age(young, 3600);
    set_age(orphan, 3600);
    cr_assert_eq(jit__cache_gc(c, NULL, NULL, NULL), JIT_OK);
    cr_expect(!tc_exists(young) && !tc_exists(orphan));
    jit__cache_close(c);
    free(dir);
}

/* ---- a directory where the index should be (found by scripts/cache-faults.sh) ------------- */

TestSuite(index_is_a_directory, .fini = tc_cleanup);

static void index_replaced_by_a_directory(const char *name) {
    char *dir = tc_mkdtemp("index-dir");
    jit__cache_t *c = tc_open(dir, 0);
    for (unsigned i = 0; i < 3; i++)
        tc_put(c, i, 1000, NULL);
    char path[4200], inside[4300];
    snprintf(path, sizeof(path), "%s/%s", dir, name);
    cr_assert_eq(unlink(path), 0);
    cr_assert_eq(mkdir(path, 0700), 0);
    snprintf(inside, sizeof(inside), "%s/inside", path);
    cr_assert_eq(jt_write_file(inside, "x"), 0);
    size_t bad = 0;
    cr_assert_eq(jit__cache_verify(c, NULL, NULL, &bad, NULL, NULL), JIT_OK);
    cr_expect_gt(bad, 0, "verify must report a directory named %s", name);
    jit__diag_t d;
    jit__diag_init(&d);
    cr_expect_eq(jit__cache_gc(c, NULL, NULL, &d), JIT_OK, "gc: %s", d.msg);
    jit__diag_clear(&d);
    struct stat st;
    cr_expect(lstat(path, &st) != 0 || S_ISREG(st.st_mode), "gc left %s a directory", name);
    bad = 9;
    cr_assert_eq(jit__cache_verify(c, NULL, NULL, &bad, NULL, NULL), JIT_OK);
    cr_expect_eq(bad, 0, "verify after gc");
    for (unsigned i = 0; i < 3; i++)
        cr_expect(tc_hit(c, i, 1000), "entry %u lost", i);
    jit__cache_close(c);
    free(dir);
}

Test(index_is_a_directory, manifest_json_is_replaced_by_gc) {
    index_replaced_by_a_directory("manifest.json");
}

Test(index_is_a_directory, manifest_journal_is_removed_by_gc) {
    index_replaced_by_a_directory("manifest.journal");
}

/* A publish does not fail for ever on it either: the directory is the index's, not an entry. */
Test(index_is_a_directory, a_publish_replaces_it) {
    const char *const names[] = {"manifest.json", "manifest.journal"};
    for (int k = 0; k < 2; k++) {
        char *dir = tc_mkdtemp("index-dir-put");
        jit__cache_t *c = tc_open(dir, 0);
        tc_put(c, 1, 1000, NULL);
        char path[4200];
        snprintf(path, sizeof(path), "%s/%s", dir, names[k]);
        cr_assert_eq(unlink(path), 0);
        cr_assert_eq(mkdir(path, 0700), 0);
        jit__cache_entry_t e;
        tc_make_entry(&e, 2);
        void *bin = tc_make_cubin(2, 1000);
        jit__diag_t d;
        jit__diag_init(&d);
        cr_expect_eq(jit__cache_put(c, &e, bin, 1000, "src", NULL, &d), JIT_OK, "%s: %s", names[k],
                     d.msg);
        jit__diag_clear(&d);
        free(bin);
        struct stat st;
        cr_expect(lstat(path, &st) == 0 && S_ISREG(st.st_mode), "%s is not a file again", names[k]);
        jit__cache_entry_t *all = NULL;
        size_t n = 0;
        cr_assert_eq(jit__cache_list(c, &all, &n, NULL), JIT_OK);
        cr_expect_eq(n, 2, "%s: %zu entries listed", names[k], n);
        free(all);
        jit__cache_close(c);
        free(dir);
    }
}
