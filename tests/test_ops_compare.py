"""Comparisons (eq ne lt le gt ge), argmax/argmin, max/min, dtype casts on cuda and the accuracy line
`(model(x).argmax(1) == y).float().mean()`: PyTorch's semantics on the cpu (numpy as the reference) and the
cuda path (shipped PTX on the simulator, and on a GPU when present) against the cpu path. cuda op outputs are
poisoned before the kernels write them (NaN for 32-bit, 0xFF bytes otherwise)."""
import numpy as np
import pytest
import rawdev
from rawdev import nn
from rawdev.ops import cuda as C
from rawdev.tensor.factory import from_numpy

RNG = np.random.default_rng(2024)
OPS = {"eq": np.equal, "ne": np.not_equal, "lt": np.less, "le": np.less_equal, "gt": np.greater,
       "ge": np.greater_equal}
DUNDER = {"eq": "__eq__", "ne": "__ne__", "lt": "__lt__", "le": "__le__", "gt": "__gt__", "ge": "__ge__"}


@pytest.fixture
def poisoned(driver):
    C.set_poison(True)
    yield driver
    C.set_poison(False)


def with_ties_and_nans(shape, other=None):
    """Quarter-step values (many exact ties); a few NaNs; when other is given, a third of the elements copy it."""
    x = np.round(RNG.standard_normal(shape) * 4) / 4
    if other is not None:
        x = np.where(RNG.random(shape) < 0.33, np.broadcast_to(other, shape), x)
    flat = x.reshape(-1)
    if flat.size > 4:
        flat[RNG.choice(flat.size, 2, replace=False)] = np.nan
    return np.asarray(x, np.float32)


def cmp_all_forms(op, a, b):
    """The function, the method and the operator must agree; returns the result."""
    r = getattr(rawdev, op)(a, b)
    for other in (getattr(a, op)(b), getattr(a, DUNDER[op])(b)):
        assert np.array_equal(np.asarray(other.cpu()), np.asarray(r.cpu()))
    return r


# ------------------------------------------------------------------ comparisons on the cpu
@pytest.mark.parametrize("op", sorted(OPS))
@pytest.mark.parametrize("shapes", [((4, 5), (4, 5)), ((4, 5), (5,)), ((4, 5), (4, 1)), ((3, 1, 5), (4, 1)),
                                    ((1,), (6,)), ((), (3, 2))])
def test_compare_tensors_cpu(op, shapes):
    b = with_ties_and_nans(shapes[1])
    fits = np.broadcast_shapes(*shapes) == shapes[0]      # else the quarter steps still give ties
    a = with_ties_and_nans(shapes[0], b if fits else None)
    ta, tb = from_numpy(a).requires_grad_(), from_numpy(b)
    r = cmp_all_forms(op, ta, tb)
    assert r.dtype is rawdev.bool and not r.requires_grad and r.grad_fn is None
    assert np.array_equal(np.asarray(r), OPS[op](a, b))


@pytest.mark.parametrize("op", sorted(OPS))
def test_compare_scalars_cpu(op):
    a = with_ties_and_nans((6, 7))
    t = from_numpy(a)
    for s in (0.25, 0, -1, np.float32(0.5), float("nan")):
        r = cmp_all_forms(op, t, s)
        assert r.dtype is rawdev.bool
        with np.errstate(invalid="ignore"):
            assert np.array_equal(np.asarray(r), OPS[op](a, np.float32(s)))
    # reflected: 0.25 < t is t > 0.25
    refl = {"eq": "eq", "ne": "ne", "lt": "gt", "le": "ge", "gt": "lt", "ge": "le"}
    symbol = {"eq": "==", "ne": "!=", "lt": "<", "le": "<=", "gt": ">", "ge": ">="}[op]
    r = eval(f"0.25 {symbol} t")
    assert np.array_equal(np.asarray(r), OPS[refl[op]](a, np.float32(0.25)))


def test_compare_promotes_like_pytorch():
    # int64 vs float32 compares in float32 (2**24 + 1 rounds to 2**24), as PyTorch's type promotion does
    i = rawdev.tensor([2 ** 24 + 1, 3])
    f = rawdev.tensor([2.0 ** 24, 3.5])
    assert (i == f).tolist() == [True, False]
    # a Python float against a float32 tensor is rounded to float32 first (a wrapped number)
    assert (rawdev.tensor([0.1]) == 0.1).tolist() == [True]
    # int64 against a Python int stays exact
    assert (rawdev.tensor([2 ** 53 + 1]) == 2 ** 53).tolist() == [False]
    assert (rawdev.tensor([True, False]) == True).tolist() == [True, False]  # noqa: E712
    assert (rawdev.tensor([1, 2, 3], dtype=rawdev.uint8) > -1).tolist() == [True, True, True]


