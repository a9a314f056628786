"""nn.RNN / LSTM / GRU and the cells: values against float64 numpy loops (PyTorch's gate order and formulas),
gradients by finite differences (cpu float64), the fused cuda cells (simulator, poisoned outputs, a batch_first
transposed input) against the cpu within 1e-4, parameter names / shapes / init range, h0 handling, errors."""
import math

import numpy as np
import pytest
import rawdev
import rawdev.nn as nn
from rawdev.ops import cuda as cuda_ops

RNG = np.random.default_rng(23)


def _sig(x):
    return 1.0 / (1.0 + np.exp(-x))


# ------------------------------------------------------------------ float64 references
def ref_cell(mode, x, h, c, w_ih, w_hh, b_ih, b_hh):
    H = h.shape[-1]
    gi = x @ w_ih.T + (b_ih if b_ih is not None else 0)
    gh = h @ w_hh.T + (b_hh if b_hh is not None else 0)
    if mode == "LSTM":
        i = _sig(gi[:, :H] + gh[:, :H])
        f = _sig(gi[:, H:2 * H] + gh[:, H:2 * H])
        g = np.tanh(gi[:, 2 * H:3 * H] + gh[:, 2 * H:3 * H])
        o = _sig(gi[:, 3 * H:] + gh[:, 3 * H:])
        c1 = f * c + i * g
        return o * np.tanh(c1), c1
    if mode == "GRU":
        r = _sig(gi[:, :H] + gh[:, :H])
        z = _sig(gi[:, H:2 * H] + gh[:, H:2 * H])
        n = np.tanh(gi[:, 2 * H:] + r * gh[:, 2 * H:])
        return (1 - z) * n + z * h, None
    pre = gi + gh
    return (np.tanh(pre) if mode == "RNN_TANH" else np.maximum(pre, 0)), None


def ref_rnn(mode, params, x, h0, c0, num_layers, bidirectional):
    """x [L, B, in]; params: name -> float64 array (PyTorch's names)."""
    dirs = 2 if bidirectional else 1
    L = x.shape[0]
    hn, cn = [], []
    inp = x
    for layer in range(num_layers):
        outs = []
        for d in range(dirs):
            sfx = "_reverse" if d else ""
            p = [params.get(f"{n}_l{layer}{sfx}") for n in ("weight_ih", "weight_hh", "bias_ih", "bias_hh")]
            k = layer * dirs + d
            h, c = h0[k], (c0[k] if c0 is not None else None)
            out = np.zeros((L,) + h.shape)
            for t in (range(L - 1, -1, -1) if d else range(L)):
                h, c = ref_cell(mode, inp[t], h, c, *p)
                out[t] = h
            outs.append(out)
            hn.append(h)
            cn.append(c)
        inp = np.concatenate(outs, -1)
    return inp, np.stack(hn), (np.stack(cn) if mode == "LSTM" else None)


def _params(m):
    return {k: np.asarray(v, np.float64) for k, v in m.state_dict().items()}


CLASSES = {"LSTM": nn.LSTM, "GRU": nn.GRU, "RNN_TANH": nn.RNN, "RNN_RELU": nn.RNN}


def _make(mode, *args, **kw):
    if mode == "RNN_RELU":
        kw["nonlinearity"] = "relu"
    return CLASSES[mode](*args, **kw)


# ------------------------------------------------------------------ names, shapes, init
def test_parameter_names_shapes_init():
    m = nn.LSTM(3, 5, num_layers=2, bidirectional=True)
    sd = m.state_dict()
    names = [f"{n}_l{layer}{s}" for layer in range(2) for s in ("", "_reverse")
             for n in ("weight_ih", "weight_hh", "bias_ih", "bias_hh")]
    assert list(sd) == names
    assert tuple(sd["weight_ih_l0"].shape) == (20, 3) and tuple(sd["weight_ih_l1"].shape) == (20, 10)
    assert tuple(sd["weight_hh_l1_reverse"].shape) == (20, 5) and tuple(sd["bias_hh_l0"].shape) == (20,)
    bound = 1 / math.sqrt(5)
    for v in sd.values():
        a = np.asarray(v)
        assert np.all(np.abs(a) <= bound) and a.std() > bound / 4
    g = nn.GRU(4, 6, bias=False)
    assert list(g.state_dict()) == ["weight_ih_l0", "weight_hh_l0"]
    assert tuple(g.weight_ih_l0.shape) == (18, 4)
    cell = nn.LSTMCell(3, 4)
    assert list(cell.state_dict()) == ["weight_ih", "weight_hh", "bias_ih", "bias_hh"]
    assert tuple(cell.weight_hh.shape) == (16, 4)
    assert tuple(nn.GRUCell(3, 4).weight_ih.shape) == (12, 3) and tuple(nn.RNNCell(3, 4).bias_hh.shape) == (4,)


