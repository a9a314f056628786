"""The cpu path of every op: numpy, in the tensor's own dtype (float64 for gradient checks).

Each function takes and returns rawdev Tensors (no autograd here). This is also the oracle the cuda
path is tested against. The signatures are the backend contract; rawdev/ops/cuda.py has the same ones.
"""
import math

import numpy as np

from .. import dtypes as _dt
from ..device import CPU
from ..tensor.core import Tensor
from .cpu_values import _vdt, v, wrap  # noqa: F401  (the family folders take them from here too)

NAME = "cpu"


# ------------------------------------------------------------------ creation / copies
def empty(shape, dt, dev=CPU, owner=None):
    return Tensor._make_cpu(np.empty(tuple(shape), dt.storage), dt)


def full(shape, value, dt, dev=CPU, owner=None):
    return wrap(np.full(tuple(shape), value, _vdt(dt)), dt)


def clone(x, owner=None):
    return x._contiguous_copy()


def copy_into(dst, src):
    dst._write(src)


# ------------------------------------------------------------------ elementwise
def add(a, b, alpha=1.0, dt=None):
    """a + alpha*b with broadcasting; dt: result dtype."""
    if alpha == 1:
        r = v(a) + v(b)
    elif alpha == -1:
        r = v(a) - v(b)
    else:   # an integer alpha wraps into an unsigned dtype (uint8: -2 is 254), as PyTorch's
        r = v(a) + v(b) * np.asarray(alpha).astype(_vdt(b.dtype))
    return wrap(r, dt or _dt.from_numpy_dtype(r.dtype))


def add_(a, b, alpha=1.0):
    """In place: a += alpha*b (b broadcast to a)."""
    if a.dtype is _dt.bfloat16:   # combined in float32 values, stored back as bfloat16 bits
        a._write(wrap(v(a) + v(b) * np.float32(alpha), a.dtype))
        return a
    av = a._host_storage()
    if alpha == 1:
        av += v(b).astype(av.dtype, copy=False)
    else:
        av += (v(b) * alpha).astype(av.dtype, copy=False)
    a._bump_version()
    return a


def scale_(x, s):
    if x.dtype is _dt.bfloat16:
        x._write(wrap(v(x) * np.float32(s), x.dtype))
        return x
    xv = x._host_storage()
    xv *= np.asarray(s, xv.dtype)
    x._bump_version()
    return x


def mul(a, b, dt=None):
    r = v(a) * v(b)
    return wrap(r, dt or _dt.from_numpy_dtype(r.dtype))


def div(a, b, dt=None):
    r = v(a) / v(b)
    return wrap(r, dt or _dt.from_numpy_dtype(r.dtype))


def scale(x, s):
    """x * s for a Python scalar s, in x's dtype."""
    xv = v(x)
    return wrap(xv * np.asarray(s, xv.dtype), x.dtype)


def add_scalar(x, s):
    xv = v(x)
    return wrap(xv + np.asarray(s, xv.dtype), x.dtype)


def div_scalar(x, s):
    xv = v(x)
    return wrap(xv / np.asarray(s, xv.dtype), x.dtype)


def rsub_scalar(x, s):
    xv = v(x)
    return wrap(np.asarray(s, xv.dtype) - xv, x.dtype)


def rdiv_scalar(x, s):
    xv = v(x)
    return wrap(np.asarray(s, xv.dtype) / xv, x.dtype)


def neg(x):
    return wrap(-v(x), x.dtype)


def pow_scalar(x, e):
    xv = v(x)
    return wrap(np.power(xv, np.asarray(e, xv.dtype)), x.dtype)


def _erfc_cf(a):
    """erfc(a) for a ≥ 2 by its continued fraction exp(−a²)/√π / (a + (1/2)/(a + 1/(a + (3/2)/(a + …)))),
    40 levels evaluated from the bottom (relative error ~1e-14 over [2, 27])."""
    k = a.copy()
    for n in range(40, 0, -1):
        k = a + (n / 2) / k
    with np.errstate(under="ignore"):
        return np.exp(-a * a) / (math.sqrt(math.pi) * k)


