"""The NCCL backend of process groups (PyTorch's ProcessGroupNCCL): cuda tensors of a group whose backend names
nccl go through libnccl (rawdev.distributed.nccl) on the real driver, device to device, instead of through the
host and the TCPStore.

Chosen per process by RAWDEV_COMMUNICATOR: "auto" (the default) uses NCCL on the real CUDA driver and the
simulated communicator on the simulator (which detects the mismatched calls NCCL would hang on); "nccl" forces
NCCL (on the simulator that needs a stand-in library, as the tests install through `use_library`); "simulated"
forces the simulated communicator. cpu tensors never come here.

Each group makes its communicator at its first cuda collective: group rank 0 calls ncclGetUniqueId and sets the
128 bytes in the group's store under `<group>/nccl_unique_id`; every rank reads them and calls ncclCommInitRank
on the device of that first collective's tensors. Collectives are issued on the current stream of that device
with the tensors' device pointers, as PyTorch's are ordered after the current stream: what runs on it before
the call is what the collective reads, and what is queued after it sees the result. `async_op=True` returns a
Work holding a CUDA event recorded after the collective: wait() makes the current stream wait for it (no host
sync, as PyTorch), is_completed() queries it. destroy_process_group destroys the communicators.
"""
import os

from ..distributed import nccl
from ..distributed.collectives import ReduceOp, _PremulSum
from ..distributed.process_group import Work, register_cuda_backend
from ..distributed.store import StoreTimeout

__all__ = ["ProcessGroupNccl", "NcclWork", "wanted", "use_library", "communicator", "ENV", "CHOICES"]

ENV = "RAWDEV_COMMUNICATOR"
CHOICES = ("auto", "nccl", "simulated")
_NCCL_OPS = {ReduceOp.SUM: "SUM", ReduceOp.PRODUCT: "PRODUCT", ReduceOp.MIN: "MIN", ReduceOp.MAX: "MAX",
             ReduceOp.AVG: "AVG"}


class _Library:
    override = None          # a stand-in for libnccl (tests), else the real one


def use_library(lib):
    """Serve NCCL calls with `lib` instead of libnccl.so.2 (None: the real library again).

    Args:
        lib: an object with the ncclXxx entry points NcclComm calls (the tests' stand-in over the simulator).

    Returns:
        The library used before.

    Example:
        >>> previous = use_library(FakeNccl())
    """
    before, _Library.override = _Library.override, lib
    return before


def _library():
    return _Library.override if _Library.override is not None else nccl.load()


def wanted():
    """Whether cuda tensors go through NCCL in this process (RAWDEV_COMMUNICATOR, else the real driver)."""
    choice = (os.environ.get(ENV) or "auto").strip().lower()
    if choice not in CHOICES:
        raise ValueError(f"{ENV}={os.environ.get(ENV)!r}: expected one of {', '.join(CHOICES)}")
    if choice == "auto":
        from ..errors import NoDeviceError, NoDriverError
        from ..runtime import seam
        try:
            return seam.driver_name() == "cuda"
        except (NoDriverError, NoDeviceError):   # a barrier in a job that has no GPU: nothing for NCCL to do
            return False
    return choice == "nccl"


def communicator(group=None):
    """The group's NCCL communicator (rawdev.distributed.nccl.NcclComm) once a cuda collective made it, else None
    (the simulated communicator serves the group, or no cuda collective ran yet).

    Args:
        group: a process group (None: the default group).

    Returns:
        The NcclComm, or None.

    Example:
        >>> dist.all_reduce(t_cuda); communicator().nranks
        1
    """
    from ..distributed.process_group import resolve_group
    pg = resolve_group(group)
    backend = getattr(pg, "_cuda", None)
    return backend.comm if backend is not None else None


def _dtype_name(t):
    return str(t.dtype).replace("rawdev.", "")


class NcclWork(Work):
    """The Work of an async NCCL collective: a CUDA event recorded on the stream after it.

    wait() makes the current stream wait for the event (the host goes on, as with PyTorch's NCCL Works);
    synchronize() blocks the host; is_completed() queries the event. A barrier's Work blocks the host in wait().
    """

    def __init__(self, device, event, value=None, blocking=False):
        from concurrent.futures import Future
        done = Future()
        done.set_result(value)
        super().__init__(done)
        self._device, self._event, self._blocking = device, event, blocking

    def wait(self, timeout=None):
        if self._blocking:
            self._event.synchronize()
        else:
            self._device.compute_stream.wait_event(self._event)     # this thread's current stream
        return True

    def synchronize(self):
        self._event.synchronize()

    def is_completed(self):
        return self._event.query()

    def is_success(self):
        return self.is_completed()


