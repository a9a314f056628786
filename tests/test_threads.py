"""Several threads using one device: kernel launches keep their own arguments, the allocation table and
the module cache stay consistent, and two trainings run side by side equal the same trainings run one
after the other, bit for bit."""
import struct
import sys
import threading

import numpy as np
import pytest
import rawdev
from rawdev import nn, optim
from rawdev.runtime import get_device, kernels
from rawdev.runtime.memory import DeviceBuffer, copy_dtoh, copy_htod


@pytest.fixture
def fast_switching():
    """Make the interpreter switch threads as often as it can, so that races show up in a short test."""
    old = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)
    yield
    sys.setswitchinterval(old)


def run_threads(fn, n):
    errors = []

    def body(i):
        try:
            get_device(0).activate()   # each thread makes the device's context current first
            fn(i)
        except BaseException as e:     # reported by the main thread
            errors.append(e)

    ts = [threading.Thread(target=body, args=(i,)) for i in range(n)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    if errors:
        raise errors[0]


def test_two_threads_launching_one_kernel_keep_their_arguments(dev, fast_switching):
    scale = kernels.get_kernel(dev, "scale")   # y = a * x
    slots, width = 300, 64                      # each launch writes one 64-float slot of its thread's buffer
    bufs = [DeviceBuffer.alloc(dev, slots * width * 4, owner=f"thread {t}") for t in range(2)]
    ones = DeviceBuffer.alloc(dev, width * 4, owner="ones")
    copy_htod(ones.ptr, np.ones(width, np.float32), width * 4)

    def work(t):
        for i in range(slots):
            scale.launch(1, 64, [bufs[t].ptr + i * width * 4, ones.ptr, float(t * 1000 + i), width])

    run_threads(work, 2)
    dev.synchronize()
    for t, b in enumerate(bufs):
        out = np.empty(slots * width, np.float32)
        copy_dtoh(out, b.ptr, out.nbytes)
        want = np.repeat(np.arange(slots, dtype=np.float32) + t * 1000, width)
        bad = np.flatnonzero(out != want)
        assert bad.size == 0, (f"thread {t}: {bad.size} of {out.size} values wrong, first at slot "
                               f"{bad[0] // width}: {out[bad[0]]} instead of {want[bad[0]]}")


def test_argument_buffers_are_per_thread(dev):
    k = kernels.get_kernel(dev, "scale")
    k.launch(1, 32, [0, 0, 1.0, 0])
    mine = k._local.bufs
    seen = []
    t = threading.Thread(target=lambda: (get_device(0).activate(), k.launch(1, 32, [0, 0, 2.0, 0]),
                                         seen.append(k._local.bufs)))
    t.start()
    t.join()
    assert seen and seen[0][0] is not mine[0] and seen[0][1] != mine[1]
    assert struct.unpack_from("<f", mine[0], 16)[0] == 1.0   # this thread's arguments are untouched


def test_module_cache_loads_each_file_once_from_many_threads(dev, fast_switching):
    from rawdev import sim
    kernels._forget_modules()
    before = sim.stats()["calls"].get("cuModuleLoadDataEx", 0)
    got = []
    run_threads(lambda i: got.append(kernels.get_kernel(dev, "relu_fwd")), 4)
    assert len({id(k) for k in got}) == 1
    assert sim.stats()["calls"].get("cuModuleLoadDataEx", 0) - before == 1


def test_allocation_table_and_memory_tool_consistent_under_threads(dev, fast_switching):
    a = dev.allocator
    stats0 = rawdev.cuda.memory_stats()          # the memory tool's accounting listens to every thread's events
    base_alloc, base_count = a.stats["allocated"], len(a.live)

    def work(t):
        for i in range(150):
            b = DeviceBuffer.alloc(dev, 256 * (1 + i % 5), owner=f"t{t} #{i}")
            if i % 2:
                b.free()
            else:
                del b      # freed through the finalizer queue, flushed by some thread's next allocation
            if i % 25 == 0:
                rawdev.cuda.memory_stats()

    run_threads(work, 3)
    dev.synchronize()
    a.flush()
    assert a.stats["allocated"] == base_alloc and len(a.live) == base_count
    assert a.stats["allocated"] == sum(b.nbytes for b in a.live.values())
    st = rawdev.cuda.memory_stats()
    assert st["requested_bytes.all.current"] == stats0["requested_bytes.all.current"]
    assert st["allocated_bytes.all.current"] == stats0["allocated_bytes.all.current"]


def _make_model(seed):
    rawdev.manual_seed(seed)
    return nn.Sequential(nn.Linear(12, 16), nn.ReLU(), nn.Linear(16, 3))


def _batches(seed, steps=6, batch=8):
    r = np.random.default_rng(seed)
    return [(r.standard_normal((batch, 12)).astype(np.float32), r.integers(0, 3, batch)) for _ in range(steps)]


def _train(model, opt, data):
    loss_fn = nn.CrossEntropyLoss()
    losses = []
    for x, y in data:
        x, y = rawdev.tensor(x).to("cuda"), rawdev.tensor(y).to("cuda")
        opt.zero_grad()
        loss = loss_fn(model(x), y)
        loss.backward()
        opt.step()
        losses.append(loss.item())
    return losses


def _setup():
    models = [_make_model(1).to("cuda"), _make_model(2).to("cuda")]
    opts = [optim.SGD(models[0].parameters(), lr=0.1, momentum=0.9), optim.Adam(models[1].parameters(), lr=1e-2)]
    return models, opts, [_batches(10), _batches(20)]


def _params(model):
    return [np.asarray(p.detach().cpu()).tobytes() for p in model.parameters()]


def test_two_models_trained_in_two_threads_equal_sequential_training(dev, fast_switching):
    models, opts, data = _setup()
    seq_losses = [_train(models[i], opts[i], data[i]) for i in range(2)]
    seq_params = [_params(m) for m in models]

    models, opts, data = _setup()
    par_losses = [None, None]

    def work(i):
        par_losses[i] = _train(models[i], opts[i], data[i])

    run_threads(work, 2)
    assert par_losses == seq_losses
    assert [_params(m) for m in models] == seq_params
