"""3-D convolution and pooling over [N, C, D, H, W], composed from the 2-D kernels: a 3-D window is a sum (conv,
average) or a max over its kd depth taps of 2-D windows, so each tap is one 2-D call on the depth slices that
tap reads (all output depths at once, folded into the batch or channel dimension). kd 2-D launches per layer
instead of a 3-D kernel; autograd comes from the 2-D ops. Adaptive pooling is separable (the window is a box):
depth first, then the 2-D pool."""
from ..registry import declare


def _t3(v):
    return tuple(v) if isinstance(v, (tuple, list)) else (v, v, v)


def _pad_depth(x, before, after, value=0.0):
    from ..join import cat
    if not before and not after:
        return x
    n, c, _, h, w = x.shape
    parts = []
    if before:
        parts.append(x.new_full((n, c, before, h, w), value))
    parts.append(x)
    if after:
        parts.append(x.new_full((n, c, after, h, w), value))
    return cat(parts, 2)


def _taps(x, k, stride, dilation, out_d):
    """For each depth tap j: x's depth slices j·dilation + o·stride, o < out_d ([N, C, out_d, H, W] views)."""
    return [x.narrow(2, j * dilation, (out_d - 1) * stride + 1)[:, :, ::stride] for j in range(k)]


def _batched(input, name):  # noqa: A002
    if input.ndim == 4:
        return input.unsqueeze(0), True
    if input.ndim != 5:
        raise RuntimeError(f"{name}: Expected 4D (unbatched) or 5D (batched) input, but got input of size: "
                           f"{list(input.shape)}")
    return input, False


