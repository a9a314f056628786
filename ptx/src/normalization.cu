// The normalization family's kernels (rawdev/ops/normalization/cuda.py launches them), float32: the row norms
// (layer_norm, rms_norm), group norm (and instance norm) and batch norm, one section each.

// ================================================================== layer_norm / rms_norm
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


// ================================================================== group_norm / instance_norm
// Group normalization (and instance normalization, G = C) for x viewed as [N, C, S] (S = the spatial size),
// float32. The C channels form G groups of Cg = C / G consecutive channels, so the values of one (n, g) pair
// are one contiguous row of K = Cg * S elements.
// Forward: one block per row (grid-stride over rows): each thread runs Welford over a strided share of the
// row (coalesced), the block merges the (count, mean, M2) triples pairwise (Chan's formula), then the same
// block normalizes the row and applies the per-channel affine. Backward: one block per row for the input's
// gradient (two block sums, then the row), one block per channel for the weight's and bias's gradients.

#define GN_THREADS 256

// Sum of a and b over the block (blockDim.x == GN_THREADS); every thread gets the totals.
__device__ __forceinline__ void gn_block_sum2(float* s_a, float* s_b, float& a, float& b)
{
    s_a[threadIdx.x] = a; s_b[threadIdx.x] = b;
    __syncthreads();
    for (int half = blockDim.x / 2; half > 0; half >>= 1) {
        if (threadIdx.x < half) {
            s_a[threadIdx.x] += s_a[threadIdx.x + half];
            s_b[threadIdx.x] += s_b[threadIdx.x + half];
        }
        __syncthreads();
    }
    a = s_a[0]; b = s_b[0];
    __syncthreads();
}

// doc: y[N, C, S] = (x - mean[n, g]) * rstd[n, g] * w[c] + b[c] with mean, rstd = 1/sqrt(var + eps) (biased var)
// over each row (n, g) of Cg*S values, written to mean[rows], rstd[rows]; w, b may be null. Block 256, one block
// per row (grid-stride over rows = N*G).
extern "C" __global__ void gn_fwd_f32(float* __restrict__ y, float* __restrict__ mean, float* __restrict__ rstd,
                                      const float* __restrict__ x, const float* __restrict__ w,
                                      const float* __restrict__ b, long long rows, long long G, long long Cg,
                                      long long S, float eps)
{
    __shared__ float s_n[GN_THREADS], s_mean[GN_THREADS], s_m2[GN_THREADS];
    const long long K = Cg * S;
    for (long long r = blockIdx.x; r < rows; r += gridDim.x) {
        const float* xr = x + r * K;
        float n = 0.0f, mu = 0.0f, m2 = 0.0f;
        for (long long k = threadIdx.x; k < K; k += blockDim.x) {
            const float v = xr[k];
            n += 1.0f;
            const float d = v - mu;
            mu += d / n;
            m2 += d * (v - mu);
        }
        s_n[threadIdx.x] = n; s_mean[threadIdx.x] = mu; s_m2[threadIdx.x] = m2;
        __syncthreads();
        for (int half = blockDim.x / 2; half > 0; half >>= 1) {
            if (threadIdx.x < half) {
                const float na = s_n[threadIdx.x], nb = s_n[threadIdx.x + half], nab = na + nb;
                if (nb > 0.0f) {
                    const float d = s_mean[threadIdx.x + half] - s_mean[threadIdx.x];
                    s_mean[threadIdx.x] += d * (nb / nab);
                    s_m2[threadIdx.x] += s_m2[threadIdx.x + half] + d * d * (na * nb / nab);
                    s_n[threadIdx.x] = nab;
                }
            }
            __syncthreads();
        }
        const float m = s_mean[0];
        const float is = rsqrtf(fmaxf(s_m2[0] / s_n[0], 0.0f) + eps);
        __syncthreads();
        if (threadIdx.x == 0) { mean[r] = m; rstd[r] = is; }
        const long long c0 = (r % G) * Cg;
        float* yr = y + r * K;
        for (long long k = threadIdx.x; k < K; k += blockDim.x) {
            const long long c = c0 + k / S;
            float v = (xr[k] - m) * is;
            if (w) v *= w[c];
            if (b) v += b[c];
            yr[k] = v;
        }
    }
}

