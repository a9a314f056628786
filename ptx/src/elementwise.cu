// Elementwise kernels, float32 (plus f16/bf16 casts). All take a 64-bit element count n and use a
// grid-stride loop: any 1-D grid/block works (e.g. block 256, grid min(ceil(n/256), 65535)).
// Backward kernels write dx = dy * f'(.) and take the saved forward input x (relu, leaky_relu, gelu)
// or the saved forward output y (tanh, sigmoid, sqrt, rsqrt), as named in each signature.

#define DEVI __device__ __forceinline__
#define GRID_STRIDE(i, n)                                                                           \
    for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x, _stride = (long long)gridDim.x * blockDim.x; \
         i < (n); i += _stride)

#define K_GELU_TANH 0.7978845608028654f  // sqrt(2/pi)
#define K_GELU_CUBIC 0.044715f
#define K_INV_SQRT2 0.7071067811865476f
#define K_INV_SQRT_2PI 0.3989422804014327f

// doc: y = x > 0 ? x : slope * x.
extern "C" __global__ void leaky_relu_fwd(float* __restrict__ y, const float* __restrict__ x, float slope, long long n)
{
    GRID_STRIDE(i, n) { float v = x[i]; y[i] = v > 0.0f ? v : v * slope; }
}

// doc: dx = dy * (x > 0 ? 1 : slope), x = saved forward input.
extern "C" __global__ void leaky_relu_bwd(float* __restrict__ dx, const float* __restrict__ dy, const float* __restrict__ x, float slope, long long n)
{
    GRID_STRIDE(i, n) dx[i] = x[i] > 0.0f ? dy[i] : dy[i] * slope;
}

// gelu_tanh(x) = 0.5 x (1 + tanh(u)) = x * sigmoid(2u), u = sqrt(2/pi) (x + 0.044715 x^3)
DEVI float sigmoid_2u(float x)
{
    const float u = K_GELU_TANH * fmaf(K_GELU_CUBIC * x, x * x, x);
    return 1.0f / (1.0f + expf(-2.0f * u));
}

// doc: y = 0.5*x*(1 + tanh(sqrt(2/pi)*(x + 0.044715*x^3))) (PyTorch gelu approximate='tanh'), computed as x*sigmoid(2u).
extern "C" __global__ void gelu_tanh_fwd(float* __restrict__ y, const float* __restrict__ x, long long n)
{
    GRID_STRIDE(i, n) { float v = x[i]; y[i] = v * sigmoid_2u(v); }
}

// doc: dx = dy * gelu_tanh'(x), x = saved forward input; gelu_tanh' = s + x*s*(1-s)*2*sqrt(2/pi)*(1 + 3*0.044715*x^2), s = sigmoid(2u).
extern "C" __global__ void gelu_tanh_bwd(float* __restrict__ dx, const float* __restrict__ dy, const float* __restrict__ x, long long n)
{
    GRID_STRIDE(i, n) {
        const float v = x[i], s = sigmoid_2u(v);
        const float du = 2.0f * K_GELU_TANH * fmaf(3.0f * K_GELU_CUBIC * v, v, 1.0f);
        dx[i] = dy[i] * fmaf(v * s * (1.0f - s), du, s);
    }
}

// doc: y = 0.5*x*(1 + erf(x/sqrt(2))) (PyTorch gelu approximate='none'), computed as 0.5*x*erfc(-x/sqrt(2)).
extern "C" __global__ void gelu_erf_fwd(float* __restrict__ y, const float* __restrict__ x, long long n)
{
    GRID_STRIDE(i, n) { float v = x[i]; y[i] = 0.5f * v * erfcf(-v * K_INV_SQRT2); }
}

