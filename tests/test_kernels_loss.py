"""loss.ptx: softmax / log-softmax fwd+bwd, fused cross-entropy with class weights and label smoothing
(int64 targets, ignore_index, none/sum/mean) fwd/reduce/bwd. Includes logits of +-1e4 and C = 1, and the
device-side assert on a target out of range."""
import numpy as np
import pytest
from rawdev.errors import DeviceAssertError

from test_kernels_util import Gpu, cdiv, relerr

rng = np.random.default_rng(11)
SHAPES = [(1, 1), (5, 1), (3, 37), (19, 10), (9, 70)]
IGNORE = -100


def logits(rows, C, big=False):
    x = rng.standard_normal((rows, C)) * 3
    if big:
        x = x * 1e4 / 3
        x[:, 0] = 1e4
        x[:, -1] = -1e4
    return x.astype(np.float32)


def lse(x):
    x = x.astype(np.float64)
    m = x.max(1, keepdims=True)
    return (m + np.log(np.exp(x - m).sum(1, keepdims=True)))[:, 0]


@pytest.mark.parametrize("rows,C", SHAPES)
@pytest.mark.parametrize("big", [False, True])
def test_softmax_and_log_softmax(dev, rows, C, big):
    g = Gpu(dev)
    x = logits(rows, C, big)
    X = x.astype(np.float64)
    ref_log = X - lse(x)[:, None]
    bx = g.put(x)
    y, ly = g.poisoned((rows, C)), g.poisoned((rows, C))
    g.run("softmax_fwd", cdiv(rows, 8), 256, [y, bx, rows, C])
    g.run("log_softmax_fwd", cdiv(rows, 8), 256, [ly, bx, rows, C])
    sm, lsm = g.get(y, (rows, C)), g.get(ly, (rows, C))
    assert np.isfinite(sm).all() and np.isfinite(lsm).all()
    assert relerr(sm, np.exp(ref_log)) < 1e-5
    assert relerr(lsm, ref_log) < 1e-5
    # backward, with the saved outputs
    dy = rng.standard_normal((rows, C)).astype(np.float32)
    S, L, DY = sm.astype(np.float64), lsm.astype(np.float64), dy.astype(np.float64)
    dx = g.poisoned((rows, C))
    g.run("softmax_bwd", cdiv(rows, 8), 256, [dx, g.put(dy), y, rows, C])
    want = S * (DY - (DY * S).sum(1, keepdims=True))
    assert relerr(g.get(dx, (rows, C)), want) < 1e-5 or np.abs(g.get(dx, (rows, C)) - want).max() < 1e-6
    g.run("log_softmax_bwd", cdiv(rows, 8), 256, [dx, g.put(dy), ly, rows, C])
    want = DY - np.exp(L) * DY.sum(1, keepdims=True)
    assert relerr(g.get(dx, (rows, C)), want) < 1e-5 or np.abs(g.get(dx, (rows, C)) - want).max() < 1e-6


# ---------------------------------------------------------------- class weights + label smoothing (cross_entropy_ws_*)
def ce_ws_ref(x, t, w, eps, ignore):
    """float64 reference from PyTorch's definition for class-index targets: per-row loss
    valid * ((1-eps) * w[t] * -lp[t] + eps/C * sum_c w[c] * -lp[c]), the weighted-mean denominator
    sum(valid * w[t]), and d(per-row loss)/d(logits)."""
    X = x.astype(np.float64)
    rows, C = X.shape
    lp = X - lse(x)[:, None]
    wc = np.ones(C) if w is None else w.astype(np.float64)
    valid = t != ignore
    ts = np.where(valid, t, 0)
    wt = wc[ts] * valid
    nll = -lp[np.arange(rows), ts]
    smooth = -(lp * wc).sum(1)
    per = valid * ((1 - eps) * wt * nll + eps / C * smooth)
    onehot = np.zeros((rows, C))
    onehot[np.arange(rows), ts] = 1
    p = np.exp(lp)
    dper = valid[:, None] * ((1 - eps) * wt[:, None] * (p - onehot) + eps / C * (wc.sum() * p - wc[None, :]))
    return per, wt.sum(), dper


def test_ce_ws_reference_gradient_is_the_derivative_of_its_loss():
    # the reference's gradient formula against central differences of its own loss (float64)
    x = rng.standard_normal((4, 6))
    t = np.array([0, IGNORE, 5, 2])
    w = rng.uniform(0.2, 3, 6)
    per, _, dper = ce_ws_ref(x, t, w, 0.3, IGNORE)
    h = 1e-6
    num = np.zeros_like(x)
    for i in np.ndindex(x.shape):
        xp, xm = x.copy(), x.copy()
        xp[i] += h
        xm[i] -= h
        num[i] = (ce_ws_ref(xp, t, w, 0.3, IGNORE)[0].sum() - ce_ws_ref(xm, t, w, 0.3, IGNORE)[0].sum()) / (2 * h)
    assert np.abs(num - dper).max() < 1e-7


