// Test kernels for the simulator's PTX interpreter (tests/test_ptx_interp.py).
// Built with tests/data/ptx/build_fixtures.py (NVRTC 12.0, compute_75); the .ptx is committed.

__constant__ float c_table[8] = {1.5f, -2.25f, 3.0f, 0.125f, -7.0f, 100.0f, 1e-3f, 42.0f};
__device__ int d_counter;   // module-scope .global

extern "C" __global__ void k_fma(float* out, const float* a, const float* b, const float* c, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = fmaf(a[i], b[i], c[i]);
}

// 20 results per element
extern "C" __global__ void k_int(int* out, const int* a, const int* b, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    int x = a[i], y = b[i];
    unsigned ux = (unsigned)x, uy = (unsigned)y;
    int s = y & 31;
    int* o = out + 20 * i;
    o[0] = x + y;
    o[1] = x * y;
    o[2] = y != 0 ? x / y : 0;
    o[3] = y != 0 ? x % y : 0;
    o[4] = x >> s;
    o[5] = (int)(ux >> s);
    o[6] = x << s;
    o[7] = __mulhi(x, y);
    o[8] = (int)__umulhi(ux, uy);
    o[9] = min(x, y);
    o[10] = max(x, y);
    o[11] = abs(x);
    o[12] = __popc(ux);
    o[13] = __clz(x);
    o[14] = (int)__brev(ux);
    o[15] = (int)__byte_perm(ux, uy, 0x7531 ^ (i & 0x3333));
    o[16] = uy != 0 ? (int)(ux / uy) : 0;
    o[17] = uy != 0 ? (int)(ux % uy) : 0;
    long long p = (long long)x * (long long)y;
    o[18] = (int)(p >> 32) ^ (int)__mul64hi((long long)x << 20, (long long)y * 977);
    o[19] = (int)__umul64hi((unsigned long long)ux << 31, (unsigned long long)uy * 12345ull);
}

extern "C" __global__ void k_cvt(int* iout, float* fout, unsigned short* hout, const float* x, const double* d,
                                 const int* ints, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    float v = x[i];
    double dv = d[i];
    int k = ints[i];
    int* io = iout + 8 * i;
    float* fo = fout + 16 * i;
    io[0] = __float2int_rn(v);
    io[1] = __float2int_rz(v);
    io[2] = __float2int_rd(v);
    io[3] = __float2int_ru(v);
    io[4] = (int)__float2uint_rn(v);
    io[5] = (int)(long long)v;
    io[6] = (int)(signed char)k;
    io[7] = (int)(unsigned short)k;
    fo[0] = __int2float_rn(k);
    fo[1] = __int2float_rz(k);
    fo[2] = __int2float_rd(k);
    fo[3] = __int2float_ru(k);
    fo[4] = __double2float_rn(dv);
    fo[5] = __double2float_rz(dv);
    fo[6] = __double2float_rd(dv);
    fo[7] = __double2float_ru(dv);
    fo[8] = __saturatef(v);
    fo[9] = rintf(v);
    fo[10] = truncf(v);
    fo[11] = floorf(v);
    fo[12] = ceilf(v);
    fo[13] = (float)(unsigned)k;
    unsigned short h;
    asm("cvt.rn.f16.f32 %0, %1;" : "=h"(h) : "f"(v));
    hout[i] = h;
    float back;
    asm("cvt.f32.f16 %0, %1;" : "=f"(back) : "h"(h));
    fo[14] = back;
    fo[15] = (float)(dv * 3.0);
}

// 9 results per thread; block must be a multiple of 32
extern "C" __global__ void k_warp(int* out, const int* x)
{
    int t = blockIdx.x * blockDim.x + threadIdx.x;
    int lane = threadIdx.x & 31;
    int v = x[t];
    int* o = out + 9 * t;
    o[0] = __shfl_sync(0xffffffffu, v, (lane * 7) & 31);
    o[1] = __shfl_up_sync(0xffffffffu, v, 3);
    o[2] = __shfl_down_sync(0xffffffffu, v, 5, 16);
    o[3] = __shfl_xor_sync(0xffffffffu, v, 9);
    o[4] = (int)__ballot_sync(0xffffffffu, v & 1);
    o[5] = __any_sync(0xffffffffu, v == 12345);
    o[6] = __all_sync(0xffffffffu, v > -1000000);
    o[7] = __shfl_up_sync(0xffffffffu, v, 2, 8);
    unsigned m = 0;
    if (v & 2) m = __activemask();
    o[8] = (int)m;
}