// doc: dx = dy * (0.5*erfc(-x/sqrt(2)) + x*exp(-x^2/2)/sqrt(2*pi)), x = saved forward input.
extern "C" __global__ void gelu_erf_bwd(float* __restrict__ dx, const float* __restrict__ dy, const float* __restrict__ x, long long n)
{
    GRID_STRIDE(i, n) {
        const float v = x[i];
        const float cdf = 0.5f * erfcf(-v * K_INV_SQRT2), pdf = K_INV_SQRT_2PI * expf(-0.5f * v * v);
        dx[i] = dy[i] * fmaf(v, pdf, cdf);
    }
}

// ---------------------------------------------------------------- simple unary ops, one line each
// UNARY_OP(name, fwd, saved, bwd) defines two kernels:
//   name_fwd(y, x, n):          y[i] = fwd, with x the input element
//   name_bwd(dx, dy, saved, n): dx[i] = bwd, with dy the incoming gradient element and saved (x: the
//                               forward input, y: the forward output) the saved element
// The expressions see plain floats named x, y, dy (inner scopes shadow the pointer parameters). The
// `/* doc: */` comments become the manifest docs (tools/build_ptx.py expands the macro to find them).
#define UNARY_OP(NAME, FWD, SAVED, BWD)                                                                          \
    /* doc: y = FWD. */                                                                                          \
    extern "C" __global__ void NAME##_fwd(float* __restrict__ y, const float* __restrict__ x, long long n)       \
    {                                                                                                            \
        GRID_STRIDE(i, n) { const float _x = x[i]; { const float x = _x; y[i] = (FWD); } }                       \
    }                                                                                                            \
    /* doc: dx = BWD (reads the saved SAVED of NAME##_fwd). */                                                   \
    extern "C" __global__ void NAME##_bwd(float* __restrict__ dx, const float* __restrict__ dy,                  \
                                          const float* __restrict__ SAVED, long long n)                          \
    {                                                                                                            \
        GRID_STRIDE(i, n) { const float _g = dy[i], _s = SAVED[i]; { const float dy = _g, SAVED = _s; dx[i] = (BWD); } } \
    }

// relu_bwd may be given the saved output y instead of x: y > 0 exactly where x > 0
UNARY_OP(relu, fmaxf(x, 0.0f), x, x > 0.0f ? dy : 0.0f)
UNARY_OP(tanh, tanhf(x), y, dy * fmaf(-y, y, 1.0f))
UNARY_OP(sigmoid, 1.0f / (1.0f + expf(-x)), y, dy * y * (1.0f - y))
// abs: dy * sign(x), 0 at x = 0 and NaN where x is NaN (PyTorch's sgn)
UNARY_OP(abs, fabsf(x), x, x > 0.0f ? dy : (x < 0.0f ? -dy : (x == 0.0f ? 0.0f : x)))
UNARY_OP(sin, sinf(x), x, dy * cosf(x))
UNARY_OP(cos, cosf(x), x, -dy * sinf(x))
UNARY_OP(sqrt, sqrtf(x), y, dy / (2.0f * y))
UNARY_OP(rsqrt, 1.0f / sqrtf(x), y, -0.5f * dy * (y * y * y))
// the math family (rawdev/ops/unary.py declares each beside its numpy forward and backward)
UNARY_OP(tan, tanf(x), y, dy * fmaf(y, y, 1.0f))
UNARY_OP(sinh, sinhf(x), x, dy * coshf(x))
UNARY_OP(cosh, coshf(x), x, dy * sinhf(x))
UNARY_OP(asin, asinf(x), x, dy / sqrtf(fmaf(-x, x, 1.0f)))
UNARY_OP(acos, acosf(x), x, -dy / sqrtf(fmaf(-x, x, 1.0f)))
UNARY_OP(atan, atanf(x), x, dy / fmaf(x, x, 1.0f))
UNARY_OP(asinh, asinhf(x), x, dy / sqrtf(fmaf(x, x, 1.0f)))
UNARY_OP(acosh, acoshf(x), x, dy / sqrtf((x - 1.0f) * (x + 1.0f)))
UNARY_OP(atanh, atanhf(x), x, dy / fmaf(-x, x, 1.0f))
UNARY_OP(exp2, exp2f(x), y, dy * y * 0.69314718055994531f)
UNARY_OP(expm1, expm1f(x), y, dy * (y + 1.0f))
UNARY_OP(log2, log2f(x), x, dy / (x * 0.69314718055994531f))
UNARY_OP(log10, log10f(x), x, dy / (x * 2.3025850929940457f))
UNARY_OP(log1p, log1pf(x), x, dy / (x + 1.0f))
UNARY_OP(reciprocal, 1.0f / x, y, -dy * (y * y))
UNARY_OP(erf, erff(x), x, dy * 1.1283791670955126f * expf(-x * x))
UNARY_OP(frac, x - truncf(x), x, dy)
// piecewise-constant: their gradient is zero everywhere (PyTorch's); sign keeps NaN and gives 0 at 0
UNARY_OP(sign, x > 0.0f ? 1.0f : (x < 0.0f ? -1.0f : (x == 0.0f ? 0.0f : x)), x, 0.0f)
UNARY_OP(floor, floorf(x), x, 0.0f)
UNARY_OP(ceil, ceilf(x), x, 0.0f)
UNARY_OP(round, rintf(x), x, 0.0f)
UNARY_OP(trunc, truncf(x), x, 0.0f)

