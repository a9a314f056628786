"""Module and tensor moves: one copy, same Parameter objects, exact bytes, all-or-nothing; the runtime's
byte transfers (rawdev.runtime.transfer) on plain bytes."""
import gc
import traceback
from pathlib import Path

import numpy as np
import pytest
import rawdev
import rawdev.sim as sim
from cuda.bindings.driver import CUresult
from rawdev import dtypes
from rawdev.errors import CudaError, NoDeviceError, OutOfMemoryError
from rawdev.nn import Module, Parameter, Sequential
from rawdev.runtime import memory, reset_for_tests, seam, trace, transfer
from rawdev.tensor import randn, tensor, zeros

from _models import BN, Lin, mlp, snapshot

MOVE_CALLS = ["cuMemHostAlloc", "cuMemAllocFromPoolAsync", "cuMemcpyHtoDAsync", "cuEventCreate", "cuEventRecord",
              "cuStreamWaitEvent"]


def test_mlp_to_cuda_is_one_htod_copy_and_keeps_parameters(dev):
    m = mlp()
    assert len(list(m.parameters())) == 6
    ids = [id(p) for p in m.parameters()]
    before = snapshot(m)
    with trace() as t:
        m.cuda()
    assert t.count("cuMemcpyHtoDAsync") == 1
    assert t.count("cuMemcpyHtoD") == 0
    assert t.count("cuMemAllocFromPoolAsync") == 1
    assert t.count("cuMemHostAlloc") == 1
    assert [id(p) for p in m.parameters()] == ids
    assert all(p.is_cuda and str(p.device) == "cuda:0" for p in m.parameters())
    # every tensor is a view into the one arena, at an aligned offset
    bufs = {id(p._buf) for p in m.parameters()}
    assert len(bufs) == 1
    assert all(p._offset % memory.ARENA_ALIGN == 0 for p in m.parameters())
    with trace() as t:
        assert m.cpu() is m
    assert t.count("cuMemcpyDtoHAsync") == 1
    assert [id(p) for p in m.parameters()] == ids
    assert snapshot(m) == before


def test_owner_tags_on_the_arena(dev):
    m = Sequential(Lin(4, 8), BN(8))
    m[0].weight.grad = randn(8, 4)
    m.to("cuda")
    block = m[0].weight._buf.block
    owners = {who for _, _, who in block.owners()}
    assert {"0.weight", "0.bias", "0.weight.grad", "1.running_mean", "1.running_var", "1.scratch",
            "1.num_batches_tracked"} <= owners
    for off, n, who in block.owners():
        if who == "0.weight.grad":
            assert off == m[0].weight.grad._offset and n == 8 * 4 * 4


def test_update_through_reference_taken_before_cuda_is_visible(dev):
    m = mlp()
    w = next(iter(m.parameters()))           # what an optimizer holds
    w.grad = zeros(w.shape).fill_(0.5)
    m.cuda()
    assert w.is_cuda and w.grad.is_cuda
    # An SGD-style in-place step made through the old reference (p -= lr * grad, done on the host here).
    new = w.detach().cpu().numpy() - 0.1 * w.grad.cpu().numpy()
    with rawdev.no_grad():                   # as PyTorch: a parameter is written in place under no_grad
        w.copy_(tensor(new))
    assert np.array_equal(m[0].weight.detach().cpu().numpy(), new)
    assert np.array_equal(m.state_dict()["0.weight"].cpu().numpy(), new)
    m.cpu()
    assert np.array_equal(m[0].weight.detach().numpy(), new)


def test_grads_and_buffers_move_and_come_back(dev):
    m = Sequential(Lin(3, 5), BN(5))
    for p in m.parameters():
        p.grad = randn(p.shape)
    before = snapshot(m)
    m.cuda()
    assert all(t.is_cuda for t in m.buffers())
    assert all(p.grad.is_cuda for p in m.parameters())
    m.cpu()
    assert snapshot(m) == before


def test_tied_weight_moves_once(dev):
    a, b = Lin(4, 4), Lin(4, 4)
    b.weight = a.weight
    m = Sequential(a, b)
    with trace() as t:
        m.cuda()
    assert t.count("cuMemcpyHtoDAsync") == 1
    assert m[0].weight is m[1].weight and m[0].weight.is_cuda
    assert list(m.state_dict().keys()) == ["0.weight", "0.bias", "1.weight", "1.bias"]


