"""scaled_dot_product_attention and nn.MultiheadAttention: values against float64 numpy loops, gradients by finite
differences (cpu float64), the fused cuda kernels (simulator, poisoned outputs, transposed views, sizes past the
32-row tiles) against the cpu within 1e-4, dropout masks (Philox on cuda), masks, causal, errors."""
import math

import numpy as np
import pytest
import rawdev
import rawdev.nn as nn
import rawdev.nn.functional as F
from rawdev.ops import cuda as cuda_ops
from rawdev.ops.attention.functions import _sdpa

RNG = np.random.default_rng(11)


# ------------------------------------------------------------------ float64 reference (explicit loops over rows)
def ref_sdpa(q, k, v, mask=None, causal=False, scale=None, keep=None, p=0.0):
    """Row by row: scores, mask (bool True = attend / float added), softmax (an all-masked row gives 0)."""
    q, k, v = (np.asarray(a, np.float64) for a in (q, k, v))
    batch = np.broadcast_shapes(q.shape[:-2], k.shape[:-2], v.shape[:-2])
    L, E = q.shape[-2:]
    S, Ev = k.shape[-2], v.shape[-1]
    q = np.broadcast_to(q, batch + (L, E)).reshape(-1, L, E)
    k = np.broadcast_to(k, batch + (S, E)).reshape(-1, S, E)
    v = np.broadcast_to(v, batch + (S, Ev)).reshape(-1, S, Ev)
    m = None if mask is None else np.broadcast_to(np.asarray(mask), batch + (L, S)).reshape(-1, L, S)
    kp = None if keep is None else np.broadcast_to(keep, batch + (L, S)).reshape(-1, L, S)
    sc = 1.0 / math.sqrt(E) if scale is None else scale
    out = np.zeros((q.shape[0], L, Ev))
    probs = np.zeros((q.shape[0], L, S))
    for n in range(q.shape[0]):
        for i in range(L):
            s = np.array([q[n, i] @ k[n, j] * sc for j in range(S)])
            ok = np.ones(S, bool)
            if causal:
                ok &= np.arange(S) <= i
            if m is not None:
                if m.dtype == bool:
                    ok &= m[n, i]
                else:
                    s = s + m[n, i]
            s = np.where(ok, s, -np.inf)
            if not np.isfinite(s).any():
                continue
            e = np.exp(s - s[np.isfinite(s)].max())
            pr = e / e.sum()
            if kp is not None:
                pr = pr * kp[n, i] / (1.0 - p)
            probs[n, i] = pr
            out[n, i] = pr @ v[n]
    return out.reshape(batch + (L, Ev)), probs.reshape(batch + (L, S))


def _t(a, dev="cpu", dt=np.float64, grad=False):
    return rawdev.tensor(np.asarray(a, dt), device=dev, requires_grad=grad)


# name -> (q shape, k shape, v shape, kwargs maker)
CASES = {
    "basic": ((2, 3, 5, 8), (2, 3, 7, 8), (2, 3, 7, 8), lambda: {}),
    "causal": ((2, 2, 6, 4), (2, 2, 6, 4), (2, 2, 6, 3), lambda: {"is_causal": True}),
    "causal_L_lt_S": ((2, 5, 8), (2, 7, 8), (2, 7, 8), lambda: {"is_causal": True}),
    "causal_L_gt_S": ((1, 7, 4), (1, 3, 4), (1, 3, 5), lambda: {"is_causal": True}),
    "bool_mask": ((2, 5, 6), (2, 7, 6), (2, 7, 6), lambda: {"attn_mask": RNG.random((5, 7)) > 0.3}),
    "bool_mask_empty_row": ((2, 4, 6), (2, 5, 6), (2, 5, 6),
                            lambda: {"attn_mask": np.array([[1, 0, 1, 1, 0], [0] * 5, [1] * 5, [0, 0, 0, 0, 1]],
                                                           bool)}),
    "float_mask_bcast": ((2, 3, 5, 8), (2, 3, 7, 8), (2, 3, 7, 8),
                         lambda: {"attn_mask": RNG.standard_normal((2, 1, 1, 7))}),
    "float_mask_full": ((2, 2, 5, 4), (2, 2, 7, 4), (2, 2, 7, 4),
                        lambda: {"attn_mask": RNG.standard_normal((2, 2, 5, 7))}),
    "scale_ev": ((3, 4, 5), (3, 6, 5), (3, 6, 2), lambda: {"scale": 0.7}),
    "batch_bcast": ((2, 3, 4, 4), (1, 3, 5, 4), (2, 1, 5, 4), lambda: {}),
    "unbatched": ((5, 8), (7, 8), (7, 8), lambda: {}),
}


