// float16 tensor-core GEMM for sm_75 (Turing; compiled for compute_75, so any device rawdev runs on can load it,
// and the dispatch picks it on 7.5 <= cc < 8.0, where gemm_bf16_sm80.cu's kernels cannot load):
//     Y[M,N] = act(alpha * op(A)[M,K] . op(B)[K,N] + beta * Y + bias[n])
// with the layouts, parameters and epilogue of gemm_bf16_sm80.cu's gemm_<layout>_f16_128x128 (so the dispatch
// is a change of name): A, B, Y and bias float16, float32 accumulation, the result rounded once to float16 (to
// nearest, ties to even; cvt.rn) when stored; beta * Y reads Y widened exactly. bfloat16 has no sm_75 mma form.
//
// The tiling is the sm_80 kernel's: block tile 128x128, BK = 32, 256 threads = 8 warps in a 2 (M) x 4 (N) grid,
// each warp owning 64x32 of the output as 4x4 tiles of 16x8 (float32 accumulators: 64 per thread); shared
// memory keeps each operand in its global orientation (rows padded by 8 elements), ldmatrix (sm_75+) reads the
// fragments. What sm_75 lacks changes two things:
// - no m16n8k16: each 16-deep step of a 16x8 tile is two mma.sync.m16n8k8.f16 (the ISA's k16 A fragment
//   a0..a3 is the k8 fragments {a0, a1} of k 0-7 and {a2, a3} of k 8-15; B's b0 and b1 likewise), accumulating
//   in the same float32 registers;
// - no cp.async: global -> shared copies are ordinary 16-byte loads and shared stores. The two shared buffers
//   are kept: tile t+1 is stored into the other buffer before the tensor cores work on tile t, so one barrier
//   per tile orders the stores against the reads. A chunk of 8 elements wholly outside the matrix is stored as
//   zeros; one that straddles the edge, or whose global address is not 16-byte aligned (odd leading dimensions,
//   offset views), is copied element by element (zero outside), so every M, N, K and leading dimension is
//   served by the same kernel.

#define DEVI __device__ __forceinline__

namespace {

constexpr int BM = 128, BN = 128, BK = 32, PAD = 8, NT = 256;

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

DEVI float widen(unsigned short h)
{
    float r;
    asm("cvt.f32.f16 %0, %1;\n" : "=f"(r) : "h"(h));
    return r;
}

DEVI unsigned short round_f16(float x)
{
    unsigned short r;
    asm("cvt.rn.f16.f32 %0, %1;\n" : "=h"(r) : "f"(x));
    return r;
}

// d += A[16x8] . B[8x8]: a holds the two A registers, b the one B register of the k8 fragment layout.
DEVI void mma_k8(float* d, unsigned a0, unsigned a1, unsigned b0)
{
    asm volatile("mma.sync.aligned.m16n8k8.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5}, {%6}, {%0,%1,%2,%3};\n"
                 : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
                 : "r"(a0), "r"(a1), "r"(b0));
}

DEVI unsigned smem_addr(const void* p) { return (unsigned)__cvta_generic_to_shared(p); }

DEVI void ldmatrix_x4(unsigned* r, const void* row)
{
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];\n"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3]) : "r"(smem_addr(row)));
}

DEVI void ldmatrix_x4_trans(unsigned* r, const void* row)
{
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0,%1,%2,%3}, [%4];\n"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3]) : "r"(smem_addr(row)));
}

// Shared-memory slab of one operand: S[mn][k] when K-contiguous in global memory, else S[k][mn].
template <int BMN, bool KCONTIG>
struct Slab {
    static constexpr int ROWS = KCONTIG ? BMN : BK, COLS = (KCONTIG ? BK : BMN) + PAD;
    unsigned short s[ROWS][COLS];
};

