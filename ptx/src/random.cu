// Device-side fills whose values are a pure function of the element index: random numbers from the
// counter-based Philox4x32-10 generator of dropout.cu, and the index patterns of the creation ops
// (arange/linspace ramps, tril/triu masks).
//
// Random numbers: a call is keyed by (seed, offset); rawdev's cuda Generator advances offset by one per
// call, so every call of a seeded generator draws fresh numbers and a reseed replays them.
// Element i of a one-word-per-element kernel uses word (i % 4) of
//     philox(key = (lo32(seed), hi32(seed)), counter = (lo32(i/4), hi32(i/4), lo32(offset), hi32(offset)))
// exactly as dropout_fwd does; kernels that need two words per element (f64 uniforms, 64-bit integers,
// Box-Muller pairs, sort keys) take element i from group i/2 (words x,y for even i, z,w for odd i).
// Every kernel is a grid-stride loop (any 1-D grid/block; rawdev launches block 256).

#include "common.cuh"
#define DEVI __device__ __forceinline__

DEVI U4 draw(long long g, unsigned long long seed, unsigned long long offset)
{
    const U4 c{(unsigned int)g, (unsigned int)((unsigned long long)g >> 32), (unsigned int)offset, (unsigned int)(offset >> 32)};
    return philox4x32_10(c, (unsigned int)seed, (unsigned int)(seed >> 32));
}

DEVI unsigned int word(const U4& w, int j) { return j == 0 ? w.x : (j == 1 ? w.y : (j == 2 ? w.z : w.w)); }

// [0, 1) with 24 bits, as dropout's keep test
DEVI float u01(unsigned int w) { return (float)(w >> 8) * 5.9604644775390625e-08f; }
// (0, 1]: never 0, so logarithms are finite
DEVI float u01_open0(unsigned int w) { return (float)((w >> 8) + 1u) * 5.9604644775390625e-08f; }
// [0, 1) with 53 bits from two words
DEVI double u01_f64(unsigned int a, unsigned int b)
{
    const unsigned long long v = (((unsigned long long)a << 32) | b) >> 11;
    return (double)v * 1.1102230246251565e-16;
}

// doc: y[i] = lo + (hi - lo) * u, u in [0, 1) from one Philox word (24 bits) per element (file header). float32.
extern "C" __global__ void rand_uniform_f32(float* __restrict__ y, long long n, float lo, float hi, unsigned long long seed, unsigned long long offset)
{
    GRID_STRIDE(g, (n + 3) / 4) {
        const U4 w = draw(g, seed, offset);
#pragma unroll
        for (int j = 0; j < 4; ++j) {
            const long long i = g * 4 + j;
            if (i < n) {
                float v = lo + (hi - lo) * u01(word(w, j));
                y[i] = v < hi ? v : lo;   // rounding may reach hi; [lo, hi) as PyTorch's uniform_
            }
        }
    }
}

// doc: y[i] = lo + (hi - lo) * u, u in [0, 1) with 53 bits from two Philox words per element. float64.
extern "C" __global__ void rand_uniform_f64(double* __restrict__ y, long long n, double lo, double hi, unsigned long long seed, unsigned long long offset)
{
    GRID_STRIDE(g, (n + 1) / 2) {
        const U4 w = draw(g, seed, offset);
        const long long i = g * 2;
        double v = lo + (hi - lo) * u01_f64(w.x, w.y);
        y[i] = v < hi ? v : lo;
        if (i + 1 < n) {
            v = lo + (hi - lo) * u01_f64(w.z, w.w);
            y[i + 1] = v < hi ? v : lo;
        }
    }
}

// doc: y[i] = mean + std * z, z standard normal by Box-Muller on the word pairs (x,y) and (z,w) of each Philox draw (four normals per draw). float32.
extern "C" __global__ void rand_normal_f32(float* __restrict__ y, long long n, float mean, float std, unsigned long long seed, unsigned long long offset)
{
    GRID_STRIDE(g, (n + 3) / 4) {
        const U4 w = draw(g, seed, offset);
        float s0, c0, s1, c1;
        const float r0 = sqrtf(-2.0f * logf(u01_open0(w.x))), r1 = sqrtf(-2.0f * logf(u01_open0(w.z)));
        sincospif(2.0f * u01(w.y), &s0, &c0);
        sincospif(2.0f * u01(w.w), &s1, &c1);
        const float z[4] = {r0 * c0, r0 * s0, r1 * c1, r1 * s1};
#pragma unroll
        for (int j = 0; j < 4; ++j) {
            const long long i = g * 4 + j;
            if (i < n) y[i] = mean + std * z[j];
        }
    }
}

