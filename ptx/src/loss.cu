// Softmax family and losses, float32; the softmax family also on float16/bfloat16 storage (`_f16`, `_bf16`: loads
// widened to float32, the float32 kernel's math, one rounding at the store, so equal to the widened result bit for bit). Row kernels use one warp per row: block (256, 1, 1) = 8 rows
// per block, grid (ceil(rows/8), 1, 1); lanes stride over the C columns, reductions by shuffles.
// Everything subtracts the row max first, so logits of +-1e4 and C = 1 stay finite.
// Reduction codes: 0 none, 1 sum, 2 mean.
// A class-index target out of range (and not ignore_index) fails assert(t >= 0 && t < n_classes), PyTorch's
// condition: NVRTC's built-in assert calls __assertfail, which prints it and stops the kernel with
// CUDA_ERROR_ASSERT ("device-side assert triggered"), sticky for the context (the simulator does the same).

#include "common.cuh"
#define DEVI __device__ __forceinline__
#include "storage.cuh"

DEVI float warp_max(float v)
{
    for (int o = 16; o > 0; o >>= 1) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, o));
    return v;
}

DEVI float warp_sum(float v)
{
    for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
    return v;
}

// Row index of this warp (returns false when past the last row).
DEVI bool warp_row(long long& r, int rows)
{
    r = (long long)blockIdx.x * (blockDim.x >> 5) + (threadIdx.x >> 5);
    return r < rows;
}

// Row max and ls = log(sum(exp(x - max))) of one row, valid in all lanes. Kept apart (logsumexp =
// mx + ls) so that x - mx stays exact for large logits. Returns sum(exp(x - max)).
template <int S> DEVI float row_max_lse(const ELT(S)* __restrict__ xr, int C, float& mx, float& ls)
{
    const int lane = threadIdx.x & 31;
    float m = __int_as_float(0xff800000);  // -inf
    for (int c = lane; c < C; c += 32) m = fmaxf(m, Io<S>::ld(xr, c));
    m = warp_max(m);
    float s = 0.0f;
    for (int c = lane; c < C; c += 32) s += expf(Io<S>::ld(xr, c) - m);
    s = warp_sum(s);
    mx = m;
    ls = logf(s);
    return s;
}

template <int S> DEVI void softmax_rows(ELT(S)* __restrict__ y, const ELT(S)* __restrict__ x, int rows, int C)
{
    long long r;
    if (!warp_row(r, rows)) return;
    const ELT(S)* xr = x + r * C;
    float mx, ls;
    const float inv = 1.0f / row_max_lse<S>(xr, C, mx, ls);
    for (int c = threadIdx.x & 31; c < C; c += 32) Io<S>::st(y, r * C + c, expf(Io<S>::ld(xr, c) - mx) * inv);
}

template <int S> DEVI void softmax_rows_bwd(ELT(S)* __restrict__ dx, const ELT(S)* __restrict__ dy, const ELT(S)* __restrict__ y, int rows, int C)
{
    long long r;
    if (!warp_row(r, rows)) return;
    const int lane = threadIdx.x & 31;
    const ELT(S)* dyr = dy + r * C;
    const ELT(S)* yr = y + r * C;
    float s = 0.0f;
    for (int c = lane; c < C; c += 32) s = fmaf(Io<S>::ld(dyr, c), Io<S>::ld(yr, c), s);
    s = warp_sum(s);
    for (int c = lane; c < C; c += 32) Io<S>::st(dx, r * C + c, Io<S>::ld(yr, c) * (Io<S>::ld(dyr, c) - s));
}

template <int S> DEVI void log_softmax_rows(ELT(S)* __restrict__ y, const ELT(S)* __restrict__ x, int rows, int C)
{
    long long r;
    if (!warp_row(r, rows)) return;
    const ELT(S)* xr = x + r * C;
    float mx, ls;
    row_max_lse<S>(xr, C, mx, ls);
    for (int c = threadIdx.x & 31; c < C; c += 32) Io<S>::st(y, r * C + c, (Io<S>::ld(xr, c) - mx) - ls);
}

template <int S> DEVI void log_softmax_rows_bwd(ELT(S)* __restrict__ dx, const ELT(S)* __restrict__ dy, const ELT(S)* __restrict__ y, int rows, int C)
{
    long long r;
    if (!warp_row(r, rows)) return;
    const int lane = threadIdx.x & 31;
    const ELT(S)* dyr = dy + r * C;
    const ELT(S)* yr = y + r * C;
    float s = 0.0f;
    for (int c = lane; c < C; c += 32) s += Io<S>::ld(dyr, c);
    s = warp_sum(s);
    for (int c = lane; c < C; c += 32) Io<S>::st(dx, r * C + c, fmaf(-expf(Io<S>::ld(yr, c)), s, Io<S>::ld(dyr, c)));
}

