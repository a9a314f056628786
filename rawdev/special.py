"""rawdev.special: torch.special's names, as rawdev's ops (each works on cpu and cuda, with autograd, as the op
it names does). A name whose op rawdev does not have raises AttributeError naming it."""
import math

from . import ops
from .tensor.factory import full_like, ones_like, zeros_like

__all__ = ["ndtr", "log_ndtr", "entr", "xlog1py"]   # the rest resolve to rawdev's ops by name (_ALIASES)

# torch.special name -> rawdev op name
_ALIASES = {"expit": "sigmoid", "logit": "logit", "erf": "erf", "erfc": "erfc", "erfinv": "erfinv", "exp2": "exp2",
            "expm1": "expm1", "log1p": "log1p", "log_softmax": "log_softmax", "softmax": "softmax",
            "logsumexp": "logsumexp", "xlogy": "xlogy", "sinc": "sinc", "gammaln": "lgamma", "digamma": "digamma",
            "psi": "digamma", "round": "round", "i0": "i0", "polygamma": "polygamma", "gammainc": "igamma",
            "gammaincc": "igammac", "multigammaln": "mvlgamma"}


def ndtr(input):  # noqa: A002
    """The standard normal CDF: (1 + erf(x / sqrt(2))) / 2."""
    return (ops.erf(input * (1.0 / math.sqrt(2.0))) + 1.0) * 0.5


def log_ndtr(input):  # noqa: A002
    """log of the standard normal CDF."""
    return ndtr(input).log()


def entr(input):  # noqa: A002
    """-x log x elementwise (0 at 0, -inf for x < 0)."""
    safe = ops.where(input > 0, input, ones_like(input))
    out = -input * safe.log()
    out = ops.where(input == 0, zeros_like(input), out)
    return ops.where(input < 0, full_like(input, -math.inf), out)


def xlog1py(input, other):  # noqa: A002
    """input * log1p(other), 0 where input is 0."""
    out = input * ops.log1p(other)
    return ops.where(input == 0, zeros_like(out), out)


def __getattr__(name):
    target = _ALIASES.get(name)
    if target is not None:
        fn = getattr(ops, target) if target in ops.__all__ else None   # other names are torch.ops namespaces
        if fn is None:
            from .nn import functional
            fn = getattr(functional, target, None)
        if fn is not None:
            return fn
    raise AttributeError(f"module 'rawdev.special' has no attribute {name!r}"
                         + (f" (rawdev has no {_ALIASES[name]!r} op yet)" if name in _ALIASES else ""))


def __dir__():
    return sorted(set(__all__) | set(_ALIASES))
