"""layer_norm, rms_norm, group_norm and batch_norm on float16/bfloat16 cuda tensors run the `_f16` / `_bf16`
kernels of normalization.ptx on the 16-bit storage: x, y, the gradients, weight and bias stay 16-bit, the
statistics (mean, rstd, invstd, batch norm's per-channel sums) are float32, and no float32 copy of an operand is
made (no cast kernel widens one). Each backend result equals, bit for bit, the widened one (the float32 kernel on
the exactly widened operands, each result rounded once): the kernels run the float32 math in the same order.
The public functions are also checked against float64 references."""
import numpy as np
import pytest
import rawdev
import rawdev.nn.functional as F
from rawdev.ops.dispatch import cuda_backend
from rawdev.ops.normalization import cuda as ncuda

from _refs import rng
from test_native_half_elementwise import DTYPES, _same

# float32 results a backward reads, which both paths keep unrounded
STATS = {"row_norm": (1, 2), "group_norm_fwd": (1, 2), "bn_stats": (0, 1)}


def _t(shape, dtype, scale=1.0, offset=0.0, device="cuda"):
    """Random values rounded to dtype (on the host, then moved; float32 keeps them)."""
    vals = (rng().standard_normal(shape) * scale + offset).astype(np.float32)
    t = rawdev.tensor(vals, device=device)
    return t.to(getattr(rawdev, dtype)) if dtype != "float32" else t


def _traced(fn):
    with rawdev.trace() as t:
        out = fn()
        rawdev.cuda.synchronize()
    return out, str(t)


def _native(name, *args):
    """cuda_backend.<name>(*args) with the checks that it launched a 16-bit kernel of normalization.ptx and
    widened nothing (no cast of a 16-bit operand to float32)."""
    out, text = _traced(lambda: getattr(cuda_backend, name)(*args))
    assert "cast_bf16_f32" not in text and "cast_f16_f32" not in text, text
    assert "_bf16" in text or "_f16" in text, text
    return out


def _widened(name, *args, keep=()):
    """What opmath's widening gives: the float32 kernel on float32 copies, results (but the statistics and those at
    the `keep` positions) rounded back to the operands' 16-bit dtype."""
    low = next(a.dtype for a in args if isinstance(a, rawdev.Tensor) and a.dtype is not rawdev.float32)
    wide = [a.float() if isinstance(a, rawdev.Tensor) else a for a in args]
    out = getattr(ncuda, name)(*wide)
    keep = STATS.get(name, ()) + keep
    return tuple(o if (i in keep or o is None) else o.to(low) for i, o in enumerate(out))


def _check_same(name, native, widened):
    assert len(native) == len(widened)
    for i, (a, b) in enumerate(zip(native, widened)):
        if a is None:
            assert b is None
            continue
        _same(a, b, f"{name} result {i}")


# ------------------------------------------------------------------ backend: bit for bit against widened
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("rows,D", [(9, 77), (3, 300), (4, 1), (300, 33)], ids=["odd", "long", "one", "chunks"])
@pytest.mark.parametrize("rms", [False, True], ids=["layer", "rms"])
@pytest.mark.parametrize("affine", [True, False], ids=["affine", "plain"])
def test_row_norm_equals_widened_bit_for_bit(driver, dtype, rows, D, rms, affine):
    x = _t((rows, D), dtype, 2.0, 3.0)
    w = _t((D,), dtype) if affine else None
    b = _t((D,), dtype) if affine and not rms else None
    y, mean, rstd = _native("row_norm", x, w, b, 1e-5, rms)
    assert y.dtype is x.dtype and mean.dtype is rawdev.float32 and rstd.dtype is rawdev.float32
    _check_same("row_norm", (y, mean, rstd), _widened("row_norm", x, w, b, 1e-5, rms))
    g = _t((rows, D), dtype)
    need = (True, affine, affine and not rms)
    dx, dw, db = out = _native("row_norm_bwd", g, x, mean, rstd, w, rms, *need)
    # the weight's and bias's gradients: float32 column sums, unrounded (the op rounds them to the parameter's dtype)
    assert dx.dtype is x.dtype and all(o is None or o.dtype is rawdev.float32 for o in (dw, db))
    assert (dw is not None, db is not None) == need[1:]
    _check_same("row_norm_bwd", out, _widened("row_norm_bwd", g, x, mean, rstd, w, rms, *need, keep=(1, 2)))


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("N,C,S,G", [(2, 6, 35, 3), (2, 4, 300, 2), (3, 10, 3, 5), (2, 5, 1, 5)],
                         ids=["odd", "long", "c10g5", "s1"])
