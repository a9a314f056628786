// Element storages of the kernels that serve float32, float16 and bfloat16 tensors from one body (included by
// the .cu files; tools/build_ptx.py hands every ptx/src/*.cuh to NVRTC as a header).
// Io<S>::ld loads an element and widens it to float32 (exact), the body's math is float32, and Io<S>::st rounds
// the float32 result once to the storage: float16 with cvt.rn.f16.f32, bfloat16 with the integer
// round-to-nearest-even below (sm_75 has no cvt to bf16). 16-bit elements travel as their bits (unsigned short),
// so a kernel's 16-bit pointer parameters are `unsigned short*`.
#pragma once

enum Storage { S_F32, S_F16, S_BF16 };

__device__ __forceinline__ float f16_to_f32(unsigned short h)
{
    float f;
    asm("cvt.f32.f16 %0, %1;" : "=f"(f) : "h"(h));
    return f;
}

__device__ __forceinline__ unsigned short f32_to_f16(float f)
{
    unsigned short h;
    asm("cvt.rn.f16.f32 %0, %1;" : "=h"(h) : "f"(f));
    return h;
}

__device__ __forceinline__ float bf16_to_f32(unsigned short b) { return __uint_as_float((unsigned int)b << 16); }

// NaN -> quiet NaN with its sign kept; overflow -> inf
__device__ __forceinline__ unsigned short f32_to_bf16(float f)
{
    const unsigned int u = __float_as_uint(f);
    if ((u & 0x7fffffffu) > 0x7f800000u) return (unsigned short)((u >> 16) | 0x0040u);
    return (unsigned short)((u + 0x7fffu + ((u >> 16) & 1u)) >> 16);
}

template <int S> struct Io;
template <> struct Io<S_F32> {
    typedef float T;
    static __device__ __forceinline__ float ld(const float* p, long long i) { return p[i]; }
    static __device__ __forceinline__ void st(float* p, long long i, float v) { p[i] = v; }
};
template <> struct Io<S_F16> {
    typedef unsigned short T;
    static __device__ __forceinline__ float ld(const unsigned short* p, long long i) { return f16_to_f32(p[i]); }
    static __device__ __forceinline__ void st(unsigned short* p, long long i, float v) { p[i] = f32_to_f16(v); }
};
template <> struct Io<S_BF16> {
    typedef unsigned short T;
    static __device__ __forceinline__ float ld(const unsigned short* p, long long i) { return bf16_to_f32(p[i]); }
    static __device__ __forceinline__ void st(unsigned short* p, long long i, float v) { p[i] = f32_to_bf16(v); }
};

#define ELT(S) typename Io<S>::T   // a kernel body's element pointer type
