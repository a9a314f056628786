"""gather / scatter / scatter_add / scatter_reduce / take / take_along_dim, and advanced indexing with several
index tensors, masks and assignment: against float64 numpy references written here with plain loops, on the cpu
and on the simulator (gather_scatter.ptx: gathers, scatters, atomic adds and compare-and-swap reductions, poisoned
outputs), with gradients (finite differences in float64 on the cpu, cuda against cpu); and the composed ops of
gather_scatter.py: select/slice/diagonal_scatter, put(_), F.one_hot (with Tensor.apply_/map_ beside put)."""

import numpy as np
import pytest
import rawdev
import rawdev.nn.functional as F
from rawdev.ops import cuda as cuda_ops

from _device_arrays import FLOAT, TOL, num, on
from _refs import rng
from test_autograd import gradcheck

RNG = np.random.default_rng()


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


@pytest.fixture
def simgpu():
    from rawdev.runtime import reset_for_tests
    reset_for_tests("sim")
    cuda_ops.set_poison(True)
    yield
    cuda_ops.set_poison(False)
    reset_for_tests("sim")     # the next test gets a power-on device, not this one's sticky error


def t(a, device, **kw):
    return rawdev.tensor(a, device=device, **kw)


def host(x):
    return np.asarray(x.detach().cpu())


def rel(got, ref):
    ref = np.asarray(ref, np.float64)
    return np.abs(np.asarray(got, np.float64) - ref).max(initial=0) / max(np.abs(ref).max(initial=0), 1.0)


# ------------------------------------------------------------------ references (loops, float64)
def ref_gather(a, d, idx):
    out = np.empty(idx.shape, a.dtype)
    for pos in np.ndindex(*idx.shape):
        p = list(pos)
        p[d] = idx[pos]
        out[pos] = a[tuple(p)]
    return out


def ref_scatter(a, d, idx, src, reduce=None, include_self=True):
    """reduce None: overwrite (tests use unique targets); else sum/prod/mean/amax/amin over the contributions."""
    out = np.array(a, np.float64)
    contrib = {}
    for pos in np.ndindex(*idx.shape):
        p = list(pos)
        p[d] = idx[pos]
        contrib.setdefault(tuple(p), []).append(float(src[pos]))
    for tgt, vals in contrib.items():
        if reduce is None:
            out[tgt] = vals[-1]
            continue
        vals = ([float(a[tgt])] if include_self else []) + vals
        out[tgt] = {"sum": sum, "prod": np.prod, "mean": np.mean, "amax": max, "amin": min}[reduce](vals)
    return out


def rand_index(shape, size, unique_along=None):
    """A random index of `shape` into a dim of `size`; unique_along=d makes the targets unique along d."""
    if unique_along is None:
        return RNG.integers(0, size, shape)
    idx = np.empty(shape, np.int64)
    moved = np.moveaxis(idx, unique_along, -1)
    for pos in np.ndindex(*moved.shape[:-1]):
        moved[pos] = RNG.permutation(size)[:moved.shape[-1]]
    return idx


CASES = [   # (input shape, dim, index shape): index no larger apart from dim; edge sizes past a block of 256
    ((5,), 0, (7,)),
    ((4, 6), 1, (3, 9)),
    ((4, 6), 0, (2, 6)),
    ((3, 5, 7), 1, (3, 4, 7)),
    ((3, 5, 7), -1, (2, 5, 3)),
    ((2, 300, 3), 1, (2, 301, 3)),
    ((4, 1, 3), 1, (4, 2, 3)),
    ((4, 6), 1, (4, 0)),
    ((0, 6), 1, (0, 2)),
]


# ------------------------------------------------------------------ gather
@pytest.mark.parametrize("shape,dim,ishape", CASES)
def test_gather_matches_reference(device, shape, dim, ishape):
    a = RNG.standard_normal(shape).astype(np.float32)
    d = dim % len(shape)
    idx = rand_index(ishape, shape[d])
    got = rawdev.gather(t(a, device), dim, t(idx, device))
    assert tuple(got.shape) == ishape and got.dtype is rawdev.float32
    np.testing.assert_array_equal(host(got), ref_gather(a, d, idx))


@pytest.mark.parametrize("dtype", [np.int64, np.bool_, np.uint8, np.int16])
def test_gather_every_element_size(device, dtype):
    a = (RNG.standard_normal((5, 7)) * 9).astype(dtype)
    idx = rand_index((5, 11), 7)
    np.testing.assert_array_equal(host(t(a, device).gather(1, t(idx, device))), ref_gather(a, 1, idx))


def test_gather_of_views_and_int32_index(device):
    a = RNG.standard_normal((6, 8)).astype(np.float32)
    x = t(a, device)
    idx = rand_index((7, 5), 6)
    np.testing.assert_array_equal(host(x.t().gather(1, t(idx, device))), ref_gather(a.T, 1, idx))
    small = idx[:2, :3] % 3
    np.testing.assert_array_equal(host(x[1::2, ::3].gather(0, t(small, device))), ref_gather(a[1::2, ::3], 0, small))
    big = t(rand_index((3, 10), 8), device)
    np.testing.assert_array_equal(host(x.gather(1, big[:, ::2])), ref_gather(a, 1, host(big)[:, ::2]))
    i32 = t(idx[:6, :3].astype(np.int32), device)
    np.testing.assert_array_equal(host(x.gather(1, i32)), ref_gather(a, 1, idx[:6, :3]))


def test_gather_of_0_dim():
    x = rawdev.tensor(3.0)
    assert rawdev.gather(x, 0, rawdev.tensor(0)).item() == 3.0
    np.testing.assert_array_equal(np.asarray(rawdev.gather(x, 0, rawdev.tensor([0, 0]))), [3.0, 3.0])


