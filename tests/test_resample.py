"""The resampling family (rawdev/ops/resample.py): interpolate (and the deprecated upsample functions), pad and
PixelShuffle against float64 numpy references written here, finite-difference gradients on the cpu, the cuda path
(simulator) against the cpu with non-contiguous inputs and poisoned outputs, PyTorch's errors."""
import numpy as np
import pytest
import rawdev
import rawdev.nn.functional as F
from rawdev import nn
from rawdev.ops import cuda as cuda_ops

from _refs import numeric_grad

RNG = np.random.default_rng(2026)


def _t(a, dev="cpu", grad=False):
    t = rawdev.tensor(a).to(dev)
    return t.requires_grad_() if grad else t


# ---------------------------------------------------------------------------------------------- interpolate
def ref_nearest_idx(inp, out, scale=None, exact=False):
    s = inp / out if scale is None else 1.0 / scale
    d = np.arange(out) + (0.5 if exact else 0.0)
    return np.minimum(np.floor(d * s).astype(int), inp - 1)


def ref_linear_weights(inp, out, align, scale=None):
    """[out, inp] matrix of the linear interpolation weights (PyTorch's source-index rule)."""
    m = np.zeros((out, inp))
    for o in range(out):
        if align:
            src = o * (inp - 1) / (out - 1) if out > 1 else 0.0
        else:
            s = inp / out if scale is None else 1.0 / scale
            src = max((o + 0.5) * s - 0.5, 0.0)
        i0 = min(int(np.floor(src)), inp - 1)
        i1 = min(i0 + 1, inp - 1)
        lam = src - i0
        m[o, i0] += 1 - lam
        m[o, i1] += lam
    return m


def ref_interp(x, out_hw, mode, align=False, scales=(None, None)):
    """x [N, C, H, W] (float64): separable, so y = A_h @ x @ A_w^T per plane."""
    H, W = x.shape[2:]
    OH, OW = out_hw
    if mode.startswith("nearest"):
        exact = mode == "nearest-exact"
        ah = np.eye(H)[ref_nearest_idx(H, OH, scales[0], exact)]
        aw = np.eye(W)[ref_nearest_idx(W, OW, scales[1], exact)]
    else:
        ah = ref_linear_weights(H, OH, align, scales[0])
        aw = ref_linear_weights(W, OW, align, scales[1])
    return np.einsum("oh,nchw,pw->ncop", ah, x, aw)


INTERP_CASES = [  # (input shape, kwargs, out spatial, ref mode, align, ref scales)
    ((2, 3, 5, 4), {"size": (7, 9)}, (7, 9), "nearest", False, (None, None)),
    ((2, 3, 5, 4), {"scale_factor": 2}, (10, 8), "nearest", False, (2.0, 2.0)),
    ((1, 2, 7, 3), {"size": (3, 8), "mode": "nearest-exact"}, (3, 8), "nearest-exact", False, (None, None)),
    ((2, 3, 5, 4), {"size": (7, 9), "mode": "bilinear"}, (7, 9), "bilinear", False, (None, None)),
    ((2, 3, 5, 4), {"size": (7, 3), "mode": "bilinear", "align_corners": True}, (7, 3), "bilinear", True,
     (None, None)),
    ((1, 2, 5, 4), {"scale_factor": 1.5, "mode": "bilinear"}, (7, 6), "bilinear", False, (1.5, 1.5)),
    ((1, 2, 5, 4), {"scale_factor": 1.5, "mode": "bilinear", "recompute_scale_factor": True}, (7, 6), "bilinear",
     False, (None, None)),
    ((3, 2, 1, 300), {"size": (1, 301), "mode": "bilinear"}, (1, 301), "bilinear", False, (None, None)),
]


@pytest.fixture
def poison(driver):
    cuda_ops.set_poison(True)
    yield
    cuda_ops.set_poison(False)


