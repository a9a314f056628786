"""Binomial, Multinomial, NegativeBinomial, StudentT, Chi2, InverseGamma and MixtureSameFamily
(torch.distributions' formulas), composed from tensor ops on the parameters' device."""
import math

from ..autograd.grad_mode import no_grad
from ..tensor.size import Size
from . import constraints
from .continuous import Gamma, Poisson, _standard_gamma
from .distribution import Distribution
from .families import Categorical, _broadcast, _one_of, _tensor
from .transformed import TransformedDistribution
from .transforms import PowerTransform

__all__ = ["Binomial", "Multinomial", "NegativeBinomial", "StudentT", "Chi2", "InverseGamma", "MixtureSameFamily"]

_BERNOULLI_CHUNK = 256   # Binomial draws sum this many Bernoulli trials per pass


def _clamp_by_zero(x):
    return (x.clamp(min=0) + x - x.clamp(max=0)) / 2


class _TrialCounts(Distribution):
    """The base of Binomial and NegativeBinomial: total_count broadcast with probs or logits (one of them given;
    the other derived as Bernoulli derives it)."""

    def __init__(self, total_count, probs, logits, validate_args):
        from .families import Bernoulli
        _one_of(probs, logits)
        param = _tensor(probs if probs is not None else logits)
        self.total_count, param = _broadcast(_tensor(total_count, param), param)
        d = Bernoulli(probs=param if probs is not None else None, logits=param if logits is not None else None,
                      validate_args=False)
        self.probs, self.logits = d.probs, d.logits
        super().__init__(self.probs.shape, Size(), validate_args)


class Binomial(_TrialCounts):
    """Binomial(total_count=1, probs=None, logits=None): successes in total_count independent trials."""

    arg_constraints = {"total_count": constraints.nonnegative_integer, "probs": constraints.unit_interval,
                       "logits": constraints.real}
    has_enumerate_support = True

    def __init__(self, total_count=1, probs=None, logits=None, validate_args=None):
        super().__init__(total_count, probs, logits, validate_args)

    @constraints.dependent_property(is_discrete=True, event_dim=0)
    def support(self):
        return constraints.integer_interval(0, self.total_count)

    @property
    def mean(self):
        return self.total_count * self.probs

    @property
    def mode(self):
        return ((self.total_count + 1) * self.probs).floor().clamp(max=self.total_count)

    @property
    def variance(self):
        return self.total_count * self.probs * (1 - self.probs)

    def sample(self, sample_shape=()):
        """Sums of Bernoulli trials, _BERNOULLI_CHUNK at a time (exact for any total_count)."""
        from . import _api as rawdev
        shape = tuple(self._extended_shape(sample_shape))
        with no_grad():
            n = self.total_count.detach().expand(*shape)
            p = self.probs.detach().expand(*shape).unsqueeze(-1)
            count = p.new_zeros(shape)
            top = int(n.max().item()) if n.numel() else 0
            for start in range(0, top, _BERNOULLI_CHUNK):
                width = min(_BERNOULLI_CHUNK, top - start)
                k = rawdev.arange(start, start + width, dtype=p.dtype, device=p.device)
                u = rawdev.rand(shape + (width,), dtype=p.dtype, device=p.device)
                count = count + ((u < p) & (k < n.unsqueeze(-1))).to(dtype=p.dtype).sum(-1)
            return count

    def log_prob(self, value):
        value = _tensor(value, self.logits)
        n = self.total_count
        log_factorial_n = (n + 1).lgamma()
        log_factorial_k = (value + 1).lgamma()
        log_factorial_nmk = (n - value + 1).lgamma()
        normalize = n * _clamp_by_zero(self.logits) + n * (-self.logits.abs()).exp().log1p() - log_factorial_n
        return value * self.logits - log_factorial_k - log_factorial_nmk - normalize

    def entropy(self):
        total = int(self.total_count.max().item())
        if not int(self.total_count.min().item()) == total:
            raise NotImplementedError("Inhomogeneous total count not supported by `entropy`.")
        lp = self.log_prob(self.enumerate_support(False))
        return -(lp.exp() * lp).sum(0)

    def enumerate_support(self, expand=True):
        from . import _api as rawdev
        total = int(self.total_count.max().item())
        if not int(self.total_count.min().item()) == total:
            raise NotImplementedError("Inhomogeneous total count not supported by `enumerate_support`.")
        values = rawdev.arange(1 + total, dtype=self.probs.dtype, device=self.probs.device)
        values = values.view((-1,) + (1,) * len(self.batch_shape))
        return values.expand((-1,) + tuple(self.batch_shape)) if expand else values


