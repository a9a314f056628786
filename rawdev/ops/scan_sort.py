"""Scans and sorting: cumsum, cumprod, logcumsumexp, cummax/cummin, sort, argsort, msort, topk, kthvalue,
unique, unique_consecutive, bincount, histc, histogram.

cumsum/cumprod/logcumsumexp run on the tensor's device as a log-step (Hillis-Steele) scan composed of declared
ops: ceil(log2(n)) shifted adds (multiplies, log-add-exps), each a few elementwise launches over the whole
tensor, so autograd comes with them (cumprod's gradient is exact with zeros).
sort/argsort/msort/topk/kthvalue of cuda tensors order on the device: float32 rows of up to 2048 elements with
the sort_rows_f32 kernel (a stable bitonic sort per row in shared memory), longer rows and every other dtype with
sort_long.ptx (chunk sorts and merge passes, rawdev/ops/cuda_sortlong.py) and a gather of the values; cummax/
cummin on cuda are a log-step scan of device ops. On the cpu the order is numpy's, and the values are gathered
with index_select over the flat input, whose backward (index_add) scatters the gradient to the selected
elements.
unique (dim=None), bincount and histc of cuda tensors are device ops over the device sort (runs, a cumsum,
scatters); what their output size depends on (the number of distinct values, max(input), the data's range)
is read back, as PyTorch syncs for it. unique with dim and the cpu use numpy.
"""
import builtins

import numpy as np

from .. import dtypes as _dt
from ..autograd.function import Function
from ..autograd.grad_mode import is_grad_enabled, no_grad
from ..tensor import factory
from ..tensor.core import Tensor
from .dispatch import backend_of
from .reduce.functions import _axis
from .registry import declare
from .rtypes import return_type as _return_type
from .select.functions import where as _where
from .shape import reshape

return_sort, return_topk, return_kthvalue = _return_type("sort"), _return_type("topk"), _return_type("kthvalue")
return_cummax, return_cummin = _return_type("cummax"), _return_type("cummin")


# ------------------------------------------------------------------ log-step scans
def _scan(x, dim, combine):
    """Inclusive scan of x along dim with an associative combine(a, b) (a the earlier part)."""
    from .join import cat
    if x.ndim == 0:
        return x.clone()
    d = x._wrap_dim(dim)
    y = x.movedim(d, -1)
    n = y.shape[-1]
    if n == 0:
        return x.clone()
    s = 1
    while s < n:
        y = cat([y[..., :s], combine(y[..., :n - s], y[..., s:])], -1)
        s *= 2
    return y.movedim(-1, d).contiguous()


class _RowScan(Function):
    """cumsum / cumprod along the last dim by the scan_{sum,prod}_f32 kernel (float32 on cuda). cumsum's
    backward is the reverse scan of the gradient; cumprod takes this path only when no gradient is needed."""

    @staticmethod
    def forward(ctx, x, kind):
        ctx.kind = kind
        return backend_of(x).scan_rows(x.contiguous(), kind)

    @staticmethod
    def backward(ctx, g):
        if ctx.kind != "sum":
            raise RuntimeError("cumprod's kernel path has no backward")
        return backend_of(g).scan_rows(g.contiguous(), "sum", reverse=True), None


def _kernel_scan(x, dim, kind):
    """The kernel path when it applies (float32 on cuda; cumprod without a gradient), else None."""
    if x.device.type == "cpu" or x.dtype is not _dt.float32 or x.ndim == 0:
        return None
    if kind == "prod" and x.requires_grad and is_grad_enabled():
        return None
    d = x._wrap_dim(dim)
    y = _RowScan.apply(x.movedim(d, -1), kind)
    if y.grad_fn is not None:
        y.grad_fn.rename("CumsumBackward0")
    return y.movedim(-1, d).contiguous()


def _scan_input(input, dtype):
    if dtype is not None:
        return input.to(dtype=_dt.as_dtype(dtype))
    if not input.dtype.is_floating_point:
        return input.to(dtype=_dt.int64)
    return input


