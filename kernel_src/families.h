/*
 * The built-in families' table rows, one per folder under kernel_src/. The registry
 * (kernel_src/registry.c) lists them in the order it asks them.
 */
#ifndef JIT_FAMILIES_H
#define JIT_FAMILIES_H

#include "family.h"

extern const jit__family_t jit__family_fp8_grouped_wgmma; /* kernel_src/fp8_grouped_wgmma/ */
extern const jit__family_t jit__family_fp8_wgmma;    /* kernel_src/fp8_wgmma/ */
extern const jit__family_t jit__family_fp8_block_wgmma; /* kernel_src/fp8_block_wgmma/ */
extern const jit__family_t jit__family_fp8_mma_sync; /* kernel_src/fp8_mma_sync/ */
extern const jit__family_t jit__family_tcgen05;      /* kernel_src/tcgen05/ */
extern const jit__family_t jit__family_quant_fp8_1x128; /* kernel_src/quant_fp8_1x128/ */

#endif