@pytest.mark.parametrize("shape,kw,out,mode,align,scales", INTERP_CASES)
def test_interpolate_2d_against_numpy_and_cuda_vs_cpu_grads(shape, kw, out, mode, align, scales, driver, poison):
    N, C, H, W = shape
    base = RNG.standard_normal((H, W, N, C)).astype(np.float32)          # read through a permuted view
    gout = RNG.standard_normal((N, C) + out).astype(np.float32)
    ref = ref_interp(base.transpose(2, 3, 0, 1).astype(np.float64), out, mode, align, scales)
    res = {}
    for dev in ("cpu", "cuda"):
        t = _t(base, dev, grad=True)
        x = t.permute(2, 3, 0, 1)
        y = F.interpolate(x, **kw)
        assert tuple(y.shape) == (N, C) + out
        # the source coordinates are float32 (as PyTorch's): ~1e-7 * W of error in each weight
        np.testing.assert_allclose(y.detach().cpu().numpy(), ref, rtol=1e-4, atol=2e-4)
        (y * _t(gout, dev)).sum().backward()
        res[dev] = t.grad.cpu().numpy()
    np.testing.assert_allclose(res["cuda"], res["cpu"], rtol=1e-4, atol=1e-5)


def test_interpolate_gradients_finite_differences_and_1d():
    for kw in ({"size": (4, 7), "mode": "bilinear"}, {"size": (3, 5), "mode": "bilinear", "align_corners": True},
               {"scale_factor": 2}):
        x = RNG.standard_normal((1, 2, 3, 4))
        y0 = F.interpolate(_t(x), **kw)
        gout = RNG.standard_normal(tuple(y0.shape))
        tx = _t(x, grad=True)
        y = F.interpolate(tx, **kw)
        (y * _t(gout)).sum().backward()
        want = numeric_grad(lambda z, kw=kw: F.interpolate(_t(z), **kw).numpy(), x, gout)
        np.testing.assert_allclose(tx.grad.numpy(), want, rtol=1e-6, atol=1e-7)
    x = RNG.standard_normal((2, 3, 5))
    y = F.interpolate(_t(x, grad=True), size=8, mode="linear")
    assert y.grad_fn.name() == "UpsampleLinear1DBackward0"
    np.testing.assert_allclose(y.detach().numpy(), np.einsum("ncw,ow->nco", x, ref_linear_weights(5, 8, False)),
                               rtol=1e-12, atol=1e-14)
    y = F.interpolate(_t(x, grad=True), scale_factor=3)
    assert y.grad_fn.name() == "UpsampleNearest1DBackward0"
    np.testing.assert_array_equal(y.detach().numpy(), np.repeat(x, 3, axis=2))
    assert F.interpolate(_t(x[None], grad=True), scale_factor=2).grad_fn.name() == "UpsampleNearest2DBackward0"


def test_interpolate_errors():
    x = rawdev.randn(1, 1, 3)
    with pytest.raises(ValueError, match="either size or scale_factor should be defined"):
        F.interpolate(x)
    with pytest.raises(ValueError, match="only one of size or scale_factor should be defined"):
        F.interpolate(x, size=4, scale_factor=2)
    with pytest.raises(ValueError, match="align_corners option can only be set with the interpolating modes"):
        F.interpolate(x, size=4, align_corners=True)
    with pytest.raises(NotImplementedError, match="Got 3D input, but bilinear mode needs 4D input"):
        F.interpolate(x, size=4, mode="bilinear")
    with pytest.raises(ValueError, match="Input and output must have the same number of spatial dimensions"):
        F.interpolate(x, size=(4, 5))
    up = nn.Upsample(scale_factor=2, mode="bilinear")
    assert repr(up) == "Upsample(scale_factor=2.0, mode='bilinear')"
    assert list(up.state_dict()) == []


# ---------------------------------------------------------------------------------------------- pad
@pytest.mark.parametrize("mode,np_mode", [("constant", "constant"), ("reflect", "reflect"), ("replicate", "edge"),
                                          ("circular", "wrap")])
def test_pad_modes_against_numpy(mode, np_mode, driver, poison):
    base = RNG.standard_normal((5, 4, 2, 3)).astype(np.float32)      # [H, W, N, C], read as a permuted view
    x_np = base.transpose(2, 3, 0, 1)
    pads = (2, 1, 3, 0)                                              # (left, right, top, bottom)
    ref = np.pad(x_np.astype(np.float64), ((0, 0), (0, 0), (3, 0), (2, 1)), mode=np_mode)
    gout = RNG.standard_normal(ref.shape).astype(np.float32)
    grads = {}
    for dev in ("cpu", "cuda"):
        t = _t(base, dev, grad=True)
        y = F.pad(t.permute(2, 3, 0, 1), pads, mode=mode)
        np.testing.assert_allclose(y.detach().cpu().numpy(), ref, rtol=1e-6, atol=1e-6)
        (y * _t(gout, dev)).sum().backward()
        grads[dev] = t.grad.cpu().numpy()
    np.testing.assert_allclose(grads["cuda"], grads["cpu"], rtol=1e-5, atol=1e-5)
    x64 = x_np[:1, :1].astype(np.float64).copy()
    g64 = RNG.standard_normal((1, 1) + ref.shape[2:])
    tx = _t(x64, grad=True)
    (F.pad(tx, pads, mode=mode) * _t(g64)).sum().backward()
    want = numeric_grad(lambda z: np.pad(z, ((0, 0), (0, 0), (3, 0), (2, 1)), mode=np_mode), x64, g64)
    np.testing.assert_allclose(tx.grad.numpy(), want, rtol=1e-6, atol=1e-7)


