"""torch.nn.modules.channelshuffle's classes, as PyTorch's file holds them (defined in rawdev.nn)."""
from ..layers.extra import ChannelShuffle  # noqa: F401

__all__ = ["ChannelShuffle"]
