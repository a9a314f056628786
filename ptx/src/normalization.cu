// The normalization family's kernels (rawdev/ops/normalization/cuda.py launches them): the row norms
// (layer_norm, rms_norm), group norm (and instance norm) and batch norm, one section each.
// Each kernel body is a `template <int S>` over the element storage (storage.cuh): x, y, dy, dx, weight, bias and
// their gradients are float32 (the kernel's plain name, or `_f32`), float16 (`_f16`) or bfloat16 (`_bf16`), loaded
// and widened to float32 exactly and rounded once at the store; the statistics (mean, rstd/invstd, batch norm's
// variance and per-channel sums) are always float32, as PyTorch's cuda kernels keep them. The math is the float32
// kernel's on the widened values, so a 16-bit result is the widened path's bit for bit.

#include "common.cuh"
#include "storage.cuh"

// ================================================================== layer_norm / rms_norm
// Row normalizations: LayerNorm (mean and variance over the last D elements of each row) and
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

template <int S, int W = S>
DEVI void row_norm_fwd_body(ELT(S)* __restrict__ y, float* __restrict__ mean_out, float* __restrict__ rstd_out,
                            const ELT(S)* __restrict__ x, const ELT(W)* __restrict__ w, const ELT(W)* __restrict__ b,
                            int rows, int D, float eps, int rms)
{
    typedef Io<S> io;
    long long r;
    if (!warp_row(r, rows)) return;
    const int lane = threadIdx.x & 31;
    const ELT(S)* xr = x + r * D;
    float n = 0.0f, mean = 0.0f, m2 = 0.0f;
    if (rms) {
        for (int c = lane; c < D; c += 32) {
            const float v = io::ld(xr, c);
            m2 += v * v;
        }
        m2 = warp_sum(m2);
    } else {
        for (int c = lane; c < D; c += 32) {
            const float v = io::ld(xr, c);
            n += 1.0f;
            const float d = v - mean;
            mean += d / n;
            m2 += d * (v - mean);
        }
        warp_welford(n, mean, m2);
    }
    const float rstd = 1.0f / sqrtf(m2 / (float)D + eps);
    if (lane == 0) {
        mean_out[r] = mean;
        rstd_out[r] = rstd;
    }
    ELT(S)* yr = y + r * D;
    for (int c = lane; c < D; c += 32) {
        float v = (io::ld(xr, c) - mean) * rstd;
        if (w) v *= Io<W>::ld(w, c);
        if (b) v += Io<W>::ld(b, c);
        io::st(yr, c, v);
    }
}

// doc: LayerNorm (rms = 0) or RMSNorm (rms = 1) of each row of x[rows, D]: y = xhat*w + b (w, b optional: 0 =
// absent); saves mean (0 for RMSNorm) and rstd per row. One warp per row, Welford statistics.
extern "C" __global__ void row_norm_fwd(float* __restrict__ y, float* __restrict__ mean_out, float* __restrict__ rstd_out,
                                        const float* __restrict__ x, const float* __restrict__ w, const float* __restrict__ b,
                                        int rows, int D, float eps, int rms)
{
    row_norm_fwd_body<S_F32>(y, mean_out, rstd_out, x, w, b, rows, D, eps, rms);
}

// doc: row_norm_fwd on float16 storage (x, w, b, y; float32 statistics and math, one rounding of y).
extern "C" __global__ void row_norm_fwd_f16(unsigned short* __restrict__ y, float* __restrict__ mean_out,
                                            float* __restrict__ rstd_out, const unsigned short* __restrict__ x,
                                            const unsigned short* __restrict__ w, const unsigned short* __restrict__ b,
                                            int rows, int D, float eps, int rms)
{
    row_norm_fwd_body<S_F16>(y, mean_out, rstd_out, x, w, b, rows, D, eps, rms);
}

// doc: row_norm_fwd on bfloat16 storage (x, w, b, y; float32 statistics and math, one rounding of y).
extern "C" __global__ void row_norm_fwd_bf16(unsigned short* __restrict__ y, float* __restrict__ mean_out,
                                             float* __restrict__ rstd_out, const unsigned short* __restrict__ x,
                                             const unsigned short* __restrict__ w, const unsigned short* __restrict__ b,
                                             int rows, int D, float eps, int rms)
{
    row_norm_fwd_body<S_BF16>(y, mean_out, rstd_out, x, w, b, rows, D, eps, rms);
}

