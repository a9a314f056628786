"""PyTorch's nn.DataParallel and nn.SyncBatchNorm in one process: DataParallel scatters each batch over its
devices, runs a replica of the module on each (nn.parallel's scatter, replicate, parallel_apply, gather) and
gathers the outputs, as PyTorch's does (the state_dict keeps the "module." prefix PyTorch checkpoints have);
SyncBatchNorm is batch normalization without a process group to synchronize with."""
from ..module import Module
from .batchnorm import _BatchNorm

__all__ = ["DataParallel", "SyncBatchNorm"]


class DataParallel(Module):
    """PyTorch's nn.DataParallel: each call splits the inputs along `dim` over device_ids (nn.parallel.scatter),
    runs a replica of the module on each device in its own thread (replicate, parallel_apply) and concatenates
    the outputs on output_device (gather); backward sums the replicas' gradients into the module's parameters.
    With one device the inputs are moved there and the module runs once. The module is moved to device_ids[0]
    at construction (PyTorch moves it only for one device; with several it must already be there).
    Without a GPU the module runs as it is, as PyTorch's does.

    Args:
        module: the module to wrap (available as .module).
        device_ids: cuda devices (default: all); output_device: where outputs go (default device_ids[0]).
        dim: the dimension inputs are split along and outputs concatenated along.

    Example:
        >>> model = nn.DataParallel(Net()).cuda()
        >>> list(model.state_dict())[0]
        'module.fc.weight'
    """

    def __init__(self, module, device_ids=None, output_device=None, dim=0):
        super().__init__()
        from ...device import device as _device
        from ...runtime import device_count, is_available
        from ..parallel._devices import device_index
        self.module, self.dim = module, dim
        if not is_available():
            self.device_ids, self.output_device, self.src_device_obj = [], None, None
            return
        if device_ids is None:
            device_ids = list(range(device_count()))
        if output_device is None:
            output_device = device_ids[0]
        self.device_ids = [device_index(d, True) for d in device_ids]
        self.output_device = device_index(output_device, True)
        self.src_device_obj = _device("cuda", self.device_ids[0])
        self.module.to(self.src_device_obj)

    def forward(self, *inputs, **kwargs):
        if not self.device_ids:
            return self.module(*inputs, **kwargs)
        for t in _tensors(self.module):
            if t.device != self.src_device_obj:
                raise RuntimeError("module must have its parameters and buffers on device "
                                   f"{self.src_device_obj} (device_ids[0]) but found one of them on device: "
                                   f"{t.device}")
        inputs, module_kwargs = self.scatter(inputs, kwargs, self.device_ids)
        if not inputs and not module_kwargs:   # no inputs: run once on the first device
            inputs, module_kwargs = ((),), ({},)
        if len(self.device_ids) == 1:
            return self.module(*inputs[0], **module_kwargs[0])
        replicas = self.replicate(self.module, self.device_ids[:len(inputs)])
        outputs = self.parallel_apply(replicas, inputs, module_kwargs)
        return self.gather(outputs, self.output_device)

    def replicate(self, module, device_ids):
        """nn.parallel.replicate, detached when grad mode is off (as PyTorch's)."""
        from ...autograd.grad_mode import is_grad_enabled
        from ..parallel.replicate import replicate
        return replicate(module, device_ids, not is_grad_enabled())

    def scatter(self, inputs, kwargs, device_ids):
        """nn.parallel.scatter_kwargs along self.dim."""
        from ..parallel.scatter_gather import scatter_kwargs
        return scatter_kwargs(inputs, kwargs, device_ids, dim=self.dim)

    def parallel_apply(self, replicas, inputs, kwargs):
        """nn.parallel.parallel_apply on the first len(replicas) devices."""
        from ..parallel.parallel_apply import parallel_apply
        return parallel_apply(replicas, inputs, kwargs, self.device_ids[:len(replicas)])

    def gather(self, outputs, output_device):
        """nn.parallel.gather along self.dim."""
        from ..parallel.scatter_gather import gather
        return gather(outputs, output_device, dim=self.dim)


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