// Activations. silu/mish/logsigmoid/softplus keep exp arguments <= 0 where an overflow would lose the result.
#define K_SELU_ALPHA 1.6732632423543772f
#define K_SELU_SCALE 1.0507009873554805f
DEVI float sigm(float x) { return 1.0f / (1.0f + expf(-x)); }
DEVI float softplus1(float x) { return fmaxf(x, 0.0f) + log1pf(expf(-fabsf(x))); }   // log(1 + e^x)
UNARY_OP(silu, x * sigm(x), x, dy * sigm(x) * fmaf(x, 1.0f - sigm(x), 1.0f))
UNARY_OP(mish, x * tanhf(softplus1(x)), x, dy * fmaf(x * sigm(x), 1.0f - tanhf(softplus1(x)) * tanhf(softplus1(x)), tanhf(softplus1(x))))
UNARY_OP(selu, K_SELU_SCALE * (x > 0.0f ? x : K_SELU_ALPHA * expm1f(x)), x, x > 0.0f ? dy * K_SELU_SCALE : dy * (K_SELU_SCALE * K_SELU_ALPHA) * expf(x))
UNARY_OP(relu6, fminf(fmaxf(x, 0.0f), 6.0f), x, (x <= 0.0f || x >= 6.0f) ? 0.0f : dy)
UNARY_OP(hardswish, x <= -3.0f ? 0.0f : (x >= 3.0f ? x : x * (x + 3.0f) / 6.0f), x, x < -3.0f ? 0.0f : (x <= 3.0f ? dy * (x / 3.0f + 0.5f) : dy))
UNARY_OP(hardsigmoid, x <= -3.0f ? 0.0f : (x >= 3.0f ? 1.0f : x / 6.0f + 0.5f), x, (x > -3.0f && x < 3.0f) ? dy / 6.0f : 0.0f)
UNARY_OP(logsigmoid, fminf(x, 0.0f) - log1pf(expf(-fabsf(x))), x, dy * (x < 0.0f ? 1.0f / (1.0f + expf(x)) : expf(-x) / (1.0f + expf(-x))))
UNARY_OP(softsign, x / (1.0f + fabsf(x)), x, dy / ((1.0f + fabsf(x)) * (1.0f + fabsf(x))))
UNARY_OP(tanhshrink, x - tanhf(x), x, dy * tanhf(x) * tanhf(x))

