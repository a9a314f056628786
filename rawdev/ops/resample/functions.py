"""Resampling and padding: interpolate (nearest, nearest-exact, linear, bilinear), pad (constant, reflect,
replicate, circular), pixel_shuffle / pixel_unshuffle and channel_shuffle.

interpolate views x [N, C, *spatial] as [N*C, H, W] planes (1-d: H = 1) and runs one kernel per direction
(resample.ptx on cuda, numpy on the cpu, the same float32 index arithmetic as PyTorch's UpSample.h); the backward
adds each output gradient into the input positions it read. pad: constant is a new tensor with the input
written into its interior (backward: that slice of the gradient); reflect / replicate / circular are an
index_select per padded dim (backward: its scatter-add). pixel_shuffle / pixel_unshuffle are views + one copy.
"""
import math
import warnings

import numpy as np

from ... import dtypes as _dt
from ...autograd.function import Function
from ...autograd.grad_mode import no_grad
from ..dispatch import backend, backend_of
from ..registry import declare

_NODE = {("nearest", 1): "UpsampleNearest1DBackward0", ("nearest", 2): "UpsampleNearest2DBackward0",
         ("nearest-exact", 1): "UpsampleNearestExact1DBackward0",
         ("nearest-exact", 2): "UpsampleNearestExact2DBackward0",
         ("linear", 1): "UpsampleLinear1DBackward0", ("bilinear", 2): "UpsampleBilinear2DBackward0"}


class _Interp(Function):
    node_name = "UpsampleNearest2DBackward0"

    @staticmethod
    def forward(ctx, x, out_hw, scales, kind, flag):
        B = backend("interpolate", x)
        N, C = x.shape[:2]
        H, W = (1, x.shape[2]) if x.ndim == 3 else (x.shape[2], x.shape[3])
        OH, OW = out_hw
        x3 = x.reshape(N * C, H, W).contiguous()
        y = B.interp_fwd(x3, OH, OW, scales[0], scales[1], kind, flag)
        ctx.geom = (N, C, H, W, scales, kind, flag, tuple(x.shape))
        return y.reshape((N, C) + ((OW,) if x.ndim == 3 else (OH, OW)))

    @staticmethod
    def backward(ctx, g):
        N, C, H, W, scales, kind, flag, shape = ctx.geom
        OH, OW = (1, g.shape[2]) if g.ndim == 3 else (g.shape[2], g.shape[3])
        g3 = g.reshape(N * C, OH, OW).contiguous()
        dx = backend_of(g).interp_bwd(g3, H, W, scales[0], scales[1], kind, flag)
        return dx.reshape(shape), None, None, None, None


def _scale(inp, out, sf, align, linear):
    if linear and align:
        return (inp - 1) / (out - 1) if out > 1 else 0.0
    return 1.0 / sf if sf is not None and sf > 0 else inp / out


