"""GroupNorm / InstanceNorm, EmbeddingBag, interpolate / pad / PixelShuffle and the Transformer layers:
float64 numpy references written here, finite-difference gradients on the cpu, the cuda path (simulator)
against the cpu at odd sizes with non-contiguous inputs and poisoned outputs, PyTorch's names, repr and errors."""
import numpy as np
import pytest
import rawdev
import rawdev.nn.functional as F
from rawdev import nn
from rawdev.ops import cuda as cuda_ops

RNG = np.random.default_rng(2026)


@pytest.fixture
def poison(driver):
    cuda_ops.set_poison(True)
    yield
    cuda_ops.set_poison(False)


def _fd(f, x, gout, eps=1e-6):
    """d sum(f(x) * gout) / dx by central differences (float64)."""
    g = np.zeros_like(x)
    for i in np.ndindex(x.shape):
        xp, xm = x.copy(), x.copy()
        xp[i] += eps
        xm[i] -= eps
        g[i] = ((f(xp) * gout).sum() - (f(xm) * gout).sum()) / (2 * eps)
    return g


def _t(a, dev="cpu", grad=False):
    t = rawdev.tensor(a).to(dev)
    return t.requires_grad_() if grad else t


# ---------------------------------------------------------------------------------------------- group norm
def ref_group_norm(x, G, w=None, b=None, eps=1e-5):
    N, C = x.shape[:2]
    xr = x.reshape(N, G, (x.size // max(N * G, 1)))
    if x.size == 0:
        return x.copy()
    mean = xr.mean(axis=2, keepdims=True)
    var = ((xr - mean) ** 2).mean(axis=2, keepdims=True)
    y = ((xr - mean) / np.sqrt(var + eps)).reshape(x.shape)
    bshape = (1, C) + (1,) * (x.ndim - 2)
    if w is not None:
        y = y * w.reshape(bshape)
    if b is not None:
        y = y + b.reshape(bshape)
    return y


@pytest.mark.parametrize("shape,G", [((2, 6, 5), 3), ((3, 4, 7, 9), 2), ((1, 3), 1), ((2, 8, 300), 4),
                                     ((5, 6, 1, 1), 6), ((0, 4, 3), 2)])
def test_group_norm_values_cuda_matches_cpu(shape, G, driver, poison):
    x = (RNG.standard_normal(shape) * 2 + 50).astype(np.float32)     # a large mean: Welford's case
    C = shape[1]
    w, b = RNG.standard_normal(C).astype(np.float32), RNG.standard_normal(C).astype(np.float32)
    ref = ref_group_norm(x.astype(np.float64), G, w, b)
    for dev in ("cpu", "cuda"):
        y = F.group_norm(_t(x, dev), G, _t(w, dev), _t(b, dev))
        assert y.shape == shape and y.device.type == dev
        np.testing.assert_allclose(y.cpu().numpy(), ref, rtol=1e-4, atol=2e-4)
        y0 = F.group_norm(_t(x, dev), G)
        np.testing.assert_allclose(y0.cpu().numpy(), ref_group_norm(x.astype(np.float64), G), rtol=1e-4, atol=2e-4)


def test_group_norm_gradients_finite_differences():
    x = RNG.standard_normal((2, 6, 3))
    w, b = RNG.standard_normal(6), RNG.standard_normal(6)
    gout = RNG.standard_normal(x.shape)
    tx, tw, tb = _t(x, grad=True), _t(w, grad=True), _t(b, grad=True)
    y = F.group_norm(tx, 3, tw, tb)
    assert y.grad_fn.name() == "NativeGroupNormBackward0"
    (y * _t(gout)).sum().backward()
    np.testing.assert_allclose(tx.grad.numpy(), _fd(lambda z: ref_group_norm(z, 3, w, b), x, gout),
                               rtol=1e-6, atol=1e-7)
    np.testing.assert_allclose(tw.grad.numpy(), _fd(lambda z: ref_group_norm(x, 3, z, b), w, gout),
                               rtol=1e-6, atol=1e-7)
    np.testing.assert_allclose(tb.grad.numpy(), gout.sum(axis=(0, 2)), rtol=1e-12)


@pytest.mark.parametrize("shape,G,affine", [((3, 6, 5, 7), 3, True), ((2, 4, 301), 4, False), ((4, 6), 2, True)])
def test_group_norm_cuda_gradients_match_cpu_on_a_permuted_input(shape, G, affine, driver, poison):
    # the input is a permuted (non-contiguous) view of a [.., C, N] array
    base = RNG.standard_normal(shape[1:] + shape[:1]).astype(np.float32)
    perm = (base.ndim - 1,) + tuple(range(base.ndim - 1))
    gout = RNG.standard_normal(shape).astype(np.float32)
    grads = {}
    for dev in ("cpu", "cuda"):
        gn = nn.GroupNorm(G, shape[1], affine=affine).to(dev)
        if affine:
            with rawdev.no_grad():
                gn.weight.copy_(_t(np.linspace(0.5, 1.5, shape[1], dtype=np.float32), dev))
                gn.bias.copy_(_t(np.linspace(-1, 1, shape[1], dtype=np.float32), dev))
        t = _t(base, dev, grad=True)
        xin = t.permute(*perm)
        assert not xin.is_contiguous()
        y = gn(xin)
        (y * _t(gout, dev)).sum().backward()
        grads[dev] = [y.detach().cpu().numpy(), t.grad.cpu().numpy()]
        if affine:
            grads[dev] += [gn.weight.grad.cpu().numpy(), gn.bias.grad.cpu().numpy()]
    np.testing.assert_allclose(grads["cpu"][0], ref_group_norm(base.transpose(perm).astype(np.float64), G,
                                                               *( [np.linspace(0.5, 1.5, shape[1]),
                                                                   np.linspace(-1, 1, shape[1])] if affine else [])),
                               rtol=1e-4, atol=1e-4)
    for a, b in zip(grads["cpu"], grads["cuda"]):
        np.testing.assert_allclose(b, a, rtol=1e-4, atol=1e-4)


def test_group_norm_module_api_and_errors():
    gn = nn.GroupNorm(2, 6, eps=1e-6)
    assert repr(gn) == "GroupNorm(2, 6, eps=1e-06, affine=True, bias=True)"
    assert list(gn.state_dict()) == ["weight", "bias"]
    assert (gn.weight.detach().numpy() == 1).all() and (gn.bias.detach().numpy() == 0).all()
    assert list(nn.GroupNorm(2, 6, affine=False).state_dict()) == []
    assert nn.GroupNorm(2, 6, bias=False).bias is None
    with pytest.raises(ValueError, match=r"num_channels \(6\) must be divisible by num_groups \(4\)"):
        nn.GroupNorm(4, 6)
    with pytest.raises(RuntimeError, match=r"Expected number of channels in input to be divisible by num_groups, "
                                           r"but got input of shape \[2, 6, 3\] and num_groups=4"):
        F.group_norm(rawdev.ones(2, 6, 3), 4)
    with pytest.raises(RuntimeError, match=r"Expected weight to be a vector of size equal to the number of channels"):
        F.group_norm(rawdev.ones(2, 6, 3), 3, rawdev.ones(5))
    with pytest.raises(RuntimeError, match="Expected at least 2 dimensions for input tensor but received 1"):
        F.group_norm(rawdev.ones(6), 2)


def test_group_norm_params_move_with_the_module(driver):
    gn = nn.GroupNorm(2, 4).cuda()
    assert gn.weight.device.type == "cuda" and gn.bias.device.type == "cuda"
    x = rawdev.randn(3, 4, 5)
    np.testing.assert_allclose(gn(x.cuda()).detach().cpu().numpy(), gn.cpu()(x).detach().numpy(), rtol=1e-4, atol=1e-5)
    assert gn.weight.device.type == "cpu"


# ---------------------------------------------------------------------------------------------- instance norm
def ref_instance_norm(x, w=None, b=None, eps=1e-5):
    return ref_group_norm(x, x.shape[1], w, b, eps)


@pytest.mark.parametrize("cls,shape", [(nn.InstanceNorm1d, (3, 5, 17)), (nn.InstanceNorm2d, (2, 3, 6, 5)),
                                       (nn.InstanceNorm1d, (4, 9)), (nn.InstanceNorm2d, (3, 4, 7))])
def test_instance_norm_modules(cls, shape, driver, poison):
    x = RNG.standard_normal(shape).astype(np.float32) * 3 + 1
    batched = x if x.ndim == cls._no_batch + 1 else x[None]
    ref = ref_instance_norm(batched.astype(np.float64)).reshape(shape)
    C = batched.shape[1]
    for dev in ("cpu", "cuda"):
        m = cls(C).to(dev)
        assert list(m.state_dict()) == []
        np.testing.assert_allclose(m(_t(x, dev)).cpu().numpy(), ref, rtol=1e-4, atol=2e-4)


def test_instance_norm_running_stats_and_eval(driver):
    x = RNG.standard_normal((4, 3, 10)).astype(np.float32) * 2 + 3
    x64 = x.astype(np.float64)
    want_mean = 0.9 * 0 + 0.1 * x64.mean(axis=2).mean(axis=0)
    want_var = 0.9 * 1 + 0.1 * x64.var(axis=2, ddof=1).mean(axis=0)
    for dev in ("cpu", "cuda"):
        m = nn.InstanceNorm1d(3, affine=True, track_running_stats=True).to(dev)
        assert list(m.state_dict()) == ["weight", "bias", "running_mean", "running_var", "num_batches_tracked"]
        assert repr(m) == ("InstanceNorm1d(3, eps=1e-05, momentum=0.1, affine=True, bias=True, "
                           "track_running_stats=True)")
        y = m(_t(x, dev))
        np.testing.assert_allclose(y.detach().cpu().numpy(), ref_instance_norm(x64), rtol=1e-4, atol=2e-4)
        np.testing.assert_allclose(m.running_mean.cpu().numpy(), want_mean, rtol=1e-4, atol=1e-5)
        np.testing.assert_allclose(m.running_var.cpu().numpy(), want_var, rtol=1e-4, atol=1e-5)
        m.eval()
        ye = m(_t(x, dev)).detach().cpu().numpy()
        np.testing.assert_allclose(ye, (x64 - want_mean[:, None]) / np.sqrt(want_var[:, None] + 1e-5),
                                   rtol=1e-4, atol=2e-4)


def test_instance_norm_errors_and_gradient():
    with pytest.raises(ValueError, match="Expected more than 1 spatial element when training"):
        F.instance_norm(rawdev.ones(2, 3, 1))
    with pytest.raises(ValueError, match=r"expected 3D or 4D input \(got 2D input\)"):
        nn.InstanceNorm2d(3)(rawdev.ones(2, 3))
    with pytest.raises(ValueError, match=r"expected input's size at dim=1 to match num_features \(4\), but got: 3"):
        nn.InstanceNorm1d(4, affine=True)(rawdev.ones(2, 3, 5))
    with pytest.warns(UserWarning, match="does not match num_features"):
        nn.InstanceNorm1d(4)(rawdev.randn(2, 3, 5))
    x, gout = RNG.standard_normal((2, 3, 4)), RNG.standard_normal((2, 3, 4))
    tx = _t(x, grad=True)
    (F.instance_norm(tx) * _t(gout)).sum().backward()
    np.testing.assert_allclose(tx.grad.numpy(), _fd(ref_instance_norm, x, gout), rtol=1e-6, atol=1e-7)


# ---------------------------------------------------------------------------------------------- PyTorch fixtures
FIXTURES = __import__("pathlib").Path(__file__).parent / "data" / "layers"


def _call(m, how, ins):
    """The calls of tools/make_layer_fixtures.py's `call`, by the same names."""
    return {
        "x": lambda: m(ins[0]),
        "bag": lambda: m(ins[0], ins[1]),
        "bag_psw": lambda: m(ins[0], ins[1], per_sample_weights=ins[2]),
        "mha": lambda: m(ins[0], ins[0], ins[0], need_weights=False)[0],
        "rnn": lambda: m(ins[0])[0],
        "enc_mask": lambda: m(ins[0], src_mask=ins[1]),
        "enc_kpm": lambda: m(ins[0], src_key_padding_mask=ins[1]),
        "dec_mask": lambda: m(ins[0], ins[1], tgt_mask=ins[2]),
        "seq2seq": lambda: m(ins[0], ins[1], tgt_mask=ins[2]),
        "dec_all": lambda: m(ins[0], ins[1], tgt_mask=ins[2], memory_mask=ins[3], tgt_key_padding_mask=ins[4],
                             memory_key_padding_mask=ins[5]),
    }[how]()


def _load_fixture(path):
    import json

    from safetensors import safe_open
    with safe_open(str(path), "np") as f:
        case = json.loads(f.metadata()["case"])
        arrays = {k: f.get_tensor(k) for k in f.keys()}
    return case, arrays


@pytest.mark.parametrize("name", sorted(p.stem for p in FIXTURES.glob("*.safetensors")))
def test_pytorch_fixture_loads_strict_and_matches(name, driver):
    case, arrays = _load_fixture(FIXTURES / f"{name}.safetensors")
    if not hasattr(nn, case["class"]):
        pytest.skip(f"nn.{case['class']} is not built yet")
    state = {k[len("state."):]: rawdev.tensor(v) for k, v in arrays.items() if k.startswith("state.")}
    n_in = len([k for k in arrays if k.startswith("input.")])
    for dev, tol in (("cpu", 1e-5), ("cuda", 1e-4)):
        m = getattr(nn, case["class"])(*case["args"], **case["kwargs"])
        res = m.load_state_dict(state, strict=True)
        assert not res.missing_keys and not res.unexpected_keys
        m.to(dev).eval()
        ins = []
        for j in range(n_in):
            a = arrays[f"input.{j}"]
            t = rawdev.tensor(a).to(dev)
            if f"grad.{j}" in arrays:
                t.requires_grad_()
            ins.append(t)
        out = _call(m, case["call"], ins)
        np.testing.assert_allclose(out.detach().cpu().numpy(), arrays["output"], rtol=tol, atol=tol)
        (out * rawdev.tensor(arrays["gout"]).to(dev)).sum().backward()
        for j, t in enumerate(ins):
            if f"grad.{j}" in arrays:
                np.testing.assert_allclose(t.grad.cpu().numpy(), arrays[f"grad.{j}"], rtol=tol, atol=tol,
                                           err_msg=f"{name}: gradient of input {j} on {dev}")
        sd = m.state_dict()
        assert list(sd) == case["state_keys"]


# ---------------------------------------------------------------------------------------------- transformer
def test_transformer_names_masks_and_errors():
    enc = nn.TransformerEncoderLayer(8, 2, dim_feedforward=12)
    assert list(enc.state_dict()) == [
        "self_attn.in_proj_weight", "self_attn.in_proj_bias", "self_attn.out_proj.weight", "self_attn.out_proj.bias",
        "linear1.weight", "linear1.bias", "linear2.weight", "linear2.bias", "norm1.weight", "norm1.bias",
        "norm2.weight", "norm2.bias"]
    assert [n for n, _ in enc.named_children()] == ["self_attn", "linear1", "dropout", "linear2", "norm1", "norm2",
                                                    "dropout1", "dropout2"]
    dec = nn.TransformerDecoderLayer(8, 2, dim_feedforward=12, bias=False)
    assert [n for n, _ in dec.named_children()] == ["self_attn", "multihead_attn", "linear1", "dropout", "linear2",
                                                    "norm1", "norm2", "norm3", "dropout1", "dropout2", "dropout3"]
    assert all("bias" not in k for k in dec.state_dict())
    stack = nn.TransformerEncoder(enc, 3, norm=nn.LayerNorm(8))
    assert [k for k in stack.state_dict() if k.endswith("linear1.weight")] == [
        f"layers.{i}.linear1.weight" for i in range(3)]
    assert "norm.weight" in stack.state_dict()
    assert stack.layers[0].linear1.weight is not stack.layers[1].linear1.weight          # deep copies
    m = nn.Transformer.generate_square_subsequent_mask(4).numpy()
    np.testing.assert_array_equal(m, np.triu(np.full((4, 4), -np.inf), 1))
    with pytest.raises(RuntimeError, match="activation should be relu/gelu, not tanh"):
        nn.TransformerEncoderLayer(8, 2, activation="tanh")
    t = nn.Transformer(d_model=8, nhead=2, num_encoder_layers=1, num_decoder_layers=1, dim_feedforward=8)
    with pytest.raises(RuntimeError, match="the batch number of src and tgt must be equal"):
        t(rawdev.randn(3, 2, 8), rawdev.randn(3, 4, 8))
    with pytest.raises(RuntimeError, match="the feature number of src and tgt must be equal to d_model"):
        t(rawdev.randn(3, 2, 8), rawdev.randn(3, 2, 6))


def _ref_encoder_layer(x, p, mask, norm_first, act):
    """Float64 numpy TransformerEncoderLayer (seq-first x [L, B, E]), dropout 0, from the state_dict p."""
    L, B, E = x.shape
    H = 2
    Dh = E // H

    def ln(z, w, b):
        mu = z.mean(-1, keepdims=True)
        return (z - mu) / np.sqrt(((z - mu) ** 2).mean(-1, keepdims=True) + 1e-5) * w + b

    def sa(z):
        qkv = z @ p["self_attn.in_proj_weight"].T + p["self_attn.in_proj_bias"]
        q, k, v = (qkv[..., i * E:(i + 1) * E].reshape(L, B, H, Dh).transpose(1, 2, 0, 3) for i in range(3))
        s = q @ k.transpose(0, 1, 3, 2) / np.sqrt(Dh) + mask
        s = np.exp(s - s.max(-1, keepdims=True))
        o = (s / s.sum(-1, keepdims=True)) @ v                       # [B, H, L, Dh]
        o = o.transpose(2, 0, 1, 3).reshape(L, B, E)
        return o @ p["self_attn.out_proj.weight"].T + p["self_attn.out_proj.bias"]

    def ff(z):
        h = z @ p["linear1.weight"].T + p["linear1.bias"]
        return act(h) @ p["linear2.weight"].T + p["linear2.bias"]

    if norm_first:
        x = x + sa(ln(x, p["norm1.weight"], p["norm1.bias"]))
        return x + ff(ln(x, p["norm2.weight"], p["norm2.bias"]))
    x = ln(x + sa(x), p["norm1.weight"], p["norm1.bias"])
    return ln(x + ff(x), p["norm2.weight"], p["norm2.bias"])


@pytest.mark.parametrize("norm_first", [False, True])
def test_encoder_layer_against_numpy_and_cuda_grads_match_cpu(norm_first, driver, poison):
    from math import erf
    L, B, E = 5, 3, 8
    x = RNG.standard_normal((B, L, E)).astype(np.float32)        # given batch-first, then transposed: a view
    mask = np.triu(np.full((L, L), -np.inf), 1).astype(np.float32)
    gout = RNG.standard_normal((L, B, E)).astype(np.float32)
    rawdev.manual_seed(5)
    layer = nn.TransformerEncoderLayer(E, 2, dim_feedforward=11, dropout=0.0, norm_first=norm_first,
                                       activation="gelu")
    with rawdev.no_grad():
        for prm in layer.parameters():
            prm.add_(rawdev.randn(*prm.shape) * 0.1)
    p = {k: v.detach().numpy().astype(np.float64) for k, v in layer.state_dict().items()}
    gelu = np.vectorize(lambda z: 0.5 * z * (1 + erf(z / np.sqrt(2))))
    ref = _ref_encoder_layer(x.transpose(1, 0, 2).astype(np.float64), p, mask, norm_first, gelu)
    res = {}
    for dev in ("cpu", "cuda"):
        layer.to(dev)
        t = _t(x, dev, grad=True)
        y = layer(t.transpose(0, 1), src_mask=_t(mask, dev), is_causal=True)
        (y * _t(gout, dev)).sum().backward()
        res[dev] = [y.detach().cpu().numpy(), t.grad.cpu().numpy(), layer.linear1.weight.grad.cpu().numpy(),
                    layer.self_attn.in_proj_weight.grad.cpu().numpy()]
        layer.zero_grad()
    np.testing.assert_allclose(res["cpu"][0], ref, rtol=1e-4, atol=1e-4)
    for a, b in zip(res["cpu"], res["cuda"]):
        np.testing.assert_allclose(b, a, rtol=1e-4, atol=1e-4)


# ---------------------------------------------------------------------------------------------- interpolate
def ref_nearest_idx(inp, out, scale=None, exact=False):
    s = inp / out if scale is None else 1.0 / scale
    d = np.arange(out) + (0.5 if exact else 0.0)
    return np.minimum(np.floor(d * s).astype(int), inp - 1)


def ref_linear_weights(inp, out, align, scale=None):
    """[out, inp] matrix of the linear interpolation weights (PyTorch's source-index rule)."""
    m = np.zeros((out, inp))
    for o in range(out):
        if align:
            src = o * (inp - 1) / (out - 1) if out > 1 else 0.0
        else:
            s = inp / out if scale is None else 1.0 / scale
            src = max((o + 0.5) * s - 0.5, 0.0)
        i0 = min(int(np.floor(src)), inp - 1)
        i1 = min(i0 + 1, inp - 1)
        lam = src - i0
        m[o, i0] += 1 - lam
        m[o, i1] += lam
    return m


def ref_interp(x, out_hw, mode, align=False, scales=(None, None)):
    """x [N, C, H, W] (float64): separable, so y = A_h @ x @ A_w^T per plane."""
    H, W = x.shape[2:]
    OH, OW = out_hw
    if mode.startswith("nearest"):
        exact = mode == "nearest-exact"
        ah = np.eye(H)[ref_nearest_idx(H, OH, scales[0], exact)]
        aw = np.eye(W)[ref_nearest_idx(W, OW, scales[1], exact)]
    else:
        ah = ref_linear_weights(H, OH, align, scales[0])
        aw = ref_linear_weights(W, OW, align, scales[1])
    return np.einsum("oh,nchw,pw->ncop", ah, x, aw)


INTERP_CASES = [  # (input shape, kwargs, out spatial, ref mode, align, ref scales)
    ((2, 3, 5, 4), {"size": (7, 9)}, (7, 9), "nearest", False, (None, None)),
    ((2, 3, 5, 4), {"scale_factor": 2}, (10, 8), "nearest", False, (2.0, 2.0)),
    ((1, 2, 7, 3), {"size": (3, 8), "mode": "nearest-exact"}, (3, 8), "nearest-exact", False, (None, None)),
    ((2, 3, 5, 4), {"size": (7, 9), "mode": "bilinear"}, (7, 9), "bilinear", False, (None, None)),
    ((2, 3, 5, 4), {"size": (7, 3), "mode": "bilinear", "align_corners": True}, (7, 3), "bilinear", True,
     (None, None)),
    ((1, 2, 5, 4), {"scale_factor": 1.5, "mode": "bilinear"}, (7, 6), "bilinear", False, (1.5, 1.5)),
    ((1, 2, 5, 4), {"scale_factor": 1.5, "mode": "bilinear", "recompute_scale_factor": True}, (7, 6), "bilinear",
     False, (None, None)),
    ((3, 2, 1, 300), {"size": (1, 301), "mode": "bilinear"}, (1, 301), "bilinear", False, (None, None)),
]


@pytest.mark.parametrize("shape,kw,out,mode,align,scales", INTERP_CASES)
def test_interpolate_2d_against_numpy_and_cuda_vs_cpu_grads(shape, kw, out, mode, align, scales, driver, poison):
    N, C, H, W = shape
    base = RNG.standard_normal((H, W, N, C)).astype(np.float32)          # read through a permuted view
    gout = RNG.standard_normal((N, C) + out).astype(np.float32)
    ref = ref_interp(base.transpose(2, 3, 0, 1).astype(np.float64), out, mode, align, scales)
    res = {}
    for dev in ("cpu", "cuda"):
        t = _t(base, dev, grad=True)
        x = t.permute(2, 3, 0, 1)
        y = F.interpolate(x, **kw)
        assert tuple(y.shape) == (N, C) + out
        # the source coordinates are float32 (as PyTorch's): ~1e-7 * W of error in each weight
        np.testing.assert_allclose(y.detach().cpu().numpy(), ref, rtol=1e-4, atol=2e-4)
        (y * _t(gout, dev)).sum().backward()
        res[dev] = t.grad.cpu().numpy()
    np.testing.assert_allclose(res["cuda"], res["cpu"], rtol=1e-4, atol=1e-5)


def test_interpolate_gradients_finite_differences_and_1d():
    for kw in ({"size": (4, 7), "mode": "bilinear"}, {"size": (3, 5), "mode": "bilinear", "align_corners": True},
               {"scale_factor": 2}):
        x = RNG.standard_normal((1, 2, 3, 4))
        y0 = F.interpolate(_t(x), **kw)
        gout = RNG.standard_normal(tuple(y0.shape))
        tx = _t(x, grad=True)
        y = F.interpolate(tx, **kw)
        (y * _t(gout)).sum().backward()
        np.testing.assert_allclose(tx.grad.numpy(),
                                   _fd(lambda z, kw=kw: F.interpolate(_t(z), **kw).numpy(), x, gout), rtol=1e-6,
                                       atol=1e-7)
    x = RNG.standard_normal((2, 3, 5))
    y = F.interpolate(_t(x, grad=True), size=8, mode="linear")
    assert y.grad_fn.name() == "UpsampleLinear1DBackward0"
    np.testing.assert_allclose(y.detach().numpy(), np.einsum("ncw,ow->nco", x, ref_linear_weights(5, 8, False)),
                               rtol=1e-12)
    y = F.interpolate(_t(x, grad=True), scale_factor=3)
    assert y.grad_fn.name() == "UpsampleNearest1DBackward0"
    np.testing.assert_array_equal(y.detach().numpy(), np.repeat(x, 3, axis=2))
    assert F.interpolate(_t(x[None], grad=True), scale_factor=2).grad_fn.name() == "UpsampleNearest2DBackward0"


def test_interpolate_errors():
    x = rawdev.randn(1, 1, 3)
    with pytest.raises(ValueError, match="either size or scale_factor should be defined"):
        F.interpolate(x)
    with pytest.raises(ValueError, match="only one of size or scale_factor should be defined"):
        F.interpolate(x, size=4, scale_factor=2)
    with pytest.raises(ValueError, match="align_corners option can only be set with the interpolating modes"):
        F.interpolate(x, size=4, align_corners=True)
    with pytest.raises(NotImplementedError, match="Got 3D input, but bilinear mode needs 4D input"):
        F.interpolate(x, size=4, mode="bilinear")
    with pytest.raises(ValueError, match="Input and output must have the same number of spatial dimensions"):
        F.interpolate(x, size=(4, 5))
    up = nn.Upsample(scale_factor=2, mode="bilinear")
    assert repr(up) == "Upsample(scale_factor=2.0, mode='bilinear')"
    assert list(up.state_dict()) == []


# ---------------------------------------------------------------------------------------------- pad
@pytest.mark.parametrize("mode,np_mode", [("constant", "constant"), ("reflect", "reflect"), ("replicate", "edge"),
                                          ("circular", "wrap")])
def test_pad_modes_against_numpy(mode, np_mode, driver, poison):
    base = RNG.standard_normal((5, 4, 2, 3)).astype(np.float32)      # [H, W, N, C], read as a permuted view
    x_np = base.transpose(2, 3, 0, 1)
    pads = (2, 1, 3, 0)                                              # (left, right, top, bottom)
    ref = np.pad(x_np.astype(np.float64), ((0, 0), (0, 0), (3, 0), (2, 1)), mode=np_mode)
    gout = RNG.standard_normal(ref.shape).astype(np.float32)
    grads = {}
    for dev in ("cpu", "cuda"):
        t = _t(base, dev, grad=True)
        y = F.pad(t.permute(2, 3, 0, 1), pads, mode=mode)
        np.testing.assert_allclose(y.detach().cpu().numpy(), ref, rtol=1e-6, atol=1e-6)
        (y * _t(gout, dev)).sum().backward()
        grads[dev] = t.grad.cpu().numpy()
    np.testing.assert_allclose(grads["cuda"], grads["cpu"], rtol=1e-5, atol=1e-5)
    x64 = x_np[:1, :1].astype(np.float64).copy()
    g64 = RNG.standard_normal((1, 1) + ref.shape[2:])
    tx = _t(x64, grad=True)
    (F.pad(tx, pads, mode=mode) * _t(g64)).sum().backward()
    want = _fd(lambda z: np.pad(z, ((0, 0), (0, 0), (3, 0), (2, 1)), mode=np_mode), x64, g64)
    np.testing.assert_allclose(tx.grad.numpy(), want, rtol=1e-6, atol=1e-7)


def test_pad_constant_value_negative_and_errors():
    x = np.arange(12, dtype=np.float32).reshape(3, 4)
    y = F.pad(_t(x), (1, -2), value=7.5).numpy()
    np.testing.assert_array_equal(y, np.pad(x[:, :2], ((0, 0), (1, 0)), constant_values=7.5))
    with pytest.raises(RuntimeError, match="Padding length must be divisible by 2"):
        F.pad(_t(x), (1,))
    with pytest.raises(RuntimeError, match=r"Padding size should be less than the corresponding input dimension, "
                                           r"but got: padding \(3, 3\) at dimension 2 of input \[1, 1, 3\]"):
        F.pad(rawdev.ones(1, 1, 3), (3, 3), mode="reflect")
    assert repr(nn.ZeroPad2d(1)) == "ZeroPad2d((1, 1, 1, 1))"
    assert repr(nn.ConstantPad1d((1, 2), 0.5)) == "ConstantPad1d(padding=(1, 2), value=0.5)"
    assert repr(nn.ReflectionPad2d((1, 0, 2, 1))) == "ReflectionPad2d((1, 0, 2, 1))"
    np.testing.assert_array_equal(nn.ReplicationPad1d(2)(_t(x[None])).numpy(), np.pad(x[None], ((0, 0),) * 2 +
                                                                                        ((2, 2),), mode="edge"))


# ---------------------------------------------------------------------------------------------- pixel shuffle
def test_pixel_shuffle_roundtrip_against_loops(driver, poison):
    r, N, C, H, W = 2, 2, 3, 3, 5
    x = RNG.standard_normal((N, C * r * r, H, W)).astype(np.float32)
    ref = np.zeros((N, C, H * r, W * r), np.float32)
    for n, c, h, w, i, j in np.ndindex(N, C, H, W, r, r):
        ref[n, c, h * r + i, w * r + j] = x[n, c * r * r + i * r + j, h, w]
    for dev in ("cpu", "cuda"):
        y = nn.PixelShuffle(r)(_t(x, dev))
        np.testing.assert_array_equal(y.cpu().numpy(), ref)
        np.testing.assert_array_equal(nn.PixelUnshuffle(r)(y).cpu().numpy(), x)
    with pytest.raises(RuntimeError, match=r"input.size\(-3\)=3 is not divisible by 4"):
        F.pixel_shuffle(rawdev.ones(1, 3, 2, 2), 2)


# ---------------------------------------------------------------------------------------------- embedding bag
def ref_embedding_bag(w, idx, bounds, mode, psw=None, pad=None):
    out = np.zeros((len(bounds) - 1, w.shape[1]))
    for b in range(len(bounds) - 1):
        rows = [(j, i) for j, i in enumerate(idx[bounds[b]:bounds[b + 1]], bounds[b]) if i != pad]
        if not rows:
            continue
        vals = np.stack([w[i] * (1 if psw is None else psw[j]) for j, i in rows])
        out[b] = {"sum": vals.sum(0), "mean": vals.mean(0), "max": vals.max(0)}[mode]
    return out


@pytest.mark.parametrize("mode", ["sum", "mean", "max"])
@pytest.mark.parametrize("pad", [None, 3])
def test_embedding_bag_offsets_against_numpy_cuda_vs_cpu(mode, pad, driver, poison):
    V, D = 13, 37
    idx = RNG.integers(0, V, 23)
    idx[[4, 9]] = 3
    offsets = np.array([0, 5, 5, 11, 20])                       # bag 1 is empty
    bounds = np.append(offsets, len(idx))
    w = RNG.standard_normal((V, D)).astype(np.float32)
    psw = RNG.random(23).astype(np.float32) if mode == "sum" else None
    ref = ref_embedding_bag(w.astype(np.float64), idx, bounds, mode, psw, pad)
    gout = RNG.standard_normal(ref.shape).astype(np.float32)
    res = {}
    for dev in ("cpu", "cuda"):
        tw = _t(w, dev, grad=True)
        tp = _t(psw, dev, grad=True) if psw is not None else None
        y = F.embedding_bag(_t(idx, dev), tw, _t(offsets, dev), mode=mode, per_sample_weights=tp, padding_idx=pad)
        np.testing.assert_allclose(y.detach().cpu().numpy(), ref, rtol=1e-5, atol=1e-5)
        (y * _t(gout, dev)).sum().backward()
        res[dev] = [tw.grad.cpu().numpy()] + ([tp.grad.cpu().numpy()] if tp is not None else [])
    for a, b in zip(res["cpu"], res["cuda"]):
        np.testing.assert_allclose(b, a, rtol=1e-4, atol=1e-5)
    # the weight's gradient by finite differences (float64, cpu; a small slice of D)
    w64, g64 = w[:, :3].astype(np.float64), gout[:, :3].astype(np.float64)
    tw = _t(w64, grad=True)
    tp = _t(psw.astype(np.float64), grad=True) if psw is not None else None
    (F.embedding_bag(_t(idx), tw, _t(offsets), mode=mode, per_sample_weights=tp, padding_idx=pad)
     * _t(g64)).sum().backward()
    np.testing.assert_allclose(tw.grad.numpy(), _fd(lambda z: ref_embedding_bag(z, idx, bounds, mode, psw, pad),
                                                    w64, g64), rtol=1e-6, atol=1e-7)
    if psw is not None:
        np.testing.assert_allclose(tp.grad.numpy(), _fd(lambda z: ref_embedding_bag(w64, idx, bounds, mode, z, pad),
                                                        psw.astype(np.float64), g64), rtol=1e-6, atol=1e-7)


def test_embedding_bag_2d_last_offset_module_and_errors(driver):
    bag = nn.EmbeddingBag(10, 4, mode="sum", padding_idx=0)
    assert repr(bag) == "EmbeddingBag(10, 4, mode='sum', padding_idx=0)"
    assert list(bag.state_dict()) == ["weight"] and (bag.weight.detach().numpy()[0] == 0).all()
    w = bag.weight.detach().numpy().astype(np.float64)
    x2 = np.array([[1, 0, 4], [9, 9, 2]])
    want = ref_embedding_bag(w, x2.reshape(-1), [0, 3, 6], "sum", pad=0)
    np.testing.assert_allclose(bag(_t(x2)).detach().numpy(), want, rtol=1e-6)
    bag.cuda()
    np.testing.assert_allclose(bag(_t(x2, "cuda")).detach().cpu().numpy(), want, rtol=1e-5, atol=1e-6)
    last = F.embedding_bag(_t(np.array([1, 2, 3, 4])), _t(w), _t(np.array([0, 1, 3])), mode="sum",
                           include_last_offset=True)
    np.testing.assert_allclose(last.numpy(), [w[1], w[2] + w[3]])
    with pytest.raises(ValueError, match="offsets has to be a 1D Tensor but got None"):
        F.embedding_bag(_t(np.array([1, 2])), _t(w))
    with pytest.raises(ValueError, match="if input is 2D, then offsets has to be None"):
        F.embedding_bag(_t(x2), _t(w), _t(np.array([0])))
    with pytest.raises(NotImplementedError, match="per_sample_weights is only supported for mode='sum'"):
        F.embedding_bag(_t(x2), _t(w), per_sample_weights=rawdev.ones(2, 3))
    with pytest.raises(RuntimeError, match="offsets\\[0\\] has to be 0"):
        F.embedding_bag(_t(np.array([1, 2])), _t(w), _t(np.array([1])))
    with pytest.raises(ValueError, match="mode has to be one of sum, mean or max"):
        F.embedding_bag(_t(x2), _t(w), mode="min")


@pytest.fixture
def fresh_sim():
    from rawdev.runtime import reset_for_tests
    reset_for_tests("sim")
    yield
    reset_for_tests("sim")   # the next test gets a power-on device, not this one's sticky error


def test_embedding_bag_index_out_of_range_is_a_device_side_assert(fresh_sim):
    from rawdev.errors import DeviceAssertError
    w = RNG.standard_normal((5, 3)).astype(np.float32)
    idx, offsets = np.array([1, 5, 2]), np.array([0, 2])
    with pytest.raises(IndexError, match="index 5 is out of bounds for dimension 0 with size 5"):
        F.embedding_bag(_t(idx), _t(w), _t(offsets))
    out = F.embedding_bag(_t(idx, "cuda"), _t(w, "cuda"), _t(offsets, "cuda"))
    with pytest.raises(DeviceAssertError, match=r"i >= 0 && i < V"):
        out.cpu()


def test_deprecated_upsample_functions_warn_and_match_interpolate():
    x = RNG.standard_normal((1, 2, 3, 4))
    with pytest.warns(UserWarning, match="upsample_bilinear` is deprecated"):
        y = F.upsample_bilinear(_t(x), size=(5, 6))
    np.testing.assert_allclose(y.numpy(), ref_interp(x, (5, 6), "bilinear", align=True), rtol=1e-12)
    with pytest.warns(UserWarning, match="upsample_nearest` is deprecated"):
        y = F.upsample_nearest(_t(x), scale_factor=2)
    np.testing.assert_array_equal(y.numpy(), x.repeat(2, axis=2).repeat(2, axis=3))
    with pytest.warns(UserWarning, match="upsample` is deprecated"):
        y = F.upsample(_t(x), size=(5, 7), mode="bilinear")
    np.testing.assert_allclose(y.numpy(), ref_interp(x, (5, 7), "bilinear"), rtol=1e-12)
    b = nn.UpsamplingBilinear2d(size=(5, 6))
    np.testing.assert_allclose(b(_t(x)).numpy(), ref_interp(x, (5, 6), "bilinear", align=True), rtol=1e-12)


def test_instance_norm_refuses_running_stats_it_does_not_track():
    m = nn.InstanceNorm1d(3, affine=True)
    sd = {"weight": rawdev.ones(3), "bias": rawdev.zeros(3), "running_mean": rawdev.zeros(3),
          "running_var": rawdev.ones(3)}
    for strict in (True, False):        # PyTorch reports it as an error either way
        with pytest.raises(RuntimeError, match=r'Unexpected running stats buffer\(s\) "running_mean" and '
                                               r'"running_var" for InstanceNorm1d with track_running_stats=False'):
            m.load_state_dict(sd, strict=strict)
    m.load_state_dict({"weight": rawdev.full((3,), 2.0), "bias": rawdev.zeros(3)})
    assert (m.weight.detach().numpy() == 2).all()
