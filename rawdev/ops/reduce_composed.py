"""The reductions composed from declared ops (reduce.py holds the kernel-backed ones: sum, mean, max, min,
argmax, argmin), so that autograd and both devices (cpu, cuda) come with them:
prod, var/std (+ var_mean/std_mean), norm, logsumexp, amax/amin, all/any, count_nonzero, nansum/nanmean,
median/mode, and Tensor.sum_to_size.

PyTorch's names and signatures: dim as an int or a tuple (None or () reduces everything), keepdim, `axis=` as an
alias of dim. prod is a pairwise product tree (log2(n) multiply launches), so its gradient is exact with zeros.
std and the 2-norm take their root through _SafeSqrt, whose gradient is 0 (not NaN) where the root is 0, as
PyTorch's. amax/amin share the gradient evenly among ties. median/mode find their indices on the host (a device
to host copy on cuda, like a sync) and scatter the gradient to those indices on the device.
"""
import builtins

import numpy as np

from .. import dtypes as _dt
from ..autograd.function import Function
from .dispatch import backend_of
from .reduce.functions import _arg_layout, _axis
from .reduce.functions import max as _max
from .reduce.functions import min as _min
from .reduce.functions import sum as _sum
from .registry import declare
from .rtypes import return_type as _return_type
from .shape import reshape


def _all_dims(x, dim):
    """Sorted, wrapped, distinct dims of x; None or () -> every dim."""
    if dim is None or (isinstance(dim, (tuple, list)) and len(dim) == 0):
        return tuple(range(x.ndim))
    if isinstance(dim, int):
        dim = (dim,)
    out = []
    for d in dim:
        w = x._wrap_dim(d)
        if w in out:
            raise RuntimeError(f"dim {w} appears multiple times in the list of dims")
        out.append(w)
    return tuple(sorted(out))


def _numel_over(x, dims):
    n = 1
    for d in dims:
        n *= x.shape[d]
    return n


def _squeeze(y, dims, keepdim):
    if keepdim or not dims:
        return y
    return reshape(y, [s for i, s in enumerate(y.shape) if i not in dims])


def _float_input(x):
    return x if x.dtype.is_floating_point else x.to(dtype=_dt.get_default_dtype())


# ------------------------------------------------------------------ safe square root
class _SafeSqrt(Function):
    """sqrt with a gradient of 0 where the result is 0 (PyTorch's std/norm backward masks those)."""
    node_name = "SqrtBackward0"

    @staticmethod
    def forward(ctx, s):
        y = s.sqrt()
        ctx.save_for_backward(y)
        return y

    @staticmethod
    def backward(ctx, g):
        y, = ctx.saved_tensors
        zero = y == 0
        return (g / (y * 2.0)).masked_fill(zero, 0.0)


# ------------------------------------------------------------------ prod
def prod(input, dim=None, keepdim=False, *, dtype=None, axis=None):  # noqa: A002
    """Product of the elements (over dim if given), by a pairwise product tree.

    Example:
        >>> torch.prod(torch.tensor([[1., 2.], [3., 4.]]), 1)
        tensor([ 2., 12.])
    """
    from .join import cat
    dim = _axis(dim, axis)
    if dtype is not None:
        input = input.to(dtype=_dt.as_dtype(dtype))
    elif not input.dtype.is_floating_point:
        input = input.to(dtype=_dt.int64)      # PyTorch multiplies integers (and bool) into int64
    if dim is None:
        if keepdim:
            raise TypeError("prod() received an invalid combination of arguments - got (Tensor, keepdim=bool)")
        y, keep = reshape(input, (-1,)), False
        out_shape = ()
    else:
        d = input._wrap_dim(dim)
        y = input.movedim(d, -1) if input.ndim else reshape(input, (1,))
        out_shape = tuple(input.shape[:d]) + ((1,) if keepdim else ()) + tuple(input.shape[d + 1:])
        keep = keepdim
    n = y.shape[-1]
    if n == 0:
        from ..tensor.factory import ones
        return ones(out_shape if (dim is not None or keep) else (), dtype=input.dtype, device=input.device)
    while y.shape[-1] > 1:
        h = y.shape[-1] // 2
        half = y[..., :h] * y[..., h:2 * h]
        y = cat([half, y[..., 2 * h:]], -1) if y.shape[-1] % 2 else half
    return reshape(y, out_shape)