def test_gather_gradient_adds_repeats(device):
    a = RNG.standard_normal((4, 5, 3)).astype(np.float32)
    idx = rand_index((4, 9, 2), 5)
    idx[0, :, 0] = 2                           # many repeats into one place: the atomics must add them all
    x = t(a, device, requires_grad=True)
    y = x.gather(1, t(idx, device))
    assert y.grad_fn.name() == "GatherBackward0"
    w = RNG.standard_normal(idx.shape).astype(np.float32)
    (y * t(w, device)).sum().backward()
    ref = np.zeros(a.shape)
    for pos in np.ndindex(*idx.shape):
        ref[pos[0], idx[pos], pos[2]] += w[pos]
    assert rel(host(x.grad), ref) < 1e-5


def test_gather_gradcheck_float64():
    x = rawdev.from_numpy(RNG.standard_normal((4, 5))).requires_grad_()
    idx = rawdev.tensor(rand_index((3, 7), 5))
    gradcheck(lambda v: v.gather(1, idx).sin(), x)
    gradcheck(lambda v: rawdev.take_along_dim(v, rawdev.tensor([[-1], [0], [2], [2]]), 1) * 3.0, x)
    gradcheck(lambda v: v.take(rawdev.tensor([[0, 19], [-1, 0]])) * 2.0, x)


# ------------------------------------------------------------------ scatter family
@pytest.mark.parametrize("shape,dim,ishape", [c for c in CASES if c[2][c[1]] <= c[0][c[1]] or c[1] < 0])
def test_scatter_src_and_value(device, shape, dim, ishape):
    d = dim % len(shape)
    if ishape[d] > shape[d]:
        return
    a = RNG.standard_normal(shape).astype(np.float32)
    idx = rand_index(ishape, shape[d], unique_along=d)
    big = tuple(s + 1 for s in ishape)       # src may be larger than the index: only its leading part is read
    s = RNG.standard_normal(big).astype(np.float32)
    got = t(a, device).scatter(dim, t(idx, device), t(s, device))
    sl = tuple(slice(0, n) for n in ishape)
    np.testing.assert_array_equal(host(got), ref_scatter(a, d, idx, s[sl]).astype(np.float32))
    got = t(a, device).scatter(dim, t(idx, device), 2.5)
    np.testing.assert_array_equal(host(got), ref_scatter(a, d, idx, np.full(ishape, 2.5)).astype(np.float32))


@pytest.mark.parametrize("shape,dim,ishape", CASES)
def test_scatter_add_duplicates_add_up(device, shape, dim, ishape):
    d = dim % len(shape)
    a = RNG.standard_normal(shape).astype(np.float32)
    idx = rand_index(ishape, max(shape[d], 1)) if shape[d] else np.zeros(ishape, np.int64)
    s = RNG.standard_normal(ishape).astype(np.float32)
    if 0 in shape and np.prod(ishape) != 0:
        return
    got = t(a, device).scatter_add(dim, t(idx, device), t(s, device))
    assert rel(host(got), ref_scatter(a, d, idx, s, "sum")) < 1e-5


@pytest.mark.parametrize("reduce", ["sum", "prod", "mean", "amax", "amin"])
@pytest.mark.parametrize("include_self", [True, False])
def test_scatter_reduce(device, reduce, include_self):
    a = RNG.standard_normal((5, 4, 3)).astype(np.float32)
    idx = rand_index((5, 9, 2), 4)
    idx[:, :, 0] = 1                            # one place takes many contributions
    s = (RNG.uniform(0.5, 1.5, (5, 9, 2)) * RNG.choice([-1, 1], (5, 9, 2))).astype(np.float32)
    got = t(a, device).scatter_reduce(1, t(idx, device), t(s, device), reduce, include_self=include_self)
    ref = ref_scatter(a, 1, idx, s, reduce, include_self)
    assert rel(host(got), ref) < 1e-5, (host(got), ref)


def test_scatter_reduce_amax_propagates_nan(device):
    a = np.zeros(3, np.float32)
    s = np.array([1.0, np.nan, 2.0, -1.0], np.float32)
    got = host(t(a, device).scatter_reduce(0, t(np.array([0, 0, 0, 2]), device), t(s, device), "amax"))
    assert np.isnan(got[0]) and got[1] == 0 and got[2] == 0


def test_scatter_reduce_integer_mean_floors():
    x = rawdev.tensor([0, 10, 3])
    got = x.scatter_reduce(0, rawdev.tensor([1, 1, 2]), rawdev.tensor([1, 2, -4]), "mean")
    np.testing.assert_array_equal(np.asarray(got), [0, 4, -1])


def test_scatter_legacy_reduce(device):
    x = t(np.arange(5, dtype=np.float32), device)
    idx = t(np.array([1, 1, 3]), device)
    np.testing.assert_array_equal(host(x.scatter(0, idx, t(np.array([2.0, 3.0, 4.0], np.float32), device),
                                                 reduce="add")), [0, 6, 2, 7, 4])
    np.testing.assert_array_equal(host(x.scatter(0, idx, 2.0, reduce="multiply")), [0, 4, 2, 6, 4])


