"""torch.distributions.transforms: invertible maps y = T(x) with log|det dy/dx|, composed from tensor ops (so
they run on either device with autograd). A TransformedDistribution pushes a base distribution through them;
biject_to(constraint) / transform_to(constraint) give the map from the reals onto a constraint's region."""
import math
import weakref

from ..tensor.core import Tensor
from . import constraints

__all__ = ["Transform", "ComposeTransform", "IndependentTransform", "ReshapeTransform", "ExpTransform",
           "PowerTransform", "SigmoidTransform", "TanhTransform", "SoftplusTransform", "AbsTransform",
           "AffineTransform", "SoftmaxTransform", "StickBreakingTransform", "LowerCholeskyTransform",
           "CumulativeDistributionTransform", "identity_transform", "biject_to", "transform_to"]


def _sum_rightmost(x, n):
    """x summed over its n rightmost dimensions (n <= 0: x)."""
    return x.reshape(*x.shape[:x.ndim - n], -1).sum(-1) if n > 0 else x


class Transform:
    """y = T(x): __call__ (cached for the last x when cache_size=1), inv (the inverse Transform), and
    log_abs_det_jacobian(x, y). domain/codomain are constraints; bijective, sign (+1/-1 for monotone maps)."""

    bijective = False
    domain: constraints.Constraint = constraints.real
    codomain: constraints.Constraint = constraints.real

    def __init__(self, cache_size=0):
        if cache_size not in (0, 1):
            raise ValueError("cache_size must be 0 or 1")
        self._cache_size = cache_size
        self._cached_x_y = None, None
        self._inv = None

    @property
    def event_dim(self):
        if self.domain.event_dim == self.codomain.event_dim:
            return self.domain.event_dim
        raise ValueError("Please use either .domain.event_dim or .codomain.event_dim")

    @property
    def inv(self):
        inv = self._inv() if self._inv is not None else None
        if inv is None:
            inv = _InverseTransform(self)
            self._inv = weakref.ref(inv)
        return inv

    @property
    def sign(self):
        raise NotImplementedError

    def with_cache(self, cache_size=1):
        if self._cache_size == cache_size:
            return self
        raise NotImplementedError(f"{type(self).__name__}.with_cache is not implemented")

    def __eq__(self, other):
        return self is other

    def __ne__(self, other):
        return not self.__eq__(other)

    __hash__ = object.__hash__

    def __call__(self, x):
        if self._cache_size == 0:
            return self._call(x)
        x_old, y_old = self._cached_x_y
        if x is x_old:
            return y_old
        y = self._call(x)
        self._cached_x_y = x, y
        return y

    def _inv_call(self, y):
        if self._cache_size == 0:
            return self._inverse(y)
        x_old, y_old = self._cached_x_y
        if y is y_old:
            return x_old
        x = self._inverse(y)
        self._cached_x_y = x, y
        return x

    def _call(self, x):
        raise NotImplementedError

    def _inverse(self, y):
        raise NotImplementedError

    def log_abs_det_jacobian(self, x, y):
        raise NotImplementedError

    def forward_shape(self, shape):
        return shape

    def inverse_shape(self, shape):
        return shape

    def __repr__(self):
        return type(self).__name__ + "()"


class _InverseTransform(Transform):
    def __init__(self, transform):
        super().__init__(cache_size=transform._cache_size)
        self._inv = transform

    @property
    def domain(self):
        return self._inv.codomain

    @property
    def codomain(self):
        return self._inv.domain

    @property
    def bijective(self):
        return self._inv.bijective

    @property
    def sign(self):
        return self._inv.sign

    @property
    def inv(self):
        return self._inv

    def __eq__(self, other):
        return isinstance(other, _InverseTransform) and self._inv == other._inv

    __hash__ = object.__hash__

    def __repr__(self):
        return f"{type(self).__name__}({self._inv!r})"

    def __call__(self, x):
        return self._inv._inv_call(x)

    def log_abs_det_jacobian(self, x, y):
        return -self._inv.log_abs_det_jacobian(y, x)

    def forward_shape(self, shape):
        return self._inv.inverse_shape(shape)

    def inverse_shape(self, shape):
        return self._inv.forward_shape(shape)


