"""Joining and splitting: cat/stack (and hstack/vstack/dstack), split/chunk/tensor_split (and hsplit/vsplit/
dsplit), repeat/tile/repeat_interleave, roll and flip, declared once each.

cat writes each input into a narrow() view of the output (one strided copy per input on cuda, numpy on
the cpu) and its backward hands each input the narrow() view of the gradient. The splits are views
(narrow), so their gradients are the views' own. repeat/tile/repeat_interleave are an expand (stride 0)
made contiguous by one copy, whose backward sums the gradient back (expand's). flip copies: rawdev's
strides are non-negative, so the flipped tensor is new; on cuda it is one strided copy that walks the
source from its last element with negative strides.
"""
import operator

import numpy as np

from .. import dtypes as _dt
from ..autograd.function import Function
from ..autograd.grad_mode import is_grad_enabled
from ..tensor import strided as _strided
from ..tensor.core import Tensor
from .dispatch import check_same_device
from .registry import declare
from .shape import expand, make_view, reshape, unsqueeze, wrap_dim
from .slice_views import _narrow, narrow

__all__ = ["cat", "stack", "hstack", "vstack", "dstack", "split", "chunk", "tensor_split", "repeat", "tile",
           "repeat_interleave", "roll", "flip", "fliplr", "flipud", "atleast_1d", "atleast_2d", "atleast_3d"]


def _new(shape, dt, dev, what):
    """A fresh output: numpy on the cpu; on cuda a pool block (poisoned in tests)."""
    if dev.type == "cpu":
        return Tensor._make_cpu(np.empty(tuple(shape), dt.storage), dt)
    from . import cuda
    return cuda.empty(tuple(shape), dt, dev, what)


def _promote(dts):
    """The dtype cat/stack give tensors of several dtypes (PyTorch's category order: bool < int < float)."""
    dts = list(dict.fromkeys(dts))
    if len(dts) == 1:
        return dts[0]
    floats = [d for d in dts if d.is_floating_point]
    if floats:
        if _dt.float64 in floats:
            return _dt.float64
        if len(set(floats)) > 1 or _dt.float32 in floats:
            return _dt.float32
        return floats[0]
    return _dt.from_numpy_dtype(np.result_type(*[d.storage for d in dts]))


def _tensor_list(tensors, op):
    if isinstance(tensors, Tensor):
        raise TypeError(f"{op}(): argument 'tensors' (position 1) must be tuple of Tensors, not Tensor")
    tensors = list(tensors)
    for i, t in enumerate(tensors):
        if not isinstance(t, Tensor):
            raise TypeError(f"expected Tensor as element {i} in argument 0, but got {type(t).__name__}")
    return tensors


# ------------------------------------------------------------------ cat
class _Cat(Function):
    node_name = "CatBackward0"
    differentiable_backward = True    # narrow views of g: recorded under create_graph

    @staticmethod
    def forward(ctx, dim, shape, dt, *tensors):
        ctx.skipped = [t.ndim == 1 and t.shape[0] == 0 and len(shape) != 1 for t in tensors]
        ctx.dim, ctx.sizes = dim, [0 if skip else t.shape[dim] for t, skip in zip(tensors, ctx.skipped)]
        out = _new(shape, dt, check_same_device("cat", *tensors), "cat output")
        off = 0
        for t, skip in zip(tensors, ctx.skipped):
            if skip:
                continue
            n = t.shape[dim]
            if n:
                part = make_view(out, _narrow.meta(out, dim, off, n))
                part._write(t if t.dtype is dt else t.to(dt))
            off += n
        out._vc[0] = 0
        return out

    @staticmethod
    def backward(ctx, g):
        grads, off = [], 0
        for n, skip in zip(ctx.sizes, ctx.skipped):
            if skip:
                grads.append(None)
                continue
            grads.append(narrow(g, ctx.dim, off, n))
            off += n
        return (None, None, None, *grads)


