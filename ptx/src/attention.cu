// Fused scaled-dot-product attention, flash-attention style, on float32, float16 or bfloat16 storage.
//
// Layout: Q [N, L, E], K [N, S, E], V [N, S, Ev], O [N, L, Ev] (contiguous; N = the flattened batch), LSE [N, L].
// D (the head size the kernel is built for) is 16, 32, 64 or 128 with E, Ev <= D (zero padded).
// Four threads own one row (a query row in fwd / bwd_dq / probs, a key row in bwd_dkv); thread c of the quad holds
// dims d = k*4 + c (k < D/4), so the quad reads 4 consecutive words of a shared-memory row (no bank conflicts)
// and a dot product is D/4 FMAs and two xor-shuffles. A block is 32 rows (128 threads); the other side is
// streamed through shared memory in tiles of 32 rows.
//
// Forward: online softmax over key tiles (running max m and sum l per row, the output accumulator rescaled by
// exp(m_old - m_new) once per tile); no L x S matrix is written. It saves lse = m + log(l) per row (+inf for a
// row with no key to attend, whose output is 0).
// Backward (recompute, no atomics): sdpa_bwd_dq runs over query rows (P = exp(s - lse) recomputed tile by tile)
// and also writes Dv[i] = dO_i . O_i; sdpa_bwd_dkv runs over key rows, streaming query tiles (Q, dO, lse, Dv).
//   dV_j = sum_i Pd_ij dO_i,  dP_ij = dO_i . V_j (x keep/(1-p)),  dS_ij = P_ij (dP_ij - Dv_i),
//   dQ_i = scale sum_j dS_ij K_j,  dK_j = scale sum_i dS_ij Q_i.
// Mask: mmode 0 none, 1 float (added to the scaled score), 2 bool (uint8; 0 = not attended); element (n, i, j)
// at mask[n*msb + i*msl + j*mss] (strides in elements; 0 broadcasts). causal: key j attends query i iff j <= i.
// Dropout (p_drop > 0): element (n, i, j) has flat index t = (n*L + i)*S + j and is kept when word t%4 of
// Philox4x32-10(counter = (lo(t/4), hi(t/4), lo(offset), hi(offset)), key = (lo(seed), hi(seed))) gives
// u = (w >> 8) * 2^-24 >= p_drop (dropout.cu's scheme); kept probabilities are scaled by 1/(1-p_drop).

#include "common.cuh"
#include "storage.cuh"
#define DEVI __device__ __forceinline__

DEVI bool keep_at(long long t, float p, unsigned long long seed, unsigned long long offset)
{
    const unsigned long long g = (unsigned long long)t >> 2;
    const U4 w = philox4x32_10(U4{(unsigned int)g, (unsigned int)(g >> 32), (unsigned int)offset,
                                  (unsigned int)(offset >> 32)}, (unsigned int)seed, (unsigned int)(seed >> 32));
    const int k = (int)(t & 3);
    const unsigned int x = k == 0 ? w.x : (k == 1 ? w.y : (k == 2 ? w.z : w.w));
    return (float)(x >> 8) * 5.9604644775390625e-08f >= p;
}

// keep bits of the 32 consecutive elements t0 .. t0+31 (bit d for t0 + d): one Philox call per group of four
DEVI unsigned int keep_bits(long long t0, float p, unsigned long long seed, unsigned long long offset)
{
    unsigned int bits = 0;
    const long long g0 = t0 >> 2, g1 = (t0 + 31) >> 2;
#pragma unroll 1
    for (long long g = g0; g <= g1; ++g) {
        const U4 w = philox4x32_10(U4{(unsigned int)g, (unsigned int)((unsigned long long)g >> 32), (unsigned int)offset,
                                      (unsigned int)(offset >> 32)}, (unsigned int)seed, (unsigned int)(seed >> 32));
        const unsigned int words[4] = {w.x, w.y, w.z, w.w};
#pragma unroll
        for (int k = 0; k < 4; ++k) {
            const long long d = g * 4 + k - t0;
            if (d >= 0 && d < 32 && (float)(words[k] >> 8) * 5.9604644775390625e-08f >= p) bits |= 1u << d;
        }
    }
    return bits;
}

