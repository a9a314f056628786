"""Convolution and pooling: conv1d/conv2d, conv_transpose1d/2d, max/avg pooling (plain and adaptive).

batch_norm lives in the normalization family (rawdev/ops/normalization/).

Convolution is im2col + GEMM on both devices. im2col copies the (padded, strided, dilated) input patches into
cols [C·KH·KW, N·OH·OW], so the convolution is one GEMM per group, weight[O, C·KH·KW] · cols. The price is that
buffer: C·KH·KW·N·OH·OW·4 bytes on the device for the length of the op (a 3x3 conv of 32 channels over a batch
of 64 28x28 images: 288·64·784·4 B = 58 MB). It is freed when the op returns and recomputed in the backward
rather than kept, so the graph does not hold it between forward and backward. The reason for im2col over an
implicit GEMM: the GEMM kernels (and their tuning) are shared with matmul, and the two small kernels around them
are easy to check. Its adjoint col2im gives the input's gradient without atomics (each input element gathers
the column entries it fed), so conv backward is deterministic.

A transposed convolution is the adjoint of a convolution: its forward is conv's input-gradient (GEMM + col2im)
and its backward is conv's forward, with the same weight layout PyTorch uses, [C_in, C_out/groups, KH, KW].

1-d forms run as 2-d with height 1. Pooling kernels index windows directly (no im2col); max pooling records
the flat h·W+w of each window's maximum, which is what return_indices gives and what the backward scatters to.
"""
import numpy as np

from ..autograd.function import Function
from ..tensor.core import Tensor
from ..tensor.factory import tensor
from . import shape as _shape
from .dispatch import backend, backend_of
from .join import cat
from .registry import declare


def _tuple(v, n, name="value"):
    if isinstance(v, (tuple, list)):
        if len(v) == 1:
            return tuple(int(v[0]) for _ in range(n))
        if len(v) != n:
            raise RuntimeError(f"expected {name} to be a single integer value or a list of {n} values to match "
                               f"the convolution dimensions, but got {name}={list(v)}")
        return tuple(int(e) for e in v)
    return (int(v),) * n


# ------------------------------------------------------------------ the GEMM around im2col / col2im
def _rows(y4):
    """[N, O, OH, OW] -> [O, N·OH·OW] (a copy): the layout the GEMM writes and reads."""
    n, co = y4.shape[:2]
    return y4.reshape(n, co, -1).permute(1, 0, 2).reshape(co, -1)


def _unrows(Y, N, OH, OW):
    co = Y.shape[0]
    return Y.reshape(co, N, OH * OW).permute(1, 0, 2).reshape(N, co, OH, OW)


def _grouped(B, mats_a, mats_b, groups, ta=False, tb=False):
    """cat over g of gemm(a_g, b_g): a's and b's row blocks are the groups."""
    ga, gb = mats_a.shape[0] // groups, mats_b.shape[0] // groups
    parts = [B.gemm(mats_a[i * ga:(i + 1) * ga], mats_b[i * gb:(i + 1) * gb], ta=ta, tb=tb)
             for i in range(groups)]
    return parts[0] if groups == 1 else cat(parts, 0)


def _conv_fwd(x, w, geom, groups):
    """y[N, O, OH, OW] = conv(x, w) for geom = (N, C, H, W, KH, KW, SH, SW, PH, PW, DH, DW, OH, OW)."""
    B = backend_of(x)
    cols = B.im2col(x.contiguous(), geom)
    Y = _grouped(B, w.reshape(w.shape[0], -1).contiguous(), cols, groups)
    del cols
    return _unrows(Y, geom[0], geom[12], geom[13])


def _conv_bwd_data(dy, w, geom, groups):
    """dx[N, C, H, W] of conv(x, w) given dy[N, O, OH, OW] (GEMM with wᵀ, then col2im)."""
    B = backend_of(dy)
    dcols = _grouped(B, w.reshape(w.shape[0], -1).contiguous(), _rows(dy), groups, ta=True)
    return B.col2im(dcols, geom)


def _conv_bwd_weight(x, dy, geom, groups, wshape):
    """dw of conv(x, w) given dy: dy_rows · colsᵀ per group."""
    B = backend_of(dy)
    cols = B.im2col(x.contiguous(), geom)
    return _grouped(B, _rows(dy), cols, groups, tb=True).reshape(wshape)


def _bias_add(y, b):
    return y if b is None else y + b.reshape(1, -1, 1, 1)


