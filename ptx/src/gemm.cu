// GEMM with fused epilogue for linear layers:
//     Y[M,N] = act(alpha * op(A)[M,K] . op(B)[K,N] + beta * Y + bias[n])
// Epilogue: Y = act(alpha*acc + bias[n] + beta*Y); Y is NOT read when beta == 0 (so it may hold
// garbage/NaN); bias == 0 (null pointer) means no bias; act code
// 0 = none, 1 = relu, 2 = gelu (tanh approximation).
// Layouts (all row-major, leading dimensions in elements):
//   nt: op(A)[m,k] = A[m*lda + k], op(B)[k,n] = B[n*ldb + k]  (linear forward  Y = X.W^T + b)
//   nn: op(A)[m,k] = A[m*lda + k], op(B)[k,n] = B[k*ldb + n]  (linear backward dX = dY.W)
//   tn: op(A)[m,k] = A[k*lda + m], op(B)[k,n] = B[k*ldb + n]  (linear backward dW = dY^T.X, beta=1 accumulates)
// Block tiles are staged in double-buffered shared memory; each thread keeps a TMxTN register tile.
// float4 global loads are used when the base pointer is 16-byte aligned and the leading dimension is
// a multiple of 4 (decided inside the kernel); edge tiles fall back to bounds-checked scalar loads.
// Launch: grid (ceil(N/BN), ceil(M/BM), 1), block (threads, 1, 1), no dynamic shared memory.
//   *_128x128: BM=BN=128, BK=8,  256 threads, 8x8 per thread in warp tiles of 64x32  (large outputs)
//   *_64x64:   BM=BN=64,  BK=16, 256 threads, 4x4 per thread
//   *_32x32:   BM=BN=32,  BK=16,  64 threads, 4x4 per thread  (small M*N)

#define DEVI __device__ __forceinline__

// gelu_tanh(v) = 0.5*v*(1 + tanh(u)) = v * sigmoid(2u), u = sqrt(2/pi)*(v + 0.044715 v^3). The
// sigmoid form needs no branch (exp -> inf gives -0, exp -> 0 gives v), which keeps the fully
// unrolled epilogue small.
DEVI float gelu_tanh(float v)
{
    const float k0 = 2.0f * 0.7978845608028654f, k1 = 0.044715f;
    return v * __frcp_rn(1.0f + __expf(-k0 * fmaf(k1 * v, v * v, v)));
}

// act: 0 none, 1 relu, 2 gelu-tanh; evaluated without branches (selects).
DEVI float activate(float v, int act)
{
    float r = (act == 1) ? fmaxf(v, 0.0f) : v;
    return (act == 2) ? gelu_tanh(v) : r;
}

// Shared tiles s[BK][BMN + 4] are swizzled: in rows k with bit 3 set (k = 8..15 of a BK = 16 tile), column c is
// stored at c ^ 8 (two float4 blocks over). Why: a K-contiguous operand is transposed on its way in, each
// thread writing 4 rows k..k+3 of one column; with the row stride 4 (mod 32) floats, rows k and k + 8 of the
// same warp's 8 columns fell in the same 16 banks (a 2-way conflict on every store of the 64x64 and 32x32
// tiles). Shifting rows 8..15 by 8 columns puts them in the other 8 banks of each group. Reads use the same map
// (a warp reads one row at a time, so its float4 reads stay contiguous and aligned). BK = 8 tiles are unchanged.
DEVI int swz(int k, int c) { return c ^ (((k >> 3) & 1) << 3); }

// Loads a BMN x BK slab of a matrix (rows along M or N, columns along K) into registers as float4
// chunks, then stores it k-major into shared memory s[BK][BMN + 4] (swizzled, see swz).
// KCONTIG: element (mn, k) is at p[mn*ld + k]; otherwise at p[k*ld + mn].
template <int BMN, int BK, int NT, bool KCONTIG>
struct TileLoader {
    static_assert((BMN * BK / 4) % NT == 0, "tile must split evenly into float4 chunks per thread");
    static constexpr int CH = BMN * BK / 4 / NT;
    float4 r[CH];

