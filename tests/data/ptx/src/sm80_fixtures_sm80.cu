// sm_80 instructions for the PTX interpreter's tests: mma.sync m16n8k8 tf32, cvt.rna.tf32.f32, cp.async with
// commit/wait groups and zero-fill. Built for compute_80 by ../build_fixtures.py.

__device__ __forceinline__ unsigned tf32(float x)
{
    unsigned r;
    asm("cvt.rna.tf32.f32 %0, %1;" : "=r"(r) : "f"(x));
    return r;
}

// One warp: D[16][8] = A[16][8] . B[8][8] + C[16][8] (row-major) through one mma.sync, fragments per the ISA.
extern "C" __global__ void k_mma(float* d, const float* a, const float* b, const float* c)
{
    const int lane = threadIdx.x, g = lane >> 2, t = lane & 3;
    unsigned af[4] = {tf32(a[g * 8 + t]), tf32(a[(g + 8) * 8 + t]), tf32(a[g * 8 + t + 4]), tf32(a[(g + 8) * 8 + t + 4])};
    unsigned bf[2] = {tf32(b[t * 8 + g]), tf32(b[(t + 4) * 8 + g])};
    float acc[4] = {c[g * 8 + 2 * t], c[g * 8 + 2 * t + 1], c[(g + 8) * 8 + 2 * t], c[(g + 8) * 8 + 2 * t + 1]};
    asm volatile("mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};"
                 : "+f"(acc[0]), "+f"(acc[1]), "+f"(acc[2]), "+f"(acc[3])
                 : "r"(af[0]), "r"(af[1]), "r"(af[2]), "r"(af[3]), "r"(bf[0]), "r"(bf[1]));
    d[g * 8 + 2 * t] = acc[0];
    d[g * 8 + 2 * t + 1] = acc[1];
    d[(g + 8) * 8 + 2 * t] = acc[2];
    d[(g + 8) * 8 + 2 * t + 1] = acc[3];
}

// y[i] = the bits cvt.rna.tf32.f32 makes of x[i]
extern "C" __global__ void k_tf32(unsigned* y, const float* x, int n)
{
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = tf32(x[i]);
}

__device__ __forceinline__ void cp4(float* s, const float* gsrc, int src_size)
{
    const unsigned sa = (unsigned)__cvta_generic_to_shared(s);
    asm volatile("cp.async.ca.shared.global [%0], [%1], 4, %2;" ::"r"(sa), "l"(gsrc), "r"(src_size));
}

// Two groups of 4-byte copies (group 1: src[0:n] -> s[0:n], group 2: src[n:2n] -> s[n:2n], odd threads of group 2
// zero-filled). before[i]: s[i] right after issuing (shared memory still holds -1 unless the copy already landed);
// mid[i]: s[n + i] after wait_group 1 (group 1 landed, group 2 may not have); after[i]: s[i], s[n + i] after wait_all.
extern "C" __global__ void k_cp_async(float* before, float* mid, float* after, const float* src, int n)
{
    __shared__ float s[512];
    const int i = threadIdx.x;
    s[i] = -1.0f;
    s[n + i] = -1.0f;
    __syncthreads();
    cp4(&s[i], src + i, 4);
    asm volatile("cp.async.commit_group;");
    cp4(&s[n + i], src + n + i, (i & 1) ? 0 : 4);
    asm volatile("cp.async.commit_group;");
    before[i] = s[i];
    asm volatile("cp.async.wait_group 1;");
    mid[i] = s[n + i];
    mid[n + i] = s[i];
    asm volatile("cp.async.wait_all;");
    __syncthreads();
    after[i] = s[i];
    after[n + i] = s[n + i];
}

// ldmatrix x4 (and .trans): in[] holds four 8x8 matrices of 16-bit values, row-major; lane l gives the address of
// row l % 8 of matrix l / 8; out[lane * 4 + i] is the register the lane receives for matrix i.
extern "C" __global__ void k_ldmatrix(unsigned* out, unsigned* out_t, const unsigned short* in)
{
    __shared__ __align__(16) unsigned short s[256];
    const int lane = threadIdx.x;
    for (int i = lane; i < 256; i += 32) s[i] = in[i];
    __syncthreads();
    const unsigned addr = (unsigned)__cvta_generic_to_shared(&s[((lane / 8) * 8 + lane % 8) * 8]);
    unsigned r0, r1, r2, r3;
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];"
                 : "=r"(r0), "=r"(r1), "=r"(r2), "=r"(r3) : "r"(addr));
    out[lane * 4] = r0; out[lane * 4 + 1] = r1; out[lane * 4 + 2] = r2; out[lane * 4 + 3] = r3;
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0, %1, %2, %3}, [%4];"
                 : "=r"(r0), "=r"(r1), "=r"(r2), "=r"(r3) : "r"(addr));
    out_t[lane * 4] = r0; out_t[lane * 4 + 1] = r1; out_t[lane * 4 + 2] = r2; out_t[lane * 4 + 3] = r3;
}

// One warp: D[16][8] = A[16][16] . B[16][8] + C[16][8] (row-major; A and B as 16-bit patterns) through one
// mma.sync m16n8k16 of .bf16 (BF16 true) or .f16 operands, fragments per the ISA: each .b32 register holds two
// elements, the lower index in the low half.
template <bool BF16>
__device__ void mma16(float* d, const unsigned short* a, const unsigned short* b, const float* c)
{
    const int lane = threadIdx.x, g = lane >> 2, t = lane & 3;
    auto pa = [&](int r, int k) { return (unsigned)a[r * 16 + k] | ((unsigned)a[r * 16 + k + 1] << 16); };
    auto pb = [&](int k, int n) { return (unsigned)b[k * 8 + n] | ((unsigned)b[(k + 1) * 8 + n] << 16); };
    unsigned af[4] = {pa(g, 2 * t), pa(g + 8, 2 * t), pa(g, 2 * t + 8), pa(g + 8, 2 * t + 8)};
    unsigned bf[2] = {pb(2 * t, g), pb(2 * t + 8, g)};
    float acc[4] = {c[g * 8 + 2 * t], c[g * 8 + 2 * t + 1], c[(g + 8) * 8 + 2 * t], c[(g + 8) * 8 + 2 * t + 1]};
    if (BF16)
        asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
                     "{%0,%1,%2,%3};"
                     : "+f"(acc[0]), "+f"(acc[1]), "+f"(acc[2]), "+f"(acc[3])
                     : "r"(af[0]), "r"(af[1]), "r"(af[2]), "r"(af[3]), "r"(bf[0]), "r"(bf[1]));
    else
        asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
                     "{%0,%1,%2,%3};"
                     : "+f"(acc[0]), "+f"(acc[1]), "+f"(acc[2]), "+f"(acc[3])
                     : "r"(af[0]), "r"(af[1]), "r"(af[2]), "r"(af[3]), "r"(bf[0]), "r"(bf[1]));
    d[g * 8 + 2 * t] = acc[0];
    d[g * 8 + 2 * t + 1] = acc[1];
    d[(g + 8) * 8 + 2 * t] = acc[2];
    d[(g + 8) * 8 + 2 * t + 1] = acc[3];
}

extern "C" __global__ void k_mma_bf16(float* d, const unsigned short* a, const unsigned short* b, const float* c)
{
    mma16<true>(d, a, b, c);
}

extern "C" __global__ void k_mma_f16(float* d, const unsigned short* a, const unsigned short* b, const float* c)
{
    mma16<false>(d, a, b, c);
}
