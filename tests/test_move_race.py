"""Moving a model while other threads run its forward: a storage a move swaps out stays alive until every launch
that read it is queued (its free is then ordered after them on the stream), and an op whose operand was moved
to the cpu under it raises PyTorch's device-mismatch error instead of handing a kernel a host address. Never a
kernel reading freed or host memory (a sticky illegal-address fault that ends all CUDA work)."""
import sys
import threading
import time

import numpy as np
import pytest
import rawdev
from rawdev import nn
from rawdev.ops import linalg
from rawdev.runtime import get_device, kernels


def rel_err(got, want):
    return float(np.abs(got.astype(np.float64) - want).max() / max(np.abs(want).max(), 1e-30))


def _model(seed):
    rawdev.manual_seed(seed)
    return nn.Sequential(nn.Linear(16, 32), nn.ReLU(), nn.Linear(32, 8)).cuda()


def _ref(m, x):
    """float64 numpy reference of the model's forward."""
    w0, b0, w2, b2 = (p.detach().cpu().numpy().astype(np.float64) for p in m.parameters())
    h = np.maximum(x @ w0.T + b0, 0)
    return h @ w2.T + b2


def test_storage_swapped_between_pointer_read_and_launch_stays_alive(dev, monkeypatch):
    """The interleaving the threads hit, made deterministic: an op has read its operands' addresses when
    another thread moves the module to the cpu (the old arena's free is queued, then flushed at a safe point)
    before the kernel is launched."""
    m = nn.Linear(16, 16).cuda()
    x_np = np.random.default_rng(0).standard_normal((16, 16)).astype(np.float32)
    x = rawdev.tensor(x_np, device="cuda")
    want = x_np.astype(np.float64) * m.weight.detach().cpu().numpy().astype(np.float64)
    real_launch = kernels.Kernel.launch
    moved = []

    def launch(self, grid, block, args, shared_mem=0, stream=None):
        if not moved:
            moved.append(self.name)
            m.cpu()
            rawdev.cuda.synchronize()   # a safe point: the queued free of the old arena goes to the driver
        return real_launch(self, grid, block, args, shared_mem, stream)

    monkeypatch.setattr(kernels.Kernel, "launch", launch)
    with rawdev.no_grad():
        y = x * m.weight   # the elementwise kernel reads the weight's storage directly
    monkeypatch.undo()
    assert moved and not m.weight.is_cuda
    rawdev.cuda.synchronize()   # before the fix: CUDA_ERROR_ILLEGAL_ADDRESS (the kernel read the freed arena)
    assert y.is_cuda and rel_err(y.cpu().numpy(), want) < 1e-6
    m.cuda()
    with rawdev.no_grad():
        assert rel_err((x * m.weight).cpu().numpy(), want) < 1e-6   # the device still works


def test_dtype_cast_of_a_parameter_moved_before_its_kernel_is_launched(dev, monkeypatch):
    """Tensor.to(dtype) on the device (one cast kernel) holds the source storage the same way."""
    m = nn.Linear(8, 8).cuda()
    want = m.weight.detach().cpu().numpy().astype(np.float64)
    real_launch = kernels.Kernel.launch
    moved = []

    def launch(self, grid, block, args, shared_mem=0, stream=None):
        if not moved:
            moved.append(self.name)
            m.cpu()
            rawdev.cuda.synchronize()   # the old arena's free goes to the driver
        return real_launch(self, grid, block, args, shared_mem, stream)

    monkeypatch.setattr(kernels.Kernel, "launch", launch)
    with rawdev.no_grad():
        h = m.weight.to(rawdev.float16)
    monkeypatch.undo()
    assert moved
    rawdev.cuda.synchronize()   # before the fix: CUDA_ERROR_ILLEGAL_ADDRESS
    assert h.is_cuda and h.dtype is rawdev.float16
    assert rel_err(h.cpu().numpy(), want.astype(np.float16).astype(np.float64)) == 0


