/*
 * A per-thread cache of encoded TMA tensor maps, for the launch of every family whose kernel
 * reads operands through TMA. A tensor map holds its operand's address, so it is encoded for the
 * pointers of each call (cuTensorMapEncodeTiled, about a microsecond on the host), and a serving
 * loop calls with the same weights and buffers again and again. The encoding is a pure function
 * of its arguments, so a map is cached under all of them (and the driver table that encoded it):
 * a hit can never be a map of other operands, whatever kernel asks. Each thread has its own
 * cache, so a launch finds its maps without a lock and threads never wait for one another; it is
 * allocated on the thread's first use (128 maps, set-associative, about 30 KiB) and freed when
 * the thread exits.
 */
#ifndef JIT_TMAP_CACHE_H
#define JIT_TMAP_CACHE_H

#include <cuda.h>
#include <stdint.h>

#include "diag.h"
#include "driver.h"

/* The arguments of cuTensorMapEncodeTiled but the output. Unused dims, strides, box and element
 * strides (past `rank`) must be 0; jit__tmap_args_init zeroes everything. */
typedef struct jit__tmap_args {
    CUtensorMapDataType dtype;
    uint32_t rank;
    const void *addr;
    uint64_t dims[3];    /* elements, innermost first */
    uint64_t strides[2]; /* bytes, of dims 1 and 2 */
    uint32_t box[3];
    uint32_t elem_strides[3];
    CUtensorMapInterleave interleave;
    CUtensorMapSwizzle swizzle;
    CUtensorMapL2promotion l2;
    CUtensorMapFloatOOBfill oob;
} jit__tmap_args_t;

void jit__tmap_args_init(jit__tmap_args_t *args);

/* The tensor map of `args` into out (128 bytes): this thread's cached copy, or
 * encoded with drv->cuTensorMapEncodeTiled and cached. A failed encode returns JIT_CUDA_ERROR
 * with `what` in the message and caches nothing. */
jit_status_t jit__tmap_encode_cached(const jit__driver_t *drv, const jit__tmap_args_t *args,
                                     void *out, const char *what, jit__diag_t *d);

#endif