// UNARY_OP_P1(name, fwd, saved, bwd) / UNARY_OP_P2(...): as UNARY_OP with one float parameter a (two: a, b)
// before n: name_fwd(y, x, a, [b,] n), name_bwd(dx, dy, saved, a, [b,] n).
#define UNARY_OP_P1(NAME, FWD, SAVED, BWD)                                                                       \
    /* doc: y = FWD (float parameter a). */                                                                      \
    extern "C" __global__ void NAME##_fwd(float* __restrict__ y, const float* __restrict__ x, float a, long long n) \
    {                                                                                                            \
        GRID_STRIDE(i, n) { const float _x = x[i]; { const float x = _x; y[i] = (FWD); } }                       \
    }                                                                                                            \
    /* doc: dx = BWD (reads the saved SAVED of NAME##_fwd; float parameter a). */                                \
    extern "C" __global__ void NAME##_bwd(float* __restrict__ dx, const float* __restrict__ dy,                  \
                                          const float* __restrict__ SAVED, float a, long long n)                 \
    {                                                                                                            \
        GRID_STRIDE(i, n) { const float _g = dy[i], _s = SAVED[i]; { const float dy = _g, SAVED = _s; dx[i] = (BWD); } } \
    }
#define UNARY_OP_P2(NAME, FWD, SAVED, BWD)                                                                       \
    /* doc: y = FWD (float parameters a, b). */                                                                  \
    extern "C" __global__ void NAME##_fwd(float* __restrict__ y, const float* __restrict__ x, float a, float b, long long n) \
    {                                                                                                            \
        GRID_STRIDE(i, n) { const float _x = x[i]; { const float x = _x; y[i] = (FWD); } }                       \
    }                                                                                                            \
    /* doc: dx = BWD (reads the saved SAVED of NAME##_fwd; float parameters a, b). */                            \
    extern "C" __global__ void NAME##_bwd(float* __restrict__ dx, const float* __restrict__ dy,                  \
                                          const float* __restrict__ SAVED, float a, float b, long long n)        \
    {                                                                                                            \
        GRID_STRIDE(i, n) { const float _g = dy[i], _s = SAVED[i]; { const float dy = _g, SAVED = _s; dx[i] = (BWD); } } \
    }

// elu: a = alpha; celu: a = alpha; softplus: a = beta, b = threshold; hardtanh: a = min_val, b = max_val
UNARY_OP_P1(elu, x > 0.0f ? x : a * expm1f(x), x, x > 0.0f ? dy : dy * a * expf(x))
UNARY_OP_P1(celu, x > 0.0f ? x : a * expm1f(x / a), x, x > 0.0f ? dy : dy * expf(x / a))
UNARY_OP_P2(softplus, x * a > b ? x : log1pf(expf(x * a)) / a, x, x * a > b ? dy : dy * sigm(x * a))
UNARY_OP_P2(hardtanh, x < a ? a : (x > b ? b : x), x, (x <= a || x >= b) ? 0.0f : dy)

// doc: z = x + y (z may alias x or y).
extern "C" __global__ void add(float* z, const float* x, const float* y, long long n)
{
    GRID_STRIDE(i, n) z[i] = x[i] + y[i];
}

// doc: z = x * y (z may alias x or y).
extern "C" __global__ void mul(float* z, const float* x, const float* y, long long n)
{
    GRID_STRIDE(i, n) z[i] = x[i] * y[i];
}

// doc: y = a * x (y may alias x).
extern "C" __global__ void scale(float* y, const float* x, float a, long long n)
{
    GRID_STRIDE(i, n) y[i] = a * x[i];
}

// doc: y = a * x + y (fused multiply-add, one rounding).
extern "C" __global__ void axpy(float* __restrict__ y, const float* __restrict__ x, float a, long long n)
{
    GRID_STRIDE(i, n) y[i] = fmaf(a, x[i], y[i]);
}

// doc: y = x (non-overlapping buffers).
extern "C" __global__ void copy(float* __restrict__ y, const float* __restrict__ x, long long n)
{
    GRID_STRIDE(i, n) y[i] = x[i];
}

