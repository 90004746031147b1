/*
 * Warp-level building blocks of the Ampere-style data path (sm_80 and later): cp.async copies,
 * ldmatrix and the FP8 mma.sync. One PTX instruction per function.
 */
#ifndef JITGEMM_DEVICE_WARP_MMA_CUH
#define JITGEMM_DEVICE_WARP_MMA_CUH

#include "device/common.cuh"

/* Shared-window address of a generic pointer to shared memory. */
static __device__ __forceinline__ u32 smem_u32(const void *p) {
    u32 r;
    asm("{ .reg .u64 t; cvta.to.shared.u64 t, %1; cvt.u32.u64 %0, t; }" : "=r"(r) : "l"(p));
    return r;
}

/* 16 bytes global -> shared through L2 only; with src_bytes 0 nothing is read and the 16
 * bytes are zero-filled, which is how ragged M, N and K tails are padded. */
static __device__ __forceinline__ void cp_async_16(u32 dst, const void *src, u32 src_bytes) {
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;" ::"r"(dst), "l"(src),
                 "r"(src_bytes)
                 : "memory");
}

static __device__ __forceinline__ void cp_async_commit() {
    asm volatile("cp.async.commit_group;" ::: "memory");
}

/* Wait until at most Pending of this thread's committed groups are still in flight. */
template <int Pending> static __device__ __forceinline__ void cp_async_wait() {
    asm volatile("cp.async.wait_group %0;" ::"n"(Pending) : "memory");
}

/* Four 8x8 b16 matrices; lane l gives the row address of matrix l / 8, row l % 8. */
static __device__ __forceinline__ void ldmatrix_x4(u32 (&r)[4], u32 addr) {
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
                 : "r"(addr)
                 : "memory");
}

/* d += A(16x32, row) * B(32x8, col), E4M3 in, FP32 accumulate. */
static __device__ __forceinline__ void mma_e4m3_16x8x32(float (&d)[4], const u32 (&a)[4], u32 b0,
                                                        u32 b1) {
    asm("mma.sync.aligned.m16n8k32.row.col.f32.e4m3.e4m3.f32 "
        "{%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, {%0, %1, %2, %3};"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}

#endif /* JITGEMM_DEVICE_WARP_MMA_CUH */
