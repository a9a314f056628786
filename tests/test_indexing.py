"""Indexing with an index tensor: index_select / index_add / index_copy / index_put_, x[idx] with one index
tensor, list or 1-D mask (the embedding lookup C[X] of a character model), and x[idx] = v — against numpy on the
cpu and on the simulator (index.ptx: gathers, scatters, atomic adds), with gradients."""
import numpy as np
import pytest
import rawdev
from rawdev.ops import cuda as cuda_ops

RNG = np.random.default_rng(11)


@pytest.fixture(params=["cpu", "sim"])
def device(request):
    if request.param == "cpu":
        yield "cpu"
        return
    from rawdev.runtime import reset_for_tests
    reset_for_tests("sim")
    cuda_ops.set_poison(True)
    yield "cuda"
    cuda_ops.set_poison(False)


def t(a, device, **kw):
    return rawdev.tensor(a, device=device, **kw)


def host(x):
    return np.asarray(x.detach().cpu())


@pytest.mark.parametrize("dtype", [np.float32, np.int64, np.bool_, np.uint8])
def test_index_select_every_element_size(device, dtype):
    a = (RNG.standard_normal((4, 7, 3)) * 5).astype(dtype)
    for dim, idx in ((1, np.array([6, 0, -1, 3, 3])), (0, np.array([3, 0, -4]))):
        got = t(a, device).index_select(dim, t(idx, device))
        np.testing.assert_array_equal(host(got), np.take(a, idx % a.shape[dim], axis=dim))


def test_embedding_lookup_and_its_gradient(device):
    """C[X] for a [vocab, dim] table and a [batch, block] index: the gradient adds up repeated rows."""
    C = RNG.standard_normal((27, 5)).astype(np.float32)
    X = RNG.integers(0, 27, (8, 3))
    X[0, :] = 4                                  # repeats must add up (atomics on cuda)
    c = t(C, device, requires_grad=True)
    emb = c[t(X, device)]
    assert tuple(emb.shape) == (8, 3, 5) and emb.grad_fn.name() == "IndexBackward0"
    np.testing.assert_array_equal(host(emb), C[X])
    w = RNG.standard_normal((8, 3, 5)).astype(np.float32)
    (emb * t(w, device)).sum().backward()
    ref = np.zeros_like(C)
    np.add.at(ref, X, w)
    np.testing.assert_allclose(host(c.grad), ref, rtol=1e-5, atol=1e-6)


def test_one_advanced_index_with_basic_ones(device):
    a = RNG.standard_normal((4, 6, 5)).astype(np.float32)
    x = t(a, device)
    np.testing.assert_array_equal(host(x[:, [5, 0, 2]]), a[:, [5, 0, 2]])
    np.testing.assert_array_equal(host(x[1:, :, np.array([4, 4])]), a[1:, :, [4, 4]])
    np.testing.assert_array_equal(host(x[..., rawdev.tensor([1, 3], device=device)]), a[..., [1, 3]])
    np.testing.assert_array_equal(host(x[2, [1, 3]]), a[2, [1, 3]])
    mask = a[:, 0, 0] > 0
    np.testing.assert_array_equal(host(x[t(mask, device)]), a[mask])
    np.testing.assert_array_equal(host(x[:, :, 0][:, [2]]), a[:, :, 0][:, [2]])   # a strided view, indexed


def test_index_assignment_and_accumulate(device):
    a = RNG.standard_normal((5, 4)).astype(np.float32)
    x = t(a.copy(), device)
    x[[0, 3]] = 0.0
    a[[0, 3]] = 0.0
    x[:, t(np.array([True, False, False, True]), device)] = t(np.array([7.0], np.float32), device)
    a[:, [0, 3]] = 7.0
    x.t()[[1]] = -1.0                            # through a transposed view: the base changes
    a.T[[1]] = -1.0
    np.testing.assert_array_equal(host(x), a)
    acc = t(np.zeros(5, np.float32), device)
    acc.index_put_((t(np.array([1, 1, 4]), device),), t(np.array([1.0, 2.0, 3.0], np.float32), device),
                   accumulate=True)
    np.testing.assert_array_equal(host(acc), [0, 3, 0, 0, 3])


def test_index_add_and_copy_out_of_place_with_gradients(device):
    a = RNG.standard_normal((5, 3)).astype(np.float32)
    s = RNG.standard_normal((2, 3)).astype(np.float32)
    idx = np.array([4, 1])
    x, src = t(a, device, requires_grad=True), t(s, device, requires_grad=True)
    y = rawdev.index_add(x, 0, t(idx, device), src, alpha=2.0)
    ref = a.copy()
    ref[idx] += 2 * s
    np.testing.assert_allclose(host(y), ref, rtol=1e-6)
    y.sum().backward()
    np.testing.assert_array_equal(host(x.grad), np.ones_like(a))
    np.testing.assert_array_equal(host(src.grad), np.full_like(s, 2.0))
    x.grad = src.grad = None
    z = rawdev.index_copy(x, 0, t(idx, device), src)
    ref = a.copy()
    ref[idx] = s
    np.testing.assert_array_equal(host(z), ref)
    z.sum().backward()
    g = np.ones_like(a)
    g[idx] = 0
    np.testing.assert_array_equal(host(x.grad), g)
    np.testing.assert_array_equal(host(src.grad), np.ones_like(s))


def test_index_select_gradcheck_float64():
    from test_autograd import gradcheck
    x = rawdev.from_numpy(RNG.standard_normal((4, 3))).requires_grad_()
    idx = rawdev.tensor([3, 0, 3])
    gradcheck(lambda v: v.index_select(0, idx) * 2.0, x)
    gradcheck(lambda v: v[:, [2, 2, 0]].sin(), x)


def test_errors_match_pytorch():
    x = rawdev.zeros(3, 4)
    with pytest.raises(IndexError, match=r"index_select\(\): Expected dtype int32 or int64 for index"):
        x.index_select(0, rawdev.tensor([0.0]))
    with pytest.raises(IndexError, match=r"index_select\(\): Index is supposed to be a vector"):
        x.index_select(0, rawdev.tensor([[0]]))
    with pytest.raises(IndexError, match="index 3 is out of bounds for dimension with size 3"):
        x[rawdev.tensor([0, 3])]
    with pytest.raises(IndexError, match=r"index 4 is out of bounds for dimension 1 with size 4"):
        x[[0, 1], [1, 4]]          # several index tensors: tests/test_gather_scatter.py covers them
