"""Process groups and rawdev's simulated communicator: init_process_group's rendezvous, the default group and
new_group's subgroups, and the one exchange every collective is built on.

The communicator keeps NCCL's contract: every rank of a group makes the same collectives in the same order. Each
call gets the group's next sequence number; rank r posts (op, signature, its arrays) under
`<group>/c<seq>/<r>` in the TCPStore and reads every rank's post. A rank whose post names another op or another
signature (size, dtype, root, reduce op) makes every rank raise, naming each rank's call; a rank that never posts
makes the others raise after the group's timeout, naming it. Reductions are done by every rank over the posts in
rank order 0, 1, 2 ..., so results are bit-identical on all ranks and from run to run.

Calls run on one worker thread per group, in submission order; the caller's tensors are read when the call is
made and written when its Work is waited on (async_op=False waits at once).

Cuda tensors of a group whose backend names nccl can go through NCCL instead: rawdev.cuda registers a factory
here (register_cuda_backend; this layer cannot import the cuda layer) and `ProcessGroup.cuda_backend` hands the
collectives that group's NCCL backend when the factory says NCCL is wanted (the real driver, or
RAWDEV_COMMUNICATOR=nccl).
"""
import atexit
import datetime
import json
import os
import queue
import struct
import threading
from concurrent.futures import Future

import numpy as np

from .store import StoreTimeout, TCPStore

__all__ = ["ProcessGroup", "Work", "register_cuda_backend", "init_process_group", "destroy_process_group",
           "is_initialized", "new_group",
           "default_group", "resolve_group", "get_rank", "get_world_size", "get_backend", "get_global_rank",
           "get_group_rank", "get_process_group_ranks", "is_torchelastic_launched", "get_node_local_rank"]

default_pg_timeout = datetime.timedelta(minutes=10)
_BACKENDS = ("nccl", "gloo", "cpu:gloo,cuda:nccl")


class GroupMember:
    """torch.distributed.GroupMember: WORLD is the default group once initialized."""
    WORLD = None
    NON_GROUP_MEMBER = -100


class group:  # noqa: N801  (PyTorch's name)
    WORLD = None


class Work:
    """torch.distributed.Work: the handle of a collective. wait() blocks until it finished, raises its error if it
    failed, and writes its results into the output tensors; is_completed() says whether it finished.

    Example:
        >>> work = dist.all_reduce(t, async_op=True)
        >>> work.wait()
        True
    """

    def __init__(self, future, finish=None):
        self._future = future
        self._finish = finish
        self._done = False
        self._value = None

    def _complete(self):
        if not self._done:
            result = self._future.result()
            self._value = self._finish(result) if self._finish is not None else result
            self._done = True
        return self._value

    def wait(self, timeout=None):
        """Block until the collective finished; raise its error; write its outputs. Returns True."""
        self._complete()
        return True

    def is_completed(self):
        """True once the collective finished (its outputs are then written)."""
        if self._future.done():
            self._complete()
            return True
        return False

    def is_success(self):
        return self._future.done() and self._future.exception() is None

    def exception(self):
        return self._future.exception() if self._future.done() else None

    def result(self):
        return self._complete()

    def get_future(self):
        return self._future


class _Worker:
    """One daemon thread that runs a group's calls in order (daemon: a rank stuck waiting on a dead peer must not
    keep its process alive at exit)."""

    def __init__(self, name):
        self.q = queue.Queue()
        threading.Thread(target=self._run, name=name, daemon=True).start()

    def _run(self):
        while True:
            item = self.q.get()
            if item is None:
                return
            fn, fut = item
            try:
                fut.set_result(fn())
            except BaseException as e:  # the caller sees it from Work.wait
                fut.set_exception(e)

    def submit(self, fn):
        fut = Future()
        self.q.put((fn, fut))
        return fut

    def stop(self):
        """End the thread once the calls already submitted have run."""
        self.q.put(None)


class _CudaBackend:
    factory = None       # set by rawdev.cuda: factory(group) -> the group's NCCL backend; factory.wanted() -> bool


def register_cuda_backend(factory):
    """Install what serves cuda tensors of "nccl" groups (rawdev.cuda does, at import).

    Args:
        factory: a callable taking a ProcessGroup and returning its backend (with the collectives' methods and
            destroy()), with a `wanted()` attribute saying whether it serves this process (None: uninstall).

    Returns:
        None.

    Example:
        >>> register_cuda_backend(ProcessGroupNccl)
    """
    _CudaBackend.factory = factory


