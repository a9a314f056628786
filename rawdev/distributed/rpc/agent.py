"""The RPC agent of one worker: a TCP server that runs the calls other workers send (on a thread pool, so a call
may itself call back), one connection to each peer for the calls this worker sends, the table of the values this
worker owns through RRefs, and the deadlines of the calls in flight.

Messages are `wire.frame`s. A request names its kind — "call" (run a function, answer its result), "remote" (run
a function and keep the result under an RRef id), "fetch" (answer the value kept under an RRef id), "backward"
(distributed autograd) — and carries the caller's rank, a request id and, inside a distributed autograd context,
the context and message ids. The answer is "ok" with the result or "err" with the exception's type, message and
remote traceback.
"""
from __future__ import annotations

import itertools
import json
import socket
import struct
import threading
import time
import traceback
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from ...futures import Future
from ...tensor.core import Tensor
from ..store import recv_exact as _read_exact
from . import context as dctx
from .wire import decode, encode, frame, function_ref, resolve_ref, unframe

__all__ = ["WorkerInfo", "Agent", "RemoteError", "RREF_CLASS", "REMOTE_MODULE_CLASS"]

# rawdev.distributed.rpc.rref registers its RRef class here, so that the agent packs and unpacks references
# without importing the module that builds on it
RREF_CLASS: list[Any] = [None]
# rawdev.distributed.nn registers RemoteModule here: it travels as its module's RRef and device, and is rebuilt
# on arrival by that class (no code from the message)
REMOTE_MODULE_CLASS: list[Any] = [None]


class WorkerInfo:
    """A worker of the RPC group: its rank (`id`) and `name`."""

    __slots__ = ("id", "name")

    def __init__(self, id: int, name: str) -> None:
        self.id, self.name = int(id), str(name)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, WorkerInfo) and other.id == self.id and other.name == self.name

    def __hash__(self) -> int:
        return hash((self.id, self.name))

    def __repr__(self) -> str:
        return f"WorkerInfo(id={self.id}, name={self.name})"


class RemoteError(RuntimeError):
    """An exception raised on another worker whose type could not be rebuilt here."""


def _read_frame(sock: socket.socket) -> tuple[dict[str, Any], list[bytes]]:
    (n,) = struct.unpack(">Q", _read_exact(sock, 8))
    return unframe(_read_exact(sock, n))


class _Peer:
    """The connection this worker opened to one peer: requests out, answers in (a reader thread)."""

    def __init__(self, agent: Agent, rank: int, host: str, port: int) -> None:
        self.agent, self.rank = agent, rank
        self.sock = socket.create_connection((host, port), timeout=agent.timeout)
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.sock.settimeout(None)
        self.lock = threading.Lock()
        threading.Thread(target=self._read, name=f"rpc-peer-{rank}", daemon=True).start()

    def send(self, data: bytes) -> None:
        with self.lock:
            self.sock.sendall(data)

    def _read(self) -> None:
        try:
            while True:
                header, blobs = _read_frame(self.sock)
                self.agent._answer(header, blobs, self.rank)
        except (ConnectionError, OSError, struct.error):
            self.agent._peer_lost(self.rank)

    def close(self) -> None:
        try:
            self.sock.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
        self.sock.close()


