"""Categorical, OneHotCategorical, Bernoulli, Normal, Uniform, Independent (torch.distributions' formulas)."""
import math

from ..autograd.grad_mode import no_grad
from ..tensor.core import Tensor
from ..tensor.size import Size
from . import constraints
from .distribution import LOG_SQRT_2PI, Distribution, float_dtype, positive, real, simplex, unit_interval

__all__ = ["Categorical", "OneHotCategorical", "Bernoulli", "Normal", "Uniform", "Independent"]


def _tensor(x, like=None):
    from . import _api as rawdev
    if isinstance(x, Tensor):
        return x
    dev = like.device if like is not None else None
    return rawdev.tensor(x, dtype=float_dtype(like) if like is not None else None, device=dev)


def _broadcast(*ts):
    import numpy as np
    shape = tuple(np.broadcast_shapes(*[tuple(t.shape) for t in ts]))
    return [t if tuple(t.shape) == shape else t.expand(*shape) for t in ts]


def _one_of(probs, logits):
    if (probs is None) == (logits is None):
        raise ValueError("Either `probs` or `logits` must be specified, but not both.")


class Categorical(Distribution):
    """Categorical(probs=None, logits=None): indices 0..K-1 of the last dimension; probs are normalized to sum
    to 1, logits to log-probabilities (minus their logsumexp)."""

    arg_constraints = {"probs": simplex, "logits": real}

    def __init__(self, probs=None, logits=None, validate_args=None):
        _one_of(probs, logits)
        if probs is not None:
            if probs.ndim < 1:
                raise ValueError("`probs` parameter must be at least one-dimensional.")
            self.probs = probs / probs.sum(-1, keepdim=True)
            self.logits = self.probs.clamp(min=1.1754943508222875e-38).log()
        else:
            if logits.ndim < 1:
                raise ValueError("`logits` parameter must be at least one-dimensional.")
            self.logits = logits - logits.logsumexp(-1, keepdim=True)
            self.probs = self.logits.softmax(-1)
        self._param = self.probs if probs is not None else self.logits
        self._num_events = self._param.shape[-1]
        super().__init__(self._param.shape[:-1], Size(), validate_args)

    @property
    def param_shape(self):
        return self._param.shape

    @property
    def support(self):
        return constraints.integer_interval(0, self._num_events - 1)

    @property
    def mean(self):
        return self.probs.new_full(tuple(self.batch_shape), float("nan"))

    @property
    def variance(self):
        return self.probs.new_full(tuple(self.batch_shape), float("nan"))

    @property
    def mode(self):
        return self.probs.argmax(-1)

    def sample(self, sample_shape=()):
        from . import _api as rawdev
        n = 1
        for s in sample_shape:
            n *= s
        with no_grad():
            probs_2d = self.probs.reshape(-1, self._num_events)
            samples_2d = rawdev.multinomial(probs_2d, n, True).t()
            return samples_2d.reshape(self._extended_shape(sample_shape))

    def log_prob(self, value):
        if self._validate_args:
            ok = (value >= 0) & (value < self._num_events) & (value == value.floor() if value.dtype.is_floating_point
                                                              else value == value)
            if not bool(ok.all()):
                raise ValueError(f"Expected value argument (Tensor of shape {tuple(value.shape)}) to be within the "
                                 f"support (IntegerInterval(lower_bound=0, upper_bound={self._num_events - 1})) of "
                                 f"the distribution {self!r}, but found invalid values:\n{value}")
        value = value.long().unsqueeze(-1)
        value, log_pmf = _broadcast(value, self.logits)
        return log_pmf.gather(-1, value[..., :1].contiguous()).squeeze(-1)

    def entropy(self):
        logits = self.logits.clamp(min=-3.4028234663852886e38)
        return -(logits * self.probs).sum(-1)

    def enumerate_support(self, expand=True):
        from . import _api as rawdev
        values = rawdev.arange(self._num_events, device=self.probs.device)
        values = values.view((-1,) + (1,) * len(self.batch_shape))
        return values.expand((-1,) + tuple(self.batch_shape)) if expand else values


