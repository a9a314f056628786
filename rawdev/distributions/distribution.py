"""Distribution: the base of rawdev.distributions (torch.distributions' interface), built from tensor ops so
every distribution runs on the parameters' device with autograd."""
import math
import warnings

from .. import dtypes as _dt
from ..autograd.grad_mode import no_grad
from ..tensor.size import Size
from .constraints import positive, real, simplex, unit_interval  # noqa: F401  (re-exported to the families)

__all__ = ["Distribution"]

_validate_default = True


def _shape(sample_shape):
    return Size(tuple(sample_shape))


class Distribution:
    """batch_shape, event_shape; sample/rsample/log_prob/entropy/cdf/icdf; mean, mode, variance, stddev.
    Parameters are checked against their constraints when validate_args (default True, as PyTorch)."""

    has_rsample = False
    arg_constraints: dict = {}

    @staticmethod
    def set_default_validate_args(value):
        global _validate_default
        if value not in (True, False):
            raise ValueError
        _validate_default = value

    def __init__(self, batch_shape=(), event_shape=(), validate_args=None):
        self._batch_shape, self._event_shape = Size(tuple(batch_shape)), Size(tuple(event_shape))
        self._validate_args = _validate_default if validate_args is None else validate_args
        if self._validate_args:
            for name, check in self.arg_constraints.items():
                value = self.__dict__.get(name)
                if value is None:
                    continue
                ok = check(value)
                if not bool(ok.all()):
                    raise ValueError(f"Expected parameter {name} (Tensor of shape {tuple(value.shape)}) of "
                                     f"distribution {self!r} to satisfy the constraint {check!r}, but found "
                                     f"invalid values:\n{value}")

    @property
    def batch_shape(self):
        return self._batch_shape

    @property
    def event_shape(self):
        return self._event_shape

    def _extended_shape(self, sample_shape=()):
        return Size(tuple(sample_shape) + tuple(self._batch_shape) + tuple(self._event_shape))

    @property
    def support(self):
        """The constraint every sample satisfies (rawdev.distributions.constraints)."""
        raise NotImplementedError(f"{type(self).__name__} does not define its support")

    def sample(self, sample_shape=()):
        """A sample (no gradient); rsample's when the distribution has one."""
        with no_grad():
            return self.rsample(sample_shape)

    def rsample(self, sample_shape=()):
        raise NotImplementedError(f"{type(self).__name__} has no reparameterized sampler (rsample)")

    def sample_n(self, n):
        warnings.warn("sample_n will be deprecated. Use .sample((n,)) instead", UserWarning, stacklevel=2)
        return self.sample(Size((n,)))

    def log_prob(self, value):
        raise NotImplementedError

    def entropy(self):
        raise NotImplementedError

    def cdf(self, value):
        raise NotImplementedError

    def icdf(self, value):
        raise NotImplementedError

    def perplexity(self):
        return self.entropy().exp()

    @property
    def mean(self):
        raise NotImplementedError

    @property
    def mode(self):
        raise NotImplementedError(f"{type(self)} does not implement mode")

    @property
    def variance(self):
        raise NotImplementedError

    @property
    def stddev(self):
        return self.variance.sqrt()

    def _param_repr(self):
        names = [k for k in self.arg_constraints if k in self.__dict__]
        return ", ".join(f"{k}: {self.__dict__[k] if self.__dict__[k].numel() == 1 else self.__dict__[k].size()}"
                         for k in names)

    def __repr__(self):
        return f"{type(self).__name__}({self._param_repr()})"


LOG_SQRT_2PI = math.log(math.sqrt(2 * math.pi))


def float_dtype(*ts):
    return next((t.dtype for t in ts if t.dtype.is_floating_point), _dt.get_default_dtype())