def _erf(x):
    """erf in numpy (it has none), to float64's last bits or so.

    |x| < 2: the Maclaurin series (40 terms reach 1e-17 at |x| = 2); beyond: 1 − erfc, erfc by its continued
    fraction."""
    z = np.asarray(x, np.float64)
    a = np.abs(z)
    small = np.minimum(a, 2.0)
    z2, term, acc = small * small, small.copy(), small.copy()
    for n in range(1, 40):
        term = term * (-z2) / n
        acc = acc + term / (2 * n + 1)
    series = acc * (2.0 / math.sqrt(math.pi))
    tail = 1.0 - _erfc_cf(np.maximum(a, 2.0))
    r = np.where(a < 2.0, series, tail) * np.sign(z)
    return r.astype(np.result_type(x), copy=False)


def _gelu_tanh(x):
    k0, k1 = np.asarray(math.sqrt(2.0 / math.pi), x.dtype), np.asarray(0.044715, x.dtype)
    return 0.5 * x * (1 + np.tanh(k0 * (x + k1 * x * x * x)))


# ------------------------------------------------------------------ comparisons and casts
_CMP = {"eq": np.equal, "ne": np.not_equal, "lt": np.less, "le": np.less_equal, "gt": np.greater,
        "ge": np.greater_equal,
        "same": lambda a, b: np.equal(a, b) | (np.isnan(a) & np.isnan(b))}   # eq, or both NaN


def compare(a, b, op):
    """Bool tensor a <op> b; b is a tensor of a's dtype (broadcast) or a Python scalar (compared in a's
    dtype: numpy's weak scalars, as PyTorch's wrapped numbers)."""
    bv = v(b) if isinstance(b, Tensor) else b
    with np.errstate(invalid="ignore"):
        return wrap(_CMP[op](v(a), bv), _dt.bool)


def cast(x, dt):
    """x's values in dtype dt (what Tensor.to(dtype) does on the cpu)."""
    return Tensor._make_cpu(_dt.convert_storage(x._host_storage(), x.dtype, dt), dt)


def _checked_index(idx, size):
    i = v(idx)
    bad = (i < -size) | (i >= size)
    if bad.any():
        raise IndexError(f"index {int(i[bad][0])} is out of bounds for dimension with size {size}")
    return np.where(i < 0, i + size, i)


def index_select(x, outer, size, inner, idx):
    """x viewed as [outer, size, inner] -> [outer, len(idx), inner]."""
    return wrap(np.take(v(x).reshape(outer, size, inner), _checked_index(idx, size), axis=1), x.dtype)


def index_copy_(dst, outer, size, inner, idx, src):
    d = dst._host_storage().reshape(outer, size, inner)
    d[:, _checked_index(idx, size), :] = src._host_storage().reshape(outer, -1, inner)
    dst._bump_version()
    return dst


def index_add_(dst, outer, size, inner, idx, src):
    if dst.dtype is _dt.bfloat16:
        vals = v(dst).reshape(outer, size, inner).copy()
        np.add.at(vals, (slice(None), _checked_index(idx, size), slice(None)),
                  np.asarray(v(src), vals.dtype).reshape(outer, -1, inner))
        dst._write(wrap(vals.reshape(tuple(dst.shape)), dst.dtype))
        return dst
    d = dst._host_storage().reshape(outer, size, inner)
    np.add.at(d, (slice(None), _checked_index(idx, size), slice(None)), v(src).reshape(outer, -1, inner))
    dst._bump_version()
    return dst


def sum_dims(x, dims, keepdim=False, dt=None):
    xv = v(x)
    r = np.sum(xv, axis=tuple(dims), keepdims=keepdim, dtype=xv.dtype if dt is None else _vdt(dt))
    return wrap(r, dt or x.dtype)


def arg_reduce(x, outer, red, inner, is_max, values=True):
    """max/min over axis 1 of x viewed as [outer, red, inner] -> (values or None, int64 indices), both flat
    [outer*inner]. numpy's argmax/argmin already have PyTorch's semantics: first index on ties, NaN wins."""
    xv = v(x).reshape(outer, red, inner)
    idx = (np.argmax if is_max else np.argmin)(xv, axis=1)
    vals = wrap(np.take_along_axis(xv, idx[:, None, :], 1).reshape(-1), x.dtype) if values else None
    return vals, wrap(idx.reshape(-1).astype(np.int64), _dt.int64)


