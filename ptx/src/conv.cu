// Convolution by im2col + GEMM, float32. im2col writes the patches of x [N, C, H, W] as the columns of
// cols [C*KH*KW, N*OH*OW] (row k = (c, i, j), column (n, oh, ow)), zero where the window reaches into the
// padding; the convolution is then one GEMM weight[O, C*KH*KW] . cols. col2im is its adjoint (the input's
// gradient from dcols): each input element gathers the column entries its windows put it in, so it needs no
// atomics and is deterministic. One thread per output element, grid-stride, 64-bit indices.

#include "common.cuh"
struct ConvGeom {
    long long N, C, H, W, KH, KW, SH, SW, PH, PW, DH, DW, OH, OW;
};

// doc: cols[C*KH*KW, N*OH*OW] = the (zero-padded, strided, dilated) patches of x[N, C, H, W]; g: ConvGeom.
extern "C" __global__ void im2col_f32(float* __restrict__ cols, const float* __restrict__ x, ConvGeom g)
{
    const long long L = g.N * g.OH * g.OW;
    GRID_STRIDE(t, g.C * g.KH * g.KW * L)
    {
        const long long col = t % L, k = t / L;
        const long long ow = col % g.OW, oh = (col / g.OW) % g.OH, n = col / (g.OW * g.OH);
        const long long j = k % g.KW, i = (k / g.KW) % g.KH, c = k / (g.KW * g.KH);
        const long long h = oh * g.SH - g.PH + i * g.DH, w = ow * g.SW - g.PW + j * g.DW;
        cols[t] = (h >= 0 && h < g.H && w >= 0 && w < g.W) ? x[((n * g.C + c) * g.H + h) * g.W + w] : 0.0f;
    }
}

// doc: dx[N, C, H, W] = col2im(dcols): each element sums the entries of dcols[C*KH*KW, N*OH*OW] it fed.
extern "C" __global__ void col2im_f32(float* __restrict__ dx, const float* __restrict__ dcols, ConvGeom g)
{
    const long long L = g.N * g.OH * g.OW;
    GRID_STRIDE(t, g.N * g.C * g.H * g.W)
    {
        const long long w = t % g.W, h = (t / g.W) % g.H, c = (t / (g.W * g.H)) % g.C, n = t / (g.W * g.H * g.C);
        float acc = 0.0f;
        for (long long i = 0; i < g.KH; ++i) {
            const long long hh = h + g.PH - i * g.DH;
            if (hh < 0 || hh % g.SH) continue;
            const long long oh = hh / g.SH;
            if (oh >= g.OH) continue;
            for (long long j = 0; j < g.KW; ++j) {
                const long long ww = w + g.PW - j * g.DW;
                if (ww < 0 || ww % g.SW) continue;
                const long long ow = ww / g.SW;
                if (ow >= g.OW) continue;
                acc += dcols[((c * g.KH + i) * g.KW + j) * L + (n * g.OH + oh) * g.OW + ow];
            }
        }
        dx[t] = acc;
    }
}

struct PoolGeom {
    long long N, C, H, W, KH, KW, SH, SW, PH, PW, DH, DW, OH, OW;
};

// doc: y, idx [N, C, OH, OW] = max over each (padded, dilated) window of x[N, C, H, W] and the flat h*W+w of
// the first maximum (NaN wins, as PyTorch); mode 0 max_pool2d, mode 1 adaptive windows; g: PoolGeom.
extern "C" __global__ void max_pool2d_f32(float* __restrict__ y, long long* __restrict__ idx, const float* __restrict__ x, PoolGeom g, int mode)
{
    GRID_STRIDE(t, g.N * g.C * g.OH * g.OW)
    {
        const long long ow = t % g.OW, oh = (t / g.OW) % g.OH, nc = t / (g.OW * g.OH);
        const float* xp = x + nc * g.H * g.W;
        // the window as a start, a count and a step along each axis
        long long h0 = oh * g.SH - g.PH, nh = g.KH, dh = g.DH, w0 = ow * g.SW - g.PW, nw = g.KW, dw = g.DW;
        if (mode == 1) {
            h0 = oh * g.H / g.OH; nh = ((oh + 1) * g.H + g.OH - 1) / g.OH - h0; dh = 1;
            w0 = ow * g.W / g.OW; nw = ((ow + 1) * g.W + g.OW - 1) / g.OW - w0; dw = 1;
        }
        float best = __int_as_float(0xff800000);
        long long arg = -1;
        for (long long i = 0; i < nh; ++i) {
            const long long h = h0 + i * dh;
            if (h < 0 || h >= g.H) continue;
            for (long long j = 0; j < nw; ++j) {
                const long long w = w0 + j * dw;
                if (w < 0 || w >= g.W) continue;
                const float v = xp[h * g.W + w];
                if (arg < 0 || v > best || (v != v && best == best)) {
                    best = v;
                    arg = h * g.W + w;
                }
            }
        }
        y[t] = best;
        idx[t] = arg;
    }
}