def test_move_is_noop_when_already_there(dev):
    m = mlp().cuda()
    with trace() as t:
        m.to("cuda:0")
    assert t.count("cuMemcpyHtoDAsync") == 0 and t.count("cuMemAllocFromPoolAsync") == 0


def test_non_blocking_round_trip(dev):
    m = mlp()
    before = snapshot(m)
    m.to("cuda", non_blocking=True)
    m.to("cpu", non_blocking=True)
    # .numpy() waits for the copy it depends on
    assert snapshot(m) == before


def test_source_host_arrays_may_change_after_the_move(dev):
    a = np.arange(12, dtype=np.float32).reshape(3, 4)
    from rawdev.tensor import from_numpy
    p = Parameter(from_numpy(a))
    m = Module()
    m.w = p
    m.to("cuda", non_blocking=True)
    a[...] = -1                              # the old host storage is no longer the model's
    assert np.array_equal(m.w.detach().cpu().numpy(), np.arange(12, dtype=np.float32).reshape(3, 4))


def test_module_to_dtype_casts_only_floating(dev):
    m = Sequential(Lin(2, 3), BN(3))
    w = m[0].weight.detach().numpy().copy()
    m.to("cuda", dtypes.float16)
    assert m[0].weight.dtype is dtypes.float16 and m[1].num_batches_tracked.dtype is dtypes.int64
    m.to(dtype=dtypes.float32)
    assert m[0].weight.is_cuda and m[0].weight.dtype is dtypes.float32
    np.testing.assert_allclose(m[0].weight.detach().cpu().numpy(), w, rtol=1e-3)
    with pytest.raises(TypeError, match="nn.Module.to only accepts floating point or complex dtypes"):
        m.to(dtypes.int64)


def test_bfloat16_round_trip_exact(dev):
    m = Lin(5, 7)
    m.bfloat16()
    before = snapshot(m)
    m.cuda().cpu()
    assert snapshot(m) == before


@pytest.mark.parametrize("fn", MOVE_CALLS)
def test_injected_failure_at_each_call_leaves_module_unchanged(dev, fn):
    gc.collect()  # objects of earlier tests' (reset) simulators must not be finalized mid-test
    transfer.release_staging()
    m = Sequential(Lin(16, 32), BN(32), Lin(32, 4))
    m[0].weight.grad = randn(32, 16)
    before = snapshot(m)
    objs = [id(t) for t in m.parameters()] + [id(t) for t in m.buffers()]
    n_calls = _count_calls(lambda: Sequential(Lin(16, 32), BN(32), Lin(32, 4)).cuda(), fn)
    assert n_calls >= 1, f"a move makes no {fn} call"
    settle(dev)
    used = memory.pool_used(dev)
    for nth in range(1, n_calls + 1):
        transfer.release_staging()  # so that every attempt allocates its staging buffer
        sim_or_skip(fn, nth)
        with pytest.raises(CudaError) as ei:
            m.cuda()
        sim.clear_faults()
        assert "moving Sequential to cuda:0" in str(ei.value)
        assert "'0.weight' (32x16 float32, 2.0 KiB)" in str(ei.value)
        settle(dev)
        assert snapshot(m) == before
        assert [id(t) for t in m.parameters()] + [id(t) for t in m.buffers()] == objs
        assert memory.pool_used(dev) == used
    m.cuda()
    m.cpu()
    assert snapshot(m) == before


# (the copy back runs on the compute stream, after its work in stream order: no cross-stream wait to fail)
@pytest.mark.parametrize("fn", ["cuMemHostAlloc", "cuMemcpyDtoHAsync", "cuEventRecord"])
def test_injected_failure_moving_back_leaves_module_on_device(dev, fn):
    m = mlp()
    before = snapshot(m)
    m.cuda()
    ptrs = [p.data_ptr() for p in m.parameters()]
    transfer.release_staging()
    sim_or_skip(fn, 1)
    with pytest.raises(CudaError, match="moving Sequential to cpu"):
        m.cpu()
    sim.clear_faults()
    assert [p.data_ptr() for p in m.parameters()] == ptrs and all(p.is_cuda for p in m.parameters())
    m.cpu()
    assert snapshot(m) == before


