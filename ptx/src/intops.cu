// Integer kernels: conversions between the integer dtypes (bool, uint8, int8, int16, int32, int64), int64
// unary math (abs, neg, clamp, sign, bitwise not) and int64 reductions (sum, max, min with the first index
// on ties). The narrow integer dtypes compute through int64 (rawdev/ops/opmath.py), so int64 is the one
// arithmetic type here; a conversion back truncates, which is the wrap-around PyTorch's integer math has.

#include "common.cuh"
#define I64_MAX 9223372036854775807LL
#define I64_MIN (-I64_MAX - 1LL)

// dtype codes: 0 uint8, 1 int8, 2 int16, 3 int32, 4 int64, 5 bool (a byte, written as 0/1)
__device__ __forceinline__ long long load_int(const void* p, long long i, int code)
{
    switch (code) {
    case 0: case 5: return (long long)((const unsigned char*)p)[i];
    case 1: return (long long)((const signed char*)p)[i];
    case 2: return (long long)((const short*)p)[i];
    case 3: return (long long)((const int*)p)[i];
    default: return ((const long long*)p)[i];
    }
}

// doc: y = x converted between integer dtypes (codes: 0 u8, 1 i8, 2 i16, 3 i32, 4 i64, 5 bool); narrowing
// keeps the low bits (two's-complement wrap, as a C cast and PyTorch), to bool is x != 0.
extern "C" __global__ void cast_int(void* __restrict__ y, const void* __restrict__ x, int src, int dst, long long n)
{
    GRID_STRIDE(i, n)
    {
        const long long v = load_int(x, i, src);
        switch (dst) {
        case 0: ((unsigned char*)y)[i] = (unsigned char)v; break;
        case 1: ((signed char*)y)[i] = (signed char)v; break;
        case 2: ((short*)y)[i] = (short)v; break;
        case 3: ((int*)y)[i] = (int)v; break;
        case 4: ((long long*)y)[i] = v; break;
        default: ((unsigned char*)y)[i] = v != 0; break;
        }
    }
}

// doc: z = op(x) on int64; op 0 abs, 1 neg, 2 clamp to [lo, hi], 3 sign, 4 bitwise not (wrapping like C:
// abs and neg of INT64_MIN stay INT64_MIN).
extern "C" __global__ void unary_i64(long long* __restrict__ z, const long long* __restrict__ x, int op, long long lo,
                                     long long hi, long long n)
{
    GRID_STRIDE(i, n)
    {
        const long long a = x[i];
        long long r;
        switch (op) {
        case 0: r = a < 0 ? (long long)(0ULL - (unsigned long long)a) : a; break;
        case 1: r = (long long)(0ULL - (unsigned long long)a); break;
        case 2: r = a < lo ? lo : (a > hi ? hi : a); break;
        case 3: r = (a > 0) - (a < 0); break;
        default: r = ~a; break;
        }
        z[i] = r;
    }
}

// (v, i) folded into (acc, ai): sum, or max/min keeping the first index among equal values.
__device__ __forceinline__ void fold_i64(long long& acc, long long& ai, long long v, long long i, int op)
{
    if (op == 0) {
        acc = (long long)((unsigned long long)acc + (unsigned long long)v);
    } else {
        const bool better = op == 1 ? v > acc : v < acc;
        if (better || (v == acc && i < ai)) { acc = v; ai = i; }
    }
}

// doc: int64 reduction over axis 1 of x viewed as [outer, red, inner] (red >= 1): vals[p*inner+q] =
// op over j of x[(p*red+j)*inner+q]; op 0 sum (wrapping), 1 max, 2 min (idx, when not null, gets the first j
// of the extreme value). inner == 1 and red >= 32: a block of 256 threads per output (grid-stride over outputs,
// a shared-memory tree); otherwise a thread per output (reads coalesced across q when inner > 1; a short row
// read by one thread rather than a block of 256 with eight barriers for a few elements).
extern "C" __global__ void reduce_i64(long long* __restrict__ vals, long long* __restrict__ idx,
                                      const long long* __restrict__ x, long long outer, long long red,
                                      long long inner, int op)
{
    const long long init = op == 0 ? 0LL : (op == 1 ? I64_MIN : I64_MAX);
    if (inner == 1 && red >= 32) {
        __shared__ long long sv[256];
        __shared__ long long si[256];
        const int t = threadIdx.x;
        for (long long o = blockIdx.x; o < outer; o += gridDim.x) {
            const long long* row = x + o * red;
            long long acc = init, ai = I64_MAX;
            for (long long j = t; j < red; j += blockDim.x) fold_i64(acc, ai, row[j], j, op);
            sv[t] = acc;
            si[t] = ai;
            __syncthreads();
            for (int s = blockDim.x / 2; s > 0; s >>= 1) {
                if (t < s) {
                    long long a = sv[t], b = si[t];
                    fold_i64(a, b, sv[t + s], si[t + s], op);
                    sv[t] = a;
                    si[t] = b;
                }
                __syncthreads();
            }
            if (t == 0) {
                vals[o] = sv[0];
                if (idx) idx[o] = si[0];
            }
            __syncthreads();
        }
        return;
    }
    GRID_STRIDE(k, outer * inner)
    {
        const long long p = k / inner, q = k - p * inner;
        const long long* col = x + p * red * inner + q;
        long long acc = init, ai = I64_MAX;
        for (long long j = 0; j < red; ++j) fold_i64(acc, ai, col[j * inner], j, op);
        vals[k] = acc;
        if (idx) idx[k] = ai;
    }
}
