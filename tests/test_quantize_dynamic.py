"""Dynamic quantization: the quantized Linear against an integer reference computed here in numpy (int64 matmul)
and against the float Linear within the quantization error bound; quantize_dynamic on an MLP and a small
transformer (set and dict specs, inplace, modules that stay float); the state_dict (its size, save/load)."""
import copy

import numpy as np
import pytest
import rawdev
import rawdev.nn as nn
from rawdev.ao.quantization import default_dynamic_qconfig, per_channel_dynamic_qconfig, quantize_dynamic

from _refs import rng

nnqd = rawdev.ao.nn.quantized.dynamic
F32 = np.float32


def ref_input_qparams(mn, mx, qmax):
    """fbgemm's ChooseQuantizationParams for data spanning 0 with a normal-sized scale."""
    mn, mx = min(float(mn), 0.0), max(float(mx), 0.0)
    scale = (mx - mn) / qmax
    from_min, from_max = -mn / scale, qmax - mx / scale
    err_min, err_max = -abs(mn / scale), qmax - abs(mx / scale)
    zp = from_min if err_min < err_max else from_max
    return float(F32(scale)), int(np.clip(np.rint(zp), 0, qmax))


def ref_linear(x, w, b, qmax=127):
    """The int8 x quint8 pipeline: weight per-tensor symmetric, input quantized from its min/max."""
    sw = F32(F32(np.abs(w).max()) / F32(127.5))
    qw = np.clip(np.rint(w.astype(np.float64) / float(sw)), -128, 127).astype(np.int64)
    sx, zx = ref_input_qparams(x.min(), x.max(), qmax)
    qx = np.clip(np.rint(x / F32(sx)) + zx, 0, 255).astype(np.int64)
    acc = (qx - zx) @ qw.T                                   # integer matmul
    return acc * (float(sx) * float(sw)) + b.astype(np.float64), qw, float(sw), sx


def float_linear(g, n_in, n_out):
    fc = nn.Linear(n_in, n_out)
    with rawdev.no_grad():
        fc.weight.copy_(rawdev.tensor(g.standard_normal((n_out, n_in)).astype(F32) * 0.2))
        fc.bias.copy_(rawdev.tensor(g.standard_normal(n_out).astype(F32) * 0.1))
    return fc


def test_quantized_linear_matches_the_integer_reference():
    g = rng()
    fc = float_linear(g, 24, 10)
    fc.qconfig = default_dynamic_qconfig
    q = nnqd.Linear.from_float(fc)
    x = g.standard_normal((6, 24)).astype(F32)
    want, qw, sw, sx = ref_linear(x, fc.weight.detach().numpy(), fc.bias.detach().numpy())
    w = q.weight()
    assert w.is_quantized and w.dtype is rawdev.qint8 and w.qscheme() is rawdev.per_tensor_affine
    assert w.q_zero_point() == 0 and w.q_scale() == sw
    np.testing.assert_array_equal(w.int_repr().numpy(), qw)
    np.testing.assert_array_equal(q.bias().numpy(), fc.bias.detach().numpy())
    y = q(rawdev.tensor(x))
    assert y.dtype is rawdev.float32 and y.shape == (6, 10)
    np.testing.assert_allclose(y.numpy(), want, rtol=1e-6, atol=1e-6)
    # a 3-d input is the same rows
    y3 = q(rawdev.tensor(x.reshape(2, 3, 24)))
    np.testing.assert_allclose(y3.numpy().reshape(6, 10), want, rtol=1e-6, atol=1e-6)


def test_quantized_linear_is_within_the_quantization_error_of_float():
    g = rng()
    fc = float_linear(g, 64, 16)
    fc.qconfig = default_dynamic_qconfig
    q = nnqd.Linear.from_float(fc)
    x = g.standard_normal((8, 64)).astype(F32)
    _, _, sw, sx = ref_linear(x, fc.weight.detach().numpy(), fc.bias.detach().numpy())
    w = fc.weight.detach().numpy().astype(np.float64)
    exact = x.astype(np.float64) @ w.T + fc.bias.detach().numpy()
    # each product's error: |w| * sx/2 + |x| * sw/2 + sx * sw / 4, summed over the inputs
    bound = (np.abs(x) @ np.full(w.shape, sw / 2).T + np.full(x.shape, sx / 2) @ np.abs(w).T
             + x.shape[1] * sx * sw / 4)
    err = np.abs(q(rawdev.tensor(x)).numpy() - exact)
    assert np.all(err <= bound * (1 + 1e-5) + 1e-6)
    assert err.max() > 0   # it is quantized, not the float result


