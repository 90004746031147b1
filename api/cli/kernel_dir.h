/*
 * A kernel directory: what `jitgemm inspect ... --out DIR` writes. out_dir.c opens and writes
 * such a directory safely.
 */
#ifndef JIT_CLI_KERNEL_DIR_H
#define JIT_CLI_KERNEL_DIR_H

#include <stddef.h>

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
#endif