    DEVI void load(const float* __restrict__ p, int ld, int mn0, int k0, int MN, int K, bool vec, int tid)
    {
#pragma unroll
        for (int c = 0; c < CH; ++c) {
            int idx = tid + c * NT;
            if (KCONTIG) {
                int mn = mn0 + idx / (BK / 4), k = k0 + (idx % (BK / 4)) * 4;
                const float* q = p + (long long)mn * ld + k;
                if (vec && mn < MN && k + 3 < K) {
                    r[c] = *reinterpret_cast<const float4*>(q);
                } else {
                    bool okm = mn < MN;
                    r[c].x = (okm && k < K) ? q[0] : 0.0f;
                    r[c].y = (okm && k + 1 < K) ? q[1] : 0.0f;
                    r[c].z = (okm && k + 2 < K) ? q[2] : 0.0f;
                    r[c].w = (okm && k + 3 < K) ? q[3] : 0.0f;
                }
            } else {
                int k = k0 + idx / (BMN / 4), mn = mn0 + (idx % (BMN / 4)) * 4;
                const float* q = p + (long long)k * ld + mn;
                if (vec && k < K && mn + 3 < MN) {
                    r[c] = *reinterpret_cast<const float4*>(q);
                } else {
                    bool okk = k < K;
                    r[c].x = (okk && mn < MN) ? q[0] : 0.0f;
                    r[c].y = (okk && mn + 1 < MN) ? q[1] : 0.0f;
                    r[c].z = (okk && mn + 2 < MN) ? q[2] : 0.0f;
                    r[c].w = (okk && mn + 3 < MN) ? q[3] : 0.0f;
                }
            }
        }
    }

    DEVI void store(float (*s)[BMN + 4], int tid) const
    {
#pragma unroll
        for (int c = 0; c < CH; ++c) {
            int idx = tid + c * NT;
            if (KCONTIG) {
                int mn = idx / (BK / 4), k = (idx % (BK / 4)) * 4;
                const int col = swz(k, mn);      // the same for k..k+3 (one group of 8 rows)
                s[k][col] = r[c].x;
                s[k + 1][col] = r[c].y;
                s[k + 2][col] = r[c].z;
                s[k + 3][col] = r[c].w;
            } else {
                int k = idx / (BMN / 4), mn = (idx % (BMN / 4)) * 4;
                *reinterpret_cast<float4*>(&s[k][swz(k, mn)]) = r[c];
            }
        }
    }
};

// Which outputs a thread owns: rows m0 + rb + (i/4)*SUBM + i%4 and columns n0 + cb + (j/4)*SUBN + j%4 of its
// TM x TN register tile (runs of 4 so that shared reads and epilogue stores are float4s).
//   WN == 0, thread grid: threads form a TY x TX = (BM/TM) x (BN/TN) grid, thread (ty, tx) = (tid / TX, tid % TX)
//     owning runs at rows ty*4 + r*4*TY and columns tx*4 + c*4*TX. In the 128x128 tile a warp spans 2 x 16 of
//     that grid, so per k-step it reads 2 distinct float4s of As and 16 of Bs (32 + 256 bytes).
//   WN > 0, warp tiles: warps tile the block as (BM/WM) x (BN/WN) with WN columns each; within its warp tile a
//     thread owns (TM/4) x (TN/4) runs spaced SUBM x SUBN apart, lanes laid out (SUBM/4) x (SUBN/4). For the
//     128x128 tile (8 warps of 64 x 32) a warp reads 8 distinct float4s of As and 4 of Bs per k-step: 128 + 64
//     bytes from shared memory instead of 32 + 256, the same 16 floats per thread for its 64 FMAs.
template <int BM, int BN, int TM, int TN, int NT, int WN>
struct OutputMap {
    static constexpr bool WARP = WN > 0;
    static constexpr int TX = BN / TN, TY = BM / TM;
    static constexpr int WGN = WARP ? BN / WN : 1, WGM = WARP ? (NT / 32) / WGN : 1, WM = BM / WGM;
    static constexpr int SUBM = WARP ? WM / (TM / 4) : 4 * TY, SUBN = WARP ? WN / (TN / 4) : 4 * TX;
    static_assert(TX * TY == NT, "one TM x TN register tile per thread covers the block tile");
    static_assert(!WARP || ((SUBM / 4) * (SUBN / 4) == 32 && WGM * WGN * 32 == NT), "warp tile must hold 32 lanes");
    int rb, cb;
    DEVI explicit OutputMap(int tid)
    {
        if (WARP) {
            const int w = tid / 32, lane = tid % 32;
            rb = (w / WGN) * WM + (lane / (SUBN / 4)) * 4;
            cb = (w % WGN) * WN + (lane % (SUBN / 4)) * 4;
        } else {
            rb = (tid / TX) * 4;
            cb = (tid % TX) * 4;
        }
    }
};