def test_qnnpack_quantizes_the_input_to_the_full_range():
    g = rng()
    fc = float_linear(g, 12, 5)
    fc.qconfig = default_dynamic_qconfig
    q = nnqd.Linear.from_float(fc)
    x = g.standard_normal((4, 12)).astype(F32)
    want, *_ = ref_linear(x, fc.weight.detach().numpy(), fc.bias.detach().numpy(), qmax=255)
    rawdev.backends.quantized.engine = "qnnpack"
    try:
        y = q(rawdev.tensor(x))
    finally:
        rawdev.backends.quantized.engine = "x86"
    np.testing.assert_allclose(y.numpy(), want, rtol=1e-6, atol=1e-6)


def test_per_channel_weights():
    g = rng()
    fc = float_linear(g, 16, 6)
    fc.qconfig = per_channel_dynamic_qconfig
    q = nnqd.Linear.from_float(fc)
    w = q.weight()
    assert w.qscheme() is rawdev.per_channel_affine and w.q_per_channel_axis() == 0
    wf = fc.weight.detach().numpy()
    scales = (np.abs(wf).max(axis=1) / F32(127.5)).astype(F32)
    np.testing.assert_array_equal(w.q_per_channel_scales().numpy(), scales.astype(np.float64))
    qw = np.clip(np.rint(wf.astype(np.float64) / scales.astype(np.float64)[:, None]), -128, 127).astype(np.int64)
    np.testing.assert_array_equal(w.int_repr().numpy(), qw)
    x = g.standard_normal((3, 16)).astype(F32)
    sx, zx = ref_input_qparams(x.min(), x.max(), 127)
    qx = np.clip(np.rint(x / F32(sx)) + zx, 0, 255).astype(np.int64)
    want = ((qx - zx) @ qw.T) * (sx * scales.astype(np.float64)) + fc.bias.detach().numpy()
    np.testing.assert_allclose(q(rawdev.tensor(x)).numpy(), want, rtol=1e-6, atol=1e-6)


class TinyTransformer(nn.Module):
    def __init__(self):
        super().__init__()
        self.embed = nn.Embedding(50, 16)
        self.layer = nn.TransformerEncoderLayer(16, 2, 32, dropout=0.0)
        self.rnn = nn.LSTM(16, 8)
        self.head = nn.Sequential(nn.Linear(8, 8), nn.ReLU(), nn.Linear(8, 3))

    def forward(self, tokens):
        h = self.layer(self.embed(tokens))
        return self.head(self.rnn(h)[0])


def test_quantize_dynamic_swaps_linears_and_leaves_the_rest():
    rawdev.manual_seed(int(rng().integers(1 << 30)))
    model = TinyTransformer().eval()
    tokens = rawdev.tensor(rng().integers(0, 50, (7, 2)))
    qmodel = quantize_dynamic(model, {nn.Linear, nn.LSTM}, dtype=rawdev.qint8)
    assert qmodel is not model and type(model.layer.linear1) is nn.Linear   # inplace=False: a copy
    for m in (qmodel.layer.linear1, qmodel.layer.linear2, qmodel.head[0], qmodel.head[2]):
        assert type(m) is nnqd.Linear
    assert type(qmodel.layer.self_attn.out_proj) is nn.modules.linear.NonDynamicallyQuantizableLinear
    assert type(qmodel.rnn) is nnqd.LSTM and type(qmodel.embed) is nn.Embedding   # no quantized Embedding here
    assert repr(qmodel.rnn) == "DynamicQuantizedLSTM(16, 8)"
    assert not any(hasattr(m, "qconfig") for m in qmodel.modules())
    assert repr(qmodel.head[0]) == ("DynamicQuantizedLinear(in_features=8, out_features=8, dtype=rawdev.qint8, "
                                    "qscheme=rawdev.per_tensor_affine)")
    with rawdev.no_grad():
        ref, got = model(tokens).numpy(), qmodel(tokens).numpy()
    assert got.shape == ref.shape == (7, 2, 3)
    assert np.abs(got - ref).max() <= 0.05 * np.abs(ref).max() + 1e-3


def test_dict_specs_by_name_and_inplace():
    g = rng()
    model = nn.Sequential(float_linear(g, 8, 8), nn.ReLU(), nn.Sequential(float_linear(g, 8, 8),
                                                                          float_linear(g, 8, 4)))
    q = quantize_dynamic(model, {"2.1": default_dynamic_qconfig})
    assert [type(m) for m in (q[0], q[2][0], q[2][1])] == [nn.Linear, nn.Linear, nnqd.Linear]
    q = quantize_dynamic(model, {"2": default_dynamic_qconfig})   # a container's qconfig reaches its children
    assert [type(m) for m in (q[0], q[2][0], q[2][1])] == [nn.Linear, nnqd.Linear, nnqd.Linear]
    q = quantize_dynamic(model, {nn.Linear: default_dynamic_qconfig, "2.0": None})
    assert [type(m) for m in (q[0], q[2][0], q[2][1])] == [nnqd.Linear, nn.Linear, nnqd.Linear]
    q = quantize_dynamic(model)   # None: every Linear
    assert [type(m) for m in (q[0], q[2][0], q[2][1])] == [nnqd.Linear] * 3
    same = quantize_dynamic(model, {nn.Linear}, inplace=True)
    assert same is model and type(model[0]) is nnqd.Linear
    with pytest.raises(ValueError, match="Don't know how to quantize"):
        quantize_dynamic(nn.Linear(2, 2), None, dtype=rawdev.int8)


