/*
 * toolchains.json as cache/ keeps it: the file names the compiler version a key records, so it
 * is trusted only as a cubin is, and nothing out of bounds ever reaches the caller. These cases
 * need no NVRTC: the records are made up.
 */
#include <errno.h>
#include <jansson.h>

#include "test_cache_fixture.h"

TestSuite(cache_toolchains, .fini = tc_cleanup);

static jit__toolchain_record_t make_record(int n) {
    jit__toolchain_record_t r;
    memset(&r, 0, sizeof(r));
    snprintf(r.nvrtc_path, sizeof(r.nvrtc_path), "/opt/cuda-%d/lib/libnvrtc.so.13", n);
    snprintf(r.nvjitlink_path, sizeof(r.nvjitlink_path), "/opt/cuda-%d/lib/libnvJitLink.so.13", n);
    r.nvrtc_file = (jit__file_print_t){2049, 1000 + n, 100000000, 1767225600, 123456789};
    r.nvjitlink_file = (jit__file_print_t){2049, 2000 + n, 90000000, 1767225600, 0};
    r.id = (jit__toolchain_id_t){13, n, 13, n};
    static const int archs[] = {75, 80, 90, 100, 103, 107, 120};
    r.n_archs = (int)(sizeof(archs) / sizeof(archs[0]));
    memcpy(r.archs, archs, sizeof(archs));
    return r;
}

static char *record_path(const char *dir) {
    char *p = malloc(1024);
    snprintf(p, 1024, "%s/toolchains.json", dir);
    return p;
}

/* Read, capturing what was printed: the state, the record count and the warning text. */
static jit__record_state_t read_quietly(jit__cache_t *c, size_t *n, char **printed) {
    tc_capture_t cap;
    tc_capture_begin(&cap);
    jit__toolchain_record_t *recs = NULL;
    jit__record_state_t st = jit__cache_toolchains_read(c, &recs, n);
    *printed = tc_capture_end(&cap);
    cr_assert(st == JIT__RECORD_OK || (recs == NULL && *n == 0), "records handed out with %d",
              (int)st);
    free(recs);
    return st;
}

Test(cache_toolchains, round_trip_replaces_by_nvrtc_path) {
    char *dir = tc_mkdtemp("tcrec");
    jit__cache_t *c = tc_open(dir, 0);
    jit__toolchain_record_t a = make_record(1), b = make_record(2);
    cr_assert_eq(jit__cache_toolchains_save(c, &a), 0);
    cr_assert_eq(jit__cache_toolchains_save(c, &b), 0);
    b.id.nvrtc_minor = 9; /* the same library identified again: one entry, the new one */
    cr_assert_eq(jit__cache_toolchains_save(c, &b), 0);
    jit__toolchain_record_t *recs = NULL;
    size_t n = 0;
    cr_assert_eq(jit__cache_toolchains_read(c, &recs, &n), JIT__RECORD_OK);
    cr_assert_eq(n, 2);
    cr_assert_eq(memcmp(&recs[0], &a, sizeof(a)), 0, "first entry changed by the round trip");
    cr_assert_eq(memcmp(&recs[1], &b, sizeof(b)), 0, "second entry changed by the round trip");
    free(recs);
    char *path = record_path(dir);
    struct stat st;
    cr_assert_eq(lstat(path, &st), 0);
    cr_assert(S_ISREG(st.st_mode));
    cr_assert_eq(st.st_mode & 07777, 0600);
    free(path);
    jit__cache_close(c);
    free(dir);
}

Test(cache_toolchains, entries_are_capped_oldest_first) {
    char *dir = tc_mkdtemp("tccap");
    jit__cache_t *c = tc_open(dir, 0);
    for (int i = 0; i < JIT__TOOLCHAIN_RECORD_MAX + 3; i++) {
        jit__toolchain_record_t r = make_record(i % 100);
        snprintf(r.nvrtc_path, sizeof(r.nvrtc_path), "/opt/t%d/libnvrtc.so", i);
        cr_assert_eq(jit__cache_toolchains_save(c, &r), 0);
    }
    jit__toolchain_record_t *recs = NULL;
    size_t n = 0;
    cr_assert_eq(jit__cache_toolchains_read(c, &recs, &n), JIT__RECORD_OK);
    cr_assert_eq(n, JIT__TOOLCHAIN_RECORD_MAX);
    cr_assert_str_eq(recs[0].nvrtc_path, "/opt/t3/libnvrtc.so");
    free(recs);
    jit__cache_close(c);
    free(dir);
}