DEVI float quad_sum(float x)
{
    x += __shfl_xor_sync(0xffffffffu, x, 1);
    x += __shfl_xor_sync(0xffffffffu, x, 2);
    return x;
}

#define NEG_INF __int_as_float(0xff800000)
#define POS_INF __int_as_float(0x7f800000)

// the scaled score of (n, i, j) with the mask applied; -inf when not attended
DEVI float masked(float s, const void* mask, int mmode, long long n, int i, int j, long long msb, long long msl,
                  long long mss)
{
    if (mmode == 0) return s;
    const long long at = n * msb + (long long)i * msl + (long long)j * mss;
    if (mmode == 1) return s + ((const float*)mask)[at];
    return ((const unsigned char*)mask)[at] ? s : NEG_INF;
}

constexpr int TPR = 4, BR = 32, BT = 32, NTH = BR * TPR;

#define SDPA_ARGS const void* __restrict__ mask, long long msb, long long msl, long long mss, int mmode, \
    int N, int L, int S, int E, int Ev, float scale, int causal, float p_drop, unsigned long long seed, \
    unsigned long long offset

template <int D, int SG>
DEVI void load_tile(float (*A)[D], const ELT(SG)* __restrict__ src, int row0, int rows, int width)
{
    for (int idx = threadIdx.x; idx < BT * D; idx += NTH) {
        const int jj = idx / D, d = idx % D, j = row0 + jj;
        A[jj][d] = (j < rows && d < width) ? Io<SG>::ld(src, (long long)j * width + d) : 0.0f;
    }
}

template <int D, int SG>
DEVI void sdpa_fwd(ELT(SG)* __restrict__ O, float* __restrict__ LSE, const ELT(SG)* __restrict__ Q,
                   const ELT(SG)* __restrict__ K, const ELT(SG)* __restrict__ V, float* __restrict__ P, SDPA_ARGS)
{
    constexpr int DC = D / TPR;
    __shared__ float Ks[BT][D], Vs[BT][D];
    const int tid = threadIdx.x, c = tid & 3;
    const long long tiles = (L + BR - 1) / BR;
    const long long n = blockIdx.x / tiles;
    const int q0 = (int)(blockIdx.x % tiles) * BR, i = q0 + (tid >> 2);
    const bool row = i < L;
    const ELT(SG)* q = Q + ((long long)n * L + i) * E;
    float qr[DC], o[DC];
#pragma unroll
    for (int k = 0; k < DC; ++k) {
        const int d = k * TPR + c;
        qr[k] = (row && d < E) ? Io<SG>::ld(q, d) : 0.0f;
        o[k] = 0.0f;
    }
    const float lse_row = (P && row) ? LSE[(long long)n * L + i] : 0.0f;   // probs mode: lse is an input
    const float dscale = p_drop > 0.0f ? 1.0f / (1.0f - p_drop) : 1.0f;
    float m = NEG_INF, l = 0.0f;
    const ELT(SG)* Kb = K + (long long)n * S * E;
    const ELT(SG)* Vb = V + (long long)n * S * Ev;
    const int kend = causal ? min(S, q0 + BR) : S;
    for (int key0 = 0; key0 < kend; key0 += BT) {
        __syncthreads();
        load_tile<D, SG>(Ks, Kb, key0, S, E);
        if (!P) load_tile<D, SG>(Vs, Vb, key0, S, Ev);
        __syncthreads();
        const unsigned int kb = (p_drop > 0.0f && row) ? keep_bits(((long long)n * L + i) * S + key0, p_drop, seed, offset)
                                                        : 0xffffffffu;
        float s[BT];
        float mt = NEG_INF;
#pragma unroll
        for (int jj = 0; jj < BT; ++jj) {
            float acc = 0.0f;
#pragma unroll
            for (int k = 0; k < DC; ++k) acc = fmaf(qr[k], Ks[jj][k * TPR + c], acc);
            acc = quad_sum(acc);
            const int j = key0 + jj;
            const bool ok = row && j < S && (!causal || j <= i);
            s[jj] = ok ? masked(acc * scale, mask, mmode, n, i, j, msb, msl, mss) : NEG_INF;
            mt = fmaxf(mt, s[jj]);
        }
        if (P) {   // attention probabilities from the saved lse
            if (row && c == 0) {
#pragma unroll
                for (int jj = 0; jj < BT; ++jj) {
                    const int j = key0 + jj;
                    if (j < S) {
                        float p = expf(s[jj] - lse_row);
                        const long long t = ((long long)n * L + i) * S + j;
                        if (p_drop > 0.0f) p = ((kb >> jj) & 1u) ? p * dscale : 0.0f;
                        P[t] = p;
                    }
                }
            }
            continue;
        }
        const float mn = fmaxf(m, mt);
        if (mn == NEG_INF) continue;   // nothing attended yet in this row
        const float alpha = expf(m - mn);
        l *= alpha;
#pragma unroll
        for (int k = 0; k < DC; ++k) o[k] *= alpha;
#pragma unroll
        for (int jj = 0; jj < BT; ++jj) {
            float p = expf(s[jj] - mn);
            l += p;
            if (p_drop > 0.0f) p = ((kb >> jj) & 1u) ? p * dscale : 0.0f;
#pragma unroll
            for (int k = 0; k < DC; ++k) o[k] = fmaf(p, Vs[jj][k * TPR + c], o[k]);
        }
        m = mn;
    }
    if (P) {
        if (causal && row && c == 0)   // keys past the causal tiles: probability 0
            for (int j = max(kend, 0); j < S; ++j) P[((long long)n * L + i) * S + j] = 0.0f;
        return;
    }
    if (!row) return;
    const float inv = l > 0.0f ? 1.0f / l : 0.0f;
    ELT(SG)* out = O + ((long long)n * L + i) * Ev;
#pragma unroll
    for (int k = 0; k < DC; ++k) {
        const int d = k * TPR + c;
        if (d < Ev) Io<SG>::st(out, d, o[k] * inv);
    }
    if (c == 0) LSE[(long long)n * L + i] = l > 0.0f ? m + logf(l) : POS_INF;
}