class OneHotCategorical(Distribution):
    """Samples are one-hot vectors of the last dimension's length."""

    support = constraints.one_hot

    arg_constraints = {"probs": simplex, "logits": real}
    has_enumerate_support = True

    def __init__(self, probs=None, logits=None, validate_args=None):
        self._categorical = Categorical(probs, logits, validate_args)
        self.probs, self.logits = self._categorical.probs, self._categorical.logits
        super().__init__(self._categorical.batch_shape, self._categorical.param_shape[-1:], validate_args)

    @property
    def mean(self):
        return self.probs

    @property
    def variance(self):
        return self.probs * (1 - self.probs)

    def sample(self, sample_shape=()):
        from ..nn import functional as F
        idx = self._categorical.sample(sample_shape)
        return F.one_hot(idx, self._categorical._num_events).to(dtype=self.probs.dtype)

    def log_prob(self, value):
        return self._categorical.log_prob(value.max(-1)[1])

    def entropy(self):
        return self._categorical.entropy()


class Bernoulli(Distribution):
    """Bernoulli(probs=None, logits=None): 0/1 samples; log_prob and entropy by binary cross-entropy with logits
    (stable for logits of any size)."""

    support = constraints.boolean

    arg_constraints = {"probs": unit_interval, "logits": real}

    def __init__(self, probs=None, logits=None, validate_args=None):
        _one_of(probs, logits)
        if probs is not None:
            self.probs = _tensor(probs)
            eps = 1.1920928955078125e-07
            p = self.probs.clamp(eps, 1 - eps)
            self.logits = p.log() - (-p).log1p()
            param = self.probs
        else:
            self.logits = _tensor(logits)
            self.probs = self.logits.sigmoid()
            param = self.logits
        super().__init__(param.shape, Size(), validate_args)

    @property
    def mean(self):
        return self.probs

    @property
    def variance(self):
        return self.probs * (1 - self.probs)

    @property
    def mode(self):
        from . import _api as rawdev
        m = (self.probs >= 0.5).to(dtype=self.probs.dtype)
        return rawdev.where(self.probs == 0.5, rawdev.full_like(m, float("nan")), m)

    def sample(self, sample_shape=()):
        from . import _api as rawdev
        with no_grad():
            return rawdev.bernoulli(self.probs.expand(*self._extended_shape(sample_shape)))

    def log_prob(self, value):
        from ..nn import functional as F
        logits, value = _broadcast(self.logits, value.to(dtype=self.logits.dtype))
        return -F.binary_cross_entropy_with_logits(logits, value, reduction="none")

    def entropy(self):
        from ..nn import functional as F
        return F.binary_cross_entropy_with_logits(self.logits, self.probs, reduction="none")


class LocScale(Distribution):
    """The base of the (loc, scale) families: both parameters as tensors of one dtype and device, broadcast to
    the batch shape; the mode is loc."""

    arg_constraints = {"loc": real, "scale": positive}
    has_rsample = True

    def __init__(self, loc, scale, validate_args=None):
        loc = _tensor(loc, scale if isinstance(scale, Tensor) else None)
        self.loc, self.scale = _broadcast(loc, _tensor(scale, loc))
        super().__init__(self.loc.shape, Size(), validate_args)

    @property
    def mode(self):
        return self.loc


class Normal(LocScale):
    """Normal(loc, scale): rsample = loc + scale · N(0, 1) (reparameterized, so gradients reach loc and scale)."""

    support = constraints.real

    @property
    def mean(self):
        return self.loc

    @property
    def stddev(self):
        return self.scale

    @property
    def variance(self):
        return self.scale * self.scale

    def rsample(self, sample_shape=()):
        from . import _api as rawdev
        shape = tuple(self._extended_shape(sample_shape))
        eps = rawdev.randn(shape, dtype=self.loc.dtype, device=self.loc.device)
        return self.loc + eps * self.scale

    def log_prob(self, value):
        value = _tensor(value, self.loc)
        var = self.scale * self.scale
        return -((value - self.loc) ** 2) / (2 * var) - self.scale.log() - LOG_SQRT_2PI

    def cdf(self, value):
        value = _tensor(value, self.loc)
        return 0.5 * (1 + ((value - self.loc) * (1.0 / math.sqrt(2)) / self.scale).erf())

    def icdf(self, value):
        value = _tensor(value, self.loc)
        return self.loc + self.scale * (2 * value - 1).erfinv() * math.sqrt(2)

    def entropy(self):
        return 0.5 + 0.5 * math.log(2 * math.pi) + self.scale.log()


