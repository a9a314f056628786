// 16-bit tensor-core GEMM for sm_80 and newer (compiled for compute_80; the loader picks it only on a device of
// compute capability >= 8.0), bfloat16 or float16 storage with float32 accumulation:
//     Y[M,N] = act(alpha * op(A)[M,K] . op(B)[K,N] + beta * Y + bias[n])
// with the layouts, parameters and epilogue of gemm.cu's gemm_<layout>_f32_128x128, but A, B, Y and bias all in
// the kernel's 16-bit type T (bf16 or f16). The bias is T, not float32, because PyTorch requires it to have
// the input's dtype (autocast casts it with the weight): a float32 bias would need a widening temporary, and
// widening a bf16/f16 value is exact, so nothing is lost. The float32 result is rounded once to T (to nearest,
// ties to even; cvt.rn) when stored; beta * Y reads Y widened exactly.
//
// Block tile 128x128, BK = 32, 256 threads = 8 warps in a 2 (M) x 4 (N) grid; each warp owns 64x32 of the
// output as 4x4 tiles of mma.sync.m16n8k16 (float32 accumulators: 64 per thread).
// Shared memory keeps each operand in its global orientation, so every global -> shared copy is a 16-byte
// cp.async of 8 consecutive elements: a K-contiguous operand as S[mn][k] (rows of BK + 8), an MN-contiguous one
// as S[k][mn] (rows of 128 + 8). ldmatrix reads the fragments from either (with .trans for S[k][mn]); the
// 8-element (16-byte) row padding puts the 8 row addresses of each 8x8 matrix in distinct bank groups (rows of
// 80 or 272 bytes), which is what the issue's swizzle would buy, at 20% / 6% more shared memory.
// cp.async double buffering: tile t+1 is copied while the tensor cores work on tile t; cp.async.wait_group 1
// waits for tile t only. A chunk of 8 elements wholly outside the matrix is stored as zeros; a chunk that
// straddles the edge, or whose global address is not 16-byte aligned (odd leading dimensions,
// offset views), is copied element by element with ordinary loads and stores (zero outside), so every M, N, K
// and every leading dimension is served by the same kernel.

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

// The 16-bit formats: widening to float32 (exact), rounding float32 to nearest even, and the mma instruction.
struct Bf16 {
    static DEVI float widen(unsigned short h) { return __uint_as_float((unsigned)h << 16); }
    static DEVI unsigned short round(float x)
    {
        unsigned short r;
        asm("cvt.rn.bf16.f32 %0, %1;\n" : "=h"(r) : "f"(x));
        return r;
    }
    static DEVI void mma(float* d, const unsigned* a, const unsigned* b)
    {
        asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
                     "{%0,%1,%2,%3};\n"
                     : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
                     : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
    }
};

struct F16 {
    static DEVI float widen(unsigned short h)
    {
        float r;
        asm("cvt.f32.f16 %0, %1;\n" : "=f"(r) : "h"(h));
        return r;
    }
    static DEVI unsigned short round(float x)
    {
        unsigned short r;
        asm("cvt.rn.f16.f32 %0, %1;\n" : "=h"(r) : "f"(x));
        return r;
    }
    static DEVI void mma(float* d, const unsigned* a, const unsigned* b)
    {
        asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
                     "{%0,%1,%2,%3};\n"
                     : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
                     : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
    }
};

DEVI unsigned smem_addr(const void* p) { return (unsigned)__cvta_generic_to_shared(p); }

DEVI void cp_async16(void* smem, const void* gmem)
{
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16;\n" ::"r"(smem_addr(smem)), "l"(gmem));
}

DEVI void cp_commit() { asm volatile("cp.async.commit_group;\n" ::); }

template <int N>
DEVI void cp_wait() { asm volatile("cp.async.wait_group %0;\n" ::"n"(N)); }

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
        const bool row_in = outer < outer_n;
        if (!row_in || inner >= inner_n) {   // wholly outside: zeros, stored directly (16-byte aligned row chunk)
            *reinterpret_cast<uint4*>(dst) = make_uint4(0u, 0u, 0u, 0u);
        } else if (inner + 8 <= inner_n && ((unsigned long long)q & 15) == 0) {
            cp_async16(dst, q);
        } else {   // straddles the edge or unaligned: element by element, zero outside the matrix
#pragma unroll 1   // kept rolled: unrolled, the tn kernel spills on sm_90
            for (int e = 0; e < 8; ++e) dst[e] = (inner + e < inner_n) ? q[e] : (unsigned short)0;
        }
    }
}

