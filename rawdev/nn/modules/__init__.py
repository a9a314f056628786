"""rawdev.nn.modules: PyTorch's module files (torch.nn.modules.<file>.<Class>, e.g. rawdev.nn.modules.dropout.Dropout),
each re-exporting the classes PyTorch keeps there that rawdev has; every class is also here, as in PyTorch.
The layers themselves live in rawdev.nn.layers (grouped by how they compute); these files only name them."""
from . import (  # noqa: F401
    activation,
    adaptive,
    batchnorm,
    channelshuffle,
    container,
    conv,
    distance,
    dropout,
    flatten,
    fold,
    instancenorm,
    lazy,
    linear,
    loss,
    module,
    normalization,
    padding,
    pixelshuffle,
    pooling,
    rnn,
    sparse,
    transformer,
    upsampling,
    utils,
)
from .module import Module

__all__ = ["Module"]
_FILES = (linear, conv, activation, loss, container, pooling, batchnorm, instancenorm, normalization, dropout, padding,
          sparse, rnn, pixelshuffle, upsampling, distance, fold, adaptive, transformer, flatten,
          channelshuffle, lazy)
for _m in _FILES:
    for _n in _m.__all__:
        globals()[_n] = getattr(_m, _n)
        __all__.append(_n)
del _m, _n
