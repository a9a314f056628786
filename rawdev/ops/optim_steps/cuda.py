"""The cuda path of the optimizers' steps: the launches of ptx/optim.ptx (ptx/src/optim.cu), with cpu.py's
signatures, and the optimizers' state allocated like the parameters (in one arena when they share one).

A group of parameters whose parameters, gradients and state are laid out alike in one arena each is one launch
(_groups); `one_launch` tells the optimizer so, and `_group_span` is also how clip_grad finds a flat view over a
model's gradients. Both are cuda only (ops/cuda.py imports them by name; they are not in __all__, which is the
contract the cpu backend shares).
"""
import math

from ... import dtypes as _dt
from ...runtime import memory
from ...tensor.core import Tensor
from ..cuda_launch import _SUFFIX, _f32, _kernel, _low, _rdev, full
from ..owners import owner_of
from . import cpu as _cpu
from .cpu import radam_rect, step_on_copies, widen_16bit

__all__ = ["zeros_state", "alloc_states", "sgd_group", "adam_group", "rmsprop_group", "adagrad_group",
           "adadelta_group", "adamax_group", "nadam_group", "radam_group"]


def zeros_state(p, key):
    return full(p.shape, 0.0, p.dtype, p.device, owner=owner_of(p, key), scoped=False)


def _arena_span(params):
    """(buffer, start, end) when all params live in one arena and nothing else is in their span, else None."""
    buf = params[0]._buf
    if any(p._buf is not buf for p in params):
        return None
    parts = getattr(getattr(buf, "block", None), "parts", None)
    if not parts:
        return None
    mine = {(p._offset, p.nbytes) for p in params}
    if len(mine) != len(params):
        return None
    start = min(p._offset for p in params)
    end = max(p._offset + p.nbytes for p in params)
    for off, n, _who in parts:
        if off < end and off + n > start and (off, n) not in mine:
            return None
    return buf, start, end


def alloc_states(params, key):
    """Zeroed state tensors like params; when the params share an arena, the states share one too (same offsets)."""
    span = _arena_span(params)
    if span is None:
        return [zeros_state(p, key) for p in params]
    buf, start, end = span
    rdev = _rdev(params[0])
    arena = memory.DeviceBuffer.alloc(rdev, end, owner=f"{key} of {buf.owner or 'arena'}")
    memory.memset_d8(arena.ptr + start, 0, end - start, rdev.compute_stream)
    out = []
    for p in params:
        arena.tag(p._offset, p.nbytes, owner_of(p, key))
        out.append(Tensor._make_cuda(arena, p._offset, p.shape, p.dtype, p.device))
    return out


def _group_span(params, *lists):
    """(start, end, [base tensors]) when params and each list of tensors are laid out identically in one
    arena each (so the whole group is one contiguous range), else None."""
    span = _arena_span(params)
    if span is None:
        return None
    _, start, end = span
    for ts in lists:
        if ts is None:
            continue
        b = ts[0]._buf
        if any(t._buf is not b or t._offset != p._offset for t, p in zip(ts, params)):
            return None
        if b.nbytes < end:
            return None
    return start, end


def one_launch(params, grads, states):
    """Whether an optimizer step of params is one launch: params, grads and each state list laid out alike in
    one arena each (what _groups fuses). The optimizer steps parameters one by one otherwise, so that a failed
    launch leaves each parameter either updated or untouched. Parameters of different dtypes step apart."""
    if len({t.dtype for ts in (params, grads, *states) for t in ts}) > 1:
        return False
    return _group_span(params, grads, *states) is not None


