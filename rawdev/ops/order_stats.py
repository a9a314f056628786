"""Order statistics and lookups composed from the sort (a device op on cuda: no host ordering): searchsorted,
bucketize, isin, quantile/nanquantile, nanmedian; and aminmax, renorm, dist.

searchsorted merges instead of binary-searching: the values and the sorted sequence are sorted together (a
stable sort; on ties, values first for side='left', after for 'right'), and a running count of the sequence's
elements ahead of each value is its insertion point. That is O((N + M) log(N + M)) per row on either device.
"""

from .. import dtypes as _dt
from ..autograd.grad_mode import no_grad
from ..tensor import factory
from ..tensor.core import Tensor
from .registry import declare
from .rtypes import return_type as _return_type
from .select.functions import where as _where
from .shape import wrap_dim

return_aminmax = _return_type("aminmax", ("min", "max"))
return_nanmedian = _return_type("nanmedian", ("values", "indices"))


def _sizes(t):
    return list(t.shape)


def searchsorted(sorted_sequence, input, *, out_int32=False, right=False, side=None, sorter=None,  # noqa: A002
                 out=None):
    """For each value, the index at which inserting it keeps sorted_sequence's innermost dimension sorted.

    Args:
        sorted_sequence: [..., N], ascending along the last dimension (NaN last), or 1-D for any values.
        input: the values, [..., M] with the same leading dimensions (or any shape against a 1-D sequence), or a
            number.
        out_int32: int32 indices instead of int64.
        right / side: 'left' (default) gives the first index i with seq[i] ≥ v, 'right' the first with seq[i] > v.
        sorter: indices that sort an unsorted sequence (as from argsort).

    Returns:
        An index tensor of input's shape.

    Example:
        >>> torch.searchsorted(torch.tensor([1, 3, 5, 7]), torch.tensor([3, 6, 9]))
        tensor([1, 3, 4])
    """
    from .join import cat
    if out is not None:
        raise TypeError("searchsorted(out=...) is not supported by rawdev")
    if side is not None:
        if side not in ("left", "right"):
            raise RuntimeError(f"torch.searchsorted(): side can only be 'left' or 'right' but got {side}")
        if right and side == "left":
            raise RuntimeError("torch.searchsorted(): side and right can't be set to opposites, got side of left "
                               "while right was True")
        right = side == "right"
    seq = sorted_sequence
    if sorter is not None:
        if tuple(sorter.shape) != tuple(seq.shape):
            raise RuntimeError("torch.searchsorted(): boundary and sorter must have the same size, but got boundary "
                               f"tensor {_sizes(seq)}and got sorter tensor {_sizes(sorter)}")
        seq = seq.gather(-1, sorter)
    scalar = not isinstance(input, Tensor)
    if scalar:
        if seq.ndim != 1:
            raise RuntimeError("torch.searchsorted(): input value can be a scalar only when boundaries tensor "
                               f"dimension is 1, but we got boundaries tensor dim({seq.ndim})")
        input = factory.tensor([input], dtype=seq.dtype, device=seq.device)  # noqa: A001
    if seq.ndim == 0:
        raise RuntimeError("torch.searchsorted(): boundaries tensor should have positive dimension, but got 0 "
                           "dimension")
    if seq.ndim != 1 and tuple(seq.shape[:-1]) != tuple(input.shape[:-1]):
        raise RuntimeError("torch.searchsorted(): boundaries tensor should be 1 dimension or the first N-1 "
                           "dimensions of boundaries tensor and input value tensor must match, but we got "
                           f"boundaries tensor {_sizes(seq)} and input value tensor {_sizes(input)}")
    if seq.device != input.device:
        raise RuntimeError(f"Expected all tensors to be on the same device, but found at least two devices, "
                           f"{seq.device} and {input.device}!")
    with no_grad():
        from .binary_math import _operands
        vals_shape = tuple(input.shape)
        v = input.detach().reshape(1, -1) if seq.ndim == 1 else input.detach().reshape(-1, input.shape[-1])
        s = seq.detach().reshape(1, -1) if seq.ndim == 1 else seq.detach().reshape(-1, seq.shape[-1])
        v, s = _operands("searchsorted", v, s)
        n, m = s.shape[1], v.shape[1]
        joined = cat([s, v], 1) if right else cat([v, s], 1)
        from_seq = factory.zeros(joined.shape[1], dtype=_dt.int64, device=seq.device)
        if right:
            from_seq[:n] = 1
        else:
            from_seq[m:] = 1
        order = joined.sort(-1, stable=True).indices
        is_seq = from_seq.take(order)                        # 1 where the sorted element came from the sequence
        ahead = is_seq.cumsum(-1) - is_seq                   # sequence elements before each position
        pos_of_value = order - (n if right else 0)           # the value's column, where it came from the values
        slot = _where(is_seq.bool(), m, pos_of_value)        # sequence elements go to a spare column, dropped
        res = factory.zeros((joined.shape[0], m + 1), dtype=_dt.int64, device=seq.device)
        res.scatter_(1, slot, ahead)
        res = res[:, :m]
        if v.dtype.is_floating_point:                        # NaN is inserted after everything (PyTorch's order)
            res = _where(v.isnan(), n, res)
        res = res.reshape(vals_shape)
        if out_int32:
            res = res.to(dtype=_dt.int32)
    return res.reshape(()) if scalar else res