Test(cache_toolchains, a_symlink_is_neither_read_nor_written_through) {
    char *dir = tc_mkdtemp("tclink");
    jit__cache_t *c = tc_open(dir, 0);
    jit__toolchain_record_t a = make_record(1);
    cr_assert_eq(jit__cache_toolchains_save(c, &a), 0);
    char *path = record_path(dir), target[1100];
    snprintf(target, sizeof(target), "%s/elsewhere.json", dir);
    cr_assert_eq(rename(path, target), 0);
    cr_assert_eq(symlink(target, path), 0);
    char *before = jt_read_file(target, NULL);
    size_t n;
    char *printed;
    cr_assert_eq(read_quietly(c, &n, &printed), JIT__RECORD_REFUSED);
    cr_assert(strstr(printed, "symbolic link") && strstr(printed, "toolchains.json"), "%s",
              printed);
    free(printed);
    jit__toolchain_record_t b = make_record(2);
    cr_assert_eq(jit__cache_toolchains_save(c, &b), 0);
    struct stat st;
    cr_assert_eq(lstat(path, &st), 0);
    cr_assert(S_ISREG(st.st_mode), "the link was not replaced");
    char *after = jt_read_file(target, NULL);
    cr_assert_str_eq(before, after, "written through the link");
    free(after);
    free(before);
    free(path);
    jit__cache_close(c);
    free(dir);
}

Test(cache_toolchains, a_file_others_can_write_is_refused_once) {
    char *dir = tc_mkdtemp("tcmode");
    jit__cache_t *c = tc_open(dir, 0);
    jit__toolchain_record_t a = make_record(1);
    cr_assert_eq(jit__cache_toolchains_save(c, &a), 0);
    char *path = record_path(dir);
    cr_assert_eq(chmod(path, 0666), 0);
    size_t n;
    char *printed;
    cr_assert_eq(read_quietly(c, &n, &printed), JIT__RECORD_REFUSED);
    cr_assert_eq(tc_count(printed, "writable by others"), 1, "%s", printed);
    free(printed);
    cr_assert_eq(read_quietly(c, &n, &printed), JIT__RECORD_REFUSED);
    cr_assert_eq(printed[0], '\0', "warned twice: %s", printed);
    free(printed);
    cr_assert_eq(chmod(path, 0620), 0);
    cr_assert_eq(read_quietly(c, &n, &printed), JIT__RECORD_REFUSED);
    free(printed);
    free(path);
    jit__cache_close(c);
    free(dir);
}

Test(cache_toolchains, a_file_of_another_user_is_refused) {
    if (geteuid() != 0)
        cr_skip_test("needs root to give the record to another user");
    char *dir = tc_mkdtemp("tcowner");
    jit__cache_t *c = tc_open(dir, 0);
    jit__toolchain_record_t a = make_record(1);
    cr_assert_eq(jit__cache_toolchains_save(c, &a), 0);
    char *path = record_path(dir);
    cr_assert_eq(chown(path, 65534, 65534), 0);
    size_t n;
    char *printed;
    cr_assert_eq(read_quietly(c, &n, &printed), JIT__RECORD_REFUSED);
    cr_assert(strstr(printed, "owned by uid 65534"), "%s", printed);
    free(printed);
    cr_assert_eq(jit__cache_toolchains_save(c, &a), 0);
    struct stat st;
    cr_assert_eq(lstat(path, &st), 0);
    cr_assert_eq(st.st_uid, geteuid(), "the foreign file was not replaced");
    free(path);
    jit__cache_close(c);
    free(dir);
}

/* A valid file with one field of the first entry replaced by `value` (JSON text). */
static void write_with(const char *dir, const char *field, const char *value) {
    jit__cache_t *c = tc_open(dir, 0);
    jit__toolchain_record_t a = make_record(1);
    cr_assert_eq(jit__cache_toolchains_save(c, &a), 0);
    jit__cache_close(c);
    char *path = record_path(dir);
    json_t *root = json_load_file(path, 0, NULL);
    json_t *e = json_array_get(json_object_get(root, "toolchains"), 0);
    cr_assert_not_null(e);
    if (strcmp(field, "format") == 0)
        e = root;
    json_t *v = json_loads(value, JSON_DECODE_ANY | JSON_ALLOW_NUL, NULL);
    cr_assert_not_null(v, "bad test value %s", value);
    json_object_set_new(e, field, v);
    cr_assert_eq(json_dump_file(root, path, 0), 0);
    json_decref(root);
    free(path);
}

