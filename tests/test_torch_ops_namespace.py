"""`torch.ops.aten.<op>.<overload>` and `torch.ops.profiler`: PyTorch's operator handles answered from rawdev's
registry — calls equal the public functions, schemas say which ops write into an argument, unknown names raise
PyTorch's AttributeError, and rawdev's own modules stay importable beside the lazy namespaces."""
import importlib

import numpy as np
import pytest
import rawdev
from rawdev.profiler import profile

from _refs import rng


@pytest.mark.parametrize("device", ["cpu", "cuda"])
def test_aten_overloads_call_the_op_they_name(driver, device):
    g = rng()
    a64, b64 = g.standard_normal((3, 4)), g.standard_normal((3, 4))
    a = rawdev.tensor(a64.astype(np.float32), device=device)
    b = rawdev.tensor(b64.astype(np.float32), device=device)
    aten = rawdev.ops.aten
    cases = [
        (aten.add(a, b), a64 + b64),
        (aten.add.Tensor(a, b, alpha=2), a64 + 2 * b64),
        (aten.neg.default(a), -a64),
        (aten.maximum.default(a, b), np.maximum(a64, b64)),
        (aten.t.default(a), a64.T),
        (aten.transpose.int(a, 0, 1), a64.T),
        (aten.clone.default(a), a64),
        (aten.gelu(a), 0.5 * a64 * (1 + np.vectorize(__import__("math").erf)(a64 / np.sqrt(2)))),
    ]
    for got, want in cases:
        assert got.device.type == device
        np.testing.assert_allclose(got.cpu().numpy(), want, rtol=1e-5, atol=1e-6)
    c = aten.clone.default(a)
    assert c.data_ptr() != a.data_ptr()   # clone copies, as its name promises
    out = aten.add_.Tensor(c, b)
    assert out is c
    np.testing.assert_allclose(c.cpu().numpy(), a64 + b64, rtol=1e-5, atol=1e-6)


def test_aten_is_differentiable_as_the_op_it_names():
    x = rawdev.tensor([0.5, -1.0, 2.0], requires_grad=True)
    rawdev.ops.aten.mul.Tensor(x, x).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), [1.0, -2.0, 4.0])


def test_schema_says_which_ops_write_into_an_argument():
    aten = rawdev.ops.aten
    assert aten.add.Tensor._schema.is_mutable is False
    assert aten.add_.Tensor._schema.is_mutable is True
    assert aten.add.out._schema.is_mutable is True
    assert aten.add.Tensor._schema.name == "aten::add" and aten.add.Tensor._schema.overload_name == "Tensor"
    assert aten.neg.default._schema.overload_name == ""
    assert aten.add.Tensor.overloadpacket is aten.add and aten.add.Tensor.name() == "aten::add.Tensor"
    assert repr(aten.add) == "<OpOverloadPacket(op='aten.add')>"


def test_unknown_names_raise_as_pytorch():
    with pytest.raises(AttributeError, match="'_OpNamespace' 'aten' object has no attribute 'no_such_op'"):
        _ = rawdev.ops.aten.no_such_op
    with pytest.raises(AttributeError, match="has no overload name 'Bogus'"):
        _ = rawdev.ops.aten.add.Bogus
    # a C++ library's namespace exists (as in PyTorch) but holds nothing: rawdev loads no such library
    with pytest.raises(AttributeError, match="'_OpNamespace' 'my_ops' object has no attribute 'warp_perspective'"):
        _ = rawdev.ops.my_ops.warp_perspective
    with pytest.raises(NotImplementedError, match="C\\+\\+"):
        rawdev.ops.load_library("libwarp.so")


def test_rawdev_op_modules_still_import_beside_the_namespaces():
    # the namespaces answer any public name; rawdev.ops' own modules must still be found by the import system
    mod = importlib.import_module("rawdev.ops.autocast_lists")
    assert mod.__name__ == "rawdev.ops.autocast_lists"
    from rawdev.ops import order_stats
    assert order_stats.__name__ == "rawdev.ops.order_stats"
    with pytest.raises(AttributeError):
        _ = rawdev.ops._private_thing


def test_profiler_ops_open_and_close_a_range():
    with profile() as prof:
        h = rawdev.ops.profiler._record_function_enter("outer_range")
        rawdev.ones(4).sum()
        rawdev.ops.profiler._record_function_exit(h)
    rows = {r.key: r for r in prof.key_averages()}
    assert rows["outer_range"].count == 1 and rows["outer_range"].cpu_time_total > 0
