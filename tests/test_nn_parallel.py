"""torch.nn.parallel's scatter, gather, replicate and parallel_apply, and DataParallel built on them, across two
simulated GPUs in one process (the `devices(2)` marker): chunks land on their devices, nested structures keep
their shape, gradients through scatter / replicate / gather equal a single-device run (float64 references
computed with numpy), replicas share nothing but keep autograd to the original parameters, parallel_apply runs
threads and re-raises a replica's error naming it; on the cpu, parallel_apply runs and data_parallel calls the
module."""
import collections

import numpy as np
import pytest
import rawdev
from rawdev import nn
from rawdev.nn.parallel import data_parallel, gather, parallel_apply, replicate, scatter, scatter_kwargs

rng = np.random.default_rng()
Pair = collections.namedtuple("Pair", "a b")


def arr(*shape):
    return rng.standard_normal(shape).astype(np.float32)


def mlp():
    return nn.Sequential(nn.Linear(3, 5), nn.Tanh(), nn.Linear(5, 2))


def mlp_ref(model, x):
    """float64 forward of mlp() and d(sum y^2)/d(W1, x), independently of rawdev."""
    w1, b1, w2, b2 = (p.detach().cpu().numpy().astype(np.float64) for p in model.parameters())
    h = np.tanh(x @ w1.T + b1)
    y = h @ w2.T + b2
    gh = (2 * y) @ w2 * (1 - h ** 2)
    return y, gh.T @ x, gh @ w1


@pytest.mark.devices(2)
def test_scatter_splits_nested_inputs_onto_the_devices(device):
    x = rawdev.tensor(arr(5, 3))
    parts = scatter(x, [0, 1])
    assert [tuple(p.shape) for p in parts] == [(3, 3), (2, 3)]
    assert [str(p.device) for p in parts] == ["cuda:0", "cuda:1"]
    np.testing.assert_array_equal(np.concatenate([p.cpu().numpy() for p in parts]), x.numpy())
    nested = scatter((x, [x, 7], {"k": x}, Pair(x, "s")), ["cuda:0", rawdev.device("cuda", 1)])
    assert len(nested) == 2
    first = nested[1]
    assert isinstance(first, tuple) and isinstance(first[1], list) and first[1][1] == 7
    assert tuple(first[2]["k"].shape) == (2, 3) and isinstance(first[3], Pair) and first[3].b == "s"
    assert str(first[0].device) == "cuda:1"
    assert len(scatter(rawdev.ones(1, 2), [0, 1])) == 1   # fewer rows than devices: fewer chunks, as PyTorch
    cols = scatter(x, [0, 1], dim=1)
    assert [tuple(p.shape) for p in cols] == [(5, 2), (5, 1)]
    args, kwargs = scatter_kwargs((x,), {"scale": 2.0}, [0, 1])
    assert len(args) == len(kwargs) == 2 and kwargs[1] == {"scale": 2.0}
    args, kwargs = scatter_kwargs((x,), None, [0, 1])
    assert kwargs == ({}, {})


@pytest.mark.devices(2)
def test_gather_concatenates_on_the_target_device_with_nesting(device):
    a, b = rawdev.ones(2, 3, device="cuda:0"), rawdev.zeros(1, 3, device="cuda:1")
    g = gather([a, b], 0)
    assert str(g.device) == "cuda:0" and g.tolist() == [[1.0] * 3, [1.0] * 3, [0.0] * 3]
    assert gather([a, b], -1).device.type == "cpu"
    assert str(gather([a, b], "cuda:1").device) == "cuda:1"
    out = gather([{"y": a, "n": None}, {"y": b, "n": None}], 0)
    assert tuple(out["y"].shape) == (3, 3) and out["n"] is None
    pair = gather([Pair(a, a), Pair(b, b)], 1)
    assert isinstance(pair, Pair) and str(pair.a.device) == "cuda:1"
    with pytest.warns(UserWarning, match="all input tensors were scalars; will instead unsqueeze"):
        s = gather([a.sum(), b.sum()], 0)
    assert s.tolist() == [6.0, 0.0]
    with pytest.raises(AssertionError, match="Gather function not implemented for CPU tensors"):
        gather([rawdev.ones(1), rawdev.ones(1)], 0)
    with pytest.raises(ValueError, match="All dicts must have the same number of keys"):
        gather([{"y": a}, {"y": b, "z": b}], 0)


@pytest.mark.devices(2)
def test_gradients_through_scatter_and_gather_equal_one_device(device):
    x_np, w_np = arr(6, 4), arr(4)
    x = rawdev.tensor(x_np, device="cuda:0", requires_grad=True)
    w = rawdev.tensor(w_np, device="cuda:0", requires_grad=True)
    outs = [p * w.to(p.device) for p in scatter(x, [0, 1])]
    y = gather(outs, 0)
    (y * y).sum().backward()
    x64, w64 = x_np.astype(np.float64), w_np.astype(np.float64)
    np.testing.assert_allclose(x.grad.cpu().numpy(), 2 * x64 * w64 ** 2, rtol=1e-5)
    np.testing.assert_allclose(w.grad.cpu().numpy(), (2 * x64 ** 2 * w64).sum(0), rtol=1e-5)


