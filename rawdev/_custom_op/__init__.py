"""`torch._custom_op`: PyTorch's earlier custom-operator API, over rawdev.library (see rawdev/_custom_op/impl.py)."""
from . import impl

__all__ = ["impl"]
