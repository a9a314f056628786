"""rawdev.distributed.rpc: calls, RRefs, errors and timeouts between worker processes, async_execution, and
distributed autograd with a DistributedOptimizer checked against plain autograd; the wire format in-process."""
import numpy as np
import pytest
import rawdev
from rawdev.distributed.rpc import wire

from _dist_ranks import run_ranks

RPC_INIT = "import rawdev.distributed.rpc as rpc\n"

CALLS = """
import time
import rawdev.distributed.autograd as dist_autograd
from rawdev.distributed.optim import DistributedOptimizer

def add(a, b):
    return a + b

def boom():
    raise ValueError("bad value on purpose")

def slow():
    time.sleep(3)

class Counter:
    def __init__(self, start):
        self.n = start
    def bump(self, k):
        self.n += k
        return self.n

def value_of(rref):
    return rref.local_value().n

@rpc.functions.async_execution
def later(x):
    fut = rawdev.futures.Future()
    fut.set_result(x * 10)
    return fut

rpc.init_rpc(f"w{RANK}", rank=RANK, world_size=WORLD)
if RANK == 0:
    report("sync", rpc.rpc_sync("w1", add, args=(rawdev.ones(2), 3)).tolist())
    report("async", rpc.rpc_async(1, rawdev.add, args=(rawdev.arange(3.0), rawdev.ones(3))).wait().tolist())
    report("info", [rpc.get_worker_info().name, rpc.get_worker_info("w1").id])
    try:
        rpc.rpc_sync("w1", boom)
    except ValueError as e:
        report("error", str(e).splitlines()[:2])
    try:
        rpc.rpc_sync("w1", slow, timeout=0.3)
    except RuntimeError as e:
        report("timeout", str(e))
    try:
        rpc.rpc_sync("w1", lambda: 1)
    except TypeError as e:
        report("lambda", str(e))
    c = rpc.remote("w1", Counter, args=(5,))
    report("proxy", c.rpc_sync().bump(2))
    report("value", rpc.rpc_sync("w1", value_of, args=(c,)))
    report("owner", [c.owner_name(), c.is_owner()])
    report("async_exec", rpc.rpc_sync("w1", later, args=(4,)))
    mine = rpc.RRef(rawdev.full((2,), 7.0))
    report("local_rref", rpc.rpc_sync("w1", rawdev.Tensor.tolist, args=(rawdev.ones(1),)))
    try:
        c.local_value()
    except RuntimeError as e:
        report("not_owner", str(e))
    # distributed autograd: w0 -> w1 (layer a) -> w2 (layer b), back to w0
    rawdev.manual_seed(3)
    a = rpc.remote("w1", rawdev.nn.Linear, args=(4, 3))
    b = rpc.remote("w2", rawdev.nn.Linear, args=(3, 2))
    try:
        a.rpc_sync().parameters()   # a generator: not data, as pickle would not send it either
    except TypeError as e:
        report("generator", str(e).splitlines()[1])
    x = rawdev.randn(5, 4)
    wa = [t.clone() for t in rpc.rpc_sync("w1", params_of, args=(a,))]
    wb = [t.clone() for t in rpc.rpc_sync("w2", params_of, args=(b,))]
    prefs = rpc.rpc_sync("w1", param_rrefs, args=(a,)) + rpc.rpc_sync("w2", param_rrefs, args=(b,))
    opt = DistributedOptimizer(rawdev.optim.SGD, prefs, lr=0.5)
    with dist_autograd.context() as cid:
        h = rpc.rpc_sync("w1", run_module, args=(a, x))
        out = rpc.rpc_sync("w2", run_module, args=(b, h.tanh()))
        loss = (out ** 2).sum()
        dist_autograd.backward(cid, [loss])
        opt.step(cid)
    # the same step with plain autograd here
    la, lb = rawdev.nn.Linear(4, 3), rawdev.nn.Linear(3, 2)
    with rawdev.no_grad():
        for p, w in zip(list(la.parameters()) + list(lb.parameters()), wa + wb):
            p.copy_(w)
    (lb(la(x).tanh()) ** 2).sum().backward()
    ref = [(p - 0.5 * p.grad).detach() for p in list(la.parameters()) + list(lb.parameters())]
    got = rpc.rpc_sync("w1", params_of, args=(a,)) + rpc.rpc_sync("w2", params_of, args=(b,))
    report("dist_err", max(float((g - r).abs().max()) for g, r in zip(got, ref)))
    report("grad_untouched", [p.grad is None for p in la.parameters()] == [False, False])
rpc.shutdown()
report("shutdown", True)
"""

HELPERS = """
def params_of(rref):
    return [p.detach() for p in rref.local_value().parameters()]

def param_rrefs(rref):
    return [rpc.RRef(p) for p in rref.local_value().parameters()]

def run_module(rref, x):
    return rref.local_value()(x)
"""


