/*
 * `jitgemm rebuild DIR`: compile the unit `inspect --out DIR` wrote, as the library compiles a
 * kernel, with DIR as the include root. kernel.cu and every header it includes are read from DIR
 * (through the same vetted descriptors --out writes with) and handed to jit__compile_with_headers
 * in place of the embedded device files, with the target and entry point build-options.txt
 * names; the options themselves are the library's (build_options.c checks the file states
 * them). So a person can edit any of the sources and see the cubin the library would have
 * built from them; an unedited DIR gives the cached kernel's SASS again.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "compile.h"
#include "kernel_dir.h"
#include "toolchain.h"

const char jit__cli_rebuild_help[] =
    "Usage: jitgemm rebuild DIR [--toolkit-dir T]\n"
    "\n"
    "Compile DIR/kernel.cu again as the library compiles a kernel, with the headers under DIR\n"
    "in place of the ones embedded in the library, and write DIR/kernel.cubin. DIR is what\n"
    "'jitgemm inspect ... --out DIR' wrote: kernel.cu, every device header it includes (at\n"
    "the path its #include names) and build-options.txt (target, kernel name, toolchain, the\n"
    "exact NVRTC and nvJitLink options). Edit kernel.cu or a header, rebuild, and read the\n"
    "result with nvdisasm -c DIR/kernel.cubin. Needs NVRTC and nvJitLink, not a GPU; the\n"
    "cache is neither read nor written.\n"
    "\n"
    "Options:\n"
    "  --toolkit-dir T  the NVRTC/nvJitLink directory to use (default $JITGEMM_TOOLKIT_DIR,\n"
    "                   else the one the library picks). Another toolchain than the one\n"
    "                   build-options.txt names is used with a warning: its cubin may differ\n"
    "\n"
    "DIR, and every folder under it, must be a directory you own that nobody else can write,\n"
    "not a symbolic link; files are read without following links.\n"
    "\n"
    "Exit status: 0 success, 1 a file or the compile failed, 2 bad command line.\n";

/* The headers read from DIR so far, by include name. */
typedef struct dir_headers {
    int dfd;
    const char *dir;
    jit__device_file_t files[JIT_MAX_DEVICE_FILES];
    size_t n;
} dir_headers_t;

static const jit__device_file_t *read_header(const char *name, void *user) {
    dir_headers_t *h = user;
    for (size_t i = 0; i < h->n; i++)
        if (!strcmp(h->files[i].name, name))
            return &h->files[i];
    char *text = NULL, *copy = NULL;
    size_t len = 0;
    if (h->n == JIT_MAX_DEVICE_FILES || jit__cli_out_read(h->dfd, h->dir, name, &text, &len) ||
        !(copy = strdup(name))) {
        free(text);
        return NULL;
    }
    h->files[h->n] = (jit__device_file_t){copy, text, len};
    return &h->files[h->n++];
}

static void free_headers(dir_headers_t *h) {
    for (size_t i = 0; i < h->n; i++) {
        free((char *)h->files[i].name);
        free((char *)h->files[i].text);
    }
    h->n = 0;
}

/* The toolchain to compile with; a warning when it is not the one build-options.txt names. */
static const jit__toolchain_t *pick_toolchain(const char *toolkit_dir,
                                              const jit__cli_build_options_t *b) {
    const jit__toolchain_t *tc = NULL;
    jit__diag_t d;
    jit__diag_init(&d);
    if (jit__toolchain_get(toolkit_dir, &tc, &d) != JIT_OK) {
        jit__cli_error("rebuild: %s", d.msg);
        jit__diag_clear(&d);
        return NULL;
    }
    const jit__toolchain_id_t *want = &b->toolchain;
    if (b->has_toolchain && memcmp(want, &tc->id, sizeof(*want)) != 0)
        fprintf(stderr,
                "jitgemm: warning: %s names NVRTC %d.%d and nvJitLink %d.%d; this rebuild uses "
                "NVRTC %d.%d and nvJitLink %d.%d (%s), so its cubin may differ\n",
                JIT__CLI_BUILD_OPTIONS, want->nvrtc_major, want->nvrtc_minor, want->nvjitlink_major,
                want->nvjitlink_minor, tc->id.nvrtc_major, tc->id.nvrtc_minor,
                tc->id.nvjitlink_major, tc->id.nvjitlink_minor,
                tc->dir[0] ? tc->dir : "loader default path");
    return tc;
}