class ComposeTransform(Transform):
    """parts applied in order: y = parts[-1](...parts[0](x))."""

    def __init__(self, parts, cache_size=0):
        super().__init__(cache_size)
        self.parts = list(parts)

    def __eq__(self, other):
        return isinstance(other, ComposeTransform) and self.parts == other.parts

    __hash__ = object.__hash__

    @property
    def domain(self):
        if not self.parts:
            return constraints.real
        domain = self.parts[0].domain
        event_dim = self.parts[-1].codomain.event_dim
        for part in reversed(self.parts):
            event_dim += part.domain.event_dim - part.codomain.event_dim
            event_dim = max(event_dim, part.domain.event_dim)
        if event_dim > domain.event_dim:
            domain = constraints.independent(domain, event_dim - domain.event_dim)
        return domain

    @property
    def codomain(self):
        if not self.parts:
            return constraints.real
        codomain = self.parts[-1].codomain
        event_dim = self.parts[0].domain.event_dim
        for part in self.parts:
            event_dim += part.codomain.event_dim - part.domain.event_dim
            event_dim = max(event_dim, part.codomain.event_dim)
        if event_dim > codomain.event_dim:
            codomain = constraints.independent(codomain, event_dim - codomain.event_dim)
        return codomain

    @property
    def bijective(self):
        return all(p.bijective for p in self.parts)

    @property
    def sign(self):
        s = 1
        for p in self.parts:
            s = s * p.sign
        return s

    @property
    def inv(self):
        inv = self._inv() if self._inv is not None else None
        if inv is None:
            inv = ComposeTransform([p.inv for p in reversed(self.parts)])
            self._inv = weakref.ref(inv)
            inv._inv = weakref.ref(self)
        return inv

    def _call(self, x):
        for part in self.parts:
            x = part(x)
        return x

    def log_abs_det_jacobian(self, x, y):
        if not self.parts:
            return x.new_zeros(()).expand(*x.shape[:x.ndim - self.domain.event_dim])
        xs = [x]
        for part in self.parts[:-1]:
            xs.append(part(xs[-1]))
        xs.append(y)
        terms, event_dim = [], self.domain.event_dim
        for part, a, b in zip(self.parts, xs[:-1], xs[1:]):
            terms.append(_sum_rightmost(part.log_abs_det_jacobian(a, b), event_dim - part.domain.event_dim))
            event_dim += part.codomain.event_dim - part.domain.event_dim
        out = terms[0]
        for t in terms[1:]:
            out = out + t
        return out

    def forward_shape(self, shape):
        for part in self.parts:
            shape = part.forward_shape(shape)
        return shape

    def inverse_shape(self, shape):
        for part in reversed(self.parts):
            shape = part.inverse_shape(shape)
        return shape

    def __repr__(self):
        inner = ",\n    ".join(repr(p) for p in self.parts)
        return f"{type(self).__name__}(\n    {inner}\n)"


identity_transform = ComposeTransform([])


class IndependentTransform(Transform):
    """base_transform with reinterpreted_batch_ndims more dimensions counted as the event (the Jacobian terms
    summed over them)."""

    def __init__(self, base_transform, reinterpreted_batch_ndims, cache_size=0):
        super().__init__(cache_size)
        self.base_transform, self.reinterpreted_batch_ndims = base_transform, reinterpreted_batch_ndims

    @property
    def domain(self):
        return constraints.independent(self.base_transform.domain, self.reinterpreted_batch_ndims)

    @property
    def codomain(self):
        return constraints.independent(self.base_transform.codomain, self.reinterpreted_batch_ndims)

    @property
    def bijective(self):
        return self.base_transform.bijective

    @property
    def sign(self):
        return self.base_transform.sign

    def _call(self, x):
        return self.base_transform(x)

    def _inverse(self, y):
        return self.base_transform.inv(y)

    def log_abs_det_jacobian(self, x, y):
        return _sum_rightmost(self.base_transform.log_abs_det_jacobian(x, y), self.reinterpreted_batch_ndims)

    def __repr__(self):
        return f"{type(self).__name__}({self.base_transform!r}, {self.reinterpreted_batch_ndims})"


class ReshapeTransform(Transform):
    """The rightmost in_shape dimensions reshaped to out_shape (same number of elements; Jacobian 1)."""

    bijective = True

    def __init__(self, in_shape, out_shape, cache_size=0):
        super().__init__(cache_size)
        self.in_shape, self.out_shape = tuple(in_shape), tuple(out_shape)
        if math.prod(self.in_shape) != math.prod(self.out_shape):
            raise ValueError("in_shape, out_shape have different numbers of elements")

    @property
    def domain(self):
        return constraints.independent(constraints.real, len(self.in_shape))

    @property
    def codomain(self):
        return constraints.independent(constraints.real, len(self.out_shape))

    def _call(self, x):
        return x.reshape(*x.shape[:x.ndim - len(self.in_shape)], *self.out_shape)

    def _inverse(self, y):
        return y.reshape(*y.shape[:y.ndim - len(self.out_shape)], *self.in_shape)

    def log_abs_det_jacobian(self, x, y):
        return x.new_zeros(tuple(x.shape[:x.ndim - len(self.in_shape)]))

    def forward_shape(self, shape):
        return tuple(shape[:len(shape) - len(self.in_shape)]) + self.out_shape

    def inverse_shape(self, shape):
        return tuple(shape[:len(shape) - len(self.out_shape)]) + self.in_shape