# ------------------------------------------------------------------ var / std
def _correction(dim, unbiased, correction):
    if isinstance(dim, bool):          # var(x, unbiased)
        if unbiased is not None:
            raise TypeError("var(): unbiased given twice")
        dim, unbiased = None, dim
    if correction is not None and unbiased is not None:
        raise RuntimeError("Cannot specify both unbiased and correction")
    if correction is None:
        correction = 1 if unbiased is None or unbiased else 0
    return dim, correction


def _var_mean(x, dim, unbiased, keepdim, correction):
    dim, correction = _correction(dim, unbiased, correction)
    if not x.dtype.is_floating_point:
        raise RuntimeError(f"std and var only support floating point and complex dtypes, got: {x.dtype}")
    dims = _all_dims(x, dim)
    n = _numel_over(x, dims)
    mu = x.mean(dims, keepdim=True) if dims else x
    d = x - mu
    s = _sum(d * d, dims, keepdim=keepdim) if dims else d * d
    denom = n - correction
    with np.errstate(invalid="ignore", divide="ignore"):
        v = _divide_dof(s, denom)
    return v, _squeeze(mu, dims, keepdim)


def _divide_dof(s, denom):
    """s / max(denom, 0): 0/0 -> nan and x/0 -> inf, as PyTorch (which also warns)."""
    if denom > 0:
        return s / float(denom)
    return s / s.new_zeros(()).expand_as(s)


def var(input, dim=None, unbiased=None, keepdim=False, *, correction=None, axis=None):  # noqa: A002
    """Variance over dim with Bessel's correction by default (correction=1; unbiased=False -> 0).

    Example:
        >>> torch.var(torch.tensor([1., 2., 3., 4.]))
        tensor(1.6667)
    """
    return _var_mean(input, _axis(dim, axis), unbiased, keepdim, correction)[0]


def std(input, dim=None, unbiased=None, keepdim=False, *, correction=None, axis=None):  # noqa: A002
    """Standard deviation: sqrt(var(...)); its gradient is 0 where it is 0.

    Example:
        >>> torch.std(torch.tensor([1., 2., 3., 4.]))
        tensor(1.2910)
    """
    return _SafeSqrt.apply(var(input, dim, unbiased, keepdim, correction=correction, axis=axis))


def var_mean(input, dim=None, unbiased=None, keepdim=False, *, correction=None, axis=None):  # noqa: A002
    """(var, mean) over dim."""
    return _var_mean(input, _axis(dim, axis), unbiased, keepdim, correction)


def std_mean(input, dim=None, unbiased=None, keepdim=False, *, correction=None, axis=None):  # noqa: A002
    """(std, mean) over dim."""
    v, m = _var_mean(input, _axis(dim, axis), unbiased, keepdim, correction)
    return _SafeSqrt.apply(v), m


# ------------------------------------------------------------------ amax / amin
class _AMax(Function):
    """max/min over dims; the gradient is shared evenly by the elements equal to the result (NaN ~ NaN)."""

    @staticmethod
    def forward(ctx, x, dims, keepdim, is_max):
        y = x
        for d in reversed(dims):
            y = (_max if is_max else _min)(y, d, keepdim=True)[0]
        ctx.dims, ctx.keepdim = dims, keepdim
        ctx.save_for_backward(x, y)
        return _squeeze(y, dims, keepdim) if dims else y.clone()

    @staticmethod
    def backward(ctx, g):
        x, y = ctx.saved_tensors
        if not ctx.dims:
            return g, None, None, None
        if not ctx.keepdim:
            g = reshape(g, y.shape)
        ye = y.expand_as(x)
        dt = g.dtype
        mask = (x == ye).to(dtype=dt) + (x != x).to(dtype=dt) * (ye != ye).to(dtype=dt)   # NaN ~ NaN
        count = mask.sum(ctx.dims, keepdim=True)
        return mask * (g / count).expand_as(x), None, None, None