// doc: y[i] = mean + std * z, z standard normal by Box-Muller in double precision (one Philox draw per two normals). float64.
extern "C" __global__ void rand_normal_f64(double* __restrict__ y, long long n, double mean, double std, unsigned long long seed, unsigned long long offset)
{
    GRID_STRIDE(g, (n + 1) / 2) {
        const U4 w = draw(g, seed, offset);
        const double u1 = 1.0 - u01_f64(w.x, w.y), u2 = u01_f64(w.z, w.w);   // u1 in (0, 1]
        double s, c;
        const double r = sqrt(-2.0 * log(u1));
        sincospi(2.0 * u2, &s, &c);
        const long long i = g * 2;
        y[i] = mean + std * r * c;
        if (i + 1 < n) y[i + 1] = mean + std * r * s;
    }
}

// doc: y[i] = (u < p) ? 1 : 0 as float32, u in [0, 1) from one Philox word; p is prob[i] when prob is not null (float32, same shape), else the scalar p.
extern "C" __global__ void rand_bernoulli_f32(float* __restrict__ y, const float* __restrict__ prob, long long n, float p, unsigned long long seed, unsigned long long offset)
{
    GRID_STRIDE(g, (n + 3) / 4) {
        const U4 w = draw(g, seed, offset);
#pragma unroll
        for (int j = 0; j < 4; ++j) {
            const long long i = g * 4 + j;
            if (i < n) y[i] = u01(word(w, j)) < (prob ? prob[i] : p) ? 1.0f : 0.0f;
        }
    }
}

// doc: y[i] = -log(u) / lambd, u in (0, 1] from one Philox word (exponential with rate lambd). float32.
extern "C" __global__ void rand_exponential_f32(float* __restrict__ y, long long n, float lambd, unsigned long long seed, unsigned long long offset)
{
    GRID_STRIDE(g, (n + 3) / 4) {
        const U4 w = draw(g, seed, offset);
#pragma unroll
        for (int j = 0; j < 4; ++j) {
            const long long i = g * 4 + j;
            if (i < n) y[i] = -logf(u01_open0(word(w, j))) / lambd;
        }
    }
}

// Integers in [low, low + range): a 64-bit random value per element (two words), reduced modulo range.
#define RAND_INT(name, T)                                                                            \
/* doc: y[i] = low + (r mod range) with r a 64-bit Philox value (two words per element); range >= 1. */ \
extern "C" __global__ void name(T* __restrict__ y, long long n, long long low, unsigned long long range, unsigned long long seed, unsigned long long offset) \
{                                                                                                    \
    GRID_STRIDE(g, (n + 1) / 2) {                                                                    \
        const U4 w = draw(g, seed, offset);                                                          \
        const long long i = g * 2;                                                                   \
        y[i] = (T)(low + (long long)(((((unsigned long long)w.x) << 32) | w.y) % range));            \
        if (i + 1 < n) y[i + 1] = (T)(low + (long long)(((((unsigned long long)w.z) << 32) | w.w) % range)); \
    }                                                                                                \
}

RAND_INT(rand_int_i64, long long)
RAND_INT(rand_int_i32, int)
RAND_INT(rand_int_f32, float)
RAND_INT(rand_int_f64, double)

// ------------------------------------------------------------------------------------ multinomial

// doc: cdf[r, c] = w[r, 0] + ... + w[r, c] (float32 rows of length C, one thread per row, summed in double).
extern "C" __global__ void multinomial_cdf_f32(float* __restrict__ cdf, const float* __restrict__ w, long long rows, long long C)
{
    GRID_STRIDE(r, rows) {
        double acc = 0.0;
        for (long long c = 0; c < C; ++c) {
            acc += (double)w[r * C + c];
            cdf[r * C + c] = (float)acc;
        }
    }
}

// doc: out[r, s] = the first c with cdf[r, c] > u * cdf[r, C-1] (binary search), u in [0, 1) from one Philox word per sample: sampling with replacement; zero-weight categories are never drawn.
extern "C" __global__ void multinomial_draw(long long* __restrict__ out, const float* __restrict__ cdf, long long rows, long long C, long long S, unsigned long long seed, unsigned long long offset)
{
    GRID_STRIDE(g, (rows * S + 3) / 4) {
        const U4 w = draw(g, seed, offset);
#pragma unroll
        for (int j = 0; j < 4; ++j) {
            const long long i = g * 4 + j;
            if (i < rows * S) {
                const long long r = i / S;
                const float* row = cdf + r * C;
                const float t = u01(word(w, j)) * row[C - 1];
                long long lo = 0, hi = C - 1;
                while (lo < hi) {
                    const long long mid = (lo + hi) / 2;
                    if (row[mid] > t) hi = mid; else lo = mid + 1;
                }
                out[i] = lo;
            }
        }
    }
}

