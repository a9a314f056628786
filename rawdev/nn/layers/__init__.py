"""rawdev.nn layers and losses (the ops layer's modules)."""
from .attention import MultiheadAttention
from .rnn import GRU, LSTM, RNN, GRUCell, LSTMCell, RNNBase, RNNCell, RNNCellBase
from .activation import (CELU, ELU, GELU, GLU, SELU, Hardsigmoid, Hardswish, Hardtanh, LeakyReLU, LogSigmoid,
                         LogSoftmax, Mish, PReLU, ReLU, ReLU6, Sigmoid, SiLU, Softmax, Softmin, Softplus, Softsign,
                         Tanh, Tanhshrink)
from .dropout import AlphaDropout, Dropout, Dropout1d, Dropout2d, Dropout3d, FeatureAlphaDropout
from .flatten import Flatten, Identity, Unflatten
from .linear import LazyLinear, Linear
from .normalization import LayerNorm, RMSNorm
from .sparse import Embedding
from .conv import Conv1d, Conv2d, Conv3d, ConvTranspose1d, ConvTranspose2d, ConvTranspose3d, Fold, Unfold
from .pooling import (AdaptiveAvgPool1d, AdaptiveAvgPool2d, AdaptiveAvgPool3d, AdaptiveMaxPool1d, AdaptiveMaxPool2d,
                      AdaptiveMaxPool3d, AvgPool1d, AvgPool2d, AvgPool3d, MaxPool1d, MaxPool2d, MaxPool3d)
from .batchnorm import BatchNorm1d, BatchNorm2d, BatchNorm3d
from .loss import (BCELoss, BCEWithLogitsLoss, CosineEmbeddingLoss, CrossEntropyLoss, HuberLoss, KLDivLoss, L1Loss,
                   MarginRankingLoss, MSELoss, NLLLoss, SmoothL1Loss, TripletMarginLoss)
from .groupnorm import GroupNorm, InstanceNorm1d, InstanceNorm2d, InstanceNorm3d
from .transformer import (Transformer, TransformerDecoder, TransformerDecoderLayer, TransformerEncoder,
                          TransformerEncoderLayer)
from .extra import (Bilinear, ChannelShuffle, CTCLoss, GaussianNLLLoss, Hardshrink, HingeEmbeddingLoss,
                    LocalResponseNorm, LPPool1d, LPPool2d, MaxUnpool1d, MaxUnpool2d, MultiLabelMarginLoss,
                    MultiLabelSoftMarginLoss,
                    MultiMarginLoss, PoissonNLLLoss, RReLU, Softmax2d, SoftMarginLoss, Softshrink, Threshold,
                    TripletMarginWithDistanceLoss)
from .lazy import (LazyBatchNorm1d, LazyBatchNorm2d, LazyBatchNorm3d, LazyConv1d, LazyConv2d, LazyConv3d,
                   LazyConvTranspose1d, LazyConvTranspose2d, LazyConvTranspose3d, LazyInstanceNorm1d,
                   LazyInstanceNorm2d, LazyInstanceNorm3d)
from .parallel import DataParallel, SyncBatchNorm
from .resample import (CircularPad1d, CircularPad2d, CircularPad3d, ConstantPad1d, ConstantPad2d, ConstantPad3d,
                       EmbeddingBag, PixelShuffle, PixelUnshuffle, ReflectionPad1d, ReflectionPad2d, ReflectionPad3d,
                       ReplicationPad1d, ReplicationPad2d, ReplicationPad3d, Upsample, UpsamplingBilinear2d,
                       UpsamplingNearest2d, ZeroPad1d, ZeroPad2d, ZeroPad3d)

__all__ = ["Linear", "ReLU", "LeakyReLU", "GELU", "Tanh", "Sigmoid", "Softmax", "LogSoftmax", "Dropout",
           "Flatten", "Unflatten", "Identity", "CrossEntropyLoss", "MSELoss", "NLLLoss", "tag_modules",
           "SiLU", "Mish", "ELU", "SELU", "CELU", "Softplus", "Hardtanh", "ReLU6", "Hardswish", "Hardsigmoid",
           "LogSigmoid", "Softsign", "Tanhshrink", "Softmin", "GLU", "PReLU",
           "Dropout1d", "Dropout2d", "AlphaDropout", "FeatureAlphaDropout",
           "L1Loss", "SmoothL1Loss", "HuberLoss", "BCELoss", "BCEWithLogitsLoss", "KLDivLoss", "MarginRankingLoss",
           "CosineEmbeddingLoss", "TripletMarginLoss", "LayerNorm", "RMSNorm", "Embedding", "MultiheadAttention",
           "RNNBase", "RNN", "LSTM", "GRU", "RNNCellBase", "RNNCell", "LSTMCell", "GRUCell",
           "Conv1d", "Conv2d", "ConvTranspose1d", "ConvTranspose2d", "MaxPool1d", "MaxPool2d", "AvgPool1d",
           "AvgPool2d", "AdaptiveAvgPool1d", "AdaptiveAvgPool2d", "AdaptiveMaxPool1d", "AdaptiveMaxPool2d",
           "BatchNorm1d", "BatchNorm2d",
           "GroupNorm", "InstanceNorm1d", "InstanceNorm2d", "Transformer", "TransformerEncoder",
           "TransformerDecoder", "TransformerEncoderLayer", "TransformerDecoderLayer",
           "EmbeddingBag", "Upsample", "UpsamplingNearest2d", "UpsamplingBilinear2d", "PixelShuffle", "PixelUnshuffle",
           "ZeroPad1d", "ZeroPad2d", "ConstantPad1d", "ConstantPad2d", "ReflectionPad1d", "ReflectionPad2d",
           "ReplicationPad1d", "ReplicationPad2d", "CircularPad1d", "CircularPad2d", "Unfold", "Fold",
           "Threshold", "Hardshrink", "Softshrink", "RReLU", "Softmax2d", "LocalResponseNorm", "ChannelShuffle",
           "Bilinear", "MaxUnpool1d", "MaxUnpool2d", "LPPool1d", "LPPool2d", "HingeEmbeddingLoss", "SoftMarginLoss",
           "MultiLabelSoftMarginLoss", "MultiMarginLoss", "MultiLabelMarginLoss", "PoissonNLLLoss",
           "GaussianNLLLoss", "TripletMarginWithDistanceLoss", "Conv3d", "MaxPool3d", "AvgPool3d", "AdaptiveAvgPool3d",
           "AdaptiveMaxPool3d", "BatchNorm3d", "LazyLinear", "Dropout3d", "InstanceNorm3d", "CTCLoss",
           "LazyConv1d", "LazyConv2d", "LazyConv3d", "LazyConvTranspose1d", "LazyConvTranspose2d", "LazyBatchNorm1d",
           "LazyBatchNorm2d", "LazyBatchNorm3d", "LazyInstanceNorm1d", "LazyInstanceNorm2d", "LazyInstanceNorm3d",
           "DataParallel", "SyncBatchNorm", "ZeroPad3d", "ConstantPad3d", "ReflectionPad3d", "ReplicationPad3d",
           "CircularPad3d", "ConvTranspose3d", "LazyConvTranspose3d"]


def tag_modules(model):
    """Name each layer after its path ("Linear 0", "ReLU 1") so the device memory its ops allocate is
    tagged with it ("Linear 0 matmul output") in rawdev.cuda.memory_summary()."""
    for name, m in model.named_modules():
        if name:
            object.__setattr__(m, "_rawdev_tag", f"{type(m).__name__} {name}")
    return model
from .distance import *  # noqa: F401,F403,E402