def _describe(op, sig):
    args = ", ".join(f"{k}={tuple(v) if isinstance(v, list) else v}" for k, v in sig.items())
    return f"{op}({args})"


def _pack(header, arrays):
    arrays = [np.ascontiguousarray(a) for a in arrays]
    header = dict(header, arrays=[[a.dtype.str, list(a.shape)] for a in arrays])
    head = json.dumps(header).encode()
    return struct.pack(">I", len(head)) + head + b"".join(a.tobytes() for a in arrays)


def _unpack(data):
    (n,) = struct.unpack(">I", data[:4])
    header = json.loads(data[4:4 + n])
    arrays, off = [], 4 + n
    for dtype, shape in header["arrays"]:
        dt = np.dtype(dtype)
        count = int(np.prod(shape)) if shape else 1
        arrays.append(np.frombuffer(data, dtype=dt, count=count, offset=off).reshape(shape).copy())
        off += count * dt.itemsize
    return header, arrays


class ProcessGroup:
    """A group of ranks that make collectives together (the default group or one from new_group)."""

    def __init__(self, store, rank, ranks, name, timeout, backend):
        self.store = store
        self._rank = rank                   # this process's rank in the group
        self.ranks = list(ranks)            # group rank -> global rank
        self.name = name
        self.timeout = timeout
        self.backend = backend
        self._seq = 0
        self._p2p = {}
        self._worker = _Worker(f"rawdev-{name}")
        self._cuda = None                   # the NCCL backend, made at the group's first cuda collective

    def rank(self):
        return self._rank

    def close(self):
        self._worker.stop()
        if self._cuda is not None:
            cuda, self._cuda = self._cuda, None
            cuda.destroy()

    def cuda_backend(self, tensors=None):
        """The group's NCCL backend when it serves this call, else None (the simulated communicator does).

        It serves when the group's backend names nccl, the registered factory says NCCL is wanted and every
        tensor is a cuda tensor; with `tensors` None (barrier) only when the backend is "nccl" itself, as PyTorch
        runs a barrier on the group's default device's backend.
        """
        factory = _CudaBackend.factory
        if factory is None or "nccl" not in self.backend:
            return None
        if tensors is None:
            if self.backend != "nccl":
                return None
        elif not tensors or not all(getattr(t, "is_cuda", False) for t in tensors):
            return None
        if self._cuda is None:
            if not factory.wanted():
                return None
            self._cuda = factory(self)
        return self._cuda

    def size(self):
        return len(self.ranks)

    def group_rank(self, global_rank, what):
        if global_rank not in self.ranks:
            raise ValueError(f"{what} rank {global_rank} is not part of the group (its ranks: {self.ranks})")
        return self.ranks.index(global_rank)

    def submit(self, op, sig, arrays):
        """Post this rank's (op, sig, arrays) for the group's next call; the Future gives every rank's arrays."""
        seq = self._seq
        self._seq += 1
        return self._worker.submit(lambda: self._exchange(seq, op, sig, arrays))

    def _exchange(self, seq, op, sig, arrays):
        base = f"{self.name}/c{seq}/"
        keys = [f"{base}{r}" for r in range(self.size())]
        self.store.set(keys[self._rank], _pack({"op": op, "sig": sig}, arrays))
        try:
            self.store.wait(keys, self.timeout)
        except StoreTimeout as e:
            missing = sorted(self.ranks[int(k.rsplit("/", 1)[1])] for k in e.missing)
            raise RuntimeError(f"rawdev.distributed: {_describe(op, sig)} (call #{seq} of group {self.name}) timed out "
                               f"after {self.timeout:g} s on rank {self.ranks[self._rank]}: rank(s) {missing} never "
                               f"made this call (a rank that ended, hangs, or makes fewer collectives)") from None
        posts = [_unpack(self.store.get(k)) for k in keys]
        if self.store.add(f"{base}read", 1) == self.size():
            self.store._delete_keys(keys + [f"{base}read"])
        calls = [(h["op"], h["sig"]) for h, _ in posts]
        if any(c != calls[0] for c in calls):
            lines = "; ".join(f"rank {self.ranks[r]} called {_describe(o, s)}" for r, (o, s) in enumerate(calls))
            raise RuntimeError(f"rawdev.distributed: collective mismatch at call #{seq} of group {self.name}: {lines}. "
                               f"Every rank must make the same collectives, in the same order, with the same sizes "
                               f"and dtypes")
        return [a for _, a in posts]

    def submit_send(self, dst, tag, sig, arrays):
        pair = (self._rank, dst, tag)
        n = self._p2p[pair] = self._p2p.get(pair, -1) + 1
        key = f"{self.name}/p{self._rank}-{dst}-{tag}/{n}"
        return self._worker.submit(lambda: self.store.set(key, _pack({"op": "send", "sig": sig}, arrays)))

    def submit_recv(self, src, tag, sig):
        pair = (src, self._rank, tag)
        n = self._p2p[pair] = self._p2p.get(pair, -1) + 1
        key = f"{self.name}/p{src}-{self._rank}-{tag}/{n}"

        def run():
            try:
                self.store.wait([key], self.timeout)
            except StoreTimeout:
                raise RuntimeError(f"rawdev.distributed: recv({_describe('', sig)[2:-1]}) of message #{n} from rank "
                                   f"{self.ranks[src]} timed out after {self.timeout:g} s on rank "
                                   f"{self.ranks[self._rank]}: rank {self.ranks[src]} never sent it") from None
            head, arrays = _unpack(self.store.get(key))
            self.store.delete_key(key)
            if head["sig"] != sig:
                raise RuntimeError(f"rawdev.distributed: recv on rank {self.ranks[self._rank]} expected "
                                   f"{_describe('tensor', sig)} but rank {self.ranks[src]} sent "
                                   f"{_describe('tensor', head['sig'])} (message #{n})")
            return arrays
        return self._worker.submit(run)


