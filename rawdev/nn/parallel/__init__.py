"""`rawdev.nn.parallel`: PyTorch's import path for the data-parallel wrappers and their building blocks:
scatter / gather (scatter_gather.py), replicate (replicate.py) and parallel_apply (parallel_apply.py), which
split work across several CUDA devices from one process (rawdev drives every device of the process: with the
simulator, `RAWDEV_SIM_DEVICES=2` gives cuda:0 and cuda:1)."""
from ..layers.parallel import DataParallel
from .distributed import DistributedDataParallel
from .parallel_apply import parallel_apply
from .replicate import replicate
from .scatter_gather import gather, scatter, scatter_kwargs

__all__ = ["DataParallel", "DistributedDataParallel", "data_parallel", "replicate", "scatter", "gather",
           "parallel_apply", "scatter_kwargs"]


def data_parallel(module, inputs, device_ids=None, output_device=None, dim=0, module_kwargs=None):
    """torch.nn.parallel.data_parallel: the functional DataParallel. Without a GPU it is
    module(*inputs, **module_kwargs); otherwise the inputs are scattered over device_ids (default: all devices),
    the module replicated on each, run there in parallel, and the outputs gathered on output_device (default
    device_ids[0]). With one device, the inputs are moved there and the module runs once.

    Args:
        module: the module, its parameters and buffers on device_ids[0].
        inputs: a tensor or a tuple of positional arguments.
        device_ids: the cuda devices to use.
        output_device: where the output goes (-1: the cpu).
        dim: the dimension to split the inputs along.
        module_kwargs: keyword arguments for the module (scattered too).

    Returns:
        The module's gathered output.

    Example:
        >>> y = nn.parallel.data_parallel(model, x)
    """
    from itertools import chain

    from ...device import device
    from ...runtime import device_count, is_available
    from ._devices import device_index
    if not isinstance(inputs, tuple):
        inputs = (inputs,) if inputs is not None else ()
    if not is_available():
        return module(*inputs, **(module_kwargs or {}))
    if device_ids is None:
        device_ids = list(range(device_count()))
    if output_device is None:
        output_device = device_ids[0]
    device_ids = [device_index(d, True) for d in device_ids]
    output_device = device_index(output_device, True)
    src = device("cuda", device_ids[0])
    for t in chain(module.parameters(), module.buffers()):
        if t.device != src:
            raise RuntimeError(f"module must have its parameters and buffers on device {src} (device_ids[0]) but "
                               f"found one of them on device: {t.device}")
    inputs, module_kwargs = scatter_kwargs(inputs, module_kwargs, device_ids, dim)
    if not inputs and not module_kwargs:   # no inputs: run once on the first device
        inputs, module_kwargs = ((),), ({},)
    if len(device_ids) == 1:
        return module(*inputs[0], **module_kwargs[0])
    used = device_ids[:len(inputs)]
    replicas = replicate(module, used)
    outputs = parallel_apply(replicas, inputs, module_kwargs, used)
    return gather(outputs, output_device, dim)