template <int BM, int BN, int BK, int TM, int TN, bool AK, bool BKC, int WN = 0>
DEVI void gemm_body(float* __restrict__ Y, const float* __restrict__ A, const float* __restrict__ B,
                    const float* __restrict__ bias, int M, int N, int K, int lda, int ldb, int ldy,
                    float alpha, float beta, int act)
{
    constexpr int NT = (BN / TN) * (BM / TM);
    using Map = OutputMap<BM, BN, TM, TN, NT, WN>;
    static_assert(TM % 4 == 0 && TN % 4 == 0 && BK % 4 == 0, "register tiles are made of float4s");
    __shared__ __align__(16) float As[2][BK][BM + 4];
    __shared__ __align__(16) float Bs[2][BK][BN + 4];

    const int tid = threadIdx.x;
    const Map map(tid);
    const int m0 = blockIdx.y * BM, n0 = blockIdx.x * BN;
    const bool vecA = ((reinterpret_cast<unsigned long long>(A) & 15) == 0) && (lda % 4 == 0);
    const bool vecB = ((reinterpret_cast<unsigned long long>(B) & 15) == 0) && (ldb % 4 == 0);

    TileLoader<BM, BK, NT, AK> la;
    TileLoader<BN, BK, NT, BKC> lb;
    float acc[TM][TN];
#pragma unroll
    for (int i = 0; i < TM; ++i)
#pragma unroll
        for (int j = 0; j < TN; ++j) acc[i][j] = 0.0f;

    const int ntiles = (K + BK - 1) / BK;
    if (ntiles > 0) {
        la.load(A, lda, m0, 0, M, K, vecA, tid);
        lb.load(B, ldb, n0, 0, N, K, vecB, tid);
        la.store(As[0], tid);
        lb.store(Bs[0], tid);
        __syncthreads();
        for (int t = 0; t < ntiles; ++t) {
            const int cur = t & 1;
            const bool more = t + 1 < ntiles;
            if (more) {
                la.load(A, lda, m0, (t + 1) * BK, M, K, vecA, tid);
                lb.load(B, ldb, n0, (t + 1) * BK, N, K, vecB, tid);
            }
#pragma unroll
            for (int k = 0; k < BK; ++k) {
                float a[TM], b[TN];
#pragma unroll
                for (int r = 0; r < TM / 4; ++r) {
                    float4 v = *reinterpret_cast<const float4*>(&As[cur][k][swz(k, r * Map::SUBM + map.rb)]);
                    a[r * 4] = v.x; a[r * 4 + 1] = v.y; a[r * 4 + 2] = v.z; a[r * 4 + 3] = v.w;
                }
#pragma unroll
                for (int c = 0; c < TN / 4; ++c) {
                    float4 v = *reinterpret_cast<const float4*>(&Bs[cur][k][swz(k, c * Map::SUBN + map.cb)]);
                    b[c * 4] = v.x; b[c * 4 + 1] = v.y; b[c * 4 + 2] = v.z; b[c * 4 + 3] = v.w;
                }
#pragma unroll
                for (int i = 0; i < TM; ++i)
#pragma unroll
                    for (int j = 0; j < TN; ++j) acc[i][j] = fmaf(a[i], b[j], acc[i][j]);
            }
            if (more) {
                la.store(As[cur ^ 1], tid);
                lb.store(Bs[cur ^ 1], tid);
            }
            __syncthreads();
        }
    }

    // Per-column bias loaded once; only the Y read is conditional (beta == 0 must not read Y), so the
    // unrolled epilogue is one straight path per element.
    const bool use_beta = beta != 0.0f;
    float bcol[TN];
#pragma unroll
    for (int j = 0; j < TN; ++j) {
        const int n = n0 + (j / 4) * Map::SUBN + map.cb + (j % 4);
        bcol[j] = (bias != nullptr && n < N) ? bias[n] : 0.0f;
    }
    // A thread's columns come in runs of 4 consecutive n starting at a multiple of 4: when Y's base and row
    // stride are 16-byte aligned and a run is inside the matrix, it is written (and read, for beta) as one float4.
    const bool vecY = ((reinterpret_cast<unsigned long long>(Y) & 15) == 0) && (ldy % 4 == 0);
#pragma unroll
    for (int i = 0; i < TM; ++i) {
        const int m = m0 + (i / 4) * Map::SUBM + map.rb + (i % 4);
        float* yrow = Y + (long long)m * ldy;
#pragma unroll
        for (int q = 0; q < TN / 4; ++q) {
            const int n4 = n0 + q * Map::SUBN + map.cb;
            if (m >= M) continue;
            if (vecY && n4 + 3 < N) {
                float4 yold = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
                if (use_beta) yold = *reinterpret_cast<const float4*>(yrow + n4);
                float4 out;
                out.x = activate(fmaf(beta, yold.x, fmaf(alpha, acc[i][q * 4], bcol[q * 4])), act);
                out.y = activate(fmaf(beta, yold.y, fmaf(alpha, acc[i][q * 4 + 1], bcol[q * 4 + 1])), act);
                out.z = activate(fmaf(beta, yold.z, fmaf(alpha, acc[i][q * 4 + 2], bcol[q * 4 + 2])), act);
                out.w = activate(fmaf(beta, yold.w, fmaf(alpha, acc[i][q * 4 + 3], bcol[q * 4 + 3])), act);
                *reinterpret_cast<float4*>(yrow + n4) = out;
            } else {
#pragma unroll
                for (int e = 0; e < 4; ++e) {
                    const int n = n4 + e;
                    if (n < N) {
                        float yold = 0.0f;
                        if (use_beta) yold = yrow[n];
                        yrow[n] = activate(fmaf(beta, yold, fmaf(alpha, acc[i][q * 4 + e], bcol[q * 4 + e])), act);
                    }
                }
            }
        }
    }
}