def _arrays(name):
    qs, ks, vs, kw = CASES[name]
    return [RNG.standard_normal(s) for s in (qs, ks, vs)], kw()


def _call(ts, kw, dev, dt):
    kw = dict(kw)
    if "attn_mask" in kw:
        m = kw["attn_mask"]
        kw["attn_mask"] = rawdev.tensor(m if m.dtype == bool else m.astype(dt), device=dev)
    return F.scaled_dot_product_attention(*ts, **kw)


@pytest.mark.parametrize("name", sorted(CASES))
def test_values_cpu_float64(name):
    arrays, kw = _arrays(name)
    out = _call([_t(a) for a in arrays], kw, "cpu", np.float64)
    ref, _ = ref_sdpa(*arrays, mask=kw.get("attn_mask"), causal=kw.get("is_causal", False), scale=kw.get("scale"))
    assert out.dtype is rawdev.float64 and tuple(out.shape) == ref.shape
    np.testing.assert_allclose(np.asarray(out), ref, rtol=1e-12, atol=1e-13)


@pytest.mark.parametrize("name", ["basic", "causal_L_gt_S", "bool_mask_empty_row", "float_mask_bcast", "scale_ev",
                                  "batch_bcast", "unbatched"])
def test_gradient_cpu_float64(name):
    from test_autograd import gradcheck
    arrays, kw = _arrays(name)
    ts = [_t(a, grad=True) for a in arrays]
    gradcheck(lambda *t: _call(list(t), kw, "cpu", np.float64), *ts)


def _strided(a, dev, grad):
    """A transposed view of a fresh tensor holding a's values (non-contiguous in its last two dims)."""
    base = rawdev.tensor(np.ascontiguousarray(np.swapaxes(np.asarray(a, np.float32), -1, -2)), device=dev,
                         requires_grad=grad)
    return base.transpose(-1, -2), base


def _rel(a, b):
    return np.linalg.norm(np.asarray(a, np.float64) - b) / max(np.linalg.norm(b), 1e-30)


CUDA_CASES = {
    "basic": ((2, 2, 5, 8), (2, 2, 7, 8), (2, 2, 7, 8), lambda: {}),
    "tile_edges_d32": ((1, 37, 20), (1, 41, 20), (1, 41, 9), lambda: {}),
    "head_d64": ((2, 3, 40), (2, 5, 40), (2, 5, 33), lambda: {"is_causal": True}),
    "head_d128": ((1, 3, 100), (1, 5, 100), (1, 5, 128), lambda: {"attn_mask": RNG.random((3, 5)) > 0.3}),
    "causal_tiles": ((2, 35, 8), (2, 35, 8), (2, 35, 8), lambda: {"is_causal": True}),
    "causal_L_lt_S": ((2, 5, 8), (2, 7, 8), (2, 7, 8), lambda: {"is_causal": True}),
    "bool_mask_rows": ((2, 4, 6), (2, 5, 6), (2, 5, 6), CASES["bool_mask_empty_row"][3]),
    "float_mask_bcast": ((2, 2, 5, 8), (2, 2, 7, 8), (2, 2, 7, 8),
                         lambda: {"attn_mask": RNG.standard_normal((2, 1, 1, 7))}),
    "bool_mask_heads": ((2, 3, 5, 4), (2, 3, 7, 4), (2, 3, 7, 4),
                        lambda: {"attn_mask": RNG.random((2, 3, 5, 7)) > 0.4}),
}