def test_inplace_forms_write_any_layout(device):
    a = RNG.standard_normal((6, 4)).astype(np.float32)
    idx = rand_index((3, 4), 6, unique_along=0)
    s = RNG.standard_normal((3, 4)).astype(np.float32)
    x = t(a.copy(), device)
    assert x.scatter_(0, t(idx, device), t(s, device)) is x
    np.testing.assert_array_equal(host(x), ref_scatter(a, 0, idx, s).astype(np.float32))
    x = t(a.copy(), device)
    x.t().scatter_add_(1, t(idx.T.copy(), device), t(s.T.copy(), device))    # a transposed view writes the base
    assert rel(host(x), ref_scatter(a, 0, idx, s, "sum")) < 1e-6
    x = t(a.copy(), device)
    x[:, 1:3].scatter_reduce_(0, t(idx[:, :2], device), t(s[:, :2], device), "amax", include_self=False)
    ref = a.astype(np.float64)
    ref[:, 1:3] = ref_scatter(a[:, 1:3], 0, idx[:, :2], s[:, :2], "amax", False)
    np.testing.assert_array_equal(host(x), ref.astype(np.float32))
    x = t(a.copy(), device)
    x.scatter_(1, t(np.array([[0], [3]]), device), -1.0)
    ref = a.copy()
    ref[0, 0] = ref[1, 3] = -1
    np.testing.assert_array_equal(host(x), ref)


def _grads(device, fn, *arrays):
    xs = [t(a, device, requires_grad=True) for a in arrays]
    out = fn(*xs)
    w = np.linspace(-1, 2, out.numel()).reshape(tuple(out.shape)).astype(arrays[0].dtype)
    (out * t(w, device)).sum().backward()
    return [host(x.grad) for x in xs]


SCATTER_FNS = {
    "scatter": lambda x, s, i: x.scatter(1, i, s),
    "scatter_value": lambda x, s, i: x.scatter(1, i, 2.0) * s.sum(),
    "scatter_add": lambda x, s, i: x.scatter_add(1, i, s),
    "sum": lambda x, s, i: x.scatter_reduce(1, i, s, "sum"),
    "sum_excl": lambda x, s, i: x.scatter_reduce(1, i, s, "sum", include_self=False),
    "mean": lambda x, s, i: x.scatter_reduce(1, i, s, "mean"),
    "mean_excl": lambda x, s, i: x.scatter_reduce(1, i, s, "mean", include_self=False),
    "prod": lambda x, s, i: x.scatter_reduce(1, i, s, "prod"),
    "prod_excl": lambda x, s, i: x.scatter_reduce(1, i, s, "prod", include_self=False),
    "amax": lambda x, s, i: x.scatter_reduce(1, i, s, "amax"),
    "amin_excl": lambda x, s, i: x.scatter_reduce(1, i, s, "amin", include_self=False),
    "gather": lambda x, s, i: x.gather(1, i) * s[:, :3],
}


@pytest.mark.parametrize("name", sorted(SCATTER_FNS))
def test_scatter_gradients(name):
    """float64 finite differences on the cpu, then the simulator's gradients against the cpu's."""
    fn = SCATTER_FNS[name]
    a = RNG.uniform(0.5, 2.0, (4, 6)) * RNG.choice([-1, 1], (4, 6))
    s = RNG.uniform(0.5, 2.0, (4, 5)) * RNG.choice([-1, 1], (4, 5))    # larger than the index: padded gradient
    idx = rand_index((4, 3), 6, unique_along=1) if name == "scatter" else rand_index((4, 3), 6)
    if name.startswith("prod"):
        s[0, 0] = 0.0                           # one zero: PyTorch's exclusive product
    x, src = rawdev.from_numpy(a).requires_grad_(), rawdev.from_numpy(s).requires_grad_()
    i = rawdev.tensor(idx)
    gradcheck(lambda p, q: fn(p, q, i), x, src)
    from rawdev.runtime import reset_for_tests
    reset_for_tests("sim")
    cuda_ops.set_poison(True)
    try:
        a32, s32 = a.astype(np.float32), s.astype(np.float32)
        cpu = _grads("cpu", lambda p, q: fn(p, q, rawdev.tensor(idx)), a32, s32)
        sim = _grads("cuda", lambda p, q: fn(p, q, rawdev.tensor(idx, device="cuda")), a32, s32)
    finally:
        cuda_ops.set_poison(False)
    for g_sim, g_cpu in zip(sim, cpu):
        assert rel(g_sim, g_cpu) < 1e-4


def test_node_names():
    x = rawdev.randn(3, 4, requires_grad=True)
    i = rawdev.tensor([[0, 1]])
    assert x.scatter(1, i, rawdev.ones(1, 2)).grad_fn.name() == "ScatterBackward0"
    assert x.scatter(1, i, 1.0).grad_fn.name() == "ScatterBackward1"
    assert x.scatter_add(1, i, rawdev.ones(1, 2)).grad_fn.name() == "ScatterAddBackward0"
    assert x.scatter_reduce(1, i, rawdev.ones(1, 2), "amax").grad_fn.name() == "ScatterReduceBackward0"
    assert rawdev.take_along_dim(x, i, 1).grad_fn.name() == "TakeAlongDimBackward0"
    assert rawdev.take(x, i).grad_fn.name() == "TakeBackward0"


# ------------------------------------------------------------------ take / take_along_dim
def test_take_and_take_along_dim(device):
    a = RNG.standard_normal((4, 5)).astype(np.float32)
    x = t(a, device)
    idx = np.array([[0, -1, 7], [19, -20, 3]])
    np.testing.assert_array_equal(host(rawdev.take(x, t(idx, device))), a.reshape(-1)[idx])
    np.testing.assert_array_equal(host(x.t().take(t(idx, device))), a.T.reshape(-1)[idx])
    order = np.argsort(a, axis=1)
    np.testing.assert_array_equal(host(rawdev.take_along_dim(x, t(order, device), 1)), np.sort(a, axis=1))
    np.testing.assert_array_equal(host(rawdev.take_along_dim(x, t(np.array([[-1], [0]]), device))),
                                  a.reshape(-1)[[-1, 0]])
    # broadcasting apart from dim: a [1, 5] index over [4, 5] and a [4, 1] input over a [4, 3] index
    col = np.array([[2, 0, 1, 3, 1]])
    np.testing.assert_array_equal(host(rawdev.take_along_dim(x, t(col, device), 0)), a[col[0], np.arange(5)][None])
    i3 = RNG.integers(-1, 1, (4, 3))
    np.testing.assert_array_equal(host(rawdev.take_along_dim(x[:, :1], t(i3, device), 1)),
                                  np.repeat(a[:, :1], 3, 1))


