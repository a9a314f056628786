"""Quantized dtypes and tensors: quantize_per_tensor / quantize_per_channel against a float64 numpy reference of
PyTorch's formula (round half to even of x / scale, plus the zero point, clamped to the dtype's range),
dequantize, the quantization parameters, repr, and the errors (ordinary ops, cuda)."""
import copy

import numpy as np
import pytest
import rawdev

from _refs import rng

QRANGE = {"qint8": (-128, 127), "quint8": (0, 255), "qint32": (-2 ** 31, 2 ** 31 - 1)}
STORAGE = {"qint8": np.int8, "quint8": np.uint8, "qint32": np.int32}


def ref_quantize(x, scale, zp, name):
    lo, hi = QRANGE[name]
    return np.clip(np.rint(x.astype(np.float64) / scale) + zp, lo, hi).astype(STORAGE[name])


def test_quantized_dtypes():
    for name, size in (("qint8", 1), ("quint8", 1), ("qint32", 4)):
        d = getattr(rawdev, name)
        assert d.is_quantized and d.itemsize == size and repr(d) == f"rawdev.{name}"
        assert not d.is_floating_point
    assert rawdev.qint8.is_signed and not rawdev.quint8.is_signed
    assert not rawdev.float32.is_quantized and not rawdev.int8.is_quantized
    assert rawdev.dtypes.from_name("torch.qint8") is rawdev.qint8
    assert copy.deepcopy(rawdev.quint8) is rawdev.quint8
    assert repr(rawdev.per_tensor_affine) == "rawdev.per_tensor_affine"
    assert copy.deepcopy(rawdev.per_channel_affine) is rawdev.per_channel_affine


@pytest.mark.parametrize("name,zp", [("qint8", 0), ("qint8", -3), ("quint8", 128), ("quint8", 7), ("qint32", 5)])
def test_quantize_per_tensor_matches_the_float64_reference(name, zp):
    g = rng()
    x = (g.standard_normal((7, 9)) * 3).astype(np.float32)
    scale = 0.037
    q = rawdev.quantize_per_tensor(rawdev.tensor(x), scale, zp, getattr(rawdev, name))
    want = ref_quantize(x, scale, zp, name)
    assert q.is_quantized and q.dtype is getattr(rawdev, name) and q.shape == (7, 9)
    assert q.qscheme() is rawdev.per_tensor_affine and q.q_scale() == scale and q.q_zero_point() == zp
    ints = q.int_repr()
    assert ints.dtype is {"qint8": rawdev.int8, "quint8": rawdev.uint8, "qint32": rawdev.int32}[name]
    np.testing.assert_array_equal(ints.numpy(), want)
    deq = q.dequantize()
    assert deq.dtype is rawdev.float32 and not deq.is_quantized
    ref = (want.astype(np.float64) - zp) * scale
    np.testing.assert_allclose(deq.numpy(), ref, rtol=1e-6, atol=1e-7)
    inside = (want > QRANGE[name][0]) & (want < QRANGE[name][1])   # not clamped: within half a step of x
    assert np.all(np.abs(deq.numpy()[inside] - x[inside]) <= scale / 2 * (1 + 1e-5))


def test_ties_round_to_even_and_the_zero_point_is_added_after_rounding():
    x = rawdev.tensor([0.5, 1.5, 2.5, -0.5, -1.5, 1000.0, -1000.0])
    q = rawdev.quantize_per_tensor(x, 1.0, 11, rawdev.quint8)
    assert q.int_repr().tolist() == [11, 13, 13, 11, 9, 255, 0]
    q8 = rawdev.quantize_per_tensor(x, 1.0, 0, rawdev.qint8)
    assert q8.int_repr().tolist() == [0, 2, 2, 0, -2, 127, -128]


def test_quantize_per_channel_matches_the_reference():
    g = rng()
    x = g.standard_normal((4, 3, 5)).astype(np.float32)
    for axis in (0, 1, -1):
        n = x.shape[axis]
        scales = (0.01 + g.random(n) * 0.05)
        zps = g.integers(-5, 5, n)
        q = rawdev.quantize_per_channel(rawdev.tensor(x), rawdev.tensor(scales, dtype=rawdev.float64),
                                        rawdev.tensor(zps), axis, rawdev.qint8)
        shape = [1, 1, 1]
        shape[axis] = -1
        want = np.clip(np.rint(x.astype(np.float64) / scales.reshape(shape)) + zps.reshape(shape), -128, 127)
        np.testing.assert_array_equal(q.int_repr().numpy(), want.astype(np.int8))
        assert q.qscheme() is rawdev.per_channel_affine and q.q_per_channel_axis() == axis % 3
        assert q.q_per_channel_scales().dtype is rawdev.float64
        np.testing.assert_array_equal(q.q_per_channel_scales().numpy(), scales)
        assert q.q_per_channel_zero_points().dtype is rawdev.int64
        np.testing.assert_array_equal(q.q_per_channel_zero_points().numpy(), zps)
        ref = (want - zps.reshape(shape)) * scales.reshape(shape)
        np.testing.assert_allclose(q.dequantize().numpy(), ref, rtol=1e-6, atol=1e-7)
    with pytest.raises(RuntimeError, match="kPerTensorAffine"):
        q.q_scale()


