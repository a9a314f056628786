"""Requests that cannot be met: huge cpu tensors raise PyTorch's RuntimeError naming the bytes (never numpy's
MemoryError/ValueError, and no allocation is attempted for a request past the machine's memory), and a
load(map_location="cuda") counts what rawdev's own pool caches as available, as an allocation does."""
import numpy as np
import pytest
import rawdev
from rawdev.runtime import reset_for_tests

CANNOT = r"DefaultCPUAllocator: can't allocate memory: you tried to allocate {} bytes\. Error code 12 \(Cannot allocate"


@pytest.mark.parametrize("make,nbytes", [
    (lambda: rawdev.ones(2 ** 36), 2 ** 38),
    (lambda: rawdev.zeros(2 ** 40, dtype=rawdev.float64), 2 ** 43),
    (lambda: rawdev.empty(2 ** 20, 2 ** 20), 2 ** 42),
    (lambda: rawdev.full((2 ** 40,), 3.0), 2 ** 42),
    (lambda: rawdev.randn(2 ** 40), 2 ** 42),
    (lambda: rawdev.rand(2 ** 40, dtype=rawdev.float64), 2 ** 43),
    (lambda: rawdev.randint(0, 9, (2 ** 40,)), 2 ** 43),
    (lambda: rawdev.arange(2 ** 40), 2 ** 43),
])
def test_huge_cpu_requests_raise_pytorchs_error(make, nbytes):
    with pytest.raises(RuntimeError, match=CANNOT.format(nbytes)):
        make()


def test_a_byte_count_past_int64_is_pytorchs_overflow_error():
    with pytest.raises(RuntimeError, match=r"Storage size calculation overflowed with sizes=\[4611686018427387904\]"):
        rawdev.empty(2 ** 62)
    with pytest.raises(RuntimeError, match=r"overflowed with sizes=\[2147483648, 2147483648\]"):
        rawdev.ones(2 ** 31, 2 ** 31)


def test_empty_tensors_with_large_dims_are_made():
    t = rawdev.empty(0, 2 ** 40)
    assert tuple(t.shape) == (0, 2 ** 40) and t.numel() == 0
    assert rawdev.zeros(2 ** 30, 0).sum().item() == 0


def test_a_request_past_the_machine_is_refused_before_numpy_is_asked(monkeypatch):
    from rawdev.tensor import host_alloc

    def never(*a, **k):
        raise AssertionError("numpy was asked")

    monkeypatch.setattr(host_alloc, "host_memory_total", lambda: 1 << 30)
    monkeypatch.setattr(host_alloc.np, "empty", never)
    with pytest.raises(RuntimeError, match=CANNOT.format(2 << 30)):
        rawdev.ones(2 ** 29)


def test_numpys_memory_error_becomes_pytorchs(monkeypatch):
    from rawdev.tensor import host_alloc

    def refuse(*a, **k):
        raise MemoryError("Unable to allocate")

    monkeypatch.setattr(host_alloc.np, "empty", refuse)
    with pytest.raises(RuntimeError, match=CANNOT.format(4000)):
        rawdev.empty(1000)


def test_a_load_to_the_device_counts_the_pools_cache_as_available(monkeypatch, tmp_path):
    monkeypatch.setenv("RAWDEV_SIM_MEMORY", str(64 << 20))
    reset_for_tests("sim")
    try:
        from rawdev import cuda
        p = tmp_path / "ck.pt"
        vals = np.arange(6 << 20, dtype=np.float32)            # 24 MiB
        rawdev.save({"w": rawdev.tensor(vals)}, p)
        x = rawdev.empty(48 << 20, dtype=rawdev.uint8, device="cuda")
        del x                                                  # cached by the pool: the driver sees 16 MiB free
        assert cuda.memory_allocated() == 0
        free, _ = cuda.mem_get_info()
        assert free < 24 << 20 <= free + cuda.memory_reserved()   # the case: fits only with the cache counted
        for ml in ("cuda", None):
            if ml is None:                                     # a state_dict saved from the device, loaded back
                rawdev.save({"w": rawdev.tensor(vals, device="cuda")}, p)
                cuda.empty_cache()
                y = rawdev.empty(48 << 20, dtype=rawdev.uint8, device="cuda")
                del y
            sd = rawdev.load(p, map_location=ml)
            assert sd["w"].is_cuda
            np.testing.assert_array_equal(sd["w"].cpu().numpy(), vals)
            del sd
        big = tmp_path / "big.pt"
        rawdev.save({"w": rawdev.zeros(20 << 20)}, big)        # 80 MiB: more than the device, cache or not
        with pytest.raises(rawdev.serialization.CheckpointError, match="cached by rawdev's pool"):
            rawdev.load(big, map_location="cuda")
    finally:
        monkeypatch.delenv("RAWDEV_SIM_MEMORY")
        reset_for_tests("sim")


def test_an_empty_cuda_tensor_with_a_dim_numpy_cannot_hold():
    """The device holds empty(0, 2**62) as PyTorch does (no bytes); its cpu copy, which numpy cannot describe, is
    refused with the cpu factory's RuntimeError by every path to the host (a move, tolist, a model move), and
    printing it reads no values."""
    reset_for_tests("sim")
    try:
        t = rawdev.empty(0, 2 ** 62, device="cuda")
        assert tuple(t.shape) == (0, 2 ** 62) and t.numel() == 0 and t.stride() == (2 ** 62, 1)
        assert tuple(t.sum(1).shape) == (0,)
        assert repr(t) == "tensor([], device='cuda:0', size=(0, 4611686018427387904))"
        m = rawdev.nn.Module().cuda()
        m.register_buffer("b", t)
        m.register_buffer("ok", rawdev.ones(3, device="cuda"))
        for move in (t.cpu, t.tolist, lambda: t.to("cpu", rawdev.float64), m.cpu):
            with pytest.raises(RuntimeError, match=r"cannot make a cpu tensor of sizes \[0, 4611686018427387904\]"):
                move()
        assert m.b is t and m.ok.is_cuda                     # the failed model move changed nothing
        assert rawdev.empty(0, 2 ** 40, device="cuda").cpu().shape == (0, 2 ** 40)
    finally:
        reset_for_tests("sim")