// doc: row_norm_fwd on float16 storage with float32 weight and bias (and their gradients): PyTorch's mixed case.
extern "C" __global__ void row_norm_fwd_f16_f32w(unsigned short* __restrict__ y, float* __restrict__ mean_out,
                                             float* __restrict__ rstd_out, const unsigned short* __restrict__ x,
                                             const float* __restrict__ w, const float* __restrict__ b,
                                             int rows, int D, float eps, int rms)
{
    row_norm_fwd_body<S_F16, S_F32>(y, mean_out, rstd_out, x, w, b, rows, D, eps, rms);
}
// doc: row_norm_fwd on bfloat16 storage with float32 weight and bias (and their gradients): PyTorch's mixed case.
extern "C" __global__ void row_norm_fwd_bf16_f32w(unsigned short* __restrict__ y, float* __restrict__ mean_out,
                                             float* __restrict__ rstd_out, const unsigned short* __restrict__ x,
                                             const float* __restrict__ w, const float* __restrict__ b,
                                             int rows, int D, float eps, int rms)
{
    row_norm_fwd_body<S_BF16, S_F32>(y, mean_out, rstd_out, x, w, b, rows, D, eps, rms);
}

template <int S, int W = S>
DEVI void row_norm_bwd_body(ELT(S)* __restrict__ dx, const ELT(S)* __restrict__ dy,
                            const ELT(S)* __restrict__ x, const float* __restrict__ mean_in,
                            const float* __restrict__ rstd_in, const ELT(W)* __restrict__ w, int rows, int D, int rms)
{
    typedef Io<S> io;
    long long r;
    if (!warp_row(r, rows)) return;
    const int lane = threadIdx.x & 31;
    const ELT(S)* xr = x + r * D;
    const ELT(S)* gr = dy + r * D;
    const float mean = mean_in[r], rstd = rstd_in[r];
    float sg = 0.0f, sgx = 0.0f;
    for (int c = lane; c < D; c += 32) {
        const float gv = io::ld(gr, c);
        const float g = w ? gv * Io<W>::ld(w, c) : gv;
        const float xh = (io::ld(xr, c) - mean) * rstd;
        sg += g;
        sgx += g * xh;
    }
    sg = warp_sum(sg) / (float)D;
    sgx = warp_sum(sgx) / (float)D;
    ELT(S)* dr = dx + r * D;
    for (int c = lane; c < D; c += 32) {
        const float gv = io::ld(gr, c);
        const float g = w ? gv * Io<W>::ld(w, c) : gv;
        const float xh = (io::ld(xr, c) - mean) * rstd;
        io::st(dr, c, rms ? rstd * (g - xh * sgx) : rstd * (g - sg - xh * sgx));
    }
}

// doc: the input's gradient of row_norm_fwd, dx per row (the weight's and bias's: row_norm_bwd_wb). w optional
// (0 = absent). One warp per row.
extern "C" __global__ void row_norm_bwd(float* __restrict__ dx, const float* __restrict__ dy,
                                        const float* __restrict__ x, const float* __restrict__ mean_in,
                                        const float* __restrict__ rstd_in, const float* __restrict__ w,
                                        int rows, int D, int rms)
{
    row_norm_bwd_body<S_F32>(dx, dy, x, mean_in, rstd_in, w, rows, D, rms);
}

// doc: row_norm_bwd on float16 storage (dx, dy, x, w; float32 mean, rstd and math, one rounding each).
extern "C" __global__ void row_norm_bwd_f16(unsigned short* __restrict__ dx,
                                            const unsigned short* __restrict__ dy, const unsigned short* __restrict__ x,
                                            const float* __restrict__ mean_in, const float* __restrict__ rstd_in,
                                            const unsigned short* __restrict__ w, int rows, int D, int rms)
{
    row_norm_bwd_body<S_F16>(dx, dy, x, mean_in, rstd_in, w, rows, D, rms);
}

// doc: row_norm_bwd on bfloat16 storage (dx, dy, x, w; float32 mean, rstd and math, one rounding each).
extern "C" __global__ void row_norm_bwd_bf16(unsigned short* __restrict__ dx,
                                             const unsigned short* __restrict__ dy, const unsigned short* __restrict__ x,
                                             const float* __restrict__ mean_in, const float* __restrict__ rstd_in,
                                             const unsigned short* __restrict__ w, int rows, int D, int rms)
{
    row_norm_bwd_body<S_BF16>(dx, dy, x, mean_in, rstd_in, w, rows, D, rms);
}

// doc: row_norm_bwd on float16 storage with float32 weight and bias (and their gradients): PyTorch's mixed case.
extern "C" __global__ void row_norm_bwd_f16_f32w(unsigned short* __restrict__ dx,
                                             const unsigned short* __restrict__ dy, const unsigned short* __restrict__ x,
                                             const float* __restrict__ mean_in, const float* __restrict__ rstd_in,
                                             const float* __restrict__ w, int rows, int D, int rms)
{
    row_norm_bwd_body<S_F16, S_F32>(dx, dy, x, mean_in, rstd_in, w, rows, D, rms);
}
// doc: row_norm_bwd on bfloat16 storage with float32 weight and bias (and their gradients): PyTorch's mixed case.
extern "C" __global__ void row_norm_bwd_bf16_f32w(unsigned short* __restrict__ dx,
                                             const unsigned short* __restrict__ dy, const unsigned short* __restrict__ x,
                                             const float* __restrict__ mean_in, const float* __restrict__ rstd_in,
                                             const float* __restrict__ w, int rows, int D, int rms)
{
    row_norm_bwd_body<S_BF16, S_F32>(dx, dy, x, mean_in, rstd_in, w, rows, D, rms);
}

