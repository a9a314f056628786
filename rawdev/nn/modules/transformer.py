"""torch.nn.modules.transformer's classes, as PyTorch's file holds them (defined in rawdev.nn)."""
from ..layers.transformer import (  # noqa: F401
    Transformer,
    TransformerDecoder,
    TransformerDecoderLayer,
    TransformerEncoder,
    TransformerEncoderLayer,
)

__all__ = ["TransformerEncoder", "TransformerDecoder", "TransformerEncoderLayer", "TransformerDecoderLayer",
           "Transformer"]
