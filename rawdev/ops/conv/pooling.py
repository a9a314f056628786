"""Pooling: max and average pooling, plain and adaptive, in 1-d and 2-d (1-d runs as 2-d with height 1).

The kernels index windows directly (no im2col); max pooling records the flat h·W+w of each window's maximum,
which is what return_indices gives and what the backward scatters to. The window arithmetic (output size, ceil
mode, padding checks) is PyTorch's, with its error wording.
"""
import numpy as np

from ...autograd.function import Function
from ...tensor.factory import tensor
from ..dispatch import backend, backend_of
from ..registry import declare
from .functions import _tuple


# ------------------------------------------------------------------ pooling
class _MaxPool(Function):
    node_name = "MaxPool2DWithIndicesBackward0"

    @staticmethod
    def forward(ctx, x, geom, adaptive, indices_out):
        y, idx = backend("max_pool2d", x).max_pool2d(x.contiguous(), geom, adaptive)
        ctx.save_for_backward(idx)
        ctx.geom = geom
        indices_out.append(idx)
        return y

    @staticmethod
    def backward(ctx, g):
        (idx,) = ctx.saved_tensors
        return backend_of(g).max_pool2d_bwd(g.contiguous(), idx, ctx.geom), None, None, None

    @staticmethod
    def backward_graph(ctx, g):   # linear in g: the adjoint picks gg at the recorded argmax positions
        import numpy as np

        from ...autograd.function import linear_backward
        from ...tensor.factory import from_numpy
        from ..index_along_dim.functions import index_select
        (idx,) = ctx.saved_tensors
        geom = ctx.geom
        N, C, H, W = geom[:4]
        plane = np.arange(N * C, dtype=np.int64).reshape(N, C, 1, 1) * (H * W)
        flat = from_numpy(np.ascontiguousarray(np.asarray(idx.cpu()) + plane).reshape(-1)).to(idx.device)

        def bwd(t):
            return backend_of(t).max_pool2d_bwd(t.contiguous(), idx, geom)

        def adj(gg):
            return index_select(gg.reshape(-1), 0, flat).reshape(tuple(idx.shape))
        return linear_backward(g, bwd, adj), None, None, None


class _AvgPool(Function):
    node_name = "AvgPool2DBackward0"

    @staticmethod
    def forward(ctx, x, geom, adaptive, count_pad):
        ctx.geom, ctx.adaptive, ctx.count_pad = geom, adaptive, count_pad
        return backend("avg_pool2d", x).avg_pool2d(x.contiguous(), geom, adaptive, count_pad)

    @staticmethod
    def backward(ctx, g):
        return backend_of(g).avg_pool2d_bwd(g.contiguous(), ctx.geom, ctx.adaptive, ctx.count_pad), None, None, None

    @staticmethod
    def backward_graph(ctx, g):   # linear in g: the adjoint of the spreading is the pooling again
        from ...autograd.function import linear_backward
        geom, adaptive, count_pad = ctx.geom, ctx.adaptive, ctx.count_pad

        def bwd(t):
            return backend_of(t).avg_pool2d_bwd(t.contiguous(), geom, adaptive, count_pad)
        return linear_backward(g, bwd, lambda gg: _AvgPool.apply(gg, geom, adaptive, count_pad)), None, None, None


