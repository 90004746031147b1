/*
 * The functional model's launch interface, callable from C (tests/fmodel/fm_main.c): run one
 * grid of the generated kernel on the host, and the model's cuTensorMapEncodeTiled.
 */
#ifndef JITGEMM_FMODEL_RUNTIME_H
#define JITGEMM_FMODEL_RUNTIME_H

#include <cuda.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* A named part of shared memory (offsets from the dynamic base, `count` stages of `stride`
 * bytes) or of TMEM (columns), for messages. */
typedef struct fm_region {
    const char *name;
    uint32_t first, stride, count;
} fm_region_t;

typedef struct fm_launch {
    unsigned grid[3];    /* CTAs; grid[0] and grid[1] are multiples of the cluster */
    unsigned cluster[2]; /* CTAs per cluster along x and y */
    /* Mixed-cluster launch: the first fb_regions preferred-cluster regions of the grid (by z)
     * run as clusters of fb_cluster CTAs, as the hardware may launch them. */
    unsigned fb_cluster[2];
    unsigned fb_regions;
    unsigned threads;    /* per CTA */
    unsigned smem_bytes; /* dynamic shared memory per CTA */
    int arch;            /* 100, 103 or 107: the hardware rules the model applies */
    void (*entry)(const void *params);
    const void *params;
    uint64_t seed;     /* scheduling and elect.sync choices */
    double yield_prob; /* chance of a switch at a wrapper call that does not block */
    int verbose;
    fm_region_t smem_regions[8], tmem_regions[4];
    int n_smem_regions, n_tmem_regions;
} fm_launch_t;

/* Runs every thread of the grid to completion. 0: ran, no hazard. 1: ran, hazards reported.
 * 2: stopped (deadlock, trap or a rule of the model broken); the reason is printed. */
int fm_run(const fm_launch_t *launch);

/* The model's tensor-map encoder: the cuda.h rules of cuTensorMapEncodeTiled are enforced and
 * the arguments stored in the 128-byte map in the model's own layout, which the model's TMA
 * decodes (the hardware's layout is not public). */
CUresult fm_encode_tiled(CUtensorMap *map, CUtensorMapDataType dt, cuuint32_t rank, void *addr,
                         const cuuint64_t *dims, const cuuint64_t *strides, const cuuint32_t *box,
                         const cuuint32_t *elem_strides, CUtensorMapInterleave il,
                         CUtensorMapSwizzle sw, CUtensorMapL2promotion l2,
                         CUtensorMapFloatOOBfill oob);

#ifdef __cplusplus
}
#endif

#endif
