"""rawdev.ops: every op declared once, in a file per family; the public names are generated.

Families: unary (elementwise math and activations), binary (arithmetic, comparisons), reduce, shape
(views), index, linalg, activation (softmax, dropout), loss. Each declares its ops with
registry.declare; `methods.install()` puts them on rawdev.Tensor, and `rawdev`/`nn.functional`
export registry.names(...). Backends: cpu.py (numpy) and cuda.py (shipped PTX), chosen by dispatch.py.
"""
from typing import TYPE_CHECKING, Any

from . import activation, binary, index, linalg, loss, reduce, shape, unary  # noqa: F401  (they declare)
from . import binary_math, conv, creation, distance, join, norm, random_ops, select  # noqa: F401,E402  (they declare)
from .normalization import functions as _normalization  # noqa: F401,E402  (it declares)
from . import attention, rnn  # noqa: F401,E402  (they declare)
from . import gather_scatter  # noqa: F401,E402  (it declares)
from . import embedding_bag, resample  # noqa: F401,E402  (they declare)
from . import reduce_composed, scan_sort  # noqa: F401,E402  (they declare)
from . import conv3d, covariance, decomp, dtype_queries, gamma, grid, host_callbacks  # noqa: F401,E402  (they declare)
from . import loss_likelihood, loss_margin, order_stats, pointwise_composed, pooling_composed  # noqa: F401,E402,E501
from . import view_copies  # noqa: F401,E402  (it declares)
from . import spectral, structure  # noqa: F401,E402  (they declare)
from . import products, windows  # noqa: F401,E402  (they declare)
from . import methods as _methods
from .registry import names as _names

_methods.install()
from . import sparse_coo as _sparse_coo  # noqa: E402  (after the methods: it adds Tensor.to_sparse)

_sparse_coo.install()

globals().update(_names("torch"))
from .overlap import guard_inplace_methods as _guard  # noqa: E402
_guard(globals())   # in-place writes into expanded tensors raise, as PyTorch's

if TYPE_CHECKING:
    # the declared ops are put in this namespace at import (rawdev.ops.registry): Any to a type checker
    def __getattr__(name: str) -> Any: ...
else:
    def __getattr__(name: str) -> Any:
        """`torch.ops.<namespace>`: any other public name is an op namespace (rawdev.ops.torch_ops), except the
        names of this package's own modules, which the import system must still find and import."""
        import importlib.util
        if name.startswith("_") or importlib.util.find_spec(f"{__name__}.{name}") is not None:
            raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
        return _torch_ops.namespace(name)

__all__ = sorted(_names("torch"))

from . import torch_ops as _torch_ops  # noqa: E402

aten = _torch_ops.namespace("aten")

from ..refusals import Refused  # noqa: E402

# torch.ops is also where users reach PyTorch's dispatcher; the one name of it that programs call outside an op
# namespace is load_library, which rawdev refuses: a C++ library's operators need the ATen dispatcher to run
load_library = Refused("torch.ops.load_library", "loading C++ extensions (torch.ops.load_library)",
                       "C++ operator libraries register into PyTorch's ATen dispatcher, which rawdev does not have; "
                       "write the op as a Python function over rawdev tensors instead")