# ------------------------------------------------------------------ errors
def test_errors_match_pytorch():
    x = rawdev.zeros(2, 5)
    with pytest.raises(RuntimeError, match=r"^index 5 is out of bounds for dimension 1 with size 5$"):
        x.gather(1, rawdev.tensor([[5]]))
    with pytest.raises(RuntimeError, match=r"^index -1 is out of bounds for dimension 1 with size 5$"):
        x.gather(1, rawdev.tensor([[-1]]))
    with pytest.raises(RuntimeError, match=r"index 5 is out of bounds for dimension 1 with size 5"):
        x.scatter_add(1, rawdev.tensor([[5]]), rawdev.ones(1, 1))
    with pytest.raises(RuntimeError, match=r"gather\(\): Expected dtype int32/int64 for index"):
        x.gather(1, rawdev.tensor([[1.0]]))
    with pytest.raises(RuntimeError, match="Index tensor must have the same number of dimensions as input tensor"):
        x.gather(1, rawdev.tensor([1]))
    with pytest.raises(RuntimeError, match=r"Size does not match at dimension 0 expected index \[3, 1\] to be no "
                                           r"larger than self \[2, 5\] apart from dimension 1"):
        x.gather(1, rawdev.zeros(3, 1, dtype=rawdev.int64))
    with pytest.raises(RuntimeError, match=r"Expected index \[1, 2\] to be no larger than self \[2, 5\] apart from "
                                           r"dimension 1 and to be no larger size than src \[1, 1\]"):
        x.scatter(1, rawdev.tensor([[1, 2]]), rawdev.ones(1, 1))
    with pytest.raises(RuntimeError, match=r"scatter\(\): Expected self.dtype to be equal to src.dtype"):
        x.scatter(1, rawdev.tensor([[1, 2]]), rawdev.ones(1, 2, dtype=rawdev.float64))
    with pytest.raises(RuntimeError, match="reduce argument must be either sum, prod, mean, amax or amin, got foo"):
        x.scatter_reduce(1, rawdev.tensor([[1]]), rawdev.ones(1, 1), "foo")
    with pytest.raises(RuntimeError, match="reduce argument must be either add or multiply."):
        x.scatter(1, rawdev.tensor([[1]]), rawdev.ones(1, 1), reduce="sum")
    with pytest.raises(IndexError, match=r"^out of range: tried to access index 10 on a tensor of 10 elements\.$"):
        x.take(rawdev.tensor([10]))
    with pytest.raises(IndexError, match=r"out of range: tried to access index -11 on a tensor of 10 elements\."):
        x.take(rawdev.tensor([-11]))
    with pytest.raises(RuntimeError, match=r"torch.take_along_dim\(\): input and indices should have the same "
                                           r"number of dimensions, but got 2 dimensions for input, and 1 dimensions"):
        rawdev.take_along_dim(x, rawdev.tensor([1, 0]), 0)
    x.scatter_(1, rawdev.zeros(2, 0, dtype=rawdev.int64), 1.0)     # an empty index writes nothing
    assert float(x.abs().sum()) == 0


@pytest.mark.parametrize("op", ["gather", "scatter_add", "scatter"])
def test_out_of_range_is_a_device_side_assert(simgpu, op):
    from rawdev.errors import DeviceAssertError
    x = rawdev.tensor(np.arange(10, dtype=np.float32).reshape(2, 5), device="cuda")
    i = rawdev.tensor(np.array([[1, 5, 0]]), device="cuda")
    s = rawdev.ones(1, 3, device="cuda")
    y = x.gather(1, i) if op == "gather" else getattr(x, op)(1, i, s)
    with pytest.raises(DeviceAssertError, match=r"thread: \[1,0,0\] Assertion `index >= 0 && index < size` failed"):
        y.cpu()


# ------------------------------------------------------------------ advanced indexing: several index tensors, masks
ADV = [   # (expression on a [3, 4, 5, 6] array, numpy's result equals PyTorch's for these)
    "[[0, 2], 1, [0, 4]]",
    "[[0, 1], :, 1, [0, 5]]",             # separated by a slice: the index dims go first
    "[:, [0, 3], 1, [0, -1]]",
    "[[0, 1], None, [0, 1]]",             # separated by None
    "[:, None, [0, 1], [0, 1]]",
    "[[[0], [2]], ..., [0, 1, 2]]",        # broadcasting [2, 1] with [3]
    "[:, [-1, 2], :, [[0], [5]]]",
    "[M34]",                               # a 2-d mask over the first two dims
    "[:, M45, [0]]",                       # a mask next to an index tensor
    "[0, M45]",
    "[..., M56]",                          # a mask on the last axes
    "[:, :, [4, 4, 0]]",                   # one index tensor, repeats
    "[[]]",                                # an empty index
    "[Z34]",                               # an all-false mask
]


def _masks():
    return {"M34": RNG.random((3, 4)) > 0.5, "M45": RNG.random((4, 5)) > 0.5, "M56": RNG.random((5, 6)) > 0.3,
            "Z34": np.zeros((3, 4), bool)}


def _index_of(expr, masks, device):
    """The index tuple for expr with the masks as rawdev tensors on device, and for numpy."""
    ns_np = dict(masks)
    ns_t = {k: rawdev.tensor(m, device=device) for k, m in masks.items()}
    return eval("np.s_" + expr, {"np": np}, ns_t), eval("np.s_" + expr, {"np": np}, ns_np)


