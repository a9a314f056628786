"""rawdev.fx Graph and Node editing: replacing an op through Graph edits, inserting_before/after, users kept
right by args setters and replace_all_uses_with, erase_node's refusal, lint, dead code elimination, copies,
Proxy-built graphs (GraphAppendingTracer), the printed forms (code, graph, plain print_tabular)."""
import copy
import operator

import numpy as np
import pytest
import rawdev
import rawdev.fx as fx

RNG = np.random.default_rng(11)


def randn(*shape):
    return rawdev.tensor(RNG.standard_normal(shape).astype(np.float32))


def add_three_ways(x, y):
    return x + y, rawdev.add(x, y), x.add(y)


def test_replace_every_add_by_mul_through_graph_edits():
    gm = fx.symbolic_trace(add_three_ways)
    for n in gm.graph.nodes:
        if n.target in (operator.add, rawdev.add, "add"):
            with gm.graph.inserting_after(n):
                new = gm.graph.call_function(operator.mul, n.args, n.kwargs)
                n.replace_all_uses_with(new)
            gm.graph.erase_node(n)
    gm.graph.lint()
    gm.recompile()
    assert [n.target for n in gm.graph.nodes if n.op == "call_function"] == [operator.mul] * 3
    assert [n.name for n in gm.graph.nodes if n.op == "call_function"] == ["mul", "mul_1", "mul_2"]
    x, y = randn(3), randn(3)
    for out in gm(x, y):
        np.testing.assert_array_equal(out.numpy(), (x * y).numpy())


def test_users_follow_args_and_kwargs_edits():
    g = fx.Graph()
    x, y = g.placeholder("x"), g.placeholder("y")
    a = g.call_function(rawdev.add, (x, y))
    b = g.call_method("sum", (a,), {"dim": 0})
    g.output(b)
    assert list(x.users) == [a] and list(a.users) == [b]
    a.args = (x, x)
    assert y.users == {} and list(x.users) == [a] and a.all_input_nodes == [x]
    b.kwargs = {"dim": a}
    assert list(a.users) == [b]
    b.replace_input_with(a, y)
    assert a.users == {} and b.args == (y,) and b.kwargs == {"dim": y}
    assert g.eliminate_dead_code() and [n.name for n in g.nodes] == ["x", "y", "sum_1", "output"]


def test_erase_node_refuses_a_node_with_users_and_lint_finds_order_errors():
    gm = fx.symbolic_trace(lambda x: (x + 1).relu())
    add = next(n for n in gm.graph.nodes if n.target is operator.add)
    with pytest.raises(RuntimeError, match=r"Tried to erase Node add but it still had 1 users in the graph"):
        gm.graph.erase_node(add)
    relu = next(n for n in gm.graph.nodes if n.target == "relu")
    relu.append(add)                       # the add now comes after its user
    with pytest.raises(RuntimeError, match="used before it has been defined"):
        gm.graph.lint()


def test_inserting_before_and_after_keep_order():
    g = fx.Graph()
    x = g.placeholder("x")
    r = g.call_function(rawdev.relu, (x,))
    g.output(r)
    with g.inserting_before(r):
        a = g.call_function(operator.mul, (x, 2))
        b = g.call_function(operator.add, (a, 1))
    with g.inserting_after(r):
        c = g.call_function(operator.neg, (r,))
    with g.inserting_before():
        g.placeholder("first")
    assert [n.name for n in g.nodes] == ["first", "x", "mul", "add", "relu", "neg", "output"]
    assert [n.name for n in reversed(g.nodes)] == ["output", "neg", "relu", "add", "mul", "x", "first"]
    r.args = (b,)
    assert len(g.nodes) == 7 and c.prev is r and r.next is c


def test_graph_built_from_proxies_and_deepcopy():
    g = fx.Graph()
    tracer = fx.proxy.GraphAppendingTracer(g)
    x, y = fx.Proxy(g.placeholder("x"), tracer), fx.Proxy(g.placeholder("y"), tracer)
    c = rawdev.neg(rawdev.tanh(rawdev.cat([x, y])))
    g.output(c.node)
    assert [n.name for n in g.nodes] == ["x", "y", "cat", "tanh", "neg", "output"]
    del x, y, c
    assert not fx.patching.active()   # the last Proxy gone: rawdev's functions are the originals again
    gm = fx.GraphModule(rawdev.nn.Module(), g)
    assert "cat = torch.cat([x, y]);  x = y = None" in gm.code
    a, b = randn(2), randn(3)
    np.testing.assert_allclose(gm(a, b).numpy(), -np.tanh(np.concatenate([a.numpy(), b.numpy()])), rtol=1e-6)
    g2 = copy.deepcopy(g)
    assert [n.name for n in g2.nodes] == [n.name for n in g.nodes] and next(iter(g2.nodes)).graph is g2
    gm2 = copy.deepcopy(gm)
    np.testing.assert_array_equal(gm2(a, b).numpy(), gm(a, b).numpy())
    neg = next(n for n in gm2.graph.nodes if n.name == "neg")   # editing the copy leaves the original alone
    neg.target = rawdev.sigmoid
    gm2.recompile()
    assert "torch.sigmoid" in gm2.code and "torch.neg" in gm.code and type(gm2).forward is not type(gm).forward


def test_printed_forms(capsys, monkeypatch):
    gm = fx.symbolic_trace(lambda x, y: rawdev.relu(x) + y)
    assert str(gm.graph).splitlines() == [
        "graph():",
        "    %x : [num_users=1] = placeholder[target=x]",
        "    %y : [num_users=1] = placeholder[target=y]",
        "    %relu : [num_users=1] = call_function[target=torch.relu](args = (%x,), kwargs = {})",
        "    %add : [num_users=1] = call_function[target=operator.add](args = (%relu, %y), kwargs = {})",
        "    return add"]
    assert gm.code.strip().splitlines() == ["def forward(self, x, y):",
                                            "    relu = torch.relu(x);  x = None",
                                            "    add = relu + y;  relu = y = None",
                                            "    return add"]
    monkeypatch.setitem(__import__("sys").modules, "tabulate", None)   # as without the optional package
    gm.graph.print_tabular()
    out = capsys.readouterr().out.splitlines()
    assert out[0].split() == ["opcode", "name", "target", "args", "kwargs"]
    assert out[4].split() == ["call_function", "relu", "torch.relu", "(x,)", "{}"]
    assert "def forward(self, x, y)" in gm.print_readable(print_output=False)


def test_dead_code_elimination_keeps_in_place_calls_and_tracing_leaves_rawdev_unpatched():
    def f(x):
        unused = x * 3  # noqa: F841  (dead: removed)
        x.add_(1)       # in place: kept though nothing reads its result
        return x.relu()
    gm = fx.symbolic_trace(f)
    assert gm.graph.eliminate_dead_code()
    assert [n.name for n in gm.graph.nodes] == ["x", "add_", "relu", "output"]
    gm.recompile()
    x = randn(4)
    np.testing.assert_allclose(gm(x.clone()).numpy(), np.maximum(x.numpy() + 1, 0))
    assert type(rawdev.cat).__name__ == "function" and rawdev.relu is rawdev.nn.functional.relu