@pytest.mark.parametrize("name", sorted(CUDA_CASES))
def test_cuda_matches_cpu(driver, name):
    qs, ks, vs, mk = CUDA_CASES[name]
    arrays, kw = [RNG.standard_normal(s) for s in (qs, ks, vs)], mk()
    g = RNG.standard_normal(ref_sdpa(*arrays, **{"mask": kw.get("attn_mask")})[0].shape)
    res = {}
    cuda_ops.set_poison(True)
    try:
        for dev in ("cpu", "cuda"):
            pairs = [_strided(a, dev, True) for a in arrays]
            out = _call([p[0] for p in pairs], kw, dev, np.float32)
            out.backward(rawdev.tensor(g.astype(np.float32), device=dev))
            res[dev] = [np.asarray(out.detach().cpu())] + [np.asarray(p[1].grad.cpu()) for p in pairs]
    finally:
        cuda_ops.set_poison(False)
    ref, _ = ref_sdpa(*arrays, mask=kw.get("attn_mask"), causal=kw.get("is_causal", False))
    assert _rel(res["cuda"][0], ref) < 1e-5
    for a, b in zip(res["cuda"], res["cpu"]):
        assert np.isfinite(a).all()
        assert _rel(a, b) < 1e-4


def test_cuda_need_weights_probs(driver):
    arrays = [RNG.standard_normal(s) for s in ((2, 5, 8), (2, 7, 8), (2, 7, 8))]
    mask = RNG.random((5, 7)) > 0.3
    cuda_ops.set_poison(True)
    try:
        out, w = _sdpa(*[_t(a, "cuda", np.float32) for a in arrays], attn_mask=rawdev.tensor(mask, device="cuda"),
                       need_weights=True)
    finally:
        cuda_ops.set_poison(False)
    ref, probs = ref_sdpa(*arrays, mask=mask)
    assert _rel(w.cpu().numpy(), probs) < 1e-5 and _rel(out.cpu().numpy(), ref) < 1e-5


# ------------------------------------------------------------------ dropout
def _philox(c0, c1, c2, c3, k0, k1):
    m = np.uint64(0xFFFFFFFF)
    c = [np.asarray(x, np.uint64) for x in (c0, c1, c2, c3)]
    k0, k1 = np.uint64(k0), np.uint64(k1)
    for _ in range(10):
        p0 = np.uint64(0xD2511F53) * c[0]
        p1 = np.uint64(0xCD9E8D57) * c[2]
        c = [((p1 >> np.uint64(32)) ^ c[1] ^ k0) & m, p1 & m, ((p0 >> np.uint64(32)) ^ c[3] ^ k1) & m, p0 & m]
        k0, k1 = (k0 + np.uint64(0x9E3779B9)) & m, (k1 + np.uint64(0xBB67AE85)) & m
    return c


def _keep_ref(shape, p, seed):
    t = np.arange(int(np.prod(shape)), dtype=np.uint64)
    g = t >> np.uint64(2)
    w = _philox(g & np.uint64(0xFFFFFFFF), g >> np.uint64(32), 0, 0, seed & 0xFFFFFFFF, seed >> 32)
    word = np.choose((t & np.uint64(3)).astype(np.int64), w)
    return ((word >> np.uint64(8)).astype(np.float32) * np.float32(2.0 ** -24) >= np.float32(p)).reshape(shape)


def test_dropout_cpu():
    _dropout_check("cpu")


def test_dropout_cuda(driver):
    _dropout_check("cuda")