def arg_reduce_bwd(g, idx, outer, red, inner):
    """Gradient of arg_reduce's values: g[o] lands at x[p, idx[o], q], zero elsewhere (flat [outer*red*inner])."""
    gx = np.zeros((outer, red, inner), v(g).dtype)
    np.put_along_axis(gx, v(idx).reshape(outer, 1, inner), v(g).reshape(outer, 1, inner), 1)
    return wrap(gx.reshape(-1), g.dtype)


def expand(x, shape):
    return wrap(np.broadcast_to(v(x), tuple(shape)), x.dtype)


# ------------------------------------------------------------------ matrix products
def gemm(a, b, ta=False, tb=False, bias=None, act=0, alpha=1.0):
    """op(a)[M,K] · op(b)[K,N] (* alpha) (+ bias[N]) then act (0 none, 1 relu, 2 gelu-tanh); 2-D only."""
    av, bv = v(a), v(b)
    r = (av.T if ta else av) @ (bv.T if tb else bv)
    if alpha != 1:
        r = r * np.asarray(alpha, r.dtype)
    if bias is not None:
        r = r + v(bias)
    if act == 1:
        r = np.maximum(r, 0)
    elif act == 2:
        r = _gelu_tanh(r)
    return wrap(r, a.dtype)


def matmul(a, b):
    """numpy matmul semantics (batched, broadcast, 1-D promotion)."""
    r = np.matmul(v(a), v(b))
    return wrap(r, a.dtype)


# ------------------------------------------------------------------ softmax family
def softmax(x, dim, log=False):
    xv = v(x)
    m = np.max(xv, axis=dim, keepdims=True)
    z = xv - m
    if log:
        r = z - np.log(np.sum(np.exp(z), axis=dim, keepdims=True))
    else:
        e = np.exp(z)
        r = e / np.sum(e, axis=dim, keepdims=True)
    return wrap(r, x.dtype)


def softmax_bwd(gy, y, dim, log=False):
    g, yv = v(gy), v(y)
    if log:
        r = g - np.exp(yv) * np.sum(g, axis=dim, keepdims=True)
    else:
        r = yv * (g - np.sum(g * yv, axis=dim, keepdims=True))
    return wrap(r, gy.dtype)


# ------------------------------------------------------------------ losses
def _ce_weights(target, n_cls, weight, ignore_index, dtp):
    t = v(target).astype(np.int64)
    valid = t != ignore_index
    if np.any((t[valid] < 0) | (t[valid] >= n_cls)):
        bad = t[valid][(t[valid] < 0) | (t[valid] >= n_cls)][0]
        raise IndexError(f"Target {bad} is out of bounds.")
    ts = np.where(valid, t, 0)
    w = (v(weight)[ts] if weight is not None else np.ones(t.shape, dtp)) * valid
    return ts, w.astype(dtp), valid


def cross_entropy(logits, target, weight, ignore_index, reduction, smoothing):
    """logits [N, C], target [N] class indices. Returns (loss, logp) with PyTorch's semantics."""
    logp = v(softmax(logits, 1, log=True))
    dtp = logp.dtype
    n, c = logp.shape
    ts, w, valid = _ce_weights(target, c, weight, ignore_index, dtp)
    nll = -logp[np.arange(n), ts] * w
    if smoothing:
        wc = v(weight) if weight is not None else np.ones(c, dtp)
        smooth = -(logp * wc).sum(1) * valid
        per = (1 - smoothing) * nll + (smoothing / c) * smooth
    else:
        per = nll
    if reduction == "none":
        r = per
    elif reduction == "sum":
        r = per.sum()
    else:
        with np.errstate(invalid="ignore", divide="ignore"):   # every target ignored: nan, silently (PyTorch)
            r = per.sum() / w.sum()
    return wrap(np.asarray(r, dtp), logits.dtype), (wrap(logp, logits.dtype),)


