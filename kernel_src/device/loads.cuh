/*
 * Global loads whose place in the instruction stream matters: issued where they are written
 * and consumed later, so that their latency hides behind other work. Each is `asm volatile`:
 * the compiler keeps it in order with the other volatile asm around it (an mbarrier wait, a
 * wgmma) instead of sinking it next to its first use, where the warp would wait out the load.
 * No "memory" clobber: they read data no thread writes during the kernel.
 */
#ifndef JITGEMM_DEVICE_LOADS_CUH
#define JITGEMM_DEVICE_LOADS_CUH

#include "device/common.cuh"

/* One float through the read-only path (ld.global.nc) where `pred` holds, else 0.0f; a
 * predicated load, so the result register is not read (and the warp does not wait) until it is
 * used. `p` need not be a valid address when `pred` is false. */
static __device__ __forceinline__ float ld_nc_f32_if(bool pred, const float *p) {
    float v;
    asm volatile("{\n\t.reg .pred q;\n\tsetp.ne.b32 q, %2, 0;\n\t"
                 "mov.f32 %0, 0f00000000;\n\t"
                 "@q ld.global.nc.f32 %0, [%1];\n\t}"
                 : "=f"(v)
                 : "l"(p), "r"((u32)pred));
    return v;
}

/* Copy 4 bytes from global to shared memory asynchronously (cp.async, sm_80 and later), or
 * write 4 zero bytes where `pred` is false (source size 0: nothing is read, so `src` need not
 * be a valid address then). The copy lands later; cp_async_mbar_arrive_noinc reports it. */
static __device__ __forceinline__ void cp_async_4_zfill(u32 dst, const void *src, bool pred) {
    asm volatile("cp.async.ca.shared.global [%0], [%1], 4, %2;" ::"r"(dst), "l"(src),
                 "r"(pred ? 4u : 0u)
                 : "memory");
}

/* One arrival on the mbarrier at `bar` once every cp.async this thread issued before has
 * landed (cp.async.mbarrier.arrive.noinc: the arrival is one of those the barrier was
 * initialised to expect). */
static __device__ __forceinline__ void cp_async_mbar_arrive_noinc(u32 bar) {
    asm volatile("cp.async.mbarrier.arrive.noinc.shared::cta.b64 [%0];" ::"r"(bar) : "memory");
}

/* A 4-byte shared-memory load that stays where it is written: `asm volatile` with a "memory"
 * clobber, so neither the compiler nor ptxas hoists it above the wgmma.wait_group before it
 * (an ordinary load of the scales was scheduled between the wgmmas, and the multiply that
 * used it then held back the last wgmmas of the block while the load waited behind the
 * operand reads; fp8_block_wgmma/device/mainloop.cuh). */
static __device__ __forceinline__ float ld_shared_f32(u32 addr) {
    float v;
    asm volatile("ld.shared.f32 %0, [%1];" : "=f"(v) : "r"(addr) : "memory");
    return v;
}

#endif /* JITGEMM_DEVICE_LOADS_CUH */