def test_group_norm_equals_widened_bit_for_bit(driver, dtype, N, C, S, G):
    x = _t((N, C, S), dtype, 1.5, 1.0)
    w, b = _t((C,), dtype), _t((C,), dtype)
    y, mean, rstd = _native("group_norm_fwd", x, w, b, G, 1e-5)
    assert y.dtype is x.dtype and mean.dtype is rawdev.float32
    _check_same("group_norm_fwd", (y, mean, rstd), _widened("group_norm_fwd", x, w, b, G, 1e-5))
    g = _t((N, C, S), dtype)
    for wt in (w, None):
        out = _native("group_norm_bwd", g, x, mean, rstd, wt, G, True, wt is not None, True)
        assert all(o is None or o.dtype is x.dtype for o in out)
        _check_same("group_norm_bwd", out,
                    _widened("group_norm_bwd", g, x, mean, rstd, wt, G, True, wt is not None, True))


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("N,C,S", [(4, 3, 15), (7, 5, 1), (2, 3, 300)], ids=["odd", "s1", "long"])
@pytest.mark.parametrize("training", [True, False], ids=["train", "eval"])
def test_batch_norm_equals_widened_bit_for_bit(driver, dtype, N, C, S, training):
    x = _t((N, C, S), dtype, 1.5, 2.0)
    w, b = _t((C,), dtype), _t((C,), dtype)
    mean, var = _native("bn_stats", x)
    assert mean.dtype is rawdev.float32 and var.dtype is rawdev.float32
    _check_same("bn_stats", (mean, var), _widened("bn_stats", x))
    invstd = (var + 1e-5).rsqrt()
    y = _native("bn_apply", x, mean, invstd, w, b)
    assert y.dtype is x.dtype
    _same(y, ncuda.bn_apply(x.float(), mean, invstd, w.float(), b.float()).to(x.dtype), "bn_apply")
    g = _t((N, C, S), dtype)
    for wt in (w, None):
        out = _native("bn_bwd", g, x, mean, invstd, wt, training)
        assert all(o.dtype is x.dtype for o in out)
        _check_same("bn_bwd", out, _widened("bn_bwd", g, x, mean, invstd, wt, training))


# ------------------------------------------------------------------ public functions: float64 references
def _f64(t):
    return t.detach().float().cpu().numpy().astype(np.float64)


def _close(got, ref, dtype, what):
    """Normwise: the largest error within a few of the dtype's epsilons of the largest reference value (one
    rounding of each result, and of the products a weight's gradient sums)."""
    tol = 4 * float(rawdev.finfo(getattr(rawdev, dtype)).eps)
    err = np.abs(_f64(got) - ref).max()
    assert err <= tol * max(np.abs(ref).max(), 1e-30), f"{what}: error {err:.3g}, scale {np.abs(ref).max():.3g}"


def _grads(f, x, params, g, casts=0):
    """f(x, *params) forward, backward with g: (y, dx, [dparam...]); opmath must widen no operand, and at most
    `casts` 16-bit tensors are cast to float32 (batch_norm's 16-bit running statistics, read widened)."""
    x = x.detach().requires_grad_()
    params = [p.detach().requires_grad_() for p in params]

    def run():
        y = f(x, *params)
        y.backward(g)
        return y
    y, text = _traced(run)
    assert "float32 operand" not in text, text
    assert text.count("cast_bf16_f32") + text.count("cast_f16_f32") <= casts, text
    return y, x.grad, [p.grad for p in params]


def _ref_norm(xv, axes, eps, w=None, b=None, rms=False):
    """(y, xhat, rstd) of float64 xv normalized over axes; w, b broadcast already."""
    mu = 0.0 if rms else xv.mean(axis=axes, keepdims=True)
    xc = xv - mu
    rstd = 1.0 / np.sqrt((xc * xc).mean(axis=axes, keepdims=True) + eps)
    xhat = xc * rstd
    y = xhat * (w if w is not None else 1.0) + (b if b is not None else 0.0)
    return y, xhat, rstd


def _ref_dx(gv, xhat, rstd, axes, w=None, rms=False):
    gw = gv * (w if w is not None else 1.0)
    proj = xhat * (gw * xhat).mean(axis=axes, keepdims=True)
    return rstd * (gw - proj if rms else gw - gw.mean(axis=axes, keepdims=True) - proj)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", [(9, 77), (2, 3, 300)], ids=["odd", "long"])
