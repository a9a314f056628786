"""TensorDataset / DataLoader semantics, and DeviceLoader's copy/compute overlap read from the driver trace."""
import numpy as np
import pytest
import rawdev
from rawdev.nn import functional as F
from rawdev.utils.data import DataLoader, DeviceLoader, TensorDataset

RNG = np.random.default_rng(3)


def _data(n=50):
    X = RNG.standard_normal((n, 6)).astype(np.float32)
    Y = RNG.integers(0, 4, n)
    return X, Y


def test_tensor_dataset_and_loader():
    X, Y = _data(10)
    ds = TensorDataset(rawdev.tensor(X), rawdev.tensor(Y))
    assert len(ds) == 10
    x3, y3 = ds[3]
    np.testing.assert_array_equal(np.asarray(x3), X[3])
    assert y3.item() == Y[3]
    batches = list(DataLoader(ds, batch_size=4))
    assert [tuple(b[0].shape) for b in batches] == [(4, 6), (4, 6), (2, 6)]
    assert len(DataLoader(ds, batch_size=4)) == 3
    assert len(list(DataLoader(ds, batch_size=4, drop_last=True))) == 2 == len(DataLoader(ds, batch_size=4,
                                                                                          drop_last=True))
    np.testing.assert_array_equal(np.concatenate([np.asarray(b[1]) for b in batches]), Y)
    with pytest.raises(AssertionError, match="Size mismatch"):
        TensorDataset(rawdev.tensor(X), rawdev.tensor(Y[:5]))


def test_shuffle_with_generator_is_reproducible_and_a_permutation():
    X, Y = _data(37)
    ds = TensorDataset(rawdev.tensor(X), rawdev.tensor(np.arange(37)))
    a = [np.asarray(b[1]) for b in DataLoader(ds, batch_size=8, shuffle=True, generator=rawdev.Generator(5))]
    b = [np.asarray(b[1]) for b in DataLoader(ds, batch_size=8, shuffle=True, generator=rawdev.Generator(5))]
    for u, v in zip(a, b):
        np.testing.assert_array_equal(u, v)
    allidx = np.concatenate(a)
    assert sorted(allidx.tolist()) == list(range(37)) and allidx.tolist() != list(range(37))
    g = rawdev.Generator(5)
    dl = DataLoader(ds, batch_size=8, shuffle=True, generator=g)
    e1 = np.concatenate([np.asarray(b[1]) for b in dl])
    e2 = np.concatenate([np.asarray(b[1]) for b in dl])
    assert e1.tolist() != e2.tolist()       # a new permutation each epoch


def test_default_collate_for_plain_datasets():
    class DS:
        def __len__(self):
            return 5

        def __getitem__(self, i):
            return np.full(3, i, np.float32), i

    x, y = next(iter(DataLoader(DS(), batch_size=5)))
    assert tuple(x.shape) == (5, 3) and y.dtype is rawdev.int64 and y.tolist() == [0, 1, 2, 3, 4]


def test_device_loader_on_cpu_is_the_plain_loader():
    X, Y = _data(20)
    out = list(DeviceLoader(X, Y, batch_size=6, device="cpu"))
    assert len(out) == 4
    np.testing.assert_array_equal(np.asarray(out[0][0]), X[:6])


def test_device_loader_overlaps_copy_with_compute(driver):
    X, Y = _data(70)
    w = rawdev.randn(5, 6).cuda()
    plain = [(np.asarray(F.linear(rawdev.tensor(x), w.cpu())), np.asarray(y))
             for x, y in DataLoader(TensorDataset(rawdev.tensor(X), rawdev.tensor(Y)), batch_size=16)]
    loader = DeviceLoader(X, Y, batch_size=16, device="cuda")
    got = []
    with rawdev.trace() as t:
        for x, y in loader:
            assert x.is_cuda and y.is_cuda and y.dtype is rawdev.int64
            out = F.linear(x, w)                      # the compute of this batch
            got.append((np.asarray(out.cpu()), np.asarray(y.cpu())))   # ... synchronized here
    assert len(got) == len(plain) == 5
    for (a, ya), (b, yb) in zip(got, plain):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)
        np.testing.assert_array_equal(ya, yb)
    calls = t.calls
    copies = [i for i, c in enumerate(calls) if c.fn == "cuMemcpyHtoDAsync" and (c.owner or "").startswith("batch")]
    assert [calls[i].owner for i in copies] == [f"batch {k}" for k in range(5)]
    assert all(calls[i].stream.endswith("copy") for i in copies)          # copies on the copy stream
    launches = [i for i, c in enumerate(calls) if c.fn == "cuLaunchKernel"]
    assert all(calls[i].stream.endswith("compute") for i in launches)
    syncs = [i for i, c in enumerate(calls) if c.fn in ("cuStreamSynchronize", "cuEventSynchronize",
                                                         "cuCtxSynchronize") or c.fn == "cuMemcpyDtoH"]
    # per batch k: its compute launch, then the host waits for it; batch k+1's copy was issued before that wait
    for k in range(4):
        launch_k = launches[k * len(launches) // 5]
        wait_k = next(i for i in syncs if i > launch_k)
        assert copies[k + 1] < wait_k, f"batch {k + 1}'s copy was not issued before batch {k} was synchronized"
        assert copies[k + 1] < launch_k
    # the compute stream waits on the copy's event (no host synchronization for the hand-off)
    waits = [i for i, c in enumerate(calls) if c.fn == "cuStreamWaitEvent" and c.stream.endswith("compute")]
    assert len(waits) >= 5 and waits[0] < launches[0]


def test_batches_of_tuple_samples_are_lists_like_pytorch():
    """PyTorch's default_collate turns tuple samples into a list batch (and batch_size=None converts a
    tuple sample to a list); rawdev gave tuples."""
    from rawdev.utils.data import DataLoader, TensorDataset
    ds = TensorDataset(rawdev.arange(6.0).reshape(3, 2), rawdev.arange(3))
    b = next(iter(DataLoader(ds, batch_size=2)))
    assert type(b) is list and b[1].tolist() == [0, 1]
    b = next(iter(DataLoader([(1, 2.0), (3, 4.0)], batch_size=2)))
    assert type(b) is list and b[0].tolist() == [1, 3] and b[1].dtype is rawdev.float64
    s = next(iter(DataLoader(ds, batch_size=None)))
    assert type(s) is list and s[0].tolist() == [0.0, 1.0] and s[1].item() == 0
