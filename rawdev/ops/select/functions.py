"""Selection and clamping: where, masked_fill, clamp/clip (clamp_min, clamp_max), maximum/minimum (and the
elementwise forms of max/min); nonzero, argwhere and unravel_index. Forward and backward side by side; the cpu
path is numpy (cpu.py beside this file), the cuda path select.ptx (cuda.py beside it): where and
masked_fill move element bits, so they serve every dtype; clamp and maximum/minimum run in float32 on cuda."""
import math
import numbers

from ... import dtypes as _dt
from ...autograd.function import Function
from ...tensor import factory
from ...tensor.core import Tensor
from ..dispatch import backend, backend_of
from ..promotion import _result_dt, _scalar_dt
from ..registry import declare
from ..shape import sum_to


def _dtype_name(dt):
    return {"bool": "Bool", "uint8": "Byte", "int8": "Char", "int16": "Short", "int32": "Int", "int64": "Long",
            "float16": "Half", "bfloat16": "BFloat16", "float32": "Float", "float64": "Double"}[dt.name]


def _scalar_tensor(s, dt, like):
    """A Python scalar operand as a 0-dim tensor on like's device, made by the backend's fill (on cuda one memset for
    4-byte dtypes) rather than an upload, which would stage the value in host memory and track it with an event."""
    if isinstance(s, (bool, int, float)):
        return backend_of(like).full((), s, dt, like.device)
    return factory.tensor(s, dtype=dt, device=like.device)


# ------------------------------------------------------------------ where
class _Where(Function):
    node_name = "WhereBackward0"

    @staticmethod
    def forward(ctx, cond, a, b):
        B = backend("where", cond, a, b)
        ctx.save_for_backward(cond)
        ctx.sa, ctx.sb = a.shape, b.shape
        return B.where(cond, a, b)

    @staticmethod
    def backward(ctx, g):
        (cond,) = ctx.saved_tensors
        B = backend_of(g)
        ga = sum_to(B.fill_where(g, cond, 0, invert=True), ctx.sa) if ctx.needs_input_grad[1] else None
        gb = sum_to(B.fill_where(g, cond, 0), ctx.sb) if ctx.needs_input_grad[2] else None
        return None, ga, gb

    @staticmethod
    def backward_graph(ctx, g):   # create_graph=True: the condition as a constant mask
        (cond,) = ctx.saved_tensors
        m = cond.detach().to(dtype=g.dtype)
        ga = sum_to(g * m, ctx.sa) if ctx.needs_input_grad[1] else None
        gb = sum_to(g * (1 - m), ctx.sb) if ctx.needs_input_grad[2] else None
        return None, ga, gb


def where(condition, input=None, other=None):  # noqa: A002
    """where(condition, input, other): input where condition holds, else other (broadcast together; a Python
    scalar for either is allowed). where(condition) is nonzero(condition, as_tuple=True).

    Example:
        >>> rawdev.where(x > 0, x, 0.0)      # relu
    """
    if input is None and other is None:
        return nonzero(condition, as_tuple=True)
    if not isinstance(condition, Tensor):
        raise TypeError(f"where(): argument 'condition' (position 1) must be Tensor, not {type(condition).__name__}")
    if condition.dtype not in (_dt.bool, _dt.uint8):
        raise RuntimeError(f"where expected condition to be a boolean tensor, but got a tensor with dtype "
                           f"{_dtype_name(condition.dtype)}")
    a, b = input, other
    if not isinstance(a, Tensor) and not isinstance(b, Tensor):
        dt = _dt.get_default_dtype() if any(isinstance(s, float) for s in (a, b)) else \
            (_dt.bool if all(isinstance(s, bool) for s in (a, b)) else _dt.int64)
        a, b = _scalar_tensor(a, dt, condition), _scalar_tensor(b, dt, condition)
    elif not isinstance(a, Tensor):
        a = _scalar_tensor(a, _scalar_dt(b, a), b)
    elif not isinstance(b, Tensor):
        b = _scalar_tensor(b, _scalar_dt(a, b), a)
    dt = _result_dt(a, b)
    a, b = (t if t.dtype is dt else t.to(dtype=dt) for t in (a, b))
    return _Where.apply(condition, a, b)


def _where_method(self, condition, other):
    """x.where(condition, y) is rawdev.where(condition, x, y)."""
    return where(condition, self, other)


def nonzero(input, *, as_tuple=False):  # noqa: A002
    """Indices of the nonzero elements: an (n, ndim) int64 tensor, or (as_tuple) one 1-D tensor per dimension.
    On cuda the count decides the output's size, so (as PyTorch's nonzero) it synchronizes; rawdev reads the
    mask back and uploads the indices."""
    import numpy as np

    from ...tensor.factory import tensor
    vals = np.asarray(input.detach().cpu()._values())
    idx = np.nonzero(vals.reshape(1) if vals.ndim == 0 else vals)
    if as_tuple:
        return tuple(tensor(i.astype(np.int64), device=input.device) for i in idx)
    return tensor(np.stack(idx, axis=1).astype(np.int64).reshape(-1, max(vals.ndim, 1)), device=input.device)


