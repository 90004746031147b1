/*
 * Layered caches: JITGEMM_CACHE_DIR / --cache-dir may list several directories, colon-separated;
 * the first is the writable user cache, the rest read-only layers searched after it. A layer is
 * used only when root or this user owns it and nobody else can write it, its entries are checked
 * like any other, and nothing is ever written, removed or touched in it.
 */
#include <errno.h>
#include <ftw.h>
#include <sys/wait.h>

#include "cache_private.h"
#include "test_cache_fixture.h"

TestSuite(cache_layers, .fini = tc_cleanup);

/* Everything that could change under `dir`: each path with its mode, size and mtime. */
static char g_snap[1 << 16];
static size_t g_snap_len;
static int snap_one(const char *path, const struct stat *st, int type, struct FTW *f) {
    (void)type;
    (void)f;
    g_snap_len += (size_t)snprintf(g_snap + g_snap_len, sizeof(g_snap) - g_snap_len,
                                   "%s %o %lld %lld.%09ld\n", path, (unsigned)st->st_mode,
                                   (long long)st->st_size, (long long)st->st_mtim.tv_sec,
                                   st->st_mtim.tv_nsec);
    return g_snap_len >= sizeof(g_snap) - 1;
}
static char *snapshot(const char *dir) {
    g_snap_len = 0;
    g_snap[0] = '\0';
    cr_assert_eq(nftw(dir, snap_one, 16, FTW_PHYS), 0);
    return strdup(g_snap);
}

static char *list_of(const char *a, const char *b) {
    size_t n = strlen(a) + strlen(b) + 2;
    char *s = malloc(n);
    snprintf(s, n, "%s:%s", a, b);
    return s;
}

/* A layer holding entries 1 and 2, made as an image build would: a cache filled, then closed. */
static char *make_layer(void) {
    char *layer = tc_mkdtemp("layer");
    jit__cache_t *c = tc_open(layer, 0);
    tc_put(c, 1, 4000, NULL);
    tc_put(c, 2, 5000, NULL);
    jit__cache_close(c);
    return layer;
}

Test(cache_layers, the_first_directory_is_the_writable_one) {
    static char out[4096];
    setenv("HOME", "/home/someone", 1);
    unsetenv("XDG_CACHE_HOME");
    cr_assert_eq(jit__cache_resolve_dir("/mine:/opt/image", out, sizeof(out), NULL), JIT_OK);
    cr_assert_str_eq(out, "/mine");
    setenv("JITGEMM_CACHE_DIR", "/env/mine/:/opt/a:/opt/b", 1);
    cr_assert_eq(jit__cache_resolve_dir(NULL, out, sizeof(out), NULL), JIT_OK);
    cr_assert_str_eq(out, "/env/mine");
    /* An empty first element keeps the default location and adds the layers. */
    cr_assert_eq(jit__cache_resolve_dir(":/opt/image", out, sizeof(out), NULL), JIT_OK);
    cr_assert_str_eq(out, "/home/someone/.cache/jitgemm");
    unsetenv("JITGEMM_CACHE_DIR");
}

Test(cache_layers, entries_are_found_in_a_layer_and_it_is_never_touched) {
    char *layer = make_layer();
    char *mine = tc_mkdtemp("mine");
    char *before = snapshot(layer);
    char *list = list_of(mine, layer);
    jit__cache_t *c = tc_open(list, 0);
    cr_assert(jit__cache_writable(c));
    cr_assert_eq(jit__cache_layer_count(c), 1);
    cr_assert_str_eq(jit__cache_layer_dir(c, 0), layer);
    cr_assert(tc_hit(c, 1, 4000), "entry 1 is served from the layer");
    cr_assert(tc_hit(c, 2, 5000));
    char *src = NULL;
    cr_assert_eq(jit__cache_read_file(c, tc_hash(1), ".cu", &src, NULL), JIT_OK);
    cr_assert(strstr(src, "test kernel 1"), "%s", src);
    free(src);
    /* New entries go to the user's cache; gc and clear there leave the layer alone. */
    tc_put(c, 3, 3000, NULL);
    cr_assert(tc_exists(tc_path(mine, tc_hash(3), ".cubin")));
    cr_assert_not(tc_exists(tc_path(layer, tc_hash(3), ".cubin")));
    size_t removed = 0;
    /* Rules that drop every entry of the user's cache must still touch nothing in a layer. */
    const jit__cache_gc_rules_t drop_all = {NULL, 0, 99, "none"};
    cr_assert_eq(jit__cache_gc(c, &drop_all, NULL, NULL), JIT_OK);
    cr_assert_eq(jit__cache_clear(c, &removed, NULL), JIT_OK);
    cr_assert(tc_hit(c, 1, 4000), "still served from the layer after gc and clear");
    jit__cache_close(c);
    char *after = snapshot(layer);
    cr_assert_str_eq(after, before, "the layer was modified");
    free(before);
    free(after);
    free(list);
    free(layer);
    free(mine);
}

