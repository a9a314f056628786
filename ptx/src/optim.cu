// Optimizer steps over one flat float32 buffer of n parameters (one launch per buffer).
// Any 1-D grid/block (grid-stride loop), e.g. block 256, grid min(ceil(n/256), 65535). SGD and Adam/AdamW also
// come on float16/bfloat16 storage (`_f16`, `_bf16`).
#include "storage.cuh"

// SGD and Adam/AdamW: one body per rule, a template over the element storage (storage.cuh). The float32 kernels
// (sgd_step, adam_step) and the 2-byte ones (_f16, _bf16: p, grad and every state on that storage) run the same
// float32 math; a 16-bit kernel widens each load exactly and rounds each stored value once, as PyTorch's fused
// kernels do for a 16-bit parameter whose state has its dtype.
template <int S>
__device__ __forceinline__ void sgd_body(ELT(S)* __restrict__ p, const ELT(S)* __restrict__ grad, ELT(S)* __restrict__ buf, long long n, float lr, float weight_decay, float momentum, float dampening, int nesterov, int maximize, int first_step)
{
    const long long stride = (long long)gridDim.x * blockDim.x;
    for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride) {
        float pv = Io<S>::ld(p, i);
        const float gi = Io<S>::ld(grad, i);
        float g = maximize ? -gi : gi;
        if (weight_decay != 0.0f) g = fmaf(weight_decay, pv, g);
        if (momentum != 0.0f) {
            const float b = first_step ? g : fmaf(momentum, Io<S>::ld(buf, i), (1.0f - dampening) * g);
            Io<S>::st(buf, i, b);
            g = nesterov ? fmaf(momentum, b, g) : b;
        }
        Io<S>::st(p, i, fmaf(-lr, g, pv));
    }
}

// doc: SGD step, PyTorch rule: g = maximize ? -grad : grad; if weight_decay != 0: g += weight_decay*p; if momentum != 0: buf = first_step ? g : momentum*buf + (1-dampening)*g, g = nesterov ? g + momentum*buf : buf; p -= lr*g. buf may be 0 when momentum == 0; flags are 0/1 ints.
extern "C" __global__ void sgd_step(float* __restrict__ p, const float* __restrict__ grad, float* __restrict__ buf, long long n, float lr, float weight_decay, float momentum, float dampening, int nesterov, int maximize, int first_step)
{
    sgd_body<S_F32>(p, grad, buf, n, lr, weight_decay, momentum, dampening, nesterov, maximize, first_step);
}

// doc: sgd_step on float16 storage (p, grad, buf: float32 math, each stored value rounded once; the new p uses the unrounded buf).
extern "C" __global__ void sgd_step_f16(unsigned short* __restrict__ p, const unsigned short* __restrict__ grad, unsigned short* __restrict__ buf, long long n, float lr, float weight_decay, float momentum, float dampening, int nesterov, int maximize, int first_step)
{
    sgd_body<S_F16>(p, grad, buf, n, lr, weight_decay, momentum, dampening, nesterov, maximize, first_step);
}

// doc: sgd_step on bfloat16 storage (p, grad, buf: float32 math, each stored value rounded once; the new p uses the unrounded buf).
extern "C" __global__ void sgd_step_bf16(unsigned short* __restrict__ p, const unsigned short* __restrict__ grad, unsigned short* __restrict__ buf, long long n, float lr, float weight_decay, float momentum, float dampening, int nesterov, int maximize, int first_step)
{
    sgd_body<S_BF16>(p, grad, buf, n, lr, weight_decay, momentum, dampening, nesterov, maximize, first_step);
}

template <int S>
__device__ __forceinline__ void adam_body(ELT(S)* __restrict__ p, const ELT(S)* __restrict__ grad, ELT(S)* __restrict__ m, ELT(S)* __restrict__ v, ELT(S)* __restrict__ vmax, long long n, float one_minus_beta1, float beta2, float one_minus_beta2, float eps, float weight_decay, float decay, float step_size, float bias_correction2_sqrt, int amsgrad, int maximize, int adamw)
{
    const long long stride = (long long)gridDim.x * blockDim.x;
    for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride) {
        float pv = Io<S>::ld(p, i);
        const float gi = Io<S>::ld(grad, i);
        float g = maximize ? -gi : gi;
        if (adamw) pv = pv * decay;
        else if (weight_decay != 0.0f) g = fmaf(weight_decay, pv, g);
        const float mi = Io<S>::ld(m, i);
        const float mv = fmaf(one_minus_beta1, g - mi, mi);
        const float vv = fmaf(beta2, Io<S>::ld(v, i), one_minus_beta2 * g * g);
        Io<S>::st(m, i, mv);
        Io<S>::st(v, i, vv);
        float vu = vv;
        if (amsgrad) {
            vu = fmaxf(Io<S>::ld(vmax, i), vv);
            Io<S>::st(vmax, i, vu);
        }
        const float denom = sqrtf(vu) / bias_correction2_sqrt + eps;
        Io<S>::st(p, i, pv - step_size * (mv / denom));
    }
}

