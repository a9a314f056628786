"""The pool hands a freed block back at once to the stream that freed it: leaving a DeviceLoader early must
not free the prefetched batch where the next allocation could take it while its copy still writes it."""
import numpy as np
import rawdev
from rawdev.runtime import get_device, memory
from rawdev.utils.data import DeviceLoader


def _on_compute(t):
    """t's bytes, read in order on the compute stream alone (a copy stream's queued work is not forced to run)."""
    dev = get_device(0)
    out = np.empty(tuple(t.shape), np.float32)
    memory.copy_dtoh(out, t.data_ptr(), out.nbytes, stream=dev.compute_stream)
    dev.compute_stream.synchronize()
    return out


def test_leaving_a_device_loader_early_never_lets_its_prefetch_copy_overwrite_new_tensors(driver):
    rng = np.random.default_rng()
    X = rng.standard_normal((64, 32)).astype(np.float32)
    Y = rng.integers(0, 10, 64)
    nbytes = memory.align(8 * 32 * 4) + memory.align(8 * 8)       # one batch's device buffer
    for x, y in DeviceLoader(X, Y, batch_size=8, device="cuda"):  # noqa: B007  (the loop variables are used below)
        break                                                      # batch 1 was issued, never handed out
    z = rawdev.zeros(nbytes // 4, device="cuda")                   # the next allocation on the compute stream
    assert not _on_compute(z).any()
    rawdev.cuda.synchronize()                                      # whatever was still queued has run now
    assert not _on_compute(z).any(), "a batch copy wrote into memory the pool had handed to another tensor"
    assert np.array_equal(x.cpu().numpy(), X[:8]) and np.array_equal(y.cpu().numpy(), Y[:8])


def test_the_same_stream_reuses_a_freed_block_before_any_synchronize(driver):
    dev = get_device(0)
    a = memory.DeviceBuffer.alloc(dev, 4096, owner="a")
    ptr = a.ptr
    a.free()
    b = memory.DeviceBuffer.alloc(dev, 4096, owner="b")            # same (compute) stream: no sync needed
    c = memory.DeviceBuffer.alloc(dev, 4096, stream=dev.copy_stream, owner="c")
    if rawdev.runtime.seam.driver_name() == "sim":                 # a GPU's pool may choose otherwise
        assert b.ptr == ptr and c.ptr != ptr
    b.free()
    c.free()
