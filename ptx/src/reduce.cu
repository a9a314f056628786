// Reductions, float32, deterministic (fixed reduction order; no float atomics). The sums also read float16 and
// bfloat16 storage (`_f16`, `_bf16`: each element widened to float32 as it is loaded, float32 accumulation in the
// float32 kernel's order, float32 results), so a 16-bit sum equals the widened one bit for bit.

#define DEVI __device__ __forceinline__
#include "storage.cuh"

// Column sums of x[rows, cols] (row-major): out[c] = sum_r x[r, c] (+ beta*out[c]; out not read when beta == 0).
// Block (32, 8): each block owns 32 columns; the 8 thread rows stride over the rows (4 loads in flight each), then
// a shared tree.
template <int S> DEVI void col_sums(float* __restrict__ out, const ELT(S)* __restrict__ x, int rows, int cols, float beta)
{
    __shared__ float part[8][33];
    const int c = blockIdx.x * 32 + threadIdx.x;
    float s = 0.0f;
    if (c < cols) {
        // four independent partial sums: four loads in flight per thread instead of one (the adds of a single
        // accumulator would wait for each load in turn); the order of the additions is still fixed
        const int step = blockDim.y;
        float s0 = 0.0f, s1 = 0.0f, s2 = 0.0f, s3 = 0.0f;
        int r = threadIdx.y;
        for (; r + 3 * step < rows; r += 4 * step) {
            s0 += Io<S>::ld(x, (long long)r * cols + c);
            s1 += Io<S>::ld(x, (long long)(r + step) * cols + c);
            s2 += Io<S>::ld(x, (long long)(r + 2 * step) * cols + c);
            s3 += Io<S>::ld(x, (long long)(r + 3 * step) * cols + c);
        }
        for (; r < rows; r += step) s0 += Io<S>::ld(x, (long long)r * cols + c);
        s = (s0 + s1) + (s2 + s3);
    }
    part[threadIdx.y][threadIdx.x] = s;
    __syncthreads();
    if (threadIdx.y == 0 && c < cols) {
        float t = 0.0f;
        for (int j = 0; j < (int)blockDim.y; ++j) t += part[j][threadIdx.x];
        out[c] = (beta != 0.0f) ? fmaf(beta, out[c], t) : t;
    }
}

// doc: sum over axis 0 (columns sums) of x[rows, cols]: out[cols] = sum_r x[r, :] (+ beta*out; not read when beta == 0). block (32, 8, 1), grid (ceil(cols/32), 1, 1).
extern "C" __global__ void sum_axis0(float* __restrict__ out, const float* __restrict__ x, int rows, int cols, float beta)
{
    col_sums<S_F32>(out, x, rows, cols, beta);
}

// doc: sum_axis0 of float16 storage x (float32 sums, float32 out). block (32, 8, 1), grid (ceil(cols/32), 1, 1).
extern "C" __global__ void sum_axis0_f16(float* __restrict__ out, const unsigned short* __restrict__ x, int rows, int cols, float beta)
{
    col_sums<S_F16>(out, x, rows, cols, beta);
}

// doc: sum_axis0 of bfloat16 storage x (float32 sums, float32 out). block (32, 8, 1), grid (ceil(cols/32), 1, 1).
extern "C" __global__ void sum_axis0_bf16(float* __restrict__ out, const unsigned short* __restrict__ x, int rows, int cols, float beta)
{
    col_sums<S_BF16>(out, x, rows, cols, beta);
}

// Row sums of x[rows, cols], one warp per row.
template <int S> DEVI void row_sums(float* __restrict__ out, const ELT(S)* __restrict__ x, int rows, int cols, float beta)
{
    const int lane = threadIdx.x & 31;
    const long long r = (long long)blockIdx.x * (blockDim.x >> 5) + (threadIdx.x >> 5);
    if (r >= rows) return;
    const ELT(S)* xr = x + r * cols;
    float s = 0.0f;
    for (int c = lane; c < cols; c += 32) s += Io<S>::ld(xr, c);
    for (int o = 16; o > 0; o >>= 1) s += __shfl_xor_sync(0xffffffffu, s, o);
    if (lane == 0) out[r] = (beta != 0.0f) ? fmaf(beta, out[r], s) : s;
}