@pytest.mark.devices(2)
def test_replicas_share_nothing_but_gradients_flow_to_the_original(device):
    model = mlp().to("cuda:0")
    model.register_buffer("steps", rawdev.zeros(1, device="cuda:0"))
    r0, r1 = replicate(model, [0, 1])
    assert list(r0.parameters()) == [] and list(r1.parameters()) == []   # PyTorch's replicas hold no Parameters
    w1 = r1[0].weight
    assert str(w1.device) == "cuda:1" and not w1.is_leaf and w1.requires_grad
    assert r0.steps is model.steps and str(r1.steps.device) == "cuda:1"   # buffers: the same on devices[0]
    assert r0[0] is not model[0] and r0.training == model.training
    x_np = arr(7, 3)
    x0, x1 = scatter(rawdev.tensor(x_np), [0, 1])
    y = gather([r0(x0), r1(x1)], 0)
    (y * y).sum().backward()
    y_ref, gw1, _ = mlp_ref(model, x_np.astype(np.float64))
    np.testing.assert_allclose(y.detach().cpu().numpy(), y_ref, rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(model[0].weight.grad.cpu().numpy(), gw1, rtol=1e-4, atol=1e-5)
    assert model[0].weight.grad.device == model[0].weight.device
    d0, d1 = replicate(model, [0, 1], detach=True)
    assert not d1[0].weight.requires_grad and d1[0].weight.grad_fn is None
    with pytest.raises(AssertionError, match="Broadcast function not implemented for CPU tensors"):
        replicate(mlp(), [0, 1])
    assert replicate(model, []) == []


@pytest.mark.devices(2)
def test_parallel_apply_runs_each_replica_on_its_device_and_names_a_failing_one(device):
    seen = {}

    class Probe(nn.Module):
        def forward(self, x, add=0.0):
            seen[str(x.device)] = (rawdev.cuda.current_device(), rawdev.is_grad_enabled())
            return x + add

    a, b = rawdev.ones(2, device="cuda:0"), rawdev.ones(2, device="cuda:1")
    outs = parallel_apply([Probe(), Probe()], [(a,), b], [{"add": 1.0}, {}])   # a lone tensor is one argument
    assert outs[0].tolist() == [2.0, 2.0] and str(outs[1].device) == "cuda:1"
    assert seen == {"cuda:0": (0, True), "cuda:1": (1, True)}
    with rawdev.no_grad():
        parallel_apply([Probe(), Probe()], [(a,), (b,)], devices=[0, 1])
    assert seen["cuda:1"] == (1, False)

    class Bad(nn.Module):
        def forward(self, x):
            raise ValueError("broken replica")

    with pytest.raises(ValueError, match=r"(?s)Caught ValueError in replica 1 on device 1\..*broken replica"):
        parallel_apply([Probe(), Bad()], [(a,), (b,)])
    with pytest.raises(AssertionError, match="The number of modules 2 is not equal to the number of inputs 1"):
        parallel_apply([Probe(), Probe()], [(a,)])
    with pytest.raises(RuntimeError, match="in replica 0, no device was provided and no tensor input was found"):
        parallel_apply([Probe(), Probe()], [(1,), (2,)])


@pytest.mark.devices(2)
def test_data_parallel_over_two_devices_equals_one_device(device):
    model = mlp()
    x_np = arr(9, 3)
    dp = nn.DataParallel(model, device_ids=[0, 1])
    assert dp.device_ids == [0, 1] and model[0].weight.is_cuda
    y = dp(rawdev.tensor(x_np))
    assert str(y.device) == "cuda:0" and tuple(y.shape) == (9, 2)
    (y * y).sum().backward()
    y_ref, gw1, _ = mlp_ref(model, x_np.astype(np.float64))
    np.testing.assert_allclose(y.detach().cpu().numpy(), y_ref, rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(model[0].weight.grad.cpu().numpy(), gw1, rtol=1e-4, atol=1e-5)
    out_cpu = nn.DataParallel(model, device_ids=[0, 1], output_device=-1)(rawdev.tensor(x_np))
    assert out_cpu.device.type == "cpu"
    with rawdev.no_grad():   # detached replicas
        assert not dp(rawdev.tensor(x_np)).requires_grad
    model.zero_grad()
    y2 = data_parallel(model, rawdev.tensor(x_np), device_ids=[0, 1])
    (y2 * y2).sum().backward()
    np.testing.assert_allclose(model[0].weight.grad.cpu().numpy(), gw1, rtol=1e-4, atol=1e-5)
    model.cpu()
    with pytest.raises(RuntimeError, match=r"module must have its parameters and buffers on device cuda:0"):
        data_parallel(model, rawdev.tensor(x_np), device_ids=[0, 1])


@pytest.mark.cuda
def test_one_device_moves_the_inputs_and_runs_once(device):
    model = mlp().to(device)
    x_np = arr(4, 3)
    y = data_parallel(model, rawdev.tensor(x_np))
    assert y.is_cuda
    np.testing.assert_allclose(y.detach().cpu().numpy(), mlp_ref(model, x_np.astype(np.float64))[0], rtol=1e-4,
                               atol=1e-5)
    assert len(scatter(rawdev.tensor(x_np), [0])) == 1


def test_on_the_cpu_parallel_apply_runs_and_data_parallel_calls_the_module(monkeypatch):
    lins = [nn.Linear(3, 2), nn.Linear(3, 2)]
    xs = [rawdev.tensor(arr(2, 3)), rawdev.tensor(arr(4, 3))]
    outs = parallel_apply(lins, [(x,) for x in xs])
    for lin, x, out in zip(lins, xs, outs):
        w, b = lin.weight.detach().numpy().astype(np.float64), lin.bias.detach().numpy().astype(np.float64)
        ref = x.numpy().astype(np.float64) @ w.T + b
        np.testing.assert_allclose(out.detach().numpy(), ref, rtol=1e-5, atol=1e-6)
    from rawdev import runtime
    monkeypatch.setattr(runtime, "is_available", lambda: False)   # a machine without a GPU
    lin = nn.Linear(3, 2)
    assert data_parallel(lin, xs[0]).tolist() == lin(xs[0]).tolist()
