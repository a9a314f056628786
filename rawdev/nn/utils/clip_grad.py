"""clip_grad_norm_ and clip_grad_value_ with PyTorch's semantics.

On cuda the gradients of parameters that share an arena lie in one grad arena at the same offsets. The norm is
computed with the existing elementwise/reduce kernels, one partial reduction per gradient (the arena's alignment
gaps between gradients hold no gradient, so the arena is not reduced as one range), the partials combined on the
device; the scale is one `clip_grad_scale` launch per arena over its whole range (gaps included, harmlessly),
reading the total norm from device memory (no trip through the host unless error_if_nonfinite asks for one).
clip_grad_value_ is one `clip_grad_value` launch per arena.
"""
import math

import numpy as np

from ...autograd.grad_mode import no_grad
from ...tensor.core import Tensor

__all__ = ["clip_grad_norm_", "clip_grad_norm", "clip_grad_value_", "get_total_norm", "clip_grads_with_norm_"]


def _grads(parameters):
    if isinstance(parameters, Tensor):
        parameters = [parameters]
    return [p.grad for p in parameters if p.grad is not None]


def _flat_groups(grads):
    """Per device: [(flat 1-D tensor covering one launch's range, [grads in it])]. On cuda a set of grads laid out
    back to back in one arena is one flat view over the arena; anything else is one flat view per grad."""
    from ...ops import cuda as C
    from ...tensor.size import Size
    by_dev = {}
    for g in grads:
        by_dev.setdefault(g.device, []).append(g)
    out = {}
    for dev, gs in by_dev.items():
        if dev.type == "cuda" and all(g.is_contiguous() for g in gs):
            by_buf = {}
            for g in gs:
                by_buf.setdefault((id(g._buf), g.dtype), []).append(g)
            parts = []
            for group in by_buf.values():
                span = C._group_span(group)
                if span is not None and len(group) > 1:
                    start, end = span
                    flat = Tensor._make_cuda(group[0]._buf, start, Size(((end - start) // group[0].element_size(),)),
                                             group[0].dtype, dev)
                    parts.append((flat, group))
                else:
                    parts.extend((g.reshape(-1), [g]) for g in group)
            out[dev] = parts
        else:
            out[dev] = [(g.reshape(-1), [g]) for g in gs]
    return out


def _partial(flat, p):
    """The part of the p-norm a flat range contributes: sum |x|^p, or max/min |x| for ±inf, count for 0."""
    if p == math.inf:
        return flat.abs().max()
    if p == -math.inf:
        return flat.abs().min()
    if p == 0:
        return (flat != 0).float().sum() if flat.dtype.itemsize <= 4 else (flat != 0).double().sum()
    if p == 1:
        return flat.abs().sum()
    if p == 2:
        return (flat * flat).sum()
    return (flat.abs() ** p).sum()


def _combine(parts, p, device, dtype):
    """The p-norm from the parts (on `device`): one small vector, one reduction."""
    from ...tensor.factory import empty
    if len(parts) == 1:
        acc = parts[0]
    else:
        acc = empty(len(parts), dtype=dtype, device=device)
        for i, t in enumerate(parts):
            acc.narrow(0, i, 1).copy_(t.to(device=device, dtype=dtype).reshape(1))
        acc = acc.max() if p == math.inf else acc.min() if p == -math.inf else acc.sum()
    if p in (math.inf, -math.inf, 0, 1):
        return acc
    return acc.sqrt() if p == 2 else acc ** (1.0 / p)


def _total_norm(groups, p):
    devs = list(groups)
    first = devs[0]
    dtype = groups[first][0][0].dtype
    parts = [_partial(g.reshape(-1), p) for dev in devs for _, members in groups[dev] for g in members]
    return _combine(parts, p, first, dtype)


def get_total_norm(tensors, norm_type=2.0, error_if_nonfinite=False, foreach=None):
    """The norm of the norms of `tensors` (usually gradients): a 0-d tensor on the first tensor's device.

    Args:
        tensors: a tensor or an iterable of tensors.
        norm_type: p of the p-norm (inf for the largest magnitude).
        error_if_nonfinite: raise when the total is nan or inf.
    """
    from ...tensor.factory import tensor
    tensors = [tensors] if isinstance(tensors, Tensor) else list(tensors)
    norm_type = float(norm_type)
    if len(tensors) == 0:
        return tensor(0.0)
    with no_grad():
        total = _total_norm(_flat_groups(tensors), norm_type)
    if error_if_nonfinite and not math.isfinite(total.item()):
        raise RuntimeError(f"The total norm of order {norm_type} for gradients from `parameters` is non-finite, "
                           "so it cannot be clipped. To disable this error and scale the gradients by the "
                           "non-finite norm anyway, set `error_if_nonfinite=False`")
    return total


def clip_grads_with_norm_(parameters, max_norm, total_norm, foreach=None):
    """Scale the gradients of `parameters` in place by min(max_norm / (total_norm + 1e-6), 1), the total norm
    given (get_total_norm's): clip_grad_norm_ in two steps, so the norm can be reduced across processes first."""
    from ...ops import cuda as C
    max_norm = float(max_norm)
    grads = _grads(parameters)
    if len(grads) == 0:
        return
    with no_grad():
        for dev, parts in _flat_groups(grads).items():
            if dev.type == "cuda":
                C._f32("clip_grad_norm_", *grads)
                t = total_norm.to(device=dev).contiguous()
                k = C._kernel(C._rdev(dev), "clip_grad_scale", "clip_grad_norm_")
                for flat, members in parts:
                    n = flat.numel()
                    if n:
                        k.launch(min((n + 255) // 256, 65535), 256, [flat.data_ptr(), t.data_ptr(), n, max_norm])
                    for g in members:
                        g._bump_version()
            else:
                tn = total_norm.to(device=dev)
                for _, members in parts:
                    for g in members:
                        gv = g._host_storage() if g.is_contiguous() else None
                        coef = np.asarray(max_norm, dtype=np.asarray(tn).dtype) / (np.asarray(tn) + 1e-6)
                        coef = np.minimum(coef, 1.0).astype(np.asarray(tn).dtype)
                        if gv is not None:
                            with np.errstate(invalid="ignore"):     # inf * 0 -> nan, as PyTorch
                                gv *= coef.astype(gv.dtype)
                            g._bump_version()
                        else:
                            g.mul_(float(coef))


def clip_grad_norm_(parameters, max_norm, norm_type=2.0, error_if_nonfinite=False, foreach=None):
    """Scale the gradients in place so that their joint norm is at most max_norm; returns the total norm
    (a 0-d tensor on the first gradient's device) before clipping."""
    from ...tensor.factory import tensor
    parameters = [parameters] if isinstance(parameters, Tensor) else list(parameters)
    grads = _grads(parameters)
    if len(grads) == 0:
        return tensor(0.0)
    sharded = [p for p in parameters if hasattr(type(p), "_clip_grad_norm_sharded")]
    if sharded:    # DTensor parameters: the norm is reduced over the mesh (rawdev.distributed.tensor does it)
        return type(sharded[0])._clip_grad_norm_sharded(parameters, max_norm, norm_type, error_if_nonfinite)
    total = get_total_norm(grads, norm_type, error_if_nonfinite)
    clip_grads_with_norm_(parameters, max_norm, total)
    return total


def clip_grad_norm(parameters, max_norm, norm_type=2.0, error_if_nonfinite=False, foreach=None):
    """Deprecated alias of clip_grad_norm_ (as in PyTorch)."""
    import warnings
    warnings.warn("`torch.nn.utils.clip_grad_norm` is now deprecated in favor of `torch.nn.utils.clip_grad_norm_`.",
                  FutureWarning, stacklevel=2)
    return clip_grad_norm_(parameters, max_norm, norm_type, error_if_nonfinite, foreach)


def clip_grad_value_(parameters, clip_value, foreach=None):
    """Clamp every gradient in place to [-clip_value, clip_value]."""
    from ...ops import cuda as C
    clip_value = float(clip_value)
    grads = _grads(parameters)
    if not grads:
        return
    with no_grad():
        for dev, parts in _flat_groups(grads).items():
            if dev.type == "cuda":
                C._f32("clip_grad_value_", *grads)
                k = C._kernel(C._rdev(dev), "clip_grad_value", "clip_grad_value_")
                for flat, members in parts:
                    n = flat.numel()
                    if n:
                        k.launch(min((n + 255) // 256, 65535), 256, [flat.data_ptr(), n, clip_value])
                    for g in members:
                        g._bump_version()
            else:
                for _, members in parts:
                    for g in members:
                        if g.is_contiguous():
                            gv = g._host_storage()
                            np.clip(gv, -clip_value, clip_value, out=gv)
                            g._bump_version()
                        else:
                            from ...tensor.factory import from_numpy
                            g.copy_(from_numpy(np.clip(np.asarray(g), -clip_value, clip_value)))
