"""TransformedDistribution and the families PyTorch builds from it: Gumbel, HalfNormal, HalfCauchy, Weibull,
Pareto, LogisticNormal, RelaxedBernoulli, RelaxedOneHotCategorical (torch.distributions' formulas)."""
import math

import numpy as np

from ..autograd.grad_mode import no_grad
from ..tensor.size import Size
from . import constraints
from .continuous import Cauchy, Exponential
from .distribution import Distribution
from .families import Independent, Normal, Uniform, _broadcast, _one_of, _tensor
from .transforms import (
    AbsTransform,
    AffineTransform,
    ComposeTransform,
    ExpTransform,
    PowerTransform,
    SigmoidTransform,
    StickBreakingTransform,
    Transform,
    _sum_rightmost,
)

__all__ = ["TransformedDistribution", "Gumbel", "HalfNormal", "HalfCauchy", "Weibull", "Pareto", "LogisticNormal",
           "RelaxedBernoulli", "LogitRelaxedBernoulli", "RelaxedOneHotCategorical", "ExpRelaxedCategorical"]

_EULER = 0.57721566490153286060


def _finfo(t):
    return np.finfo(np.dtype(t.dtype.storage))


def _clamp_probs(p):
    f = _finfo(p)
    return p.clamp(min=float(f.eps), max=1 - float(f.eps))


class TransformedDistribution(Distribution):
    """base_distribution pushed through transforms (a Transform or a list, applied in order): sample = T(x);
    log_prob(y) = base.log_prob(T⁻¹(y)) − Σ log|det J| along the way; cdf/icdf through monotone transforms.

    Example:
        >>> d = TransformedDistribution(Normal(0., 1.), [TanhTransform()])   # a squashed Gaussian (SAC)
        >>> a = d.rsample(); d.log_prob(a)
    """

    arg_constraints: dict = {}

    def __init__(self, base_distribution, transforms, validate_args=None):
        if isinstance(transforms, Transform):
            self.transforms = [transforms]
        elif isinstance(transforms, list):
            if not all(isinstance(t, Transform) for t in transforms):
                raise ValueError("transforms must be a Transform or a list of Transforms")
            self.transforms = transforms
        else:
            raise ValueError(f"transforms must be a Transform or list, but was {transforms}")
        base_shape = tuple(base_distribution.batch_shape) + tuple(base_distribution.event_shape)
        base_event_dim = len(base_distribution.event_shape)
        transform = ComposeTransform(self.transforms)
        if len(base_shape) < transform.domain.event_dim:
            raise ValueError(f"base_distribution needs to have shape with size at least "
                             f"{transform.domain.event_dim}, but got {base_shape}.")
        forward_shape = tuple(transform.forward_shape(base_shape))
        if tuple(transform.inverse_shape(forward_shape)) != base_shape:
            raise ValueError(f"the transforms change the base distribution's shape {base_shape}: rawdev does not "
                             f"expand base distributions")
        reinterpreted = transform.domain.event_dim - base_event_dim
        if reinterpreted > 0:
            base_distribution = Independent(base_distribution, reinterpreted)
        self.base_dist = base_distribution
        change = transform.codomain.event_dim - transform.domain.event_dim
        event_dim = max(transform.codomain.event_dim, base_event_dim + change)
        cut = len(forward_shape) - event_dim
        super().__init__(Size(forward_shape[:cut]), Size(forward_shape[cut:]), validate_args)

    @property
    def has_rsample(self):
        return self.base_dist.has_rsample

    @property
    def support(self):
        if not self.transforms:
            return self.base_dist.support
        support = self.transforms[-1].codomain
        if len(self.event_shape) > support.event_dim:
            support = constraints.independent(support, len(self.event_shape) - support.event_dim)
        return support

    def sample(self, sample_shape=()):
        with no_grad():
            x = self.base_dist.sample(sample_shape)
            for t in self.transforms:
                x = t(x)
            return x

    def rsample(self, sample_shape=()):
        x = self.base_dist.rsample(sample_shape)
        for t in self.transforms:
            x = t(x)
        return x

    def log_prob(self, value):
        event_dim = len(self.event_shape)
        log_prob = 0.0
        y = value
        for t in reversed(self.transforms):
            x = t.inv(y)
            event_dim += t.domain.event_dim - t.codomain.event_dim
            log_prob = log_prob - _sum_rightmost(t.log_abs_det_jacobian(x, y), event_dim - t.domain.event_dim)
            y = x
        return log_prob + _sum_rightmost(self.base_dist.log_prob(y), event_dim - len(self.base_dist.event_shape))

    def _monotonize_cdf(self, value):
        sign = 1
        for t in self.transforms:
            sign = sign * t.sign
        if isinstance(sign, int) and sign == 1:
            return value
        return sign * (value - 0.5) + 0.5

    def cdf(self, value):
        for t in self.transforms[::-1]:
            value = t.inv(value)
        return self._monotonize_cdf(self.base_dist.cdf(value))

    def icdf(self, value):
        value = self.base_dist.icdf(self._monotonize_cdf(value))
        for t in self.transforms:
            value = t(value)
        return value

    def __repr__(self):
        return f"{type(self).__name__}()"


