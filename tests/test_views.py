"""Strided tensors: every view op against numpy at random shapes (rank 0, size-0 and size-1 axes) on the cpu
and on the simulated GPU — values, strides, shared storage, contiguous() of every view kind, writes through
views into the base, gradients through views, and modules whose tensors are views."""
import itertools

import numpy as np
import pytest
import rawdev
import rawdev.nn as nn
from numpy.lib.stride_tricks import sliding_window_view
from rawdev.ops import cuda as cuda_ops
from rawdev.tensor import layout

import _device_arrays
from _refs import rng

RNG = np.random.default_rng(20261203)


def rand(shape, dtype=np.float32):
    return RNG.standard_normal(shape).astype(dtype)


def on(device, a):
    return rawdev.tensor(a, device=device)


def host(t):
    return np.asarray(t.detach().cpu())


@pytest.fixture(params=["cpu", "sim"])
def device(request):
    if request.param == "cpu":
        yield "cpu"
        return
    from rawdev.runtime import reset_for_tests
    reset_for_tests("sim")
    cuda_ops.set_poison(True)   # every kernel output starts as NaN: unwritten elements show
    yield "cuda"
    cuda_ops.set_poison(False)


# name: (shape, rawdev view, numpy view)
VIEWS = {
    "t": ((3, 5), lambda x: x.t(), lambda a: a.T),
    "T_3d": ((2, 3, 4), lambda x: x.permute(2, 1, 0), lambda a: a.transpose(2, 1, 0)),
    "mT": ((2, 3, 4), lambda x: x.mT, lambda a: np.swapaxes(a, -1, -2)),
    "transpose": ((2, 3, 4), lambda x: x.transpose(0, 2), lambda a: np.swapaxes(a, 0, 2)),
    "swapaxes": ((4, 1, 3), lambda x: x.swapaxes(-1, 0), lambda a: np.swapaxes(a, -1, 0)),
    "permute": ((2, 3, 4, 5), lambda x: x.permute(3, 1, 0, 2), lambda a: a.transpose(3, 1, 0, 2)),
    "movedim": ((2, 3, 4), lambda x: x.movedim(0, -1), lambda a: np.moveaxis(a, 0, -1)),
    "expand": ((3, 1), lambda x: x.expand(2, 3, 4), lambda a: np.broadcast_to(a, (2, 3, 4))),
    "expand_keep": ((1, 4), lambda x: x.expand(-1, 4).expand(3, -1), lambda a: np.broadcast_to(a, (3, 4))),
    "expand_as": ((4,), lambda x: x.expand_as(rawdev.zeros(2, 4)), lambda a: np.broadcast_to(a, (2, 4))),
    "narrow": ((5, 6), lambda x: x.narrow(1, 2, 3), lambda a: a[:, 2:5]),
    "select": ((3, 4, 5), lambda x: x.select(1, -2), lambda a: a[:, -2]),
    "unsqueeze": ((3, 4), lambda x: x.unsqueeze(1), lambda a: a[:, None]),
    "unsqueeze_end": ((3, 4), lambda x: x.unsqueeze(-1), lambda a: a[..., None]),
    "squeeze": ((1, 3, 1, 2), lambda x: x.squeeze(), lambda a: a.squeeze()),
    "squeeze_dim": ((1, 3, 1, 2), lambda x: x.squeeze(2), lambda a: a.squeeze(2)),
    "unflatten": ((6, 4), lambda x: x.unflatten(0, (2, 3)), lambda a: a.reshape(2, 3, 4)),
    "view": ((4, 6), lambda x: x.view(2, 2, 3, 2), lambda a: a.reshape(2, 2, 3, 2)),
    "view_of_transpose": ((4, 6), lambda x: x.t().view(3, 2, 4), lambda a: a.T.reshape(3, 2, 4)),
    "reshape_copy": ((4, 6), lambda x: x.t().reshape(24), lambda a: a.T.reshape(24)),
    "diagonal": ((4, 5), lambda x: x.diagonal(), lambda a: np.diagonal(a)),
    "diagonal_off": ((3, 4, 5), lambda x: x.diagonal(1, 1, 2), lambda a: np.diagonal(a, 1, 1, 2)),
    "diagonal_neg": ((5, 4), lambda x: x.diagonal(-2), lambda a: np.diagonal(a, -2)),
    "as_strided": ((4, 6), lambda x: x.as_strided((3, 3), (6, 2), 1),
                   lambda a: np.lib.stride_tricks.as_strided(a.reshape(-1)[1:], (3, 3), (24, 8))),
    "slice_steps": ((7, 8), lambda x: x[1::2, ::3], lambda a: a[1::2, ::3]),
    "slice_mixed": ((3, 4, 5), lambda x: x[..., 1:4, None, 2], lambda a: a[..., 1:4, None, 2]),
    "index_last": ((3, 4), lambda x: x[:, 1], lambda a: a[:, 1]),
    "tril_window": ((8, 8), lambda x: x[:5, :5], lambda a: a[:5, :5]),
    "slice_empty": ((4, 3), lambda x: x[3:1], lambda a: a[3:1]),
    "size0": ((0, 3), lambda x: x.t().unsqueeze(0), lambda a: a.T[None]),
    "rank0": ((), lambda x: x.unsqueeze(0).expand(3), lambda a: np.broadcast_to(a, (3,))),
    "rank0_index": ((), lambda x: x[None, ...], lambda a: a[None, ...]),
    "chain": ((6, 5, 4), lambda x: x[::2].transpose(0, 2)[1:, :, 1].t(),
              lambda a: a[::2].transpose(2, 1, 0)[1:, :, 1].T),
}


