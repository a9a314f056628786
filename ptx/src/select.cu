// Selection and clamping kernels: where / masked_fill for every dtype (by element size: the bits are moved,
// never interpreted), and float32 clamp, maximum/minimum with their backward. Grid-stride loops over a
// 64-bit element count n; operands are contiguous and already broadcast to the output's shape.

#include "common.cuh"
#define SELECT_OPS(BITS, T)                                                                         \
    /* doc: y = c ? a : b elementwise (c bool, one byte), for any BITS-bit dtype. */                 \
    extern "C" __global__ void select_b##BITS(T* __restrict__ y, const unsigned char* __restrict__ c,  \
                                              const T* __restrict__ a, const T* __restrict__ b, long long n) \
    {                                                                                               \
        GRID_STRIDE(i, n) y[i] = c[i] ? a[i] : b[i];                                                \
    }                                                                                               \
    /* doc: y = (c != invert) ? v : x elementwise (masked_fill; where's gradients: v = 0), any BITS-bit dtype. */ \
    extern "C" __global__ void fill_where_b##BITS(T* __restrict__ y, const unsigned char* __restrict__ c, \
                                                  const T* __restrict__ x, unsigned long long v, int invert, \
                                                  long long n)                                      \
    {                                                                                               \
        const T value = (T)v;                                                                       \
        GRID_STRIDE(i, n) y[i] = ((c[i] != 0) != (invert != 0)) ? value : x[i];                     \
    }

SELECT_OPS(8, unsigned char)
SELECT_OPS(16, unsigned short)
SELECT_OPS(32, unsigned int)
SELECT_OPS(64, unsigned long long)

// doc: y = min(max(x, lo), hi), float32 (hi wins when lo > hi); NaN stays NaN (PyTorch's clamp); lo/hi may be inf.
extern "C" __global__ void clamp_f32(float* __restrict__ y, const float* __restrict__ x, float lo, float hi, long long n)
{
    GRID_STRIDE(i, n)
    {
        const float v = x[i] < lo ? lo : x[i];
        y[i] = v > hi ? hi : v;
    }
}

// doc: dx = dy where lo <= x <= hi (clamp's gradient, bounds inclusive), else 0; float32.
extern "C" __global__ void clamp_bwd_f32(float* __restrict__ dx, const float* __restrict__ dy, const float* __restrict__ x, float lo, float hi, long long n)
{
    GRID_STRIDE(i, n)
    {
        const float v = x[i];
        dx[i] = (v >= lo && v <= hi) ? dy[i] : 0.0f;
    }
}

// doc: z = max(a, b) (op 0) or min(a, b) (op 1) elementwise, float32; NaN if either is NaN (PyTorch's).
extern "C" __global__ void max_min_f32(float* __restrict__ z, const float* __restrict__ a, const float* __restrict__ b, int op, long long n)
{
    GRID_STRIDE(i, n)
    {
        const float x = a[i], y = b[i];
        if (x != x || y != y)
            z[i] = x + y;   // NaN
        else
            z[i] = op == 0 ? (x > y ? x : y) : (x < y ? x : y);
    }
}

// doc: the gradients of z = max(a, b) (op 0) / min(a, b) (op 1): da = dy*w, db = dy*(1-w) with w = 1 where a
// wins, 0 where b wins, 1/2 on ties (PyTorch's split); float32.
extern "C" __global__ void max_min_bwd_f32(float* __restrict__ da, float* __restrict__ db, const float* __restrict__ dy, const float* __restrict__ a, const float* __restrict__ b, int op, long long n)
{
    GRID_STRIDE(i, n)
    {
        const float x = a[i], y = b[i], g = dy[i];
        const float w = x == y ? 0.5f : ((op == 0) == (x > y) ? 1.0f : 0.0f);
        da[i] = g * w;
        db[i] = g * (1.0f - w);
    }
}
