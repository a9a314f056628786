#!/usr/bin/env python3
"""Fail every driver call an operation makes, one at a time, on the simulated GPU, and check the aftermath.

For each operation of the registry (OPERATIONS: moves, loads, saves, one step per optimizer, loader
iteration, activation checkpointing) the sweep first runs it once with no fault and records which driver
functions it calls and how often (the simulator's call counter). Then, for every (function, n-th call)
pair, it builds the operation's state afresh, arms `rawdev.sim.inject_fault(function, code, nth=n)` and
runs the operation again. Each case is checked for:

  error      the operation raised a CudaError naming the failed call, its CUresult and what rawdev was
             doing (a context) — or it absorbed the failure and completed correctly ("absorbed")
  memory     after the error (and a synchronize), rawdev's allocation table and the pool's used bytes are
             back to what they were before the operation; if not, the case's objects are dropped and the
             memory must then be back to what it was before they were made ("held": memory still held by
             reachable objects, e.g. gradients a failed backward had already written; "leak": not even then)
  state      moves and loads: the model/tensors are bit-identical to before (all-or-nothing);
             steps: every parameter is either untouched or holds the value of a successful step
  usable     a fresh cuda computation afterwards gives the right answer

Outcome of a case: "ok" when all four hold, else the first that fails: "no error" (the fault vanished and
the result is wrong), "foreign" (an exception other than CudaError), "no context", "leak", "changed",
"inconsistent", "unusable", and last "held".

    python tools/fault_sweep.py [--ops NAME ...] [--max-per-call N] [--json out.json]

The injected code is CUDA_ERROR_OUT_OF_MEMORY for allocations and CUDA_ERROR_UNKNOWN for everything else.
"""
import argparse
import gc
import json
import os
import sys
import tempfile
import time
import warnings
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))
os.environ.setdefault("RAWDEV_DRIVER", "sim")

import numpy as np  # noqa: E402
import rawdev  # noqa: E402
from rawdev import nn, optim, sim  # noqa: E402
from rawdev.errors import CudaError  # noqa: E402
from rawdev.runtime import get_device, reset_for_tests  # noqa: E402

OOM, UNKNOWN = 2, 999
OUTCOMES = ("ok", "absorbed", "no error", "foreign", "no context", "leak", "held", "changed", "inconsistent",
            "unusable")


# ------------------------------------------------------------------------------------------- helpers
def make_model(seed=0):
    rawdev.manual_seed(seed)
    return nn.Sequential(nn.Linear(6, 8), nn.ReLU(), nn.Linear(8, 3))


def snapshot_module(m):
    """name -> (device, dtype, bytes) of every parameter, buffer and grad."""
    out = {}
    for name, t in list(m.named_parameters()) + list(m.named_buffers()):
        out[name] = (str(t.device), t.dtype.name, t._storage_copy().tobytes())
        if getattr(t, "grad", None) is not None:
            out[name + ".grad"] = (str(t.grad.device), t.grad.dtype.name, t.grad._storage_copy().tobytes())
    return out


def snapshot_tensors(ts):
    return {k: (str(t.device), t.dtype.name, t._storage_copy().tobytes()) for k, t in ts.items()}


def batch(seed=3, n=5):
    r = np.random.default_rng(seed)
    return (rawdev.tensor(r.standard_normal((n, 6)).astype(np.float32)).to("cuda"),
            rawdev.tensor(r.integers(0, 3, n)).to("cuda"))


def backward(model, x, y):
    loss = nn.CrossEntropyLoss()(model(x), y)
    loss.backward()


# ------------------------------------------------------------------------------------ the registry
class Operation:
    """setup() -> state dict; run(state) -> result; check: 'unchanged' (moves/loads: the watched state must
    be bit-identical after a failure) or 'step' (each watched tensor is before or after a good step)."""

    def __init__(self, name, setup, run, watch, check="unchanged", verify=None):
        self.name, self.setup, self.run, self.watch, self.check, self.verify = name, setup, run, watch, check, verify


def _tensor_to_cuda():
    return {"t": rawdev.tensor(np.arange(300, dtype=np.float32))}


def _tensor_to_cpu():
    return {"t": rawdev.tensor(np.arange(300, dtype=np.float32)).to("cuda")}