def _dropout_check(dev):
    """Output = (dropped, rescaled probabilities) @ v, the kept probabilities are P/(1-p), about p dropped; the
    gradients follow the same mask; on cuda the mask is dropout.cu's Philox stream."""
    p = 0.3
    arrays = [RNG.standard_normal(s) for s in ((2, 9, 8), (2, 11, 8), (2, 11, 8))]
    dt = np.float64 if dev == "cpu" else np.float32
    gen = rawdev.Generator().manual_seed(7)
    ts = [_t(a, dev, dt, True) for a in arrays]
    out, w = _sdpa(*ts, dropout_p=p, generator=gen, need_weights=True)
    w = np.asarray(w.cpu(), np.float64)
    keep = w != 0
    ref, probs = ref_sdpa(*arrays, keep=keep, p=p)
    assert 0.15 < 1 - keep.mean() < 0.45
    np.testing.assert_allclose(w, probs, rtol=1e-5, atol=1e-7)
    assert _rel(out.detach().cpu().numpy(), ref) < 1e-5
    if dev == "cuda":
        gen2 = rawdev.Generator().manual_seed(7)
        seed = int(gen2.np.integers(0, 2 ** 63))
        np.testing.assert_array_equal(keep, _keep_ref(keep.shape, p, seed))
    g = RNG.standard_normal(ref.shape)
    out.backward(_t(g, dev, dt))
    # reference gradient through the same mask, by finite differences of the float64 reference
    eps = 1e-6
    for t, a in zip(ts, arrays):
        num = np.zeros_like(a)
        for idx in np.ndindex(a.shape):
            ap, am = a.copy(), a.copy()
            ap[idx] += eps
            am[idx] -= eps
            args_p = [ap if b is a else b for b in arrays]
            args_m = [am if b is a else b for b in arrays]
            num[idx] = ((ref_sdpa(*args_p, keep=keep, p=p)[0] - ref_sdpa(*args_m, keep=keep, p=p)[0]) * g).sum() / (
                2 * eps)
        assert _rel(t.grad.cpu().numpy(), num) < (1e-6 if dev == "cpu" else 1e-4)


def test_dropout_off_in_eval_and_p1():
    arrays = [RNG.standard_normal(s) for s in ((2, 3, 4), (2, 5, 4), (2, 5, 4))]
    out = F.scaled_dot_product_attention(*[_t(a) for a in arrays], dropout_p=1.0)
    assert np.all(np.asarray(out) == 0)


# ------------------------------------------------------------------ errors
def test_errors():
    q = _t(RNG.standard_normal((2, 3, 4)))
    k = _t(RNG.standard_normal((2, 5, 4)))
    with pytest.raises(RuntimeError, match="Explicit attn_mask should not be set when is_causal=True"):
        F.scaled_dot_product_attention(q, k, k, attn_mask=rawdev.tensor(np.ones((3, 5), bool)), is_causal=True)
    with pytest.raises(RuntimeError, match="same dtype"):
        F.scaled_dot_product_attention(q, k.float(), k)
    with pytest.raises(RuntimeError, match="must be broadcastable"):
        F.scaled_dot_product_attention(q, k, k, attn_mask=rawdev.tensor(np.ones((4, 5), bool)))
    with pytest.raises(RuntimeError, match="shape mismatch"):
        F.scaled_dot_product_attention(q, _t(RNG.standard_normal((2, 5, 3))), k)


def test_cuda_head_size_limit(driver):
    q = _t(RNG.standard_normal((1, 2, 130)), "cuda", np.float32)
    with pytest.raises(NotImplementedError, match="head sizes up to 128"):
        F.scaled_dot_product_attention(q, q, q)


# ------------------------------------------------------------------ MultiheadAttention
def ref_mha(x_q, x_k, x_v, W, b, Wo, bo, H, attn_mask=None, kpm=None, average=True):
    """PyTorch's math for (L, B, E) inputs: bool masks True = masked out; returns (out, weights)."""
    L, B, E = x_q.shape
    S = x_k.shape[0]
    Dh = E // H
    q = x_q @ W[:E].T + (b[:E] if b is not None else 0)
    k = x_k @ W[E:2 * E].T + (b[E:2 * E] if b is not None else 0)
    v = x_v @ W[2 * E:].T + (b[2 * E:] if b is not None else 0)
    out = np.zeros((L, B, E))
    w = np.zeros((B, H, L, S))
    for bi in range(B):
        for h in range(H):
            sl = slice(h * Dh, (h + 1) * Dh)
            s = q[:, bi, sl] @ k[:, bi, sl].T / math.sqrt(Dh)
            if attn_mask is not None:
                am = attn_mask if attn_mask.ndim == 2 else attn_mask[bi * H + h]
                s = np.where(am, -np.inf, s) if am.dtype == bool else s + am
            if kpm is not None:
                s = np.where(kpm[bi][None, :], -np.inf, s) if kpm.dtype == bool else s + kpm[bi][None, :]
            e = np.exp(s - s.max(-1, keepdims=True))
            pr = e / e.sum(-1, keepdims=True)
            w[bi, h] = pr
            out[:, bi, sl] = pr @ v[:, bi, sl]
    out = out @ Wo.T + (bo if bo is not None else 0)
    return out, (w.mean(1) if average else w)


