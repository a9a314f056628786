"""Creation ops that build on tensors: tril/triu (and in place), meshgrid, logspace and the Tensor.new_*
methods, declared once each. (The plain factories — zeros, full, arange, linspace, eye, ... — live in
rawdev/tensor/factory.py.)

tril/triu on cuda are one tri_mask launch (ptx/src/random.cu) per call, any dtype (zero bits are zero in
every dtype); their backward is the same mask on the gradient.
"""
import math
import operator

import numpy as np

from .. import dtypes as _dt
from ..autograd.function import Function
from ..autograd.grad_mode import is_grad_enabled
from ..tensor import factory as _f
from ..tensor.core import Tensor
from .registry import declare
from .shape import expand, reshape

__all__ = ["tril", "triu", "meshgrid", "logspace"]


# ------------------------------------------------------------------ tril / triu
def _tri(x, k, lower):
    """x with the elements outside the triangle zeroed (a new contiguous tensor)."""
    if x.device.type == "cpu":
        v = x._host_storage()
        out = np.tril(v, k) if lower else np.triu(v, k)
        return Tensor._make_cpu(np.ascontiguousarray(out), x.dtype)
    from ..runtime import kernels
    from ..tensor.cuda_io import runtime_device
    from . import cuda
    src = cuda.dense(x)
    out = cuda.empty(x.shape, x.dtype, x.device, "tril output" if lower else "triu output")
    n = x.numel()
    if n:
        rdev = runtime_device(x.device)
        R, C = x.shape[-2], x.shape[-1]
        kernels.get_kernel(rdev, f"tri_mask_b{x.itemsize}").launch(
            min((n + 255) // 256, 65535), 256, [out.data_ptr(), src.data_ptr(), n, R, C, int(k), int(bool(lower))],
            stream=rdev.compute_stream)
    return out


class _Tri(Function):
    @staticmethod
    def forward(ctx, x, k, lower):
        ctx.k, ctx.lower = k, lower
        return _tri(x, k, lower)

    @staticmethod
    def backward(ctx, g):
        return _tri(g, ctx.k, ctx.lower), None, None


def _tri_op(name, lower):
    def op(input, diagonal=0, *, out=None):  # noqa: A002
        if input.ndim < 2:
            raise RuntimeError(f"{name}: input tensor must have at least 2 dimensions")
        k = operator.index(diagonal)
        if is_grad_enabled() and input.requires_grad:
            y = _Tri.apply(input, k, lower)
            y.grad_fn.rename(f"{name.capitalize()}Backward0")
            return y
        return _tri(input, k, lower)
    op.__name__ = op.__qualname__ = name
    op.__doc__ = (f"The {'lower' if lower else 'upper'} triangle of the last two dims (diagonal=k keeps "
                  f"{'c - r <= k' if lower else 'c - r >= k'}), the rest zero.")
    return op


tril = _tri_op("tril", True)
triu = _tri_op("triu", False)


# ------------------------------------------------------------------ meshgrid (views)
def meshgrid(*tensors, indexing=None):
    """Coordinate grids as expanded views of the 1-D inputs: indexing='ij' (matrix, the default) or 'xy'
    (Cartesian: the first two output dims swapped)."""
    if len(tensors) == 1 and isinstance(tensors[0], (list, tuple)):
        tensors = tuple(tensors[0])
    if indexing is None:
        indexing = "ij"
    if indexing not in ("ij", "xy"):
        raise RuntimeError(f"torch.meshgrid: indexing must be one of \"xy\" or \"ij\", but received: {indexing}")
    if not tensors:
        raise RuntimeError("torch.meshgrid expects a non-empty TensorList")
    for t in tensors:
        if t.ndim > 1:
            raise RuntimeError(f"torch.meshgrid: Expected 0D or 1D tensor in the tensor list but got: {t}")
    ts = [reshape(t, (-1,)) for t in tensors]
    for t in ts[1:]:
        if t.dtype is not ts[0].dtype:
            raise RuntimeError("torch.meshgrid: Expected all tensors in the tensor list to have the same dtype.")
        if t.device != ts[0].device:
            raise RuntimeError("torch.meshgrid: Expected all tensors in the tensor list to have the same device.")
    swap = indexing == "xy" and len(ts) >= 2
    order = list(range(len(ts)))
    if swap:
        order[0], order[1] = 1, 0
    shape = [ts[i].shape[0] for i in order]
    out = []
    for i, t in enumerate(ts):
        pos = order.index(i)
        view = [1] * len(ts)
        view[pos] = -1
        out.append(expand(reshape(t, view), shape))
    return tuple(out)


# ------------------------------------------------------------------ logspace
def logspace(start, end, steps, base=10.0, *, out=None, dtype=None, layout=None, device=None,
             requires_grad=False):
    """base ** linspace(start, end, steps). cuda: the ramp kernel, then exp(x * ln(base)) by the scale and
    exp kernels (float32 arithmetic)."""
    dt = _dt.as_dtype(dtype) or _dt.get_default_dtype()
    from ..device import as_device
    dev = as_device(device)
    if dev is None or dev.type == "cpu":
        lin = _f.linspace(start, end, steps, dtype=_dt.float64)
        vals = np.power(float(base), lin.numpy())
        if not dt.is_floating_point:
            vals = np.trunc(vals)
        t = Tensor._make_cpu(_dt.to_storage(vals, dt), dt)
        return t.requires_grad_(True) if requires_grad else t
    if dt is _dt.float64:
        raise NotImplementedError("logspace(dtype=float64) on cuda needs float64 exp kernels, which are not shipped")
    from . import cuda
    lin = _f.linspace(start, end, steps, dtype=_dt.float32, device=dev)
    y = cuda.elementwise("exp_fwd", _dt.float32, [cuda.scale(lin, math.log(float(base)))], op="logspace") \
        if cuda.has_kernel("exp_fwd") else None
    if y is None:
        raise NotImplementedError("logspace on cuda needs the exp kernel")
    y = _f._device_cast(y, dt)
    return y.requires_grad_(True) if requires_grad else y


# ------------------------------------------------------------------ Tensor.new_*
def _new_opts(self, dtype, device):
    return (_dt.as_dtype(dtype) or self.dtype), (device if device is not None else self.device)


def new_empty(self, *size, dtype=None, device=None, requires_grad=False, layout=None, pin_memory=False):
    dt, dev = _new_opts(self, dtype, device)
    return _f.empty(*size, dtype=dt, device=dev, requires_grad=requires_grad)


def new_zeros(self, *size, dtype=None, device=None, requires_grad=False, layout=None, pin_memory=False):
    dt, dev = _new_opts(self, dtype, device)
    return _f.zeros(*size, dtype=dt, device=dev, requires_grad=requires_grad)


def new_ones(self, *size, dtype=None, device=None, requires_grad=False, layout=None, pin_memory=False):
    dt, dev = _new_opts(self, dtype, device)
    return _f.ones(*size, dtype=dt, device=dev, requires_grad=requires_grad)


def new_full(self, size, fill_value, *, dtype=None, device=None, requires_grad=False, layout=None,
             pin_memory=False):
    dt, dev = _new_opts(self, dtype, device)
    return _f.full(size, fill_value, dtype=dt, device=dev, requires_grad=requires_grad)


def new_tensor(self, data, *, dtype=None, device=None, requires_grad=False, layout=None, pin_memory=False):
    dt, dev = _new_opts(self, dtype, device)
    return _f.tensor(data, dtype=dt, device=dev, requires_grad=requires_grad)


declare("tril", tril, family="creation", inplace=True)
declare("triu", triu, family="creation", inplace=True)
declare("meshgrid", meshgrid, family="creation", method=False)
declare("logspace", logspace, family="creation", method=False)
for _fn in (new_empty, new_zeros, new_ones, new_full, new_tensor):
    declare(_fn.__name__, _fn, family="creation", torch=False)