// global atomics with collisions + a shared-memory histogram
extern "C" __global__ void k_atomic(float* fsum, int* imin, int* imax, unsigned* cnt, int* exch_old, int* cas_slot,
                                    unsigned* hist, const int* slot, const int* val, int n, int nbins)
{
    __shared__ unsigned sh[64];
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    for (int b = threadIdx.x; b < nbins; b += blockDim.x) sh[b] = 0;
    __syncthreads();
    if (i < n) {
        int s = slot[i], v = val[i];
        atomicAdd(&fsum[s], (float)v * 0.5f);
        atomicMin(&imin[s], v);
        atomicMax(&imax[s], v);
        atomicInc(&cnt[s], 1000000u);
        exch_old[i] = atomicExch(&cas_slot[s + 8], v);
        atomicCAS(&cas_slot[s], 0, i + 1);
        atomicAdd(&sh[(unsigned)v % nbins], 1u);
        atomicAdd(&d_counter, 1);
    }
    __syncthreads();
    for (int b = threadIdx.x; b < nbins; b += blockDim.x) atomicAdd(&hist[b], sh[b]);
}

extern "C" __global__ void k_read_counter(int* out) { out[0] = d_counter; d_counter = 0; }

// generic addressing (pointer may be shared or global), local array with dynamic index, dynamic shared
extern "C" __global__ void k_mem(float* out, const float* x, int n, int sel)
{
    extern __shared__ float dyn[];
    float local[16];
    int t = threadIdx.x;
    int i = blockIdx.x * blockDim.x + t;
    dyn[t] = (i < n) ? x[i] : 0.0f;
    __syncthreads();
    const float* p = ((sel + blockIdx.x) & 1) ? dyn : x + blockIdx.x * blockDim.x;
    for (int k = 0; k < 16; k++) local[k] = (float)k * 0.5f;
    local[(i * 5) & 15] += dyn[blockDim.x - 1 - t];
    float acc = 0.0f;
    for (int k = 0; k < 16; k++) acc += local[(k + i) & 15] * (float)(k + 1);
    if (i < n) out[i] = p[t] + acc + c_table[i & 7];
}

// 12 float results per element
extern "C" __global__ void k_math(float* out, const float* x, const float* y, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    float a = x[i], b = y[i];
    float* o = out + 12 * i;
    o[0] = __expf(a);
    o[1] = __logf(fabsf(a) + 1.0f);
    o[2] = a / b;
    o[3] = sqrtf(fabsf(a));
    o[4] = rsqrtf(fabsf(b) + 0.5f);
    o[5] = __sinf(a) + __cosf(b);
    o[6] = fminf(a, b) - fmaxf(a, b);
    o[7] = copysignf(a, b);
    o[8] = __fadd_rz(a, b) + __fmul_rd(a, b);
    o[9] = __frcp_rn(b) + __fsqrt_rn(fabsf(b));
    float t;
    asm("tanh.approx.f32 %0, %1;" : "=f"(t) : "f"(a));
    o[10] = t;
    o[11] = __fdividef(a, b) + (isnan(a * b) ? 1.0f : 0.0f) + (isinf(a / 0.0f) ? 2.0f : 0.0f);
}

// a block-wide loop with barriers in a loop and early-exiting whole blocks
extern "C" __global__ void k_scan(float* out, const float* x, int n)
{
    __shared__ float buf[256];
    int t = threadIdx.x;
    if (blockIdx.x * blockDim.x >= n) return;   // whole block exits: fine
    int i = blockIdx.x * blockDim.x + t;
    buf[t] = i < n ? x[i] : 0.0f;
    __syncthreads();
    for (int off = 1; off < blockDim.x; off <<= 1) {
        float v = t >= off ? buf[t - off] : 0.0f;
        __syncthreads();
        buf[t] += v;
        __syncthreads();
    }
    if (i < n) out[i] = buf[t];
}

// Shared-memory bank patterns for the bank-conflict counter: mode 0 each lane a consecutive word (no conflict),
// 1 a stride of 32 words (all lanes in one bank: 32 passes), 2 every lane the same word (a broadcast), 3 a stride
// of 2 words (2-way).
extern "C" __global__ void k_banks(float* out, int mode)
{
    __shared__ float s[32 * 32];
    const int t = threadIdx.x;
    for (int i = t; i < 32 * 32; i += blockDim.x) s[i] = (float)i;
    __syncthreads();
    const int idx = mode == 0 ? t : (mode == 1 ? (t * 32) % 1024 : (mode == 2 ? 5 : (t * 2) % 1024));
    out[t] = s[idx];
}