def test_pad_constant_value_negative_and_errors():
    x = np.arange(12, dtype=np.float32).reshape(3, 4)
    y = F.pad(_t(x), (1, -2), value=7.5).numpy()
    np.testing.assert_array_equal(y, np.pad(x[:, :2], ((0, 0), (1, 0)), constant_values=7.5))
    with pytest.raises(RuntimeError, match="Padding length must be divisible by 2"):
        F.pad(_t(x), (1,))
    with pytest.raises(RuntimeError, match=r"Padding size should be less than the corresponding input dimension, "
                                           r"but got: padding \(3, 3\) at dimension 2 of input \[1, 1, 3\]"):
        F.pad(rawdev.ones(1, 1, 3), (3, 3), mode="reflect")
    assert repr(nn.ZeroPad2d(1)) == "ZeroPad2d((1, 1, 1, 1))"
    assert repr(nn.ConstantPad1d((1, 2), 0.5)) == "ConstantPad1d(padding=(1, 2), value=0.5)"
    assert repr(nn.ReflectionPad2d((1, 0, 2, 1))) == "ReflectionPad2d((1, 0, 2, 1))"
    np.testing.assert_array_equal(nn.ReplicationPad1d(2)(_t(x[None])).numpy(), np.pad(x[None], ((0, 0),) * 2 +
                                                                                        ((2, 2),), mode="edge"))


# ---------------------------------------------------------------------------------------------- pixel shuffle
def test_pixel_shuffle_roundtrip_against_loops(driver, poison):
    r, N, C, H, W = 2, 2, 3, 3, 5
    x = RNG.standard_normal((N, C * r * r, H, W)).astype(np.float32)
    ref = np.zeros((N, C, H * r, W * r), np.float32)
    for n, c, h, w, i, j in np.ndindex(N, C, H, W, r, r):
        ref[n, c, h * r + i, w * r + j] = x[n, c * r * r + i * r + j, h, w]
    for dev in ("cpu", "cuda"):
        y = nn.PixelShuffle(r)(_t(x, dev))
        np.testing.assert_array_equal(y.cpu().numpy(), ref)
        np.testing.assert_array_equal(nn.PixelUnshuffle(r)(y).cpu().numpy(), x)
    with pytest.raises(RuntimeError, match=r"input.size\(-3\)=3 is not divisible by 4"):
        F.pixel_shuffle(rawdev.ones(1, 3, 2, 2), 2)


def test_deprecated_upsample_functions_warn_and_match_interpolate():
    x = RNG.standard_normal((1, 2, 3, 4))
    with pytest.warns(UserWarning, match="upsample_bilinear` is deprecated"):
        y = F.upsample_bilinear(_t(x), size=(5, 6))
    np.testing.assert_allclose(y.numpy(), ref_interp(x, (5, 6), "bilinear", align=True), rtol=1e-12, atol=1e-14)
    with pytest.warns(UserWarning, match="upsample_nearest` is deprecated"):
        y = F.upsample_nearest(_t(x), scale_factor=2)
    np.testing.assert_array_equal(y.numpy(), x.repeat(2, axis=2).repeat(2, axis=3))
    with pytest.warns(UserWarning, match="upsample` is deprecated"):
        y = F.upsample(_t(x), size=(5, 7), mode="bilinear")
    np.testing.assert_allclose(y.numpy(), ref_interp(x, (5, 7), "bilinear"), rtol=1e-12, atol=1e-14)
    b = nn.UpsamplingBilinear2d(size=(5, 6))
    np.testing.assert_allclose(b(_t(x)).numpy(), ref_interp(x, (5, 6), "bilinear", align=True), rtol=1e-12, atol=1e-14)
