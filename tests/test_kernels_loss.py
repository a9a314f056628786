"""loss.ptx: softmax / log-softmax fwd+bwd, fused cross-entropy (int64 targets, ignore_index,
none/sum/mean) fwd/reduce/bwd, MSE fwd/bwd. Includes logits of +-1e4 and C = 1."""
import numpy as np
import pytest

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


@pytest.mark.parametrize("rows,C", SHAPES)
@pytest.mark.parametrize("reduction", [0, 1, 2])
@pytest.mark.parametrize("big", [False, True])
def test_cross_entropy(dev, rows, C, reduction, big):
    g = Gpu(dev)
    x = logits(rows, C, big)
    t = rng.integers(0, C, rows).astype(np.int64)
    if rows > 2:
        t[1] = IGNORE
    valid = t != IGNORE
    X = x.astype(np.float64)
    L = lse(x)
    per_row = np.where(valid, L - X[np.arange(rows), np.where(valid, t, 0)], 0.0)
    bx, bt = g.put(x), g.put(t)
    loss, blse = g.poisoned(rows), g.poisoned(rows)
    g.run("cross_entropy_fwd", cdiv(rows, 8), 256, [loss, blse, bx, bt, rows, C, IGNORE])
    got_rows = g.get(loss, rows)
    assert np.isfinite(got_rows).all()
    assert relerr(got_rows, per_row) < 1e-5 or np.abs(got_rows - per_row).max() < 1e-3 * max(1, np.abs(X).max()) * 1e-4
    assert relerr(g.get(blse, rows), L) < 1e-6
    count = g.poisoned(1)
    if reduction:
        out = g.poisoned(1)
        g.run("cross_entropy_reduce", 1, 1024, [out, count, loss, bt, rows, IGNORE, reduction])
        want = per_row.sum() / (valid.sum() if reduction == 2 else 1)
        got = g.get(out, 1)[0]
        assert abs(got - want) <= 1e-5 * max(abs(want), np.abs(per_row).sum() / rows, 1e-3)
        assert g.get(count, 1)[0] == valid.sum()
        grad = np.array([rng.uniform(0.5, 2)], np.float32)
        gscale = np.full(rows, grad[0] / (valid.sum() if reduction == 2 else 1))
    else:
        grad = rng.standard_normal(rows).astype(np.float32)
        gscale = grad.astype(np.float64)
    dx = g.poisoned((rows, C))
    g.run("cross_entropy_bwd", cdiv(rows, 8), 256, [dx, bx, blse, bt, g.put(grad), count, rows, C, IGNORE, reduction])
    onehot = np.zeros((rows, C))
    onehot[np.arange(rows)[valid], t[valid]] = 1
    want = (np.exp(X - L[:, None]) - onehot) * (gscale * valid)[:, None]
    got = g.get(dx, (rows, C))
    assert np.isfinite(got).all()
    assert np.abs(got - want).max() <= 1e-5 * max(np.abs(want).max(), 1e-6) or relerr(got, want) < 1e-5
    assert (got[~valid] == 0).all()


@pytest.mark.parametrize("n", [1, 333, 5000])
@pytest.mark.parametrize("reduction", [0, 1, 2])
def test_mse(dev, n, reduction):
    g = Gpu(dev)
    x, y = rng.standard_normal(n).astype(np.float32), rng.standard_normal(n).astype(np.float32)
    D = x.astype(np.float64) - y
    bx, by = g.put(x), g.put(y)
    if reduction == 0:
        out = g.poisoned(n)
        g.run("mse_fwd", min(cdiv(n, 256), 5), 256, [out, bx, by, n, 0])
        assert relerr(g.get(out, n), D * D) < 1e-5
        grad = rng.standard_normal(n).astype(np.float32)
        gs = grad.astype(np.float64)
    else:
        out = g.poisoned(1)
        g.run("mse_fwd", 1, 1024, [out, bx, by, n, reduction])
        want = (D * D).sum() / (n if reduction == 2 else 1)
        assert abs(g.get(out, 1)[0] - want) <= 1e-5 * want
        grad = np.array([1.7], np.float32)
        gs = np.float64(grad[0]) / (n if reduction == 2 else 1)
    dx = g.poisoned(n)
    g.run("mse_bwd", min(cdiv(n, 256), 5), 256, [dx, bx, by, g.put(grad), n, reduction])
    assert relerr(g.get(dx, n), 2 * D * gs) < 1e-5
