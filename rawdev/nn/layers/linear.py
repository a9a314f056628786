import math

from ...ops.dispatch import owner_scope
from ...tensor.factory import empty
from .. import functional as F
from .. import init
from ..module import Module
from ..parameter import Parameter

__all__ = ["Linear"]


class Linear(Module):
    """y = x·Wᵀ + b. PyTorch's default init: W ~ kaiming_uniform(a=√5) = U(±1/√in), b ~ U(±1/√in)."""

    __constants__ = ["in_features", "out_features"]

    def __init__(self, in_features, out_features, bias=True, device=None, dtype=None):
        super().__init__()
        self.in_features, self.out_features = in_features, out_features
        self.weight = Parameter(empty((out_features, in_features), dtype=dtype))
        if bias:
            self.bias = Parameter(empty(out_features, dtype=dtype))
        else:
            self.register_parameter("bias", None)
        self.reset_parameters()
        if device is not None:
            self.to(device)

    def reset_parameters(self):
        init.kaiming_uniform_(self.weight, a=math.sqrt(5))
        if self.bias is not None:
            fan_in, _ = init._calculate_fan_in_and_fan_out(self.weight)
            bound = 1 / math.sqrt(fan_in) if fan_in > 0 else 0
            init.uniform_(self.bias, -bound, bound)

    def forward(self, input):  # noqa: A002
        with owner_scope(getattr(self, "_rawdev_tag", None) or "Linear"):
            return F.linear(input, self.weight, self.bias)

    def extra_repr(self):
        return f"in_features={self.in_features}, out_features={self.out_features}, bias={self.bias is not None}"


class NonDynamicallyQuantizableLinear(Linear):
    """PyTorch's torch.nn.modules.linear.NonDynamicallyQuantizableLinear: a Linear that PyTorch's dynamic
    quantization leaves alone (MultiheadAttention's out_proj is one). rawdev has no quantization, so it is a Linear
    under PyTorch's name, for programs and whole-module checkpoints that name it.

    Example:
        >>> proj = NonDynamicallyQuantizableLinear(8, 8)
    """


class LazyLinear(Linear):
    """A Linear whose in_features is taken from the first input: until then it holds no parameters; the first
    forward creates weight and bias (PyTorch's init, on the input's device and dtype) and the module becomes a
    Linear. Make the optimizer after that first call, as PyTorch's documentation says.

    Example:
        >>> m = nn.LazyLinear(4)
        >>> m(torch.randn(2, 7)).shape, type(m).__name__
        (torch.Size([2, 4]), 'Linear')
    """

    def __init__(self, out_features, bias=True, device=None, dtype=None):
        Module.__init__(self)
        self.in_features, self.out_features = 0, out_features
        self._lazy_bias, self._lazy_dtype, self._lazy_device = bias, dtype, device
        self.register_parameter("weight", None)
        self.register_parameter("bias", None)

    def reset_parameters(self):
        if self.weight is not None:
            Linear.reset_parameters(self)

    def forward(self, input):  # noqa: A002
        self.in_features = input.shape[-1]
        dtype = self._lazy_dtype or input.dtype
        self.weight = Parameter(empty((self.out_features, self.in_features), dtype=dtype))
        if self._lazy_bias:
            self.bias = Parameter(empty(self.out_features, dtype=dtype))
        Linear.reset_parameters(self)
        self.to(self._lazy_device or input.device)
        for name in ("_lazy_bias", "_lazy_dtype", "_lazy_device"):
            self.__dict__.pop(name, None)
        self.__class__ = Linear
        return Linear.forward(self, input)

    def extra_repr(self):
        return f"in_features=0, out_features={self.out_features}, bias={self._lazy_bias}"


__all__ += ["LazyLinear", "NonDynamicallyQuantizableLinear"]