def cumsum(input, dim, *, dtype=None, axis=None):  # noqa: A002
    """Cumulative sum along dim.

    Example:
        >>> torch.cumsum(torch.tensor([1., 2., 3.]), 0)
        tensor([1., 3., 6.])
    """
    x, dim = _scan_input(input, dtype), _axis(dim, axis)
    if x.dtype in (_dt.float16, _dt.bfloat16):   # accumulated in float32, rounded once (PyTorch's opmath)
        return cumsum(x.float(), dim).to(dtype=x.dtype)
    y = _kernel_scan(x, dim, "sum")
    return y if y is not None else _scan(x, dim, lambda a, b: a + b)


def cumprod(input, dim, *, dtype=None, axis=None):  # noqa: A002
    """Cumulative product along dim."""
    x, dim = _scan_input(input, dtype), _axis(dim, axis)
    if x.dtype in (_dt.float16, _dt.bfloat16):
        return cumprod(x.float(), dim).to(dtype=x.dtype)
    y = _kernel_scan(x, dim, "prod")
    return y if y is not None else _scan(x, dim, lambda a, b: a * b)


def _logaddexp(a, b):
    m = a.detach().clone()
    bigger = b.detach() > m
    m = m.masked_fill(bigger, 0.0) + b.detach() * bigger.to(dtype=m.dtype)
    m = m.masked_fill(m.abs() == float("inf"), 0.0)
    return ((a - m).exp() + (b - m).exp()).log() + m


def logcumsumexp(input, dim, *, axis=None):  # noqa: A002
    """log(cumsum(exp(input), dim)), stable (the running pair's max is subtracted)."""
    x = input if input.dtype.is_floating_point else input.to(dtype=_dt.get_default_dtype())
    return _scan(x, _axis(dim, axis), _logaddexp)


# ------------------------------------------------------------------ host-ordered selections
def _host_rows(x, dim):
    """(the host float64/int array with dim moved last, the wrapped dim)."""
    if x.ndim == 0:
        return np.asarray(x.detach().cpu()).reshape(1), None
    d = x._wrap_dim(dim)
    return np.moveaxis(np.asarray(x.detach().cpu()), d, -1), d


def _take(x, idx, d):
    """x's elements at idx (an int array along the moved-last dim d; None for a 0-d x), gathered on x's device
    with index_select over the flat tensor: (values, int64 indices), both with dim d in place."""
    from ..tensor.factory import tensor as _tensor
    if d is None:
        idx = idx.reshape(())
        flat = reshape(x, (1,))
        return reshape(flat.index_select(0, _tensor([0], device=x.device)), ()), \
            _tensor(0, dtype=_dt.int64, device=x.device)
    xm = x.movedim(d, -1)
    n = xm.shape[-1]
    rows = np.arange(int(np.prod(idx.shape[:-1], dtype=np.int64)), dtype=np.int64).reshape(idx.shape[:-1] + (1,))
    flat = (rows * n + idx).reshape(-1)
    vals = reshape(xm, (-1,)).index_select(0, _tensor(flat, device=x.device))
    vals = reshape(vals, idx.shape).movedim(-1, d)
    ids = _tensor(np.ascontiguousarray(np.moveaxis(idx, -1, d)), dtype=_dt.int64, device=x.device)
    return vals, ids


def _order(a, descending):
    """Stable argsort along the last axis with NaN as the greatest value (as PyTorch)."""
    if a.dtype == np.bool_:
        a = a.astype(np.int8)
    if not descending:
        return np.argsort(a, axis=-1, kind="stable")
    if np.issubdtype(a.dtype, np.floating):
        nan = np.isnan(a)
        return np.lexsort((np.where(nan, 0.0, -a), ~nan), axis=-1)
    return np.argsort(-a.astype(np.int64), axis=-1, kind="stable")