DEVI unsigned int ordered_bits(float k)
{
    const unsigned int b = __float_as_uint(k);
    return (b & 0x80000000u) ? ~b : (b | 0x80000000u);   // unsigned order == float order
}

// doc: 64-bit sort keys for sampling without replacement: keys[i] = (ordered bits of log(u)/w[i]) << 32 | tie-break word (the exponential race: the top S keys of a row are a weighted sample without replacement; w = 0 gives -inf); w null: keys[i] = 64 random bits (a uniform permutation). Two Philox words per element.
extern "C" __global__ void multinomial_keys_f32(unsigned long long* __restrict__ keys, const float* __restrict__ w, long long n, unsigned long long seed, unsigned long long offset)
{
    GRID_STRIDE(g, (n + 1) / 2) {
        const U4 d = draw(g, seed, offset);
#pragma unroll
        for (int j = 0; j < 2; ++j) {
            const long long i = g * 2 + j;
            if (i < n) {
                const unsigned int a = j ? d.z : d.x, b = j ? d.w : d.y;
                unsigned long long k;
                if (w) {
                    const float wi = w[i];
                    const float key = wi > 0.0f ? logf(u01_open0(a)) / wi : -__int_as_float(0x7f800000);
                    k = ((unsigned long long)ordered_bits(key) << 32) | b;
                } else {
                    k = ((unsigned long long)a << 32) | b;
                }
                keys[i] = k;
            }
        }
    }
}

// doc: out[r, rank] = c for every c whose key is among the S largest of row r, where rank = how many keys of the row are larger (ties: lower index first): top-S indices in descending key order. One thread per element, O(C) each.
extern "C" __global__ void rank_select_u64(long long* __restrict__ out, const unsigned long long* __restrict__ keys, long long rows, long long C, long long S)
{
    GRID_STRIDE(i, rows * C) {
        const long long r = i / C, c = i - r * C;
        const unsigned long long* row = keys + r * C;
        const unsigned long long k = row[c];
        long long rank = 0;
        for (long long l = 0; l < C; ++l) {
            const unsigned long long o = row[l];
            rank += (o > k) || (o == k && l < c);
        }
        if (rank < S) out[r * S + rank] = c;
    }
}

// ------------------------------------------------------------------------------------ index patterns

// doc: y[i] = start + i * step for i < n/2, else end - (n - 1 - i) * step (PyTorch's linspace/arange ramp, symmetric about the middle; arange passes half = n). float32.
extern "C" __global__ void ramp_f32(float* __restrict__ y, long long n, long long half, float start, float end, float step)
{
    GRID_STRIDE(i, n) y[i] = i < half ? start + (float)i * step : end - (float)(n - 1 - i) * step;
}

// doc: as ramp_f32 in float64.
extern "C" __global__ void ramp_f64(double* __restrict__ y, long long n, long long half, double start, double end, double step)
{
    GRID_STRIDE(i, n) y[i] = i < half ? start + (double)i * step : end - (double)(n - 1 - i) * step;
}

// doc: y[i] = start + i * step in int64 (integer arange).
extern "C" __global__ void ramp_i64(long long* __restrict__ y, long long n, long long start, long long step)
{
    GRID_STRIDE(i, n) y[i] = start + i * step;
}

// doc: y[i] = start + i * step in int32 (integer arange).
extern "C" __global__ void ramp_i32(int* __restrict__ y, long long n, long long start, long long step)
{
    GRID_STRIDE(i, n) y[i] = (int)(start + i * step);
}

// tril/triu: x viewed as [batch, R, C] contiguous; element (r, c) is kept when c - r <= k (lower) or c - r >= k
// (upper), else it becomes 0 (all-zero bits in every dtype). y may be x (in place).
#define TRI_MASK(name, T)                                                                            \
/* doc: y = x with the elements outside the triangle zeroed: keep (r, c) of each [R, C] matrix when lower ? c - r <= k : c - r >= k; x and y contiguous [n / (R*C), R, C], y may be x. */ \
extern "C" __global__ void name(T* y, const T* x, long long n, long long R, long long C, long long k, int lower) \
{                                                                                                    \
    GRID_STRIDE(i, n) {                                                                              \
        const long long c = i % C, r = (i / C) % R;                                                  \
        const bool keep = lower ? (c - r <= k) : (c - r >= k);                                       \
        y[i] = keep ? x[i] : (T)0;                                                                   \
    }                                                                                                \
}

TRI_MASK(tri_mask_b1, unsigned char)
TRI_MASK(tri_mask_b2, unsigned short)
TRI_MASK(tri_mask_b4, unsigned int)
TRI_MASK(tri_mask_b8, unsigned long long)