class Uniform(Distribution):
    """Uniform(low, high) on [low, high); rsample = low + (high - low) · U(0, 1)."""

    has_rsample = True

    def __init__(self, low, high, validate_args=None):
        low = _tensor(low, high if isinstance(high, Tensor) else None)
        high = _tensor(high, low)
        self.low, self.high = _broadcast(low, high)
        self.arg_constraints = {}
        super().__init__(self.low.shape, Size(), validate_args)
        if self._validate_args and not bool((self.low < self.high).all()):
            raise ValueError(f"Expected parameter low (Tensor of shape {tuple(self.low.shape)}) of distribution "
                             f"Uniform to satisfy the constraint LessThan(upper_bound=high), but found invalid "
                             f"values:\n{self.low}")

    @property
    def mean(self):
        return (self.high + self.low) / 2

    @property
    def variance(self):
        return (self.high - self.low) ** 2 / 12

    def rsample(self, sample_shape=()):
        from . import _api as rawdev
        shape = tuple(self._extended_shape(sample_shape))
        u = rawdev.rand(shape, dtype=self.low.dtype, device=self.low.device)
        return self.low + u * (self.high - self.low)

    def log_prob(self, value):
        value = _tensor(value, self.low)
        lb = (self.low <= value).to(dtype=self.low.dtype)
        ub = (self.high > value).to(dtype=self.low.dtype)
        return (lb * ub).log() - (self.high - self.low).log()

    def cdf(self, value):
        value = _tensor(value, self.low)
        return ((value - self.low) / (self.high - self.low)).clamp(0, 1)

    def icdf(self, value):
        return self.low + _tensor(value, self.low) * (self.high - self.low)

    @property
    def support(self):
        from . import constraints
        return constraints.half_open_interval(self.low, self.high)

    def entropy(self):
        return (self.high - self.low).log()

    def __repr__(self):
        return f"Uniform(low: {self.low.size() if self.low.numel() > 1 else self.low}, high: " \
               f"{self.high.size() if self.high.numel() > 1 else self.high})"


class Independent(Distribution):
    """Independent(base, n): the last n batch dimensions of base become event dimensions (log_prob and entropy
    sum over them)."""

    def __init__(self, base_distribution, reinterpreted_batch_ndims, validate_args=None):
        n = reinterpreted_batch_ndims
        shape = tuple(base_distribution.batch_shape) + tuple(base_distribution.event_shape)
        if n > len(base_distribution.batch_shape):
            raise ValueError(f"Expected reinterpreted_batch_ndims <= len(base_distribution.batch_shape), actual {n} "
                             f"vs {len(base_distribution.batch_shape)}")
        self.base_dist, self.reinterpreted_batch_ndims = base_distribution, n
        cut = len(base_distribution.batch_shape) - n
        super().__init__(shape[:cut], shape[cut:], validate_args=False)
        self.has_rsample = base_distribution.has_rsample

    @property
    def support(self):
        return constraints.independent(self.base_dist.support, self.reinterpreted_batch_ndims)

    def _sum(self, t):
        for _ in range(self.reinterpreted_batch_ndims):
            t = t.sum(-1)
        return t

    @property
    def mean(self):
        return self.base_dist.mean

    @property
    def variance(self):
        return self.base_dist.variance

    def sample(self, sample_shape=()):
        return self.base_dist.sample(sample_shape)

    def rsample(self, sample_shape=()):
        return self.base_dist.rsample(sample_shape)

    def log_prob(self, value):
        return self._sum(self.base_dist.log_prob(value))

    def entropy(self):
        return self._sum(self.base_dist.entropy())

    def __repr__(self):
        return f"Independent({self.base_dist!r}, {self.reinterpreted_batch_ndims})"
