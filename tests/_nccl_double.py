"""A stand-in for libnccl.so.2 over the simulated GPU's memory, for the tests of the NCCL backend
(rawdev.cuda.process_group_nccl) on a machine without a GPU.

It has the ncclXxx entry points NcclComm calls, takes their ctypes arguments as libnccl would, and records every
call with its decoded arguments (`calls`). Data moves through the simulator's driver: a collective synchronizes
the stream it was given (so what was queued before is what it reads), reads the send buffer, and writes the
result before returning. Ranks in threads of one process meet through the ncclUniqueId they were made with:
collectives wait for every rank's call and reduce in rank order 0, 1, 2 ... in the buffer's dtype. `fail` makes
a named call return an ncclResult_t, with `last_error` as ncclGetLastError's text.
"""
import ctypes
import os
import threading

import numpy as np
from rawdev import sim

VERSION = 22105        # NCCL 2.21.5
DTYPES = {0: np.int8, 1: np.uint8, 2: np.int32, 3: np.uint32, 4: np.int64, 5: np.uint64, 6: np.float16,
          7: np.float32, 8: np.float64, 9: "bfloat16"}
OPS = {0: "sum", 1: "prod", 2: "max", 3: "min", 4: "avg"}
ERRORS = {1: b"unhandled cuda error (run with NCCL_DEBUG=INFO for details)",
          5: b"invalid usage (run with NCCL_DEBUG=WARN for details)"}
WAIT_S = 60            # a rank waiting for its peers: a hang guard, far above what a test needs


def _value(x):
    v = x.value if hasattr(x, "value") else x       # a ctypes object, as NcclComm passes them
    return 0 if v is None else int(v)


class _Clique:
    """The ranks made from one unique id: their posted inputs per call, and the send/recv mailboxes."""

    def __init__(self, nranks):
        self.nranks = nranks
        self.cond = threading.Condition()
        self.posts = {}          # call number -> {rank: array}
        self.mail = {}           # (src, dst) -> [array, ...]


class _Comm:
    def __init__(self, clique, rank, nranks, device):
        self.clique, self.rank, self.nranks, self.device = clique, rank, nranks, device
        self.seq = 0


