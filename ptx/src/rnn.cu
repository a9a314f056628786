// Fused recurrent cells (LSTM, GRU, Elman), float32, one thread per (batch row b, hidden unit j) in a grid-stride loop over B*H.
// The input-to-hidden products of all time steps come from one GEMM (gx = x*W_ih^T + b_ih, [B, G] per step);
// the hidden-to-hidden product gh = h*W_hh^T + b_hh is one GEMM per step. Gate k of row b is column k*H + j.
// LSTM gates i, f, g, o; GRU gates r, z, n with n = tanh(gx_n + r * gh_n) (PyTorch's order and formula).
// The backward kernels write the gradient of the gate pre-activations, which is the gradient of gx and of gh
// (GRU: gh's n block is scaled by r); a null dh / dc pointer means a zero incoming gradient.

#define DEVI __device__ __forceinline__

DEVI float sigm(float x) { return 1.0f / (1.0f + expf(-x)); }

// doc: LSTM cell: gates = gx + gh ([B,4H], i f g o); c1 = f*c + i*g, h1 = o*tanh(c1); act[B,4H] keeps the activated gates for backward. Any 1-D grid/block.
extern "C" __global__ void lstm_cell_fwd(float* __restrict__ h1, float* __restrict__ c1, float* __restrict__ act, const float* __restrict__ gx, const float* __restrict__ gh, const float* __restrict__ c, long long B, long long H)
{
    const long long n = B * H, stride = (long long)gridDim.x * blockDim.x;
    for (long long e = (long long)blockIdx.x * blockDim.x + threadIdx.x; e < n; e += stride) {
        const long long b = e / H, j = e - b * H, g0 = b * 4 * H + j;
        const float ig = sigm(gx[g0] + gh[g0]);
        const float fg = sigm(gx[g0 + H] + gh[g0 + H]);
        const float gg = tanhf(gx[g0 + 2 * H] + gh[g0 + 2 * H]);
        const float og = sigm(gx[g0 + 3 * H] + gh[g0 + 3 * H]);
        const float cn = fg * c[e] + ig * gg;
        c1[e] = cn;
        h1[e] = og * tanhf(cn);
        act[g0] = ig;
        act[g0 + H] = fg;
        act[g0 + 2 * H] = gg;
        act[g0 + 3 * H] = og;
    }
}

// doc: LSTM cell backward: dG[B,4H] (gradient of the gate pre-activations) and dc[B,H] from dh1, dc1 (either may be 0 = zero), the saved act, c and c1. Any 1-D grid/block.
extern "C" __global__ void lstm_cell_bwd(float* __restrict__ dG, float* __restrict__ dc, const float* __restrict__ dh1, const float* __restrict__ dc1, const float* __restrict__ act, const float* __restrict__ c, const float* __restrict__ c1, long long B, long long H)
{
    const long long n = B * H, stride = (long long)gridDim.x * blockDim.x;
    for (long long e = (long long)blockIdx.x * blockDim.x + threadIdx.x; e < n; e += stride) {
        const long long b = e / H, j = e - b * H, g0 = b * 4 * H + j;
        const float ig = act[g0], fg = act[g0 + H], gg = act[g0 + 2 * H], og = act[g0 + 3 * H];
        const float tc = tanhf(c1[e]);
        const float dh = dh1 ? dh1[e] : 0.0f;
        const float dct = (dc1 ? dc1[e] : 0.0f) + dh * og * (1.0f - tc * tc);
        dG[g0] = dct * gg * ig * (1.0f - ig);
        dG[g0 + H] = dct * c[e] * fg * (1.0f - fg);
        dG[g0 + 2 * H] = dct * ig * (1.0f - gg * gg);
        dG[g0 + 3 * H] = dh * tc * og * (1.0f - og);
        dc[e] = dct * fg;
    }
}

