"""torch.distributed.TCPStore: a key-value store served by one process (the master, rank 0) over TCP, which every
rank of a job connects to. Rendezvous and the simulated communicator's collectives go through it.

Values are bytes. `get` and `wait` block in the server until the keys exist or the timeout passes, so a waiting
rank uses no CPU and a missing one shows as a timeout that names the keys, never a hang. They block in short slices,
so that the other threads of a process sharing one client (ranks in threads) can set keys meanwhile.

Wire format: each message is a 4-byte big-endian length then a JSON header line, then raw bytes (the value).
"""
import datetime
import json
import socket
import struct
import threading
import time

__all__ = ["Store", "TCPStore", "StoreTimeout"]

_DEFAULT_TIMEOUT = datetime.timedelta(seconds=300)
_SLICE_S = 0.2      # the longest a blocking get/wait holds the client's socket before letting another thread in


class StoreTimeout(RuntimeError):
    """A wait on the store ran past its timeout; `.missing` holds the keys that never arrived."""

    def __init__(self, message, missing):
        super().__init__(message)
        self.missing = list(missing)


def _seconds(timeout):
    if timeout is None:
        return _DEFAULT_TIMEOUT.total_seconds()
    if isinstance(timeout, datetime.timedelta):
        return timeout.total_seconds()
    return float(timeout)


def _as_bytes(value):
    if isinstance(value, str):
        return value.encode()
    return bytes(value)


def _send(sock, header, payload=b""):
    head = json.dumps(header).encode()
    sock.sendall(struct.pack(">II", len(head), len(payload)) + head + payload)


def recv_exact(sock, n):
    """Exactly n bytes from sock (ConnectionError when the peer closes first)."""
    chunks, got = [], 0
    while got < n:
        chunk = sock.recv(min(n - got, 1 << 20))
        if not chunk:
            raise ConnectionError("connection closed")
        chunks.append(chunk)
        got += len(chunk)
    return b"".join(chunks)


def _recv(sock):
    nh, np_ = struct.unpack(">II", recv_exact(sock, 8))
    header = json.loads(recv_exact(sock, nh))
    return header, recv_exact(sock, np_) if np_ else b""


class _Server:
    """The master's store: a dict and a condition variable, one thread per connected client."""

    def __init__(self, host, port):
        self.data = {}
        self.cond = threading.Condition()
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        # a port whose last job's connections linger in TIME_WAIT can be listened on again (Linux still refuses a
        # second listener on a live one, which is the "port taken" error below)
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            self.sock.bind((host, port))
        except OSError as e:
            self.sock.close()
            raise RuntimeError(f"TCPStore: cannot listen on {host}:{port}: {e.strerror or e} (the port is taken by "
                               f"another process or job: pick another MASTER_PORT / --master-port)") from None
        self.sock.listen(128)
        self.port = self.sock.getsockname()[1]
        self.closed = False
        self.clients = 0
        threading.Thread(target=self._accept, name="rawdev-TCPStore", daemon=True).start()

    def _accept(self):
        while not self.closed:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            conn.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            with self.cond:
                self.clients += 1
            threading.Thread(target=self._serve, args=(conn,), daemon=True).start()

    def _wait_for(self, keys, timeout):
        deadline = time.monotonic() + timeout
        with self.cond:
            while True:
                missing = [k for k in keys if k not in self.data]
                left = deadline - time.monotonic()
                if not missing or left <= 0:
                    return missing
                self.cond.wait(left)

    def _serve(self, conn):
        try:
            while True:
                head, payload = _recv(conn)
                cmd = head["cmd"]
                if cmd == "set":
                    with self.cond:
                        self.data[head["key"]] = payload
                        self.cond.notify_all()
                    _send(conn, {"ok": True})
                elif cmd in ("get", "wait"):
                    keys = head["keys"]
                    missing = self._wait_for(keys, head["timeout"])
                    if missing:
                        _send(conn, {"ok": False, "missing": missing})
                    elif cmd == "get":
                        with self.cond:
                            _send(conn, {"ok": True}, self.data[keys[0]])
                    else:
                        _send(conn, {"ok": True})
                elif cmd == "add":
                    with self.cond:
                        value = int(self.data.get(head["key"], b"0")) + head["amount"]
                        self.data[head["key"]] = str(value).encode()
                        self.cond.notify_all()
                    _send(conn, {"ok": True, "value": value})
                elif cmd == "delete":
                    with self.cond:
                        found = [k for k in head["keys"] if self.data.pop(k, None) is not None]
                    _send(conn, {"ok": True, "deleted": len(found)})
                elif cmd == "check":
                    with self.cond:
                        _send(conn, {"ok": all(k in self.data for k in head["keys"])})
                elif cmd == "num_keys":
                    with self.cond:
                        _send(conn, {"ok": True, "value": len(self.data)})
                else:
                    _send(conn, {"ok": False, "error": f"unknown command {cmd!r}"})
        except (ConnectionError, OSError, struct.error):
            pass
        finally:
            conn.close()
            with self.cond:
                self.clients -= 1
                self.cond.notify_all()

    def wait_clients_gone(self, keep, timeout):
        """Wait until at most `keep` clients are connected (the master's own), so that the master's process
        does not end the store while other ranks still read from it."""
        deadline = time.monotonic() + timeout
        with self.cond:
            while self.clients > keep and time.monotonic() < deadline:
                self.cond.wait(deadline - time.monotonic())

    def close(self):
        self.closed = True
        try:
            self.sock.shutdown(socket.SHUT_RDWR)     # wakes the accept thread: close() alone leaves it listening
        except OSError:
            pass
        self.sock.close()


