"""torch.nn.modules.distance's classes, as PyTorch's file holds them (defined in rawdev.nn)."""
from ..layers.distance import CosineSimilarity, PairwiseDistance  # noqa: F401

__all__ = ["PairwiseDistance", "CosineSimilarity"]