// doc: y(f16 bits, u16) = x(f32) rounded to nearest even (cvt.rn.f16.f32; overflow -> inf, NaN kept).
extern "C" __global__ void cast_f32_f16(unsigned short* __restrict__ y, const float* __restrict__ x, long long n)
{
    GRID_STRIDE(i, n) {
        unsigned short h;
        asm("cvt.rn.f16.f32 %0, %1;" : "=h"(h) : "f"(x[i]));
        y[i] = h;
    }
}

// doc: y(f32) = x(f16 bits, u16), exact.
extern "C" __global__ void cast_f16_f32(float* __restrict__ y, const unsigned short* __restrict__ x, long long n)
{
    GRID_STRIDE(i, n) {
        float f;
        asm("cvt.f32.f16 %0, %1;" : "=f"(f) : "h"(x[i]));
        y[i] = f;
    }
}

// doc: y(bf16 bits, u16) = x(f32) rounded to nearest even with integer ops (NaN -> quiet NaN with the sign kept; overflow -> inf).
extern "C" __global__ void cast_f32_bf16(unsigned short* __restrict__ y, const float* __restrict__ x, long long n)
{
    GRID_STRIDE(i, n) {
        const unsigned int u = __float_as_uint(x[i]);
        unsigned int r;
        if ((u & 0x7fffffffu) > 0x7f800000u) r = (u >> 16) | 0x0040u;            // NaN: keep sign, quiet it
        else r = (u + 0x7fffu + ((u >> 16) & 1u)) >> 16;                          // round to nearest even
        y[i] = (unsigned short)r;
    }
}

// doc: y(f32) = x(bf16 bits, u16), exact (bits << 16).
extern "C" __global__ void cast_bf16_f32(float* __restrict__ y, const unsigned short* __restrict__ x, long long n)
{
    GRID_STRIDE(i, n) y[i] = __uint_as_float((unsigned int)x[i] << 16);
}

// ---------------------------------------------------------------- division, abs, exp, log, pow

// doc: z = x / y (IEEE division, div.rn; z may alias x or y).
extern "C" __global__ void div(float* z, const float* x, const float* y, long long n)
{
    GRID_STRIDE(i, n) z[i] = x[i] / y[i];
}

// doc: y = exp(x) (its gradient dy * y is the mul kernel).
extern "C" __global__ void exp_fwd(float* __restrict__ y, const float* __restrict__ x, long long n)
{
    GRID_STRIDE(i, n) y[i] = expf(x[i]);
}

// doc: y = log(x) (natural; -inf at 0, NaN below; its gradient dy / x is the div kernel).
extern "C" __global__ void log_fwd(float* __restrict__ y, const float* __restrict__ x, long long n)
{
    GRID_STRIDE(i, n) y[i] = logf(x[i]);
}

// doc: y = x ** e (powf: negative x with an integer e keeps its sign, with a fractional e is NaN).
extern "C" __global__ void pow_scalar(float* __restrict__ y, const float* __restrict__ x, float e, long long n)
{
    GRID_STRIDE(i, n) y[i] = powf(x[i], e);
}

// ---------------------------------------------------------------- comparisons (bool results, one byte each)
// Op codes (rawdev/ops/cuda.py's _CMP): 0 eq, 1 ne, 2 lt, 3 le, 4 gt, 5 ge, 6 eq-or-both-NaN (max/min backward).
// Any comparison with NaN is false except ne (IEEE, as PyTorch).
template <typename T>
DEVI unsigned char compare(T a, T b, int op)
{
    switch (op) {
    case 0: return a == b;
    case 1: return a != b;
    case 2: return a < b;
    case 3: return a <= b;
    case 4: return a > b;
    case 5: return a >= b;
    default: return a == b || (a != a && b != b);
    }
}

