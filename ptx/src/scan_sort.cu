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

// Row sort: each row of x (rows x n, contiguous, n <= SORT_MAX) sorted by one 512-thread block with a bitonic
// network in shared memory over the row padded to the next power of two P. The order is total on
// (value, index): NaN is the greatest value and equal values keep their index order, so the result equals a
// stable sort (ascending, or descending with ties still by ascending index); padding sorts after everything.
// Outputs: vals[r, :k], idx[r, :k] (the index within the row) and flat[r, :k] = r * n + idx (for the gradient's
// scatter); k <= n keeps only the first k (topk / kthvalue).
//   sort_rows_f32(vals, idx, flat, x, rows, n, k, descending)
#define SORT_MAX 2048
#define SORT_THREADS 512

DEVI bool sort_before(float av, int ai, float bv, int bi, int n, int descending)
{
    if (ai >= n)
        return false;          // padding goes last
    if (bi >= n)
        return true;
    const bool an = av != av, bn = bv != bv;
    if (an || bn) {
        if (an && bn)
            return ai < bi;
        return descending ? an : bn;   // NaN is the greatest
    }
    if (av != bv)
        return descending ? av > bv : av < bv;
    return ai < bi;
}

// doc: stable bitonic sort of each row (n <= 2048) in shared memory; block 512, one block per row (grid-stride)
extern "C" __global__ void sort_rows_f32(float* __restrict__ vals, long long* __restrict__ idx,
                                         long long* __restrict__ flat, const float* __restrict__ x, long long rows,
                                         int n, int k, int descending)
{
    __shared__ float sv[SORT_MAX];
    __shared__ int si[SORT_MAX];
    int P = 1;
    while (P < n)
        P <<= 1;
    for (long long r = blockIdx.x; r < rows; r += gridDim.x) {
        const float* row = x + r * n;
        for (int i = threadIdx.x; i < P; i += blockDim.x) {
            sv[i] = i < n ? row[i] : 0.0f;
            si[i] = i;
        }
        __syncthreads();
        for (int size = 2; size <= P; size <<= 1) {
            for (int stride = size >> 1; stride > 0; stride >>= 1) {
                for (int i = threadIdx.x; i < P; i += blockDim.x) {
                    const int l = i ^ stride;
                    if (l > i) {
                        const bool up = (i & size) == 0;
                        const float vi = sv[i], vl = sv[l];
                        const int ii = si[i], il = si[l];
                        const bool swap = up ? sort_before(vl, il, vi, ii, n, descending)
                                             : sort_before(vi, ii, vl, il, n, descending);
                        if (swap) {
                            sv[i] = vl; sv[l] = vi;
                            si[i] = il; si[l] = ii;
                        }
                    }
                }
                __syncthreads();
            }
        }
        for (int i = threadIdx.x; i < k; i += blockDim.x) {
            const long long o = r * k + i;
            vals[o] = sv[i];
            idx[o] = si[i];
            flat[o] = r * n + si[i];
        }
        __syncthreads();
    }
}
