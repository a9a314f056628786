// TF32 tensor-core GEMM for sm_80 and newer (compiled for compute_80; the loader picks it only on a device of
// compute capability >= 8.0 and only when rawdev.backends.cuda.matmul.allow_tf32 is True, PyTorch's switch):
//     Y[M,N] = act(alpha * op(A)[M,K] . op(B)[K,N] + beta * Y + bias[n])
// with the same layouts, parameters and epilogue as gemm.cu's gemm_<layout>_f32_128x128 (see there).
//
// Block tile 128x128, BK = 16, 256 threads = 8 warps in a 2 (M) x 4 (N) grid; each warp owns 64x32 of the
// output as 4x4 tiles of mma.sync.m16n8k8 (.tf32 inputs, float32 accumulators: 64 per thread).
// Operands are staged k-major in shared memory, As[k][m] and Bs[k][n], with rows of 128 + 8 floats: the
// fragment reads of a warp (8 groups x 4 threads, address (k0 + t)*136 + g) then fall in 32 distinct banks.
// cp.async double buffering: tile t+1 is copied global -> shared (4-byte copies, zero-filled outside the
// matrix, so edge tiles need no separate path) while the tensor cores work on tile t; cp.async.wait_group 1
// waits for tile t only. Values are rounded to TF32 (cvt.rna) as they are read into fragments.

#define DEVI __device__ __forceinline__