class _SortRows(Function):
    """The first k of each last-dim row in sorted order by the sort_rows_f32 kernel (cuda float32); the gradient
    of the values is scattered back to the input through the flat indices (index_add)."""

    @staticmethod
    def forward(ctx, x, k, descending):
        vals, idx, flat = backend_of(x).sort_rows(x.contiguous(), k, descending)
        ctx.shape = x.shape
        ctx.set_materialize_grads(False)
        ctx.save_for_backward(flat)
        return vals, idx

    @staticmethod
    def backward(ctx, g, _gi):
        flat, = ctx.saved_tensors
        if g is None:
            return None, None, None
        B = backend_of(g)
        n = 1
        for s in ctx.shape:
            n *= s
        gx = B.full((n,), 0, g.dtype, g.device)
        B.index_add_(gx, 1, n, 1, reshape(flat, (-1,)), reshape(g.contiguous(), (-1,)))
        return reshape(gx, ctx.shape), None, None


def _kernel_sort(x, dim, k, descending):
    """(values, indices) of the first k along dim in sorted order on the device, or None where the host orders
    (a cpu tensor, a 0-d input or an empty row). float32 rows up to SORT_MAX: the one-kernel bitonic sort;
    longer rows and the other dtypes: sort_indices (chunk sorts and merge passes), the values gathered through
    the order (their gradient is gather's scatter-add)."""
    if x.device.type == "cpu" or x.ndim == 0:
        return None
    d = x._wrap_dim(dim)
    n = x.shape[d]
    if n == 0:
        return None
    if x.dtype is _dt.float32 and n <= backend_of(x).SORT_MAX:
        vals, idx = _SortRows.apply(x.movedim(d, -1), k, descending)
        return vals.movedim(-1, d), idx.movedim(-1, d).contiguous()
    xm = x.movedim(d, -1)
    lead = tuple(xm.shape[:-1])
    with no_grad():
        order = backend_of(x).sort_indices(reshape(xm.detach(), (-1, n)), descending)
        order = reshape(order, lead + (n,)).narrow(-1, 0, k).contiguous()
    vals = xm.gather(-1, order)
    return vals.movedim(-1, d), order.movedim(-1, d).contiguous()


def _row_length(x, dim):
    """(length of dim, the wrapped dim or None for a 0-d input)."""
    if x.ndim == 0:
        return 1, None
    d = x._wrap_dim(dim)
    return x.shape[d], d


def sort(input, dim=-1, descending=False, stable=False, *, axis=None):  # noqa: A002
    """(values, indices) of input sorted along dim; NaN sorts as the greatest value; ties keep their order.

    Example:
        >>> torch.sort(torch.tensor([3., 1., 2.]))
        torch.return_types.sort(
        values=tensor([1., 2., 3.]),
        indices=tensor([1, 2, 0]))
    """
    dim = _axis(dim, axis) if axis is not None else dim
    got = _kernel_sort(input, dim, input.shape[input._wrap_dim(dim)] if input.ndim else 1, descending)
    if got is None:
        a, d = _host_rows(input, dim)
        got = _take(input, _order(a, descending).astype(np.int64), d)
    vals, ids = got
    if vals.grad_fn is not None:
        vals.grad_fn.rename("SortBackward0")
    return return_sort(vals, ids)


def argsort(input, dim=-1, descending=False, stable=False):  # noqa: A002
    """The indices that sort input along dim."""
    return sort(input, dim, descending, stable).indices


def msort(input):  # noqa: A002
    """input sorted along its first dim."""
    return sort(input, 0).values


def topk(input, k, dim=-1, largest=True, sorted=True):  # noqa: A002
    """(values, indices) of the k largest (largest=False: smallest) elements along dim, in sorted order."""
    n, d = _row_length(input, dim)
    if not 0 <= k <= n:
        raise RuntimeError("selected index k out of range")
    got = _kernel_sort(input, dim, k, largest)
    if got is None:
        a, d = _host_rows(input, dim)
        got = _take(input, _order(a, largest)[..., :k].astype(np.int64), d)
    vals, ids = got
    if vals.grad_fn is not None:
        vals.grad_fn.rename("TopkBackward0")
    return return_topk(vals, ids)