// SOFTMAX_KERNELS(name, doc of the float32 kernel's result): name_fwd (x -> y) and name_bwd (dy and the saved
// output y -> dx) for the three storages: name_fwd, name_fwd_f16, name_fwd_bf16, name_bwd, name_bwd_f16, name_bwd_bf16.
#define SOFTMAX_KERNELS(NAME, FWD_DOC, BWD_DOC)                                                                 \
    /* doc: FWD_DOC for x[rows, C]. One warp per row: block (256, 1, 1), grid (ceil(rows/8), 1, 1). */         \
    extern "C" __global__ void NAME##_fwd(float* __restrict__ y, const float* __restrict__ x, int rows, int C)   \
    { NAME##_rows<S_F32>(y, x, rows, C); }                                                                     \
    /* doc: NAME##_fwd on float16 storage (float32 math, one rounding). */                                     \
    extern "C" __global__ void NAME##_fwd_f16(unsigned short* __restrict__ y, const unsigned short* __restrict__ x, int rows, int C) \
    { NAME##_rows<S_F16>(y, x, rows, C); }                                                                     \
    /* doc: NAME##_fwd on bfloat16 storage (float32 math, one rounding). */                                    \
    extern "C" __global__ void NAME##_fwd_bf16(unsigned short* __restrict__ y, const unsigned short* __restrict__ x, int rows, int C) \
    { NAME##_rows<S_BF16>(y, x, rows, C); }                                                                    \
    /* doc: BWD_DOC per row, y = saved NAME OUTPUT [rows, C]. block (256, 1, 1), grid (ceil(rows/8), 1, 1). */  \
    extern "C" __global__ void NAME##_bwd(float* __restrict__ dx, const float* __restrict__ dy, const float* __restrict__ y, int rows, int C) \
    { NAME##_rows_bwd<S_F32>(dx, dy, y, rows, C); }                                                            \
    /* doc: NAME##_bwd on float16 storage (float32 math, one rounding). */                                     \
    extern "C" __global__ void NAME##_bwd_f16(unsigned short* __restrict__ dx, const unsigned short* __restrict__ dy, const unsigned short* __restrict__ y, int rows, int C) \
    { NAME##_rows_bwd<S_F16>(dx, dy, y, rows, C); }                                                            \
    /* doc: NAME##_bwd on bfloat16 storage (float32 math, one rounding). */                                    \
    extern "C" __global__ void NAME##_bwd_bf16(unsigned short* __restrict__ dx, const unsigned short* __restrict__ dy, const unsigned short* __restrict__ y, int rows, int C) \
    { NAME##_rows_bwd<S_BF16>(dx, dy, y, rows, C); }

SOFTMAX_KERNELS(softmax, row softmax y(r, c) = exp(x(r, c) - max_r) / sum_c exp(x(r, c) - max_r), softmax backward dx = y * (dy - sum_c(dy * y)))
SOFTMAX_KERNELS(log_softmax, row log-softmax y(r, c) = x(r, c) - logsumexp_c(x(r, :)), log-softmax backward dx = dy - exp(y) * sum_c(dy))

// The block-wide end of the loss reduction: sum each thread's (loss, count) over the block (1024
// threads), then out = sum, or sum / count for the mean (0/0 = NaN, as PyTorch); count saved if wanted.
DEVI void finish_loss_reduce(float s, float k, float* out, float* count, int reduction)
{
    __shared__ float ps[32], pc[32];
    s = warp_sum(s);
    k = warp_sum(k);
    const int lane = threadIdx.x & 31, w = threadIdx.x >> 5, nw = blockDim.x >> 5;
    if (lane == 0) { ps[w] = s; pc[w] = k; }
    __syncthreads();
    if (w == 0) {
        s = lane < nw ? ps[lane] : 0.0f;
        k = lane < nw ? pc[lane] : 0.0f;
        s = warp_sum(s);
        k = warp_sum(k);
        if (lane == 0) {
            out[0] = (reduction == 2) ? s / k : s;
            if (count) count[0] = k;
        }
    }
}

// doc: class-weighted, label-smoothed fused log-softmax + cross-entropy per row (PyTorch's semantics for class-index targets) for logits[rows, C], int64 target[rows], weight[C] (0 = every weight 1) and smoothing e in [0, 1]: with lp = log_softmax(logits[r, :]) and t = target[r], loss[r] = (1 - e) * w[t] * -lp[t] + (e / C) * sum_c w[c] * -lp[c], 0 when t == ignore_index; a t out of [0, C) otherwise fails the device-side assert `t >= 0 && t < n_classes` (CUDA_ERROR_ASSERT, as PyTorch's); ls[r] = log(sum_c exp(logits[r, c] - max_c logits[r, :])) (the logsumexp less the row max, which backward recomputes: p stays exact for near-tied logits of +-1e4). Reduce with cross_entropy_ws_reduce. block (256, 1, 1), grid (ceil(rows/8), 1, 1).
extern "C" __global__ void cross_entropy_ws_fwd(float* __restrict__ loss, float* __restrict__ lsr, const float* __restrict__ logits, const long long* __restrict__ target, const float* __restrict__ weight, int rows, int C, long long ignore_index, float smoothing)
{
    long long r;
    if (!warp_row(r, rows)) return;
    const int lane = threadIdx.x & 31;
    const float* xr = logits + r * C;
    const bool smooth = smoothing != 0.0f;
    float m = __int_as_float(0xff800000);  // -inf
    for (int c = lane; c < C; c += 32) m = fmaxf(m, xr[c]);
    m = warp_max(m);
    // s = sum exp(x - m); a = sum w[c] * (m - x[c]) >= 0 and ws = sum w[c] (smoothing only), so that
    // sum_c w[c] * -lp[c] = sum_c w[c] * ((m - x[c]) + ls) = a + ws * ls: a sum of non-negative terms.
    float s = 0.0f, a = 0.0f, ws = 0.0f;
    for (int c = lane; c < C; c += 32) {
        const float d = m - xr[c];
        s += expf(-d);
        if (smooth) {
            const float wc = weight ? weight[c] : 1.0f;
            a = fmaf(wc, d, a);
            ws += wc;
        }
    }
    s = warp_sum(s);
    if (smooth) {
        a = warp_sum(a);
        ws = warp_sum(ws);
    }
    const float ls = logf(s);
    if (lane == 0) {
        const long long t = target[r];
        float v;
        if (t == ignore_index) v = 0.0f;
        else {
            const int n_classes = C;
            assert(t >= 0 && t < n_classes);
            v = (weight ? weight[t] : 1.0f) * ((m - xr[t]) + ls);
            if (smooth) v = fmaf(smoothing / (float)C, fmaf(ws, ls, a), (1.0f - smoothing) * v);
        }
        loss[r] = v;
        lsr[r] = ls;
    }
}

// doc: reduces cross_entropy_ws_fwd's loss[rows]: out[0] = sum (reduction 1) or sum / denom (reduction 2), denom = sum over rows with target != ignore_index of weight[target] (1 each when weight = 0), as PyTorch's weighted mean; 0/0 = NaN. denom[0] = that sum (denom may be 0 = not wanted). Deterministic. block (1024, 1, 1), grid (1, 1, 1).
extern "C" __global__ void cross_entropy_ws_reduce(float* __restrict__ out, float* __restrict__ denom, const float* __restrict__ loss, const long long* __restrict__ target, const float* __restrict__ weight, int rows, int C, long long ignore_index, int reduction)
{
    float s = 0.0f, k = 0.0f;
    for (int r = threadIdx.x; r < rows; r += blockDim.x) {
        s += loss[r];
        const long long t = target[r];
        if (t != ignore_index) k += !weight ? 1.0f : (t < 0 || t >= C) ? __int_as_float(0x7fffffff) : weight[t];
    }
    finish_loss_reduce(s, k, out, denom, reduction);
}

// doc: backward of cross_entropy_ws_fwd (ls = its second output): with p[c] = exp((logits[r, c] - max_r) - ls[r]) = softmax(logits[r, :])[c], t = target[r], W = sum_c weight[c] (C when weight = 0): dlogits[r, c] = ((1 - e) * w[t] * (p[c] - (c == t)) + (e / C) * (W * p[c] - w[c])) * g_r, rows with t == ignore_index get 0; any other t out of [0, C) fails the device-side assert `t >= 0 && t < n_classes` in every lane of its row. g_r = grad[r] (reduction 0), grad[0] (1), grad[0] / denom[0] (2; denom from cross_entropy_ws_reduce; 0 when denom is 0). block (256, 1, 1), grid (ceil(rows/8), 1, 1).
extern "C" __global__ void cross_entropy_ws_bwd(float* __restrict__ dlogits, const float* __restrict__ logits, const float* __restrict__ lsr, const long long* __restrict__ target, const float* __restrict__ weight, const float* __restrict__ grad, const float* __restrict__ denom, int rows, int C, long long ignore_index, float smoothing, int reduction)
{
    long long r;
    if (!warp_row(r, rows)) return;
    const int lane = threadIdx.x & 31;
    const long long t = target[r];
    float g = (reduction == 0) ? grad[r] : grad[0];
    if (reduction == 2) {
        const float d = denom[0];
        g = (d != 0.0f) ? g / d : 0.0f;
    }
    const bool skip = t == ignore_index;
    if (!skip) {
        const int n_classes = C;
        assert(t >= 0 && t < n_classes);
    }
    const float wt = skip ? 0.0f : (weight ? weight[t] : 1.0f);
    const float e = smoothing / (float)C;
    float W = (float)C;
    if (weight && smoothing != 0.0f) {
        W = 0.0f;
        for (int c = lane; c < C; c += 32) W += weight[c];
        W = warp_sum(W);
    }
    const float at = (1.0f - smoothing) * wt;   // coefficient of the one-hot
    const float ap = fmaf(e, W, at);            // coefficient of p
    const float* xr = logits + r * C;
    float m = __int_as_float(0xff800000);  // -inf
    for (int c = lane; c < C; c += 32) m = fmaxf(m, xr[c]);
    m = warp_max(m);
    const float ls = lsr[r];
    for (int c = lane; c < C; c += 32) {
        const float p = expf((xr[c] - m) - ls);
        const float k = (c == t ? at : 0.0f) + e * (weight ? weight[c] : 1.0f);
        dlogits[r * C + c] = skip ? 0.0f : fmaf(p, ap, -k) * g;
    }
}

// ---------------------------------------------------------------- elementwise losses
// Op codes (rawdev/ops/loss.py's _PW): 0 l1 |x - t|; 1 smooth_l1 (a = beta > 0); 2 huber (a = delta);
// 3 binary cross-entropy on probabilities x (logs clamped at -100, as PyTorch); 4 binary cross-entropy on
// logits x (w = pos_weight per element, 1 when none); 5 kl_div t*(log t - x) (0 where t == 0);
// 6 kl_div with log-target exp(t)*(t - x).
DEVI float pw_loss(int op, float x, float t, float w, float a)
{
    switch (op) {
    case 0: return fabsf(x - t);
    case 1: { const float d = fabsf(x - t); return d < a ? 0.5f * d * d / a : d - 0.5f * a; }
    case 2: { const float d = fabsf(x - t); return d < a ? 0.5f * d * d : a * (d - 0.5f * a); }
    case 3: return -(t * fmaxf(logf(x), -100.0f) + (1.0f - t) * fmaxf(log1pf(-x), -100.0f));
    case 4: {
        // (1 - t) x + (1 + (pw - 1) t) * log(1 + exp(-x)), log(1 + exp(-x)) = max(-x, 0) + log1p(exp(-|x|))
        const float sp = fmaxf(-x, 0.0f) + log1pf(expf(-fabsf(x)));
        const float lw = fmaf(w - 1.0f, t, 1.0f);
        return fmaf(1.0f - t, x, lw * sp);
    }
    case 5: return t == 0.0f ? -(t * x) : t * (logf(t) - x);
    default: return expf(t) * (t - x);
    }
}

// doc: out[i] = loss_op(x[i], t[i]) for op 0 l1, 1 smooth_l1 (a = beta > 0), 2 huber (a = delta), 3 bce on probabilities (logs clamped at -100), 4 bce on logits (pw = pos_weight per element, 0 = none), 5 kl_div, 6 kl_div log_target. x, t (and pw) have n elements. Any 1-D grid/block.
extern "C" __global__ void pointwise_loss_fwd(float* __restrict__ out, const float* __restrict__ x, const float* __restrict__ t, const float* __restrict__ pw, int op, float a, long long n)
{
    GRID_STRIDE(i, n) out[i] = pw_loss(op, x[i], t[i], pw ? pw[i] : 1.0f, a);
}

// doc: gradients of pointwise_loss_fwd: dx[i] = dy[i] * d loss/dx, dt[i] = dy[i] * d loss/dt (dx or dt may be 0 = not wanted); bce's dx is (x - t) / max(x (1 - x), 1e-12) and its dt log(1-x) - log(x) with both logs clamped at -100, as PyTorch. Any 1-D grid/block.
extern "C" __global__ void pointwise_loss_bwd(float* __restrict__ dx, float* __restrict__ dt, const float* __restrict__ dy, const float* __restrict__ x, const float* __restrict__ t, const float* __restrict__ pw, int op, float a, long long n)
{
    GRID_STRIDE(i, n) {
        const float xi = x[i], ti = t[i], g = dy[i];
        float gx, gt;
        switch (op) {
        case 0: { const float d = xi - ti; gx = d > 0.0f ? 1.0f : (d < 0.0f ? -1.0f : (d == 0.0f ? 0.0f : d)); gt = -gx; break; }
        case 1: { const float d = xi - ti; gx = d < -a ? -1.0f : (d > a ? 1.0f : d / a); gt = -gx; break; }
        case 2: { const float d = xi - ti; gx = d < -a ? -a : (d > a ? a : d); gt = -gx; break; }
        case 3:
            gx = (xi - ti) / fmaxf((1.0f - xi) * xi, 1e-12f);
            gt = fmaxf(log1pf(-xi), -100.0f) - fmaxf(logf(xi), -100.0f);
            break;
        case 4: {
            // d/dx = (1 - t) - lw * sigmoid(-x); d/dt = (pw - 1) * log(1 + exp(-x)) - x
            const float e = expf(-fabsf(xi));
            const float sneg = xi >= 0.0f ? e / (1.0f + e) : 1.0f / (1.0f + e);   // sigmoid(-x)
            const float w = pw ? pw[i] : 1.0f;
            const float lw = fmaf(w - 1.0f, ti, 1.0f);
            gx = (1.0f - ti) - lw * sneg;
            gt = fmaf(w - 1.0f, fmaxf(-xi, 0.0f) + log1pf(e), -xi);
            break;
        }
        case 5: gx = -ti; gt = logf(ti) + 1.0f - xi; break;
        default: { const float et = expf(ti); gx = -et; gt = et * (ti - xi + 1.0f); break; }
        }
        if (dx) dx[i] = g * gx;
        if (dt) dt[i] = g * gt;
    }
}

// ---------------------------------------------------------------- nll_loss on [N, C, inner] log-probabilities

// doc: per-element nll: for r in [0, N*inner) with n = r / inner, k = r % inner, t = target[r]: loss[r] = -weight[t] * x[(n*C + t)*inner + k] (weight 0 = every weight 1); 0 when t == ignore_index, NaN when t is out of [0, C). Reduce with cross_entropy_ws_reduce (rows = N*inner). Any 1-D grid/block.
extern "C" __global__ void nll_fwd(float* __restrict__ loss, const float* __restrict__ x, const long long* __restrict__ target, const float* __restrict__ weight, long long rows, int C, long long inner, long long ignore_index)
{
    GRID_STRIDE(r, rows) {
        const long long t = target[r];
        float v;
        if (t == ignore_index) v = 0.0f;
        else if (t < 0 || t >= C) v = __int_as_float(0x7fffffff);
        else {
            const long long n = r / inner, k = r - n * inner;
            v = -(weight ? weight[t] : 1.0f) * x[(n * C + t) * inner + k];
        }
        loss[r] = v;
    }
}

// doc: backward of nll_fwd over x[N, C, inner] (n_elems = N*C*inner): dx[(n*C + c)*inner + k] = -weight[t] * g_r where c == t = target[r], r = n*inner + k, else 0 (0 too when t == ignore_index). g_r = grad[r] (reduction 0), grad[0] (1), grad[0] / denom[0] (2; 0 when denom is 0). Any 1-D grid/block.
extern "C" __global__ void nll_bwd(float* __restrict__ dx, const float* __restrict__ grad, const float* __restrict__ denom, const long long* __restrict__ target, const float* __restrict__ weight, long long n_elems, int C, long long inner, long long ignore_index, int reduction)
{
    GRID_STRIDE(i, n_elems) {
        const long long k = i % inner, nc = i / inner, c = nc % C, n = nc / C, r = n * inner + k;
        const long long t = target[r];
        float v = 0.0f;
        if (t == c && t != ignore_index) {
            float g = (reduction == 0) ? grad[r] : grad[0];
            if (reduction == 2) {
                const float d = denom[0];
                g = (d != 0.0f) ? g / d : 0.0f;
            }
            v = -(weight ? weight[t] : 1.0f) * g;
        }
        dx[i] = v;
    }
}