@pytest.mark.parametrize("rms", [False, True], ids=["layer_norm", "rms_norm"])
def test_row_norms_match_float64(driver, dtype, shape, rms):
    D = shape[-1]
    x, w, b, g = _t(shape, dtype, 2.0, 1.0), _t((D,), dtype), _t((D,), dtype), _t(shape, dtype)
    if rms:
        y, dx, (dw,) = _grads(lambda x, w: F.rms_norm(x, (D,), w, 1e-5), x, [w], g)
        db = None
    else:
        y, dx, (dw, db) = _grads(lambda x, w, b: F.layer_norm(x, (D,), w, b), x, [w, b], g)
    assert y.dtype is x.dtype and dx.dtype is x.dtype and dw.dtype is x.dtype
    xv, wv, bv, gv = _f64(x), _f64(w), _f64(b), _f64(g)
    ry, xhat, rstd = _ref_norm(xv, -1, 1e-5, wv, None if rms else bv, rms)
    _close(y, ry, dtype, "y")
    _close(dx, _ref_dx(gv, xhat, rstd, -1, wv, rms), dtype, "dx")
    _close(dw, (gv * xhat).reshape(-1, D).sum(0), dtype, "dw")
    if db is not None:
        _close(db, gv.reshape(-1, D).sum(0), dtype, "db")


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape,G", [((2, 6, 5, 7), 3), ((3, 10, 3), 5), ((1, 4, 300), 2)],
                         ids=["odd", "c10g5", "long"])
def test_group_norm_matches_float64(driver, dtype, shape, G):
    N, C = shape[:2]
    x, w, b, g = _t(shape, dtype, 1.5, 1.0), _t((C,), dtype), _t((C,), dtype), _t(shape, dtype)
    y, dx, (dw, db) = _grads(lambda x, w, b: F.group_norm(x, G, w, b), x, [w, b], g)
    assert y.dtype is x.dtype and dx.dtype is x.dtype and dw.dtype is x.dtype
    xv = _f64(x).reshape(N, G, -1)
    gv = _f64(g).reshape(N, C, -1)
    wv = _f64(w).reshape(1, C, 1)
    ry, xhat, rstd = _ref_norm(xv, 2, 1e-5)
    xhat = xhat.reshape(N, C, -1)
    _close(y, (xhat * wv + _f64(b).reshape(1, C, 1)).reshape(shape), dtype, "y")
    dxr = _ref_dx((gv * wv).reshape(N, G, -1), xhat.reshape(N, G, -1), rstd, 2)
    _close(dx, dxr.reshape(shape), dtype, "dx")
    _close(dw, (gv * xhat).sum((0, 2)), dtype, "dw")
    _close(db, gv.sum((0, 2)), dtype, "db")


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", [(4, 3, 5, 3), (7, 5), (2, 3, 300)], ids=["odd", "2d", "long"])
@pytest.mark.parametrize("training", [True, False], ids=["train", "eval"])
def test_batch_norm_matches_float64(driver, dtype, shape, training):
    C = shape[1]
    low = getattr(rawdev, dtype)
    x, w, b, g = _t(shape, dtype, 1.5, 2.0), _t((C,), dtype), _t((C,), dtype), _t(shape, dtype)
    # running statistics of the input's dtype (a module moved with .to(dtype)); they are read widened
    rm, rv = _t((C,), dtype, 0.5, 2.0), _t((C,), dtype, 0.2, 1.0).abs()
    rm0, rv0 = _f64(rm), _f64(rv)
    y, dx, (dw, db) = _grads(lambda x, w, b: F.batch_norm(x, rm, rv, w, b, training=training, momentum=0.25),
                             x, [w, b], g, casts=0 if training else 2)
    assert y.dtype is low and dx.dtype is low and dw.dtype is low and rm.dtype is low
    N = shape[0]
    xv, gv = _f64(x).reshape(N, C, -1), _f64(g).reshape(N, C, -1)
    wv, bv = _f64(w).reshape(1, C, 1), _f64(b).reshape(1, C, 1)
    if training:
        ry, xhat, rstd = _ref_norm(xv, (0, 2), 1e-5, wv, bv)
        dxr = _ref_dx(gv, xhat, rstd, (0, 2), wv)
        n = xv.size // C
        _close(rm, 0.75 * rm0 + 0.25 * xv.mean((0, 2)), dtype, "running_mean")
        _close(rv, 0.75 * rv0 + 0.25 * xv.var((0, 2)) * n / (n - 1), dtype, "running_var")
    else:
        rstd = 1.0 / np.sqrt(rv0.reshape(1, C, 1) + 1e-5)
        xhat = (xv - rm0.reshape(1, C, 1)) * rstd
        ry, dxr = xhat * wv + bv, gv * wv * rstd
    _close(y, ry.reshape(shape), dtype, "y")
    _close(dx, dxr.reshape(shape), dtype, "dx")
    _close(dw, (gv * xhat).sum((0, 2)), dtype, "dw")
    _close(db, gv.sum((0, 2)), dtype, "db")


