// Device code several kernel files share (tools/build_ptx.py hands every ptx/src/*.cuh to NVRTC as a header):
// the grid-stride loop of the elementwise kernels and the counter-based Philox4x32-10 generator of dropout,
// attention's dropout and the random creation ops.
#pragma once

// for (long long i = first index of this thread; i < n; i += threads in the grid): any 1-D grid covers n elements
#define GRID_STRIDE(i, n)                                                                           \
    for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x, _stride = (long long)gridDim.x * blockDim.x; \
         i < (n); i += _stride)

struct U4 { unsigned int x, y, z, w; };

// Philox4x32-10 (Salmon et al., "Parallel random numbers: as easy as 1, 2, 3"): ten rounds on counter c with key
// (k0, k1); the callers say which counter and key they use
__device__ __forceinline__ U4 philox4x32_10(U4 c, unsigned int k0, unsigned int k1)
{
#pragma unroll
    for (int r = 0; r < 10; ++r) {
        const unsigned int lo0 = 0xD2511F53u * c.x, hi0 = __umulhi(0xD2511F53u, c.x);
        const unsigned int lo1 = 0xCD9E8D57u * c.z, hi1 = __umulhi(0xCD9E8D57u, c.z);
        c = U4{hi1 ^ c.y ^ k0, lo1, hi0 ^ c.w ^ k1, lo0};
        k0 += 0x9E3779B9u;
        k1 += 0xBB67AE85u;
    }
    return c;
}
