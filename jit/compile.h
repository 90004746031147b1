/*
 * Source to cubin: NVRTC compiles the generated CUDA C to LTO-IR for the target's virtual arch,
 * then nvJitLink optimises, assembles and links it into a cubin for the real target; a second
 * nvJitLink pass emits the linked PTX, which is kept for
 * `inspect`, and ptxas' report (registers, spills, shared memory) is parsed from the link log.
 */
#ifndef JIT_COMPILE_H
#define JIT_COMPILE_H

#include <stddef.h>

#include "device_files.h"
#include "toolchain.h"

typedef struct jit__compiled {
    char *ptx;
    size_t ptx_size;
    void *cubin;
    size_t cubin_size;
    char target[16]; /* the real target the cubin is for, e.g. "sm_90a" or "sm_100f" */
    /* Registers and stack frame come from the cubin's attributes; spills from ptxas' report,
     * or -1 (unknown) when there was none and the frame is not empty. */
    int registers, spill_stores, spill_loads, stack_bytes, smem_static_bytes;
    double seconds; /* wall time of NVRTC + nvJitLink */
    char *log;      /* NVRTC and ptxas messages (may be empty) */
} jit__compiled_t;

void jit__compiled_free(jit__compiled_t *c);

/* What jit__compile produces. The PTX costs a second nvJitLink pass (a third of a wgmma
 * kernel's compile), and only `inspect --ptx` and the tests read it, so the pipeline builds the
 * cubin alone and inspect asks for the PTX when it needs it. */
typedef enum jit__compile_what {
    JIT__COMPILE_CHECK = 0,         /* NVRTC only (the PTX check of a fallback build) */
    JIT__COMPILE_CUBIN_AND_PTX = 1, /* the cubin and the linked PTX */
    JIT__COMPILE_CUBIN = 2,         /* the cubin alone */
    JIT__COMPILE_PTX = 3,           /* the linked PTX alone */
} jit__compile_what_t;

/* Compile `source` for `target` ("sm_90a", "sm_100f", ...), producing `what`, with the embedded
 * device files as its headers. On failure the NVRTC or nvJitLink log is attached to the diag and
 * the status is JIT_COMPILE_FAILED or JIT_LINK_FAILED. */
jit_status_t jit__compile(const jit__toolchain_t *tc, const char *source, const char *name,
                          const char *target, jit__compile_what_t what, jit__compiled_t *out,
                          jit__diag_t *d);

/* The same compile with `files` (at most JIT_MAX_DEVICE_FILES) as the in-memory headers instead
 * of the embedded ones: `jitgemm rebuild` hands it the headers of a directory a user may have
 * edited, so the sources it compiles are theirs and every call and option is the library's. */
jit_status_t jit__compile_with_headers(const jit__toolchain_t *tc, const char *source,
                                       const char *name, const char *target,
                                       jit__compile_what_t what, const jit__device_file_t *files,
                                       size_t n_files, jit__compiled_t *out, jit__diag_t *d);

/* The options jit__compile passes for a cubin of `target`: NVRTC's (CUDA C -> LTO-IR, or PTX
 * for a family target such as sm_100f), then nvJitLink's (-> cubin; the input is PTX when
 * via_ptx). `inspect --out` writes them beside the sources. The pointers in nvrtc[] and link[]
 * point into the struct itself or at constants: use it where it was filled, do not copy it.
 * 0, or -1 for a target that is not "sm_", two to four digits and an optional lowercase
 * letter. */
typedef struct jit__compile_options {
    int via_ptx;
    int n_nvrtc, n_link;
    const char *nvrtc[4];
    const char *link[4];
    char nvrtc_arch[48], link_arch[32];
} jit__compile_options_t;
int jit__compile_options(const char *target, jit__compile_options_t *o);

#endif