@pytest.mark.parametrize("expr", ADV)
def test_advanced_getitem(device, expr):
    a = RNG.standard_normal((3, 4, 5, 6)).astype(np.float32)
    it, inp = _index_of(expr, _masks(), device)
    got = t(a, device)[it]
    ref = a[inp]
    assert tuple(got.shape) == ref.shape
    np.testing.assert_array_equal(host(got), ref)
    got = t(a.transpose(2, 0, 3, 1).copy(), device).permute(1, 3, 0, 2)[it]      # a non-contiguous tensor
    np.testing.assert_array_equal(host(got), ref)


def test_advanced_getitem_ints_select_first():
    """PyTorch applies ints first: x[1, :, i, j] keeps the slice's dim before the index dims (numpy would not)."""
    a = RNG.standard_normal((3, 4, 5, 6)).astype(np.float32)
    got = rawdev.tensor(a)[1, :, [0, 1], [2, 3]]
    assert tuple(got.shape) == (4, 2)
    np.testing.assert_array_equal(np.asarray(got), a[1][:, [0, 1], [2, 3]])


@pytest.mark.parametrize("expr", ["[[0, 2], 1, [0, 4]]", "[[0, 1], :, 1, [0, 5]]", "[:, [-1, 2], :, [[0], [5]]]",
                                  "[M34]", "[:, M45, [0]]", "[..., M56]", "[Z34]"])
def test_advanced_setitem_and_accumulate(device, expr):
    a = RNG.standard_normal((3, 4, 5, 6)).astype(np.float32)
    masks = _masks()
    it, inp = _index_of(expr, masks, device)
    shape = a[inp].shape
    v = RNG.standard_normal(shape).astype(np.float32)
    x = t(a.copy(), device)
    x[it] = t(v, device)
    ref = a.copy()
    ref[inp] = v
    np.testing.assert_array_equal(host(x), ref)
    x[it] = 0.5                                  # a number broadcasts
    ref[inp] = 0.5
    np.testing.assert_array_equal(host(x), ref)
    if len(shape) > 1:                           # a row broadcasts over the result's leading dims
        row = RNG.standard_normal(shape[-1]).astype(np.float32)
        x[it] = t(row, device)
        ref[inp] = row
        np.testing.assert_array_equal(host(x), ref)
    y = t(a.copy().transpose(1, 0, 2, 3), device).transpose(0, 1)
    y[it] = t(v, device)                         # through a non-contiguous tensor: the base changes
    ref2 = a.copy()
    ref2[inp] = v
    np.testing.assert_array_equal(host(y), ref2)


def test_index_put_accumulates_duplicates(device):
    a = RNG.standard_normal((4, 5)).astype(np.float32)
    rows, cols = np.array([0, 3, 0, 0, 2]), np.array([1, 4, 1, 1, -1])
    v = RNG.standard_normal(5).astype(np.float32)
    x = t(a.copy(), device)
    x.index_put_((t(rows, device), t(cols, device)), t(v, device), accumulate=True)
    ref = a.astype(np.float64)
    np.add.at(ref, (rows, cols), v)
    assert rel(host(x), ref) < 1e-6
    x = t(a.copy(), device)                      # x[i, j] += 1 reads, adds and writes back: repeats count once
    x[t(rows, device), t(cols, device)] += 1.0
    ref = a.copy()
    ref[rows, cols] += 1.0
    np.testing.assert_array_equal(host(x), ref)
    m = t(a > 0, device)                         # x[mask] = 0 with a 2-d mask
    x[m] = 0.0
    ref[a > 0] = 0.0
    np.testing.assert_array_equal(host(x), ref)
    acc = t(np.zeros((2, 3), np.float32), device)
    acc.index_put_((t(np.array([True, False]), device), t(np.array([2, 2, 0]), device)),
                   t(np.array([1.0, 2.0, 4.0], np.float32), device), accumulate=True)
    np.testing.assert_array_equal(host(acc), [[4, 0, 3], [0, 0, 0]])


def test_probs_at_targets_and_gradient(device):
    """probs[arange(n), Y]: the negative log likelihood of a character model, gradient through the picks."""
    n, C = 37, 27
    logits = RNG.standard_normal((n, C)).astype(np.float32)
    Y = RNG.integers(0, C, n)
    x = t(logits, device, requires_grad=True)
    p = x.softmax(1)
    picked = p[rawdev.arange(n, device=device), t(Y, device)]
    assert picked.grad_fn.name() == "IndexBackward0"
    e = np.exp(logits - logits.max(1, keepdims=True))
    pr = e / e.sum(1, keepdims=True)
    assert rel(host(picked), pr[np.arange(n), Y]) < 1e-5
    loss = -picked.log().mean()
    loss.backward()
    ref = pr.astype(np.float64).copy()
    ref[np.arange(n), Y] -= 1
    assert rel(host(x.grad), ref / n) < 1e-4


@pytest.mark.parametrize("expr", ["[[0, 2, 0], :, [1, 1, 1]]", "[:, [[0], [1]], [2, 0]]", "[M34]",
                                  "[1, :, [0, 1], [2, 3]]"])
def test_advanced_getitem_gradients(expr):
    """float64 finite differences on the cpu; the simulator's gradient (atomic adds of repeats) against the cpu's."""
    masks = {"M34": RNG.random((3, 4)) > 0.4}
    a = RNG.standard_normal((3, 4, 5, 4))
    it, _ = _index_of(expr, masks, "cpu")
    gradcheck(lambda v: v[it].sin(), rawdev.from_numpy(a).requires_grad_())
    from rawdev.runtime import reset_for_tests
    reset_for_tests("sim")
    cuda_ops.set_poison(True)
    try:
        a32 = a.astype(np.float32)
        cpu = _grads("cpu", lambda v: v[_index_of(expr, masks, "cpu")[0]], a32)
        sim = _grads("cuda", lambda v: v[_index_of(expr, masks, "cuda")[0]], a32)
    finally:
        cuda_ops.set_poison(False)
    assert rel(sim[0], cpu[0]) < 1e-5


