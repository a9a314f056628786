"""kl_divergence(p, q) and register_kl, with the closed forms for Normal, Categorical, Bernoulli, Uniform."""
import math

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
