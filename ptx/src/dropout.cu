// Dropout with a counter-based Philox4x32-10 generator keyed by (seed, offset), so the mask is a pure
// function of (seed, offset, element index); backward reads the saved uint8 mask (dropout_bwd).
// Element i uses word (i % 4) of philox(key = (lo32(seed), hi32(seed)),
//                                        counter = (lo32(i/4), hi32(i/4), lo32(offset), hi32(offset))).
// u = (word >> 8) * 2^-24 in [0, 1); the element is kept when u >= p. Kept values are scaled by
// `scale` (normally 1 / (1 - p)). Any 1-D grid/block: each thread handles groups of 4 elements in a
// grid-stride loop over ceil(n/4) groups. float16/bfloat16 tensors use the `_f16` / `_bf16` kernels on their own
// storage (the same mask; x*scale in float32, rounded once).

#include "common.cuh"
#define DEVI __device__ __forceinline__
#include "storage.cuh"

DEVI bool keep_word(unsigned int w, float p) { return (float)(w >> 8) * 5.9604644775390625e-08f >= p; }

template <int S> DEVI void dropout_fwd_t(ELT(S)* __restrict__ y, unsigned char* __restrict__ mask, const ELT(S)* __restrict__ x, long long n, float p, float scale, unsigned long long seed, unsigned long long offset)
{
    const long long groups = (n + 3) / 4, stride = (long long)gridDim.x * blockDim.x;
    for (long long gi = (long long)blockIdx.x * blockDim.x + threadIdx.x; gi < groups; gi += stride) {
        const U4 c{(unsigned int)gi, (unsigned int)((unsigned long long)gi >> 32), (unsigned int)offset, (unsigned int)(offset >> 32)};
        const U4 w = philox4x32_10(c, (unsigned int)seed, (unsigned int)(seed >> 32));
        const unsigned int words[4] = {w.x, w.y, w.z, w.w};
#pragma unroll
        for (int j = 0; j < 4; ++j) {
            const long long i = gi * 4 + j;
            if (i < n) {
                const bool k = keep_word(words[j], p);
                Io<S>::st(y, i, k ? Io<S>::ld(x, i) * scale : 0.0f);
                if (mask) mask[i] = k ? 1 : 0;
            }
        }
    }
}

template <int S> DEVI void dropout_bwd_t(ELT(S)* __restrict__ dx, const ELT(S)* __restrict__ dy, const unsigned char* __restrict__ mask, long long n, float scale)
{
    const long long stride = (long long)gridDim.x * blockDim.x;
    for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride)
        Io<S>::st(dx, i, mask[i] ? Io<S>::ld(dy, i) * scale : 0.0f);
}

// doc: y = keep ? x*scale : 0 with keep drawn from Philox4x32-10(seed, offset) (see file header); mask[i] = keep (uint8; mask may be 0 = not saved). Any 1-D grid/block.
extern "C" __global__ void dropout_fwd(float* __restrict__ y, unsigned char* __restrict__ mask, const float* __restrict__ x, long long n, float p, float scale, unsigned long long seed, unsigned long long offset)
{
    dropout_fwd_t<S_F32>(y, mask, x, n, p, scale, seed, offset);
}

// doc: dropout_fwd on float16 storage (the same mask; float32 math, one rounding).
extern "C" __global__ void dropout_fwd_f16(unsigned short* __restrict__ y, unsigned char* __restrict__ mask, const unsigned short* __restrict__ x, long long n, float p, float scale, unsigned long long seed, unsigned long long offset)
{
    dropout_fwd_t<S_F16>(y, mask, x, n, p, scale, seed, offset);
}

// doc: dropout_fwd on bfloat16 storage (the same mask; float32 math, one rounding).
extern "C" __global__ void dropout_fwd_bf16(unsigned short* __restrict__ y, unsigned char* __restrict__ mask, const unsigned short* __restrict__ x, long long n, float p, float scale, unsigned long long seed, unsigned long long offset)
{
    dropout_fwd_t<S_BF16>(y, mask, x, n, p, scale, seed, offset);
}

// doc: dx[i] = mask[i] ? dy[i]*scale : 0 with the uint8 mask saved by dropout_fwd. Any 1-D grid/block (grid-stride over n).
extern "C" __global__ void dropout_bwd(float* __restrict__ dx, const float* __restrict__ dy, const unsigned char* __restrict__ mask, long long n, float scale)
{
    dropout_bwd_t<S_F32>(dx, dy, mask, n, scale);
}

// doc: dropout_bwd on float16 storage (float32 math, one rounding).
extern "C" __global__ void dropout_bwd_f16(unsigned short* __restrict__ dx, const unsigned short* __restrict__ dy, const unsigned char* __restrict__ mask, long long n, float scale)
{
    dropout_bwd_t<S_F16>(dx, dy, mask, n, scale);
}

// doc: dropout_bwd on bfloat16 storage (float32 math, one rounding).
extern "C" __global__ void dropout_bwd_bf16(unsigned short* __restrict__ dx, const unsigned short* __restrict__ dy, const unsigned char* __restrict__ mask, long long n, float scale)
{
    dropout_bwd_t<S_BF16>(dx, dy, mask, n, scale);
}
