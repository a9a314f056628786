"""torch.library and torch._custom_op: Python ops registered into torch.ops.<ns> — kernels chosen by the device of
the arguments (cpu, cuda, composite), gradients through register_autograd against float64 references, PyTorch's
errors (no kernel, no autograd formula, a second DEF library), the fake function kept, and torch.export recording
a registered op as one node."""
import itertools

import numpy as np
import pytest
import rawdev
from rawdev.library import Library, custom_op, impl, register_autograd, register_fake

_ids = itertools.count()


@pytest.fixture
def ns():
    name = f"rawdev_test_ns{next(_ids)}"
    lib = Library(name, "FRAGMENT")
    yield name, lib
    lib._destroy()


def test_define_and_impl_per_device(driver, ns):
    name, lib = ns
    lib.define("tag(Tensor x) -> Tensor")
    lib.impl("tag", lambda x: x + 1, "CPU")
    lib.impl("tag", lambda x: x + 2, "CUDA")
    op = getattr(rawdev.ops, name).tag
    np.testing.assert_array_equal(op(rawdev.zeros(3)).numpy(), [1, 1, 1])
    np.testing.assert_array_equal(op(rawdev.zeros(3, device="cuda")).cpu().numpy(), [2, 2, 2])
    np.testing.assert_array_equal(op.default(rawdev.zeros(1)).numpy(), [1])


def test_composite_kernels_and_the_no_kernel_error(ns):
    name, lib = ns
    lib.define("twice(Tensor x) -> Tensor")
    with pytest.raises(NotImplementedError, match=f"Could not run '{name}::twice' with arguments from the 'CPU'"):
        getattr(rawdev.ops, name).twice(rawdev.ones(2))

    @impl(f"{name}::twice", "CompositeImplicitAutograd")
    def twice(x):
        return x * 2
    x = rawdev.tensor([1.0, -3.0], requires_grad=True)
    y = getattr(rawdev.ops, name).twice(x)
    y.sum().backward()                             # composite implicit: differentiable through its ops
    np.testing.assert_array_equal(x.grad.numpy(), [2.0, 2.0])


@pytest.mark.parametrize("device", ["cpu", "cuda"])
def test_custom_op_with_its_autograd_formula(driver, device):
    qual = f"rawdev_test_ns{next(_ids)}::mysin"

    @custom_op(qual, mutates_args=())
    def mysin(x: rawdev.Tensor) -> rawdev.Tensor:
        return rawdev.sin(x)

    x64 = np.array([0.25, -1.5, 2.0])
    x = rawdev.tensor(x64, dtype=rawdev.float32, device=device, requires_grad=True)
    with pytest.raises(RuntimeError, match="an autograd kernel was not registered"):
        mysin(x).sum().backward()

    def setup(ctx, inputs, output):
        ctx.save_for_backward(inputs[0])

    def backward(ctx, g):
        (saved,) = ctx.saved_tensors
        return g * saved.cos()
    register_autograd(qual, backward, setup_context=setup)
    y = mysin(x)
    assert y.grad_fn is not None
    (y * y).sum().backward()
    np.testing.assert_allclose(x.grad.cpu().numpy(), 2 * np.sin(x64) * np.cos(x64), rtol=1e-5)

    @register_fake(qual)
    def _(t):
        return rawdev.empty_like(t)
    assert mysin._rec.fake is _
    ns_name, op_name = qual.split("::")
    assert getattr(getattr(rawdev.ops, ns_name), op_name)._op is mysin._rec
    with rawdev.no_grad():
        np.testing.assert_allclose(mysin(x).cpu().numpy(), np.sin(x64), rtol=1e-6)


def test_the_earlier_custom_op_api():
    from rawdev._custom_op import impl as custom_op_impl
    qual = f"rawdev_test_ns{next(_ids)}::addandround"

    @custom_op_impl.custom_op(qual)
    def addandround(x: rawdev.Tensor) -> rawdev.Tensor:
        ...

    @addandround.impl_abstract()
    def _(x):
        return rawdev.empty_like(x)

    @addandround.impl("cpu")
    def _(x):
        return rawdev.round(x + x)
    np.testing.assert_array_equal(addandround(rawdev.tensor([0.3, 1.4, -0.8])).numpy(), [1.0, 3.0, -2.0])


def test_one_def_library_per_namespace_and_destroy():
    name = f"rawdev_test_ns{next(_ids)}"
    lib = Library(name, "DEF")
    lib.define("f(Tensor x) -> Tensor")
    with pytest.raises(RuntimeError, match="Only a single TORCH_LIBRARY can be used to register the namespace"):
        Library(name, "DEF")
    with pytest.raises(RuntimeError, match="with the same name and overload name multiple times"):
        Library(name, "FRAGMENT").define("f(Tensor x) -> Tensor")
    with pytest.raises(ValueError, match="Unsupported kind"):
        Library(name, "BOGUS")
    lib._destroy()
    with pytest.raises(AttributeError):
        _ = getattr(rawdev.ops, name).f
    Library(name, "DEF")._destroy()                 # the namespace is free again


def test_export_records_a_registered_op_as_one_node(ns):
    name, lib = ns
    lib.define("custom_relu(Tensor input) -> Tensor")
    calls = []

    @impl(lib, "custom_relu", "CompositeExplicitAutograd")
    def _(x):
        calls.append(1)
        return rawdev.relu(x)

    class M(rawdev.nn.Module):
        def forward(self, x):
            return rawdev.cos(getattr(rawdev.ops, name).custom_relu(rawdev.sin(x)))
    ep = rawdev.export.export(M(), (rawdev.randn(3, 3),))
    targets = [n.target for n in ep.graph.nodes if n.op == "call_function"]
    assert getattr(rawdev.ops, name).custom_relu in targets
    assert f"torch.ops.{name}.custom_relu(" in ep.graph_module.code
    x = rawdev.randn(3, 3)
    np.testing.assert_allclose(ep.module()(x).numpy(), M()(x).numpy(), rtol=1e-6)
