// Two kernels of a small project, tested on the simulated GPU with rawdev's pytest plugin.

// out = max(a * x + y, 0), a grid-stride loop: any grid covers any n
extern "C" __global__ void axpy_relu(const float* __restrict__ x, const float* __restrict__ y,
                                     float* __restrict__ out, float a, long long n) {
    long long stride = (long long)blockDim.x * gridDim.x;
    for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride)
        out[i] = fmaxf(a * x[i] + y[i], 0.0f);
}

// out[r] = sum of row r of a rows x cols matrix: one block per row, a shared-memory tree reduction
// (blockDim.x must be a power of two; dynamic shared memory: blockDim.x floats)
extern "C" __global__ void row_sums(const float* __restrict__ m, float* __restrict__ out, int rows, int cols) {
    extern __shared__ float part[];
    int r = blockIdx.x;
    if (r >= rows) return;
    float acc = 0.0f;
    for (int c = threadIdx.x; c < cols; c += blockDim.x)
        acc += m[(long long)r * cols + c];
    part[threadIdx.x] = acc;
    __syncthreads();
    for (int s = blockDim.x / 2; s > 0; s >>= 1) {
        if (threadIdx.x < s) part[threadIdx.x] += part[threadIdx.x + s];
        __syncthreads();
    }
    if (threadIdx.x == 0) out[r] = part[0];
}