def test_errors():
    with pytest.raises(NotImplementedError, match="proj_size"):
        nn.LSTM(3, 5, proj_size=2)
    with pytest.raises(ValueError, match="Unknown nonlinearity 'gelu'"):
        nn.RNN(3, 4, nonlinearity="gelu")
    with pytest.warns(UserWarning, match="non-zero dropout expects num_layers greater than 1"):
        nn.GRU(3, 4, dropout=0.5)
    m = nn.GRU(3, 4)
    with pytest.raises(RuntimeError, match="input.size\\(-1\\) must be equal to input_size. Expected 3, got 2"):
        m(rawdev.randn(5, 2, 2))
    with pytest.raises(RuntimeError, match="Expected hidden size \\(1, 2, 4\\), got \\[1, 2, 3\\]"):
        m(rawdev.randn(5, 2, 3), rawdev.randn(1, 2, 3))
    with pytest.raises(ValueError, match="Expected input to be 2D or 3D"):
        m(rawdev.randn(5))


# ------------------------------------------------------------------ values (cpu float64)
@pytest.mark.parametrize("mode", sorted(CLASSES))
@pytest.mark.parametrize("layers,bidir", [(1, False), (2, True)])
def test_values_cpu_float64(mode, layers, bidir):
    L, B, In, H = 4, 3, 5, 6
    m = _make(mode, In, H, num_layers=layers, bidirectional=bidir, dtype=rawdev.float64)
    dirs = 2 if bidir else 1
    x = RNG.standard_normal((L, B, In))
    h0 = RNG.standard_normal((layers * dirs, B, H))
    c0 = RNG.standard_normal((layers * dirs, B, H)) if mode == "LSTM" else None
    hx = (rawdev.tensor(h0), rawdev.tensor(c0)) if mode == "LSTM" else rawdev.tensor(h0)
    out, st = m(rawdev.tensor(x), hx)
    ro, rh, rc = ref_rnn(mode, _params(m), x, h0, c0, layers, bidir)
    np.testing.assert_allclose(np.asarray(out), ro, rtol=1e-12, atol=1e-13)
    hn = st[0] if mode == "LSTM" else st
    np.testing.assert_allclose(np.asarray(hn), rh, rtol=1e-12, atol=1e-13)
    if mode == "LSTM":
        np.testing.assert_allclose(np.asarray(st[1]), rc, rtol=1e-12, atol=1e-13)
    # no h0: zeros; batch_first; unbatched
    out0, _ = m(rawdev.tensor(x))
    z = np.zeros((layers * dirs, B, H))
    np.testing.assert_allclose(np.asarray(out0), ref_rnn(mode, _params(m), x, z, z, layers, bidir)[0], rtol=1e-12,
                               atol=1e-13)
    mb = _make(mode, In, H, num_layers=layers, bidirectional=bidir, batch_first=True, dtype=rawdev.float64)
    mb.load_state_dict(m.state_dict())
    outb, _ = mb(rawdev.tensor(np.swapaxes(x, 0, 1).copy()), hx)
    np.testing.assert_allclose(np.asarray(outb), np.swapaxes(ro, 0, 1), rtol=1e-12, atol=1e-13)
    hx1 = (rawdev.tensor(h0[:, 0]), rawdev.tensor(c0[:, 0])) if mode == "LSTM" else rawdev.tensor(h0[:, 0])
    out1, st1 = m(rawdev.tensor(x[:, 0]), hx1)
    ro1, rh1, _ = ref_rnn(mode, _params(m), x[:, :1], h0[:, :1], None if c0 is None else c0[:, :1], layers, bidir)
    np.testing.assert_allclose(np.asarray(out1), ro1[:, 0], rtol=1e-12, atol=1e-13)
    assert tuple((st1[0] if mode == "LSTM" else st1).shape) == (layers * dirs, H)


