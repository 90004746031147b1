/*
 * Cache export and import: an archive carries entries with their manifest data and sources; an
 * import checks the whole archive (record and trailer hashes, sidecars, key hashes against key
 * texts, cubin checksums and ELF headers) before publishing anything, so a damaged, truncated or
 * forged archive leaves the target cache exactly as it was. The cubins are real ones, compiled
 * here for sm_120a and sm_90a (small FP8 kernels).
 */
#include <criterion/criterion.h>
#include <dirent.h>
#include <errno.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "archive.h"
#include "cache_private.h"
#include "jitgemm.h"
#include "support.h"
#include "test_cli_helpers.h"

#define XXH_INLINE_ALL
#include <xxhash.h>

static char *g_dir, g_src[1024], g_dst[1024], g_file[1024];

static void setup(void) {
    g_dir = jt_mkdtemp("archive");
    cr_assert_not_null(g_dir);
    snprintf(g_src, sizeof(g_src), "%s/build-host", g_dir);
    snprintf(g_dst, sizeof(g_dst), "%s/serving-host", g_dir);
    snprintf(g_file, sizeof(g_file), "%s/kernels.jitgemm", g_dir);
}

static void teardown(void) {
    jt_rmtree(g_dir);
    free(g_dir);
}

TestSuite(archive, .init = setup, .fini = teardown, .timeout = 600);

/* Compile one small kernel per arch into g_src; skip without NVRTC. */
static void fill_source_cache(void) {
    const char *archs[] = {"sm_120a", "sm_90a"};
    for (size_t i = 0; i < 2; i++) {
        jit_context_options_t o;
        jit_context_options_init(&o);
        o.cache_dir = g_src;
        o.arch = archs[i];
        o.log_level = JIT_LOG_ERROR;
        jit_context_t *ctx = NULL;
        cr_assert_eq(jit_context_create(&o, &ctx), JIT_OK, "%s", jit_last_error(NULL));
        jit_problem_t p;
        jit_problem_init(&p);
        p.m = 64;
        p.n = 256;
        p.k = 256;
        jit_status_t st = jit_prewarm(ctx, &p, 1, 1, NULL, NULL);
        if (st == JIT_TOOLCHAIN_NOT_FOUND)
            cr_skip("no NVRTC found; run scripts/setup.sh");
        cr_assert_eq(st, JIT_OK, "%s", jit_last_error(ctx));
        jit_context_destroy(ctx);
    }
}

static size_t entries_in(const char *dir) {
    char kernels[1200];
    snprintf(kernels, sizeof(kernels), "%s/kernels", dir);
    size_t n = 0;
    char cmd[1400];
    snprintf(cmd, sizeof(cmd), "ls %s 2>/dev/null | grep -c '\\.json$'", kernels);
    FILE *p = popen(cmd, "r");
    if (p) {
        if (fscanf(p, "%zu", &n) != 1)
            n = 0;
        pclose(p);
    }
    return n;
}

