/*
 * The shipping GPUs of each arch profile and their SM counts, for prewarming a cache that serves
 * every one of them (`jitgemm prewarm --target ARCH:all`). A plan depends on the SM count
 * (docs/plan.md), so a cache prewarmed at one count can miss kernels on a part with another.
 * The table and where each count comes from: docs/plan.md, "SM counts of the shipping parts".
 */
#ifndef JIT_ARCH_PARTS_H
#define JIT_ARCH_PARTS_H

#include <stddef.h>

#include "arch.h"

typedef struct jit__arch_part {
    const char *arch; /* profile name, "sm_90a" */
    const char *name; /* "H100 PCIe" */
    int sm_count;     /* SMs the whole GPU reports (no MIG slice) */
} jit__arch_part_t;

/* Every row of the table, grouped by arch; *count receives the number. */
const jit__arch_part_t *jit__arch_parts(int *count);

/* The distinct SM counts of the parts of `arch`, ascending, into out[0..max); returns how many
 * there are (which may exceed max: only max are written). 0 when no part of the arch has a
 * public SM count (sm_107a). */
int jit__arch_part_sm_counts(const jit__arch_profile_t *arch, int *out, int max);

/* The names of the parts of `arch` with `sm_count` SMs, joined by ", " into out ("" if none);
 * returns out. */
const char *jit__arch_part_names(const jit__arch_profile_t *arch, int sm_count, char *out,
                                 size_t outsz);

#endif