def test_advanced_index_errors():
    x = rawdev.zeros(2, 5)
    with pytest.raises(IndexError, match=r"index 7 is out of bounds for dimension 1 with size 5"):
        x[rawdev.tensor([0, 1]), rawdev.tensor([0, 7])]
    with pytest.raises(IndexError, match=r"index 2 is out of bounds for dimension 0 with size 2"):
        x[rawdev.tensor([0, 2]), rawdev.tensor([0, 4])]
    with pytest.raises(IndexError, match=r"shape mismatch: indexing tensors could not be broadcast together with "
                                         r"shapes \[3\], \[2\]"):
        x[rawdev.tensor([0, 1, 1]), rawdev.tensor([0, 4])]
    with pytest.raises(IndexError, match=r"The shape of the mask \[2, 3\] at index 1 does not match the shape of the "
                                         r"indexed tensor \[2, 5\] at index 1"):
        x[rawdev.ones(2, 3, dtype=rawdev.bool)]
    with pytest.raises(RuntimeError, match=r"shape mismatch: value tensor of shape \[3\] cannot be broadcast to "
                                           r"indexing result of shape \[2, 5\]"):
        x[[0, 1]] = rawdev.ones(3)
    with pytest.raises(IndexError, match="tensors used as indices must be long, int, byte or bool tensors"):
        x[rawdev.tensor([0.0]), 1]


def test_advanced_index_out_of_range_is_a_device_side_assert(simgpu):
    from rawdev.errors import DeviceAssertError
    x = rawdev.zeros(2, 5, device="cuda")
    y = x[rawdev.tensor([0, 1, 1], device="cuda"), rawdev.tensor([0, 4, 5], device="cuda")]
    with pytest.raises(DeviceAssertError, match=r"thread: \[2,0,0\] Assertion `index >= -size && index < size`"):
        y.cpu()


# ------------------------------------------------------------------ masked_select / masked_scatter / index_fill
def test_masked_select_broadcasts(device):
    a = RNG.standard_normal((4, 5)).astype(np.float32)
    m = RNG.random(5) > 0.4
    got = rawdev.masked_select(t(a, device), t(m, device))
    np.testing.assert_array_equal(host(got), a[np.broadcast_to(m, a.shape)])
    m2 = RNG.random((4, 1)) > 0.5
    got = t(a, device).t().masked_select(t(m2.T.copy(), device))
    np.testing.assert_array_equal(host(got), a.T[np.broadcast_to(m2.T, a.T.shape)])
    assert host(t(a, device).masked_select(t(np.zeros((4, 5), bool), device))).shape == (0,)


def test_masked_scatter(device):
    a = RNG.standard_normal((3, 4)).astype(np.float32)
    m = RNG.random((3, 4)) > 0.5
    s = RNG.standard_normal((3, 5)).astype(np.float32)
    got = t(a, device).masked_scatter(t(m, device), t(s, device))
    ref = a.copy()
    ref[m] = s.reshape(-1)[:m.sum()]
    np.testing.assert_array_equal(host(got), ref)
    x = t(a.copy(), device)
    row = RNG.random(4) > 0.5                    # broadcast over the rows
    assert x.masked_scatter_(t(row, device), t(s, device)) is x
    ref = a.copy()
    ref[np.broadcast_to(row, a.shape)] = s.reshape(-1)[:3 * row.sum()]
    np.testing.assert_array_equal(host(x), ref)


def test_index_fill(device):
    a = RNG.standard_normal((4, 6)).astype(np.float32)
    got = t(a, device).index_fill(1, t(np.array([0, -1, 3]), device), -2.5)
    ref = a.copy()
    ref[:, [0, -1, 3]] = -2.5
    np.testing.assert_array_equal(host(got), ref)
    x = t(a.copy(), device)
    x.t().index_fill_(1, t(np.array([2]), device), rawdev.tensor(7.0))     # a transposed view writes the base
    ref = a.copy()
    ref[2, :] = 7.0
    np.testing.assert_array_equal(host(x), ref)
    i = t(RNG.integers(0, 5, (4, 3)), device)
    np.testing.assert_array_equal(host(i.index_fill(0, t(np.array(1), device), 9)[1]), [9, 9, 9])


def test_mask_and_fill_gradients():
    # source longer than the mask can ever select (13 > 12): its unused tail gets a zero gradient
    a, s = RNG.standard_normal((3, 4)), RNG.standard_normal(13)
    m = rawdev.tensor(RNG.random((3, 4)) > 0.5)
    x, src = rawdev.from_numpy(a).requires_grad_(), rawdev.from_numpy(s).requires_grad_()
    assert x.masked_select(m).grad_fn.name() == "MaskedSelectBackward0"
    assert x.masked_scatter(m, src).grad_fn.name() == "MaskedScatterBackward0"
    assert x.index_fill(1, rawdev.tensor([1]), 0.0).grad_fn.name() == "IndexFillBackward0"
    gradcheck(lambda v: v.masked_select(m).sin(), x)
    gradcheck(lambda v, w: v.masked_scatter(m, w).sin(), x, src)
    gradcheck(lambda v: v.index_fill(1, rawdev.tensor([1, 3]), 0.5).sin(), x)
    from rawdev.runtime import reset_for_tests
    reset_for_tests("sim")
    cuda_ops.set_poison(True)
    try:
        mask = np.asarray(m)
        for fn in (lambda v, w, d: v.masked_scatter(rawdev.tensor(mask, device=d), w),
                   lambda v, w, d: v.masked_select(rawdev.tensor(mask, device=d)) * w.sum(),
                   lambda v, w, d: v.index_fill(0, rawdev.tensor([2, 0], device=d), 3.0) * w[:4]):
            a32, s32 = a.astype(np.float32), s.astype(np.float32)
            cpu = _grads("cpu", lambda p, q, fn=fn: fn(p, q, "cpu"), a32, s32)
            sim = _grads("cuda", lambda p, q, fn=fn: fn(p, q, "cuda"), a32, s32)
            for g_sim, g_cpu in zip(sim, cpu):
                assert rel(g_sim, g_cpu) < 1e-5
    finally:
        cuda_ops.set_poison(False)