def test_oom_names_tensors_and_sizes(driver):
    if driver != "sim":
        pytest.skip("needs a device whose capacity the test sets")
    import os
    os.environ["RAWDEV_SIM_MEMORY"] = str(64 << 20)
    try:
        reset_for_tests("sim")
        from rawdev.runtime import get_device
        dev = get_device(0)
        m = Sequential(Lin(4096, 4096), Lin(4096, 4096), Lin(4096, 4096), Lin(4096, 4096))  # 256 MiB
        before = snapshot(m)
        settle(dev)
        used = memory.pool_used(dev)
        with pytest.raises(OutOfMemoryError) as ei:
            m.cuda()
        msg = str(ei.value)
        assert "moving Sequential to cuda:0 (8 tensors, 256.1 MiB" in msg
        assert "'0.weight' (4096x4096 float32, 64.0 MiB)" in msg
        assert "allocating the 256.1 MiB device arena" in msg
        settle(dev)
        assert memory.pool_used(dev) == used
        assert snapshot(m) == before
    finally:
        del os.environ["RAWDEV_SIM_MEMORY"]
        reset_for_tests("sim")


def test_module_cuda_without_gpu_warns_and_stays(monkeypatch):
    reset_for_tests("auto")
    import rawdev.runtime as rt
    monkeypatch.setattr(rt, "is_available", lambda: False)
    m = mlp()
    before = snapshot(m)
    with pytest.warns(RuntimeWarning, match="RAWDEV_DRIVER=sim"):
        assert m.cuda() is m
    assert snapshot(m) == before
    with pytest.raises(NoDeviceError, match="RAWDEV_DRIVER=sim"):
        m.to("cuda")
    with pytest.raises(NoDeviceError):
        randn(3).cuda()
    assert snapshot(m) == before


def test_tensor_to_returns_new_tensor_and_keeps_source(dev):
    a = randn(4, 5)
    b = a.to("cuda")
    assert b is not a and b.is_cuda and a.is_cpu
    assert a.to("cpu") is a
    assert a.to("cpu", copy=True) is not a
    c = b.to("cuda:0")
    assert c is b
    assert np.array_equal(b.cpu().numpy(), a.numpy())
    h = b.to(dtypes.float16)
    assert h.is_cuda and h.dtype is dtypes.float16
    np.testing.assert_allclose(h.cpu().numpy(), a.numpy(), rtol=1e-3, atol=1e-3)
    nb = a.to("cuda", non_blocking=True).to("cpu", non_blocking=True)
    assert np.array_equal(nb.numpy(), a.numpy())


def test_tensor_cuda_ops(dev):
    a = randn(6, 4)
    b = a.cuda()
    assert b.nbytes == 96 and b.data_ptr() != a.data_ptr()
    if seam.driver_name() == "sim":
        assert b.data_ptr() >= 2 ** 48  # the simulator's device addresses
    assert np.array_equal(b[2:4].cpu().numpy(), a.numpy()[2:4])
    assert b[1:3].data_ptr() == b.data_ptr() + 4 * 4
    assert np.array_equal(b.view(-1).cpu().numpy(), a.numpy().reshape(-1))
    assert b[3].item is not None and b[3, ...].shape == (4,)
    assert b.reshape(24)[5].item() == pytest.approx(float(a.numpy().reshape(-1)[5]))
    c = b.clone()
    c.zero_()
    assert not c.cpu().numpy().any() and b.cpu().numpy().any()
    b.fill_(2.5)
    assert (b.cpu().numpy() == 2.5).all()
    b[1:3] = tensor(np.ones((2, 4), np.float32))
    assert b.cpu().numpy()[1:3].sum() == 8
    with pytest.raises(TypeError, match="can't convert cuda:0 device type tensor to numpy"):
        b.numpy()
    with pytest.raises(TypeError, match="can't convert cuda:0 device type tensor to numpy"):
        np.asarray(b)


def test_cuda_array_interface(dev):
    b = randn(3, 2).cuda()
    cai = b.__cuda_array_interface__
    assert cai["version"] == 3 and cai["shape"] == (3, 2) and cai["typestr"] == "<f4"
    assert cai["data"] == (b.data_ptr(), False) and cai["strides"] is None
    assert cai["stream"] == int(dev.compute_stream.handle)
    with pytest.raises(AttributeError):
        randn(2).__cuda_array_interface__  # noqa: B018  (the attribute access is what raises)


