"""rawdev.distributed.TCPStore and init_process_group's rendezvous, in one process (the master and clients on
threads): set/get/add/wait/delete_key, timeouts that name what never arrived, a taken port."""
import threading
import time

import pytest
import rawdev.distributed as dist
from rawdev.distributed import TCPStore

from _dist_ranks import free_port


@pytest.fixture
def store():
    s = TCPStore("127.0.0.1", 0, 1, is_master=True, timeout=5)
    yield s
    s.close()


def test_set_get_add_delete(store):
    store.set("a", b"\x00\x01bytes")
    store.set("s", "text")
    assert store.get("a") == b"\x00\x01bytes" and store.get("s") == b"text"
    assert store.add("n", 3) == 3 and store.add("n", -1) == 2 and store.get("n") == b"2"
    assert store.check(["a", "n"]) and not store.check(["a", "nope"])
    assert store.delete_key("a") is True and store.delete_key("a") is False
    assert not store.check(["a"])


def test_a_client_sees_the_masters_keys_and_get_waits_for_a_set(store):
    client = TCPStore("127.0.0.1", store.port, 2, is_master=False, timeout=5)
    setter = threading.Timer(0.2, lambda: store.set("late", b"here"))
    setter.start()
    t0 = time.monotonic()
    assert client.get("late") == b"here"
    assert time.monotonic() - t0 < 5
    client.wait(["late"])
    setter.join()          # its set returns after the server woke the get: let it read its reply before close
    client.close()


def test_threads_sharing_one_client_can_set_while_another_waits(store):
    # ranks in threads share their process's client: a wait blocking the socket for its whole timeout would hold
    # back the very set it waits for, and time out
    waiter_saw = []
    waiter = threading.Thread(target=lambda: waiter_saw.append(store.wait(["id"], timeout=5) or store.get("id")))
    waiter.start()
    time.sleep(0.3)                    # the waiter is inside its blocking wait
    store.set("id", b"unique")
    waiter.join(30)
    assert waiter_saw == [b"unique"]


def test_wait_times_out_naming_the_missing_keys(store):
    store.set("x", b"1")
    with pytest.raises(dist.store.StoreTimeout, match=r"timed out after 0.2 s waiting for keys \['y'\]") as e:
        store.wait(["x", "y"], timeout=0.2)
    assert e.value.missing == ["y"]
    store.set_timeout(0.2)
    with pytest.raises(RuntimeError, match="waiting for key 'never'"):
        store.get("never")


def test_a_taken_port_is_a_clear_error(store):
    with pytest.raises(RuntimeError, match=rf"cannot listen on 127.0.0.1:{store.port}.*port is taken"):
        TCPStore("127.0.0.1", store.port, 1, is_master=True, timeout=1)


def test_init_process_group_one_rank_and_queries():
    assert dist.is_available() and not dist.is_initialized()
    dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{free_port()}", rank=0, world_size=1, timeout=5)
    try:
        assert dist.is_initialized() and dist.get_rank() == 0 and dist.get_world_size() == 1
        assert dist.get_backend() == "gloo"
        with pytest.raises(ValueError, match="initialize the default process group twice"):
            dist.init_process_group("gloo")
        dist.barrier()
        sub = dist.new_group([0])
        assert dist.get_rank(sub) == 0 and dist.get_process_group_ranks(sub) == [0]
    finally:
        dist.destroy_process_group()
    assert not dist.is_initialized()


def test_a_rank_that_never_joins_times_out_naming_it():
    port = free_port()
    with pytest.raises(RuntimeError, match=r"timed out after 0.5 s on rank 0: rank\(s\) \[1, 2\] of world_size 3 "
                                           r"never joined"):
        dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{port}", rank=0, world_size=3, timeout=0.5)
    assert not dist.is_initialized()
    TCPStore("127.0.0.1", port, 1, is_master=True, timeout=1).close()     # the failed attempt freed its port


def test_env_init_reads_torchruns_variables(monkeypatch):
    for k in ("RANK", "WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT"):
        monkeypatch.delenv(k, raising=False)
    with pytest.raises(ValueError, match="environment variable RANK expected, but not set"):
        dist.init_process_group("gloo")
    monkeypatch.setenv("RANK", "0")
    monkeypatch.setenv("WORLD_SIZE", "1")
    monkeypatch.setenv("MASTER_ADDR", "127.0.0.1")
    monkeypatch.setenv("MASTER_PORT", str(free_port()))
    dist.init_process_group("gloo", timeout=5)
    try:
        assert dist.get_world_size() == 1
    finally:
        dist.destroy_process_group()


def test_unknown_backend_and_before_init():
    with pytest.raises(RuntimeError, match="backend 'mpi' is not available"):
        dist.init_process_group("mpi", init_method="tcp://127.0.0.1:1", rank=0, world_size=1)
    with pytest.raises(ValueError, match="Default process group has not been initialized"):
        dist.get_rank()


def test_device_id_becomes_the_current_device_and_node_local_rank(monkeypatch):
    from rawdev.device import current_cuda_index, set_current_cuda_index
    monkeypatch.delenv("LOCAL_RANK", raising=False)
    assert dist.get_node_local_rank(fallback_rank=3) == 3
    with pytest.raises(RuntimeError, match="LOCAL_RANK is not in the environment"):
        dist.get_node_local_rank()
    monkeypatch.setenv("LOCAL_RANK", "1")
    assert dist.get_node_local_rank() == 1
    before = current_cuda_index()
    dist.init_process_group("nccl", init_method=f"tcp://127.0.0.1:{free_port()}", rank=0, world_size=1, timeout=5,
                            device_id=2)
    try:
        assert current_cuda_index() == 2                  # device_id wins over LOCAL_RANK
    finally:
        dist.destroy_process_group()
        set_current_cuda_index(before)