@pytest.mark.parametrize("name", sorted(VIEWS))
def test_view_values_strides_and_storage(device, name):
    shape, view, ref = VIEWS[name]
    a = rand(shape)
    x = on(device, a)
    v = view(x)
    r = ref(a)
    assert tuple(v.shape) == r.shape
    np.testing.assert_array_equal(host(v), r)
    if name not in ("reshape_copy", "expand_as"):
        assert v._vc is x._vc, "a view shares the version counter"
    if r.size and name not in ("reshape_copy", "as_strided") and all(n > 1 for n in r.shape):
        # numpy's strides (in bytes) are the view's strides in elements times the item size
        assert tuple(s * 4 for s in v.stride()) == r.strides
    c = v.contiguous()
    assert c.is_contiguous() and (c is v) == v.is_contiguous()
    assert c is v or tuple(c.stride()) == layout.contiguous_strides(r.shape)
    np.testing.assert_array_equal(host(c), r)


def test_views_share_storage_and_writes_reach_the_base(device):
    a = rand((4, 5))
    x = on(device, a)
    x[:, 1] = 0                               # a column: a strided write
    a[:, 1] = 0
    x.t().add_(1)                             # in place through a transposed view
    a += 1
    x[::2, 1:4].mul_(2)
    a[::2, 1:4] *= 2
    x.diagonal().fill_(7)
    np.fill_diagonal(a, 7)
    x.narrow(0, 1, 2).copy_(on(device, np.arange(5, dtype=np.float32)))   # broadcast into a view
    a[1:3] = np.arange(5)
    x.T[2:].sin_()                            # a generated in-place form through a view
    a.T[2:] = np.sin(a.T[2:])
    x[-1] = on(device, np.full((1,), 3.0, np.float32))
    a[-1] = 3.0
    np.testing.assert_allclose(host(x), a, rtol=1e-6, atol=1e-6)
    assert x._version >= 6


def test_expanded_operands_broadcast_without_a_loop(device):
    a, b, c = rand((4, 1, 3)), rand((5, 1)), rand((1, 4))
    x, y, z = on(device, a), on(device, b), on(device, c)
    np.testing.assert_allclose(host(x * y), a * b, rtol=1e-6)
    np.testing.assert_allclose(host(x.expand(4, 5, 3) + y), a + b, rtol=1e-6)
    np.testing.assert_allclose(host(x.transpose(0, 2) / (z.t() + 3)), a.transpose(2, 1, 0) / (c.T + 3), rtol=1e-6)