class ExpTransform(Transform):
    """y = exp(x)."""

    codomain = constraints.positive
    bijective, sign = True, +1

    def _call(self, x):
        return x.exp()

    def _inverse(self, y):
        return y.log()

    def log_abs_det_jacobian(self, x, y):
        return x


class PowerTransform(Transform):
    """y = x^exponent on the positive reals."""

    domain = codomain = constraints.positive
    bijective = True

    def __init__(self, exponent, cache_size=0):
        super().__init__(cache_size)
        self.exponent = exponent

    @property
    def sign(self):
        return self.exponent.sign() if isinstance(self.exponent, Tensor) else math.copysign(1, self.exponent)

    def _call(self, x):
        return x.pow(self.exponent)

    def _inverse(self, y):
        return y.pow(1 / self.exponent)

    def log_abs_det_jacobian(self, x, y):
        e = self.exponent
        return ((y / x) * e).abs().log()


class SigmoidTransform(Transform):
    """y = 1 / (1 + e^−x), clamped inside (0, 1) so the inverse stays finite."""

    codomain = constraints.unit_interval
    bijective, sign = True, +1

    def _call(self, x):
        eps = _tiny(x)
        return x.sigmoid().clamp(min=eps, max=1 - _eps(x))

    def _inverse(self, y):
        eps = _tiny(y)
        y = y.clamp(min=eps, max=1 - _eps(y))
        return y.log() - (-y).log1p()

    def log_abs_det_jacobian(self, x, y):
        from ..nn import functional as F
        return -F.softplus(-x) - F.softplus(x)


class TanhTransform(Transform):
    """y = tanh(x); log|dy/dx| = 2(log 2 − x − softplus(−2x)), stable for large |x|."""

    codomain = constraints.interval(-1.0, 1.0)
    bijective, sign = True, +1

    def _call(self, x):
        return x.tanh()

    def _inverse(self, y):
        return y.atanh()

    def log_abs_det_jacobian(self, x, y):
        from ..nn import functional as F
        return 2.0 * (math.log(2.0) - x - F.softplus(-2.0 * x))


class SoftplusTransform(Transform):
    """y = log(1 + e^x)."""

    codomain = constraints.positive
    bijective, sign = True, +1

    def _call(self, x):
        from ..nn import functional as F
        return F.softplus(x)

    def _inverse(self, y):
        return (-(-y).expm1()).log() + y

    def log_abs_det_jacobian(self, x, y):
        from ..nn import functional as F
        return -F.softplus(-x)


class AbsTransform(Transform):
    """y = |x| (not injective: the inverse gives the positive root)."""

    codomain = constraints.positive

    def __eq__(self, other):
        return isinstance(other, AbsTransform)

    __hash__ = object.__hash__

    def _call(self, x):
        return x.abs()

    def _inverse(self, y):
        return y


class AffineTransform(Transform):
    """y = loc + scale · x, over event_dim rightmost dimensions."""

    bijective = True

    def __init__(self, loc, scale, event_dim=0, cache_size=0):
        super().__init__(cache_size)
        self.loc, self.scale, self._event_dim = loc, scale, event_dim

    @property
    def event_dim(self):
        return self._event_dim

    @property
    def domain(self):
        return constraints.real if self._event_dim == 0 else constraints.independent(constraints.real,
                                                                                      self._event_dim)

    @property
    def codomain(self):
        return self.domain

    @property
    def sign(self):
        s = self.scale
        return s.sign() if isinstance(s, Tensor) else (1 if s > 0 else -1 if s < 0 else 0)

    def _call(self, x):
        return self.loc + self.scale * x

    def _inverse(self, y):
        return (y - self.loc) / self.scale

    def log_abs_det_jacobian(self, x, y):
        scale, shape = self.scale, tuple(x.shape)
        result = scale.abs().log() if isinstance(scale, Tensor) else x.new_full(shape, math.log(abs(scale)))
        if self._event_dim:
            result = result.reshape(*result.shape[:result.ndim - self._event_dim], -1).sum(-1)
            shape = shape[:len(shape) - self._event_dim]
        return result.expand(*shape)

    def forward_shape(self, shape):
        return _broadcast_shape(shape, getattr(self.loc, "shape", ()), getattr(self.scale, "shape", ()))

    inverse_shape = forward_shape


class SoftmaxTransform(Transform):
    """y = softmax(x) over the last dimension (not bijective: the inverse is log y, up to a constant)."""

    domain = constraints.real_vector
    codomain = constraints.simplex

    def _call(self, x):
        return (x - x.amax(-1, keepdim=True)).exp() / (x - x.amax(-1, keepdim=True)).exp().sum(-1, keepdim=True)

    def _inverse(self, y):
        return y.log()


