/*
 * The JITGEMM_COMPILE setting: whether a context may compile a kernel it finds neither in memory
 * nor in the disk cache. A serving host whose cache was prewarmed sets it to `never`, so a shape
 * the prewarm missed fails at once with JIT_NOT_IN_CACHE and the key, instead of stalling a
 * request for seconds of NVRTC. A value that is not a mode is an error rather than the default,
 * for the reason jit/log_level.h gives.
 */
#ifndef JIT_COMPILE_MODE_H
#define JIT_COMPILE_MODE_H

#include "diag.h"

/* The accepted values, for messages and help text. */
#define JIT__COMPILE_MODE_NAMES "always, never"

/* The mode's word ("always", "never"); "?" for a value that is none. */
const char *jit__compile_mode_name(jit_compile_mode_t mode);

/* *out = the context's mode: NEVER if `option` or $JITGEMM_COMPILE says never, else ALWAYS. Either
 * side can turn compiles off and neither can turn them back on, so a program (or `prewarm
 * --check`) that asked for never is never made to compile by the environment. An unset or empty
 * variable counts as not set; any other value than the two words is JIT_INVALID_ARGUMENT with a
 * message listing them. */
jit_status_t jit__compile_mode_from_env(jit_compile_mode_t option, jit_compile_mode_t *out,
                                        jit__diag_t *d);

#endif
