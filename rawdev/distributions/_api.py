"""The tensor functions the distributions use, from the layers below (rawdev/__init__ is above them)."""
from ..ops.random_ops import bernoulli, multinomial
from ..ops.select.functions import where
from ..tensor.factory import arange, full_like, rand, randn, tensor, zeros_like

__all__ = ["arange", "bernoulli", "full_like", "multinomial", "rand", "randn", "tensor", "where", "zeros_like"]