Test(archive, round_trip_through_the_cli) {
    fill_source_cache();
    cli_result_t r = CLI(g_src, NULL, "cache", "export", g_file);
    cr_assert_eq(r.rc, 0, "%s", r.err);
    cr_expect(strstr(r.out, "exported 2 entries"), "%s", r.out);
    cli_free(&r);

    r = CLI(g_dst, NULL, "cache", "import", g_file, "--json");
    cr_assert_eq(r.rc, 0, "%s", r.err);
    cr_expect(strstr(r.out, "{\"imported\": 2, \"present\": 0, \"other_format\": 0}"), "%s", r.out);
    cli_free(&r);
    cr_assert_eq(entries_in(g_dst), 2);
    r = CLI(g_dst, NULL, "cache", "verify");
    cr_assert_eq(r.rc, 0, "the imported cache verifies: %s %s", r.out, r.err);
    cli_free(&r);
    /* The same entries, sources included, as the build host's. */
    r = CLI(g_src, NULL, "cache", "list", "--json");
    cli_result_t r2 = CLI(g_dst, NULL, "cache", "list", "--json");
    for (char *line = r.out; line && *line;) {
        json_t *e = json_loads(line, JSON_DISABLE_EOF_CHECK, NULL);
        cr_assert_not_null(e);
        const char *hash = json_string_value(json_object_get(e, "hash"));
        cr_expect(strstr(r2.out, hash), "%s was not imported", hash);
        char a[1400], b[1400];
        snprintf(a, sizeof(a), "%s/kernels/%s.cu", g_src, hash);
        snprintf(b, sizeof(b), "%s/kernels/%s.cu", g_dst, hash);
        char *sa = jt_read_file(a, NULL), *sb = jt_read_file(b, NULL);
        cr_expect(sa && sb && !strcmp(sa, sb), "the source of %s differs", hash);
        free(sa);
        free(sb);
        json_decref(e);
        line = strchr(line, '\n');
        line = line ? line + 1 : NULL;
    }
    cli_free(&r);
    cli_free(&r2);
    /* A second import finds everything there. */
    r = CLI(g_dst, NULL, "cache", "import", g_file);
    cr_assert_eq(r.rc, 0, "%s", r.err);
    cr_expect(strstr(r.out, "imported 0 entries") && strstr(r.out, "2 already there"), "%s", r.out);
    cli_free(&r);
}

Test(archive, export_by_arch) {
    fill_source_cache();
    cli_result_t r = CLI(g_src, NULL, "cache", "export", g_file, "--arch", "90a", "--json");
    cr_assert_eq(r.rc, 0, "%s", r.err);
    cr_expect(strstr(r.out, "{\"exported\": 1, \"skipped\": 1}"), "%s", r.out);
    cli_free(&r);
    r = CLI(g_dst, NULL, "cache", "import", g_file);
    cr_assert_eq(r.rc, 0, "%s", r.err);
    cli_free(&r);
    r = CLI(g_dst, NULL, "cache", "list", "--json");
    cr_expect(strstr(r.out, "\"arch\":\"sm_90a\"") && !strstr(r.out, "sm_120a"), "%s", r.out);
    cli_free(&r);
    r = CLI(g_dst, NULL, "cache", "export", g_file, "--arch", "sm_99z");
    cr_expect_eq(r.rc, 2, "an unknown arch is a usage error");
    cli_free(&r);
    r = CLI(g_dst, NULL, "cache", "import");
    cr_expect(r.rc == 2 && strstr(r.err, "missing archive FILE"), "%s", r.err);
    cli_free(&r);
}

/* Import `bytes` (len) as an archive into g_dst; the failure message (malloc'd) or NULL. */
static char *import_bytes(const void *bytes, size_t len) {
    char path[1200];
    snprintf(path, sizeof(path), "%s/bad.jitgemm", g_dir);
    FILE *f = fopen(path, "wb");
    cr_assert_not_null(f);
    cr_assert_eq(fwrite(bytes, 1, len, f), len);
    fclose(f);
    cli_result_t r = CLI(g_dst, NULL, "cache", "import", path);
    char *err = r.rc == 0 ? NULL : strdup(r.err);
    if (r.rc != 0)
        cr_expect_eq(r.rc, 1, "%s", r.err);
    cli_free(&r);
    return err;
}

static char *exported(size_t *len) {
    fill_source_cache();
    cli_result_t r = CLI(g_src, NULL, "cache", "export", g_file);
    cr_assert_eq(r.rc, 0, "%s", r.err);
    cli_free(&r);
    char *buf = jt_read_file(g_file, len);
    cr_assert_not_null(buf);
    return buf;
}