class ProcessGroupNccl:
    """One group's NCCL communicator and the collectives on it (made by ProcessGroup.cuda_backend).

    Args:
        pg: the rawdev.distributed ProcessGroup (its store, rank, size and name).

    Example:
        >>> dist.all_reduce(t)          # t on cuda, backend "nccl", real driver: through here
    """

    wanted = staticmethod(wanted)

    def __init__(self, pg):
        self.pg = pg
        self.comm = None
        self.device = None           # the cuda index the communicator was made on

    # ---- the communicator
    def _what(self, call):
        return f"{call} on group {self.pg.name} (rank {self.pg.rank()} of {self.pg.size()})"

    def _init(self, index, call):
        from ..runtime import get_device
        pg = self.pg
        key = f"{pg.name}/nccl_unique_id"
        lib = _library()
        get_device(index).activate()     # ncclCommInitRank binds the communicator to the current device
        try:
            if pg.rank() == 0:
                pg.store.set(key, nccl.unique_id(lib))
            else:
                try:
                    pg.store.wait([key], pg.timeout)
                except StoreTimeout:
                    raise RuntimeError(f"rawdev.distributed: {self._what(call)}: timed out after {pg.timeout:g} s "
                                       f"waiting for rank {pg.ranks[0]}'s ncclUniqueId (that rank never made a "
                                       f"cuda collective on this group)") from None
            self.comm = nccl.NcclComm(pg.store.get(key), pg.size(), pg.rank(), lib)
        except nccl.NcclError as e:
            raise e.while_doing(f"making the NCCL communicator for {self._what(call)}") from None
        self.device = index

    def _stream(self, call, tensors):
        from ..runtime import get_device
        index = tensors[0].device.index or 0
        for t in tensors:
            if (t.device.index or 0) != index:
                raise ValueError(f"{call}: Tensors must be on the same device (got cuda:{index} and {t.device})")
        if self.comm is None:
            self._init(index, call)
        elif index != self.device:
            raise ValueError(f"{call}: group {self.pg.name}'s NCCL communicator is on cuda:{self.device}, got a "
                             f"tensor on cuda:{index} (one device per rank)")
        return get_device(index).compute_stream      # this thread's current stream of that device

    def _issue(self, call, tensors, fn, async_op, value=None, blocking=False):
        """Run fn(stream handle) (the NCCL calls) on the current stream; a Work (async_op) or None/value."""
        stream = self._stream(call, tensors)
        stream.device.activate()         # NCCL's enqueue runs in the calling thread's CUDA context
        try:
            fn(stream._int)
        except nccl.NcclError as e:
            t = tensors[0]
            raise e.while_doing(f"{self._what(call)}, its first tensor {tuple(t.shape)} {_dtype_name(t)} on "
                                f"{t.device}") from None
        if not async_op and not blocking:
            return value
        from ..runtime.device import Event
        work = NcclWork(stream.device, Event(stream.device).record(stream), value, blocking)
        if async_op:
            return work
        work.wait()
        return value

    @staticmethod
    def _contiguous(call, *tensors):
        for t in tensors:
            if not t.is_contiguous():
                raise ValueError(f"{call}: Tensors must be contiguous")

    def _dtype(self, t):
        name = _dtype_name(t)
        if name == "bool":
            return "uint8"
        if name not in nccl.DTYPES:
            raise TypeError(f"Unsupported data type for NCCL process group: {t.dtype}")
        return name

    def _op(self, t, op):
        """(ncclRedOp_t name or premul op, cleanup) as PyTorch maps a ReduceOp for this tensor."""
        if _dtype_name(t) == "bool":
            if op is ReduceOp.AVG:
                raise TypeError("Cannot use ReduceOp.AVG with boolean inputs")
            if op is ReduceOp.SUM:
                return "MAX", None          # a sum of bools is their OR
            if op is ReduceOp.PRODUCT:
                return "MIN", None          # a product of bools is their AND
        if isinstance(op, _PremulSum):
            if _dtype_name(t) not in ("float16", "bfloat16", "float32", "float64"):
                raise TypeError(f"ReduceOp.PREMUL_SUM needs a floating point tensor, got {t.dtype}")
            return "PREMUL", op.factor
        if op not in _NCCL_OPS:
            raise ValueError(f"Cannot use ReduceOp.{op.name} with NCCL")
        return _NCCL_OPS[op], None

    def _reducing(self, t, op, run):
        """run(ncclRedOp_t) with op mapped; a PREMUL_SUM op is made before and destroyed once enqueued."""
        name, factor = self._op(t, op)
        if name != "PREMUL":
            return run(name)
        rop = self.comm.premul_sum_op(factor, self._dtype(t))
        try:
            return run(rop)
        finally:
            self.comm.destroy_op(rop)

    # ---- the collectives (arguments already checked by rawdev.distributed.collectives)
    def all_reduce(self, tensor, op, async_op):
        self._contiguous("all_reduce", tensor)
        p, n, dt = tensor.data_ptr(), tensor.numel(), self._dtype(tensor)
        return self._issue("all_reduce", [tensor], lambda s: self._reducing(
            tensor, op, lambda rop: self.comm.all_reduce(p, p, n, dt, rop, s)), async_op)

    def reduce(self, tensor, root, op, async_op):
        self._contiguous("reduce", tensor)
        p, n, dt = tensor.data_ptr(), tensor.numel(), self._dtype(tensor)
        return self._issue("reduce", [tensor], lambda s: self._reducing(
            tensor, op, lambda rop: self.comm.reduce(p, p, n, dt, rop, root, s)), async_op)

    def broadcast(self, tensor, root, async_op):
        self._contiguous("broadcast", tensor)
        p, n, dt = tensor.data_ptr(), tensor.numel(), self._dtype(tensor)
        return self._issue("broadcast", [tensor], lambda s: self.comm.broadcast(p, p, n, dt, root, s), async_op)

    def all_gather_into_tensor(self, output, input, async_op):
        self._contiguous("all_gather_into_tensor", output, input)
        self._same_dtype("all_gather_into_tensor", input, [output])
        return self._issue("all_gather_into_tensor", [output, input], lambda s: self.comm.all_gather(
            input.data_ptr(), output.data_ptr(), input.numel(), self._dtype(input), s), async_op)

    def all_gather(self, outputs, input, async_op):
        # as PyTorch: gather into one flat buffer, then copy each rank's part out (any output layout works)
        self._contiguous("all_gather", input)
        self._same_dtype("all_gather", input, outputs)
        n = input.numel()
        for out in outputs:
            if out.numel() != n:
                raise ValueError(f"all_gather: every output must have the input's {n} elements, got {out.numel()}")
        flat = input.new_empty((n * len(outputs),))

        def run(s):
            self.comm.all_gather(input.data_ptr(), flat.data_ptr(), n, self._dtype(input), s)
            for i, out in enumerate(outputs):
                out.copy_(flat[i * n:(i + 1) * n].view(tuple(out.shape)))
        return self._issue("all_gather", [input, *outputs], run, async_op)

    def reduce_scatter_tensor(self, output, input, op, async_op):
        self._contiguous("reduce_scatter_tensor", output, input)
        self._same_dtype("reduce_scatter_tensor", input, [output])
        return self._issue("reduce_scatter_tensor", [output, input], lambda s: self._reducing(
            input, op, lambda rop: self.comm.reduce_scatter(input.data_ptr(), output.data_ptr(), output.numel(),
                                                            self._dtype(input), rop, s)), async_op)

    def reduce_scatter(self, output, inputs, op, async_op):
        # as PyTorch: copy the inputs into one flat buffer (any input layout works), reduce-scatter from it
        self._contiguous("reduce_scatter", output)
        self._same_dtype("reduce_scatter", output, inputs)
        n = output.numel()
        for t in inputs:
            if t.numel() != n:
                raise ValueError(f"reduce_scatter: every input must have the output's {n} elements, got {t.numel()}")
        flat = output.new_empty((n * len(inputs),))

        def run(s):
            for i, t in enumerate(inputs):
                flat[i * n:(i + 1) * n].copy_(t.reshape(-1))
            self._reducing(output, op, lambda rop: self.comm.reduce_scatter(
                flat.data_ptr(), output.data_ptr(), n, self._dtype(output), rop, s))
        return self._issue("reduce_scatter", [output, *inputs], run, async_op)

    def send(self, tensor, peer):
        self._contiguous("send", tensor)
        return self._issue("send", [tensor], lambda s: self.comm.send(
            tensor.data_ptr(), tensor.numel(), self._dtype(tensor), peer, s), True)

    def recv(self, tensor, peer):
        self._contiguous("recv", tensor)
        return self._issue("recv", [tensor], lambda s: self.comm.recv(
            tensor.data_ptr(), tensor.numel(), self._dtype(tensor), peer, s), True, value=self.pg.ranks[peer])

    def all_to_all(self, outputs, inputs, async_op):
        # as PyTorch: one ncclSend and one ncclRecv per peer (itself included) inside ncclGroupStart/End
        self._contiguous("all_to_all", *outputs, *inputs)
        if len(outputs) != self.pg.size() or len(inputs) != self.pg.size():
            raise ValueError(f"all_to_all: {len(inputs)} inputs and {len(outputs)} outputs for a group of "
                             f"{self.pg.size()} ranks")

        def run(s):
            self.comm.group_start()
            try:
                for peer, (out, t) in enumerate(zip(outputs, inputs)):
                    self.comm.send(t.data_ptr(), t.numel(), self._dtype(t), peer, s)
                    self.comm.recv(out.data_ptr(), out.numel(), self._dtype(out), peer, s)
            finally:
                self.comm.group_end()
        return self._issue("all_to_all", [*outputs, *inputs], run, async_op)

    def gather(self, tensor, outputs, root, async_op):
        # as PyTorch: the root receives from every rank (itself included), every rank sends, in one NCCL group
        outputs = list(outputs or [])
        self._contiguous("gather", tensor, *outputs)
        self._same_dtype("gather", tensor, outputs)

        def run(s):
            self.comm.group_start()
            try:
                for peer, out in enumerate(outputs):
                    self.comm.recv(out.data_ptr(), out.numel(), self._dtype(out), peer, s)
                self.comm.send(tensor.data_ptr(), tensor.numel(), self._dtype(tensor), root, s)
            finally:
                self.comm.group_end()
        return self._issue("gather", [tensor, *outputs], run, async_op)

    def scatter(self, tensor, inputs, root, async_op):
        # as PyTorch: the root sends inputs[r] to every rank r (itself included), every rank receives
        inputs = list(inputs or [])
        self._contiguous("scatter", tensor, *inputs)
        self._same_dtype("scatter", tensor, inputs)

        def run(s):
            self.comm.group_start()
            try:
                for peer, t in enumerate(inputs):
                    self.comm.send(t.data_ptr(), t.numel(), self._dtype(t), peer, s)
                self.comm.recv(tensor.data_ptr(), tensor.numel(), self._dtype(tensor), root, s)
            finally:
                self.comm.group_end()
        return self._issue("scatter", [tensor, *inputs], run, async_op)

    def barrier(self, async_op, device_ids=None):
        # as PyTorch on NCCL: an all-reduce of one element on the group's device, and the host waits for it
        from ..device import current_cuda_index
        from ..tensor import zeros
        index = self.device if self.device is not None else (device_ids[0] if device_ids else current_cuda_index())
        one = zeros(1, device=f"cuda:{index}")
        p = one.data_ptr()
        return self._issue("barrier", [one], lambda s: self.comm.all_reduce(p, p, 1, "float32", "SUM", s), async_op,
                           blocking=True)

    @staticmethod
    def _same_dtype(call, t, others):
        for o in others:
            if o.dtype != t.dtype:
                raise TypeError(f"{call}: every tensor must have the same dtype, got {t.dtype} and {o.dtype}")

    def destroy(self):
        """ncclCommDestroy (destroy_process_group calls it)."""
        comm, self.comm = self.comm, None
        if comm is not None:
            try:
                comm.destroy()
            except nccl.NcclError as e:
                raise e.while_doing(f"destroying group {self.pg.name}'s communicator") from None


register_cuda_backend(ProcessGroupNccl)
