"""torch.utils.hooks: RemovableHandle (every hook registration returns one) and BackwardHook."""
from ..autograd.hooks import RemovableHandle
from ..nn.hooks import BackwardHook

__all__ = ["RemovableHandle", "BackwardHook"]