Test(cache_toolchains, every_field_is_bounded) {
    static const struct {
        const char *field, *value;
    } bad[] = {
        {"nvrtc", "[2147483647, 99]"},
        {"nvrtc", "[13, 2147483647]"},
        {"nvrtc", "[9223372036854775807, 0]"},
        {"nvrtc", "[-1, 0]"},
        {"nvrtc", "[0, 0]"},
        {"nvrtc", "[100, 0]"},
        {"nvrtc", "[13, 100]"},
        {"nvrtc", "[13]"},
        {"nvrtc", "[13, 5, 0]"},
        {"nvrtc", "[13.0, 5]"},
        {"nvrtc", "[\"13\", 5]"},
        {"nvjitlink", "[4294967309, 5]"},
        {"nvjitlink", "{}"},
        {"archs", "[90, 100000]"},
        {"archs", "[90, -90]"},
        {"archs", "\"90\""},
        {"archs", "[90, 90, 90, 90, 90, 90, 90, 90, 90, 90, 90, 90, 90, 90, 90, 90, 90, 90, 90, "
                  "90, 90, 90, 90, 90, 90, 90, 90, 90, 90, 90, 90, 90, 90, 90, 90, 90, 90, 90, 90, "
                  "90, 90, 90, 90, 90, 90, 90, 90, 90, 90, 90, 90, 90, 90, 90, 90, 90, 90, 90, 90, "
                  "90, 90, 90, 90, 90, 90]"},
        {"nvrtc_path", "42"},
        {"nvrtc_path", "\"\""},
        {"nvrtc_path", "\"/opt/a\\u0000b\""},
        {"nvjitlink_path", "null"},
        {"nvrtc_file", "[1, 2, 3, 4]"},
        {"nvrtc_file", "[1, 2, -3, 4, 5]"},
        {"nvrtc_file", "[1, 2, 3, 4, 1000000000]"},
        {"nvjitlink_file", "[1, 2, 3, 4, \"5\"]"},
        {"format", "2"},
        {"format", "\"1\""},
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        char *dir = tc_mkdtemp("tcbound");
        write_with(dir, bad[i].field, bad[i].value);
        jit__cache_t *c = tc_open(dir, 0);
        size_t n;
        char *printed;
        cr_assert_eq(read_quietly(c, &n, &printed), JIT__RECORD_DAMAGED, "%s = %s accepted",
                     bad[i].field, bad[i].value);
        cr_assert(strstr(printed, bad[i].field), "%s = %s: %s", bad[i].field, bad[i].value,
                  printed);
        free(printed);
        jit__cache_close(c);
        jt_rmtree(dir);
        free(dir);
    }
    /* A path as long as the field allows is fine; one byte more is not. */
    char *dir = tc_mkdtemp("tcpath");
    jit__cache_t *c = tc_open(dir, 0);
    jit__toolchain_record_t a = make_record(1);
    memset(a.nvrtc_path, 'x', sizeof(a.nvrtc_path) - 1);
    a.nvrtc_path[0] = '/';
    a.nvrtc_path[sizeof(a.nvrtc_path) - 1] = '\0';
    cr_assert_eq(jit__cache_toolchains_save(c, &a), 0);
    size_t n;
    char *printed;
    cr_assert_eq(read_quietly(c, &n, &printed), JIT__RECORD_OK, "%s", printed);
    free(printed);
    jit__cache_close(c);
    char long_path[JIT__TOOLCHAIN_PATH_MAX + 8];
    memset(long_path, 'y', sizeof(long_path));
    long_path[0] = '"';
    long_path[JIT__TOOLCHAIN_PATH_MAX + 1] = '"';
    long_path[JIT__TOOLCHAIN_PATH_MAX + 2] = '\0';
    write_with(dir, "nvrtc_path", long_path);
    c = tc_open(dir, 0);
    cr_assert_eq(read_quietly(c, &n, &printed), JIT__RECORD_DAMAGED);
    free(printed);
    jit__cache_close(c);
    free(dir);
}