/* Compile the source with the headers, then write DIR/kernel.cubin. */
static int compile_and_write(const jit__toolchain_t *tc, const jit__cli_build_options_t *b,
                             const char *source, const jit__device_file_t *const *list, size_t n,
                             int dfd, const char *dir) {
    jit__device_file_t files[JIT_MAX_DEVICE_FILES];
    for (size_t i = 0; i < n; i++)
        files[i] = *list[i];
    jit__compiled_t c;
    jit__diag_t d;
    jit__diag_init(&d);
    jit_status_t st = jit__compile_with_headers(tc, source, b->kernel, b->target,
                                                JIT__COMPILE_CUBIN, files, n, &c, &d);
    int rc = 0;
    if (st != JIT_OK) {
        if (d.log && *d.log)
            fputs(d.log, stderr);
        jit__cli_error("rebuild %s: %s", dir, d.msg);
        rc = JIT_CLI_FAILED;
    } else {
        rc = jit__cli_out_write(dfd, dir, "kernel.cubin", c.cubin, c.cubin_size);
    }
    if (!rc)
        printf("rebuilt %s for %s with NVRTC %d.%d and nvJitLink %d.%d from kernel.cu and %zu "
               "header%s: %d registers, %zu bytes, %.2f s\n",
               b->kernel, b->target, tc->id.nvrtc_major, tc->id.nvrtc_minor, tc->id.nvjitlink_major,
               tc->id.nvjitlink_minor, n, n == 1 ? "" : "s", c.registers, c.cubin_size, c.seconds);
    jit__compiled_free(&c);
    jit__diag_clear(&d);
    return rc;
}

int jit__cli_rebuild(int argc, char **argv) {
    const char *verb = "rebuild", *toolkit_dir = NULL, *pos[1] = {NULL};
    const jit__cli_opt_t opts[] = {{"toolkit-dir", "T", &toolkit_dir, NULL}};
    size_t n_pos = 0;
    int rc = jit__cli_parse(verb, argc, argv, opts, 1, pos, 1, &n_pos);
    if (rc)
        return rc;
    if (n_pos != 1)
        return jit__cli_usage(verb, "missing DIR: jitgemm rebuild DIR");
    const char *dir = pos[0];
    dir_headers_t h = {.dfd = -1, .dir = dir};
    char *options = NULL, *source = NULL, why[512];
    size_t len = 0, n = 0;
    jit__cli_build_options_t b;
    const jit__device_file_t *list[JIT_MAX_DEVICE_FILES];
    if ((rc = jit__cli_out_open(verb, dir, 0, &h.dfd)) ||
        (rc = jit__cli_out_read(h.dfd, dir, JIT__CLI_BUILD_OPTIONS, &options, &len)))
        goto done;
    if (jit__cli_build_options_parse(options, &b, why, sizeof(why)) != 0) {
        jit__cli_error("rebuild: %s/%s: %s", dir, JIT__CLI_BUILD_OPTIONS, why);
        rc = JIT_CLI_FAILED;
        goto done;
    }
    if ((rc = jit__cli_out_read(h.dfd, dir, "kernel.cu", &source, &len)) ||
        (rc = jit__cli_unit_headers(source, read_header, &h, 1, list, JIT_MAX_DEVICE_FILES, &n)))
        goto done;
    const jit__toolchain_t *tc = pick_toolchain(toolkit_dir, &b);
    rc = tc ? compile_and_write(tc, &b, source, list, n, h.dfd, dir) : JIT_CLI_FAILED;
done:
    free(options);
    free(source);
    free_headers(&h);
    if (h.dfd >= 0)
        close(h.dfd);
    return rc;
}