def conv3d(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1):  # noqa: A002
    """3-D convolution: input [N, C_in, D, H, W], weight [C_out, C_in/groups, kd, kh, kw] -> [N, C_out, OD, OH, OW].

    Example:
        >>> F.conv3d(torch.ones(1, 2, 4, 5, 5), torch.ones(3, 2, 3, 3, 3)).shape
        torch.Size([1, 3, 2, 3, 3])
    """
    from .functions import conv2d
    x, unbatched = _batched(input, "conv3d")
    kd, kh, kw = weight.shape[2:]
    sd, sh, sw = _t3(stride)
    dd, dh, dw = _t3(dilation)
    if isinstance(padding, str):
        if padding == "valid":
            pd = ph = pw = 0
            pad_hw = 0
        elif padding == "same":
            if (sd, sh, sw) != (1, 1, 1):
                raise RuntimeError("padding='same' is not supported for strided convolutions")
            tot = dd * (kd - 1)
            x = _pad_depth(x, tot // 2, tot - tot // 2)
            pd = 0
            pad_hw = "same"
        else:
            raise RuntimeError(f"Invalid padding string '{padding}'")
    else:
        pd, ph, pw = _t3(padding)
        pad_hw = (ph, pw)
        x = _pad_depth(x, pd, pd)
    n, c = x.shape[0], x.shape[1]
    out_d = (x.shape[2] - dd * (kd - 1) - 1) // sd + 1
    if out_d <= 0:
        raise RuntimeError("conv3d: the input is smaller than the kernel in depth")
    out = None
    for j, xs in enumerate(_taps(x, kd, sd, dd, out_d)):
        planes = xs.permute(0, 2, 1, 3, 4).reshape(n * out_d, c, x.shape[3], x.shape[4])
        y = conv2d(planes, weight[:, :, j], None, (sh, sw), pad_hw, (dh, dw), groups)
        out = y if out is None else out + y
    oh, ow = out.shape[-2:]
    out = out.reshape(n, out_d, weight.shape[0], oh, ow).permute(0, 2, 1, 3, 4)
    if bias is not None:
        out = out + bias.reshape(1, -1, 1, 1, 1)
    return out.squeeze(0) if unbatched else out


def conv_transpose3d(input, weight, bias=None, stride=1, padding=0, output_padding=0, groups=1,  # noqa: A002
                     dilation=1):
    """3-D transposed convolution, the adjoint of conv3d: input [N, C_in, D, H, W], weight [C_in, C_out/groups,
    kd, kh, kw] -> [N, C_out, OD, OH, OW], OD = (D−1)·stride − 2·padding + dilation·(kd−1) + output_padding + 1.
    Each depth tap j is one conv_transpose2d of all input depths; its output slices land at depths
    i·stride + j·dilation of the uncropped result (zeros in between), which is then cropped by the padding.

    Example:
        >>> F.conv_transpose3d(torch.ones(1, 2, 3, 4, 4), torch.ones(2, 3, 2, 2, 2), stride=2).shape
        torch.Size([1, 3, 6, 8, 8])
    """
    from ..join import stack
    from .functions import conv_transpose2d
    x, unbatched = _batched(input, "conv_transpose3d")
    kd = weight.shape[2]
    sd, sh, sw = _t3(stride)
    pd, ph, pw = _t3(padding)
    od_, oh_, ow_ = _t3(output_padding)
    dd, dh, dw = _t3(dilation)
    n, c, d = x.shape[0], x.shape[1], x.shape[2]
    full = (d - 1) * sd + dd * (kd - 1) + 1 + od_
    planes = x.permute(0, 2, 1, 3, 4).reshape(n * d, c, x.shape[3], x.shape[4])
    out = None
    for j in range(kd):
        y = conv_transpose2d(planes, weight[:, :, j], None, (sh, sw), (ph, pw), (oh_, ow_), groups, (dh, dw))
        cout, oh, ow = y.shape[1:]
        y = y.reshape(n, d, cout, oh, ow).permute(0, 2, 1, 3, 4)          # [N, C_out, D, OH, OW]
        if sd > 1:                                                          # depth i lands at i·stride
            gap = y.new_zeros((n, cout, d, oh, ow))
            y = stack([y] + [gap] * (sd - 1), 3).reshape(n, cout, d * sd, oh, ow)[:, :, :(d - 1) * sd + 1]
        y = _pad_depth(y, j * dd, full - j * dd - y.shape[2])
        out = y if out is None else out + y
    out = out.narrow(2, pd, full - 2 * pd)
    if bias is not None:
        out = out + bias.reshape(1, -1, 1, 1, 1)
    return out.squeeze(0) if unbatched else out


def _pool_depth_size(d, k, s, p, dil, ceil_mode):
    span = d + 2 * p - dil * (k - 1) - 1
    out = (span + (s - 1 if ceil_mode else 0)) // s + 1
    if ceil_mode and (out - 1) * s >= d + p:            # the last window must start inside input or left padding
        out -= 1
    return out


def max_pool3d(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False,  # noqa: A002
               return_indices=False):
    """Max over kernel_size windows of [N, C, D, H, W] (stride defaults to kernel_size).

    Example:
        >>> F.max_pool3d(torch.randn(1, 2, 4, 4, 4), 2).shape
        torch.Size([1, 2, 2, 2, 2])
    """
    from ..select.functions import maximum
    from .pooling import max_pool2d
    if return_indices:
        raise NotImplementedError("max_pool3d(return_indices=True) is not supported by rawdev")
    x, unbatched = _batched(input, "max_pool3d")
    kd, kh, kw = _t3(kernel_size)
    sd, sh, sw = _t3(stride if stride is not None else kernel_size)
    pd, ph, pw = _t3(padding)
    dd, dh, dw = _t3(dilation)
    n, c, d = x.shape[:3]
    out_d = _pool_depth_size(d, kd, sd, pd, dd, ceil_mode)
    need = (out_d - 1) * sd + dd * (kd - 1) + 1
    x = _pad_depth(x, pd, max(0, need - d - pd), float("-inf"))
    out = None
    for xs in _taps(x, kd, sd, dd, out_d):
        planes = xs.reshape(n, c * out_d, x.shape[3], x.shape[4])
        y = max_pool2d(planes, (kh, kw), (sh, sw), (ph, pw), (dh, dw), ceil_mode)
        out = y if out is None else maximum(out, y)
    out = out.reshape(n, c, out_d, *out.shape[-2:])
    return out.squeeze(0) if unbatched else out


def avg_pool3d(input, kernel_size, stride=None, padding=0, ceil_mode=False, count_include_pad=True,  # noqa: A002
               divisor_override=None):
    """Mean over kernel_size windows of [N, C, D, H, W]; count_include_pad counts the zero padding in the
    divisor, divisor_override replaces it.

    Example:
        >>> F.avg_pool3d(torch.ones(1, 1, 4, 4, 4), 2).shape
        torch.Size([1, 1, 2, 2, 2])
    """
    from .pooling import avg_pool2d
    if ceil_mode:
        raise NotImplementedError("avg_pool3d(ceil_mode=True) is not supported by rawdev")
    x, unbatched = _batched(input, "avg_pool3d")
    kd, kh, kw = _t3(kernel_size)
    sd, sh, sw = _t3(stride if stride is not None else kernel_size)
    pd, ph, pw = _t3(padding)
    n, c, d = x.shape[:3]
    out_d = _pool_depth_size(d, kd, sd, pd, 1, False)

    def window_sums(t):
        tp = _pad_depth(t, pd, pd)
        acc = None
        for xs in _taps(tp, kd, sd, 1, out_d):
            planes = xs.reshape(t.shape[0], t.shape[1] * out_d, t.shape[3], t.shape[4])
            y = avg_pool2d(planes, (kh, kw), (sh, sw), (ph, pw), False, True, 1)     # sums (divisor 1)
            acc = y if acc is None else acc + y
        return acc.reshape(t.shape[0], t.shape[1], out_d, *acc.shape[-2:])

    sums = window_sums(x)
    if divisor_override is not None:
        out = sums / float(divisor_override)
    elif count_include_pad:
        out = sums / float(kd * kh * kw)
    else:
        ones = x.new_ones((1, 1) + tuple(x.shape[2:]))
        out = sums / window_sums(ones)
    return out.squeeze(0) if unbatched else out


def _adaptive_depth(x, out_d, reduce):
    """[N, C, D, H, W] -> [N, C, out_d, H, W], each output depth reducing its adaptive window."""
    from ..join import stack
    d = x.shape[2]
    slabs = []
    for i in range(out_d):
        a, b = (i * d) // out_d, -((-(i + 1) * d) // out_d)
        part = x.narrow(2, a, b - a)
        slabs.append(part.mean(2) if reduce == "mean" else part.amax(2))
    return stack(slabs, 2)


def _adaptive3d(input, output_size, reduce, name):  # noqa: A002
    from .pooling import adaptive_avg_pool2d, adaptive_max_pool2d
    x, unbatched = _batched(input, name)
    sizes = _t3(output_size)
    od, oh, ow = (x.shape[2 + i] if s is None else s for i, s in enumerate(sizes))
    y = _adaptive_depth(x, od, reduce)
    n, c = y.shape[:2]
    planes = y.reshape(n, c * od, y.shape[3], y.shape[4])
    z = adaptive_avg_pool2d(planes, (oh, ow)) if reduce == "mean" else adaptive_max_pool2d(planes, (oh, ow))
    z = z.reshape(n, c, od, oh, ow)
    return z.squeeze(0) if unbatched else z


def adaptive_avg_pool3d(input, output_size):  # noqa: A002
    """Mean over adaptive windows of [N, C, D, H, W] to output_size (None keeps a size).

    Example:
        >>> F.adaptive_avg_pool3d(torch.randn(2, 3, 5, 6, 7), 1).shape
        torch.Size([2, 3, 1, 1, 1])
    """
    return _adaptive3d(input, output_size, "mean", "adaptive_avg_pool3d")


def adaptive_max_pool3d(input, output_size, return_indices=False):  # noqa: A002
    """Max over adaptive windows of [N, C, D, H, W] to output_size."""
    if return_indices:
        raise NotImplementedError("adaptive_max_pool3d(return_indices=True) is not supported by rawdev")
    return _adaptive3d(input, output_size, "max", "adaptive_max_pool3d")


for _fn in (conv3d, conv_transpose3d, max_pool3d, avg_pool3d, adaptive_avg_pool3d, adaptive_max_pool3d):
    declare(_fn.__name__, _fn, family="conv", functional=True, torch=_fn in (conv3d, conv_transpose3d, max_pool3d),
            method=False)