class Agent:
    """One worker's RPC endpoint (made by init_rpc; rawdev.distributed.rpc's functions use the current one)."""

    def __init__(self, name: str, rank: int, world_size: int, store: Any, timeout: float, num_threads: int) -> None:
        self.info = WorkerInfo(rank, name)
        self.world_size, self.store, self.timeout = world_size, store, float(timeout)
        self.pool = ThreadPoolExecutor(max(2, int(num_threads)), thread_name_prefix=f"rpc-{name}")
        self.lock = threading.Lock()
        self.ids = itertools.count(1)
        self.pending: dict[int, tuple[Future[Any], float, int, str]] = {}
        self.owned: dict[tuple[int, ...], Future[Any]] = {}
        self.peers: dict[int, _Peer] = {}
        self.closing = False
        self.server = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self.server.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.server.bind(("0.0.0.0", 0))
        self.server.listen(128)
        host = store._sock.getsockname()[0] if hasattr(store, "_sock") else "127.0.0.1"
        self.address = (host, self.server.getsockname()[1])
        self.workers: dict[int, WorkerInfo] = {}
        self.addrs: dict[int, tuple[str, int]] = {}
        # A peer that finished its rendezvous first may call this worker before it knows every worker (a request
        # naming an RRef owned by a rank not yet read back would fail): requests are served once join is done.
        self.joined = threading.Event()
        threading.Thread(target=self._accept, name=f"rpc-accept-{name}", daemon=True).start()
        threading.Thread(target=self._reap, name=f"rpc-deadlines-{name}", daemon=True).start()

    # ------------------------------------------------------------------ rendezvous
    def join(self) -> None:
        """Publish this worker's name and address; learn every other worker's (names must be unique)."""
        self.store.set(f"rpc/worker/{self.info.id}", json.dumps([self.info.name, *self.address]))
        keys = [f"rpc/worker/{r}" for r in range(self.world_size)]
        try:
            self.store.wait(keys, self.timeout)
            for r in range(self.world_size):
                name, host, port = json.loads(self.store.get(f"rpc/worker/{r}").decode())
                self.workers[r], self.addrs[r] = WorkerInfo(r, name), (host, int(port))
        finally:
            self.joined.set()
        names = [w.name for w in self.workers.values()]
        dup = sorted({n for n in names if names.count(n) > 1})
        if dup:
            raise RuntimeError(f"RPC: worker names must be unique; {dup} is used by more than one rank")

    def worker(self, to: Any) -> WorkerInfo:
        if isinstance(to, WorkerInfo):
            return self.workers[to.id]
        if isinstance(to, int):
            if to not in self.workers:
                raise ValueError(f"RPC: there is no worker with id {to} (world size {self.world_size})")
            return self.workers[to]
        for w in self.workers.values():
            if w.name == to:
                return w
        raise ValueError(f"Unknown destination worker {to}")

    # ------------------------------------------------------------------ sending
    def _peer(self, rank: int) -> _Peer:
        with self.lock:
            peer = self.peers.get(rank)
            if peer is None:
                peer = self.peers[rank] = _Peer(self, rank, *self.addrs[rank])
            return peer

    def request(self, to: WorkerInfo, kind: str, fields: dict[str, Any], payload: Any,
                timeout: float | None) -> Future[Any]:
        """Send a request; the Future completes with the answer (or the remote error, or a timeout)."""
        if self.closing and kind != "backward":
            raise RuntimeError("RPC: this worker has shut down its RPC agent; no new calls can be sent")
        fut: Future[Any] = Future()
        rid = next(self.ids)
        ctx = dctx.current()
        header = dict(fields, kind=kind, id=rid, src=self.info.id)
        sent: list[Any] = []

        def on_tensor(t: Tensor, index: int) -> None:
            sent.append((index, t))
        form, blobs = encode(payload, on_tensor if ctx is not None else None, self._pack_ref)
        if ctx is not None:   # the context travels with every call made in it, so the callee's answer is recorded
            grads = [t if t.requires_grad else None for _, t in sent]
            header["ctx"] = [ctx.id, ctx.record_sent(grads, to.id) if any(g is not None for g in grads) else 0]
        header["body"] = form
        seconds = self.timeout if timeout is None or timeout < 0 else float(timeout)
        deadline = time.monotonic() + seconds if seconds > 0 else float("inf")
        with self.lock:
            self.pending[rid] = (fut, deadline, to.id, kind)
        try:
            self._peer(to.id).send(frame(header, blobs))
        except OSError as e:
            with self.lock:
                self.pending.pop(rid, None)
            raise RuntimeError(f"RPC: could not reach {to} at {self.addrs[to.id][0]}:{self.addrs[to.id][1]} ({e})") \
                from None
        return fut

    def _answer(self, header: dict[str, Any], blobs: list[bytes], rank: int) -> None:
        with self.lock:
            entry = self.pending.pop(header["id"], None)
        if entry is None:   # answered after its deadline: the caller was told already
            return
        fut = entry[0]
        if header["kind"] == "err":
            fut.set_exception(_rebuild_error(header["error"], self.workers[rank]))
            return
        try:
            value = self._decode(header, blobs, rank)
        except Exception as e:   # an answer this worker cannot read: the caller hears why
            fut.set_exception(e)
            return
        fut.set_result(value)

    def _peer_lost(self, rank: int) -> None:
        with self.lock:
            lost = [(rid, e) for rid, e in self.pending.items() if e[2] == rank]
            for rid, _ in lost:
                self.pending.pop(rid, None)
            self.peers.pop(rank, None)
        for _, (fut, _, _, kind) in lost:
            if not fut.done():
                fut.set_exception(RuntimeError(f"RPC: the connection to {self.workers.get(rank, rank)} was lost "
                                               f"before it answered a {kind!r} request (has that worker ended?)"))

    def _reap(self) -> None:
        while True:
            time.sleep(0.05)
            now = time.monotonic()
            with self.lock:
                late = [(rid, e) for rid, e in self.pending.items() if e[1] < now]
                for rid, _ in late:
                    self.pending.pop(rid, None)
            for _, (fut, _, rank, kind) in late:
                if not fut.done():
                    fut.set_exception(RuntimeError(
                        f"RPC ran for more than set timeout ({int(self.timeout * 1000)} ms) and will now be marked "
                        f"with an error ({kind!r} to {self.workers.get(rank, rank)})"))

    # ------------------------------------------------------------------ references
    def _pack_ref(self, obj: Any) -> Any:
        if RREF_CLASS[0] is not None and isinstance(obj, RREF_CLASS[0]):
            return {"__R": [obj._owner.id, list(obj._key)]}
        if isinstance(obj, WorkerInfo):
            return {"__W": [obj.id, obj.name]}
        if REMOTE_MODULE_CLASS[0] is not None and isinstance(obj, REMOTE_MODULE_CLASS[0]):
            return {"__M": [self._pack_ref(obj.module_rref)["__R"], str(obj.device)]}
        return None

    def _unpack_ref(self, kind: str, data: list[Any]) -> Any:
        if kind == "W":
            return self.workers.get(int(data[0]), WorkerInfo(data[0], data[1]))
        if kind == "M":
            (owner, key), device = data
            rref = RREF_CLASS[0]._existing(self, self.workers[int(owner)], tuple(key))
            return REMOTE_MODULE_CLASS[0]._from_wire(rref, device)
        owner, key = data
        return RREF_CLASS[0]._existing(self, self.workers[int(owner)], tuple(key))

    def owned_value(self, key: tuple[int, ...]) -> Future[Any]:
        with self.lock:
            fut = self.owned.get(key)
            if fut is None:
                fut = self.owned[key] = Future()
            return fut

    def _decode(self, header: dict[str, Any], blobs: list[bytes], sender: int) -> Any:
        ctx_ids = header.get("ctx")
        ctx = dctx.get(ctx_ids[0]) if ctx_ids else None
        position = itertools.count()

        def on_tensor(t: Tensor, index: int) -> None:
            pos = next(position)
            if ctx is not None and ctx_ids is not None and t.requires_grad:
                ctx.record_recv(t, sender, ctx_ids[1], pos)
        return decode(header["body"], blobs, on_tensor, self._unpack_ref)

    # ------------------------------------------------------------------ serving
    def _accept(self) -> None:
        while True:
            try:
                conn, _ = self.server.accept()
            except OSError:
                return
            conn.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            threading.Thread(target=self._serve, args=(conn,), daemon=True).start()

    def _serve(self, conn: socket.socket) -> None:
        lock = threading.Lock()
        self.joined.wait(self.timeout)
        try:
            while True:
                header, blobs = _read_frame(conn)
                self.pool.submit(self._run, conn, lock, header, blobs)
        except (ConnectionError, OSError, struct.error):
            conn.close()

    def _reply(self, conn: socket.socket, lock: threading.Lock, header: dict[str, Any], value: Any = None,
               error: BaseException | None = None) -> None:
        if error is not None:
            tb = "".join(traceback.format_exception(type(error), error, error.__traceback__))
            try:
                ref = function_ref(type(error), "the error")
            except TypeError:
                ref = ["builtins", "RuntimeError"]
            out = frame({"kind": "err", "id": header["id"], "error": [ref, str(error), tb, repr(self.info)]}, [])
        else:
            ctx_ids = header.get("ctx")
            sent: list[Any] = []

            def on_tensor(t: Tensor, index: int) -> None:
                sent.append(t)
            try:
                form, blobs = encode(value, on_tensor, self._pack_ref)
            except Exception as e:   # a result that cannot be sent: the caller gets the reason
                self._reply(conn, lock, header, error=e)
                return
            reply = {"kind": "ok", "id": header["id"], "body": form}
            if ctx_ids and any(t.requires_grad for t in sent):
                ctx = dctx.get(ctx_ids[0])
                reply["ctx"] = [ctx.id, ctx.record_sent([t if t.requires_grad else None for t in sent],
                                                        header["src"])]
            out = frame(reply, blobs)
        try:
            with lock:
                conn.sendall(out)
        except OSError:
            pass

    def _run(self, conn: socket.socket, lock: threading.Lock, header: dict[str, Any], blobs: list[bytes]) -> None:
        ctx_ids = header.get("ctx")
        prev = dctx.set_current(dctx.get(ctx_ids[0]) if ctx_ids else None)
        try:
            kind = header["kind"]
            if kind == "fetch":
                fut = self.owned_value(tuple(header["key"]))
                fut.add_done_callback(lambda f: self._settle(conn, lock, header, f))
                return
            body = self._decode(header, blobs, header["src"])
            if kind == "remote":
                fut = self.owned_value(tuple(header["key"]))
            func = resolve_ref(header["func"])
            args, kwargs = body
            out = func(*args, **kwargs)
            if getattr(func, "_rawdev_async_execution", False) or getattr(
                    getattr(func, "__func__", None), "_rawdev_async_execution", False):
                if not isinstance(out, Future):
                    raise TypeError(f"{header['func'][1]} is marked @rpc.functions.async_execution but returned "
                                    f"{type(out).__name__}, not a torch.futures.Future")
            else:
                done: Future[Any] = Future()
                done.set_result(out)
                out = done
            if kind == "remote":
                def kept(f: Future[Any]) -> None:
                    _forward(f, fut)
                    self._reply(conn, lock, header, None)
                out.add_done_callback(kept)
            else:
                out.add_done_callback(lambda f: self._settle(conn, lock, header, f))
        except Exception as e:
            if header["kind"] == "remote":
                owned = self.owned_value(tuple(header["key"]))
                if not owned.done():
                    owned.set_exception(e)
            self._reply(conn, lock, header, error=e)
        finally:
            dctx.set_current(prev)

    def _settle(self, conn: socket.socket, lock: threading.Lock, header: dict[str, Any], f: Future[Any]) -> None:
        try:
            value = f.wait()
        except Exception as e:
            self._reply(conn, lock, header, error=e)
            return
        ctx_ids = header.get("ctx")
        prev = dctx.set_current(dctx.get(ctx_ids[0]) if ctx_ids else None)
        try:
            self._reply(conn, lock, header, value)
        finally:
            dctx.set_current(prev)

    # ------------------------------------------------------------------ shutdown
    def close(self) -> None:
        self.closing = True
        try:
            self.server.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
        self.server.close()
        with self.lock:
            peers, self.peers = list(self.peers.values()), {}
        for p in peers:
            p.close()
        self.pool.shutdown(wait=False, cancel_futures=True)


def _forward(src: Future[Any], dst: Future[Any]) -> None:
    try:
        value = src.wait()
    except Exception as e:
        if not dst.done():
            dst.set_exception(e)
        return
    if not dst.done():
        dst.set_result(value)


def _rebuild_error(err: list[Any], worker: WorkerInfo) -> BaseException:
    ref, message, tb, where = err
    text = f"On {where}:\n{message}\n{tb}"
    try:
        cls = resolve_ref(ref)
        if isinstance(cls, type) and issubclass(cls, Exception):
            return cls(text)
    except Exception:   # a type this worker cannot import or build: the text is what matters
        pass
    return RemoteError(text)