def bucketize(input, boundaries, *, out_int32=False, right=False, out=None):  # noqa: A002
    """The bucket of each value among 1-D ascending boundaries: i with boundaries[i−1] < v ≤ boundaries[i]
    (right=False), or boundaries[i−1] ≤ v < boundaries[i] (right=True).

    Example:
        >>> torch.bucketize(torch.tensor([1, 5, 9]), torch.tensor([2, 4, 6, 8]))
        tensor([0, 2, 4])
    """
    if boundaries.ndim != 1:
        raise RuntimeError(f"boundaries tensor must be 1 dimension, but got dim({boundaries.ndim})")
    return searchsorted(boundaries, input, out_int32=out_int32, right=right, out=out)


def isin(elements, test_elements, *, assume_unique=False, invert=False):
    """Whether each element occurs in test_elements (either may be a number), by sorting the test elements and
    looking each element up (searchsorted).

    Example:
        >>> torch.isin(torch.tensor([1, 2, 3]), torch.tensor([2, 4]))
        tensor([False,  True, False])
    """
    if not isinstance(elements, Tensor) and not isinstance(test_elements, Tensor):
        raise TypeError("isin() expects at least one tensor")
    like = elements if isinstance(elements, Tensor) else test_elements
    tensor = factory.tensor
    e = elements if isinstance(elements, Tensor) else tensor(elements, device=like.device)
    t = test_elements if isinstance(test_elements, Tensor) else tensor(test_elements, device=like.device)
    with no_grad():
        if t.numel() == 0:
            hit = factory.zeros(tuple(e.shape), dtype=_dt.bool, device=e.device)
        else:
            from .binary_math import _operands
            e2, t2 = _operands("isin", e.detach(), t.detach().reshape(-1))
            s = t2.sort(stable=True).values
            pos = searchsorted(s, e2.reshape(-1)).clamp(max=s.shape[0] - 1)
            hit = (s.take(pos) == e2.reshape(-1)).reshape(tuple(e.shape))
    return ~hit if invert else hit


def aminmax(input, *, dim=None, keepdim=False):  # noqa: A002
    """(min, max) over dim, or over every element.

    Example:
        >>> torch.aminmax(torch.tensor([3, 1, 2]))
        torch.return_types.aminmax(min=tensor(1), max=tensor(3))
    """
    if input.numel() == 0:
        raise RuntimeError("aminmax(): cannot compute aminmax over an empty dimension as the operation has no "
                           "identity.")
    if dim is None:
        lo, hi = input.amin(), input.amax()
        if keepdim:
            shape = (1,) * input.ndim
            lo, hi = lo.reshape(shape), hi.reshape(shape)
        return return_aminmax(lo, hi)
    return return_aminmax(input.amin(dim, keepdim), input.amax(dim, keepdim))