def test_mask_and_fill_errors():
    x = rawdev.zeros(2, 3)
    with pytest.raises(RuntimeError, match="masked_select: expected BoolTensor for mask"):
        x.masked_select(rawdev.tensor([1, 0, 1]))
    with pytest.raises(RuntimeError, match=r"The size of tensor a \(3\) must match the size of tensor b \(2\)"):
        x.masked_select(rawdev.tensor([True, False]))
    with pytest.raises(RuntimeError, match="Number of elements of source < number of ones in mask"):
        x.masked_scatter(rawdev.tensor([True, False, True]), rawdev.ones(3))
    with pytest.raises(IndexError, match=r"index_fill_\(\): Expected dtype int64 for index."):
        x.index_fill(1, rawdev.tensor([0.0]), 1.0)
    with pytest.raises(IndexError, match="index 3 is out of bounds for dimension 1 with size 3"):
        x.index_fill(1, rawdev.tensor([3]), 1.0)
    with pytest.raises(RuntimeError, match="index_fill_ only supports a 0-dimensional value tensor"):
        x.index_fill(1, rawdev.tensor([0]), rawdev.tensor([1.0]))


def test_scatter_integer_and_bfloat16_cpu():
    i = rawdev.tensor(np.arange(6).reshape(2, 3))
    got = i.scatter_reduce(1, rawdev.tensor([[0, 0]]), rawdev.tensor([[-5, -7]]), "amax", include_self=False)
    np.testing.assert_array_equal(np.asarray(got), [[-5, 1, 2], [3, 4, 5]])
    got = i.scatter_reduce(1, rawdev.tensor([[2, 2]]), rawdev.tensor([[9, 8]]), "amin", include_self=False)
    np.testing.assert_array_equal(np.asarray(got), [[0, 1, 8], [3, 4, 5]])
    b = rawdev.zeros(3, dtype=rawdev.bfloat16)
    got = b.scatter_reduce(0, rawdev.tensor([0, 0]), rawdev.tensor([1.5, 2.25], dtype=rawdev.bfloat16), "sum")
    np.testing.assert_array_equal(np.asarray(got.float()), [3.75, 0, 0])
    got = b.scatter(0, rawdev.tensor([1]), rawdev.tensor([1.5], dtype=rawdev.bfloat16))
    np.testing.assert_array_equal(np.asarray(got.float()), [0, 1.5, 0])
    with pytest.raises(RuntimeError, match=r"^Expected index \[3, 1\] to be no larger than self \[2, 5\] apart from "
                                           r"dimension 1$"):
        rawdev.zeros(2, 5).scatter(1, rawdev.zeros(3, 1, dtype=rawdev.int64), 1.0)


def test_cpu_and_int32_index_tensors_on_cuda(simgpu):
    a = RNG.standard_normal((4, 5)).astype(np.float32)
    x = rawdev.tensor(a, device="cuda")
    got = x[rawdev.tensor([0, 3]), rawdev.tensor([4, -1], dtype=rawdev.int32)]   # cpu index tensors, as PyTorch
    np.testing.assert_array_equal(host(got), a[[0, 3], [4, -1]])
    i32 = rawdev.tensor(np.array([[1], [0], [4], [2]], np.int32), device="cuda")
    np.testing.assert_array_equal(host(x.gather(1, i32)), a[np.arange(4), [1, 0, 4, 2]][:, None])


def test_index_put_out_of_place_and_recorded_setitem_gradients():
    a, v = RNG.standard_normal((4, 5)), RNG.standard_normal(3)
    rows, cols = rawdev.tensor([0, 3, 0]), rawdev.tensor([1, 4, 1])
    x, val = rawdev.from_numpy(a).requires_grad_(), rawdev.from_numpy(v).requires_grad_()
    y = rawdev.index_put(x, (rows, cols), val, accumulate=True)
    assert y.grad_fn.name() == "IndexPutBackward0"
    ref = a.copy()
    np.add.at(ref, ([0, 3, 0], [1, 4, 1]), v)
    np.testing.assert_allclose(np.asarray(y.detach()), ref, rtol=1e-12, atol=1e-14)
    gradcheck(lambda p, q: rawdev.index_put(p, (rows, cols), q, accumulate=True).sin(), x, val)
    gradcheck(lambda p, q: p.index_put((rows[1:], cols[1:]), q[1:]).sin(), x, val)
    mask = rawdev.tensor(RNG.random((4, 5)) > 0.5)

    def assign(p, q):
        h = p * 1.0                              # a non-leaf takes the write, recorded as IndexPutBackward0
        h[rows[1:], cols[1:]] = q[:2]
        h[mask] = q[2] * 2.0                     # a 0-d value broadcast over the mask
        return h.sin()
    gradcheck(assign, x, val)
    assert assign(x, val).grad_fn.next_functions[0][0].name() == "IndexPutBackward0"
    with pytest.raises(RuntimeError, match="a leaf Variable that requires grad is being used in an in-place"):
        x[rows, cols] = 1.0
    with pytest.raises(RuntimeError, match="Index put requires the source and destination dtypes match"):
        rawdev.index_put(x, (rows,), rawdev.ones(1, dtype=rawdev.float32))


