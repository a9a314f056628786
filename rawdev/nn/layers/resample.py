"""EmbeddingBag, Upsample (and UpsamplingNearest2d / UpsamplingBilinear2d), PixelShuffle / PixelUnshuffle and
the padding modules, over F.embedding_bag / F.interpolate / F.pixel_shuffle / F.pad (PyTorch's names, defaults,
init and repr)."""
from ...ops.dispatch import owner_scope
from ...tensor.factory import empty
from .. import functional as F
from .. import init
from ..module import Module
from ..parameter import Parameter

__all__ = ["EmbeddingBag", "Upsample", "UpsamplingNearest2d", "UpsamplingBilinear2d", "PixelShuffle",
           "PixelUnshuffle", "ZeroPad1d", "ZeroPad2d", "ConstantPad1d", "ConstantPad2d", "ReflectionPad1d",
           "ReflectionPad2d", "ReplicationPad1d", "ReplicationPad2d", "CircularPad1d", "CircularPad2d", "ZeroPad3d",
           "ConstantPad3d", "ReflectionPad3d", "ReplicationPad3d", "CircularPad3d"]


class EmbeddingBag(Module):
    """Sums, means or maxima of bags of embeddings (PyTorch's nn.EmbeddingBag): weight [num_embeddings,
    embedding_dim] drawn from N(0, 1), the padding_idx row zero.

    Example:
        >>> bag = nn.EmbeddingBag(10, 3, mode="sum")
        >>> bag(torch.tensor([1, 2, 4, 5, 4, 3, 2, 9]), torch.tensor([0, 4]))     # (2, 3)
    """

    __constants__ = ["num_embeddings", "embedding_dim", "max_norm", "norm_type", "scale_grad_by_freq", "mode",
                     "sparse", "include_last_offset", "padding_idx"]

    def __init__(self, num_embeddings, embedding_dim, max_norm=None, norm_type=2.0, scale_grad_by_freq=False,
                 mode="mean", sparse=False, _weight=None, include_last_offset=False, padding_idx=None, device=None,
                 dtype=None):
        super().__init__()
        self.num_embeddings, self.embedding_dim = num_embeddings, embedding_dim
        self.max_norm, self.norm_type, self.scale_grad_by_freq = max_norm, norm_type, scale_grad_by_freq
        if padding_idx is not None:
            if padding_idx > 0:
                assert padding_idx < num_embeddings, "padding_idx must be within num_embeddings"
            elif padding_idx < 0:
                assert padding_idx >= -num_embeddings, "padding_idx must be within num_embeddings"
                padding_idx = num_embeddings + padding_idx
        self.padding_idx = padding_idx
        if _weight is None:
            self.weight = Parameter(empty((num_embeddings, embedding_dim), dtype=dtype))
            self.reset_parameters()
        else:
            if list(_weight.shape) != [num_embeddings, embedding_dim]:
                raise AssertionError("Shape of weight does not match num_embeddings and embedding_dim")
            self.weight = Parameter(_weight)
        self.mode, self.sparse, self.include_last_offset = mode, sparse, include_last_offset
        if device is not None:
            self.to(device)

    def reset_parameters(self):
        init.normal_(self.weight)
        if self.padding_idx is not None:
            from ...autograd.grad_mode import no_grad
            with no_grad():
                self.weight[self.padding_idx].fill_(0)

    def forward(self, input, offsets=None, per_sample_weights=None):  # noqa: A002
        with owner_scope(getattr(self, "_rawdev_tag", None) or "EmbeddingBag"):
            return F.embedding_bag(input, self.weight, offsets, self.max_norm, self.norm_type,
                                   self.scale_grad_by_freq, self.mode, self.sparse, per_sample_weights,
                                   self.include_last_offset, self.padding_idx)

    def extra_repr(self):
        s = f"{self.num_embeddings!r}, {self.embedding_dim!r}"
        if self.max_norm is not None:
            s += f", max_norm={self.max_norm!r}"
        if self.norm_type != 2:
            s += f", norm_type={self.norm_type!r}"
        if self.scale_grad_by_freq is not False:
            s += f", scale_grad_by_freq={self.scale_grad_by_freq!r}"
        s += f", mode={self.mode!r}"
        if self.padding_idx is not None:
            s += f", padding_idx={self.padding_idx!r}"
        return s

    @classmethod
    def from_pretrained(cls, embeddings, freeze=True, max_norm=None, norm_type=2.0, scale_grad_by_freq=False,
                        mode="mean", sparse=False, include_last_offset=False, padding_idx=None):
        assert embeddings.dim() == 2, "Embeddings parameter is expected to be 2-dimensional"
        rows, cols = embeddings.shape
        bag = cls(rows, cols, max_norm, norm_type, scale_grad_by_freq, mode, sparse, embeddings,
                  include_last_offset, padding_idx)
        bag.weight.requires_grad = not freeze
        return bag


