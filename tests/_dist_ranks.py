"""Runs a snippet as N ranks of a rawdev.distributed job (one python process each, env:// rendezvous on a free
port) for the tests/test_distributed_*.py files. Each rank's lines starting with RESULT carry JSON back."""
import json
import os
import socket
import subprocess
import sys
import textwrap
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

PREAMBLE = """\
import json, os, sys
import numpy as np
import rawdev
import rawdev.distributed as dist
RANK, WORLD = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
SEED = int(os.environ.get("TEST_SEED", "0"))
def inp(r, shape, dtype=np.float32):
    return np.random.default_rng(SEED * 1000 + r).standard_normal(shape).astype(dtype)
def report(name, value):
    if hasattr(value, "detach"):
        value = value.detach().cpu().numpy()
    if isinstance(value, np.ndarray):
        value = value.tolist()
    print("RESULT " + json.dumps([name, value]), flush=True)
"""


# The model both FSDP test files shard (text for a rank script, after PREAMBLE): an input Linear, two pre-norm
# residual blocks and an output Linear; make(seed) builds it, batch(step, r) is rank r's inputs and targets
SHARDED_NET = """
from rawdev import nn
class Block(nn.Module):
    def __init__(self, d):
        super().__init__()
        self.ln = nn.LayerNorm(d)
        self.fc1 = nn.Linear(d, 2 * d)
        self.fc2 = nn.Linear(2 * d, d)
    def forward(self, x):
        return x + self.fc2(rawdev.tanh(self.fc1(self.ln(x))))
class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.emb = nn.Linear(4, 6)
        self.blocks = nn.ModuleList([Block(6), Block(6)])
        self.head = nn.Linear(6, 3)      # 3 rows over 2 ranks: uneven chunks (2, 1); emb + head: 51 elements
    def forward(self, x):
        h = self.emb(x)
        for b in self.blocks:
            h = b(h)
        return self.head(h)
def make(seed):
    rawdev.manual_seed(seed)
    return Net()
def batch(step, r):
    return inp(10 * step + r, (5, 4)), inp(10 * step + r + 5, (5, 3))
"""



def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Rank:
    def __init__(self, rank, proc, out, err):
        self.rank, self.rc, self.out, self.err = rank, proc.returncode, out, err
        self.results = {}
        for line in out.splitlines():
            if line.startswith("RESULT "):
                name, value = json.loads(line[len("RESULT "):])
                self.results[name] = value

    def __repr__(self):
        return f"rank {self.rank} rc={self.rc}\n--- stdout\n{self.out[-3000:]}\n--- stderr\n{self.err[-3000:]}"


def run_ranks(tmp_path, body, world=2, guard=120, env=None, init="dist.init_process_group('gloo', timeout=20)\n",
              rank_env=None):
    """Run PREAMBLE + init + body as `world` ranks; returns their Rank records (rc, out, err, results).
    `env` (and `rank_env(rank)`, a dict per rank) override the rank's environment, WORLD_SIZE included.
    `guard` only stops a hung job (10x above the expected time)."""
    script = tmp_path / "rank_script.py"
    script.write_text(PREAMBLE + init + textwrap.dedent(body))
    port = free_port()
    procs, files = [], []
    for r in range(world):
        e = dict(os.environ, RANK=str(r), WORLD_SIZE=str(world), LOCAL_RANK=str(r), MASTER_ADDR="127.0.0.1",
                 MASTER_PORT=str(port), PYTHONPATH=str(ROOT))
        e.update(env or {})
        e.update(rank_env(r) if rank_env is not None else {})
        # output to files, not pipes: a rank blocked on a full pipe that nobody reads yet (the ranks are waited
        # for in turn) holds up the others at their exit (the master waits for its clients to leave the store)
        out, err = (open(tmp_path / f"rank{r}.{kind}", "w+") for kind in ("out", "err"))
        files.append((out, err))
        procs.append(subprocess.Popen([sys.executable, str(script)], env=e, stdout=out, stderr=err, text=True))
    deadline = time.monotonic() + guard
    try:
        for r, p in enumerate(procs):
            try:
                p.wait(timeout=max(0.0, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                for q in procs:
                    q.kill()
                    q.wait()
                raise AssertionError(f"rank {r} hung past the {guard} s guard:\n{_read(files[r][1])[-3000:]}") \
                    from None
        return [Rank(r, p, _read(out), _read(err)) for r, (p, (out, err)) in enumerate(zip(procs, files))]
    finally:
        for out, err in files:
            out.close()
            err.close()


def _read(f):
    f.flush()
    f.seek(0)
    return f.read()


def gone(pid):
    """Whether process `pid` has ended (a zombie not yet reaped by init has ended too)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    with open(f"/proc/{pid}/stat") as f:
        return f.read().split(")")[-1].split()[0] == "Z"