template <int D, int SG>
DEVI void sdpa_bwd_dq(ELT(SG)* __restrict__ dQ, float* __restrict__ Dv, float* __restrict__ dB,
                      const ELT(SG)* __restrict__ dO, const ELT(SG)* __restrict__ O, const float* __restrict__ LSE,
                      const ELT(SG)* __restrict__ Q, const ELT(SG)* __restrict__ K, const ELT(SG)* __restrict__ V,
                      SDPA_ARGS)
{
    constexpr int DC = D / TPR;
    __shared__ float Ks[BT][D], Vs[BT][D];
    const int tid = threadIdx.x, c = tid & 3;
    const long long tiles = (L + BR - 1) / BR;
    const long long n = blockIdx.x / tiles;
    const int q0 = (int)(blockIdx.x % tiles) * BR, i = q0 + (tid >> 2);
    const bool row = i < L;
    const long long ri = (long long)n * L + i;
    float qr[DC], dor[DC], dq[DC];
    float di = 0.0f;
#pragma unroll
    for (int k = 0; k < DC; ++k) {
        const int d = k * TPR + c;
        qr[k] = (row && d < E) ? Io<SG>::ld(Q, ri * E + d) : 0.0f;
        dor[k] = (row && d < Ev) ? Io<SG>::ld(dO, ri * Ev + d) : 0.0f;
        di = fmaf(dor[k], (row && d < Ev) ? Io<SG>::ld(O, ri * Ev + d) : 0.0f, di);
        dq[k] = 0.0f;
    }
    di = quad_sum(di);
    const float lse = row ? LSE[ri] : POS_INF;
    const float dscale = p_drop > 0.0f ? 1.0f / (1.0f - p_drop) : 1.0f;
    const ELT(SG)* Kb = K + (long long)n * S * E;
    const ELT(SG)* Vb = V + (long long)n * S * Ev;
    const int kend = causal ? min(S, q0 + BR) : S;
    for (int key0 = 0; key0 < kend; key0 += BT) {
        __syncthreads();
        load_tile<D, SG>(Ks, Kb, key0, S, E);
        load_tile<D, SG>(Vs, Vb, key0, S, Ev);
        __syncthreads();
        const unsigned int kb = (p_drop > 0.0f && row) ? keep_bits(ri * S + key0, p_drop, seed, offset) : 0xffffffffu;
        for (int jj = 0; jj < BT; ++jj) {
            float s = 0.0f, dp = 0.0f;
#pragma unroll
            for (int k = 0; k < DC; ++k) {
                s = fmaf(qr[k], Ks[jj][k * TPR + c], s);
                dp = fmaf(dor[k], Vs[jj][k * TPR + c], dp);
            }
            s = quad_sum(s);
            dp = quad_sum(dp);
            const int j = key0 + jj;
            const bool ok = row && j < S && (!causal || j <= i);
            const float p = ok ? expf(masked(s * scale, mask, mmode, n, i, j, msb, msl, mss) - lse) : 0.0f;
            if (p_drop > 0.0f) dp = ((kb >> jj) & 1u) ? dp * dscale : 0.0f;
            const float ds = p * (dp - di);
            if (dB && row && c == 0 && j < S) dB[ri * S + j] = ds;   // gradient of a float mask
#pragma unroll
            for (int k = 0; k < DC; ++k) dq[k] = fmaf(ds, Ks[jj][k * TPR + c], dq[k]);
        }
    }
    if (!row) return;
#pragma unroll
    for (int k = 0; k < DC; ++k) {
        const int d = k * TPR + c;
        if (d < E) Io<SG>::st(dQ, ri * E + d, dq[k] * scale);
    }
    if (c == 0) Dv[ri] = di;
}

