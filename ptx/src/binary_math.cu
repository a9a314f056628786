// Binary math beyond + - * / (pow with a tensor exponent, atan2, fmod, remainder, floor division, copysign,
// hypot), logical and bitwise ops on bool/uint8 bytes, float classification (isnan, isinf, ...) and
// nan_to_num. All elementwise over n contiguous elements (operands broadcast by the launcher), grid-stride,
// 64-bit indices; an op code selects the function so one kernel serves a family.

// Python's floor division as PyTorch computes it (div_floor_floating): exact for representable quotients.
#include "common.cuh"
__device__ __forceinline__ float floor_div(float a, float b)
{
    if (b == 0.0f) return a / b;
    const float mod = fmodf(a, b);
    float div = (a - mod) / b;
    if (mod != 0.0f && ((b < 0.0f) != (mod < 0.0f))) div -= 1.0f;
    if (div == 0.0f) return copysignf(0.0f, a / b);
    float fl = floorf(div);
    if (div - fl > 0.5f) fl += 1.0f;
    return fl;
}

// doc: z = op(x, y) elementwise; op 0 pow, 1 atan2, 2 fmod, 3 remainder (sign of y), 4 floor_divide,
// 5 copysign, 6 hypot.
extern "C" __global__ void binary_math_f32(float* __restrict__ z, const float* __restrict__ x, const float* __restrict__ y,
                                           int op, long long n)
{
    GRID_STRIDE(i, n)
    {
        const float a = x[i], b = y[i];
        float r;
        switch (op) {
        case 0: r = powf(a, b); break;
        case 1: r = atan2f(a, b); break;
        case 2: r = fmodf(a, b); break;
        case 3: r = fmodf(a, b); if (r != 0.0f && ((r < 0.0f) != (b < 0.0f))) r += b; break;
        case 4: r = floor_div(a, b); break;
        case 5: r = copysignf(a, b); break;
        default: r = hypotf(a, b); break;
        }
        z[i] = r;
    }
}

// doc: z = op(x, y) on bytes; op 0 logical and, 1 logical or, 2 logical xor (of x != 0, y != 0, giving 0/1),
// 3 bitwise and, 4 bitwise or, 5 bitwise xor.
extern "C" __global__ void logical_u8(unsigned char* __restrict__ z, const unsigned char* __restrict__ x,
                                      const unsigned char* __restrict__ y, int op, long long n)
{
    GRID_STRIDE(i, n)
    {
        const unsigned char a = x[i], b = y[i];
        unsigned char r;
        switch (op) {
        case 0: r = (a != 0) && (b != 0); break;
        case 1: r = (a != 0) || (b != 0); break;
        case 2: r = (a != 0) != (b != 0); break;
        case 3: r = a & b; break;
        case 4: r = a | b; break;
        default: r = a ^ b; break;
        }
        z[i] = r;
    }
}

// doc: z = !x (op 0, logical not: 0/1) or ~x (op 1, bitwise not of a byte; bool tensors use op 0).
extern "C" __global__ void not_u8(unsigned char* __restrict__ z, const unsigned char* __restrict__ x, int op, long long n)
{
    GRID_STRIDE(i, n) z[i] = op == 0 ? (unsigned char)(x[i] == 0) : (unsigned char)~x[i];
}

// doc: z (bool) = test(x); op 0 isnan, 1 isinf, 2 isfinite, 3 isposinf, 4 isneginf, 5 signbit, 6 x != 0.
extern "C" __global__ void classify_f32(unsigned char* __restrict__ z, const float* __restrict__ x, int op, long long n)
{
    GRID_STRIDE(i, n)
    {
        const float v = x[i];
        bool r;
        switch (op) {
        case 0: r = v != v; break;
        case 1: r = isinf(v); break;
        case 2: r = isfinite(v); break;
        case 3: r = isinf(v) && v > 0.0f; break;
        case 4: r = isinf(v) && v < 0.0f; break;
        case 5: r = signbit(v); break;
        default: r = v != 0.0f; break;
        }
        z[i] = r;
    }
}

// doc: y = x with NaN, +inf and -inf replaced by nan, posinf and neginf.
extern "C" __global__ void nan_to_num_f32(float* __restrict__ y, const float* __restrict__ x, float nan, float posinf,
                                          float neginf, long long n)
{
    GRID_STRIDE(i, n)
    {
        const float v = x[i];
        y[i] = v != v ? nan : (isinf(v) ? (v > 0.0f ? posinf : neginf) : v);
    }
}

// Python's integer floor division and remainder; a zero divisor gives 0 (a GPU has no integer exception).
__device__ __forceinline__ long long floordiv_i64(long long a, long long b)
{
    if (b == 0) return 0;
    long long q = a / b;
    if ((a % b != 0) && ((a < 0) != (b < 0))) q -= 1;
    return q;
}

// doc: z = op(x, y) on int64; op 0 x + alpha*y, 1 x*y, 2 floor_divide, 3 remainder (sign of y), 4 fmod
// (sign of x), 5 and, 6 or, 7 xor, 8 maximum, 9 minimum; a zero divisor gives 0.
extern "C" __global__ void binary_i64(long long* __restrict__ z, const long long* __restrict__ x,
                                      const long long* __restrict__ y, long long alpha, int op, long long n)
{
    GRID_STRIDE(i, n)
    {
        const long long a = x[i], b = y[i];
        long long r;
        switch (op) {
        case 0: r = a + alpha * b; break;
        case 1: r = a * b; break;
        case 2: r = floordiv_i64(a, b); break;
        case 3: r = b == 0 ? 0 : a - floordiv_i64(a, b) * b; break;
        case 4: r = b == 0 ? 0 : a % b; break;
        case 5: r = a & b; break;
        case 6: r = a | b; break;
        case 7: r = a ^ b; break;
        case 8: r = a > b ? a : b; break;
        default: r = a < b ? a : b; break;
        }
        z[i] = r;
    }
}

// doc: z = op(x, s) on int64 with a scalar; op 0 x + s, 1 x*s, 2 s - x.
extern "C" __global__ void scalar_i64(long long* __restrict__ z, const long long* __restrict__ x, long long s, int op,
                                      long long n)
{
    GRID_STRIDE(i, n)
    {
        const long long a = x[i];
        z[i] = op == 0 ? a + s : (op == 1 ? a * s : s - a);
    }
}
