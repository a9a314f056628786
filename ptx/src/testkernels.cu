// Small kernels that exercise the simulator's interpreter: elementwise with a
// grid-stride loop, warp shuffles, shared memory + __syncthreads, atomics, and one kernel with a
// deliberately divergent barrier.

// doc: y[i] = a*x[i] + y[i] for i < n. Any grid/block (1-D); grid-stride loop.
extern "C" __global__ void saxpy(float* __restrict__ y, const float* __restrict__ x, float a, long long n)
{
    long long stride = (long long)gridDim.x * blockDim.x;
    for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride)
        y[i] = fmaf(a, x[i], y[i]);
}

// doc: out[r] = sum_c x[r, c] for x[rows, cols] row-major; one warp per row. block (32*w, 1, 1) with w warps, grid ceil(rows / w); each lane strides over the row, then __shfl_down_sync tree.
extern "C" __global__ void row_sum_warp(float* __restrict__ out, const float* __restrict__ x, int rows, int cols)
{
    int warps = blockDim.x >> 5;
    int lane = threadIdx.x & 31;
    long long row = (long long)blockIdx.x * warps + (threadIdx.x >> 5);
    if (row >= rows) return;
    const float* xr = x + row * (long long)cols;
    float s = 0.0f;
    for (int c = lane; c < cols; c += 32) s += xr[c];
    for (int off = 16; off > 0; off >>= 1) s += __shfl_down_sync(0xffffffffu, s, off);
    if (lane == 0) out[row] = s;
}

// doc: out[cols, rows] = x[rows, cols]^T through a 32x33 shared tile. block (32, 8, 1), grid (ceil(cols/32), ceil(rows/32), 1).
extern "C" __global__ void tiled_transpose(float* __restrict__ out, const float* __restrict__ x, int rows, int cols)
{
    __shared__ float tile[32][33];
    int bx = blockIdx.x * 32, by = blockIdx.y * 32;
    for (int j = threadIdx.y; j < 32; j += blockDim.y) {
        int r = by + j, c = bx + threadIdx.x;
        if (r < rows && c < cols) tile[j][threadIdx.x] = x[(long long)r * cols + c];
    }
    __syncthreads();
    for (int j = threadIdx.y; j < 32; j += blockDim.y) {
        int r = bx + j, c = by + threadIdx.x;   // output row = input column
        if (r < cols && c < rows) out[(long long)r * rows + c] = tile[threadIdx.x][j];
    }
}

// doc: hist[b] += 1 for each x[i] falling in bin b = floor((x[i]-lo)/(hi-lo)*nbins), values outside [lo, hi) ignored; hist is u32[nbins] (zero it first). Any 1-D grid/block; atomicAdd on global memory.
extern "C" __global__ void atomic_hist(unsigned int* __restrict__ hist, const float* __restrict__ x, long long n, float lo, float hi, int nbins)
{
    long long stride = (long long)gridDim.x * blockDim.x;
    float scale = (float)nbins / (hi - lo);
    for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride) {
        float v = x[i];
        if (v >= lo && v < hi) {
            int b = (int)((v - lo) * scale);
            if (b >= nbins) b = nbins - 1;
            atomicAdd(&hist[b], 1u);
        }
    }
}

// doc: *out += sum(x[0:n]) using a shared-memory block reduction then one float atomicAdd per block (order of block adds is nondeterministic). block 256 (power of two <= 1024), any grid.
extern "C" __global__ void atomic_sum(float* __restrict__ out, const float* __restrict__ x, long long n)
{
    __shared__ float buf[1024];
    long long stride = (long long)gridDim.x * blockDim.x;
    float s = 0.0f;
    for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride) s += x[i];
    buf[threadIdx.x] = s;
    __syncthreads();
    for (unsigned int k = blockDim.x >> 1; k > 0; k >>= 1) {
        if (threadIdx.x < k) buf[threadIdx.x] += buf[threadIdx.x + k];
        __syncthreads();
    }
    if (threadIdx.x == 0) atomicAdd(out, buf[0]);
}

// doc: DELIBERATELY WRONG: threads with threadIdx.x >= limit skip the __syncthreads, so the barrier is divergent (undefined behaviour on a GPU). Exists so the simulator's barrier check can be tested; launch with limit < blockDim.x to trigger it. out[i] = x[i] + shared neighbour.
extern "C" __global__ void bad_barrier(float* __restrict__ out, const float* __restrict__ x, int n, int limit)
{
    __shared__ float buf[1024];
    int t = threadIdx.x;
    int i = blockIdx.x * blockDim.x + t;
    buf[t] = (i < n) ? x[i] : 0.0f;
    if (t < limit) {
        __syncthreads();
        float v = buf[(t + 1) % blockDim.x];
        if (i < n) out[i] = x[i] + v;
    }
}