def test_hooks_move_to_the_quantized_module_and_custom_mappings():
    seen = []
    model = nn.Sequential(nn.Linear(4, 3), nn.ReLU())
    model[0].register_forward_hook(lambda m, i, o: seen.append(type(m).__name__))
    q = quantize_dynamic(model, {nn.Linear})
    q(rawdev.randn(2, 4))
    assert seen == ["Linear"]   # the hook was carried to the quantized Linear (a Linear class of its own)
    q = quantize_dynamic(model, {nn.Linear, nn.ReLU}, mapping={nn.Linear: nnqd.Linear})
    assert type(q[0]) is nnqd.Linear and type(q[1]) is nn.ReLU   # in the spec, not in the mapping: float


def test_float16_dynamic_quantization():
    g = rng()
    fc = float_linear(g, 8, 4)
    q = quantize_dynamic(nn.Sequential(fc), {nn.Linear}, dtype=rawdev.float16)[0]
    assert repr(q) == "DynamicQuantizedLinear(in_features=8, out_features=4, dtype=rawdev.float16)"
    x = g.standard_normal((3, 8)).astype(F32)
    w16 = fc.weight.detach().numpy().astype(np.float16).astype(np.float64)
    want = x.astype(np.float64) @ w16.T + fc.bias.detach().numpy()
    np.testing.assert_allclose(q(rawdev.tensor(x)).numpy(), want, rtol=1e-5, atol=1e-6)


def test_state_dict_is_about_four_times_smaller_and_round_trips(tmp_path):
    g = rng()
    model = nn.Sequential(float_linear(g, 256, 256), nn.ReLU(), float_linear(g, 256, 64))
    q = quantize_dynamic(model, {nn.Linear})
    sd = q.state_dict()
    assert list(sd) == ["0.scale", "0.zero_point", "0._packed_params.dtype", "0._packed_params._packed_params",
                        "2.scale", "2.zero_point", "2._packed_params.dtype", "2._packed_params._packed_params"]
    assert sd["0._packed_params.dtype"] is rawdev.qint8
    w, b = sd["0._packed_params._packed_params"]
    assert w.is_quantized and not b.is_quantized
    rawdev.save(model.state_dict(), tmp_path / "float.pt")
    rawdev.save(sd, tmp_path / "quant.pt")
    ratio = (tmp_path / "float.pt").stat().st_size / (tmp_path / "quant.pt").stat().st_size
    assert 3.5 < ratio < 4.1
    fresh = quantize_dynamic(nn.Sequential(nn.Linear(256, 256), nn.ReLU(), nn.Linear(256, 64)), {nn.Linear})
    x = rawdev.tensor(g.standard_normal((5, 256)).astype(F32))
    assert not np.array_equal(fresh(x).numpy(), q(x).numpy())
    result = fresh.load_state_dict(rawdev.load(tmp_path / "quant.pt"))
    assert not result.missing_keys and not result.unexpected_keys
    np.testing.assert_array_equal(fresh(x).numpy(), q(x).numpy())
    np.testing.assert_array_equal(copy.deepcopy(q)(x).numpy(), q(x).numpy())
    bad = dict(sd)
    del bad["2._packed_params._packed_params"]
    with pytest.raises(RuntimeError, match="Missing key"):
        fresh.load_state_dict(bad)


def test_cuda_inputs_are_refused(device):
    q = quantize_dynamic(nn.Sequential(nn.Linear(4, 2)), {nn.Linear})
    x = rawdev.randn(3, 4).to(device)
    with pytest.raises(NotImplementedError, match="'CUDA' backend"):
        q(x)
    with pytest.raises(NotImplementedError, match="cpu"):
        rawdev.quantize_per_tensor(x, 0.1, 0, rawdev.qint8)


