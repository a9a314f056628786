"""rawdev.tensor: the Tensor class, its constructors and rawdev.Size."""

from .core import Tensor
from .dlpack import from_dlpack
from .factory import (
    arange,
    as_tensor,
    asarray,
    empty,
    empty_like,
    eye,
    from_numpy,
    full,
    full_like,
    linspace,
    ones,
    ones_like,
    rand,
    rand_like,
    randint,
    randint_like,
    randn,
    randn_like,
    randperm,
    tensor,
    zeros,
    zeros_like,
)
from .size import Size


def is_tensor(obj):
    return isinstance(obj, Tensor)


__all__ = ["Tensor", "Size", "is_tensor", "from_dlpack", "tensor", "as_tensor", "asarray", "from_numpy", "zeros",
           "ones", "empty", "full", "randn", "rand", "randint", "randperm", "arange", "linspace", "eye", "zeros_like",
           "ones_like", "empty_like", "full_like", "randn_like", "rand_like", "randint_like"]

from .memfmt import channels_last, channels_last_3d, contiguous_format, memory_format, preserve_format  # noqa: E402

__all__ += ["memory_format", "contiguous_format", "channels_last", "channels_last_3d", "preserve_format"]

from .quantized import quantize_per_channel, quantize_per_tensor  # noqa: E402

__all__ += ["quantize_per_tensor", "quantize_per_channel"]
