"""rawdev.ops: every op as a cpu path (numpy) and a cuda path (shipped PTX), behind one dispatcher.

`functions` holds the differentiable ops; `methods.install()` puts them on rawdev.Tensor.
"""
from . import methods as _methods
from .functions import (add, cross_entropy, div, dropout, exp, flatten, gelu, leaky_relu, linear, log,
                        log_softmax, matmul, mean, mm, mse_loss, mul, neg, nll_loss, pow, relu, reshape, sigmoid,
                        softmax, squeeze, sub, sum, tanh, unflatten, unsqueeze)

_methods.install()
