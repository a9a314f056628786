"""rawdev.utils.data: DataLoader with worker processes (order, seeding, errors, shutdown, timeout, shared
memory, pin_memory), datasets and samplers, against what PyTorch's torch.utils.data does."""
import collections
import gc
import glob
import itertools
import multiprocessing
import os
import random
import time

import numpy as np
import pytest
import rawdev
from rawdev.utils.data import (
    BatchSampler,
    ConcatDataset,
    DataLoader,
    Dataset,
    IterableDataset,
    RandomSampler,
    SequentialSampler,
    Subset,
    SubsetRandomSampler,
    TensorDataset,
    WeightedRandomSampler,
    get_worker_info,
    random_split,
)
from rawdev.utils.data import dataloader as dl_module  # the modules are importable as in torch.utils.data
from rawdev.utils.data import dataset as ds_module
from rawdev.utils.data import sampler as sampler_module

Pair = collections.namedtuple("Pair", "a b")


def _no_children():
    gc.collect()
    deadline = time.monotonic() + 5
    while multiprocessing.active_children() and time.monotonic() < deadline:
        time.sleep(0.02)
    return multiprocessing.active_children() == []


def _no_shm_left():
    return glob.glob(f"/dev/shm/rawdev-dl-{os.getpid()}-*") == []


class Samples(Dataset):
    """Sample i: a float32 row of i's, a float16 matrix, an int label, a dict with a bool and a string, a
    namedtuple; which worker made it; a slow first half of every 8 so the workers finish out of order."""

    def __init__(self, n=37, slow=False):
        self.n, self.slow = n, slow

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        if self.slow and i % 8 < 4:
            time.sleep(0.01)
        info = get_worker_info()
        x = np.full(3, i, np.float32)
        m = (np.arange(6, dtype=np.float16).reshape(2, 3) * i)
        return x, m, i, {"even": i % 2 == 0, "name": f"s{i}"}, Pair(float(i) / 2, np.int16(i)), \
            (info.id if info else -1)


def _expected_order(n, bs, seed):
    """The permutation RandomSampler draws after the DataLoader iterator's base seed (independent of rawdev:
    rawdev.Generator(s) is numpy's PCG64(s); the base seed is one int64 draw, then the permutation)."""
    g = np.random.Generator(np.random.PCG64(seed))
    g.integers(0, 2 ** 63 - 1, dtype=np.int64, endpoint=True)
    perm = g.permutation(n).tolist()
    return [perm[k:k + bs] for k in range(0, n, bs)]


@pytest.mark.parametrize("workers", [0, 1, 4])
def test_map_style_batches_are_the_same_with_0_1_4_workers(workers):
    ds = Samples(37, slow=workers == 4)
    loader = DataLoader(ds, batch_size=5, shuffle=True, num_workers=workers,
                        generator=rawdev.Generator().manual_seed(0))
    batches = list(loader)
    order = _expected_order(37, 5, 0)
    assert len(batches) == len(loader) == 8
    for k, (b, idx) in enumerate(zip(batches, order)):
        x, m, label, d, pair, wid = b
        assert type(b) is list and type(d) is dict and type(pair) is Pair
        assert x.dtype is rawdev.float32 and m.dtype is rawdev.float16 and label.dtype is rawdev.int64
        np.testing.assert_array_equal(np.asarray(x), np.repeat(np.array(idx, np.float32)[:, None], 3, 1))
        np.testing.assert_array_equal(np.asarray(m), np.arange(6, dtype=np.float16).reshape(1, 2, 3)
                                      * np.array(idx, np.float16)[:, None, None])
        assert label.tolist() == idx
        assert d["even"].dtype is rawdev.bool and d["even"].tolist() == [i % 2 == 0 for i in idx]
        assert d["name"] == [f"s{i}" for i in idx]
        assert pair.a.dtype is rawdev.float64 and pair.a.tolist() == [i / 2 for i in idx]
        assert pair.b.dtype is rawdev.int16 and pair.b.tolist() == idx
        # batch k was made by worker k % workers (round-robin), handed out in sampler order
        assert wid.tolist() == [k % workers if workers else -1] * len(idx)
    assert _no_children() and _no_shm_left()


