"""`rawdev run` / `python -m rawdev.distributed.run`: torchrun's launcher for one node's ranks.

Starts --nproc-per-node processes of the script, each with torchrun's environment (RANK, WORLD_SIZE, LOCAL_RANK,
LOCAL_WORLD_SIZE, GROUP_RANK, MASTER_ADDR, MASTER_PORT, TORCHELASTIC_RUN_ID) and RAWDEV_SIM_DEVICES raised to at
least the number of local ranks, so that on the simulator each rank has its own simulated GPU (init_process_group
with "nccl" makes cuda:LOCAL_RANK current). Their output is passed through. When a rank exits with a non-zero
status the others are stopped (SIGTERM, then SIGKILL after a grace period) and the launcher reports that rank's
status and last lines and exits with it. Each rank runs in its own session so that stopping it also stops what it
started (DataLoader workers), and on Linux a rank is killed if the launcher itself dies: no orphans.
"""
import argparse
import collections
import os
import signal
import subprocess
import sys
import threading
import time
import uuid

__all__ = ["add_arguments", "launch", "main"]

_GRACE_S = 5.0
_TAIL = 20


def add_arguments(p):
    """torchrun's flags (both spellings: --nproc-per-node and --nproc_per_node)."""
    p.add_argument("--nproc-per-node", "--nproc_per_node", dest="nproc_per_node", type=int, default=1,
                   help="processes (ranks) to start on this node (default 1)")
    p.add_argument("--nnodes", type=int, default=1, help="number of nodes in the job (default 1)")
    p.add_argument("--node-rank", "--node_rank", dest="node_rank", type=int, default=0,
                   help="this node's index among the nodes (default 0)")
    p.add_argument("--master-addr", "--master_addr", dest="master_addr", default="127.0.0.1",
                   help="address of the node whose rank 0 serves the store (default 127.0.0.1)")
    p.add_argument("--master-port", "--master_port", dest="master_port", type=int, default=29500,
                   help="port of the store on the master (default 29500)")
    p.add_argument("--standalone", action="store_true", help="one node; pick a free master port")
    p.add_argument("-m", "--module", action="store_true", help="run the script argument as a module (python -m)")
    p.add_argument("--no-python", "--no_python", dest="no_python", action="store_true",
                   help="run the script argument as an executable, not with python")
    p.add_argument("script", help="the training script (or module with -m) each rank runs")
    p.add_argument("script_args", nargs=argparse.REMAINDER, help="arguments passed to the script")


def _free_port():
    import socket
    with socket.socket() as s:
        s.bind(("", 0))
        return s.getsockname()[1]


def _die_with_parent():
    # Linux: the kernel sends SIGKILL to the rank if the launcher dies, even by SIGKILL
    try:
        import ctypes
        ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, signal.SIGKILL)   # PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        pass


class _Rank:
    def __init__(self, rank, local_rank, cmd, env):
        self.rank, self.local_rank = rank, local_rank
        self.tail = collections.deque(maxlen=_TAIL)
        self.proc = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                     start_new_session=True,
                                     preexec_fn=_die_with_parent if sys.platform.startswith("linux") else None)
        self.readers = [threading.Thread(target=self._relay, args=(src, dst), daemon=True)
                        for src, dst in ((self.proc.stdout, sys.stdout), (self.proc.stderr, sys.stderr))]
        for t in self.readers:
            t.start()

    def _relay(self, src, dst):
        for line in iter(src.readline, b""):
            self.tail.append(line.decode(errors="replace").rstrip("\n"))
            out = getattr(dst, "buffer", None)
            if out is not None:
                out.write(line)
                out.flush()
            else:
                dst.write(line.decode(errors="replace"))
                dst.flush()

    def signal(self, sig):
        try:
            os.killpg(self.proc.pid, sig)
        except (ProcessLookupError, PermissionError):
            pass


def _status(rc):
    return f"signal {signal.Signals(-rc).name}" if rc < 0 else f"exit status {rc}"


