// Row normalizations, float32: LayerNorm (mean and variance over the last D elements of each row) and
// RMSNorm (root mean square, no mean). One warp per row: block (256, 1, 1) = 8 rows per block, grid
// (ceil(rows/8), 1, 1); lanes stride over the D columns. Statistics in one pass: each lane keeps a Welford
// (count, mean, M2) over its columns and the warp merges them by shuffles (Chan et al.'s pairwise formula),
// so a row with a large mean loses no precision to sum-of-squares cancellation.
// The forward saves mean and rstd = 1/sqrt(var + eps) per row for the backward, which recomputes xhat.

#define DEVI __device__ __forceinline__

DEVI bool warp_row(long long& r, int rows)
{
    r = (long long)blockIdx.x * (blockDim.x >> 5) + (threadIdx.x >> 5);
    return r < rows;
}

DEVI float warp_sum(float v)
{
    for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
    return v;
}

// Merge Welford states across the warp: (n, mean, m2) valid in all lanes afterwards.
DEVI void warp_welford(float& n, float& mean, float& m2)
{
    for (int o = 16; o > 0; o >>= 1) {
        const float n2 = __shfl_xor_sync(0xffffffffu, n, o);
        const float mean2 = __shfl_xor_sync(0xffffffffu, mean, o);
        const float m22 = __shfl_xor_sync(0xffffffffu, m2, o);
        const float nt = n + n2;
        if (nt > 0.0f) {
            const float d = mean2 - mean;
            mean += d * (n2 / nt);
            m2 += m22 + d * d * (n * n2 / nt);
            n = nt;
        }
    }
}

// doc: LayerNorm (rms = 0) or RMSNorm (rms = 1) of each row of x[rows, D]: y = xhat*w + b (w, b optional: 0 =
// absent); saves mean (0 for RMSNorm) and rstd per row. One warp per row, Welford statistics.
extern "C" __global__ void row_norm_fwd(float* __restrict__ y, float* __restrict__ mean_out, float* __restrict__ rstd_out,
                                        const float* __restrict__ x, const float* __restrict__ w, const float* __restrict__ b,
                                        int rows, int D, float eps, int rms)
{
    long long r;
    if (!warp_row(r, rows)) return;
    const int lane = threadIdx.x & 31;
    const float* xr = x + r * D;
    float n = 0.0f, mean = 0.0f, m2 = 0.0f;
    if (rms) {
        for (int c = lane; c < D; c += 32) m2 += xr[c] * xr[c];
        m2 = warp_sum(m2);
    } else {
        for (int c = lane; c < D; c += 32) {
            n += 1.0f;
            const float d = xr[c] - mean;
            mean += d / n;
            m2 += d * (xr[c] - mean);
        }
        warp_welford(n, mean, m2);
    }
    const float rstd = 1.0f / sqrtf(m2 / (float)D + eps);
    if (lane == 0) {
        mean_out[r] = mean;
        rstd_out[r] = rstd;
    }
    float* yr = y + r * D;
    for (int c = lane; c < D; c += 32) {
        float v = (xr[c] - mean) * rstd;
        if (w) v *= w[c];
        if (b) v += b[c];
        yr[c] = v;
    }
}

// doc: the backward of row_norm_fwd: dx per row, and gxhat = dy*xhat (its column sums are the weight's
// gradient; dy's column sums the bias's). w optional (0 = absent). One warp per row.
extern "C" __global__ void row_norm_bwd(float* __restrict__ dx, float* __restrict__ gxhat, const float* __restrict__ dy,
                                        const float* __restrict__ x, const float* __restrict__ mean_in,
                                        const float* __restrict__ rstd_in, const float* __restrict__ w,
                                        int rows, int D, int rms)
{
    long long r;
    if (!warp_row(r, rows)) return;
    const int lane = threadIdx.x & 31;
    const float* xr = x + r * D;
    const float* gr = dy + r * D;
    const float mean = mean_in[r], rstd = rstd_in[r];
    float sg = 0.0f, sgx = 0.0f;
    for (int c = lane; c < D; c += 32) {
        const float g = w ? gr[c] * w[c] : gr[c];
        const float xh = (xr[c] - mean) * rstd;
        sg += g;
        sgx += g * xh;
    }
    sg = warp_sum(sg) / (float)D;
    sgx = warp_sum(sgx) / (float)D;
    float* dr = dx + r * D;
    float* hr = gxhat + r * D;
    for (int c = lane; c < D; c += 32) {
        const float g = w ? gr[c] * w[c] : gr[c];
        const float xh = (xr[c] - mean) * rstd;
        dr[c] = rms ? rstd * (g - xh * sgx) : rstd * (g - sg - xh * sgx);
        hr[c] = gr[c] * xh;
    }
}