@pytest.mark.parametrize("workers", [0, 1, 4])
def test_same_generator_seed_same_batches_and_a_new_permutation_per_epoch(workers):
    ds = TensorDataset(rawdev.arange(30.0).reshape(15, 2), rawdev.arange(15))

    def epoch(loader):
        return [b[1].tolist() for b in loader]
    a = DataLoader(ds, batch_size=4, shuffle=True, num_workers=workers, generator=rawdev.Generator().manual_seed(3))
    b = DataLoader(ds, batch_size=4, shuffle=True, num_workers=workers, generator=rawdev.Generator().manual_seed(3))
    e1, e2 = epoch(a), epoch(a)
    assert e1 == epoch(b) == _expected_order(15, 4, 3)
    assert e1 != e2 and sorted(sum(e2, [])) == list(range(15))
    x = next(iter(DataLoader(ds, batch_size=4, num_workers=workers)))[0]
    np.testing.assert_array_equal(np.asarray(x), np.arange(8.0).reshape(4, 2))


class Stream(IterableDataset):
    """0..n-1 in batches of bs; with workers, worker w yields the batches w, w+W, w+2W, ... (sharded through
    get_worker_info), so that the round-robin interleaving gives the single-process order."""

    def __init__(self, n, bs, shard=True):
        self.n, self.bs, self.shard = n, bs, shard

    def __iter__(self):
        info = get_worker_info()
        nb = -(-self.n // self.bs)
        w, W = (info.id, info.num_workers) if info and self.shard else (0, 1)
        for b in range(w, nb, W):
            for i in range(b * self.bs, min(self.n, (b + 1) * self.bs)):
                yield {"i": i, "x": np.full(2, i, np.int32)}

    def __len__(self):
        return self.n


@pytest.mark.parametrize("workers", [0, 1, 4])
def test_iterable_dataset_in_workers(workers):
    loader = DataLoader(Stream(23, 4), batch_size=4, num_workers=workers)
    got = [b["i"].tolist() for b in loader]
    assert got == [list(range(k, min(23, k + 4))) for k in range(0, 23, 4)]
    assert len(loader) == 6
    assert [len(b["i"]) for b in DataLoader(Stream(23, 4), batch_size=4, num_workers=workers, drop_last=True)] == \
        [4] * 5
    # without sharding every worker iterates its own full copy (PyTorch's behaviour): each sample W times
    whole = DataLoader(Stream(10, 5, shard=False), batch_size=5, num_workers=workers)
    plain = [i for b in whole for i in b["i"].tolist()]
    assert collections.Counter(plain) == {i: max(workers, 1) for i in range(10)}
    # batch_size=None: samples one by one, converted
    one = list(DataLoader(Stream(5, 5), batch_size=None, num_workers=workers))
    assert [s["i"] for s in one] == list(range(5)) and one[2]["x"].dtype is rawdev.int32
    assert _no_children()


def test_iterable_dataset_rejects_shuffle_and_samplers():
    with pytest.raises(ValueError, match="expected unspecified shuffle option, but got shuffle=True"):
        DataLoader(Stream(4, 2), shuffle=True)
    with pytest.raises(ValueError, match="expected unspecified sampler option"):
        DataLoader(Stream(4, 2), sampler=[0, 1])


class Faulty(Dataset):
    def __len__(self):
        return 8

    def __getitem__(self, i):
        if i == 5:
            raise ValueError(f"sample {i} is broken (marker 7f3a)")
        if i == 7:
            return {}["missing key"]
        return np.float32(i)


def test_worker_exception_carries_its_traceback_and_the_loader_goes_on():
    it = iter(DataLoader(Faulty(), batch_size=2, num_workers=2))
    assert next(it).tolist() == [0.0, 1.0] and next(it).tolist() == [2.0, 3.0]
    with pytest.raises(ValueError) as e:
        next(it)
    msg = str(e.value)
    assert msg.startswith("Caught ValueError in DataLoader worker process 0.\nOriginal Traceback (most recent "
                          "call last):")
    assert "sample 5 is broken (marker 7f3a)" in msg and "in __getitem__" in msg and "test_dataloader.py" in msg
    with pytest.raises(KeyError, match="Caught KeyError in DataLoader worker process 1"):
        next(it)
    with pytest.raises(StopIteration):
        next(it)
    assert _no_children() and _no_shm_left()
    with pytest.raises(ValueError, match="marker 7f3a") as e:   # in the main process: the error as it is
        list(DataLoader(Faulty(), batch_size=2))
    assert "Caught" not in str(e.value)


def test_worker_init_fn_error_is_raised_in_the_main_process():
    def init(wid):
        raise ValueError(f"init of worker {wid} failed")
    with pytest.raises(ValueError, match="(?s)Caught ValueError in DataLoader worker process 0.*init of worker 0 fail"):
        list(DataLoader(Samples(4), batch_size=2, num_workers=1, worker_init_fn=init))
    assert _no_children()


@pytest.mark.parametrize("how", ["break", "del", "exhausted", "exception", "cycle"])
def test_no_worker_process_is_left_behind(how):
    loader = DataLoader(Samples(40), batch_size=2, num_workers=3, prefetch_factor=3)
    if how == "break":
        for k, _ in enumerate(loader):
            if k == 1:
                break
    elif how == "del":
        it = iter(loader)
        next(it)
        assert len(multiprocessing.active_children()) == 3
        del it
    elif how == "exhausted":
        it = iter(loader)
        assert len(list(it)) == 20
        assert multiprocessing.active_children() == []      # at once, before the iterator goes
    elif how == "cycle":   # collected by the cycle collector, which first stops the queues' feeder threads
        it = iter(loader)
        next(it)
        it.me = it
        del it
        gc.collect()
        assert multiprocessing.active_children() == []
    else:
        with pytest.raises(ValueError):
            for _ in DataLoader(Faulty(), batch_size=1, num_workers=2):
                pass
    assert _no_children()
    assert _no_shm_left()   # batches made and never read are removed too


def test_a_worker_that_dies_is_reported(monkeypatch):
    monkeypatch.setattr(dl_module._worker, "STATUS_CHECK_INTERVAL", 0.2)

    class Dies(Dataset):
        def __len__(self):
            return 6

        def __getitem__(self, i):
            if i == 3:
                os._exit(3)
            return i

    it = iter(DataLoader(Dies(), batch_size=2, num_workers=2))
    assert next(it).tolist() == [0, 1]
    with pytest.raises(RuntimeError, match=r"DataLoader worker \(pid\(s\) \d+\) exited unexpectedly"):
        next(it)
    del it
    assert _no_children() and _no_shm_left()


def test_spawn_context():
    ds = [(np.full(2, i, np.float32), i) for i in range(7)]
    got = list(DataLoader(ds, batch_size=3, num_workers=1, multiprocessing_context="spawn"))
    assert [b[1].tolist() for b in got] == [[0, 1, 2], [3, 4, 5], [6]]
    np.testing.assert_array_equal(np.asarray(got[2][0]), [[6.0, 6.0]])
    assert _no_children()


def test_get_worker_info_and_seeding():
    class Probe(Dataset):
        def __len__(self):
            return 6

        def __getitem__(self, i):
            info = get_worker_info()
            return {"id": info.id, "n": info.num_workers, "seed": info.seed, "rawdev_seed": rawdev.initial_seed(),
                    "init": info.dataset.init_seed, "same_ds": info.dataset is self,
                    "py": random.Random(info.seed).random() == random.random() if i < 3 else False,
                    "np": float(np.random.random())}

    def init(wid):
        info = get_worker_info()
        info.dataset.init_seed = rawdev.initial_seed()   # worker_init_fn runs after the seeding
        random.seed(info.seed)
        assert wid == info.id

    assert get_worker_info() is None            # in the main process
    ds = Probe()
    ds.init_seed = -1

    def run(seed):
        return list(DataLoader(ds, batch_size=1, num_workers=3, worker_init_fn=init,
                               generator=rawdev.Generator().manual_seed(seed)))
    a, b, c = run(11), run(11), run(12)
    ids = [int(x["id"]) for x in a]
    assert ids == [0, 1, 2, 0, 1, 2] and all(int(x["n"]) == 3 for x in a)
    seeds = {int(x["id"]): int(x["seed"]) for x in a}
    assert seeds[1] == seeds[0] + 1 and seeds[2] == seeds[0] + 2          # base_seed + worker id
    assert all(int(x["rawdev_seed"]) == seeds[int(x["id"])] == int(x["init"]) for x in a)
    assert all(bool(x["same_ds"]) for x in a)
    assert all(bool(x["py"]) for x in a[:3])
    assert len({float(x["np"]) for x in a[:3]}) == 3                      # numpy differs per worker
    assert [int(x["seed"]) for x in a] == [int(x["seed"]) for x in b] != [int(x["seed"]) for x in c]
    with pytest.raises(RuntimeError, match="Cannot assign attributes to WorkerInfo objects"):
        class _W:
            pass
        from rawdev.utils.data import WorkerInfo
        WorkerInfo(id=0, num_workers=1, seed=1, dataset=None).id = 3


def test_timeout():
    class Slow(Dataset):
        def __len__(self):
            return 4

        def __getitem__(self, i):
            time.sleep(3 if i >= 2 else 0)
            return i

    it = iter(DataLoader(Slow(), batch_size=2, num_workers=1, timeout=0.3))
    assert next(it).tolist() == [0, 1]
    t0 = time.monotonic()
    with pytest.raises(RuntimeError, match=r"^DataLoader timed out after 0\.3 seconds$"):
        next(it)
    assert time.monotonic() - t0 < 3   # raised before the slow item (3 s) arrived, not after
    del it
    assert _no_children()
    with pytest.raises(ValueError, match="timeout option should be non-negative"):
        DataLoader(Slow(), timeout=-1)


def test_persistent_workers_keep_their_processes_across_epochs():
    class Pid(Dataset):
        def __len__(self):
            return 7

        def __getitem__(self, i):
            return i, os.getpid()

    loader = DataLoader(Pid(), batch_size=2, num_workers=2, persistent_workers=True)
    e1 = list(loader)
    pids = set(sum((b[1].tolist() for b in e1), []))
    assert len(multiprocessing.active_children()) == 2 and len(pids) == 2
    for _ in loader:     # an epoch left early ...
        break
    e2 = list(loader)    # ... does not spill into the next one
    assert [b[0].tolist() for b in e1] == [b[0].tolist() for b in e2] == [[0, 1], [2, 3], [4, 5], [6]]
    assert set(sum((b[1].tolist() for b in e2), [])) == pids and os.getpid() not in pids
    del loader
    assert _no_children() and _no_shm_left()
    with pytest.raises(ValueError, match="persistent_workers option needs num_workers > 0"):
        DataLoader(Pid(), persistent_workers=True)


def test_argument_errors_like_pytorch():
    ds = Samples(4)
    with pytest.raises(ValueError, match="num_workers option should be non-negative"):
        DataLoader(ds, num_workers=-1)
    with pytest.raises(ValueError, match="prefetch_factor option could only be specified in multiprocessing"):
        DataLoader(ds, prefetch_factor=2)
    with pytest.raises(ValueError, match="sampler option is mutually exclusive with shuffle"):
        DataLoader(ds, sampler=SequentialSampler(ds), shuffle=True)
    with pytest.raises(ValueError, match="batch_sampler option is mutually exclusive"):
        DataLoader(ds, batch_sampler=BatchSampler(SequentialSampler(ds), 2, False), batch_size=2)
    loader = DataLoader(ds, num_workers=2)
    assert loader.prefetch_factor == 2
    with pytest.raises(ValueError, match="batch_size attribute should not be set after DataLoader is initialized"):
        loader.batch_size = 3


def test_cuda_is_off_in_workers(driver):
    class UsesCuda(Dataset):
        def __len__(self):
            return 2

        def __getitem__(self, i):
            return rawdev.zeros(2, device="cuda")

    rawdev.zeros(1, device="cuda")   # the main process has a context
    with pytest.raises(Exception, match="CUDA cannot be used in a DataLoader worker process"):
        next(iter(DataLoader(UsesCuda(), batch_size=1, num_workers=1)))
    assert _no_children()


@pytest.mark.parametrize("workers", [0, 2])
def test_pin_memory_batches_are_page_locked(driver, workers):
    from rawdev.runtime.memory import pointer_attributes
    HOST = 1   # CU_MEMORYTYPE_HOST

    def mem_type(t):
        return pointer_attributes(t._host_storage().ctypes.data)["MEMORY_TYPE"]

    X = np.random.default_rng(0).standard_normal((10, 3)).astype(np.float32)
    ds = TensorDataset(rawdev.tensor(X), rawdev.arange(10))
    plain = next(iter(DataLoader(ds, batch_size=4, num_workers=workers)))
    assert mem_type(plain[0]) != HOST and mem_type(plain[1]) != HOST
    batches = list(DataLoader(ds, batch_size=4, num_workers=workers, pin_memory=True))
    assert len(batches) == 3
    for k, (x, y) in enumerate(batches):
        assert mem_type(x) == HOST and mem_type(y) == HOST
        np.testing.assert_array_equal(np.asarray(x), X[4 * k:4 * k + 4])
        with rawdev.trace() as t:
            xd = x.to("cuda", non_blocking=True)
        assert [c.fn for c in t.calls].count("cuMemcpyHtoDAsync") == 1                # one asynchronous copy
        assert not any(c.fn in ("cuStreamSynchronize", "cuCtxSynchronize") for c in t.calls)
        yd = y.to("cuda", non_blocking=True)
        assert xd.is_cuda and yd.dtype is rawdev.int64
        np.testing.assert_array_equal(np.asarray(xd.cpu()), X[4 * k:4 * k + 4])
        assert yd.cpu().tolist() == list(range(4 * k, min(10, 4 * k + 4)))
    # structures are kept, non-tensors pass through
    b = next(iter(DataLoader(Samples(3), batch_size=3, num_workers=workers, pin_memory=True)))
    assert mem_type(b[0]) == HOST and mem_type(b[3]["even"]) == HOST and b[3]["name"] == ["s0", "s1", "s2"]
    assert type(b[4]) is Pair and mem_type(b[4].b) == HOST
    assert _no_children()


# ----------------------------------------------------------------------------- datasets and samplers
def test_random_split_lengths_and_fractions():
    ds = TensorDataset(rawdev.arange(11))
    parts = random_split(ds, [0.5, 0.3, 0.2], generator=rawdev.Generator().manual_seed(1))
    assert [len(p) for p in parts] == [6, 3, 2]       # floor(5.5, 3.3, 2.2) = 5, 3, 2; the 1 left goes to the first
    got = [int(p[i][0]) for p in parts for i in range(len(p))]
    assert sorted(got) == list(range(11)) and got != list(range(11))
    again = random_split(ds, [0.5, 0.3, 0.2], generator=rawdev.Generator().manual_seed(1))
    assert [list(p.indices) for p in again] == [list(p.indices) for p in parts]
    a, b = random_split(ds, [8, 3])
    assert len(a) == 8 and len(b) == 3 and not set(a.indices) & set(b.indices)
    with pytest.raises(ValueError, match="Sum of input lengths does not equal the length of the input dataset"):
        random_split(ds, [5, 5])
    with pytest.warns(UserWarning, match="Length of split at index 1 is 0"):
        random_split(TensorDataset(rawdev.arange(2)), [0.9, 0.1])


def test_random_sampler_with_replacement_is_lazy():
    ds = list(range(7))
    s = RandomSampler(ds, replacement=True, num_samples=10 ** 10, generator=rawdev.Generator().manual_seed(0))
    t0 = time.monotonic()
    first = list(itertools.islice(iter(s), 100))
    assert time.monotonic() - t0 < 60   # 10**10 indices drawn up front would take hours
    assert len(s) == 10 ** 10 and len(first) == 100 and set(first) <= set(range(7)) and len(set(first)) > 3
    assert list(RandomSampler(ds, replacement=True, num_samples=70, generator=rawdev.Generator().manual_seed(0)))[:32] \
        == first[:32]
    s2 = list(RandomSampler(ds, num_samples=17, generator=rawdev.Generator().manual_seed(0)))
    assert len(s2) == 17 and sorted(s2[:7]) == sorted(s2[7:14]) == list(range(7)) and len(set(s2[14:])) == 3
    with pytest.raises(ValueError, match="num_samples should be a positive integer value, but got num_samples=0"):
        RandomSampler(ds, num_samples=0)
    with pytest.raises(TypeError, match="replacement should be a boolean value"):
        RandomSampler(ds, replacement=1)


def test_other_samplers_and_datasets():
    g = rawdev.Generator().manual_seed(0)
    idx = [3, 9, 4, 11]
    got = list(SubsetRandomSampler(idx, generator=g))
    assert sorted(got) == sorted(idx) and len(SubsetRandomSampler(idx)) == 4
    w = WeightedRandomSampler([0.0, 1.0, 3.0], 4000, generator=rawdev.Generator().manual_seed(2))
    c = collections.Counter(w)
    assert c[0] == 0 and abs(c[2] / 4000 - 0.75) < 0.03 and len(w) == 4000
    no_rep = list(WeightedRandomSampler([1.0, 1.0, 5.0, 0.0], 3, replacement=False))
    assert sorted(no_rep) == [0, 1, 2]
    with pytest.raises(RuntimeError, match="cannot sample n_sample > prob_dist.size"):
        list(WeightedRandomSampler([1.0, 0.0], 2, replacement=False))
    cat = ConcatDataset([list(range(3)), list(range(10, 14))])
    assert len(cat) == 7 and cat.cumulative_sizes == [3, 7] and [cat[i] for i in (0, 2, 3, 6, -1, -7)] == \
        [0, 2, 10, 13, 13, 0]
    with pytest.raises(ValueError, match="absolute value of index should not exceed dataset length"):
        cat[-8]
    sub = Subset(TensorDataset(rawdev.arange(10.0)), [1, 3])
    assert len(sub) == 2 and sub[1][0].item() == 3.0
    assert [b[0].tolist() for b in DataLoader(sub, batch_size=2)] == [[1.0, 3.0]]
    both = Samples(2) + Samples(3)
    assert isinstance(both, ConcatDataset) and len(both) == 5
    loader = DataLoader(list(range(10)), batch_sampler=BatchSampler(SubsetRandomSampler([1, 5, 7]), 2, False),
                        num_workers=2)
    assert sorted(sum((b.tolist() for b in loader), [])) == [1, 5, 7] and len(loader) == 2
    assert dl_module.DataLoader is DataLoader and ds_module.Dataset is Dataset
    assert sampler_module.RandomSampler is RandomSampler