namespace {

constexpr int BM = 128, BN = 128, BK = 16, PAD = 8, NT = 256;

DEVI float gelu_tanh(float v)
{
    const float k0 = 2.0f * 0.7978845608028654f, k1 = 0.044715f;
    return v * __frcp_rn(1.0f + __expf(-k0 * fmaf(k1 * v, v * v, v)));
}

DEVI float activate(float v, int act)
{
    float r = (act == 1) ? fmaxf(v, 0.0f) : v;
    return (act == 2) ? gelu_tanh(v) : r;
}

DEVI void cp_async4(float* smem, const float* gmem, bool ok)
{
    const unsigned s = (unsigned)__cvta_generic_to_shared(smem);
    const int n = ok ? 4 : 0;   // src-size 0: nothing is read, the 4 bytes are zero-filled
    asm volatile("cp.async.ca.shared.global [%0], [%1], 4, %2;\n" ::"r"(s), "l"(gmem), "r"(n));
}

DEVI void cp_commit() { asm volatile("cp.async.commit_group;\n" ::); }

template <int N>
DEVI void cp_wait() { asm volatile("cp.async.wait_group %0;\n" ::"n"(N)); }

DEVI unsigned tf32(float x)
{
    unsigned r;
    asm("cvt.rna.tf32.f32 %0, %1;\n" : "=r"(r) : "f"(x));
    return r;
}

// d += a (16x8, row) . b (8x8, col) on one warp's fragments
DEVI void mma_tf32(float* d, const unsigned* a, const unsigned* b)
{
    asm volatile("mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
                 "{%0,%1,%2,%3};\n"
                 : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
}

// Copies the BMN x BK slab at (mn0, k0) into s[k][mn]. KCONTIG: element (mn, k) is p[mn*ld + k], else p[k*ld + mn];
// consecutive threads take consecutive addresses in global memory either way.
template <int BMN, bool KCONTIG>
DEVI void load_tile(float (*s)[BMN + PAD], const float* __restrict__ p, int ld, int mn0, int k0, int MN, int K,
                    int tid)
{
#pragma unroll
    for (int c = 0; c < BMN * BK / NT; ++c) {
        const int idx = tid + c * NT;
        const int mn = KCONTIG ? idx / BK : idx % BMN;
        const int k = KCONTIG ? idx % BK : idx / BMN;
        const int gm = mn0 + mn, gk = k0 + k;
        const bool ok = gm < MN && gk < K;
        const float* q = ok ? p + (KCONTIG ? (long long)gm * ld + gk : (long long)gk * ld + gm) : p;
        cp_async4(&s[k][mn], q, ok);
    }
}

template <bool AK, bool BKC>
DEVI void gemm_tf32_body(float* __restrict__ Y, const float* __restrict__ A, const float* __restrict__ B,
                         const float* __restrict__ bias, int M, int N, int K, int lda, int ldb, int ldy,
                         float alpha, float beta, int act)
{
    __shared__ __align__(16) float As[2][BK][BM + PAD];
    __shared__ __align__(16) float Bs[2][BK][BN + PAD];
    const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
    const int g = lane >> 2, t4 = lane & 3;
    const int wm = (warp >> 2) * 64, wn = (warp & 3) * 32;
    const int m0 = blockIdx.y * BM, n0 = blockIdx.x * BN;

    float acc[4][4][4];
#pragma unroll
    for (int i = 0; i < 4; ++i)
#pragma unroll
        for (int j = 0; j < 4; ++j)
#pragma unroll
            for (int r = 0; r < 4; ++r) acc[i][j][r] = 0.0f;

    const int ntiles = (K + BK - 1) / BK;
    if (ntiles > 0) {
        load_tile<BM, AK>(As[0], A, lda, m0, 0, M, K, tid);
        load_tile<BN, BKC>(Bs[0], B, ldb, n0, 0, N, K, tid);
        cp_commit();
        for (int kt = 0; kt < ntiles; ++kt) {
            const int cur = kt & 1;
            if (kt + 1 < ntiles) {   // the next tile's copies go out before this tile's math
                load_tile<BM, AK>(As[cur ^ 1], A, lda, m0, (kt + 1) * BK, M, K, tid);
                load_tile<BN, BKC>(Bs[cur ^ 1], B, ldb, n0, (kt + 1) * BK, N, K, tid);
                cp_commit();
                cp_wait<1>();
            } else {
                cp_wait<0>();
            }
            __syncthreads();
#pragma unroll
            for (int kk = 0; kk < BK; kk += 8) {
                unsigned af[4][4], bf[4][2];
#pragma unroll
                for (int mt = 0; mt < 4; ++mt) {
                    const int r = wm + mt * 16 + g;
                    af[mt][0] = tf32(As[cur][kk + t4][r]);
                    af[mt][1] = tf32(As[cur][kk + t4][r + 8]);
                    af[mt][2] = tf32(As[cur][kk + t4 + 4][r]);
                    af[mt][3] = tf32(As[cur][kk + t4 + 4][r + 8]);
                }
#pragma unroll
                for (int nt = 0; nt < 4; ++nt) {
                    const int c = wn + nt * 8 + g;
                    bf[nt][0] = tf32(Bs[cur][kk + t4][c]);
                    bf[nt][1] = tf32(Bs[cur][kk + t4 + 4][c]);
                }
#pragma unroll
                for (int mt = 0; mt < 4; ++mt)
#pragma unroll
                    for (int nt = 0; nt < 4; ++nt) mma_tf32(acc[mt][nt], af[mt], bf[nt]);
            }
            __syncthreads();   // everyone is done with this buffer before it is refilled
        }
    }

    // accumulator r of tile (mt, nt): row g (+8 for r >= 2), column 2*t4 (+1 for odd r)
    const bool use_beta = beta != 0.0f;
#pragma unroll
    for (int nt = 0; nt < 4; ++nt) {
#pragma unroll
        for (int j = 0; j < 2; ++j) {
            const int n = n0 + wn + nt * 8 + 2 * t4 + j;
            const float bn = (bias != nullptr && n < N) ? bias[n] : 0.0f;
#pragma unroll
            for (int mt = 0; mt < 4; ++mt) {
#pragma unroll
                for (int h = 0; h < 2; ++h) {
                    const int m = m0 + wm + mt * 16 + g + 8 * h;
                    if (m < M && n < N) {
                        float* y = Y + (long long)m * ldy + n;
                        const float yold = use_beta ? *y : 0.0f;
                        *y = activate(fmaf(beta, yold, fmaf(alpha, acc[mt][nt][2 * h + j], bn)), act);
                    }
                }
            }
        }
    }
}

}  // namespace

// doc: nt TF32 tensor-core GEMM (sm_80+), Y[M,N] = act(alpha*A[M,K].B[N,K]^T + beta*Y + bias[N]); bias 0 = none; act 0 none / 1 relu / 2 gelu-tanh. grid (ceil(N/128), ceil(M/128)), block 256.
extern "C" __global__ __launch_bounds__(256) void gemm_nt_tf32_128x128(float* __restrict__ Y, const float* __restrict__ A, const float* __restrict__ B, const float* __restrict__ bias, int M, int N, int K, int lda, int ldb, int ldy, float alpha, float beta, int act)
{
    gemm_tf32_body<true, true>(Y, A, B, bias, M, N, K, lda, ldb, ldy, alpha, beta, act);
}

// doc: nn TF32 tensor-core GEMM (sm_80+), Y[M,N] = act(alpha*A[M,K].B[K,N] + beta*Y + bias[N]); bias 0 = none; act 0 none / 1 relu / 2 gelu-tanh. grid (ceil(N/128), ceil(M/128)), block 256.
extern "C" __global__ __launch_bounds__(256) void gemm_nn_tf32_128x128(float* __restrict__ Y, const float* __restrict__ A, const float* __restrict__ B, const float* __restrict__ bias, int M, int N, int K, int lda, int ldb, int ldy, float alpha, float beta, int act)
{
    gemm_tf32_body<true, false>(Y, A, B, bias, M, N, K, lda, ldb, ldy, alpha, beta, act);
}

// doc: tn TF32 tensor-core GEMM (sm_80+), Y[M,N] = act(alpha*A[K,M]^T.B[K,N] + beta*Y + bias[N]); bias 0 = none; act 0 none / 1 relu / 2 gelu-tanh. grid (ceil(N/128), ceil(M/128)), block 256.
extern "C" __global__ __launch_bounds__(256) void gemm_tn_tf32_128x128(float* __restrict__ Y, const float* __restrict__ A, const float* __restrict__ B, const float* __restrict__ bias, int M, int N, int K, int lda, int ldb, int ldy, float alpha, float beta, int act)
{
    gemm_tf32_body<false, false>(Y, A, B, bias, M, N, K, lda, ldb, ldy, alpha, beta, act);
}