def kthvalue(input, k, dim=-1, keepdim=False):  # noqa: A002
    """(values, indices) of the k-th smallest element (1-based) along dim."""
    n, d = _row_length(input, dim)
    if not 1 <= k <= n:
        raise RuntimeError(f"kthvalue(): selected number k out of range for dimension {dim if d is None else d}")
    got = _kernel_sort(input, dim, k, False)
    if got is not None:
        vals, ids = (t.narrow(d, k - 1, 1) for t in got)
    else:
        a, d = _host_rows(input, dim)
        vals, ids = _take(input, _order(a, False)[..., k - 1:k].astype(np.int64), d)
    if d is not None and not keepdim:
        vals, ids = vals.squeeze(d), ids.squeeze(d)
    if vals.grad_fn is not None:
        vals.grad_fn.rename("KthvalueBackward0")
    return return_kthvalue(vals, ids)


def _cum_ext_device(input, dim, is_max):
    """cummax/cummin on cuda: a log-step (Hillis-Steele) scan of (value, index) pairs made of device ops; the
    pair combine keeps the right (later) element when it is NaN or, with no NaN on the left, when it is >= (<=)
    the left one: the maximum under (NaN greatest, value, position), which is associative, so ceil(log2(n))
    steps give PyTorch's result (ties take the later index; NaN propagates with the latest NaN's index). The
    values are gathered through the indices (gather's gradient)."""
    from .join import cat
    from .select.functions import where
    d = input._wrap_dim(dim)
    n = input.shape[d]
    with no_grad():
        v = input.detach().movedim(d, -1).contiguous()
        shape = tuple(v.shape)
        ix = v.new_tensor(list(range(n)), dtype=_dt.int64).expand(*shape).contiguous()
        s = 1
        while s < n:
            lv, li = v.narrow(-1, 0, n - s), ix.narrow(-1, 0, n - s)
            rv, ri = v.narrow(-1, s, n - s), ix.narrow(-1, s, n - s)
            better = rv >= lv if is_max else rv <= lv
            take = rv.isnan() | (~lv.isnan() & better)
            v = cat([v.narrow(-1, 0, s), where(take, rv, lv)], -1)
            ix = cat([ix.narrow(-1, 0, s), where(take, ri, li)], -1)
            s *= 2
        ix = ix.movedim(-1, d).contiguous()
    return input.gather(d, ix), ix


def _cum_ext(input, dim, is_max):
    if input.is_cuda and input.ndim and input.numel():
        return _cum_ext_device(input, dim, is_max)
    a, d = _host_rows(input, dim)
    n = a.shape[-1]
    idx = np.zeros(a.shape, np.int64)
    if n and a.size:
        best = a[..., 0].copy()
        bi = np.zeros(a.shape[:-1], np.int64)
        isf = np.issubdtype(a.dtype, np.floating)
        nan_seen = np.isnan(best) if isf else np.zeros(best.shape, bool)
        for j in range(n):
            c = a[..., j]
            cnan = np.isnan(c) if isf else np.zeros(c.shape, bool)
            take = (c >= best) if is_max else (c <= best)
            take = cnan | (~nan_seen & take)      # a later NaN takes over (PyTorch: the latest NaN's index)
            best = np.where(take, c, best)
            bi = np.where(take, j, bi)
            nan_seen = nan_seen | cnan
            idx[..., j] = bi
    if d is None:
        return _take(input, idx, None)
    return _take(input, idx, d)


def cummax(input, dim, *, axis=None):  # noqa: A002
    """(values, indices): the running maximum along dim (ties take the later index; NaN propagates)."""
    v, i = _cum_ext(input, _axis(dim, axis), True)
    if v.grad_fn is not None:
        v.grad_fn.rename("CummaxBackward0")
    return return_cummax(v, i)


def cummin(input, dim, *, axis=None):  # noqa: A002
    """(values, indices): the running minimum along dim."""
    v, i = _cum_ext(input, _axis(dim, axis), False)
    if v.grad_fn is not None:
        v.grad_fn.rename("CumminBackward0")
    return return_cummin(v, i)


