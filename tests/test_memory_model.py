"""The memory tool with tensors, modules and a training step."""
import numpy as np
import pytest
import rawdev
import rawdev.cuda as C
from rawdev import nn, optim
from rawdev.cuda import memory as M
from rawdev.runtime import memory as rm

from _refs import pool_used_agrees


@pytest.fixture(autouse=True)
def _no_history():
    yield
    M.record_history(False)
    M.clear_history()


def _mlp():
    rawdev.manual_seed(0)
    return nn.Sequential(nn.Linear(37, 70), nn.ReLU(), nn.Linear(70, 9))


def _settled(dev):
    """memory_allocated() once queued frees have landed (and it agrees with the pool)."""
    # a move's staging and old storage are released when its copy is done (a sync), their frees are then
    # queued on the stream (the next safe point) and run at the sync after that
    for _ in range(3):
        dev.synchronize()
    n = C.memory_allocated()
    assert pool_used_agrees(dev, n, len(dev.allocator.live)), (n, dev.pool_attribute("used"))
    return n


def test_moving_an_mlp_allocates_its_tensors_plus_alignment(dev):
    model = _mlp()
    base = _settled(dev)
    C.reset_peak_memory_stats()
    sizes = [t.nbytes for t in model.state_dict().values()]
    assert sizes == [37 * 70 * 4, 70 * 4, 70 * 9 * 4, 9 * 4]
    model.cuda()
    # one arena; each tensor starts at a multiple of ARENA_ALIGN (256) bytes, the last padded too
    expected = sum(rm.align(n, C.memory.ARENA_ALIGN) for n in sizes)
    assert C.memory_allocated() - base == expected == sum(sizes) + sum(-n % 256 for n in sizes)
    assert _settled(dev) - base == expected
    assert C.max_memory_allocated() == base + expected
    owners = {o: n for o, n, _ in M.owner_totals()}
    for name, n in zip(["0.weight", "0.bias", "2.weight", "2.bias"], sizes):
        assert owners[name] == n
    model.cpu()
    assert _settled(dev) == base
    assert C.max_memory_allocated() == base + expected   # the peak remembers
    C.reset_peak_memory_stats()
    assert C.max_memory_allocated() == base
    model.cuda()
    assert C.max_memory_allocated() == base + expected
    model.cpu()
    assert _settled(dev) == base


@pytest.mark.parametrize("opt_name", ["sgd", "adam"])
def test_a_training_step_names_every_block(dev, opt_name):
    model = _mlp().cuda()
    if opt_name == "sgd":
        opt, states = optim.SGD(model.parameters(), lr=0.1, momentum=0.9), ["momentum_buffer"]
    else:
        opt, states = optim.Adam(model.parameters(), lr=1e-3), ["exp_avg", "exp_avg_sq"]
    loss_fn = nn.CrossEntropyLoss()
    rng = np.random.default_rng(0)
    x = rawdev.tensor(rng.standard_normal((16, 37)).astype(np.float32), device="cuda")
    y = rawdev.tensor(rng.integers(0, 9, 16), device="cuda")
    M.record_history(True, stacks=False)
    opt.zero_grad()
    loss = loss_fn(model(x), y)
    during = C.memory_snapshot()      # after forward: what backward will need is live
    loss.backward()
    opt.step()
    after = C.memory_snapshot()

    def names(snap):
        out = set()
        for s in snap["segments"]:
            for b in s["blocks"]:
                if b["state"] == "active_allocated":
                    out |= {p["owner"] for p in b["parts"]} if b["parts"] else {b["owner"]}
        return out

    params = ["0.weight", "0.bias", "2.weight", "2.bias"]
    now = names(after)
    for p in params:
        assert p in now
        assert f"{p}.grad" in now
        for st in states:
            assert f"{st} of {p}" in now
    acts = {n for n in names(during) if n.startswith(("Linear", "ReLU"))}
    assert any(n.startswith("Linear") for n in acts) and any(n.startswith("ReLU") for n in acts), acts
    assert any(n.startswith("tensor at test_memory_model.py:") for n in now)   # x and y: the user's lines
    assert not [n for n in now if not n or n == "unnamed"]
    traced = {e["owner"] for e in M.history()} | {p["owner"] for e in M.history() for p in e.get("parts", [])}
    assert acts <= traced
    text = C.memory_summary()
    assert "0.weight.grad" in text and f"{states[0]} of 0.weight" in text