@pytest.mark.parametrize("mode", sorted(CLASSES))
def test_gradient_cpu_float64(mode):
    from test_autograd import gradcheck
    L, B, In, H = 3, 2, 3, 4
    m = _make(mode, In, H, num_layers=2, bidirectional=True, dtype=rawdev.float64)
    x = rawdev.tensor(RNG.standard_normal((L, B, In)), requires_grad=True)
    h0 = rawdev.tensor(RNG.standard_normal((4, B, H)), requires_grad=True)
    if mode == "LSTM":
        c0 = rawdev.tensor(RNG.standard_normal((4, B, H)), requires_grad=True)
        gradcheck(lambda a, b, c: rawdev.cat([m(a, (b, c))[0].reshape(-1), m(a, (b, c))[1][1].reshape(-1)]), x, h0, c0)
    else:
        gradcheck(lambda a, b: rawdev.cat([m(a, b)[0].reshape(-1), m(a, b)[1].reshape(-1)]), x, h0)
    w = m.weight_hh_l0_reverse
    gradcheck(lambda w_: _with_param(m, "weight_hh_l0_reverse", w_, x), w.detach().clone().requires_grad_())
    gradcheck(lambda b_: _with_param(m, "bias_ih_l1", b_, x), m.bias_ih_l1.detach().clone().requires_grad_())


def _with_param(m, name, value, x):
    old = m._parameters[name]
    m._parameters[name] = value
    try:
        return m(x)[0]
    finally:
        m._parameters[name] = old


@pytest.mark.parametrize("cls,mode", [(nn.LSTMCell, "LSTM"), (nn.GRUCell, "GRU"), (nn.RNNCell, "RNN_TANH")])
def test_cells_cpu_float64(cls, mode):
    from test_autograd import gradcheck
    B, In, H = 3, 4, 5
    cell = cls(In, H, dtype=rawdev.float64)
    p = _params(cell)
    x, h, c = RNG.standard_normal((B, In)), RNG.standard_normal((B, H)), RNG.standard_normal((B, H))
    args = (p["weight_ih"], p["weight_hh"], p["bias_ih"], p["bias_hh"])
    rh, rc = ref_cell(mode, x, h, c, *args)
    if mode == "LSTM":
        h1, c1 = cell(rawdev.tensor(x), (rawdev.tensor(h), rawdev.tensor(c)))
        np.testing.assert_allclose(np.asarray(c1), rc, rtol=1e-12, atol=1e-13)
        h0, _ = cell(rawdev.tensor(x))
        zh = ref_cell(mode, x, 0 * h, 0 * c, *args)[0]
        hu, cu = cell(rawdev.tensor(x[0]), (rawdev.tensor(h[0]), rawdev.tensor(c[0])))
        np.testing.assert_allclose(np.asarray(cu), rc[0], rtol=1e-12, atol=1e-13)
    else:
        h1 = cell(rawdev.tensor(x), rawdev.tensor(h))
        h0 = cell(rawdev.tensor(x))
        zh = ref_cell(mode, x, 0 * h, None, *args)[0]
        hu = cell(rawdev.tensor(x[0]), rawdev.tensor(h[0]))
    np.testing.assert_allclose(np.asarray(h1), rh, rtol=1e-12, atol=1e-13)
    np.testing.assert_allclose(np.asarray(h0), zh, rtol=1e-12, atol=1e-13)
    np.testing.assert_allclose(np.asarray(hu), rh[0], rtol=1e-12, atol=1e-13)
    xt, ht, ct = (rawdev.tensor(a, requires_grad=True) for a in (x, h, c))
    if mode == "LSTM":
        gradcheck(lambda a, b, d: rawdev.cat([t.reshape(-1) for t in cell(a, (b, d))]), xt, ht, ct)
    else:
        gradcheck(lambda a, b: cell(a, b), xt, ht)


