"""EmbeddingBag (rawdev/ops/embedding_bag/): sum/mean/max bags from offsets or 2-D inputs against a float64 numpy
reference written here, the cuda path (simulator, poisoned outputs) against the cpu, the module, PyTorch's errors,
and an index out of range as a device-side assert."""
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


# ---------------------------------------------------------------------------------------------- embedding bag
def ref_embedding_bag(w, idx, bounds, mode, psw=None, pad=None):
    out = np.zeros((len(bounds) - 1, w.shape[1]))
    for b in range(len(bounds) - 1):
        rows = [(j, i) for j, i in enumerate(idx[bounds[b]:bounds[b + 1]], bounds[b]) if i != pad]
        if not rows:
            continue
        vals = np.stack([w[i] * (1 if psw is None else psw[j]) for j, i in rows])
        out[b] = {"sum": vals.sum(0), "mean": vals.mean(0), "max": vals.max(0)}[mode]
    return out


@pytest.fixture
def poison(driver):
    cuda_ops.set_poison(True)
    yield
    cuda_ops.set_poison(False)


@pytest.fixture
def fresh_sim():
    from rawdev.runtime import reset_for_tests
    reset_for_tests("sim")
    yield
    reset_for_tests("sim")   # the next test gets a power-on device, not this one's sticky error


@pytest.mark.parametrize("mode", ["sum", "mean", "max"])
@pytest.mark.parametrize("pad", [None, 3])
def test_embedding_bag_offsets_against_numpy_cuda_vs_cpu(mode, pad, driver, poison):
    V, D = 13, 37
    idx = RNG.integers(0, V, 23)
    idx[[4, 9]] = 3
    offsets = np.array([0, 5, 5, 11, 20])                       # bag 1 is empty
    bounds = np.append(offsets, len(idx))
    w = RNG.standard_normal((V, D)).astype(np.float32)
    psw = RNG.random(23).astype(np.float32) if mode == "sum" else None
    ref = ref_embedding_bag(w.astype(np.float64), idx, bounds, mode, psw, pad)
    gout = RNG.standard_normal(ref.shape).astype(np.float32)
    res = {}
    for dev in ("cpu", "cuda"):
        tw = _t(w, dev, grad=True)
        tp = _t(psw, dev, grad=True) if psw is not None else None
        y = F.embedding_bag(_t(idx, dev), tw, _t(offsets, dev), mode=mode, per_sample_weights=tp, padding_idx=pad)
        np.testing.assert_allclose(y.detach().cpu().numpy(), ref, rtol=1e-5, atol=1e-5)
        (y * _t(gout, dev)).sum().backward()
        res[dev] = [tw.grad.cpu().numpy()] + ([tp.grad.cpu().numpy()] if tp is not None else [])
    for a, b in zip(res["cpu"], res["cuda"]):
        np.testing.assert_allclose(b, a, rtol=1e-4, atol=1e-5)
    # the weight's gradient by finite differences (float64, cpu; a small slice of D)
    w64, g64 = w[:, :3].astype(np.float64), gout[:, :3].astype(np.float64)
    tw = _t(w64, grad=True)
    tp = _t(psw.astype(np.float64), grad=True) if psw is not None else None
    (F.embedding_bag(_t(idx), tw, _t(offsets), mode=mode, per_sample_weights=tp, padding_idx=pad)
     * _t(g64)).sum().backward()
    want_w = numeric_grad(lambda z: ref_embedding_bag(z, idx, bounds, mode, psw, pad), w64, g64)
    np.testing.assert_allclose(tw.grad.numpy(), want_w, rtol=1e-6, atol=1e-7)
    if psw is not None:
        want_p = numeric_grad(lambda z: ref_embedding_bag(w64, idx, bounds, mode, z, pad), psw.astype(np.float64), g64)
        np.testing.assert_allclose(tp.grad.numpy(), want_p, rtol=1e-6, atol=1e-7)


def test_embedding_bag_2d_last_offset_module_and_errors(driver):
    bag = nn.EmbeddingBag(10, 4, mode="sum", padding_idx=0)
    assert repr(bag) == "EmbeddingBag(10, 4, mode='sum', padding_idx=0)"
    assert list(bag.state_dict()) == ["weight"] and (bag.weight.detach().numpy()[0] == 0).all()
    w = bag.weight.detach().numpy().astype(np.float64)
    x2 = np.array([[1, 0, 4], [9, 9, 2]])
    want = ref_embedding_bag(w, x2.reshape(-1), [0, 3, 6], "sum", pad=0)
    np.testing.assert_allclose(bag(_t(x2)).detach().numpy(), want, rtol=1e-6)
    bag.cuda()
    np.testing.assert_allclose(bag(_t(x2, "cuda")).detach().cpu().numpy(), want, rtol=1e-5, atol=1e-6)
    last = F.embedding_bag(_t(np.array([1, 2, 3, 4])), _t(w), _t(np.array([0, 1, 3])), mode="sum",
                           include_last_offset=True)
    np.testing.assert_allclose(last.numpy(), [w[1], w[2] + w[3]])
    with pytest.raises(ValueError, match="offsets has to be a 1D Tensor but got None"):
        F.embedding_bag(_t(np.array([1, 2])), _t(w))
    with pytest.raises(ValueError, match="if input is 2D, then offsets has to be None"):
        F.embedding_bag(_t(x2), _t(w), _t(np.array([0])))
    with pytest.raises(NotImplementedError, match="per_sample_weights is only supported for mode='sum'"):
        F.embedding_bag(_t(x2), _t(w), per_sample_weights=rawdev.ones(2, 3))
    with pytest.raises(RuntimeError, match="offsets\\[0\\] has to be 0"):
        F.embedding_bag(_t(np.array([1, 2])), _t(w), _t(np.array([1])))
    with pytest.raises(ValueError, match="mode has to be one of sum, mean or max"):
        F.embedding_bag(_t(x2), _t(w), mode="min")


def test_embedding_bag_index_out_of_range_is_a_device_side_assert(fresh_sim):
    from rawdev.errors import DeviceAssertError
    w = RNG.standard_normal((5, 3)).astype(np.float32)
    idx, offsets = np.array([1, 5, 2]), np.array([0, 2])
    with pytest.raises(IndexError, match="index 5 is out of bounds for dimension 0 with size 5"):
        F.embedding_bag(_t(idx), _t(w), _t(offsets))
    out = F.embedding_bag(_t(idx, "cuda"), _t(w, "cuda"), _t(offsets, "cuda"))
    with pytest.raises(DeviceAssertError, match=r"i >= 0 && i < V"):
        out.cpu()
