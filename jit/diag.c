/* Error records and the library's stderr logging. */
#include "diag.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void jit__diag_init(jit__diag_t *d) {
    memset(d, 0, sizeof(*d));
}

void jit__diag_clear(jit__diag_t *d) {
    if (!d)
        return;
    free(d->log);
    jit__diag_init(d);
}

jit_status_t jit__fail(jit__diag_t *d, jit_status_t status, const char *fmt, ...) {
    /* The first failure is the root cause; callers further up only add nothing. */
    if (d && d->status == JIT_OK) {
        va_list ap;
        va_start(ap, fmt);
        d->status = status;
        vsnprintf(d->msg, sizeof(d->msg), fmt, ap);
        va_end(ap);
    }
    return status;
}

void jit__diag_set_log(jit__diag_t *d, const char *log) {
    if (!d)
        return;
    free(d->log);
    d->log = log ? strdup(log) : NULL;
}

void jit__log(jit_log_level_t threshold, jit_log_level_t level, const char *fmt, ...) {
    static const char *const prefix[] = {"", "error: ", "warning: ", "", "debug: "};
    if (level > threshold || level <= JIT_LOG_SILENT)
        return;
    char line[2048];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(line, sizeof(line), fmt, ap);
    va_end(ap);
    /* One fputs per message so lines from several threads do not interleave. */
    char out[2200];
    snprintf(out, sizeof(out), "jitgemm: %s%s\n", prefix[level], line);
    fputs(out, stderr);
}
