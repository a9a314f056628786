"""rawdev.utils: data loading (utils.data) and activation checkpointing (utils.checkpoint)."""
from . import checkpoint, data, dlpack

__all__ = ["data", "checkpoint", "dlpack"]
from . import hooks  # noqa: E402,F401
