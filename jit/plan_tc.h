/*
 * The tcgen05 part of a plan (route JIT_ROUTE_TCGEN05): instruction shape and descriptor, SMEM
 * and TMEM layouts, cluster shapes. Filled by the tcgen05 planner (jit/plan_tc.c).
 */
#ifndef JIT_PLAN_TC_H
#define JIT_PLAN_TC_H

#include <stdint.h>

typedef struct jit__tc_plan {
    int valid;
} jit__tc_plan_t;

#endif