def _module(device):
    def setup():
        return {"model": make_model().to(device)}
    return setup


def _load_sd(src_device):
    def setup():
        model = make_model(0).to("cuda")
        sd = {k: v.detach().clone() for k, v in make_model(1).state_dict().items()}
        sd = {k: v.to(src_device) for k, v in sd.items()}
        return {"model": model, "sd": sd}
    return setup


def _save_setup():
    d = tempfile.mkdtemp(prefix="rawdev-sweep-")
    return {"model": make_model().to("cuda"), "path": os.path.join(d, "m.safetensors")}


def _save_run(s):
    rawdev.save(s["model"].state_dict(), s["path"])


def _load_cuda_setup():
    d = tempfile.mkdtemp(prefix="rawdev-sweep-")
    path = os.path.join(d, "m.safetensors")
    rawdev.save(make_model(1).state_dict(), path)
    return {"path": path}


def _step_setup(opt_cls, **kw):
    def setup():
        model = make_model().to("cuda")
        opt = opt_cls(model.parameters(), **kw)
        x, y = batch()
        backward(model, x, y)
        opt.step()            # warm-up: optimizer state exists, kernels are loaded
        opt.zero_grad()
        backward(model, x, y)
        return {"model": model, "opt": opt}
    return setup


def _loader_setup():
    r = np.random.default_rng(0)
    return {"X": r.standard_normal((20, 6)).astype(np.float32), "Y": r.integers(0, 3, 20)}


def _loader_run(s):
    out = []
    for xb, yb in rawdev.utils.data.DeviceLoader(s["X"], s["Y"], batch_size=8, device="cuda"):
        out.append((xb.cpu().numpy().copy(), yb.cpu().numpy().copy()))
    return out


def _loader_verify(s, res):
    got_x = np.concatenate([b[0] for b in res])
    return got_x.shape == s["X"].shape and np.array_equal(got_x, s["X"])


def _ckpt_setup():
    model = make_model().to("cuda")
    x, y = batch()
    return {"model": model, "x": x, "y": y}


def _ckpt_run(s):
    from rawdev.utils.checkpoint import checkpoint
    m = s["model"]
    out = checkpoint(lambda t: m[2](m[1](m[0](t))), s["x"], use_reentrant=False)
    nn.CrossEntropyLoss()(out, s["y"]).backward()


def _graph_setup():
    model = make_model().to("cuda")
    x, _ = batch()
    model(x)   # warm: the kernels are loaded before the capture
    return {"model": model, "x": x}


def _graph_run(s):
    g = rawdev.cuda.CUDAGraph()
    with rawdev.no_grad(), rawdev.cuda.graph(g, pool_size=1 << 20):
        out = s["model"](s["x"])
    g.replay()
    res = out.cpu().numpy().copy()
    g.reset()
    return res


def _graph_verify(s, res):
    with rawdev.no_grad():
        return np.allclose(res, s["model"](s["x"]).cpu().numpy(), rtol=1e-5, atol=1e-6)


OPERATIONS = {
    "tensor_to_cuda": Operation("tensor_to_cuda", _tensor_to_cuda, lambda s: s["t"].to("cuda"), "t",
                                verify=lambda s, r: np.array_equal(r.cpu().numpy(), s["t"].numpy())),
    "tensor_to_cpu": Operation("tensor_to_cpu", _tensor_to_cpu, lambda s: s["t"].cpu(), "t",
                               verify=lambda s, r: np.array_equal(r.numpy(), np.arange(300, dtype=np.float32))),
    "module_to_cuda": Operation("module_to_cuda", _module("cpu"), lambda s: s["model"].to("cuda"), "model"),
    "module_to_cpu": Operation("module_to_cpu", _module("cuda"), lambda s: s["model"].cpu(), "model"),
    "load_state_dict_cpu": Operation("load_state_dict_cpu", _load_sd("cpu"),
                                     lambda s: s["model"].load_state_dict(s["sd"]), "model"),
    "load_state_dict_cuda": Operation("load_state_dict_cuda", _load_sd("cuda"),
                                      lambda s: s["model"].load_state_dict(s["sd"]), "model"),
    "save": Operation("save", _save_setup, _save_run, "model"),
    "load_map_location_cuda": Operation("load_map_location_cuda", _load_cuda_setup,
                                        lambda s: rawdev.load(s["path"], map_location="cuda"), None),
    "sgd_step": Operation("sgd_step", _step_setup(optim.SGD, lr=0.1, momentum=0.9), lambda s: s["opt"].step(),
                          "model", check="step"),
    "adam_step": Operation("adam_step", _step_setup(optim.Adam, lr=1e-2), lambda s: s["opt"].step(), "model",
                           check="step"),
    "device_loader": Operation("device_loader", _loader_setup, _loader_run, None, verify=_loader_verify),
    "checkpoint": Operation("checkpoint", _ckpt_setup, _ckpt_run, "model", check="step"),
    "graph_capture": Operation("graph_capture", _graph_setup, _graph_run, "model", verify=_graph_verify),
}


