"""rawdev.nn: Module, Parameter and the containers. Layers and losses are added by the ops layer."""

from .containers import ModuleDict, ModuleList, Sequential
from .module import Module
from .parameter import Buffer, Parameter

__all__ = ["Module", "Parameter", "Buffer", "Sequential", "ModuleList", "ModuleDict"]
