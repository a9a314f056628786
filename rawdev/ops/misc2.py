"""More of the tensor API, composed from declared ops: sum_to_size,
positive, sgn, fmax/fmin, ldexp, frexp, cov, corrcoef, histogram, unique_consecutive, argwhere, unravel_index,
ravel, hsplit/vsplit/dsplit, select/slice/diagonal_scatter, narrow_copy, and the complex-number queries a
real-only library answers trivially (conj, resolve_conj, resolve_neg, real, is_complex, is_conj)."""

from .. import dtypes as _dt
from ..autograd.function import Function
from ..tensor import factory
from ..tensor.core import Tensor
from .registry import declare
from .rtypes import return_type as _rt
from .select import where as _where
from .shape import wrap_dim


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


def cov(input, *, correction=1, fweights=None, aweights=None):  # noqa: A002
    """The covariance matrix of the variables in input's rows (observations in columns).

    Example:
        >>> torch.cov(torch.tensor([[0., 1., 2.], [2., 1., 0.]]))
        tensor([[ 1., -1.],
                [-1.,  1.]])
    """
    if input.ndim > 2:
        raise RuntimeError(f"cov(): expected input to have two or fewer dimensions but got an input with "
                           f"{input.ndim} dimensions")
    x = input.reshape(1, -1) if input.ndim < 2 else input
    if not x.dtype.is_floating_point:
        x = x.to(dtype=_dt.get_default_dtype())
    n = x.shape[1]
    w = None
    if fweights is not None:
        w = fweights.to(dtype=x.dtype)
    if aweights is not None:
        w = aweights.to(dtype=x.dtype) if w is None else w * aweights.to(dtype=x.dtype)
    if w is None:
        avg = x.mean(1, keepdim=True)
        norm = float(n - correction)
        xc = x - avg
        c = (xc @ xc.transpose(0, 1)) / norm
    else:
        wsum = w.sum()
        avg = (x * w).sum(1, keepdim=True) / wsum
        if correction == 0:
            norm = wsum
        elif aweights is None:
            norm = wsum - correction
        else:
            norm = wsum - correction * (w * aweights.to(dtype=x.dtype)).sum() / wsum
        xc = x - avg
        c = ((xc * w) @ xc.transpose(0, 1)) / norm
    return c.reshape(()) if input.ndim < 2 else c


def corrcoef(input):  # noqa: A002
    """Pearson correlation coefficients of input's rows, clipped to [−1, 1].

    Example:
        >>> torch.corrcoef(torch.tensor([[0., 1., 2.], [2., 1., 0.]]))
        tensor([[ 1., -1.],
                [-1.,  1.]])
    """
    c = cov(input)
    if c.ndim == 0:
        return c / c
    d = c.diagonal()
    s = d.sqrt()
    return (c / s.unsqueeze(1) / s.unsqueeze(0)).clamp(-1, 1)


return_histogram = _rt("histogram", ["hist", "bin_edges"])


def histogram(input, bins=100, *, range=None, weight=None, density=False, out=None):  # noqa: A001,A002
    """(hist, bin_edges) of input's values in `bins` equal bins over `range` (default: min..max), or over the
    given edges (a 1-D tensor); the last bin includes its right edge, as NumPy's.

    Example:
        >>> torch.histogram(torch.tensor([1., 2., 1.]), bins=2, range=(0., 2.)).hist
        tensor([0., 3.])
    """
    from .order_stats import searchsorted
    x = input.detach().reshape(-1)
    if isinstance(bins, Tensor):
        edges = bins.to(dtype=input.dtype, device=input.device)
    else:
        if range is None:
            lo, hi = (float(x.min().item()), float(x.max().item())) if x.numel() else (0.0, 1.0)
        else:
            lo, hi = float(range[0]), float(range[1])
        if lo == hi:
            lo, hi = lo - 0.5, hi + 0.5
        edges = factory.linspace(lo, hi, int(bins) + 1, dtype=input.dtype, device=input.device)
    nb = edges.shape[0] - 1
    idx = searchsorted(edges, x, right=True) - 1
    idx = _where(x == edges[-1], nb - 1, idx)                 # the last edge belongs to the last bin
    inside = (idx >= 0) & (idx < nb)
    w = weight.reshape(-1).to(dtype=input.dtype) if weight is not None else factory.ones_like(x)
    hist = factory.zeros((nb,), dtype=input.dtype, device=input.device)
    hist = hist.index_add(0, _where(inside, idx, 0), _where(inside, w, 0.0))
    if density:
        hist = hist / (hist.sum() * (edges[1:] - edges[:-1]))
    return return_histogram(hist, edges)