Test(archive, a_damaged_or_truncated_archive_imports_nothing) {
    size_t len = 0;
    char *buf = exported(&len);
    /* Damage in the second record: the first one is whole, and still nothing is imported. */
    size_t first = strlen(JIT__ARCHIVE_MAGIC), ns = 0, nc = 0, nsrc = 0;
    int header = 0;
    cr_assert_eq(sscanf(buf + first, "entry %*32s %zu %zu %zu %*32s%n", &ns, &nc, &nsrc, &header),
                 3);
    size_t second = first + (size_t)header + 1 + ns + nc + nsrc;
    cr_assert_eq(strncmp(buf + second, "entry ", 6), 0);
    size_t at = second + 200;
    buf[at] ^= 0x20;
    char *err = import_bytes(buf, len);
    cr_assert_not_null(err, "a damaged archive was imported");
    cr_expect(strstr(err, "record 2") && strstr(err, "nothing was imported"), "%s", err);
    free(err);
    cr_assert_eq(entries_in(g_dst), 0);
    buf[at] ^= 0x20;

    for (size_t cut = 1; cut < len; cut = cut * 3 + 7) {
        err = import_bytes(buf, len - cut);
        cr_assert_not_null(err, "an archive cut by %zu bytes was imported", cut);
        cr_expect(strstr(err, "nothing was imported"), "%s", err);
        free(err);
        cr_assert_eq(entries_in(g_dst), 0);
    }
    err = import_bytes("not an archive\n", 15);
    cr_expect(err && strstr(err, "not a jitgemm cache archive"), "%s", err ? err : "(imported)");
    free(err);
    /* The whole archive still imports. */
    err = import_bytes(buf, len);
    cr_expect_null(err, "%s", err);
    cr_assert_eq(entries_in(g_dst), 2);
    free(buf);
}

/* An archive is checked before the cache is opened, so a refused import creates nothing: a
 * cache directory (and its parents) that did not exist before still do not, not even empty
 * kernels/, locks/ and tmp/ folders. */
Test(archive, a_refused_import_creates_no_cache_directory) {
    char parent[1200], dst[1300], bad[1200];
    snprintf(parent, sizeof(parent), "%s/new", g_dir);
    snprintf(dst, sizeof(dst), "%s/cache", parent);
    snprintf(bad, sizeof(bad), "%s/bad.jitgemm", g_dir);
    cr_assert_eq(jt_write_file(bad, "not an archive\n"), 0);
    struct stat st;
    cli_result_t r = CLI(dst, NULL, "cache", "import", bad);
    CLI_EXPECT(r, 1, "not a jitgemm cache archive");
    cli_free(&r);
    cr_expect_neq(stat(parent, &st), 0, "a refused import created %s", parent);
    r = CLI(dst, NULL, "cache", "import", "--shared", "no-such-archive.jitgemm");
    CLI_EXPECT(r, 1, "cannot open the archive");
    cli_free(&r);
    cr_expect_neq(stat(parent, &st), 0, "an import of a missing file created %s", parent);
}

/* An archive of one record, hashes recomputed, so only the entry checks can refuse it. */
static size_t forge(char *out, size_t cap, const char *hash, const char *sidecar, const void *cubin,
                    size_t nc) {
    char rh[33];
    XXH3_state_t *s = XXH3_createState();
    XXH3_128bits_reset(s);
    XXH3_128bits_update(s, sidecar, strlen(sidecar));
    XXH3_128bits_update(s, cubin, nc);
    XXH128_hash_t h = XXH3_128bits_digest(s);
    XXH3_freeState(s);
    snprintf(rh, sizeof(rh), "%016llx%016llx", (unsigned long long)h.high64,
             (unsigned long long)h.low64);
    size_t n = (size_t)snprintf(out, cap, "%sentry %s %zu %zu 0 %s\n", JIT__ARCHIVE_MAGIC, hash,
                                strlen(sidecar), nc, rh);
    memcpy(out + n, sidecar, strlen(sidecar));
    n += strlen(sidecar);
    memcpy(out + n, cubin, nc);
    n += nc;
    h = XXH3_128bits(out, n);
    n += (size_t)snprintf(out + n, cap - n, "end 1 %016llx%016llx\n", (unsigned long long)h.high64,
                          (unsigned long long)h.low64);
    return n;
}