class StickBreakingTransform(Transform):
    """Unconstrained vectors of length K − 1 to the K-simplex by stick breaking (bijective)."""

    domain = constraints.real_vector
    codomain = constraints.simplex
    bijective = True

    def _call(self, x):
        from ..nn import functional as F
        offset = x.shape[-1] + 1 - _arange_like(x).cumsum(-1)
        z = (x - offset.log()).sigmoid()
        z_cumprod = (1 - z).cumprod(-1)
        return F.pad(z, [0, 1], value=1) * F.pad(z_cumprod, [1, 0], value=1)

    def _inverse(self, y):
        y_crop = y[..., :-1]
        offset = y.shape[-1] - _arange_like(y_crop).cumsum(-1)
        sf = 1 - y_crop.cumsum(-1)
        sf = sf.clamp(min=_tiny(y))
        x = y_crop.log() - sf.log() + offset.log()
        return x

    def log_abs_det_jacobian(self, x, y):
        offset = x.shape[-1] + 1 - _arange_like(x).cumsum(-1)
        x = x - offset.log()
        from ..nn import functional as F
        return (-x + F.logsigmoid(x) + y[..., :-1].log()).sum(-1)

    def forward_shape(self, shape):
        return tuple(shape[:-1]) + (shape[-1] + 1,)

    def inverse_shape(self, shape):
        return tuple(shape[:-1]) + (shape[-1] - 1,)


class LowerCholeskyTransform(Transform):
    """An unconstrained square matrix to a lower-triangular one with a positive diagonal (strict lower part kept,
    diagonal exponentiated). Not bijective onto all matrices."""

    domain = constraints.independent(constraints.real, 2)
    codomain = constraints.lower_cholesky

    def _call(self, x):
        return x.tril(-1) + x.diagonal(dim1=-2, dim2=-1).exp().diag_embed()

    def _inverse(self, y):
        return y.tril(-1) + y.diagonal(dim1=-2, dim2=-1).log().diag_embed()


class CumulativeDistributionTransform(Transform):
    """y = distribution.cdf(x) onto the unit interval; log|dy/dx| = distribution.log_prob(x)."""

    bijective, sign = True, +1
    codomain = constraints.unit_interval

    def __init__(self, distribution, cache_size=0):
        super().__init__(cache_size)
        self.distribution = distribution

    @property
    def domain(self):
        return self.distribution.support

    def _call(self, x):
        return self.distribution.cdf(x)

    def _inverse(self, y):
        return self.distribution.icdf(y)

    def log_abs_det_jacobian(self, x, y):
        return self.distribution.log_prob(x)


def _tiny(x):
    import numpy as np
    return float(np.finfo(np.dtype(x.dtype.storage)).tiny)


def _eps(x):
    import numpy as np
    return float(np.finfo(np.dtype(x.dtype.storage)).eps)


def _arange_like(x):
    return x.new_ones(tuple(x.shape[-1:]))


def _broadcast_shape(*shapes):
    import numpy as np
    return tuple(np.broadcast_shapes(*[tuple(s) for s in shapes]))


def biject_to(constraint):
    """A bijective Transform from the reals (or real vectors) onto the region of `constraint`."""
    return _lookup(constraint, bijective=True)


def transform_to(constraint):
    """A Transform from the reals onto the region of `constraint` (not necessarily bijective)."""
    return _lookup(constraint, bijective=False)


def _lookup(c, bijective):
    C = constraints
    if c is C.real:
        return identity_transform
    if isinstance(c, C._Independent):
        return IndependentTransform(_lookup(c.base_constraint, bijective), c.reinterpreted_batch_ndims)
    if c is C.positive or c is C.nonnegative:
        return ExpTransform()
    if isinstance(c, C._GreaterThan) and not c.is_discrete:
        return ComposeTransform([ExpTransform(), AffineTransform(c.lower_bound, 1)])
    if isinstance(c, C._LessThan):
        return ComposeTransform([ExpTransform(), AffineTransform(c.upper_bound, -1)])
    if isinstance(c, C._Interval) and not c.is_discrete:
        if c.lower_bound == 0 and c.upper_bound == 1:
            return SigmoidTransform()
        return ComposeTransform([SigmoidTransform(), AffineTransform(c.lower_bound, c.upper_bound - c.lower_bound)])
    if c is C.simplex:
        return StickBreakingTransform() if bijective else SoftmaxTransform()
    if c is C.lower_cholesky and not bijective:
        return LowerCholeskyTransform()
    raise NotImplementedError(f"Cannot transform {type(c).__name__} constraints")