def _amax(x, dim, keepdim, is_max):
    name = "amax" if is_max else "amin"
    dims = _all_dims(x, dim)
    for d in dims:
        if x.shape[d] == 0:
            raise IndexError(f"{name}(): Expected reduction dim {d} to have non-zero size.")
    if x.ndim == 0 or not dims:
        dims = ()
    out = _AMax.apply(x, dims, keepdim, is_max)
    if out.grad_fn is not None:
        out.grad_fn.rename("AmaxBackward0" if is_max else "AminBackward0")
    return out


def amax(input, dim=(), keepdim=False, *, axis=None):  # noqa: A002
    """Maximum over dim (() or None: every dim); ties share the gradient evenly.

    Example:
        >>> torch.amax(torch.tensor([[1., 5.], [7., 2.]]), 1)
        tensor([5., 7.])
    """
    return _amax(input, _axis(dim, axis), keepdim, True)


def amin(input, dim=(), keepdim=False, *, axis=None):  # noqa: A002
    """Minimum over dim (() or None: every dim); ties share the gradient evenly."""
    return _amax(input, _axis(dim, axis), keepdim, False)


# ------------------------------------------------------------------ logsumexp
def logsumexp(input, dim=None, keepdim=False, *, axis=None):  # noqa: A002
    """log(sum(exp(input), dim)), computed stably (the max is subtracted first).

    Example:
        >>> torch.logsumexp(torch.tensor([0., 0.]), 0)
        tensor(0.6931)
    """
    dim = _axis(dim, axis)
    if dim is None:
        raise TypeError('logsumexp() missing 1 required positional arguments: "dim"')
    x = _float_input(input)
    dims = _all_dims(x, dim)
    if x.ndim == 0:
        return x.clone()
    if builtins.any(x.shape[d] == 0 for d in dims):
        m = x.new_zeros([1 if i in dims else s for i, s in enumerate(x.shape)])
    else:
        m = amax(x.detach(), dims, keepdim=True)
        m = m.masked_fill(m.abs() == float("inf"), 0.0)
    out = _sum((x - m.expand_as(x)).exp(), dims, keepdim=True).log() + m
    return _squeeze(out, dims, keepdim)


# ------------------------------------------------------------------ norm
def _vector_norm(x, p, dims, keepdim):
    a = x.abs()
    if p == float("inf"):
        return amax(a, dims, keepdim) if x.numel() else _sum(a, dims, keepdim=keepdim)
    if p == -float("inf"):
        return amin(a, dims, keepdim)
    if p == 0:
        return _sum((x != 0).to(dtype=x.dtype), dims, keepdim=keepdim)
    if p == 1:
        return _sum(a, dims, keepdim=keepdim)
    if p == 2:
        return _SafeSqrt.apply(_sum(x * x, dims, keepdim=keepdim))
    return _sum(a ** p, dims, keepdim=keepdim) ** (1.0 / p)


def norm(input, p="fro", dim=None, keepdim=False, dtype=None):  # noqa: A002
    """Vector p-norm over dim (None: every element): p = 'fro' (2), any number, inf, -inf, 0.

    Example:
        >>> torch.norm(torch.tensor([3., 4.]))
        tensor(5.)
    """
    if dtype is not None:
        input = input.to(dtype=_dt.as_dtype(dtype))
    if not input.dtype.is_floating_point:
        raise RuntimeError(f"linalg.vector_norm: Expected a floating point or complex tensor as input. "
                           f"Got {input.dtype._legacy[:-6]}")
    if p == "fro" or p is None:
        p = 2
    elif p == "nuc":
        raise NotImplementedError("norm(p='nuc') is not supported by rawdev")
    elif isinstance(p, str):
        raise RuntimeError(f"norm(): unknown p={p!r}")
    return _vector_norm(input, float(p), _all_dims(input, dim), keepdim)