def run_ce_ws(g, x, t, w, eps, ignore, reduction, grad=None):
    """(per-row loss, ls = logsumexp - row max, out, denom, dlogits) from the three kernels, every output
    poisoned first."""
    rows, C = x.shape
    bx, bt = g.put(x), g.put(t)
    bw = g.put(w) if w is not None else 0
    loss, blse = g.poisoned(rows), g.poisoned(rows)
    g.run("cross_entropy_ws_fwd", cdiv(rows, 8), 256, [loss, blse, bx, bt, bw, rows, C, ignore, eps])
    out = denom = None
    bden = g.poisoned(1)
    if reduction:
        bout = g.poisoned(1)
        g.run("cross_entropy_ws_reduce", 1, 1024, [bout, bden, loss, bt, bw, rows, C, ignore, reduction])
        out, denom = g.get(bout, 1)[0], g.get(bden, 1)[0]
    dx = g.poisoned((rows, C))
    g.run("cross_entropy_ws_bwd", cdiv(rows, 8), 256,
          [dx, bx, blse, bt, bw, g.put(grad), bden, rows, C, ignore, eps, reduction])
    return g.get(loss, rows), g.get(blse, rows), out, denom, g.get(dx, (rows, C))


WS_SHAPES = [(1, 1), (1, 7), (5, 1), (3, 37), (19, 10), (9, 70), (17, 33)]


@pytest.mark.parametrize("rows,C", WS_SHAPES)
@pytest.mark.parametrize("weighted", [False, True])
@pytest.mark.parametrize("eps", [0.0, 0.1, 1.0])
@pytest.mark.parametrize("big", [False, True])
def test_cross_entropy_ws(dev, rows, C, weighted, eps, big):
    g = Gpu(dev)
    x = logits(rows, C, big)
    t = rng.integers(0, C, rows).astype(np.int64)
    if rows > 2:
        t[1] = IGNORE
        t[-1] = IGNORE
    w = rng.uniform(0.1, 3.0, C).astype(np.float32) if weighted else None
    per, den, dper = ce_ws_ref(x, t, w, np.float64(np.float32(eps)), IGNORE)
    valid = t != IGNORE
    for reduction in (0, 1, 2):
        if reduction:
            grad = np.array([rng.uniform(0.5, 2)], np.float32)
            gscale = np.full(rows, grad[0] / (den if reduction == 2 else 1))
        else:
            grad = rng.standard_normal(rows).astype(np.float32)
            gscale = grad.astype(np.float64)
        got_rows, got_lse, out, denom, dx = run_ce_ws(g, x, t, w, eps, IGNORE, reduction, grad)
        assert np.isfinite(got_rows).all() and np.isfinite(dx).all()
        # each row's loss is a float32 difference of terms of the logits' size (lse - x[t]): its rounding error is
        # relative to the logits, not to the loss, which is near 0 when x[t] is far the largest
        scale = (np.abs(x).max(1).astype(np.float64) + np.log(C) + 1.0) * (w.max() if w is not None else 1.0)
        assert (np.abs(got_rows - per) <= 1e-5 * np.abs(per) + 1e-6 * scale).all(), (got_rows, per)
        assert (got_rows[~valid] == 0).all()
        ref_ls = lse(x) - x.max(1)   # in [0, log C]: compared absolutely
        assert np.abs(got_lse - ref_ls).max() <= 1e-6 * max(1.0, ref_ls.max())
        if reduction:
            assert abs(denom - den) <= 1e-6 * den
            want = per.sum() / (den if reduction == 2 else 1)
            assert abs(out - want) <= 1e-5 * abs(want) + 1e-6 * scale.sum() / (den if reduction == 2 else 1)
        # softmax - onehot: probabilities are exact to float32's absolute precision (a target's p near 1 gives a
        # gradient near 0 whose relative error is large)
        want = dper * gscale[:, None]
        wmax = w.max() if w is not None else 1.0
        assert np.abs(dx - want).max() <= 1e-5 * np.abs(want).max() + 1e-6 * np.abs(gscale).max() * wmax
        assert (dx[~valid] == 0).all()


def test_cross_entropy_ws_no_weight_no_smoothing_is_plain_cross_entropy(dev):
    # weight = 0 (null) and eps = 0 is plain cross-entropy, lse - x[t]; all-ones weights give the same bits
    g = Gpu(dev)
    rows, C = 13, 41
    x = logits(rows, C)
    t = rng.integers(0, C, rows).astype(np.int64)
    t[4] = IGNORE
    valid = t != IGNORE
    plain = np.where(valid, lse(x) - x.astype(np.float64)[np.arange(rows), np.where(valid, t, 0)], 0.0)
    grad = np.ones(1, np.float32)
    null = run_ce_ws(g, x, t, None, 0.0, IGNORE, 2, grad)
    ones = run_ce_ws(g, x, t, np.ones(C, np.float32), 0.0, IGNORE, 2, grad)
    got_rows, got_ls, out, denom, _ = null
    assert relerr(got_rows, plain) < 1e-5 and (got_rows[~valid] == 0).all()
    assert denom == rows - 1 and abs(out - plain.sum() / (rows - 1)) <= 1e-5 * abs(out)
    for a, b in zip(null, ones):
        assert np.array_equal(a, b)


