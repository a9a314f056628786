"""The cpu path of the optimizers' steps (numpy, in place, in the parameter's dtype; float16/bfloat16 SGD and
Adam step in float32 and round once, as the cuda kernels do): the signatures of cuda.py beside it.

The `*_group` functions step one parameter at a time; sgd_step and adam_step are the one-parameter steps that
sgd_group and adam_group run through _half_step, and radam_rect is RAdam's rectification, which cuda.py's
radam_group computes on the host too.
"""
import functools
import math

import numpy as np

from ... import dtypes as _dt
from ...tensor.core import Tensor
from ..cpu_values import v

__all__ = ["zeros_state", "alloc_states", "sgd_group", "adam_group", "rmsprop_group", "adagrad_group",
           "adadelta_group", "adamax_group", "nadam_group", "radam_group"]


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


def step_on_copies(n_lists, which, copy, on=None):
    """A group step (its first n_lists positional arguments per-parameter lists: params, grads, the state lists and
    per-parameter keys such as step counts; a list may be None) in which each parameter p with which(p) steps alone,
    on copy(t) of its tensors, through `on` (default: the step itself), and then the parameter and each state tensor
    (not the gradient, which is only read) take the copies' new values (cast into their own dtype and storage)."""
    def wrap(step):
        run_copies = on or step

        @functools.wraps(step)
        def run(*args, **kwargs):
            params = args[0]
            if not any(which(p) for p in params):
                return step(*args, **kwargs)
            lists, rest = args[:n_lists], args[n_lists:]
            for i, p in enumerate(params):
                one = [None if lst is None else [lst[i]] for lst in lists]
                if not which(p):
                    step(*one, *rest, **kwargs)
                    continue
                copies = [None if lst is None else [copy(t) if isinstance(t, Tensor) else t for t in lst]
                          for lst in one]
                run_copies(*copies, *rest, **kwargs)
                for k, (lst, c) in enumerate(zip(one, copies)):
                    if k != 1 and lst is not None and isinstance(lst[0], Tensor):
                        lst[0]._write(c[0])
        return run
    return wrap


def widen_16bit(n_lists):
    """step_on_copies for float16/bfloat16 parameters, as SGD's and Adam's 16-bit kernels step them: the float32
    update on float32 copies of the parameter, its gradient and its state (of the parameter's dtype, as PyTorch's
    zeros_like(param)), every updated value rounded once back into its 16-bit storage. Serves both backends (cuda.py
    beside this file), whose float32 steps it runs."""
    return step_on_copies(n_lists, lambda p: p.dtype in _HALF, lambda t: t.to(dtype=_dt.float32))


_HALF = (_dt.float16, _dt.bfloat16)


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


@widen_16bit(5)
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


@widen_16bit(4)
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


@widen_16bit(4)
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


@widen_16bit(5)
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


@widen_16bit(6)
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


@widen_16bit(5)
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