template <int D, int SG>
DEVI void sdpa_bwd_dkv(ELT(SG)* __restrict__ dK, ELT(SG)* __restrict__ dV, const ELT(SG)* __restrict__ dO,
                       const float* __restrict__ Dv, const float* __restrict__ LSE, const ELT(SG)* __restrict__ Q,
                       const ELT(SG)* __restrict__ K, const ELT(SG)* __restrict__ V, SDPA_ARGS)
{
    constexpr int DC = D / TPR;
    __shared__ float Qs[BT][D], dOs[BT][D], ls[BT], ds_[BT];
    const int tid = threadIdx.x, c = tid & 3;
    const long long tiles = (S + BR - 1) / BR;
    const long long n = blockIdx.x / tiles;
    const int k0 = (int)(blockIdx.x % tiles) * BR, j = k0 + (tid >> 2);
    const bool col = j < S;
    const long long rj = (long long)n * S + j;
    float kr[DC], vr[DC], dk[DC], dv[DC];
#pragma unroll
    for (int k = 0; k < DC; ++k) {
        const int d = k * TPR + c;
        kr[k] = (col && d < E) ? Io<SG>::ld(K, rj * E + d) : 0.0f;
        vr[k] = (col && d < Ev) ? Io<SG>::ld(V, rj * Ev + d) : 0.0f;
        dk[k] = 0.0f;
        dv[k] = 0.0f;
    }
    const float dscale = p_drop > 0.0f ? 1.0f / (1.0f - p_drop) : 1.0f;
    const ELT(SG)* Qb = Q + (long long)n * L * E;
    const ELT(SG)* dOb = dO + (long long)n * L * Ev;
    for (int q0 = causal ? (k0 / BT) * BT : 0; q0 < L; q0 += BT) {
        __syncthreads();
        load_tile<D, SG>(Qs, Qb, q0, L, E);
        load_tile<D, SG>(dOs, dOb, q0, L, Ev);
        if (tid < BT) {
            const int i = q0 + tid;
            ls[tid] = i < L ? LSE[(long long)n * L + i] : POS_INF;
            ds_[tid] = i < L ? Dv[(long long)n * L + i] : 0.0f;
        }
        __syncthreads();
        for (int ii = 0; ii < BT; ++ii) {
            float s = 0.0f, dp = 0.0f;
#pragma unroll
            for (int k = 0; k < DC; ++k) {
                s = fmaf(kr[k], Qs[ii][k * TPR + c], s);
                dp = fmaf(vr[k], dOs[ii][k * TPR + c], dp);
            }
            s = quad_sum(s);
            dp = quad_sum(dp);
            const int i = q0 + ii;
            const bool ok = col && i < L && (!causal || j <= i);
            const float p = ok ? expf(masked(s * scale, mask, mmode, n, i, j, msb, msl, mss) - ls[ii]) : 0.0f;
            float pd = p;
            if (p_drop > 0.0f && p != 0.0f) {
                const bool kp = keep_at(((long long)n * L + i) * S + j, p_drop, seed, offset);
                pd = kp ? p * dscale : 0.0f;
                dp = kp ? dp * dscale : 0.0f;
            }
            const float ds = p * (dp - ds_[ii]);
#pragma unroll
            for (int k = 0; k < DC; ++k) {
                dv[k] = fmaf(pd, dOs[ii][k * TPR + c], dv[k]);
                dk[k] = fmaf(ds, Qs[ii][k * TPR + c], dk[k]);
            }
        }
    }
    if (!col) return;
#pragma unroll
    for (int k = 0; k < DC; ++k) {
        const int d = k * TPR + c;
        if (d < E) Io<SG>::st(dK, rj * E + d, dk[k] * scale);
        if (d < Ev) Io<SG>::st(dV, rj * Ev + d, dv[k]);
    }
}

