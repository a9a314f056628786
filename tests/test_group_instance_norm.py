"""GroupNorm / InstanceNorm (rawdev/ops/normalization/): float64 numpy references written here, finite-difference
gradients on the cpu, the cuda path (simulator) against the cpu at odd sizes with non-contiguous inputs and
poisoned outputs, PyTorch's names, repr and errors."""
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


# ---------------------------------------------------------------------------------------------- group norm
def ref_group_norm(x, G, w=None, b=None, eps=1e-5):
    N, C = x.shape[:2]
    xr = x.reshape(N, G, (x.size // max(N * G, 1)))
    if x.size == 0:
        return x.copy()
    mean = xr.mean(axis=2, keepdims=True)
    var = ((xr - mean) ** 2).mean(axis=2, keepdims=True)
    y = ((xr - mean) / np.sqrt(var + eps)).reshape(x.shape)
    bshape = (1, C) + (1,) * (x.ndim - 2)
    if w is not None:
        y = y * w.reshape(bshape)
    if b is not None:
        y = y + b.reshape(bshape)
    return y


# ---------------------------------------------------------------------------------------------- instance norm
def ref_instance_norm(x, w=None, b=None, eps=1e-5):
    return ref_group_norm(x, x.shape[1], w, b, eps)


@pytest.fixture
def poison(driver):
    cuda_ops.set_poison(True)
    yield
    cuda_ops.set_poison(False)


@pytest.mark.parametrize("shape,G", [((2, 6, 5), 3), ((3, 4, 7, 9), 2), ((1, 3), 1), ((2, 8, 300), 4),
                                     ((5, 6, 1, 1), 6), ((0, 4, 3), 2)])
def test_group_norm_values_cuda_matches_cpu(shape, G, driver, poison):
    x = (RNG.standard_normal(shape) * 2 + 50).astype(np.float32)     # a large mean: Welford's case
    C = shape[1]
    w, b = RNG.standard_normal(C).astype(np.float32), RNG.standard_normal(C).astype(np.float32)
    ref = ref_group_norm(x.astype(np.float64), G, w, b)
    for dev in ("cpu", "cuda"):
        y = F.group_norm(_t(x, dev), G, _t(w, dev), _t(b, dev))
        assert y.shape == shape and y.device.type == dev
        np.testing.assert_allclose(y.cpu().numpy(), ref, rtol=1e-4, atol=2e-4)
        y0 = F.group_norm(_t(x, dev), G)
        np.testing.assert_allclose(y0.cpu().numpy(), ref_group_norm(x.astype(np.float64), G), rtol=1e-4, atol=2e-4)


def test_group_norm_gradients_finite_differences():
    x = RNG.standard_normal((2, 6, 3))
    w, b = RNG.standard_normal(6), RNG.standard_normal(6)
    gout = RNG.standard_normal(x.shape)
    tx, tw, tb = _t(x, grad=True), _t(w, grad=True), _t(b, grad=True)
    y = F.group_norm(tx, 3, tw, tb)
    assert y.grad_fn.name() == "NativeGroupNormBackward0"
    (y * _t(gout)).sum().backward()
    np.testing.assert_allclose(tx.grad.numpy(), numeric_grad(lambda z: ref_group_norm(z, 3, w, b), x, gout),
                               rtol=1e-6, atol=1e-7)
    np.testing.assert_allclose(tw.grad.numpy(), numeric_grad(lambda z: ref_group_norm(x, 3, z, b), w, gout),
                               rtol=1e-6, atol=1e-7)
    np.testing.assert_allclose(tb.grad.numpy(), gout.sum(axis=(0, 2)), rtol=1e-12, atol=1e-14)


@pytest.mark.parametrize("shape,G,affine", [((3, 6, 5, 7), 3, True), ((2, 4, 301), 4, False), ((4, 6), 2, True)])
def test_group_norm_cuda_gradients_match_cpu_on_a_permuted_input(shape, G, affine, driver, poison):
    # the input is a permuted (non-contiguous) view of a [.., C, N] array
    base = RNG.standard_normal(shape[1:] + shape[:1]).astype(np.float32)
    perm = (base.ndim - 1,) + tuple(range(base.ndim - 1))
    gout = RNG.standard_normal(shape).astype(np.float32)
    grads = {}
    for dev in ("cpu", "cuda"):
        gn = nn.GroupNorm(G, shape[1], affine=affine).to(dev)
        if affine:
            with rawdev.no_grad():
                gn.weight.copy_(_t(np.linspace(0.5, 1.5, shape[1], dtype=np.float32), dev))
                gn.bias.copy_(_t(np.linspace(-1, 1, shape[1], dtype=np.float32), dev))
        t = _t(base, dev, grad=True)
        xin = t.permute(*perm)
        assert not xin.is_contiguous()
        y = gn(xin)
        (y * _t(gout, dev)).sum().backward()
        grads[dev] = [y.detach().cpu().numpy(), t.grad.cpu().numpy()]
        if affine:
            grads[dev] += [gn.weight.grad.cpu().numpy(), gn.bias.grad.cpu().numpy()]
    np.testing.assert_allclose(grads["cpu"][0], ref_group_norm(base.transpose(perm).astype(np.float64), G,
                                                               *( [np.linspace(0.5, 1.5, shape[1]),
                                                                   np.linspace(-1, 1, shape[1])] if affine else [])),
                               rtol=1e-4, atol=1e-4)
    for a, b in zip(grads["cpu"], grads["cuda"]):
        np.testing.assert_allclose(b, a, rtol=1e-4, atol=1e-4)


def test_group_norm_module_api_and_errors():
    gn = nn.GroupNorm(2, 6, eps=1e-6)
    assert repr(gn) == "GroupNorm(2, 6, eps=1e-06, affine=True, bias=True)"
    assert list(gn.state_dict()) == ["weight", "bias"]
    assert (gn.weight.detach().numpy() == 1).all() and (gn.bias.detach().numpy() == 0).all()
    assert list(nn.GroupNorm(2, 6, affine=False).state_dict()) == []
    assert nn.GroupNorm(2, 6, bias=False).bias is None
    with pytest.raises(ValueError, match=r"num_channels \(6\) must be divisible by num_groups \(4\)"):
        nn.GroupNorm(4, 6)
    with pytest.raises(RuntimeError, match=r"Expected number of channels in input to be divisible by num_groups, "
                                           r"but got input of shape \[2, 6, 3\] and num_groups=4"):
        F.group_norm(rawdev.ones(2, 6, 3), 4)
    with pytest.raises(RuntimeError, match=r"Expected weight to be a vector of size equal to the number of channels"):
        F.group_norm(rawdev.ones(2, 6, 3), 3, rawdev.ones(5))
    with pytest.raises(RuntimeError, match="Expected at least 2 dimensions for input tensor but received 1"):
        F.group_norm(rawdev.ones(6), 2)


def test_group_norm_params_move_with_the_module(driver):
    gn = nn.GroupNorm(2, 4).cuda()
    assert gn.weight.device.type == "cuda" and gn.bias.device.type == "cuda"
    x = rawdev.randn(3, 4, 5)
    np.testing.assert_allclose(gn(x.cuda()).detach().cpu().numpy(), gn.cpu()(x).detach().numpy(), rtol=1e-4, atol=1e-5)
    assert gn.weight.device.type == "cpu"


@pytest.mark.parametrize("cls,shape", [(nn.InstanceNorm1d, (3, 5, 17)), (nn.InstanceNorm2d, (2, 3, 6, 5)),
                                       (nn.InstanceNorm1d, (4, 9)), (nn.InstanceNorm2d, (3, 4, 7))])
def test_instance_norm_modules(cls, shape, driver, poison):
    x = RNG.standard_normal(shape).astype(np.float32) * 3 + 1
    batched = x if x.ndim == cls._no_batch + 1 else x[None]
    ref = ref_instance_norm(batched.astype(np.float64)).reshape(shape)
    C = batched.shape[1]
    for dev in ("cpu", "cuda"):
        m = cls(C).to(dev)
        assert list(m.state_dict()) == []
        np.testing.assert_allclose(m(_t(x, dev)).cpu().numpy(), ref, rtol=1e-4, atol=2e-4)


def test_instance_norm_running_stats_and_eval(driver):
    x = RNG.standard_normal((4, 3, 10)).astype(np.float32) * 2 + 3
    x64 = x.astype(np.float64)
    want_mean = 0.9 * 0 + 0.1 * x64.mean(axis=2).mean(axis=0)
    want_var = 0.9 * 1 + 0.1 * x64.var(axis=2, ddof=1).mean(axis=0)
    for dev in ("cpu", "cuda"):
        m = nn.InstanceNorm1d(3, affine=True, track_running_stats=True).to(dev)
        assert list(m.state_dict()) == ["weight", "bias", "running_mean", "running_var", "num_batches_tracked"]
        assert repr(m) == ("InstanceNorm1d(3, eps=1e-05, momentum=0.1, affine=True, bias=True, "
                           "track_running_stats=True)")
        y = m(_t(x, dev))
        np.testing.assert_allclose(y.detach().cpu().numpy(), ref_instance_norm(x64), rtol=1e-4, atol=2e-4)
        np.testing.assert_allclose(m.running_mean.cpu().numpy(), want_mean, rtol=1e-4, atol=1e-5)
        np.testing.assert_allclose(m.running_var.cpu().numpy(), want_var, rtol=1e-4, atol=1e-5)
        m.eval()
        ye = m(_t(x, dev)).detach().cpu().numpy()
        np.testing.assert_allclose(ye, (x64 - want_mean[:, None]) / np.sqrt(want_var[:, None] + 1e-5),
                                   rtol=1e-4, atol=2e-4)


def test_instance_norm_errors_and_gradient():
    with pytest.raises(ValueError, match="Expected more than 1 spatial element when training"):
        F.instance_norm(rawdev.ones(2, 3, 1))
    with pytest.raises(ValueError, match=r"expected 3D or 4D input \(got 2D input\)"):
        nn.InstanceNorm2d(3)(rawdev.ones(2, 3))
    with pytest.raises(ValueError, match=r"expected input's size at dim=1 to match num_features \(4\), but got: 3"):
        nn.InstanceNorm1d(4, affine=True)(rawdev.ones(2, 3, 5))
    with pytest.warns(UserWarning, match="does not match num_features"):
        nn.InstanceNorm1d(4)(rawdev.randn(2, 3, 5))
    x, gout = RNG.standard_normal((2, 3, 4)), RNG.standard_normal((2, 3, 4))
    tx = _t(x, grad=True)
    (F.instance_norm(tx) * _t(gout)).sum().backward()
    np.testing.assert_allclose(tx.grad.numpy(), numeric_grad(ref_instance_norm, x, gout), rtol=1e-6, atol=1e-7)


def test_instance_norm_refuses_running_stats_it_does_not_track():
    m = nn.InstanceNorm1d(3, affine=True)
    sd = {"weight": rawdev.ones(3), "bias": rawdev.zeros(3), "running_mean": rawdev.zeros(3),
          "running_var": rawdev.ones(3)}
    for strict in (True, False):        # PyTorch reports it as an error either way
        with pytest.raises(RuntimeError, match=r'Unexpected running stats buffer\(s\) "running_mean" and '
                                               r'"running_var" for InstanceNorm1d with track_running_stats=False'):
            m.load_state_dict(sd, strict=strict)
    m.load_state_dict({"weight": rawdev.full((3,), 2.0), "bias": rawdev.zeros(3)})
    assert (m.weight.detach().numpy() == 2).all()
