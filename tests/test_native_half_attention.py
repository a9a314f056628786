"""scaled_dot_product_attention on float16/bfloat16 cuda tensors runs the `_f16` / `_bf16` forms of attention.ptx on
the 16-bit storage: q, k, v, the output and the gradients stay 16-bit, the row logsumexp, rowsum(dO*O) and a float
mask are float32, and no float32 copy of an operand is made (no cast kernel widens one). Each backend result
equals, bit for bit, the widened one (the float32 kernel on the exactly widened operands, each result rounded
once). The public function is also checked against a float64 reference, and on a 16-bit float mask, which every
kernel form reads as float32."""
import math

import numpy as np
import pytest
import rawdev
import rawdev.nn.functional as F
from rawdev.ops.attention import cuda as cuda_attn
from rawdev.ops.attention.functions import _Mask
from rawdev.ops.dispatch import cuda_backend

from _refs import rng
from test_attention import ref_sdpa
from test_native_half_elementwise import DTYPES, _same
from test_native_half_norm import _t, _traced

# (N, L, S, E, Ev): one tile, past the 32-row tiles with odd sizes, head sizes of the d32 and d64 kernels
SIZES = [(2, 5, 7, 16, 16), (1, 37, 33, 24, 20), (1, 9, 40, 64, 48)]
MASKS = ["none", "bool", "float", "causal", "dropout"]
TOL = {"bfloat16": 3e-2, "float16": 4e-3}


def _mask(kind, N, L, S):
    """(_Mask, causal, dropout p) for a mask kind."""
    if kind == "bool":
        keep = rng().random((N, L, S)) > 0.3
        keep[:, :, 0] = True
        m = rawdev.tensor(keep, device="cuda")
    elif kind == "float":
        m = _t((N, L, S), "float32", 2.0)
    else:
        m = None
    return _Mask(m, (N,), N, L, S), kind == "causal", 0.25 if kind == "dropout" else 0.0


def _native(name, *args):
    out, text = _traced(lambda: getattr(cuda_backend, name)(*args))
    assert "cast_bf16_f32" not in text and "cast_f16_f32" not in text, text
    assert f"{name.replace('_q', '_dq').replace('_kv', '_dkv')}_bf16_d" in text or \
        f"{name.replace('_q', '_dq').replace('_kv', '_dkv')}_f16_d" in text, text
    return out


def _round(out, low, keep):
    return tuple(o if (i in keep or o is None) else o.to(low) for i, o in enumerate(out))


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("size", SIZES, ids=["small", "tiles", "d64"])
@pytest.mark.parametrize("kind", MASKS)
def test_sdpa_equals_widened_bit_for_bit(driver, dtype, size, kind):
    N, L, S, E, Ev = size
    q, k, v = _t((N, L, E), dtype), _t((N, S, E), dtype), _t((N, S, Ev), dtype)
    mask, causal, p = _mask(kind, N, L, S)
    scale, seed = 1.0 / math.sqrt(E), 1234
    low = q.dtype
    out, lse = _native("sdpa_fwd", q, k, v, mask, causal, scale, p, seed)
    assert out.dtype is low and lse.dtype is rawdev.float32
    wq, wk, wv = q.float(), k.float(), v.float()
    w_out, w_lse = cuda_attn.sdpa_fwd(wq, wk, wv, mask, causal, scale, p, seed)
    _same(out, w_out.to(low), "sdpa_fwd out")
    _same(lse, w_lse, "sdpa_fwd lse")

    g = _t((N, L, Ev), dtype)
    dq, rowdot, ds = _native("sdpa_bwd_q", g, q, k, v, out, lse, mask, causal, scale, p, seed)
    assert ds is None and dq.dtype is low and rowdot.dtype is rawdev.float32
    w_dq, w_rowdot, _ = cuda_attn.sdpa_bwd_q(g.float(), wq, wk, wv, out.float(), lse, mask, causal, scale, p, seed)
    _same(dq, w_dq.to(low), "sdpa_bwd_q dq")
    _same(rowdot, w_rowdot, "sdpa_bwd_q rowdot")
    dk, dv = _native("sdpa_bwd_kv", g, q, k, v, rowdot, lse, mask, causal, scale, p, seed)
    assert dk.dtype is low and dv.dtype is low
    w_dk, w_dv = cuda_attn.sdpa_bwd_kv(g.float(), wq, wk, wv, rowdot, lse, mask, causal, scale, p, seed)
    _same(dk, w_dk.to(low), "sdpa_bwd_kv dk")
    _same(dv, w_dv.to(low), "sdpa_bwd_kv dv")


