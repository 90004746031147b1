/*
 * The per-case translation unit of the functional model: the generated kernel source (written
 * by `fmodel gen`) compiled as host C++ against tests/fmodel/shim/device/, which stand
 * before kernel_src/ on the include path, and a C entry the model calls in every thread.
 */
#include FM_KERNEL_SOURCE

/* The kernel's parameter block type: the tcgen05 one unless the build names another. */
#ifndef FM_PARAMS_TYPE
#define FM_PARAMS_TYPE jitgemm_tc_params
#endif

extern "C" void fm_kernel_entry(const void *p) {
    FM_KERNEL_NAME(*(const FM_PARAMS_TYPE *)p);
}