def _mha_params(m):
    sd = m.state_dict()

    def get(n):
        return np.asarray(sd[n], np.float64) if n in sd else None
    return get("in_proj_weight"), get("in_proj_bias"), get("out_proj.weight"), get("out_proj.bias")


def test_mha_state_dict_names_and_load():
    m = nn.MultiheadAttention(8, 2)
    assert list(m.state_dict()) == ["in_proj_weight", "in_proj_bias", "out_proj.weight", "out_proj.bias"]
    assert np.all(np.asarray(m.in_proj_bias) == 0) and np.all(np.asarray(m.out_proj.bias) == 0)
    sd = {"in_proj_weight": rawdev.tensor(RNG.standard_normal((24, 8)).astype(np.float32)),
          "in_proj_bias": rawdev.tensor(RNG.standard_normal(24).astype(np.float32)),
          "out_proj.weight": rawdev.tensor(RNG.standard_normal((8, 8)).astype(np.float32)),
          "out_proj.bias": rawdev.tensor(RNG.standard_normal(8).astype(np.float32))}
    m.load_state_dict(sd)
    np.testing.assert_array_equal(np.asarray(m.in_proj_weight), np.asarray(sd["in_proj_weight"]))
    nb = nn.MultiheadAttention(8, 4, bias=False)
    assert list(nb.state_dict()) == ["in_proj_weight", "out_proj.weight"]
    with pytest.raises(NotImplementedError):
        nn.MultiheadAttention(8, 2, kdim=4)


MHA_CASES = {
    "plain": dict(),
    "bool_attn_mask": dict(attn_mask=lambda L, S, B, H: RNG.random((L, S)) > 0.7),
    "float_attn_mask_3d": dict(attn_mask=lambda L, S, B, H: RNG.standard_normal((B * H, L, S))),
    "kpm_bool": dict(key_padding_mask=lambda L, S, B, H: np.array([[0, 0, 1, 0, 1, 0, 0], [0, 1, 0, 0, 0, 0, 1]],
                                                                    bool)),
    "kpm_float_and_mask": dict(key_padding_mask=lambda L, S, B, H: RNG.standard_normal((B, S)),
                               attn_mask=lambda L, S, B, H: RNG.random((L, S)) > 0.8),
    "per_head_weights": dict(average_attn_weights=False),
}


def _draw(case, L, S, B, H):
    return {k: f(L, S, B, H) for k, f in case.items() if k in ("attn_mask", "key_padding_mask")}


def _mha_run(m, dev, dt, xs, case, B, H, batch_first=False, need_weights=True, drawn=None):
    L, S = xs[0].shape[0], xs[1].shape[0]
    kw = {}
    for key, a in (drawn if drawn is not None else _draw(case, L, S, B, H)).items():
        kw[key] = (a, rawdev.tensor(a if a.dtype == bool else a.astype(dt), device=dev))
    if "average_attn_weights" in case:
        kw["average_attn_weights"] = (None, case["average_attn_weights"])
    ins = [_t(np.swapaxes(x, 0, 1) if batch_first else x, dev, dt, True) for x in xs]
    out, w = m(*ins, need_weights=need_weights, **{k: v[1] for k, v in kw.items()})
    return ins, out, w, {k: v[0] for k, v in kw.items()}


