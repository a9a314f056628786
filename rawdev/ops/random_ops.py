"""Sampling ops and the in-place random fills, declared once each: normal, bernoulli, multinomial and
Tensor.uniform_/normal_/random_/exponential_/bernoulli_.

cpu tensors draw from the cpu generator (numpy); cuda tensors draw on the device (ptx/src/random.cu, the
device's Philox generator: see rawdev.random) with no host round trip. multinomial on cuda: with
replacement, per-row cumulative sums and a binary search per sample; without replacement, the exponential
race (the top num_samples of log(u)/w per row, ranked on the device). The cuda path cannot validate the
probabilities without reading them back, so (as PyTorch's device asserts would) it trusts them.
"""
import operator

import numpy as np

from .. import dtypes as _dt
from .. import random as _random
from ..autograd.grad_mode import is_grad_enabled
from ..tensor import factory as _f
from ..tensor.core import Tensor
from ..tensor.size import Size
from .registry import declare

__all__ = ["normal", "bernoulli", "multinomial", "uniform_", "normal_", "random_", "exponential_", "bernoulli_",
           "geometric_", "cauchy_", "log_normal_"]


def _check_inplace(t, name):
    if t.requires_grad and t.is_leaf and is_grad_enabled():
        raise RuntimeError("a leaf Variable that requires grad is being used in an in-place operation.")


def _write_values(t, vals):
    """cpu: values (numpy) into t's storage, any layout."""
    t._host_storage()[...] = _dt.to_storage(np.asarray(vals), t.dtype).reshape(tuple(t.shape))
    t._bump_version()
    return t


def _device_fill(t, make):
    """cuda: fill t in place; make(shape, dtype) -> a new contiguous cuda tensor of t's dtype."""
    new = make(t.shape, t.dtype)
    t._write(new)
    return t


def _float_only(t, what):
    if not t.dtype.is_floating_point:
        raise RuntimeError(f'"{what}" not implemented for \'{t.dtype._legacy[:-6]}\'')


# ------------------------------------------------------------------ in-place fills
def uniform_(self, a=0.0, b=1.0, *, generator=None, **kw):
    a, b = kw.pop("from", a), kw.pop("to", b)
    _check_inplace(self, "uniform_")
    _float_only(self, "check_uniform_bounds")
    if a > b:
        raise RuntimeError(f"uniform_ expects to return a [from, to) range, but found from={a} > to={b}")
    g = _random.generator_for(self.device, generator)
    if self.is_cpu:
        return _write_values(self, g.np.uniform(a, b, tuple(self.shape)))
    return _device_fill(self, lambda s, dt: _f._device_floats(s, dt, self.device, _random.fill_uniform, a, b, g))


def normal_(self, mean=0.0, std=1.0, *, generator=None):
    _check_inplace(self, "normal_")
    _float_only(self, "normal_kernel_cpu")
    if std < 0:
        raise RuntimeError(f"normal expects std >= 0.0, but found std {std}")
    g = _random.generator_for(self.device, generator)
    if self.is_cpu:
        return _write_values(self, g.np.normal(mean, std, tuple(self.shape)))
    return _device_fill(self, lambda s, dt: _f._device_floats(s, dt, self.device, _random.fill_normal, mean, std,
                                                              g))


def exponential_(self, lambd=1.0, *, generator=None):
    _check_inplace(self, "exponential_")
    _float_only(self, "exponential_cpu")
    if lambd <= 0:
        raise RuntimeError(f"exponential_ expects lambda > 0.0, but found lambda={lambd}")
    g = _random.generator_for(self.device, generator)
    if self.is_cpu:
        return _write_values(self, g.np.exponential(1.0 / lambd, tuple(self.shape)))

    def make(s, dt):
        from ..tensor import cuda_io
        t = cuda_io.empty(s, _dt.float32, self.device)
        _random.fill_exponential(t, lambd, g)
        return _f._device_cast(t, dt)
    return _device_fill(self, make)


def _random_bounds(t, a, b):
    """random_'s [from, to): random_() covers [0, 2**mantissa] for floats and [0, max] for integers."""
    if a is None and b is None:
        a = 0
        if t.dtype is _dt.bool:
            b = 2
        elif t.dtype.is_floating_point:
            b = {"float64": 2 ** 53, "float32": 2 ** 24, "float16": 2 ** 11, "bfloat16": 2 ** 8}[t.dtype.name] + 1
        else:
            b = int(np.iinfo(t.dtype.storage).max) + 1
    elif b is None:
        a, b = 0, a
    if a >= b:
        raise RuntimeError(f"random_ expects 'from' to be less than 'to', but got from={a} >= to={b}")
    return int(a), int(b)


