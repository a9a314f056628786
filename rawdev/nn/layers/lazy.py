"""Lazy modules: the layer's input size (in_channels, num_features) is read from the first input. Until then the
module holds its other constructor arguments and no parameters; the first forward builds the real layer (with
PyTorch's initialization, on the input's device and dtype unless device=/dtype= were given) and the module
becomes it (its class changes to Conv2d, BatchNorm1d, ...). Make the optimizer after that first call, as
PyTorch's documentation says; hooks registered before it are kept."""
import warnings

from ..module import Module
from .batchnorm import BatchNorm1d, BatchNorm2d, BatchNorm3d
from .conv import Conv1d, Conv2d, Conv3d, ConvTranspose1d, ConvTranspose2d, ConvTranspose3d
from .groupnorm import InstanceNorm1d, InstanceNorm2d, InstanceNorm3d

__all__ = ["LazyConv1d", "LazyConv2d", "LazyConv3d", "LazyConvTranspose1d", "LazyConvTranspose2d",
           "LazyConvTranspose3d",
           "LazyBatchNorm1d", "LazyBatchNorm2d", "LazyBatchNorm3d", "LazyInstanceNorm1d", "LazyInstanceNorm2d",
           "LazyInstanceNorm3d"]

_HOOK_DICTS = ("_forward_hooks", "_forward_pre_hooks", "_backward_hooks", "_backward_pre_hooks",
               "_forward_hooks_with_kwargs", "_forward_pre_hooks_with_kwargs", "_forward_hooks_always_called",
               "_state_dict_hooks", "_state_dict_pre_hooks", "_load_state_dict_pre_hooks",
               "_load_state_dict_post_hooks")


class _LazyModule(Module):
    cls_to_become: type = Module
    spatial_dims = 0          # conv and norm layers: inputs are [N, C, *spatial] or unbatched [C, *spatial]

    def __init__(self, *args, device=None, dtype=None, **kwargs):
        super().__init__()
        self._lazy_args = (args, kwargs, device, dtype)

    def has_uninitialized_params(self):
        return "_lazy_args" in self.__dict__

    def _input_size(self, input):  # noqa: A002
        batched, unbatched = self.spatial_dims + 2, self.spatial_dims + 1
        if input.ndim not in (unbatched, batched):
            raise RuntimeError(f"Expected {unbatched}D (unbatched) or {batched}D (batched) input to "
                               f"{type(self).__name__}, but got input of size: {input.shape}")
        return input.shape[1] if input.ndim == batched else input.shape[0]

    def initialize_parameters(self, input):  # noqa: A002
        """Build the real layer for this input and become it (PyTorch's LazyModuleMixin name)."""
        args, kwargs, device, dtype = self.__dict__.pop("_lazy_args")
        real = self.cls_to_become(self._input_size(input), *args, dtype=dtype or input.dtype, **kwargs)
        real.to(device or input.device)
        real.training = self.training
        for key, value in real.__dict__.items():
            if key not in _HOOK_DICTS and key != "training":
                self.__dict__[key] = value
        self.__class__ = self.cls_to_become

    def forward(self, input, *args, **kwargs):  # noqa: A002
        self.initialize_parameters(input)
        return self.forward(input, *args, **kwargs)

    def extra_repr(self):
        """The layer's own description with the size still unknown (0), as PyTorch prints a lazy module."""
        args, kwargs, _, _ = self._lazy_args
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")      # initializing a zero-size weight warns; nothing is initialized
            return self.cls_to_become(0, *args, **kwargs).extra_repr()


def _lazy(real, dims, doc_in):
    return type(f"Lazy{real.__name__}", (_LazyModule,),
               {"cls_to_become": real, "spatial_dims": dims, "__module__": __name__,
                "__doc__": f"A {real.__name__} whose {doc_in} comes from the first input's dim 1 (dim 0 unbatched); "
                           f"takes {real.__name__}'s other arguments."})


class _LazyNorm(_LazyModule):
    """Batch and instance norms: num_features is the first input's dim 1 (for unbatched instance-norm input too,
    as PyTorch), and the defaults are PyTorch's lazy ones (affine and tracked running stats, for InstanceNorm too)."""

    def __init__(self, eps=1e-5, momentum=0.1, affine=True, track_running_stats=True, device=None, dtype=None):
        super().__init__(eps, momentum, affine, track_running_stats, device=device, dtype=dtype)

    def _input_size(self, input):  # noqa: A002
        return input.shape[1]


def _lazy_norm(real):
    return type(f"Lazy{real.__name__}", (_LazyNorm,),
                {"cls_to_become": real, "__module__": __name__,
                 "__doc__": f"A {real.__name__} whose num_features comes from the first input's dim 1."})


LazyConv1d = _lazy(Conv1d, 1, "in_channels")
LazyConv2d = _lazy(Conv2d, 2, "in_channels")
LazyConv3d = _lazy(Conv3d, 3, "in_channels")
LazyConvTranspose1d = _lazy(ConvTranspose1d, 1, "in_channels")
LazyConvTranspose2d = _lazy(ConvTranspose2d, 2, "in_channels")
LazyConvTranspose3d = _lazy(ConvTranspose3d, 3, "in_channels")
LazyInstanceNorm1d = _lazy_norm(InstanceNorm1d)
LazyInstanceNorm2d = _lazy_norm(InstanceNorm2d)
LazyInstanceNorm3d = _lazy_norm(InstanceNorm3d)
LazyBatchNorm1d = _lazy_norm(BatchNorm1d)
LazyBatchNorm2d = _lazy_norm(BatchNorm2d)
LazyBatchNorm3d = _lazy_norm(BatchNorm3d)