def cat(tensors, dim=0, *, out=None, axis=None):
    """Concatenate along an existing dim; 1-D empty tensors are skipped (PyTorch's legacy rule)."""
    if axis is not None:
        dim = axis
    tensors = _tensor_list(tensors, "cat")
    if not tensors:
        raise RuntimeError("torch.cat(): expected a non-empty list of Tensors")
    check_same_device("cat", *tensors)
    for i, t in enumerate(tensors):
        if t.ndim == 0:
            raise RuntimeError(f"zero-dimensional tensor (at position {i}) cannot be concatenated")
    real = [(i, t) for i, t in enumerate(tensors) if not (t.ndim == 1 and t.shape[0] == 0)]
    if not real:
        ref_i, ref = 0, tensors[0]
    else:
        ref_i, ref = real[0]
    d = wrap_dim(dim, ref.ndim)
    total = 0
    for i, t in real:
        if t.ndim != ref.ndim:
            raise RuntimeError(f"Tensors must have same number of dimensions: got {ref.ndim} and {t.ndim}")
        for k in range(ref.ndim):
            if k != d and t.shape[k] != ref.shape[k]:
                raise RuntimeError(f"Sizes of tensors must match except in dimension {d}. Expected size "
                                   f"{ref.shape[k]} but got size {t.shape[k]} for tensor number {i} in the list.")
        total += t.shape[d]
    shape = list(ref.shape)
    if shape:
        shape[d] = total
    dt = _promote([t.dtype for t in tensors])
    if is_grad_enabled() and any(t.requires_grad for t in tensors):
        return _Cat.apply(d, tuple(shape), dt, *tensors)
    return _Cat.forward(_Ctx(), d, tuple(shape), dt, *tensors)


class _Ctx:
    """A ctx for a forward run without a graph."""


def stack(tensors, dim=0, *, out=None):
    """Join along a new dim: each tensor unsqueezed, then cat."""
    tensors = _tensor_list(tensors, "stack")
    if not tensors:
        raise RuntimeError("stack expects a non-empty TensorList")
    for i, t in enumerate(tensors[1:], 1):
        if t.shape != tensors[0].shape:
            raise RuntimeError(f"stack expects each tensor to be equal size, but got {list(tensors[0].shape)} at "
                               f"entry 0 and {list(t.shape)} at entry {i}")
    d = wrap_dim(dim, tensors[0].ndim + 1)
    out = cat([unsqueeze(t, d) for t in tensors], d)
    if out.grad_fn is not None:
        out.grad_fn.rename("StackBackward0")
    return out


def atleast_1d(*tensors):
    ts = tensors[0] if len(tensors) == 1 and isinstance(tensors[0], (list, tuple)) else tensors
    out = [reshape(t, (1,)) if t.ndim == 0 else t for t in ts]
    return out[0] if len(tensors) == 1 and isinstance(tensors[0], Tensor) else tuple(out)


def atleast_2d(*tensors):
    ts = tensors[0] if len(tensors) == 1 and isinstance(tensors[0], (list, tuple)) else tensors
    out = [reshape(t, (1, 1)) if t.ndim == 0 else (unsqueeze(t, 0) if t.ndim == 1 else t) for t in ts]
    return out[0] if len(tensors) == 1 and isinstance(tensors[0], Tensor) else tuple(out)


def atleast_3d(*tensors):
    ts = tensors[0] if len(tensors) == 1 and isinstance(tensors[0], (list, tuple)) else tensors

    def one(t):
        if t.ndim == 0:
            return reshape(t, (1, 1, 1))
        if t.ndim == 1:
            return reshape(t, (1, t.shape[0], 1))
        if t.ndim == 2:
            return unsqueeze(t, -1)
        return t
    out = [one(t) for t in ts]
    return out[0] if len(tensors) == 1 and isinstance(tensors[0], Tensor) else tuple(out)


def hstack(tensors, *, out=None):
    ts = atleast_1d(_tensor_list(tensors, "hstack"))
    if not ts:
        raise RuntimeError("hstack expects a non-empty TensorList")
    return cat(ts, 0 if ts[0].ndim == 1 else 1)


def vstack(tensors, *, out=None):
    ts = atleast_2d(_tensor_list(tensors, "vstack"))
    if not ts:
        raise RuntimeError("vstack expects a non-empty TensorList")
    return cat(ts, 0)


def dstack(tensors, *, out=None):
    ts = atleast_3d(_tensor_list(tensors, "dstack"))
    if not ts:
        raise RuntimeError("dstack expects a non-empty TensorList")
    return cat(ts, 2)


