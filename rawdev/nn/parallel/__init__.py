"""`rawdev.nn.parallel`: PyTorch's import path for the data-parallel wrappers."""
from ..layers.parallel import DataParallel

__all__ = ["DataParallel", "DistributedDataParallel"]


class DistributedDataParallel:
    """Not available: rawdev has no process groups (rawdev.distributed.is_available() is False). Run the program
    as one process, or wrap the model in nn.DataParallel, which rawdev runs on one GPU."""

    def __init__(self, module, *args, **kwargs):
        raise RuntimeError("DistributedDataParallel needs torch.distributed process groups, which rawdev does not "
                           "have (rawdev.distributed.is_available() is False); run as one process without it")