def interpolate(input, size=None, scale_factor=None, mode="nearest", align_corners=None,  # noqa: A002
                recompute_scale_factor=None, antialias=False):
    """Resize x [N, C, L] or [N, C, H, W] to size, or by scale_factor (output = floor(in * scale)), with
    PyTorch's modes 'nearest', 'nearest-exact', 'linear' (3-D) and 'bilinear' (4-D, align_corners False/True).

    Example:
        >>> F.interpolate(x, scale_factor=2, mode="bilinear", align_corners=False)
    """
    linear = mode in ("linear", "bilinear", "bicubic", "trilinear")
    if align_corners is not None and not linear:
        raise ValueError("align_corners option can only be set with the interpolating modes: "
                         "linear | bilinear | bicubic | trilinear")
    align = bool(align_corners) if linear else False
    dim = input.ndim - 2
    if size is not None and scale_factor is not None:
        raise ValueError("only one of size or scale_factor should be defined")
    if size is not None:
        if isinstance(size, (list, tuple)):
            if len(size) != dim:
                raise ValueError(f"Input and output must have the same number of spatial dimensions, but got input "
                                 f"with spatial dimensions of {list(input.shape[2:])} and output size of {size}. "
                                 f"Please provide input tensor in (N, C, d1, d2, ...,dK) format and output size in "
                                 f"(o1, o2, ...,oK) format.")
            out = [int(s) for s in size]
        else:
            out = [int(size)] * dim
        sfs = [None] * dim
    elif scale_factor is not None:
        if isinstance(scale_factor, (list, tuple)):
            if len(scale_factor) != dim:
                raise ValueError(f"Input and scale_factor must have the same number of spatial dimensions, but got "
                                 f"input with spatial dimensions of {list(input.shape[2:])} and scale_factor of "
                                 f"shape {scale_factor}. Please provide input tensor in (N, C, d1, d2, ...,dK) "
                                 f"format and scale_factor in (s1, s2, ...,sK) format.")
            sfs = [float(s) for s in scale_factor]
        else:
            sfs = [float(scale_factor)] * dim
        out = [int(math.floor(float(input.shape[i + 2]) * sfs[i])) for i in range(dim)]
        if recompute_scale_factor:
            sfs = [None] * dim
    else:
        raise ValueError("either size or scale_factor should be defined")
    if antialias:
        raise NotImplementedError("interpolate(antialias=True) is not supported by rawdev")
    want = {"linear": 3, "bilinear": 4, "bicubic": 4, "trilinear": 5}
    if mode in want and input.ndim != want[mode]:
        raise NotImplementedError(f"Got {input.ndim}D input, but {mode} mode needs {want[mode]}D input")
    if mode not in ("nearest", "nearest-exact", "linear", "bilinear"):
        raise NotImplementedError(f"interpolate: mode {mode!r} is not supported by rawdev (nearest, nearest-exact, "
                                  f"linear, bilinear are)")
    if input.ndim not in (3, 4):
        raise NotImplementedError(f"interpolate: rawdev supports 3-D and 4-D inputs (got {input.ndim}D input)")
    if any(o <= 0 for o in out):
        got_in, got_out = ", ".join(map(str, input.shape[2:])), ", ".join(map(str, out))
        raise RuntimeError(f"Input and output sizes should be greater than 0, but got input ({got_in}) and output "
                           f"({got_out})")
    ins = list(input.shape[2:])
    if dim == 1:
        ins, out, sfs = [1] + ins, [1] + out, [None] + sfs
    # PyTorch's source coordinates are computed in the input's precision (float32, or float64 for float64)
    wide = input.dtype is _dt.float64
    scales = tuple(float(_scale(i, o, s, align, linear) if wide else np.float32(_scale(i, o, s, align, linear)))
                   for i, o, s in zip(ins, out, sfs))
    kind = "bilinear" if linear else "nearest"
    flag = align if linear else mode == "nearest-exact"
    y = _Interp.apply(input, tuple(out), scales, kind, flag)
    if y.grad_fn is not None:
        y.grad_fn.rename(_NODE[(mode, dim)])
    return y


declare("interpolate", interpolate, family="resample", functional=True, method=False, torch=False)


def upsample(input, size=None, scale_factor=None, mode="nearest", align_corners=None):  # noqa: A002
    """Deprecated in PyTorch in favour of interpolate (same arguments)."""
    warnings.warn("`nn.functional.upsample` is deprecated. Use `nn.functional.interpolate` instead.", stacklevel=2)
    return interpolate(input, size, scale_factor, mode, align_corners)


def upsample_nearest(input, size=None, scale_factor=None):  # noqa: A002
    """Deprecated in PyTorch: interpolate(..., mode='nearest')."""
    warnings.warn("`nn.functional.upsample_nearest` is deprecated. Use `nn.functional.interpolate` instead.",
                  stacklevel=2)
    return interpolate(input, size, scale_factor, mode="nearest")


def upsample_bilinear(input, size=None, scale_factor=None):  # noqa: A002
    """Deprecated in PyTorch: interpolate(..., mode='bilinear', align_corners=True)."""
    warnings.warn("`nn.functional.upsample_bilinear` is deprecated. Use `nn.functional.interpolate` instead.",
                  stacklevel=2)
    return interpolate(input, size, scale_factor, mode="bilinear", align_corners=True)


