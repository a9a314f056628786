"""The less common layers and losses as modules over their functional forms: Threshold, Hardshrink, Softshrink,
RReLU, Softmax2d, LocalResponseNorm, ChannelShuffle, Bilinear, MaxUnpool1d/2d, LPPool1d/2d, and the losses
HingeEmbedding, SoftMargin, MultiLabelSoftMargin, MultiMargin, MultiLabelMargin, PoissonNLL, GaussianNLL,
TripletMarginWithDistance. Constructor signatures, defaults, init and repr are PyTorch's."""
import math

from ...tensor import factory
from .. import functional as F
from .. import init
from ..module import Module
from ..parameter import Parameter
from .loss import _Loss, _WeightedLoss

__all__ = ["Threshold", "Hardshrink", "Softshrink", "RReLU", "Softmax2d", "LocalResponseNorm", "ChannelShuffle",
           "Bilinear", "MaxUnpool1d", "MaxUnpool2d", "LPPool1d", "LPPool2d", "HingeEmbeddingLoss", "SoftMarginLoss",
           "MultiLabelSoftMarginLoss", "MultiMarginLoss", "MultiLabelMarginLoss", "PoissonNLLLoss", "GaussianNLLLoss",
           "TripletMarginWithDistanceLoss", "CTCLoss"]


class Threshold(Module):
    """y = x if x > threshold else value.

    Example:
        >>> nn.Threshold(0.1, 20)(torch.tensor([0., 1.]))
        tensor([20.,  1.])
    """

    def __init__(self, threshold, value, inplace=False):
        super().__init__()
        self.threshold, self.value, self.inplace = threshold, value, inplace

    def forward(self, input):  # noqa: A002
        return F.threshold(input, self.threshold, self.value, self.inplace)

    def extra_repr(self):
        return f"threshold={self.threshold}, value={self.value}" + (", inplace=True" if self.inplace else "")


class Hardshrink(Module):
    def __init__(self, lambd=0.5):
        super().__init__()
        self.lambd = lambd

    def forward(self, input):  # noqa: A002
        return F.hardshrink(input, self.lambd)

    def extra_repr(self):
        return f"{self.lambd}"


class Softshrink(Hardshrink):
    def forward(self, input):  # noqa: A002
        return F.softshrink(input, self.lambd)


class RReLU(Module):
    """Randomized leaky ReLU: slopes drawn from U(lower, upper) in training, their mean in evaluation."""

    def __init__(self, lower=1.0 / 8, upper=1.0 / 3, inplace=False):
        super().__init__()
        self.lower, self.upper, self.inplace = lower, upper, inplace

    def forward(self, input):  # noqa: A002
        return F.rrelu(input, self.lower, self.upper, self.training, self.inplace)

    def extra_repr(self):
        return f"lower={self.lower}, upper={self.upper}" + (", inplace=True" if self.inplace else "")


class Softmax2d(Module):
    """Softmax over the channels of [N, C, H, W] (or [C, H, W]) at every position."""

    def forward(self, input):  # noqa: A002
        if input.ndim not in (3, 4):
            raise ValueError(f"Softmax2d: expected input to be 3D or 4D, got {input.ndim}D instead")
        return F.softmax(input, -3)


class LocalResponseNorm(Module):
    def __init__(self, size, alpha=1e-4, beta=0.75, k=1.0):
        super().__init__()
        self.size, self.alpha, self.beta, self.k = size, alpha, beta, k

    def forward(self, input):  # noqa: A002
        return F.local_response_norm(input, self.size, self.alpha, self.beta, self.k)

    def extra_repr(self):
        return f"{self.size}, alpha={self.alpha}, beta={self.beta}, k={self.k}"


class ChannelShuffle(Module):
    def __init__(self, groups):
        super().__init__()
        self.groups = groups

    def forward(self, input):  # noqa: A002
        return F.channel_shuffle(input, self.groups)

    def extra_repr(self):
        return f"groups={self.groups}"


class Bilinear(Module):
    """y = x1ᵀ A x2 + b; weight [out_features, in1_features, in2_features], both initialised U(−1/√in1, 1/√in1).

    Example:
        >>> m = nn.Bilinear(3, 4, 5)
        >>> m(torch.ones(2, 3), torch.ones(2, 4)).shape
        torch.Size([2, 5])
    """

    def __init__(self, in1_features, in2_features, out_features, bias=True, device=None, dtype=None):
        super().__init__()
        self.in1_features, self.in2_features, self.out_features = in1_features, in2_features, out_features
        self.weight = Parameter(factory.empty((out_features, in1_features, in2_features), device=device, dtype=dtype))
        if bias:
            self.bias = Parameter(factory.empty((out_features,), device=device, dtype=dtype))
        else:
            self.register_parameter("bias", None)
        self.reset_parameters()

    def reset_parameters(self):
        bound = 1 / math.sqrt(self.weight.shape[1])
        init.uniform_(self.weight, -bound, bound)
        if self.bias is not None:
            init.uniform_(self.bias, -bound, bound)

    def forward(self, input1, input2):
        return F.bilinear(input1, input2, self.weight, self.bias)

    def extra_repr(self):
        return (f"in1_features={self.in1_features}, in2_features={self.in2_features}, "
                f"out_features={self.out_features}, bias={self.bias is not None}")


class _MaxUnpoolNd(Module):
    _dims = 2

    def __init__(self, kernel_size, stride=None, padding=0):
        super().__init__()

        def nd(v):
            return tuple(v) if isinstance(v, (tuple, list)) else (v,) * self._dims
        self.kernel_size = nd(kernel_size)
        self.stride = nd(stride if stride is not None else kernel_size)
        self.padding = nd(padding)

    def extra_repr(self):
        return f"kernel_size={self.kernel_size}, stride={self.stride}, padding={self.padding}"