class _State:
    world: "ProcessGroup | None" = None        # the default group
    store: "TCPStore | None" = None
    groups: "list[ProcessGroup]" = []
    n_groups = 0


def _timeout_seconds(timeout):
    if timeout is None:
        return default_pg_timeout.total_seconds()
    return timeout.total_seconds() if isinstance(timeout, datetime.timedelta) else float(timeout)


def _env_int(name, given):
    if given is not None and given >= 0:
        return int(given)
    value = os.environ.get(name)
    if value is None:
        raise ValueError(f"Error initializing torch.distributed using env:// rendezvous: environment variable {name} "
                         f"expected, but not set")
    return int(value)


def init_process_group(backend=None, init_method=None, timeout=None, world_size=-1, rank=-1, store=None,
                       group_name="", pg_options=None, device_id=None):
    """torch.distributed.init_process_group: join the job's default group.

    "nccl" serves cuda tensors: through NCCL on a real GPU (made at the group's first cuda collective), through
    rawdev's simulated communicator on the simulated GPU (RAWDEV_COMMUNICATOR=nccl|simulated forces either);
    "gloo" and cpu tensors always run the simulated communicator. With init_method "env://" (the default) the
    rank, world size and master come from RANK, WORLD_SIZE, MASTER_ADDR and MASTER_PORT, as torchrun and
    `rawdev run` set them; "tcp://host:port" names the master and takes rank and world_size from the arguments.
    Rank 0 serves the TCPStore. With backend "nccl" and LOCAL_RANK set, the current cuda device becomes cuda:LOCAL_RANK.

    Args:
        backend: "nccl", "gloo" or None (both).
        init_method: "env://" or "tcp://host:port"; not with `store`.
        timeout: how long rendezvous and each collective may wait for the other ranks (default 10 minutes).
        world_size: the number of processes (-1: from WORLD_SIZE).
        rank: this process's rank (-1: from RANK).
        store: a TCPStore to rendezvous through instead of init_method.
        device_id: the cuda device this rank uses (an int or a device); it becomes the current device.

    Returns:
        None.

    Example:
        >>> dist.init_process_group("gloo", init_method="tcp://127.0.0.1:29500", rank=0, world_size=1)
    """
    if _State.world is not None:
        raise ValueError("trying to initialize the default process group twice!")
    backend = str(backend).lower() if backend is not None else "cpu:gloo,cuda:nccl"
    if backend not in _BACKENDS:
        raise RuntimeError(f"rawdev.distributed: backend {backend!r} is not available: rawdev's communicator serves "
                           f"'nccl' and 'gloo' (no MPI, UCC or custom backends)")
    seconds = _timeout_seconds(timeout)
    if store is not None:
        if init_method is not None:
            raise ValueError("Cannot specify both init_method and store.")
        if rank < 0 or world_size <= 0:
            raise ValueError("world_size and rank must be specified when store is given")
        _rendezvous(store, rank, world_size, seconds)
    else:
        init_method = init_method or "env://"
        if init_method.startswith("env://"):
            rank, world_size = _env_int("RANK", rank), _env_int("WORLD_SIZE", world_size)
            host = os.environ.get("MASTER_ADDR")
            if host is None:
                raise ValueError("Error initializing torch.distributed using env:// rendezvous: environment variable "
                                 "MASTER_ADDR expected, but not set")
            port = _env_int("MASTER_PORT", None)
        elif init_method.startswith("tcp://"):
            host, _, port = init_method[len("tcp://"):].split("?")[0].rpartition(":")
            if not host or not port.isdigit():
                raise ValueError(f"init_method {init_method!r}: expected tcp://host:port")
            port = int(port)
            if rank < 0 or world_size <= 0:
                raise ValueError("rank and world_size must be given with a tcp:// init_method")
        else:
            raise ValueError(f"init_method {init_method!r} is not supported by rawdev: use env:// or tcp://host:port")
        if not 0 <= rank < world_size:
            raise ValueError(f"rank {rank} is not in [0, {world_size}) (world_size={world_size})")
        store = TCPStore(host, port, world_size, is_master=rank == 0, timeout=seconds)
        try:
            _rendezvous(store, rank, world_size, seconds)
        except BaseException:
            if rank == 0:            # the store is served here: let the other ranks get their own error first
                _master_exit(store, seconds)
            store.close()            # free the port for a retry
            raise
        if rank == 0:
            atexit.register(_master_exit, store, seconds)
    _State.store = store
    _State.world = ProcessGroup(store, rank, range(world_size), "world", seconds, backend)
    GroupMember.WORLD = group.WORLD = _State.world
    _State.groups = [_State.world]
    from ..device import set_current_cuda_index
    if device_id is not None:
        set_current_cuda_index(device_id if isinstance(device_id, int) else device_id.index or 0)
    elif "nccl" in backend and "LOCAL_RANK" in os.environ:
        set_current_cuda_index(int(os.environ["LOCAL_RANK"]))