class Gumbel(TransformedDistribution):
    """Gumbel(loc, scale): −log(−log U) scaled and shifted."""

    arg_constraints = {"loc": constraints.real, "scale": constraints.positive}
    support = constraints.real

    def __init__(self, loc, scale, validate_args=None):
        loc = _tensor(loc, scale if hasattr(scale, "dtype") else None)
        self.loc, self.scale = _broadcast(loc, _tensor(scale, loc))
        f = _finfo(self.loc)
        base = Uniform(self.loc.new_full(tuple(self.loc.shape), float(f.tiny)),
                       self.loc.new_full(tuple(self.loc.shape), 1 - float(f.eps)), validate_args=False)
        ones = self.loc.new_ones(tuple(self.loc.shape))
        super().__init__(base, [ExpTransform().inv, AffineTransform(0, -ones), ExpTransform().inv,
                                AffineTransform(self.loc, -self.scale)], validate_args)

    def log_prob(self, value):
        y = (self.loc - value) / self.scale
        return (y - y.exp()) - self.scale.log()

    @property
    def mean(self):
        return self.loc + self.scale * _EULER

    @property
    def mode(self):
        return self.loc

    @property
    def stddev(self):
        return (math.pi / math.sqrt(6)) * self.scale

    @property
    def variance(self):
        return self.stddev.pow(2)

    def entropy(self):
        return self.scale.log() + (1 + _EULER)

    def __repr__(self):
        return f"Gumbel({self._param_repr()})"


class _HalfBase(TransformedDistribution):
    """|X| for a zero-centred base X: density doubled on [0, ∞)."""

    arg_constraints = {"scale": constraints.positive}
    support = constraints.nonnegative

    def __init__(self, base, validate_args=None):
        super().__init__(base, AbsTransform(), validate_args)

    @property
    def scale(self):
        return self.base_dist.scale

    @property
    def mode(self):
        return self.scale.new_zeros(tuple(self.scale.shape))

    def log_prob(self, value):
        from . import _api as rawdev
        value = _tensor(value, self.scale)
        lp = self.base_dist.log_prob(value) + math.log(2)
        return rawdev.where(value >= 0, lp, rawdev.full_like(lp, -math.inf))

    def cdf(self, value):
        return 2 * self.base_dist.cdf(value) - 1

    def icdf(self, prob):
        return self.base_dist.icdf((prob + 1) / 2)

    def entropy(self):
        return self.base_dist.entropy() - math.log(2)

    def __repr__(self):
        return f"{type(self).__name__}(scale: {self.scale if self.scale.numel() == 1 else self.scale.size()})"


class HalfNormal(_HalfBase):
    """HalfNormal(scale): |N(0, scale²)|."""

    def __init__(self, scale, validate_args=None):
        scale = _tensor(scale)
        super().__init__(Normal(scale.new_zeros(tuple(scale.shape)), scale, validate_args=validate_args),
                         validate_args)

    @property
    def mean(self):
        return self.scale * math.sqrt(2 / math.pi)

    @property
    def variance(self):
        return self.scale.pow(2) * (1 - 2 / math.pi)