// doc: Adam / AdamW step, PyTorch rule (step t >= 1): g = maximize ? -grad : grad; AdamW (adamw=1): p *= decay, else if weight_decay != 0: g += weight_decay*p; m = m + one_minus_beta1*(g - m) (PyTorch's lerp); v = beta2*v + one_minus_beta2*g*g; if amsgrad: vmax = max(vmax, v) and v_used = vmax else v; p -= step_size * m / (sqrt(v_used) / bias_correction2_sqrt + eps). The host computes every scalar in double, as PyTorch does, and passes it rounded once to float32: one_minus_beta1 = 1 - beta1, one_minus_beta2 = 1 - beta2 (not 1 - float32(beta), which is 1.3e-5 off for beta2 = 0.999), decay = 1 - lr*weight_decay, step_size = lr / (1 - beta1^t), bias_correction2_sqrt = sqrt(1 - beta2^t). vmax may be 0 when amsgrad == 0.
extern "C" __global__ void adam_step(float* __restrict__ p, const float* __restrict__ grad, float* __restrict__ m, float* __restrict__ v, float* __restrict__ vmax, long long n, float one_minus_beta1, float beta2, float one_minus_beta2, float eps, float weight_decay, float decay, float step_size, float bias_correction2_sqrt, int amsgrad, int maximize, int adamw)
{
    adam_body<S_F32>(p, grad, m, v, vmax, n, one_minus_beta1, beta2, one_minus_beta2, eps, weight_decay, decay, step_size, bias_correction2_sqrt, amsgrad, maximize, adamw);
}

// doc: adam_step on float16 storage (p, grad, m, v, vmax: float32 math, each stored value rounded once; the new p uses the unrounded m and v).
extern "C" __global__ void adam_step_f16(unsigned short* __restrict__ p, const unsigned short* __restrict__ grad, unsigned short* __restrict__ m, unsigned short* __restrict__ v, unsigned short* __restrict__ vmax, long long n, float one_minus_beta1, float beta2, float one_minus_beta2, float eps, float weight_decay, float decay, float step_size, float bias_correction2_sqrt, int amsgrad, int maximize, int adamw)
{
    adam_body<S_F16>(p, grad, m, v, vmax, n, one_minus_beta1, beta2, one_minus_beta2, eps, weight_decay, decay, step_size, bias_correction2_sqrt, amsgrad, maximize, adamw);
}

// doc: adam_step on bfloat16 storage (p, grad, m, v, vmax: float32 math, each stored value rounded once; the new p uses the unrounded m and v).
extern "C" __global__ void adam_step_bf16(unsigned short* __restrict__ p, const unsigned short* __restrict__ grad, unsigned short* __restrict__ m, unsigned short* __restrict__ v, unsigned short* __restrict__ vmax, long long n, float one_minus_beta1, float beta2, float one_minus_beta2, float eps, float weight_decay, float decay, float step_size, float bias_correction2_sqrt, int amsgrad, int maximize, int adamw)
{
    adam_body<S_BF16>(p, grad, m, v, vmax, n, one_minus_beta1, beta2, one_minus_beta2, eps, weight_decay, decay, step_size, bias_correction2_sqrt, amsgrad, maximize, adamw);
}

