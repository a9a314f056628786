"""CUDA graphs: capture on the compute stream, replay with one cuGraphLaunch, a private memory pool, and the
driver's capture rules on the simulator (what a GPU refuses inside a capture, the simulator refuses too)."""
import gc

import numpy as np
import pytest
import rawdev
from rawdev import nn
from rawdev.errors import CudaError, OutOfMemoryError
from rawdev.runtime import get_device, seam, trace

RNG = np.random.default_rng(11)


def _mlp(seed):
    rawdev.manual_seed(seed)
    return nn.Sequential(nn.Linear(6, 16), nn.ReLU(), nn.Linear(16, 3))


def test_replay_is_one_launch_and_reads_the_static_input(dev):
    x = rawdev.zeros(7, 5, device="cuda")
    w = rawdev.tensor(RNG.standard_normal((5, 4)), dtype=rawdev.float32).cuda()
    g = rawdev.cuda.CUDAGraph()
    with rawdev.cuda.graph(g):
        y = (x @ w).relu() * 2 + 1
    assert g.num_nodes() >= 3
    for _ in range(3):   # fresh inputs each time: the replay reads what the static input holds now
        a = RNG.standard_normal((7, 5)).astype(np.float32)
        x.copy_(rawdev.from_numpy(a).cuda())
        with trace() as t:
            g.replay()
        assert [c.fn for c in t] == ["cuGraphLaunch"]
        ref = np.maximum(a.astype(np.float64) @ w.cpu().numpy().astype(np.float64), 0) * 2 + 1
        np.testing.assert_allclose(y.cpu().numpy(), ref, rtol=1e-5, atol=1e-5)


def test_nothing_runs_while_capturing(dev):
    x = rawdev.ones(4, device="cuda")
    g = rawdev.cuda.CUDAGraph()
    with rawdev.cuda.graph(g):
        x.mul_(3)
    assert (x.cpu().numpy() == 1).all()       # captured, not run
    g.replay()
    g.replay()
    assert (x.cpu().numpy() == 9).all()


def test_whole_training_step_replays_like_eager(dev):
    eager, graphed = _mlp(0).cuda(), _mlp(0).cuda()
    opt_e = rawdev.optim.SGD(eager.parameters(), lr=0.05, momentum=0.9)
    opt_g = rawdev.optim.SGD(graphed.parameters(), lr=0.05, momentum=0.9)
    loss_fn = nn.CrossEntropyLoss()
    batches = [(RNG.standard_normal((8, 6)).astype(np.float32), RNG.integers(0, 3, 8)) for _ in range(6)]

    def eager_step(m, opt, xb, yb):
        opt.zero_grad()
        loss = loss_fn(m(xb), yb)
        loss.backward()
        opt.step()
        return loss

    # warm up both the same way (the momentum buffers and grads exist before the capture)
    for xb, yb in batches[:2]:
        for m, o in ((eager, opt_e), (graphed, opt_g)):
            eager_step(m, o, rawdev.from_numpy(xb).cuda(), rawdev.from_numpy(yb).cuda())
    static_x = rawdev.zeros(8, 6, device="cuda")
    static_y = rawdev.zeros(8, dtype=rawdev.int64, device="cuda")
    g = rawdev.cuda.CUDAGraph()
    opt_g.zero_grad(set_to_none=True)
    with rawdev.cuda.graph(g):
        static_loss = loss_fn(graphed(static_x), static_y)
        static_loss.backward()
        opt_g.step()
    for xb, yb in batches[2:]:
        le = eager_step(eager, opt_e, rawdev.from_numpy(xb).cuda(), rawdev.from_numpy(yb).cuda())
        static_x.copy_(rawdev.from_numpy(xb).cuda())
        static_y.copy_(rawdev.from_numpy(yb).cuda())
        g.replay()
        assert abs(static_loss.item() - le.item()) <= 1e-5 * max(1.0, abs(le.item()))
    for pe, pg in zip(eager.parameters(), graphed.parameters()):
        np.testing.assert_allclose(pg.detach().cpu().numpy(), pe.detach().cpu().numpy(), rtol=1e-5, atol=1e-6)