for _f in (upsample, upsample_nearest, upsample_bilinear):
    declare(_f.__name__, _f, family="resample", functional=True, method=False, torch=False)


# ------------------------------------------------------------------ pad
class _ConstantPad(Function):
    node_name = "ConstantPadNdBackward0"

    @staticmethod
    def forward(ctx, x, pads, value):
        shape = list(x.shape)
        sl = [slice(None)] * x.ndim
        for k in range(len(pads) // 2):
            d = x.ndim - 1 - k
            lo, hi = pads[2 * k], pads[2 * k + 1]
            shape[d] += lo + hi
            sl[d] = slice(lo, lo + x.shape[d])
        B = backend("pad", x)
        y = B.full(tuple(shape), value, x.dtype, x.device)
        with no_grad():
            if x.numel():
                y[tuple(sl)] = x
        ctx.sl = tuple(sl)
        return y

    @staticmethod
    def backward(ctx, g):
        return g[ctx.sl].contiguous(), None, None


def _pad_index(n, lo, hi, mode, dim, shape):
    if mode == "reflect" and (lo >= n or hi >= n):
        raise RuntimeError(f"Argument #4: Padding size should be less than the corresponding input dimension, but "
                           f"got: padding ({lo}, {hi}) at dimension {dim} of input {list(shape)}")
    if mode == "circular" and (lo > n or hi > n):
        raise RuntimeError("Padding value causes wrapping around more than once.")
    i = np.arange(-lo, n + hi)
    if mode == "reflect":
        i = np.abs(i)
        i = np.where(i > n - 1, 2 * (n - 1) - i, i)
    elif mode == "replicate":
        i = np.clip(i, 0, n - 1)
    else:
        i = i % n
    return i


def pad(input, pad, mode="constant", value=None):  # noqa: A002
    """Pad the last len(pad) // 2 dims: pad = (last_lo, last_hi, second_last_lo, ...); mode 'constant' (value,
    default 0), 'reflect', 'replicate' or 'circular'. Negative constant padding crops.

    Example:
        >>> F.pad(x, (1, 1, 2, 0), mode="constant", value=0.5)
    """
    pads = [int(p) for p in pad]
    if len(pads) % 2:
        raise RuntimeError("Padding length must be divisible by 2")
    if len(pads) // 2 > input.ndim:
        raise RuntimeError(f"Padding length should be less than or equal to two times the input dimension but got "
                           f"padding length {len(pads)} and input of dimension {input.ndim}")
    if mode == "constant":
        x = input
        if any(p < 0 for p in pads):           # negative padding crops first
            for k in range(len(pads) // 2):
                d = x.ndim - 1 - k
                lo, hi = min(pads[2 * k], 0), min(pads[2 * k + 1], 0)
                if lo or hi:
                    x = x.narrow(d, -lo, x.shape[d] + lo + hi)
            pads = [max(p, 0) for p in pads]
        out = _ConstantPad.apply(x, tuple(pads), 0 if value is None else value)
        return out
    if value is not None and value != 0:
        raise ValueError(f'Padding mode "{mode}" doesn\'t take in value argument.')
    if mode not in ("reflect", "replicate", "circular"):
        raise NotImplementedError(f"pad: mode {mode!r} is not supported (constant, reflect, replicate, circular)")
    k = len(pads) // 2
    if k > 3 or input.ndim not in (k + 1, k + 2):
        raise NotImplementedError(f"Only 2D, 3D, 4D, 5D padding with non-constant padding are supported for now "
                                  f"(padding {k} dim(s) needs a {k + 1}D or {k + 2}D input, got {input.ndim}D)")
    from ...tensor.factory import tensor
    x = input
    for j in range(k):
        d = x.ndim - 1 - j
        lo, hi = pads[2 * j], pads[2 * j + 1]
        if lo == 0 and hi == 0:
            continue
        idx = _pad_index(x.shape[d], lo, hi, mode, d, input.shape)
        x = x.index_select(d, tensor(idx, dtype=_dt.int64, device=x.device))
    if x.grad_fn is not None and x is not input:
        name = {"reflect": "ReflectionPad", "replicate": "ReplicationPad", "circular": "CircularPad"}[mode]
        x.grad_fn.rename(f"{name}{k}DBackward0" if mode != "circular" else "IndexSelectBackward0")
    return x


declare("pad", pad, family="resample", functional=True, method=False, torch=False)


# ------------------------------------------------------------------ pixel_shuffle
def pixel_shuffle(input, upscale_factor):  # noqa: A002
    """[*, C*r*r, H, W] -> [*, C, H*r, W*r] (PyTorch's sub-pixel convolution rearrangement)."""
    r = int(upscale_factor)
    if input.ndim < 3:
        raise RuntimeError(f"pixel_shuffle expects input to have at least 3 dimensions, but got input with "
                           f"{input.ndim} dimension(s)")
    if r <= 0:
        raise RuntimeError(f"pixel_shuffle expects a positive upscale_factor, but got {r}")
    *lead, C, H, W = input.shape
    if C % (r * r):
        raise RuntimeError(f"pixel_shuffle expects its input's 'channel' dimension to be divisible by the square of "
                           f"upscale_factor, but input.size(-3)={C} is not divisible by {r * r}")
    k = len(lead)
    x = input.reshape(*lead, C // (r * r), r, r, H, W)
    x = x.permute(*range(k), k, k + 3, k + 1, k + 4, k + 2)
    return x.reshape(*lead, C // (r * r), H * r, W * r)


def pixel_unshuffle(input, downscale_factor):  # noqa: A002
    """[*, C, H*r, W*r] -> [*, C*r*r, H, W], the inverse of pixel_shuffle."""
    r = int(downscale_factor)
    if input.ndim < 3:
        raise RuntimeError(f"pixel_unshuffle expects input to have at least 3 dimensions, but got input with "
                           f"{input.ndim} dimension(s)")
    if r <= 0:
        raise RuntimeError(f"pixel_unshuffle expects a positive downscale_factor, but got {r}")
    *lead, C, H, W = input.shape
    if H % r:
        raise RuntimeError(f"pixel_unshuffle expects height to be divisible by downscale_factor, but input.size(-2)="
                           f"{H} is not divisible by {r}")
    if W % r:
        raise RuntimeError(f"pixel_unshuffle expects width to be divisible by downscale_factor, but input.size(-1)="
                           f"{W} is not divisible by {r}")
    k = len(lead)
    x = input.reshape(*lead, C, H // r, r, W // r, r)
    x = x.permute(*range(k), k, k + 2, k + 4, k + 1, k + 3)
    return x.reshape(*lead, C * r * r, H // r, W // r)


def channel_shuffle(input, groups):  # noqa: A002
    """Interleave the channels of `groups` groups: [N, g·k, *] viewed as [N, g, k, *], transposed to [N, k, g, *].

    Example:
        >>> F.channel_shuffle(torch.arange(4.).reshape(1, 4, 1, 1), 2).flatten()
        tensor([0., 2., 1., 3.])
    """
    n, c = input.shape[0], input.shape[1]
    if groups <= 0:
        raise ValueError(f"Number of groups to divide channels in must be positive. Value of groups:{groups}")
    if c % groups:
        raise ValueError(f"Number of channels must be divisible by groups. Got {c} channels and {groups} groups.")
    rest = tuple(input.shape[2:])
    return input.reshape(n, groups, c // groups, *rest).transpose(1, 2).reshape(n, c, *rest)


declare("pixel_shuffle", pixel_shuffle, family="resample", functional=True, method=False)
declare("pixel_unshuffle", pixel_unshuffle, family="resample", functional=True, method=False)
declare("channel_shuffle", channel_shuffle, family="resample", functional=True, torch=False, method=False)
