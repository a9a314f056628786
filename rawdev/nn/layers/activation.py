from ...ops.dispatch import owner_scope
from .. import functional as F
from ..module import Module

__all__ = ["ReLU", "LeakyReLU", "GELU", "Tanh", "Sigmoid", "Softmax", "LogSoftmax"]


class ReLU(Module):
    def __init__(self, inplace=False):
        super().__init__()
        self.inplace = inplace

    def forward(self, input):  # noqa: A002
        with owner_scope(getattr(self, "_rawdev_tag", None) or "ReLU"):
            return F.relu(input)

    def extra_repr(self):
        return "inplace=True" if self.inplace else ""


class LeakyReLU(Module):
    def __init__(self, negative_slope=0.01, inplace=False):
        super().__init__()
        self.negative_slope, self.inplace = negative_slope, inplace

    def forward(self, input):  # noqa: A002
        return F.leaky_relu(input, self.negative_slope)

    def extra_repr(self):
        return f"negative_slope={self.negative_slope}" + (", inplace=True" if self.inplace else "")


class GELU(Module):
    def __init__(self, approximate="none"):
        super().__init__()
        self.approximate = approximate

    def forward(self, input):  # noqa: A002
        return F.gelu(input, approximate=self.approximate)

    def extra_repr(self):
        return f"approximate={self.approximate!r}"


class Tanh(Module):
    def forward(self, input):  # noqa: A002
        return F.tanh(input)


class Sigmoid(Module):
    def forward(self, input):  # noqa: A002
        return F.sigmoid(input)


class Softmax(Module):
    def __init__(self, dim=None):
        super().__init__()
        self.dim = dim

    def forward(self, input):  # noqa: A002
        return F.softmax(input, self.dim)

    def extra_repr(self):
        return f"dim={self.dim}"


class LogSoftmax(Module):
    def __init__(self, dim=None):
        super().__init__()
        self.dim = dim

    def forward(self, input):  # noqa: A002
        return F.log_softmax(input, self.dim)

    def extra_repr(self):
        return f"dim={self.dim}"


def _inplace_str(inplace):
    return "inplace=True" if inplace else ""


class _InplaceAct(Module):
    """An activation whose only option is inplace=."""
    _fn: str | None = None

    def __init__(self, inplace=False):
        super().__init__()
        self.inplace = inplace

    def forward(self, input):  # noqa: A002
        return getattr(F, self._fn)(input, inplace=self.inplace)

    def extra_repr(self):
        return _inplace_str(self.inplace)


class SiLU(_InplaceAct):
    _fn = "silu"


class Mish(_InplaceAct):
    _fn = "mish"


class SELU(_InplaceAct):
    _fn = "selu"


class Hardswish(_InplaceAct):
    _fn = "hardswish"

    def extra_repr(self):
        return ""


class Hardsigmoid(_InplaceAct):
    _fn = "hardsigmoid"

    def extra_repr(self):
        return ""


class ELU(Module):
    def __init__(self, alpha=1.0, inplace=False):
        super().__init__()
        self.alpha, self.inplace = alpha, inplace

    def forward(self, input):  # noqa: A002
        return F.elu(input, self.alpha, self.inplace)

    def extra_repr(self):
        return f"alpha={self.alpha}" + (", inplace=True" if self.inplace else "")


class CELU(ELU):
    def __init__(self, alpha=1.0, inplace=False):
        super().__init__(alpha, inplace)

    def forward(self, input):  # noqa: A002
        return F.celu(input, self.alpha, self.inplace)


class Softplus(Module):
    def __init__(self, beta=1.0, threshold=20.0):
        super().__init__()
        self.beta, self.threshold = beta, threshold

    def forward(self, input):  # noqa: A002
        return F.softplus(input, self.beta, self.threshold)

    def extra_repr(self):
        return f"beta={self.beta}, threshold={self.threshold}"


class Hardtanh(Module):
    def __init__(self, min_val=-1.0, max_val=1.0, inplace=False, min_value=None, max_value=None):
        super().__init__()
        if min_value is not None:
            import warnings
            warnings.warn("keyword argument `min_value` is deprecated and rename to `min_val`",
                          FutureWarning, stacklevel=2)
            min_val = min_value
        if max_value is not None:
            import warnings
            warnings.warn("keyword argument `max_value` is deprecated and rename to `max_val`",
                          FutureWarning, stacklevel=2)
            max_val = max_value
        self.min_val, self.max_val, self.inplace = min_val, max_val, inplace
        assert self.max_val > self.min_val

    def forward(self, input):  # noqa: A002
        return F.hardtanh(input, self.min_val, self.max_val, self.inplace)

    def extra_repr(self):
        return f"min_val={self.min_val}, max_val={self.max_val}" + (", inplace=True" if self.inplace else "")


class ReLU6(Hardtanh):
    def __init__(self, inplace=False):
        super().__init__(0.0, 6.0, inplace)

    def forward(self, input):  # noqa: A002
        return F.relu6(input, self.inplace)

    def extra_repr(self):
        return _inplace_str(self.inplace)


class LogSigmoid(Module):
    def forward(self, input):  # noqa: A002
        return F.logsigmoid(input)


class Softsign(Module):
    def forward(self, input):  # noqa: A002
        return F.softsign(input)


class Tanhshrink(Module):
    def forward(self, input):  # noqa: A002
        return F.tanhshrink(input)


class Softmin(Module):
    def __init__(self, dim=None):
        super().__init__()
        self.dim = dim

    def forward(self, input):  # noqa: A002
        return F.softmin(input, self.dim)

    def extra_repr(self):
        return f"dim={self.dim}"


class GLU(Module):
    def __init__(self, dim=-1):
        super().__init__()
        self.dim = dim

    def forward(self, input):  # noqa: A002
        return F.glu(input, self.dim)

    def extra_repr(self):
        return f"dim={self.dim}"


class PReLU(Module):
    """x where x > 0, a * x elsewhere, with a learnable (one, or one per channel: num_parameters)."""

    def __init__(self, num_parameters=1, init=0.25, device=None, dtype=None):
        super().__init__()
        from ...tensor.factory import full
        from ..parameter import Parameter
        self.num_parameters, self.init = num_parameters, init
        self.weight = Parameter(full((num_parameters,), init, dtype=dtype))
        if device is not None:
            self.to(device)

    def reset_parameters(self):
        from .. import init as _init
        _init.constant_(self.weight, self.init)

    def forward(self, input):  # noqa: A002
        return F.prelu(input, self.weight)

    def extra_repr(self):
        return f"num_parameters={self.num_parameters}"


__all__ += ["SiLU", "Mish", "ELU", "SELU", "CELU", "Softplus", "Hardtanh", "ReLU6", "Hardswish", "Hardsigmoid",
            "LogSigmoid", "Softsign", "Tanhshrink", "Softmin", "GLU", "PReLU"]