Test(archive, forged_entries_are_refused) {
    fill_source_cache();
    jit__cache_t *c = NULL;
    cr_assert_eq(jit__cache_open(g_src, 0, JIT_LOG_ERROR, &c, NULL), JIT_OK);
    jit__cache_entry_t *list = NULL;
    size_t n = 0;
    cr_assert_eq(jit__cache_list(c, &list, &n, NULL), JIT_OK);
    cr_assert_geq(n, 1);
    jit__cache_entry_t e;
    void *cubin = NULL;
    size_t nc = 0;
    int found = 0;
    cr_assert_eq(jit__cache_get(c, list[0].hash, &e, &cubin, &nc, &found, NULL), JIT_OK);
    cr_assert(found);
    size_t cap = nc + (1 << 16);
    char *buf = malloc(cap);
    char *err;

    /* The untouched entry goes through, so each refusal below is the forgery's doing. */
    char *json = jit__cache_entry_to_json(&e);
    err = import_bytes(buf, forge(buf, cap, e.hash, json, cubin, nc));
    cr_assert_null(err, "%s", err);
    free(json);
    jt_rmtree(g_dst);

    /* A key text that is not the one its hash names. */
    jit__cache_entry_t f = e;
    f.key_text[strlen(f.key_text) - 1] ^= 1;
    json = jit__cache_entry_to_json(&f);
    err = import_bytes(buf, forge(buf, cap, f.hash, json, cubin, nc));
    cr_expect(err && strstr(err, "key text hashes to") && strstr(err, e.hash), "%s",
              err ? err : "(imported)");
    free(err);
    free(json);

    /* A cubin that is not what its sidecar's checksum says. */
    ((unsigned char *)cubin)[nc / 2] ^= 1;
    json = jit__cache_entry_to_json(&e);
    err = import_bytes(buf, forge(buf, cap, e.hash, json, cubin, nc));
    cr_expect(err && strstr(err, "checksum"), "%s", err ? err : "(imported)");
    free(err);
    free(json);

    /* Bytes that are no cubin, with a sidecar that vouches for them. */
    memset(cubin, 0x42, nc);
    jit__hash_hex(cubin, nc, f.checksum);
    f = e;
    jit__hash_hex(cubin, nc, f.checksum);
    json = jit__cache_entry_to_json(&f);
    err = import_bytes(buf, forge(buf, cap, f.hash, json, cubin, nc));
    cr_expect(err && strstr(err, "not an NVIDIA ELF cubin"), "%s", err ? err : "(imported)");
    free(err);
    free(json);

    /* A sidecar that is not one. */
    err = import_bytes(buf, forge(buf, cap, e.hash, "{\"hash\": 1}", cubin, nc));
    cr_expect(err && strstr(err, "sidecar does not parse"), "%s", err ? err : "(imported)");
    free(err);
    cr_assert_eq(entries_in(g_dst), 0, "a forged entry was published");

    free(buf);
    free(cubin);
    free(list);
    jit__cache_close(c);
}

/* ---- where export may write ------------------------------------------------------------------
 * Export writes only a new regular file, or replaces a regular file the caller owns, through a
 * temporary beside it. Whatever else is at FILE (a link, a FIFO, a device, a directory, another
 * user's file) is refused before anything is created: the parent directory's modification time
 * proves that not even a temporary was made there. The targets live in out/, a directory of
 * their own, so nothing else touches that time. */

static char g_out[1100];

static void make_out_dir(mode_t mode) {
    snprintf(g_out, sizeof(g_out), "%s/out", g_dir);
    cr_assert_eq(mkdir(g_out, 0700), 0);
    cr_assert_eq(chmod(g_out, mode), 0);
}

static const char *out_path(const char *name) {
    static char path[1200];
    snprintf(path, sizeof(path), "%s/%s", g_out, name);
    return path;
}