def renorm(input, p, dim, maxnorm):  # noqa: A002
    """Each slice along dim whose p-norm exceeds maxnorm scaled down to norm maxnorm (the others unchanged).

    Example:
        >>> torch.renorm(torch.tensor([[3., 4.], [0.3, 0.4]]), 2, 0, 1.)
        tensor([[0.6000, 0.8000],
                [0.3000, 0.4000]])
    """
    if p <= 0:
        raise RuntimeError("renorm: non-positive-norm not supported")
    d = wrap_dim(dim, input.ndim)
    others = [i for i in range(input.ndim) if i != d]
    norms = input.norm(p, others, keepdim=True) if others else input.abs()
    factor = _where(norms > maxnorm, maxnorm / (norms + 1e-7), 1.0)
    return input * factor


def dist(input, other, p=2):  # noqa: A002
    """The p-norm of input − other (broadcast).

    Example:
        >>> torch.dist(torch.tensor([1., 1.]), torch.tensor([4., 5.]))
        tensor(5.)
    """
    return (input - other).norm(p)


# ------------------------------------------------------------------ quantiles
_INTERPOLATIONS = ("linear", "lower", "higher", "midpoint", "nearest")


def _quantile(name, input, q, dim, keepdim, interpolation, ignore_nan):  # noqa: A002
    if not isinstance(input, Tensor) or input.dtype not in (_dt.float32, _dt.float64):
        raise RuntimeError(f"{name}() input tensor must be either float or double dtype")
    if interpolation not in _INTERPOLATIONS:
        raise RuntimeError(f"{name}() interpolation must be one of linear, lower, higher, midpoint or nearest. "
                           f"Got {interpolation}")
    if isinstance(q, Tensor):
        if q.dtype is not input.dtype:
            raise RuntimeError(f"{name}() q tensor must be same dtype as the input tensor")
        if q.ndim > 1:
            raise RuntimeError(f"{name}() q must be a scalar or 1D tensor")
        qs = q.detach().reshape(-1)
        if qs.numel() and not bool(((qs >= 0) & (qs <= 1)).all().item()):
            raise RuntimeError(f"{name}() q values must be in the range [0, 1]")
        q_scalar = q.ndim == 0
        qs = qs.to(device=input.device)
    else:
        qf = float(q)
        if not 0 <= qf <= 1:
            raise RuntimeError(f"{name}() q must be in the range [0, 1] but got {qf}")
        q_scalar = True
        qs = factory.tensor([qf], dtype=input.dtype, device=input.device)
    if input.numel() == 0 and dim is None:
        raise RuntimeError(f"{name}() input tensor must be non-empty")
    x = input.reshape(-1) if dim is None else input.movedim(wrap_dim(dim, input.ndim), -1)
    n = x.shape[-1]
    if n == 0:
        raise RuntimeError(f"{name}() input tensor must be non-empty")
    srt = x.sort(-1, stable=True).values                     # NaN last
    with no_grad():
        nans = x.detach().isnan().sum(-1, keepdim=True)
        k = (n - nans) if ignore_nan else factory.full_like(nans, n)
        rank = qs * (k.to(dtype=input.dtype) - 1)            # [..., Q]
        if interpolation == "lower":
            rank = rank.floor()
        elif interpolation == "higher":
            rank = rank.ceil()
        elif interpolation == "nearest":
            rank = rank.round()                              # half to even, as PyTorch
        lo = rank.floor().clamp(0, n - 1).to(dtype=_dt.int64)
        hi = rank.ceil().clamp(0, n - 1).to(dtype=_dt.int64)
        weight = (rank - rank.floor()) if interpolation != "midpoint" else _where(hi != lo, 0.5, 0.0) + 0 * rank
        bad = (k == 0) if ignore_nan else (nans > 0)         # all-NaN row, or (quantile) any NaN: NaN
    v_lo, v_hi = srt.gather(-1, lo), srt.gather(-1, hi)
    if interpolation in ("lower", "higher", "nearest"):
        out = v_lo
    else:
        out = v_lo + (v_hi - v_lo) * weight
    out = _where(bad.expand_as(out), float("nan"), out)
    # layout: the q dimension first (when q is a 1-D tensor), then the kept/reduced dimensions
    if dim is None:
        out = out.reshape((1,) * input.ndim + (out.shape[-1],)) if keepdim else out.reshape(out.shape[-1])
    elif keepdim:
        out = out.unsqueeze(wrap_dim(dim, input.ndim))        # the q dimension stays last until the end
    if q_scalar:
        return out.squeeze(-1)
    return out.movedim(-1, 0)