def test_a_host_read_inside_a_capture_fails_and_leaves_the_device_usable(dev):
    rdev = get_device(0)
    x = rawdev.ones(3, device="cuda")
    rdev.synchronize()
    base = rawdev.cuda.memory_allocated()
    g = rawdev.cuda.CUDAGraph()
    with pytest.raises(CudaError) as ei:
        with rawdev.cuda.graph(g):
            y = x * 2
            y.sum().item()                    # a device-to-host read cannot be captured
    assert "CAPTURE" in ei.value.name
    del y, ei
    gc.collect()
    keep = rawdev.ones(1, device="cuda")      # an allocation flushes the queued frees
    assert rawdev.cuda.memory_allocated() == base + keep.nbytes   # the failed capture's pool is gone
    assert not rawdev.cuda.is_current_stream_capturing()
    assert (x * 3).sum().item() == 9.0        # the device still works


def test_pool_too_small_is_an_out_of_memory_error_with_the_fix(dev):
    g = rawdev.cuda.CUDAGraph()
    with pytest.raises(OutOfMemoryError, match="pool_size"):
        with rawdev.cuda.graph(g, pool_size=1024):
            rawdev.ones(10_000, device="cuda") * 2


def test_outputs_outlive_reset_and_the_pool_goes_with_the_last(dev):
    rdev = get_device(0)
    x = rawdev.ones(16, device="cuda")
    rdev.synchronize()
    base = rawdev.cuda.memory_allocated()
    g = rawdev.cuda.CUDAGraph()
    with rawdev.cuda.graph(g, pool_size=1 << 16):
        y = x + 1
    assert rawdev.cuda.memory_allocated() == base + (1 << 16)
    g.replay()
    g.reset()
    assert (y.cpu().numpy() == 2).all()       # the output's range stays valid after reset
    del y
    gc.collect()
    keep = rawdev.ones(1, device="cuda")      # an allocation flushes the queued frees
    assert rawdev.cuda.memory_allocated() == base + keep.nbytes


def test_two_graphs_share_a_pool(dev):
    pool = rawdev.cuda.graph_pool_handle()
    x = rawdev.ones(8, device="cuda")
    g1, g2 = rawdev.cuda.CUDAGraph(), rawdev.cuda.CUDAGraph()
    with rawdev.cuda.graph(g1, pool=pool):
        y1 = x * 2
    with rawdev.cuda.graph(g2, pool=g1.pool()):
        y2 = y1 + 1
    g1.replay()
    g2.replay()
    assert (y2.cpu().numpy() == 3).all()
    assert g1._g.pool is g2._g.pool


def test_make_graphed_callables_matches_eager_forward_and_backward(dev):
    ref, model = _mlp(3).cuda(), _mlp(3).cuda()
    x0 = rawdev.randn(5, 6, device="cuda", requires_grad=True)
    model = rawdev.cuda.make_graphed_callables(model, (x0,), num_warmup_iters=2)
    for p in model.parameters():
        p.grad = None
    for _ in range(2):
        a = rawdev.from_numpy(RNG.standard_normal((5, 6)).astype(np.float32))
        xe, xg = a.cuda().requires_grad_(), a.cuda().requires_grad_()
        ye, yg = ref(xe), model(xg)
        np.testing.assert_allclose(yg.detach().cpu().numpy(), ye.detach().cpu().numpy(), rtol=1e-5, atol=1e-6)
        (ye * ye).sum().backward()
        (yg * yg).sum().backward()
        np.testing.assert_allclose(xg.grad.cpu().numpy(), xe.grad.cpu().numpy(), rtol=1e-4, atol=1e-6)
    for pe, pg in zip(ref.parameters(), model.parameters()):
        np.testing.assert_allclose(pg.grad.cpu().numpy(), pe.grad.cpu().numpy(), rtol=1e-4, atol=1e-6)


# ------------------------------------------------------------------ the simulator keeps the driver's capture rules
def _drv():
    return seam.driver()


