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