def cross_entropy_bwd(gy, saved, target, weight, ignore_index, reduction, smoothing):
    lp = v(saved[0])
    dtp = lp.dtype
    n, c = lp.shape
    ts, w, valid = _ce_weights(target, c, weight, ignore_index, dtp)
    g = v(gy)
    if reduction == "none":
        gs = g.reshape(n)
    elif reduction == "sum":
        gs = np.full(n, g.reshape(()), dtp)
    else:
        # Every target ignored: the loss is nan but each row's weight is 0, so its gradient is 0 (as
        # PyTorch's): 0 * (g / 0) would make it nan.
        total = w.sum()
        gs = np.full(n, g.reshape(()) / total if total != 0 else 0, dtp)
    p = np.exp(lp)
    onehot = np.zeros_like(lp)
    onehot[np.arange(n), ts] = 1
    # d(nll_i)/dz = w_i (p - onehot); d(smooth_i)/dz = valid_i (sum(wc) p - wc)
    grad = (1 - smoothing) * (w[:, None] * (p - onehot))
    if smoothing:
        wc = v(weight) if weight is not None else np.ones(c, dtp)
        grad = grad + (smoothing / c) * (valid[:, None] * (wc.sum() * p - wc[None, :]))
    return wrap(grad * gs[:, None], gy.dtype)


# ------------------------------------------------------------------ dropout
def dropout(x, p, generator):
    """(y, mask): mask = keep/(1-p) drawn from rawdev's host generator; y = x*mask."""
    dtp = _vdt(x.dtype)
    keep = generator.np.random(tuple(x.shape)) >= p
    mask = keep.astype(dtp) / np.asarray(1 - p, dtp)
    return wrap(v(x) * mask, x.dtype), wrap(mask, x.dtype)


def dropout_bwd(g, mask, p):
    return wrap(v(g) * v(mask), g.dtype)


# ------------------------------------------------------------------ optimizers (one tensor at a time)
def sgd_step(p, g, buf, lr, momentum, dampening, nesterov, weight_decay, maximize, first):
    """PyTorch's SGD for one parameter, in place. buf: momentum buffer (or None)."""
    pv, gv = p._host_storage(), v(g)
    d = -gv if maximize else gv
    if weight_decay:
        d = d + weight_decay * pv
    if momentum:
        bv = buf._host_storage()
        if first:
            bv[...] = d
        else:
            bv *= momentum
            bv += (1 - dampening) * d
        d = d + momentum * bv if nesterov else bv
    pv -= (lr * d).astype(pv.dtype, copy=False)
    p._bump_version()


def adam_step(p, g, m, s, smax, lr, beta1, beta2, eps, weight_decay, decoupled, amsgrad, maximize, step):
    """PyTorch's Adam / AdamW (decoupled) for one parameter, in place (m: exp_avg, s: exp_avg_sq)."""
    pv, gv = p._host_storage(), v(g)
    dtp = pv.dtype
    gv = -gv if maximize else gv
    if weight_decay:
        if decoupled:
            pv *= dtp.type(1 - lr * weight_decay)
        else:
            gv = gv + weight_decay * pv
    mv, sv = m._host_storage(), s._host_storage()
    mv += (gv - mv) * dtp.type(1 - beta1)          # lerp, as PyTorch's exp_avg.lerp_(grad, 1 - beta1)
    sv *= dtp.type(beta2)
    sv += dtp.type(1 - beta2) * gv * gv
    bc1 = 1 - beta1 ** step
    bc2 = 1 - beta2 ** step
    step_size = lr / bc1
    bc2_sqrt = math.sqrt(bc2)
    if amsgrad:
        xv = smax._host_storage()
        np.maximum(xv, sv, out=xv)
        denom = np.sqrt(xv) / dtp.type(bc2_sqrt) + dtp.type(eps)
    else:
        denom = np.sqrt(sv) / dtp.type(bc2_sqrt) + dtp.type(eps)
    pv -= (dtp.type(step_size) * mv / denom).astype(dtp, copy=False)
    p._bump_version()


def zeros_state(p, key):
    return Tensor._make_cpu(np.zeros(tuple(p.shape), p.dtype.storage), p.dtype)


def alloc_states(params, key):
    """Zeroed optimizer state tensors like params (key: "exp_avg", "momentum_buffer", ...)."""
    return [zeros_state(p, key) for p in params]


def _half_step(step, p, g, states, *args):
    """step(p, g, *states, *args) for a float16/bfloat16 parameter as the cuda `_f16`/`_bf16` kernels compute it:
    the float32 step on float32 copies of p, g and the states (of p's dtype), each updated value rounded once back
    into its 16-bit storage. A float32 or float64 parameter steps in its own dtype."""
    if p.dtype not in (_dt.float16, _dt.bfloat16):
        return step(p, g, *states, *args)
    wide = [None if t is None else Tensor._make_cpu(np.array(v(t), dtype=np.float32), _dt.float32)
            for t in (p, *states)]
    step(wide[0], Tensor._make_cpu(np.array(v(g), dtype=np.float32), _dt.float32), *wide[1:], *args)
    for t, w in zip((p, *states), wide):
        if t is not None:
            t._host_storage()[...] = _dt.to_storage(w._host_storage(), t.dtype)
            t._bump_version()