# ------------------------------------------------------------------ host-sized outputs
def _runs(s):
    """For a sorted 1-D cuda tensor: (bool run starts, int64 run id per element, start positions, run lengths);
    NaN != NaN, so every NaN is its own run (PyTorch's unique keeps each NaN). Reads one number back."""
    from .join import cat
    n = s.shape[0]
    head = s.narrow(0, 0, 1)
    starts = cat([head == head, s.narrow(0, 1, n - 1) != s.narrow(0, 0, n - 1)]) if n > 1 else (head == head) | True
    run = starts.long().cumsum(0) - 1
    count = int(starts.sum())                       # the one host read: how many runs (PyTorch syncs for it too)
    # each run's start position, by a plain scatter: element i that starts no run writes to its own spare slot
    # count + i past the end (one writer per slot: no two threads store to one address, which racecheck reports)
    from .select.functions import where
    idx = s.new_tensor(list(range(n)), dtype=_dt.int64)
    slot = where(starts, run, idx + count)
    pos = run.new_zeros(count + n).scatter(0, slot, idx)
    pos = pos.narrow(0, 0, count)
    ends = cat([pos.narrow(0, 1, count - 1), pos.new_tensor([n])]) if count > 1 else pos.new_tensor([n])
    return starts, run, pos, ends - pos


def _unique_device(input, return_inverse, return_counts):
    """unique(dim=None) on cuda: the device sort, run starts, a cumsum for the run ids (the inverse, scattered back
    through the order) and the run lengths (the counts); the only host read is the number of runs."""
    x = reshape(input.detach(), (-1,))
    with no_grad():
        s, order = sort(x)
        starts, run, pos, counts = _runs(s)
        out = [s.gather(0, pos)]
        if return_inverse:
            out.append(reshape(run.new_zeros(run.shape).scatter(0, order, run), tuple(input.shape)))
        if return_counts:
            out.append(counts)
    return out[0] if len(out) == 1 else tuple(out)


def unique(input, sorted=True, return_inverse=False, return_counts=False, dim=None):  # noqa: A002
    """The distinct elements (dim=None, flattened) or slices along dim, sorted; with the inverse indices and
    counts when asked. On cuda (dim=None) from device ops (only the number of distinct values is read back, as
    PyTorch's sync); otherwise on the host, returned on input's device."""
    from ..tensor.factory import tensor as _tensor
    if input.is_cuda and dim is None and input.numel():
        return _unique_device(input, return_inverse, return_counts)
    a = np.asarray(input.detach().cpu())
    if dim is None:
        u, inv, cnt = np.unique(a.reshape(-1), return_inverse=True, return_counts=True)
        inv = inv.reshape(a.shape)
    else:
        d = input._wrap_dim(dim)
        u, inv, cnt = np.unique(a, return_inverse=True, return_counts=True, axis=d)
        inv = inv.reshape(-1)
    dev = input.device
    out = [_tensor(u, dtype=input.dtype, device=dev)]
    if return_inverse:
        out.append(_tensor(inv.astype(np.int64), device=dev))
    if return_counts:
        out.append(_tensor(cnt.astype(np.int64), device=dev))
    return out[0] if len(out) == 1 else tuple(out)


def bincount(input, weights=None, minlength=0):  # noqa: A002
    """Counts (or summed weights) of each non-negative int value in a 1-D tensor, length max(input)+1 or
    minlength. On the host; returned on input's device."""
    from ..tensor.factory import tensor as _tensor
    if input.ndim != 1 or input.dtype.is_floating_point or input.dtype is _dt.bool:
        raise RuntimeError("bincount only supports 1-d non-negative integral inputs.")
    if input.is_cuda and input.numel():
        return _bincount_device(input, weights, minlength)
    a = np.asarray(input.detach().cpu()).astype(np.int64)
    if a.size and a.min() < 0:
        raise RuntimeError("bincount only supports 1-d non-negative integral inputs.")
    if minlength < 0:
        raise RuntimeError("minlength should be >= 0")
    if weights is None:
        return _tensor(np.bincount(a, minlength=minlength).astype(np.int64), device=input.device)
    if tuple(weights.shape) != tuple(input.shape):
        raise RuntimeError("weights should be 1-d and have the same length as input")
    w = np.asarray(weights.detach().cpu()).astype(np.float64)
    dt = weights.dtype if weights.dtype.is_floating_point else _dt.float64
    return _tensor(np.bincount(a, w, minlength=minlength), dtype=dt, device=input.device)