// A fragments of the 16x16 tile at (m, k) of the slab (PTX ISA: a0 rows 0-7 / k 0-7, a1 rows 8-15, a2 k 8-15,
// a3 both): lane l gives the row address of 8x8 matrix l/8.
template <bool KCONTIG>
DEVI void frag_a(unsigned* a, const Slab<BM, KCONTIG>& S, int m, int k, int lane)
{
    const int i = lane >> 3, r = lane & 7;
    if (KCONTIG)
        ldmatrix_x4(a, &S.s[m + (i & 1) * 8 + r][k + (i >> 1) * 8]);
    else
        ldmatrix_x4_trans(a, &S.s[k + (i >> 1) * 8 + r][m + (i & 1) * 8]);
}

// B fragments of two 16x8 tiles at (k, n) and (k, n + 8): b[0], b[1] for the first, b[2], b[3] for the second.
template <bool KCONTIG>
DEVI void frag_b(unsigned* b, const Slab<BN, KCONTIG>& S, int k, int n, int lane)
{
    const int i = lane >> 3, r = lane & 7;
    if (KCONTIG)
        ldmatrix_x4(b, &S.s[n + (i >> 1) * 8 + r][k + (i & 1) * 8]);
    else
        ldmatrix_x4_trans(b, &S.s[k + (i & 1) * 8 + r][n + (i >> 1) * 8]);
}

template <typename T, bool AK, bool BKC>
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
                    for (int nt = 0; nt < 4; ++nt) T::mma(acc[mt][nt], af[mt], bf[nt]);
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
            const float bn = (bias != nullptr && n < N) ? T::widen(bias[n]) : 0.0f;
#pragma unroll
            for (int mt = 0; mt < 4; ++mt) {
#pragma unroll
                for (int h = 0; h < 2; ++h) {
                    const int m = m0 + wm + mt * 16 + g + 8 * h;
                    if (m < M && n < N) {
                        unsigned short* y = Y + (long long)m * ldy + n;
                        const float yold = use_beta ? T::widen(*y) : 0.0f;
                        *y = T::round(activate(fmaf(beta, yold, fmaf(alpha, acc[mt][nt][2 * h + j], bn)), act));
                    }
                }
            }
        }
    }
}

}  // namespace

// doc: nt bfloat16 tensor-core GEMM (sm_80+, float32 accumulation), Y[M,N] = act(alpha*A[M,K].B[N,K]^T + beta*Y + bias[N]); Y, A, B, bias bfloat16; bias 0 = none; act 0 none / 1 relu / 2 gelu-tanh. grid (ceil(N/128), ceil(M/128)), block 256.
extern "C" __global__ __launch_bounds__(256) void gemm_nt_bf16_128x128(unsigned short* __restrict__ Y, const unsigned short* __restrict__ A, const unsigned short* __restrict__ B, const unsigned short* __restrict__ bias, int M, int N, int K, int lda, int ldb, int ldy, float alpha, float beta, int act)
{
    gemm_body<Bf16, true, true>(Y, A, B, bias, M, N, K, lda, ldb, ldy, alpha, beta, act);
}

// doc: nn bfloat16 tensor-core GEMM (sm_80+, float32 accumulation), Y[M,N] = act(alpha*A[M,K].B[K,N] + beta*Y + bias[N]); Y, A, B, bias bfloat16; bias 0 = none; act 0 none / 1 relu / 2 gelu-tanh. grid (ceil(N/128), ceil(M/128)), block 256.
extern "C" __global__ __launch_bounds__(256) void gemm_nn_bf16_128x128(unsigned short* __restrict__ Y, const unsigned short* __restrict__ A, const unsigned short* __restrict__ B, const unsigned short* __restrict__ bias, int M, int N, int K, int lda, int ldb, int ldy, float alpha, float beta, int act)
{
    gemm_body<Bf16, true, false>(Y, A, B, bias, M, N, K, lda, ldb, ldy, alpha, beta, act);
}