class MaxUnpool1d(_MaxUnpoolNd):
    _dims = 1

    def forward(self, input, indices, output_size=None):  # noqa: A002
        return F.max_unpool1d(input, indices, self.kernel_size, self.stride, self.padding, output_size)


class MaxUnpool2d(_MaxUnpoolNd):
    """Puts each max_pool2d maximum back at its index (zeros elsewhere).

    Example:
        >>> pool, unpool = nn.MaxPool2d(2, return_indices=True), nn.MaxUnpool2d(2)
        >>> y, i = pool(torch.arange(16.).reshape(1, 1, 4, 4))
        >>> unpool(y, i).shape
        torch.Size([1, 1, 4, 4])
    """

    def forward(self, input, indices, output_size=None):  # noqa: A002
        return F.max_unpool2d(input, indices, self.kernel_size, self.stride, self.padding, output_size)


class _LPPoolNd(Module):
    def __init__(self, norm_type, kernel_size, stride=None, ceil_mode=False):
        super().__init__()
        self.norm_type, self.kernel_size, self.stride, self.ceil_mode = norm_type, kernel_size, stride, ceil_mode

    def extra_repr(self):
        return (f"norm_type={self.norm_type}, kernel_size={self.kernel_size}, stride={self.stride}, "
                f"ceil_mode={self.ceil_mode}")


class LPPool1d(_LPPoolNd):
    def forward(self, input):  # noqa: A002
        return F.lp_pool1d(input, float(self.norm_type), self.kernel_size, self.stride, self.ceil_mode)


class LPPool2d(_LPPoolNd):
    def forward(self, input):  # noqa: A002
        return F.lp_pool2d(input, float(self.norm_type), self.kernel_size, self.stride, self.ceil_mode)


class HingeEmbeddingLoss(_Loss):
    def __init__(self, margin=1.0, size_average=None, reduce=None, reduction="mean"):
        super().__init__(size_average, reduce, reduction)
        self.margin = margin

    def forward(self, input, target):  # noqa: A002
        return F.hinge_embedding_loss(input, target, margin=self.margin, reduction=self.reduction)


class SoftMarginLoss(_Loss):
    def forward(self, input, target):  # noqa: A002
        return F.soft_margin_loss(input, target, reduction=self.reduction)


class MultiLabelSoftMarginLoss(_WeightedLoss):
    def forward(self, input, target):  # noqa: A002
        return F.multilabel_soft_margin_loss(input, target, weight=self.weight, reduction=self.reduction)


class MultiMarginLoss(_WeightedLoss):
    def __init__(self, p=1, margin=1.0, weight=None, size_average=None, reduce=None, reduction="mean"):
        super().__init__(weight, size_average, reduce, reduction)
        if p not in (1, 2):
            raise ValueError("only p == 1 and p == 2 supported")
        if weight is not None and weight.ndim != 1:
            raise ValueError(f"MultiMarginLoss: expected weight to be None or 1D tensor, got {weight.ndim}D instead")
        self.p, self.margin = p, margin

    def forward(self, input, target):  # noqa: A002
        return F.multi_margin_loss(input, target, p=self.p, margin=self.margin, weight=self.weight,
                                   reduction=self.reduction)


class MultiLabelMarginLoss(_Loss):
    def forward(self, input, target):  # noqa: A002
        return F.multilabel_margin_loss(input, target, reduction=self.reduction)


class PoissonNLLLoss(_Loss):
    def __init__(self, log_input=True, full=False, size_average=None, eps=1e-8, reduce=None, reduction="mean"):
        super().__init__(size_average, reduce, reduction)
        self.log_input, self.full, self.eps = log_input, full, eps

    def forward(self, log_input, target):
        return F.poisson_nll_loss(log_input, target, log_input=self.log_input, full=self.full, eps=self.eps,
                                  reduction=self.reduction)


class GaussianNLLLoss(_Loss):
    def __init__(self, *, full=False, eps=1e-6, reduction="mean"):
        super().__init__(None, None, reduction)
        self.full, self.eps = full, eps

    def forward(self, input, target, var):  # noqa: A002
        return F.gaussian_nll_loss(input, target, var, full=self.full, eps=self.eps, reduction=self.reduction)


class CTCLoss(_Loss):
    """The connectionist temporal classification loss over [T, N, C] log-probabilities (F.ctc_loss)."""

    def __init__(self, blank=0, reduction="mean", zero_infinity=False):
        super().__init__(None, None, reduction)
        self.blank, self.zero_infinity = blank, zero_infinity

    def forward(self, log_probs, targets, input_lengths, target_lengths):
        return F.ctc_loss(log_probs, targets, input_lengths, target_lengths, self.blank, self.reduction,
                          self.zero_infinity)


class TripletMarginWithDistanceLoss(_Loss):
    def __init__(self, *, distance_function=None, margin=1.0, swap=False, reduction="mean"):
        super().__init__(None, None, reduction)
        if margin <= 0:
            raise ValueError(f"TripletMarginWithDistanceLoss: expected margin to be greater than 0, got {margin} "
                             "instead")
        self.distance_function, self.margin, self.swap = distance_function, margin, swap

    def forward(self, anchor, positive, negative):
        return F.triplet_margin_with_distance_loss(anchor, positive, negative,
                                                   distance_function=self.distance_function, margin=self.margin,
                                                   swap=self.swap, reduction=self.reduction)
