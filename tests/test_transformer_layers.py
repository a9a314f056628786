"""The Transformer layers: PyTorch's names, masks and errors, and TransformerEncoderLayer against a float64 numpy
reference written here, with the cuda path (simulator, poisoned outputs) gradients against the cpu."""
import numpy as np
import pytest
import rawdev
from rawdev import nn
from rawdev.ops import cuda as cuda_ops

RNG = np.random.default_rng(2026)


def _t(a, dev="cpu", grad=False):
    t = rawdev.tensor(a).to(dev)
    return t.requires_grad_() if grad else t


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


@pytest.fixture
def poison(driver):
    cuda_ops.set_poison(True)
    yield
    cuda_ops.set_poison(False)


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
