"""Observers and qconfigs: the quantization parameters MinMaxObserver / PerChannelMinMaxObserver compute on known
data, checked against PyTorch's formulas evaluated here in float32 numpy; the qconfigs' contents; the quantized
engine switch."""
import numpy as np
import pytest
import rawdev
from rawdev.ao.quantization import (
    MinMaxObserver,
    MovingAverageMinMaxObserver,
    PerChannelMinMaxObserver,
    PlaceholderObserver,
    QConfig,
    default_dynamic_qconfig,
    float_qparams_weight_only_qconfig,
    get_default_qconfig,
)

F = np.float32
EPS = F(np.finfo(np.float32).eps)


def affine(mn, mx, qmin, qmax):
    mn, mx = F(min(mn, 0)), F(max(mx, 0))
    scale = max(F((mx - mn) / F(qmax - qmin)), EPS)
    zp = int(np.clip(qmin - np.rint(F(mn / scale)), qmin, qmax))
    return scale, zp


def symmetric(mn, mx, qmin, qmax):
    m = max(F(-min(mn, 0)), F(max(mx, 0)))
    return max(F(m / F((qmax - qmin) / 2)), EPS)


def observed(obs, *xs):
    for x in xs:
        assert obs(rawdev.tensor(x)) is not None
    return obs.calculate_qparams()


def test_minmax_affine_quint8():
    scale, zp = observed(MinMaxObserver(), [-1.0, 2.0, 0.5], [0.25, 3.5])
    ws, wz = affine(-1.0, 3.5, 0, 255)
    assert scale.dtype is rawdev.float32 and scale.shape == (1,) and zp.shape == (1,)
    assert scale.item() == float(ws) and zp.item() == wz
    assert zp.dtype is rawdev.int32


def test_minmax_symmetric_qint8_is_the_dynamic_weight_observer():
    obs = default_dynamic_qconfig.weight()
    assert obs.dtype is rawdev.qint8 and obs.qscheme is rawdev.per_tensor_symmetric
    scale, zp = observed(obs, [-3.0, 1.0, 2.5])
    assert scale.item() == float(symmetric(-3.0, 2.5, -128, 127)) and zp.item() == 0
    assert zp.dtype is rawdev.int64


def test_symmetric_quint8_zero_point_and_custom_ranges():
    scale, zp = observed(MinMaxObserver(dtype=rawdev.quint8, qscheme=rawdev.per_tensor_symmetric), [-1.0, 4.0])
    assert zp.item() == 128 and scale.item() == float(symmetric(-1.0, 4.0, 0, 255))
    obs = MinMaxObserver(quant_min=0, quant_max=127)
    scale, zp = observed(obs, [-2.0, 6.0])
    assert (obs.quant_min, obs.quant_max) == (0, 127)
    assert (scale.item(), zp.item()) == (float(affine(-2.0, 6.0, 0, 127)[0]), affine(-2.0, 6.0, 0, 127)[1])
    with pytest.warns(UserWarning, match="reduce_range will be deprecated"):
        obs = MinMaxObserver(reduce_range=True)
    assert (obs.quant_min, obs.quant_max) == (0, 127)
    with pytest.raises(NotImplementedError, match="Cannot reduce range for symmetric quantization for quint8"):
        with pytest.warns(UserWarning):
            MinMaxObserver(qscheme=rawdev.per_tensor_symmetric, reduce_range=True)
    with pytest.raises(AssertionError, match="must include 0"):
        MinMaxObserver(quant_min=1, quant_max=10)


def test_positive_only_data_keeps_zero_in_range_and_tiny_ranges_use_eps():
    scale, zp = observed(MinMaxObserver(), [2.0, 5.0])
    assert zp.item() == 0 and scale.item() == float(F(F(5.0) / F(255)))
    scale, zp = observed(MinMaxObserver(), [0.0, 0.0])
    assert scale.item() == float(EPS) and zp.item() == 0


def test_an_unused_observer_warns_and_gives_defaults():
    with pytest.warns(UserWarning, match="must run observer before calling calculate_qparams"):
        scale, zp = MinMaxObserver().calculate_qparams()
    assert scale.tolist() == [1.0] and zp.tolist() == [0]