# ----------------------------------------------------------------------------------------- the sweep
def _settle():
    """Run every queued free: finalizers queue them, a flush issues them, a synchronize runs them."""
    dev = get_device(0)
    gc.collect()
    for _ in range(2):
        dev.allocator.flush()
        dev.synchronize()
    return dev


def _memory():
    dev = _settle()
    return dev.allocator.stats["allocated"], len(dev.allocator.live), dev.pool_attribute("used")


def _watched(op, s):
    w = s.get(op.watch) if op.watch else None
    if w is None:
        return None
    if isinstance(w, nn.Module):
        return snapshot_module(w)
    return snapshot_tensors({"t": w})


def _usable():
    a = rawdev.tensor(np.arange(7, dtype=np.float32)).to("cuda")
    return (a * 2 + a).cpu().tolist() == [3.0 * i for i in range(7)]


def profile(op):
    """{driver function: calls} the operation makes on a fresh state, and the state after it succeeded."""
    s = op.setup()
    mem0 = _memory()
    before = dict(sim.stats()["calls"])
    res = op.run(s)
    after = dict(sim.stats()["calls"])
    calls = {f: after.get(f, 0) - before.get(f, 0) for f in after if after.get(f, 0) > before.get(f, 0)}
    good = _watched(op, s)
    if op.verify and not op.verify(s, res):
        raise AssertionError(f"{op.name}: the operation gives a wrong result without any fault")
    del res
    mem1 = _memory()
    return calls, good, tuple(b - a for a, b in zip(mem0, mem1))


def run_case(op, fn, nth, good_after, kept=(0, 0, 0)):
    """Inject one fault into one operation; return (outcome, detail)."""
    mem_pre = _memory()
    s = op.setup()
    base_mem = _memory()
    before = _watched(op, s)
    sim.inject_fault(fn, OOM if fn == "cuMemAllocFromPoolAsync" else UNKNOWN, nth=nth)
    err, res = None, None
    try:
        res = op.run(s)
    except CudaError as e:
        err = e
    except BaseException as e:   # anything else escaping is a finding, not a crash of the sweep
        if isinstance(e, KeyboardInterrupt):
            raise
        err = e
    fired = sim.stats()["faults_armed"] == 0
    sim.clear_faults()
    if sim.sticky_error() is not None:
        return "unusable", f"sticky {sim.sticky_error().name} after the fault"
    outcome, detail = None, ""
    if err is None:
        ok = op.verify(s, res) if op.verify else True
        after = _watched(op, s)
        if op.check == "step" and after is not None and after != good_after:
            ok = False
        del res
        outcome = "absorbed" if ok else "no error"
        detail = "the operation completed" + ("" if fired else " (the fault never fired)")
        if not ok:
            return outcome, detail
        base_mem = tuple(a + k for a, k in zip(base_mem, kept))   # what a successful run keeps (moved model)
    elif not isinstance(err, CudaError):
        first = str(err).splitlines()[0][:200] if str(err) else ""
        return "foreign", f"{type(err).__module__}.{type(err).__name__}: {first}"
    elif not err.context or err.call != fn:
        return "no context", f"{err.call}: {str(err).splitlines()[0][:200]}"
    else:
        detail = str(err).splitlines()[0][:200]
    del err
    try:
        mem = _memory()
    except CudaError as e:
        return "unusable", f"synchronize after the fault: {e}"
    held = None
    if mem != base_mem:
        held = f"allocated/blocks/pool-used {base_mem} -> {mem}; " + detail
    if outcome is None and op.watch:
        after = _watched(op, s)
        if op.check == "unchanged" and after != before:
            changed = sorted(k for k in after if after[k] != before.get(k))
            return "changed", f"{', '.join(changed)[:200]}; " + detail
        if op.check == "step":
            bad = sorted(k for k in after if after[k] != before.get(k) and after[k] != good_after.get(k))
            if bad:
                return "inconsistent", f"{', '.join(bad)[:200]}; " + detail
    try:
        if not _usable():
            return "unusable", "a fresh computation after the fault gives a wrong answer"
    except Exception as e:
        return "unusable", f"{type(e).__name__}: {e}"
    s.clear()
    del s
    mem_end = _memory()
    if mem_end != mem_pre:
        return "leak", f"with the case's objects gone: {mem_pre} -> {mem_end}; " + (held or detail)
    if held:
        return "held", held
    return outcome or "ok", detail