Test(cache_toolchains, nothing_out_of_bounds_is_written) {
    char *dir = tc_mkdtemp("tcsave");
    jit__cache_t *c = tc_open(dir, 0);
    jit__toolchain_record_t a = make_record(1);
    a.id.nvrtc_major = 2147483647;
    cr_assert_eq(jit__cache_toolchains_save(c, &a), EINVAL);
    a = make_record(1);
    a.archs[0] = 5;
    cr_assert_eq(jit__cache_toolchains_save(c, &a), EINVAL);
    char *path = record_path(dir);
    struct stat st;
    cr_assert_neq(lstat(path, &st), 0, "an invalid record was written");
    free(path);
    jit__cache_close(c);
    free(dir);
}

Test(cache_toolchains, a_damaged_file_is_replaced_whole) {
    static const char *const damage[] = {"{\"format\": 1, \"toolchains\": [{\"nvrtc_pa", "",
                                         "\177ELF garbage", "[]", "{\"format\": 1}"};
    for (size_t i = 0; i < sizeof(damage) / sizeof(damage[0]); i++) {
        char *dir = tc_mkdtemp("tcdamage");
        jit__cache_t *c = tc_open(dir, 0);
        char *path = record_path(dir);
        cr_assert_eq(jt_write_file(path, damage[i]), 0);
        chmod(path, 0600);
        size_t n;
        char *printed;
        cr_assert_eq(read_quietly(c, &n, &printed), JIT__RECORD_DAMAGED, "'%s' accepted",
                     damage[i]);
        cr_assert(strstr(printed, "toolchains.json"), "%s", printed);
        free(printed);
        int held = open(path, O_RDONLY);
        jit__toolchain_record_t a = make_record(1);
        cr_assert_eq(jit__cache_toolchains_save(c, &a), 0);
        struct stat old, now;
        cr_assert_eq(fstat(held, &old), 0);
        cr_assert_eq(lstat(path, &now), 0);
        cr_assert(old.st_ino != now.st_ino && old.st_nlink == 0, "rewritten in place");
        close(held);
        cr_assert_eq(tc_count_files(dir, "tmp"), 0, "a temporary was left behind");
        cr_assert_eq(read_quietly(c, &n, &printed), JIT__RECORD_OK);
        cr_assert_eq(n, 1);
        free(printed);
        free(path);
        jit__cache_close(c);
        jt_rmtree(dir);
        free(dir);
    }
}

Test(cache_toolchains, gc_and_clear_leave_it_alone) {
    char *dir = tc_mkdtemp("tcgc");
    jit__cache_t *c = tc_open(dir, 0);
    jit__toolchain_record_t a = make_record(1);
    cr_assert_eq(jit__cache_toolchains_save(c, &a), 0);
    tc_put(c, 1, 4096, NULL);
    jit__diag_t d;
    jit__diag_init(&d);
    size_t removed = 0;
    const jit__cache_nvrtc_t drop = {13, 5}; /* the fixture entry's toolchain */
    const jit__cache_gc_rules_t rules = {&drop, 1, 0, NULL};
    jit__cache_gc_counts_t counts;
    cr_assert_eq(jit__cache_gc(c, &rules, &counts, &d), JIT_OK, "%s", d.msg);
    cr_assert_eq(counts.removed, 1);
    cr_assert_eq(jit__cache_clear(c, &removed, &d), JIT_OK, "%s", d.msg);
    jit__toolchain_record_t *recs = NULL;
    size_t n = 0;
    cr_assert_eq(jit__cache_toolchains_read(c, &recs, &n), JIT__RECORD_OK);
    cr_assert_eq(n, 1);
    free(recs);
    jit__cache_close(c);
    free(dir);
}

Test(cache_toolchains, a_read_only_or_memory_only_cache_writes_nothing) {
    char *dir = tc_mkdtemp("tcro");
    jit__cache_t *c = tc_open(dir, 0);
    jit__cache_t *shared = jit__cache_share(c);
    cr_assert_not_null(shared);
    jit__cache_close(c); /* the shared handle outlives the one it came from */
    jit__toolchain_record_t a = make_record(1);
    cr_assert_eq(jit__cache_toolchains_save(shared, &a), 0);
    jit__cache_close(shared);
    cr_assert_eq(chmod(dir, 0500), 0);
    tc_capture_t cap;
    tc_capture_begin(&cap);
    c = tc_open(dir, 0);
    free(tc_capture_end(&cap));
    cr_assert_eq(jit__cache_toolchains_save(c, &a), EROFS);
    size_t n;
    char *printed;
    cr_assert_eq(read_quietly(c, &n, &printed), JIT__RECORD_OK, "a read-only record is usable");
    free(printed);
    jit__cache_close(c);
    chmod(dir, 0700);
    free(dir);
}
