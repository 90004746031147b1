/*
 * Resource usage read from a cubin's ELF: registers per thread (EIATTR_REGCOUNT) and the
 * per-thread stack frame (EIATTR_FRAME_SIZE) of every function, from the module-wide .nv.info
 * section. This is what the cubin will run with, whatever the compiler's log said; it is the
 * fallback for when nvJitLink prints no ptxas report (seen when its input was compiled before
 * in the same process).
 */
#ifndef JIT_CUBIN_INFO_H
#define JIT_CUBIN_INFO_H

#include <stddef.h>

/* Largest register count and frame size over the cubin's functions. Returns 0 on success, -1
 * if the buffer is not an ELF cubin or holds no register attribute. */
int jit__cubin_resources(const void *cubin, size_t size, int *registers, int *frame_bytes);

#endif
