"""torch.distributed.pipeline.sync.Pipe over two simulated GPUs in one process: the Sequential is cut into
per-device partitions, micro-batches give the same output and gradients as running the model whole (float64
reference), under every checkpoint mode; the output comes back as an RRef; PyTorch's errors for misuse."""
import tempfile

import numpy as np
import pytest
import rawdev
from rawdev import nn
from rawdev.distributed import rpc
from rawdev.distributed.pipeline.sync import Pipe

from _refs import rng


@pytest.fixture
def rpc_worker():
    with tempfile.NamedTemporaryFile() as f:
        rpc.init_rpc("worker", rank=0, world_size=1,
                     rpc_backend_options=rpc.TensorPipeRpcBackendOptions(init_method=f"file://{f.name}"))
        yield
        rpc.shutdown()


def _ref(ws, x):
    """float64 forward of Linear-Tanh-Linear and d(sum y^2)/d(first weight)."""
    w1, b1, w2, b2 = (np.asarray(t.detach().cpu(), dtype=np.float64) for t in ws)
    h = np.tanh(x @ w1.T + b1)
    y = h @ w2.T + b2
    gh = (2 * y) @ w2 * (1 - h ** 2)
    return y, gh.T @ x


@pytest.mark.devices(2)
@pytest.mark.parametrize("mode", ["except_last", "always", "never"])
def test_pipe_over_two_devices_equals_the_whole_model(device, rpc_worker, mode):
    rawdev.manual_seed(0)
    first, second = nn.Linear(6, 8).to("cuda:0"), nn.Linear(8, 3).to("cuda:1")
    model = Pipe(nn.Sequential(first, nn.Tanh(), second), chunks=3, checkpoint=mode)
    assert [str(d) for d in model.devices] == ["cuda:0", "cuda:1"] and len(model.partitions) == 2
    x64 = rng().standard_normal((7, 6))
    x = rawdev.tensor(x64, dtype=rawdev.float32, device="cuda:0")
    out = model(x).local_value()
    assert str(out.device) == "cuda:1" and tuple(out.shape) == (7, 3)
    (out ** 2).sum().backward()
    want_y, want_g = _ref([first.weight, first.bias, second.weight, second.bias], x64)
    np.testing.assert_allclose(out.detach().cpu().numpy(), want_y, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(first.weight.grad.cpu().numpy(), want_g, rtol=1e-4, atol=1e-5)
    assert len(model) == 3 and model[2] is second and list(model)[0] is first


def test_pipe_misuse_errors(rpc_worker):
    with pytest.raises(TypeError, match="module must be nn.Sequential to be partitioned"):
        Pipe(nn.Linear(2, 2))
    with pytest.raises(ValueError, match="number of chunks must be positive integer"):
        Pipe(nn.Sequential(nn.Linear(2, 2)), chunks=0)
    with pytest.raises(ValueError, match="checkpoint is not one of"):
        Pipe(nn.Sequential(nn.Linear(2, 2)), checkpoint="sometimes")
    with pytest.raises(NotImplementedError, match="deferred_batch_norm"):
        Pipe(nn.Sequential(nn.Linear(2, 2)), deferred_batch_norm=True)
    pipe = Pipe(nn.Sequential(nn.Linear(2, 2), nn.ReLU()), chunks=2)   # one cpu partition
    x = rawdev.randn(4, 2)
    np.testing.assert_allclose(pipe(x).local_value().detach().numpy(), pipe.module(x).detach().numpy(), rtol=1e-6)


def test_pipe_needs_rpc():
    with pytest.raises(RuntimeError, match="Please initialize RPC framework for Pipe"):
        Pipe(nn.Sequential(nn.Linear(2, 2)))
