"""reduce.ptx: column sums (bias gradient), row sums, two-pass sum/mean over all elements."""
import numpy as np
import pytest

from test_kernels_util import Gpu, cdiv, relerr

rng = np.random.default_rng(5)
SHAPES = [(1, 1), (1, 37), (37, 1), (45, 70), (301, 33)]


@pytest.mark.parametrize("name", ["bias_grad", "sum_axis0"])
@pytest.mark.parametrize("rows,cols", SHAPES)
@pytest.mark.parametrize("beta", [0.0, 1.0])
def test_column_sums(dev, name, rows, cols, beta):
    g = Gpu(dev)
    x = rng.standard_normal((rows, cols)).astype(np.float32)
    old = rng.standard_normal(cols).astype(np.float32)
    out = g.put(old) if beta else g.poisoned(cols)
    g.run(name, cdiv(cols, 32), (32, 8), [out, g.put(x), rows, cols, beta])
    ref = x.astype(np.float64).sum(0) + (beta * old if beta else 0)
    assert relerr(g.get(out, cols), ref) < 1e-4


@pytest.mark.parametrize("rows,cols", SHAPES)
@pytest.mark.parametrize("beta", [0.0, 0.5])
def test_row_sums(dev, rows, cols, beta):
    g = Gpu(dev)
    x = rng.standard_normal((rows, cols)).astype(np.float32)
    old = rng.standard_normal(rows).astype(np.float32)
    out = g.put(old) if beta else g.poisoned(rows)
    g.run("sum_axis1", cdiv(rows, 8), 256, [out, g.put(x), rows, cols, beta])
    ref = x.astype(np.float64).sum(1) + (beta * old if beta else 0)
    assert relerr(g.get(out, rows), ref) < 1e-4


@pytest.mark.parametrize("n", [1, 255, 1000, 40001])
@pytest.mark.parametrize("mean", [False, True])
def test_sum_and_mean_all(dev, n, mean):
    g = Gpu(dev)
    x = (rng.standard_normal(n) + 0.5).astype(np.float32)
    G = min(64, cdiv(n, 256))
    parts, out = g.poisoned(G), g.poisoned(1)
    g.run("sum_partial", G, 256, [parts, g.put(x), n])
    g.run("sum_final", 1, 1024, [out, parts, G, 1.0 / n if mean else 1.0])
    ref = x.astype(np.float64).sum() / (n if mean else 1)
    got = g.get(out, 1)[0]
    assert abs(got - ref) <= 1e-4 * max(abs(ref), np.abs(x).sum() / (n if mean else 1) * 1e-2)
    # deterministic: the same inputs give the same bits
    g.run("sum_partial", G, 256, [parts, g.put(x), n])
    g.run("sum_final", 1, 1024, [out, parts, G, 1.0 / n if mean else 1.0])
    assert g.get(out, 1)[0] == got