class Multinomial(Distribution):
    """Multinomial(total_count=1, probs=None, logits=None): counts per category of total_count draws (the last
    dimension is the event)."""

    arg_constraints = {"probs": constraints.simplex, "logits": constraints.real_vector}

    def __init__(self, total_count=1, probs=None, logits=None, validate_args=None):
        if not isinstance(total_count, int):
            raise NotImplementedError("inhomogeneous total_count is not supported")
        self.total_count = total_count
        self._categorical = Categorical(probs=probs, logits=logits, validate_args=False)
        self.probs, self.logits = self._categorical.probs, self._categorical.logits
        super().__init__(self._categorical.batch_shape, self._categorical.param_shape[-1:], validate_args)

    @constraints.dependent_property(is_discrete=True, event_dim=1)
    def support(self):
        return constraints.independent(constraints.integer_interval(0, self.total_count), 1)

    @property
    def mean(self):
        return self.probs * self.total_count

    @property
    def variance(self):
        return self.total_count * self.probs * (1 - self.probs)

    def sample(self, sample_shape=()):
        shape = Size(tuple(sample_shape))
        with no_grad():
            samples = self._categorical.sample(Size((self.total_count,)) + shape)
            order = list(range(samples.ndim))
            order.append(order.pop(0))
            samples = samples.permute(*order)
            counts = self.probs.new_zeros(tuple(self._extended_shape(sample_shape)))
            counts.scatter_add_(-1, samples, samples.new_ones(tuple(samples.shape)).to(dtype=counts.dtype))
            return counts

    def log_prob(self, value):
        from . import _api as rawdev
        logits, value = _broadcast(self.logits, _tensor(value, self.logits))
        logits = rawdev.where((value == 0) & (logits == -math.inf), logits.new_zeros(()), logits)
        log_factorial_n = (value.sum(-1) + 1).lgamma()
        log_factorial_xs = (value + 1).lgamma().sum(-1)
        return log_factorial_n - log_factorial_xs + (logits * value).sum(-1)


class NegativeBinomial(_TrialCounts):
    """NegativeBinomial(total_count, probs=None, logits=None): successes before total_count failures, each trial
    a success with probability probs."""

    arg_constraints = {"total_count": constraints.greater_than_eq(0),
                       "probs": constraints.half_open_interval(0.0, 1.0), "logits": constraints.real}
    support = constraints.nonnegative_integer

    def __init__(self, total_count, probs=None, logits=None, validate_args=None):
        super().__init__(total_count, probs, logits, validate_args)

    @property
    def mean(self):
        return self.total_count * self.logits.exp()

    @property
    def mode(self):
        return ((self.total_count - 1) * self.logits.exp()).floor().clamp(min=0.0)

    @property
    def variance(self):
        return self.mean / (-self.logits).sigmoid()

    def sample(self, sample_shape=()):
        """A Poisson draw at a Gamma(total_count, e^−logits) rate (the Gamma–Poisson mixture)."""
        with no_grad():
            shape = self._extended_shape(sample_shape)
            rate = _standard_gamma(self.total_count, shape) * self.logits.exp()
            return Poisson(rate, validate_args=False).sample()

    def log_prob(self, value):
        from ..nn import functional as F
        value = _tensor(value, self.logits)
        n = self.total_count
        log_unnormalized = n * F.logsigmoid(-self.logits) + value * F.logsigmoid(self.logits)
        log_normalization = -(n + value).lgamma() + (1.0 + value).lgamma() + n.lgamma()
        from . import _api as rawdev
        log_normalization = rawdev.where(n + value == 0, log_normalization.new_zeros(()), log_normalization)
        return log_unnormalized - log_normalization


