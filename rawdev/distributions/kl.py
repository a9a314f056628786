"""kl_divergence(p, q) and register_kl, with the closed forms for Normal, Categorical, Bernoulli, Uniform."""
import math

from .continuous import Beta, Exponential, Gamma, Laplace, MultivariateNormal, Poisson
from .families import Bernoulli, Categorical, Independent, Normal, OneHotCategorical, Uniform

__all__ = ["kl_divergence", "register_kl"]

_KL: dict = {}


def register_kl(type_p, type_q):
    """Decorator: @register_kl(P, Q) def kl(p, q): ... registers KL(p || q) for those types."""
    def add(fn):
        _KL[(type_p, type_q)] = fn
        return fn
    return add


def kl_divergence(p, q):
    """KL(p || q) for a registered pair of distribution types (subclasses match their closest registration)."""
    best = None
    for (tp, tq), fn in _KL.items():
        if isinstance(p, tp) and isinstance(q, tq):
            rank = (type(p).__mro__.index(tp), type(q).__mro__.index(tq))
            if best is None or rank < best[0]:
                best = (rank, fn)
    if best is None:
        raise NotImplementedError(f"No KL(p || q) is implemented for p type {type(p).__name__} and q type "
                                  f"{type(q).__name__}")
    return best[1](p, q)


@register_kl(Normal, Normal)
def _kl_normal_normal(p, q):
    var_ratio = (p.scale / q.scale) ** 2
    t1 = ((p.loc - q.loc) / q.scale) ** 2
    return 0.5 * (var_ratio + t1 - 1 - var_ratio.log())


@register_kl(Categorical, Categorical)
def _kl_categorical_categorical(p, q):
    from . import _api as rawdev
    t = p.probs * (p.logits - q.logits)
    t = rawdev.where((q.probs == 0).expand_as(t), rawdev.full_like(t, math.inf), t)
    t = rawdev.where((p.probs == 0).expand_as(t), rawdev.zeros_like(t), t)
    return t.sum(-1)


@register_kl(OneHotCategorical, OneHotCategorical)
def _kl_onehot(p, q):
    return _kl_categorical_categorical(p._categorical, q._categorical)


@register_kl(Bernoulli, Bernoulli)
def _kl_bernoulli_bernoulli(p, q):
    from ..nn import functional as F
    t1 = p.probs * (F.softplus(-q.logits) - F.softplus(-p.logits))
    t2 = (1 - p.probs) * (F.softplus(q.logits) - F.softplus(p.logits))
    return t1 + t2


@register_kl(Uniform, Uniform)
def _kl_uniform_uniform(p, q):
    from . import _api as rawdev
    result = ((q.high - q.low) / (p.high - p.low)).log()
    outside = (q.low > p.low) | (q.high < p.high)
    return rawdev.where(outside, rawdev.full_like(result, math.inf), result)


@register_kl(Independent, Independent)
def _kl_independent_independent(p, q):
    if p.reinterpreted_batch_ndims != q.reinterpreted_batch_ndims:
        raise NotImplementedError
    return p._sum(kl_divergence(p.base_dist, q.base_dist))


@register_kl(Exponential, Exponential)
def _kl_exponential_exponential(p, q):
    ratio = q.rate / p.rate
    return -ratio.log() + ratio - 1


@register_kl(Gamma, Gamma)
def _kl_gamma_gamma(p, q):
    t1 = q.concentration * (p.rate / q.rate).log()
    t2 = q.concentration.lgamma() - p.concentration.lgamma()
    t3 = (p.concentration - q.concentration) * p.concentration.digamma()
    t4 = (q.rate - p.rate) * (p.concentration / p.rate)
    return t1 + t2 + t3 + t4


@register_kl(Beta, Beta)
def _kl_beta_beta(p, q):
    sp = p.concentration1 + p.concentration0
    sq = q.concentration1 + q.concentration0
    t1 = q.concentration1.lgamma() + q.concentration0.lgamma() + sp.lgamma()
    t2 = p.concentration1.lgamma() + p.concentration0.lgamma() + sq.lgamma()
    t3 = (p.concentration1 - q.concentration1) * p.concentration1.digamma()
    t4 = (p.concentration0 - q.concentration0) * p.concentration0.digamma()
    t5 = (sq - sp) * sp.digamma()
    return t1 - t2 + t3 + t4 + t5


@register_kl(Laplace, Laplace)
def _kl_laplace_laplace(p, q):
    ratio = p.scale / q.scale
    gap = (p.loc - q.loc).abs()
    return -ratio.log() + gap / q.scale + ratio * (-gap / p.scale).exp() - 1


@register_kl(Poisson, Poisson)
def _kl_poisson_poisson(p, q):
    return p.rate * (p.rate.log() - q.rate.log()) - (p.rate - q.rate)


@register_kl(MultivariateNormal, MultivariateNormal)
def _kl_mvn_mvn(p, q):
    from ..ops import decomp
    if p.event_shape != q.event_shape:
        raise ValueError("KL-divergence between two Multivariate Normals with different event shapes cannot be "
                         "computed")
    lq, lp = q.scale_tril, p.scale_tril
    import numpy as np
    batch = tuple(np.broadcast_shapes(tuple(lq.shape[:-2]), tuple(lp.shape[:-2])))
    k = p.event_shape[0]
    lq, lp = lq.expand(*batch, k, k), lp.expand(*batch, k, k)
    term2 = decomp.solve_triangular(lq, lp, upper=False).pow(2).sum((-2, -1))
    diff = (q.loc - p.loc).expand(*batch, k).unsqueeze(-1)
    term3 = decomp.solve_triangular(lq, diff, upper=False).pow(2).sum((-2, -1))
    return q._half_log_det() - p._half_log_det() + 0.5 * (term2 + term3 - k)