// Copies the BMN x BK slab at (mn0, k0) into S. KCONTIG: element (mn, k) is p[mn*ld + k], else p[k*ld + mn].
// Chunks of 8 elements run along the contiguous dimension; consecutive threads take consecutive chunks.
template <int BMN, bool KCONTIG>
DEVI void load_tile(Slab<BMN, KCONTIG>& S, const unsigned short* __restrict__ p, int ld, int mn0, int k0, int MN,
                    int K, int tid)
{
    constexpr int CPR = (KCONTIG ? BK : BMN) / 8;   // chunks per shared row
#pragma unroll
    for (int c = 0; c < BMN * BK / 8 / NT; ++c) {
        const int idx = tid + c * NT;
        const int row = idx / CPR, col = (idx % CPR) * 8;
        const int gm = mn0 + (KCONTIG ? row : col), gk = k0 + (KCONTIG ? col : row);
        // (outer, inner): the global row and the first element of the chunk along the contiguous dimension
        const int outer = KCONTIG ? gm : gk, inner = KCONTIG ? gk : gm;
        const int outer_n = KCONTIG ? MN : K, inner_n = KCONTIG ? K : MN;
        unsigned short* dst = &S.s[row][col];
        const unsigned short* q = p + (long long)outer * ld + inner;
        if (outer >= outer_n || inner >= inner_n) {   // wholly outside: zeros (16-byte aligned row chunk)
            *reinterpret_cast<uint4*>(dst) = make_uint4(0u, 0u, 0u, 0u);
        } else if (inner + 8 <= inner_n && ((unsigned long long)q & 15) == 0) {
            *reinterpret_cast<uint4*>(dst) = *reinterpret_cast<const uint4*>(q);
        } else {   // straddles the edge or unaligned: element by element, zero outside the matrix
#pragma unroll 1
            for (int e = 0; e < 8; ++e) dst[e] = (inner + e < inner_n) ? q[e] : (unsigned short)0;
        }
    }
}

// A fragments of the 16x16 tile at (m, k) of the slab: lane l gives the row address of 8x8 matrix l/8, so a[0]
// is rows 0-7 / k 0-7, a[1] rows 8-15 / k 0-7, a[2] rows 0-7 / k 8-15, a[3] rows 8-15 / k 8-15.
template <bool KCONTIG>
DEVI void frag_a(unsigned* a, const Slab<BM, KCONTIG>& S, int m, int k, int lane)
{
    const int i = lane >> 3, r = lane & 7;
    if (KCONTIG)
        ldmatrix_x4(a, &S.s[m + (i & 1) * 8 + r][k + (i >> 1) * 8]);
    else
        ldmatrix_x4_trans(a, &S.s[k + (i >> 1) * 8 + r][m + (i & 1) * 8]);
}

// B fragments of two 16x8 tiles at (k, n) and (k, n + 8): b[0] (k 0-7), b[1] (k 8-15) for the first, b[2], b[3]
// for the second.
template <bool KCONTIG>
DEVI void frag_b(unsigned* b, const Slab<BN, KCONTIG>& S, int k, int n, int lane)
{
    const int i = lane >> 3, r = lane & 7;
    if (KCONTIG)
        ldmatrix_x4(b, &S.s[n + (i >> 1) * 8 + r][k + (i & 1) * 8]);
    else
        ldmatrix_x4_trans(b, &S.s[k + (i & 1) * 8 + r][n + (i >> 1) * 8]);
}

