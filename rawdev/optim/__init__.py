"""rawdev.optim: SGD, Adam, AdamW with PyTorch's semantics; cuda steps run the shipped PTX."""
from . import lr_scheduler
from .adam import Adam, AdamW
from .optimizer import Optimizer
from .sgd import SGD

__all__ = ["Optimizer", "SGD", "Adam", "AdamW", "lr_scheduler"]
