#include "compile_mode.h"

#include <stdlib.h>
#include <string.h>

const char *jit__compile_mode_name(jit_compile_mode_t mode) {
    switch (mode) {
    case JIT_COMPILE_ALWAYS:
        return "always";
    case JIT_COMPILE_NEVER:
        return "never";
    }
    return "?";
}

jit_status_t jit__compile_mode_from_env(jit_compile_mode_t option, jit_compile_mode_t *out,
                                        jit__diag_t *d) {
    *out = option;
    const char *v = getenv("JITGEMM_COMPILE");
    if (!v || !*v || strcmp(v, "always") == 0)
        return JIT_OK;
    if (strcmp(v, "never") == 0) {
        *out = JIT_COMPILE_NEVER;
        return JIT_OK;
    }
    return jit__fail(d, JIT_INVALID_ARGUMENT,
                     "JITGEMM_COMPILE='%.64s' is not a compile mode: use %s", v,
                     JIT__COMPILE_MODE_NAMES);
}