def unique_consecutive(input, return_inverse=False, return_counts=False, dim=None):  # noqa: A002
    """input with each run of equal consecutive values collapsed to one (flattened when dim is None).

    Example:
        >>> torch.unique_consecutive(torch.tensor([1, 1, 2, 2, 3, 1, 1]))
        tensor([1, 2, 3, 1])
    """
    from .join import cat
    if dim is not None:
        raise NotImplementedError("unique_consecutive(dim=...) is not supported by rawdev")
    x = input.reshape(-1)
    if x.numel() == 0:
        out = x.clone()
        extra = ()
    else:
        start = cat([factory.ones((1,), dtype=_dt.bool, device=x.device), x[1:] != x[:-1]])
        run = start.to(dtype=_dt.int64).cumsum(0) - 1
        firsts = start.nonzero().reshape(-1)
        out = x.index_select(0, firsts)
        extra = ()
        if return_inverse:
            extra += (run.reshape(input.shape),)
        if return_counts:
            ends = cat([firsts[1:], factory.tensor([x.numel()], device=x.device)])
            extra += (ends - firsts,)
        if not extra:
            return out
        return (out,) + extra
    if return_inverse:
        extra += (factory.zeros(input.shape, dtype=_dt.int64, device=input.device),)
    if return_counts:
        extra += (factory.zeros((0,), dtype=_dt.int64, device=input.device),)
    return (out,) + extra if extra else out


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
    flat = _where(indices < 0, indices + total, indices).to(dtype=_dt.int64)
    out = []
    for s in reversed(shape):
        out.append(flat % s)
        flat = flat.div(s, rounding_mode="floor")
    return tuple(reversed(out))


def ravel(input):  # noqa: A002
    """input flattened to 1-D (a view when it is contiguous)."""
    return input.reshape(-1)


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


class _PlaceInto(Function):
    """zeros of `shape` with view_fn(zeros) = src; the backward reads the same view of the gradient."""
    node_name = "SliceScatterBackward0"

    @staticmethod
    def forward(ctx, src, view_fn, shape):
        ctx.view_fn = view_fn
        z = factory.zeros(shape, dtype=src.dtype, device=src.device)
        view_fn(z).copy_(src)
        return z

    @staticmethod
    def backward(ctx, g):
        return ctx.view_fn(g).contiguous(), None, None


def _embed(input, src, view_fn):  # noqa: A002
    """input with view_fn(input) replaced by src, out of place and differentiable in both."""
    mask = factory.zeros(input.shape, dtype=_dt.bool, device=input.device)
    view_fn(mask).fill_(True)
    placed = _PlaceInto.apply(src.to(dtype=input.dtype), view_fn, tuple(input.shape))
    return _where(mask, placed, input)


def select_scatter(input, src, dim, index):  # noqa: A002
    """input with input.select(dim, index) replaced by src.

    Example:
        >>> torch.select_scatter(torch.zeros(2, 2), torch.ones(2), 0, 0)
        tensor([[1., 1.],
                [0., 0.]])
    """
    return _embed(input, src, lambda t: t.select(dim, index))


def slice_scatter(input, src, dim=0, start=None, end=None, step=1):  # noqa: A002
    """input with input[start:end:step] along dim replaced by src.

    Example:
        >>> torch.slice_scatter(torch.zeros(4), torch.ones(2), start=2)
        tensor([0., 0., 1., 1.])
    """
    d = wrap_dim(dim, input.ndim)
    idx = (slice(None),) * d + (slice(start, end, step),)
    return _embed(input, src, lambda t: t[idx])


def diagonal_scatter(input, src, offset=0, dim1=0, dim2=1):  # noqa: A002
    """input with its diagonal (offset, dim1, dim2) replaced by src.

    Example:
        >>> torch.diagonal_scatter(torch.zeros(2, 2), torch.ones(2))
        tensor([[1., 0.],
                [0., 1.]])
    """
    return _embed(input, src, lambda t: t.diagonal(offset, dim1, dim2))


