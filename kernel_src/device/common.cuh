/*
 * Family-neutral definitions for device code compiled by NVRTC without any include path or CUDA
 * header: NVRTC has no <stdint.h>, so the fixed-width integer types are spelled out here, and the
 * driver's CUtensorMap (an opaque, 64-byte aligned 128-byte blob) gets a stand-in of the same size
 * and alignment so a tensor map can travel inside a by-value kernel parameter struct.
 *
 * Nothing here may become .global data: no namespace-scope const/constexpr variables.
 */
#ifndef JITGEMM_DEVICE_COMMON_CUH
#define JITGEMM_DEVICE_COMMON_CUH

typedef signed char i8;
typedef unsigned char u8;
typedef short i16;
typedef unsigned short u16;
typedef int i32;
typedef unsigned int u32;
typedef long long i64;
typedef unsigned long long u64;

/* Bit-identical stand-in for CUtensorMap: the host memcpy's the encoded map into it. TMA reads
 * it through its generic address, which for a __grid_constant__ parameter is the param space. */
struct __align__(64) jit_tmap {
    unsigned long long v[16];
};

/* ceil(a / b) for positive b, usable in constant expressions. */
template <typename T> __device__ __forceinline__ constexpr T ceil_div(T a, T b) {
    return (a + b - 1) / b;
}

template <typename T> __device__ __forceinline__ constexpr T min_of(T a, T b) {
    return a < b ? a : b;
}

template <typename T> __device__ __forceinline__ constexpr T max_of(T a, T b) {
    return a < b ? b : a;
}

#endif /* JITGEMM_DEVICE_COMMON_CUH */