// doc: sum over axis 1 (row sums) of x[rows, cols]: out[rows] = sum_c x[:, c] (+ beta*out; not read when beta == 0). One warp per row: block (256, 1, 1), grid (ceil(rows/8), 1, 1).
extern "C" __global__ void sum_axis1(float* __restrict__ out, const float* __restrict__ x, int rows, int cols, float beta)
{
    row_sums<S_F32>(out, x, rows, cols, beta);
}

// doc: sum_axis1 of float16 storage x (float32 sums, float32 out). block (256, 1, 1), grid (ceil(rows/8), 1, 1).
extern "C" __global__ void sum_axis1_f16(float* __restrict__ out, const unsigned short* __restrict__ x, int rows, int cols, float beta)
{
    row_sums<S_F16>(out, x, rows, cols, beta);
}

// doc: sum_axis1 of bfloat16 storage x (float32 sums, float32 out). block (256, 1, 1), grid (ceil(rows/8), 1, 1).
extern "C" __global__ void sum_axis1_bf16(float* __restrict__ out, const unsigned short* __restrict__ x, int rows, int cols, float beta)
{
    row_sums<S_BF16>(out, x, rows, cols, beta);
}

// Block-wide sum for blockDim.x a multiple of 32 (<= 1024); result valid in thread 0.
DEVI float block_sum(float s)
{
    __shared__ float warp_part[32];
    for (int o = 16; o > 0; o >>= 1) s += __shfl_xor_sync(0xffffffffu, s, o);
    const int lane = threadIdx.x & 31, w = threadIdx.x >> 5, nw = blockDim.x >> 5;
    if (lane == 0) warp_part[w] = s;
    __syncthreads();
    s = 0.0f;
    if (w == 0) {
        s = (lane < nw) ? warp_part[lane] : 0.0f;
        for (int o = 16; o > 0; o >>= 1) s += __shfl_xor_sync(0xffffffffu, s, o);
    }
    return s;
}

template <int S> DEVI void partial_sums(float* __restrict__ partials, const ELT(S)* __restrict__ x, long long n)
{
    const long long stride = (long long)gridDim.x * blockDim.x;
    float s = 0.0f;
    for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride) s += Io<S>::ld(x, i);
    s = block_sum(s);
    if (threadIdx.x == 0) partials[blockIdx.x] = s;
}

// doc: pass 1 of sum/mean over all n elements: partials[blockIdx.x] = sum of this block's grid-stride share of x. block (256, 1, 1) (multiple of 32, <= 1024), grid (G, 1, 1) with G <= 1024 (e.g. min(1024, ceil(n/256))); partials has G floats.
extern "C" __global__ void sum_partial(float* __restrict__ partials, const float* __restrict__ x, long long n)
{
    partial_sums<S_F32>(partials, x, n);
}

// doc: sum_partial of float16 storage x (float32 partials). block (256, 1, 1), grid (G, 1, 1), G <= 1024.
extern "C" __global__ void sum_partial_f16(float* __restrict__ partials, const unsigned short* __restrict__ x, long long n)
{
    partial_sums<S_F16>(partials, x, n);
}

// doc: sum_partial of bfloat16 storage x (float32 partials). block (256, 1, 1), grid (G, 1, 1), G <= 1024.
extern "C" __global__ void sum_partial_bf16(float* __restrict__ partials, const unsigned short* __restrict__ x, long long n)
{
    partial_sums<S_BF16>(partials, x, n);
}

// doc: pass 2 of sum/mean: out[0] = scale * sum(partials[0:nparts]) (scale 1 for sum, 1/n for mean). block (1024, 1, 1), grid (1, 1, 1).
extern "C" __global__ void sum_final(float* __restrict__ out, const float* __restrict__ partials, int nparts, float scale)
{
    float s = 0.0f;
    for (int i = threadIdx.x; i < nparts; i += blockDim.x) s += partials[i];
    s = block_sum(s);
    if (threadIdx.x == 0) out[0] = s * scale;
}

// ---------------------------------------------------------------- max / min with their indices along a dim
// x is viewed as [outer, red, inner] (row-major); each output o = (p, q) of the [outer, inner] result reduces
// x[p, :, q]. A group of blockDim.x threads (1, or a multiple of 32 up to 1024) owns one output and blockDim.y
// groups share a block: the shortest rows use block (1, 256) (a thread per output), short rows (32, 8) (a warp per
// output) and long rows (256, 1) or (1024, 1).
// Semantics are PyTorch's: NaN is above every number (max and min both return it), ties take the first index.

