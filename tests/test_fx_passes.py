"""Passes over traced graphs: an Interpreter subclass counting calls, a Transformer rewriting add to mul,
replace_pattern, ShapeProp's tensor_meta, and experimental.optimization.fuse (BatchNorm folded into the
convolution before it) checked against a float64 numpy reference of the unfused eval-mode model."""
import operator

import numpy as np
import rawdev
import rawdev.fx as fx
from rawdev import nn
from rawdev.fx.experimental.optimization import fuse
from rawdev.fx.passes.shape_prop import ShapeProp

RNG = np.random.default_rng(5)


def randn(*shape):
    return rawdev.tensor(RNG.standard_normal(shape).astype(np.float32))


class ConvBN(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(3, 4, 3, padding=1)
        self.bn1 = nn.BatchNorm2d(4)
        self.conv2 = nn.Conv2d(4, 2, 1, bias=False)
        self.bn2 = nn.BatchNorm2d(2)

    def forward(self, x):
        return self.bn2(self.conv2(rawdev.relu(self.bn1(self.conv1(x)))))


def _randomize_bn(bn):
    c = bn.num_features
    bn.running_mean.copy_(randn(c))
    bn.running_var.copy_(rawdev.tensor(RNG.uniform(0.5, 2.0, c).astype(np.float32)))
    with rawdev.no_grad():
        bn.weight.copy_(randn(c))
        bn.bias.copy_(randn(c))


def _ref_conv(x, w, b, pad):
    n, c, h, wd = x.shape
    o, _, k, _ = w.shape
    xp = np.pad(x, ((0, 0), (0, 0), (pad, pad), (pad, pad)))
    y = np.zeros((n, o, h, wd))
    for i in range(k):
        for j in range(k):
            y += np.einsum("nchw,oc->nohw", xp[:, :, i:i + h, j:j + wd], w[:, :, i, j])
    return y + (0 if b is None else b[None, :, None, None])


def _ref_bn(y, bn):
    f = {k: v.detach().numpy().astype(np.float64) for k, v in
         (("m", bn.running_mean), ("v", bn.running_var), ("w", bn.weight), ("b", bn.bias))}
    return (y - f["m"][None, :, None, None]) / np.sqrt(f["v"][None, :, None, None] + bn.eps) \
        * f["w"][None, :, None, None] + f["b"][None, :, None, None]


def _ref_model(m, x):
    p = {k: v.detach().numpy().astype(np.float64) for k, v in m.named_parameters()}
    y = np.maximum(_ref_bn(_ref_conv(x, p["conv1.weight"], p["conv1.bias"], 1), m.bn1), 0)
    return _ref_bn(_ref_conv(y, p["conv2.weight"], None, 0), m.bn2)


def _rel(a, b):
    return np.linalg.norm(a - b) / np.linalg.norm(b)


def test_fuse_folds_batch_norm_into_conv_with_unfused_numbers():
    m = ConvBN()
    _randomize_bn(m.bn1)
    _randomize_bn(m.bn2)
    m.eval()
    x = randn(2, 3, 6, 5)
    ref = _ref_model(m, x.numpy().astype(np.float64))
    unfused = m(x).detach().numpy()
    assert _rel(unfused, ref) < 1e-5
    fused = fuse(m)
    assert [n.target for n in fused.graph.nodes if n.op == "call_module"] == ["conv1", "conv2"]
    assert not any(isinstance(s, nn.BatchNorm2d) for s in fused.modules())
    got = fused(x).detach().numpy()
    assert _rel(got, ref) < 1e-5, _rel(got, ref)
    assert isinstance(m.bn1, nn.BatchNorm2d) and m.conv2.bias is None   # the original is left as it was
    assert fused.conv2.bias is not None


def test_interpreter_subclass_counts_calls_and_returns_the_same_result():
    m = ConvBN().eval()
    gm = fx.symbolic_trace(m)

    class Counting(fx.Interpreter):
        def __init__(self, mod):
            super().__init__(mod)
            self.counts = {}

        def run_node(self, n):
            self.counts[n.op] = self.counts.get(n.op, 0) + 1
            return super().run_node(n)

        def call_module(self, target, args, kwargs):
            self.counts.setdefault("modules", []).append(target)
            return super().call_module(target, args, kwargs)

    interp = Counting(gm)
    x = randn(1, 3, 4, 4)
    out = interp.run(x)
    np.testing.assert_array_equal(out.detach().numpy(), m(x).detach().numpy())
    assert interp.counts == {"placeholder": 1, "call_module": 4, "call_function": 1, "output": 1,
                             "modules": ["conv1", "bn1", "conv2", "bn2"]}
    assert [n.op for n in interp.env] == ["output"]   # every other value dropped after its last use
    np.testing.assert_array_equal(fx.Interpreter(gm).boxed_run([x]).detach().numpy(), out.detach().numpy())


def test_transformer_rewrites_add_to_mul_into_a_new_module():
    def f(x, y):
        return rawdev.relu(x + y) + 1

    class AddToMul(fx.Transformer):
        def call_function(self, target, args, kwargs):
            return super().call_function(operator.mul if target is operator.add else target, args, kwargs)
    gm = fx.symbolic_trace(f)
    new = AddToMul(gm).transform()
    assert [n.target for n in new.graph.nodes if n.op == "call_function"] == [operator.mul, rawdev.relu,
                                                                             operator.mul]
    x, y = randn(4), randn(4)
    np.testing.assert_allclose(new(x, y).numpy(), (rawdev.relu(x * y) * 1).numpy())
    np.testing.assert_allclose(gm(x, y).numpy(), f(x, y).numpy())   # the original is unchanged


def test_replace_pattern_rewrites_each_occurrence():
    def f(x, w1, w2):
        m1 = rawdev.cat([rawdev.neg(w1), w2]).sum()
        m2 = rawdev.cat([rawdev.neg(w1), w2]).sum()
        return x + rawdev.max(m1) + rawdev.max(m2)

    def pattern(a1, a2):
        return rawdev.cat([rawdev.neg(a1), a2]).sum()

    def replacement(w1, w2):
        return rawdev.stack([w1, w2])
    gm = fx.symbolic_trace(f)
    matches = fx.replace_pattern(gm, pattern, replacement)
    assert len(matches) == 2 and all(m.anchor.target == "sum" for m in matches)
    targets = [n.target for n in gm.graph.nodes if n.op in ("call_function", "call_method")]
    assert targets.count(rawdev.stack) == 2 and rawdev.neg not in targets and rawdev.cat not in targets
    gm.graph.lint()
    x, w1, w2 = randn(3), randn(3), randn(3)
    np.testing.assert_allclose(gm(x, w1, w2).numpy(), (x + 2 * rawdev.stack([w1, w2]).max()).numpy(), rtol=1e-6)


def test_shape_prop_records_shapes_and_dtypes():
    m = nn.Sequential(nn.Conv2d(3, 5, 3), nn.Flatten(), nn.Linear(5 * 4 * 4, 7))
    gm = fx.symbolic_trace(m)
    ShapeProp(gm).propagate(randn(2, 3, 6, 6))
    shapes = {n.name: tuple(n.meta["tensor_meta"].shape) for n in gm.graph.nodes if "tensor_meta" in n.meta}
    assert shapes == {"input_1": (2, 3, 6, 6), "_0": (2, 5, 4, 4), "_1": (2, 80), "_2": (2, 7), "output": (2, 7)}
    assert all(n.meta["tensor_meta"].dtype == rawdev.float32 for n in gm.graph.nodes)
    assert gm.graph.find_nodes(op="call_module", target="2")[0].meta["tensor_meta"].stride == (7, 1)


def test_transformer_calling_rawdev_functions_on_proxies_and_comparing_targets_with_eq():
    # torch.fx's documented Transformer idiom: compare the target with ==, call torch functions on the Proxies
    class NegForRelu(fx.Transformer):
        def call_function(self, target, args, kwargs):
            if target == rawdev.relu:
                return rawdev.neg(*args, **kwargs)
            return super().call_function(target, args, kwargs)
    gm = fx.symbolic_trace(lambda x: rawdev.relu(x) * 2)
    new = NegForRelu(gm).transform()
    assert not fx.patching.active()
    assert [n.target for n in new.graph.nodes if n.op == "call_function"] == [rawdev.neg, operator.mul]
    assert next(n for n in new.graph.nodes if n.name == "neg").target is rawdev.neg   # stored as the original
    x = randn(5)
    np.testing.assert_allclose(new(x).numpy(), (-x * 2).numpy())
