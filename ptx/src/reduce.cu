// Reductions, float32, deterministic (fixed reduction order; no float atomics).

#define DEVI __device__ __forceinline__

// Column sums of x[rows, cols] (row-major): out[c] = sum_r x[r, c] (+ beta*out[c]; out not read when beta == 0).
// Block (32, 8): each block owns 32 columns; the 8 thread rows stride over the rows, then a shared tree.
DEVI void col_sums(float* __restrict__ out, const float* __restrict__ x, int rows, int cols, float beta)
{
    __shared__ float part[8][33];
    const int c = blockIdx.x * 32 + threadIdx.x;
    float s = 0.0f;
    if (c < cols)
        for (int r = threadIdx.y; r < rows; r += blockDim.y) s += x[(long long)r * cols + c];
    part[threadIdx.y][threadIdx.x] = s;
    __syncthreads();
    if (threadIdx.y == 0 && c < cols) {
        float t = 0.0f;
        for (int j = 0; j < (int)blockDim.y; ++j) t += part[j][threadIdx.x];
        out[c] = (beta != 0.0f) ? fmaf(beta, out[c], t) : t;
    }
}

// doc: bias gradient db[N] = sum_m dY[m, n] (+ beta*db; db not read when beta == 0). block (32, 8, 1), grid (ceil(N/32), 1, 1).
extern "C" __global__ void bias_grad(float* __restrict__ db, const float* __restrict__ dY, int M, int N, float beta)
{
    col_sums(db, dY, M, N, beta);
}

// doc: sum over axis 0 (columns sums) of x[rows, cols]: out[cols] = sum_r x[r, :] (+ beta*out; not read when beta == 0). block (32, 8, 1), grid (ceil(cols/32), 1, 1).
extern "C" __global__ void sum_axis0(float* __restrict__ out, const float* __restrict__ x, int rows, int cols, float beta)
{
    col_sums(out, x, rows, cols, beta);
}

// doc: sum over axis 1 (row sums) of x[rows, cols]: out[rows] = sum_c x[:, c] (+ beta*out; not read when beta == 0). One warp per row: block (256, 1, 1), grid (ceil(rows/8), 1, 1).
extern "C" __global__ void sum_axis1(float* __restrict__ out, const float* __restrict__ x, int rows, int cols, float beta)
{
    const int lane = threadIdx.x & 31;
    const long long r = (long long)blockIdx.x * (blockDim.x >> 5) + (threadIdx.x >> 5);
    if (r >= rows) return;
    const float* xr = x + r * cols;
    float s = 0.0f;
    for (int c = lane; c < cols; c += 32) s += xr[c];
    for (int o = 16; o > 0; o >>= 1) s += __shfl_xor_sync(0xffffffffu, s, o);
    if (lane == 0) out[r] = (beta != 0.0f) ? fmaf(beta, out[r], s) : s;
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

// doc: pass 1 of sum/mean over all n elements: partials[blockIdx.x] = sum of this block's grid-stride share of x. block (256, 1, 1) (multiple of 32, <= 1024), grid (G, 1, 1) with G <= 1024 (e.g. min(1024, ceil(n/256))); partials has G floats.
extern "C" __global__ void sum_partial(float* __restrict__ partials, const float* __restrict__ x, long long n)
{
    const long long stride = (long long)gridDim.x * blockDim.x;
    float s = 0.0f;
    for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride) s += x[i];
    s = block_sum(s);
    if (threadIdx.x == 0) partials[blockIdx.x] = s;
}

// doc: pass 2 of sum/mean: out[0] = scale * sum(partials[0:nparts]) (scale 1 for sum, 1/n for mean). block (1024, 1, 1), grid (1, 1, 1).
extern "C" __global__ void sum_final(float* __restrict__ out, const float* __restrict__ partials, int nparts, float scale)
{
    float s = 0.0f;
    for (int i = threadIdx.x; i < nparts; i += blockDim.x) s += partials[i];
    s = block_sum(s);
    if (threadIdx.x == 0) out[0] = s * scale;
}