#define SDPA_PARAMS mask, msb, msl, mss, mmode, N, L, S, E, Ev, scale, causal, p_drop, seed, offset

#define SDPA_KERNELS(D) \
/* doc: fused attention forward (online softmax), head size <= D: O[N,L,Ev], LSE[N,L] from Q[N,L,E], K[N,S,E], V[N,S,Ev]; mask mode 0/1 float/2 bool with strides; causal; Philox dropout. Block 128, grid N*ceil(L/32). */ \
extern "C" __global__ void sdpa_fwd_f32_d##D(float* __restrict__ O, float* __restrict__ LSE, const float* __restrict__ Q, const float* __restrict__ K, const float* __restrict__ V, const void* __restrict__ mask, long long msb, long long msl, long long mss, int mmode, int N, int L, int S, int E, int Ev, float scale, int causal, float p_drop, unsigned long long seed, unsigned long long offset) \
{ sdpa_fwd<D, S_F32>(O, LSE, Q, K, V, nullptr, SDPA_PARAMS); } \
/* doc: attention probabilities P[N,L,S] = exp(score - LSE) (dropped and rescaled when p_drop > 0) from the forward's LSE, head size <= D. Block 128, grid N*ceil(L/32). */ \
extern "C" __global__ void sdpa_probs_f32_d##D(float* __restrict__ P, const float* __restrict__ LSE, const float* __restrict__ Q, const float* __restrict__ K, const void* __restrict__ mask, long long msb, long long msl, long long mss, int mmode, int N, int L, int S, int E, int Ev, float scale, int causal, float p_drop, unsigned long long seed, unsigned long long offset) \
{ sdpa_fwd<D, S_F32>(nullptr, (float*)LSE, Q, K, K, P, SDPA_PARAMS); } \
/* doc: attention backward, query side: dQ[N,L,E], Dv[N,L] = rowsum(dO*O) and (dB != 0) the score gradient dB[N,L,S] (a float mask's gradient), recomputing P from LSE, head size <= D. Block 128, grid N*ceil(L/32). */ \
extern "C" __global__ void sdpa_bwd_dq_f32_d##D(float* __restrict__ dQ, float* __restrict__ Dv, float* __restrict__ dB, const float* __restrict__ dO, const float* __restrict__ O, const float* __restrict__ LSE, const float* __restrict__ Q, const float* __restrict__ K, const float* __restrict__ V, const void* __restrict__ mask, long long msb, long long msl, long long mss, int mmode, int N, int L, int S, int E, int Ev, float scale, int causal, float p_drop, unsigned long long seed, unsigned long long offset) \
{ sdpa_bwd_dq<D, S_F32>(dQ, Dv, dB, dO, O, LSE, Q, K, V, SDPA_PARAMS); } \
/* doc: attention backward, key side: dK[N,S,E], dV[N,S,Ev] from dO, Dv and LSE (run after sdpa_bwd_dq), head size <= D. Block 128, grid N*ceil(S/32). */ \
extern "C" __global__ void sdpa_bwd_dkv_f32_d##D(float* __restrict__ dK, float* __restrict__ dV, const float* __restrict__ dO, const float* __restrict__ Dv, const float* __restrict__ LSE, const float* __restrict__ Q, const float* __restrict__ K, const float* __restrict__ V, const void* __restrict__ mask, long long msb, long long msl, long long mss, int mmode, int N, int L, int S, int E, int Ev, float scale, int causal, float p_drop, unsigned long long seed, unsigned long long offset) \
{ sdpa_bwd_dkv<D, S_F32>(dK, dV, dO, Dv, LSE, Q, K, V, SDPA_PARAMS); }