def _rendezvous(store, rank, world_size, seconds):
    """Every rank posts its world_size under rdzv/<rank> and waits for all; a rank started with another world_size
    than rank 0's fails at once (rank 0 when it reads the posts), the others name the ranks that never joined."""
    store.set(f"rdzv/{rank}", str(world_size).encode())
    if rank != 0:
        # rank 0 serves the store, so its post is there first: a mismatch fails here, not after the timeout
        _rendezvous_wait(store, rank, world_size, seconds, ["rdzv/0"])
        _check_world_size(store, rank, world_size, 0)
    keys = [f"rdzv/{r}" for r in range(world_size)]
    _rendezvous_wait(store, rank, world_size, seconds, keys)
    for r in range(world_size):
        _check_world_size(store, rank, world_size, r)


def _check_world_size(store, rank, world_size, other):
    theirs = int(store.get(f"rdzv/{other}"))
    if theirs != world_size:
        raise RuntimeError(f"rawdev.distributed: init_process_group on rank {rank}: world_size mismatch: this rank "
                           f"has world_size {world_size} but rank {other} has world_size {theirs} (every rank must be "
                           f"given the same WORLD_SIZE / world_size)")


def _rendezvous_wait(store, rank, world_size, seconds, keys):
    try:
        store.wait(keys, seconds)
    except StoreTimeout as e:
        missing = sorted(int(k.split("/")[1]) for k in e.missing)
        others = [f"rank {r} has world_size {int(store.get(f'rdzv/{r}'))}" for r in range(world_size)
                  if r not in missing and r != rank and int(store.get(f"rdzv/{r}")) != world_size]
        raise RuntimeError(f"rawdev.distributed: init_process_group timed out after {seconds:g} s on rank {rank}: "
                           f"rank(s) {missing} of world_size {world_size} never joined (not started, crashed, or given "
                           f"another MASTER_ADDR/MASTER_PORT)" + (f"; world_size mismatch: {', '.join(others)}"
                                                                  if others else "")) from None


def _master_exit(store, seconds):
    # the store lives in rank 0's process: keep it up until the other ranks have let go of it
    server = getattr(store, "_server", None)
    if server is not None and not server.closed:
        server.wait_clients_gone(1, seconds)