def test_hash_identity_and_non_tensor_operands():
    t, u = rawdev.tensor([1.0, 2.0]), rawdev.tensor([1.0, 2.0])
    assert hash(t) == id(t) and {t: 1, u: 2}[t] == 1
    assert t in [t] and (t == None) is False and (t != None) is True  # noqa: E711  (Tensor.__eq__ with None)
    with pytest.raises(TypeError):
        t < "a"  # noqa: B015
    with pytest.raises(RuntimeError, match="must match the size"):
        t == rawdev.ones(3)  # noqa: B015


def test_compare_mixing_devices_names_both(driver):
    with pytest.raises(RuntimeError, match="Expected all tensors to be on the same device"):
        rawdev.ones(3) == rawdev.ones(3).cuda()  # noqa: B015


# ------------------------------------------------------------------ comparisons on cuda vs the cpu
def _cmp_case(name):
    if name == "f32":
        b = with_ties_and_nans((33, 17))
        return with_ties_and_nans((33, 17), b), b
    if name == "f32_broadcast":
        b = with_ties_and_nans((17,))
        return with_ties_and_nans((33, 17), b), b
    if name == "f32_scalar":
        return with_ties_and_nans((301,)), 0.25
    if name == "i64":
        b = RNG.integers(-3, 3, 257) * 2 ** 40
        return np.where(RNG.random(257) < 0.4, b, b + RNG.integers(-1, 2, 257)), b
    if name == "i64_scalar":
        return RNG.integers(-3, 3, 257) + 2 ** 40, 2 ** 40
    if name == "i64_vs_f32":
        return RNG.integers(-3, 3, 100), np.round(RNG.standard_normal(100)).astype(np.float32)
    if name == "bool":
        return RNG.random(99) < 0.5, RNG.random(99) < 0.5
    if name == "bool_scalar":
        return RNG.random(99) < 0.5, True
    raise KeyError(name)


@pytest.mark.parametrize("op", sorted(OPS))
@pytest.mark.parametrize("case", ["f32", "f32_broadcast", "f32_scalar", "i64", "i64_scalar", "i64_vs_f32", "bool",
                                  "bool_scalar"])
def test_compare_cuda_matches_cpu(poisoned, op, case):
    a, b = _cmp_case(case)
    cpu_a = from_numpy(np.ascontiguousarray(a))
    cpu_b = from_numpy(np.ascontiguousarray(b)) if isinstance(b, np.ndarray) else b
    want = cmp_all_forms(op, cpu_a, cpu_b)
    got = cmp_all_forms(op, cpu_a.cuda(), cpu_b.cuda() if isinstance(b, np.ndarray) else b)
    assert got.is_cuda and got.dtype is rawdev.bool and tuple(got.shape) == tuple(want.shape)
    host = got.cpu()._host_storage().view(np.uint8)
    assert set(np.unique(host)) <= {0, 1}            # every byte written (poison is 0xFF)
    assert np.array_equal(host.astype(bool), np.asarray(want))


def test_int64_broadcast_on_cuda_matches_cpu(driver):
    """Broadcasting is expand (stride 0) + one strided copy, for every dtype: int64 compares broadcast too."""
    a, b = rawdev.tensor([[1, 2], [3, 4]]), rawdev.tensor([1, 4])
    assert (a.cuda() == b.cuda()).cpu().tolist() == (a == b).tolist() == [[True, False], [False, True]]
    assert (a.cuda() < b.cuda().t()).cpu().tolist() == [[False, True], [False, False]]


# ------------------------------------------------------------------ argmax / argmin / max / min
def _np_arg(x, dim, is_max, keepdim=False):
    f = np.argmax if is_max else np.argmin
    if dim is None:
        r = np.asarray(f(x.reshape(-1)))
        return r.reshape((1,) * x.ndim) if keepdim else r
    r = f(x, axis=dim)
    return np.expand_dims(r, dim) if keepdim else r