# ------------------------------------------------------------------ all / any / count_nonzero
_CUDA_CMP = (_dt.float32, _dt.int64, _dt.bool, _dt.uint8)


def _cmp_ready(x):
    """x in a dtype the device compares: on cuda other integers widen to int64 and other floats go to float32
    (a float64 value below float32's range then counts as zero there)."""
    if x.device.type == "cpu" or x.dtype in _CUDA_CMP:
        return x
    return x.to(dtype=_dt.float32 if x.dtype.is_floating_point else _dt.int64)


def _nonzero_mask(x):
    return x if x.dtype is _dt.bool else _cmp_ready(x) != 0


def _zero_mask(x):
    return (x.to(dtype=_dt.uint8) if x.dtype is _dt.bool else _cmp_ready(x)) == 0


def all(input, dim=None, keepdim=False, *, axis=None):  # noqa: A001,A002
    """True where every element (over dim) is non-zero; a bool tensor.

    Example:
        >>> torch.all(torch.tensor([[1, 0], [2, 3]]), 1)
        tensor([False,  True])
    """
    dims = _all_dims(input, _axis(dim, axis))
    zero = _zero_mask(input.detach())
    return _sum(zero, dims, keepdim=keepdim) == 0 if dims else zero == 0


def any(input, dim=None, keepdim=False, *, axis=None):  # noqa: A001,A002
    """True where some element (over dim) is non-zero; a bool tensor."""
    dims = _all_dims(input, _axis(dim, axis))
    nz = _nonzero_mask(input.detach())
    return _sum(nz, dims, keepdim=keepdim) > 0 if dims else nz.clone()


def count_nonzero(input, dim=None):  # noqa: A002
    """Number of non-zero elements (over dim), int64.

    Example:
        >>> torch.count_nonzero(torch.tensor([0., 1., 2.]))
        tensor(2)
    """
    dims = _all_dims(input, dim)
    nz = _nonzero_mask(input.detach())
    return _sum(nz, dims) if dims else nz.to(dtype=_dt.int64)


# ------------------------------------------------------------------ nansum / nanmean
def nansum(input, dim=None, keepdim=False, *, dtype=None, axis=None):  # noqa: A002
    """Sum treating NaN as zero."""
    x = input.masked_fill(input != input, 0.0) if input.dtype.is_floating_point else input
    dims = _all_dims(input, _axis(dim, axis))
    return _sum(x, dims, keepdim=keepdim, dtype=dtype) if dims else x.clone()


def nanmean(input, dim=None, keepdim=False, *, dtype=None, axis=None):  # noqa: A002
    """Mean of the non-NaN elements."""
    if dtype is not None:
        input = input.to(dtype=_dt.as_dtype(dtype))
    if not input.dtype.is_floating_point:
        raise RuntimeError(f"nanmean(): expected input to have floating point or complex dtype but got "
                           f"{input.dtype._legacy[:-6]}")
    dims = _all_dims(input, _axis(dim, axis))
    if not dims:
        return input.clone()
    count = _sum((input == input).to(dtype=input.dtype), dims, keepdim=keepdim)
    with np.errstate(invalid="ignore", divide="ignore"):
        return nansum(input, dims, keepdim) / count.detach()


# ------------------------------------------------------------------ median / mode (host indices)
return_median, return_mode = _return_type("median"), _return_type("mode")


def _rows(x, dim):
    """x (host float64 copy) as [outer, red, inner] and the layout."""
    outer, red, inner, out = _arg_layout(x, dim, True, "median")
    a = np.asarray(x.detach().cpu()).reshape(outer, red, inner)
    return a, (outer, red, inner)


def _pick(x, idx_np, layout, out_shape):
    from ..tensor.factory import tensor as _tensor
    idx = _tensor(idx_np.reshape(-1).astype(np.int64), device=x.device)
    outer, red, inner = layout
    vals_np = np.take_along_axis(np.asarray(x.detach().cpu()).reshape(outer, red, inner),
                                 idx_np.reshape(outer, 1, inner), 1)
    vals = _tensor(vals_np.reshape(out_shape), dtype=x.dtype, device=x.device)
    return _PickHost.apply(x, vals, idx, layout), reshape(idx, out_shape)