def test_ops_read_strided_inputs(device):
    a, w = rand((6, 4)), rand((6, 5))
    x, wt = on(device, a), on(device, w)
    np.testing.assert_allclose(host(x.t() @ wt), a.T @ w, rtol=1e-5, atol=1e-5)         # tn GEMM, no copy
    np.testing.assert_allclose(host(wt.t().matmul(x)), w.T @ a, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(host(x[:, 1:3].sum(0)), a[:, 1:3].sum(0), rtol=1e-5)
    np.testing.assert_allclose(host(x.t().sum(1)), a.T.sum(1), rtol=1e-5)
    np.testing.assert_allclose(host(rawdev.softmax(x.t(), 0)), np.exp(a.T) / np.exp(a.T).sum(0), rtol=1e-5)
    np.testing.assert_allclose(host(x.t().relu()), np.maximum(a.T, 0), rtol=1e-6)


def test_negative_step_and_view_errors_match_pytorch(device):
    x = on(device, rand((3, 4)))
    with pytest.raises(ValueError, match="step must be greater than zero"):
        x[::-1]
    with pytest.raises(RuntimeError, match=r"view size is not compatible with input tensor's size and stride \(at "
                                           r"least one dimension spans across two contiguous subspaces\). Use "
                                           r"\.reshape\(\.\.\.\) instead\."):
        x.t().view(12)
    with pytest.raises(RuntimeError, match=r"The expanded size of the tensor \(5\) must match the existing size "
                                           r"\(4\) at non-singleton dimension 1"):
        x.expand(3, 5)
    with pytest.raises(RuntimeError, match="duplicate dims are not allowed"):
        x.permute(0, 0)
    with pytest.raises(IndexError, match=r"select\(\): index 3 out of range for tensor of size \[3, 4\] at "
                                         r"dimension 0"):
        x.select(0, 3)
    with pytest.raises(RuntimeError, match=r"start \(2\) \+ length \(3\) exceeds dimension size \(4\)"):
        x.narrow(1, 2, 3)
    with pytest.raises(RuntimeError, match="out of bounds for storage of size 48"):
        x.as_strided((4, 4), (4, 1))


VIEW_GRADS = {
    "t": (lambda x: x.t() * 2.0, (3, 4)),
    "permute": (lambda x: x.permute(2, 0, 1).sin(), (2, 3, 4)),
    "expand": (lambda x: x.expand(3, 4, 5) * 1.5, (4, 1)),
    "slice": (lambda x: x[1::2, :3].cos(), (5, 4)),
    "select": (lambda x: x.select(1, 2).exp(), (3, 4)),
    "narrow": (lambda x: x.narrow(0, 1, 2).sqrt(), (4, 3)),
    "diagonal": (lambda x: x.diagonal(1) * 3.0, (4, 5)),
    "unsqueeze_squeeze": (lambda x: x.unsqueeze(1).squeeze(1).tanh(), (3, 2)),
    "view_of_t": (lambda x: x.t().reshape(-1).sigmoid(), (3, 4)),
    "as_strided": (lambda x: x.as_strided((2, 2), (3, 1), 1).rsqrt(), (3, 3)),
    "chain": (lambda x: x[:, None, 1:].expand(3, 2, 3).transpose(0, 2).sum(1), (3, 4)),
}


@pytest.mark.parametrize("name", sorted(VIEW_GRADS))
def test_gradients_through_views_cpu_float64(name):
    from test_autograd import gradcheck
    fn, shape = VIEW_GRADS[name]
    x = rawdev.from_numpy(np.abs(RNG.standard_normal(shape)) + 0.5).requires_grad_()
    gradcheck(fn, x)


@pytest.mark.parametrize("name", sorted(VIEW_GRADS))
def test_gradients_through_views_cuda_match_cpu(driver, name):
    fn, shape = VIEW_GRADS[name]
    a = (np.abs(RNG.standard_normal(shape)) + 0.5).astype(np.float32)
    grads = []
    for dev in ("cpu", "cuda"):
        x = rawdev.tensor(a, device=dev, requires_grad=True)
        out = fn(x)
        w = rawdev.tensor(np.linspace(-1, 1, out.numel(), dtype=np.float32).reshape(tuple(out.shape)), device=dev)
        (out * w).sum().backward()
        grads.append(host(x.grad))
    np.testing.assert_allclose(grads[1], grads[0], rtol=1e-5, atol=1e-6)


def test_view_nodes_are_named_as_pytorch():
    x = rawdev.ones(3, 4, requires_grad=True)
    assert x.t().grad_fn.name() == "TBackward0"
    assert x.transpose(0, 1).grad_fn.name() == "TransposeBackward0"
    assert x.permute(1, 0).grad_fn.name() == "PermuteBackward0"
    assert x.expand(2, 3, 4).grad_fn.name() == "ExpandBackward0"
    assert x[1].grad_fn.name() == "SelectBackward0" and x[:, 1:].grad_fn.name() == "SliceBackward0"
    assert x.view(12).grad_fn.name() == "ViewBackward0" and x.unsqueeze(0).grad_fn.name() == "UnsqueezeBackward0"
    assert x.diagonal().grad_fn.name() == "DiagonalBackward0" and x.narrow(0, 0, 1).grad_fn.name() == "NarrowBackward0"


def test_inplace_through_a_view_of_a_graph_tensor_is_recorded_on_its_base():
    x = rawdev.ones(3, 4, requires_grad=True)
    y = x * 2
    yt = y.t()
    yt.add_(1)                    # CopySlices: y takes over the write
    assert y.grad_fn.name() == "CopySlices"
    (y * y).sum().backward()
    np.testing.assert_allclose(np.asarray(x.grad), np.full((3, 4), 2 * 3.0 * 2), rtol=1e-6)
    x.grad = None
    with pytest.raises(RuntimeError, match="^a view of a leaf Variable that requires grad is being used in an "
                                           "in-place operation.$"):
        x.t().add_(1)
    z = x * 3                     # a non-leaf: the in-place op takes over its history
    z.sin_()
    assert z.grad_fn.name() == "SinBackward0"
    z.sum().backward()
    np.testing.assert_allclose(np.asarray(x.grad), 3 * np.cos(np.full((3, 4), 3.0)), rtol=1e-6)


class _Tied(nn.Module):
    """A module whose parameter and buffer are views (a transpose; a slice of a bigger tensor)."""

    def __init__(self):
        super().__init__()
        self.w = nn.Parameter(rawdev.tensor(rand((5, 3))).t())
        self.register_buffer("b", rawdev.tensor(rand((4, 6)))[1:3, ::2])


def test_modules_whose_tensors_are_views_move_and_save(device, tmp_path):
    m = _Tied()
    w0, b0 = host(m.w), host(m.b)
    assert not m.w.is_contiguous() and not m.b.is_contiguous()
    m.to(device)
    np.testing.assert_array_equal(host(m.w), w0)
    np.testing.assert_array_equal(host(m.b), b0)
    sd = m.state_dict()
    np.testing.assert_array_equal(host(sd["w"]), w0)
    path = tmp_path / "views.safetensors"
    rawdev.save(sd, path)                     # a saved view is its own contiguous bytes
    loaded = rawdev.load(path)
    np.testing.assert_array_equal(host(loaded["w"]), w0)
    np.testing.assert_array_equal(host(loaded["b"]), b0)
    m2 = _Tied().to(device)
    m2.load_state_dict(loaded)
    np.testing.assert_array_equal(host(m2.w), w0)
    np.testing.assert_array_equal(host(m2.b), b0)
    m.cpu()
    np.testing.assert_array_equal(host(m.w), w0)


@pytest.mark.parametrize("size,step", [(2, 1), (3, 2), (4, 4), (1, 3)])
def test_unfold_windows_and_gradient(size, step, driver):
    r = rng()
    x = r.standard_normal((3, 9, 2))
    ref = sliding_window_view(x, size, axis=1)[:, ::step]
    for dev in ("cpu", "cuda"):
        t = _device_arrays.on(x, dev, _device_arrays.FLOAT[dev], grad=True)
        u = t.unfold(1, size, step)
        assert u.data_ptr() == t.data_ptr() and tuple(u.shape) == ref.shape      # a view
        np.testing.assert_array_equal(_device_arrays.num(u), ref.astype(_device_arrays.num(u).dtype))
        g = r.standard_normal(ref.shape)
        (u * _device_arrays.on(g, dev, _device_arrays.FLOAT[dev])).sum().backward()
        want = np.zeros_like(x)
        for w, j in itertools.product(range(ref.shape[1]), range(size)):
            want[:, w * step + j] += g[:, w, :, j]
        tol = _device_arrays.TOL[dev] * 10
        np.testing.assert_allclose(_device_arrays.num(t.grad), want, rtol=tol, atol=tol)
    with pytest.raises(RuntimeError, match="maximum size for tensor at dimension 0 is 3 but size is 4"):
        rawdev.zeros(3).unfold(0, 4, 1)