def is_initialized():
    """True once init_process_group has made the default group."""
    return _State.world is not None


def get_node_local_rank(fallback_rank=None):
    """torch.distributed.get_node_local_rank: LOCAL_RANK as the launcher set it (else `fallback_rank`).

    Args:
        fallback_rank: returned when LOCAL_RANK is not set.

    Returns:
        The rank of this process on its node.

    Example:
        >>> rawdev.cuda.set_device(dist.get_node_local_rank(0))
    """
    if "LOCAL_RANK" in os.environ:
        return int(os.environ["LOCAL_RANK"])
    if fallback_rank is not None:
        return int(fallback_rank)
    raise RuntimeError("LOCAL_RANK is not in the environment. Consider passing fallback_rank to allow "
                       "`get_node_local_rank` to work, assuming you are not running in a multi-device context and "
                       "want the code to run locally instead.")


def is_torchelastic_launched():
    """True when TORCHELASTIC_RUN_ID is set (torchrun and `rawdev run` set it)."""
    return os.environ.get("TORCHELASTIC_RUN_ID") is not None


def _not_initialized():
    return ValueError("Default process group has not been initialized, please make sure to call init_process_group.")


def default_group():
    if _State.world is None:
        raise _not_initialized()
    return _State.world


def resolve_group(grp):
    """The ProcessGroup for a `group=` argument (None: the default); None for a group this rank is not in."""
    if grp is None:
        return default_group()
    default_group()
    if grp == GroupMember.NON_GROUP_MEMBER:
        return None
    return grp


def destroy_process_group(group=None):
    """torch.distributed.destroy_process_group: end `group` (None: every group, and the store)."""
    if group is None:
        if _State.world is None:
            raise AssertionError("destroy_process_group(): no process group to destroy "
                                 "(init_process_group was not called)")
        store = _State.store
        _State.world = _State.store = None
        GroupMember.WORLD = globals()["group"].WORLD = None
        for pg in _State.groups:
            pg.close()
        _State.groups = []
        _State.n_groups = 0
        if store is not None:
            _master_exit(store, store.timeout)
            store.close()
    elif group in _State.groups:
        _State.groups.remove(group)
        group.close()


def new_group(ranks=None, timeout=None, backend=None, pg_options=None, use_local_synchronization=False,
              group_desc=None, device_id=None):
    """torch.distributed.new_group: a subgroup of `ranks` (None: all). Every rank of the default group must call
    it, in the same order, as in PyTorch; ranks outside `ranks` get GroupMember.NON_GROUP_MEMBER.

    Args:
        ranks: the global ranks in the group.
        timeout: the group's timeout (default: the default group's).

    Returns:
        The group, or GroupMember.NON_GROUP_MEMBER on ranks not in it.

    Example:
        >>> evens = dist.new_group([0, 2])
    """
    world = default_group()
    ranks = sorted(range(world.size()) if ranks is None else {int(r) for r in ranks})
    for r in ranks:
        if not 0 <= r < world.size():
            raise ValueError(f"new_group: rank {r} is not in the default group of world_size {world.size()}")
    _State.n_groups += 1
    name = f"g{_State.n_groups}"
    me = world.rank()
    if me not in ranks:
        return GroupMember.NON_GROUP_MEMBER
    pg = ProcessGroup(world.store, ranks.index(me), ranks, name,
                      world.timeout if timeout is None else _timeout_seconds(timeout), backend or world.backend)
    _State.groups.append(pg)
    return pg


def get_rank(group=None):
    """This process's rank in `group` (None: the default group); -1 when it is not in the group."""
    pg = resolve_group(group)
    return -1 if pg is None else pg.rank()


def get_world_size(group=None):
    """The number of ranks in `group` (None: the default group); -1 when this rank is not in the group."""
    pg = resolve_group(group)
    return -1 if pg is None else pg.size()


def get_backend(group=None):
    """The backend name the group was made with."""
    pg = resolve_group(group)
    if pg is None:
        raise ValueError("Invalid process group specified")
    return pg.backend


def get_process_group_ranks(group):
    """The global ranks of `group`."""
    return list(resolve_group(group).ranks)


def get_global_rank(group, group_rank):
    """The global rank of `group_rank` in `group`."""
    return resolve_group(group).ranks[group_rank]


def get_group_rank(group, global_rank):
    """The rank in `group` of global rank `global_rank`."""
    return resolve_group(group).group_rank(global_rank, "global")