# ------------------------------------------------------------------ layouts, mixed dtypes, memory
@pytest.mark.parametrize("dtype", DTYPES)
def test_non_contiguous_inputs_give_the_contiguous_results(driver, dtype):
    """A transposed or sliced 16-bit input is made contiguous by a 2-byte copy, never a float32 one."""
    base = _t((12, 9, 6), dtype, 1.5, 1.0)
    fns = (lambda x: F.layer_norm(x, (12,)),
           lambda x: F.rms_norm(x, (12,)),
           lambda x: F.group_norm(x, 5),
           lambda x: F.batch_norm(x, None, None, training=True))
    view = base.transpose(0, 2)[:, ::2]              # [6, 5, 12], strided
    dense = view.contiguous()
    for f in fns:
        got, text = _traced(lambda f=f: f(view))
        assert "cast_bf16_f32" not in text and "cast_f16_f32" not in text, text
        _same(got, f(dense), "non-contiguous")


@pytest.mark.parametrize("dtype", DTYPES)
def test_no_float32_copy_of_the_input(driver, dtype):
    """The step's peak holds the 16-bit tensors and float32 statistics, never a float32 copy of x: a widened
    layer_norm forward alone would hold x's float32 copy and its float32 output (8 bytes per element)."""
    dev = rawdev.cuda.current_device()
    x = _t((64, 256), dtype)
    w, b = _t((256,), dtype), _t((256,), dtype)
    rawdev.cuda.synchronize()
    base = rawdev.cuda.memory_allocated(dev)
    rawdev.cuda.reset_peak_memory_stats(dev)
    y = F.layer_norm(x, (256,), w, b)
    rawdev.cuda.synchronize()
    peak = rawdev.cuda.max_memory_allocated(dev) - base
    # y (2 bytes per element) and mean/rstd (float32 per row), each rounded up to the allocator's granule
    assert peak < x.numel() * 4, peak
    assert y.dtype is x.dtype


@pytest.mark.parametrize("dtype", DTYPES)
def test_float32_weight_of_a_half_input_runs_natively_backend(driver, dtype):
    """PyTorch's mixed case (16-bit input, float32 weight and bias: a float32 module fed a 16-bit activation, as
    batch_norm under autocast): the `_f32w` kernels read both storages. x-like results equal the widened ones bit
    for bit; the weight's and bias's gradients are the float32 kernel's float32 sums, unrounded."""
    f32w = "_bf16_f32w" if dtype == "bfloat16" else "_f16_f32w"
    x, g = _t((9, 77), dtype, 2.0, 1.0), _t((9, 77), dtype)
    w, b = _t((77,), "float32"), _t((77,), "float32")
    y, mean, rstd = _native("row_norm", x, w, b, 1e-5, False)
    _check_same("row_norm", (y, mean, rstd), _widened("row_norm", x, w, b, 1e-5, False))
    _check_same("row_norm_bwd", _native("row_norm_bwd", g, x, mean, rstd, w, False, True, True, True),
                _widened("row_norm_bwd", g, x, mean, rstd, w, False, True, True, True, keep=(1, 2)))
    x3, g3 = _t((2, 6, 35), dtype, 1.5, 1.0), _t((2, 6, 35), dtype)
    w6, b6 = _t((6,), "float32"), _t((6,), "float32")
    (y, mean, rstd), text = _traced(lambda: cuda_backend.group_norm_fwd(x3, w6, b6, 3, 1e-5))
    assert "gn_fwd" + f32w in text and "cast_" not in text, text
    _check_same("group_norm_fwd", (y, mean, rstd), _widened("group_norm_fwd", x3, w6, b6, 3, 1e-5))
    out = _native("group_norm_bwd", g3, x3, mean, rstd, w6, 3, True, True, True)
    assert out[1].dtype is rawdev.float32 and out[2].dtype is rawdev.float32
    _check_same("group_norm_bwd", out, _widened("group_norm_bwd", g3, x3, mean, rstd, w6, 3, True, True, True,
                                                keep=(1, 2)))
    mean, var = _native("bn_stats", x3)
    invstd = (var + 1e-5).rsqrt()
    y, text = _traced(lambda: cuda_backend.bn_apply(x3, mean, invstd, w6, b6))
    assert "bn_apply" + f32w in text and "cast_" not in text, text
    _same(y, ncuda.bn_apply(x3.float(), mean, invstd, w6, b6).to(x3.dtype), "bn_apply")
    out = _native("bn_bwd", g3, x3, mean, invstd, w6, True)
    assert out[0].dtype is x3.dtype and out[1].dtype is rawdev.float32
    _check_same("bn_bwd", out, _widened("bn_bwd", g3, x3, mean, invstd, w6, True, keep=(1, 2)))