static void expect_export_refused(const char *name, const char *why) {
    char path[1200];
    snprintf(path, sizeof(path), "%s", out_path(name));
    struct stat before, after, dir_before, dir_after;
    cr_assert_eq(lstat(path, &before), 0);
    cr_assert_eq(stat(g_out, &dir_before), 0);
    cli_result_t r = CLI(g_src, NULL, "cache", "export", path);
    cr_expect_eq(r.rc, 1, "export to %s: exit %d: %s", name, r.rc, r.err);
    cr_expect(strstr(r.err, path) && strstr(r.err, why), "want '%s' in: %s", why, r.err);
    cli_free(&r);
    cr_assert_eq(lstat(path, &after), 0, "%s is gone", name);
    cr_expect((after.st_mode & S_IFMT) == (before.st_mode & S_IFMT) &&
                  after.st_ino == before.st_ino && after.st_rdev == before.st_rdev,
              "%s was replaced", name);
    cr_assert_eq(stat(g_out, &dir_after), 0);
    cr_expect(dir_after.st_mtim.tv_sec == dir_before.st_mtim.tv_sec &&
                  dir_after.st_mtim.tv_nsec == dir_before.st_mtim.tv_nsec,
              "export to %s created or removed something in its directory", name);
}

Test(archive, export_refuses_a_fifo) {
    make_out_dir(0700);
    cr_assert_eq(mkfifo(out_path("fifo"), 0600), 0);
    expect_export_refused("fifo", "a FIFO");
}

Test(archive, export_refuses_a_symbolic_link) {
    make_out_dir(0700);
    char victim[1200];
    snprintf(victim, sizeof(victim), "%s/victim", g_dir);
    cr_assert_eq(jt_write_file(victim, "precious\n"), 0);
    cr_assert_eq(symlink(victim, out_path("link")), 0);
    cr_assert_eq(symlink("/proc/self/fd/1", out_path("stdout")), 0);
    expect_export_refused("link", "a symbolic link");
    expect_export_refused("stdout", "a symbolic link");
    char *v = jt_read_file(victim, NULL);
    cr_expect_str_eq(v, "precious\n", "export wrote through a link");
    free(v);
}

/* A device node of the test's own (the same numbers as /dev/null), so that a failure of this
 * test replaces nothing the host needs. */
Test(archive, export_refuses_a_device) {
    make_out_dir(0700);
    if (mknod(out_path("null"), S_IFCHR | 0600, makedev(1, 3)) != 0)
        cr_skip_test("cannot make a device node here (%s); needs root", strerror(errno));
    expect_export_refused("null", "a device");
}

Test(archive, export_refuses_a_directory) {
    make_out_dir(0700);
    cr_assert_eq(mkdir(out_path("dir"), 0700), 0);
    expect_export_refused("dir", "a directory");
}

Test(archive, export_refuses_another_users_file) {
    if (geteuid() != 0)
        cr_skip_test("needs root to give a file to another user");
    make_out_dir(0700);
    cr_assert_eq(jt_write_file(out_path("theirs"), "theirs\n"), 0);
    cr_assert_eq(chown(out_path("theirs"), 12345, 12345), 0);
    expect_export_refused("theirs", "owned by uid 12345");
    char *v = jt_read_file(out_path("theirs"), NULL);
    cr_expect_str_eq(v, "theirs\n");
    free(v);
}

/* Where another user can rename or remove names, the check of FILE proves nothing by the time
 * of the rename. A sticky directory (/tmp) forbids exactly that, so it is used. */
Test(archive, export_checks_the_directory_like_the_cache_does) {
    make_out_dir(0777);
    cli_result_t r = CLI(g_src, NULL, "cache", "export", out_path("a.jitgemm"));
    cr_expect_eq(r.rc, 1, "exit %d: %s", r.rc, r.err);
    cr_expect(strstr(r.err, g_out) && strstr(r.err, "writable by others"), "%s", r.err);
    cli_free(&r);
    cr_expect_eq(access(out_path("a.jitgemm"), F_OK), -1, "written in an open directory");
    cr_assert_eq(chmod(g_out, 01777), 0);
    r = CLI(g_src, NULL, "cache", "export", out_path("a.jitgemm"));
    cr_expect_eq(r.rc, 0, "a sticky directory is refused: %s", r.err);
    cli_free(&r);
}

/* An own regular file is replaced by rename: a second link to the old file keeps the old bytes
 * (no write went into it), the name holds the whole archive, and no temporary is left. */