// doc: tn bfloat16 tensor-core GEMM (sm_80+, float32 accumulation), Y[M,N] = act(alpha*A[K,M]^T.B[K,N] + beta*Y + bias[N]); Y, A, B, bias bfloat16; bias 0 = none; act 0 none / 1 relu / 2 gelu-tanh. grid (ceil(N/128), ceil(M/128)), block 256.
extern "C" __global__ __launch_bounds__(256) void gemm_tn_bf16_128x128(unsigned short* __restrict__ Y, const unsigned short* __restrict__ A, const unsigned short* __restrict__ B, const unsigned short* __restrict__ bias, int M, int N, int K, int lda, int ldb, int ldy, float alpha, float beta, int act)
{
    gemm_body<Bf16, false, false>(Y, A, B, bias, M, N, K, lda, ldb, ldy, alpha, beta, act);
}

// doc: nt float16 tensor-core GEMM (sm_80+, float32 accumulation), Y[M,N] = act(alpha*A[M,K].B[N,K]^T + beta*Y + bias[N]); Y, A, B, bias float16; bias 0 = none; act 0 none / 1 relu / 2 gelu-tanh. grid (ceil(N/128), ceil(M/128)), block 256.
extern "C" __global__ __launch_bounds__(256) void gemm_nt_f16_128x128(unsigned short* __restrict__ Y, const unsigned short* __restrict__ A, const unsigned short* __restrict__ B, const unsigned short* __restrict__ bias, int M, int N, int K, int lda, int ldb, int ldy, float alpha, float beta, int act)
{
    gemm_body<F16, true, true>(Y, A, B, bias, M, N, K, lda, ldb, ldy, alpha, beta, act);
}

// doc: nn float16 tensor-core GEMM (sm_80+, float32 accumulation), Y[M,N] = act(alpha*A[M,K].B[K,N] + beta*Y + bias[N]); Y, A, B, bias float16; bias 0 = none; act 0 none / 1 relu / 2 gelu-tanh. grid (ceil(N/128), ceil(M/128)), block 256.
extern "C" __global__ __launch_bounds__(256) void gemm_nn_f16_128x128(unsigned short* __restrict__ Y, const unsigned short* __restrict__ A, const unsigned short* __restrict__ B, const unsigned short* __restrict__ bias, int M, int N, int K, int lda, int ldb, int ldy, float alpha, float beta, int act)
{
    gemm_body<F16, true, false>(Y, A, B, bias, M, N, K, lda, ldb, ldy, alpha, beta, act);
}

// doc: tn float16 tensor-core GEMM (sm_80+, float32 accumulation), Y[M,N] = act(alpha*A[K,M]^T.B[K,N] + beta*Y + bias[N]); Y, A, B, bias float16; bias 0 = none; act 0 none / 1 relu / 2 gelu-tanh. grid (ceil(N/128), ceil(M/128)), block 256.
extern "C" __global__ __launch_bounds__(256) void gemm_tn_f16_128x128(unsigned short* __restrict__ Y, const unsigned short* __restrict__ A, const unsigned short* __restrict__ B, const unsigned short* __restrict__ bias, int M, int N, int K, int lda, int ldb, int ldy, float alpha, float beta, int act)
{
    gemm_body<F16, false, false>(Y, A, B, bias, M, N, K, lda, ldb, ldy, alpha, beta, act);
}

// ---- batched: blockIdx.z is the batch index; each operand has its own batch stride (elements), so a
// [batch, M, K] x [batch, K, N] product of 16-bit matrices is one launch (rawdev/ops/cuda_bmm.py). No bias, beta 0.

// doc: batched nt bfloat16 tensor-core GEMM (sm_80+, float32 accumulation), Y[z] = alpha * op(A[z]) . op(B[z]) for z = blockIdx.z (op(A[z]) = A[z] as [M,K], op(B[z]) = B[z]^T of [N,K]); A[z] = A + z*sA (elements), likewise B, Y. grid (ceil(N/128), ceil(M/128), batch), block 256.
extern "C" __global__ __launch_bounds__(256) void gemm_nt_bf16_128x128_batched(unsigned short* __restrict__ Y, const unsigned short* __restrict__ A, const unsigned short* __restrict__ B, int M, int N, int K, int lda, int ldb, int ldy, long long sA, long long sB, long long sY, float alpha)
{
    const long long z = blockIdx.z;
    gemm_body<Bf16, true, true>(Y + z * sY, A + z * sA, B + z * sB, nullptr, M, N, K, lda, ldb, ldy, alpha, 0.0f, 0);
}

