// Resampling of x [P, H, W] (P = N*C planes; 1-d inputs are H = OH = 1) to y [P, OH, OW], float32, PyTorch's
// index rules (UpSample.h):
//   nearest:        src = min(floor(dst * scale), in - 1)               (scale: 1/scale_factor, or in/out)
//   nearest-exact:  src = min(floor((dst + 0.5) * scale), in - 1)
//   (bi)linear:     align_corners: src = dst * (in - 1)/(out - 1); else src = max((dst + 0.5) * scale - 0.5, 0);
//                   i0 = floor(src), i1 = i0 + (i0 < in - 1), lambda = src - i0
// Forward: one thread per output element (grid-stride, coalesced writes). Backward: one thread per output
// element adding its gradient into the input positions it read (atomicAdd; dx zeroed first).

#include "common.cuh"
__device__ __forceinline__ long long nearest_src(long long dst, float scale, long long in, int exact)
{
    const float s = exact ? ((float)dst + 0.5f) * scale : (float)dst * scale;
    const long long i = (long long)floorf(s);
    return i < in - 1 ? i : in - 1;
}

__device__ __forceinline__ void linear_src(long long dst, float scale, long long in, int align, long long& i0,
                                           long long& i1, float& lam)
{
    float s = align ? (float)dst * scale : ((float)dst + 0.5f) * scale - 0.5f;
    if (s < 0.0f) s = 0.0f;
    i0 = (long long)s;
    if (i0 > in - 1) i0 = in - 1;
    i1 = i0 + (i0 < in - 1 ? 1 : 0);
    lam = s - (float)i0;
    if (lam < 0.0f) lam = 0.0f;
}

// doc: y[P, OH, OW] = x[P, H, W] at the nearest source pixel (exact = 1: nearest-exact); sh, sw: the scales.
extern "C" __global__ void interp_nearest_fwd_f32(float* __restrict__ y, const float* __restrict__ x, long long P,
                                                  long long H, long long W, long long OH, long long OW, float sh,
                                                  float sw, int exact)
{
    GRID_STRIDE(t, P * OH * OW)
    {
        const long long ow = t % OW, oh = (t / OW) % OH, p = t / (OW * OH);
        y[t] = x[(p * H + nearest_src(oh, sh, H, exact)) * W + nearest_src(ow, sw, W, exact)];
    }
}

// doc: dx[P, H, W] += dy[P, OH, OW] at the nearest source pixel (atomicAdd; dx must be zeroed).
extern "C" __global__ void interp_nearest_bwd_f32(float* __restrict__ dx, const float* __restrict__ dy, long long P,
                                                  long long H, long long W, long long OH, long long OW, float sh,
                                                  float sw, int exact)
{
    GRID_STRIDE(t, P * OH * OW)
    {
        const long long ow = t % OW, oh = (t / OW) % OH, p = t / (OW * OH);
        atomicAdd(&dx[(p * H + nearest_src(oh, sh, H, exact)) * W + nearest_src(ow, sw, W, exact)], dy[t]);
    }
}

// doc: y[P, OH, OW] = bilinear interpolation of x[P, H, W] (align = align_corners); sh, sw: the scales.
extern "C" __global__ void interp_bilinear_fwd_f32(float* __restrict__ y, const float* __restrict__ x, long long P,
                                                   long long H, long long W, long long OH, long long OW, float sh,
                                                   float sw, int align)
{
    GRID_STRIDE(t, P * OH * OW)
    {
        const long long ow = t % OW, oh = (t / OW) % OH, p = t / (OW * OH);
        long long h0, h1, w0, w1;
        float lh, lw;
        linear_src(oh, sh, H, align, h0, h1, lh);
        linear_src(ow, sw, W, align, w0, w1, lw);
        const float* xp = x + p * H * W;
        y[t] = (1.0f - lh) * ((1.0f - lw) * xp[h0 * W + w0] + lw * xp[h0 * W + w1]) +
               lh * ((1.0f - lw) * xp[h1 * W + w0] + lw * xp[h1 * W + w1]);
    }
}

// doc: dx[P, H, W] += the bilinear weights times dy[P, OH, OW] (atomicAdd; dx must be zeroed).
extern "C" __global__ void interp_bilinear_bwd_f32(float* __restrict__ dx, const float* __restrict__ dy, long long P,
                                                   long long H, long long W, long long OH, long long OW, float sh,
                                                   float sw, int align)
{
    GRID_STRIDE(t, P * OH * OW)
    {
        const long long ow = t % OW, oh = (t / OW) % OH, p = t / (OW * OH);
        long long h0, h1, w0, w1;
        float lh, lw;
        linear_src(oh, sh, H, align, h0, h1, lh);
        linear_src(ow, sw, W, align, w0, w1, lw);
        float* dp = dx + p * H * W;
        const float g = dy[t];
        atomicAdd(&dp[h0 * W + w0], (1.0f - lh) * (1.0f - lw) * g);
        atomicAdd(&dp[h0 * W + w1], (1.0f - lh) * lw * g);
        atomicAdd(&dp[h1 * W + w0], lh * (1.0f - lw) * g);
        atomicAdd(&dp[h1 * W + w1], lh * lw * g);
    }
}
