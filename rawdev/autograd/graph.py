"""torch.autograd.graph's names that programs touch: Node (a grad_fn's type) and register hooks on nodes."""
from .function import Node

__all__ = ["Node"]