# ------------------------------------------------------------------ masked_fill
class _MaskedFill(Function):
    node_name = "MaskedFillBackward0"

    @staticmethod
    def forward(ctx, x, mask, value):
        B = backend("masked_fill", x, mask)
        ctx.save_for_backward(mask)
        ctx.sx = x.shape
        return B.fill_where(x, mask, value)

    @staticmethod
    def backward(ctx, g):
        (mask,) = ctx.saved_tensors
        return sum_to(backend_of(g).fill_where(g, mask, 0), ctx.sx), None, None

    @staticmethod
    def backward_graph(ctx, g):   # g where the mask is False (a constant)
        (mask,) = ctx.saved_tensors
        return sum_to(g * (1 - mask.detach().to(dtype=g.dtype)), ctx.sx), None, None


def masked_fill(input, mask, value):  # noqa: A002
    """input with value where mask is True (mask broadcast with input; value a number or a 0-dim tensor)."""
    if not isinstance(mask, Tensor) or mask.dtype is not _dt.bool:
        got = _dtype_name(mask.dtype).lower() if isinstance(mask, Tensor) else type(mask).__name__
        got = {"byte": "unsigned char", "char": "signed char", "long": "long int", "int": "int"}.get(got, got)
        raise RuntimeError(f"masked_fill_ only supports boolean masks, but got mask with dtype {got}")
    if isinstance(value, Tensor):
        if value.dim() != 0:
            raise RuntimeError(f"masked_fill_ only supports a 0-dimensional value tensor, but got tensor with "
                               f"{value.dim()} dimension(s).")
        if value.requires_grad:   # a differentiable value: where() gives it the sum of the masked gradients
            return where(mask, value.to(dtype=input.dtype, device=input.device), input)
        value = value.item()
    if not isinstance(value, numbers.Number):
        raise TypeError(f"masked_fill() received an invalid combination of arguments - got value of type "
                        f"{type(value).__name__}")
    if not input.dtype.is_floating_point and isinstance(value, float) and not math.isfinite(value):
        raise RuntimeError(f"value cannot be converted to type {input.dtype.name} without overflow")
    return _MaskedFill.apply(input, mask, value)


# ------------------------------------------------------------------ clamp
class _Clamp(Function):
    node_name = "ClampBackward1"

    @staticmethod
    def forward(ctx, x, lo, hi):
        ctx.save_for_backward(x)
        ctx.lo, ctx.hi = lo, hi
        return backend("clamp", x).clamp(x, lo, hi)

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        return backend_of(g).clamp_bwd(g, x, ctx.lo, ctx.hi), None, None

    @staticmethod
    def backward_graph(ctx, g):   # g where lo <= x <= hi (a constant mask)
        (x,) = ctx.saved_tensors
        xd = x.detach()
        m = None
        for cond in ((xd >= ctx.lo) if ctx.lo is not None else None, (xd <= ctx.hi) if ctx.hi is not None else None):
            if cond is not None:
                c = cond.to(dtype=g.dtype)
                m = c if m is None else m * c
        return (g if m is None else g * m), None, None


def clamp(input, min=None, max=None):  # noqa: A001,A002
    """Each element limited to [min, max] (either may be None; numbers or tensors broadcast with input).
    NaN stays NaN; the gradient flows where min <= input <= max.

    Example:
        >>> rawdev.clamp(x, min=0)           # relu
    """
    lo, hi = min, max
    if lo is None and hi is None:
        raise RuntimeError("torch.clamp: At least one of 'min' or 'max' must not be None")
    if isinstance(lo, Tensor) or isinstance(hi, Tensor):
        out = input
        if lo is not None:
            out = maximum(out, lo if isinstance(lo, Tensor) else _scalar_tensor(lo, _scalar_dt(input, lo), input))
        if hi is not None:
            out = minimum(out, hi if isinstance(hi, Tensor) else _scalar_tensor(hi, _scalar_dt(input, hi), input))
        return out
    dt = input.dtype
    if not dt.is_floating_point and any(isinstance(s, float) for s in (lo, hi)):
        dt = _dt.get_default_dtype()   # an integer tensor clamped to a float bound becomes float, as PyTorch
    x = input if dt is input.dtype else input.to(dtype=dt)
    if dt.is_floating_point:
        bounds = (-math.inf if lo is None else lo, math.inf if hi is None else hi)
    else:   # an open side of an integer clamp is the dtype's own limit
        info = _dt.iinfo(dt) if dt is not _dt.bool else None
        bounds = (lo if lo is not None else (info.min if info else 0),
                  hi if hi is not None else (info.max if info else 1))
    out = _Clamp.apply(x, *bounds)
    if out.grad_fn is not None and (lo is None or hi is None):
        out.grad_fn.rename("ClampMinBackward0" if hi is None else "ClampMaxBackward0")
    return out


