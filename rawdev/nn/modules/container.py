"""torch.nn.modules.container's classes, as PyTorch's file holds them (defined in rawdev.nn).

Not in rawdev: Container."""
from ..containers import ModuleDict, ModuleList, ParameterDict, ParameterList, Sequential  # noqa: F401

__all__ = ["Sequential", "ModuleList", "ModuleDict", "ParameterList", "ParameterDict"]
