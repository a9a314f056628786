"""Exponential, Laplace, Cauchy, LogNormal, Gamma, Beta, Dirichlet, Poisson, Geometric and MultivariateNormal
(torch.distributions' parameterizations and formulas), composed of rawdev's tensor ops on the parameters' device.

Sampling stays on the device: Gamma by Marsaglia–Tsang rejection (every element retried until accepted, one
"all accepted?" read per round; concentration < 1 boosted by u^(1/α)), Beta and Dirichlet from Gammas, Poisson by
counting exponential inter-arrival times (as many rounds as the largest rate needs, so meant for moderate rates).
Reparameterized samples (rsample) carry gradients to location/scale/rate parameters; the implicit gradient of a
Gamma sample with respect to its concentration is not implemented, and rsample says so rather than return a
gradient that leaves it out.
"""
import math

from ..autograd.grad_mode import no_grad
from ..tensor.size import Size
from . import constraints
from .distribution import Distribution, positive, real, unit_interval
from .families import LocScale, _broadcast, _tensor

__all__ = ["Exponential", "Laplace", "Cauchy", "LogNormal", "Gamma", "Beta", "Dirichlet", "Poisson", "Geometric",
           "MultivariateNormal"]

_EPS32 = 1.1920928955078125e-07


def _api():
    from . import _api as rawdev
    return rawdev


def _uniform(shape, like, low=0.0, high=1.0):
    """U(low, high) of the given shape, open at 0 (so its log is finite)."""
    u = _api().rand(tuple(shape), dtype=like.dtype, device=like.device)
    u = u.clamp_min(_EPS32 if like.dtype.itemsize <= 4 else 1e-300)
    return low + (high - low) * u


class Exponential(Distribution):
    """Exponential(rate): density rate·exp(−rate·x) on x ≥ 0."""

    support = constraints.nonnegative

    arg_constraints = {"rate": positive}
    has_rsample = True

    def __init__(self, rate, validate_args=None):
        self.rate = _tensor(rate)
        super().__init__(self.rate.shape, Size(), validate_args)

    @property
    def mean(self):
        return 1 / self.rate

    @property
    def mode(self):
        return self.rate * 0

    @property
    def variance(self):
        return self.rate.pow(-2)

    def rsample(self, sample_shape=()):
        u = _uniform(self._extended_shape(sample_shape), self.rate)
        return -u.log() / self.rate

    def log_prob(self, value):
        value = _tensor(value, self.rate)
        return self.rate.log() - self.rate * value

    def cdf(self, value):
        return 1 - (-self.rate * _tensor(value, self.rate)).exp()

    def icdf(self, value):
        return -(-_tensor(value, self.rate)).log1p() / self.rate

    def entropy(self):
        return 1.0 - self.rate.log()


class Laplace(LocScale):
    """Laplace(loc, scale): density exp(−|x − loc|/scale) / (2·scale)."""

    support = constraints.real

    @property
    def mean(self):
        return self.loc

    @property
    def variance(self):
        return 2 * self.scale.pow(2)

    @property
    def stddev(self):
        return math.sqrt(2) * self.scale

    def rsample(self, sample_shape=()):
        u = _uniform(self._extended_shape(sample_shape), self.loc, -1.0, 1.0)
        return self.loc - self.scale * u.sign() * (-u.abs()).log1p()

    def log_prob(self, value):
        value = _tensor(value, self.loc)
        return -(2 * self.scale).log() - (value - self.loc).abs() / self.scale

    def cdf(self, value):
        z = _tensor(value, self.loc) - self.loc
        return 0.5 - 0.5 * z.sign() * (-(z.abs() / self.scale)).expm1()

    def icdf(self, value):
        term = _tensor(value, self.loc) - 0.5
        return self.loc - self.scale * term.sign() * (-2 * term.abs()).log1p()

    def entropy(self):
        return 1 + (2 * self.scale).log()


class Cauchy(LocScale):
    """Cauchy(loc, scale): the ratio of two normals; no mean or variance (nan / inf, as PyTorch)."""

    support = constraints.real

    @property
    def mean(self):
        return self.loc.new_full(tuple(self.batch_shape), float("nan"))

    @property
    def variance(self):
        return self.loc.new_full(tuple(self.batch_shape), float("inf"))

    def rsample(self, sample_shape=()):
        u = _uniform(self._extended_shape(sample_shape), self.loc)
        return self.loc + self.scale * ((u - 0.5) * math.pi).tan()

    def log_prob(self, value):
        z = (_tensor(value, self.loc) - self.loc) / self.scale
        return -math.log(math.pi) - self.scale.log() - z.pow(2).log1p()

    def cdf(self, value):
        return ((_tensor(value, self.loc) - self.loc) / self.scale).atan() / math.pi + 0.5

    def icdf(self, value):
        return ((_tensor(value, self.loc) - 0.5) * math.pi).tan() * self.scale + self.loc

    def entropy(self):
        return math.log(4 * math.pi) + self.scale.log()


