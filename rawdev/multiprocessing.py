"""`rawdev.multiprocessing`: torch.multiprocessing's names. Python's multiprocessing API re-exported (Process,
Queue, Pool, get_context, set_start_method, ...), the sharing-strategy switches, and spawn/start_processes.

rawdev's DataLoader moves batches between processes through its own shared-memory files (rawdev.utils.data),
whatever the strategy; the strategy functions record the choice so programs that set it run. A CUDA context
cannot cross a fork, as with PyTorch: use start_method="spawn" for workers that use the GPU.
"""
import multiprocessing
from multiprocessing import *  # noqa: F401,F403  (Process, Queue, Pool, get_context, set_start_method, ...)

__all__ = [n for n in multiprocessing.__all__] + ["get_sharing_strategy", "set_sharing_strategy",
                                                   "get_all_sharing_strategies", "spawn", "start_processes",
                                                   "ProcessContext", "ProcessRaisedException",
                                                   "ProcessExitedException"]

_strategy = ["file_descriptor"]


def get_all_sharing_strategies():
    return {"file_descriptor", "file_system"}


def get_sharing_strategy():
    return _strategy[0]


def set_sharing_strategy(new_strategy):
    """Record the strategy ("file_descriptor" or "file_system"); see the module docstring."""
    if new_strategy not in get_all_sharing_strategies():
        raise ValueError(f"invalid sharing strategy: {new_strategy!r}")
    _strategy[0] = new_strategy


class ProcessRaisedException(Exception):
    """A spawned process raised: the message carries its traceback."""

    def __init__(self, msg, error_index, error_pid):
        super().__init__(msg)
        self.error_index, self.pid = error_index, error_pid


class ProcessExitedException(Exception):
    """A spawned process exited with a non-zero code (or a signal)."""

    def __init__(self, msg, error_index, error_pid, exit_code, signal_name=None):
        super().__init__(msg)
        self.error_index, self.pid, self.exit_code, self.signal_name = error_index, error_pid, exit_code, signal_name


def _wrap(fn, i, args, error_queue):
    try:
        fn(i, *args)
    except KeyboardInterrupt:
        pass
    except Exception:
        import traceback
        error_queue.put(traceback.format_exc())
        raise SystemExit(1) from None


class ProcessContext:
    """The processes spawn started; join() waits for them and raises the first failure."""

    def __init__(self, processes, error_queues):
        self.processes, self.error_queues = processes, error_queues

    def pids(self):
        return [p.pid for p in self.processes]

    def join(self, timeout=None):
        """True when every process has ended; raises ProcessRaisedException/ProcessExitedException for the first
        that failed (and terminates the rest)."""
        for p in self.processes:
            p.join(timeout)
        if any(p.is_alive() for p in self.processes):
            return False
        for i, (p, q) in enumerate(zip(self.processes, self.error_queues)):
            if p.exitcode != 0:
                for other in self.processes:
                    if other.is_alive():
                        other.terminate()
                if not q.empty():
                    raise ProcessRaisedException(f"\n\n-- Process {i} terminated with the following error:\n"
                                                 + q.get(), i, p.pid)
                raise ProcessExitedException(f"process {i} terminated with exit code {p.exitcode}", i, p.pid,
                                             p.exitcode)
        return True


def start_processes(fn, args=(), nprocs=1, join=True, daemon=False, start_method="spawn"):
    """Run fn(i, *args) in nprocs processes (i = 0..nprocs-1) started with start_method; join them (raising the
    first failure with its traceback) or return the ProcessContext."""
    ctx = multiprocessing.get_context(start_method)
    processes, queues = [], []
    for i in range(nprocs):
        q = ctx.SimpleQueue()
        p = ctx.Process(target=_wrap, args=(fn, i, args, q), daemon=daemon)
        p.start()
        processes.append(p)
        queues.append(q)
    context = ProcessContext(processes, queues)
    if not join:
        return context
    while not context.join():
        pass
    return None


def spawn(fn, args=(), nprocs=1, join=True, daemon=False, start_method="spawn"):
    """torch.multiprocessing.spawn: start_processes with the "spawn" start method."""
    return start_processes(fn, args, nprocs, join, daemon, start_method)