template <bool AK, bool BKC>
DEVI void gemm_body(unsigned short* __restrict__ Y, const unsigned short* __restrict__ A,
                    const unsigned short* __restrict__ B, const unsigned short* __restrict__ bias, int M, int N,
                    int K, int lda, int ldb, int ldy, float alpha, float beta, int act)
{
    __shared__ __align__(16) Slab<BM, AK> As[2];
    __shared__ __align__(16) Slab<BN, BKC> Bs[2];
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
        for (int kt = 0; kt < ntiles; ++kt) {
            const int cur = kt & 1;
            __syncthreads();   // tile kt's stores are visible; everyone is done reading the other buffer
            if (kt + 1 < ntiles) {   // the next tile goes into the other buffer before this tile's math
                load_tile<BM, AK>(As[cur ^ 1], A, lda, m0, (kt + 1) * BK, M, K, tid);
                load_tile<BN, BKC>(Bs[cur ^ 1], B, ldb, n0, (kt + 1) * BK, N, K, tid);
            }
#pragma unroll
            for (int kk = 0; kk < BK; kk += 16) {
                unsigned af[4][4], bf[4][2];
#pragma unroll
                for (int mt = 0; mt < 4; ++mt) frag_a<AK>(af[mt], As[cur], wm + mt * 16, kk, lane);
#pragma unroll
                for (int np = 0; np < 2; ++np) {
                    unsigned r[4];
                    frag_b<BKC>(r, Bs[cur], kk, wn + np * 16, lane);
                    bf[2 * np][0] = r[0];
                    bf[2 * np][1] = r[1];
                    bf[2 * np + 1][0] = r[2];
                    bf[2 * np + 1][1] = r[3];
                }
#pragma unroll
                for (int mt = 0; mt < 4; ++mt)
#pragma unroll
                    for (int nt = 0; nt < 4; ++nt) {
                        mma_k8(acc[mt][nt], af[mt][0], af[mt][1], bf[nt][0]);   // k 0-7 of the 16
                        mma_k8(acc[mt][nt], af[mt][2], af[mt][3], bf[nt][1]);   // k 8-15
                    }
            }
        }
    }

    // accumulator r of tile (mt, nt): row g (+8 for r >= 2), column 2*t4 (+1 for odd r)
    const bool use_beta = beta != 0.0f;
#pragma unroll
    for (int nt = 0; nt < 4; ++nt) {
#pragma unroll
        for (int j = 0; j < 2; ++j) {
            const int n = n0 + wn + nt * 8 + 2 * t4 + j;
            const float bn = (bias != nullptr && n < N) ? widen(bias[n]) : 0.0f;
#pragma unroll
            for (int mt = 0; mt < 4; ++mt) {
#pragma unroll
                for (int h = 0; h < 2; ++h) {
                    const int m = m0 + wm + mt * 16 + g + 8 * h;
                    if (m < M && n < N) {
                        unsigned short* y = Y + (long long)m * ldy + n;
                        const float yold = use_beta ? widen(*y) : 0.0f;
                        *y = round_f16(activate(fmaf(beta, yold, fmaf(alpha, acc[mt][nt][2 * h + j], bn)), act));
                    }
                }
            }
        }
    }
}

}  // namespace

// doc: nt float16 tensor-core GEMM (sm_75, mma m16n8k8, float32 accumulation), Y[M,N] = act(alpha*A[M,K].B[N,K]^T + beta*Y + bias[N]); Y, A, B, bias float16; bias 0 = none; act 0 none / 1 relu / 2 gelu-tanh. grid (ceil(N/128), ceil(M/128)), block 256.
extern "C" __global__ __launch_bounds__(256) void gemm_nt_f16_sm75(unsigned short* __restrict__ Y, const unsigned short* __restrict__ A, const unsigned short* __restrict__ B, const unsigned short* __restrict__ bias, int M, int N, int K, int lda, int ldb, int ldy, float alpha, float beta, int act)
{
    gemm_body<true, true>(Y, A, B, bias, M, N, K, lda, ldb, ldy, alpha, beta, act);
}

// doc: nn float16 tensor-core GEMM (sm_75, mma m16n8k8, float32 accumulation), Y[M,N] = act(alpha*A[M,K].B[K,N] + beta*Y + bias[N]); Y, A, B, bias float16; bias 0 = none; act 0 none / 1 relu / 2 gelu-tanh. grid (ceil(N/128), ceil(M/128)), block 256.
extern "C" __global__ __launch_bounds__(256) void gemm_nn_f16_sm75(unsigned short* __restrict__ Y, const unsigned short* __restrict__ A, const unsigned short* __restrict__ B, const unsigned short* __restrict__ bias, int M, int N, int K, int lda, int ldb, int ldy, float alpha, float beta, int act)
{
    gemm_body<true, false>(Y, A, B, bias, M, N, K, lda, ldb, ldy, alpha, beta, act);
}

