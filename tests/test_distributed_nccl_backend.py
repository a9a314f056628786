"""The NCCL backend of process groups (rawdev.cuda.process_group_nccl), without a GPU: RAWDEV_COMMUNICATOR=nccl
on the simulator with a stand-in libnccl (tests/_nccl_double.py) over the simulated GPU's memory, so that the
wiring is proven: the unique id through the store, each call's arguments (counts, ncclDataType_t, ncclRedOp_t,
device pointers, the current stream), the Works, destroy, and the checked errors. The results are compared with
numpy. The real library runs in tools/gpu_check's NCCL step on a GPU."""
import threading

import numpy as np
import pytest
import rawdev
import rawdev.distributed as dist
from rawdev.cuda import process_group_nccl
from rawdev.distributed import nccl
from rawdev.distributed.process_group import ProcessGroup

from _dist_ranks import free_port
from _nccl_double import FakeNccl

rng = np.random.default_rng()


def _init(monkeypatch, lib, backend="nccl"):
    monkeypatch.setenv("RAWDEV_COMMUNICATOR", "nccl")
    previous = process_group_nccl.use_library(lib)
    dist.init_process_group(backend, init_method=f"tcp://127.0.0.1:{free_port()}", rank=0, world_size=1, timeout=30)
    return previous


@pytest.fixture
def fake(sim, device, monkeypatch):
    lib = FakeNccl()
    previous = _init(monkeypatch, lib)
    yield lib
    if dist.is_initialized():
        dist.destroy_process_group()
    process_group_nccl.use_library(previous)


def _cuda(a):
    return rawdev.tensor(a, device="cuda")


def _calls(lib, name):
    return [args for n, args in lib.calls if n == name]


def test_the_first_cuda_collective_makes_the_communicator_through_the_store(fake):
    a = rng.standard_normal(5).astype(np.float32)
    t = _cuda(a)
    dist.all_reduce(t)
    np.testing.assert_array_equal(t.cpu().numpy(), a)
    assert fake.names()[:3] == ["ncclGetUniqueId", "ncclCommInitRank", "ncclAllReduce"]
    init, = _calls(fake, "ncclCommInitRank")
    pg = dist.group.WORLD
    assert init["uid"] == pg.store.get("world/nccl_unique_id") and len(init["uid"]) == 128
    assert (init["nranks"], init["rank"], init["device"]) == (1, 0, 0)
    call, = _calls(fake, "ncclAllReduce")
    assert call["send"] == call["recv"] == t.data_ptr()
    assert (call["count"], call["dtype"], call["op"]) == (5, 7, 0)
    assert call["stream"] == rawdev.cuda.current_stream().cuda_stream
    handle = call["comm"]
    assert process_group_nccl.communicator().handle.value == handle
    dist.all_reduce(t, op=dist.ReduceOp.MAX)
    assert fake.names().count("ncclCommInitRank") == 1        # made once per group
    dist.destroy_process_group()
    assert fake.destroyed == [handle]


def test_cpu_tensors_and_the_simulator_by_default_keep_the_simulated_communicator(sim, device, monkeypatch):
    lib = FakeNccl()
    previous = process_group_nccl.use_library(lib)
    monkeypatch.delenv("RAWDEV_COMMUNICATOR", raising=False)
    try:
        dist.init_process_group("nccl", init_method=f"tcp://127.0.0.1:{free_port()}", rank=0, world_size=1)
        t = _cuda(np.arange(3, dtype=np.float32))
        dist.all_reduce(t)                             # auto on the simulator: the simulated communicator
        monkeypatch.setenv("RAWDEV_COMMUNICATOR", "nccl")
        c = rawdev.arange(3.0)
        dist.all_reduce(c)                             # a cpu tensor: never NCCL
        assert lib.calls == []
        monkeypatch.setenv("RAWDEV_COMMUNICATOR", "mpi")
        with pytest.raises(ValueError, match="RAWDEV_COMMUNICATOR='mpi': expected one of auto, nccl, simulated"):
            dist.all_reduce(t)
        monkeypatch.setenv("RAWDEV_COMMUNICATOR", "simulated")
        dist.all_reduce(t)
        assert lib.calls == []
    finally:
        dist.destroy_process_group()
        process_group_nccl.use_library(previous)