# ------------------------------------------------------------------ splitting (views)
def split(tensor, split_size_or_sections, dim=0):
    """Views of consecutive pieces: each split_size long (the last may be shorter), or the given sizes."""
    d = wrap_dim(dim, tensor.ndim)
    size = tensor.shape[d]
    if isinstance(split_size_or_sections, (list, tuple)):
        sizes = [operator.index(s) for s in split_size_or_sections]
        if sum(sizes) != size or any(s < 0 for s in sizes):
            raise RuntimeError(f"split_with_sizes expects split_sizes to sum exactly to {size} (input tensor's size "
                               f"at dimension {d}), but got split_sizes={sizes}")
    else:
        n = operator.index(split_size_or_sections)
        if n < 0:
            raise RuntimeError(f"split expects split_size be non-negative, but got split_size={n}")
        if n == 0:
            if size:
                raise RuntimeError(f"split_size can only be 0 if dimension size is 0, but got dimension size of "
                                   f"{size}")
            return (tensor,)
        sizes = [min(n, size - s) for s in range(0, size, n)] or [0]
    out, off = [], 0
    for s in sizes:
        out.append(narrow(tensor, d, off, s))
        off += s
    return tuple(out)


def split_with_sizes(input, split_sizes, dim=0):  # noqa: A002
    """Views of consecutive pieces of the given sizes (they must add up to the dimension's size)."""
    return split(input, list(split_sizes), dim)


