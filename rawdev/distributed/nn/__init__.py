"""`torch.distributed.nn`: RemoteModule (a module living on another RPC worker, rawdev/distributed/nn/api/
remote_module.py). The autograd-aware functional collectives (torch.distributed.nn.functional) are refused."""
from ...refusals import Refused
from .api.remote_module import RemoteModule

__all__ = ["RemoteModule"]

functional = Refused("torch.distributed.nn.functional", "autograd-aware collectives (torch.distributed.nn.functional)",
                     "rawdev's collectives (rawdev.distributed) do not record autograd; DistributedDataParallel "
                     "averages gradients, and rpc with distributed autograd carries gradients between workers")
