// Row scans: y[r, :] = inclusive scan of x[r, :] (rows x n, row-major, contiguous), one 256-thread block per
// row (a grid-stride loop over rows). A row of any length is walked in chunks of 256: each chunk is scanned in
// shared memory (Hillis-Steele, 8 steps) and the running total of the earlier chunks (the carry) is combined
// in, so one pass reads and writes each element once, coalesced. reverse != 0 scans from the end of the row
// (the backward of cumsum).
//   scan_sum_f32(y, x, rows, n, reverse)   y[j] = x[0] + ... + x[j]
//   scan_prod_f32(y, x, rows, n, reverse)  y[j] = x[0] * ... * x[j]

#define DEVI __device__ __forceinline__
#define SCAN_THREADS 256

struct AddOp {
    static DEVI float identity() { return 0.0f; }
    static DEVI float apply(float a, float b) { return a + b; }
};

struct MulOp {
    static DEVI float identity() { return 1.0f; }
    static DEVI float apply(float a, float b) { return a * b; }
};

template <typename Op>
DEVI void scan_rows(float* __restrict__ y, const float* __restrict__ x, long long rows, long long n, int reverse)
{
    __shared__ float buf[SCAN_THREADS];
    const int t = threadIdx.x;
    for (long long r = blockIdx.x; r < rows; r += gridDim.x) {
        const long long base = r * n;
        float carry = Op::identity();
        for (long long c0 = 0; c0 < n; c0 += SCAN_THREADS) {
            const long long j = c0 + t;
            const long long off = base + (reverse ? n - 1 - j : j);
            float v = j < n ? x[off] : Op::identity();
            buf[t] = v;
            __syncthreads();
            for (int s = 1; s < SCAN_THREADS; s <<= 1) {
                const float other = t >= s ? buf[t - s] : Op::identity();
                __syncthreads();
                v = Op::apply(other, v);
                buf[t] = v;
                __syncthreads();
            }
            v = Op::apply(carry, v);
            if (j < n)
                y[off] = v;
            carry = Op::apply(carry, buf[SCAN_THREADS - 1]);
            __syncthreads();
        }
    }
}

// doc: inclusive sum of each row (reverse: from the row's end), one block per row
extern "C" __global__ void scan_sum_f32(float* __restrict__ y, const float* __restrict__ x, long long rows,
                                        long long n, int reverse)
{
    scan_rows<AddOp>(y, x, rows, n, reverse);
}

// doc: inclusive product of each row (reverse: from the row's end), one block per row
extern "C" __global__ void scan_prod_f32(float* __restrict__ y, const float* __restrict__ x, long long rows,
                                         long long n, int reverse)
{
    scan_rows<MulOp>(y, x, rows, n, reverse);
}
