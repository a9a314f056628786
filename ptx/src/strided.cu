// Strided copy: makes any view contiguous (or writes into a strided view), for every element size.
//
// For every linear index i in [0, n), unravelled row-major over shape[0..rank) into idx:
//     dst[dst_off + sum_d idx_d * dst_stride_d] = src[src_off + sum_d idx_d * src_stride_d]
// Offsets and strides are in elements, 64-bit signed (stride 0 broadcasts); rank 0..8 (rank 0 copies the
// one element at the offsets); n = prod(shape) up to 2^63. The element is moved as raw bits of its size
// (float NaN payloads, -0.0 and bool bytes are kept exactly). src and dst must not overlap, and dst must
// not map two indices to one element (a race, as on any GPU copy).
// Grid-stride loop over i: consecutive threads take consecutive i, so the stores are coalesced when dst
// is contiguous. Any 1-D grid/block works (rawdev launches block 256, grid min(ceil(n/256), 65535)).
// The geometry travels by value in the kernel's parameter space (.param .align 8 .b8 geom[192]); the loop
// over dimensions is unrolled to MAX_RANK with constant indices, so it reads it with ld.param.

#include "common.cuh"
#define DEVI __device__ __forceinline__

#define MAX_RANK 8

struct StridedGeom {
    long long shape[MAX_RANK];        // only [0, rank) are read
    long long src_stride[MAX_RANK];
    long long dst_stride[MAX_RANK];
};

template <typename T>
DEVI void strided_copy(T* __restrict__ dst, long long dst_off, const T* __restrict__ src, long long src_off,
                       long long n, int rank, const StridedGeom& g)
{
    GRID_STRIDE(i, n) {
        unsigned long long r = (unsigned long long)i;   // what is left to unravel, innermost dimension first
        long long so = src_off, d_o = dst_off;
#pragma unroll
        for (int d = MAX_RANK - 1; d >= 0; --d) {
            if (d < rank) {
                long long k;
                if (d == 0) {                           // i < n = prod(shape): what is left is idx_0
                    k = (long long)r;
                } else {
                    const unsigned long long s = (unsigned long long)g.shape[d], q = r / s;
                    k = (long long)(r - q * s);
                    r = q;
                }
                so += k * g.src_stride[d];
                d_o += k * g.dst_stride[d];
            }
        }
        dst[d_o] = src[so];
    }
}

// doc: 1-byte elements (bool, u8): dst[dst_off + idx.dst_stride] = src[src_off + idx.src_stride] for every index idx of shape[0..rank) (row-major, n = prod(shape) elements); g = {shape[8], src_stride[8], dst_stride[8]} int64, in elements.
extern "C" __global__ void strided_copy_b1(unsigned char* __restrict__ dst, long long dst_off, const unsigned char* __restrict__ src, long long src_off, long long n, int rank, StridedGeom g)
{
    strided_copy(dst, dst_off, src, src_off, n, rank, g);
}

// doc: 2-byte elements (f16, bf16): as strided_copy_b1.
extern "C" __global__ void strided_copy_b2(unsigned short* __restrict__ dst, long long dst_off, const unsigned short* __restrict__ src, long long src_off, long long n, int rank, StridedGeom g)
{
    strided_copy(dst, dst_off, src, src_off, n, rank, g);
}

// doc: 4-byte elements (f32, i32): as strided_copy_b1.
extern "C" __global__ void strided_copy_b4(unsigned int* __restrict__ dst, long long dst_off, const unsigned int* __restrict__ src, long long src_off, long long n, int rank, StridedGeom g)
{
    strided_copy(dst, dst_off, src, src_off, n, rank, g);
}

// doc: 8-byte elements (i64, f64): as strided_copy_b1.
extern "C" __global__ void strided_copy_b8(unsigned long long* __restrict__ dst, long long dst_off, const unsigned long long* __restrict__ src, long long src_off, long long n, int rank, StridedGeom g)
{
    strided_copy(dst, dst_off, src, src_off, n, rank, g);
}
