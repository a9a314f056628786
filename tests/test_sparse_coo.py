"""Sparse COO tensors: construction, coalescing, conversion and sparse @ dense with gradients, against float64
numpy references, on the cpu and on the (simulated) GPU."""
import numpy as np
import pytest
import rawdev


def seeded_rng(request):
    """A fresh seed each run, printed (pytest shows it on failure) so a failing draw can be replayed."""
    seed = int(np.random.SeedSequence().entropy % 2 ** 32)
    print(f"{request.node.name}: seed {seed}")
    return np.random.default_rng(seed)


def _graph(rng, n=6, edges=14):
    """A random adjacency with duplicate edges (so coalescing matters) and its dense float64 matrix."""
    row = rng.integers(0, n, edges)
    col = rng.integers(0, n, edges)
    row[:2], col[:2] = row[2], col[2]     # duplicates
    w = rng.standard_normal(edges)
    dense = np.zeros((n, n))
    np.add.at(dense, (row, col), w)
    return np.stack([row, col]), w, dense


def test_the_issue_repro_and_the_attributes():
    s = rawdev.eye(3).to_sparse()
    assert s.is_sparse and s.layout is rawdev.sparse_coo and s._nnz() == 3 and s.shape == (3, 3)
    assert s.is_coalesced() and s.indices().tolist() == [[0, 1, 2], [0, 1, 2]] and s.values().tolist() == [1, 1, 1]
    assert s.to_dense().tolist() == np.eye(3).tolist() and not rawdev.eye(3).is_sparse
    with pytest.raises(NotImplementedError, match=r"Tensor\.unfold is not supported for sparse COO tensors"):
        s.unfold(0, 1, 1)
    with pytest.raises(NotImplementedError, match=r"torch\.sparse\.softmax is not supported"):
        rawdev.sparse.softmax(s, 0)
    with pytest.raises(RuntimeError, match="size is inconsistent with indices"):
        rawdev.sparse_coo_tensor([[0, 3]], [1.0, 2.0], (3,))
    with pytest.raises(RuntimeError, match="same nnz"):
        rawdev.sparse_coo_tensor([[0, 1]], [1.0], (3,))


def test_coalesce_to_dense_and_products_on_the_cpu(request):
    rng = seeded_rng(request)
    idx, w, dense = _graph(rng)
    a = rawdev.sparse_coo_tensor(idx, rawdev.tensor(w), (6, 6))
    assert not a.is_coalesced() and a._nnz() == 14
    with pytest.raises(RuntimeError, match="uncoalesced"):
        a.indices()
    c = a.coalesce()
    assert c.is_coalesced() and c._nnz() == len({(r, k) for r, k in idx.T})
    lin = c.indices()[0].numpy() * 6 + c.indices()[1].numpy()
    assert (np.diff(lin) > 0).all()
    assert np.allclose(c.to_dense().numpy(), dense, rtol=1e-12, atol=1e-12)
    assert np.allclose(a.to_dense().numpy(), dense, rtol=1e-12, atol=1e-12)
    assert abs(rawdev.sparse.sum(a).item() - dense.sum()) < 1e-12
    x = rng.standard_normal((6, 4))
    for out in (rawdev.sparse.mm(a, rawdev.tensor(x)), rawdev.spmm(a, rawdev.tensor(x)), rawdev.mm(a, rawdev.tensor(x)),
                a @ rawdev.tensor(x), rawdev.matmul(a, rawdev.tensor(x))):
        assert np.allclose(out.numpy(), dense @ x, rtol=1e-12, atol=1e-12)
    v = rng.standard_normal(6)
    assert np.allclose((a @ rawdev.tensor(v)).numpy(), dense @ v, rtol=1e-12, atol=1e-12)
    assert np.allclose((rawdev.tensor(x.T) @ a).numpy(), x.T @ dense, rtol=1e-12, atol=1e-12)
    assert np.allclose(a.t().to_dense().numpy(), dense.T) and np.allclose((a * 2).to_dense().numpy(), 2 * dense)
    # to_sparse of a 3-D tensor with sparse_dim=1: rows that hold a nonzero
    t = np.zeros((4, 2, 3))
    t[1, 0, 2], t[3, 1, 1] = 5.0, -1.0
    s = rawdev.tensor(t).to_sparse(1)
    assert s.sparse_dim() == 1 and s.dense_dim() == 2 and s.indices().tolist() == [[1, 3]]
    assert np.array_equal(s.to_dense().numpy(), t)