// doc: z(bool, u8) = x <op> y elementwise, float32; op 0 eq, 1 ne, 2 lt, 3 le, 4 gt, 5 ge, 6 eq or both NaN.
extern "C" __global__ void compare_f32(unsigned char* __restrict__ z, const float* __restrict__ x, const float* __restrict__ y, int op, long long n)
{
    GRID_STRIDE(i, n) z[i] = compare(x[i], y[i], op);
}

// doc: z(bool, u8) = x <op> s for a float32 scalar s; op codes as compare_f32.
extern "C" __global__ void compare_scalar_f32(unsigned char* __restrict__ z, const float* __restrict__ x, float s, int op, long long n)
{
    GRID_STRIDE(i, n) z[i] = compare(x[i], s, op);
}

// doc: z(bool, u8) = x <op> y elementwise, int64; op codes 0..5 as compare_f32.
extern "C" __global__ void compare_i64(unsigned char* __restrict__ z, const long long* __restrict__ x, const long long* __restrict__ y, int op, long long n)
{
    GRID_STRIDE(i, n) z[i] = compare(x[i], y[i], op);
}

// doc: z(bool, u8) = x <op> s for an int64 scalar s; op codes 0..5 as compare_f32.
extern "C" __global__ void compare_scalar_i64(unsigned char* __restrict__ z, const long long* __restrict__ x, long long s, int op, long long n)
{
    GRID_STRIDE(i, n) z[i] = compare(x[i], s, op);
}

// ---------------------------------------------------------------- bool / integer <-> float32 casts
// Float to integer truncates toward zero as a C cast (and PyTorch) does; NaN and out-of-range values are
// undefined in PyTorch: here cvt.rzi saturates (NaN -> 0). Float to bool is x != 0 (NaN -> true).

// doc: y(f32) = x(bool, u8 0/1).
extern "C" __global__ void cast_bool_f32(float* __restrict__ y, const unsigned char* __restrict__ x, long long n)
{
    GRID_STRIDE(i, n) y[i] = x[i] ? 1.0f : 0.0f;
}

// doc: y(f32) = x(u8), exact.
extern "C" __global__ void cast_u8_f32(float* __restrict__ y, const unsigned char* __restrict__ x, long long n)
{
    GRID_STRIDE(i, n) y[i] = (float)x[i];
}

// doc: y(f32) = x(s32) rounded to nearest even.
extern "C" __global__ void cast_i32_f32(float* __restrict__ y, const int* __restrict__ x, long long n)
{
    GRID_STRIDE(i, n) y[i] = (float)x[i];
}

// doc: y(f32) = x(s64) rounded to nearest even.
extern "C" __global__ void cast_i64_f32(float* __restrict__ y, const long long* __restrict__ x, long long n)
{
    GRID_STRIDE(i, n) y[i] = (float)x[i];
}

// doc: y(bool, u8) = x(f32) != 0 (NaN -> 1).
extern "C" __global__ void cast_f32_bool(unsigned char* __restrict__ y, const float* __restrict__ x, long long n)
{
    GRID_STRIDE(i, n) y[i] = x[i] != 0.0f;
}

// doc: y(u8) = x(f32) truncated toward zero, wrapped to 8 bits (via s32, as numpy's cast on x86).
extern "C" __global__ void cast_f32_u8(unsigned char* __restrict__ y, const float* __restrict__ x, long long n)
{
    GRID_STRIDE(i, n) y[i] = (unsigned char)(int)x[i];
}

// doc: y(s32) = x(f32) truncated toward zero (cvt.rzi; saturates, NaN -> 0).
extern "C" __global__ void cast_f32_i32(int* __restrict__ y, const float* __restrict__ x, long long n)
{
    GRID_STRIDE(i, n) y[i] = (int)x[i];
}

// doc: y(s64) = x(f32) truncated toward zero (cvt.rzi; saturates, NaN -> 0).
extern "C" __global__ void cast_f32_i64(long long* __restrict__ y, const float* __restrict__ x, long long n)
{
    GRID_STRIDE(i, n) y[i] = (long long)x[i];
}