// The weight's and bias's gradients are column sums over the rows: dw[c] = sum_r dy[r, c] * xhat[r, c] and
// db[c] = sum_r dy[r, c]. A block of 256 threads is 8 warps over one tile of 32 columns: a warp reads 32
// consecutive columns of one row (coalesced), the 8 warps take every 8th row of the block's row chunk, and the
// 8 partial sums per column meet in shared memory. grid.y splits the rows into chunks of `chunk` rows, so a few
// columns still fill the GPU; each (chunk, column) writes a float32 partial, and the caller sums the grid.y
// partials ([grid.y, D], ~1/chunk of the [rows, D] products a product-then-sum backward would hold).
#define RN_WB_ROWS 8
template <int S>
DEVI void row_norm_bwd_wb_body(float* __restrict__ pw, float* __restrict__ pb, const ELT(S)* __restrict__ dy,
                               const ELT(S)* __restrict__ x, const float* __restrict__ mean_in,
                               const float* __restrict__ rstd_in, long long rows, long long D, long long chunk)
{
    typedef Io<S> io;
    __shared__ float s_w[RN_WB_ROWS][33], s_b[RN_WB_ROWS][33];
    const int tx = threadIdx.x & 31, ty = threadIdx.x >> 5;
    const long long c = (long long)blockIdx.x * 32 + tx;
    const long long r0 = (long long)blockIdx.y * chunk;
    const long long r1 = r0 + chunk < rows ? r0 + chunk : rows;
    float a = 0.0f, b = 0.0f;
    if (c < D) {
        for (long long r = r0 + ty; r < r1; r += RN_WB_ROWS) {
            const float g = io::ld(dy, r * D + c);
            a += g * ((io::ld(x, r * D + c) - mean_in[r]) * rstd_in[r]);
            b += g;
        }
    }
    s_w[ty][tx] = a;
    s_b[ty][tx] = b;
    __syncthreads();
    if (ty == 0 && c < D) {
        for (int k = 1; k < RN_WB_ROWS; ++k) {
            a += s_w[k][tx];
            b += s_b[k][tx];
        }
        const long long o = (long long)blockIdx.y * D + c;
        if (pw) pw[o] = a;
        if (pb) pb[o] = b;
    }
}

// doc: the weight's and bias's gradients of row_norm_fwd as float32 partial column sums: pw[j, c] = sum of
// dy * xhat and pb[j, c] = sum of dy over rows [j * chunk, (j + 1) * chunk) (pw or pb may be null). Block 256,
// grid (ceil(D / 32), ceil(rows / chunk)).
extern "C" __global__ void row_norm_bwd_wb(float* __restrict__ pw, float* __restrict__ pb, const float* __restrict__ dy,
                                           const float* __restrict__ x, const float* __restrict__ mean_in,
                                           const float* __restrict__ rstd_in, long long rows, long long D,
                                           long long chunk)
{
    row_norm_bwd_wb_body<S_F32>(pw, pb, dy, x, mean_in, rstd_in, rows, D, chunk);
}

// doc: row_norm_bwd_wb on float16 dy and x (float32 mean, rstd, math and partial sums).
extern "C" __global__ void row_norm_bwd_wb_f16(float* __restrict__ pw, float* __restrict__ pb,
                                               const unsigned short* __restrict__ dy, const unsigned short* __restrict__ x,
                                               const float* __restrict__ mean_in, const float* __restrict__ rstd_in,
                                               long long rows, long long D, long long chunk)
{
    row_norm_bwd_wb_body<S_F16>(pw, pb, dy, x, mean_in, rstd_in, rows, D, chunk);
}

// doc: row_norm_bwd_wb on bfloat16 dy and x (float32 mean, rstd, math and partial sums).
extern "C" __global__ void row_norm_bwd_wb_bf16(float* __restrict__ pw, float* __restrict__ pb,
                                                const unsigned short* __restrict__ dy, const unsigned short* __restrict__ x,
                                                const float* __restrict__ mean_in, const float* __restrict__ rstd_in,
                                                long long rows, long long D, long long chunk)
{
    row_norm_bwd_wb_body<S_BF16>(pw, pb, dy, x, mean_in, rstd_in, rows, D, chunk);
}

// ================================================================== group_norm / instance_norm
// Group normalization (and instance normalization, G = C) for x viewed as [N, C, S] (S = the spatial size),
// The C channels form G groups of Cg = C / G consecutive channels, so the values of one (n, g) pair
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