def _pool_out(n, k, s, p, d, ceil_mode):
    eff = d * (k - 1) + 1
    num = n + 2 * p - eff
    o = (-(-num // s) if ceil_mode else num // s) + 1
    if ceil_mode and (o - 1) * s >= n + p:      # the last window must start inside the input or left padding
        o -= 1
    return o


def _pool_geom(x4, kernel_size, stride, padding, dilation, ceil_mode, dims, op, avg=False):
    k = _tuple(kernel_size, dims, "kernel_size")
    s = k if stride is None or (isinstance(stride, (list, tuple)) and len(stride) == 0) else _tuple(stride, dims)
    p, d = _tuple(padding, dims, "padding"), _tuple(dilation, dims, "dilation")
    if any(si <= 0 for si in s):
        raise RuntimeError(f"{op}(): stride should be greater than zero, but got stride: {list(s)}")
    if any(ki <= 0 for ki in k):
        raise RuntimeError(f"{op}(): kernel_size must be greater than zero, but got kernel_size: {list(k)}")
    for ki, pi, di in zip(k, p, d):
        if avg and pi > ki // 2:
            raise RuntimeError(f"pad should be at most half of kernel size, but got pad={pi} and kernel_size={ki}")
        if not avg and pi > (di * (ki - 1) + 1) // 2:
            raise RuntimeError(f"pad should be at most half of effective kernel size, but got pad={pi}, "
                               f"kernel_size={ki} and dilation={di}")
    sp = tuple(x4.shape[2:])[-dims:]
    out = [_pool_out(n, ki, si, pi, di, ceil_mode) for n, ki, si, pi, di in zip(sp, k, s, p, d)]
    if any(o <= 0 for o in out):
        raise RuntimeError(f"Given input size: ({'x'.join(map(str, x4.shape[1:]))}). Calculated output size: "
                           f"({'x'.join(map(str, [x4.shape[1]] + out))}). Output size is too small")
    if dims == 1:
        k, s, p, d, sp, out = (1,) + k, (1,) + s, (0,) + p, (1,) + d, (1,) + sp, [1] + out
    return (x4.shape[0], x4.shape[1], sp[0], sp[1], k[0], k[1], s[0], s[1], p[0], p[1], d[0], d[1], out[0], out[1])


def _as4(input, dims, op):  # noqa: A002
    """input as [N, C, H, W] (1-d: height 1), and how to shape the result back."""
    if input.ndim not in (dims + 1, dims + 2):
        raise RuntimeError(f"{op}: Expected {dims + 1}D or {dims + 2}D (batch mode) tensor for input, but got: "
                           f"{list(input.shape)}" if dims == 2 else
                           f"{op}() Expected {dims + 1}D or {dims + 2}D input tensor, but got {list(input.shape)}")
    if any(n == 0 for n in input.shape[input.ndim - dims - 1 + (input.ndim == dims + 2):]):
        raise RuntimeError(f"{op}: Expected input's non-batch dimensions to have positive length, but input has "
                           f"a shape of {list(input.shape)}")
    x = input.unsqueeze(0) if input.ndim == dims + 1 else input
    if dims == 1:
        x = x.unsqueeze(2)
    unbatched = input.ndim == dims + 1

    def back(t):
        if dims == 1:
            t = t.squeeze(2)
        return t.squeeze(0) if unbatched else t
    return x, back


def _max_pool(input, kernel_size, stride, padding, dilation, ceil_mode, return_indices, dims, op):  # noqa: A002
    x, back = _as4(input, dims, op)
    geom = _pool_geom(x, kernel_size, stride, padding, dilation, ceil_mode, dims, op)
    box = []
    y = back(_MaxPool.apply(x, geom, False, box))
    if return_indices:
        return y, back(box[0])     # 1-d: the flat h·W+w with h = 0 is the position along the length
    return y


def max_pool2d(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False,  # noqa: A002
               return_indices=False):
    """Max over each window of input [N, C, H, W] (or [C, H, W]); stride defaults to kernel_size.

    Returns:
        the pooled tensor, and with return_indices the flat index h·W+w of each maximum in its (H, W) plane.

    Example:
        >>> F.max_pool2d(torch.randn(1, 3, 8, 8), 2).shape
        torch.Size([1, 3, 4, 4])
    """
    return _max_pool(input, kernel_size, stride, padding, dilation, ceil_mode, return_indices, 2, "max_pool2d")


def max_pool1d(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False,  # noqa: A002
               return_indices=False):
    """Max over each window of input [N, C, L] (or [C, L]); stride defaults to kernel_size."""
    return _max_pool(input, kernel_size, stride, padding, dilation, ceil_mode, return_indices, 1, "max_pool1d")


def _avg_pool(input, kernel_size, stride, padding, ceil_mode, count_include_pad, divisor_override, dims, op):  # noqa: A002
    if divisor_override is not None:
        if divisor_override == 0:
            raise RuntimeError("divisor must be not zero")
    x, back = _as4(input, dims, op)
    geom = _pool_geom(x, kernel_size, stride, padding, 1, ceil_mode, dims, op, avg=True)
    if divisor_override is not None:   # the sum over the cells inside the input, over the override
        sums = _AvgPool.apply(x, geom, False, False) * _count_inside(x, geom)
        return back(sums / float(divisor_override))
    return back(_AvgPool.apply(x, geom, False, bool(count_include_pad)))


def _count_inside(x, geom):
    """Cells of each window inside the input, as an [1, 1, OH, OW] tensor (host arithmetic)."""
    _, _, H, W, KH, KW, SH, SW, PH, PW, _, _, OH, OW = geom
    h0 = np.arange(OH) * SH - PH
    w0 = np.arange(OW) * SW - PW
    hn = np.minimum(h0 + KH, H) - np.maximum(h0, 0)
    wn = np.minimum(w0 + KW, W) - np.maximum(w0, 0)
    return tensor((hn[:, None] * wn[None, :]).astype(np.float64), dtype=x.dtype, device=x.device).reshape(
        1, 1, OH, OW)


def avg_pool2d(input, kernel_size, stride=None, padding=0, ceil_mode=False, count_include_pad=True,  # noqa: A002
               divisor_override=None):
    """Mean over each window of input [N, C, H, W] (or [C, H, W]); count_include_pad counts the zero padding
    in the divisor; divisor_override replaces the divisor.

    Example:
        >>> F.avg_pool2d(torch.randn(1, 3, 8, 8), 2).shape
        torch.Size([1, 3, 4, 4])
    """
    return _avg_pool(input, kernel_size, stride, padding, ceil_mode, count_include_pad, divisor_override, 2,
                     "avg_pool2d")


def avg_pool1d(input, kernel_size, stride=None, padding=0, ceil_mode=False, count_include_pad=True):  # noqa: A002
    """Mean over each window of input [N, C, L] (or [C, L])."""
    return _avg_pool(input, kernel_size, stride, padding, ceil_mode, count_include_pad, None, 1, "avg_pool1d")


def _adaptive_geom(x4, output_size, dims):
    sp = tuple(x4.shape[2:])[-dims:]
    out = _tuple(output_size, dims, "output_size") if not isinstance(output_size, (tuple, list)) else \
        tuple(sp[i] if o is None else int(o) for i, o in enumerate(
            list(output_size) * (dims if len(output_size) == 1 else 1)))
    if len(out) != dims:
        raise ValueError(f"adaptive pool: output_size must be {dims}")
    if any(o < 0 for o in out):
        raise RuntimeError(f"adaptive pool: elements of output_size must be greater than or equal to 0 but "
                           f"received {list(out)}")
    if dims == 1:
        sp, out = (1,) + sp, (1,) + out
    return (x4.shape[0], x4.shape[1], sp[0], sp[1], 1, 1, 1, 1, 0, 0, 1, 1, out[0], out[1])


def adaptive_avg_pool2d(input, output_size):  # noqa: A002
    """Mean over PyTorch's adaptive windows (start ⌊o·H/OH⌋, end ⌈(o+1)·H/OH⌉) to an output of output_size
    (an int, a pair; None keeps that input size).

    Example:
        >>> F.adaptive_avg_pool2d(torch.randn(2, 8, 7, 7), 1).shape
        torch.Size([2, 8, 1, 1])
    """
    x, back = _as4(input, 2, "adaptive_avg_pool2d")
    return back(_AvgPool.apply(x, _adaptive_geom(x, output_size, 2), True, False))


def adaptive_avg_pool1d(input, output_size):  # noqa: A002
    """Mean over adaptive windows of input [N, C, L] (or [C, L]) to length output_size."""
    x, back = _as4(input, 1, "adaptive_avg_pool1d")
    return back(_AvgPool.apply(x, _adaptive_geom(x, output_size, 1), True, False))


def _adaptive_max(input, output_size, return_indices, dims, op):  # noqa: A002
    x, back = _as4(input, dims, op)
    box = []
    y = back(_MaxPool.apply(x, _adaptive_geom(x, output_size, dims), True, box))
    return (y, back(box[0])) if return_indices else y


def adaptive_max_pool2d(input, output_size, return_indices=False):  # noqa: A002
    """Max over adaptive windows to output_size; with return_indices the flat h·W+w of each maximum."""
    return _adaptive_max(input, output_size, return_indices, 2, "adaptive_max_pool2d")


def adaptive_max_pool1d(input, output_size, return_indices=False):  # noqa: A002
    """Max over adaptive windows of input [N, C, L] to length output_size."""
    return _adaptive_max(input, output_size, return_indices, 1, "adaptive_max_pool1d")


for _pname, _pfn in (("max_pool1d", max_pool1d), ("max_pool2d", max_pool2d), ("avg_pool1d", avg_pool1d),
                   ("avg_pool2d", avg_pool2d), ("adaptive_avg_pool1d", adaptive_avg_pool1d),
                   ("adaptive_avg_pool2d", adaptive_avg_pool2d), ("adaptive_max_pool1d", adaptive_max_pool1d),
                   ("adaptive_max_pool2d", adaptive_max_pool2d)):
    declare(_pname, _pfn, family="conv", functional=True, method=False)


def max_pool1d_with_indices(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False,  # noqa: A002
                            return_indices=True):
    """max_pool1d's (output, indices)."""
    return max_pool1d(input, kernel_size, stride, padding, dilation, ceil_mode, True)


def max_pool2d_with_indices(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False,  # noqa: A002
                            return_indices=True):
    """max_pool2d's (output, indices)."""
    return max_pool2d(input, kernel_size, stride, padding, dilation, ceil_mode, True)


def adaptive_max_pool1d_with_indices(input, output_size, return_indices=True):  # noqa: A002
    return adaptive_max_pool1d(input, output_size, True)


def adaptive_max_pool2d_with_indices(input, output_size, return_indices=True):  # noqa: A002
    return adaptive_max_pool2d(input, output_size, True)


for _pfn in (max_pool1d_with_indices, max_pool2d_with_indices, adaptive_max_pool1d_with_indices,
             adaptive_max_pool2d_with_indices):
    declare(_pfn.__name__, _pfn, family="conv", functional=True, torch=False, method=False)