class FakeNccl:
    """libnccl's entry points over the simulator (see the module docstring).

    Args:
        fail: {call name: ncclResult_t code} to return instead of running that call.
        last_error: what ncclGetLastError says after a failure.
    """

    def __init__(self, fail=None, last_error="fake NCCL: the call was told to fail"):
        self.fail, self.last_error = dict(fail or {}), last_error
        self.calls = []
        self.comms = {}
        self.cliques = {}
        self.premul = {}
        self.destroyed = []
        self._lock = threading.Lock()
        self._local = threading.local()
        self._next = 0x5000
        self._failed = False

    # ---- bookkeeping
    def _record(self, name, **args):
        with self._lock:
            self.calls.append((name, args))
        code = self.fail.get(name, 0)
        self._failed = bool(code)
        return code

    def names(self):
        return [n for n, _ in self.calls]

    def ncclGetVersion(self, out):
        out._obj.value = VERSION
        return 0

    def ncclGetErrorString(self, code):
        return ERRORS.get(code, b"unknown result")

    def ncclGetLastError(self, comm):
        return self.last_error.encode() if self._failed else b""

    def ncclGetUniqueId(self, out):
        code = self._record("ncclGetUniqueId")
        if not code:
            ctypes.memmove(ctypes.addressof(out._obj), os.urandom(128), 128)
        return code

    def ncclCommInitRank(self, out, nranks, uid, rank):
        from rawdev.device import current_cuda_index
        nranks, rank = _value(nranks), _value(rank)
        code = self._record("ncclCommInitRank", nranks=nranks, rank=rank, uid=bytes(uid),
                            device=current_cuda_index())
        if code:
            return code
        with self._lock:
            clique = self.cliques.setdefault(bytes(uid), _Clique(nranks))
            self._next += 1
            handle = self._next
            self.comms[handle] = _Comm(clique, rank, nranks, current_cuda_index())
        out._obj.value = handle
        return 0

    def ncclCommDestroy(self, comm):
        code = self._record("ncclCommDestroy", comm=_value(comm))
        self.destroyed.append(_value(comm))
        return code

    # ---- memory, through the simulator's driver
    @staticmethod
    def _np(dtype):
        return np.uint16 if dtype == 9 else DTYPES[dtype]

    def _read(self, ptr, count, dtype, stream):
        sim.cuStreamSynchronize(_value(stream))
        out = np.empty(count, self._np(dtype))
        if count:
            err, = sim.cuMemcpyDtoH(out.ctypes.data, ptr, out.nbytes)
            assert not err, err
        return out

    @staticmethod
    def _write(ptr, arr):
        arr = np.ascontiguousarray(arr)
        if arr.size:
            err, = sim.cuMemcpyHtoD(ptr, arr.ctypes.data, arr.nbytes)
            assert not err, err

    @staticmethod
    def _math(arr, dtype):
        """bfloat16 bits as float32 for arithmetic."""
        return (arr.astype(np.uint32) << 16).view(np.float32) if dtype == 9 else arr

    @staticmethod
    def _back(arr, dtype):
        if dtype != 9:
            return arr.astype(DTYPES[dtype], copy=False)
        bits = arr.astype(np.float32).view(np.uint32)
        return ((bits + 0x7FFF + ((bits >> 16) & 1)) >> 16).astype(np.uint16)

    def _reduce(self, arrays, op, dtype):
        xs = [self._math(a, dtype) for a in arrays]
        if op in self.premul:
            factor = np.asarray(self.premul[op][0], xs[0].dtype)
            xs, op = [x * factor for x in xs], 0
        acc = xs[0].copy()
        for x in xs[1:]:
            acc = {"sum": np.add, "avg": np.add, "prod": np.multiply, "max": np.maximum,
                   "min": np.minimum}[OPS[op]](acc, x).astype(acc.dtype, copy=False)
        if OPS[op] == "avg":
            acc = (acc / len(xs)).astype(acc.dtype) if acc.dtype.kind == "f" else acc // len(xs)
        return self._back(acc, dtype)

    def _exchange(self, comm, arr):
        """Post this rank's array for its comm's next collective; every rank's, in rank order."""
        c = comm.clique
        seq = comm.seq
        comm.seq += 1
        with c.cond:
            c.posts.setdefault(seq, {})[comm.rank] = arr
            if not c.cond.wait_for(lambda: len(c.posts[seq]) == c.nranks, WAIT_S):
                raise TimeoutError(f"fake NCCL: call #{seq} never made by every rank")
            c.cond.notify_all()
            return [c.posts[seq][r] for r in range(c.nranks)]

    # ---- collectives
    def _collective(self, name, comm, stream, run, **args):
        h = _value(comm)
        code = self._record(name, comm=h, stream=_value(stream), **args)
        if code:
            return code
        run(self.comms[h])
        return 0

    def ncclAllReduce(self, send, recv, count, dtype, op, comm, stream):
        s, r, n, dt, o = _value(send), _value(recv), _value(count), _value(dtype), _value(op)

        def run(c):
            self._write(r, self._reduce(self._exchange(c, self._read(s, n, dt, stream)), o, dt))
        return self._collective("ncclAllReduce", comm, stream, run, send=s, recv=r, count=n, dtype=dt, op=o)

    def ncclReduce(self, send, recv, count, dtype, op, root, comm, stream):
        s, r, n, dt, o, root = _value(send), _value(recv), _value(count), _value(dtype), _value(op), _value(root)

        def run(c):
            result = self._reduce(self._exchange(c, self._read(s, n, dt, stream)), o, dt)
            if c.rank == root:
                self._write(r, result)
        return self._collective("ncclReduce", comm, stream, run, send=s, recv=r, count=n, dtype=dt, op=o, root=root)

    def ncclBroadcast(self, send, recv, count, dtype, root, comm, stream):
        s, r, n, dt, root = _value(send), _value(recv), _value(count), _value(dtype), _value(root)

        def run(c):
            self._write(r, self._exchange(c, self._read(s, n, dt, stream))[root])
        return self._collective("ncclBroadcast", comm, stream, run, send=s, recv=r, count=n, dtype=dt, root=root)

    def ncclAllGather(self, send, recv, count, dtype, comm, stream):
        s, r, n, dt = _value(send), _value(recv), _value(count), _value(dtype)

        def run(c):
            self._write(r, np.concatenate(self._exchange(c, self._read(s, n, dt, stream))))
        return self._collective("ncclAllGather", comm, stream, run, send=s, recv=r, count=n, dtype=dt)

    def ncclReduceScatter(self, send, recv, recvcount, dtype, op, comm, stream):
        s, r, n, dt, o = _value(send), _value(recv), _value(recvcount), _value(dtype), _value(op)

        def run(c):
            posts = self._exchange(c, self._read(s, n * c.nranks, dt, stream))
            self._write(r, self._reduce([p[c.rank * n:(c.rank + 1) * n] for p in posts], o, dt))
        return self._collective("ncclReduceScatter", comm, stream, run, send=s, recv=r, count=n, dtype=dt, op=o)

    # ---- point to point: sends post into the peer's mailbox, recvs wait for theirs; in a group, at ncclGroupEnd
    def _p2p(self, name, buf, count, dtype, peer, comm, stream):
        b, n, dt, peer, h = _value(buf), _value(count), _value(dtype), _value(peer), _value(comm)
        code = self._record(name, buf=b, count=n, dtype=dt, peer=peer, comm=h, stream=_value(stream))
        if code:
            return code
        op = (name, b, n, dt, peer, self.comms[h], stream)
        if getattr(self._local, "group", None) is not None:
            self._local.group.append(op)
        else:
            self._run_p2p([op])
        return 0

    def _run_p2p(self, ops):
        for name, b, n, dt, peer, c, stream in sorted(ops, key=lambda o: o[0] != "ncclSend"):
            box = (c.rank, peer) if name == "ncclSend" else (peer, c.rank)
            with c.clique.cond:
                if name == "ncclSend":
                    c.clique.mail.setdefault(box, []).append(self._read(b, n, dt, stream))
                    c.clique.cond.notify_all()
                    continue
                if not c.clique.cond.wait_for(lambda box=box, c=c: c.clique.mail.get(box), WAIT_S):
                    raise TimeoutError(f"fake NCCL: rank {c.rank} never got its message from rank {peer}")
                arr = c.clique.mail[box].pop(0)
            assert arr.size == n, (arr.size, n)
            sim.cuStreamSynchronize(_value(stream))     # what was queued before the recv lands first
            self._write(b, arr)

    def ncclSend(self, buf, count, dtype, peer, comm, stream):
        return self._p2p("ncclSend", buf, count, dtype, peer, comm, stream)

    def ncclRecv(self, buf, count, dtype, peer, comm, stream):
        return self._p2p("ncclRecv", buf, count, dtype, peer, comm, stream)

    def ncclGroupStart(self):
        self._local.group = []
        return self._record("ncclGroupStart")

    def ncclGroupEnd(self):
        ops, self._local.group = self._local.group, None
        code = self._record("ncclGroupEnd")
        if not code:
            self._run_p2p(ops or [])
        return code

    # ---- PREMUL_SUM
    def ncclRedOpCreatePreMulSum(self, out, scalar, dtype, residence, comm):
        dt = _value(dtype)
        raw = ctypes.string_at(ctypes.addressof(scalar), 2 if dt in (6, 9) else np.dtype(DTYPES[dt]).itemsize)
        factor = self._math(np.frombuffer(raw, self._np(dt)), dt)[0]
        code = self._record("ncclRedOpCreatePreMulSum", factor=float(factor), dtype=dt, residence=_value(residence),
                            comm=_value(comm))
        if code:
            return code
        with self._lock:
            op = 5 + len(self.premul)
            self.premul[op] = (float(factor), True)
        out._obj.value = op
        return 0

    def ncclRedOpDestroy(self, op, comm):
        return self._record("ncclRedOpDestroy", op=_value(op), comm=_value(comm))