// ---- nt: Y[M,N] = act(alpha * A[M,K] . B[N,K]^T + beta*Y + bias)  (linear forward: A = X, B = W)

// doc: nt GEMM, Y[M,N] = act(alpha*A[M,K].B[N,K]^T + beta*Y + bias[N]); bias 0 = none; act 0 none / 1 relu / 2 gelu-tanh. grid (ceil(N/128), ceil(M/128)), block 256.
extern "C" __global__ __launch_bounds__(256, 2) void gemm_nt_f32_128x128(float* __restrict__ Y, const float* __restrict__ A, const float* __restrict__ B, const float* __restrict__ bias, int M, int N, int K, int lda, int ldb, int ldy, float alpha, float beta, int act)
{
    gemm_body<128, 128, 8, 8, 8, true, true, 32>(Y, A, B, bias, M, N, K, lda, ldb, ldy, alpha, beta, act);
}

// doc: nt GEMM, Y[M,N] = act(alpha*A[M,K].B[N,K]^T + beta*Y + bias[N]); bias 0 = none; act 0 none / 1 relu / 2 gelu-tanh. grid (ceil(N/64), ceil(M/64)), block 256.
extern "C" __global__ __launch_bounds__(256) void gemm_nt_f32_64x64(float* __restrict__ Y, const float* __restrict__ A, const float* __restrict__ B, const float* __restrict__ bias, int M, int N, int K, int lda, int ldb, int ldy, float alpha, float beta, int act)
{
    gemm_body<64, 64, 16, 4, 4, true, true>(Y, A, B, bias, M, N, K, lda, ldb, ldy, alpha, beta, act);
}

// doc: nt GEMM, Y[M,N] = act(alpha*A[M,K].B[N,K]^T + beta*Y + bias[N]); bias 0 = none; act 0 none / 1 relu / 2 gelu-tanh. grid (ceil(N/32), ceil(M/32)), block 64.
extern "C" __global__ __launch_bounds__(64) void gemm_nt_f32_32x32(float* __restrict__ Y, const float* __restrict__ A, const float* __restrict__ B, const float* __restrict__ bias, int M, int N, int K, int lda, int ldb, int ldy, float alpha, float beta, int act)
{
    gemm_body<32, 32, 16, 4, 4, true, true>(Y, A, B, bias, M, N, K, lda, ldb, ldy, alpha, beta, act);
}

// ---- nn: Y[M,N] = act(alpha * A[M,K] . B[K,N] + beta*Y + bias)  (linear backward dX = dY . W)