def sgd_group(params, grads, bufs, first, lr, momentum, dampening, nesterov, weight_decay, maximize):
    for i, (p, g) in enumerate(zip(params, grads)):
        _half_step(sgd_step, p, g, [bufs[i] if bufs else None], lr, momentum, dampening, nesterov, weight_decay,
                   maximize, first[i])


def adam_group(params, grads, ms, vs, vmaxs, steps, lr, beta1, beta2, eps, weight_decay, decoupled, amsgrad,
               maximize):
    for i, (p, g) in enumerate(zip(params, grads)):
        _half_step(adam_step, p, g, [ms[i], vs[i], vmaxs[i] if vmaxs else None], lr, beta1, beta2, eps,
                   weight_decay, decoupled, amsgrad, maximize, steps[i])


def _opt_grad(p, g, weight_decay, maximize, decoupled=False, lr=0.0):
    """(param storage, the gradient PyTorch's step uses) after maximize and (coupled or decoupled) weight decay."""
    pv, gv = p._host_storage(), v(g)
    gv = -gv if maximize else gv
    if weight_decay:
        if decoupled:
            pv *= pv.dtype.type(1 - lr * weight_decay)
        else:
            gv = gv + weight_decay * pv
    return pv, gv


def rmsprop_group(params, grads, sqs, bufs, gas, lr, alpha, eps, weight_decay, momentum, centered, maximize):
    """PyTorch's RMSprop per parameter (square_avg, momentum_buffer, grad_avg), in place."""
    for i, (p, g) in enumerate(zip(params, grads)):
        pv, gv = _opt_grad(p, g, weight_decay, maximize)
        t = pv.dtype.type
        sv = sqs[i]._host_storage()
        sv *= t(alpha)
        sv += t(1 - alpha) * gv * gv
        if centered:
            av = gas[i]._host_storage()
            av += (gv - av) * t(1 - alpha)
            avg = np.sqrt(sv - av * av) + t(eps)
        else:
            avg = np.sqrt(sv) + t(eps)
        if momentum > 0:
            bv = bufs[i]._host_storage()
            bv *= t(momentum)
            bv += gv / avg
            pv -= (t(lr) * bv).astype(pv.dtype, copy=False)
        else:
            pv -= (t(lr) * (gv / avg)).astype(pv.dtype, copy=False)
        p._bump_version()


def adagrad_group(params, grads, sums, steps, lr, lr_decay, eps, weight_decay, maximize):
    """PyTorch's Adagrad per parameter (sum), in place; clr = lr / (1 + (step - 1) * lr_decay)."""
    for i, (p, g) in enumerate(zip(params, grads)):
        pv, gv = _opt_grad(p, g, weight_decay, maximize)
        t = pv.dtype.type
        clr = lr / (1 + (steps[i] - 1) * lr_decay)
        sv = sums[i]._host_storage()
        sv += gv * gv
        pv -= (t(clr) * (gv / (np.sqrt(sv) + t(eps)))).astype(pv.dtype, copy=False)
        p._bump_version()


def adadelta_group(params, grads, sqs, accs, lr, rho, eps, weight_decay, maximize):
    """PyTorch's Adadelta per parameter (square_avg, acc_delta), in place."""
    for i, (p, g) in enumerate(zip(params, grads)):
        pv, gv = _opt_grad(p, g, weight_decay, maximize)
        t = pv.dtype.type
        sv, av = sqs[i]._host_storage(), accs[i]._host_storage()
        sv *= t(rho)
        sv += t(1 - rho) * gv * gv
        delta = np.sqrt(av + t(eps)) / np.sqrt(sv + t(eps)) * gv
        av *= t(rho)
        av += t(1 - rho) * delta * delta
        pv -= (t(lr) * delta).astype(pv.dtype, copy=False)
        p._bump_version()


