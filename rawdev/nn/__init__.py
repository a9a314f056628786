"""rawdev.nn: Module, Parameter and the containers. Layers and losses are added by the ops layer."""

from .containers import ModuleDict, ModuleList, ParameterDict, ParameterList, Sequential
from .module import Module
from .parameter import Buffer, Parameter

__all__ = ["Module", "Parameter", "Buffer", "Sequential", "ModuleList", "ModuleDict", "ParameterList",
           "ParameterDict"]

# --- layers, losses, functional, init ---
from . import functional, init  # noqa: E402
from . import utils  # noqa: E402,F401
from .layers import (GELU, CrossEntropyLoss, Dropout, Flatten, Identity, LeakyReLU, Linear, LogSoftmax,  # noqa: E402
                     MSELoss, NLLLoss, ReLU, Sigmoid, Softmax, Tanh, Unflatten)

__all__ += ["functional", "init", "Linear", "ReLU", "LeakyReLU", "GELU", "Tanh", "Sigmoid", "Softmax", "LogSoftmax",
            "Dropout", "Flatten", "Unflatten", "Identity", "CrossEntropyLoss", "MSELoss", "NLLLoss"]
from .layers import (CELU, ELU, GLU, SELU, AlphaDropout, BCELoss, BCEWithLogitsLoss, CosineEmbeddingLoss,  # noqa: E402
                     Dropout1d, Dropout2d, FeatureAlphaDropout, Hardsigmoid, Hardswish, Hardtanh, HuberLoss,
                     KLDivLoss, L1Loss, LogSigmoid, MarginRankingLoss, Mish, PReLU, ReLU6, SiLU, SmoothL1Loss, Softmin,
                     Softplus, Softsign, Tanhshrink, TripletMarginLoss)

__all__ += ["SiLU", "Mish", "ELU", "SELU", "CELU", "Softplus", "Hardtanh", "ReLU6", "Hardswish", "Hardsigmoid",
            "LogSigmoid", "Softsign", "Tanhshrink", "Softmin", "GLU", "PReLU", "Dropout1d", "Dropout2d",
            "AlphaDropout", "FeatureAlphaDropout", "L1Loss", "SmoothL1Loss", "HuberLoss", "BCELoss",
            "BCEWithLogitsLoss", "KLDivLoss", "MarginRankingLoss", "CosineEmbeddingLoss", "TripletMarginLoss"]
from .layers import Embedding, LayerNorm, RMSNorm  # noqa: E402

__all__ += ["LayerNorm", "RMSNorm", "Embedding"]
from .layers import (GRU, LSTM, RNN, GRUCell, LSTMCell, MultiheadAttention, RNNBase, RNNCell,  # noqa: E402
                     RNNCellBase)

__all__ += ["MultiheadAttention", "RNNBase", "RNN", "LSTM", "GRU", "RNNCellBase", "RNNCell", "LSTMCell", "GRUCell"]
from .layers import (AdaptiveAvgPool1d, AdaptiveAvgPool2d, AdaptiveMaxPool1d, AdaptiveMaxPool2d,  # noqa: E402
                     AvgPool1d, AvgPool2d, BatchNorm1d, BatchNorm2d, Conv1d, Conv2d, ConvTranspose1d,
                     ConvTranspose2d, MaxPool1d, MaxPool2d)

__all__ += ["Conv1d", "Conv2d", "ConvTranspose1d", "ConvTranspose2d", "MaxPool1d", "MaxPool2d", "AvgPool1d",
            "AvgPool2d", "AdaptiveAvgPool1d", "AdaptiveAvgPool2d", "AdaptiveMaxPool1d", "AdaptiveMaxPool2d",
            "BatchNorm1d", "BatchNorm2d"]
from . import modules, parallel  # noqa: E402,F401
from .parallel import DistributedDataParallel  # noqa: E402

__all__ += ["DistributedDataParallel"]
from .layers import (GroupNorm, InstanceNorm1d, InstanceNorm2d, Transformer, TransformerDecoder,  # noqa: E402
                     TransformerDecoderLayer, TransformerEncoder, TransformerEncoderLayer)