// doc: nn GEMM, Y[M,N] = act(alpha*A[M,K].B[K,N] + beta*Y + bias[N]); bias 0 = none; act 0 none / 1 relu / 2 gelu-tanh. grid (ceil(N/128), ceil(M/128)), block 256.
extern "C" __global__ __launch_bounds__(256, 2) void gemm_nn_f32_128x128(float* __restrict__ Y, const float* __restrict__ A, const float* __restrict__ B, const float* __restrict__ bias, int M, int N, int K, int lda, int ldb, int ldy, float alpha, float beta, int act)
{
    gemm_body<128, 128, 8, 8, 8, true, false, 32>(Y, A, B, bias, M, N, K, lda, ldb, ldy, alpha, beta, act);
}

// doc: nn GEMM, Y[M,N] = act(alpha*A[M,K].B[K,N] + beta*Y + bias[N]); bias 0 = none; act 0 none / 1 relu / 2 gelu-tanh. grid (ceil(N/64), ceil(M/64)), block 256.
extern "C" __global__ __launch_bounds__(256) void gemm_nn_f32_64x64(float* __restrict__ Y, const float* __restrict__ A, const float* __restrict__ B, const float* __restrict__ bias, int M, int N, int K, int lda, int ldb, int ldy, float alpha, float beta, int act)
{
    gemm_body<64, 64, 16, 4, 4, true, false>(Y, A, B, bias, M, N, K, lda, ldb, ldy, alpha, beta, act);
}

// doc: nn GEMM, Y[M,N] = act(alpha*A[M,K].B[K,N] + beta*Y + bias[N]); bias 0 = none; act 0 none / 1 relu / 2 gelu-tanh. grid (ceil(N/32), ceil(M/32)), block 64.
extern "C" __global__ __launch_bounds__(64) void gemm_nn_f32_32x32(float* __restrict__ Y, const float* __restrict__ A, const float* __restrict__ B, const float* __restrict__ bias, int M, int N, int K, int lda, int ldb, int ldy, float alpha, float beta, int act)
{
    gemm_body<32, 32, 16, 4, 4, true, false>(Y, A, B, bias, M, N, K, lda, ldb, ldy, alpha, beta, act);
}

// ---- tn: Y[M,N] = act(alpha * A[K,M]^T . B[K,N] + beta*Y + bias)  (linear backward dW = dY^T . X, beta = 1 accumulates)

// doc: tn GEMM, Y[M,N] = act(alpha*A[K,M]^T.B[K,N] + beta*Y + bias[N]); bias 0 = none; act 0 none / 1 relu / 2 gelu-tanh. grid (ceil(N/128), ceil(M/128)), block 256.
extern "C" __global__ __launch_bounds__(256, 2) void gemm_tn_f32_128x128(float* __restrict__ Y, const float* __restrict__ A, const float* __restrict__ B, const float* __restrict__ bias, int M, int N, int K, int lda, int ldb, int ldy, float alpha, float beta, int act)
{
    gemm_body<128, 128, 8, 8, 8, false, false, 32>(Y, A, B, bias, M, N, K, lda, ldb, ldy, alpha, beta, act);
}

// doc: tn GEMM, Y[M,N] = act(alpha*A[K,M]^T.B[K,N] + beta*Y + bias[N]); bias 0 = none; act 0 none / 1 relu / 2 gelu-tanh. grid (ceil(N/64), ceil(M/64)), block 256.
extern "C" __global__ __launch_bounds__(256) void gemm_tn_f32_64x64(float* __restrict__ Y, const float* __restrict__ A, const float* __restrict__ B, const float* __restrict__ bias, int M, int N, int K, int lda, int ldb, int ldy, float alpha, float beta, int act)
{
    gemm_body<64, 64, 16, 4, 4, false, false>(Y, A, B, bias, M, N, K, lda, ldb, ldy, alpha, beta, act);
}

// doc: tn GEMM, Y[M,N] = act(alpha*A[K,M]^T.B[K,N] + beta*Y + bias[N]); bias 0 = none; act 0 none / 1 relu / 2 gelu-tanh. grid (ceil(N/32), ceil(M/32)), block 64.
extern "C" __global__ __launch_bounds__(64) void gemm_tn_f32_32x32(float* __restrict__ Y, const float* __restrict__ A, const float* __restrict__ B, const float* __restrict__ bias, int M, int N, int K, int lda, int ldb, int ldy, float alpha, float beta, int act)
{
    gemm_body<32, 32, 16, 4, 4, false, false>(Y, A, B, bias, M, N, K, lda, ldb, ldy, alpha, beta, act);
}

