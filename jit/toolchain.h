/*
 * NVRTC and nvJitLink, loaded at run time with dlopen so that compile-only work runs on machines
 * without them at link time, and so a newer toolkit can be used without rebuilding. Candidates:
 * an explicit directory ($JITGEMM_TOOLKIT_DIR or the context option) wins outright; otherwise
 * the project-local folders found beside the running module (toolkit_dirs.h: in a build tree
 * a link to what scripts/setup.sh fills), $CUDA_HOME, $CUDA_PATH and
 * /usr/local/cuda are tried (the loader's search path only if none holds a toolkit) and the
 * newest NVRTC wins. NVRTC and nvJitLink are always taken from the same directory.
 *
 * A toolchain is identified without being loaded where a remembered identity still matches
 * the files (see toolchain.c); its function pointers are valid only after jit__toolchain_load.
 */
#ifndef JIT_TOOLCHAIN_H
#define JIT_TOOLCHAIN_H

#include <nvJitLink.h>
#include <nvrtc.h>
#include <stdatomic.h>

#include "diag.h"
#include "key.h"
#include "toolchain_record.h"

typedef struct jit__toolchain {
    char dir[4096 + 64]; /* where the libraries were found ("" = loader default) */
    char nvrtc_path[4200], jitlink_path[4200];
    atomic_int loaded; /* the function pointers below are bound */
    jit__toolchain_id_t id;
    int archs[64]; /* nvrtcGetSupportedArchs, e.g. 90, 100, 103, 107 */
    int n_archs;
    void *nvrtc_lib, *jitlink_lib;
    void *builtins_lib; /* libnvrtc-builtins beside nvrtc_path, opened ahead of NVRTC */
    /* NVRTC */
    const char *(*nvrtcGetErrorString)(nvrtcResult);
    nvrtcResult (*nvrtcVersion)(int *, int *);
    nvrtcResult (*nvrtcCreateProgram)(nvrtcProgram *, const char *, const char *, int,
                                      const char *const *, const char *const *);
    nvrtcResult (*nvrtcDestroyProgram)(nvrtcProgram *);
    nvrtcResult (*nvrtcCompileProgram)(nvrtcProgram, int, const char *const *);
    nvrtcResult (*nvrtcGetPTXSize)(nvrtcProgram, size_t *);
    nvrtcResult (*nvrtcGetPTX)(nvrtcProgram, char *);
    nvrtcResult (*nvrtcGetLTOIRSize)(nvrtcProgram, size_t *);
    nvrtcResult (*nvrtcGetLTOIR)(nvrtcProgram, char *);
    nvrtcResult (*nvrtcGetProgramLogSize)(nvrtcProgram, size_t *);
    nvrtcResult (*nvrtcGetProgramLog)(nvrtcProgram, char *);
    /* nvJitLink */
    nvJitLinkResult (*nvJitLinkCreate)(nvJitLinkHandle *, uint32_t, const char **);
    nvJitLinkResult (*nvJitLinkDestroy)(nvJitLinkHandle *);
    nvJitLinkResult (*nvJitLinkAddData)(nvJitLinkHandle, nvJitLinkInputType, const void *, size_t,
                                        const char *);
    nvJitLinkResult (*nvJitLinkComplete)(nvJitLinkHandle);
    nvJitLinkResult (*nvJitLinkGetLinkedCubinSize)(nvJitLinkHandle, size_t *);
    nvJitLinkResult (*nvJitLinkGetLinkedCubin)(nvJitLinkHandle, void *);
    nvJitLinkResult (*nvJitLinkGetErrorLogSize)(nvJitLinkHandle, size_t *);
    nvJitLinkResult (*nvJitLinkGetErrorLog)(nvJitLinkHandle, char *);
    nvJitLinkResult (*nvJitLinkGetInfoLogSize)(nvJitLinkHandle, size_t *);
    nvJitLinkResult (*nvJitLinkGetInfoLog)(nvJitLinkHandle, char *);
    nvJitLinkResult (*nvJitLinkGetLinkedPtxSize)(nvJitLinkHandle, size_t *);
    nvJitLinkResult (*nvJitLinkGetLinkedPtx)(nvJitLinkHandle, char *);
} jit__toolchain_t;

/* The toolchain for `dir` (NULL: the automatic choice described above). Loaded once per
 * directory and kept for the life of the process; the pointer stays valid. Thread-safe. */
jit_status_t jit__toolchain_get(const char *dir, const jit__toolchain_t **out, jit__diag_t *d);

/* Bind the toolchain's function pointers (opening the libraries) if not done yet. Needed
 * before any NVRTC or nvJitLink call; jit__compile does it. Thread-safe. */
jit_status_t jit__toolchain_load(const jit__toolchain_t *tc, jit__diag_t *d);

/* Remember toolchain identities in `store` (copied; store->self must live as long as the
 * process uses toolchains). The first store wins and 1 is returned; later calls return 0 and
 * the caller may free what it made. Until a store is given, every toolchain is identified by
 * loading it. api/ wires the cache of the first context here. */
int jit__toolchain_remember_in(const jit__toolchain_store_t *store);

/* The newest toolchain (among the automatic candidates and any directory loaded so far) whose
 * NVRTC version is at most major.minor, or NULL. Used when a cubin from a newer NVRTC does not
 * load on an older driver. */
const jit__toolchain_t *jit__toolchain_newest_up_to(int major, int minor);

/* 1 if NVRTC lists compute capability `sm` (e.g. 107) as a target. */
int jit__toolchain_supports(const jit__toolchain_t *tc, int sm);

#endif