def test_calls_rrefs_errors_and_distributed_autograd(tmp_path):
    body = CALLS.replace("rpc.init_rpc(", HELPERS + "\nrpc.init_rpc(", 1)
    ranks = run_ranks(tmp_path, body, world=3, init=RPC_INIT)
    for r in ranks:
        assert r.rc == 0, r
        assert r.results.get("shutdown") is True, r
    res = ranks[0].results
    assert res["sync"] == [4.0, 4.0] and res["async"] == [1.0, 2.0, 3.0]
    assert res["info"] == ["w0", 1]
    assert res["error"] == ["On WorkerInfo(id=1, name=w1):", "bad value on purpose"]
    assert "RPC ran for more than set timeout" in res["timeout"]
    assert "lambda" in res["lambda"] and "module level" in res["lambda"]
    assert res["proxy"] == 7 and res["value"] == 7 and res["owner"] == ["w1", False]
    assert res["async_exec"] == 40
    assert "Cannot call localValue() on a non-local reference" in res["not_owner"]
    assert res["dist_err"] < 1e-6, ranks[0]
    assert "builtins.generator cannot be sent" in res["generator"]


def test_init_rpc_twice_names_and_missing_init(tmp_path):
    with pytest.raises(RuntimeError, match="RPC has not been initialized. Call torch.distributed.rpc.init_rpc first"):
        rawdev.distributed.rpc.rpc_sync("w1", len, args=([],))
    body = """
    rpc.init_rpc("same", rank=RANK, world_size=WORLD)
    """
    ranks = run_ranks(tmp_path, body, world=2, init=RPC_INIT, guard=120)
    for r in ranks:
        assert r.rc != 0 and "worker names must be unique; ['same']" in r.err, r


def test_wire_round_trips_values_without_pickle():
    rng = np.random.default_rng()
    base = rawdev.tensor(rng.standard_normal((3, 4)).astype(np.float32))
    msg = {"t": base.t(), "bf": base.to(rawdev.bfloat16), "i": rawdev.arange(5), "b": base > 0,
           "g": base.clone().requires_grad_(), "nested": [(1, 2.5, float("inf")), b"\x00raw", None],
           "np": np.arange(6, dtype=np.int16).reshape(2, 3), "fn": rawdev.nn.Linear}
    form, blobs = wire.encode(msg)
    out = wire.decode(form, blobs)
    assert out["t"].tolist() == base.t().tolist() and out["t"].is_contiguous()
    assert out["bf"].dtype == rawdev.bfloat16
    assert out["bf"].float().tolist() == base.to(rawdev.bfloat16).float().tolist()
    assert out["i"].dtype == rawdev.int64 and out["b"].dtype == rawdev.bool
    assert out["g"].requires_grad and out["g"].grad_fn is None
    assert out["nested"] == [(1, 2.5, float("inf")), b"\x00raw", None]
    assert out["np"].dtype == np.int16 and out["np"].tolist() == [[0, 1, 2], [3, 4, 5]]
    assert out["fn"] is rawdev.nn.Linear
    header, got = wire.unframe(wire.frame({"body": form}, blobs)[8:])
    assert header["body"] == form and got == blobs


def test_wire_refuses_what_it_cannot_send(driver):
    with pytest.raises(TypeError, match="cannot be sent.*module level"):
        wire.encode({"f": lambda: 0})
    with pytest.raises(TypeError, match=r"the message\['o'\] of type .*object cannot be sent"):
        wire.encode({"o": object()})
    with pytest.raises(RuntimeError, match="TensorPipe RPC backend only supports CPU tensors by default"):
        wire.encode([rawdev.ones(2, device="cuda")])


def test_a_worker_still_reading_the_worker_table_serves_requests_after_it(tmp_path):
    # rank 1 reads the rendezvous slowly; rank 0, done first, at once asks it for a value through an RRef it owns
    body = """
    import time
    from rawdev.distributed.rpc import agent as _agent
    if RANK == 1:
        _join = _agent.Agent.join
        def slow_join(self):
            get = self.store.get
            def slow_get(key):
                time.sleep(0.5)
                return get(key)
            self.store.get = slow_get
            try:
                _join(self)
            finally:
                del self.store.get
        _agent.Agent.join = slow_join
    def owned_sum(r):   # runs on w1: the argument is an RRef w1 owns, read back from the wire there
        return float(r.local_value().sum())
    rpc.init_rpc(f"w{RANK}", rank=RANK, world_size=WORLD)
    if RANK == 0:
        rref = rpc.remote("w1", rawdev.add, args=(rawdev.ones(2), 1))
        report("value", rpc.rpc_sync("w1", owned_sum, args=(rref,)))
    rpc.shutdown()
    """
    ranks = run_ranks(tmp_path, body, world=2, init=RPC_INIT)
    for r in ranks:
        assert r.rc == 0, r
    assert ranks[0].results["value"] == 4.0