def test_the_simulated_communicator_does_premul_sum_as_nccl_does(sim, device, monkeypatch):
    monkeypatch.setenv("RAWDEV_COMMUNICATOR", "simulated")
    dist.init_process_group("nccl", init_method=f"tcp://127.0.0.1:{free_port()}", rank=0, world_size=1)
    try:
        a = rng.standard_normal(5).astype(np.float32)
        for t in (_cuda(a), rawdev.tensor(a)):
            dist.all_reduce(t, op=dist._make_nccl_premul_sum(0.5))
            np.testing.assert_array_equal(t.cpu().numpy(), a * np.float32(0.5))
        assert process_group_nccl.communicator() is None
        with pytest.raises(TypeError, match="PREMUL_SUM needs a floating point tensor"):
            dist.all_reduce(rawdev.tensor([1, 2]), op=dist._make_nccl_premul_sum(2))
    finally:
        dist.destroy_process_group()


@pytest.mark.parametrize("dtype, code", [(np.float32, 7), (np.float64, 8), (np.float16, 6), (np.int64, 4),
                                         (np.int32, 2), (np.uint8, 1), (np.int8, 0)])
def test_dtypes_map_to_nccl_data_types(fake, dtype, code):
    a = (rng.standard_normal(6) * 10).astype(dtype)
    t = _cuda(a)
    dist.all_reduce(t, op=dist.ReduceOp.SUM)
    np.testing.assert_array_equal(t.cpu().numpy(), a)
    assert _calls(fake, "ncclAllReduce")[-1]["dtype"] == code


def test_bfloat16_and_bool_as_pytorch_maps_them(fake):
    t = rawdev.tensor([1.5, -2.0], dtype=rawdev.bfloat16, device="cuda")
    dist.all_reduce(t, op=dist.ReduceOp.AVG)
    assert t.float().cpu().numpy().tolist() == [1.5, -2.0]
    assert (_calls(fake, "ncclAllReduce")[-1]["dtype"], _calls(fake, "ncclAllReduce")[-1]["op"]) == (9, 4)
    b = rawdev.tensor([True, False], device="cuda")
    dist.all_reduce(b)                                 # a sum of bools is their OR: ncclMax on uint8
    assert (_calls(fake, "ncclAllReduce")[-1]["dtype"], _calls(fake, "ncclAllReduce")[-1]["op"]) == (1, 2)
    assert b.cpu().numpy().tolist() == [True, False]
    dist.all_reduce(b, op=dist.ReduceOp.PRODUCT)       # AND: ncclMin
    assert _calls(fake, "ncclAllReduce")[-1]["op"] == 3
    with pytest.raises(TypeError, match="Cannot use ReduceOp.AVG with boolean inputs"):
        dist.all_reduce(b, op=dist.ReduceOp.AVG)


@pytest.mark.parametrize("op, code", [(dist.ReduceOp.SUM, 0), (dist.ReduceOp.PRODUCT, 1), (dist.ReduceOp.MAX, 2),
                                      (dist.ReduceOp.MIN, 3), (dist.ReduceOp.AVG, 4)])
def test_reduce_ops_map_to_nccl_red_ops(fake, op, code):
    t = _cuda(np.array([1.0, 2.0, 3.0], np.float32))
    dist.all_reduce(t, op=op)
    assert _calls(fake, "ncclAllReduce")[-1]["op"] == code


def test_bitwise_ops_are_refused_as_pytorch_refuses_them_on_nccl(fake):
    t = _cuda(np.array([1, 2], np.int32))
    for op in (dist.ReduceOp.BAND, dist.ReduceOp.BOR, dist.ReduceOp.BXOR):
        with pytest.raises(ValueError, match=f"Cannot use ReduceOp.{op.name} with NCCL"):
            dist.all_reduce(t, op=op)
    assert "ncclAllReduce" not in fake.names()


