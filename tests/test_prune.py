"""nn.utils.prune against NumPy masks: L1 and random unstructured, Ln structured, iterative pruning among the
surviving entries, global pruning, custom masks, remove(), and the pruned weight used on the simulated GPU."""
import numpy as np
import pytest
import rawdev
from rawdev import nn
from rawdev.nn.utils import prune


def _linear(W, dev="cpu"):
    m = nn.Linear(W.shape[1], W.shape[0])
    m.weight.data.copy_(rawdev.tensor(W, dtype=rawdev.float32))
    return m.to(dev)


def test_l1_iterative_and_structured(driver):
    r = np.random.default_rng()
    W = r.standard_normal((6, 5)).astype(np.float32)
    for dev in ("cpu", "cuda"):
        m = _linear(W, dev)
        prune.l1_unstructured(m, "weight", amount=0.3)                   # round(0.3 · 30) = 9 entries
        assert sorted(m.state_dict()) == ["bias", "weight_mask", "weight_orig"]
        mask = m.weight_mask.cpu().numpy()
        want = np.ones(30)
        want[np.argsort(np.abs(W).ravel(), kind="stable")[:9]] = 0
        np.testing.assert_array_equal(mask.ravel(), want)
        prune.l1_unstructured(m, "weight", amount=4)                     # 4 more among the 21 left
        mask2 = m.weight_mask.cpu().numpy().ravel()
        alive = np.nonzero(want)[0]
        want2 = want.copy()
        want2[alive[np.argsort(np.abs(W).ravel()[alive], kind="stable")[:4]]] = 0
        np.testing.assert_array_equal(mask2, want2)
        prune.ln_structured(m, "weight", amount=2, n=2, dim=0)            # 2 of the 6 rows, by the L2 norm
        mask3 = m.weight_mask.cpu().numpy()
        rows = np.linalg.norm(W, axis=1)
        # as PyTorch's PruningContainer: only rows not already wholly pruned compete (the L1 steps can empty one)
        alive_rows = np.nonzero(want2.reshape(6, 5).any(1))[0]
        dead_rows = alive_rows[np.argsort(rows[alive_rows], kind="stable")[:2]]
        assert (mask3[dead_rows] == 0).all()
        np.testing.assert_array_equal(np.delete(mask3, dead_rows, 0), np.delete(want2.reshape(6, 5), dead_rows, 0))
        x = rawdev.randn(3, 5).to(dev)
        y = m(x)
        np.testing.assert_allclose(y.detach().cpu().numpy(), x.cpu().numpy() @ (W * mask3).T +
                                   m.bias.detach().cpu().numpy(), rtol=1e-5, atol=1e-6)
        y.sum().backward()
        assert (m.weight_orig.grad.cpu().numpy()[mask3 == 0] == 0).all()
        assert prune.is_pruned(m)
        prune.remove(m, "weight")
        assert sorted(m.state_dict()) == ["bias", "weight"] and not prune.is_pruned(m)
        np.testing.assert_array_equal(m.weight.detach().cpu().numpy(), W * mask3)


def test_random_global_and_custom():
    r = np.random.default_rng()
    W = r.standard_normal((4, 6)).astype(np.float32)
    m = prune.random_unstructured(_linear(W), "weight", amount=7)
    assert int((m.weight_mask == 0).sum()) == 7
    a, b = _linear(W), _linear(W[:2] * 3)
    prune.global_unstructured([(a, "weight"), (b, "weight")], pruning_method=prune.L1Unstructured, amount=0.25)
    allw = np.concatenate([np.abs(W).ravel(), np.abs(W[:2] * 3).ravel()])
    cut = np.sort(allw)[int(round(0.25 * allw.size)) - 1]
    assert ((a.weight_mask.numpy() == 0) == (np.abs(W) <= cut)).all()
    assert int((a.weight_mask == 0).sum() + (b.weight_mask == 0).sum()) == round(0.25 * allw.size)
    mask = rawdev.tensor((r.random((4, 6)) > 0.5).astype(np.float32))
    c = prune.custom_from_mask(_linear(W), "weight", mask)
    np.testing.assert_array_equal(c.weight.detach().numpy(), W * mask.numpy())
    with pytest.raises(ValueError, match="has to be pruned before pruning can be removed"):
        prune.remove(_linear(W), "weight")
    with pytest.raises(ValueError, match="should be smaller than the number of parameters"):
        prune.l1_unstructured(_linear(W), "weight", amount=100)
