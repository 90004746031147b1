/*
 * The index: manifest.json plus manifest.journal. A publish to a large cache appends one journal
 * line instead of rewriting the manifest; readers apply the journal; a torn last line is ignored,
 * reported by verify and repaired by gc. And drift between the index and kernels/ (phantom
 * entries, sizes that disagree with the cubin, entries missing after a kill -9; docs/cache.md,
 * "Healing the index") heals at the next compaction rather than waiting for gc.
 */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "test_cache_fixture.h"

TestSuite(index_drift, .fini = tc_cleanup);
TestSuite(journal, .fini = tc_cleanup, .timeout = 300);

#define SIZE 4096
/* Enough entries that the manifest passes the size below which every publish rewrites it. */
#define LARGE 120

static int listed(jit__cache_t *c, const char *hash, jit__cache_entry_t *out) {
    jit__cache_entry_t *all = NULL;
    size_t n = 0;
    jit__diag_t d;
    jit__diag_init(&d);
    cr_assert_eq(jit__cache_list(c, &all, &n, &d), JIT_OK, "%s", d.msg);
    int found = 0;
    for (size_t i = 0; i < n; i++)
        if (!strcmp(all[i].hash, hash)) {
            found = 1;
            if (out)
                *out = all[i];
        }
    free(all);
    return found;
}

static size_t list_count(jit__cache_t *c) {
    jit__cache_entry_t *all = NULL;
    size_t n = 0;
    cr_assert_eq(jit__cache_list(c, &all, &n, NULL), JIT_OK);
    free(all);
    return n;
}

static void count_problem(const char *name, const char *problem, void *user) {
    (void)name;
    (void)problem;
    (*(int *)user)++;
}

static void journal_report(const char *name, const char *problem, void *user) {
    if (!strcmp(name, "manifest.journal") && strstr(problem, "torn"))
        (*(int *)user)++;
}

static size_t verify_bad(jit__cache_t *c) {
    size_t bad = 0;
    int calls = 0;
    cr_assert_eq(jit__cache_verify(c, count_problem, &calls, &bad, NULL, NULL), JIT_OK);
    return bad;
}

static void remove_entry_files(const char *dir, const char *hash) {
    static const char *ext[] = {".json", ".cubin", ".cu", ".ptx"};
    for (int i = 0; i < 4; i++)
        unlink(tc_path(dir, hash, ext[i]));
}

/* ---- drift heals ------------------------------------------------------------------------- */

Test(index_drift, a_phantom_is_not_listed_and_leaves_the_index_at_the_next_publish) {
    char *dir = tc_mkdtemp("drift-phantom");
    jit__cache_t *c = tc_open(dir, 0);
    tc_put(c, 1, SIZE, NULL);
    tc_put(c, 2, SIZE, NULL);
    char hash[JIT_KEY_HASH_LEN + 1];
    snprintf(hash, sizeof(hash), "%s", tc_hash(1));
    remove_entry_files(dir, hash); /* by hand, or a get that removed a damaged entry */
    cr_expect_not(listed(c, hash, NULL), "cache list shows an entry whose files are gone");
    tc_put(c, 3, SIZE, NULL);
    char *manifest = jt_read_file(tc_top(dir, "manifest.json"), NULL);
    cr_assert_not_null(manifest);
    cr_expect_null(strstr(manifest, hash), "the publish kept the phantom in manifest.json");
    free(manifest);
    cr_expect_eq(verify_bad(c), 0);
    jit__cache_close(c);
    free(dir);
}

