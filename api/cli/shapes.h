/*
 * The shape list: a deployment's GEMMs and the token counts each one runs at, as JSON
 * (docs/shape-list.md). The parser is strict on purpose: a prewarm that silently skips a
 * misspelt field leaves a serving host compiling on its first request, so every unknown key,
 * wrong type or unknown word is an error that names its path ("gemms[2].n") or, for malformed
 * JSON, its line and column.
 */
#ifndef JIT_CLI_SHAPES_H
#define JIT_CLI_SHAPES_H

#include <stddef.h>
#include <stdint.h>

#include "diag.h"
#include "jitgemm.h"

/* The most bytes a shape list may hold. A real deployment's list is kilobytes; the cap makes
 * a wrong FILE (/dev/zero, a disk image, a log) an immediate error instead of a read until
 * memory runs out. A list of a million token counts is about 8 MB. */
#define JIT__SHAPES_MAX_BYTES ((size_t)16 << 20)
#define JIT__SHAPES_MAX_TEXT "16 MiB"

typedef struct jit__shape_entry {
    char *name;
    jit_epilogue_t op;
    int64_t n, k;
    jit_dtype_t a, b, out;
    jit_scale_mode_t scales;
    int64_t *tokens; /* distinct, positive, in file order */
    size_t n_tokens;
    /* A grouped GEMM ("groups", "layout", "expected_m"): groups 0 for a dense one; expected_m 0
     * for tokens / groups. Each token count is then the rows of A. */
    int64_t groups, expected_m;
    jit_group_layout_t layout;
} jit__shape_entry_t;

typedef struct jit__shape_list {
    char *arch;   /* "target.arch", canonical profile name; NULL if absent */
    int sm_count; /* "target.sm_count"; 0 if absent */
    jit__shape_entry_t *entries;
    size_t count;
} jit__shape_list_t;

/* Parse a shape list from text. `source` names it in messages (a path, "<stdin>"). On failure
 * the list is left empty and the diag holds "source:line:column: ..." (malformed JSON, status
 * JIT_PARSE_ERROR) or "source: gemms[1].op: ..." (wrong content, JIT_INVALID_ARGUMENT). */
jit_status_t jit__shapes_parse_text(const char *text, const char *source, jit__shape_list_t *out,
                                    jit__diag_t *d);

/* Parse the file at `path` ("-" reads stdin). An unreadable file is JIT_IO_ERROR. */
jit_status_t jit__shapes_parse_file(const char *path, jit__shape_list_t *out, jit__diag_t *d);

void jit__shapes_free(jit__shape_list_t *list);

/* Number of (entry, token count) pairs: the problems a prewarm builds. */
size_t jit__shapes_problem_count(const jit__shape_list_t *list);

/* One jit_problem_t per (entry, token count), entries in order and tokens in order within
 * each, with m = the token count. `problems` and `entry_of` (may be NULL; the index of the
 * entry each problem came from) must hold jit__shapes_problem_count() elements. */
void jit__shapes_problems(const jit__shape_list_t *list, jit_problem_t *problems, size_t *entry_of);

#endif
