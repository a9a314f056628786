"""Convolution: conv1d/conv2d, conv_transpose1d/2d and the im2col pair unfold/fold (pooling: pooling.py; the
3-d forms: conv3d.py).

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

1-d forms run as 2-d with height 1.
"""

from ...autograd.function import Function
from ...tensor.core import Tensor
from .. import slice_views as _slice_views
from ..dispatch import backend, backend_of
from ..join import cat
from ..registry import declare


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


declare("unfold", unfold, family="conv", functional=True, method=_slice_views.tensor_unfold, torch=False)
declare("fold", fold, family="conv", functional=True, method=False, torch=False)
