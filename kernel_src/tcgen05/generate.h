/*
 * Internal interface of the tcgen05 generator (family tcgen05_blockscaled). The device code is
 * kernel_src/tcgen05/device/ (*.cuh); generate.c writes the per-plan prologue (TcPlan) and the
 * entry point that instantiates it.
 *
 * The generator decides nothing that depends on the arch or the shape: every number comes from
 * the plan (jit__tc_plan_t) or is derived from it once, here, in jit__tcg_t. The only input that
 * is not the plan is the compile target from the key: a Rubin plan compiled for the sm_100f
 * fallback (an NVRTC without sm_107a) drops the PTX 9.4-only `.collector::b` hints (B is then
 * read from SMEM by both MMAs of a K-block, which gives the same result), and a plan whose TMEM
 * allocation needs `tcgen05.alloc.exclusive` (more than 512 columns) is refused for the fallback.
 */
#ifndef JIT_TCGEN05_GENERATE_H
#define JIT_TCGEN05_GENERATE_H

#include <stdint.h>

#include "diag.h"
#include "key.h"
#include "strbuf.h"
#include "tcgen05.h"

/* Work-ID ring depth: the scheduler may run this many tiles ahead of the slowest reader. */
#define JIT_TCG_WORK_SLOTS 4
/* Accumulator columns one tcgen05.ld.32x32b.x16 drains. */
#define JIT_TCG_LD_COLUMNS 16

/* Everything the generator needs, derived from the plan once. */
typedef struct jit__tcg {
    const jit__plan_t *plan;
    const jit__tc_plan_t *tc;
    const jit__key_t *key;
    jit__sb_t *sb;

    /* compile target */
    int native;         /* 0: the key's fallback target */
    int collector_b;    /* emit .collector::b::fill / ::lastuse (B-reuse, PTX 9.4) */
    int tmem_exclusive; /* tcgen05.alloc/dealloc need .exclusive (columns > 512) */

    /* warps */
    int n_warps;
    int scheduler_warp;

    /* cluster shapes */
    int has_fallback; /* a fallback cluster shape exists (mixed-cluster launch) */
    int split;        /* preferred CTAs / fallback CTAs (1 without fallback) */

    /* tile */
    int halves;         /* M-halves per CTA (2 with B-reuse) */
    int out_cols;       /* output columns per CTA tile (tile_n, or tile_n / 2 for swiglu) */
    int out_bytes;      /* 2 (BF16) or 4 (FP32) */
    int epi_out_cols;   /* output columns per epilogue sub-tile */
    int epi_acc_cols;   /* accumulator columns per epilogue sub-tile */
    int epi_subtiles;   /* sub-tiles per M-half */
    uint32_t c_slab;    /* bytes of one warp's 32-row slab of one C stage */
    uint32_t c_swizzle; /* 128, 64, 32 or 0: the TMA-store swizzle span of the C slab */
    int release_after;  /* overlap: sub-tiles drained before the early release */

    /* barrier block (8-byte slots, offsets relative to the barriers buffer) */
    uint32_t bar_full, bar_empty, bar_acc_full, bar_acc_empty, bar_work_full, bar_work_empty;
    uint32_t work_ids;  /* JIT_TCG_WORK_SLOTS x {work id, M offset} */
    uint32_t bar_bytes; /* bytes used of the barriers buffer */

    /* SMEM descriptor constant parts (start address 0), for A, B and the SF chunks */
    uint64_t a_desc_hi, b_desc_hi, sf_desc_hi;

    /* TMA coordinates along K (in the tensor map's element units) */
    int a_kcoord_tile, a_kcoord_box, b_kcoord_tile, b_kcoord_box;
} jit__tcg_t;

/* Fill `g` from the plan and key, checking every invariant the emitted code relies on. */
/* Write struct TcPlan, the plan as the template reads it (generate_plan.c). */
void jit__tcg_emit_plan(const jit__tcg_t *g);

jit_status_t jit__tcg_init(jit__tcg_t *g, const jit__plan_t *plan, const jit__key_t *key,
                           jit__sb_t *sb, jit__diag_t *d);

/* The source of a plan of this family. */
jit_status_t jit__gen_tcgen05(const jit__plan_t *plan, const jit__key_t *key, char **source,
                              jit__diag_t *d);

#endif