@pytest.mark.parametrize("kind", ["CrossEntropyLoss", "NLLLoss"])
def test_loss_class_weights_moved_before_the_loss_kernel_is_launched(dev, monkeypatch, kind):
    """A loss whose cuda code launches its own kernels (opmath.run) holds its arguments the same way: the class
    weights (a buffer of the loss module) moved to the cpu just before the launch."""
    rng = np.random.default_rng(5)
    logits_np = rng.standard_normal((6, 4)).astype(np.float32)
    target_np = rng.integers(0, 4, 6)
    w_np = rng.uniform(0.5, 2.0, 4).astype(np.float32)
    crit = getattr(nn, kind)(weight=rawdev.tensor(w_np)).cuda()
    lsm = logits_np.astype(np.float64) - np.log(np.exp(logits_np.astype(np.float64)).sum(1, keepdims=True))
    if kind == "NLLLoss":   # its input: log-probabilities (the loss's cuda code launches its kernel itself)
        logits_np = lsm.astype(np.float32)
    logits, target = rawdev.tensor(logits_np, device="cuda"), rawdev.tensor(target_np, device="cuda")
    wt = w_np.astype(np.float64)[target_np]
    want = -(wt * lsm[np.arange(6), target_np]).sum() / wt.sum()
    real_launch = kernels.Kernel.launch
    moved = []

    def launch(self, grid, block, args, shared_mem=0, stream=None):
        if self.name.startswith(("nll", "cross_entropy")) and not moved:
            moved.append(self.name)
            crit.cpu()
            rawdev.cuda.synchronize()   # the old storage's free goes to the driver
        return real_launch(self, grid, block, args, shared_mem, stream)

    monkeypatch.setattr(kernels.Kernel, "launch", launch)
    with rawdev.no_grad():
        loss = crit(logits, target)
    monkeypatch.undo()
    assert moved
    rawdev.cuda.synchronize()   # before the fix: CUDA_ERROR_ILLEGAL_ADDRESS
    assert abs(loss.item() - want) / abs(want) < 1e-5


def test_operand_moved_to_the_cpu_after_the_device_check_raises_device_mismatch(dev, monkeypatch):
    """The device check passed, then the weight went to the cpu: PyTorch's device-mismatch error, not a kernel
    reading a host address."""
    m = _model(1)
    x = rawdev.randn(4, 16, device="cuda")
    real_backend = linalg.backend

    def backend(op, *tensors):
        b = real_backend(op, *tensors)
        m.cpu()   # another thread moves the model right after the check
        return b

    monkeypatch.setattr(linalg, "backend", backend)
    with rawdev.no_grad(), pytest.raises(RuntimeError, match="Expected all tensors to be on the same device"):
        m(x)
    monkeypatch.undo()
    rawdev.cuda.synchronize()   # no sticky fault
    m.cuda()
    with rawdev.no_grad():
        assert rel_err(m(x).cpu().numpy(), _ref(m, x.cpu().numpy().astype(np.float64))) < 1e-5


@pytest.fixture
def fast_switching():
    old = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)
    yield
    sys.setswitchinterval(old)


def test_threads_running_forward_while_the_main_thread_moves_the_model(dev, fast_switching):
    """Two threads run m(x) under no_grad while the main thread alternates m.cpu() and m.cuda() (bounded
    rounds): each forward gives the right values or a device-mismatch error, and the device never faults."""
    seed = 1234
    m = _model(seed)
    x_np = np.random.default_rng(seed).standard_normal((4, 16)).astype(np.float32)
    x = rawdev.tensor(x_np, device="cuda")
    want = _ref(m, x_np.astype(np.float64))
    stop = threading.Event()
    results, errors, unexpected = [], [], []

    def forward():
        get_device(0).activate()
        while not stop.is_set():
            try:
                with rawdev.no_grad():
                    results.append(m(x))
            except RuntimeError as e:
                if "Expected all tensors to be on the same device" in str(e):
                    errors.append(e)
                else:
                    unexpected.append(e)
                    return
            except BaseException as e:
                unexpected.append(e)
                return

    threads = [threading.Thread(target=forward) for _ in range(2)]
    for t in threads:
        t.start()
    try:
        for _ in range(12):
            m.cpu()
            m.cuda()
        # on a loaded machine the moves can all finish before a thread's forward does: let one complete (the
        # model stays put now), bounded by a hang guard, never a speed check
        guard = time.monotonic() + 600
        while not results and not unexpected and time.monotonic() < guard:
            time.sleep(0.01)
    finally:
        stop.set()
        for t in threads:
            t.join()
    assert not unexpected, f"seed {seed}: {unexpected[0]!r}"
    rawdev.cuda.synchronize()   # no sticky fault
    assert results, f"seed {seed}: no forward completed"
    for y in results:
        assert rel_err(y.cpu().numpy(), want) < 1e-5, f"seed {seed}"


def test_a_cuda_op_leaves_no_reference_cycle_holding_its_arguments(driver):
    """The frozen aliases an op reads through are dropped when it returns: a tensor's memory goes back when its
    last reference dies (reference counting, as in PyTorch), not at the next garbage collection."""
    import gc
    gc.collect()
    gc.disable()
    try:
        x = rawdev.ones(4096, device="cuda")
        ys = [x + 1, rawdev.cat([x, x]), rawdev.stack((x, x * 2))]
        rawdev.cuda.synchronize()
        base = rawdev.cuda.memory_allocated() - 6 * 4096 * 4   # x, x + 1, the cat and the stack
        del x, ys
        _ = rawdev.empty(1, device="cuda")   # an allocation is a safe point: it issues the queued frees
        assert rawdev.cuda.memory_allocated() - base <= 512
    finally:
        gc.enable()