def test_sim_refuses_what_a_capture_cannot_hold(driver):
    if driver != "sim":
        pytest.skip("checks the simulator's model of the driver")
    from cuda.bindings.driver import CUresult as R
    rdev = get_device(0)
    d = _drv()
    s = rdev.compute_stream.handle
    # a synchronize inside a capture: unsupported, and the capture is invalidated
    assert d.cuStreamBeginCapture(s, 0)[0] == R.CUDA_SUCCESS
    assert d.cuStreamSynchronize(s)[0] == R.CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED
    assert d.cuStreamIsCapturing(s)[1].value == 2
    assert d.cuStreamEndCapture(s)[0] == R.CUDA_ERROR_STREAM_CAPTURE_INVALIDATED
    # waiting on an event recorded outside the capture crosses its boundary
    ev = rdev.copy_stream.record_event()
    assert d.cuStreamBeginCapture(s, 0)[0] == R.CUDA_SUCCESS
    assert d.cuStreamWaitEvent(s, ev.handle, 0)[0] == R.CUDA_ERROR_STREAM_CAPTURE_ISOLATION
    d.cuStreamEndCapture(s)
    # the legacy stream during a global-mode capture
    buf = rawdev.zeros(4, device="cuda")
    assert d.cuStreamBeginCapture(s, 0)[0] == R.CUDA_SUCCESS
    host = np.zeros(16, np.uint8)
    assert d.cuMemcpyHtoD(buf.data_ptr(), host.ctypes.data, 16)[0] == R.CUDA_ERROR_STREAM_CAPTURE_IMPLICIT
    d.cuStreamEndCapture(s)
    # a stream that joined the capture (fork) must be joined back before it ends
    assert d.cuStreamBeginCapture(s, 0)[0] == R.CUDA_SUCCESS
    fork = rdev.compute_stream.record_event()
    rdev.copy_stream.wait_event(fork)
    assert d.cuMemsetD8Async(buf.data_ptr(), 1, 16, rdev.copy_stream.handle)[0] == R.CUDA_SUCCESS
    assert d.cuStreamEndCapture(s)[0] == R.CUDA_ERROR_STREAM_CAPTURE_UNJOINED
    # the legacy stream itself cannot be captured; an allocation on a capturing stream is refused
    assert d.cuStreamBeginCapture(0, 0)[0] == R.CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED
    assert d.cuStreamBeginCapture(s, 0)[0] == R.CUDA_SUCCESS
    assert d.cuMemAllocFromPoolAsync(256, rdev.pool, s)[0] == R.CUDA_ERROR_NOT_SUPPORTED
    d.cuStreamEndCapture(s)
    assert (buf.cpu().numpy() == 0).all()     # nothing captured ever ran


def test_capturing_an_optimizer_that_counts_steps_on_the_host_is_refused(dev):
    model = _mlp(1).cuda()
    opt = rawdev.optim.Adam(model.parameters(), lr=1e-3)
    x = rawdev.randn(4, 6, device="cuda")
    model(x).sum().backward()
    opt.step()   # warm-up: the state exists
    g = rawdev.cuda.CUDAGraph()
    with pytest.raises(RuntimeError, match="capturable is False"):
        with rawdev.cuda.graph(g):
            opt.step()
    assert not rawdev.cuda.is_current_stream_capturing()
    opt.step()   # eager steps still work


def test_a_module_moved_inside_a_capture_polls_no_event(dev):
    """An arena upload inside a capture must not query the cached staging buffer's event (cuEventQuery is refused
    during a global capture and invalidates it); the capture succeeds and the replay computes what eager does."""
    first = _mlp(1).cuda()        # leaves a staging buffer cached, with the event of its copy
    assert first is not None
    late = _mlp(2)
    ref = late(rawdev.ones(3, 6)).detach().numpy().astype(np.float64)
    x = rawdev.ones(3, 6, device="cuda")
    g = rawdev.cuda.CUDAGraph()
    with rawdev.cuda.graph(g):
        late.cuda()
        y = late(x)
    g.replay()
    np.testing.assert_allclose(y.detach().cpu().numpy(), ref, rtol=1e-5, atol=1e-6)