def test_recorded_setitem_on_the_simulator_matches_cpu():
    a, v = RNG.standard_normal((6, 4)).astype(np.float32), RNG.standard_normal((2, 4)).astype(np.float32)
    from rawdev.runtime import reset_for_tests
    reset_for_tests("sim")

    def fn(p, q, d):
        h = p * 2.0
        h[rawdev.tensor([5, 0], device=d)] = q
        h.index_put_((rawdev.tensor([1, 1, 2], device=d),), q[0] * 3.0, accumulate=True)
        return h
    cpu = _grads("cpu", lambda p, q: fn(p, q, "cpu"), a, v)
    sim = _grads("cuda", lambda p, q: fn(p, q, "cuda"), a, v)
    for g_sim, g_cpu in zip(sim, cpu):
        assert rel(g_sim, g_cpu) < 1e-5


def _set(b, idx, s):
    out = b.copy()
    out[idx] = s
    return out


def _set_diag(b, s, k):
    out = b.copy()
    i = np.arange(len(s))
    out[i, i + k] = s
    return out


def _pick(g, ref, sshape):
    """The gradient of src: g read at the positions ref writes src to."""
    n = int(np.prod(sshape))
    ids = ref(np.full(g.shape, -1.0), np.arange(n, dtype=float).reshape(sshape))
    out = np.zeros(n)
    out[ids[ids >= 0].astype(int)] = g[ids >= 0]
    return out.reshape(sshape)


def test_one_hot(driver):
    idx = RNG.integers(0, 5, (3, 4))
    for dev in ("cpu", "cuda"):
        t = rawdev.tensor(idx, device=dev)
        for n in (-1, 7):
            k = idx.max() + 1 if n == -1 else n
            out = F.one_hot(t, n)
            assert out.dtype == rawdev.int64 and tuple(out.shape) == (3, 4, k)
            np.testing.assert_array_equal(out.cpu().numpy(), np.eye(k, dtype=np.int64)[idx])
    with pytest.raises(RuntimeError, match="Class values must be smaller than num_classes"):
        F.one_hot(rawdev.tensor([3]), 2)
    with pytest.raises(RuntimeError, match="only applicable to index tensor of type LongTensor"):
        F.one_hot(rawdev.tensor([1.0]))


def test_scatter_ops_and_gradients(driver):
    r = rng()
    base = r.standard_normal((4, 5))
    for dev in ("cpu", "cuda"):
        dt = FLOAT[dev]
        cases = [
            (lambda b, s: rawdev.select_scatter(b, s, 1, 2), (4,), lambda b, s: _set(b, (slice(None), 2), s)),
            (lambda b, s: rawdev.slice_scatter(b, s, 0, 1, 4, 2), (2, 5), lambda b, s: _set(b, (slice(1, 4, 2),), s)),
            (lambda b, s: rawdev.diagonal_scatter(b, s, 1), (4,), lambda b, s: _set_diag(b, s, 1)),
        ]
        for ours, sshape, ref in cases:
            src = r.standard_normal(sshape)
            tb, ts = on(base, dev, dt, grad=True), on(src, dev, dt, grad=True)
            y = ours(tb, ts)
            np.testing.assert_allclose(num(y), ref(base, src), rtol=TOL[dev])
            g = r.standard_normal(base.shape)
            (y * on(g, dev, dt)).sum().backward()
            mask = ref(np.zeros_like(base), np.ones(sshape)) == 1
            np.testing.assert_allclose(num(tb.grad), np.where(mask, 0, g), rtol=TOL[dev])
            np.testing.assert_allclose(num(ts.grad), _pick(g, ref, sshape), rtol=TOL[dev])


def test_put_apply_map_and_sparse_init(driver):
    r = rng()
    base = r.standard_normal((3, 4))
    idx = r.integers(-12, 12, 6)
    src = r.standard_normal(6)
    for dev in ("cpu", "cuda"):
        t = on(base, dev, FLOAT[dev]).t().contiguous().t()              # a non-contiguous target
        t.put_(on(idx, dev), on(src, dev, FLOAT[dev]), accumulate=True)
        want = base.copy().reshape(-1)
        np.add.at(want, np.where(idx < 0, idx + 12, idx), src)
        np.testing.assert_allclose(num(t), want.reshape(3, 4), rtol=TOL[dev] * 10, atol=TOL[dev])
        uniq = r.permutation(12)[:5]
        out = rawdev.put(on(base, dev, FLOAT[dev]), on(uniq, dev), on(src[:5], dev, FLOAT[dev]))
        want = base.copy().reshape(-1)
        want[uniq] = src[:5]
        np.testing.assert_allclose(num(out), want.reshape(3, 4), rtol=TOL[dev])
    assert rawdev.tensor([1.0, 2.0]).apply_(lambda v: v * 10).tolist() == [10.0, 20.0]
    assert rawdev.tensor([1.0, 2.0]).map_(rawdev.tensor([3.0, 4.0]), lambda a, b: a * b).tolist() == [3.0, 8.0]
    with pytest.raises(TypeError, match="only implemented on CPU tensors"):
        rawdev.zeros(2).cuda().apply_(abs)
    w = rawdev.nn.init.sparse_(rawdev.empty(10, 6), 0.35, std=0.5)
    assert ((w.numpy() == 0).sum(0) == 4).all() and w.numpy()[w.numpy() != 0].std() > 0.2