// The 16-bit forms: q, k, v, out and their gradients on float16 or bfloat16 storage (loaded and widened exactly,
// float32 math and shared tiles, one rounding at each store); LSE, Dv and a float mask stay float32. Their results
// are the float32 kernels' on the widened operands, rounded once: bit for bit what widening around the float32
// kernel gives, without its float32 copies.
#define SDPA_HALF_KERNELS(D, SFX, SG) \
/* doc: sdpa_fwd_f32 on 16-bit storage (Q, K, V, O; float32 LSE, math and mask), head size <= D. Block 128, grid N*ceil(L/32). */ \
extern "C" __global__ void sdpa_fwd_##SFX##_d##D(unsigned short* __restrict__ O, float* __restrict__ LSE, const unsigned short* __restrict__ Q, const unsigned short* __restrict__ K, const unsigned short* __restrict__ V, const void* __restrict__ mask, long long msb, long long msl, long long mss, int mmode, int N, int L, int S, int E, int Ev, float scale, int causal, float p_drop, unsigned long long seed, unsigned long long offset) \
{ sdpa_fwd<D, SG>(O, LSE, Q, K, V, nullptr, SDPA_PARAMS); } \
/* doc: sdpa_bwd_dq_f32 on 16-bit storage (dQ, dO, O, Q, K, V; float32 Dv, LSE and score gradient), head size <= D. Block 128, grid N*ceil(L/32). */ \
extern "C" __global__ void sdpa_bwd_dq_##SFX##_d##D(unsigned short* __restrict__ dQ, float* __restrict__ Dv, float* __restrict__ dB, const unsigned short* __restrict__ dO, const unsigned short* __restrict__ O, const float* __restrict__ LSE, const unsigned short* __restrict__ Q, const unsigned short* __restrict__ K, const unsigned short* __restrict__ V, const void* __restrict__ mask, long long msb, long long msl, long long mss, int mmode, int N, int L, int S, int E, int Ev, float scale, int causal, float p_drop, unsigned long long seed, unsigned long long offset) \
{ sdpa_bwd_dq<D, SG>(dQ, Dv, dB, dO, O, LSE, Q, K, V, SDPA_PARAMS); } \
/* doc: sdpa_bwd_dkv_f32 on 16-bit storage (dK, dV, dO, Q, K, V; float32 Dv and LSE), head size <= D. Block 128, grid N*ceil(S/32). */ \
extern "C" __global__ void sdpa_bwd_dkv_##SFX##_d##D(unsigned short* __restrict__ dK, unsigned short* __restrict__ dV, const unsigned short* __restrict__ dO, const float* __restrict__ Dv, const float* __restrict__ LSE, const unsigned short* __restrict__ Q, const unsigned short* __restrict__ K, const unsigned short* __restrict__ V, const void* __restrict__ mask, long long msb, long long msl, long long mss, int mmode, int N, int L, int S, int E, int Ev, float scale, int causal, float p_drop, unsigned long long seed, unsigned long long offset) \
{ sdpa_bwd_dkv<D, SG>(dK, dV, dO, Dv, LSE, Q, K, V, SDPA_PARAMS); }

SDPA_KERNELS(16)
SDPA_KERNELS(32)
SDPA_KERNELS(64)
SDPA_KERNELS(128)
SDPA_HALF_KERNELS(16, f16, S_F16)
SDPA_HALF_KERNELS(32, f16, S_F16)
SDPA_HALF_KERNELS(64, f16, S_F16)
SDPA_HALF_KERNELS(128, f16, S_F16)
SDPA_HALF_KERNELS(16, bf16, S_BF16)
SDPA_HALF_KERNELS(32, bf16, S_BF16)
SDPA_HALF_KERNELS(64, bf16, S_BF16)
SDPA_HALF_KERNELS(128, bf16, S_BF16)