// doc: RMSprop step, PyTorch rule: g = maximize ? -grad : grad; if weight_decay != 0: g += weight_decay*p; sq = alpha*sq + one_minus_alpha*g*g; if centered: ga = ga + one_minus_alpha*(g - ga) (lerp), avg = sqrt(sq - ga*ga) + eps, else avg = sqrt(sq) + eps; if momentum > 0: buf = momentum*buf + g/avg, p -= lr*buf, else p -= lr*g/avg. ga / buf may be 0 when centered / momentum is off; one_minus_alpha = 1 - alpha computed by the host in double.
extern "C" __global__ void rmsprop_step(float* __restrict__ p, const float* __restrict__ grad, float* __restrict__ sq, float* __restrict__ buf, float* __restrict__ ga, long long n, float lr, float alpha, float one_minus_alpha, float eps, float weight_decay, float momentum, int centered, int maximize)
{
    const long long stride = (long long)gridDim.x * blockDim.x;
    for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride) {
        const float pv = p[i];
        float g = maximize ? -grad[i] : grad[i];
        if (weight_decay != 0.0f) g = fmaf(weight_decay, pv, g);
        const float s = fmaf(alpha, sq[i], one_minus_alpha * g * g);
        sq[i] = s;
        float avg;
        if (centered) {
            const float a = fmaf(one_minus_alpha, g - ga[i], ga[i]);
            ga[i] = a;
            avg = sqrtf(s - a * a) + eps;
        } else {
            avg = sqrtf(s) + eps;
        }
        if (momentum > 0.0f) {
            const float b = fmaf(momentum, buf[i], g / avg);
            buf[i] = b;
            p[i] = fmaf(-lr, b, pv);
        } else {
            p[i] = fmaf(-lr, g / avg, pv);
        }
    }
}

// doc: Adagrad step, PyTorch rule: g = maximize ? -grad : grad; if weight_decay != 0: g += weight_decay*p; sum += g*g; p -= clr * g / (sqrt(sum) + eps), clr = lr / (1 + (step-1)*lr_decay) computed by the host in double.
extern "C" __global__ void adagrad_step(float* __restrict__ p, const float* __restrict__ grad, float* __restrict__ sum, long long n, float clr, float eps, float weight_decay, int maximize)
{
    const long long stride = (long long)gridDim.x * blockDim.x;
    for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride) {
        const float pv = p[i];
        float g = maximize ? -grad[i] : grad[i];
        if (weight_decay != 0.0f) g = fmaf(weight_decay, pv, g);
        const float s = fmaf(g, g, sum[i]);
        sum[i] = s;
        p[i] = fmaf(-clr, g / (sqrtf(s) + eps), pv);
    }
}

// doc: Adadelta step, PyTorch rule: g = maximize ? -grad : grad; if weight_decay != 0: g += weight_decay*p; sq = rho*sq + one_minus_rho*g*g; delta = sqrt(acc + eps) / sqrt(sq + eps) * g; acc = rho*acc + one_minus_rho*delta*delta; p -= lr*delta. one_minus_rho = 1 - rho computed by the host in double.
extern "C" __global__ void adadelta_step(float* __restrict__ p, const float* __restrict__ grad, float* __restrict__ sq, float* __restrict__ acc, long long n, float lr, float rho, float one_minus_rho, float eps, float weight_decay, int maximize)
{
    const long long stride = (long long)gridDim.x * blockDim.x;
    for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride) {
        const float pv = p[i];
        float g = maximize ? -grad[i] : grad[i];
        if (weight_decay != 0.0f) g = fmaf(weight_decay, pv, g);
        const float s = fmaf(rho, sq[i], one_minus_rho * g * g);
        sq[i] = s;
        const float a = acc[i];
        const float delta = sqrtf(a + eps) / sqrtf(s + eps) * g;
        acc[i] = fmaf(rho, a, one_minus_rho * delta * delta);
        p[i] = fmaf(-lr, delta, pv);
    }
}

// doc: Adamax step, PyTorch rule: g = maximize ? -grad : grad; if weight_decay != 0: g += weight_decay*p; m = m + one_minus_beta1*(g - m) (lerp); u = max(beta2*u, |g| + eps); p -= clr * m / u, clr = lr / (1 - beta1^step) computed by the host in double.
extern "C" __global__ void adamax_step(float* __restrict__ p, const float* __restrict__ grad, float* __restrict__ m, float* __restrict__ u, long long n, float one_minus_beta1, float beta2, float eps, float weight_decay, float clr, int maximize)
{
    const long long stride = (long long)gridDim.x * blockDim.x;
    for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride) {
        const float pv = p[i];
        float g = maximize ? -grad[i] : grad[i];
        if (weight_decay != 0.0f) g = fmaf(weight_decay, pv, g);
        const float mv = fmaf(one_minus_beta1, g - m[i], m[i]);
        m[i] = mv;
        const float uv = fmaxf(beta2 * u[i], fabsf(g) + eps);
        u[i] = uv;
        p[i] = fmaf(-clr, mv / uv, pv);
    }
}

