"""rawdev.utils: data loading (utils.data), activation checkpointing (utils.checkpoint), DLPack exchange,
TensorBoard logging (utils.tensorboard, with the optional tensorboard package) and model_zoo.load_url."""
from . import checkpoint, data, dlpack, model_zoo, tensorboard  # tensorboard does not import the package

__all__ = ["data", "checkpoint", "dlpack", "model_zoo", "tensorboard"]
from . import hooks  # noqa: E402,F401
