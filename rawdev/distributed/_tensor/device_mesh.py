"""`torch.distributed._tensor.device_mesh`: the older path of torch.distributed.device_mesh."""
from ..device_mesh import DeviceMesh, init_device_mesh

__all__ = ["DeviceMesh", "init_device_mesh"]
