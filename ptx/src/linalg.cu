// Small dense factorizations and solves, one launch each (float32): the Cholesky factor of a batch of symmetric
// positive-definite matrices and triangular solves by substitution. Written as the textbook column and row
// orders, with the inner products split across a warp's lanes (lane l takes the indices p = l (mod 32)) and
// summed by a butterfly of __shfl_xor_sync, so every lane ends with the same bits; what a lane reads back from
// memory it wrote itself, or it reads after a barrier.

#include "common.cuh"

// The sum of v over the warp, the same bits in every lane: each butterfly step adds two lanes' partial sums in
// both lanes, and a + b == b + a exactly.
__device__ __forceinline__ float warp_sum(float v)
{
    for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
    return v;
}

// doc: L = the lower Cholesky factor of A [batch, n, n] (contiguous; only the lower triangle is read), zeros above
// the diagonal; info[b] = the first order j+1 whose pivot A[j,j] - sum_p L[j,p]^2 is not positive (0: none), and
// such a pivot is taken as 1 so the factorization runs to the end (as rawdev's cpu loop). One block of 256 threads
// per matrix: every warp forms the pivot (the same bits), each thread owns rows j+1+t (step 256) of column j.
// Block 256, grid batch.
extern "C" __global__ void cholesky_f32(float* __restrict__ L, long long* __restrict__ info, const float* __restrict__ A,
                                        int n)
{
    const long long b = blockIdx.x;
    const float* a = A + b * n * n;
    float* l = L + b * n * n;
    const int t = threadIdx.x, lane = t & 31;
    long long bad = 0;
    for (int j = 0; j < n; ++j) {
        const float* lj = l + (long long)j * n;
        float s = 0.0f;
        for (int p = lane; p < j; p += 32) s += lj[p] * lj[p];
        const float d = a[(long long)j * n + j] - warp_sum(s);
        const bool ok = d > 0.0f;            // false for NaN too
        if (!ok && bad == 0) bad = j + 1;
        const float root = ok ? sqrtf(d) : 1.0f;
        for (int i = t; i < n; i += blockDim.x) {
            float v = 0.0f;
            if (i == j) {
                v = root;
            } else if (i > j) {
                const float* li = l + (long long)i * n;
                float acc = 0.0f;
                for (int p = 0; p < j; ++p) acc += li[p] * lj[p];
                v = (a[(long long)i * n + j] - acc) / root;
            }
            l[(long long)i * n + j] = v;
        }
        __syncthreads();   // column j is read by the next column's pivot and rows
    }
    if (t == 0) info[b] = bad;
}

// doc: X = T^-1 B for triangular T [batch, n, n] (strides tbs, trs, tcs in elements, so a transposed view needs no
// copy; only the triangle named by upper is read, its diagonal taken as ones when unit) and B [batch, n, k]
// (contiguous), X [batch, n, k]: substitution row by row (upper: from the last), one warp per (matrix, column of B);
// lane l sums the products of the indices p = l (mod 32) and writes the rows i = l (mod 32), so it reads back only
// what it wrote. Block 256 (8 warps), grid ceil(batch*k/8).
extern "C" __global__ void trsm_f32(float* __restrict__ X, const float* __restrict__ T, const float* __restrict__ B,
                                    int batch, int n, int k, long long tbs, long long trs, long long tcs, int upper,
                                    int unit)
{
    const long long w = ((long long)blockIdx.x * blockDim.x + threadIdx.x) >> 5;
    const int lane = threadIdx.x & 31;
    if (w >= (long long)batch * k) return;
    const long long b = w / k, c = w % k;
    const float* tb = T + b * tbs;
    const float* bb = B + b * n * k + c;
    float* xb = X + b * n * k + c;
    for (int r = 0; r < n; ++r) {
        const int i = upper ? n - 1 - r : r;
        const float* ti = tb + i * trs;
        float s = 0.0f;
        if (upper) {
            for (int p = i + 1 + ((lane - i - 1) & 31); p < n; p += 32) s += ti[p * tcs] * xb[(long long)p * k];
        } else {
            for (int p = lane; p < i; p += 32) s += ti[p * tcs] * xb[(long long)p * k];
        }
        const float v = bb[(long long)i * k] - warp_sum(s);
        if ((i & 31) == lane) xb[(long long)i * k] = unit ? v : v / ti[i * tcs];
    }
}