// doc: dx[N, C, S] = rstd * (dy*w - (sum(dy*w) + xhat * sum(dy*w*xhat)) / K) per row (n, g) of K = Cg*S values,
// xhat = (x - mean) * rstd; w may be null (1). Block 256, one block per row (grid-stride over rows = N*G).
extern "C" __global__ void gn_bwd_dx_f32(float* __restrict__ dx, const float* __restrict__ dy,
                                         const float* __restrict__ x, const float* __restrict__ mean,
                                         const float* __restrict__ rstd, const float* __restrict__ w,
                                         long long rows, long long G, long long Cg, long long S)
{
    __shared__ float s_a[GN_THREADS], s_b[GN_THREADS];
    const long long K = Cg * S;
    for (long long r = blockIdx.x; r < rows; r += gridDim.x) {
        const float m = mean[r], is = rstd[r];
        const long long c0 = (r % G) * Cg;
        const float* xr = x + r * K;
        const float* gr = dy + r * K;
        float a = 0.0f, bs = 0.0f;
        for (long long k = threadIdx.x; k < K; k += blockDim.x) {
            const float gw = gr[k] * (w ? w[c0 + k / S] : 1.0f);
            a += gw;
            bs += gw * (xr[k] - m) * is;
        }
        gn_block_sum2(s_a, s_b, a, bs);
        const float inv_k = 1.0f / (float)K;
        float* dr = dx + r * K;
        for (long long k = threadIdx.x; k < K; k += blockDim.x) {
            const float gw = gr[k] * (w ? w[c0 + k / S] : 1.0f);
            const float xh = (xr[k] - m) * is;
            dr[k] = is * (gw - (a + xh * bs) * inv_k);
        }
    }
}

// doc: dw[c] = sum over n, s of dy * (x - mean[n, g]) * rstd[n, g], db[c] = sum of dy, for x, dy [N, C, S],
// g = c / Cg (dw or db may be null). Block 256, one block per channel (grid-stride over C).
extern "C" __global__ void gn_bwd_wb_f32(float* __restrict__ dw, float* __restrict__ db, const float* __restrict__ dy,
                                         const float* __restrict__ x, const float* __restrict__ mean,
                                         const float* __restrict__ rstd, long long N, long long C, long long Cg,
                                         long long S)
{
    __shared__ float s_a[GN_THREADS], s_b[GN_THREADS];
    const long long G = C / Cg, M = N * S;
    for (long long c = blockIdx.x; c < C; c += gridDim.x) {
        float a = 0.0f, bs = 0.0f;
        for (long long k = threadIdx.x; k < M; k += blockDim.x) {
            const long long n = k / S;
            const long long i = (n * C + c) * S + k % S;
            const long long r = n * G + c / Cg;
            a += dy[i] * (x[i] - mean[r]) * rstd[r];
            bs += dy[i];
        }
        gn_block_sum2(s_a, s_b, a, bs);
        if (threadIdx.x == 0) {
            if (dw) dw[c] = a;
            if (db) db[c] = bs;
        }
    }
}


// ================================================================== batch_norm
// Batch normalization over (N, spatial) per channel, float32, for x viewed as [N, C, S] (S = H*W, or 1).
// Statistics: one block per channel; each thread runs Welford over a strided share of the channel's N*S values,
// then the block merges the partial (count, mean, M2) triples pairwise in shared memory (Chan's formula), so
// the data is read once and the variance does not suffer the cancellation of E[x^2] - E[x]^2.
// Apply and the input gradient are elementwise (grid-stride); the backward's two per-channel sums are one
// more block-per-channel pass.

#define GRID_STRIDE(i, n)                                                                           \
    for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x, _stride = (long long)gridDim.x * blockDim.x; \
         i < (n); i += _stride)

#define BN_THREADS 256