// doc: NAdam step, PyTorch rule: g = maximize ? -grad : grad; decoupled: p *= decay (= 1 - lr*weight_decay), else if weight_decay != 0: g += weight_decay*p; m = m + one_minus_beta1*(g - m) (lerp); v = beta2*v + one_minus_beta2*g*g; denom = sqrt(v / bias_correction2) + eps; p -= coef_g * g / denom; p -= coef_m * m / denom. The host computes in double, from mu_t = beta1*(1 - 0.5*0.96^(t*momentum_decay)) and the running product of mu: coef_g = lr*(1-mu_t)/(1-prod_t), coef_m = lr*mu_{t+1}/(1-prod_t*mu_{t+1}), bias_correction2 = 1 - beta2^t.
extern "C" __global__ void nadam_step(float* __restrict__ p, const float* __restrict__ grad, float* __restrict__ m, float* __restrict__ v, long long n, float one_minus_beta1, float beta2, float one_minus_beta2, float eps, float weight_decay, float decay, float bias_correction2, float coef_g, float coef_m, int maximize, int decoupled)
{
    const long long stride = (long long)gridDim.x * blockDim.x;
    for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride) {
        float pv = p[i];
        float g = maximize ? -grad[i] : grad[i];
        if (decoupled) pv = pv * decay;
        else if (weight_decay != 0.0f) g = fmaf(weight_decay, pv, g);
        const float mv = fmaf(one_minus_beta1, g - m[i], m[i]);
        const float vv = fmaf(beta2, v[i], one_minus_beta2 * g * g);
        m[i] = mv;
        v[i] = vv;
        const float denom = sqrtf(vv / bias_correction2) + eps;
        pv = fmaf(-coef_g, g / denom, pv);
        p[i] = fmaf(-coef_m, mv / denom, pv);
    }
}

// doc: RAdam step, PyTorch rule: g = maximize ? -grad : grad; decoupled: p *= decay (= 1 - lr*weight_decay), else if weight_decay != 0: g += weight_decay*p; m = m + one_minus_beta1*(g - m) (lerp); v = beta2*v + one_minus_beta2*g*g; rectified (rho_t > 5): p -= (m / bias_correction1) * lr * (bias_correction2_sqrt / (sqrt(v) + eps)) * rect, else p -= (m / bias_correction1) * lr. The host computes bias_correction1 = 1 - beta1^t, bias_correction2_sqrt = sqrt(1 - beta2^t), rect and the branch in double.
extern "C" __global__ void radam_step(float* __restrict__ p, const float* __restrict__ grad, float* __restrict__ m, float* __restrict__ v, long long n, float one_minus_beta1, float beta2, float one_minus_beta2, float eps, float weight_decay, float decay, float lr, float bias_correction1, float bias_correction2_sqrt, float rect, int rectified, int maximize, int decoupled)
{
    const long long stride = (long long)gridDim.x * blockDim.x;
    for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride) {
        float pv = p[i];
        float g = maximize ? -grad[i] : grad[i];
        if (decoupled) pv = pv * decay;
        else if (weight_decay != 0.0f) g = fmaf(weight_decay, pv, g);
        const float mv = fmaf(one_minus_beta1, g - m[i], m[i]);
        const float vv = fmaf(beta2, v[i], one_minus_beta2 * g * g);
        m[i] = mv;
        v[i] = vv;
        float upd = mv / bias_correction1 * lr;
        if (rectified) upd = upd * (bias_correction2_sqrt / (sqrtf(vv) + eps)) * rect;
        p[i] = pv - upd;
    }
}

// doc: clip_grad_norm_'s scale of one flat gradient buffer: coef = min(max_norm / (total_norm[0] + 1e-6), 1) in float32 (PyTorch's clamp of max_norm / (total_norm + 1e-6)), g *= coef. total_norm is a device scalar (no trip through the host).
extern "C" __global__ void clip_grad_scale(float* __restrict__ g, const float* __restrict__ total_norm, long long n, float max_norm)
{
    const float coef = fminf(max_norm / (total_norm[0] + 1e-6f), 1.0f);
    const long long stride = (long long)gridDim.x * blockDim.x;
    for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride) g[i] = g[i] * coef;
}

// doc: clip_grad_value_ over one flat gradient buffer: g = min(max(g, -clip_value), clip_value) (NaN stays NaN, as torch.clamp).
extern "C" __global__ void clip_grad_value(float* __restrict__ g, long long n, float clip_value)
{
    const long long stride = (long long)gridDim.x * blockDim.x;
    for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride) {
        const float x = g[i];
        g[i] = x != x ? x : fminf(fmaxf(x, -clip_value), clip_value);
    }
}