Test(archive, export_replaces_an_own_file_atomically) {
    make_out_dir(0700);
    cr_assert_eq(jt_write_file(out_path("k.jitgemm"), "old archive\n"), 0);
    char name[1200];
    snprintf(name, sizeof(name), "%s", out_path("k.jitgemm"));
    cr_assert_eq(link(name, out_path("old-link")), 0);
    cli_result_t r = CLI(g_src, NULL, "cache", "export", out_path("k.jitgemm"));
    cr_assert_eq(r.rc, 0, "%s", r.err);
    cli_free(&r);
    char *old = jt_read_file(out_path("old-link"), NULL);
    cr_expect_str_eq(old, "old archive\n", "the old file was written in place");
    free(old);
    char *now = jt_read_file(out_path("k.jitgemm"), NULL);
    cr_assert_not_null(now);
    cr_expect_eq(strncmp(now, JIT__ARCHIVE_MAGIC, strlen(JIT__ARCHIVE_MAGIC)), 0, "%s", now);
    cr_expect(strstr(now, "\nend 0 "), "not a whole archive: %s", now);
    free(now);
    DIR *d = opendir(g_out);
    cr_assert_not_null(d);
    int files = 0;
    for (struct dirent *de; (de = readdir(d));)
        files += strcmp(de->d_name, ".") && strcmp(de->d_name, "..");
    closedir(d);
    cr_expect_eq(files, 2, "a temporary was left beside the archive");
    /* A new file in a directory of one's own. */
    r = CLI(g_src, NULL, "cache", "export", out_path("new.jitgemm"));
    cr_expect_eq(r.rc, 0, "%s", r.err);
    cli_free(&r);
    struct stat st;
    cr_expect(lstat(out_path("new.jitgemm"), &st) == 0 && S_ISREG(st.st_mode));
}

/* A name that came from a file is printed with its control bytes escaped: an archive is made by
 * someone else, and a kernel name holding a terminal escape sequence would otherwise rewrite
 * the screen (or the title, or the clipboard) of whoever lists the cache. */
Test(archive, cache_list_escapes_an_imported_name) {
    fill_source_cache();
    jit__cache_t *c = NULL;
    cr_assert_eq(jit__cache_open(g_src, 0, JIT_LOG_ERROR, &c, NULL), JIT_OK);
    jit__cache_entry_t *list = NULL;
    size_t n = 0;
    cr_assert_eq(jit__cache_list(c, &list, &n, NULL), JIT_OK);
    cr_assert_geq(n, 1);
    jit__cache_entry_t e;
    void *cubin = NULL;
    size_t nc = 0;
    int found = 0;
    cr_assert_eq(jit__cache_get(c, list[0].hash, &e, &cubin, &nc, &found, NULL), JIT_OK);
    cr_assert(found);
    snprintf(e.kernel_name, sizeof(e.kernel_name), "k\033]0;owned\007\033[2J\302\233x\\");
    char *json = jit__cache_entry_to_json(&e);
    size_t cap = nc + (1 << 16);
    char *buf = malloc(cap);
    char *err = import_bytes(buf, forge(buf, cap, e.hash, json, cubin, nc));
    cr_assert_null(err, "%s", err);

    cli_result_t r = CLI(g_dst, NULL, "cache", "list");
    cr_assert_eq(r.rc, 0, "%s", r.err);
    cr_expect_null(strchr(r.out, '\033'), "an escape sequence was printed raw: %s", r.out);
    cr_expect_null(strchr(r.out, '\007'), "a control byte was printed raw");
    cr_expect_null(strstr(r.out, "\302\233"), "a C1 control (CSI) was printed raw");
    cr_expect(strstr(r.out, "k\\x1b]0;owned\\x07\\x1b[2J\\xc2\\x9bx\\\\"), "%s", r.out);
    cli_free(&r);
    /* JSON escapes it by itself. */
    r = CLI(g_dst, NULL, "cache", "list", "--json");
    cr_assert_eq(r.rc, 0, "%s", r.err);
    cr_expect_null(strchr(r.out, '\033'), "%s", r.out);
    cli_free(&r);
    free(buf);
    free(json);
    free(cubin);
    free(list);
    jit__cache_close(c);
}
