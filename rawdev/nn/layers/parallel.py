"""Single-process stand-ins for PyTorch's multi-GPU wrappers, so programs written for them run as they are:
DataParallel runs its module on the first of its devices (the state_dict keeps the "module." prefix PyTorch
checkpoints have), SyncBatchNorm is batch normalization without a process group to synchronize with."""
import warnings

from ..module import Module
from .batchnorm import _BatchNorm

__all__ = ["DataParallel", "SyncBatchNorm"]


def _to(obj, device):
    """Tensors inside obj (nested lists, tuples, dicts) moved to device; everything else as it is."""
    from ...tensor import Tensor
    if isinstance(obj, Tensor):
        return obj.to(device)
    if isinstance(obj, (list, tuple)):
        moved = [_to(o, device) for o in obj]
        return type(obj)(*moved) if hasattr(obj, "_fields") else type(obj)(moved)
    if isinstance(obj, dict):
        return type(obj)((k, _to(v, device)) for k, v in obj.items())
    return obj


class DataParallel(Module):
    """PyTorch's nn.DataParallel on one device: the wrapped module is moved to device_ids[0] and inputs are moved
    there before each call. PyTorch would split the batch over several GPUs and sum the gradients; rawdev runs
    the whole batch on the first GPU, which gives the same results (said once when more devices are named).
    Without a GPU the module runs as it is, as PyTorch's does.

    Args:
        module: the module to wrap (available as .module).
        device_ids: cuda devices (default: all); output_device: where outputs go (default device_ids[0]).
        dim: the batch dimension (kept for compatibility).

    Example:
        >>> model = nn.DataParallel(Net()).cuda()
        >>> list(model.state_dict())[0]
        'module.fc.weight'
    """

    def __init__(self, module, device_ids=None, output_device=None, dim=0):
        super().__init__()
        from ...device import device as _device
        from ...runtime import device_count, is_available
        self.module, self.dim = module, dim
        if not is_available():
            self.device_ids, self.output_device, self.src_device_obj = [], None, None
            return
        if device_ids is None:
            device_ids = list(range(device_count()))
        if output_device is None:
            output_device = device_ids[0]
        self.device_ids = [d if isinstance(d, int) else _device(d).index for d in device_ids]
        self.output_device = output_device if isinstance(output_device, int) else _device(output_device).index
        self.src_device_obj = _device("cuda", self.device_ids[0])
        if len(self.device_ids) > 1:
            warnings.warn(f"rawdev's DataParallel runs the whole batch on cuda:{self.device_ids[0]} (of "
                          f"{len(self.device_ids)} devices named): same results, no splitting", UserWarning,
                          stacklevel=2)
        self.module.to(self.src_device_obj)

    def forward(self, *inputs, **kwargs):
        if not self.device_ids:
            return self.module(*inputs, **kwargs)
        for t in _tensors(self.module):
            if t.device != self.src_device_obj:
                raise RuntimeError("module must have its parameters and buffers on device "
                                   f"{self.src_device_obj} (device_ids[0]) but found one of them on device: "
                                   f"{t.device}")
        out = self.module(*_to(inputs, self.src_device_obj), **_to(kwargs, self.src_device_obj))
        if self.output_device != self.device_ids[0]:
            from ...device import device as _device
            out = _to(out, _device("cuda", self.output_device))
        return out


def _tensors(module):
    yield from module.parameters()
    yield from module.buffers()


class SyncBatchNorm(_BatchNorm):
    """PyTorch's nn.SyncBatchNorm in one process: with no process group to share statistics with, it normalizes
    as BatchNorm does over the batch it sees (PyTorch does the same when torch.distributed is not initialized).
    Any input of 2 or more dimensions, channels in dim 1.

    Example:
        >>> model = nn.SyncBatchNorm.convert_sync_batchnorm(model)
    """

    def __init__(self, num_features, eps=1e-5, momentum=0.1, affine=True, track_running_stats=True,
                 process_group=None, device=None, dtype=None):
        super().__init__(num_features, eps, momentum, affine, track_running_stats, device=device, dtype=dtype)
        self.process_group = process_group

    def _check_input_dim(self, input):  # noqa: A002
        if input.ndim < 2:
            raise ValueError(f"expected at least 2D input (got {input.ndim}D input)")

    @classmethod
    def convert_sync_batchnorm(cls, module, process_group=None):
        """Every BatchNorm*D in module replaced by a SyncBatchNorm holding the same Parameter and buffer objects
        (so an optimizer made before still updates them). Returns the converted module."""
        out = module
        if isinstance(module, _BatchNorm) and not isinstance(module, SyncBatchNorm):
            out = SyncBatchNorm(module.num_features, module.eps, module.momentum, module.affine,
                                module.track_running_stats, process_group)
            if module.affine:
                out.weight, out.bias = module.weight, module.bias
            out.running_mean, out.running_var = module.running_mean, module.running_var
            out.num_batches_tracked = module.num_batches_tracked
            out.training = module.training
        for name, child in module.named_children():
            out.add_module(name, cls.convert_sync_batchnorm(child, process_group))
        return out