def sweep(names=None, max_per_call=None, progress=None):
    """[(op, fn, nth, outcome, detail)] over the registry (or the named operations)."""
    results = []
    try:
        with warnings.catch_warnings():
            warnings.filterwarnings("ignore", message="rawdev: a queued free failed")   # the sweep sees the blocks
            _sweep(names, max_per_call, progress, results)
    finally:
        gc.unfreeze()
        reset_for_tests("sim")
    return results


def _sweep(names, max_per_call, progress, results):
    for name in names or list(OPERATIONS):
        op = OPERATIONS[name]
        reset_for_tests("sim")
        calls, good_after, kept = profile(op)
        gc.collect()
        gc.freeze()    # loaded kernels and the like are never garbage: collections walk only the cases' objects
        for fn in sorted(calls):
            picks = list(range(1, calls[fn] + 1))
            if max_per_call and len(picks) > max_per_call:   # first, last, and evenly between
                idx = np.linspace(0, len(picks) - 1, max_per_call).round().astype(int)
                picks = sorted({picks[i] for i in idx})
            for nth in picks:
                try:
                    outcome, detail = run_case(op, fn, nth, good_after, kept)
                except BaseException as e:
                    if isinstance(e, KeyboardInterrupt):
                        raise
                    outcome, detail = "unusable", f"the sweep could not rebuild the state: {type(e).__name__}: {e}"
                results.append((name, fn, nth, outcome, detail))
                if progress:
                    progress(results[-1])
                if outcome == "unusable":
                    reset_for_tests("sim")


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--ops", nargs="*", choices=sorted(OPERATIONS), help="operations to sweep (default: all)")
    ap.add_argument("--max-per-call", type=int, help="at most this many n-th calls per driver function")
    ap.add_argument("--json", metavar="PATH")
    ap.add_argument("-v", "--verbose", action="store_true", help="print every case that is not ok")
    a = ap.parse_args(argv)
    t0 = time.time()
    results = sweep(a.ops, a.max_per_call)
    wall = time.time() - t0
    print(f"rawdev fault sweep: {len(results)} faults injected over {len({r[0] for r in results})} operations, "
          f"{wall:.0f} s")
    print(f"  {'operation':<24}{'faults':>7} " + " ".join(f"{o[:12]:>12}" for o in OUTCOMES))
    for name in dict.fromkeys(r[0] for r in results):
        rs = [r for r in results if r[0] == name]
        print(f"  {name:<24}{len(rs):>7} " + " ".join(f"{sum(r[3] == o for r in rs):>12}" for o in OUTCOMES))
    print(f"  {'total':<24}{len(results):>7} " + " ".join(f"{sum(r[3] == o for r in results):>12}" for o in OUTCOMES))
    bad = [r for r in results if r[3] not in ("ok", "absorbed")]
    for r in bad if a.verbose else bad[:30]:
        print(f"  {r[0]} {r[1]}#{r[2]}: {r[3]}: {r[4]}")
    if a.json:
        Path(a.json).write_text(json.dumps({"wall_s": round(wall, 1), "results": [
            dict(op=r[0], call=r[1], nth=r[2], outcome=r[3], detail=r[4]) for r in results]}, indent=1))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
