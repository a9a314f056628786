"""torch.export: a forward captured on example inputs as a graph of rawdev's ops — the exported module equals
the model (MLP, CNN with batch norm, LSTM, transformer layer; cpu and cuda), refuses inputs of other sizes unless a
Dim makes them dynamic, records sizes read from tensors so dynamic shapes stay right, raises on control flow over
values and on a dimension the program fixes, and keeps PyTorch's API (graph_signature, state_dict, Dim, dims,
dynamic_dim constraints, constrain_as_size)."""
import numpy as np
import pytest
import rawdev
from rawdev.export import ConstraintViolationError, DataDependentError, Dim, UserError, dims, dynamic_dim, export

from _refs import rng

nn = rawdev.nn


def _inp(shape, device):
    return rawdev.tensor(rng().standard_normal(shape).astype(np.float32), device=device)


def _models():
    rawdev.manual_seed(0)
    return {
        "mlp": (nn.Sequential(nn.Linear(8, 16), nn.GELU(), nn.Linear(16, 3)), (4, 8)),
        "cnn": (nn.Sequential(nn.Conv2d(3, 4, 3, padding=1), nn.BatchNorm2d(4), nn.ReLU(), nn.MaxPool2d(2),
                              nn.Flatten(), nn.Linear(4 * 4 * 4, 5)), (2, 3, 8, 8)),
        "lstm": (nn.LSTM(4, 6, batch_first=True), (2, 5, 4)),
        "transformer": (nn.TransformerEncoderLayer(8, 2, 16, dropout=0.0, batch_first=True), (2, 5, 8)),
    }


@pytest.mark.parametrize("device", ["cpu", "cuda"])
@pytest.mark.parametrize("name", ["mlp", "cnn", "lstm", "transformer"])
def test_exported_module_equals_the_model(driver, device, name):
    model, shape = _models()[name]
    model = model.to(device).eval()
    x = _inp(shape, device)
    ep = export(model, (x,))
    x2 = _inp(shape, device)             # other values, same shape
    got, want = ep.module()(x2), model(x2)
    got = got[0] if isinstance(got, tuple) else got
    want = want[0] if isinstance(want, tuple) else want
    np.testing.assert_allclose(got.detach().cpu().numpy(), want.detach().cpu().numpy(), rtol=1e-5, atol=1e-6)
    assert sorted(ep.graph_signature.parameters) == sorted(n for n, _ in model.named_parameters())
    assert ep.graph_signature.user_inputs == [next(iter(__import__("inspect").signature(model.forward).parameters))]
    assert any(n.op in ("call_function", "call_method", "call_module") for n in ep.graph.nodes)


def test_exported_module_trains_the_models_parameters():
    model, shape = _models()["mlp"]
    ep = export(model, (_inp(shape, "cpu"),))
    gm = ep.module()
    x = _inp(shape, "cpu")
    gm(x).square().sum().backward()
    got = [p.grad.numpy().copy() for p in model.parameters()]   # the graph module shares the parameters
    model.zero_grad()
    model(x).square().sum().backward()
    for g, p in zip(got, model.parameters()):
        np.testing.assert_allclose(g, p.grad.numpy(), rtol=1e-6)


def test_static_shapes_are_checked_and_dims_open_them():
    model, _ = _models()["mlp"]
    ep = export(model, (_inp((4, 8), "cpu"),))
    with pytest.raises(RuntimeError, match=r"Expected input at input.shape\[0\] to be equal to 4, but got 5"):
        ep.module()(_inp((5, 8), "cpu"))
    batch = Dim("batch", min=2, max=16)
    ep = export(model, (_inp((4, 8), "cpu"),), dynamic_shapes={"input": {0: batch}})
    x = _inp((11, 8), "cpu")
    np.testing.assert_allclose(ep.module()(x).detach().numpy(), model(x).detach().numpy(), rtol=1e-6)
    assert ep.range_constraints == {"batch": (2, 16)}
    with pytest.raises(RuntimeError, match=r"shape\[0\] to be <= 16, but got 17"):
        ep.module()(_inp((17, 8), "cpu"))
    with pytest.raises(RuntimeError, match=r"shape\[1\] to be equal to 8"):
        ep.module()(_inp((4, 9), "cpu"))


