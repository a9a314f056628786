"""`torch.distributed.nn.api`: where PyTorch keeps RemoteModule."""
from .remote_module import RemoteModule

__all__ = ["RemoteModule"]