def test_premul_sum_makes_and_destroys_an_nccl_op(fake):
    a = rng.standard_normal(4).astype(np.float32)
    t = _cuda(a)
    dist.all_reduce(t, op=dist._make_nccl_premul_sum(0.25))
    np.testing.assert_array_equal(t.cpu().numpy(), a * np.float32(0.25))
    made, = _calls(fake, "ncclRedOpCreatePreMulSum")
    assert (made["factor"], made["dtype"], made["residence"]) == (0.25, 7, 1)
    used = _calls(fake, "ncclAllReduce")[-1]["op"]
    assert used >= 5 and _calls(fake, "ncclRedOpDestroy") == [{"op": used, "comm": made["comm"]}]
    with pytest.raises(ValueError, match="PREMUL_SUM needs its factor"):
        dist.all_reduce(t, op=dist.ReduceOp.PREMUL_SUM)


def test_every_collective_on_one_rank_matches_numpy_with_its_arguments(fake):
    a = rng.standard_normal((2, 3)).astype(np.float32)
    t = _cuda(a)
    dist.broadcast(t, src=0)
    np.testing.assert_array_equal(t.cpu().numpy(), a)
    assert {k: v for k, v in _calls(fake, "ncclBroadcast")[-1].items() if k in ("count", "dtype", "root")} == \
        {"count": 6, "dtype": 7, "root": 0}
    dist.reduce(t, dst=0, op=dist.ReduceOp.MIN)
    assert (_calls(fake, "ncclReduce")[-1]["op"], _calls(fake, "ncclReduce")[-1]["root"]) == (3, 0)
    out = [rawdev.zeros((3, 2), device="cuda").t()]    # a non-contiguous output: gathered flat, then copied
    dist.all_gather(out, t)
    np.testing.assert_array_equal(out[0].cpu().numpy(), a)
    flat = rawdev.zeros(6, device="cuda")
    dist.all_gather_into_tensor(flat, t)
    np.testing.assert_array_equal(flat.cpu().numpy(), a.reshape(-1))
    call = _calls(fake, "ncclAllGather")[-1]
    assert (call["send"], call["recv"], call["count"]) == (t.data_ptr(), flat.data_ptr(), 6)
    got = rawdev.zeros((2, 3), device="cuda")
    dist.reduce_scatter_tensor(got, t)
    np.testing.assert_array_equal(got.cpu().numpy(), a)
    call = _calls(fake, "ncclReduceScatter")[-1]
    assert (call["send"], call["recv"], call["count"], call["op"]) == (t.data_ptr(), got.data_ptr(), 6, 0)
    got2 = rawdev.zeros((2, 3), device="cuda")
    dist.reduce_scatter(got2, [_cuda(a.T.copy()).t()], op=dist.ReduceOp.AVG)   # a non-contiguous input
    np.testing.assert_array_equal(got2.cpu().numpy(), a)
    outs = [rawdev.zeros(3, device="cuda")]
    dist.all_to_all(outs, [_cuda(a[1])])
    np.testing.assert_array_equal(outs[0].cpu().numpy(), a[1])
    names = fake.names()
    i = names.index("ncclGroupStart")
    assert names[i:i + 4] == ["ncclGroupStart", "ncclSend", "ncclRecv", "ncclGroupEnd"]
    gathered = [rawdev.zeros((2, 3), device="cuda")]
    dist.gather(t, gathered, dst=0)
    np.testing.assert_array_equal(gathered[0].cpu().numpy(), a)
    scattered = rawdev.zeros(3, device="cuda")
    dist.scatter(scattered, [_cuda(a[0])], src=0)
    np.testing.assert_array_equal(scattered.cpu().numpy(), a[0])
    assert fake.names().count("ncclGroupEnd") == 3            # all_to_all, gather, scatter
    before = len(_calls(fake, "ncclAllReduce"))
    dist.barrier()                                     # as PyTorch on NCCL: a one-element all-reduce
    call = _calls(fake, "ncclAllReduce")[-1]
    assert len(_calls(fake, "ncclAllReduce")) == before + 1 and (call["count"], call["dtype"]) == (1, 7)


def test_send_and_recv_to_itself(fake):
    a = rng.standard_normal(4).astype(np.float32)
    src, dst = _cuda(a), rawdev.zeros(4, device="cuda")
    work = dist.isend(src, dst=0)
    assert dist.recv(dst, src=0) == 0
    work.wait()
    np.testing.assert_array_equal(dst.cpu().numpy(), a)
    send, = _calls(fake, "ncclSend")
    recv, = _calls(fake, "ncclRecv")
    assert (send["buf"], send["count"], send["peer"]) == (src.data_ptr(), 4, 0)
    assert (recv["buf"], recv["count"], recv["peer"]) == (dst.data_ptr(), 4, 0)