def launch(args):
    """Run the job `args` describes (from add_arguments' parser); returns the launcher's exit status."""
    n = args.nproc_per_node
    if n < 1 or args.nnodes < 1 or not 0 <= args.node_rank < args.nnodes:
        print(f"rawdev run: --nproc-per-node {n}, --nnodes {args.nnodes}, --node-rank {args.node_rank}: need "
              f"nproc >= 1, nnodes >= 1 and 0 <= node-rank < nnodes", file=sys.stderr)
        return 2
    port = _free_port() if args.standalone else args.master_port
    world = n * args.nnodes
    if args.no_python:
        prefix = [args.script]
    elif args.module:
        prefix = [sys.executable, "-u", "-m", args.script]
    else:
        prefix = [sys.executable, "-u", args.script]
    base = dict(os.environ, MASTER_ADDR=args.master_addr, MASTER_PORT=str(port), WORLD_SIZE=str(world),
                LOCAL_WORLD_SIZE=str(n), GROUP_RANK=str(args.node_rank), ROLE_RANK="0",
                TORCHELASTIC_RUN_ID=os.environ.get("TORCHELASTIC_RUN_ID", uuid.uuid4().hex[:8]))
    base["RAWDEV_SIM_DEVICES"] = str(max(n, int(os.environ.get("RAWDEV_SIM_DEVICES", "1") or 1)))
    if n > 1 and "OMP_NUM_THREADS" not in os.environ:
        base["OMP_NUM_THREADS"] = "1"      # torchrun's default: ranks sharing a node do not oversubscribe it
    ranks = []
    stop = {"sig": None}

    def on_signal(sig, frame):
        stop["sig"] = sig
    old = {s: signal.signal(s, on_signal) for s in (signal.SIGINT, signal.SIGTERM)}
    try:
        for local in range(n):
            rank = args.node_rank * n + local
            env = dict(base, RANK=str(rank), LOCAL_RANK=str(local))
            ranks.append(_Rank(rank, local, prefix + list(args.script_args), env))
        failed = None
        while stop["sig"] is None:
            live = [r for r in ranks if r.proc.poll() is None]
            failed = next((r for r in ranks if r.proc.returncode not in (None, 0)), None)
            if failed is not None or not live:
                break
            time.sleep(0.05)
        if failed is None and stop["sig"] is None:
            for r in ranks:
                for t in r.readers:
                    t.join()
            return 0
        for r in ranks:
            if r.proc.poll() is None:
                r.signal(signal.SIGTERM)
        deadline = time.monotonic() + _GRACE_S
        for r in ranks:
            try:
                r.proc.wait(max(0.0, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                r.signal(signal.SIGKILL)
                r.proc.wait()
            r.signal(signal.SIGKILL)       # whatever the rank started in its session
            for t in r.readers:
                t.join(1.0)
        if failed is None:
            print(f"rawdev run: stopped by {signal.Signals(stop['sig']).name}; ended all {n} ranks", file=sys.stderr)
            return 128 + stop["sig"]
        rc = failed.proc.returncode
        lines = "\n".join(f"  {line}" for line in failed.tail) or "  (no output)"
        print(f"rawdev run: rank {failed.rank} (local_rank {failed.local_rank}, pid {failed.proc.pid}) failed with "
              f"{_status(rc)}; stopped the other ranks.\nLast lines of rank {failed.rank}:\n{lines}", file=sys.stderr)
        return rc if rc > 0 else 128 - rc
    finally:
        for s, h in old.items():
            signal.signal(s, h)
        for r in ranks:
            if r.proc.poll() is None:
                r.signal(signal.SIGKILL)
                r.proc.wait()


def main(argv=None):
    """`python -m rawdev.distributed.run --nproc-per-node N script.py args`: see `rawdev run -h`."""
    p = argparse.ArgumentParser(prog="python -m rawdev.distributed.run",
                                description="Start one process per rank with torchrun's environment.")
    add_arguments(p)
    return launch(p.parse_args(argv))


if __name__ == "__main__":
    sys.exit(main())