# ------------------------------------------------------------------ cuda (simulator) against cpu
@pytest.mark.parametrize("mode", ["LSTM", "GRU", "RNN_TANH", "RNN_RELU"])
def test_cuda_matches_cpu(driver, mode):
    L, B, In, H = 3, 2, 5, 7
    m = _make(mode, In, H, num_layers=2, bidirectional=True, batch_first=True)
    x = RNG.standard_normal((L, B, In)).astype(np.float32)
    h0 = RNG.standard_normal((4, B, H)).astype(np.float32)
    c0 = RNG.standard_normal((4, B, H)).astype(np.float32)
    g = RNG.standard_normal((B, L, 2 * H)).astype(np.float32)
    gh = RNG.standard_normal((4, B, H)).astype(np.float32)
    res = {}
    cuda_ops.set_poison(True)
    try:
        for dev in ("cpu", "cuda"):
            m.to(dev)
            m.zero_grad()
            xb = rawdev.tensor(x, device=dev, requires_grad=True)
            xt = xb.transpose(0, 1)          # batch_first input as a non-contiguous view
            hh = rawdev.tensor(h0, device=dev, requires_grad=True)
            cc = rawdev.tensor(c0, device=dev, requires_grad=True)
            out, st = m(xt, (hh, cc) if mode == "LSTM" else hh)
            hn = st[0] if mode == "LSTM" else st
            loss = (out * rawdev.tensor(g, device=dev)).sum() + (hn * rawdev.tensor(gh, device=dev)).sum()
            if mode == "LSTM":
                loss = loss + st[1].sum()
            loss.backward()
            res[dev] = [np.asarray(out.detach().cpu()), np.asarray(hn.detach().cpu()), np.asarray(xb.grad.cpu()),
                        np.asarray(hh.grad.cpu())] + [np.asarray(p.grad.cpu()) for p in m.parameters()]
            if mode == "LSTM":
                res[dev].append(np.asarray(cc.grad.cpu()))
    finally:
        cuda_ops.set_poison(False)
    for a, b in zip(res["cuda"], res["cpu"]):
        assert np.isfinite(a).all()
        assert np.linalg.norm(a - b) / max(np.linalg.norm(b), 1e-30) < 1e-4


@pytest.mark.parametrize("cls", [nn.LSTMCell, nn.GRUCell, nn.RNNCell])
def test_cuda_cells_match_cpu(driver, cls):
    B, In, H = 3, 4, 33
    cell = cls(In, H)
    x = RNG.standard_normal((B, In)).astype(np.float32)
    h = RNG.standard_normal((B, H)).astype(np.float32)
    res = {}
    cuda_ops.set_poison(True)
    try:
        for dev in ("cpu", "cuda"):
            cell.to(dev)
            cell.zero_grad()
            xt, ht = rawdev.tensor(x, device=dev, requires_grad=True), rawdev.tensor(h, device=dev, requires_grad=True)
            out = cell(xt, (ht, ht * 0.5)) if cls is nn.LSTMCell else cell(xt, ht)
            h1 = out[0] if cls is nn.LSTMCell else out
            h1.sum().backward()
            res[dev] = [np.asarray(h1.detach().cpu()), np.asarray(xt.grad.cpu()), np.asarray(ht.grad.cpu())] + \
                [np.asarray(p.grad.cpu()) for p in cell.parameters()]
    finally:
        cuda_ops.set_poison(False)
    for a, b in zip(res["cuda"], res["cpu"]):
        assert np.isfinite(a).all()
        assert np.linalg.norm(a - b) / max(np.linalg.norm(b), 1e-30) < 1e-4


def test_dropout_between_layers_only_in_training():
    m = nn.LSTM(3, 4, num_layers=2, dropout=0.5, dtype=rawdev.float64)
    x = RNG.standard_normal((5, 2, 3))
    z = np.zeros((2, 2, 4))
    ref = ref_rnn("LSTM", _params(m), x, z, z, 2, False)[0]
    m.eval()
    np.testing.assert_allclose(np.asarray(m(rawdev.tensor(x))[0]), ref, rtol=1e-12, atol=1e-13)
    m.train()
    out = np.asarray(m(rawdev.tensor(x))[0].detach())
    assert out.shape == ref.shape and np.abs(out - ref).max() > 1e-3
    single = nn.GRU(3, 4, dtype=rawdev.float64)   # one layer: nothing to drop between layers
    single.train()
    np.testing.assert_allclose(np.asarray(single(rawdev.tensor(x))[0].detach()),
                               ref_rnn("GRU", _params(single), x, z[:1], None, 1, False)[0], rtol=1e-12, atol=1e-13)
