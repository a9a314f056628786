// Sorting rows of any length on the device, for float32 and int64 (and, through a cast, the narrower types):
//   1. sort_keys_*: each value becomes an unsigned key whose unsigned order is PyTorch's order (ascending: NaN
//      greatest; descending: the key complemented, so NaN comes first; -0.0 and 0.0 the same key);
//   2. sort_chunks_*: each run of CHUNK elements of a row is sorted in shared memory (a bitonic network over
//      (key, index) pairs; the index breaks ties, so the sort is stable);
//   3. merge_runs_*: adjacent sorted runs of length w merge into runs of 2w, one thread per element: an element
//      of the left run lands at its position plus the number of right-run elements strictly before it, an
//      element of the right run at its position plus the number of left-run elements not after it (ties: left
//      first, which keeps the sort stable); ceil(log2(n / CHUNK)) passes, ping-ponging two buffers.
// Indices are int64 positions within the row; the caller gathers the values through them.

#include "common.cuh"
#define CHUNK 2048
#define CHUNK_THREADS 512

// doc: key[i] = the unsigned sort key of float32 x[i]: order-preserving bits (NaN the largest, -0.0 == 0.0), complemented when descending.
extern "C" __global__ void sort_keys_f32(unsigned int* __restrict__ key, const float* __restrict__ x, long long n, int descending)
{
    GRID_STRIDE(i, n)
    {
        float v = x[i];
        unsigned int u;
        if (v != v) {
            u = 0xFFFFFFFFu;                       // every NaN the same, above +inf
        } else {
            if (v == 0.0f) v = 0.0f;               // -0.0 sorts with 0.0 (ties keep their order)
            u = __float_as_uint(v);
            u = (u & 0x80000000u) ? ~u : (u | 0x80000000u);
        }
        key[i] = descending ? ~u : u;
    }
}

// doc: key[i] = the unsigned sort key of int64 x[i] (sign bit flipped), complemented when descending.
extern "C" __global__ void sort_keys_i64(unsigned long long* __restrict__ key, const long long* __restrict__ x, long long n, int descending)
{
    GRID_STRIDE(i, n)
    {
        const unsigned long long u = (unsigned long long)x[i] ^ 0x8000000000000000ull;
        key[i] = descending ? ~u : u;
    }
}

// (key a, index ia) before (key b, index ib): smaller key, or the same key and the smaller index
template <typename K>
__device__ __forceinline__ bool key_before(K a, long long ia, K b, long long ib)
{
    return a < b || (a == b && ia < ib);
}

// One block per (row, chunk): the chunk's pairs sorted in shared memory. Slots past the chunk's end are padding
// (index LLONG_MAX, key all ones), which sorts last whatever the real keys are (a real index is always smaller).
template <typename K>
__device__ void sort_chunk(K* __restrict__ key, long long* __restrict__ idx, long long rows, long long n)
{
    __shared__ K sk[CHUNK];
    __shared__ long long si[CHUNK];
    const long long chunks = (n + CHUNK - 1) / CHUNK;
    for (long long b = blockIdx.x; b < rows * chunks; b += gridDim.x) {
        const long long row = b / chunks, c0 = (b - row * chunks) * CHUNK;
        const int len = (int)min((long long)CHUNK, n - c0);
        int size = 1;
        while (size < len) size <<= 1;
        K* krow = key + row * n + c0;
        long long* irow = idx + row * n + c0;
        for (int t = threadIdx.x; t < size; t += blockDim.x) {
            const bool real = t < len;
            sk[t] = real ? krow[t] : (K)~(K)0;
            si[t] = real ? c0 + t : 0x7FFFFFFFFFFFFFFFll;
        }
        __syncthreads();
        for (int k = 2; k <= size; k <<= 1) {
            for (int j = k >> 1; j > 0; j >>= 1) {
                for (int t = threadIdx.x; t < size; t += blockDim.x) {
                    const int p = t ^ j;
                    if (p > t) {
                        const bool up = (t & k) == 0;
                        const bool swap = up ? key_before(sk[p], si[p], sk[t], si[t]) : key_before(sk[t], si[t], sk[p], si[p]);
                        if (swap) {
                            const K tk = sk[t]; sk[t] = sk[p]; sk[p] = tk;
                            const long long ti = si[t]; si[t] = si[p]; si[p] = ti;
                        }
                    }
                }
                __syncthreads();
            }
        }
        for (int t = threadIdx.x; t < len; t += blockDim.x) {
            krow[t] = sk[t];
            irow[t] = si[t];
        }
        __syncthreads();
    }
}

