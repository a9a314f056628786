"""`rawdev.nn.parallel`: PyTorch's import path for the data-parallel wrappers."""
from ..layers.parallel import DataParallel
from .distributed import DistributedDataParallel

__all__ = ["DataParallel", "DistributedDataParallel", "data_parallel"]


def data_parallel(module, inputs, device_ids=None, output_device=None, dim=0, module_kwargs=None):
    """torch.nn.parallel.data_parallel: the functional DataParallel. rawdev uses one GPU, so this is
    module(*inputs, **module_kwargs) (inputs: a tensor or a tuple of them), as PyTorch does for one device.

    Example:
        >>> y = nn.parallel.data_parallel(model, x)
    """
    if not isinstance(inputs, tuple):
        inputs = (inputs,) if inputs is not None else ()
    return module(*inputs, **(module_kwargs or {}))


# PyTorch's multi-GPU building blocks of DataParallel: they split work across several devices from one process,
# which rawdev does not do (several GPUs are one process each: DistributedDataParallel under `rawdev run`);
# data_parallel and DataParallel above run on the one device.
from ...refusals import Refused as _Refused  # noqa: E402

_ONE_GPU = ("rawdev drives one GPU per process, so there is nothing to split across devices; call the module "
            "directly, use nn.DataParallel / data_parallel (which run on the one device), or train on several GPUs "
            "with DistributedDataParallel under `rawdev run`")
replicate = _Refused("torch.nn.parallel.replicate", "multi-GPU replication (nn.parallel.replicate)", _ONE_GPU)
scatter = _Refused("torch.nn.parallel.scatter", "multi-GPU scatter (nn.parallel.scatter)", _ONE_GPU)
gather = _Refused("torch.nn.parallel.gather", "multi-GPU gather (nn.parallel.gather)", _ONE_GPU)
parallel_apply = _Refused("torch.nn.parallel.parallel_apply", "multi-GPU parallel_apply (nn.parallel.parallel_apply)",
                          _ONE_GPU)
