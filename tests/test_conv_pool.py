"""Convolution, transposed convolution and pooling: float64 references written here (direct loops over output
positions), finite-difference gradients on the cpu, the cuda path (simulator) against the cpu at odd sizes with
non-contiguous inputs and poisoned outputs, PyTorch's shapes, reprs and errors; F.unfold / F.fold."""
import numpy as np
import pytest
import rawdev
import rawdev.nn.functional as F
from rawdev import nn
from rawdev.ops import cuda as cuda_ops

RNG = np.random.default_rng(2024)


@pytest.fixture
def poison(driver):
    cuda_ops.set_poison(True)
    yield
    cuda_ops.set_poison(False)


# ------------------------------------------------------------------ references
def ref_conv2d(x, w, b, stride, pad, dil, groups):
    """Direct definition: y[n, o, i, j] = b[o] + Σ_c,u,v x[n, c, i·s − p + u·d, j·s − p + v·d] · w[o, c, u, v],
    summed a tap (u, v) and a group at a time: the input zero-padded, the positions tap (u, v) reads for every
    output (i, j) taken by one strided slice, its channels contracted with w[:, :, u, v]."""
    N, C, H, W = x.shape
    Co, Cg, KH, KW = w.shape
    (sh, sw), (ph_lo, pw_lo, ph_hi, pw_hi), (dh, dw) = stride, pad, dil
    OH = (H + ph_lo + ph_hi - dh * (KH - 1) - 1) // sh + 1
    OW = (W + pw_lo + pw_hi - dw * (KW - 1) - 1) // sw + 1
    y = np.zeros((N, Co, OH, OW))
    xp = np.zeros((N, C, H + ph_lo + ph_hi, W + pw_lo + pw_hi))
    xp[:, :, ph_lo:ph_lo + H, pw_lo:pw_lo + W] = x
    Og = Co // groups
    for g in range(groups):
        xg, wg, yg = xp[:, g * Cg:(g + 1) * Cg], w[g * Og:(g + 1) * Og], y[:, g * Og:(g + 1) * Og]
        for u in range(KH):
            for v in range(KW):
                taps = xg[:, :, u * dh:u * dh + (OH - 1) * sh + 1:sh, v * dw:v * dw + (OW - 1) * sw + 1:sw]
                yg += np.einsum("nchw,oc->nohw", taps, wg[:, :, u, v])
    return y + (0 if b is None else b[None, :, None, None])


def ref_conv_transpose2d(x, w, b, stride, pad, dil, out_pad, groups):
    """Scatter definition: each input element adds x·w[c, o, u, v] at (i·s − p + u·d, j·s − p + v·d), a tap (u, v)
    and a group at a time: every input position's contribution of one tap lands on one strided slice of the
    output before cropping (positions before the padding or past the output are dropped, as the loops did)."""
    N, C, H, W = x.shape
    _, Og, KH, KW = w.shape
    OH = (H - 1) * stride[0] - 2 * pad[0] + dil[0] * (KH - 1) + out_pad[0] + 1
    OW = (W - 1) * stride[1] - 2 * pad[1] + dil[1] * (KW - 1) + out_pad[1] + 1
    full_h = max((H - 1) * stride[0] + dil[0] * (KH - 1) + 1, OH + pad[0])
    full_w = max((W - 1) * stride[1] + dil[1] * (KW - 1) + 1, OW + pad[1])
    full = np.zeros((N, Og * groups, full_h, full_w))
    Cg = C // groups
    for g in range(groups):
        xg, wg, fg = x[:, g * Cg:(g + 1) * Cg], w[g * Cg:(g + 1) * Cg], full[:, g * Og:(g + 1) * Og]
        for u in range(KH):
            for v in range(KW):
                h0, w0 = u * dil[0], v * dil[1]
                fg[:, :, h0:h0 + (H - 1) * stride[0] + 1:stride[0], w0:w0 + (W - 1) * stride[1] + 1:stride[1]] += \
                    np.einsum("nchw,co->nohw", xg, wg[:, :, u, v])
    y = full[:, :, pad[0]:pad[0] + OH, pad[1]:pad[1] + OW]
    return y + (0 if b is None else b[None, :, None, None])