class Upsample(Module):
    """F.interpolate as a module (PyTorch's nn.Upsample): size or scale_factor, mode, align_corners."""

    __constants__ = ["size", "scale_factor", "mode", "align_corners", "name", "recompute_scale_factor"]

    def __init__(self, size=None, scale_factor=None, mode="nearest", align_corners=None,
                 recompute_scale_factor=None):
        super().__init__()
        self.name = type(self).__name__
        self.size = size
        if isinstance(scale_factor, tuple):
            self.scale_factor = tuple(float(f) for f in scale_factor)
        else:
            self.scale_factor = float(scale_factor) if scale_factor else None
        self.mode, self.align_corners, self.recompute_scale_factor = mode, align_corners, recompute_scale_factor

    def forward(self, input):  # noqa: A002
        with owner_scope(getattr(self, "_rawdev_tag", None) or self.name):
            return F.interpolate(input, self.size, self.scale_factor, self.mode, self.align_corners,
                                 recompute_scale_factor=self.recompute_scale_factor)

    def extra_repr(self):
        if self.scale_factor is not None:
            info = "scale_factor=" + repr(self.scale_factor)
        else:
            info = "size=" + repr(self.size)
        return info + ", mode=" + repr(self.mode)


class UpsamplingNearest2d(Upsample):
    """Nearest-neighbour 2-d upsampling (deprecated in PyTorch in favour of Upsample)."""

    def __init__(self, size=None, scale_factor=None):
        super().__init__(size, scale_factor, mode="nearest")


class UpsamplingBilinear2d(Upsample):
    """Bilinear 2-d upsampling with align_corners=True (deprecated in PyTorch in favour of Upsample)."""

    def __init__(self, size=None, scale_factor=None):
        super().__init__(size, scale_factor, mode="bilinear", align_corners=True)


class PixelShuffle(Module):
    """[*, C*r*r, H, W] -> [*, C, H*r, W*r]."""

    __constants__ = ["upscale_factor"]

    def __init__(self, upscale_factor):
        super().__init__()
        self.upscale_factor = upscale_factor

    def forward(self, input):  # noqa: A002
        return F.pixel_shuffle(input, self.upscale_factor)

    def extra_repr(self):
        return f"upscale_factor={self.upscale_factor}"


class PixelUnshuffle(Module):
    """[*, C, H*r, W*r] -> [*, C*r*r, H, W]."""

    __constants__ = ["downscale_factor"]

    def __init__(self, downscale_factor):
        super().__init__()
        self.downscale_factor = downscale_factor

    def forward(self, input):  # noqa: A002
        return F.pixel_unshuffle(input, self.downscale_factor)

    def extra_repr(self):
        return f"downscale_factor={self.downscale_factor}"


class _Pad(Module):
    _dims = 1
    _mode = "constant"

    def __init__(self, padding, value=None):
        super().__init__()
        n = 2 * self._dims
        self.padding = (int(padding),) * n if isinstance(padding, int) else tuple(padding)
        if len(self.padding) != n:
            raise ValueError(f"{type(self).__name__} expects padding of length {n}, got {len(self.padding)}")
        if value is not None:
            self.value = value

    def forward(self, input):  # noqa: A002
        if self._mode == "constant":
            return F.pad(input, self.padding, "constant", getattr(self, "value", 0.0))
        return F.pad(input, self.padding, self._mode)

    def extra_repr(self):
        return f"{self.padding}"


class _ConstantPad(_Pad):
    def __init__(self, padding, value):
        super().__init__(padding, value)

    def extra_repr(self):
        return f"padding={self.padding}, value={self.value}"


class ZeroPad1d(_ConstantPad):
    """Pad the last dim with zeros."""

    def __init__(self, padding):
        super().__init__(padding, 0.0)

    def extra_repr(self):
        return f"{self.padding}"


class ZeroPad2d(ZeroPad1d):
    """Pad the last two dims with zeros: padding (left, right, top, bottom) or one int."""
    _dims = 2


class ConstantPad1d(_ConstantPad):
    """Pad the last dim with a constant value."""


class ConstantPad2d(_ConstantPad):
    """Pad the last two dims with a constant value."""
    _dims = 2


class ReflectionPad1d(_Pad):
    """Pad the last dim with its reflection (the edge not repeated)."""
    _mode = "reflect"


class ReflectionPad2d(ReflectionPad1d):
    _dims = 2


class ReplicationPad1d(_Pad):
    """Pad the last dim by repeating its edge values."""
    _mode = "replicate"


class ReplicationPad2d(ReplicationPad1d):
    _dims = 2


class CircularPad1d(_Pad):
    """Pad the last dim by wrapping around."""
    _mode = "circular"


class CircularPad2d(CircularPad1d):
    _dims = 2


class ZeroPad3d(ZeroPad1d):
    """Pad the last three dims with zeros: padding (left, right, top, bottom, front, back) or one int."""
    _dims = 3


class ConstantPad3d(_ConstantPad):
    """Pad the last three dims with a constant value."""
    _dims = 3


class ReflectionPad3d(ReflectionPad1d):
    _dims = 3


class ReplicationPad3d(ReplicationPad1d):
    _dims = 3


class CircularPad3d(CircularPad1d):
    _dims = 3