def adamax_group(params, grads, ms, us, steps, lr, beta1, beta2, eps, weight_decay, maximize):
    """PyTorch's Adamax per parameter (exp_avg, exp_inf), in place."""
    for i, (p, g) in enumerate(zip(params, grads)):
        pv, gv = _opt_grad(p, g, weight_decay, maximize)
        t = pv.dtype.type
        mv, uv = ms[i]._host_storage(), us[i]._host_storage()
        mv += (gv - mv) * t(1 - beta1)
        np.maximum(uv * t(beta2), np.abs(gv) + t(eps), out=uv)
        clr = lr / (1 - beta1 ** steps[i])
        pv -= (t(clr) * (mv / uv)).astype(pv.dtype, copy=False)
        p._bump_version()


def nadam_group(params, grads, ms, vs, steps, mu_products, lr, beta1, beta2, eps, weight_decay, momentum_decay,
                decoupled, maximize):
    """PyTorch's NAdam per parameter (exp_avg, exp_avg_sq); mu_products[i] is the product of mu up to this step."""
    for i, (p, g) in enumerate(zip(params, grads)):
        pv, gv = _opt_grad(p, g, weight_decay, maximize, decoupled, lr)
        t = pv.dtype.type
        step = steps[i]
        mu = beta1 * (1.0 - 0.5 * 0.96 ** (step * momentum_decay))
        mu_next = beta1 * (1.0 - 0.5 * 0.96 ** ((step + 1) * momentum_decay))
        prod = mu_products[i]
        mv, sv = ms[i]._host_storage(), vs[i]._host_storage()
        mv += (gv - mv) * t(1 - beta1)
        sv *= t(beta2)
        sv += t(1 - beta2) * gv * gv
        denom = np.sqrt(sv / t(1 - beta2 ** step)) + t(eps)
        pv += (t(-lr * (1.0 - mu) / (1.0 - prod)) * (gv / denom)).astype(pv.dtype, copy=False)
        pv += (t(-lr * mu_next / (1.0 - prod * mu_next)) * (mv / denom)).astype(pv.dtype, copy=False)
        p._bump_version()


def radam_rect(beta2, step):
    """(rho_t > 5, rect) of RAdam at this step (PyTorch's variance rectification), in double."""
    bc2 = 1 - beta2 ** step
    rho_inf = 2 / (1 - beta2) - 1
    rho_t = rho_inf - 2 * step * (beta2 ** step) / bc2
    if rho_t > 5.0:
        return True, ((rho_t - 4) * (rho_t - 2) * rho_inf / ((rho_inf - 4) * (rho_inf - 2) * rho_t)) ** 0.5
    return False, 1.0


def radam_group(params, grads, ms, vs, steps, lr, beta1, beta2, eps, weight_decay, decoupled, maximize):
    """PyTorch's RAdam per parameter (exp_avg, exp_avg_sq), in place."""
    for i, (p, g) in enumerate(zip(params, grads)):
        pv, gv = _opt_grad(p, g, weight_decay, maximize, decoupled, lr)
        t = pv.dtype.type
        step = steps[i]
        mv, sv = ms[i]._host_storage(), vs[i]._host_storage()
        mv += (gv - mv) * t(1 - beta1)
        sv *= t(beta2)
        sv += t(1 - beta2) * gv * gv
        upd = mv / t(1 - beta1 ** step) * t(lr)
        rectified, rect = radam_rect(beta2, step)
        if rectified:
            upd = upd * (t(math.sqrt(1 - beta2 ** step)) / (np.sqrt(sv) + t(eps))) * t(rect)
        pv -= upd.astype(pv.dtype, copy=False)
        p._bump_version()


from .select.cpu import *  # noqa: F401,F403,E402  (where, masked_fill, clamp, maximum/minimum)
from .normalization.cpu import *  # noqa: F401,F403,E402  (layer_norm, rms_norm, group_norm, batch_norm)
from .conv.cpu import *  # noqa: F401,F403,E402  (convolution, pooling)
from .gather_scatter.cpu import *  # noqa: F401,F403,E402  (gather, scatter)
from .resample.cpu import *  # noqa: F401,F403,E402  (interpolate)
from .embedding_bag.cpu import *  # noqa: F401,F403,E402  (embedding_bag)
from .rnn.cpu import *  # noqa: F401,F403,E402  (the recurrent cells)
from .cpu_math import *  # noqa: F401,F403,E402  (binary math, logical, classify)