class _Conv(Function):
    """conv2d (transposed=False) or conv_transpose2d (True); geom always describes the plain convolution —
    for the transposed one, the convolution from its output back to its input."""
    node_name = "ConvolutionBackward0"

    @staticmethod
    def forward(ctx, x, w, b, geom, groups, transposed):
        backend("conv2d", x, w, b)      # one device, a dtype the backend has
        ctx.save_for_backward(x, w)
        ctx.geom, ctx.groups, ctx.transposed, ctx.has_bias = geom, groups, transposed, b is not None
        y = _conv_bwd_data(x, w, geom, groups) if transposed else _conv_fwd(x, w, geom, groups)
        return _bias_add(y, b)

    @staticmethod
    def backward(ctx, g):
        x, w = ctx.saved_tensors
        geom, groups, need = ctx.geom, ctx.groups, ctx.needs_input_grad
        g = g.contiguous()
        dx = dw = db = None
        if ctx.transposed:
            if need[0]:
                dx = _conv_fwd(g, w, geom, groups)
            if need[1]:
                dw = _conv_bwd_weight(g, x, geom, groups, tuple(w.shape))
        else:
            if need[0]:
                dx = _conv_bwd_data(g, w, geom, groups)
            if need[1]:
                dw = _conv_bwd_weight(x, g, geom, groups, tuple(w.shape))
        if ctx.has_bias and need[2]:
            db = backend_of(g).sum_dims(g, (0, 2, 3))
        return dx, dw, db, None, None, None

    @staticmethod
    def backward_graph(ctx, g):
        """create_graph=True: the same three products, each a recorded node. With F the convolution, D its input
        gradient (the transposed convolution) and W its weight gradient, conv's backward is (D(g, w), W(x, g)),
        the transposed one's (F(g, w), W(g, x)); F and D are _Conv itself, W is _ConvWeightGrad."""
        x, w = ctx.saved_tensors
        geom, groups, need = ctx.geom, ctx.groups, ctx.needs_input_grad
        g = g.contiguous()
        dx = dw = db = None
        if need[0]:
            dx = _Conv.apply(g, w, None, geom, groups, not ctx.transposed)
        if need[1]:
            a, b = (g, x) if ctx.transposed else (x, g)
            dw = _ConvWeightGrad.apply(a, b, geom, groups, tuple(w.shape))
        if ctx.has_bias and need[2]:
            db = g.sum((0, 2, 3))
        return dx, dw, db, None, None, None


class _ConvWeightGrad(Function):
    """W(x, g), the convolution's weight gradient, as a node (create_graph=True). It is bilinear:
    <h, W(x, g)> = <F(x, h), g>, so its backward is (D(g, h), F(x, h)), both _Conv nodes."""
    node_name = "ConvolutionBackwardBackward0"
    differentiable_backward = True

    @staticmethod
    def forward(ctx, x, g, geom, groups, wshape):
        ctx.save_for_backward(x, g)
        ctx.geom, ctx.groups = geom, groups
        return _conv_bwd_weight(x, g.contiguous(), geom, groups, wshape)

    @staticmethod
    def backward(ctx, h):
        x, g = ctx.saved_tensors
        dx = _Conv.apply(g.contiguous(), h, None, ctx.geom, ctx.groups, True) if ctx.needs_input_grad[0] else None
        dg = _Conv.apply(x, h, None, ctx.geom, ctx.groups, False) if ctx.needs_input_grad[1] else None
        return dx, dg, None, None, None


def _batched(input, dims, op):  # noqa: A002
    """(input with a batch dim, whether one was added): PyTorch's unbatched inputs."""
    if input.ndim == dims + 1:
        return input.unsqueeze(0), True
    if input.ndim != dims + 2:
        raise RuntimeError(f"Expected {dims + 1}D (unbatched) or {dims + 2}D (batched) input to {op}, but got "
                           f"input of size: {list(input.shape)}")
    return input, False