def _gcn_grads(dev, idx, w, x, wt):
    a = rawdev.sparse_coo_tensor(idx, rawdev.tensor(w, dtype=rawdev.float32), (6, 6)).to(dev)
    X = rawdev.tensor(x, dtype=rawdev.float32, device=dev, requires_grad=True)
    W = rawdev.tensor(wt, dtype=rawdev.float32, device=dev, requires_grad=True)
    out = rawdev.sparse.mm(a, X @ W)
    (out ** 2).sum().backward()
    return out.detach().cpu().numpy(), X.grad.cpu().numpy(), W.grad.cpu().numpy()


def _reference(dense, x, wt):
    h = x @ wt
    out = dense @ h
    g_out = 2 * out
    g_h = dense.T @ g_out
    return out, g_h @ wt.T, x.T @ g_h


def test_gradients_for_the_dense_operand_and_the_values(request):
    rng = seeded_rng(request)
    idx, w, dense = _graph(rng)
    x, wt = rng.standard_normal((6, 3)), rng.standard_normal((3, 2))
    a = rawdev.sparse_coo_tensor(idx, rawdev.tensor(w), (6, 6), requires_grad=True)
    X = rawdev.tensor(x, requires_grad=True)
    W = rawdev.tensor(wt, requires_grad=True)
    out = rawdev.sparse.mm(a, X @ W)
    (out ** 2).sum().backward()
    ref_out, ref_gx, ref_gw = _reference(dense, x, wt)
    for got, ref in ((out.detach().numpy(), ref_out), (X.grad.numpy(), ref_gx), (W.grad.numpy(), ref_gw)):
        assert np.abs(got - ref).max() <= 1e-10 * (1 + np.abs(ref).max())
    # the values' gradient: d/dw_e = g_out[row_e] . (X W)[col_e]
    gv = ((2 * ref_out)[idx[0]] * (x @ wt)[idx[1]]).sum(1)
    assert np.abs(a._values().grad.numpy() - gv).max() <= 1e-10 * (1 + np.abs(gv).max())


@pytest.mark.slow
def test_on_the_device_against_the_cpu(request, driver):
    rng = seeded_rng(request)
    idx, w, dense = _graph(rng)
    x, wt = rng.standard_normal((6, 3)), rng.standard_normal((3, 2))
    got = _gcn_grads("cuda", idx, w, x, wt)
    ref = _reference(dense, x, wt)
    for g, r in zip(got, ref):
        assert np.abs(g - r).max() <= 2e-5 * (1 + np.abs(r).max())
    s = rawdev.eye(3, device="cuda").to_sparse()
    assert s.device.type == "cuda" and s.to_dense().cpu().tolist() == np.eye(3).tolist()
    c = rawdev.sparse_coo_tensor(idx, rawdev.tensor(w, dtype=rawdev.float32), (6, 6)).cuda().coalesce()
    assert np.abs(c.to_dense().cpu().numpy() - dense).max() < 1e-5


def test_a_sparse_tensor_saves_and_loads(tmp_path):
    a = rawdev.sparse_coo_tensor([[0, 2], [1, 0]], [1.5, -2.0], (3, 3))
    rawdev.save({"adj": a}, tmp_path / "s.pt")
    back = rawdev.load(tmp_path / "s.pt")["adj"]
    assert back.is_sparse and back.to_dense().tolist() == a.to_dense().tolist()