def test_argmax_semantics_cpu():
    x = rawdev.tensor([[1.0, 3.0, 3.0, 0.0], [2.0, float("nan"), 5.0, float("nan")], [-1.0, -1.0, -2.0, -2.0]])
    assert x.argmax(1).tolist() == [1, 1, 0]          # first index on ties; NaN is the max
    assert x.argmin(1).tolist() == [3, 1, 2]          # and NaN is the min too
    assert x.argmax().item() == 5 and x.argmax().shape == ()
    assert x.argmax(dim=0, keepdim=True).tolist() == [[1, 1, 1, 1]]
    assert x.argmax(keepdim=True).shape == (1, 1)
    assert x.argmax(1).dtype is rawdev.int64 and not x.requires_grad_().argmax(1).requires_grad
    assert rawdev.argmin(x, -1).tolist() == [3, 1, 2]
    assert rawdev.tensor(4.0).argmax(0).item() == 0
    v, i = x.max(1)
    assert i.tolist() == [1, 1, 0] and v.detach()[0].item() == 3.0 and np.isnan(v.detach()[1].item())
    with pytest.raises(IndexError, match="non-zero size"):
        rawdev.zeros(0, 3).argmax(0)
    with pytest.raises(RuntimeError, match="numel"):
        rawdev.zeros(0).max()
    with pytest.raises(IndexError, match="Dimension out of range"):
        x.argmax(2)


def test_max_return_type_and_nodes():
    x = rawdev.randn(3, 4, requires_grad=True)
    r = x.max(1)
    assert type(r).__name__ == "max" and r._fields == ("values", "indices")
    assert r[0] is r.values and r[1] is r.indices
    assert r.values.grad_fn.name() == "MaxBackward0" and not r.indices.requires_grad
    assert x.min(0).values.grad_fn.name() == "MinBackward0" and type(x.min(0)).__name__ == "min"
    assert x.max().grad_fn.name() == "MaxBackward1" and x.min().grad_fn.name() == "MinBackward1"


def test_max_of_all_shares_the_gradient_among_ties(driver):
    for dev in ("cpu", "cuda"):
        x = rawdev.tensor([1.0, 4.0, 4.0, -2.0, 4.0]).to(dev).requires_grad_()
        (x.max() * 3.0).backward()
        np.testing.assert_allclose(np.asarray(x.grad.cpu()), [0, 1, 1, 0, 1])
        y = rawdev.tensor([1.0, float("nan"), 4.0]).to(dev).requires_grad_()
        y.min().backward()                             # NaN is the result: its element gets the gradient
        np.testing.assert_allclose(np.asarray(y.grad.cpu()), [0, 1, 0])


ARG_CASES = [((37, 10), 1), ((37, 10), 0), ((3, 300, 5), 1), ((2, 9000), -1), ((1,), None), ((4, 5), None),
             ((1, 1), 0), ((5, 1, 3), 1)]