// doc: GRU cell: r = sigm(gx_r + gh_r), z = sigm(gx_z + gh_z), n = tanh(gx_n + r*gh_n), h1 = (1-z)*n + z*h; act[B,4H] keeps r, z, n, gh_n. Any 1-D grid/block.
extern "C" __global__ void gru_cell_fwd(float* __restrict__ h1, float* __restrict__ act, const float* __restrict__ gx, const float* __restrict__ gh, const float* __restrict__ h, long long B, long long H)
{
    const long long n = B * H, stride = (long long)gridDim.x * blockDim.x;
    for (long long e = (long long)blockIdx.x * blockDim.x + threadIdx.x; e < n; e += stride) {
        const long long b = e / H, j = e - b * H, g0 = b * 3 * H + j, a0 = b * 4 * H + j;
        const float r = sigm(gx[g0] + gh[g0]);
        const float z = sigm(gx[g0 + H] + gh[g0 + H]);
        const float hn = gh[g0 + 2 * H];
        const float nn = tanhf(gx[g0 + 2 * H] + r * hn);
        h1[e] = (1.0f - z) * nn + z * h[e];
        act[a0] = r;
        act[a0 + H] = z;
        act[a0 + 2 * H] = nn;
        act[a0 + 3 * H] = hn;
    }
}

// doc: GRU cell backward: dgx[B,3H], dgh[B,3H] (the n block times r) and dh[B,H] from dh1 (0 = zero), the saved act and h. Any 1-D grid/block.
extern "C" __global__ void gru_cell_bwd(float* __restrict__ dgx, float* __restrict__ dgh, float* __restrict__ dh, const float* __restrict__ dh1, const float* __restrict__ act, const float* __restrict__ h, long long B, long long H)
{
    const long long n = B * H, stride = (long long)gridDim.x * blockDim.x;
    for (long long e = (long long)blockIdx.x * blockDim.x + threadIdx.x; e < n; e += stride) {
        const long long b = e / H, j = e - b * H, g0 = b * 3 * H + j, a0 = b * 4 * H + j;
        const float r = act[a0], z = act[a0 + H], nn = act[a0 + 2 * H], hn = act[a0 + 3 * H];
        const float d = dh1 ? dh1[e] : 0.0f;
        const float dn = d * (1.0f - z) * (1.0f - nn * nn);
        const float dz = d * (h[e] - nn) * z * (1.0f - z);
        const float dr = dn * hn * r * (1.0f - r);
        dgx[g0] = dr;
        dgx[g0 + H] = dz;
        dgx[g0 + 2 * H] = dn;
        dgh[g0] = dr;
        dgh[g0 + H] = dz;
        dgh[g0 + 2 * H] = dn * r;
        dh[e] = d * z;
    }
}

// doc: Elman RNN cell: h1 = act(gx + gh) over n = B*H elements, act 0 = tanh, 1 = relu. Any 1-D grid/block.
extern "C" __global__ void rnn_cell_fwd(float* __restrict__ h1, const float* __restrict__ gx, const float* __restrict__ gh, long long n, int relu)
{
    const long long stride = (long long)gridDim.x * blockDim.x;
    for (long long e = (long long)blockIdx.x * blockDim.x + threadIdx.x; e < n; e += stride) {
        const float s = gx[e] + gh[e];
        h1[e] = relu ? fmaxf(s, 0.0f) : tanhf(s);
    }
}

// doc: Elman RNN cell backward: dpre = dh1 * act'(pre) from the saved output h1 (tanh: 1 - h1^2; relu: h1 > 0). Any 1-D grid/block.
extern "C" __global__ void rnn_cell_bwd(float* __restrict__ dpre, const float* __restrict__ dh1, const float* __restrict__ h1, long long n, int relu)
{
    const long long stride = (long long)gridDim.x * blockDim.x;
    for (long long e = (long long)blockIdx.x * blockDim.x + threadIdx.x; e < n; e += stride) {
        const float y = h1[e];
        dpre[e] = relu ? (y > 0.0f ? dh1[e] : 0.0f) : dh1[e] * (1.0f - y * y);
    }
}
