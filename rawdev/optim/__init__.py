"""rawdev.optim: PyTorch's optimizers (SGD, Adam, AdamW, RMSprop, Adagrad, Adadelta, Adamax, NAdam, RAdam, LBFGS,
Rprop, ASGD) with PyTorch's semantics, and swa_utils; the cuda steps of the first nine run the shipped PTX (one
fused launch per parameter arena), Rprop and ASGD are tensor ops per parameter."""
from . import lr_scheduler, swa_utils
from .adadelta import Adadelta
from .adagrad import Adagrad
from .adam import Adam, AdamW
from .adamax import Adamax
from .composed import ASGD, Rprop
from .lbfgs import LBFGS
from .nadam import NAdam
from .optimizer import Optimizer
from .radam import RAdam
from .rmsprop import RMSprop
from .sgd import SGD

__all__ = ["Optimizer", "SGD", "Adam", "AdamW", "RMSprop", "Adagrad", "Adadelta", "Adamax", "NAdam", "RAdam",
           "LBFGS", "lr_scheduler", "Rprop", "ASGD", "swa_utils"]
