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