def test_async_works_wait_through_an_event_on_the_stream_they_ran_on(fake):
    s = rawdev.cuda.Stream()
    a = rng.standard_normal(8).astype(np.float32)
    t = _cuda(a)
    s.wait_stream(rawdev.cuda.current_stream())
    with rawdev.cuda.stream(s):
        work = dist.all_reduce(t, op=dist.ReduceOp.AVG, async_op=True)
    assert isinstance(work, process_group_nccl.NcclWork)
    assert _calls(fake, "ncclAllReduce")[-1]["stream"] == s.cuda_stream
    assert work.wait() is True          # the current stream waits for the event: what follows sees the result
    np.testing.assert_array_equal(t.cpu().numpy(), a)
    work.synchronize()
    assert work.is_completed() and work.is_success()


def test_non_contiguous_and_foreign_device_tensors_are_refused_as_pytorch_does(fake):
    t = rawdev.zeros((3, 4), device="cuda").t()
    for call in (lambda: dist.all_reduce(t), lambda: dist.broadcast(t, 0),
                 lambda: dist.all_gather_into_tensor(rawdev.zeros(12, device="cuda"), t)):
        with pytest.raises(ValueError, match="Tensors must be contiguous"):
            call()
    assert "ncclAllReduce" not in fake.names()


@pytest.mark.parametrize("code, name, text", [(5, "ncclInvalidUsage", "invalid usage (run with NCCL_DEBUG=WARN"),
                                              (1, "ncclUnhandledCudaError", "unhandled cuda error")])
def test_a_failing_call_names_itself_the_result_and_what_rawdev_was_doing(fake, code, name, text):
    fake.fail["ncclAllReduce"] = code
    t = _cuda(np.ones(3, np.float32))
    with pytest.raises(nccl.NcclError) as e:
        dist.all_reduce(t)
    msg = str(e.value)
    assert msg.startswith(f"ncclAllReduce failed: {name} ({text}")
    assert "fake NCCL: the call was told to fail" in msg
    assert msg.endswith("(while all_reduce on group world (rank 0 of 1), its first tensor (3,) float32 on cuda:0)")
    assert (e.value.call, e.value.code, e.value.name) == ("ncclAllReduce", code, name)


def test_a_failing_communicator_init_says_which_collective_made_it(sim, device, monkeypatch):
    lib = FakeNccl(fail={"ncclCommInitRank": 1})
    previous = _init(monkeypatch, lib)
    try:
        with pytest.raises(nccl.NcclError, match=r"^ncclCommInitRank failed: ncclUnhandledCudaError \(unhandled cuda "
                                                 r"error .*\(while making the NCCL communicator for broadcast on group "
                                                 r"world \(rank 0 of 1\)\)$"):
            dist.broadcast(_cuda(np.ones(2, np.float32)), src=0)
    finally:
        dist.destroy_process_group()
        process_group_nccl.use_library(previous)


def test_ddp_on_nccl_is_one_plain_step(fake):
    from rawdev import nn
    x = _cuda(rng.standard_normal((4, 6)).astype(np.float32))
    y = _cuda(rng.standard_normal((4, 2)).astype(np.float32))
    rawdev.manual_seed(0)
    plain = nn.Sequential(nn.Linear(6, 8), nn.Tanh(), nn.Linear(8, 2)).to("cuda")
    rawdev.manual_seed(0)
    model = nn.parallel.DistributedDataParallel(nn.Sequential(nn.Linear(6, 8), nn.Tanh(), nn.Linear(8, 2)).to("cuda"))
    for m in (plain, model):
        nn.functional.mse_loss(m(x), y).backward()
    for p, q in zip(plain.parameters(), model.module.parameters()):
        np.testing.assert_allclose(q.grad.cpu().numpy(), p.grad.cpu().numpy(), rtol=1e-6, atol=1e-7)
    assert any(c["op"] == 4 for c in _calls(fake, "ncclAllReduce"))       # the buckets, averaged by NCCL
    assert "ncclBroadcast" in fake.names()                                 # the parameters, from rank 0