def _same_padding(k, d, s, op):
    if any(si != 1 for si in s):
        raise ValueError("padding='same' is not supported for strided convolutions")
    total = [di * (ki - 1) for ki, di in zip(k, d)]
    return [t // 2 for t in total], [t - t // 2 for t in total]


def _convnd(input, weight, bias, stride, padding, dilation, groups, dims, op):  # noqa: A002
    if not isinstance(input, Tensor) or not isinstance(weight, Tensor):
        raise TypeError(f"{op}() expected Tensor arguments for input and weight")
    x, unbatched = _batched(input, dims, op)
    if weight.ndim != dims + 2:
        raise RuntimeError(f"weight should have {dims + 2} dimensions for {op}, but got weight of size "
                           f"{list(weight.shape)}")
    k = tuple(weight.shape[2:])
    s, d = _tuple(stride, dims, "stride"), _tuple(dilation, dims, "dilation")
    if isinstance(padding, str):
        if padding == "valid":
            lo = hi = [0] * dims
        elif padding == "same":
            lo, hi = _same_padding(k, d, s, op)
        else:
            raise ValueError(f"Invalid padding string '{padding}', should be one of ['valid', 'same']")
    else:
        lo = hi = list(_tuple(padding, dims, "padding"))
    if any(si <= 0 for si in s):
        raise RuntimeError("non-positive stride is not supported")
    if any(p < 0 for p in lo):
        raise RuntimeError("negative padding is not supported")
    C = x.shape[1]
    if groups <= 0:
        raise RuntimeError("non-positive groups is not supported")
    if C != weight.shape[1] * groups:
        raise RuntimeError(f"Given groups={groups}, weight of size {list(weight.shape)}, expected input"
                           f"{list(x.shape)} to have {weight.shape[1] * groups} channels, but got {C} channels "
                           f"instead")
    if weight.shape[0] % groups:
        raise RuntimeError(f"Given groups={groups}, expected weight to be divisible by {groups} at dimension 0, "
                           f"but got weight of size {list(weight.shape)} instead")
    if bias is not None and tuple(bias.shape) != (weight.shape[0],):
        raise RuntimeError(f"Given weight of size {list(weight.shape)}, expected bias to be 1-dimensional with "
                           f"{weight.shape[0]} elements, but got bias of size {list(bias.shape)} instead")
    sp = tuple(x.shape[2:])
    padded = [n + a + b for n, a, b in zip(sp, lo, hi)]
    eff = [di * (ki - 1) + 1 for ki, di in zip(k, d)]
    if any(p < e for p, e in zip(padded, eff)):
        raise RuntimeError(f"Calculated padded input size per channel: ({' x '.join(map(str, padded))}). "
                           f"Kernel size: ({' x '.join(map(str, eff))}). Kernel size can't be greater than actual "
                           f"input size")
    out = [(p - e) // si + 1 for p, e, si in zip(padded, eff, s)]
    if dims == 1:       # as 2-d with height 1
        x, w = x.unsqueeze(2), weight.unsqueeze(2)
        geom = (x.shape[0], C, 1, sp[0], 1, k[0], 1, s[0], 0, lo[0], 1, d[0], 1, out[0])
        y = _Conv.apply(x, w, bias, geom, groups, False).squeeze(2)
    else:
        geom = (x.shape[0], C, sp[0], sp[1], k[0], k[1], s[0], s[1], lo[0], lo[1], d[0], d[1], out[0], out[1])
        y = _Conv.apply(x, weight, bias, geom, groups, False)
    return y.squeeze(0) if unbatched else y


def conv2d(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1):  # noqa: A002
    """2-d convolution (cross-correlation, as PyTorch) of input [N, C, H, W] (or [C, H, W]) with weight
    [O, C/groups, KH, KW]; padding an int, a pair, 'valid' or 'same'.

    Returns:
        [N, O, OH, OW], OH = (H + 2·PH − DH·(KH−1) − 1) // SH + 1.

    Example:
        >>> F.conv2d(torch.randn(8, 3, 32, 32), torch.randn(16, 3, 3, 3), padding=1).shape
        torch.Size([8, 16, 32, 32])
    """
    return _convnd(input, weight, bias, stride, padding, dilation, groups, 2, "conv2d")


def conv1d(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1):  # noqa: A002
    """1-d convolution of input [N, C, L] (or [C, L]) with weight [O, C/groups, K] (run as 2-d with height 1).

    Example:
        >>> F.conv1d(torch.randn(4, 2, 50), torch.randn(6, 2, 5)).shape
        torch.Size([4, 6, 46])
    """
    return _convnd(input, weight, bias, stride, padding, dilation, groups, 1, "conv1d")


def _conv_transposend(input, weight, bias, stride, padding, output_padding, groups, dilation, dims, op,  # noqa: A002
                      output_size=None):
    x, unbatched = _batched(input, dims, op)
    if weight.ndim != dims + 2:
        raise RuntimeError(f"weight should have {dims + 2} dimensions for {op}, but got weight of size "
                           f"{list(weight.shape)}")
    k = tuple(weight.shape[2:])
    s, d = _tuple(stride, dims, "stride"), _tuple(dilation, dims, "dilation")
    p, op_ = _tuple(padding, dims, "padding"), _tuple(output_padding, dims, "output_padding")
    C = x.shape[1]
    if C != weight.shape[0]:
        raise RuntimeError(f"Given transposed=1, weight of size {list(weight.shape)}, expected input"
                           f"{list(x.shape)} to have {weight.shape[0]} channels, but got {C} channels instead")
    if C % groups:
        raise RuntimeError(f"Given groups={groups}, expected weight to be divisible by {groups} at dimension 0, "
                           f"but got weight of size {list(weight.shape)} instead")
    for o, si, di in zip(op_, s, d):
        if o >= si and o >= di:
            raise RuntimeError("output padding must be smaller than either stride or dilation, but got "
                               f"output_padding: {list(op_)}, stride: {list(s)}, dilation: {list(d)}")
    co = weight.shape[1] * groups
    sp = tuple(x.shape[2:])
    out = [(n - 1) * si - 2 * pi + di * (ki - 1) + oi + 1 for n, si, pi, di, ki, oi in zip(sp, s, p, d, k, op_)]
    if output_size is not None:
        want = [int(e) for e in list(output_size)[-dims:]]
        for i, (w_, o) in enumerate(zip(want, out)):
            if not o - op_[i] <= w_ < o - op_[i] + max(s[i], d[i]):
                raise ValueError(f"requested an output size of {want}, but valid sizes range from "
                                 f"{[a - b for a, b in zip(out, op_)]} (for an input of {list(sp)})")
        out = want
    if any(o <= 0 for o in out):
        raise RuntimeError(f"Given input size per channel: ({' x '.join(map(str, sp))}). Calculated output size "
                           f"per channel: ({' x '.join(map(str, out))}). Output size is too small")
    if bias is not None and tuple(bias.shape) != (co,):
        raise RuntimeError(f"Given transposed=1, weight of size {list(weight.shape)}, expected bias to be "
                           f"1-dimensional with {co} elements, but got bias of size {list(bias.shape)} instead")
    # geom: the convolution from the transposed conv's output [N, O, out] back to its input [N, C, sp]
    if dims == 1:
        x, w = x.unsqueeze(2), weight.unsqueeze(2)
        geom = (x.shape[0], co, 1, out[0], 1, k[0], 1, s[0], 0, p[0], 1, d[0], 1, sp[0])
        y = _Conv.apply(x, w, bias, geom, groups, True).squeeze(2)
    else:
        geom = (x.shape[0], co, out[0], out[1], k[0], k[1], s[0], s[1], p[0], p[1], d[0], d[1], sp[0], sp[1])
        y = _Conv.apply(x, weight, bias, geom, groups, True)
    return y.squeeze(0) if unbatched else y


def conv_transpose2d(input, weight, bias=None, stride=1, padding=0, output_padding=0, groups=1,  # noqa: A002
                     dilation=1):
    """2-d transposed convolution ("deconvolution"): the adjoint of conv2d; weight [C_in, C_out/groups, KH, KW].

    Returns:
        [N, C_out, OH, OW], OH = (H−1)·SH − 2·PH + DH·(KH−1) + output_padding + 1.

    Example:
        >>> F.conv_transpose2d(torch.randn(1, 4, 7, 7), torch.randn(4, 2, 4, 4), stride=2, padding=1).shape
        torch.Size([1, 2, 14, 14])
    """
    return _conv_transposend(input, weight, bias, stride, padding, output_padding, groups, dilation, 2,
                             "conv_transpose2d")


def conv_transpose1d(input, weight, bias=None, stride=1, padding=0, output_padding=0, groups=1,  # noqa: A002
                     dilation=1):
    """1-d transposed convolution; weight [C_in, C_out/groups, K]."""
    return _conv_transposend(input, weight, bias, stride, padding, output_padding, groups, dilation, 1,
                             "conv_transpose1d")


for _name, _fn in (("conv1d", conv1d), ("conv2d", conv2d), ("conv_transpose1d", conv_transpose1d),
                   ("conv_transpose2d", conv_transpose2d)):
    declare(_name, _fn, family="conv", functional=True, method=False)


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

        from ..autograd.function import linear_backward
        from ..tensor.factory import from_numpy
        from .index import index_select
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
        from ..autograd.function import linear_backward
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


# ------------------------------------------------------------------ unfold / fold (the im2col pair)
def _fold_geom(N, C, H, W, kernel_size, dilation, padding, stride):
    KH, KW = _tuple(kernel_size, 2, "kernel_size")
    DH, DW = _tuple(dilation, 2, "dilation")
    PH, PW = _tuple(padding, 2, "padding")
    SH, SW = _tuple(stride, 2, "stride")
    OH = (H + 2 * PH - DH * (KH - 1) - 1) // SH + 1
    OW = (W + 2 * PW - DW * (KW - 1) - 1) // SW + 1
    return (N, C, H, W, KH, KW, SH, SW, PH, PW, DH, DW, OH, OW)


def _cols_to_blocks(cols, geom):
    """im2col's [C·KH·KW, N·L] -> unfold's [N, C·KH·KW, L]."""
    N, L = geom[0], geom[12] * geom[13]
    return cols.reshape(cols.shape[0], N, L).permute(1, 0, 2).contiguous()


def _blocks_to_cols(blocks, geom):
    N, L = geom[0], geom[12] * geom[13]
    return blocks.permute(1, 0, 2).reshape(blocks.shape[1], N * L).contiguous()


class _Unfold(Function):
    node_name = "Im2ColBackward0"

    @staticmethod
    def forward(ctx, x, geom):
        ctx.geom = geom
        return _cols_to_blocks(backend_of(x).im2col(x.contiguous(), geom), geom)

    @staticmethod
    def backward(ctx, g):
        return backend_of(g).col2im(_blocks_to_cols(g, ctx.geom), ctx.geom), None


class _Fold(Function):
    node_name = "Col2ImBackward0"

    @staticmethod
    def forward(ctx, blocks, geom):
        ctx.geom = geom
        return backend_of(blocks).col2im(_blocks_to_cols(blocks, geom), geom)

    @staticmethod
    def backward(ctx, g):
        return _cols_to_blocks(backend_of(g).im2col(g.contiguous(), ctx.geom), ctx.geom), None


def unfold(input, kernel_size, dilation=1, padding=0, stride=1):  # noqa: A002
    """Sliding blocks of a [N, C, H, W] (or [C, H, W]) input as columns: [N, C·kh·kw, L], L the number of
    block positions (im2col; its gradient is col2im)."""
    if input.ndim not in (3, 4):
        raise RuntimeError(f"Input Error: Only 3D or 4D input Tensors are supported (got {input.ndim}D)")
    x = input if input.ndim == 4 else input.unsqueeze(0)
    N, C, H, W = x.shape
    geom = _fold_geom(N, C, H, W, kernel_size, dilation, padding, stride)
    if geom[12] <= 0 or geom[13] <= 0:
        raise RuntimeError(f"Given input with spatial size ({H}, {W}), kernel_size={kernel_size}, dilation="
                           f"{dilation}, padding={padding}, calculated shape of the array of sliding blocks as "
                           f"({geom[12]}, {geom[13]}), but its components must be at least one.")
    out = _Unfold.apply(x, geom)
    return out if input.ndim == 4 else out.squeeze(0)


def fold(input, output_size, kernel_size, dilation=1, padding=0, stride=1):  # noqa: A002
    """The inverse layout of unfold: columns [N, C·kh·kw, L] summed back into [N, C, H, W] (overlapping
    positions add up; col2im, whose gradient is im2col)."""
    if input.ndim not in (2, 3):
        raise RuntimeError(f"Input Error: Only unbatched (2D) or batched (3D) input Tensors are supported "
                           f"(got {input.ndim}D)")
    b = input if input.ndim == 3 else input.unsqueeze(0)
    N, CK, L = b.shape
    KH, KW = _tuple(kernel_size, 2, "kernel_size")
    if CK % (KH * KW):
        raise RuntimeError(f"Expected size of input's dimension 1 to be divisible by the product of kernel_size, "
                           f"but got input.size(1)={CK} and kernel_size=({KH}, {KW})")
    H, W = _tuple(output_size, 2, "output_size")
    geom = _fold_geom(N, CK // (KH * KW), H, W, kernel_size, dilation, padding, stride)
    if geom[12] * geom[13] != L:
        raise RuntimeError(f"Given output_size=({H}, {W}), kernel_size=({KH}, {KW}), dilation={dilation}, padding="
                           f"{padding}, stride={stride}, expected size of input's dimension 2 to match the "
                           f"calculated number of sliding blocks {geom[12]} * {geom[13]} = {geom[12] * geom[13]}, "
                           f"but got input.size(2)={L}.")
    out = _Fold.apply(b.contiguous(), geom)
    return out if input.ndim == 3 else out.squeeze(0)


declare("unfold", unfold, family="conv", functional=True, method=_shape.tensor_unfold, torch=False)
declare("fold", fold, family="conv", functional=True, method=False, torch=False)