def ref_lstm_layer(x, w_ih, w_hh, b_ih, b_hh, h, c, reverse=False):
    """One quantized LSTM layer-direction in numpy: the weights quantized per tensor symmetric, the input-to-hidden
    product over the whole sequence at once, the hidden-to-hidden product per step (integer matmuls)."""
    def qlin(v, w, b):   # v (N, K)
        out, *_ = ref_linear(v, w, b)
        return out.astype(F32)
    T, B, _ = x.shape
    H = w_hh.shape[1]
    gx = qlin(x.reshape(T * B, -1), w_ih, b_ih).reshape(T, B, 4 * H)
    out = np.zeros((T, B, H), F32)

    def sig(v):
        return 1 / (1 + np.exp(-v))
    for t in (range(T - 1, -1, -1) if reverse else range(T)):
        g = gx[t] + qlin(h, w_hh, b_hh)
        i, f, gg, o = np.split(g, 4, axis=1)
        c = sig(f) * c + sig(i) * np.tanh(gg)
        h = (sig(o) * np.tanh(c)).astype(F32)
        out[t] = h
    return out, h, c


def test_quantized_lstm_matches_the_integer_reference():
    g = rng()
    rawdev.manual_seed(int(g.integers(1 << 30)))
    model = nn.Sequential(nn.LSTM(6, 5, bidirectional=True))
    q = quantize_dynamic(model, {nn.LSTM})[0]
    assert type(q) is nnqd.LSTM and repr(q) == "DynamicQuantizedLSTM(6, 5, bidirectional=True)"
    x = g.standard_normal((7, 3, 6)).astype(F32)
    h0 = (g.standard_normal((2, 3, 5)) * 0.5).astype(F32)
    c0 = (g.standard_normal((2, 3, 5)) * 0.5).astype(F32)
    out, (hn, cn) = q(rawdev.tensor(x), (rawdev.tensor(h0), rawdev.tensor(c0)))
    lstm = model[0]
    weights = q.get_weight()
    for d, sfx in enumerate(("l0", "l0_reverse")):
        p = {n: getattr(lstm, f"{n}_{sfx}").detach().numpy() for n in ("weight_ih", "weight_hh", "bias_ih",
                                                                         "bias_hh")}
        sw = F32(F32(np.abs(p["weight_ih"]).max()) / F32(127.5))
        assert weights[f"weight_ih_{sfx}"].q_scale() == float(sw)
        want, wh, wc = ref_lstm_layer(x, p["weight_ih"], p["weight_hh"], p["bias_ih"], p["bias_hh"], h0[d], c0[d],
                                      reverse=d == 1)
        np.testing.assert_allclose(out.numpy()[:, :, 5 * d:5 * (d + 1)], want, rtol=1e-4, atol=1e-5)
        np.testing.assert_allclose(hn.numpy()[d], wh, rtol=1e-4, atol=1e-5)
        np.testing.assert_allclose(cn.numpy()[d], wc, rtol=1e-4, atol=1e-5)
    assert set(q.get_bias()) == {"bias_ih_l0", "bias_hh_l0", "bias_ih_l0_reverse", "bias_hh_l0_reverse"}


def test_quantized_lstm_stays_close_to_float_and_round_trips(tmp_path):
    g = rng()
    rawdev.manual_seed(int(g.integers(1 << 30)))
    model = nn.Sequential(nn.LSTM(8, 12, num_layers=2, batch_first=True, dropout=0.2)).eval()
    q = quantize_dynamic(model, {nn.LSTM, nn.Linear})
    assert repr(q[0]) == "DynamicQuantizedLSTM(8, 12, num_layers=2, batch_first=True, dropout=0.2)"
    assert q[0].training   # as PyTorch's: the swapped-in module is new (in training mode: dropout applies)
    q.eval()
    x = rawdev.tensor(g.standard_normal((4, 9, 8)).astype(F32))
    with rawdev.no_grad():
        ref, (rh, rc) = model(x)
    out, (h, c) = q(x)
    assert out.shape == ref.shape == (4, 9, 12) and h.shape == rh.shape == (2, 4, 12)
    err = np.abs(out.numpy() - ref.numpy())   # 7-bit inputs of scale ~6/127 through two layers
    assert err.mean() < 0.02 and err.max() < 0.15
    unbatched, (uh, _) = q(x[0])
    np.testing.assert_allclose(unbatched.numpy(), q(x[:1])[0].numpy()[0], rtol=1e-5, atol=1e-6)
    assert uh.shape == (2, 12)
    rawdev.save(q.state_dict(), tmp_path / "lstm.pt")
    fresh = quantize_dynamic(nn.Sequential(nn.LSTM(8, 12, num_layers=2, batch_first=True, dropout=0.2)), {nn.LSTM})
    fresh.load_state_dict(rawdev.load(tmp_path / "lstm.pt"))
    fresh.eval()
    np.testing.assert_array_equal(fresh(x)[0].numpy(), out.numpy())
    q.train()   # dropout between the layers
    assert not np.array_equal(q(x)[0].numpy(), out.numpy())
    q16 = quantize_dynamic(model, {nn.LSTM}, dtype=rawdev.float16).eval()
    assert np.abs(q16(x)[0].numpy() - ref.numpy()).max() < 1e-3