def test_sdpa_mixed_storage_is_refused(driver):
    q = _t((1, 4, 16), "bfloat16")
    k = _t((1, 4, 16), "float16")
    with pytest.raises(TypeError, match="float32 tensors"):
        cuda_attn.sdpa_fwd(q, k, k, _Mask(None, (1,), 1, 4, 4), False, 0.25, 0.0, 0)


# ------------------------------------------------------------------ public function: float64 reference, masks
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("kind", ["none", "float", "bool", "causal"])
def test_sdpa_16bit_against_float64(driver, dtype, kind):
    """Transposed (non-contiguous) 16-bit views; output and gradients in the input dtype, within the dtype's
    tolerance of the float64 values on the same (rounded) inputs; a 16-bit float mask is read as float32."""
    B, H, L, S, E = 2, 3, 9, 11, 16
    low = getattr(rawdev, dtype)
    base = [_t((B, n, H, E), dtype) for n in (L, S, S)]
    q, k, v = (b.transpose(1, 2).detach().requires_grad_() for b in base)
    assert not q.is_contiguous()
    kw = {}
    mask64 = None
    if kind == "float":
        m = _t((L, S), dtype, 2.0)
        kw["attn_mask"], mask64 = m, m.cpu().double().numpy()
    elif kind == "bool":
        keep = rng().random((L, S)) > 0.3
        keep[:, 0] = True
        kw["attn_mask"], mask64 = rawdev.tensor(keep, device="cuda"), keep
    out = F.scaled_dot_product_attention(q, k, v, is_causal=kind == "causal", **kw)
    assert out.dtype is low
    g = _t((B, H, L, E), dtype)
    out.backward(g)
    for t in (q, k, v):
        assert t.grad.dtype is low

    q64, k64, v64, g64 = (t.detach().cpu().double().requires_grad_() for t in (q, k, v, g))
    m64 = None if mask64 is None else rawdev.tensor(mask64)
    o64 = F.scaled_dot_product_attention(q64, k64, v64, attn_mask=m64, is_causal=kind == "causal")
    want, _ = ref_sdpa(q64.detach().numpy(), k64.detach().numpy(), v64.detach().numpy(), mask64,
                       causal=kind == "causal")
    np.testing.assert_allclose(o64.detach().numpy(), want, rtol=1e-10, atol=1e-12)
    o64.backward(g64.detach())
    tol = TOL[dtype]
    for got, ref, what in ((out, o64, "out"), (q.grad, q64.grad, "dq"), (k.grad, k64.grad, "dk"),
                           (v.grad, v64.grad, "dv")):
        got, ref = got.detach().cpu().double().numpy(), ref.detach().numpy()
        err = np.abs(got - ref).max() / max(np.abs(ref).max(), 1e-6)
        assert err < tol, f"{dtype} {kind} {what}: relative error {err:.3g} >= {tol}"


@pytest.mark.parametrize("dtype", DTYPES)
def test_sdpa_16bit_float_mask_gradient(driver, dtype):
    """A 16-bit float mask that requires grad takes the float32 kernels (their score gradient); its gradient comes
    back in the mask's dtype and matches float64."""
    L, S, E = 6, 5, 16
    q, k, v = _t((1, L, E), dtype), _t((1, S, E), dtype), _t((1, S, E), dtype)
    m = _t((L, S), dtype).requires_grad_()
    out = F.scaled_dot_product_attention(q, k, v, attn_mask=m)
    g = _t((1, L, E), dtype)
    out.backward(g)
    assert m.grad.dtype is m.dtype
    c = [t.detach().cpu().double() for t in (q, k, v, g)]
    m64 = m.detach().cpu().double().requires_grad_()
    F.scaled_dot_product_attention(c[0], c[1], c[2], attn_mask=m64).backward(c[3])
    got, ref = m.grad.cpu().double().numpy(), m64.grad.numpy()
    assert np.abs(got - ref).max() / np.abs(ref).max() < TOL[dtype]
