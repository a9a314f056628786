"""`torch.distributed.autograd`: backward passes across RPC (context, backward, get_gradients); see
rawdev.distributed.rpc.dist_autograd."""
from .rpc.dist_autograd import backward, context, get_gradients

__all__ = ["context", "backward", "get_gradients"]