Test(index_drift, a_size_that_disagrees_with_the_cubin_is_not_listed) {
    char *dir = tc_mkdtemp("drift-size");
    jit__cache_t *c = tc_open(dir, 0);
    tc_put(c, 1, SIZE, NULL);
    char *text = jt_read_file(tc_top(dir, "manifest.json"), NULL);
    char *at = strstr(text, "\"size\": 4096");
    cr_assert_not_null(at, "%s", text);
    char out[65536];
    snprintf(out, sizeof(out), "%.*s\"size\": 9223372036854775807%s", (int)(at - text), text,
             at + strlen("\"size\": 4096"));
    cr_assert_eq(jt_write_file(tc_top(dir, "manifest.json"), out), 0);
    chmod(tc_top(dir, "manifest.json"), 0600);
    free(text);
    jit__cache_entry_t e;
    cr_assert(listed(c, tc_hash(1), &e), "an intact entry must stay listed");
    cr_expect_eq(e.size, SIZE, "cache list shows %llu bytes for a %d-byte cubin",
                 (unsigned long long)e.size, SIZE);
    jit__cache_close(c);
    free(dir);
}

Test(index_drift, an_entry_missing_from_the_index_is_picked_up_at_the_next_publish) {
    char *dir = tc_mkdtemp("drift-missing");
    jit__cache_t *c = tc_open(dir, 0);
    tc_put(c, 1, SIZE, NULL);
    size_t len = 0;
    char *before = jt_read_file(tc_top(dir, "manifest.json"), &len);
    cr_assert_not_null(before);
    /* A kill -9 between entry 2's sidecar and its index update leaves this index. */
    tc_put(c, 2, SIZE, NULL);
    cr_assert_eq(jt_write_file(tc_top(dir, "manifest.json"), before), 0);
    chmod(tc_top(dir, "manifest.json"), 0600);
    unlink(tc_top(dir, "manifest.journal"));
    free(before);
    cr_assert_geq(verify_bad(c), 1, "verify must report the entry the index lacks");
    tc_put(c, 3, SIZE, NULL);
    cr_expect(listed(c, tc_hash(2), NULL), "a valid entry stays out of the index after a publish");
    cr_expect_eq(list_count(c), 3);
    cr_expect_eq(verify_bad(c), 0);
    jit__cache_close(c);
    free(dir);
}

/* ---- the journal ------------------------------------------------------------------------- */

static void fill(jit__cache_t *c, unsigned from, unsigned to) {
    for (unsigned i = from; i < to; i++)
        tc_put(c, i, SIZE, NULL);
}

Test(journal, a_publish_to_a_large_cache_appends_and_does_not_rewrite_the_manifest) {
    char *dir = tc_mkdtemp("journal-append");
    jit__cache_t *c = tc_open(dir, 0);
    fill(c, 0, LARGE);
    struct stat m0, m1, j0, j1;
    cr_assert_eq(stat(tc_top(dir, "manifest.json"), &m0), 0);
    cr_assert_eq(stat(tc_top(dir, "manifest.journal"), &j0), 0);
    tc_put(c, LARGE, SIZE, NULL);
    cr_assert_eq(stat(tc_top(dir, "manifest.json"), &m1), 0);
    cr_assert_eq(stat(tc_top(dir, "manifest.journal"), &j1), 0);
    cr_expect(m0.st_ino == m1.st_ino && m0.st_mtim.tv_nsec == m1.st_mtim.tv_nsec &&
                  m0.st_mtim.tv_sec == m1.st_mtim.tv_sec,
              "a publish rewrote manifest.json");
    cr_expect_gt(j1.st_size, j0.st_size, "a publish did not append to the journal");
    cr_expect(listed(c, tc_hash(LARGE), NULL), "list must apply the journal");
    cr_expect_eq(list_count(c), LARGE + 1);
    cr_expect_eq(verify_bad(c), 0);
    jit__cache_close(c);
    free(dir);
}

