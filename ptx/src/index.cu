// Indexing along one dimension, for every element size: the tensor seen as [outer, size, inner] and an
// int64 index vector idx[nidx] into its middle dimension (negative entries count from the end, as in
// PyTorch; an entry outside [-size, size) trips a device-side assert, PyTorch's
// `index >= -size && index < size`).
//   index_select_bN(out, src, idx, outer, nidx, size, inner): out[o, j, i] = src[o, idx[j], i]
//   index_copy_bN(dst, src, idx, outer, nidx, size, inner):   dst[o, idx[j], i] = src[o, j, i]
//   index_add_f32(dst, src, idx, outer, nidx, size, inner):   dst[o, idx[j], i] += src[o, j, i] (atomic: repeated
//                                                             indices add up; the order of the adds is not fixed)
//   index_add_f32_{f16,bf16}: the same into a float32 dst from a 16-bit src, widened (exactly) as it is read
// Grid-stride loops over n = outer * nidx * inner in row-major order of [o, j, i]: consecutive threads take
// consecutive i, so rows of the selected slices move coalesced.
// assert() is NVRTC's built-in device-side assert (__assertfail): on a GPU it stops the kernel with
// CUDA_ERROR_ASSERT ("device-side assert triggered") and prints the condition; the simulator does the same.

#include "common.cuh"
#define DEVICE_ASSERT(cond) ((cond) ? (void)0 : __assertfail(#cond, __FILE__, __LINE__, __func__, 1))

#define DEVI __device__ __forceinline__

// (offset of [o, idx[j], i] in the [outer, size, inner] tensor) for the flat position t of [outer, nidx, inner]
DEVI long long indexed_offset(long long t, const long long* __restrict__ idx, long long nidx, long long size,
                              long long inner)
{
    const long long i = t % inner, r = t / inner, j = r % nidx, o = r / nidx;
    long long index = idx[j];
    assert(index >= -size && index < size);
    if (index < 0)
        index += size;
    return (o * size + index) * inner + i;
}

template <typename T>
DEVI void index_select(T* __restrict__ out, const T* __restrict__ src, const long long* __restrict__ idx,
                       long long outer, long long nidx, long long size, long long inner)
{
    GRID_STRIDE(t, outer * nidx * inner) out[t] = src[indexed_offset(t, idx, nidx, size, inner)];
}

template <typename T>
DEVI void index_copy(T* __restrict__ dst, const T* __restrict__ src, const long long* __restrict__ idx,
                     long long outer, long long nidx, long long size, long long inner)
{
    GRID_STRIDE(t, outer * nidx * inner) dst[indexed_offset(t, idx, nidx, size, inner)] = src[t];
}

#define INDEX_KERNELS(BYTES, T)                                                                                \
    /* doc: out[o, j, i] = src[o, idx[j], i] over [outer, nidx, inner] (BYTES-byte elements). */                \
    extern "C" __global__ void index_select_b##BYTES(T* out, const T* src, const long long* idx, long long outer, \
                                                     long long nidx, long long size, long long inner)           \
    { index_select(out, src, idx, outer, nidx, size, inner); }                                                  \
    /* doc: dst[o, idx[j], i] = src[o, j, i] over [outer, nidx, inner] (BYTES-byte elements). */                \
    extern "C" __global__ void index_copy_b##BYTES(T* dst, const T* src, const long long* idx, long long outer,  \
                                                   long long nidx, long long size, long long inner)             \
    { index_copy(dst, src, idx, outer, nidx, size, inner); }

INDEX_KERNELS(1, unsigned char)
INDEX_KERNELS(2, unsigned short)
INDEX_KERNELS(4, unsigned int)
INDEX_KERNELS(8, unsigned long long)

// doc: dst[o, idx[j], i] += src[o, j, i] over [outer, nidx, inner], float32, atomically (repeated indices add up).
extern "C" __global__ void index_add_f32(float* __restrict__ dst, const float* __restrict__ src,
                                         const long long* __restrict__ idx, long long outer, long long nidx,
                                         long long size, long long inner)
{
    GRID_STRIDE(t, outer * nidx * inner) atomicAdd(&dst[indexed_offset(t, idx, nidx, size, inner)], src[t]);
}

// doc: dst[o, idx[j], i] += float(src[o, j, i]) over [outer, nidx, inner]: float32 dst, float16 src (widened exactly), atomically.
extern "C" __global__ void index_add_f32_f16(float* __restrict__ dst, const unsigned short* __restrict__ src,
                                             const long long* __restrict__ idx, long long outer, long long nidx,
                                             long long size, long long inner)
{
    GRID_STRIDE(t, outer * nidx * inner)
    {
        float v;
        asm("cvt.f32.f16 %0, %1;" : "=f"(v) : "h"(src[t]));
        atomicAdd(&dst[indexed_offset(t, idx, nidx, size, inner)], v);
    }
}

// doc: dst[o, idx[j], i] += float(src[o, j, i]) over [outer, nidx, inner]: float32 dst, bfloat16 src (widened exactly), atomically.
extern "C" __global__ void index_add_f32_bf16(float* __restrict__ dst, const unsigned short* __restrict__ src,
                                              const long long* __restrict__ idx, long long outer, long long nidx,
                                              long long size, long long inner)
{
    GRID_STRIDE(t, outer * nidx * inner)
        atomicAdd(&dst[indexed_offset(t, idx, nidx, size, inner)], __uint_as_float((unsigned)src[t] << 16));
}
