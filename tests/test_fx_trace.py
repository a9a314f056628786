"""rawdev.fx symbolic tracing: the graphs recorded for an MLP, a small CNN and plain functions (opcodes,
targets, torch.fx's node names), GraphModule output equal to the eager module's, concrete_args, fx.wrap, custom
tracers, and the TraceError a trace raises at control flow on a traced value."""
import operator

import numpy as np
import pytest
import rawdev
import rawdev.fx as fx
import rawdev.nn.functional as F
from rawdev import nn

RNG = np.random.default_rng(7)


def randn(*shape):
    return rawdev.tensor(RNG.standard_normal(shape).astype(np.float32))


class MLP(nn.Module):
    def __init__(self):
        super().__init__()
        self.linear = nn.Linear(6, 8)
        self.linear2 = nn.Linear(8, 3)
        self.scale = nn.Parameter(rawdev.tensor([2.0]))

    def forward(self, x):
        h = F.relu(self.linear(x))
        return self.linear2(h).softmax(dim=-1) * self.scale + x.sum(dim=1, keepdim=True)


class SmallCNN(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(2, 4, 3, padding=1)
        self.bn = nn.BatchNorm2d(4)
        self.head = nn.Sequential(nn.Flatten(), nn.Linear(4 * 5 * 5, 3))

    def forward(self, x):
        y = rawdev.relu(self.bn(self.conv(x)))
        return self.head(y + x.mean(dim=1, keepdim=True))


def triples(gm):
    return [(n.op, n.target if isinstance(n.target, str) else n.target, n.name) for n in gm.graph.nodes]


def test_mlp_graph_has_torch_fx_opcodes_targets_and_names():
    m = MLP()
    gm = fx.symbolic_trace(m)
    nodes = list(gm.graph.nodes)
    assert [n.op for n in nodes] == ["placeholder", "call_module", "call_function", "call_module", "call_method",
                                     "get_attr", "call_function", "call_method", "call_function", "output"]
    assert [n.name for n in nodes] == ["x", "linear", "relu", "linear2", "softmax", "scale", "mul", "sum_1",
                                       "add", "output"]
    assert nodes[2].target is rawdev.relu and nodes[6].target is operator.mul and nodes[8].target is operator.add
    assert nodes[4].kwargs == {"dim": -1} and nodes[7].kwargs == {"dim": 1, "keepdim": True}
    assert nodes[1].users == {nodes[2]: None} and nodes[0].all_input_nodes == []
    assert set(nodes[0].users) == {nodes[1], nodes[7]}
    x = randn(5, 6)
    np.testing.assert_array_equal(gm(x).detach().numpy(), m(x).detach().numpy())
    assert "linear2 = self.linear2(relu);  relu = None" in gm.code
    assert "add = mul + sum_1;  mul = sum_1 = None" in gm.code


def test_cnn_graph_keeps_library_layers_as_leaves_and_traces_sequential_through():
    m = SmallCNN().eval()
    gm = fx.symbolic_trace(m)
    mods = [n.target for n in gm.graph.nodes if n.op == "call_module"]
    assert mods == ["conv", "bn", "head.0", "head.1"]
    assert [n.name for n in gm.graph.nodes if n.op == "call_module"] == ["conv", "bn", "head_0", "head_1"]
    assert "getattr(self.head, '0')" in gm.code
    x = randn(2, 2, 5, 5)
    np.testing.assert_array_equal(gm(x).detach().numpy(), m(x).detach().numpy())
    # the GraphModule holds what the graph reads, as a module: state_dict and parameters work
    assert set(gm.state_dict()) == set(m.state_dict())
    assert sum(p.numel() for p in gm.parameters()) == sum(p.numel() for p in m.parameters())


def test_function_trace_with_methods_getitem_and_unpacking():
    def f(x, y):
        a, b = x.chunk(2, dim=0)
        z = rawdev.cat([a * 2, b - y[0]], dim=1)
        return z.view(-1).neg(), z.shape
    gm = fx.symbolic_trace(f)
    ops = [(n.op, n.target) for n in gm.graph.nodes]
    assert ("call_method", "chunk") in ops and ("call_function", operator.getitem) in ops
    assert ("call_function", rawdev.cat) in ops and ("call_function", getattr) in ops
    x, y = randn(4, 3), randn(2, 3)
    got, ref = gm(x, y), f(x, y)
    np.testing.assert_array_equal(got[0].detach().numpy(), ref[0].detach().numpy())
    assert tuple(got[1]) == tuple(ref[1]) == (2, 6)
    assert "torch.cat([mul, sub], dim = 1)" in gm.code


def test_control_flow_on_a_traced_value_raises_torch_wording():
    def f(x):
        if x.sum() > 0:
            return x
        return -x
    with pytest.raises(fx.TraceError, match="symbolically traced variables cannot be used as inputs to control flow"):
        fx.symbolic_trace(f)

    def g(x):
        return [v for v in x]
    with pytest.raises(fx.TraceError, match="Proxy object cannot be iterated"):
        fx.symbolic_trace(g)
    with pytest.raises(RuntimeError, match="'len' is not supported in symbolic tracing by default"):
        fx.symbolic_trace(lambda x: len(x))
    assert not fx.patching.active()   # a failed trace puts rawdev's functions back


def test_concrete_args_fix_a_flag_and_keep_it_as_the_default():
    def f(x, double):
        if double:
            return x * 2
        return x + 1
    gm = fx.symbolic_trace(f, concrete_args={"double": True})
    assert [n.target for n in gm.graph.nodes if n.op == "call_function"] == [operator.mul]
    assert "def forward(self, x, double = True):" in gm.code
    x = randn(3)
    np.testing.assert_array_equal(gm(x).detach().numpy(), (x * 2).detach().numpy())
    with pytest.raises(RuntimeError, match="concrete"):
        fx.symbolic_trace(f, concrete_args={"nope": 1})


def _my_leaf(x, k):
    if k > 0:   # control flow a trace could not follow: wrap() records the call instead
        return x * k
    return x


fx.wrap("_my_leaf")


def test_wrap_records_a_module_level_function_as_call_function():
    def f(x):
        return _my_leaf(x, 3) + 1
    gm = fx.symbolic_trace(f)
    calls = [n for n in gm.graph.nodes if n.op == "call_function"]
    assert calls[0].target is _my_leaf and calls[0].args[1] == 3
    assert globals()["_my_leaf"].__name__ == "_my_leaf" and not hasattr(globals()["_my_leaf"], "__fx_original__")
    x = randn(4)
    np.testing.assert_allclose(gm(x).detach().numpy(), (x * 3 + 1).detach().numpy())
    with pytest.raises(NotImplementedError, match="wrap must be called at the top level of a module"):
        fx.wrap("len")


def test_custom_tracer_lowers_a_leaf_and_tags_nodes():
    class LowerRelu(fx.Tracer):
        def is_leaf_module(self, m, qualname):
            return False if isinstance(m, nn.ReLU) else super().is_leaf_module(m, qualname)

        def create_node(self, kind, target, args, kwargs, name=None, type_expr=None):
            n = super().create_node(kind, target, args, kwargs, name, type_expr)
            n.tag = "foo"
            return n
    m = nn.Sequential(nn.Linear(3, 3), nn.ReLU())
    g = LowerRelu().trace(m)
    assert [(n.op, n.name) for n in g.nodes] == [("placeholder", "input_1"), ("call_module", "_0"),
                                                  ("call_function", "relu"), ("output", "output")]
    assert all(n.tag == "foo" for n in g.nodes)
    x = randn(2, 3)
    np.testing.assert_array_equal(fx.GraphModule(m, g)(x).detach().numpy(), m(x).detach().numpy())


def test_module_path_tracer_sees_qualified_names():
    class PathTracer(fx.Tracer):
        current = ""

        def call_module(self, m, forward, args, kwargs):
            old, self.current = self.current, self.path_of_module(m)
            try:
                return super().call_module(m, forward, args, kwargs)
            finally:
                self.current = old

        def create_proxy(self, kind, target, args, kwargs, name=None, type_expr=None):
            p = super().create_proxy(kind, target, args, kwargs, name, type_expr)
            self.origin[p.node] = self.current
            return p
    t = PathTracer()
    t.origin = {}
    g = t.trace(SmallCNN())
    assert {n.name: t.origin.get(n) for n in g.nodes if n.op == "call_module"} == {
        "conv": "conv", "bn": "bn", "head_0": "head.0", "head_1": "head.1"}


def test_graph_module_runs_on_the_simulated_gpu(driver):
    m = SmallCNN().eval()
    gm = fx.symbolic_trace(m)
    x = randn(2, 2, 5, 5)
    ref = m(x).detach().numpy()
    gm.cuda()
    assert gm.conv.weight.device.type == "cuda"
    got = gm(x.cuda()).cpu().detach().numpy()
    np.testing.assert_allclose(got, ref, rtol=1e-4, atol=1e-5)