def _groups(params, *lists):
    """Yield (pointer lists, n) per launch: one launch for the whole group when params, grads and each
    state list are laid out alike in one arena each (the span between them is only theirs), else one per param."""
    span = _group_span(params, *lists)
    if span is not None:
        start, end = span
        yield ([None if ts is None else ts[0]._buf.ptr + start for ts in (params,) + lists],
               (end - start) // params[0].element_size())
        return
    for i, p in enumerate(params):
        yield [None if ts is None else ts[i].data_ptr() for ts in (params,) + lists], p.numel()


def _step_storage(op, params, *lists):
    """The optimizer kernel's suffix for a group: '_f16' / '_bf16' when every parameter, gradient and state is of
    that one 16-bit dtype (the kernel reads and writes them in place, no float32 copies), '' for float32; None
    when the group mixes dtypes (it steps one parameter at a time). Any other mix is the float32 TypeError."""
    ts = [t for ts in (params, *lists) if ts is not None for t in ts]
    if _low(*ts) is not None:
        return _SUFFIX[ts[0].dtype]
    if len(params) > 1 and len({t.dtype for t in ts}) > 1:
        return None
    _f32(op, *ts)
    return ""


def _float64_on_host(n_lists, name):
    """A float64 parameter steps on the host: the optimizer kernels are float32, so its tensors are copied to the
    cpu, stepped there in float64 by the cpu path's same-named step, and copied back (the copies are driver calls
    in the trace like any other)."""
    return step_on_copies(n_lists, lambda p: p.dtype is _dt.float64, lambda t: t.cpu(), on=getattr(_cpu, name))


@_float64_on_host(4, "sgd_group")
def sgd_group(params, grads, bufs, first, lr, momentum, dampening, nesterov, weight_decay, maximize):
    suffix = _step_storage("SGD", params, grads, bufs if momentum else None)
    # one fused launch needs every param at the same stage (all first steps, or none) and of one dtype
    if suffix is None or (momentum and len(set(first)) > 1):
        for i in range(len(params)):
            sgd_group([params[i]], [grads[i]], [bufs[i]] if bufs else None, [first[i]], lr, momentum, dampening,
                      nesterov, weight_decay, maximize)
        return
    k = _kernel(_rdev(params[0]), "sgd_step" + suffix, "SGD.step")
    for (pp, gp, bp), n in _groups(params, grads, bufs if momentum else None):
        if n:
            k.launch(min((n + 255) // 256, 65535), 256,
                     [pp, gp, bp or 0, n, float(lr), float(weight_decay), float(momentum), float(dampening),
                      int(bool(nesterov)), int(bool(maximize)), int(bool(first[0]) if first else 0)])
    for p in params:
        p._bump_version()


@_float64_on_host(6, "adam_group")
def adam_group(params, grads, ms, vs, vmaxs, steps, lr, beta1, beta2, eps, weight_decay, decoupled, amsgrad,
               maximize):
    suffix = _step_storage("Adam", params, grads, ms, vs, vmaxs if amsgrad else None)
    if suffix is None or len(set(steps)) > 1:      # mixed dtypes or different step counts: one launch each
        for i in range(len(params)):
            adam_group([params[i]], [grads[i]], [ms[i]], [vs[i]], [vmaxs[i]] if vmaxs else None, [steps[i]], lr,
                       beta1, beta2, eps, weight_decay, decoupled, amsgrad, maximize)
        return
    k = _kernel(_rdev(params[0]), "adam_step" + suffix, "Adam.step")
    step = steps[0]
    step_size = lr / (1 - beta1 ** step)
    bc2_sqrt = math.sqrt(1 - beta2 ** step)
    for (pp, gp, mp, vp, xp), n in _groups(params, grads, ms, vs, vmaxs if amsgrad else None):
        if n:
            k.launch(min((n + 255) // 256, 65535), 256,
                     [pp, gp, mp, vp, xp or 0, n, 1.0 - beta1, float(beta2), 1.0 - beta2, float(eps),
                      float(weight_decay), 1.0 - lr * weight_decay, float(step_size), float(bc2_sqrt),
                      int(bool(amsgrad)), int(bool(maximize)), int(bool(decoupled))])
    for p in params:
        p._bump_version()


def _launch_groups(kname, op, params, grads, states, args_of, keys=None):
    """One launch of optim kernel kname per arena group (params, grads and each state list laid out alike),
    else one per parameter. keys[i] (e.g. the step count) must agree inside a launch: parameters at different
    keys go one launch each. args_of(key, n) gives the scalars after the pointers and n."""
    _f32(op, *params, *grads)
    rdev = _rdev(params[0])
    k = _kernel(rdev, kname, op)
    if keys is not None and len(set(keys)) > 1:
        for i in range(len(params)):
            _launch_groups(kname, op, [params[i]], [grads[i]], [None if s is None else [s[i]] for s in states],
                           args_of, [keys[i]])
        return
    key = keys[0] if keys else None
    for ptrs, n in _groups(params, grads, *states):
        if n:
            k.launch(min((n + 255) // 256, 65535), 256, [x or 0 for x in ptrs] + [n] + args_of(key, n))
    for p in params:
        p._bump_version()


@_float64_on_host(5, "rmsprop_group")
@widen_16bit(5)
def rmsprop_group(params, grads, sqs, bufs, gas, lr, alpha, eps, weight_decay, momentum, centered, maximize):
    _launch_groups("rmsprop_step", "RMSprop", params, grads,
                   [sqs, bufs if momentum > 0 else None, gas if centered else None],
                   lambda key, n: [float(lr), float(alpha), 1.0 - alpha, float(eps), float(weight_decay),
                                   float(momentum), int(bool(centered)), int(bool(maximize))])


@_float64_on_host(4, "adagrad_group")
@widen_16bit(4)
def adagrad_group(params, grads, sums, steps, lr, lr_decay, eps, weight_decay, maximize):
    _launch_groups("adagrad_step", "Adagrad", params, grads, [sums],
                   lambda step, n: [lr / (1 + (step - 1) * lr_decay), float(eps), float(weight_decay),
                                    int(bool(maximize))], steps)


@_float64_on_host(4, "adadelta_group")
@widen_16bit(4)
def adadelta_group(params, grads, sqs, accs, lr, rho, eps, weight_decay, maximize):
    _launch_groups("adadelta_step", "Adadelta", params, grads, [sqs, accs],
                   lambda key, n: [float(lr), float(rho), 1.0 - rho, float(eps), float(weight_decay),
                                   int(bool(maximize))])


@_float64_on_host(5, "adamax_group")
@widen_16bit(5)
def adamax_group(params, grads, ms, us, steps, lr, beta1, beta2, eps, weight_decay, maximize):
    _launch_groups("adamax_step", "Adamax", params, grads, [ms, us],
                   lambda step, n: [1.0 - beta1, float(beta2), float(eps), float(weight_decay),
                                    lr / (1 - beta1 ** step), int(bool(maximize))], steps)


@_float64_on_host(6, "nadam_group")
@widen_16bit(6)
def nadam_group(params, grads, ms, vs, steps, mu_products, lr, beta1, beta2, eps, weight_decay, momentum_decay,
                decoupled, maximize):
    def args(key, n):
        step, prod = key
        mu = beta1 * (1.0 - 0.5 * 0.96 ** (step * momentum_decay))
        mu_next = beta1 * (1.0 - 0.5 * 0.96 ** ((step + 1) * momentum_decay))
        return [1.0 - beta1, float(beta2), 1.0 - beta2, float(eps), float(weight_decay), 1.0 - lr * weight_decay,
                1 - beta2 ** step, lr * (1.0 - mu) / (1.0 - prod), lr * mu_next / (1.0 - prod * mu_next),
                int(bool(maximize)), int(bool(decoupled and weight_decay))]
    _launch_groups("nadam_step", "NAdam", params, grads, [ms, vs], args, list(zip(steps, mu_products)))


@_float64_on_host(5, "radam_group")
@widen_16bit(5)
def radam_group(params, grads, ms, vs, steps, lr, beta1, beta2, eps, weight_decay, decoupled, maximize):
    def args(step, n):
        rectified, rect = radam_rect(beta2, step)
        return [1.0 - beta1, float(beta2), 1.0 - beta2, float(eps), float(weight_decay), 1.0 - lr * weight_decay,
                float(lr), 1 - beta1 ** step, math.sqrt(1 - beta2 ** step), rect, int(rectified),
                int(bool(maximize)), int(bool(decoupled and weight_decay))]
    _launch_groups("radam_step", "RAdam", params, grads, [ms, vs], args, steps)