@pytest.mark.parametrize("name", sorted(MHA_CASES))
def test_mha_cpu_float64(name):
    B, H, E, L, S = 2, 2, 8, 5, 7
    m = nn.MultiheadAttention(E, H, dtype=rawdev.float64)
    xs = [RNG.standard_normal((L, B, E)), RNG.standard_normal((S, B, E)), RNG.standard_normal((S, B, E))]
    ins, out, w, masks = _mha_run(m, "cpu", np.float64, xs, MHA_CASES[name], B, H)
    ref, rw = ref_mha(*xs, *_mha_params(m), H, attn_mask=masks.get("attn_mask"), kpm=masks.get("key_padding_mask"),
                      average=MHA_CASES[name].get("average_attn_weights", True))
    np.testing.assert_allclose(np.asarray(out.detach()), ref, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(np.asarray(w), rw, rtol=1e-10, atol=1e-12)


def test_mha_batch_first_unbatched_causal_cpu():
    B, H, E, L = 2, 4, 8, 6
    m = nn.MultiheadAttention(E, H, batch_first=True, dtype=rawdev.float64)
    x = RNG.standard_normal((L, B, E))
    causal = np.triu(np.ones((L, L), bool), 1)
    ref, rw = ref_mha(x, x, x, *_mha_params(m), H, attn_mask=causal)
    xt = _t(np.swapaxes(x, 0, 1))
    out, w = m(xt, xt, xt, attn_mask=rawdev.tensor(causal), is_causal=True, need_weights=False)
    assert w is None
    np.testing.assert_allclose(np.asarray(out), np.swapaxes(ref, 0, 1), rtol=1e-10, atol=1e-12)
    out, w = m(xt, xt, xt, attn_mask=rawdev.tensor(causal))
    np.testing.assert_allclose(np.asarray(w), rw, rtol=1e-10, atol=1e-12)
    # unbatched (L, E)
    x0 = x[:, :1]
    ref0, rw0 = ref_mha(x0, x0, x0, *_mha_params(m), H)
    out0, w0 = m(_t(x0[:, 0]), _t(x0[:, 0]), _t(x0[:, 0]))
    np.testing.assert_allclose(np.asarray(out0), ref0[:, 0], rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(np.asarray(w0), rw0[0], rtol=1e-10, atol=1e-12)
    with pytest.raises(RuntimeError, match="Need attn_mask if specifying the is_causal hint"):
        m(xt, xt, xt, is_causal=True)


def test_mha_gradient_cpu_float64():
    from test_autograd import gradcheck
    B, H, E, L, S = 2, 2, 4, 3, 5
    m = nn.MultiheadAttention(E, H, dtype=rawdev.float64)
    kpm = rawdev.tensor(np.array([[0, 0, 1, 0, 0], [1, 0, 0, 0, 0]], bool))
    xs = [_t(RNG.standard_normal((n, B, E)), grad=True) for n in (L, S, S)]
    gradcheck(lambda *t: m(*t, key_padding_mask=kpm, need_weights=False)[0], *xs)
    w0 = m.in_proj_weight.detach().requires_grad_()
    gradcheck(lambda w: F.multi_head_attention_forward(xs[0], xs[1], xs[2], E, H, w, m.in_proj_bias, None, None,
                                                       False, 0.0, m.out_proj.weight, m.out_proj.bias,
                                                       need_weights=False)[0], w0)


def test_mha_self_attention_gradient_cpu_float64():
    # one input for query, key and value: the packed in-projection, split into q, k, v by one node
    from test_autograd import gradcheck
    B, H, E, L = 2, 2, 4, 3
    m = nn.MultiheadAttention(E, H, dtype=rawdev.float64)
    x = _t(RNG.standard_normal((L, B, E)), grad=True)
    gradcheck(lambda t: m(t, t, t, need_weights=False)[0], x)
    w0 = m.in_proj_weight.detach().requires_grad_()
    gradcheck(lambda w: F.multi_head_attention_forward(x, x, x, E, H, w, m.in_proj_bias, None, None, False, 0.0,
                                                       m.out_proj.weight, m.out_proj.bias, need_weights=False)[0], w0)


@pytest.mark.parametrize("name", ["plain", "kpm_float_and_mask", "per_head_weights"])
def test_mha_cuda_matches_cpu(driver, name):
    B, H, E, L, S = 2, 2, 8, 5, 7
    m = nn.MultiheadAttention(E, H, batch_first=True)
    xs = [RNG.standard_normal((L, B, E)), RNG.standard_normal((S, B, E)), RNG.standard_normal((S, B, E))]
    drawn = _draw(MHA_CASES[name], L, S, B, H)
    res = {}
    cuda_ops.set_poison(True)
    try:
        for dev in ("cpu", "cuda"):
            m.to(dev)
            m.zero_grad()
            ins, out, w, _ = _mha_run(m, dev, np.float32, xs, MHA_CASES[name], B, H, batch_first=True, drawn=drawn)
            out.sum().backward()
            res[dev] = [np.asarray(out.detach().cpu()), np.asarray(w.cpu())] + [np.asarray(t.grad.cpu()) for t in ins] \
                + [np.asarray(p.grad.cpu()) for p in m.parameters()]
    finally:
        cuda_ops.set_poison(False)
    for a, b in zip(res["cuda"], res["cpu"]):
        assert np.isfinite(a).all() and _rel(a, b) < 1e-4


def test_float_mask_gradient_cpu_float64():
    from test_autograd import gradcheck
    arrays = [RNG.standard_normal(s) for s in ((2, 3, 4, 5), (2, 3, 6, 5), (2, 3, 6, 5))]
    ts = [_t(a, grad=True) for a in arrays]
    for shape in ((2, 3, 4, 6), (3, 1, 6), (4, 6)):
        m = _t(RNG.standard_normal(shape), grad=True)
        gradcheck(lambda *t: F.scaled_dot_product_attention(*t[:3], attn_mask=t[3]), *ts, m)


def test_float_mask_gradient_cuda(driver):
    arrays = [RNG.standard_normal(s) for s in ((2, 2, 5, 8), (2, 2, 7, 8), (2, 2, 7, 8))]
    mask = RNG.standard_normal((2, 1, 5, 7))
    g = RNG.standard_normal((2, 2, 5, 8))
    res = {}
    cuda_ops.set_poison(True)
    try:
        for dev in ("cpu", "cuda"):
            ts = [_t(a, dev, np.float32, True) for a in arrays]
            m = _t(mask, dev, np.float32, True)
            F.scaled_dot_product_attention(*ts, attn_mask=m).backward(_t(g, dev, np.float32))
            res[dev] = [np.asarray(t.grad.cpu()) for t in ts + [m]]
    finally:
        cuda_ops.set_poison(False)
    for a, b in zip(res["cuda"], res["cpu"]):
        assert np.isfinite(a).all() and _rel(a, b) < 1e-4


@pytest.mark.parametrize("L,S", [(0, 4), (3, 0)])
def test_empty_sizes(L, S):
    q, k = _t(RNG.standard_normal((2, L, 4)), grad=True), _t(RNG.standard_normal((2, S, 4)), grad=True)
    v = _t(RNG.standard_normal((2, S, 3)), grad=True)
    out = F.scaled_dot_product_attention(q, k, v)
    assert tuple(out.shape) == (2, L, 3) and np.all(np.asarray(out.detach()) == 0)
    out.sum().backward()
    assert tuple(k.grad.shape) == (2, S, 4) and np.all(np.asarray(k.grad) == 0)


@pytest.mark.parametrize("L,S", [(0, 4), (3, 0)])
def test_empty_sizes_cuda(driver, L, S):
    cuda_ops.set_poison(True)
    try:
        q = _t(RNG.standard_normal((2, L, 4)), "cuda", np.float32, True)
        k = _t(RNG.standard_normal((2, S, 4)), "cuda", np.float32, True)
        v = _t(RNG.standard_normal((2, S, 3)), "cuda", np.float32, True)
        out = F.scaled_dot_product_attention(q, k, v)
        out.sum().backward()
    finally:
        cuda_ops.set_poison(False)
    assert tuple(out.shape) == (2, L, 3) and np.all(out.detach().cpu().numpy() == 0)
    for t in (q, k, v):
        assert np.all(t.grad.cpu().numpy() == 0)


def test_enable_gqa_cpu_float64():
    from test_autograd import gradcheck
    q = RNG.standard_normal((2, 4, 3, 5))
    k, v = RNG.standard_normal((2, 2, 6, 5)), RNG.standard_normal((2, 2, 6, 4))
    out = F.scaled_dot_product_attention(_t(q), _t(k), _t(v), enable_gqa=True)
    ref, _ = ref_sdpa(q, np.repeat(k, 2, axis=1), np.repeat(v, 2, axis=1))
    np.testing.assert_allclose(np.asarray(out), ref, rtol=1e-12, atol=1e-13)
    ts = [_t(a, grad=True) for a in (q, k, v)]
    gradcheck(lambda *t: F.scaled_dot_product_attention(*t, enable_gqa=True), *ts)
    with pytest.raises(RuntimeError, match="must divide"):
        F.scaled_dot_product_attention(_t(q), _t(RNG.standard_normal((2, 3, 6, 5))), _t(v), enable_gqa=True)


def test_mha_self_attention_cuda_matches_cpu(driver):
    B, H, E, L = 2, 2, 8, 6
    m = nn.MultiheadAttention(E, H, batch_first=True)
    x = RNG.standard_normal((B, L, E)).astype(np.float32)
    kpm = np.zeros((B, L), bool)
    kpm[0, 4:] = True
    res = {}
    cuda_ops.set_poison(True)
    try:
        for dev in ("cpu", "cuda"):
            m.to(dev)
            m.zero_grad()
            xt = rawdev.tensor(x, device=dev, requires_grad=True)
            out, w = m(xt, xt, xt, key_padding_mask=rawdev.tensor(kpm, device=dev))
            out.sum().backward()
            res[dev] = [np.asarray(out.detach().cpu()), np.asarray(w.cpu()), np.asarray(xt.grad.cpu())] + \
                [np.asarray(p.grad.cpu()) for p in m.parameters()]
    finally:
        cuda_ops.set_poison(False)
    xs = [np.swapaxes(x, 0, 1).astype(np.float64)] * 3
    ref, rw = ref_mha(*xs, *_mha_params(m.cpu()), H, kpm=kpm)
    assert _rel(res["cpu"][0], np.swapaxes(ref, 0, 1)) < 1e-5 and _rel(res["cpu"][1], rw) < 1e-5
    for a, b in zip(res["cuda"], res["cpu"]):
        assert np.isfinite(a).all() and _rel(a, b) < 1e-4


def test_mha_training_dropout_weights_match_output():
    """In training the returned per-head weights are the dropped, rescaled probabilities the output was made with."""
    B, H, E, L, S = 2, 2, 8, 5, 7
    m = nn.MultiheadAttention(E, H, dropout=0.5, dtype=rawdev.float64)
    m.train()
    xs = [RNG.standard_normal((n, B, E)) for n in (L, S, S)]
    out, w = m(*[_t(x) for x in xs], average_attn_weights=False)
    W, b, Wo, bo = _mha_params(m)
    w = np.asarray(w)
    _, probs = ref_mha(*xs, W, b, Wo, bo, H, average=False)
    kept = w != 0
    assert 0.3 < 1 - kept.mean() < 0.7
    np.testing.assert_allclose(w[kept], 2 * probs[kept], rtol=1e-10, atol=1e-12)
    v = xs[2] @ W[2 * E:].T + b[2 * E:]
    Dh = E // H
    o = np.zeros((L, B, E))
    for bi in range(B):
        for h in range(H):
            o[:, bi, h * Dh:(h + 1) * Dh] = w[bi, h] @ v[:, bi, h * Dh:(h + 1) * Dh]
    np.testing.assert_allclose(np.asarray(out.detach()), o @ Wo.T + bo, rtol=1e-10, atol=1e-12)
    m.eval()
    out_e, w_e = m(*[_t(x) for x in xs])
    np.testing.assert_allclose(np.asarray(w_e), probs.mean(1), rtol=1e-10, atol=1e-12)