class Store:
    """torch.distributed.Store: the interface TCPStore implements (and PrefixStore wraps)."""


class TCPStore(Store):
    """torch.distributed.TCPStore(host_name, port, world_size=None, is_master=False, timeout=300 s).

    The master listens on (host_name, port) (port 0: any free port, read back from `.port`); every instance,
    the master's included, is a client of that server. Values are bytes (str is encoded as UTF-8).

    Args:
        host_name: the master's address.
        port: the master's port.
        world_size: the number of processes that will connect (informational, as in PyTorch).
        is_master: True in the one process that serves the store.
        timeout: how long connecting, `get` and `wait` may take (timedelta or seconds).
        wait_for_workers: accepted for PyTorch's signature; the rendezvous waits for ranks instead.

    Example:
        >>> store = TCPStore("127.0.0.1", 0, 1, True)
        >>> store.set("k", b"v"); store.get("k")
        b'v'
    """

    def __init__(self, host_name, port, world_size=None, is_master=False, timeout=_DEFAULT_TIMEOUT,
                 wait_for_workers=True, multi_tenant=False, master_listen_fd=None, use_libuv=True):
        self.host = host_name
        self.world_size = world_size
        self.timeout = _seconds(timeout)
        self._server = _Server(host_name, int(port)) if is_master else None
        self.port = self._server.port if self._server else int(port)
        self._lock = threading.Lock()
        self._sock = self._connect()

    def _connect(self):
        deadline = time.monotonic() + self.timeout
        delay = 0.01
        while True:
            try:
                sock = socket.create_connection((self.host, self.port), timeout=max(1.0, self.timeout))
                sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
                sock.settimeout(None)
                return sock
            except OSError as e:
                if time.monotonic() + delay > deadline:
                    raise StoreTimeout(f"TCPStore: could not connect to the master at {self.host}:{self.port} within "
                                       f"{self.timeout:g} s ({e.strerror or e}): is rank 0 running, and are "
                                       f"MASTER_ADDR/MASTER_PORT the same on every rank?", []) from None
                time.sleep(delay)
                delay = min(delay * 2, 0.5)

    def _call(self, header, payload=b""):
        with self._lock:
            try:
                _send(self._sock, header, payload)
                return _recv(self._sock)
            except (ConnectionError, OSError, struct.error) as e:
                raise RuntimeError(f"TCPStore: lost the connection to the master at {self.host}:{self.port} "
                                   f"({e}): the master process (rank 0) has ended or closed the store") from None

    def _blocking(self, cmd, keys, seconds):
        """A get/wait that blocks in the server, in slices of at most _SLICE_S: the client's one socket is shared
        by the threads of this process (several ranks in threads, a watchdog), and a wait that held it for its
        whole timeout would stall another thread's set of the very key it waits for."""
        deadline = time.monotonic() + seconds
        while True:
            left = max(0.0, deadline - time.monotonic())
            head, payload = self._call({"cmd": cmd, "keys": list(keys), "timeout": min(left, _SLICE_S)})
            if head["ok"] or left <= _SLICE_S:
                return head, payload

    def set(self, key, value):
        """Store `value` (bytes or str) under `key`, waking any rank waiting for it."""
        self._call({"cmd": "set", "key": key}, _as_bytes(value))

    def get(self, key):
        """The bytes under `key`, waiting up to the store's timeout for some rank to set it."""
        head, payload = self._blocking("get", [key], self.timeout)
        if not head["ok"]:
            raise StoreTimeout(f"TCPStore: timed out after {self.timeout:g} s waiting for key {key!r}", [key])
        return payload

    def wait(self, keys, timeout=None):
        """Wait until every key in `keys` exists; StoreTimeout naming the missing ones after `timeout`."""
        seconds = self.timeout if timeout is None else _seconds(timeout)
        head, _ = self._blocking("wait", keys, seconds)
        if not head["ok"]:
            raise StoreTimeout(f"TCPStore: timed out after {seconds:g} s waiting for keys {head['missing']}",
                               head["missing"])

    def add(self, key, amount):
        """Add `amount` to the integer under `key` (0 when absent); returns the new value."""
        return self._call({"cmd": "add", "key": key, "amount": int(amount)})[0]["value"]

    def delete_key(self, key):
        """Remove `key`; True when it existed."""
        return self._call({"cmd": "delete", "keys": [key]})[0]["deleted"] == 1

    def _delete_keys(self, keys):
        self._call({"cmd": "delete", "keys": list(keys)})

    def check(self, keys):
        """True when every key in `keys` exists (no waiting)."""
        return self._call({"cmd": "check", "keys": list(keys)})[0]["ok"]

    def num_keys(self):
        return self._call({"cmd": "num_keys"})[0]["value"]

    def set_timeout(self, timeout):
        self.timeout = _seconds(timeout)

    def close(self):
        """Close this client (and, in the master, the server)."""
        try:
            self._sock.close()
        finally:
            if self._server is not None:
                self._server.close()
