"""rawdev.tensor: the Tensor class, its constructors and rawdev.Size."""

from .core import Tensor
from .factory import (arange, as_tensor, empty, empty_like, from_numpy, full, full_like, ones, ones_like, rand,
                      rand_like, randint, randn, randn_like, tensor, zeros, zeros_like)
from .size import Size


def is_tensor(obj):
    return isinstance(obj, Tensor)


__all__ = ["Tensor", "Size", "is_tensor", "tensor", "as_tensor", "from_numpy", "zeros", "ones", "empty", "full",
           "randn", "rand", "randint", "arange", "zeros_like", "ones_like", "empty_like", "full_like",
           "randn_like", "rand_like"]