def _bincount_device(input, weights, minlength):
    """bincount on cuda: the length needs max(input) on the host (PyTorch reads it too); counts are run lengths
    of the sorted input scattered to their values (exact int64), weights are summed by a scatter-add."""
    if minlength < 0:
        raise RuntimeError("minlength should be >= 0")
    x = input.detach().long()
    if int(x.min()) < 0:
        raise RuntimeError("bincount only supports 1-d non-negative integral inputs.")
    size = builtins.max(int(x.max()) + 1, minlength)
    with no_grad():
        if weights is None:
            s = sort(x).values
            _, _, pos, counts = _runs(s)
            return counts.new_zeros(size).scatter(0, s.gather(0, pos), counts)
        if tuple(weights.shape) != tuple(input.shape):
            raise RuntimeError("weights should be 1-d and have the same length as input")
        w = weights.detach()
        if not w.dtype.is_floating_point:
            w = w.float()
        return w.new_zeros(size).scatter_add(0, x, w)


def _histc_device(input, bins, lo, hi):
    """histc on cuda: each value's bin from elementwise ops, out-of-range values weighted 0, one scatter-add."""
    x = reshape(input.detach(), (-1,))
    xf = x.float()
    with no_grad():
        inside = (xf >= lo) & (xf <= hi)
        pos = ((xf - lo) * (bins / (hi - lo))).floor().clamp(0, bins - 1).long()
        out = xf.new_zeros(bins).scatter_add(0, pos, inside.float())
    return out.to(dtype=input.dtype)


def histc(input, bins=100, min=0, max=0):  # noqa: A001,A002
    """Histogram of input's values into bins equal-width bins over [min, max] (min == max: the data's range);
    values outside are ignored; the last bin includes max. On the host; returned on input's device."""
    from ..tensor.factory import tensor as _tensor
    if bins <= 0:
        raise RuntimeError("torch.histogramc: bins must be > 0")
    if input.is_cuda:
        lo, hi = float(min), float(max)
        if lo == hi and input.numel():
            lo, hi = float(input.min()), float(input.max())     # the data's range: two reads, as PyTorch
        if lo == hi:
            lo, hi = lo - 1, hi + 1
        if lo > hi:
            raise RuntimeError("torch.histogramc: max must be larger than min")
        return _histc_device(input, bins, lo, hi)
    a = np.asarray(input.detach().cpu()).astype(np.float64).reshape(-1)
    lo, hi = float(min), float(max)
    if lo == hi and a.size:
        lo, hi = float(a.min()), float(a.max())
    if lo == hi:
        lo, hi = lo - 1, hi + 1
    if lo > hi:
        raise RuntimeError("torch.histogramc: max must be larger than min")
    a = a[(a >= lo) & (a <= hi)]
    pos = np.minimum(((a - lo) * bins / (hi - lo)).astype(np.int64), bins - 1)
    return _tensor(np.bincount(pos, minlength=bins).astype(np.float64), dtype=input.dtype, device=input.device)


return_histogram = _return_type("histogram", ["hist", "bin_edges"])


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


declare("cumsum", cumsum, family="scan_sort", inplace=True)
declare("cumprod", cumprod, family="scan_sort", inplace=True)
declare("logcumsumexp", logcumsumexp, family="scan_sort")
declare("cummax", cummax, family="scan_sort")
declare("cummin", cummin, family="scan_sort")
declare("sort", sort, family="scan_sort")
declare("argsort", argsort, family="scan_sort")
declare("msort", msort, family="scan_sort")
declare("topk", topk, family="scan_sort")
declare("kthvalue", kthvalue, family="scan_sort")
declare("unique", unique, family="scan_sort")
declare("bincount", bincount, family="scan_sort")
declare("histc", histc, family="scan_sort")
declare("histogram", histogram, family="scan_sort")
declare("unique_consecutive", unique_consecutive, family="scan_sort")