def put_(self, index, source, accumulate=False):
    """Write source into self at the flat (row-major) positions index, in place; accumulate adds instead
    (repeated indices then add up).

    Example:
        >>> torch.zeros(2, 2).put_(torch.tensor([0, 3]), torch.tensor([1., 2.]))
        tensor([[1., 0.],
                [0., 2.]])
    """
    n = self.numel()
    idx = index.reshape(-1).to(dtype=_dt.int64)
    if idx.numel() and (int(idx.max().item()) >= n or int(idx.min().item()) < -n):
        raise IndexError(f"out of range: tried to access index {int(idx.max().item())} on a tensor of {n} elements.")
    idx = _where(idx < 0, idx + n, idx)
    flat = self.reshape(-1).clone() if not self.is_contiguous() else self.reshape(-1)
    src = source.reshape(-1).to(dtype=self.dtype)
    if accumulate:
        flat.index_add_(0, idx, src)
    else:
        flat.index_copy_(0, idx, src)
    if flat.data_ptr() != self.data_ptr() or not self.is_contiguous():
        self.copy_(flat.reshape(self.shape))
    return self


def put(input, index, source, accumulate=False):  # noqa: A002
    """Out-of-place put_."""
    return put_(input.clone(), index, source, accumulate)


def _host_only(name):
    def check(t):
        if t.is_cuda:
            raise TypeError(f"{name} is only implemented on CPU tensors")
    return check


def apply_(self, callable):  # noqa: A002
    """Replace each element x of a cpu tensor with callable(x) (a Python loop, as PyTorch's)."""
    _host_only("apply_")(self)
    vals = [callable(v) for v in self.reshape(-1).tolist()]
    from ..autograd.grad_mode import no_grad
    with no_grad():
        self.copy_(factory.tensor(vals, dtype=self.dtype).reshape(self.shape))
    return self


def map_(self, tensor, callable):  # noqa: A002
    """self[i] = callable(self[i], tensor[i]) elementwise for cpu tensors (tensor broadcast to self)."""
    _host_only("map_")(self)
    other = tensor.expand_as(self).reshape(-1).tolist()
    vals = [callable(a, b) for a, b in zip(self.reshape(-1).tolist(), other)]
    from ..autograd.grad_mode import no_grad
    with no_grad():
        self.copy_(factory.tensor(vals, dtype=self.dtype).reshape(self.shape))
    return self


def narrow_copy(input, dim, start, length):  # noqa: A002
    """A copy of input.narrow(dim, start, length)."""
    return input.narrow(dim, start, length).clone()


def _view_copy(view_name):
    """torch.<view>_copy: the view's values as a new tensor (its own memory), as PyTorch's *_copy ops."""
    def copy(input, *args, **kwargs):  # noqa: A002
        return getattr(input, view_name)(*args, **kwargs).clone()
    copy.__name__ = f"{view_name}_copy"
    copy.__doc__ = f"A copy of input.{view_name}(...): a new tensor that shares no memory with input."
    return copy


def expand_copy(input, size, *, implicit=False):  # noqa: A002
    """A copy of input.expand(size): every repeated element is its own memory location (writable)."""
    return input.expand(size).clone()


declare("sum_to_size", sum_to_size, family="misc2", torch=False)
declare("cov", cov, family="misc2")
declare("corrcoef", corrcoef, family="misc2")
declare("histogram", histogram, family="misc2")
declare("unique_consecutive", unique_consecutive, family="misc2")
declare("argwhere", argwhere, family="misc2")
declare("ravel", ravel, family="misc2")
declare("hsplit", hsplit, family="misc2")
declare("vsplit", vsplit, family="misc2")
declare("dsplit", dsplit, family="misc2")
declare("select_scatter", select_scatter, family="misc2")
declare("slice_scatter", slice_scatter, family="misc2")
declare("diagonal_scatter", diagonal_scatter, family="misc2")
declare("narrow_copy", narrow_copy, family="misc2")
declare("expand_copy", expand_copy, family="misc2", method=False)
for _name in ("permute", "view", "transpose", "t", "squeeze", "unsqueeze", "diagonal", "select", "as_strided",
              "unfold", "detach", "alias", "unbind", "split", "split_with_sizes"):
    if _name not in ("alias", "unbind", "split", "split_with_sizes"):
        declare(f"{_name}_copy", _view_copy(_name), family="misc2", method=False)
declare("unravel_index", unravel_index, family="misc2", method=False)
declare("put", put, family="misc2")
declare("put_", put_, family="misc2", torch=False)
declare("apply_", apply_, family="misc2", torch=False)
declare("map_", map_, family="misc2", torch=False)
