"""rawdev.nn.modules: PyTorch's module path for code that reaches nn.modules.module (the global hooks)."""
from . import module
from .module import Module

__all__ = ["module", "Module"]
