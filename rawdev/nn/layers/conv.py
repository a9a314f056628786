"""Convolution layers: Conv1d, Conv2d, ConvTranspose1d, ConvTranspose2d (PyTorch's signatures, init and repr)."""
import math

from ...ops.dispatch import owner_scope
from ...tensor.factory import empty
from .. import functional as F
from .. import init
from ..module import Module
from ..parameter import Parameter

__all__ = ["Conv1d", "Conv2d", "Conv3d", "ConvTranspose1d", "ConvTranspose2d", "Unfold", "Fold"]


def _ntuple(v, n):
    return tuple(v) if isinstance(v, (tuple, list)) else (v,) * n


class _ConvNd(Module):
    """The parameters and repr every convolution shares. Weight [out, in/groups, *k] (transposed:
    [in, out/groups, *k]); PyTorch's default init: kaiming_uniform(a=√5) = U(±1/√fan_in), bias U(±1/√fan_in)."""

    __constants__ = ["stride", "padding", "dilation", "groups", "padding_mode", "output_padding", "in_channels",
                     "out_channels", "kernel_size"]
    _dims = 2
    _transposed = False

    def __init__(self, in_channels, out_channels, kernel_size, stride=1, padding=0, dilation=1, groups=1,
                 bias=True, padding_mode="zeros", device=None, dtype=None, output_padding=0):
        super().__init__()
        n = self._dims
        if groups <= 0:
            raise ValueError("groups must be a positive integer")
        if in_channels % groups != 0:
            raise ValueError("in_channels must be divisible by groups")
        if out_channels % groups != 0:
            raise ValueError("out_channels must be divisible by groups")
        if isinstance(padding, str):
            if padding not in ("same", "valid"):
                raise ValueError(f"Invalid padding string {padding!r}, should be one of {{'valid', 'same'}}")
            if padding == "same" and any(s != 1 for s in _ntuple(stride, n)):
                raise ValueError("padding='same' is not supported for strided convolutions")
        if padding_mode not in ("zeros", "reflect", "replicate", "circular"):
            raise ValueError(f"padding_mode must be one of {{'zeros', 'reflect', 'replicate', 'circular'}}, but "
                             f"got padding_mode='{padding_mode}'")
        if padding_mode != "zeros":
            raise NotImplementedError(f"padding_mode='{padding_mode}' is not supported by rawdev yet; "
                                      "use padding_mode='zeros'")
        self.in_channels, self.out_channels = in_channels, out_channels
        self.kernel_size = _ntuple(kernel_size, n)
        self.stride = _ntuple(stride, n)
        self.padding = padding if isinstance(padding, str) else _ntuple(padding, n)
        self.dilation = _ntuple(dilation, n)
        self.transposed = self._transposed
        self.output_padding = _ntuple(output_padding, n)
        self.groups, self.padding_mode = groups, padding_mode
        shape = ((in_channels, out_channels // groups) if self._transposed else
                 (out_channels, in_channels // groups)) + self.kernel_size
        self.weight = Parameter(empty(shape, dtype=dtype))
        if bias:
            self.bias = Parameter(empty(out_channels, dtype=dtype))
        else:
            self.register_parameter("bias", None)
        self.reset_parameters()
        if device is not None:
            self.to(device)

    def reset_parameters(self):
        init.kaiming_uniform_(self.weight, a=math.sqrt(5))
        if self.bias is not None:
            fan_in, _ = init._calculate_fan_in_and_fan_out(self.weight)
            if fan_in != 0:
                bound = 1 / math.sqrt(fan_in)
                init.uniform_(self.bias, -bound, bound)

    def extra_repr(self):
        n = self._dims
        s = f"{self.in_channels}, {self.out_channels}, kernel_size={self.kernel_size}, stride={self.stride}"
        if self.padding != (0,) * n:
            s += f", padding={self.padding}"
        if self.dilation != (1,) * n:
            s += f", dilation={self.dilation}"
        if self.output_padding != (0,) * n:
            s += f", output_padding={self.output_padding}"
        if self.groups != 1:
            s += f", groups={self.groups}"
        if self.bias is None:
            s += ", bias=False"
        if self.padding_mode != "zeros":
            s += f", padding_mode={self.padding_mode}"
        return s


class Conv2d(_ConvNd):
    """2-d convolution over input [N, C_in, H, W] -> [N, C_out, OH, OW].

    Args:
        in_channels, out_channels: channel counts. kernel_size, stride, padding ('same', 'valid' or ints),
        dilation: an int or a pair. groups: channel groups. bias: add a learnable bias.

    Example:
        >>> conv = nn.Conv2d(1, 32, 3, padding=1)
        >>> conv(torch.randn(8, 1, 28, 28)).shape
        torch.Size([8, 32, 28, 28])
    """

    def forward(self, input):  # noqa: A002
        with owner_scope(getattr(self, "_rawdev_tag", None) or "Conv2d"):
            return F.conv2d(input, self.weight, self.bias, self.stride, self.padding, self.dilation, self.groups)


class Conv1d(_ConvNd):
    """1-d convolution over input [N, C_in, L] -> [N, C_out, OL].

    Example:
        >>> nn.Conv1d(16, 33, 3, stride=2)(torch.randn(20, 16, 50)).shape
        torch.Size([20, 33, 24])
    """
    _dims = 1

    def forward(self, input):  # noqa: A002
        with owner_scope(getattr(self, "_rawdev_tag", None) or "Conv1d"):
            return F.conv1d(input, self.weight, self.bias, self.stride, self.padding, self.dilation, self.groups)


class _ConvTransposeNd(_ConvNd):
    _transposed = True

    def __init__(self, in_channels, out_channels, kernel_size, stride=1, padding=0, output_padding=0, groups=1,
                 bias=True, dilation=1, padding_mode="zeros", device=None, dtype=None):
        if padding_mode != "zeros":
            raise ValueError(f'Only "zeros" padding mode is supported for {type(self).__name__}')
        super().__init__(in_channels, out_channels, kernel_size, stride, padding, dilation, groups, bias,
                         padding_mode, device, dtype, output_padding)


class ConvTranspose2d(_ConvTransposeNd):
    """2-d transposed convolution ("deconvolution"), the adjoint of Conv2d: [N, C_in, H, W] -> [N, C_out, OH, OW]
    with OH = (H−1)·stride − 2·padding + dilation·(k−1) + output_padding + 1.

    Example:
        >>> up = nn.ConvTranspose2d(16, 8, 4, stride=2, padding=1)
        >>> up(torch.randn(1, 16, 7, 7)).shape
        torch.Size([1, 8, 14, 14])
    """

    def forward(self, input, output_size=None):  # noqa: A002
        with owner_scope(getattr(self, "_rawdev_tag", None) or "ConvTranspose2d"):
            from ...ops.conv.functions import _conv_transposend
            return _conv_transposend(input, self.weight, self.bias, self.stride, self.padding, self.output_padding,
                                     self.groups, self.dilation, 2, "conv_transpose2d", output_size)


class ConvTranspose1d(_ConvTransposeNd):
    """1-d transposed convolution: [N, C_in, L] -> [N, C_out, OL]."""
    _dims = 1

    def forward(self, input, output_size=None):  # noqa: A002
        with owner_scope(getattr(self, "_rawdev_tag", None) or "ConvTranspose1d"):
            from ...ops.conv.functions import _conv_transposend
            return _conv_transposend(input, self.weight, self.bias, self.stride, self.padding, self.output_padding,
                                     self.groups, self.dilation, 1, "conv_transpose1d", output_size)


class Unfold(Module):
    """Unfold(kernel_size, dilation=1, padding=0, stride=1): sliding blocks as columns (F.unfold)."""

    def __init__(self, kernel_size, dilation=1, padding=0, stride=1):
        super().__init__()
        self.kernel_size, self.dilation, self.padding, self.stride = kernel_size, dilation, padding, stride

    def forward(self, input):  # noqa: A002
        return F.unfold(input, self.kernel_size, self.dilation, self.padding, self.stride)

    def extra_repr(self):
        return (f"kernel_size={self.kernel_size}, dilation={self.dilation}, padding={self.padding}, "
                f"stride={self.stride}")


class Fold(Module):
    """Fold(output_size, kernel_size, dilation=1, padding=0, stride=1): columns summed back into an image."""

    def __init__(self, output_size, kernel_size, dilation=1, padding=0, stride=1):
        super().__init__()
        self.output_size, self.kernel_size = output_size, kernel_size
        self.dilation, self.padding, self.stride = dilation, padding, stride

    def forward(self, input):  # noqa: A002
        return F.fold(input, self.output_size, self.kernel_size, self.dilation, self.padding, self.stride)

    def extra_repr(self):
        return (f"output_size={self.output_size}, kernel_size={self.kernel_size}, dilation={self.dilation}, "
                f"padding={self.padding}, stride={self.stride}")


class Conv3d(_ConvNd):
    """3-d convolution over input [N, C_in, D, H, W] -> [N, C_out, OD, OH, OW] (kd 2-D convolutions per call:
    rawdev.ops.conv.conv3d).

    Example:
        >>> nn.Conv3d(2, 4, 3, padding=1)(torch.randn(1, 2, 5, 6, 6)).shape
        torch.Size([1, 4, 5, 6, 6])
    """
    _dims = 3

    def forward(self, input):  # noqa: A002
        with owner_scope(getattr(self, "_rawdev_tag", None) or "Conv3d"):
            return F.conv3d(input, self.weight, self.bias, self.stride, self.padding, self.dilation, self.groups)


class ConvTranspose3d(_ConvTransposeNd):
    """3-d transposed convolution, the adjoint of Conv3d: [N, C_in, D, H, W] -> [N, C_out, OD, OH, OW] (kd 2-D
    transposed convolutions per call: rawdev.ops.conv.conv3d).

    Example:
        >>> nn.ConvTranspose3d(4, 2, 2, stride=2)(torch.randn(1, 4, 3, 3, 3)).shape
        torch.Size([1, 2, 6, 6, 6])
    """
    _dims = 3

    def forward(self, input, output_size=None):  # noqa: A002
        op = self.output_padding
        if output_size is not None:            # the output_padding that gives that size, as PyTorch
            spatial = list(output_size)[-3:]
            op = tuple(spatial[i] - ((input.shape[-3 + i] - 1) * self.stride[i] - 2 * self.padding[i]
                                     + self.dilation[i] * (self.kernel_size[i] - 1) + 1) for i in range(3))
            if any(o < 0 or o >= max(self.stride[i], self.dilation[i]) for i, o in enumerate(op)):
                raise ValueError(f"requested an output size of {spatial}, but valid sizes are not reachable with "
                                 f"stride {self.stride}")
        with owner_scope(getattr(self, "_rawdev_tag", None) or "ConvTranspose3d"):
            return F.conv_transpose3d(input, self.weight, self.bias, self.stride, self.padding, op, self.groups,
                                      self.dilation)