// doc: mean[C], var[C] (biased) of x[N, C, S] over N and S; one block of 256 threads per channel (grid C).
extern "C" __global__ void bn_stats_f32(float* __restrict__ mean, float* __restrict__ var, const float* __restrict__ x,
                                        long long N, long long C, long long S)
{
    __shared__ float s_n[BN_THREADS], s_mean[BN_THREADS], s_m2[BN_THREADS];
    const long long c = blockIdx.x, M = N * S;
    float n = 0.0f, mu = 0.0f, m2 = 0.0f;
    for (long long k = threadIdx.x; k < M; k += blockDim.x) {
        const float v = x[((k / S) * C + c) * S + k % S];
        n += 1.0f;
        const float d = v - mu;
        mu += d / n;
        m2 += d * (v - mu);
    }
    s_n[threadIdx.x] = n; s_mean[threadIdx.x] = mu; s_m2[threadIdx.x] = m2;
    __syncthreads();
    for (int half = blockDim.x / 2; half > 0; half >>= 1) {
        if (threadIdx.x < half) {
            const float na = s_n[threadIdx.x], nb = s_n[threadIdx.x + half], nab = na + nb;
            if (nb > 0.0f) {
                const float d = s_mean[threadIdx.x + half] - s_mean[threadIdx.x];
                s_mean[threadIdx.x] += d * (nb / nab);
                s_m2[threadIdx.x] += s_m2[threadIdx.x + half] + d * d * (na * nb / nab);
                s_n[threadIdx.x] = nab;
            }
        }
        __syncthreads();
    }
    if (threadIdx.x == 0) {
        mean[c] = s_mean[0];
        var[c] = s_n[0] > 0.0f ? s_m2[0] / s_n[0] : __int_as_float(0x7fc00000);
    }
}

// doc: y[N, C, S] = (x - mean[c]) * invstd[c] * w[c] + b[c] (w, b may be null: 1 and 0).
extern "C" __global__ void bn_apply_f32(float* __restrict__ y, const float* __restrict__ x, const float* __restrict__ mean,
                                        const float* __restrict__ invstd, const float* __restrict__ w,
                                        const float* __restrict__ b, long long C, long long S, long long n)
{
    GRID_STRIDE(t, n)
    {
        const long long c = (t / S) % C;
        float v = (x[t] - mean[c]) * invstd[c];
        if (w) v *= w[c];
        if (b) v += b[c];
        y[t] = v;
    }
}

// doc: sum_dy[C] = sum of dy, sum_dy_xhat[C] = sum of dy * (x - mean) * invstd, over N and S; grid C, block 256.
extern "C" __global__ void bn_bwd_reduce_f32(float* __restrict__ sum_dy, float* __restrict__ sum_dy_xhat,
                                             const float* __restrict__ dy, const float* __restrict__ x,
                                             const float* __restrict__ mean, const float* __restrict__ invstd,
                                             long long N, long long C, long long S)
{
    __shared__ float s_a[BN_THREADS], s_b[BN_THREADS];
    const long long c = blockIdx.x, M = N * S;
    const float mu = mean[c], is = invstd[c];
    float a = 0.0f, bsum = 0.0f;
    for (long long k = threadIdx.x; k < M; k += blockDim.x) {
        const long long i = ((k / S) * C + c) * S + k % S;
        a += dy[i];
        bsum += dy[i] * (x[i] - mu) * is;
    }
    s_a[threadIdx.x] = a; s_b[threadIdx.x] = bsum;
    __syncthreads();
    for (int half = blockDim.x / 2; half > 0; half >>= 1) {
        if (threadIdx.x < half) {
            s_a[threadIdx.x] += s_a[threadIdx.x + half];
            s_b[threadIdx.x] += s_b[threadIdx.x + half];
        }
        __syncthreads();
    }
    if (threadIdx.x == 0) {
        sum_dy[c] = s_a[0];
        sum_dy_xhat[c] = s_b[0];
    }
}

// doc: dx = w*invstd*(dy - sum_dy/M - xhat*sum_dy_xhat/M) in training (batch statistics), w*invstd*dy in eval;
// M = N*S, w may be null (1).
extern "C" __global__ void bn_bwd_dx_f32(float* __restrict__ dx, const float* __restrict__ dy, const float* __restrict__ x,
                                         const float* __restrict__ mean, const float* __restrict__ invstd,
                                         const float* __restrict__ w, const float* __restrict__ sum_dy,
                                         const float* __restrict__ sum_dy_xhat, long long C, long long S, long long n,
                                         float M, int training)
{
    GRID_STRIDE(t, n)
    {
        const long long c = (t / S) % C;
        const float scale = invstd[c] * (w ? w[c] : 1.0f);
        float g = dy[t];
        if (training) g -= (sum_dy[c] + (x[t] - mean[c]) * invstd[c] * sum_dy_xhat[c]) / M;
        dx[t] = g * scale;
    }
}