def quantile(input, q, dim=None, keepdim=False, *, interpolation="linear", out=None):  # noqa: A002
    """The q-th quantiles along dim (or of every element): the sorted values interpolated at position q·(n − 1).
    A row holding NaN gives NaN.

    Args:
        input: a float32/float64 tensor.
        q: a number in [0, 1], or a 0-D/1-D tensor of them (then the result has a leading dimension per q).
        dim, keepdim: the dimension reduced (None: every element).
        interpolation: 'linear', 'lower', 'higher', 'midpoint' or 'nearest'.

    Example:
        >>> torch.quantile(torch.tensor([0., 1., 2., 3.]), 0.5)
        tensor(1.5000)
    """
    if out is not None:
        raise TypeError("quantile(out=...) is not supported by rawdev")
    return _quantile("quantile", input, q, dim, keepdim, interpolation, False)


def nanquantile(input, q, dim=None, keepdim=False, *, interpolation="linear", out=None):  # noqa: A002
    """quantile ignoring NaN (a row of only NaN gives NaN).

    Example:
        >>> torch.nanquantile(torch.tensor([0., float('nan'), 2.]), 0.5)
        tensor(1.)
    """
    if out is not None:
        raise TypeError("nanquantile(out=...) is not supported by rawdev")
    return _quantile("nanquantile", input, q, dim, keepdim, interpolation, True)


def nanmedian(input, dim=None, keepdim=False):  # noqa: A002
    """median ignoring NaN: the lower middle of the non-NaN values (NaN for a row of only NaN). With dim:
    (values, indices).

    Example:
        >>> torch.nanmedian(torch.tensor([1., float('nan'), 3., 2.]))
        tensor(2.)
    """
    if dim is None:
        x, d = input.reshape(-1), 0
    else:
        if input.ndim == 0:
            x, d = input.reshape(1), 0
        else:
            x, d = input, wrap_dim(dim, input.ndim)
    n = x.shape[d]
    if n == 0:
        if dim is None:
            return input.new_full((), float("nan"))
        raise IndexError(f"nanmedian(): Expected reduction dim {d} to have non-zero size.")
    with no_grad():
        order = x.detach().sort(d, stable=True).indices
        if x.dtype.is_floating_point:
            k = n - x.detach().isnan().sum(d, keepdim=True)
            pos = ((k - 1).clamp_min(0)) // 2
        else:
            pos = factory.full_like(order.narrow(d, 0, 1), (n - 1) // 2)
        ids = order.gather(d, pos)
    vals = x.gather(d, ids)
    if dim is None:
        return vals.reshape(())
    if input.ndim == 0:
        return return_nanmedian(vals.reshape(()), ids.reshape(()))
    if not keepdim:
        vals, ids = vals.squeeze(d), ids.squeeze(d)
    return return_nanmedian(vals, ids)


declare("searchsorted", searchsorted, family="order_stats", method=False)
declare("bucketize", bucketize, family="order_stats", method=False)
declare("isin", isin, family="order_stats", method=False)
declare("aminmax", aminmax, family="order_stats")
declare("renorm", renorm, family="order_stats", inplace=True)
declare("dist", dist, family="order_stats")
declare("quantile", quantile, family="order_stats")
declare("nanquantile", nanquantile, family="order_stats")
declare("nanmedian", nanmedian, family="order_stats")
