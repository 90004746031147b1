/*
 * The targets of one `jitgemm prewarm` run and the kernels they share. `--target ARCH:all`
 * expands to one target per SM count of the arch's shipping parts (jit/arch_parts.c); a kernel
 * an earlier target of the run already covered is a duplicate at a later one, reported as such
 * and not prewarmed again.
 */
#ifndef JIT_CLI_PREWARM_TARGETS_H
#define JIT_CLI_PREWARM_TARGETS_H

#include <stddef.h>

#include "jitgemm.h"
#include "key.h"

/* --target given at most this often; ARCH:all may expand one into several. */
#define JIT_CLI_MAX_TARGETS_GIVEN 16
#define JIT_CLI_MAX_TARGETS 64

typedef struct jit__cli_target {
    const char *arch; /* NULL: the file's, else the GPU's */
    /* 0: the file's, else the arch's; -1 (a --target without :N): the file's only when the
     * file names the same arch, since an SM count belongs to one GPU type. */
    int sm_count;
    const char *parts; /* ARCH:all: the parts with this SM count ("" if none is public) */
} jit__cli_target_t;

typedef struct jit__cli_targets {
    jit__cli_target_t items[JIT_CLI_MAX_TARGETS];
    size_t count;
    char arch_text[JIT_CLI_MAX_TARGETS_GIVEN][64];
    char parts_text[JIT_CLI_MAX_TARGETS][160];
} jit__cli_targets_t;

/* Parse each --target ("sm_90a", "sm_90a:132" or "sm_90a:all") into out, in order, ARCH:all
 * as one target per distinct SM count. 0, or JIT_CLI_USAGE after printing the error. */
int jit__cli_targets_parse(const char *verb, const char *const *texts, size_t n,
                           jit__cli_targets_t *out);

/* Key hashes already covered by earlier targets of the run, each with the target that covered
 * it first ("sm_90a:132"). */
typedef struct jit__cli_keyset {
    char (*hash)[JIT_KEY_HASH_LEN + 1];
    char (*where)[48];
    size_t count, cap;
} jit__cli_keyset_t;

/* The index of `hash` in the set, or -1. */
long jit__cli_keyset_find(const jit__cli_keyset_t *set, const char *hash);
/* Add `hash` (covered at `where`) unless it is there; 0, or -1 when out of memory. */
int jit__cli_keyset_add(jit__cli_keyset_t *set, const char *hash, const char *where);
void jit__cli_keyset_free(jit__cli_keyset_t *set);

/* The key hash the context builds for `problem`, computed as a prewarm computes it (plan and
 * generated code; nothing is compiled or looked up). 0, or -1 when the problem does not plan
 * (the prewarm then reports why). */
int jit__cli_problem_key(jit_context_t *ctx, const jit_problem_t *problem,
                         char hash[JIT_KEY_HASH_LEN + 1]);

#endif
