#include "log_level.h"

#include <stdlib.h>
#include <string.h>

jit_status_t jit__log_level_from_env(jit_log_level_t dflt, jit_log_level_t *out, jit__diag_t *d) {
    static const char *const names[] = {"silent", "error", "warn", "info", "debug"};
    *out = dflt;
    const char *v = getenv("JITGEMM_LOG");
    if (!v || !*v)
        return JIT_OK;
    for (int i = 0; i < 5; i++) {
        if (strcmp(v, names[i]) == 0) {
            *out = (jit_log_level_t)i;
            return JIT_OK;
        }
    }
    if (v[0] >= '0' && v[0] <= '4' && v[1] == '\0') {
        *out = (jit_log_level_t)(v[0] - '0');
        return JIT_OK;
    }
    return jit__fail(d, JIT_INVALID_ARGUMENT, "JITGEMM_LOG='%.64s' is not a log level: use %s", v,
                     JIT__LOG_LEVEL_NAMES);
}