// ---- split-K for skinny outputs (few tiles, long K): blockIdx.z owns K-slice [z*kchunk, min(K, (z+1)*kchunk));
// each block writes its raw partial product op(A)[M, slice].op(B)[slice, N] to W[z][M][N] (no epilogue), then
// gemm_splitk_reduce_f32 sums the slices in z order (deterministic, no atomics) and applies the epilogue.
// kchunk must be a multiple of 4 (keeps the float4 loads aligned); gridDim.z * kchunk >= K.
template <bool AK, bool BKC>
DEVI void gemm_splitk_32(float* __restrict__ W, const float* __restrict__ A, const float* __restrict__ B,
                         int M, int N, int K, int lda, int ldb, int kchunk)
{
    const int z = blockIdx.z;
    const long long k0 = (long long)z * kchunk;
    const int kz = (int)min((long long)kchunk, (long long)K - k0);
    // Element (mn, k) of a KCONTIG operand is at p[mn*ld + k], else at p[k*ld + mn]: shift by k0 along K.
    const float* a = A + (AK ? k0 : k0 * lda);
    const float* b = B + (BKC ? k0 : k0 * ldb);
    gemm_body<32, 32, 16, 4, 4, AK, BKC>(W + (long long)z * M * N, a, b, nullptr, M, N, kz > 0 ? kz : 0, lda, ldb, N,
                                         1.0f, 0.0f, 0);
}

// doc: split-K nt GEMM partials, W[z][M][N] = A[M,kslice z].B[N,kslice z]^T (slice z = [z*kchunk, (z+1)*kchunk) of K); grid (ceil(N/32), ceil(M/32), splits), block 64. Sum with gemm_splitk_reduce_f32.
extern "C" __global__ __launch_bounds__(64) void gemm_nt_f32_32x32_splitk(float* __restrict__ W, const float* __restrict__ A, const float* __restrict__ B, int M, int N, int K, int lda, int ldb, int kchunk)
{
    gemm_splitk_32<true, true>(W, A, B, M, N, K, lda, ldb, kchunk);
}

// doc: split-K nn GEMM partials, W[z][M][N] = A[M,kslice z].B[kslice z,N]; grid (ceil(N/32), ceil(M/32), splits), block 64. Sum with gemm_splitk_reduce_f32.
extern "C" __global__ __launch_bounds__(64) void gemm_nn_f32_32x32_splitk(float* __restrict__ W, const float* __restrict__ A, const float* __restrict__ B, int M, int N, int K, int lda, int ldb, int kchunk)
{
    gemm_splitk_32<true, false>(W, A, B, M, N, K, lda, ldb, kchunk);
}

// doc: split-K tn GEMM partials, W[z][M][N] = A[kslice z,M]^T.B[kslice z,N]; grid (ceil(N/32), ceil(M/32), splits), block 64. Sum with gemm_splitk_reduce_f32.
extern "C" __global__ __launch_bounds__(64) void gemm_tn_f32_32x32_splitk(float* __restrict__ W, const float* __restrict__ A, const float* __restrict__ B, int M, int N, int K, int lda, int ldb, int kchunk)
{
    gemm_splitk_32<false, false>(W, A, B, M, N, K, lda, ldb, kchunk);
}

// doc: split-K reduce + epilogue, Y[m*ldy+n] = act(alpha*sum_z W[z][m][n] + beta*Y + bias[n]) summed in z order (deterministic); Y not read when beta == 0; bias 0 = none. Grid-stride over M*N; block 256.
extern "C" __global__ __launch_bounds__(256) void gemm_splitk_reduce_f32(float* __restrict__ Y, const float* __restrict__ W, const float* __restrict__ bias, int M, int N, int ldy, int splits, float alpha, float beta, int act)
{
    const long long total = (long long)M * N, stride = (long long)gridDim.x * blockDim.x;
    for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < total; i += stride) {
        const long long m = i / N;
        const int n = (int)(i - m * N);
        float s = 0.0f;
        for (int z = 0; z < splits; ++z) s += W[z * total + i];
        float* y = Y + m * ldy + n;
        const float yold = (beta != 0.0f) ? *y : 0.0f;
        const float bn = (bias != nullptr) ? bias[n] : 0.0f;
        *y = activate(fmaf(beta, yold, fmaf(alpha, s, bn)), act);
    }
}