def random_(self, from_=None, to=None, *, generator=None, **kw):
    if "from" in kw:
        from_ = kw.pop("from")
    _check_inplace(self, "random_")
    a, b = _random_bounds(self, from_, to)
    g = _random.generator_for(self.device, generator)
    if self.is_cpu:
        return _write_values(self, g.np.integers(a, b, tuple(self.shape)))
    return _device_fill(self, lambda s, dt: _f._device_integers(s, dt, self.device, a, b, g))


def bernoulli_(self, p=0.5, *, generator=None):
    _check_inplace(self, "bernoulli_")
    g = _random.generator_for(self.device, generator)
    if isinstance(p, Tensor):
        if self.is_cpu:
            pv = np.broadcast_to(p._values(), tuple(self.shape))
            return _write_values(self, g.np.random(tuple(self.shape)) < pv)
        from . import cuda
        prob = cuda._bcast(_f._device_cast(p, _dt.float32) if p.dtype is not _dt.float32 else p, self.shape)
        return _device_fill(self, lambda s, dt: _bernoulli_dev(s, dt, self.device, 0.0, g, prob))
    if not 0 <= p <= 1:
        raise RuntimeError(f"bernoulli_ expects p to be in [0, 1], but got p={p}")
    if self.is_cpu:
        return _write_values(self, g.np.random(tuple(self.shape)) < p)
    return _device_fill(self, lambda s, dt: _bernoulli_dev(s, dt, self.device, p, g, None))


def _bernoulli_dev(shape, dt, dev, p, g, prob):
    from ..tensor import cuda_io
    t = cuda_io.empty(Size(shape), _dt.float32, dev)
    _random.fill_bernoulli(t, p, g, prob)
    return _f._device_cast(t, dt)


# ------------------------------------------------------------------ sampling functions
def bernoulli(input, p=None, *, generator=None, out=None):  # noqa: A002
    """A 0/1 tensor of input's dtype: element i is 1 with probability input[i] (or p when given)."""
    if p is not None:
        return bernoulli_(_f.empty_like(input), p, generator=generator)
    _float_only(input, "bernoulli_tensor_cpu_p_")
    if input.is_cpu:
        pv = input._values()
        if ((pv < 0) | (pv > 1)).any():
            raise RuntimeError("Expected p_in >= 0 && p_in <= 1 to be true, but got false.")
    return bernoulli_(_f.empty_like(input), input.detach(), generator=generator)


def normal(mean=0.0, std=1.0, size=None, *, generator=None, out=None, dtype=None, layout=None, device=None,
           requires_grad=False):
    """Samples of N(mean, std): mean and std may be tensors (broadcast) or numbers (then size is needed)."""
    mt, st = isinstance(mean, Tensor), isinstance(std, Tensor)
    if not mt and not st:
        if size is None:
            raise TypeError("normal() missing the size argument for float mean and std")
        if std < 0:
            raise RuntimeError(f"normal expects std >= 0.0, but found std {std}")
        t = _f.empty(size, dtype=dtype, layout=layout, device=device)
        normal_(t, mean, std, generator=generator)
        return t.requires_grad_(True) if requires_grad else t
    ref = mean if mt else std
    if st and std.is_cpu and (std._values() < 0).any():
        raise RuntimeError("normal expects all elements of std >= 0.0")
    shape = tuple(np.broadcast_shapes(tuple(mean.shape) if mt else (), tuple(std.shape) if st else ()))
    z = _f.empty(shape, dtype=ref.dtype, device=ref.device)
    normal_(z, 0.0, 1.0, generator=generator)
    from .binary import add, mul
    m = mean.detach() if mt else mean
    s = std.detach() if st else std
    return add(mul(z, s), m) if mt else add(mul(z, s), m)