__all__ += ["GroupNorm", "InstanceNorm1d", "InstanceNorm2d", "Transformer", "TransformerEncoder", "TransformerDecoder",
            "TransformerEncoderLayer", "TransformerDecoderLayer"]
from .layers import (CircularPad1d, CircularPad2d, ConstantPad1d, ConstantPad2d, EmbeddingBag,  # noqa: E402
                     PixelShuffle, PixelUnshuffle, ReflectionPad1d, ReflectionPad2d, ReplicationPad1d,
                     ReplicationPad2d, Upsample, UpsamplingBilinear2d, UpsamplingNearest2d, ZeroPad1d, ZeroPad2d)

__all__ += ["EmbeddingBag", "Upsample", "UpsamplingNearest2d", "UpsamplingBilinear2d", "PixelShuffle",
            "PixelUnshuffle", "ZeroPad1d", "ZeroPad2d", "ConstantPad1d", "ConstantPad2d", "ReflectionPad1d",
            "ReflectionPad2d", "ReplicationPad1d", "ReplicationPad2d", "CircularPad1d", "CircularPad2d"]
from .layers import CosineSimilarity, PairwiseDistance  # noqa: E402

__all__ += ["CosineSimilarity", "PairwiseDistance"]
from .layers import Fold, Unfold  # noqa: E402

__all__ += ["Fold", "Unfold"]
from .layers import (Bilinear, ChannelShuffle, GaussianNLLLoss, Hardshrink, HingeEmbeddingLoss,  # noqa: E402
                     LocalResponseNorm, LPPool1d, LPPool2d, MaxUnpool1d, MaxUnpool2d, MultiLabelMarginLoss,
                     MultiLabelSoftMarginLoss, MultiMarginLoss, PoissonNLLLoss, RReLU, Softmax2d, SoftMarginLoss,
                     Softshrink, Threshold, TripletMarginWithDistanceLoss)

__all__ += ["Threshold", "Hardshrink", "Softshrink", "RReLU", "Softmax2d", "LocalResponseNorm", "ChannelShuffle",
            "Bilinear", "MaxUnpool1d", "MaxUnpool2d", "LPPool1d", "LPPool2d", "HingeEmbeddingLoss", "SoftMarginLoss",
            "MultiLabelSoftMarginLoss", "MultiMarginLoss", "MultiLabelMarginLoss", "PoissonNLLLoss",
            "GaussianNLLLoss", "TripletMarginWithDistanceLoss"]
from .layers import (AdaptiveAvgPool3d, AdaptiveMaxPool3d, AvgPool3d, BatchNorm3d, Conv3d,  # noqa: E402
                     CTCLoss, Dropout3d, InstanceNorm3d, LazyLinear, MaxPool3d)

__all__ += ["Conv3d", "MaxPool3d", "AvgPool3d", "AdaptiveAvgPool3d", "AdaptiveMaxPool3d", "BatchNorm3d", "LazyLinear",
            "Dropout3d", "InstanceNorm3d", "CTCLoss"]
from .layers import (DataParallel, LazyBatchNorm1d, LazyBatchNorm2d, LazyBatchNorm3d, LazyConv1d,  # noqa: E402
                     LazyConv2d, LazyConv3d, LazyConvTranspose1d, LazyConvTranspose2d, LazyInstanceNorm1d,
                     LazyInstanceNorm2d, LazyInstanceNorm3d, SyncBatchNorm)

from .layers import CircularPad3d, ConstantPad3d, ReflectionPad3d, ReplicationPad3d, ZeroPad3d  # noqa: E402
from .layers import ConvTranspose3d, LazyConvTranspose3d  # noqa: E402

__all__ += ["ZeroPad3d", "ConstantPad3d", "ReflectionPad3d", "ReplicationPad3d", "CircularPad3d", "ConvTranspose3d",
            "LazyConvTranspose3d"]
__all__ += ["LazyConv1d", "LazyConv2d", "LazyConv3d", "LazyConvTranspose1d", "LazyConvTranspose2d", "LazyBatchNorm1d",
            "LazyBatchNorm2d", "LazyBatchNorm3d", "LazyInstanceNorm1d", "LazyInstanceNorm2d", "LazyInstanceNorm3d",
            "DataParallel", "SyncBatchNorm"]