// ---- batched: blockIdx.z is the batch index; each operand has its own batch stride (elements; 0 broadcasts
// one matrix to every batch), so a [batch, M, K] x [batch, K, N] product is one launch, not a loop. Two blocks per
// SM are asked for (at most 128 registers for 256 threads), as for the plain 128x128 tiles.
#define GEMM_BATCHED(LAYOUT, TILE, THREADS, BK_, TM_, TN_, AK, BKC, WN_)                                             \
    /* doc: Y[z] = alpha * op(A[z]) . op(B[z]) for z = blockIdx.z, layout LAYOUT, TILE x TILE tiles; A[z] = A + z*sA (elements), likewise B, Y. */ \
    extern "C" __global__ __launch_bounds__(THREADS, 2) void gemm_##LAYOUT##_f32_##TILE##x##TILE##_batched(      \
        float* __restrict__ Y, const float* __restrict__ A, const float* __restrict__ B, int M, int N, int K,     \
        int lda, int ldb, int ldy, long long sA, long long sB, long long sY, float alpha)                         \
    {                                                                                                             \
        const long long z = blockIdx.z;                                                                           \
        gemm_body<TILE, TILE, BK_, TM_, TN_, AK, BKC, WN_>(Y + z * sY, A + z * sA, B + z * sB, nullptr, M, N, K, lda,  \
                                                      ldb, ldy, alpha, 0.0f, 0);                                  \
    }
GEMM_BATCHED(nt, 128, 256, 8, 8, 8, true, true, 32)
GEMM_BATCHED(nt, 64, 256, 16, 4, 4, true, true, 0)
GEMM_BATCHED(nt, 32, 64, 16, 4, 4, true, true, 0)
GEMM_BATCHED(nn, 128, 256, 8, 8, 8, true, false, 32)
GEMM_BATCHED(nn, 64, 256, 16, 4, 4, true, false, 0)
GEMM_BATCHED(nn, 32, 64, 16, 4, 4, true, false, 0)
GEMM_BATCHED(tn, 128, 256, 8, 8, 8, false, false, 32)
GEMM_BATCHED(tn, 64, 256, 16, 4, 4, false, false, 0)
GEMM_BATCHED(tn, 32, 64, 16, 4, 4, false, false, 0)

// ---- 128x128 variants kept for tools/bench/gemm.py (not picked by rawdev's ops): the same tile with the thread-grid
// output map (what the warp tiles replaced), and with BK = 16 (half the barriers per FLOP, but ptxas needs 130-148
// registers for it: one 256-thread block per SM instead of two; capping it at 128 registers spills). A GPU run of
// the bench decides between them; no GPU has measured them yet.
#define GEMM_VARIANT(LAYOUT, SUFFIX, BK_, AK, BKC, WN_)                                                              \
    /* doc: LAYOUT GEMM variant SUFFIX of the 128x128 tile (bench only), same contract as gemm_##LAYOUT##_f32_128x128: grid (ceil(N/128), ceil(M/128)), block 256. */ \
    extern "C" __global__ __launch_bounds__(256) void gemm_##LAYOUT##_f32_128x128_##SUFFIX(                          \
        float* __restrict__ Y, const float* __restrict__ A, const float* __restrict__ B, const float* __restrict__ bias, \
        int M, int N, int K, int lda, int ldb, int ldy, float alpha, float beta, int act)                              \
    {                                                                                                                 \
        gemm_body<128, 128, BK_, 8, 8, AK, BKC, WN_>(Y, A, B, bias, M, N, K, lda, ldb, ldy, alpha, beta, act);        \
    }
GEMM_VARIANT(nt, grid, 8, true, true, 0)
GEMM_VARIANT(nn, grid, 8, true, false, 0)
GEMM_VARIANT(tn, grid, 8, false, false, 0)
GEMM_VARIANT(nt, bk16, 16, true, true, 32)
GEMM_VARIANT(nn, bk16, 16, true, false, 32)
GEMM_VARIANT(tn, bk16, 16, false, false, 32)
