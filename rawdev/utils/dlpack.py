"""rawdev.utils.dlpack, as torch.utils.dlpack: to_dlpack(tensor) -> capsule, from_dlpack(capsule or object)."""
from ..tensor.dlpack import from_dlpack
from ..tensor.dlpack import to_dlpack as _to_dlpack

__all__ = ["from_dlpack", "to_dlpack"]


def to_dlpack(tensor):
    """A "dltensor" capsule sharing tensor's memory (no stream ordering: the consumer synchronizes)."""
    return _to_dlpack(tensor, None)