def test_moving_average():
    obs = MovingAverageMinMaxObserver(averaging_constant=0.5)
    obs(rawdev.tensor([-1.0, 1.0]))
    obs(rawdev.tensor([-3.0, 5.0]))
    assert obs.min_val.item() == -2.0 and obs.max_val.item() == 3.0


def test_per_channel_symmetric_affine_and_float_qparams():
    x = np.array([[-1.0, 2.0, 0.5], [0.25, 0.5, 0.125], [-4.0, -2.0, -1.0]], np.float32)
    scales, zps = observed(PerChannelMinMaxObserver(dtype=rawdev.qint8, qscheme=rawdev.per_channel_symmetric), x)
    np.testing.assert_array_equal(scales.numpy(), [symmetric(r.min(), r.max(), -128, 127) for r in x])
    assert zps.tolist() == [0, 0, 0]
    scales, zps = observed(PerChannelMinMaxObserver(ch_axis=1), x)
    cols = x.T
    np.testing.assert_array_equal(scales.numpy(), [affine(c.min(), c.max(), 0, 255)[0] for c in cols])
    assert zps.tolist() == [affine(c.min(), c.max(), 0, 255)[1] for c in cols]
    scales, zps = observed(float_qparams_weight_only_qconfig.weight(), x)
    want_s = [F((r.max() - r.min()) / F(255)) for r in x]
    np.testing.assert_array_equal(scales.numpy(), want_s)
    np.testing.assert_allclose(zps.numpy(), [-r.min() / s for r, s in zip(x, want_s)], rtol=1e-6)


def test_placeholder_and_qconfigs():
    act = default_dynamic_qconfig.activation()
    assert isinstance(act, PlaceholderObserver) and act.dtype is rawdev.quint8 and act.is_dynamic
    assert (act.quant_min, act.quant_max) == (0, 255)
    x = rawdev.ones(2)
    assert act(x) is x
    with pytest.raises(Exception, match="should not be called for PlaceholderObserver"):
        act.calculate_qparams()
    for backend in ("x86", "fbgemm", "onednn"):
        qc = get_default_qconfig(backend)
        assert qc.weight().qscheme is rawdev.per_channel_symmetric
    assert get_default_qconfig("qnnpack").weight().qscheme is rawdev.per_tensor_symmetric
    with pytest.raises(NotImplementedError, match="static"):
        get_default_qconfig("x86").activation()
    with pytest.raises(AssertionError, match="not supported"):
        get_default_qconfig("arm")
    with pytest.raises(ValueError, match="observer instance"):
        QConfig(activation=MinMaxObserver(), weight=MinMaxObserver)
    assert rawdev.quantization.get_default_qconfig is get_default_qconfig
    assert rawdev.quantization.default_dynamic_qconfig is default_dynamic_qconfig


def test_static_quantization_stays_refused():
    for fn in (lambda: rawdev.quantization.prepare(rawdev.nn.Linear(2, 2)),
               lambda: rawdev.ao.quantization.QuantStub(), lambda: rawdev.nn.quantized.Linear(2, 2),
               lambda: rawdev.ao.nn.quantized.Conv2d(1, 1, 1), lambda: rawdev.nn.quantized.dynamic.GRU(2, 2)):
        with pytest.raises(NotImplementedError, match=r"^torch[.].+ is not supported by rawdev: .+"):
            fn()


def test_quantized_engine_switch():
    qb = rawdev.backends.quantized
    assert qb.engine == "x86"
    assert set(qb.supported_engines) == {"none", "fbgemm", "x86", "qnnpack", "onednn"}
    try:
        qb.engine = "qnnpack"
        assert qb.engine == "qnnpack"
        with pytest.raises(RuntimeError, match="is not a valid value for quantized engine"):
            qb.engine = "mkl"
        assert qb.engine == "qnnpack"
        with pytest.raises(RuntimeError, match="Assignment not supported"):
            qb.supported_engines = []
    finally:
        qb.engine = "x86"