#define ARG_NONE 0x7fffffff   // index of "nothing seen yet": loses every comparison

// True when candidate (v, i) replaces the best (bv, bi) so far.
template <bool MAX>
DEVI bool arg_better(float v, int i, float bv, int bi)
{
    const bool vn = v != v, bn = bv != bv;
    if (vn || bn) return vn && (!bn || i < bi);
    if (MAX ? v > bv : v < bv) return true;
    return v == bv && i < bi;
}

template <bool MAX>
DEVI void arg_warp(float& bv, int& bi)
{
    for (int o = 16; o > 0; o >>= 1) {
        const float v = __shfl_xor_sync(0xffffffffu, bv, o);
        const int i = __shfl_xor_sync(0xffffffffu, bi, o);
        if (arg_better<MAX>(v, i, bv, bi)) { bv = v; bi = i; }
    }
}

template <bool MAX>
DEVI void arg_reduce(float* values, long long* indices, const float* __restrict__ x, int outer, int red, int inner)
{
    __shared__ float part_v[32];
    __shared__ int part_i[32];
    const float none = __int_as_float(MAX ? 0xff800000 : 0x7f800000);    // -inf for max, +inf for min
    const long long o = (long long)blockIdx.x * blockDim.y + threadIdx.y;
    const bool valid = o < (long long)outer * inner;                     // no early return: barriers follow
    float bv = none;
    int bi = ARG_NONE;
    if (valid) {
        const long long p = o / inner, q = o - p * inner;
        const float* xr = x + p * red * inner + q;
        for (int r = threadIdx.x; r < red; r += blockDim.x) {           // increasing r: strict wins keep the first
            const float v = xr[(long long)r * inner];
            if (arg_better<MAX>(v, r, bv, bi)) { bv = v; bi = r; }
        }
    }
    if (blockDim.x == 1) {                                               // a thread per output: nothing to merge
        if (valid) {
            if (values) values[o] = bv;
            indices[o] = bi;
        }
        return;
    }
    arg_warp<MAX>(bv, bi);
    const int nw = blockDim.x >> 5;                                      // warps per group (same in the whole block)
    if (nw > 1) {
        const int lane = threadIdx.x & 31, w = threadIdx.x >> 5;
        if (lane == 0) { part_v[threadIdx.y * nw + w] = bv; part_i[threadIdx.y * nw + w] = bi; }
        __syncthreads();
        if (w == 0) {
            bv = lane < nw ? part_v[threadIdx.y * nw + lane] : none;
            bi = lane < nw ? part_i[threadIdx.y * nw + lane] : ARG_NONE;
            arg_warp<MAX>(bv, bi);
        }
    }
    if (valid && threadIdx.x == 0) {
        if (values) values[o] = bv;
        indices[o] = bi;
    }
}

// doc: max along a dim of x viewed as [outer, red, inner] (red >= 1): values[outer*inner] (skipped when null) and int64 indices (first on ties; NaN wins). block (1, 256, 1) with grid ceil(outer*inner/256), (32, 8, 1) with grid ceil(outer*inner/8), or (256|1024, 1, 1) with grid outer*inner.
extern "C" __global__ void max_dim(float* values, long long* indices, const float* __restrict__ x, int outer, int red, int inner)
{
    arg_reduce<true>(values, indices, x, outer, red, inner);
}

// doc: min along a dim of x viewed as [outer, red, inner] (red >= 1): as max_dim (NaN wins here too, as PyTorch's min).
extern "C" __global__ void min_dim(float* values, long long* indices, const float* __restrict__ x, int outer, int red, int inner)
{
    arg_reduce<false>(values, indices, x, outer, red, inner);
}

// doc: backward of max_dim/min_dim: dx[p, indices[o], q] = dy[o] for each output o = (p, q); dx must be zeroed first. Grid-stride over outer*inner outputs (block 256).
extern "C" __global__ void max_dim_bwd(float* __restrict__ dx, const float* __restrict__ dy, const long long* __restrict__ indices, int outer, int red, int inner)
{
    const long long n = (long long)outer * inner, stride = (long long)gridDim.x * blockDim.x;
    for (long long o = (long long)blockIdx.x * blockDim.x + threadIdx.x; o < n; o += stride) {
        const long long p = o / inner, q = o - p * inner;
        dx[(p * red + indices[o]) * inner + q] = dy[o];
    }
}
