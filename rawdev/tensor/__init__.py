"""rawdev.tensor: the Tensor class, its constructors and rawdev.Size."""

from . import core as _core

# the modules core's methods hand device work to (they import core, so core is given them rather than importing
# them back)
from . import cuda_io as _cuda_io  # noqa: E402
from . import dlpack as _dlpack  # noqa: E402
from . import legacy as _legacy  # noqa: E402
from . import moves as _moves  # noqa: E402
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

_core._parts.cuda_io, _core._parts.moves, _core._parts.legacy, _core._parts.dlpack = _cuda_io, _moves, _legacy, _dlpack


def is_tensor(obj):
    return isinstance(obj, Tensor)


__all__ = ["Tensor", "Size", "is_tensor", "from_dlpack", "tensor", "as_tensor", "asarray", "from_numpy", "zeros",
           "ones", "empty", "full", "randn", "rand", "randint", "randperm", "arange", "linspace", "eye", "zeros_like",
           "ones_like", "empty_like", "full_like", "randn_like", "rand_like", "randint_like"]

from .memfmt import channels_last, channels_last_3d, contiguous_format, memory_format, preserve_format  # noqa: E402

__all__ += ["memory_format", "contiguous_format", "channels_last", "channels_last_3d", "preserve_format"]

from .quantized import quantize_per_channel, quantize_per_tensor  # noqa: E402

__all__ += ["quantize_per_tensor", "quantize_per_channel"]