class LogNormal(Distribution):
    """LogNormal(loc, scale): exp of Normal(loc, scale)."""

    support = constraints.positive

    arg_constraints = {"loc": real, "scale": positive}
    has_rsample = True

    def __init__(self, loc, scale, validate_args=None):
        from .families import Normal
        self.base_dist = Normal(loc, scale, validate_args=validate_args)
        self.loc, self.scale = self.base_dist.loc, self.base_dist.scale
        super().__init__(self.loc.shape, Size(), validate_args)

    @property
    def mean(self):
        return (self.loc + self.scale.pow(2) / 2).exp()

    @property
    def mode(self):
        return (self.loc - self.scale.pow(2)).exp()

    @property
    def variance(self):
        s2 = self.scale.pow(2)
        return s2.expm1() * (2 * self.loc + s2).exp()

    def rsample(self, sample_shape=()):
        return self.base_dist.rsample(sample_shape).exp()

    def log_prob(self, value):
        value = _tensor(value, self.loc)
        return self.base_dist.log_prob(value.log()) - value.log()

    def cdf(self, value):
        return self.base_dist.cdf(_tensor(value, self.loc).log())

    def icdf(self, value):
        return self.base_dist.icdf(value).exp()

    def entropy(self):
        return self.base_dist.entropy() + self.loc


def _standard_gamma(alpha, shape):
    """Gamma(alpha, 1) draws of `shape` (alpha broadcast to it), on alpha's device, no gradient."""
    rawdev = _api()
    with no_grad():
        a = alpha.detach().expand(*shape).contiguous()
        boost = a < 1
        a1 = rawdev.where(boost, a + 1, a)
        d = a1 - 1.0 / 3
        c = 1.0 / (9 * d).sqrt()
        out = a1 * 0
        todo = a1 == a1                                            # every element until accepted
        while bool(todo.any().item()):
            x = rawdev.randn(tuple(shape), dtype=a.dtype, device=a.device)
            v = (1 + c * x) ** 3
            u = _uniform(shape, a)
            ok = (v > 0) & (u.log() < 0.5 * x * x + d - d * v + d * v.clamp_min(1e-30).log())
            take = todo & ok
            out = rawdev.where(take, d * v, out)
            todo = todo & ~ok
        u = _uniform(shape, a)
        out = rawdev.where(boost, out * u.pow(1.0 / a), out)
        tiny = 1e-300 if a.dtype.itemsize == 8 else 1.1754943508222875e-38
        return out.clamp_min(tiny)


class Gamma(Distribution):
    """Gamma(concentration α, rate β): density β^α x^(α−1) e^(−βx) / Γ(α)."""

    support = constraints.nonnegative

    arg_constraints = {"concentration": positive, "rate": positive}
    has_rsample = True

    def __init__(self, concentration, rate, validate_args=None):
        c = _tensor(concentration, rate if hasattr(rate, "shape") else None)
        self.concentration, self.rate = _broadcast(c, _tensor(rate, c))
        super().__init__(self.concentration.shape, Size(), validate_args)

    @property
    def mean(self):
        return self.concentration / self.rate

    @property
    def mode(self):
        return ((self.concentration - 1) / self.rate).clamp(min=0)

    @property
    def variance(self):
        return self.concentration / self.rate.pow(2)

    def rsample(self, sample_shape=()):
        if self.concentration.requires_grad:
            raise NotImplementedError("rawdev: the reparameterized gradient of a Gamma sample with respect to its "
                                      "concentration is not implemented; use sample() (and a score-function "
                                      "estimator) or a concentration that does not require grad")
        return _standard_gamma(self.concentration, self._extended_shape(sample_shape)) / self.rate

    def log_prob(self, value):
        value = _tensor(value, self.rate)
        a, b = self.concentration, self.rate
        return a * b.log() + (a - 1) * value.log() - b * value - a.lgamma()

    def entropy(self):
        a = self.concentration
        return a - self.rate.log() + a.lgamma() + (1.0 - a) * a.digamma()

    def cdf(self, value):
        from ..ops.gamma import igamma
        return igamma(self.concentration, _tensor(value, self.rate) * self.rate)


