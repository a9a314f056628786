"""F.embedding on a float16/bfloat16 weight (rawdev/ops/embedding.py): the forward gathers rows in the weight's own
2-byte storage (index_select_b2), the backward sums the 16-bit gradient rows into a float32 accumulator
(index_add_f32_{f16,bf16}, which widen as they read) and rounds the sum once to the weight's dtype — no
widening cast launches either way. Against float64 numpy on the cpu and the cuda (simulated) device, with
padding_idx, repeated indices, and the device-side assert of an index out of range."""
import numpy as np
import pytest
import rawdev
import rawdev.nn.functional as F
from rawdev.errors import DeviceAssertError
from rawdev.ops import cuda as cuda_ops
from rawdev.runtime import reset_for_tests, trace

from _refs import rng

KINDS = {"f16": rawdev.float16, "bf16": rawdev.bfloat16}
UNIT = {"f16": 2.0 ** -11, "bf16": 2.0 ** -8}


def launched(fn):
    with trace() as t:
        out = fn()
        out.cpu()
    return [str(c.owner) for c in t.calls if c.fn == "cuLaunchKernel"], out


def f64(t):
    return t.detach().float().cpu().numpy().astype(np.float64)


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("padding_idx", [None, 3, -1])
def test_forward_and_backward_against_float64(driver, kind, padding_idx):
    V, D = 37, 13
    w0 = rng().standard_normal((V, D))
    idx = rng().integers(0, V, (5, 7))
    idx[0, :3] = [3, 3, V - 1]                       # the padding rows (3, and -1 = V-1) are looked up too
    g0 = rng().standard_normal((5, 7, D))
    for dev in ("cpu", "cuda"):
        check_embedding(dev, kind, padding_idx, w0, idx, g0)


def check_embedding(dev, kind, padding_idx, w0, idx, g0):
    dt = KINDS[kind]
    V, D = w0.shape
    pad = None if padding_idx is None else padding_idx % V
    w = rawdev.tensor(w0, dtype=dt, device=dev, requires_grad=True)
    i = rawdev.tensor(idx, device=dev)
    g = rawdev.tensor(g0, dtype=dt, device=dev)
    if dev == "cuda":
        names, y = launched(lambda: F.embedding(i, w, padding_idx=padding_idx))
        assert names == ["index_select_b2"], names
    else:
        y = F.embedding(i, w, padding_idx=padding_idx)
    assert y.dtype is dt and tuple(y.shape) == (*idx.shape, D)
    wv, gv = f64(w), f64(g)
    np.testing.assert_array_equal(f64(y), wv[idx])       # a gather: the rows themselves, bit for bit
    if dev == "cuda":
        names, gw = launched(lambda: (y.backward(g), w.grad)[1])
        assert f"index_add_f32_{kind}" in names and f"cast_{kind}_f32" not in names, names
        assert names.count(f"cast_f32_{kind}") == 1, names  # the float32 sum rounded once
    else:
        y.backward(g)
        gw = w.grad
    assert gw.dtype is dt
    want = np.zeros((V, D))
    np.add.at(want, idx.reshape(-1), gv.reshape(-1, D))
    terms = np.zeros((V, D))
    np.add.at(terms, idx.reshape(-1), np.abs(gv).reshape(-1, D))
    if pad is not None:
        want[pad] = terms[pad] = 0.0
    tol = UNIT[kind] * np.abs(want) + 1e-6 * terms + 2.0 ** -25
    bad = np.abs(f64(gw) - want) > tol
    assert not bad.any(), (dev, np.argwhere(bad)[:5])
    if pad is not None:
        assert not f64(gw)[pad].any()


@pytest.mark.parametrize("kind,n", [("bf16", 300), ("f16", 3000)])
def test_repeated_indices_accumulate_in_float32(driver, kind, n):
    """n lookups of one row with gradient 1: a 16-bit running sum would stop at 256 (bf16) / 2048 (fp16), where
    adding 1 rounds back to the sum; the float32 accumulator reaches n, which the dtype holds exactly."""
    dt = KINDS[kind]
    for dev in ("cpu", "cuda"):
        w = rawdev.zeros((4, 3), dtype=dt, device=dev, requires_grad=True)
        y = F.embedding(rawdev.full((n,), 2, dtype=rawdev.int64, device=dev), w)
        y.backward(rawdev.ones((n, 3), dtype=dt, device=dev))
        want = np.zeros((4, 3))
        want[2] = n
        np.testing.assert_array_equal(f64(w.grad), want, err_msg=dev)


@pytest.fixture
def simgpu():
    reset_for_tests("sim")
    cuda_ops.set_poison(True)
    yield
    cuda_ops.set_poison(False)
    reset_for_tests("sim")   # the next test gets a power-on device, not this one's sticky error


@pytest.mark.parametrize("kind", KINDS)
def test_an_index_out_of_range_is_a_device_side_assert(simgpu, kind):
    w = rawdev.tensor(rng().standard_normal((10, 4)), dtype=KINDS[kind], device="cuda")
    y = F.embedding(rawdev.tensor([[1, 10, 3]], device="cuda"), w)
    with pytest.raises(DeviceAssertError, match=r"Assertion `index >= -size && index < size` failed"):
        y.cpu()
