/*
 * Internal error record. Every internal function that can fail takes a jit__diag_t* (which may
 * be NULL) and returns a jit_status_t; the first failure recorded wins, so the message names the
 * root cause rather than the last caller that noticed. Compile logs are kept separately because
 * they can be long.
 */
#ifndef JIT_DIAG_H
#define JIT_DIAG_H

#include "jitgemm.h"

#define JIT__MSG_MAX 1024

typedef struct jit__diag {
    jit_status_t status;
    char msg[JIT__MSG_MAX];
    char *log; /* heap; NVRTC/nvJitLink log of a failed compile, or NULL */
} jit__diag_t;

void jit__diag_init(jit__diag_t *d);
void jit__diag_clear(jit__diag_t *d); /* frees the log */

/* Record a failure (first one wins) and return `status`, so callers can write
 * `return jit__fail(d, JIT_INVALID_SHAPE, "k=%lld must be positive", k);` */
jit_status_t jit__fail(jit__diag_t *d, jit_status_t status, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* Attach a copy of a compile log to the record (replaces an earlier one). */
void jit__diag_set_log(jit__diag_t *d, const char *log);

/* Library-wide logging to stderr, filtered by level; prefix "jitgemm: warning: ". */
void jit__log(jit_log_level_t threshold, jit_log_level_t level, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

#endif
