// EmbeddingBag over weight [V, D] (float32): bag b holds the entries idx[bounds[b] .. bounds[b+1]) (bounds has
// B + 1 int64 entries, the last = the number of indices). Entries equal to padding_idx (-1: none) are skipped.
// mode 0 sum (times per_sample_weights when given), 1 mean (over the bag's non-padding entries), 2 max (per
// dimension; argmax saved for the backward). An empty bag gives 0 (max: argmax -1). An index outside [0, V)
// trips a device-side assert. One thread per (bag, d): consecutive threads read consecutive d (coalesced).

#include "common.cuh"
#define DEVICE_ASSERT(cond) ((cond) ? (void)0 : __assertfail(#cond, __FILE__, __LINE__, __func__, 1))

// doc: out[B, D] (and argmax[B, D] for max, cnt[B] the non-padding count) from weight[V, D], idx, bounds[B+1],
// psw (null: 1), mode 0 sum / 1 mean / 2 max, pad (-1: none).
extern "C" __global__ void ebag_fwd_f32(float* __restrict__ out, long long* __restrict__ argmax,
                                        float* __restrict__ cnt, const float* __restrict__ w,
                                        const long long* __restrict__ idx, const long long* __restrict__ bounds,
                                        const float* __restrict__ psw, long long B, long long D, long long V, int mode,
                                        long long pad)
{
    GRID_STRIDE(t, B * D)
    {
        const long long b = t / D, d = t % D;
        float acc = 0.0f, n = 0.0f;
        long long am = -1;
        for (long long j = bounds[b]; j < bounds[b + 1]; ++j) {
            const long long i = idx[j];
            DEVICE_ASSERT(i >= 0 && i < V);
            if (i == pad) continue;
            const float v = w[i * D + d];
            if (mode == 2) {
                if (am < 0 || v > acc || v != v) { acc = v; am = i; }
            } else {
                acc += psw ? psw[j] * v : v;
            }
            n += 1.0f;
        }
        if (mode == 1 && n > 0.0f) acc /= n;
        out[t] = acc;
        if (mode == 2) argmax[t] = am;
        if (d == 0) cnt[b] = n;
    }
}

// doc: gw[V, D] += the gradient of out[B, D] (atomicAdd; gw zeroed first): sum/mean spread gout[b, d] (times
// psw[j], or / cnt[b]) to each non-padding entry of bag b; max adds it to the argmax row.
extern "C" __global__ void ebag_bwd_f32(float* __restrict__ gw, const float* __restrict__ gout,
                                        const long long* __restrict__ argmax, const float* __restrict__ cnt,
                                        const long long* __restrict__ idx, const long long* __restrict__ bounds,
                                        const float* __restrict__ psw, long long B, long long D, int mode,
                                        long long pad)
{
    GRID_STRIDE(t, B * D)
    {
        const long long b = t / D, d = t % D;
        const float g = gout[t];
        if (mode == 2) {
            if (argmax[t] >= 0) atomicAdd(&gw[argmax[t] * D + d], g);
            continue;
        }
        const float gm = mode == 1 ? (cnt[b] > 0.0f ? g / cnt[b] : 0.0f) : g;
        for (long long j = bounds[b]; j < bounds[b + 1]; ++j) {
            const long long i = idx[j];
            if (i == pad) continue;
            atomicAdd(&gw[i * D + d], psw ? psw[j] * gm : gm);
        }
    }
}

// doc: gpsw[j] = sum over d of gout[b, d] * w[idx[j], d] for the entries j of bag b (0 for padding); one thread
// per entry j, bag_of[j] its bag.
extern "C" __global__ void ebag_psw_bwd_f32(float* __restrict__ gpsw, const float* __restrict__ gout,
                                            const float* __restrict__ w, const long long* __restrict__ idx,
                                            const long long* __restrict__ bag_of, long long n, long long D,
                                            long long pad)
{
    GRID_STRIDE(j, n)
    {
        const long long i = idx[j], b = bag_of[j];
        float s = 0.0f;
        if (i != pad)
            for (long long d = 0; d < D; ++d) s += gout[b * D + d] * w[i * D + d];
        gpsw[j] = s;
    }
}
