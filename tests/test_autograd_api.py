"""The autograd API around the graph: autograd.grad / backward arguments (inputs=, grad_outputs, allow_unused, ...),
user Functions (ctx, mark_non_differentiable, materialize_grads, setup_context, apply with keywords, Variable),
grad modes and their decorators, inference_mode, detect_anomaly and register_backward_hook."""
import warnings

import numpy as np
import pytest
import rawdev
from rawdev.autograd import Function
from rawdev.tensor.factory import from_numpy

RNG = np.random.default_rng()


def t64(*shape, positive=False):
    a = RNG.standard_normal(shape)
    if positive:
        a = np.abs(a) + 0.5
    return from_numpy(np.ascontiguousarray(a)).requires_grad_()


# ------------------------------------------------------------------ autograd.grad / backward arguments
def test_grad_arguments():
    x, y = t64(3), t64(3)
    out = (x * 2).sum()
    with pytest.raises(RuntimeError, match="One of the differentiated Tensors appears to not have been used in the "
                                           "graph. Set allow_unused=True if this is the desired behavior."):
        rawdev.autograd.grad(out, (x, y), retain_graph=True)
    gx, gy = rawdev.autograd.grad(out, (x, y), allow_unused=True, retain_graph=True)
    assert gy is None
    gx, gy = rawdev.autograd.grad(out, (x, y), materialize_grads=True, retain_graph=True)
    np.testing.assert_array_equal(np.asarray(gy), np.zeros(3))
    with pytest.raises(ValueError, match="Expected allow_unused to be True or not passed when materialize_grads"):
        rawdev.autograd.grad(out, x, allow_unused=False, materialize_grads=True)
    gx, = rawdev.autograd.grad(x * 3, x, grad_outputs=from_numpy(np.array([1.0, 2.0, 3.0])))
    np.testing.assert_allclose(np.asarray(gx), [3.0, 6.0, 9.0])
    z = (x * x).sum()
    rawdev.autograd.grad(z, x)
    with pytest.raises(RuntimeError, match="Trying to backward through the graph a second time"):
        rawdev.autograd.grad(z, x)
    assert x.grad is None     # grad() accumulates nothing


def test_autograd_backward_with_inputs():
    x, y = t64(3), t64(3)
    rawdev.autograd.backward((x * y).sum(), inputs=[x])
    np.testing.assert_allclose(np.asarray(x.grad), np.asarray(y.detach()))
    assert y.grad is None
    rawdev.autograd.backward([(x * 1).sum(), (y * 2).sum()], [None, None])
    np.testing.assert_allclose(np.asarray(y.grad), np.full(3, 2.0))


# ------------------------------------------------------------------ user Functions
def test_function_mark_non_differentiable_and_materialize():
    class SortLike(Function):
        @staticmethod
        def forward(ctx, x):
            idx = x.detach().argmax().reshape(1).to(rawdev.float64)
            y = x * 2
            ctx.mark_non_differentiable(idx)
            ctx.set_materialize_grads(False)
            return y, idx

        @staticmethod
        def backward(ctx, gy, gidx):
            assert gidx is None     # not materialized, and idx is not differentiable
            return gy * 2

    x = t64(4)
    y, idx = SortLike.apply(x)
    assert y.requires_grad and not idx.requires_grad and idx.grad_fn is None
    y.sum().backward()
    np.testing.assert_allclose(np.asarray(x.grad), np.full(4, 2.0))


def test_function_materialized_zero_grads_and_setup_context():
    class Two(Function):
        @staticmethod
        def forward(x):
            return x * 2, x * 3

        @staticmethod
        def setup_context(ctx, inputs, output):
            ctx.save_for_backward(inputs[0])

        @staticmethod
        def backward(ctx, g1, g2):
            x, = ctx.saved_tensors
            assert g2 is not None and float(np.abs(np.asarray(g2)).sum()) == 0.0   # materialized zeros
            return g1 * 2 + g2 * 3 + 0 * x

    x = t64(3)
    a, b = Two.apply(x)
    a.sum().backward()
    np.testing.assert_allclose(np.asarray(x.grad), np.full(3, 2.0))


