"""torch.nn.modules.sparse's classes, as PyTorch's file holds them (defined in rawdev.nn)."""
from ..layers.resample import EmbeddingBag  # noqa: F401
from ..layers.sparse import Embedding  # noqa: F401

__all__ = ["Embedding", "EmbeddingBag"]
