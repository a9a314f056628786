"""`torch.utils.data.distributed`: PyTorch's module path for DistributedSampler (rawdev.utils.data.sampler)."""
from .sampler import DistributedSampler

__all__ = ["DistributedSampler"]