class _Flatten(nn.Module):
    def forward(self, x):
        b, t = x.shape
        return x.view(x.size(0), -1).sum(1) + rawdev.arange(t).float().sum() + x.reshape(b * t // 2, 2).sum()


class _Fixed(nn.Module):
    def forward(self, x):
        return x.sum(1) + x.new_zeros(int(x.shape[0]))   # int(): the example's size, baked into the graph


def test_sizes_read_from_tensors_follow_the_run_time_shape():
    n, t = dims("n", "t")
    ep = export(_Flatten(), (_inp((4, 6), "cpu"),), dynamic_shapes=({0: n, 1: t},))
    for shape in [(4, 6), (7, 10), (2, 2)]:
        x = _inp(shape, "cpu")
        np.testing.assert_allclose(ep.module()(x).numpy(), _Flatten()(x).numpy(), rtol=1e-5)


def test_a_dimension_the_program_fixes_is_a_constraint_violation():
    with pytest.raises(ConstraintViolationError, match=r"Constraints violated \(n\)"):
        export(_Fixed(), (_inp((4, 6), "cpu"),), dynamic_shapes=({0: Dim("n")},))
    with pytest.raises(ConstraintViolationError, match="inferred to be a constant"):
        export(_Fixed(), (_inp((1, 6), "cpu"),), dynamic_shapes=({0: Dim("n")},))


class _Branch(nn.Module):
    def forward(self, x):
        if x.sum() > 0:
            return x * 2
        return x


class _Item(nn.Module):
    def forward(self, x):
        return rawdev.zeros(int(x.max().item()) + 1)


def test_control_flow_on_values_cannot_be_exported():
    with pytest.raises(DataDependentError, match="data-dependent"):
        export(_Branch(), (_inp((3,), "cpu"),))
    with pytest.raises(DataDependentError, match="item"):
        export(_Item(), (rawdev.tensor([1.0, 3.0]),))


def test_api_edges():
    model, _ = _models()["mlp"]
    x = _inp((4, 8), "cpu")
    with pytest.raises(ValueError, match="Expected `mod` to be an instance of `torch.nn.Module`"):
        export(lambda t: t, (x,))
    with pytest.raises(UserError, match="tuple of example positional inputs"):
        export(model, x)
    ep = export(model, (x,))
    with pytest.raises(RuntimeError, match="Unable to call ExportedProgram directly"):
        ep(x)
    assert set(ep.state_dict) == set(model.state_dict())
    assert "ExportedProgram" in str(ep) and "linear" in str(ep)
    assert ep.run_decompositions() is ep
    ep2 = export(model, (x,), constraints=[dynamic_dim(x, 0) >= 2, dynamic_dim(x, 0) <= 32])
    assert list(ep2.range_constraints.values()) == [(2, 32)]
    assert ep2.module()(_inp((9, 8), "cpu")).shape == (9, 3)
    rawdev.export.constrain_as_size(5, min=4, max=7)
    with pytest.raises(RuntimeError, match="Invalid value range"):
        rawdev.export.constrain_as_value(9, min=4, max=7)
    with pytest.raises(NotImplementedError):
        rawdev.export.save(ep, "ep.pt2")
    assert repr(Dim("b", min=2, max=8)) == "Dim('b', min=2, max=8)"


class _BelowTheOps(nn.Module):
    def forward(self, x):
        doubled = rawdev.tensor(np.asarray(x._values()) * 2)   # reads x's values past the recorded ops
        return x + doubled


def test_a_value_baked_in_below_the_recorded_ops_is_caught_not_returned():
    with pytest.raises(UserError, match="does not reproduce the model on other input values"):
        export(_BelowTheOps(), (_inp((5,), "cpu"),))


def test_training_mode_dropout_and_batch_norm_buffers_survive_the_export():
    rawdev.manual_seed(0)
    model = nn.Sequential(nn.Linear(4, 8), nn.BatchNorm1d(8), nn.Dropout(0.5))
    x = _inp((6, 4), "cpu")
    before = {k: v.clone() for k, v in model.state_dict().items()}
    ep = export(model, (x,))
    after = model.state_dict()
    # the capture itself ran the forward once (as PyTorch's export does); its checking runs are undone
    model2 = nn.Sequential(nn.Linear(4, 8), nn.BatchNorm1d(8), nn.Dropout(0.5))
    model2.load_state_dict(before)
    with rawdev.no_grad():
        model2(x)
    for k in after:
        np.testing.assert_allclose(after[k].numpy(), model2.state_dict()[k].numpy(), rtol=1e-6)
    assert ep.module().training