# ------------------------------------------------------------------ grad modes
def test_grad_mode_decorators_and_contexts():
    x = t64(2)

    @rawdev.no_grad
    def bare():
        return x * 2

    @rawdev.no_grad()
    def called():
        return x * 2

    @rawdev.enable_grad()
    def enabled():
        return x * 2

    assert not bare().requires_grad and not called().requires_grad
    with rawdev.no_grad():
        assert enabled().requires_grad
        assert not (x * 2).requires_grad
    dec = rawdev.set_grad_enabled(False)
    assert not rawdev.is_grad_enabled()     # the function form takes effect at once
    rawdev.set_grad_enabled(True)
    assert rawdev.is_grad_enabled()

    @rawdev.set_grad_enabled(False)
    def off():
        return rawdev.is_grad_enabled()
    assert rawdev.is_grad_enabled()         # decorating changes nothing yet
    assert off() is False and rawdev.is_grad_enabled()
    with dec:
        assert not rawdev.is_grad_enabled()
    assert rawdev.is_grad_enabled()

    @rawdev.no_grad()
    def gen():
        yield rawdev.is_grad_enabled()
        yield rawdev.is_grad_enabled()
    assert list(gen()) == [False, False] and rawdev.is_grad_enabled()


def test_inference_mode():
    assert not rawdev.is_inference_mode_enabled()
    with rawdev.inference_mode():
        assert rawdev.is_inference_mode_enabled() and not rawdev.is_grad_enabled()
        with rawdev.inference_mode(False):
            assert not rawdev.is_inference_mode_enabled()
    assert rawdev.is_grad_enabled() and not rawdev.is_inference_mode_enabled()

    @rawdev.inference_mode
    def f():
        return rawdev.is_inference_mode_enabled()
    assert f() is True and not rawdev.is_inference_mode_enabled()


def test_detect_anomaly():
    x = from_numpy(np.array([0.0, 1.0])).requires_grad_()
    with pytest.warns(UserWarning, match="Anomaly Detection has been enabled"):
        ctx = rawdev.autograd.detect_anomaly()
    with ctx:
        with pytest.raises(RuntimeError, match="Function 'SqrtBackward0' returned nan values in its 0th output."):
            (rawdev.sqrt(x) * 0).sum().backward()
    (rawdev.sqrt(x) * 0).sum().backward()     # off again: no check
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with rawdev.autograd.set_detect_anomaly(True):
            from rawdev.autograd.anomaly_mode import is_anomaly_enabled
            assert is_anomaly_enabled()
        assert not is_anomaly_enabled()


def test_function_apply_keyword_arguments_and_variable():
    class Scale(Function):
        @staticmethod
        def forward(ctx, x, k=2.0, shift=0.0):
            ctx.k = k
            return x * k + shift

        @staticmethod
        def backward(ctx, g):
            return g * ctx.k, None, None

    x = t64(3)
    y = Scale.apply(x, shift=1.0)
    np.testing.assert_allclose(np.asarray(y.detach()), 2 * np.asarray(x.detach()) + 1)
    Scale.apply(x, k=5.0).sum().backward()
    np.testing.assert_allclose(np.asarray(x.grad), np.full(3, 5.0))
    from rawdev.autograd import Variable
    v = Variable(rawdev.ones(2), requires_grad=True)
    assert isinstance(v, rawdev.Tensor) and isinstance(v, Variable) and v.requires_grad and v.is_leaf
    assert not isinstance(3, Variable)


def test_register_backward_hook_runs_as_full_hook():
    m = rawdev.nn.Linear(3, 2)
    got = []
    m.register_backward_hook(lambda mod, gi, go: got.append(tuple(go[0].shape)))
    m(rawdev.randn(4, 3, requires_grad=True)).sum().backward()
    assert got == [(4, 2)]
    with pytest.raises(RuntimeError, match="Cannot use both regular backward hooks and full backward hooks"):
        m.register_full_backward_hook(lambda *a: None)
