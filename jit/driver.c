/*
 * Loading the CUDA driver at run time. Every entry point is fetched with cuGetProcAddress for
 * the CUDA 12.0 ABI or later, which returns the right versioned symbol (cuMemAlloc_v2 and so
 * on) without us spelling the suffixes.
 */
#include "driver.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>

static pthread_once_t g_once = PTHREAD_ONCE_INIT;
static jit__driver_t g_drv;
static jit_status_t g_status = JIT_NO_GPU;
static char g_why[512];

typedef CUresult (*get_proc_fn)(const char *, void **, int, cuuint64_t,
                                CUdriverProcAddressQueryResult *);

static int get(get_proc_fn gp, const char *name, void **slot) {
    CUdriverProcAddressQueryResult q;
    if (gp(name, slot, 12000, CU_GET_PROC_ADDRESS_DEFAULT, &q) != CUDA_SUCCESS || !*slot) {
        snprintf(g_why, sizeof(g_why), "the driver has no %s", name);
        return 0;
    }
    return 1;
}

#define GET(name)                                                                                  \
    if (!get(gp, #name, (void **)&g_drv.name))                                                     \
    return

static void load_driver(void) {
    void *lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!lib) {
        snprintf(g_why, sizeof(g_why), "libcuda.so.1 could not be loaded (%s)", dlerror());
        return;
    }
    get_proc_fn gp = (get_proc_fn)dlsym(lib, "cuGetProcAddress_v2");
    if (!gp) {
        snprintf(g_why, sizeof(g_why), "the driver is too old (no cuGetProcAddress_v2)");
        return;
    }
    GET(cuInit);
    GET(cuDriverGetVersion);
    GET(cuGetErrorName);
    GET(cuGetErrorString);
    GET(cuDeviceGetCount);
    GET(cuDeviceGet);
    GET(cuDeviceGetAttribute);
    GET(cuDeviceGetName);
    GET(cuDevicePrimaryCtxRetain);
    GET(cuDevicePrimaryCtxRelease);
    GET(cuCtxGetCurrent);
    GET(cuCtxSetCurrent);
    GET(cuCtxGetDevice);
    GET(cuCtxSynchronize);
    GET(cuModuleLoadData);
    GET(cuModuleUnload);
    GET(cuModuleGetFunction);
    GET(cuFuncSetAttribute);
    GET(cuFuncGetAttribute);
    GET(cuLaunchKernelEx);
    GET(cuMemAlloc);
    GET(cuMemFree);
    GET(cuMemcpyHtoD);
    GET(cuMemcpyDtoH);
    GET(cuMemsetD8);
    GET(cuStreamSynchronize);
    GET(cuEventCreate);
    GET(cuEventDestroy);
    GET(cuEventRecord);
    GET(cuEventSynchronize);
    GET(cuEventElapsedTime);
    GET(cuStreamWaitEvent);
    GET(cuTensorMapEncodeTiled);
    GET(cuOccupancyMaxActiveClusters);
    GET(cuStreamGetCaptureInfo);
    CUresult r = g_drv.cuInit(0);
    if (r != CUDA_SUCCESS) {
        const char *name = "?";
        g_drv.cuGetErrorName(r, &name);
        snprintf(g_why, sizeof(g_why), "cuInit failed: %s", name);
        return;
    }
    g_drv.cuDriverGetVersion(&g_drv.version);
    int count = 0;
    if (g_drv.cuDeviceGetCount(&count) != CUDA_SUCCESS || count == 0) {
        snprintf(g_why, sizeof(g_why), "the driver reports no CUDA device");
        return;
    }
    g_status = JIT_OK;
}

jit_status_t jit__driver_get(const jit__driver_t **out, jit__diag_t *d) {
    pthread_once(&g_once, load_driver);
    if (g_status != JIT_OK) {
        *out = NULL;
        return jit__fail(d, JIT_NO_GPU, "no GPU: %s", g_why);
    }
    *out = &g_drv;
    return JIT_OK;
}

jit_status_t jit__cuda_fail(const jit__driver_t *drv, CUresult r, const char *what,
                            jit__diag_t *d) {
    const char *name = "CUDA_ERROR_UNKNOWN", *text = "";
    if (drv) {
        drv->cuGetErrorName(r, &name);
        drv->cuGetErrorString(r, &text);
    }
    return jit__fail(d, JIT_CUDA_ERROR, "%s: %s (%s)", what, name ? name : "?", text ? text : "");
}

jit_status_t jit__driver_current_context(const jit__driver_t *drv, CUcontext *ctx, CUdevice *dev,
                                         jit__diag_t *d) {
    CUresult r = drv->cuCtxGetCurrent(ctx);
    if (r != CUDA_SUCCESS)
        return jit__cuda_fail(drv, r, "cuCtxGetCurrent", d);
    if (!*ctx) {
        /* Nobody made a context current: do what the runtime API would, use device 0's
         * primary context. */
        r = drv->cuDeviceGet(dev, 0);
        if (r == CUDA_SUCCESS)
            r = drv->cuDevicePrimaryCtxRetain(ctx, *dev);
        if (r == CUDA_SUCCESS)
            r = drv->cuCtxSetCurrent(*ctx);
        if (r != CUDA_SUCCESS)
            return jit__cuda_fail(drv, r, "making device 0's primary context current", d);
        return JIT_OK;
    }
    r = drv->cuCtxGetDevice(dev);
    if (r != CUDA_SUCCESS)
        return jit__cuda_fail(drv, r, "cuCtxGetDevice", d);
    return JIT_OK;
}