@pytest.mark.parametrize("weighted", [False, True])
def test_cross_entropy_ws_ignore_index_inside_the_classes(dev, weighted):
    # ignore_index = 2 is a real class: rows targeting it drop out, the class still counts in the smoothing sum
    g = Gpu(dev)
    rows, C, ign = 11, 5, 2
    x = logits(rows, C)
    t = np.array([0, 2, 1, 4, 2, 3, 0, 1, 2, 4, 3], np.int64)
    w = rng.uniform(0.1, 3.0, C).astype(np.float32) if weighted else None
    per, den, dper = ce_ws_ref(x, t, w, np.float64(np.float32(0.25)), ign)
    grad = np.array([1.3], np.float32)
    got_rows, _, out, denom, dx = run_ce_ws(g, x, t, w, 0.25, ign, 2, grad)
    assert relerr(got_rows, per) < 1e-5 and (got_rows[t == ign] == 0).all()
    assert abs(denom - den) <= 1e-6 * den and abs(out - per.sum() / den) <= 1e-5 * abs(out)
    assert relerr(dx, dper * (1.3 / den)) < 1e-5


@pytest.mark.parametrize("weighted", [False, True])
def test_cross_entropy_ws_every_target_ignored(dev, weighted):
    # mean: 0/0 = NaN (PyTorch); sum: 0; gradients 0, not NaN
    g = Gpu(dev)
    rows, C = 3, 4
    x = logits(rows, C)
    t = np.full(rows, IGNORE, np.int64)
    w = rng.uniform(0.1, 3.0, C).astype(np.float32) if weighted else None
    for reduction, check in ((2, np.isnan), (1, lambda v: v == 0)):
        got_rows, _, out, denom, dx = run_ce_ws(g, x, t, w, 0.1, IGNORE, reduction, np.ones(1, np.float32))
        assert (got_rows == 0).all() and denom == 0 and check(out)
        assert (dx == 0).all()


@pytest.mark.parametrize("kernel", ["fwd", "bwd"])
@pytest.mark.parametrize("bad", [3, -1])
def test_cross_entropy_ws_target_out_of_range_is_a_device_side_assert(driver, dev, kernel, bad):
    # PyTorch's assert(t >= 0 && t < n_classes): CUDA_ERROR_ASSERT at the next synchronize, never a NaN
    if driver != "sim":
        pytest.skip("a device-side assert leaves a real context unusable for the rest of the process "
                    "(test_device_assert.py runs the GPU case in a subprocess)")
    g = Gpu(dev)
    rows, C = 2, 3
    x = logits(rows, C)
    bt = g.put(np.array([1, bad], np.int64))
    w = g.put(rng.uniform(0.1, 3, C).astype(np.float32))
    if kernel == "fwd":
        g.run("cross_entropy_ws_fwd", 1, 256, [g.poisoned(rows), g.poisoned(rows), g.put(x), bt, w, rows, C,
                                               IGNORE, 0.1])
        failing = "thread: [32,0,0]"                               # lane 0 of row 1's warp
    else:
        g.run("cross_entropy_ws_bwd", 1, 256, [g.poisoned((rows, C)), g.put(x), g.put(lse(x) - x.max(1)), bt, w,
                                               g.put(np.ones(rows, np.float32)), g.poisoned(1), rows, C, IGNORE,
                                               0.1, 0])
        failing = "thread: [32,0,0] Assertion `t >= 0 && t < n_classes` failed. (31 more"   # every lane of the row
    with pytest.raises(DeviceAssertError) as e:
        dev.synchronize()
    msg = str(e.value)
    assert e.value.code == 710 and "device-side assert triggered" in msg
    assert f"cross_entropy_ws_{kernel}" in msg and "block: [0,0,0], " + failing in msg
    assert "Assertion `t >= 0 && t < n_classes` failed." in msg


@pytest.mark.parametrize("weighted", [False, True])
def test_cross_entropy_ws_near_ties_at_1e4(dev, weighted):
    # logits of +-1e4 a few units apart: p is far from 0/1, and a float32 logsumexp near 1e4 (ulp 1e-3)
    # would cost ~1e-3 relative error in the gradient; the kernels keep the row max apart
    g = Gpu(dev)
    base = np.array([1e4, 1e4 - 0.5, 1e4 - 3.25, -1e4, 9999.0, -9990.0, 1e4 - 7.0], np.float32)
    x = np.stack([base, -base[::-1], np.roll(base, 3), base - 2e4]).astype(np.float32)
    rows, C = x.shape
    t = np.array([1, 0, 6, 4], np.int64)
    w = rng.uniform(0.1, 3.0, C).astype(np.float32) if weighted else None
    per, den, dper = ce_ws_ref(x, t, w, np.float64(np.float32(0.15)), IGNORE)
    grad = rng.standard_normal(rows).astype(np.float32)
    got_rows, _, _, _, dx = run_ce_ws(g, x, t, w, 0.15, IGNORE, 0, grad)
    assert relerr(got_rows, per) < 1e-5
    assert relerr(dx, dper * grad.astype(np.float64)[:, None]) < 1e-5