Test(cache_layers, a_damaged_layer_entry_is_refused_and_left_in_place) {
    char *layer = make_layer();
    char *mine = tc_mkdtemp("mine");
    const char *cubin = tc_path(layer, tc_hash(1), ".cubin");
    FILE *f = fopen(cubin, "r+b");
    cr_assert_not_null(f);
    fseek(f, 100, SEEK_SET);
    fputc(0x5a ^ fgetc(f), f);
    fclose(f);
    char *before = snapshot(layer);
    char *list = list_of(mine, layer);
    jit__cache_t *c = tc_open(list, 0);
    tc_capture_t cap;
    tc_capture_begin(&cap);
    int hit = tc_hit(c, 1, 4000);
    char *err = tc_capture_end(&cap);
    cr_assert_not(hit, "a damaged cubin from a layer was served");
    cr_assert(strstr(err, layer) && strstr(err, "damaged"), "%s", err);
    cr_assert(tc_hit(c, 2, 5000), "the layer's other entries are still served");
    jit__cache_close(c);
    char *after = snapshot(layer);
    cr_assert_str_eq(after, before, "the damaged entry was touched");
    free(before);
    free(after);
    free(err);
    free(list);
    free(layer);
    free(mine);
}

/* What opening `list` warns about, and how many layers it kept. */
static char *open_warnings(const char *list, size_t *layers) {
    tc_capture_t cap;
    tc_capture_begin(&cap);
    jit__cache_t *c = tc_open(list, 0);
    char *err = tc_capture_end(&cap);
    *layers = jit__cache_layer_count(c);
    cr_assert(tc_hit(c, 1, 4000) == (*layers > 0));
    jit__cache_close(c);
    return err;
}

Test(cache_layers, an_untrusted_layer_is_skipped_with_a_reason) {
    char *layer = make_layer();
    char *mine = tc_mkdtemp("mine");
    char *list = list_of(mine, layer);
    size_t layers = 0;

    cr_assert_eq(chmod(layer, 0775), 0);
    char *err = open_warnings(list, &layers);
    cr_assert_eq(layers, 0);
    cr_assert(strstr(err, layer) && strstr(err, "skipped") && strstr(err, "writable by its group"),
              "%s", err);
    free(err);
    cr_assert_eq(chmod(layer, 0755), 0);

    char kernels[4200];
    snprintf(kernels, sizeof(kernels), "%s/kernels", layer);
    cr_assert_eq(chmod(kernels, 0777), 0);
    err = open_warnings(list, &layers);
    cr_assert_eq(layers, 0);
    cr_assert(strstr(err, layer) && strstr(err, "kernels/ is writable by others"), "%s", err);
    free(err);
    cr_assert_eq(chmod(kernels, 0700), 0);

    if (geteuid() == 0) {
        /* Another user's layer: only root can make one here. */
        cr_assert_eq(chown(layer, 4321, 4321), 0);
        err = open_warnings(list, &layers);
        cr_assert_eq(layers, 0);
        cr_assert(strstr(err, layer) && strstr(err, "owned by uid 4321"), "%s", err);
        free(err);
        cr_assert_eq(chown(layer, 0, 0), 0);
    }

    char missing[4200];
    snprintf(missing, sizeof(missing), "%s/none", layer);
    free(list);
    list = list_of(mine, missing);
    err = open_warnings(list, &layers);
    cr_assert_eq(layers, 0);
    cr_assert(strstr(err, missing) && strstr(err, "cannot be opened"), "%s", err);
    cr_assert_not(tc_exists(missing), "a layer is never created");
    free(err);
    free(list);
    free(layer);
    free(mine);
}

static int make_readable(const char *path, const struct stat *st, int type, struct FTW *f) {
    (void)f;
    (void)st;
    return chmod(path, type == FTW_D ? 0755 : 0644);
}

/* An image's cache: root made it, mode 0755 with 0644 files. A user other than root must be
 * served from it as a layer (and, as the only directory, as a read-only cache). */
Test(cache_layers, a_root_owned_image_cache_serves_another_user) {
    if (geteuid() != 0)
        cr_skip("needs root to make a root-owned cache and a user to read it");
    char *layer = make_layer();
    char *root = tc_mkdtemp("user-home");
    cr_assert_eq(nftw(layer, make_readable, 16, FTW_PHYS), 0);
    cr_assert_eq(chmod(root, 0755), 0);
    char mine[4200];
    snprintf(mine, sizeof(mine), "%s/mine", root);
    cr_assert_eq(mkdir(mine, 0700), 0);
    cr_assert_eq(chown(mine, 65534, 65534), 0);
    char *list = list_of(mine, layer);
    char *before = snapshot(layer);
    pid_t pid = fork();
    if (pid == 0) {
        if (setgid(65534) != 0 || setuid(65534) != 0)
            _exit(20);
        jit__cache_t *c = NULL;
        if (jit__cache_open(list, 0, JIT_LOG_WARN, &c, NULL) != JIT_OK)
            _exit(21);
        int code = jit__cache_layer_count(c) != 1 ? 22 : !tc_hit(c, 2, 5000) ? 23 : 0;
        jit__cache_close(c);
        if (code)
            _exit(code);
        /* The image cache alone: read-only, still served. */
        if (jit__cache_open(layer, 0, JIT_LOG_WARN, &c, NULL) != JIT_OK)
            _exit(24);
        code = jit__cache_writable(c) ? 25 : !tc_hit(c, 1, 4000) ? 26 : 0;
        jit__cache_close(c);
        _exit(code);
    }
    int status = 0;
    cr_assert_eq(waitpid(pid, &status, 0), pid);
    cr_assert(WIFEXITED(status), "the child died");
    cr_assert_eq(WEXITSTATUS(status), 0, "child failed at step %d", WEXITSTATUS(status));
    char *after = snapshot(layer);
    cr_assert_str_eq(after, before, "the layer was modified");
    free(before);
    free(after);
    free(list);
    free(layer);
    free(root);
}