class HalfCauchy(_HalfBase):
    """HalfCauchy(scale): |Cauchy(0, scale)|."""

    def __init__(self, scale, validate_args=None):
        scale = _tensor(scale)
        super().__init__(Cauchy(scale.new_zeros(tuple(scale.shape)), scale, validate_args=validate_args),
                         validate_args)

    @property
    def mean(self):
        return self.scale.new_full(tuple(self.scale.shape), math.inf)

    @property
    def variance(self):
        return self.scale.new_full(tuple(self.scale.shape), math.inf)


class Weibull(TransformedDistribution):
    """Weibull(scale, concentration): scale · E^(1/concentration) for E ~ Exponential(1)."""

    arg_constraints = {"scale": constraints.positive, "concentration": constraints.positive}
    support = constraints.positive

    def __init__(self, scale, concentration, validate_args=None):
        scale = _tensor(scale, concentration if hasattr(concentration, "dtype") else None)
        self.scale, self.concentration = _broadcast(scale, _tensor(concentration, scale))
        self.concentration_reciprocal = self.concentration.reciprocal()
        base = Exponential(self.scale.new_ones(tuple(self.scale.shape)), validate_args=validate_args)
        super().__init__(base, [PowerTransform(self.concentration_reciprocal), AffineTransform(0, self.scale)],
                         validate_args)

    @property
    def mean(self):
        return self.scale * (1 + self.concentration_reciprocal).lgamma().exp()

    @property
    def mode(self):
        c = self.concentration
        return self.scale * ((c - 1) / c).pow(c.reciprocal())

    @property
    def variance(self):
        return self.scale.pow(2) * ((1 + 2 * self.concentration_reciprocal).lgamma().exp()
                                    - (1 + self.concentration_reciprocal).lgamma().exp().pow(2))

    def entropy(self):
        return (_EULER * (1 - self.concentration_reciprocal) + (self.scale * self.concentration_reciprocal).log()
                + 1)

    def __repr__(self):
        return f"Weibull({self._param_repr()})"


class Pareto(TransformedDistribution):
    """Pareto(scale, alpha): scale · e^E for E ~ Exponential(alpha); support [scale, ∞)."""

    arg_constraints = {"alpha": constraints.positive, "scale": constraints.positive}

    def __init__(self, scale, alpha, validate_args=None):
        scale = _tensor(scale, alpha if hasattr(alpha, "dtype") else None)
        self.scale, self.alpha = _broadcast(scale, _tensor(alpha, scale))
        super().__init__(Exponential(self.alpha, validate_args=validate_args),
                         [ExpTransform(), AffineTransform(0, self.scale)], validate_args)

    @property
    def support(self):
        return constraints.greater_than_eq(self.scale)

    @property
    def mean(self):
        from . import _api as rawdev
        a = self.alpha.clamp(min=1)
        return rawdev.where(self.alpha > 1, a * self.scale / (a - 1), rawdev.full_like(a, math.inf))

    @property
    def mode(self):
        return self.scale

    @property
    def variance(self):
        from . import _api as rawdev
        a = self.alpha.clamp(min=2)
        v = self.scale.pow(2) * a / ((a - 1).pow(2) * (a - 2))
        return rawdev.where(self.alpha > 2, v, rawdev.full_like(v, math.inf))

    def entropy(self):
        return (self.scale / self.alpha).log() + (1 + self.alpha.reciprocal())

    def __repr__(self):
        return f"Pareto({self._param_repr()})"


class LogisticNormal(TransformedDistribution):
    """LogisticNormal(loc, scale): a Normal vector of length K − 1 mapped to the K-simplex by stick breaking."""

    arg_constraints = {"loc": constraints.real, "scale": constraints.positive}
    support = constraints.simplex

    def __init__(self, loc, scale, validate_args=None):
        base = Normal(loc, scale, validate_args=validate_args)
        if not base.batch_shape:
            raise ValueError("LogisticNormal needs a vector loc (the last dimension is the event)")
        super().__init__(Independent(base, 1), StickBreakingTransform(), validate_args)

    @property
    def loc(self):
        return self.base_dist.base_dist.loc

    @property
    def scale(self):
        return self.base_dist.base_dist.scale

    def __repr__(self):
        return f"LogisticNormal(loc: {self.loc.size()}, scale: {self.scale.size()})"