class _PickHost(Function):
    """The values were read on the host; the gradient goes to the picked indices (as max_dim's)."""

    @staticmethod
    def forward(ctx, x, vals, idx, layout):
        ctx.layout, ctx.shape = layout, x.shape
        ctx.save_for_backward(idx)
        return vals

    @staticmethod
    def backward(ctx, g):
        idx, = ctx.saved_tensors
        gx = backend_of(g).arg_reduce_bwd(reshape(g.contiguous(), (-1,)), idx, *ctx.layout)
        return reshape(gx, ctx.shape), None, None, None


def _median_idx(a):
    """Index of the lower median along axis 1 of a [outer, red, inner] array; NaN propagates (first NaN)."""
    red = a.shape[1]
    order = np.argsort(a, axis=1, kind="stable")     # NaN sorts last
    idx = np.take(order, [(red - 1) // 2], axis=1)
    nan = np.isnan(a)
    has_nan = nan.any(axis=1, keepdims=True)
    first_nan = np.argmax(nan, axis=1)[:, None, :]
    return np.where(has_nan, first_nan, idx)


def _device_rows(input, dim):
    """(x with the reduced axis at d, d): the flattened input for dim None."""
    if dim is None:
        return reshape(input, (-1,)), 0
    return input, input._wrap_dim(dim)


def _median_device(input, dim, keepdim):
    """median on cuda through the device sort: position (n-1)//2 of the ascending order, or, in a row holding
    NaN, its first NaN (NaN propagates, as PyTorch); the values gathered from the input (gather's gradient)."""
    from ..autograd.grad_mode import no_grad
    from .scan_sort import sort
    from .select.functions import where
    x, d = _device_rows(input, dim)
    n = x.shape[d]
    with no_grad():
        order = sort(x.detach(), d).indices
        nans = x.detach().isnan().sum(d, keepdim=True)
        pos = where(nans > 0, n - nans, (n - 1) // 2)
        ids = order.gather(d, pos)
    vals = x.gather(d, ids)
    if dim is None:
        vals = reshape(vals, ())
    elif not keepdim:
        vals, ids = vals.squeeze(d), ids.squeeze(d)
    if vals.grad_fn is not None:
        vals.grad_fn.rename("MedianBackward0" if dim is None else "MedianBackward1")
    return vals if dim is None else return_median(vals, ids)


def median(input, dim=None, keepdim=False, *, axis=None):  # noqa: A002
    """median(x): the lower median of every element (0-d). median(x, dim, keepdim): (values, indices).

    Example:
        >>> torch.median(torch.tensor([1., 4., 2., 3.]))
        tensor(2.)
    """
    dim = _axis(dim, axis)
    if input.is_cuda and input.numel() and (dim is None or input.ndim):
        return _median_device(input, dim, keepdim)
    if dim is None:
        if input.numel() == 0:
            return input.new_full((), float("nan")) if input.dtype.is_floating_point else input.new_zeros(())
        a, layout = _rows(input, None)
        vals, _ = _pick(input, _median_idx(a), layout, ())
        if vals.grad_fn is not None:
            vals.grad_fn.rename("MedianBackward0")
        return vals
    a, layout = _rows(input, dim)
    _, _, _, out = _arg_layout(input, dim, keepdim, "median")
    vals, idx = _pick(input, _median_idx(a), layout, out)
    if vals.grad_fn is not None:
        vals.grad_fn.rename("MedianBackward1")
    return return_median(vals, idx)


def _mode_device(input, dim, keepdim):
    """mode on cuda from device ops: the ascending order, run starts where a value differs from the one before,
    run ids by a cumulative sum, run lengths by a scatter-add, the longest run (the first, i.e. smallest value,
    among equally long ones), and the last index holding that value."""
    from ..autograd.grad_mode import no_grad
    from .join import cat
    from .scan_sort import sort
    from .select.functions import where
    d = input._wrap_dim(dim)
    n = input.shape[d]
    with no_grad():
        x = input.detach()
        s = sort(x, d).values
        first = s.narrow(d, 0, 1)
        changed = s.narrow(d, 1, n - 1) != s.narrow(d, 0, n - 1)
        starts = cat([first == first, changed], d) if n > 1 else first == first    # NaN != NaN: a run each
        run = starts.long().cumsum(d) - 1
        ones = s.new_ones(run.shape, dtype=_dt.float32)                # counts in float32: exact below 2**24
        counts = ones.new_zeros(run.shape).scatter_add(d, run, ones)
        best = counts.argmax(d, keepdim=True)                       # the run id of the longest run
        value = s.gather(d, (run == best).long().argmax(d, keepdim=True))
        pos = run.new_ones(()).new_tensor(list(range(n)))
        shape = [1] * x.ndim
        shape[d] = n
        pos = reshape(pos, tuple(shape))
        hit = (x == value) | ((x != x) & (value != value))
        ids = where(hit, pos, -1).amax(d, keepdim=True)
    vals = input.gather(d, ids)
    if not keepdim:
        vals, ids = vals.squeeze(d), ids.squeeze(d)
    if vals.grad_fn is not None:
        vals.grad_fn.rename("ModeBackward0")
    return return_mode(vals, ids)


def mode(input, dim=-1, keepdim=False):  # noqa: A002
    """(values, indices): the most frequent value along dim (the smallest among equally frequent ones) and an
    index where it occurs (the last, as PyTorch's cpu kernel)."""
    if input.is_cuda and input.ndim and input.numel():
        return _mode_device(input, dim, keepdim)
    a, layout = _rows(input, dim)
    outer, red, inner = layout
    idx = np.empty((outer, 1, inner), np.int64)
    for o in range(outer):
        for i in range(inner):
            row = a[o, :, i]
            vals, counts = np.unique(row, return_counts=True)
            v = vals[np.argmax(counts)]
            idx[o, 0, i] = np.nonzero((row == v) | (np.isnan(row) & np.isnan(v)))[0][-1]
    _, _, _, out = _arg_layout(input, dim, keepdim, "mode")
    vals, ids = _pick(input, idx, layout, out)
    if vals.grad_fn is not None:
        vals.grad_fn.rename("ModeBackward0")
    return return_mode(vals, ids)


def sum_to_size(self, *size):
    """self summed down to `size` (which self must broadcast to).

    Example:
        >>> torch.ones(2, 3).sum_to_size(1, 3)
        tensor([[2., 2., 2.]])
    """
    from .shape import _sizes, sum_to
    size = _sizes(size)
    import numpy as np
    try:
        np.broadcast_shapes(tuple(size), tuple(self.shape))
        ok = tuple(np.broadcast_shapes(tuple(size), tuple(self.shape))) == tuple(self.shape)
    except ValueError:
        ok = False
    if not ok:
        raise RuntimeError(f"size {{{list(size)}}} is not expandable to size {{{list(self.shape)}}}.")
    return sum_to(self, size)


declare("prod", prod, family="reduce_composed")
declare("var", var, family="reduce_composed")
declare("std", std, family="reduce_composed")
declare("var_mean", var_mean, family="reduce_composed", method=False)
declare("std_mean", std_mean, family="reduce_composed", method=False)
declare("amax", amax, family="reduce_composed")
declare("amin", amin, family="reduce_composed")
declare("logsumexp", logsumexp, family="reduce_composed")
declare("norm", norm, family="reduce_composed")
declare("all", all, family="reduce_composed")
declare("any", any, family="reduce_composed")
declare("count_nonzero", count_nonzero, family="reduce_composed")
declare("nansum", nansum, family="reduce_composed")
declare("nanmean", nanmean, family="reduce_composed")
declare("median", median, family="reduce_composed")
declare("mode", mode, family="reduce_composed")
declare("sum_to_size", sum_to_size, family="reduce_composed", torch=False)