def _fd(f, x, gout, eps=1e-6):
    g = np.zeros_like(x)
    for i in np.ndindex(x.shape):
        xp, xm = x.copy(), x.copy()
        xp[i] += eps
        xm[i] -= eps
        g[i] = ((f(xp) - f(xm)) * gout).sum() / (2 * eps)
    return g


CONV_CASES = [  # (N, C, H, W, Co, K, stride, padding, dilation, groups, bias)
    (2, 3, 7, 6, 4, 3, 1, 1, 1, 1, True),
    (1, 4, 9, 8, 6, (3, 2), (2, 1), (1, 0), 1, 2, False),
    (3, 2, 11, 5, 3, 3, 1, 2, 2, 1, True),
    (2, 6, 5, 5, 6, 3, 2, 1, 1, 6, True),          # depthwise
    (1, 1, 4, 4, 2, 4, 1, 0, 1, 1, True),          # the kernel covers the whole image
]


def _pads(K, padding, dilation):
    p = padding if isinstance(padding, tuple) else (padding, padding)
    return (p[0], p[1], p[0], p[1])


def _pair(v):
    return v if isinstance(v, tuple) else (v, v)


@pytest.mark.parametrize("case", CONV_CASES)
def test_conv2d_matches_reference_and_cuda_matches_cpu(case, driver, poison):
    N, C, H, W, Co, K, s, p, d, g, bias = case
    kh, kw = _pair(K)
    x = RNG.standard_normal((N, C, H, W))
    w = RNG.standard_normal((Co, C // g, kh, kw))
    b = RNG.standard_normal(Co) if bias else None
    ref = ref_conv2d(x, w, b, _pair(s), _pads(K, p, d), _pair(d), g)
    y64 = F.conv2d(rawdev.tensor(x), rawdev.tensor(w), None if b is None else rawdev.tensor(b), s, p, d, g)
    np.testing.assert_allclose(y64.numpy(), ref, rtol=1e-10, atol=1e-10)
    # float32, the input a non-contiguous view (a transposed copy transposed back), on both devices
    x32 = rawdev.tensor(np.ascontiguousarray(x.transpose(0, 1, 3, 2)).astype(np.float32)).transpose(2, 3)
    assert not x32.is_contiguous()
    outs, grads = {}, {}
    gout = RNG.standard_normal(ref.shape).astype(np.float32)
    for dev in ("cpu", "cuda"):
        tx = x32.to(dev).detach().requires_grad_()
        tw = rawdev.tensor(w.astype(np.float32), device=dev, requires_grad=True)
        tb = rawdev.tensor(b.astype(np.float32), device=dev, requires_grad=True) if bias else None
        y = F.conv2d(tx, tw, tb, s, p, d, g)
        (y * rawdev.tensor(gout, device=dev)).sum().backward()
        outs[dev] = y.detach().cpu().numpy()
        grads[dev] = [tx.grad.cpu().numpy(), tw.grad.cpu().numpy()] + ([tb.grad.cpu().numpy()] if bias else [])
    np.testing.assert_allclose(outs["cpu"], ref, rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(outs["cuda"], outs["cpu"], rtol=1e-4, atol=1e-4)
    for gc, gg in zip(grads["cpu"], grads["cuda"]):
        np.testing.assert_allclose(gg, gc, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("case", [CONV_CASES[1], CONV_CASES[2]])
def test_conv2d_gradients_finite_differences(case):
    N, C, H, W, Co, K, s, p, d, g, bias = case
    kh, kw = _pair(K)
    x = RNG.standard_normal((N, C, H, W))
    w = RNG.standard_normal((Co, C // g, kh, kw))
    b = RNG.standard_normal(Co)
    pads, st, di = _pads(K, p, d), _pair(s), _pair(d)
    gout = RNG.standard_normal(ref_conv2d(x, w, b, st, pads, di, g).shape)
    tx, tw, tb = (rawdev.tensor(a).requires_grad_() for a in (x, w, b))
    y = F.conv2d(tx, tw, tb, s, p, d, g)
    assert y.grad_fn.name() == "ConvolutionBackward0"
    (y * rawdev.tensor(gout)).sum().backward()
    np.testing.assert_allclose(tx.grad.numpy(), _fd(lambda z: ref_conv2d(z, w, b, st, pads, di, g), x, gout),
                               rtol=1e-6, atol=1e-7)
    np.testing.assert_allclose(tw.grad.numpy(), _fd(lambda z: ref_conv2d(x, z, b, st, pads, di, g), w, gout),
                               rtol=1e-6, atol=1e-7)
    np.testing.assert_allclose(tb.grad.numpy(), gout.sum(axis=(0, 2, 3)), rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("k,d", [(3, 1), (4, 1), (3, 2), (2, 3)])
def test_conv_same_and_valid_padding(k, d, driver):
    x = RNG.standard_normal((2, 3, 9, 10))
    w = RNG.standard_normal((2, 3, k, k))
    total = d * (k - 1)
    lo, hi = total // 2, total - total // 2
    ref = ref_conv2d(x, w, None, (1, 1), (lo, lo, hi, hi), (d, d), 1)
    for dev in ("cpu", "cuda"):
        y = F.conv2d(rawdev.tensor(x.astype(np.float32), device=dev), rawdev.tensor(w.astype(np.float32), device=dev),
                     padding="same", dilation=d)
        assert tuple(y.shape) == (2, 2, 9, 10)
        np.testing.assert_allclose(y.cpu().numpy(), ref, rtol=1e-4, atol=1e-4)
    yv = F.conv2d(rawdev.tensor(x), rawdev.tensor(w), padding="valid", dilation=d)
    np.testing.assert_allclose(yv.numpy(), ref_conv2d(x, w, None, (1, 1), (0, 0, 0, 0), (d, d), 1),
                               rtol=1e-10, atol=1e-12)


def test_conv1d_matches_conv2d_reference(driver, poison):
    x = RNG.standard_normal((3, 4, 37))
    w = RNG.standard_normal((6, 2, 5))
    b = RNG.standard_normal(6)
    ref = ref_conv2d(x[:, :, None, :], w[:, :, None, :], b, (1, 2), (0, 3, 0, 3), (1, 2), 2)[:, :, 0, :]
    for dev in ("cpu", "cuda"):
        tx = rawdev.tensor(x.astype(np.float32), device=dev, requires_grad=True)
        y = F.conv1d(tx, rawdev.tensor(w.astype(np.float32), device=dev), rawdev.tensor(b.astype(np.float32),
                     device=dev), stride=2, padding=3, dilation=2, groups=2)
        np.testing.assert_allclose(y.detach().cpu().numpy(), ref, rtol=1e-4, atol=1e-4)
        y.sum().backward()
        ones = np.ones_like(ref)
        fd = _fd(lambda z: ref_conv2d(z[:, :, None, :], w[:, :, None, :], b, (1, 2), (0, 3, 0, 3), (1, 2),
                                      2)[:, :, 0, :], x, ones)
        np.testing.assert_allclose(tx.grad.cpu().numpy(), fd, rtol=1e-3, atol=1e-3)
    m = nn.Conv1d(16, 33, 3, stride=2)
    assert tuple(m(rawdev.randn(20, 16, 50)).shape) == (20, 33, 24)
    assert tuple(m(rawdev.randn(16, 50)).shape) == (33, 24)      # unbatched


@pytest.mark.parametrize("case", [  # (N, C, H, W, Co, K, stride, padding, dilation, output_padding, groups)
    (2, 4, 5, 4, 3, 3, 2, 1, 1, 1, 1),
    (1, 4, 3, 3, 2, 4, 2, 1, 1, 0, 2),
    (2, 2, 4, 5, 3, 2, 1, 0, 2, 0, 1),
])
def test_conv_transpose2d_matches_reference_and_gradients(case, driver, poison):
    N, C, H, W, Co, K, s, p, d, op, g = case
    x = RNG.standard_normal((N, C, H, W))
    w = RNG.standard_normal((C, Co // g if Co % g == 0 else Co, K, K))
    b = RNG.standard_normal(w.shape[1] * g)
    args = ((s, s), (p, p), (d, d), (op, op), g)
    ref = ref_conv_transpose2d(x, w, b, *args)
    gout = RNG.standard_normal(ref.shape)
    tx, tw, tb = (rawdev.tensor(a).requires_grad_() for a in (x, w, b))
    y = F.conv_transpose2d(tx, tw, tb, s, p, op, g, d)
    np.testing.assert_allclose(y.detach().numpy(), ref, rtol=1e-10, atol=1e-10)
    (y * rawdev.tensor(gout)).sum().backward()
    np.testing.assert_allclose(tx.grad.numpy(), _fd(lambda z: ref_conv_transpose2d(z, w, b, *args), x, gout),
                               rtol=1e-6, atol=1e-7)
    np.testing.assert_allclose(tw.grad.numpy(), _fd(lambda z: ref_conv_transpose2d(x, z, b, *args), w, gout),
                               rtol=1e-6, atol=1e-7)
    cx = rawdev.tensor(x.astype(np.float32), device="cuda", requires_grad=True)
    cw = rawdev.tensor(w.astype(np.float32), device="cuda", requires_grad=True)
    cy = F.conv_transpose2d(cx, cw, rawdev.tensor(b.astype(np.float32), device="cuda"), s, p, op, g, d)
    np.testing.assert_allclose(cy.detach().cpu().numpy(), ref, rtol=1e-4, atol=1e-4)
    (cy * rawdev.tensor(gout.astype(np.float32), device="cuda")).sum().backward()
    np.testing.assert_allclose(cx.grad.cpu().numpy(), tx.grad.numpy(), rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(cw.grad.cpu().numpy(), tw.grad.numpy(), rtol=1e-4, atol=1e-4)


def test_conv_transpose_module_output_size_and_1d():
    up = nn.ConvTranspose2d(16, 8, 3, stride=2, padding=1)
    x = rawdev.randn(1, 16, 7, 7)
    assert tuple(up(x).shape) == (1, 8, 13, 13)
    assert tuple(up(x, output_size=[14, 14]).shape) == (1, 8, 14, 14)
    assert tuple(up.weight.shape) == (16, 8, 3, 3)
    with pytest.raises(ValueError, match="requested an output size"):
        up(x, output_size=[20, 20])
    m = nn.ConvTranspose1d(4, 6, 3, stride=3)
    assert tuple(m(rawdev.randn(2, 4, 5)).shape) == (2, 6, 15)


# ------------------------------------------------------------------ pooling references
def ref_pool(x, k, s, p, d, ceil, mode, count_pad=True):
    """Direct max / avg pooling over the windows PyTorch defines (ceil_mode's last window must start inside)."""
    N, C, H, W = x.shape
    (kh, kw), (sh, sw), (ph, pw), (dh, dw) = k, s, p, d

    def out(n, k_, s_, p_, d_):
        num = n + 2 * p_ - d_ * (k_ - 1) - 1
        o = (-(-num // s_) if ceil else num // s_) + 1
        return o - 1 if ceil and (o - 1) * s_ >= n + p_ else o
    OH, OW = out(H, kh, sh, ph, dh), out(W, kw, sw, pw, dw)
    y = np.zeros((N, C, OH, OW))
    idx = np.zeros((N, C, OH, OW), np.int64)
    for i in range(OH):
        for j in range(OW):
            hs = [i * sh - ph + u * dh for u in range(kh)]
            ws = [j * sw - pw + v * dw for v in range(kw)]
            cells = [(h, w_) for h in hs for w_ in ws if 0 <= h < H and 0 <= w_ < W]
            vals = np.stack([x[:, :, h, w_] for h, w_ in cells], -1)
            if mode == "max":
                a = vals.argmax(-1)
                y[:, :, i, j] = vals.max(-1)
                idx[:, :, i, j] = np.array([h * W + w_ for h, w_ in cells])[a]
            else:
                h1, w1 = min(i * sh - ph + kh, H + ph), min(j * sw - pw + kw, W + pw)
                div = (h1 - (i * sh - ph)) * (w1 - (j * sw - pw)) if count_pad else len(cells)
                y[:, :, i, j] = vals.sum(-1) / div
    return y, idx


POOL_CASES = [  # (shape, kernel, stride, padding, dilation, ceil_mode)
    ((2, 3, 8, 8), (2, 2), (2, 2), (0, 0), (1, 1), False),
    ((1, 2, 9, 7), (3, 3), (2, 2), (1, 1), (1, 1), False),
    ((1, 2, 9, 7), (3, 3), (2, 2), (1, 1), (1, 1), True),
    ((2, 1, 10, 11), (3, 2), (3, 2), (1, 0), (2, 1), True),
]


@pytest.mark.parametrize("case", POOL_CASES)
def test_max_pool2d_values_indices_gradients(case, driver, poison):
    shape, k, s, p, d, ceil = case
    x = RNG.standard_normal(shape)
    ref, ref_idx = ref_pool(x, k, s, p, d, ceil, "max")
    gout = RNG.standard_normal(ref.shape)
    for dev in ("cpu", "cuda"):
        tx = rawdev.tensor(x.astype(np.float32), device=dev, requires_grad=True)
        y, idx = F.max_pool2d(tx, k, s, p, d, ceil_mode=ceil, return_indices=True)
        np.testing.assert_allclose(y.detach().cpu().numpy(), ref, rtol=1e-6)
        np.testing.assert_array_equal(idx.cpu().numpy(), ref_idx)
        assert idx.dtype == rawdev.int64
        (y * rawdev.tensor(gout.astype(np.float32), device=dev)).sum().backward()
        want = np.zeros(shape).reshape(shape[0], shape[1], -1)
        for n in range(shape[0]):
            for c in range(shape[1]):
                np.add.at(want[n, c], ref_idx[n, c].ravel(), gout[n, c].ravel())
        np.testing.assert_allclose(tx.grad.cpu().numpy(), want.reshape(shape), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("case", POOL_CASES[:3])
@pytest.mark.parametrize("count_pad", [True, False])
def test_avg_pool2d_values_and_gradients(case, count_pad, driver, poison):
    shape, k, s, p, _, ceil = case
    x = RNG.standard_normal(shape)
    ref, _ = ref_pool(x, k, s, p, (1, 1), ceil, "avg", count_pad)
    gout = RNG.standard_normal(ref.shape)
    f = lambda z: ref_pool(z, k, s, p, (1, 1), ceil, "avg", count_pad)[0]  # noqa: E731
    fd = _fd(f, x, gout)
    for dev in ("cpu", "cuda"):
        tx = rawdev.tensor(x.astype(np.float32), device=dev, requires_grad=True)
        y = F.avg_pool2d(tx, k, s, p, ceil_mode=ceil, count_include_pad=count_pad)
        np.testing.assert_allclose(y.detach().cpu().numpy(), ref, rtol=1e-5, atol=1e-6)
        (y * rawdev.tensor(gout.astype(np.float32), device=dev)).sum().backward()
        np.testing.assert_allclose(tx.grad.cpu().numpy(), fd, rtol=1e-4, atol=1e-5)


def test_avg_pool2d_divisor_override():
    x = RNG.standard_normal((1, 2, 5, 5))
    y = F.avg_pool2d(rawdev.tensor(x), 2, 2, ceil_mode=True, divisor_override=3)
    want = np.zeros((1, 2, 3, 3))
    for i in range(3):
        for j in range(3):
            want[:, :, i, j] = x[:, :, 2 * i:2 * i + 2, 2 * j:2 * j + 2].sum(axis=(2, 3)) / 3
    np.testing.assert_allclose(y.numpy(), want, rtol=1e-12, atol=1e-14)


def ref_adaptive(x, out, mode):
    N, C, H, W = x.shape
    OH, OW = out
    y = np.zeros((N, C, OH, OW))
    for i in range(OH):
        h0, h1 = i * H // OH, -(-(i + 1) * H // OH)
        for j in range(OW):
            w0, w1 = j * W // OW, -(-(j + 1) * W // OW)
            win = x[:, :, h0:h1, w0:w1]
            y[:, :, i, j] = win.max(axis=(2, 3)) if mode == "max" else win.mean(axis=(2, 3))
    return y


@pytest.mark.parametrize("shape,out", [((2, 3, 7, 5), (3, 2)), ((1, 2, 8, 8), (1, 1)), ((1, 1, 5, 9), (5, 4)),
                                       ((2, 2, 6, 6), (None, 4))])
def test_adaptive_pools(shape, out, driver, poison):
    x = RNG.standard_normal(shape)
    o = (shape[2] if out[0] is None else out[0], out[1])
    for mode, fn in (("avg", F.adaptive_avg_pool2d), ("max", F.adaptive_max_pool2d)):
        ref = ref_adaptive(x, o, mode)
        gout = RNG.standard_normal(ref.shape)
        fd = _fd(lambda z, m=mode: ref_adaptive(z, o, m), x, gout)
        for dev in ("cpu", "cuda"):
            tx = rawdev.tensor(x.astype(np.float32), device=dev, requires_grad=True)
            y = fn(tx, out)
            np.testing.assert_allclose(y.detach().cpu().numpy(), ref, rtol=1e-5, atol=1e-6)
            (y * rawdev.tensor(gout.astype(np.float32), device=dev)).sum().backward()
            np.testing.assert_allclose(tx.grad.cpu().numpy(), fd, rtol=1e-3, atol=1e-4)


def test_pool_1d_forms_and_modules(driver):
    x = RNG.standard_normal((2, 3, 11))
    x4 = x[:, :, None, :]
    mref, midx = ref_pool(x4, (1, 3), (1, 2), (0, 1), (1, 1), False, "max")
    aref, _ = ref_pool(x4, (1, 3), (1, 2), (0, 1), (1, 1), False, "avg", False)
    for dev in ("cpu", "cuda"):
        t = rawdev.tensor(x.astype(np.float32), device=dev)
        y, i = F.max_pool1d(t, 3, 2, 1, return_indices=True)
        np.testing.assert_allclose(y.cpu().numpy(), mref[:, :, 0], rtol=1e-6)
        np.testing.assert_array_equal(i.cpu().numpy(), midx[:, :, 0])
        # averages of float32-rounded inputs of magnitude ~1: an absolute floor for results that cancel to ~0
        np.testing.assert_allclose(F.avg_pool1d(t, 3, 2, 1, count_include_pad=False).cpu().numpy(), aref[:, :, 0],
                                   rtol=1e-5, atol=1e-6)
        np.testing.assert_allclose(nn.AdaptiveAvgPool1d(4)(t).cpu().numpy(), ref_adaptive(x4, (1, 4), "avg")[:, :, 0],
                                   rtol=1e-5, atol=1e-6)
        np.testing.assert_allclose(nn.AdaptiveMaxPool1d(4)(t).cpu().numpy(), ref_adaptive(x4, (1, 4), "max")[:, :, 0],
                                   rtol=1e-6)
    assert tuple(nn.MaxPool2d(2)(rawdev.randn(3, 8, 6)).shape) == (3, 4, 3)      # unbatched
    assert tuple(nn.AdaptiveAvgPool2d((1, 1))(rawdev.randn(2, 8, 7, 5)).shape) == (2, 8, 1, 1)


def test_max_pool_nan_wins_like_pytorch(driver):
    x = np.arange(16, dtype=np.float32).reshape(1, 1, 4, 4)
    x[0, 0, 0, 1] = np.nan
    for dev in ("cpu", "cuda"):
        y, i = F.max_pool2d(rawdev.tensor(x, device=dev), 2, return_indices=True)
        assert np.isnan(y.cpu().numpy()[0, 0, 0, 0]) and i.cpu().numpy()[0, 0, 0, 0] == 1
        assert y.cpu().numpy()[0, 0, 1, 1] == 15


# ------------------------------------------------------------------ modules, reprs, errors
def test_conv_module_init_repr_and_state_dict():
    rawdev.manual_seed(0)
    m = nn.Conv2d(3, 8, 5, stride=2, padding=2, bias=True)
    assert tuple(m.weight.shape) == (8, 3, 5, 5) and tuple(m.bias.shape) == (8,)
    bound = 1 / np.sqrt(3 * 25)
    assert np.abs(m.weight.detach().numpy()).max() <= bound and np.abs(m.bias.detach().numpy()).max() <= bound
    assert np.abs(m.weight.detach().numpy()).max() > 0.8 * bound          # uniform over the whole range
    assert list(m.state_dict()) == ["weight", "bias"]
    assert repr(m) == "Conv2d(3, 8, kernel_size=(5, 5), stride=(2, 2), padding=(2, 2))"
    assert repr(nn.Conv2d(4, 4, 3, padding="same", groups=2, bias=False, dilation=2)) == \
        "Conv2d(4, 4, kernel_size=(3, 3), stride=(1, 1), padding=same, dilation=(2, 2), groups=2, bias=False)"
    assert repr(nn.MaxPool2d(2)) == "MaxPool2d(kernel_size=2, stride=2, padding=0, dilation=1, ceil_mode=False)"
    assert repr(nn.AvgPool2d(3, 1)) == "AvgPool2d(kernel_size=3, stride=1, padding=0)"
    assert repr(nn.AdaptiveAvgPool2d((1, 1))) == "AdaptiveAvgPool2d(output_size=(1, 1))"


def test_conv_errors_use_pytorch_wording():
    with pytest.raises(RuntimeError, match=r"Given groups=1, weight of size \[8, 3, 3, 3\], expected input\[2, 4, 5, "
                                           r"5\] to have 3 channels, but got 4 channels instead"):
        F.conv2d(rawdev.randn(2, 4, 5, 5), rawdev.randn(8, 3, 3, 3))
    with pytest.raises(RuntimeError, match="Expected 3D \\(unbatched\\) or 4D \\(batched\\) input to conv2d"):
        F.conv2d(rawdev.randn(5, 5), rawdev.randn(8, 3, 3, 3))
    with pytest.raises(RuntimeError, match="Kernel size can't be greater than actual input size"):
        F.conv2d(rawdev.randn(1, 1, 2, 2), rawdev.randn(1, 1, 3, 3))
    with pytest.raises(ValueError, match="padding='same' is not supported for strided convolutions"):
        nn.Conv2d(1, 1, 3, stride=2, padding="same")
    with pytest.raises(ValueError, match="in_channels must be divisible by groups"):
        nn.Conv2d(3, 4, 3, groups=2)
    with pytest.raises(RuntimeError, match="pad should be at most half of effective kernel size"):
        F.max_pool2d(rawdev.randn(1, 1, 8, 8), 2, padding=2)
    with pytest.raises(RuntimeError, match="Output size is too small"):
        F.max_pool2d(rawdev.randn(1, 1, 2, 2), 3)


def test_conv_on_cuda_refuses_float64_and_mixed_devices(driver):
    with pytest.raises(TypeError, match="float32"):
        F.conv2d(rawdev.randn(1, 1, 4, 4, dtype=rawdev.float64).cuda(), rawdev.randn(1, 1, 3, 3).double().cuda())
    with pytest.raises(RuntimeError, match="same device|devices"):
        F.conv2d(rawdev.randn(1, 1, 4, 4).cuda(), rawdev.randn(1, 1, 3, 3))


def _unfold_ref(x, kh, kw, dh, dw, ph, pw, sh, sw):
    N, C, H, W = x.shape
    xp = np.pad(x, ((0, 0), (0, 0), (ph, ph), (pw, pw)))
    oh = (H + 2 * ph - dh * (kh - 1) - 1) // sh + 1
    ow = (W + 2 * pw - dw * (kw - 1) - 1) // sw + 1
    out = np.zeros((N, C * kh * kw, oh * ow))
    for c in range(C):
        for i in range(kh):
            for j in range(kw):
                for a in range(oh):
                    for b in range(ow):
                        out[:, (c * kh + i) * kw + j, a * ow + b] = xp[:, c, a * sh + i * dh, b * sw + j * dw]
    return out, (oh, ow)


@pytest.mark.parametrize("k,d,p,s", [((2, 3), (1, 2), 1, (2, 1)), (3, 1, 0, 1), ((1, 2), 2, (0, 1), 3)])
def test_unfold_fold(k, d, p, s, driver):
    """PyTorch 2.13 on arange(2*3*5*6) with k=(2,3), d=(1,2), p=1, s=(2,1): unfold sums to 26850 and
    fold(unfold(x))[1, 2, 3, 4] = 344; here against a loop reference, with gradients (fold's is unfold)."""
    x = RNG.standard_normal((2, 3, 7, 8))
    pair = lambda v: v if isinstance(v, tuple) else (v, v)   # noqa: E731
    (kh, kw), (dh, dw), (ph, pw), (sh, sw) = pair(k), pair(d), pair(p), pair(s)
    want, (oh, ow) = _unfold_ref(x, kh, kw, dh, dw, ph, pw, sh, sw)
    g = RNG.standard_normal(want.shape)
    for dev, dt, tol in (("cpu", rawdev.float64, 1e-12), ("cuda", rawdev.float32, 1e-5)):
        t = rawdev.tensor(x, dtype=dt, device=dev, requires_grad=True)
        u = nn.Unfold(k, d, p, s)(t)
        np.testing.assert_allclose(u.detach().cpu().numpy(), want, rtol=tol, atol=tol)
        (u * rawdev.tensor(g, dtype=dt, device=dev)).sum().backward()
        folded = F.fold(rawdev.tensor(g, dtype=dt, device=dev), (7, 8), k, d, p, s)
        np.testing.assert_allclose(t.grad.cpu().numpy(), folded.cpu().numpy(), rtol=tol, atol=tol)
        # fold is unfold's adjoint: <unfold(x), g> == <x, fold(g)>
        np.testing.assert_allclose(float((u.detach() * rawdev.tensor(g, dtype=dt, device=dev)).sum()),
                                   float((t.detach() * folded).sum()), rtol=10 * tol)
    y = rawdev.arange(2 * 3 * 5 * 6.0).reshape(2, 3, 5, 6)
    uu = F.unfold(y, (2, 3), dilation=(1, 2), padding=1, stride=(2, 1))
    assert tuple(uu.shape) == (2, 18, 12) and uu.sum().item() == 26850.0
    assert F.fold(uu, (5, 6), (2, 3), dilation=(1, 2), padding=1, stride=(2, 1))[1, 2, 3, 4].item() == 344.0
    with pytest.raises(RuntimeError, match="divisible by the product of kernel_size"):
        F.fold(rawdev.ones(1, 5, 4), (3, 3), 2)