// doc: sorts each CHUNK-long run of every row of key (u32, [rows, n]) in place with idx[row*n + j] = j (the index within the row) carried along; stable. Grid: one block per (row, chunk), grid-stride; block 512.
extern "C" __global__ __launch_bounds__(CHUNK_THREADS) void sort_chunks_u32(unsigned int* __restrict__ key, long long* __restrict__ idx, long long rows, long long n)
{
    sort_chunk<unsigned int>(key, idx, rows, n);
}

// doc: sort_chunks_u32 for u64 keys (int64 values).
extern "C" __global__ __launch_bounds__(CHUNK_THREADS) void sort_chunks_u64(unsigned long long* __restrict__ key, long long* __restrict__ idx, long long rows, long long n)
{
    sort_chunk<unsigned long long>(key, idx, rows, n);
}

template <typename K>
__device__ void merge_runs(K* __restrict__ kout, long long* __restrict__ iout, const K* __restrict__ kin,
                           const long long* __restrict__ iin, long long rows, long long n, long long w)
{
    GRID_STRIDE(g, rows * n)
    {
        const long long row = g / n, j = g - row * n;
        const long long start = (j / (2 * w)) * (2 * w);          // the pair of runs this element belongs to
        const long long mid = min(start + w, n), end = min(start + 2 * w, n);
        const K* kr = kin + row * n;
        const long long* ir = iin + row * n;
        const K kv = kr[j];
        const long long iv = ir[j];
        long long lo, hi;
        if (j < mid) {      // left run: count the right run's elements strictly before (kv, iv)
            lo = mid; hi = end;
            while (lo < hi) {
                const long long m = (lo + hi) >> 1;
                if (key_before(kr[m], ir[m], kv, iv)) lo = m + 1; else hi = m;
            }
            const long long out = start + (j - start) + (lo - mid);
            kout[row * n + out] = kv;
            iout[row * n + out] = iv;
        } else {            // right run: count the left run's elements before (kv, iv)
            lo = start; hi = mid;
            while (lo < hi) {
                const long long m = (lo + hi) >> 1;
                if (key_before(kr[m], ir[m], kv, iv)) lo = m + 1; else hi = m;
            }
            const long long out = start + (j - mid) + (lo - start);
            kout[row * n + out] = kv;
            iout[row * n + out] = iv;
        }
    }
}

// doc: one merge pass over rows of u32 keys [rows, n]: sorted runs of length w (the last may be shorter) merge pairwise into runs of 2w, from (kin, iin) into (kout, iout); stable. One thread per element, grid-stride.
extern "C" __global__ void merge_runs_u32(unsigned int* __restrict__ kout, long long* __restrict__ iout, const unsigned int* __restrict__ kin, const long long* __restrict__ iin, long long rows, long long n, long long w)
{
    merge_runs<unsigned int>(kout, iout, kin, iin, rows, n, w);
}

// doc: merge_runs_u32 for u64 keys.
extern "C" __global__ void merge_runs_u64(unsigned long long* __restrict__ kout, long long* __restrict__ iout, const unsigned long long* __restrict__ kin, const long long* __restrict__ iin, long long rows, long long n, long long w)
{
    merge_runs<unsigned long long>(kout, iout, kin, iin, rows, n, w);
}