@pytest.mark.parametrize("shape,dim", ARG_CASES)
@pytest.mark.parametrize("is_max", [True, False])
def test_arg_reductions_cuda_match_cpu(poisoned, shape, dim, is_max):
    x = with_ties_and_nans(shape)
    if x.size > 40:
        x.reshape(-1)[: x.size // 2] = np.abs(x.reshape(-1)[: x.size // 2])   # fewer NaN-decided rows
    xc = from_numpy(x)
    xg = xc.cuda()
    name = "argmax" if is_max else "argmin"
    for keepdim in (False, True):
        want = getattr(xc, name)(dim, keepdim)
        got = getattr(xg, name)(dim, keepdim)
        assert got.dtype is rawdev.int64 and tuple(got.shape) == tuple(want.shape)
        assert np.array_equal(np.asarray(got.cpu()), np.asarray(want))
        assert np.array_equal(np.asarray(want), _np_arg(x, dim, is_max, keepdim))
    red = getattr(rawdev, "max" if is_max else "min")
    if dim is None:
        np.testing.assert_array_equal(np.asarray(red(xg).cpu()), np.asarray(red(xc)))
    else:
        (vg, ig), (vc, ic) = red(xg, dim), red(xc, dim)
        np.testing.assert_array_equal(np.asarray(vg.cpu()), np.asarray(vc))    # equal_nan by default
        np.testing.assert_array_equal(np.asarray(ig.cpu()), np.asarray(ic))


# ------------------------------------------------------------------ casts on the device
CAST_PAIRS = [(rawdev.bool, rawdev.float32), (rawdev.uint8, rawdev.float32), (rawdev.int32, rawdev.float32),
              (rawdev.int64, rawdev.float32), (rawdev.float32, rawdev.bool), (rawdev.float32, rawdev.uint8),
              (rawdev.float32, rawdev.int32), (rawdev.float32, rawdev.int64), (rawdev.float32, rawdev.float16),
              (rawdev.float16, rawdev.float32), (rawdev.float32, rawdev.bfloat16)]


@pytest.mark.parametrize("src,dst", CAST_PAIRS, ids=[f"{a.name}-{b.name}" for a, b in CAST_PAIRS])
def test_cast_on_cuda_is_one_kernel(poisoned, src, dst):
    vals = np.round(np.abs(RNG.standard_normal(77)) * 50, 1)
    vals[:3] = [0.0, 1.0, 2.9]
    if src is rawdev.bool:
        vals = vals > 20
    x = rawdev.tensor(vals, dtype=src)
    xg = x.cuda()
    with rawdev.trace() as t:
        y = xg.to(dtype=dst)
    fns = [c.fn for c in t.calls]
    assert "cuLaunchKernel" in fns and not any("Memcpy" in f for f in fns)   # no trip through the host
    assert y.is_cuda and y.dtype is dst
    assert np.array_equal(y.cpu()._host_storage(), x.to(dtype=dst)._host_storage())


def test_float_of_bool_requiring_grad_path(driver):
    # a float32 tensor that requires grad, cast on the device inside the graph (ToCopyBackward0)
    x = rawdev.randn(5, 3).cuda().requires_grad_()
    y = x.to(dtype=rawdev.float16)
    assert y.grad_fn.name() == "ToCopyBackward0" and y.dtype is rawdev.float16
    np.testing.assert_array_equal(np.asarray(y.detach().cpu()), np.asarray(x.detach().cpu().half()))


def test_bool_sum_counts_on_cuda(poisoned):
    a = RNG.random((37, 11)) < 0.4
    t = from_numpy(a).cuda()
    s = t.sum()
    assert s.dtype is rawdev.int64 and s.item() == a.sum()
    np.testing.assert_array_equal(np.asarray(t.sum(0).cpu()), a.sum(0))


# ------------------------------------------------------------------ the accuracy line
def test_accuracy_line_cpu_and_cuda(driver):
    rawdev.manual_seed(11)
    model = nn.Sequential(nn.Linear(16, 32), nn.ReLU(), nn.Linear(32, 10))
    xv = RNG.standard_normal((257, 16)).astype(np.float32)
    yv = RNG.integers(0, 10, 257)
    w = [p.detach().numpy().astype(np.float64) for p in model.parameters()]
    logits = np.maximum(xv @ w[0].T + w[1], 0) @ w[2].T + w[3]
    want = (logits.argmax(1) == yv).mean()
    x, y = from_numpy(xv), from_numpy(yv)
    acc_cpu = (model(x).argmax(1) == y).float().mean()
    assert acc_cpu.dtype is rawdev.float32 and acc_cpu.item() == pytest.approx(want, abs=1e-6)
    model.cuda()
    xg, yg = x.cuda(), y.cuda()
    with rawdev.trace() as t:
        acc = (model(xg).argmax(1) == yg).float().mean()
    assert acc.is_cuda and acc.shape == ()
    assert not any(c.fn.startswith("cuMemcpy") for c in t.calls)   # computed on the device
    assert acc.item() == pytest.approx(want, abs=1e-6)
    assert (model(xg).argmax(1) == yg).sum().item() == round(want * 257)


# ------------------------------------------------------------------ abs and pow edge cases
def test_abs_of_integers_stays_integer():
    t = rawdev.tensor([-3, 0, 2])
    assert abs(t).dtype is rawdev.int64 and abs(t).tolist() == [3, 0, 2]


def test_abs_and_pow_gradients_at_zero(driver):
    for dev in ("cpu", "cuda"):
        x = rawdev.tensor([-2.0, 0.0, 3.0]).to(dev).requires_grad_()
        (x.abs().sum() + (x ** 0).sum()).backward()
        np.testing.assert_array_equal(np.asarray(x.grad.cpu()), [-1.0, 0.0, 1.0])   # sign(0) = 0; x**0 is flat