@pytest.mark.parametrize("dtype", DTYPES)
def test_float32_weight_of_a_half_input_matches_float64(driver, dtype):
    """The mixed case through the public functions: y and dx in the input's dtype, the parameters' gradients
    float32, no cast of the input (float32 running statistics are read as they are)."""
    low = getattr(rawdev, dtype)
    x, g = _t((4, 6, 15), dtype, 1.5, 1.0), _t((4, 6, 15), dtype)
    w, b = _t((6,), "float32"), _t((6,), "float32")
    rm, rv = rawdev.zeros(6, device="cuda"), rawdev.ones(6, device="cuda")
    xv, gv, wv, bv = _f64(x), _f64(g), _f64(w).reshape(1, 6, 1), _f64(b).reshape(1, 6, 1)
    y, dx, (dw, db) = _grads(lambda x, w, b: F.batch_norm(x, rm, rv, w, b, training=True), x, [w, b], g)
    assert y.dtype is low and dx.dtype is low and dw.dtype is rawdev.float32 and db.dtype is rawdev.float32
    ry, xhat, rstd = _ref_norm(xv, (0, 2), 1e-5, wv, bv)
    _close(y, ry, dtype, "batch_norm y")
    _close(dx, _ref_dx(gv, xhat, rstd, (0, 2), wv), dtype, "batch_norm dx")
    # float32 sums of exact products of 16-bit values: float32's precision, not the input's
    np.testing.assert_allclose(_f64(dw), (gv * xhat).sum((0, 2)), rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(_f64(db), gv.sum((0, 2)), rtol=1e-5, atol=1e-5)
    y, dx, (dw, db) = _grads(lambda x, w, b: F.group_norm(x, 3, w, b), x, [w, b], g)
    assert y.dtype is low and dw.dtype is rawdev.float32
    ry, xhat, rstd = _ref_norm(xv.reshape(4, 3, -1), 2, 1e-5)
    _close(y, ry.reshape(4, 6, 15) * wv + bv, dtype, "group_norm y")
    np.testing.assert_allclose(_f64(dw), (gv * xhat.reshape(4, 6, 15)).sum((0, 2)), rtol=1e-4, atol=1e-4)
    x2, g2 = x.reshape(-1, 15), g.reshape(-1, 15)
    w15, b15 = _t((15,), "float32"), _t((15,), "float32")
    y, dx, (dw, db) = _grads(lambda x, w, b: F.layer_norm(x, (15,), w, b), x2, [w15, b15], g2)
    assert y.dtype is low and dx.dtype is low and dw.dtype is rawdev.float32 and db.dtype is rawdev.float32
    ry, xhat, rstd = _ref_norm(_f64(x2), -1, 1e-5, _f64(w15), _f64(b15))
    _close(y, ry, dtype, "layer_norm y")
    _close(dx, _ref_dx(_f64(g2), xhat, rstd, -1, _f64(w15)), dtype, "layer_norm dx")
    # the column sum of dy*xhat rounded to the input's dtype per element, summed in float32
    _close(dw, (_f64(g2) * xhat).sum(0), dtype, "layer_norm dw")
    np.testing.assert_allclose(_f64(db), _f64(g2).sum(0), rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("dtype", DTYPES)
def test_cpu_half_norms_keep_float32_batch_statistics(dtype):
    """The cpu path takes the float32 statistics batch_norm now keeps for 16-bit inputs."""
    low = getattr(rawdev, dtype)
    x = _t((6, 3, 4), dtype, 1.0, 2.0, device="cpu")
    rm, rv = rawdev.zeros(3), rawdev.ones(3)
    y = F.batch_norm(x, rm, rv, training=True)
    assert y.dtype is low
    ry, _, _ = _ref_norm(_f64(x), (0, 2), 1e-5)
    _close(y, ry, dtype, "cpu batch_norm")
