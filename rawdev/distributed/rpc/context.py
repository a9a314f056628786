"""Distributed autograd contexts: what each worker remembers of a forward pass that crossed RPC, so that a
backward pass can cross it in reverse.

Inside `dist_autograd.context()`, every RPC message that carries tensors requiring grad is numbered, and both
ends remember it: the sender keeps the tensors it sent under (context id, message id); the receiver makes each
received tensor a leaf that requires grad and remembers which sender and message it came from. A backward pass
computes gradients on one worker up to its leaves: parameters accumulate into the context (never into `.grad`),
received leaves send their gradients back to the sender, which continues from the tensors it sent.

This module only keeps the records; rawdev.distributed.rpc.dist_autograd runs the backward pass.
"""
from __future__ import annotations

import itertools
import threading
from typing import Any

__all__ = ["DistContext", "current", "set_current", "get", "create", "find", "release", "new_message_id"]

_lock = threading.Lock()
_contexts: dict[int, DistContext] = {}
_local = threading.local()
_messages = itertools.count(1)


class DistContext:
    """One distributed autograd context on this worker."""

    def __init__(self, context_id: int) -> None:
        self.id = context_id
        self.lock = threading.Lock()
        self.sent: dict[int, list[Any]] = {}        # message id -> the tensors this worker sent (None: no grad)
        self.recv: dict[int, tuple[int, int, int]] = {}   # id(leaf) -> (sender rank, message id, position)
        self.recv_tensors: dict[int, Any] = {}      # id(leaf) -> the leaf (kept alive with the context)
        self.grads: dict[Any, Any] = {}             # parameter -> accumulated gradient
        self.peers: set[int] = set()

    def record_sent(self, tensors: list[Any], peer: int) -> int:
        mid = new_message_id()
        with self.lock:
            self.sent[mid] = tensors
            self.peers.add(peer)
        return mid

    def record_recv(self, leaf: Any, sender: int, mid: int, position: int) -> None:
        with self.lock:
            self.recv[id(leaf)] = (sender, mid, position)
            self.recv_tensors[id(leaf)] = leaf
            self.peers.add(sender)

    def accumulate(self, param: Any, grad: Any) -> None:
        with self.lock:
            old = self.grads.get(param)
            self.grads[param] = grad if old is None else old + grad


def new_message_id() -> int:
    return next(_messages)


def current() -> DistContext | None:
    return getattr(_local, "ctx", None)


def set_current(ctx: DistContext | None) -> DistContext | None:
    """Make `ctx` this thread's context; returns the previous one (to restore)."""
    prev = getattr(_local, "ctx", None)
    _local.ctx = ctx
    return prev


def create(context_id: int) -> DistContext:
    with _lock:
        if context_id in _contexts:
            raise RuntimeError(f"Already have an autograd context id for this thread: {context_id}")
        ctx = _contexts[context_id] = DistContext(context_id)
        return ctx


def get(context_id: int) -> DistContext:
    """The context with this id, made on first sight (a worker meets a context first in a message)."""
    with _lock:
        ctx = _contexts.get(context_id)
        if ctx is None:
            ctx = _contexts[context_id] = DistContext(context_id)
        return ctx


def find(context_id: int) -> DistContext:
    with _lock:
        ctx = _contexts.get(int(context_id))
    if ctx is None:
        raise RuntimeError(f"Could not find autograd context with id: {context_id}")
    return ctx


def release(context_id: int) -> DistContext | None:
    with _lock:
        return _contexts.pop(int(context_id), None)