// doc: dx[N, C, H, W] += dy at each window's argmax (atomics: windows may share a maximum); dx zeroed first.
extern "C" __global__ void max_pool2d_bwd_f32(float* __restrict__ dx, const float* __restrict__ dy, const long long* __restrict__ idx, PoolGeom g)
{
    GRID_STRIDE(t, g.N * g.C * g.OH * g.OW)
    {
        const long long nc = t / (g.OW * g.OH);
        if (idx[t] >= 0) atomicAdd(&dx[nc * g.H * g.W + idx[t]], dy[t]);
    }
}

// Window of output (oh, ow): [h0, h1) x [w0, w1). mode 0: avg_pool (stride/padding; the divisor counts the
// padding when count_pad, else only the cells inside); mode 1: adaptive (PyTorch's start = floor(o*H/OH),
// end = ceil((o+1)*H/OH)).
__device__ __forceinline__ void avg_window(const PoolGeom& g, long long oh, long long ow, int mode, int count_pad,
                                           long long& h0, long long& h1, long long& w0, long long& w1, float& div)
{
    if (mode == 1) {
        h0 = oh * g.H / g.OH; h1 = ((oh + 1) * g.H + g.OH - 1) / g.OH;
        w0 = ow * g.W / g.OW; w1 = ((ow + 1) * g.W + g.OW - 1) / g.OW;
        div = (float)((h1 - h0) * (w1 - w0));
        return;
    }
    h0 = oh * g.SH - g.PH; w0 = ow * g.SW - g.PW;
    h1 = h0 + g.KH; w1 = w0 + g.KW;
    const long long hpad = h1 < g.H + g.PH ? h1 : g.H + g.PH, wpad = w1 < g.W + g.PW ? w1 : g.W + g.PW;
    const long long pool = (hpad - h0) * (wpad - w0);
    h0 = h0 > 0 ? h0 : 0; w0 = w0 > 0 ? w0 : 0;
    h1 = h1 < g.H ? h1 : g.H; w1 = w1 < g.W ? w1 : g.W;
    div = count_pad ? (float)pool : (float)((h1 - h0) * (w1 - w0));
}

// doc: y[N, C, OH, OW] = mean over each window of x (mode 0 avg_pool2d with count_pad; mode 1 adaptive); g: PoolGeom.
extern "C" __global__ void avg_pool2d_f32(float* __restrict__ y, const float* __restrict__ x, PoolGeom g, int mode, int count_pad)
{
    GRID_STRIDE(t, g.N * g.C * g.OH * g.OW)
    {
        const long long ow = t % g.OW, oh = (t / g.OW) % g.OH, nc = t / (g.OW * g.OH);
        long long h0, h1, w0, w1;
        float div;
        avg_window(g, oh, ow, mode, count_pad, h0, h1, w0, w1, div);
        const float* xp = x + nc * g.H * g.W;
        float s = 0.0f;
        for (long long h = h0; h < h1; ++h)
            for (long long w = w0; w < w1; ++w) s += xp[h * g.W + w];
        y[t] = s / div;
    }
}

// doc: dx[N, C, H, W] += dy / divisor over each window (atomics: windows may overlap); dx zeroed first.
extern "C" __global__ void avg_pool2d_bwd_f32(float* __restrict__ dx, const float* __restrict__ dy, PoolGeom g, int mode, int count_pad)
{
    GRID_STRIDE(t, g.N * g.C * g.OH * g.OW)
    {
        const long long ow = t % g.OW, oh = (t / g.OW) % g.OH, nc = t / (g.OW * g.OH);
        long long h0, h1, w0, w1;
        float div;
        avg_window(g, oh, ow, mode, count_pad, h0, h1, w0, w1, div);
        const float v = dy[t] / div;
        float* dp = dx + nc * g.H * g.W;
        for (long long h = h0; h < h1; ++h)
            for (long long w = w0; w < w1; ++w) atomicAdd(&dp[h * g.W + w], v);
    }
}
