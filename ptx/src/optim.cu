// Optimizer steps over one flat float32 buffer of n parameters (one launch per buffer).
// Any 1-D grid/block (grid-stride loop), e.g. block 256, grid min(ceil(n/256), 65535).

// doc: SGD step, PyTorch rule: g = maximize ? -grad : grad; if weight_decay != 0: g += weight_decay*p; if momentum != 0: buf = first_step ? g : momentum*buf + (1-dampening)*g, g = nesterov ? g + momentum*buf : buf; p -= lr*g. buf may be 0 when momentum == 0; flags are 0/1 ints.
extern "C" __global__ void sgd_step(float* __restrict__ p, const float* __restrict__ grad, float* __restrict__ buf, long long n, float lr, float weight_decay, float momentum, float dampening, int nesterov, int maximize, int first_step)
{
    const long long stride = (long long)gridDim.x * blockDim.x;
    for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride) {
        float pv = p[i];
        float g = maximize ? -grad[i] : grad[i];
        if (weight_decay != 0.0f) g = fmaf(weight_decay, pv, g);
        if (momentum != 0.0f) {
            const float b = first_step ? g : fmaf(momentum, buf[i], (1.0f - dampening) * g);
            buf[i] = b;
            g = nesterov ? fmaf(momentum, b, g) : b;
        }
        p[i] = fmaf(-lr, g, pv);
    }
}

// doc: Adam / AdamW step, PyTorch rule (step t >= 1): g = maximize ? -grad : grad; AdamW (adamw=1): p *= decay, else if weight_decay != 0: g += weight_decay*p; m = m + one_minus_beta1*(g - m) (PyTorch's lerp); v = beta2*v + one_minus_beta2*g*g; if amsgrad: vmax = max(vmax, v) and v_used = vmax else v; p -= step_size * m / (sqrt(v_used) / bias_correction2_sqrt + eps). The host computes every scalar in double, as PyTorch does, and passes it rounded once to float32: one_minus_beta1 = 1 - beta1, one_minus_beta2 = 1 - beta2 (not 1 - float32(beta), which is 1.3e-5 off for beta2 = 0.999), decay = 1 - lr*weight_decay, step_size = lr / (1 - beta1^t), bias_correction2_sqrt = sqrt(1 - beta2^t). vmax may be 0 when amsgrad == 0.
extern "C" __global__ void adam_step(float* __restrict__ p, const float* __restrict__ grad, float* __restrict__ m, float* __restrict__ v, float* __restrict__ vmax, long long n, float one_minus_beta1, float beta2, float one_minus_beta2, float eps, float weight_decay, float decay, float step_size, float bias_correction2_sqrt, int amsgrad, int maximize, int adamw)
{
    const long long stride = (long long)gridDim.x * blockDim.x;
    for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride) {
        float pv = p[i];
        float g = maximize ? -grad[i] : grad[i];
        if (adamw) pv = pv * decay;
        else if (weight_decay != 0.0f) g = fmaf(weight_decay, pv, g);
        const float mv = fmaf(one_minus_beta1, g - m[i], m[i]);
        const float vv = fmaf(beta2, v[i], one_minus_beta2 * g * g);
        m[i] = mv;
        v[i] = vv;
        float vu = vv;
        if (amsgrad) {
            vu = fmaxf(vmax[i], vv);
            vmax[i] = vu;
        }
        const float denom = sqrtf(vu) / bias_correction2_sqrt + eps;
        p[i] = pv - step_size * (mv / denom);
    }
}
