"""torch._dynamo in an eager runtime: explain() reports the graphs a capture would make and where it breaks (from a
recording of the function's ops), reset/allow_in_graph/disable are what they are without a compiler, and
utils.same compares results as PyTorch's accuracy checks do."""
import numpy as np
import pytest
import rawdev
from rawdev._dynamo.utils import same


def _bar(a, b):
    x = a / (rawdev.abs(a) + 1)
    if b.sum() < 0:
        b = b * -1
    return x * b


@pytest.mark.parametrize("sign", [1.0, -1.0])
def test_explain_counts_graphs_breaks_and_ops(sign):
    a, b = rawdev.randn(10), rawdev.ones(10) * sign
    out = rawdev._dynamo.explain(_bar)(a, b)
    assert out.graph_count == 2 and out.graph_break_count == 1
    assert len(out.break_reasons) == 1 and "Tensor.__bool__" in out.break_reasons[0].reason
    frame = out.break_reasons[0].user_stack[-1]
    assert frame.name == "_bar" and "if b.sum() < 0" in frame.line
    first, second = out.ops_per_graph
    assert len(first) == 5                                  # abs, add, truediv, sum, lt
    assert len(second) == (2 if sign < 0 else 1)            # (mul by -1,) mul
    assert out.op_count == len(first) + len(second)
    # the graphs run: the first gives the tensors the second takes
    g1, g2 = out.graphs
    handed = g1(a, b)
    want = _bar(a, b)
    got = g2(*handed) if len(second) == 1 else g2(*handed)
    np.testing.assert_allclose(np.asarray(got), np.asarray(want), rtol=1e-6)
    text = str(out)
    assert "Graph Count: 2" in text and "Graph Break Count: 1" in text and "Ops per Graph 2:" in text


def test_a_function_without_value_reads_is_one_graph():
    def f(x):
        return (x * 2).relu().sum(0)
    out = rawdev._dynamo.explain(f)(rawdev.randn(3, 4))
    assert out.graph_count == 1 and out.graph_break_count == 0 and out.op_count == 3


def test_the_eager_runtime_entry_points():
    def f(x):
        return x + 1
    rawdev._dynamo.reset()
    assert rawdev._dynamo.allow_in_graph(f) is f and rawdev._dynamo.disallow_in_graph(f) is f
    assert rawdev._dynamo.disable(f) is f and rawdev._dynamo.disable()(f) is f
    assert rawdev._dynamo.is_compiling() is False
    with pytest.raises(NotImplementedError, match="TorchDynamo"):
        rawdev._dynamo.optimize("inductor")


def test_same_compares_as_accuracy_checks_do():
    quiet = dict(log_error=lambda msg: None)
    t = rawdev.tensor([1.0, 2.0, 3.0])
    assert same(t, t + 1e-6)
    assert not same(t, t + 1e-2, **quiet)
    assert same([t, (t, {"a": 1})], [t.clone(), (t.clone(), {"a": 1})])
    assert not same([t], [t, t], **quiet)
    assert not same(t, t.double(), **quiet) and same(t, t.double(), exact_dtype=False)
    assert not same(rawdev.tensor([1, 2]), rawdev.tensor([1, 3]), **quiet)
    nan = rawdev.tensor([float("nan")])
    assert not same(nan, nan, **quiet) and same(nan, nan, equal_nan=True)
    assert same(t, t * 1.001, cos_similarity=True)
    assert same(1.0, 1.00001) and not same(1.0, 1.1)
