"""rawdev.ops: every op as a cpu path (numpy) and a cuda path (shipped PTX), behind one dispatcher.

`functions` holds the differentiable ops; `methods.install()` puts them on rawdev.Tensor.
"""
from . import methods as _methods
from .functions import (abs, add, argmax, argmin, cross_entropy, div, dropout, eq, exp, flatten, ge, gelu, gt,  # noqa: A004
                        le, leaky_relu, linear, log, log_softmax, lt, matmul, max, mean, min, mm, mse_loss, mul, ne,
                        neg, nll_loss, pow, relu, reshape, sigmoid, softmax, squeeze, sub, sum, tanh, unflatten,
                        unsqueeze)

_methods.install()