Test(journal, stays_a_fraction_of_the_manifest) {
    char *dir = tc_mkdtemp("journal-bound");
    jit__cache_t *c = tc_open(dir, 0);
    fill(c, 0, 3 * LARGE);
    struct stat m, j;
    cr_assert_eq(stat(tc_top(dir, "manifest.json"), &m), 0);
    cr_assert_eq(stat(tc_top(dir, "manifest.journal"), &j), 0);
    /* Compaction when it reaches a quarter: one more line (under 2 KiB) at most past that. */
    cr_expect_lt(j.st_size, m.st_size / 4 + 2048, "journal %lld bytes, manifest %lld",
                 (long long)j.st_size, (long long)m.st_size);
    cr_expect_eq(list_count(c), 3 * LARGE);
    cr_expect_eq(verify_bad(c), 0);
    jit__cache_close(c);
    free(dir);
}

/* Bytes of every file in kernels/: the usage the cap applies to. */
static uint64_t kernels_bytes(const char *dir) {
    char path[4200];
    snprintf(path, sizeof(path), "%s/kernels", dir);
    DIR *d = opendir(path);
    cr_assert_not_null(d);
    uint64_t total = 0;
    struct dirent *de;
    while ((de = readdir(d))) {
        struct stat st;
        if (fstatat(dirfd(d), de->d_name, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISREG(st.st_mode))
            total += (uint64_t)st.st_size;
    }
    closedir(d);
    return total;
}

static int same_manifest(const struct stat *a, const struct stat *b) {
    return a->st_ino == b->st_ino && a->st_mtim.tv_sec == b->st_mtim.tv_sec &&
           a->st_mtim.tv_nsec == b->st_mtim.tv_nsec;
}

/* A large cache at its cap: the publish that crosses it scans and evicts, and evicts enough
 * that the next ones append again instead of each scanning the whole cache, so a publish costs
 * the same however large the cache is (docs/cache.md, "Size cap and eviction"). */
Test(journal, a_large_cache_at_its_cap_does_not_rescan_on_every_publish) {
    char *dir = tc_mkdtemp("journal-cap");
    jit__cache_t *c = tc_open(dir, 0);
    fill(c, 0, LARGE);
    jit__cache_close(c);
    uint64_t full = kernels_bytes(dir), one = full / LARGE;
    /* Room for what is there and a fraction of one more entry. */
    int64_t cap = (int64_t)(full + one / 2);
    c = tc_open(dir, cap);
    struct stat m0, m1;
    cr_assert_eq(stat(tc_top(dir, "manifest.json"), &m0), 0);
    tc_put(c, 1000, SIZE, NULL); /* crosses the cap: a compaction that evicts */
    cr_assert_eq(stat(tc_top(dir, "manifest.json"), &m1), 0);
    cr_assert(!same_manifest(&m0, &m1), "crossing the cap must compact");
    uint64_t after = kernels_bytes(dir);
    cr_expect_leq(after, (uint64_t)(cap - cap / 8), "evicted to %llu bytes of a %lld cap",
                  (unsigned long long)after, (long long)cap);
    for (unsigned i = 1001; i < 1009; i++) {
        tc_put(c, i, SIZE, NULL);
        struct stat m;
        cr_assert_eq(stat(tc_top(dir, "manifest.json"), &m), 0);
        cr_expect(same_manifest(&m1, &m), "publish %u under the cap rewrote manifest.json", i);
    }
    for (unsigned i = 1000; i < 1009; i++)
        cr_expect(tc_hit(c, i, SIZE), "entry %u was lost", i);
    cr_expect_leq(kernels_bytes(dir), (uint64_t)cap);
    cr_expect_eq(verify_bad(c), 0);
    jit__cache_close(c);
    free(dir);
}

/* A large cache filled exactly to its cap, whose keys are published again (a rebuilt kernel):
 * each publish counts its bytes until the next scan, so without headroom every one of them
 * would compact and evict nothing. */
Test(journal, republishing_in_a_cache_full_to_its_cap_appends) {
    char *dir = tc_mkdtemp("journal-cap-again");
    jit__cache_t *c = tc_open(dir, 0);
    fill(c, 0, LARGE);
    jit__cache_close(c);
    c = tc_open(dir, (int64_t)kernels_bytes(dir));
    tc_put(c, 0, SIZE, NULL);
    struct stat m0;
    cr_assert_eq(stat(tc_top(dir, "manifest.json"), &m0), 0);
    for (unsigned i = 1; i < 9; i++) {
        tc_put(c, i, SIZE, NULL);
        struct stat m;
        cr_assert_eq(stat(tc_top(dir, "manifest.json"), &m), 0);
        cr_expect(same_manifest(&m0, &m), "publish %u rewrote manifest.json", i);
    }
    for (unsigned i = 0; i < 9; i++)
        cr_expect(tc_hit(c, i, SIZE), "entry %u was lost", i);
    cr_expect_eq(verify_bad(c), 0);
    jit__cache_close(c);
    free(dir);
}

Test(journal, a_torn_last_line_is_ignored_reported_and_repaired) {
    char *dir = tc_mkdtemp("journal-torn");
    jit__cache_t *c = tc_open(dir, 0);
    fill(c, 0, LARGE + 2);
    /* What a crash in the middle of the append's write() leaves. */
    FILE *f = fopen(tc_top(dir, "manifest.journal"), "a");
    cr_assert_not_null(f);
    fputs("{\"put\": {\"hash\": \"0123", f);
    fclose(f);
    cr_expect_eq(list_count(c), LARGE + 2, "list must ignore the torn line");
    int torn = 0;
    size_t bad = 0;
    cr_assert_eq(jit__cache_verify(c, journal_report, &torn, &bad, NULL, NULL), JIT_OK);
    cr_expect_eq(torn, 1, "verify must report the torn journal line");
    cr_expect_geq(bad, 1);
    cr_assert_eq(jit__cache_gc(c, NULL, NULL, NULL), JIT_OK);
    cr_expect_eq(verify_bad(c), 0, "gc did not repair the torn journal");
    cr_expect_eq(list_count(c), LARGE + 2);
    jit__cache_close(c);
    free(dir);
}

Test(journal, a_publish_after_a_torn_line_is_not_lost) {
    char *dir = tc_mkdtemp("journal-torn-put");
    jit__cache_t *c = tc_open(dir, 0);
    fill(c, 0, LARGE);
    FILE *f = fopen(tc_top(dir, "manifest.journal"), "a");
    cr_assert_not_null(f);
    fputs("{\"put\": {", f);
    fclose(f);
    tc_put(c, LARGE, SIZE, NULL);
    /* Verify first: a list would rebuild an index whose line was glued to the torn one. */
    cr_expect_eq(verify_bad(c), 0, "the publish appended after the torn line");
    cr_expect(listed(c, tc_hash(LARGE), NULL), "the line after a torn one was lost");
    jit__cache_close(c);
    free(dir);
}

Test(journal, a_garbage_line_makes_list_rebuild_and_verify_report) {
    char *dir = tc_mkdtemp("journal-garbage");
    jit__cache_t *c = tc_open(dir, 0);
    fill(c, 0, LARGE + 1);
    FILE *f = fopen(tc_top(dir, "manifest.journal"), "a");
    cr_assert_not_null(f);
    fputs("garbage\n", f);
    fclose(f);
    cr_expect_geq(verify_bad(c), 1, "verify must report an unparsable journal line");
    cr_expect_eq(list_count(c), LARGE + 1);
    cr_expect_eq(verify_bad(c), 0, "list did not rebuild the index");
    jit__cache_close(c);
    free(dir);
}

Test(journal, clear_removes_it) {
    char *dir = tc_mkdtemp("journal-clear");
    jit__cache_t *c = tc_open(dir, 0);
    fill(c, 0, LARGE + 1);
    cr_assert(tc_exists(tc_top(dir, "manifest.journal")));
    size_t removed = 0;
    cr_assert_eq(jit__cache_clear(c, &removed, NULL), JIT_OK);
    cr_expect_not(tc_exists(tc_top(dir, "manifest.journal")));
    cr_expect_eq(list_count(c), 0);
    jit__cache_close(c);
    free(dir);
}
