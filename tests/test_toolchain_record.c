/*
 * Remembered toolchain identities: a process that finds its toolchain in the record does not
 * open NVRTC or nvJitLink until it compiles, and a record whose fingerprints no longer match
 * the files is not trusted. Each case runs in a forked child, since the toolchain table is
 * process-wide.
 */
#include <criterion/criterion.h>
#include <dirent.h>
#include <fcntl.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "jitgemm.h"
#include "support.h"
#include "toolchain.h"

static int nvrtc_mapped(void) {
    char *maps = jt_read_file("/proc/self/maps", NULL);
    int mapped = maps && strstr(maps, "libnvrtc") != NULL;
    free(maps);
    return mapped;
}

/* In a child: identify the automatic toolchain with the record in the cache directory `dir`,
 * named the way a library user names it (a context). Exit codes: 0 = not loaded and identity as
 * expected, 10 = loaded, 20 = failure. Writes "maj.min n_archs" to dir/id and what the library
 * printed to dir/err. */
static int child(const char *dir, int load_after) {
    pid_t pid = fork();
    if (pid == 0) {
        char err_path[1024];
        snprintf(err_path, sizeof(err_path), "%s/err", dir);
        int fd = open(err_path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
        if (fd < 0 || dup2(fd, 2) < 0)
            _exit(20);
        jit_context_options_t opt;
        jit_context_options_init(&opt);
        opt.cache_dir = dir;
        opt.arch = "sm_90a";
        jit_context_t *ctx;
        if (jit_context_create(&opt, &ctx) != JIT_OK)
            _exit(20);
        const jit__toolchain_t *tc;
        jit__diag_t d;
        jit__diag_init(&d);
        if (jit__toolchain_get(NULL, &tc, &d) != JIT_OK)
            _exit(20);
        char path[1024], text[64];
        snprintf(path, sizeof(path), "%s/id", dir);
        snprintf(text, sizeof(text), "%d.%d %d", tc->id.nvrtc_major, tc->id.nvrtc_minor,
                 tc->n_archs);
        jt_write_file(path, text);
        int was_mapped = nvrtc_mapped();
        if (load_after && (jit__toolchain_load(tc, &d) != JIT_OK || !nvrtc_mapped()))
            _exit(20);
        jit_context_destroy(ctx);
        _exit(was_mapped ? 10 : 0);
    }
    int status = 0;
    waitpid(pid, &status, 0);
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

Test(toolchain_record, a_remembered_toolchain_is_not_loaded_until_used) {
    char *dir = jt_mkdtemp("tcrecord");
    /* First process: nothing remembered, so it loads to identify, and writes the record. */
    cr_assert_eq(child(dir, 0), 10);
    char path[1024];
    snprintf(path, sizeof(path), "%s/toolchains.json", dir);
    char *record = jt_read_file(path, NULL);
    cr_assert_not_null(record, "no record written");
    cr_assert(strstr(record, "libnvrtc"), "%s", record);
    snprintf(path, sizeof(path), "%s/id", dir);
    char *first = jt_read_file(path, NULL);
    /* Second process: same identity, libraries not opened; loading on demand works. */
    cr_assert_eq(child(dir, 1), 0, "the remembered toolchain was loaded anyway");
    char *second = jt_read_file(path, NULL);
    cr_assert_str_eq(first, second);
    free(first);
    free(second);
    free(record);
    jt_rmtree(dir);
    free(dir);
}

Test(toolchain_record, a_stale_fingerprint_is_not_trusted) {
    char *dir = jt_mkdtemp("tcstale");
    cr_assert_eq(child(dir, 0), 10);
    char path[1024];
    snprintf(path, sizeof(path), "%s/toolchains.json", dir);
    char *record = jt_read_file(path, NULL);
    cr_assert_not_null(record);
    /* Make every NVRTC fingerprint unmatched, as a library replaced in place would: the
     * toolchain must be identified again, not believed. */
    cr_assert_not_null(strstr(record, "\"nvrtc_file\": ["), "%s", record);
    char *p;
    while ((p = strstr(record, "\"nvrtc_file\": [")) != NULL)
        memcpy(p, "\"nvrtc_filX\": [", 15);
    cr_assert_eq(jt_write_file(path, record), 0);
    cr_assert_eq(child(dir, 0), 10, "a record that no longer matches was trusted");
    free(record);
    jt_rmtree(dir);
    free(dir);
}

/* ---- a record the process must not believe ---------------------------------------------- */

static char *path_in(const char *dir, const char *name) {
    char *p = malloc(1024);
    snprintf(p, 1024, "%s/%s", dir, name);
    return p;
}

/* The record a first process wrote, with every entry's NVRTC version replaced by `nvrtc` (a JSON
 * value), written to `dest`. Believing it would make the child report that version; the trust
 * tests forge an older one, so that nvJitLink still passes as new enough and nothing but the
 * record's trustworthiness decides. */
static void forge(const char *dir, const char *nvrtc, const char *dest) {
    char *rec = path_in(dir, "toolchains.json");
    json_t *root = json_load_file(rec, 0, NULL);
    cr_assert_not_null(root, "no record to forge from");
    json_t *list = json_object_get(root, "toolchains");
    cr_assert(json_array_size(list) > 0);
    size_t i;
    json_t *e;
    json_array_foreach(list, i, e) {
        json_t *v = json_loads(nvrtc, JSON_DECODE_ANY, NULL);
        cr_assert_not_null(v, "bad test value %s", nvrtc);
        json_object_set_new(e, "nvrtc", v);
    }
    cr_assert_eq(json_dump_file(root, dest, JSON_INDENT(1)), 0);
    chmod(dest, 0600);
    json_decref(root);
    free(rec);
}

/* A cache directory holding a genuine record of the automatic toolchain, and the identity the
 * first process saw ("maj.min n_archs"). */
static char *recorded_dir(const char *tag, char **identity) {
    char *dir = jt_mkdtemp(tag);
    cr_assert_not_null(dir);
    cr_assert_eq(child(dir, 0), 10);
    char *id = path_in(dir, "id");
    *identity = jt_read_file(id, NULL);
    cr_assert_not_null(*identity);
    free(id);
    return dir;
}

/* After the child refused a record: it identified the libraries itself, said why, and left a
 * fresh record (a regular file of ours, mode 0600) that a later process trusts. */
static void expect_refused_and_rewritten(const char *dir, const char *identity, const char *why) {
    char *id = path_in(dir, "id");
    char *seen = jt_read_file(id, NULL);
    cr_assert_str_eq(seen, identity, "the forged identity was believed");
    char *err_path = path_in(dir, "err");
    char *err = jt_read_file(err_path, NULL);
    cr_assert(err && strstr(err, "toolchains.json") && strstr(err, why),
              "no warning naming the record and '%s': %s", why, err ? err : "(none)");
    char *rec = path_in(dir, "toolchains.json");
    struct stat st;
    cr_assert_eq(lstat(rec, &st), 0);
    cr_assert(S_ISREG(st.st_mode), "the record is not a regular file now");
    cr_assert_eq(st.st_uid, geteuid());
    cr_assert_eq(st.st_mode & 07777, 0600, "mode %o", (unsigned)(st.st_mode & 07777));
    cr_assert_eq(child(dir, 0), 0, "the rewritten record was not trusted");
    free(rec);
    free(err);
    free(err_path);
    free(seen);
    free(id);
}

Test(toolchain_record, a_symlinked_record_is_not_followed) {
    char *identity;
    char *dir = recorded_dir("tclink", &identity);
    char *elsewhere = path_in(dir, "elsewhere.json");
    char *rec = path_in(dir, "toolchains.json");
    forge(dir, "[12, 7]", elsewhere);
    char *before = jt_read_file(elsewhere, NULL);
    cr_assert_eq(unlink(rec), 0);
    cr_assert_eq(symlink(elsewhere, rec), 0);
    cr_assert_eq(child(dir, 0), 10, "a record behind a symlink was believed");
    expect_refused_and_rewritten(dir, identity, "symbolic link");
    char *after = jt_read_file(elsewhere, NULL);
    cr_assert_str_eq(before, after, "the link's target was written through");
    free(after);
    free(before);
    free(rec);
    free(elsewhere);
    free(identity);
    jt_rmtree(dir);
    free(dir);
}

Test(toolchain_record, a_record_others_can_write_is_refused) {
    char *identity;
    char *dir = recorded_dir("tcmode", &identity);
    char *rec = path_in(dir, "toolchains.json");
    forge(dir, "[12, 7]", rec);
    cr_assert_eq(chmod(rec, 0666), 0);
    cr_assert_eq(child(dir, 0), 10, "a world-writable record was believed");
    expect_refused_and_rewritten(dir, identity, "writable");
    free(rec);
    free(identity);
    jt_rmtree(dir);
    free(dir);
}

Test(toolchain_record, a_record_of_another_user_is_refused) {
    if (geteuid() != 0)
        cr_skip_test("needs root to give the record to another user");
    char *identity;
    char *dir = recorded_dir("tcowner", &identity);
    char *rec = path_in(dir, "toolchains.json");
    forge(dir, "[12, 7]", rec);
    cr_assert_eq(chown(rec, 65534, 65534), 0);
    cr_assert_eq(child(dir, 0), 10, "another user's record was believed");
    expect_refused_and_rewritten(dir, identity, "owned by uid 65534");
    free(rec);
    free(identity);
    jt_rmtree(dir);
    free(dir);
}

Test(toolchain_record, out_of_range_numbers_are_rejected) {
    /* Each would once have been taken as a version; 2147483647 overflowed the comparison of
     * versions (major * 100 + minor). */
    static const char *const bad[] = {
        "[2147483647, 99]", "[13, 2147483647]", "[-13, 0]", "[0, 5]",
        "[100, 0]",         "[13, 100]",        "[13]",     "[13, 5, 1]",
        "[\"13\", 5]",      "[13.0, 5]",        "\"13.5\"", "null",
    };
    char *identity;
    char *dir = recorded_dir("tcrange", &identity);
    char *rec = path_in(dir, "toolchains.json");
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        forge(dir, bad[i], rec);
        cr_assert_eq(child(dir, 0), 10, "nvrtc %s was believed", bad[i]);
        expect_refused_and_rewritten(dir, identity, "nvrtc");
    }
    free(rec);
    free(identity);
    jt_rmtree(dir);
    free(dir);
}

Test(toolchain_record, a_damaged_record_is_replaced_whole) {
    char *identity;
    char *dir = recorded_dir("tcdamage", &identity);
    char *rec = path_in(dir, "toolchains.json");
    size_t len = 0;
    char *good = jt_read_file(rec, &len);
    cr_assert(len > 10);
    static const char *const damage[] = {"truncated", "garbage"};
    for (int k = 0; k < 2; k++) {
        if (k == 0)
            good[len / 2] = '\0';
        cr_assert_eq(jt_write_file(rec, k == 0 ? good : "\x01\x02 not json {{{"), 0);
        /* Held open, the damaged file's inode cannot be reused by the rewrite, so comparing
         * inodes tells a rename from a rewrite in place. */
        int held = open(rec, O_RDONLY);
        cr_assert(held >= 0);
        cr_assert_eq(child(dir, 0), 10, "%s record: not identified afresh", damage[k]);
        struct stat old, now;
        cr_assert_eq(fstat(held, &old), 0);
        cr_assert_eq(stat(rec, &now), 0);
        cr_assert_neq(old.st_ino, now.st_ino, "%s record rewritten in place", damage[k]);
        cr_assert_eq(old.st_nlink, 0, "%s record still linked somewhere", damage[k]);
        close(held);
        expect_refused_and_rewritten(dir, identity, "toolchains.json");
        /* Nothing of the rewrite is left behind in tmp/. */
        char *tmp = path_in(dir, "tmp");
        DIR *d = opendir(tmp);
        cr_assert_not_null(d);
        struct dirent *de;
        while ((de = readdir(d)))
            cr_assert(de->d_name[0] == '.', "leftover temporary %s", de->d_name);
        closedir(d);
        free(tmp);
    }
    free(good);
    free(rec);
    free(identity);
    jt_rmtree(dir);
    free(dir);
}
