"""rawdev.nn layers and losses (the ops layer's modules)."""
from .activation import GELU, LeakyReLU, LogSoftmax, ReLU, Sigmoid, Softmax, Tanh
from .dropout import Dropout
from .flatten import Flatten, Identity, Unflatten
from .linear import Linear
from .loss import CrossEntropyLoss, MSELoss, NLLLoss

__all__ = ["Linear", "ReLU", "LeakyReLU", "GELU", "Tanh", "Sigmoid", "Softmax", "LogSoftmax", "Dropout",
           "Flatten", "Unflatten", "Identity", "CrossEntropyLoss", "MSELoss", "NLLLoss", "tag_modules"]


def tag_modules(model):
    """Name each layer after its path ("Linear 0", "ReLU 1") so the device memory its ops allocate is
    tagged with it ("Linear 0 matmul output") in rawdev.cuda.memory_summary()."""
    for name, m in model.named_modules():
        if name:
            object.__setattr__(m, "_rawdev_tag", f"{type(m).__name__} {name}")
    return model