def test_constructors_on_cuda(dev):
    from rawdev import random
    from rawdev.tensor import arange, empty, full, ones, rand, zeros_like
    random.manual_seed(3)
    a = randn(3, 4, device="cuda")
    random.manual_seed(3)
    assert np.array_equal(a.cpu().numpy(), randn(3, 4, device="cuda").cpu().numpy())
    assert np.array_equal(zeros(2, 3, device="cuda").cpu().numpy(), np.zeros((2, 3), np.float32))
    assert np.array_equal(ones(2, device="cuda", dtype=dtypes.int32).cpu().numpy(), [1, 1])
    assert np.array_equal(arange(5, device="cuda").cpu().numpy(), np.arange(5))
    assert full((2,), 3.0, device="cuda").cpu().tolist() == [3.0, 3.0]
    e = empty(5, device="cuda")
    assert e.is_cuda and e.shape == (5,)
    z = zeros_like(a)
    assert z.is_cuda and not z.cpu().numpy().any()
    r = rand(100, device="cuda").cpu().numpy()
    assert ((0 <= r) & (r < 1)).all()


def test_zero_grad_on_cuda(dev):
    m = mlp()
    for p in m.parameters():
        p.grad = randn(p.shape)
    m.cuda()
    m.zero_grad(set_to_none=False)
    assert all(not p.grad.cpu().numpy().any() and p.grad.is_cuda for p in m.parameters())
    m.zero_grad()
    assert all(p.grad is None for p in m.parameters())


# ------------------------------------------------------------------------------------------- helpers
def sim_or_skip(fn, nth):
    if seam.driver_name() != "sim":
        pytest.skip("fault injection needs the simulator")
    sim.inject_fault(fn, CUresult.CUDA_ERROR_OUT_OF_MEMORY if "Alloc" in fn else CUresult.CUDA_ERROR_UNKNOWN, nth=nth)


def _count_calls(action, fn):
    transfer.release_staging()
    with trace() as t:
        action()
    return t.count(fn)


def settle(dev):
    """Flush queued frees (first sync) and let the stream-ordered frees run (second sync)."""
    dev.synchronize()
    dev.synchronize()


def test_empty_tensors_move(dev):
    m = Module()
    m.e = Parameter(zeros(0, 3))
    m.w = Parameter(randn(2))
    before = snapshot(m)
    m.cuda()
    assert m.e.is_cuda and m.e.shape == (0, 3)
    m.cpu()
    assert snapshot(m) == before
    assert zeros(0).cuda().cpu().shape == (0,)


def test_non_blocking_cpu_result_waits_before_host_reads(dev):
    m = mlp()
    ref = m[0].weight.detach().numpy().copy()
    m.cuda()
    m.to("cpu", non_blocking=True)
    w = m[0].weight
    assert w._pending is not None                 # the DtoH may still be in flight...
    assert np.array_equal(w.detach().numpy(), ref)  # ...and every host read waits for it first
    assert np.array_equal(w._host_storage(), ref) and w._pending is None


def test_state_dict_of_cuda_model_aliases_the_arena(dev):
    m = mlp().cuda()
    sd = m.state_dict()
    assert all(v.is_cuda for v in sd.values())
    assert sd["0.weight"].data_ptr() == m[0].weight.data_ptr()


def test_staging_buffer_is_reused_once_its_copy_is_done(dev):
    transfer.release_staging()
    m = mlp()
    m.cuda()
    dev.synchronize()
    m.cpu()
    with trace() as t:
        m.cuda()
    assert t.count("cuMemHostAlloc") == 0 and t.count("cuMemcpyHtoDAsync") == 1
    m.cpu()                      # a blocking .cpu() offers its staging buffer back too
    transfer.release_staging()
    with trace() as t:
        m.cuda()
    assert t.count("cuMemHostAlloc") == 1


# ------------------------------------------------------------------------------- the runtime's byte work
class _StackTrace(trace):
    """rawdev.trace() that also keeps the Python stack of each call of one driver function."""

    def __init__(self, fn):
        super().__init__()
        self.fn, self.stacks = fn, []

    def _record(self, fn, *args):
        super()._record(fn, *args)
        if fn == self.fn:
            self.stacks.append(traceback.extract_stack())


