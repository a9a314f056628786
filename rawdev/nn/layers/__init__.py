"""rawdev.nn layers and losses (the ops layer's modules)."""
from .activation import GELU, LeakyReLU, LogSoftmax, ReLU, Sigmoid, Softmax, Tanh
from .dropout import Dropout
from .flatten import Flatten, Identity, Unflatten
from .linear import Linear
from .loss import CrossEntropyLoss, MSELoss, NLLLoss

__all__ = ["Linear", "ReLU", "LeakyReLU", "GELU", "Tanh", "Sigmoid", "Softmax", "LogSoftmax", "Dropout",
           "Flatten", "Unflatten", "Identity", "CrossEntropyLoss", "MSELoss", "NLLLoss"]
