/*
 * The JITGEMM_LOG setting. A value that is not a level is an error rather than the default:
 * someone who asked for debug output and mistyped it would otherwise see nothing and not know why.
 */
#ifndef JIT_LOG_LEVEL_H
#define JIT_LOG_LEVEL_H

#include "diag.h"

/* The accepted values, for messages and help text. */
#define JIT__LOG_LEVEL_NAMES "silent, error, warn, info, debug (or 0-4)"

/* *out = the level $JITGEMM_LOG names, or dflt when it is unset or empty. JIT_INVALID_ARGUMENT
 * with a message listing the accepted values when it names none. */
jit_status_t jit__log_level_from_env(jit_log_level_t dflt, jit_log_level_t *out, jit__diag_t *d);

#endif