def chunk(input, chunks, dim=0):  # noqa: A002
    chunks = operator.index(chunks)
    if chunks <= 0:
        raise RuntimeError(f"chunk expects `chunks` to be greater than 0, got: {chunks}")
    d = wrap_dim(dim, input.ndim)
    size = input.shape[d]
    return split(input, max(-(-size // chunks), 1) if size else 1, d) if size else \
        tuple(narrow(input, d, 0, 0) for _ in range(chunks))


def tensor_split(input, indices_or_sections, dim=0):  # noqa: A002
    d = wrap_dim(dim, input.ndim)
    size = input.shape[d]
    if isinstance(indices_or_sections, Tensor):
        v = indices_or_sections
        if v.dtype.is_floating_point or v.ndim > 1:
            raise RuntimeError("tensor_split expected tensor_indices_or_sections to have integer dtype and be a "
                               "0-D or 1-D tensor")
        indices_or_sections = v.item() if v.ndim == 0 else v.tolist()
    if isinstance(indices_or_sections, (list, tuple)):
        bounds = [0] + [min(max(operator.index(i) if i >= 0 else i + size, 0), size) for i in indices_or_sections]
        bounds.append(size)
        return tuple(narrow(input, d, a, max(b - a, 0)) if b > a else narrow(input, d, min(a, size), 0)
                     for a, b in zip(bounds[:-1], bounds[1:]))
    n = operator.index(indices_or_sections)
    if n <= 0:
        raise RuntimeError(f"number of sections must be larger than 0, got {n}")
    base, extra = divmod(size, n)
    out, off = [], 0
    for i in range(n):
        s = base + (1 if i < extra else 0)
        out.append(narrow(input, d, off, s))
        off += s
    return tuple(out)


# ------------------------------------------------------------------ repeating (expand + one copy)
def repeat(input, *sizes):  # noqa: A002
    """Tile input: sizes[i] copies along each dim (new leading dims when sizes is longer)."""
    from .shape import _sizes
    reps = _sizes(sizes)
    if len(reps) < input.ndim:
        raise RuntimeError("Number of dimensions of repeat dims can not be smaller than number of dimensions of "
                           "tensor")
    if any(r < 0 for r in reps):
        raise RuntimeError(f"Trying to create tensor with negative dimension {min(reps)}: {list(reps)}")
    shape = (1,) * (len(reps) - input.ndim) + tuple(input.shape)
    x = reshape(input, shape)
    inter = []
    for s in shape:
        inter += [1, s]
    big = []
    for r, s in zip(reps, shape):
        big += [r, s]
    # always a new tensor, as PyTorch's: the expanded view is copied (a reshape of it can stay a stride-0 view
    # when the repeated dims have size 1, which would share memory with input)
    from .shape import clone
    y = reshape(clone(expand(reshape(x, inter), big)), tuple(r * s for r, s in zip(reps, shape)))
    if y.grad_fn is not None:
        y.grad_fn.rename("RepeatBackward0")
    return y


def tile(input, dims):  # noqa: A002
    dims = tuple(dims) if not isinstance(dims, int) else (dims,)
    return repeat(input, (1,) * (input.ndim - len(dims)) + dims)


def repeat_interleave(input, repeats=None, dim=None, *, output_size=None):  # noqa: A002
    """Each element (or slice along dim) repeated: an int count, or a count per element (a tensor or list;
    its values are read on the host, as the output size depends on them). repeat_interleave(counts) alone
    gives the indices 0..n-1 repeated counts times."""
    if repeats is None:      # torch.repeat_interleave(repeats)
        counts = input
        if counts.ndim > 1 or counts.dtype.is_floating_point:
            raise RuntimeError("repeat_interleave only accept 1D vector as repeat")
        from ..tensor.factory import arange
        return repeat_interleave(arange(counts.shape[0] if counts.ndim else 1, device=counts.device), counts, 0)
    if dim is None:
        input = reshape(input, (-1,))
        dim = 0
    d = wrap_dim(dim, input.ndim) if input.ndim else 0
    if input.ndim == 0:
        input = reshape(input, (1,))
    if isinstance(repeats, (list, tuple)):
        repeats = np.asarray(repeats, np.int64)
    if isinstance(repeats, Tensor):
        if repeats.dtype.is_floating_point:
            raise RuntimeError("repeats has to be Long or Int tensor")
        if repeats.ndim > 1:
            raise RuntimeError("repeats must be 0-dim or 1-dim tensor")
        repeats = np.asarray(repeats.cpu().numpy() if repeats.is_cuda else repeats.numpy()).reshape(-1)
    if isinstance(repeats, np.ndarray) and repeats.size == 1:
        repeats = int(repeats[0])
    if isinstance(repeats, np.ndarray):
        if (repeats < 0).any():
            raise RuntimeError("repeats can not be negative")
        if repeats.size != input.shape[d]:
            raise RuntimeError(f"repeats must have the same size as input along dim, but got repeats.size(0) = "
                               f"{repeats.size} and input.size({d}) = {input.shape[d]}")
        parts = []
        for i, r in enumerate(repeats.tolist()):
            if r:
                piece = narrow(input, d, i, 1)
                shape = list(piece.shape)
                shape[d] = r
                parts.append(expand(piece, shape))
        if not parts:
            shape = list(input.shape)
            shape[d] = 0
            return _new(shape, input.dtype, input.device, "repeat_interleave output")
        out = cat(parts, d)
    else:
        r = operator.index(repeats)
        if r < 0:
            raise RuntimeError("repeats can not be negative")
        shape = list(input.shape)
        x = unsqueeze(input, d + 1)
        big = shape[:d + 1] + [r] + shape[d + 1:]
        shape[d] *= r
        out = reshape(expand(x, big), shape)
        if out.numel() and out.data_ptr() == input.data_ptr() and out._base is not None:
            out = out.clone()
    if output_size is not None and out.shape[d] != output_size:
        raise RuntimeError(f"allocated size does not match required size: {output_size} vs {out.shape[d]}")
    if out.grad_fn is not None:
        out.grad_fn.rename("RepeatInterleaveBackward0")
    return out


def roll(input, shifts, dims=None):  # noqa: A002
    """Elements shifted cyclically along dims (the flattened tensor when dims is None): two narrow views
    joined by cat per dim."""
    shifts = (shifts,) if isinstance(shifts, int) else tuple(shifts)
    if dims is None:
        if len(shifts) != 1:
            raise RuntimeError(f"roll: shifts and dims must align. shifts: {len(shifts)}, dims:0")
        return reshape(roll(reshape(input, (-1,)), shifts, 0), input.shape)
    dims = (dims,) if isinstance(dims, int) else tuple(dims)
    if len(shifts) != len(dims):
        raise RuntimeError(f"shifts and dimensions must align. shifts: {len(shifts)}, dims:{len(dims)}")
    out = input
    for s, dim in zip(shifts, dims):
        d = wrap_dim(dim, input.ndim)
        size = out.shape[d]
        if not size:
            continue
        s %= size
        out = cat([narrow(out, d, size - s, s), narrow(out, d, 0, size - s)], d) if s else out
    if out is input:
        out = input.clone()
    if out.grad_fn is not None:
        out.grad_fn.rename("RollBackward0")
    return out


# ------------------------------------------------------------------ flip (a copy)
def _flip_copy(x, dims):
    out = _new(x.shape, x.dtype, x.device, "flip output")
    if x.device.type == "cpu":
        np.copyto(out._host_storage(), np.flip(x._host_storage(), dims))
        return out
    if not x.numel():
        return out
    from ..tensor.cuda_io import runtime_device
    strides, off = list(x.stride()), 0
    for d in dims:
        off += (x.shape[d] - 1) * strides[d]
        strides[d] = -strides[d]
    rdev = runtime_device(x.device)
    _strided.strided_copy(rdev, out.data_ptr(), 0, out.stride(), x.data_ptr(), off, strides, tuple(x.shape),
                          x.itemsize, stream=rdev.compute_stream)
    return out


class _Flip(Function):
    node_name = "FlipBackward0"
    differentiable_backward = True    # the backward is this op again when g is in the graph

    @staticmethod
    def forward(ctx, x, dims):
        ctx.dims = dims
        return _flip_copy(x, dims)

    @staticmethod
    def backward(ctx, g):
        return _Flip.apply(g, ctx.dims) if is_grad_enabled() and g.requires_grad else _flip_copy(g, ctx.dims), None


def flip(input, dims):  # noqa: A002
    dims = (dims,) if isinstance(dims, int) else tuple(dims)
    wrapped = tuple(wrap_dim(d, input.ndim) for d in dims)
    if len(set(wrapped)) != len(wrapped):
        raise RuntimeError(f"dims has duplicates, original flip dims size={len(dims)}, but unique flip dims "
                           f"size={len(set(wrapped))}")
    if is_grad_enabled() and input.requires_grad:
        return _Flip.apply(input, wrapped)
    return _flip_copy(input, wrapped)


def fliplr(input):  # noqa: A002
    if input.ndim < 2:
        raise RuntimeError("Input must be >= 2-d.")
    return flip(input, (1,))


def flipud(input):  # noqa: A002
    if input.ndim < 1:
        raise RuntimeError("Input must be >= 1-d.")
    return flip(input, (0,))


def _split_along(input, indices_or_sections, dim, name, min_dim):  # noqa: A002
    if input.ndim < min_dim:
        raise RuntimeError(f"torch.{name} requires a tensor with at least {min_dim} dimension, but got a tensor with "
                           f"{input.ndim} dimensions!")
    if isinstance(indices_or_sections, int) and input.shape[dim] % indices_or_sections:
        raise RuntimeError(f"torch.{name} attempted to split along dimension {dim}, but the size of the dimension "
                           f"{input.shape[dim]} is not divisible by the split_size {indices_or_sections}!")
    return input.tensor_split(indices_or_sections, dim)


def hsplit(input, indices_or_sections):  # noqa: A002
    """Split along the columns (dim 1; dim 0 for a 1-D tensor)."""
    return _split_along(input, indices_or_sections, 1 if input.ndim > 1 else 0, "hsplit", 1)


def vsplit(input, indices_or_sections):  # noqa: A002
    """Split along the rows (dim 0) of a tensor of at least 2 dimensions."""
    return _split_along(input, indices_or_sections, 0, "vsplit", 2)


def dsplit(input, indices_or_sections):  # noqa: A002
    """Split along the depth (dim 2) of a tensor of at least 3 dimensions."""
    return _split_along(input, indices_or_sections, 2, "dsplit", 3)


# ------------------------------------------------------------------ declarations
declare("cat", cat, family="join", method=False, aliases=("concat", "concatenate"))
declare("stack", stack, family="join", method=False)
declare("hstack", hstack, family="join", method=False)
declare("vstack", vstack, family="join", method=False, aliases=("row_stack",))
declare("dstack", dstack, family="join", method=False)
declare("atleast_1d", atleast_1d, family="join", method=False)
declare("atleast_2d", atleast_2d, family="join", method=False)
declare("atleast_3d", atleast_3d, family="join", method=False)
declare("split", split, family="join", aliases=("unsafe_split",))
declare("chunk", chunk, family="join", aliases=("unsafe_chunk",))
declare("split_with_sizes", split_with_sizes, family="join")
declare("tensor_split", tensor_split, family="join")
declare("repeat", repeat, family="join", torch=False)
declare("tile", tile, family="join")
declare("repeat_interleave", repeat_interleave, family="join")
declare("roll", roll, family="join")
declare("flip", flip, family="join")
declare("fliplr", fliplr, family="join")
declare("flipud", flipud, family="join")
declare("hsplit", hsplit, family="join")
declare("vsplit", vsplit, family="join")
declare("dsplit", dsplit, family="join")