class Chi2(Gamma):
    """Chi2(df): Gamma(df / 2, rate 1/2)."""

    arg_constraints = {"df": constraints.positive}

    def __init__(self, df, validate_args=None):
        df = _tensor(df)
        super().__init__(0.5 * df, df.new_full((), 0.5), validate_args)

    @property
    def df(self):
        return self.concentration * 2

    def __repr__(self):
        return f"Chi2(df: {self.df if self.df.numel() == 1 else self.df.size()})"


class StudentT(Distribution):
    """StudentT(df, loc=0, scale=1): rsample = loc + scale · Z / sqrt(V / df), Z ~ N(0, 1), V ~ Chi2(df)."""

    arg_constraints = {"df": constraints.positive, "loc": constraints.real, "scale": constraints.positive}
    support = constraints.real
    has_rsample = True

    def __init__(self, df, loc=0.0, scale=1.0, validate_args=None):
        df = _tensor(df)
        self.df, self.loc, self.scale = _broadcast(df, _tensor(loc, df), _tensor(scale, df))
        super().__init__(self.df.shape, Size(), validate_args)

    @property
    def mean(self):
        from . import _api as rawdev
        return rawdev.where(self.df > 1, self.loc, self.loc.new_full((), math.nan).expand(*self.loc.shape))

    @property
    def mode(self):
        return self.loc

    @property
    def variance(self):
        from . import _api as rawdev
        df = self.df
        v = self.scale.pow(2) * df / (df - 2).clamp(min=1e-30)
        v = rawdev.where(df > 2, v, v.new_full((), math.inf).expand(*v.shape))
        return rawdev.where(df > 1, v, v.new_full((), math.nan).expand(*v.shape))

    def rsample(self, sample_shape=()):
        from . import _api as rawdev
        shape = tuple(self._extended_shape(sample_shape))
        x = rawdev.randn(shape, dtype=self.df.dtype, device=self.df.device)
        z = 2 * _standard_gamma(0.5 * self.df, Size(shape))
        return self.loc + self.scale * (x * (z / self.df).rsqrt())

    def log_prob(self, value):
        value = _tensor(value, self.df)
        y = (value - self.loc) / self.scale
        Z = (self.scale.log() + 0.5 * self.df.log() + 0.5 * math.log(math.pi) + (0.5 * self.df).lgamma()
             - (0.5 * (self.df + 1.0)).lgamma())
        return -0.5 * (self.df + 1.0) * (y.pow(2) / self.df).log1p() - Z

    def entropy(self):
        df = self.df
        lbeta = (0.5 * df).lgamma() + math.lgamma(0.5) - (0.5 * (df + 1)).lgamma()
        return (self.scale.log() + 0.5 * (df + 1) * ((0.5 * (df + 1)).digamma() - (0.5 * df).digamma())
                + 0.5 * df.log() + lbeta)


class InverseGamma(TransformedDistribution):
    """InverseGamma(concentration, rate): 1 / X for X ~ Gamma(concentration, rate)."""

    arg_constraints = {"concentration": constraints.positive, "rate": constraints.positive}
    support = constraints.positive
    has_rsample = True

    def __init__(self, concentration, rate, validate_args=None):
        super().__init__(Gamma(concentration, rate, validate_args=validate_args), PowerTransform(-1.0),
                         validate_args)

    concentration = property(lambda self: self.base_dist.concentration)
    rate = property(lambda self: self.base_dist.rate)

    @property
    def mean(self):
        from . import _api as rawdev
        c = self.concentration
        m = self.rate / (c - 1)
        return rawdev.where(c > 1, m, m.new_full((), math.inf).expand(*m.shape))

    @property
    def mode(self):
        return self.rate / (self.concentration + 1)

    @property
    def variance(self):
        from . import _api as rawdev
        c = self.concentration
        v = self.rate.pow(2) / ((c - 1).pow(2) * (c - 2))
        return rawdev.where(c > 2, v, v.new_full((), math.inf).expand(*v.shape))

    def entropy(self):
        c = self.concentration
        return c + self.rate.log() + c.lgamma() - (1 + c) * c.digamma()

    def __repr__(self):
        return f"InverseGamma(concentration: {self.concentration.size()}, rate: {self.rate.size()})"


