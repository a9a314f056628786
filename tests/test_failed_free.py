"""A free the driver refuses keeps its block in rawdev's table (owner, size, the error), the memory tool
says so, and the block is really freed once the driver takes the call again. The memory tool still
answers after a sticky fault."""
import gc
import warnings

import numpy as np
import pytest
import rawdev
from rawdev import sim
from rawdev.errors import CudaError
from rawdev.runtime import get_device, kernels
from rawdev.runtime.memory import DeviceBuffer

FAIL = 1   # CUDA_ERROR_INVALID_VALUE


@pytest.fixture
def simdev():
    rawdev.runtime.reset_for_tests("sim")
    yield get_device(0)
    sim.clear_faults()
    rawdev.runtime.reset_for_tests("sim")


def test_failed_explicit_free_keeps_the_block_and_its_owner(simdev):
    dev = simdev
    base = rawdev.cuda.memory_allocated()
    buf = DeviceBuffer.alloc(dev, 4096, owner="layer.weight")
    sim.inject_fault("cuMemFreeAsync", FAIL)
    with pytest.raises(CudaError) as e:
        buf.free()
    assert e.value.call == "cuMemFreeAsync" and "layer.weight" in str(e.value)
    assert rawdev.cuda.memory_allocated() == base + 4096
    blocks = {b.ptr: b for b in rawdev.cuda.memory.live_blocks()}
    assert blocks[buf.ptr].owner == "layer.weight" and "CUDA_ERROR_INVALID_VALUE" in blocks[buf.ptr].free_error
    summary = rawdev.cuda.memory_summary()
    assert "Failed frees: 1 block" in summary and "layer.weight" in summary
    assert rawdev.cuda.memory_stats()["rawdev.failed_free_bytes"] == 4096
    snap = [b for s in rawdev.cuda.memory_snapshot()["segments"] for b in s["blocks"] if b.get("free_error")]
    assert [b["owner"] for b in snap] == ["layer.weight"]
    buf.free()                                   # the driver takes it now: the block goes
    dev.synchronize()
    assert rawdev.cuda.memory_allocated() == base
    assert dev.pool_attribute("used") == base
    assert "Failed frees" not in rawdev.cuda.memory_summary()


def test_failed_queued_free_stays_visible_and_is_retried(simdev):
    dev = simdev
    base = rawdev.cuda.memory_allocated()
    buf = DeviceBuffer.alloc(dev, 1024, owner="activations")
    ptr = buf.ptr
    del buf
    gc.collect()
    sim.inject_fault("cuMemFreeAsync", FAIL)
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        other = DeviceBuffer.alloc(dev, 256, owner="other")   # flushes the queue: the free fails, not this call
    assert sum("queued free failed" in str(x.message) for x in w) == 1
    assert dev.allocator.stats["allocated"] == base + 1024 + 256
    assert [b.owner for b in dev.allocator.failed_frees()] == ["activations"]
    assert any(b.ptr == ptr for b in dev.allocator.live.values())
    assert dev.allocator.pending_frees == [(ptr, dev.compute_stream.handle)]
    dev.synchronize()                               # the next flush retries, and the driver takes it
    other.free()
    dev.synchronize()
    assert rawdev.cuda.memory_allocated() == base == dev.pool_attribute("used")
    assert dev.allocator.failed_frees() == []


def test_memory_summary_after_a_sticky_fault(simdev):
    dev = simdev
    x = rawdev.tensor(np.ones(10, np.float32)).to("cuda")
    b = DeviceBuffer.alloc(dev, 64, owner="victim")
    kernels.get_kernel(dev, "scale").launch(4, 256, [b.ptr, b.ptr, 2.0, 10_000])   # runs far past the block
    with pytest.raises(CudaError):
        dev.synchronize()
    assert sim.sticky_error() is not None
    summary = rawdev.cuda.memory_summary()
    assert "victim" in summary and "sticky" in summary and "CUDA_ERROR_ILLEGAL_ADDRESS" in summary
    st = rawdev.cuda.memory_stats()
    assert st["allocated_bytes.all.current"] >= 64 and st.get("reserved_bytes.all.current") is None
    assert rawdev.cuda.memory_allocated() >= 64
    del x
