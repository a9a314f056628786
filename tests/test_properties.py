"""Property-based tests (hypothesis): random shapes, dtypes and sets of tensors, each example checked
against numpy float64 or against the exact bytes it started from. Runs on the simulator (and a GPU)."""
import numpy as np
import pytest

pytest.importorskip("hypothesis", reason="hypothesis is not installed (a GPU image may lack it)")
import rawdev
import rawdev.nn.functional as F
from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402
from rawdev import nn

SETTINGS = settings(max_examples=20, deadline=None, derandomize=True,
                    suppress_health_check=[HealthCheck.function_scoped_fixture])
dims = st.integers(1, 70)   # crosses every GEMM tile edge (32, 64) and size 1


def relerr(got, ref):
    return float(np.max(np.abs(got - ref)) / max(np.max(np.abs(ref)), 1e-30))


@SETTINGS
@given(M=dims, N=dims, K=dims, bias=st.booleans(), seed=st.integers(0, 2**31))
def test_linear_forward_and_backward_match_float64(driver, M, N, K, bias, seed):
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((M, K)).astype(np.float32)
    w = rng.standard_normal((N, K)).astype(np.float32)
    b = rng.standard_normal(N).astype(np.float32)
    gy = rng.standard_normal((M, N)).astype(np.float32)
    X = rawdev.tensor(x, requires_grad=True)
    W = rawdev.tensor(w).cuda().requires_grad_()
    B = rawdev.tensor(b).cuda().requires_grad_() if bias else None
    Xc = X.cuda()
    Y = F.linear(Xc, W, B)
    Y.backward(rawdev.tensor(gy).cuda())
    x64, w64, gy64 = x.astype(np.float64), w.astype(np.float64), gy.astype(np.float64)
    ref = x64 @ w64.T + (b if bias else 0)
    assert relerr(Y.detach().cpu().numpy(), ref) < 1e-4
    assert relerr(X.grad.numpy(), gy64 @ w64) < 1e-4
    assert relerr(W.grad.cpu().numpy(), gy64.T @ x64) < 1e-4
    if bias:
        assert relerr(B.grad.cpu().numpy(), gy64.sum(0)) < 1e-4


@SETTINGS
@given(shape=st.lists(st.integers(1, 40), min_size=1, max_size=3), seed=st.integers(0, 2**31))
def test_sum_and_mean_over_each_axis_match_float64(driver, shape, seed):
    a = np.random.default_rng(seed).standard_normal(shape).astype(np.float32)
    t = rawdev.tensor(a).cuda()
    assert relerr(np.float64(t.sum().item()), a.astype(np.float64).sum()) < 1e-4 or abs(a.sum()) < 1e-3
    for d in range(len(shape)):
        assert relerr(t.sum(d).cpu().numpy(), a.astype(np.float64).sum(d)) < 1e-4
        assert relerr(t.mean(d).cpu().numpy(), a.astype(np.float64).mean(d)) < 1e-4


DTYPES = {"float32": np.float32, "float16": np.float16, "int64": np.int64, "int32": np.int32,
          "uint8": np.uint8, "bool": np.bool_}


@st.composite
def tensor_sets(draw):
    specs = draw(st.lists(st.tuples(st.sampled_from(sorted(DTYPES)),
                                    st.lists(st.integers(0, 9), min_size=0, max_size=3)), min_size=1, max_size=8))
    seed = draw(st.integers(0, 2**31))
    rng = np.random.default_rng(seed)
    arrays = []
    for name, shape in specs:
        raw = rng.integers(0, 256, size=int(np.prod(shape)) * np.dtype(DTYPES[name]).itemsize, dtype=np.uint8)
        if name == "bool":
            a = (raw[:int(np.prod(shape))] & 1).astype(bool).reshape(shape)
        else:
            a = raw.view(DTYPES[name]).reshape(shape)
        arrays.append(a)
    return arrays


class Holder(nn.Module):
    def __init__(self, arrays):
        super().__init__()
        for i, a in enumerate(arrays):
            t = rawdev.tensor(a)
            if a.dtype == np.float32 and i % 2 == 0:
                self.register_parameter(f"p{i}", nn.Parameter(t))
            else:
                self.register_buffer(f"b{i}", t)


@SETTINGS
@given(arrays=tensor_sets())
def test_module_round_trip_keeps_every_byte_with_one_copy_each_way(driver, arrays):
    """Any mix of dtypes and shapes (empty tensors included) goes to the device in one HtoD copy and
    comes back bit-identical (NaN payloads and float16 specials included) in one DtoH copy."""
    m = Holder(arrays)
    params = {n: id(p) for n, p in m.named_parameters()}
    with rawdev.trace() as t:
        m.cuda()
    assert t.count("cuMemcpyHtoDAsync") == (1 if any(a.size for a in arrays) else 0)
    assert all(v.is_cuda for v in m.state_dict().values())
    with rawdev.trace() as t:
        m.cpu()
    assert t.count("cuMemcpyDtoHAsync") == (1 if any(a.size for a in arrays) else 0)
    assert {n: id(p) for n, p in m.named_parameters()} == params
    sd = m.state_dict()   # parameters first, then buffers (PyTorch's order): match by index in the name
    assert len(sd) == len(arrays)
    for name, v in sd.items():
        a, got = arrays[int(name[1:])], v.numpy()
        assert got.dtype == a.dtype and got.shape == a.shape
        assert got.tobytes() == a.tobytes()