class MixtureSameFamily(Distribution):
    """MixtureSameFamily(mixture_distribution, component_distribution): a Categorical over the last batch
    dimension of component_distribution picks the component of each draw; log_prob is the log of the weighted
    sum of the components' densities (a logsumexp).

    Example:
        >>> mix = Categorical(torch.ones(3))
        >>> comp = Normal(torch.tensor([-2., 0., 2.]), torch.ones(3))
        >>> gmm = MixtureSameFamily(mix, comp)
    """

    arg_constraints: dict = {}
    has_rsample = False

    def __init__(self, mixture_distribution, component_distribution, validate_args=None):
        self._mixture_distribution, self._component_distribution = mixture_distribution, component_distribution
        if not isinstance(mixture_distribution, Categorical):
            raise ValueError("The Mixture distribution needs to be an instance of torch.distributions.Categorical")
        if not isinstance(component_distribution, Distribution):
            raise ValueError("The Component distribution need to be an instance of torch.distributions.Distribution")
        mdbs, cdbs = tuple(mixture_distribution.batch_shape), tuple(component_distribution.batch_shape)[:-1]
        for size1, size2 in zip(reversed(mdbs), reversed(cdbs)):
            if size1 != 1 and size2 != 1 and size1 != size2:
                raise ValueError(f"`mixture_distribution.batch_shape` ({mdbs}) is not compatible with "
                                 f"`component_distribution.batch_shape`({cdbs})")
        km = mixture_distribution.logits.shape[-1]
        kc = component_distribution.batch_shape[-1]
        if km != kc:
            raise ValueError(f"`mixture_distribution component` ({km}) does not equal "
                             f"`component_distribution.batch_shape[-1]` ({kc})")
        self._num_component = km
        self._event_ndims = len(component_distribution.event_shape)
        super().__init__(Size(cdbs), component_distribution.event_shape, validate_args)

    @property
    def mixture_distribution(self):
        return self._mixture_distribution

    @property
    def component_distribution(self):
        return self._component_distribution

    @property
    def support(self):
        return self._component_distribution.support

    def _weights(self):
        probs = self._mixture_distribution.probs
        return probs.reshape(*probs.shape, *([1] * self._event_ndims))

    @property
    def mean(self):
        return (self._weights() * self._component_distribution.mean).sum(-1 - self._event_ndims)

    @property
    def variance(self):
        w, d = self._weights(), -1 - self._event_ndims
        comp = self._component_distribution
        mean_cond_var = (w * comp.variance).sum(d)
        var_cond_mean = (w * (comp.mean - self._pad(self.mean)).pow(2)).sum(d)
        return mean_cond_var + var_cond_mean

    def _pad(self, x):
        return x.unsqueeze(-1 - self._event_ndims)

    def cdf(self, x):
        cdf_x = self._component_distribution.cdf(self._pad(x))
        return (cdf_x * self._mixture_distribution.probs).sum(-1)

    def log_prob(self, x):
        log_prob_x = self._component_distribution.log_prob(self._pad(x))
        log_mix_prob = self._mixture_distribution.logits.log_softmax(-1)
        return (log_prob_x + log_mix_prob).logsumexp(-1)

    def sample(self, sample_shape=()):
        with no_grad():
            sample_len, batch_len = len(tuple(sample_shape)), len(self.batch_shape)
            gather_dim = sample_len + batch_len
            es = tuple(self.event_shape)
            mix_sample = self._mixture_distribution.sample(sample_shape)
            mix_shape = tuple(mix_sample.shape)
            comp_samples = self._component_distribution.sample(sample_shape)
            idx = mix_sample.reshape(*mix_shape, *([1] * (len(es) + 1)))
            idx = idx.repeat(*([1] * len(mix_shape)), 1, *es)
            return comp_samples.gather(gather_dim, idx).squeeze(gather_dim)

    def __repr__(self):
        return (f"MixtureSameFamily(\n  {self._mixture_distribution!r},\n  "
                f"{self._component_distribution!r})")