class Beta(Distribution):
    """Beta(concentration1 α, concentration0 β) on (0, 1)."""

    support = constraints.unit_interval

    arg_constraints = {"concentration1": positive, "concentration0": positive}
    has_rsample = True

    def __init__(self, concentration1, concentration0, validate_args=None):
        a = _tensor(concentration1, concentration0 if hasattr(concentration0, "shape") else None)
        self.concentration1, self.concentration0 = _broadcast(a, _tensor(concentration0, a))
        super().__init__(self.concentration1.shape, Size(), validate_args)

    @property
    def mean(self):
        return self.concentration1 / (self.concentration1 + self.concentration0)

    @property
    def mode(self):
        from ..ops.join import stack
        return _dirichlet_mode(stack([self.concentration1, self.concentration0], -1))[..., 0]

    @property
    def variance(self):
        total = self.concentration1 + self.concentration0
        return self.concentration1 * self.concentration0 / (total.pow(2) * (total + 1))

    def rsample(self, sample_shape=()):
        if self.concentration1.requires_grad or self.concentration0.requires_grad:
            raise NotImplementedError("rawdev: reparameterized Beta samples (implicit Gamma gradients) are not "
                                      "implemented; use sample()")
        shape = self._extended_shape(sample_shape)
        x = _standard_gamma(self.concentration1, shape)
        y = _standard_gamma(self.concentration0, shape)
        return x / (x + y)

    def log_prob(self, value):
        value = _tensor(value, self.concentration1)
        a, b = self.concentration1, self.concentration0
        return (a - 1) * value.log() + (b - 1) * (-value).log1p() + (a + b).lgamma() - a.lgamma() - b.lgamma()

    def entropy(self):
        a, b = self.concentration1, self.concentration0
        total = a + b
        lbeta = a.lgamma() + b.lgamma() - total.lgamma()
        return lbeta - (a - 1) * a.digamma() - (b - 1) * b.digamma() + (total - 2) * total.digamma()


def _dirichlet_mode(conc):
    """PyTorch's: (α − 1)₊ normalized; where every α < 1, the one-hot of the largest α."""
    m1 = (conc - 1).clamp(min=0.0)
    mode = m1 / m1.sum(-1, keepdim=True)
    all_small = (conc < 1).all(-1, keepdim=True)
    hot = (conc == conc.amax(-1, keepdim=True)).to(dtype=conc.dtype)
    return _api().where(all_small.expand_as(mode), hot, mode)


class Dirichlet(Distribution):
    """Dirichlet(concentration [..., K]) on the probability simplex."""

    support = constraints.simplex

    arg_constraints = {"concentration": positive}
    has_rsample = True

    def __init__(self, concentration, validate_args=None):
        if concentration.ndim < 1:
            raise ValueError("`concentration` parameter must be at least one-dimensional.")
        self.concentration = concentration
        super().__init__(concentration.shape[:-1], concentration.shape[-1:], validate_args)

    @property
    def mean(self):
        return self.concentration / self.concentration.sum(-1, keepdim=True)

    @property
    def mode(self):
        return _dirichlet_mode(self.concentration)

    @property
    def variance(self):
        c0 = self.concentration.sum(-1, keepdim=True)
        return self.concentration * (c0 - self.concentration) / (c0.pow(2) * (c0 + 1))

    def rsample(self, sample_shape=()):
        if self.concentration.requires_grad:
            raise NotImplementedError("rawdev: reparameterized Dirichlet samples (implicit Gamma gradients) are not "
                                      "implemented; use sample()")
        g = _standard_gamma(self.concentration, self._extended_shape(sample_shape))
        return g / g.sum(-1, keepdim=True)

    def log_prob(self, value):
        a = self.concentration
        return ((a - 1) * value.log()).sum(-1) + a.sum(-1).lgamma() - a.lgamma().sum(-1)

    def entropy(self):
        a = self.concentration
        k = a.shape[-1]
        a0 = a.sum(-1)
        return a.lgamma().sum(-1) - a0.lgamma() - (k - a0) * a0.digamma() - ((a - 1) * a.digamma()).sum(-1)


class Poisson(Distribution):
    """Poisson(rate): counts k ≥ 0 with probability rate^k e^(−rate) / k!."""

    support = constraints.nonnegative_integer

    arg_constraints = {"rate": positive}

    def __init__(self, rate, validate_args=None):
        self.rate = _tensor(rate)
        super().__init__(self.rate.shape, Size(), validate_args)

    @property
    def mean(self):
        return self.rate

    @property
    def mode(self):
        return self.rate.floor()

    @property
    def variance(self):
        return self.rate

    def sample(self, sample_shape=()):
        shape = tuple(self._extended_shape(sample_shape))
        with no_grad():
            rate = self.rate.detach().expand(*shape)
            t = rate * 0                                        # time of the latest arrival, in units of 1/rate
            count = rate * 0
            running = rate > 0
            while bool(running.any().item()):
                t = t - _uniform(shape, rate).log() / rate.clamp_min(1e-30)
                arrived = running & (t <= 1)
                count = count + arrived.to(dtype=count.dtype)
                running = arrived
            return count

    def log_prob(self, value):
        value = _tensor(value, self.rate)
        return value * self.rate.log() - self.rate - (value + 1).lgamma()


