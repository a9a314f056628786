// gather / scatter along one dimension (PyTorch's gather, scatter, scatter_add, scatter_reduce), for every
// element size. The operand indexed along dim is seen as [outer, size, inner]; the index tensor (and the
// gathered output / the scattered source) as [outer, nidx, inner] with the same outer and inner (the host
// narrows the other dims to the index's sizes first). Each index entry must lie in [0, size): PyTorch's
// gather/scatter take no negative indices; an entry outside trips a device-side assert (__assertfail), as
// PyTorch's `idx_dim >= 0 && idx_dim < index_size && "index out of bounds"`.
//   gather_bN(out, src, idx, outer, nidx, size, inner):       out[o, j, i] = src[o, idx[o, j, i], i]
//   scatter_bN(dst, src, idx, outer, nidx, size, inner):      dst[o, idx[o, j, i], i] = src[o, j, i]
//   scatter_add_f32(dst, src, idx, ...):                     dst[o, idx[o, j, i], i] += src[o, j, i] (atomic)
//   scatter_reduce_f32(dst, src, idx, ..., op):              dst[...] = dst[...] (op) src[...] atomically,
//                                                            op 0 = prod, 1 = amax, 2 = amin (NaN wins)
// Grid-stride loops over n = outer * nidx * inner in row-major order: consecutive threads take consecutive
// i, so the index, the source and the output move coalesced; 64-bit offsets throughout.

#include "common.cuh"
#define DEVI __device__ __forceinline__

// the offset of [o, idx[t], i] in the [outer, size, inner] operand for the flat position t of [outer, nidx, inner]
DEVI long long scattered_offset(long long t, const long long* __restrict__ idx, long long nidx, long long size,
                                long long inner)
{
    const long long i = t % inner, o = t / inner / nidx;
    const long long index = idx[t];
    assert(index >= 0 && index < size);
    return (o * size + index) * inner + i;
}

template <typename T>
DEVI void gather(T* __restrict__ out, const T* __restrict__ src, const long long* __restrict__ idx,
                 long long outer, long long nidx, long long size, long long inner)
{
    GRID_STRIDE(t, outer * nidx * inner) out[t] = src[scattered_offset(t, idx, nidx, size, inner)];
}

template <typename T>
DEVI void scatter(T* __restrict__ dst, const T* __restrict__ src, const long long* __restrict__ idx,
                  long long outer, long long nidx, long long size, long long inner)
{
    GRID_STRIDE(t, outer * nidx * inner) dst[scattered_offset(t, idx, nidx, size, inner)] = src[t];
}

#define GATHER_KERNELS(BYTES, T)                                                                                   \
    /* doc: out[o, j, i] = src[o, idx[o, j, i], i] over [outer, nidx, inner] (BYTES-byte elements). */            \
    extern "C" __global__ void gather_b##BYTES(T* out, const T* src, const long long* idx, long long outer,        \
                                               long long nidx, long long size, long long inner)                    \
    { gather(out, src, idx, outer, nidx, size, inner); }                                                           \
    /* doc: dst[o, idx[o, j, i], i] = src[o, j, i] over [outer, nidx, inner] (BYTES-byte elements). */            \
    extern "C" __global__ void scatter_b##BYTES(T* dst, const T* src, const long long* idx, long long outer,       \
                                                long long nidx, long long size, long long inner)                   \
    { scatter(dst, src, idx, outer, nidx, size, inner); }

GATHER_KERNELS(1, unsigned char)
GATHER_KERNELS(2, unsigned short)
GATHER_KERNELS(4, unsigned int)
GATHER_KERNELS(8, unsigned long long)

// doc: dst[o, idx[o, j, i], i] += src[o, j, i] over [outer, nidx, inner], float32, atomically (repeated indices add up).
extern "C" __global__ void scatter_add_f32(float* __restrict__ dst, const float* __restrict__ src,
                                           const long long* __restrict__ idx, long long outer, long long nidx,
                                           long long size, long long inner)
{
    GRID_STRIDE(t, outer * nidx * inner) atomicAdd(&dst[scattered_offset(t, idx, nidx, size, inner)], src[t]);
}

DEVI float reduce_op(float a, float b, int op)
{
    if (op == 0)
        return a * b;
    if (a != a || b != b)       // amax / amin propagate NaN, as PyTorch's
        return a != a ? a : b;
    return op == 1 ? fmaxf(a, b) : fminf(a, b);
}

// doc: dst[o, idx[o, j, i], i] = dst[...] (op) src[o, j, i] over [outer, nidx, inner], float32, atomically (compare-and-swap); op 0 = prod, 1 = amax, 2 = amin.
extern "C" __global__ void scatter_reduce_f32(float* __restrict__ dst, const float* __restrict__ src,
                                              const long long* __restrict__ idx, long long outer, long long nidx,
                                              long long size, long long inner, int op)
{
    GRID_STRIDE(t, outer * nidx * inner)
    {
        unsigned int* p = (unsigned int*)&dst[scattered_offset(t, idx, nidx, size, inner)];
        const float v = src[t];
        unsigned int old = *p, seen;
        do {
            seen = old;
            old = atomicCAS(p, seen, __float_as_uint(reduce_op(__uint_as_float(seen), v, op)));
        } while (old != seen);
    }
}

// doc: out[t] = the row-major linear position of (idx[0, t], ..., idx[k-1, t]) in a [sizes[0], ..., sizes[k-1]] block, t < n; negative entries count from the end, an entry outside [-size, size) trips a device-side assert.
extern "C" __global__ void linear_index(long long* __restrict__ out, const long long* __restrict__ idx,
                                        const long long* __restrict__ sizes, int k, long long n)
{
    GRID_STRIDE(t, n)
    {
        long long lin = 0;
        for (int j = 0; j < k; ++j) {
            const long long size = sizes[j];
            long long index = idx[(long long)j * n + t];
            assert(index >= -size && index < size);
            if (index < 0)
                index += size;
            lin = lin * size + index;
        }
        out[t] = lin;
    }
}