// doc: batched nn bfloat16 tensor-core GEMM (sm_80+, float32 accumulation), Y[z] = alpha * op(A[z]) . op(B[z]) for z = blockIdx.z (A[z] [M,K], B[z] [K,N]); A[z] = A + z*sA (elements), likewise B, Y. grid (ceil(N/128), ceil(M/128), batch), block 256.
extern "C" __global__ __launch_bounds__(256) void gemm_nn_bf16_128x128_batched(unsigned short* __restrict__ Y, const unsigned short* __restrict__ A, const unsigned short* __restrict__ B, int M, int N, int K, int lda, int ldb, int ldy, long long sA, long long sB, long long sY, float alpha)
{
    const long long z = blockIdx.z;
    gemm_body<Bf16, true, false>(Y + z * sY, A + z * sA, B + z * sB, nullptr, M, N, K, lda, ldb, ldy, alpha, 0.0f, 0);
}

// doc: batched tn bfloat16 tensor-core GEMM (sm_80+, float32 accumulation), Y[z] = alpha * op(A[z]) . op(B[z]) for z = blockIdx.z (op(A[z]) = A[z]^T of [K,M], B[z] [K,N]); A[z] = A + z*sA (elements), likewise B, Y. grid (ceil(N/128), ceil(M/128), batch), block 256.
extern "C" __global__ __launch_bounds__(256) void gemm_tn_bf16_128x128_batched(unsigned short* __restrict__ Y, const unsigned short* __restrict__ A, const unsigned short* __restrict__ B, int M, int N, int K, int lda, int ldb, int ldy, long long sA, long long sB, long long sY, float alpha)
{
    const long long z = blockIdx.z;
    gemm_body<Bf16, false, false>(Y + z * sY, A + z * sA, B + z * sB, nullptr, M, N, K, lda, ldb, ldy, alpha, 0.0f, 0);
}

// doc: batched nt float16 tensor-core GEMM (sm_80+, float32 accumulation), Y[z] = alpha * op(A[z]) . op(B[z]) for z = blockIdx.z (op(A[z]) = A[z] as [M,K], op(B[z]) = B[z]^T of [N,K]); A[z] = A + z*sA (elements), likewise B, Y. grid (ceil(N/128), ceil(M/128), batch), block 256.
extern "C" __global__ __launch_bounds__(256) void gemm_nt_f16_128x128_batched(unsigned short* __restrict__ Y, const unsigned short* __restrict__ A, const unsigned short* __restrict__ B, int M, int N, int K, int lda, int ldb, int ldy, long long sA, long long sB, long long sY, float alpha)
{
    const long long z = blockIdx.z;
    gemm_body<F16, true, true>(Y + z * sY, A + z * sA, B + z * sB, nullptr, M, N, K, lda, ldb, ldy, alpha, 0.0f, 0);
}

// doc: batched nn float16 tensor-core GEMM (sm_80+, float32 accumulation), Y[z] = alpha * op(A[z]) . op(B[z]) for z = blockIdx.z (A[z] [M,K], B[z] [K,N]); A[z] = A + z*sA (elements), likewise B, Y. grid (ceil(N/128), ceil(M/128), batch), block 256.
extern "C" __global__ __launch_bounds__(256) void gemm_nn_f16_128x128_batched(unsigned short* __restrict__ Y, const unsigned short* __restrict__ A, const unsigned short* __restrict__ B, int M, int N, int K, int lda, int ldb, int ldy, long long sA, long long sB, long long sY, float alpha)
{
    const long long z = blockIdx.z;
    gemm_body<F16, true, false>(Y + z * sY, A + z * sA, B + z * sB, nullptr, M, N, K, lda, ldb, ldy, alpha, 0.0f, 0);
}

// doc: batched tn float16 tensor-core GEMM (sm_80+, float32 accumulation), Y[z] = alpha * op(A[z]) . op(B[z]) for z = blockIdx.z (op(A[z]) = A[z]^T of [K,M], B[z] [K,N]); A[z] = A + z*sA (elements), likewise B, Y. grid (ceil(N/128), ceil(M/128), batch), block 256.
extern "C" __global__ __launch_bounds__(256) void gemm_tn_f16_128x128_batched(unsigned short* __restrict__ Y, const unsigned short* __restrict__ A, const unsigned short* __restrict__ B, int M, int N, int K, int lda, int ldb, int ldy, long long sA, long long sB, long long sY, float alpha)
{
    const long long z = blockIdx.z;
    gemm_body<F16, false, false>(Y + z * sY, A + z * sA, B + z * sB, nullptr, M, N, K, lda, ldb, ldy, alpha, 0.0f, 0);
}
