"""Every driver call rawdev makes is one cuda-python's real binding accepts.

The simulator is a drop-in for `cuda.bindings.driver`, but a drop-in can be more forgiving than the
binding (an int where the binding wants a `CUstream`, a list where it wants a `cuuint64_t`). Here a
training workload runs on the simulator while every call the runtime makes is recorded; then each
distinct call shape is replayed against the real `cuda.bindings.driver`. With no libcuda on this
machine, the binding converts (and so checks) every argument *before* it tries to load the driver:
a call rawdev makes correctly ends in "driver library not found", a wrong one in TypeError or
AttributeError. On a machine with a real driver this test skips (the gpu-marked tests call it there).
"""
import numpy as np
import pytest
import rawdev
from rawdev import nn, optim
from rawdev.runtime import reset_for_tests, seam


class Recorder:
    """Stands in for the driver module: records (name, args) of every call, then delegates."""

    def __init__(self, drv):
        self._drv, self.calls = drv, []

    def __getattr__(self, name):
        fn = getattr(self._drv, name)
        if not name.startswith("cu"):
            return fn

        def record(*args):
            self.calls.append((name, args))
            return fn(*args)
        return record


def workload(tmp_path):
    """Moves, a training step with each optimizer, checkpointing, the memory API, save/load, events."""
    from rawdev.cuda import memory as M
    from rawdev.runtime import Event, get_device
    from rawdev.utils.checkpoint import checkpoint_sequential
    from rawdev.utils.data import DeviceLoader
    rawdev.manual_seed(0)
    model = nn.Sequential(nn.Linear(12, 16), nn.GELU(), nn.Dropout(0.1), nn.Linear(16, 4))
    model.register_buffer("scale", rawdev.ones(4))
    model.cuda()
    x = rawdev.randn(8, 12).cuda(non_blocking=True)
    y = rawdev.randint(0, 4, (8,)).cuda()
    for opt in (optim.SGD(model.parameters(), lr=0.1, momentum=0.9), optim.AdamW(model.parameters(), amsgrad=True)):
        opt.zero_grad()
        nn.functional.cross_entropy(checkpoint_sequential(model, 2, x), y).backward()
        opt.step()
    acc = (model(x).argmax(1) == y).float().mean().item()
    assert 0.0 <= acc <= 1.0
    for xb, _yb in DeviceLoader(np.random.rand(6, 12).astype(np.float32), np.arange(6) % 4, batch_size=3,
                               device="cuda"):
        model(xb).sum().item()
    dev = get_device(0)
    start, end = Event(dev, timing=True), Event(dev, timing=True)
    start.record(dev.compute_stream)
    model(x)
    end.record(dev.compute_stream)
    end.synchronize()
    start.elapsed_time(end)
    dev.compute_stream.query()
    rawdev.cuda.memory_summary()
    rawdev.cuda.pointer_info(model[0].weight)
    M.peek(model[0].weight, 4, fmt="f32")
    rawdev.save(model.state_dict(), str(tmp_path / "m.safetensors"))
    model.load_state_dict(rawdev.load(str(tmp_path / "m.safetensors")))
    # the synchronous copies, pinned memory freed, a kernel attribute, and an error's name and text
    from cuda.bindings.driver import CUresult
    from rawdev.errors import CudaError
    from rawdev.runtime import kernels, memory
    a = memory.DeviceBuffer.alloc(dev, 64, owner="a")
    b = memory.DeviceBuffer.alloc(dev, 64, owner="b")
    host = np.arange(16, dtype=np.float32)
    memory.copy_htod(a.ptr, host, 64)
    memory.copy_dtod(b.ptr, a.ptr, 64)
    memory.copy_dtoh(host, b.ptr, 64)
    pinned = memory.PinnedBuffer(64)
    pinned.free()
    kernels.get_kernel(dev, "saxpy").attribute("NUM_REGS")
    rawdev.sim.inject_fault("cuMemcpyHtoDAsync", CUresult.CUDA_ERROR_INVALID_VALUE)
    with pytest.raises(CudaError, match="CUDA_ERROR_INVALID_VALUE"):
        memory.copy_htod(a.ptr, host, 64)
    model.cpu()
    rawdev.cuda.empty_cache()
    rawdev.cuda.synchronize()


def test_every_driver_call_is_accepted_by_cuda_python(tmp_path):
    from conftest import real_gpu
    if real_gpu() is None:
        pytest.skip("a real driver is present: replaying simulator handles into it would be unsafe; "
                    "the gpu-marked tests exercise the binding there")
    from cuda.bindings import driver as real
    reset_for_tests("sim")
    rec = Recorder(seam.driver())
    seam._drv = rec
    try:
        workload(tmp_path)
    finally:
        reset_for_tests("sim")
    shapes = {}
    for name, args in rec.calls:   # one replay per function and argument-type signature
        shapes.setdefault((name, tuple(type(a).__name__ for a in args)), args)
    assert len({n for n, _ in shapes}) >= 40, sorted({n for n, _ in shapes})
    rejected = []
    for (name, _), args in sorted(shapes.items(), key=lambda kv: kv[0]):
        try:
            getattr(real, name)(*args)
        except Exception as e:   # the only acceptable failure: no driver library to call into
            if type(e).__name__ == "DynamicLibNotFoundError" or "libcuda" in str(e):
                continue
            rejected.append(f"{name}({', '.join(type(a).__name__ for a in args)}): {type(e).__name__}: {e}")
    assert not rejected, "cuda-python rejects calls rawdev makes:\n" + "\n".join(rejected)