@pytest.mark.devices(2)
def test_two_ranks_in_threads_share_one_communicator_through_the_store(sim, device, monkeypatch):
    lib = FakeNccl()
    previous = _init(monkeypatch, lib)
    try:
        store = dist.group.WORLD.store
        groups = [ProcessGroup(store, r, [0, 1], "pair", 30.0, "nccl") for r in range(2)]
        a = [rng.standard_normal(6).astype(np.float32) for _ in range(2)]
        results, errors = [None, None], []

        def rank(r):
            try:
                rawdev.cuda.set_device(r)
                t = rawdev.tensor(a[r], device=f"cuda:{r}")
                dist.all_reduce(t, group=groups[r])
                g = rawdev.zeros(12, device=f"cuda:{r}")
                dist.all_gather_into_tensor(g, t, group=groups[r])
                outs = [rawdev.zeros(3, device=f"cuda:{r}") for _ in range(2)]
                dist.all_to_all(outs, [rawdev.tensor(a[r][3 * j:3 * j + 3], device=f"cuda:{r}") for j in range(2)],
                                group=groups[r])
                b = rawdev.tensor(a[r], device=f"cuda:{r}")
                dist.broadcast(b, src=1, group=groups[r])
                red = rawdev.tensor(a[r], device=f"cuda:{r}")
                dist.reduce(red, dst=1, op=dist.ReduceOp.MAX, group=groups[r])
                rs = rawdev.zeros(3, device=f"cuda:{r}")
                dist.reduce_scatter_tensor(rs, rawdev.tensor(a[r], device=f"cuda:{r}"), group=groups[r])
                gl = [rawdev.zeros(6, device=f"cuda:{r}") for _ in range(2)] if r == 0 else None
                dist.gather(rawdev.tensor(a[r], device=f"cuda:{r}"), gl, dst=0, group=groups[r])
                p2p = rawdev.tensor(a[r], device=f"cuda:{r}")
                if r == 0:
                    dist.send(p2p, dst=1, group=groups[r])
                else:
                    assert dist.recv(p2p, src=0, group=groups[r]) == 0
                results[r] = (t.cpu().numpy(), g.cpu().numpy(), [o.cpu().numpy() for o in outs], b.cpu().numpy(),
                              red.cpu().numpy(), rs.cpu().numpy(), gl and [x.cpu().numpy() for x in gl],
                              p2p.cpu().numpy())
            except BaseException as e:
                errors.append(e)

        threads = [threading.Thread(target=rank, args=(r,)) for r in range(2)]
        for th in threads:
            th.start()
        for th in threads:
            th.join(120)
        assert not errors, errors
        total = a[0] + a[1]
        for r in range(2):
            np.testing.assert_array_equal(results[r][0], total)
            np.testing.assert_array_equal(results[r][1], np.concatenate([total, total]))
            np.testing.assert_array_equal(results[r][2][0], a[0][3 * r:3 * r + 3])
            np.testing.assert_array_equal(results[r][2][1], a[1][3 * r:3 * r + 3])
            np.testing.assert_array_equal(results[r][3], a[1])                      # broadcast from rank 1
            np.testing.assert_array_equal(results[r][5], (a[0] + a[1])[3 * r:3 * r + 3])
            np.testing.assert_array_equal(results[r][7], a[0])                      # rank 0 sent to rank 1
        np.testing.assert_array_equal(results[1][4], np.maximum(a[0], a[1]))        # reduced onto rank 1 only
        np.testing.assert_array_equal(results[0][4], a[0])
        np.testing.assert_array_equal(results[0][6][0], a[0])
        np.testing.assert_array_equal(results[0][6][1], a[1])
        inits = _calls(lib, "ncclCommInitRank")
        assert sorted((c["rank"], c["device"]) for c in inits) == [(0, 0), (1, 1)]
        assert inits[0]["uid"] == inits[1]["uid"] == store.get("pair/nccl_unique_id")
        assert lib.names().count("ncclGetUniqueId") == 1
        for pg in groups:
            pg.close()
        assert len(lib.destroyed) == 2
    finally:
        dist.destroy_process_group()
        process_group_nccl.use_library(previous)