def clip(input, min=None, max=None):  # noqa: A001,A002
    """Alias of clamp."""
    return clamp(input, min, max)


def clamp_min(input, min):  # noqa: A001,A002
    return clamp(input, min=min)


def clamp_max(input, max):  # noqa: A001,A002
    return clamp(input, max=max)


# ------------------------------------------------------------------ maximum / minimum
class _MaxMin(Function):
    node_name = "MaximumBackward0"

    @staticmethod
    def forward(ctx, a, b, is_max):
        B = backend("maximum" if is_max else "minimum", a, b)
        ctx.save_for_backward(a, b)
        ctx.is_max = is_max
        return B.max_min(a, b, is_max)

    @staticmethod
    def backward(ctx, g):
        a, b = ctx.saved_tensors
        da, db = backend_of(g).max_min_bwd(g, a, b, ctx.is_max)
        return (sum_to(da, a.shape) if ctx.needs_input_grad[0] else None,
                sum_to(db, b.shape) if ctx.needs_input_grad[1] else None, None)

    @staticmethod
    def backward_graph(ctx, g):   # the winner's share (ties split in half) as a constant weight
        a, b = ctx.saved_tensors
        ad, bd = a.detach(), b.detach()
        win = (ad > bd) if ctx.is_max else (ad < bd)
        w = win.to(dtype=g.dtype) + (ad == bd).to(dtype=g.dtype) * 0.5
        return (sum_to(g * w, a.shape) if ctx.needs_input_grad[0] else None,
                sum_to(g * (1 - w), b.shape) if ctx.needs_input_grad[1] else None, None)


def _max_min(input, other, is_max):  # noqa: A002
    name = "maximum" if is_max else "minimum"
    if not isinstance(other, Tensor):
        raise TypeError(f"{name}(): argument 'other' (position 2) must be Tensor, not {type(other).__name__}")
    dt = _result_dt(input, other)
    a, b = (t if t.dtype is dt else t.to(dtype=dt) for t in (input, other))
    out = _MaxMin.apply(a, b, is_max)
    if out.grad_fn is not None and not is_max:
        out.grad_fn.rename("MinimumBackward0")
    return out


def maximum(input, other):  # noqa: A002
    """Elementwise maximum (NaN if either is NaN); equal elements share the gradient half and half."""
    return _max_min(input, other, True)


def minimum(input, other):  # noqa: A002
    """Elementwise minimum (NaN if either is NaN); equal elements share the gradient half and half."""
    return _max_min(input, other, False)


def argwhere(input):  # noqa: A002
    """The indices of the non-zero elements, one row each ([n, ndim]); nonzero(input).

    Example:
        >>> torch.argwhere(torch.tensor([[1, 0], [0, 3]]))
        tensor([[0, 0],
                [1, 1]])
    """
    return input.nonzero()


def unravel_index(indices, shape):
    """The coordinates of flat indices in an array of `shape`, as a tuple of tensors.

    Example:
        >>> torch.unravel_index(torch.tensor([5, 7]), (2, 4))
        (tensor([1, 1]), tensor([1, 3]))
    """
    if not isinstance(indices, Tensor):
        indices = factory.tensor(indices)
    if indices.dtype.is_floating_point or indices.dtype is _dt.bool:
        raise TypeError("expected 'indices' to be integer dtype, but got " + str(indices.dtype))
    shape = (shape,) if isinstance(shape, int) else tuple(shape)
    total = 1
    for s in shape:
        total *= s
    if indices.numel() and (int(indices.min().item()) < -total or int(indices.max().item()) >= total):
        raise RuntimeError(f"'indices' must be in range [-{total}, {total})")
    flat = where(indices < 0, indices + total, indices).to(dtype=_dt.int64)
    out = []
    for s in reversed(shape):
        out.append(flat % s)
        flat = flat.div(s, rounding_mode="floor")
    return tuple(reversed(out))


declare("where", where, family="select", method=_where_method)
declare("masked_fill", masked_fill, family="select", inplace=True)
declare("clamp", clamp, family="select", inplace=True)
declare("clip", clip, family="select", inplace=True)
declare("clamp_min", clamp_min, family="select", inplace=True)
declare("clamp_max", clamp_max, family="select", inplace=True)
declare("maximum", maximum, family="select")
declare("nonzero", nonzero, family="select")
declare("minimum", minimum, family="select")
declare("argwhere", argwhere, family="select")
declare("unravel_index", unravel_index, family="select", method=False)