def test_per_tensor_parameters_from_tensors_and_lists():
    x = rawdev.tensor([0.1, 0.2])
    q = rawdev.quantize_per_tensor(x, rawdev.tensor(0.1), rawdev.tensor(2), rawdev.quint8)
    assert q.int_repr().tolist() == [3, 4]
    qs = rawdev.quantize_per_tensor([x, x], rawdev.tensor([0.1, 0.05]), rawdev.tensor([0, 1]), rawdev.quint8)
    assert [t.int_repr().tolist() for t in qs] == [[1, 2], [3, 5]]
    with pytest.raises(RuntimeError, match="kPerChannelAffine"):
        q.q_per_channel_scales()


def test_repr_clone_detach_and_deepcopy():
    q = rawdev.quantize_per_tensor(rawdev.tensor([-1.0, 0.0, 1.0, 2.0]), 0.1, 10, rawdev.quint8)
    r = repr(q)
    assert r.startswith("tensor([-1.,  0.,  1.,  2.], size=(4,), dtype=rawdev.quint8,")
    assert "quantization_scheme=rawdev.per_tensor_affine, scale=0.1, zero_point=10)" in r
    for c in (q.clone(), q.detach(), copy.deepcopy(q)):
        assert c.is_quantized and c.int_repr().tolist() == [0, 10, 20, 30] and c.q_scale() == 0.1
    assert q.cpu() is q and q.to("cpu") is q
    assert not rawdev.ones(2).is_quantized
    assert rawdev.tensor([1, 2]).dequantize().dtype is rawdev.float32   # an unquantized tensor: its float values


def test_ordinary_ops_raise_pytorchs_quantized_cpu_error():
    q = rawdev.quantize_per_tensor(rawdev.tensor([1.0, 2.0, 3.0]), 0.1, 0, rawdev.qint8)
    cases = [(lambda: q + 1, "aten::add.Tensor"), (lambda: q * q, "aten::mul.Tensor"),
             (lambda: rawdev.add(q, 1), "aten::add.Tensor"), (lambda: q.sum(), "aten::sum"),
             (lambda: rawdev.relu(q), "aten::"), (lambda: rawdev.matmul(q, q), "aten::"),
             (lambda: rawdev.stack([q, q]), "aten::"), (lambda: q.float(), "aten::float"),
             (lambda: q[0], "aten::index"), (lambda: q.T, "aten::T"), (lambda: q.add_(1), "aten::add_")]
    for fn, op in cases:
        with pytest.raises(NotImplementedError, match=rf"Could not run '{op}.*' with arguments from the "
                                                      r"'QuantizedCPU' backend"):
            fn()
    assert q.int_repr().tolist() == [10, 20, 30]   # untouched


def test_quantized_tensors_stay_on_the_cpu():
    q = rawdev.quantize_per_tensor(rawdev.tensor([1.0]), 0.1, 0, rawdev.qint8)
    with pytest.raises(NotImplementedError, match="cpu only"):
        q.cuda()
    with pytest.raises(NotImplementedError, match="cpu only"):
        q.to("cuda")
    with pytest.raises(RuntimeError, match="Quantize only works on Float Tensor"):
        rawdev.quantize_per_tensor(rawdev.tensor([1, 2]), 0.1, 0, rawdev.qint8)
    with pytest.raises(RuntimeError, match="quantized dtype"):
        rawdev.quantize_per_tensor(rawdev.tensor([1.0]), 0.1, 0, rawdev.int8)


def test_quantized_tensors_save_and_load(tmp_path):
    g = rng()
    x = rawdev.tensor(g.standard_normal((3, 4)).astype(np.float32))
    qt = rawdev.quantize_per_tensor(x, 0.02, 3, rawdev.quint8)
    qc = rawdev.quantize_per_channel(x, rawdev.tensor([0.1, 0.2, 0.3], dtype=rawdev.float64),
                                     rawdev.tensor([0, 1, -2]), 0, rawdev.qint8)
    rawdev.save({"t": qt, "c": qc, "f": x}, tmp_path / "q.pt")
    back = rawdev.load(tmp_path / "q.pt")
    for a, b in ((back["t"], qt), (back["c"], qc)):
        assert a.is_quantized and a.dtype is b.dtype and a.qscheme() is b.qscheme()
        np.testing.assert_array_equal(a.int_repr().numpy(), b.int_repr().numpy())
    assert back["t"].q_scale() == 0.02 and back["t"].q_zero_point() == 3
    np.testing.assert_array_equal(back["c"].q_per_channel_zero_points().numpy(), [0, 1, -2])
    np.testing.assert_array_equal(back["f"].numpy(), x.numpy())
