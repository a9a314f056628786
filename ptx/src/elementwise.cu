// Elementwise kernels, float32, and the same kernels on float16/bfloat16 storage (plus the f16/bf16 casts).
// All take a 64-bit element count n and use a grid-stride loop: any 1-D grid/block works (e.g. block 256,
// grid min(ceil(n/256), 65535)).
// Backward kernels write dx = dy * f'(.) and take the saved forward input x (relu, leaky_relu, gelu)
// or the saved forward output y (tanh, sigmoid, sqrt, rsqrt), as named in each signature.

#include "common.cuh"
#define DEVI __device__ __forceinline__

// The storages (float32, float16, bfloat16) and their loads and stores: Io<S>, ELT(S) (storage.cuh). One kernel
// body serves the three: a `<name>_f16` / `<name>_bf16` kernel gives, bit for bit, what cast_f16_f32 + `<name>` +
// cast_f32_f16 give (PyTorch's opmath), without the float32 copies.
#include "storage.cuh"

#define K_GELU_TANH 0.7978845608028654f  // sqrt(2/pi)
#define K_GELU_CUBIC 0.044715f
#define K_INV_SQRT2 0.7071067811865476f
#define K_INV_SQRT_2PI 0.3989422804014327f

// gelu_tanh(x) = 0.5 x (1 + tanh(u)) = x * sigmoid(2u), u = sqrt(2/pi) (x + 0.044715 x^3)
DEVI float sigmoid_2u(float x)
{
    const float u = K_GELU_TANH * fmaf(K_GELU_CUBIC * x, x * x, x);
    return 1.0f / (1.0f + expf(-2.0f * u));
}
// gelu_tanh'(x) = s + x*s*(1-s)*2*sqrt(2/pi)*(1 + 3*0.044715*x^2), s = sigmoid(2u)
DEVI float gelu_tanh_d(float v)
{
    const float s = sigmoid_2u(v);
    const float du = 2.0f * K_GELU_TANH * fmaf(3.0f * K_GELU_CUBIC * v, v, 1.0f);
    return fmaf(v * s * (1.0f - s), du, s);
}
// gelu_erf(x) = 0.5*x*(1 + erf(x/sqrt(2))) computed as 0.5*x*erfc(-x/sqrt(2)); its derivative cdf + x*pdf
DEVI float gelu_erf_d(float v)
{
    const float cdf = 0.5f * erfcf(-v * K_INV_SQRT2), pdf = K_INV_SQRT_2PI * expf(-0.5f * v * v);
    return fmaf(v, pdf, cdf);
}

