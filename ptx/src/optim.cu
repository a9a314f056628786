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
