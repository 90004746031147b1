/*
 * Shared test helpers: scratch directories, running the CLI, and the GPU gate that makes GPU
 * tests skip with a clear message on machines without one.
 */
#ifndef JIT_TEST_SUPPORT_H
#define JIT_TEST_SUPPORT_H

#include <stddef.h>
#include <stdint.h>

/* A fresh empty directory under $TMPDIR (or /tmp); returns a malloc'd path. */
char *jt_mkdtemp(const char *tag);
/* rm -rf `path` (restoring write permission first). */
void jt_rmtree(const char *path);
/* Write `text` to `path`; returns 0 on success. */
int jt_write_file(const char *path, const char *text);
/* Read a whole file (NUL-terminated, malloc'd), NULL on failure; *size if not NULL. */
char *jt_read_file(const char *path, size_t *size);

/* Run `argv` (argv[0] a path), with extra environment `env` (NULL-terminated "K=V" list, may be
 * NULL) and optional stdin text; capture stdout and stderr (malloc'd). Returns the exit status,
 * or -1 if it could not run or was killed by a signal. */
int jt_run(const char *const *argv, const char *const *env, const char *stdin_text, char **out,
           char **err);

/* 1 if a CUDA driver and a device are present. If not, *why says why (static text). */
int jt_gpu_available(const char **why);

/* Deterministic xorshift random numbers for test data; seed from the clock for fresh inputs. */
uint64_t jt_rng_next(uint64_t *state);
double jt_rng_uniform(uint64_t *state, double lo, double hi);
uint64_t jt_fresh_seed(void);

#endif
