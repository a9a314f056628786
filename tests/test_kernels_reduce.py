"""reduce.ptx: column sums, row sums, two-pass sum/mean over all elements."""
import numpy as np
import pytest

from test_kernels_util import Gpu, cdiv, relerr

rng = np.random.default_rng(5)
SHAPES = [(1, 1), (1, 37), (37, 1), (45, 70), (301, 33)]


@pytest.mark.parametrize("rows,cols", SHAPES)
@pytest.mark.parametrize("beta", [0.0, 1.0])
def test_column_sums(dev, rows, cols, beta):
    g = Gpu(dev)
    x = rng.standard_normal((rows, cols)).astype(np.float32)
    old = rng.standard_normal(cols).astype(np.float32)
    out = g.put(old) if beta else g.poisoned(cols)
    g.run("sum_axis0", cdiv(cols, 32), (32, 8), [out, g.put(x), rows, cols, beta])
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


# ---------------------------------------------------------------- max_dim / min_dim (values + first index)
def arg_ref(x, is_max):
    """float64 reference over axis 1 of [outer, red, inner]: PyTorch's semantics (NaN wins, first index on ties)."""
    nan = np.isnan(x)
    idx = np.where(nan.any(1), nan.argmax(1), (x.argmax(1) if is_max else x.argmin(1)))
    return np.take_along_axis(x, idx[:, None, :], 1)[:, 0, :], idx


def arg_input(outer, red, inner, nan):
    x = rng.standard_normal((outer, red, inner)).astype(np.float32)
    x = np.round(x * 4) / 4                      # many exact ties, so "first index" is exercised
    if nan and red > 2:
        x[0, red - 1, 0] = x[0, 1, 0] = np.nan   # the first NaN wins
    return x


ARG_SHAPES = [(1, 1, 1), (7, 1, 3), (1, 37, 1), (45, 70, 1), (3, 333, 5), (2, 5000, 1), (1, 4099, 2)]


@pytest.mark.parametrize("name", ["max_dim", "min_dim"])
@pytest.mark.parametrize("outer,red,inner", ARG_SHAPES)
@pytest.mark.parametrize("block", [(1, 256), (32, 8), (256, 1), (1024, 1)])
def test_max_min_dim(dev, name, outer, red, inner, block):
    g = Gpu(dev)
    x = arg_input(outer, red, inner, nan=(outer * red * inner) % 2 == 1 or red == 333)
    n = outer * inner
    vals, idx = g.poisoned(n), g.poisoned(n, np.int64)
    grid = cdiv(n, block[1])
    g.run(name, grid, block, [vals, idx, g.put(x), outer, red, inner])
    want_v, want_i = arg_ref(x.astype(np.float64), name == "max_dim")
    assert np.array_equal(g.get(idx, n, np.int64), want_i.reshape(-1))
    assert np.array_equal(g.get(vals, n), want_v.reshape(-1).astype(np.float32), equal_nan=True)
    idx2 = g.poisoned(n, np.int64)                       # values pointer null: indices only (argmax)
    g.run(name, grid, block, [0, idx2, g.put(x), outer, red, inner])
    assert np.array_equal(g.get(idx2, n, np.int64), want_i.reshape(-1))


@pytest.mark.parametrize("outer,red,inner", [(1, 1, 1), (7, 5, 3), (45, 70, 1), (3, 333, 5)])
def test_max_dim_bwd(dev, outer, red, inner):
    g = Gpu(dev)
    n = outer * inner
    idx = rng.integers(0, red, (outer, inner)).astype(np.int64)
    dy = rng.standard_normal((outer, inner)).astype(np.float32)
    dx = g.put(np.zeros(outer * red * inner, np.float32))
    g.run("max_dim_bwd", min(cdiv(n, 256), 3), 256, [dx, g.put(dy), g.put(idx), outer, red, inner])
    want = np.zeros((outer, red, inner))
    np.put_along_axis(want, idx[:, None, :], dy[:, None, :].astype(np.float64), 1)
    assert np.array_equal(g.get(dx, outer * red * inner), want.reshape(-1).astype(np.float32))


# ---------------------------------------------------------------- reduce_i64 (int64 sum / max / min with first index)
I64_SHAPES = [(1, 1, 1), (512, 4, 1), (7, 31, 1), (5, 32, 1), (1, 2048, 1), (3, 333, 5), (6, 4, 9)]


@pytest.mark.parametrize("outer,red,inner", I64_SHAPES)
@pytest.mark.parametrize("op", ["sum", "max", "min"])
def test_reduce_i64_both_shapes(dev, outer, red, inner, op):
    """Rows of 32 or more with inner == 1 take the block-per-output tree, the rest a thread per output; both give
    numpy's exact values (the sum wrapping at 2**64) and the first index of the extreme."""
    g = Gpu(dev)
    x = rng.integers(-4, 5, (outer, red, inner)).astype(np.int64)       # small range: many ties
    x[0, 0, 0] = np.iinfo(np.int64).max                                   # the sum wraps where it meets another
    n = outer * inner
    vals, idx = g.poisoned(n, np.int64), g.poisoned(n, np.int64)
    grid = min(n, 65535) if inner == 1 and red >= 32 else cdiv(n, 256)
    g.run("reduce_i64", grid, 256, [vals, idx if op != "sum" else 0, g.put(x), outer, red, inner,
                                    {"sum": 0, "max": 1, "min": 2}[op]])
    if op == "sum":
        with np.errstate(over="ignore"):
            want = x.sum(1, dtype=np.int64)
    else:
        want_i = x.argmax(1) if op == "max" else x.argmin(1)               # numpy: the first extreme
        want = np.take_along_axis(x, want_i[:, None, :], 1)[:, 0, :]
        assert np.array_equal(g.get(idx, n, np.int64), want_i.reshape(-1))
    assert np.array_equal(g.get(vals, n, np.int64), want.reshape(-1))