// doc: tn float16 tensor-core GEMM (sm_75, mma m16n8k8, float32 accumulation), Y[M,N] = act(alpha*A[K,M]^T.B[K,N] + beta*Y + bias[N]); Y, A, B, bias float16; bias 0 = none; act 0 none / 1 relu / 2 gelu-tanh. grid (ceil(N/128), ceil(M/128)), block 256.
extern "C" __global__ __launch_bounds__(256) void gemm_tn_f16_sm75(unsigned short* __restrict__ Y, const unsigned short* __restrict__ A, const unsigned short* __restrict__ B, const unsigned short* __restrict__ bias, int M, int N, int K, int lda, int ldb, int ldy, float alpha, float beta, int act)
{
    gemm_body<false, false>(Y, A, B, bias, M, N, K, lda, ldb, ldy, alpha, beta, act);
}

// ---- batched: blockIdx.z is the batch index; each operand has its own batch stride (elements), so a
// [batch, M, K] x [batch, K, N] product of float16 matrices is one launch (rawdev/ops/cuda_bmm.py). No bias, beta 0.

// doc: batched nt float16 tensor-core GEMM (sm_75, mma m16n8k8, float32 accumulation), Y[z] = alpha * op(A[z]) . op(B[z]) for z = blockIdx.z (op(A[z]) = A[z] as [M,K], op(B[z]) = B[z]^T of [N,K]); A[z] = A + z*sA (elements), likewise B, Y. grid (ceil(N/128), ceil(M/128), batch), block 256.
extern "C" __global__ __launch_bounds__(256) void gemm_nt_f16_sm75_batched(unsigned short* __restrict__ Y, const unsigned short* __restrict__ A, const unsigned short* __restrict__ B, int M, int N, int K, int lda, int ldb, int ldy, long long sA, long long sB, long long sY, float alpha)
{
    const long long z = blockIdx.z;
    gemm_body<true, true>(Y + z * sY, A + z * sA, B + z * sB, nullptr, M, N, K, lda, ldb, ldy, alpha, 0.0f, 0);
}

// doc: batched nn float16 tensor-core GEMM (sm_75, mma m16n8k8, float32 accumulation), Y[z] = alpha * op(A[z]) . op(B[z]) for z = blockIdx.z (A[z] [M,K], B[z] [K,N]); A[z] = A + z*sA (elements), likewise B, Y. grid (ceil(N/128), ceil(M/128), batch), block 256.
extern "C" __global__ __launch_bounds__(256) void gemm_nn_f16_sm75_batched(unsigned short* __restrict__ Y, const unsigned short* __restrict__ A, const unsigned short* __restrict__ B, int M, int N, int K, int lda, int ldb, int ldy, long long sA, long long sB, long long sY, float alpha)
{
    const long long z = blockIdx.z;
    gemm_body<true, false>(Y + z * sY, A + z * sA, B + z * sB, nullptr, M, N, K, lda, ldb, ldy, alpha, 0.0f, 0);
}

// doc: batched tn float16 tensor-core GEMM (sm_75, mma m16n8k8, float32 accumulation), Y[z] = alpha * op(A[z]) . op(B[z]) for z = blockIdx.z (op(A[z]) = A[z]^T of [K,M], B[z] [K,N]); A[z] = A + z*sA (elements), likewise B, Y. grid (ceil(N/128), ceil(M/128), batch), block 256.
extern "C" __global__ __launch_bounds__(256) void gemm_tn_f16_sm75_batched(unsigned short* __restrict__ Y, const unsigned short* __restrict__ A, const unsigned short* __restrict__ B, int M, int N, int K, int lda, int ldb, int ldy, long long sA, long long sB, long long sY, float alpha)
{
    const long long z = blockIdx.z;
    gemm_body<false, false>(Y + z * sY, A + z * sA, B + z * sB, nullptr, M, N, K, lda, ldb, ldy, alpha, 0.0f, 0);
}