class _RelaxedParams:
    def _init_params(self, temperature, probs, logits):
        _one_of(probs, logits)
        from .families import Bernoulli, Categorical
        self._logits_given = logits is not None
        if self._binary:
            d = Bernoulli(probs=probs, logits=logits, validate_args=False)
        else:
            d = Categorical(probs=probs, logits=logits, validate_args=False)
        self.probs, self.logits = d.probs, d.logits
        self.temperature = _tensor(temperature, self.probs)
        return d


class LogitRelaxedBernoulli(_RelaxedParams, Distribution):
    """The logit of a RelaxedBernoulli sample (Concrete distribution of Maddison et al.)."""

    arg_constraints = {"probs": constraints.unit_interval, "logits": constraints.real}
    support = constraints.real
    has_rsample = True
    _binary = True

    def __init__(self, temperature, probs=None, logits=None, validate_args=None):
        self._init_params(temperature, probs, logits)
        super().__init__(self.probs.shape, Size(), validate_args)

    def rsample(self, sample_shape=()):
        from . import _api as rawdev
        shape = tuple(self._extended_shape(sample_shape))
        probs = _clamp_probs(self.probs.expand(*shape))
        u = _clamp_probs(rawdev.rand(shape, dtype=probs.dtype, device=probs.device))
        return (u.log() - (-u).log1p() + probs.log() - (-probs).log1p()) / self.temperature

    def log_prob(self, value):
        logits, value = _broadcast(self.logits, _tensor(value, self.logits))
        diff = logits - value * self.temperature
        return self.temperature.log() + diff - 2 * diff.exp().log1p()


class RelaxedBernoulli(TransformedDistribution):
    """RelaxedBernoulli(temperature, probs=None, logits=None): a differentiable stand-in for Bernoulli samples in
    (0, 1), sharper as the temperature falls."""

    arg_constraints = {"probs": constraints.unit_interval, "logits": constraints.real}
    support = constraints.unit_interval
    has_rsample = True

    def __init__(self, temperature, probs=None, logits=None, validate_args=None):
        super().__init__(LogitRelaxedBernoulli(temperature, probs, logits, validate_args), SigmoidTransform(),
                         validate_args)

    temperature = property(lambda self: self.base_dist.temperature)
    probs = property(lambda self: self.base_dist.probs)
    logits = property(lambda self: self.base_dist.logits)


class ExpRelaxedCategorical(_RelaxedParams, Distribution):
    """The log of a RelaxedOneHotCategorical sample (a point on the log-simplex)."""

    arg_constraints = {"probs": constraints.simplex, "logits": constraints.real_vector}
    support = constraints.real_vector
    has_rsample = True
    _binary = False

    def __init__(self, temperature, probs=None, logits=None, validate_args=None):
        self._categorical = self._init_params(temperature, probs, logits)
        super().__init__(self._categorical.batch_shape, self._categorical.param_shape[-1:], validate_args)

    def rsample(self, sample_shape=()):
        from . import _api as rawdev
        shape = tuple(self._extended_shape(sample_shape))
        u = _clamp_probs(rawdev.rand(shape, dtype=self.logits.dtype, device=self.logits.device))
        gumbels = -((-(u.log())).log())
        scores = (self.logits + gumbels) / self.temperature
        return scores - scores.logsumexp(-1, keepdim=True)

    def log_prob(self, value):
        K = self._categorical._num_events
        logits, value = _broadcast(self.logits, _tensor(value, self.logits))
        log_scale = self.temperature.new_full(tuple(self.temperature.shape), float(K)).lgamma() \
            - self.temperature.log() * (-(K - 1))
        score = logits - value * self.temperature
        score = (score - score.logsumexp(-1, keepdim=True)).sum(-1)
        return score + log_scale


class RelaxedOneHotCategorical(TransformedDistribution):
    """RelaxedOneHotCategorical(temperature, probs=None, logits=None): Gumbel-softmax samples on the simplex."""

    arg_constraints = {"probs": constraints.simplex, "logits": constraints.real_vector}
    support = constraints.simplex
    has_rsample = True

    def __init__(self, temperature, probs=None, logits=None, validate_args=None):
        super().__init__(ExpRelaxedCategorical(temperature, probs, logits, validate_args), ExpTransform(),
                         validate_args)

    temperature = property(lambda self: self.base_dist.temperature)
    probs = property(lambda self: self.base_dist.probs)
    logits = property(lambda self: self.base_dist.logits)
