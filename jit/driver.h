/*
 * The CUDA driver API, loaded at run time (libcuda.so.1) through cuGetProcAddress, so that the
 * library and the CLI start on machines with no driver and compile-only work still runs there.
 */
#ifndef JIT_DRIVER_H
#define JIT_DRIVER_H

#include <cuda.h>

#include "diag.h"

typedef struct jit__driver {
    int version; /* cuDriverGetVersion, e.g. 13000 */
    CUresult (*cuInit)(unsigned);
    CUresult (*cuDriverGetVersion)(int *);
    CUresult (*cuGetErrorName)(CUresult, const char **);
    CUresult (*cuGetErrorString)(CUresult, const char **);
    CUresult (*cuDeviceGetCount)(int *);
    CUresult (*cuDeviceGet)(CUdevice *, int);
    CUresult (*cuDeviceGetAttribute)(int *, CUdevice_attribute, CUdevice);
    CUresult (*cuDeviceGetName)(char *, int, CUdevice);
    CUresult (*cuDevicePrimaryCtxRetain)(CUcontext *, CUdevice);
    CUresult (*cuDevicePrimaryCtxRelease)(CUdevice);
    CUresult (*cuCtxGetCurrent)(CUcontext *);
    CUresult (*cuCtxSetCurrent)(CUcontext);
    CUresult (*cuCtxGetDevice)(CUdevice *);
    CUresult (*cuCtxSynchronize)(void);
    CUresult (*cuModuleLoadData)(CUmodule *, const void *);
    CUresult (*cuModuleUnload)(CUmodule);
    CUresult (*cuModuleGetFunction)(CUfunction *, CUmodule, const char *);
    CUresult (*cuFuncSetAttribute)(CUfunction, CUfunction_attribute, int);
    CUresult (*cuFuncGetAttribute)(int *, CUfunction_attribute, CUfunction);
    CUresult (*cuLaunchKernelEx)(const CUlaunchConfig *, CUfunction, void **, void **);
    CUresult (*cuMemAlloc)(CUdeviceptr *, size_t);
    CUresult (*cuMemFree)(CUdeviceptr);
    CUresult (*cuMemcpyHtoD)(CUdeviceptr, const void *, size_t);
    CUresult (*cuMemcpyDtoH)(void *, CUdeviceptr, size_t);
    CUresult (*cuMemsetD8)(CUdeviceptr, unsigned char, size_t);
    CUresult (*cuStreamSynchronize)(CUstream);
    CUresult (*cuEventCreate)(CUevent *, unsigned);
    CUresult (*cuEventDestroy)(CUevent);
    CUresult (*cuEventRecord)(CUevent, CUstream);
    CUresult (*cuEventSynchronize)(CUevent);
    CUresult (*cuEventElapsedTime)(float *, CUevent, CUevent);
    CUresult (*cuStreamWaitEvent)(CUstream, CUevent, unsigned);
    CUresult (*cuTensorMapEncodeTiled)(CUtensorMap *, CUtensorMapDataType, cuuint32_t, void *,
                                       const cuuint64_t *, const cuuint64_t *, const cuuint32_t *,
                                       const cuuint32_t *, CUtensorMapInterleave,
                                       CUtensorMapSwizzle, CUtensorMapL2promotion,
                                       CUtensorMapFloatOOBfill);
    CUresult (*cuOccupancyMaxActiveClusters)(int *, CUfunction, const CUlaunchConfig *);
    /* The CUDA 12.0 form (cuStreamGetCaptureInfo_v2), what cuGetProcAddress returns for the
     * 12000 version every entry point here is requested with. */
    CUresult (*cuStreamGetCaptureInfo)(CUstream, CUstreamCaptureStatus *, cuuint64_t *, CUgraph *,
                                       const CUgraphNode **, size_t *);
} jit__driver_t;

/* The driver, loaded and initialised once per process (cuInit(0)). JIT_NO_GPU with a message
 * when libcuda is missing, cuInit fails, or no device is present. Thread-safe. */
jit_status_t jit__driver_get(const jit__driver_t **out, jit__diag_t *d);

/* Turn a failed CUresult into JIT_CUDA_ERROR with "what: CUDA_ERROR_X (text)". */
jit_status_t jit__cuda_fail(const jit__driver_t *drv, CUresult r, const char *what, jit__diag_t *d);

/* The CUDA context current on this thread; if none, the primary context of device 0 is
 * retained and made current. */
jit_status_t jit__driver_current_context(const jit__driver_t *drv, CUcontext *ctx, CUdevice *dev,
                                         jit__diag_t *d);

#endif