class Geometric(Distribution):
    """Geometric(probs): the number of failures before the first success (0, 1, 2, …)."""

    support = constraints.nonnegative_integer

    arg_constraints = {"probs": unit_interval}

    def __init__(self, probs=None, logits=None, validate_args=None):
        if (probs is None) == (logits is None):
            raise ValueError("Either `probs` or `logits` must be specified, but not both.")
        self.probs = _tensor(probs) if probs is not None else _tensor(logits).sigmoid()
        super().__init__(self.probs.shape, Size(), validate_args)

    @property
    def mean(self):
        return 1.0 / self.probs - 1.0

    @property
    def mode(self):
        return self.probs * 0

    @property
    def variance(self):
        return (1.0 / self.probs - 1.0) / self.probs

    def sample(self, sample_shape=()):
        with no_grad():
            u = _uniform(self._extended_shape(sample_shape), self.probs)
            return (u.log() / (-self.probs.detach()).log1p()).floor()

    def log_prob(self, value):
        value = _tensor(value, self.probs)
        p = self.probs.clamp(_EPS32, 1 - _EPS32) if self.probs.dtype.itemsize <= 4 else self.probs
        return value * (-p).log1p() + self.probs.log()

    def entropy(self):
        p = self.probs
        return -(p.log() * p + (-p).log1p() * (1 - p)) / p


class MultivariateNormal(Distribution):
    """MultivariateNormal(loc [..., k], covariance_matrix | precision_matrix | scale_tril [..., k, k]); everything
    is computed from the lower Cholesky factor L (covariance = L Lᵀ)."""

    support = constraints.real_vector

    arg_constraints = {"loc": real}
    has_rsample = True

    def __init__(self, loc, covariance_matrix=None, precision_matrix=None, scale_tril=None, validate_args=None):
        from ..ops import decomp, solve_inv_det
        given = [m is not None for m in (covariance_matrix, precision_matrix, scale_tril)]
        if sum(given) != 1:
            raise ValueError("Exactly one of covariance_matrix or precision_matrix or scale_tril may be specified.")
        if loc.ndim < 1:
            raise ValueError("loc must be at least one-dimensional.")
        if scale_tril is not None:
            if scale_tril.ndim < 2:
                raise ValueError("scale_tril matrix must be at least two-dimensional, with optional leading batch "
                                 "dimensions")
            L = scale_tril
        elif covariance_matrix is not None:
            if covariance_matrix.ndim < 2:
                raise ValueError("covariance_matrix must be at least two-dimensional, with optional leading batch "
                                 "dimensions")
            L = decomp.cholesky(covariance_matrix)
        else:
            L = decomp.cholesky(solve_inv_det.inv(precision_matrix))
        import numpy as np
        batch = tuple(np.broadcast_shapes(tuple(L.shape[:-2]), tuple(loc.shape[:-1])))
        k = loc.shape[-1]
        self.loc = loc.expand(*batch, k)
        self._unbroadcasted_scale_tril = L
        self.scale_tril = L.expand(*batch, k, k)
        super().__init__(batch, (k,), validate_args)

    @property
    def covariance_matrix(self):
        return self.scale_tril @ self.scale_tril.transpose(-2, -1)

    @property
    def precision_matrix(self):
        from ..ops import decomp
        return decomp.cholesky_inverse(self.scale_tril)

    @property
    def mean(self):
        return self.loc

    @property
    def mode(self):
        return self.loc

    @property
    def variance(self):
        return self.scale_tril.pow(2).sum(-1)

    def rsample(self, sample_shape=()):
        shape = tuple(self._extended_shape(sample_shape))
        eps = _api().randn(shape, dtype=self.loc.dtype, device=self.loc.device)
        return self.loc + (self._unbroadcasted_scale_tril @ eps.unsqueeze(-1)).squeeze(-1)

    def _half_log_det(self):
        return self._unbroadcasted_scale_tril.diagonal(0, -2, -1).log().sum(-1)

    def log_prob(self, value):
        from ..ops import decomp
        diff = value - self.loc
        L = self._unbroadcasted_scale_tril
        import numpy as np
        batch = tuple(np.broadcast_shapes(tuple(L.shape[:-2]), tuple(diff.shape[:-1])))
        z = decomp.solve_triangular(L.expand(*batch, *L.shape[-2:]), diff.expand(*batch, diff.shape[-1]).unsqueeze(-1),
                                    upper=False).squeeze(-1)
        k = self._event_shape[0]
        return -0.5 * (k * math.log(2 * math.pi) + (z * z).sum(-1)) - self._half_log_det()

    def entropy(self):
        k = self._event_shape[0]
        h = 0.5 * k * (1.0 + math.log(2 * math.pi)) + self._half_log_det()
        return h.expand(*self.batch_shape) if len(self.batch_shape) else h