def multinomial(input, num_samples, replacement=False, *, generator=None, out=None):  # noqa: A002
    """num_samples category indices per row of the weights input (1-D or 2-D), int64."""
    if input.ndim not in (1, 2):
        raise RuntimeError("prob_dist must be 1 or 2 dim")
    _float_only(input, "multinomial")
    S = operator.index(num_samples)
    C = input.shape[-1]
    if S <= 0:
        raise RuntimeError("cannot sample n_sample <= 0 samples")
    if not replacement and S > C:
        raise RuntimeError("cannot sample n_sample > prob_dist.size(-1) samples without replacement")
    rows = input.shape[0] if input.ndim == 2 else 1
    out_shape = (rows, S) if input.ndim == 2 else (S,)
    g = _random.generator_for(input.device, generator)
    if input.is_cpu:
        w = np.asarray(input._values(), np.float64).reshape(rows, C)
        if not np.isfinite(w).all() or (w < 0).any():
            raise RuntimeError("probability tensor contains either `inf`, `nan` or element < 0")
        if (w.sum(1) <= 0).any():
            raise RuntimeError("invalid multinomial distribution (sum of probabilities <= 0)")
        if replacement:
            cdf = np.cumsum(w, 1)
            u = g.np.random((rows, S)) * cdf[:, -1:]
            idx = np.stack([np.searchsorted(cdf[r], u[r], side="right") for r in range(rows)])
        else:
            if ((w > 0).sum(1) < S).any():
                raise RuntimeError("invalid multinomial distribution (with replacement=False, not enough "
                                   "non-negative category to sample)")
            u = 1.0 - g.np.random((rows, C))        # (0, 1]
            with np.errstate(divide="ignore"):
                keys = np.where(w > 0, np.log(u) / np.where(w > 0, w, 1.0), -np.inf)
            idx = np.argsort(-keys, axis=1, kind="stable")[:, :S]
        return Tensor._make_cpu(np.ascontiguousarray(idx.reshape(out_shape), np.int64), _dt.int64)
    from ..tensor import cuda_io
    from . import cuda
    w = _f._device_cast(input.detach(), _dt.float32) if input.dtype is not _dt.float32 else cuda.dense(input.detach())
    out = cuda.empty(out_shape, _dt.int64, input.device, "multinomial output")
    if replacement:
        cdf = cuda_io.empty(Size((rows, C)), _dt.float32, input.device, "multinomial cdf")
        _random.multinomial_cdf(cdf, w, rows, C)
        _random.multinomial_draw(out, cdf, rows, C, S, g)
    else:
        keys = cuda_io.empty(Size((rows * C,)), _dt.int64, input.device, "multinomial keys")
        _random.race_keys(keys, w, rows * C, g)
        _random.rank_select(out, keys, rows, C, S)
    return out


declare("normal", normal, family="random_ops", method=False)
declare("bernoulli", bernoulli, family="random_ops")
declare("multinomial", multinomial, family="random_ops")
def _transformed(self, draw, fn):
    """Fill self with fn(u) for u drawn in float32 by draw(u) on self's device (the cuda draw stays on the
    device; fn is a composition of device ops)."""
    from ..autograd.grad_mode import no_grad
    from ..tensor import factory
    with no_grad():
        u = factory.empty(tuple(self.shape), dtype=_dt.float32 if self.is_cuda else _dt.float64, device=self.device)
        draw(u)
        self.copy_(fn(u))
    return self


def geometric_(self, p, *, generator=None):
    """Fill self with draws from the geometric distribution: the number of Bernoulli(p) trials up to and
    including the first success (1, 2, …).

    Example:
        >>> torch.empty(3).geometric_(0.5)      # e.g. tensor([1., 3., 1.])
    """
    _check_inplace(self, "geometric_")
    if not 0 < p < 1:
        raise RuntimeError(f"geometric_ expects p to be in (0, 1), but got p={p}")
    if self.is_cpu:
        g = _random.generator_for(self.device, generator)
        return _write_values(self, g.np.geometric(p, tuple(self.shape)))
    # ceil(log(u) / log(1 − p)) for u in (0, 1]: u = 1 − uniform[0, 1)
    return _transformed(self, lambda u: u.uniform_(generator=generator),
                        lambda u: ((1.0 - u).log() / np.log1p(-p)).ceil().clamp_min(1.0))


def cauchy_(self, median=0.0, sigma=1.0, *, generator=None):
    """Fill self with Cauchy draws: median + sigma · tan(π (u − 1/2)).

    Example:
        >>> torch.empty(3).cauchy_()
    """
    _check_inplace(self, "cauchy_")
    _float_only(self, "cauchy_cpu")
    if sigma <= 0:
        raise RuntimeError(f"cauchy_ expects sigma > 0.0, but found sigma={sigma}")
    if self.is_cpu:
        g = _random.generator_for(self.device, generator)
        return _write_values(self, median + sigma * g.np.standard_cauchy(tuple(self.shape)))
    return _transformed(self, lambda u: u.uniform_(generator=generator),
                        lambda u: ((u - 0.5) * np.pi).tan() * sigma + median)


def log_normal_(self, mean=1.0, std=2.0, *, generator=None):
    """Fill self with exp(N(mean, std²)) draws.

    Example:
        >>> torch.empty(3).log_normal_()
    """
    _check_inplace(self, "log_normal_")
    _float_only(self, "log_normal_cpu")
    if std <= 0:
        raise RuntimeError(f"log_normal_ expects std > 0.0, but found std={std}")
    if self.is_cpu:
        g = _random.generator_for(self.device, generator)
        return _write_values(self, g.np.lognormal(mean, std, tuple(self.shape)))
    return _transformed(self, lambda u: u.normal_(mean, std, generator=generator), lambda u: u.exp())


for _fn in (uniform_, normal_, exponential_, random_, bernoulli_, geometric_, cauchy_, log_normal_):
    declare(_fn.__name__, _fn, family="random_ops", torch=False)