template <int S, int W = S>
DEVI void gn_fwd_body(ELT(S)* __restrict__ y, float* __restrict__ mean, float* __restrict__ rstd,
                      const ELT(S)* __restrict__ x, const ELT(W)* __restrict__ w, const ELT(W)* __restrict__ b,
                      long long rows, long long G, long long Cg, long long S_, float eps)
{
    typedef Io<S> io;
    __shared__ float s_n[GN_THREADS], s_mean[GN_THREADS], s_m2[GN_THREADS];
    const long long K = Cg * S_;
    for (long long r = blockIdx.x; r < rows; r += gridDim.x) {
        const ELT(S)* xr = x + r * K;
        float n = 0.0f, mu = 0.0f, m2 = 0.0f;
        for (long long k = threadIdx.x; k < K; k += blockDim.x) {
            const float v = io::ld(xr, k);
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
        ELT(S)* yr = y + r * K;
        for (long long k = threadIdx.x; k < K; k += blockDim.x) {
            const long long c = c0 + k / S_;
            float v = (io::ld(xr, k) - m) * is;
            if (w) v *= Io<W>::ld(w, c);
            if (b) v += Io<W>::ld(b, c);
            io::st(yr, k, v);
        }
    }
}

// doc: y[N, C, S] = (x - mean[n, g]) * rstd[n, g] * w[c] + b[c] with mean, rstd = 1/sqrt(var + eps) (biased var)
// over each row (n, g) of Cg*S values, written to mean[rows], rstd[rows]; w, b may be null. Block 256, one block
// per row (grid-stride over rows = N*G).
extern "C" __global__ void gn_fwd_f32(float* __restrict__ y, float* __restrict__ mean, float* __restrict__ rstd,
                                      const float* __restrict__ x, const float* __restrict__ w,
                                      const float* __restrict__ b, long long rows, long long G, long long Cg,
                                      long long S, float eps)
{
    gn_fwd_body<S_F32>(y, mean, rstd, x, w, b, rows, G, Cg, S, eps);
}

// doc: gn_fwd_f32 on float16 storage (x, w, b, y; float32 mean, rstd and math, one rounding of y).
extern "C" __global__ void gn_fwd_f16(unsigned short* __restrict__ y, float* __restrict__ mean, float* __restrict__ rstd,
    const unsigned short* __restrict__ x, const unsigned short* __restrict__ w, const unsigned short* __restrict__ b,
    long long rows, long long G, long long Cg, long long S, float eps)
{
    gn_fwd_body<S_F16>(y, mean, rstd, x, w, b, rows, G, Cg, S, eps);
}

// doc: gn_fwd_f32 on bfloat16 storage (x, w, b, y; float32 mean, rstd and math, one rounding of y).
extern "C" __global__ void gn_fwd_bf16(unsigned short* __restrict__ y, float* __restrict__ mean, float* __restrict__ rstd,
    const unsigned short* __restrict__ x, const unsigned short* __restrict__ w, const unsigned short* __restrict__ b,
    long long rows, long long G, long long Cg, long long S, float eps)
{
    gn_fwd_body<S_BF16>(y, mean, rstd, x, w, b, rows, G, Cg, S, eps);
}

// doc: gn_fwd_f32 on float16 storage with float32 weight and bias (and their gradients): PyTorch's mixed case.
extern "C" __global__ void gn_fwd_f16_f32w(unsigned short* __restrict__ y, float* __restrict__ mean, float* __restrict__ rstd,
    const unsigned short* __restrict__ x, const float* __restrict__ w, const float* __restrict__ b,
    long long rows, long long G, long long Cg, long long S, float eps)
{
    gn_fwd_body<S_F16, S_F32>(y, mean, rstd, x, w, b, rows, G, Cg, S, eps);
}
// doc: gn_fwd_f32 on bfloat16 storage with float32 weight and bias (and their gradients): PyTorch's mixed case.
extern "C" __global__ void gn_fwd_bf16_f32w(unsigned short* __restrict__ y, float* __restrict__ mean, float* __restrict__ rstd,
    const unsigned short* __restrict__ x, const float* __restrict__ w, const float* __restrict__ b,
    long long rows, long long G, long long Cg, long long S, float eps)
{
    gn_fwd_body<S_BF16, S_F32>(y, mean, rstd, x, w, b, rows, G, Cg, S, eps);
}

template <int S, int W = S>
DEVI void gn_bwd_dx_body(ELT(S)* __restrict__ dx, const ELT(S)* __restrict__ dy, const ELT(S)* __restrict__ x,
                         const float* __restrict__ mean, const float* __restrict__ rstd, const ELT(W)* __restrict__ w,
                         long long rows, long long G, long long Cg, long long S_)
{
    typedef Io<S> io;
    __shared__ float s_a[GN_THREADS], s_b[GN_THREADS];
    const long long K = Cg * S_;
    for (long long r = blockIdx.x; r < rows; r += gridDim.x) {
        const float m = mean[r], is = rstd[r];
        const long long c0 = (r % G) * Cg;
        const ELT(S)* xr = x + r * K;
        const ELT(S)* gr = dy + r * K;
        float a = 0.0f, bs = 0.0f;
        for (long long k = threadIdx.x; k < K; k += blockDim.x) {
            const float gw = io::ld(gr, k) * (w ? Io<W>::ld(w, c0 + k / S_) : 1.0f);
            a += gw;
            bs += gw * (io::ld(xr, k) - m) * is;
        }
        gn_block_sum2(s_a, s_b, a, bs);
        const float inv_k = 1.0f / (float)K;
        ELT(S)* dr = dx + r * K;
        for (long long k = threadIdx.x; k < K; k += blockDim.x) {
            const float gw = io::ld(gr, k) * (w ? Io<W>::ld(w, c0 + k / S_) : 1.0f);
            const float xh = (io::ld(xr, k) - m) * is;
            io::st(dr, k, is * (gw - (a + xh * bs) * inv_k));
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
    gn_bwd_dx_body<S_F32>(dx, dy, x, mean, rstd, w, rows, G, Cg, S);
}

// doc: gn_bwd_dx_f32 on float16 storage (dx, dy, x, w; float32 mean, rstd, sums and math, one rounding of dx).
extern "C" __global__ void gn_bwd_dx_f16(unsigned short* __restrict__ dx, const unsigned short* __restrict__ dy, const unsigned short* __restrict__ x,
    const float* __restrict__ mean, const float* __restrict__ rstd, const unsigned short* __restrict__ w,
    long long rows, long long G, long long Cg, long long S)
{
    gn_bwd_dx_body<S_F16>(dx, dy, x, mean, rstd, w, rows, G, Cg, S);
}

// doc: gn_bwd_dx_f32 on bfloat16 storage (dx, dy, x, w; float32 mean, rstd, sums and math, one rounding of dx).
extern "C" __global__ void gn_bwd_dx_bf16(unsigned short* __restrict__ dx, const unsigned short* __restrict__ dy, const unsigned short* __restrict__ x,
    const float* __restrict__ mean, const float* __restrict__ rstd, const unsigned short* __restrict__ w,
    long long rows, long long G, long long Cg, long long S)
{
    gn_bwd_dx_body<S_BF16>(dx, dy, x, mean, rstd, w, rows, G, Cg, S);
}

// doc: gn_bwd_dx_f32 on float16 storage with float32 weight and bias (and their gradients): PyTorch's mixed case.
extern "C" __global__ void gn_bwd_dx_f16_f32w(unsigned short* __restrict__ dx, const unsigned short* __restrict__ dy, const unsigned short* __restrict__ x,
    const float* __restrict__ mean, const float* __restrict__ rstd, const float* __restrict__ w,
    long long rows, long long G, long long Cg, long long S)
{
    gn_bwd_dx_body<S_F16, S_F32>(dx, dy, x, mean, rstd, w, rows, G, Cg, S);
}
// doc: gn_bwd_dx_f32 on bfloat16 storage with float32 weight and bias (and their gradients): PyTorch's mixed case.
extern "C" __global__ void gn_bwd_dx_bf16_f32w(unsigned short* __restrict__ dx, const unsigned short* __restrict__ dy, const unsigned short* __restrict__ x,
    const float* __restrict__ mean, const float* __restrict__ rstd, const float* __restrict__ w,
    long long rows, long long G, long long Cg, long long S)
{
    gn_bwd_dx_body<S_BF16, S_F32>(dx, dy, x, mean, rstd, w, rows, G, Cg, S);
}

template <int S, int W = S>
DEVI void gn_bwd_wb_body(ELT(W)* __restrict__ dw, ELT(W)* __restrict__ db, const ELT(S)* __restrict__ dy,
                         const ELT(S)* __restrict__ x, const float* __restrict__ mean, const float* __restrict__ rstd,
                         long long N, long long C, long long Cg, long long S_)
{
    typedef Io<S> io;
    __shared__ float s_a[GN_THREADS], s_b[GN_THREADS];
    const long long G = C / Cg, M = N * S_;
    for (long long c = blockIdx.x; c < C; c += gridDim.x) {
        float a = 0.0f, bs = 0.0f;
        for (long long k = threadIdx.x; k < M; k += blockDim.x) {
            const long long n = k / S_;
            const long long i = (n * C + c) * S_ + k % S_;
            const long long r = n * G + c / Cg;
            const float g = io::ld(dy, i);
            a += g * (io::ld(x, i) - mean[r]) * rstd[r];
            bs += g;
        }
        gn_block_sum2(s_a, s_b, a, bs);
        if (threadIdx.x == 0) {
            if (dw) Io<W>::st(dw, c, a);
            if (db) Io<W>::st(db, c, bs);
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
    gn_bwd_wb_body<S_F32>(dw, db, dy, x, mean, rstd, N, C, Cg, S);
}

// doc: gn_bwd_wb_f32 on float16 storage (dw, db, dy, x; float32 mean, rstd and sums, one rounding of dw and db).
extern "C" __global__ void gn_bwd_wb_f16(unsigned short* __restrict__ dw, unsigned short* __restrict__ db, const unsigned short* __restrict__ dy,
    const unsigned short* __restrict__ x, const float* __restrict__ mean, const float* __restrict__ rstd,
    long long N, long long C, long long Cg, long long S)
{
    gn_bwd_wb_body<S_F16>(dw, db, dy, x, mean, rstd, N, C, Cg, S);
}

// doc: gn_bwd_wb_f32 on bfloat16 storage (dw, db, dy, x; float32 mean, rstd and sums, one rounding of dw and db).
extern "C" __global__ void gn_bwd_wb_bf16(unsigned short* __restrict__ dw, unsigned short* __restrict__ db, const unsigned short* __restrict__ dy,
    const unsigned short* __restrict__ x, const float* __restrict__ mean, const float* __restrict__ rstd,
    long long N, long long C, long long Cg, long long S)
{
    gn_bwd_wb_body<S_BF16>(dw, db, dy, x, mean, rstd, N, C, Cg, S);
}

// doc: gn_bwd_wb_f32 on float16 storage with float32 weight and bias (and their gradients): PyTorch's mixed case.
extern "C" __global__ void gn_bwd_wb_f16_f32w(float* __restrict__ dw, float* __restrict__ db, const unsigned short* __restrict__ dy,
    const unsigned short* __restrict__ x, const float* __restrict__ mean, const float* __restrict__ rstd,
    long long N, long long C, long long Cg, long long S)
{
    gn_bwd_wb_body<S_F16, S_F32>(dw, db, dy, x, mean, rstd, N, C, Cg, S);
}
// doc: gn_bwd_wb_f32 on bfloat16 storage with float32 weight and bias (and their gradients): PyTorch's mixed case.
extern "C" __global__ void gn_bwd_wb_bf16_f32w(float* __restrict__ dw, float* __restrict__ db, const unsigned short* __restrict__ dy,
    const unsigned short* __restrict__ x, const float* __restrict__ mean, const float* __restrict__ rstd,
    long long N, long long C, long long Cg, long long S)
{
    gn_bwd_wb_body<S_BF16, S_F32>(dw, db, dy, x, mean, rstd, N, C, Cg, S);
}

// ================================================================== batch_norm
// Batch normalization over (N, spatial) per channel for x viewed as [N, C, S] (S = H*W, or 1).
// Statistics: one block per channel; each thread runs Welford over a strided share of the channel's N*S values,
// then the block merges the partial (count, mean, M2) triples pairwise in shared memory (Chan's formula), so
// the data is read once and the variance does not suffer the cancellation of E[x^2] - E[x]^2.
// Apply and the input gradient are elementwise (grid-stride); the backward's two per-channel sums are one
// more block-per-channel pass.

#define BN_THREADS 256

template <int S>
DEVI void bn_stats_body(float* __restrict__ mean, float* __restrict__ var, const ELT(S)* __restrict__ x,
                        long long N, long long C, long long S_)
{
    __shared__ float s_n[BN_THREADS], s_mean[BN_THREADS], s_m2[BN_THREADS];
    const long long c = blockIdx.x, M = N * S_;
    float n = 0.0f, mu = 0.0f, m2 = 0.0f;
    for (long long k = threadIdx.x; k < M; k += blockDim.x) {
        const float v = Io<S>::ld(x, ((k / S_) * C + c) * S_ + k % S_);
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

// doc: mean[C], var[C] (biased) of x[N, C, S] over N and S; one block of 256 threads per channel (grid C).
extern "C" __global__ void bn_stats_f32(float* __restrict__ mean, float* __restrict__ var, const float* __restrict__ x,
                                        long long N, long long C, long long S)
{
    bn_stats_body<S_F32>(mean, var, x, N, C, S);
}

// doc: bn_stats_f32 on float16 storage x (float32 accumulation, float32 mean and var).
extern "C" __global__ void bn_stats_f16(float* __restrict__ mean, float* __restrict__ var, const unsigned short* __restrict__ x,
    long long N, long long C, long long S)
{
    bn_stats_body<S_F16>(mean, var, x, N, C, S);
}

// doc: bn_stats_f32 on bfloat16 storage x (float32 accumulation, float32 mean and var).
extern "C" __global__ void bn_stats_bf16(float* __restrict__ mean, float* __restrict__ var, const unsigned short* __restrict__ x,
    long long N, long long C, long long S)
{
    bn_stats_body<S_BF16>(mean, var, x, N, C, S);
}

template <int S, int W = S>
DEVI void bn_apply_body(ELT(S)* __restrict__ y, const ELT(S)* __restrict__ x, const float* __restrict__ mean,
                        const float* __restrict__ invstd, const ELT(W)* __restrict__ w, const ELT(W)* __restrict__ b,
                        long long C, long long S_, long long n)
{
    typedef Io<S> io;
    GRID_STRIDE(t, n)
    {
        const long long c = (t / S_) % C;
        float v = (io::ld(x, t) - mean[c]) * invstd[c];
        if (w) v *= Io<W>::ld(w, c);
        if (b) v += Io<W>::ld(b, c);
        io::st(y, t, v);
    }
}

// doc: y[N, C, S] = (x - mean[c]) * invstd[c] * w[c] + b[c] (w, b may be null: 1 and 0).
extern "C" __global__ void bn_apply_f32(float* __restrict__ y, const float* __restrict__ x, const float* __restrict__ mean,
                                        const float* __restrict__ invstd, const float* __restrict__ w,
                                        const float* __restrict__ b, long long C, long long S, long long n)
{
    bn_apply_body<S_F32>(y, x, mean, invstd, w, b, C, S, n);
}

// doc: bn_apply_f32 on float16 storage (x, w, b, y; float32 mean and invstd, one rounding of y).
extern "C" __global__ void bn_apply_f16(unsigned short* __restrict__ y, const unsigned short* __restrict__ x, const float* __restrict__ mean,
    const float* __restrict__ invstd, const unsigned short* __restrict__ w, const unsigned short* __restrict__ b,
    long long C, long long S, long long n)
{
    bn_apply_body<S_F16>(y, x, mean, invstd, w, b, C, S, n);
}

// doc: bn_apply_f32 on bfloat16 storage (x, w, b, y; float32 mean and invstd, one rounding of y).
extern "C" __global__ void bn_apply_bf16(unsigned short* __restrict__ y, const unsigned short* __restrict__ x, const float* __restrict__ mean,
    const float* __restrict__ invstd, const unsigned short* __restrict__ w, const unsigned short* __restrict__ b,
    long long C, long long S, long long n)
{
    bn_apply_body<S_BF16>(y, x, mean, invstd, w, b, C, S, n);
}

// doc: bn_apply_f32 on float16 storage with float32 weight and bias (and their gradients): PyTorch's mixed case.
extern "C" __global__ void bn_apply_f16_f32w(unsigned short* __restrict__ y, const unsigned short* __restrict__ x, const float* __restrict__ mean,
    const float* __restrict__ invstd, const float* __restrict__ w, const float* __restrict__ b,
    long long C, long long S, long long n)
{
    bn_apply_body<S_F16, S_F32>(y, x, mean, invstd, w, b, C, S, n);
}
// doc: bn_apply_f32 on bfloat16 storage with float32 weight and bias (and their gradients): PyTorch's mixed case.
extern "C" __global__ void bn_apply_bf16_f32w(unsigned short* __restrict__ y, const unsigned short* __restrict__ x, const float* __restrict__ mean,
    const float* __restrict__ invstd, const float* __restrict__ w, const float* __restrict__ b,
    long long C, long long S, long long n)
{
    bn_apply_body<S_BF16, S_F32>(y, x, mean, invstd, w, b, C, S, n);
}

template <int S>
DEVI void bn_bwd_reduce_body(float* __restrict__ sum_dy, float* __restrict__ sum_dy_xhat, const ELT(S)* __restrict__ dy,
                             const ELT(S)* __restrict__ x, const float* __restrict__ mean,
                             const float* __restrict__ invstd, long long N, long long C, long long S_)
{
    typedef Io<S> io;
    __shared__ float s_a[BN_THREADS], s_b[BN_THREADS];
    const long long c = blockIdx.x, M = N * S_;
    const float mu = mean[c], is = invstd[c];
    float a = 0.0f, bsum = 0.0f;
    for (long long k = threadIdx.x; k < M; k += blockDim.x) {
        const long long i = ((k / S_) * C + c) * S_ + k % S_;
        const float g = io::ld(dy, i);
        a += g;
        bsum += g * (io::ld(x, i) - mu) * is;
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

// doc: sum_dy[C] = sum of dy, sum_dy_xhat[C] = sum of dy * (x - mean) * invstd, over N and S; grid C, block 256.
extern "C" __global__ void bn_bwd_reduce_f32(float* __restrict__ sum_dy, float* __restrict__ sum_dy_xhat,
                                             const float* __restrict__ dy, const float* __restrict__ x,
                                             const float* __restrict__ mean, const float* __restrict__ invstd,
                                             long long N, long long C, long long S)
{
    bn_bwd_reduce_body<S_F32>(sum_dy, sum_dy_xhat, dy, x, mean, invstd, N, C, S);
}

// doc: bn_bwd_reduce_f32 on float16 storage dy and x (float32 mean, invstd and sums).
extern "C" __global__ void bn_bwd_reduce_f16(float* __restrict__ sum_dy, float* __restrict__ sum_dy_xhat, const unsigned short* __restrict__ dy,
    const unsigned short* __restrict__ x, const float* __restrict__ mean, const float* __restrict__ invstd,
    long long N, long long C, long long S)
{
    bn_bwd_reduce_body<S_F16>(sum_dy, sum_dy_xhat, dy, x, mean, invstd, N, C, S);
}

// doc: bn_bwd_reduce_f32 on bfloat16 storage dy and x (float32 mean, invstd and sums).
extern "C" __global__ void bn_bwd_reduce_bf16(float* __restrict__ sum_dy, float* __restrict__ sum_dy_xhat, const unsigned short* __restrict__ dy,
    const unsigned short* __restrict__ x, const float* __restrict__ mean, const float* __restrict__ invstd,
    long long N, long long C, long long S)
{
    bn_bwd_reduce_body<S_BF16>(sum_dy, sum_dy_xhat, dy, x, mean, invstd, N, C, S);
}

template <int S, int W = S>
DEVI void bn_bwd_dx_body(ELT(S)* __restrict__ dx, const ELT(S)* __restrict__ dy, const ELT(S)* __restrict__ x,
                         const float* __restrict__ mean, const float* __restrict__ invstd, const ELT(W)* __restrict__ w,
                         const float* __restrict__ sum_dy, const float* __restrict__ sum_dy_xhat, long long C,
                         long long S_, long long n, float M, int training)
{
    typedef Io<S> io;
    GRID_STRIDE(t, n)
    {
        const long long c = (t / S_) % C;
        const float scale = invstd[c] * (w ? Io<W>::ld(w, c) : 1.0f);
        float g = io::ld(dy, t);
        if (training) g -= (sum_dy[c] + (io::ld(x, t) - mean[c]) * invstd[c] * sum_dy_xhat[c]) / M;
        io::st(dx, t, g * scale);
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
    bn_bwd_dx_body<S_F32>(dx, dy, x, mean, invstd, w, sum_dy, sum_dy_xhat, C, S, n, M, training);
}

// doc: bn_bwd_dx_f32 on float16 storage (dx, dy, x, w; float32 statistics and sums, one rounding of dx).
extern "C" __global__ void bn_bwd_dx_f16(unsigned short* __restrict__ dx, const unsigned short* __restrict__ dy, const unsigned short* __restrict__ x,
    const float* __restrict__ mean, const float* __restrict__ invstd, const unsigned short* __restrict__ w,
    const float* __restrict__ sum_dy, const float* __restrict__ sum_dy_xhat, long long C, long long S, long long n,
    float M, int training)
{
    bn_bwd_dx_body<S_F16>(dx, dy, x, mean, invstd, w, sum_dy, sum_dy_xhat, C, S, n, M, training);
}

// doc: bn_bwd_dx_f32 on bfloat16 storage (dx, dy, x, w; float32 statistics and sums, one rounding of dx).
extern "C" __global__ void bn_bwd_dx_bf16(unsigned short* __restrict__ dx, const unsigned short* __restrict__ dy, const unsigned short* __restrict__ x,
    const float* __restrict__ mean, const float* __restrict__ invstd, const unsigned short* __restrict__ w,
    const float* __restrict__ sum_dy, const float* __restrict__ sum_dy_xhat, long long C, long long S, long long n,
    float M, int training)
{
    bn_bwd_dx_body<S_BF16>(dx, dy, x, mean, invstd, w, sum_dy, sum_dy_xhat, C, S, n, M, training);
}

// doc: bn_bwd_dx_f32 on float16 storage with float32 weight and bias (and their gradients): PyTorch's mixed case.
extern "C" __global__ void bn_bwd_dx_f16_f32w(unsigned short* __restrict__ dx, const unsigned short* __restrict__ dy, const unsigned short* __restrict__ x,
    const float* __restrict__ mean, const float* __restrict__ invstd, const float* __restrict__ w,
    const float* __restrict__ sum_dy, const float* __restrict__ sum_dy_xhat, long long C, long long S, long long n,
    float M, int training)
{
    bn_bwd_dx_body<S_F16, S_F32>(dx, dy, x, mean, invstd, w, sum_dy, sum_dy_xhat, C, S, n, M, training);
}
// doc: bn_bwd_dx_f32 on bfloat16 storage with float32 weight and bias (and their gradients): PyTorch's mixed case.
extern "C" __global__ void bn_bwd_dx_bf16_f32w(unsigned short* __restrict__ dx, const unsigned short* __restrict__ dy, const unsigned short* __restrict__ x,
    const float* __restrict__ mean, const float* __restrict__ invstd, const float* __restrict__ w,
    const float* __restrict__ sum_dy, const float* __restrict__ sum_dy_xhat, long long C, long long S, long long n,
    float M, int training)
{
    bn_bwd_dx_body<S_BF16, S_F32>(dx, dy, x, mean, invstd, w, sum_dy, sum_dy_xhat, C, S, n, M, training);
}