// ---------------------------------------------------------------- unary ops, one line each
// UNARY_OP(name, fwd, saved, bwd) defines, for each storage (suffix: none float32, _f16, _bf16):
//   name_fwd(y, x, n):          y[i] = fwd, with x the input element
//   name_bwd(dx, dy, saved, n): dx[i] = bwd, with dy the incoming gradient element and saved (x: the
//                               forward input, y: the forward output) the saved element
// The expressions see plain floats named x, y, dy (inner scopes shadow the pointer parameters). The
// `/* doc: */` comments become the manifest docs (tools/build_ptx.py expands the macro to find them).
#define UNARY_OP(NAME, FWD, SAVED, BWD)                                                                          \
    template <int S> DEVI void NAME##_fwd_t(ELT(S)* __restrict__ y, const ELT(S)* __restrict__ x, long long n)   \
    {                                                                                                            \
        GRID_STRIDE(i, n) { const float _x = Io<S>::ld(x, i); { const float x = _x; Io<S>::st(y, i, (FWD)); } }  \
    }                                                                                                            \
    template <int S> DEVI void NAME##_bwd_t(ELT(S)* __restrict__ dx, const ELT(S)* __restrict__ dy,              \
                                            const ELT(S)* __restrict__ SAVED, long long n)                       \
    {                                                                                                            \
        GRID_STRIDE(i, n) {                                                                                      \
            const float _g = Io<S>::ld(dy, i), _s = Io<S>::ld(SAVED, i);                                         \
            { const float dy = _g, SAVED = _s; Io<S>::st(dx, i, (BWD)); }                                        \
        }                                                                                                        \
    }                                                                                                            \
    /* doc: y = FWD. */                                                                                          \
    extern "C" __global__ void NAME##_fwd(float* __restrict__ y, const float* __restrict__ x, long long n)       \
    { NAME##_fwd_t<S_F32>(y, x, n); }                                                                            \
    /* doc: NAME##_fwd on float16 storage (float32 math, one rounding). */                                       \
    extern "C" __global__ void NAME##_fwd_f16(unsigned short* __restrict__ y, const unsigned short* __restrict__ x, long long n) \
    { NAME##_fwd_t<S_F16>(y, x, n); }                                                                            \
    /* doc: NAME##_fwd on bfloat16 storage (float32 math, one rounding). */                                      \
    extern "C" __global__ void NAME##_fwd_bf16(unsigned short* __restrict__ y, const unsigned short* __restrict__ x, long long n) \
    { NAME##_fwd_t<S_BF16>(y, x, n); }                                                                           \
    /* doc: dx = BWD (reads the saved SAVED of NAME##_fwd). */                                                   \
    extern "C" __global__ void NAME##_bwd(float* __restrict__ dx, const float* __restrict__ dy,                  \
                                          const float* __restrict__ SAVED, long long n)                          \
    { NAME##_bwd_t<S_F32>(dx, dy, SAVED, n); }                                                                   \
    /* doc: NAME##_bwd on float16 storage (float32 math, one rounding). */                                       \
    extern "C" __global__ void NAME##_bwd_f16(unsigned short* __restrict__ dx, const unsigned short* __restrict__ dy, \
                                              const unsigned short* __restrict__ SAVED, long long n)             \
    { NAME##_bwd_t<S_F16>(dx, dy, SAVED, n); }                                                                   \
    /* doc: NAME##_bwd on bfloat16 storage (float32 math, one rounding). */                                      \
    extern "C" __global__ void NAME##_bwd_bf16(unsigned short* __restrict__ dx, const unsigned short* __restrict__ dy, \
                                               const unsigned short* __restrict__ SAVED, long long n)            \
    { NAME##_bwd_t<S_BF16>(dx, dy, SAVED, n); }

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

// gelu (PyTorch approximate='none'), gelu_tanh (approximate='tanh', computed as x*sigmoid(2u)); leaky_relu: a = slope
UNARY_OP(gelu_erf, 0.5f * x * erfcf(-x * K_INV_SQRT2), x, dy * gelu_erf_d(x))
UNARY_OP(gelu_tanh, x * sigmoid_2u(x), x, dy * gelu_tanh_d(x))

// UNARY_OP_P1(name, fwd, saved, bwd) / UNARY_OP_P2(...): as UNARY_OP with one float parameter a (two: a, b)
// before n: name_fwd(y, x, a, [b,] n), name_bwd(dx, dy, saved, a, [b,] n); each storage as UNARY_OP's.
#define UNARY_OP_P1(NAME, FWD, SAVED, BWD)                                                                       \
    template <int S> DEVI void NAME##_fwd_t(ELT(S)* __restrict__ y, const ELT(S)* __restrict__ x, float a, long long n) \
    {                                                                                                            \
        GRID_STRIDE(i, n) { const float _x = Io<S>::ld(x, i); { const float x = _x; Io<S>::st(y, i, (FWD)); } }  \
    }                                                                                                            \
    template <int S> DEVI void NAME##_bwd_t(ELT(S)* __restrict__ dx, const ELT(S)* __restrict__ dy,              \
                                            const ELT(S)* __restrict__ SAVED, float a, long long n)              \
    {                                                                                                            \
        GRID_STRIDE(i, n) {                                                                                      \
            const float _g = Io<S>::ld(dy, i), _s = Io<S>::ld(SAVED, i);                                         \
            { const float dy = _g, SAVED = _s; Io<S>::st(dx, i, (BWD)); }                                        \
        }                                                                                                        \
    }                                                                                                            \
    /* doc: y = FWD (float parameter a). */                                                                      \
    extern "C" __global__ void NAME##_fwd(float* __restrict__ y, const float* __restrict__ x, float a, long long n) \
    { NAME##_fwd_t<S_F32>(y, x, a, n); }                                                                         \
    /* doc: NAME##_fwd on float16 storage (float32 math, one rounding). */                                       \
    extern "C" __global__ void NAME##_fwd_f16(unsigned short* __restrict__ y, const unsigned short* __restrict__ x, float a, long long n) \
    { NAME##_fwd_t<S_F16>(y, x, a, n); }                                                                         \
    /* doc: NAME##_fwd on bfloat16 storage (float32 math, one rounding). */                                      \
    extern "C" __global__ void NAME##_fwd_bf16(unsigned short* __restrict__ y, const unsigned short* __restrict__ x, float a, long long n) \
    { NAME##_fwd_t<S_BF16>(y, x, a, n); }                                                                        \
    /* doc: dx = BWD (reads the saved SAVED of NAME##_fwd; float parameter a). */                                \
    extern "C" __global__ void NAME##_bwd(float* __restrict__ dx, const float* __restrict__ dy,                  \
                                          const float* __restrict__ SAVED, float a, long long n)                 \
    { NAME##_bwd_t<S_F32>(dx, dy, SAVED, a, n); }                                                                \
    /* doc: NAME##_bwd on float16 storage (float32 math, one rounding). */                                       \
    extern "C" __global__ void NAME##_bwd_f16(unsigned short* __restrict__ dx, const unsigned short* __restrict__ dy, \
                                              const unsigned short* __restrict__ SAVED, float a, long long n)    \
    { NAME##_bwd_t<S_F16>(dx, dy, SAVED, a, n); }                                                                \
    /* doc: NAME##_bwd on bfloat16 storage (float32 math, one rounding). */                                      \
    extern "C" __global__ void NAME##_bwd_bf16(unsigned short* __restrict__ dx, const unsigned short* __restrict__ dy, \
                                               const unsigned short* __restrict__ SAVED, float a, long long n)   \
    { NAME##_bwd_t<S_BF16>(dx, dy, SAVED, a, n); }
#define UNARY_OP_P2(NAME, FWD, SAVED, BWD)                                                                       \
    template <int S> DEVI void NAME##_fwd_t(ELT(S)* __restrict__ y, const ELT(S)* __restrict__ x, float a, float b, long long n) \
    {                                                                                                            \
        GRID_STRIDE(i, n) { const float _x = Io<S>::ld(x, i); { const float x = _x; Io<S>::st(y, i, (FWD)); } }  \
    }                                                                                                            \
    template <int S> DEVI void NAME##_bwd_t(ELT(S)* __restrict__ dx, const ELT(S)* __restrict__ dy,              \
                                            const ELT(S)* __restrict__ SAVED, float a, float b, long long n)     \
    {                                                                                                            \
        GRID_STRIDE(i, n) {                                                                                      \
            const float _g = Io<S>::ld(dy, i), _s = Io<S>::ld(SAVED, i);                                         \
            { const float dy = _g, SAVED = _s; Io<S>::st(dx, i, (BWD)); }                                        \
        }                                                                                                        \
    }                                                                                                            \
    /* doc: y = FWD (float parameters a, b). */                                                                  \
    extern "C" __global__ void NAME##_fwd(float* __restrict__ y, const float* __restrict__ x, float a, float b, long long n) \
    { NAME##_fwd_t<S_F32>(y, x, a, b, n); }                                                                      \
    /* doc: NAME##_fwd on float16 storage (float32 math, one rounding). */                                       \
    extern "C" __global__ void NAME##_fwd_f16(unsigned short* __restrict__ y, const unsigned short* __restrict__ x, float a, float b, long long n) \
    { NAME##_fwd_t<S_F16>(y, x, a, b, n); }                                                                      \
    /* doc: NAME##_fwd on bfloat16 storage (float32 math, one rounding). */                                      \
    extern "C" __global__ void NAME##_fwd_bf16(unsigned short* __restrict__ y, const unsigned short* __restrict__ x, float a, float b, long long n) \
    { NAME##_fwd_t<S_BF16>(y, x, a, b, n); }                                                                     \
    /* doc: dx = BWD (reads the saved SAVED of NAME##_fwd; float parameters a, b). */                            \
    extern "C" __global__ void NAME##_bwd(float* __restrict__ dx, const float* __restrict__ dy,                  \
                                          const float* __restrict__ SAVED, float a, float b, long long n)        \
    { NAME##_bwd_t<S_F32>(dx, dy, SAVED, a, b, n); }                                                             \
    /* doc: NAME##_bwd on float16 storage (float32 math, one rounding). */                                       \
    extern "C" __global__ void NAME##_bwd_f16(unsigned short* __restrict__ dx, const unsigned short* __restrict__ dy, \
                                              const unsigned short* __restrict__ SAVED, float a, float b, long long n) \
    { NAME##_bwd_t<S_F16>(dx, dy, SAVED, a, b, n); }                                                             \
    /* doc: NAME##_bwd on bfloat16 storage (float32 math, one rounding). */                                      \
    extern "C" __global__ void NAME##_bwd_bf16(unsigned short* __restrict__ dx, const unsigned short* __restrict__ dy, \
                                               const unsigned short* __restrict__ SAVED, float a, float b, long long n) \
    { NAME##_bwd_t<S_BF16>(dx, dy, SAVED, a, b, n); }

UNARY_OP_P1(leaky_relu, x > 0.0f ? x : x * a, x, x > 0.0f ? dy : dy * a)
// elu: a = alpha; celu: a = alpha; softplus: a = beta, b = threshold; hardtanh: a = min_val, b = max_val
UNARY_OP_P1(elu, x > 0.0f ? x : a * expm1f(x), x, x > 0.0f ? dy : dy * a * expf(x))
UNARY_OP_P1(celu, x > 0.0f ? x : a * expm1f(x / a), x, x > 0.0f ? dy : dy * expf(x / a))
UNARY_OP_P2(softplus, x * a > b ? x : log1pf(expf(x * a)) / a, x, x * a > b ? dy : dy * sigm(x * a))
UNARY_OP_P2(hardtanh, x < a ? a : (x > b ? b : x), x, (x <= a || x >= b) ? 0.0f : dy)

// ---------------------------------------------------------------- binary, scalar and forward-only ops
// BINARY_OP(name, expr): name(z, x, y, n), z[i] = expr of the elements x, y (z may alias x or y: no
// __restrict__), for each storage (name, name_f16, name_bf16). SCALAR_OP(name, expr): name(y, x, a, n) with a
// float scalar a. FORWARD_OP(name, expr): name_fwd(y, x, n), an op whose gradient is another kernel.
#define BINARY_OP(NAME, EXPR)                                                                                    \
    template <int S> DEVI void NAME##_t(ELT(S)* z, const ELT(S)* x, const ELT(S)* y, long long n)                \
    {                                                                                                            \
        GRID_STRIDE(i, n) { const float _x = Io<S>::ld(x, i), _y = Io<S>::ld(y, i); { const float x = _x, y = _y; Io<S>::st(z, i, (EXPR)); } } \
    }                                                                                                            \
    /* doc: z = EXPR (z may alias x or y). */                                                                    \
    extern "C" __global__ void NAME(float* z, const float* x, const float* y, long long n) { NAME##_t<S_F32>(z, x, y, n); } \
    /* doc: NAME on float16 storage (float32 math, one rounding; z may alias x or y). */                         \
    extern "C" __global__ void NAME##_f16(unsigned short* z, const unsigned short* x, const unsigned short* y, long long n) \
    { NAME##_t<S_F16>(z, x, y, n); }                                                                             \
    /* doc: NAME on bfloat16 storage (float32 math, one rounding; z may alias x or y). */                        \
    extern "C" __global__ void NAME##_bf16(unsigned short* z, const unsigned short* x, const unsigned short* y, long long n) \
    { NAME##_t<S_BF16>(z, x, y, n); }
#define SCALAR_OP(NAME, EXPR)                                                                                    \
    template <int S> DEVI void NAME##_t(ELT(S)* y, const ELT(S)* x, float a, long long n)                        \
    {                                                                                                            \
        GRID_STRIDE(i, n) { const float _x = Io<S>::ld(x, i); { const float x = _x; Io<S>::st(y, i, (EXPR)); } } \
    }                                                                                                            \
    /* doc: y = EXPR for a float scalar a (y may alias x). */                                                    \
    extern "C" __global__ void NAME(float* y, const float* x, float a, long long n) { NAME##_t<S_F32>(y, x, a, n); } \
    /* doc: NAME on float16 storage (float32 math, one rounding; y may alias x). */                              \
    extern "C" __global__ void NAME##_f16(unsigned short* y, const unsigned short* x, float a, long long n)      \
    { NAME##_t<S_F16>(y, x, a, n); }                                                                             \
    /* doc: NAME on bfloat16 storage (float32 math, one rounding; y may alias x). */                             \
    extern "C" __global__ void NAME##_bf16(unsigned short* y, const unsigned short* x, float a, long long n)     \
    { NAME##_t<S_BF16>(y, x, a, n); }
#define FORWARD_OP(NAME, EXPR)                                                                                   \
    template <int S> DEVI void NAME##_fwd_t(ELT(S)* __restrict__ y, const ELT(S)* __restrict__ x, long long n)   \
    {                                                                                                            \
        GRID_STRIDE(i, n) { const float _x = Io<S>::ld(x, i); { const float x = _x; Io<S>::st(y, i, (EXPR)); } } \
    }                                                                                                            \
    /* doc: y = EXPR. */                                                                                         \
    extern "C" __global__ void NAME##_fwd(float* __restrict__ y, const float* __restrict__ x, long long n)       \
    { NAME##_fwd_t<S_F32>(y, x, n); }                                                                            \
    /* doc: NAME##_fwd on float16 storage (float32 math, one rounding). */                                       \
    extern "C" __global__ void NAME##_fwd_f16(unsigned short* __restrict__ y, const unsigned short* __restrict__ x, long long n) \
    { NAME##_fwd_t<S_F16>(y, x, n); }                                                                            \
    /* doc: NAME##_fwd on bfloat16 storage (float32 math, one rounding). */                                      \
    extern "C" __global__ void NAME##_fwd_bf16(unsigned short* __restrict__ y, const unsigned short* __restrict__ x, long long n) \
    { NAME##_fwd_t<S_BF16>(y, x, n); }

BINARY_OP(add, x + y)
BINARY_OP(mul, x * y)
// IEEE division (div.rn)
BINARY_OP(div, x / y)
SCALAR_OP(scale, a * x)
SCALAR_OP(add_scalar, x + a)
// powf: negative x with an integer a keeps its sign, with a fractional a is NaN
SCALAR_OP(pow_scalar, powf(x, a))
// exp's gradient dy * y is the mul kernel; log's (natural; -inf at 0, NaN below) dy / x the div kernel
FORWARD_OP(exp, expf(x))
FORWARD_OP(log, logf(x))

// y = a * x + y (fused multiply-add, one rounding; with y in S's storage, the float32 sum is rounded once)
template <int S> DEVI void axpy_t(ELT(S)* __restrict__ y, const ELT(S)* __restrict__ x, float a, long long n)
{
    GRID_STRIDE(i, n) Io<S>::st(y, i, fmaf(a, Io<S>::ld(x, i), Io<S>::ld(y, i)));
}

// doc: y = a * x + y (fused multiply-add, one rounding).
extern "C" __global__ void axpy(float* __restrict__ y, const float* __restrict__ x, float a, long long n) { axpy_t<S_F32>(y, x, a, n); }

// doc: axpy on float16 storage (float32 fma, one rounding).
extern "C" __global__ void axpy_f16(unsigned short* __restrict__ y, const unsigned short* __restrict__ x, float a, long long n) { axpy_t<S_F16>(y, x, a, n); }

// doc: axpy on bfloat16 storage (float32 fma, one rounding).
extern "C" __global__ void axpy_bf16(unsigned short* __restrict__ y, const unsigned short* __restrict__ x, float a, long long n) { axpy_t<S_BF16>(y, x, a, n); }

// doc: y = x (non-overlapping buffers).
extern "C" __global__ void copy(float* __restrict__ y, const float* __restrict__ x, long long n)
{
    GRID_STRIDE(i, n) y[i] = x[i];
}

// doc: y(f16 bits, u16) = x(f32) rounded to nearest even (cvt.rn.f16.f32; overflow -> inf, NaN kept).
extern "C" __global__ void cast_f32_f16(unsigned short* __restrict__ y, const float* __restrict__ x, long long n)
{
    GRID_STRIDE(i, n) y[i] = f32_to_f16(x[i]);
}

// doc: y(f32) = x(f16 bits, u16), exact.
extern "C" __global__ void cast_f16_f32(float* __restrict__ y, const unsigned short* __restrict__ x, long long n)
{
    GRID_STRIDE(i, n) y[i] = f16_to_f32(x[i]);
}

// doc: y(bf16 bits, u16) = x(f32) rounded to nearest even with integer ops (NaN -> quiet NaN with the sign kept; overflow -> inf).
extern "C" __global__ void cast_f32_bf16(unsigned short* __restrict__ y, const float* __restrict__ x, long long n)
{
    GRID_STRIDE(i, n) y[i] = f32_to_bf16(x[i]);
}

// doc: y(f32) = x(bf16 bits, u16), exact (bits << 16).
extern "C" __global__ void cast_bf16_f32(float* __restrict__ y, const unsigned short* __restrict__ x, long long n)
{
    GRID_STRIDE(i, n) y[i] = bf16_to_f32(x[i]);
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