def test_model_cuda_reaches_the_copy_through_five_files_one_job_each(dev):
    m = Sequential(Lin(4, 8), BN(8))
    transfer.release_staging()
    with _StackTrace("cuMemcpyHtoDAsync") as t:
        m.cuda()
    copies = [c for c in t if c.fn == "cuMemcpyHtoDAsync"]
    assert len(copies) == 1 and len(t.stacks) == 1
    # the one copy is the whole arena, named after the module; each tensor is a named part of the arena
    arena = m[0].weight._buf
    assert copies[0].owner == "Sequential" and copies[0].nbytes == arena.nbytes
    assert copies[0].stream == "cuda:0 copy"
    assert [c.owner for c in t if c.fn == "cuMemHostAlloc"] == ["staging for Sequential"]
    assert {who for _, _, who in arena.block.owners()} >= {"0.weight", "0.bias", "1.running_mean"}
    root = Path(rawdev.__file__).parent.parent
    files = []
    for frame in t.stacks[0]:
        path = Path(frame.filename)
        if path.is_relative_to(root / "rawdev"):
            rel = path.relative_to(root).as_posix()
            if not files or files[-1] != rel:
                files.append(rel)
    assert files == ["rawdev/nn/module.py", "rawdev/tensor/moves.py", "rawdev/runtime/transfer.py",
                     "rawdev/runtime/memory.py", "rawdev/runtime/seam.py"]


def test_transfer_moves_plain_bytes_with_one_copy_each_way(dev):
    a = np.arange(10, dtype=np.uint8)
    b = np.frombuffer(np.arange(6, dtype=np.float32).tobytes(), np.uint8).copy()
    transfer.release_staging()
    with trace() as t:
        arena, offsets = transfer.upload_arena(dev, [("a", a), ("b", b)], "two parts")
    assert t.count("cuMemcpyHtoDAsync") == 1 and t.count("cuMemAllocFromPoolAsync") == 1
    assert offsets == [0, memory.ARENA_ALIGN] and arena.nbytes == 2 * memory.ARENA_ALIGN
    assert arena.owner == "two parts" and arena.block.owners() == [(0, 10, "a"), (memory.ARENA_ALIGN, 24, "b")]
    ranges = [(arena, offsets[1], 24, "b"), (arena, 2, 5, "a[2:7]")]
    with trace() as t:
        got = transfer.download_ranges(ranges, "two parts")
    assert t.count("cuMemcpyDtoHAsync") == 1           # nearby ranges of one buffer: one span
    assert np.array_equal(got[0][0], b) and np.array_equal(got[1][0], a[2:7])
    assert got[0][1] is None and got[0][2] is None      # blocking: private host bytes
    got[0][0][:] = 0
    assert np.array_equal(transfer.download_ranges(ranges[:1], "b")[0][0], b)
    (arr, ev, pinned), = transfer.download_ranges(ranges[1:], "a", non_blocking=True)
    ev.synchronize()
    assert np.array_equal(arr, a[2:7]) and isinstance(pinned, memory.PinnedBuffer)
    # a part already on the device is copied device to device into the new arena (load_state_dict's staging)
    with trace() as t:
        arena2, offs2 = transfer.upload_arena(dev, [("a", np.full(10, 7, np.uint8)),
                                                    ("b", transfer.DeviceSource(arena.ptr + offsets[1], 24))], "mixed")
    assert [c.fn for c in t if c.fn.startswith("cuMemcpy")] == ["cuMemcpyHtoDAsync", "cuMemcpyDtoDAsync"]
    back = transfer.download_ranges([(arena2, 0, arena2.nbytes, "all")], "all")[0][0]
    assert (back[:10] == 7).all() and np.array_equal(back[offs2[1]:offs2[1] + 24], b)


def test_failed_upload_frees_what_it_made_and_says_what_it_was_doing(dev):
    parts = [("a", np.zeros(10, np.uint8)), ("b", np.zeros(24, np.uint8))]
    settle(dev)
    used = memory.pool_used(dev)
    sim_or_skip("cuMemcpyHtoDAsync", 1)
    with pytest.raises(CudaError) as ei:
        transfer.upload_arena(dev, parts, "two parts")
    sim.clear_faults()
    assert ("moving two parts to cuda:0 (2 tensors, 512 B: 'a' (10 B), 'b' (24 B)): copying the staging buffer "
            "to the device arena") in str(ei.value)
    settle(dev)
    assert memory.pool_used(dev) == used
    with pytest.raises(ValueError) as ei:                  # a part that does not fit its slot
        transfer.upload_arena(dev, [("a", parts[0][1]), ("c", np.zeros((2, 12), np.uint8))], "bad parts",
                              describe=["A", "C"])
    assert any("packing C into the staging buffer" in n for n in ei.value.__notes__)
    settle(dev)
    assert memory.pool_used(dev) == used
