/*
 * A kernel directory: what `jitgemm inspect ... --out DIR` writes and `jitgemm rebuild DIR`
 * reads. kernel.cu, every device header it includes at the path its #include line names, and
 * build-options.txt (the target, the kernel's name, the toolchain and the exact NVRTC and
 * nvJitLink options), so a user can read, edit and recompile the very unit NVRTC compiled.
 *
 * out_dir.c opens and writes such a directory safely; unit_files.c follows a unit's #include
 * lines (the headers to write, the headers to read back, the unit with its headers inlined);
 * build_options.c writes and reads build-options.txt.
 */
#ifndef JIT_CLI_KERNEL_DIR_H
#define JIT_CLI_KERNEL_DIR_H

#include <stddef.h>

#include "device_files.h"
#include "key.h"

#define JIT__CLI_BUILD_OPTIONS "build-options.txt"

/* ---- out_dir.c ---- */

/* Open DIR (created, mode 0755 less the umask, when `create`) without following a link at it,
 * and refuse it unless it is a directory the caller owns that nobody else can write. `flag`
 * names the option in the message ("--out", "rebuild"). 0 and *dfd, or JIT_CLI_FAILED after
 * printing why. */
int jit__cli_out_open(const char *flag, const char *dir, int create, int *dfd);
/* 1 if `rel` is a relative path of plain names ("device/common.cuh"): no leading or trailing
 * slash, no empty, "." or ".." component. */
int jit__cli_out_path_ok(const char *rel);
/* Write DIR/rel through a temporary renamed over it; each folder of `rel` is created and vetted
 * as DIR is. Prints "wrote DIR/rel". 0, or JIT_CLI_FAILED after printing why. */
int jit__cli_out_write(int dfd, const char *dir, const char *rel, const void *data, size_t len);
/* Read DIR/rel (a regular file, reached without following links; NUL-terminated). 0, or
 * JIT_CLI_FAILED after printing why. */
int jit__cli_out_read(int dfd, const char *dir, const char *rel, char **text, size_t *len);

/* ---- unit_files.c ---- */

/* The header of include name `name`, or NULL when there is none (the resolver may print why). */
typedef const jit__device_file_t *(*jit__cli_resolve_fn)(const char *name, void *user);

/* The headers `source` includes with #include "NAME", directly or through other headers, each
 * once, in the order the preprocessor first meets them, into out[0..*n) (room for `max`). An
 * include the resolver cannot give is skipped when `strict` is 0; with `strict` 1 it fails,
 * printing which file includes it. 0 or JIT_CLI_FAILED. */
int jit__cli_unit_headers(const char *source, jit__cli_resolve_fn resolve, void *user, int strict,
                          const jit__device_file_t **out, size_t max, size_t *n);
/* `source` with each #include "NAME" the resolver knows replaced by the header's text, itself
 * inlined, between marker comments; a header met again becomes a one-line comment. malloc'd,
 * or NULL when out of memory. */
char *jit__cli_unit_inline(const char *source, jit__cli_resolve_fn resolve, void *user);
/* The embedded device file of that name: the resolver for what the library compiles. */
const jit__device_file_t *jit__cli_embedded_header(const char *name, void *user);

/* ---- build_options.c ---- */

typedef struct jit__cli_build_options {
    char target[16];   /* "sm_90a", "sm_100f", ... */
    char kernel[64];   /* the entry point, also NVRTC's program name (kernel.cu -> NAME.cu) */
    int has_toolchain; /* toolchain below is known */
    jit__toolchain_id_t toolchain;
} jit__cli_build_options_t;

/* The text of build-options.txt; `toolchain_note` says whose toolchain it is. malloc'd. */
char *jit__cli_build_options_format(const jit__cli_build_options_t *b, const char *toolchain_note);
/* Parse build-options.txt and check that its option lines are the ones this library passes for
 * its target (rebuild compiles through the library's own calls, so an edited option line would
 * not be what it seems). 0, or -1 and the reason. */
int jit__cli_build_options_parse(const char *text, jit__cli_build_options_t *b, char *why,
                                 size_t whysz);

#endif
