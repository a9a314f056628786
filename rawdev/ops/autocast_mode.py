"""Autocast at the op boundary: the per-thread state of autocast regions, and the hook every public op goes
through (rawdev.ops.registry wraps each declared op's public callable with `hook`).

Outside any enabled region the hook costs one global check (`ACTIVE`, the number of enabled (thread, device)
regions in the process). Inside, it finds the device type of the op's tensors, looks the op up in the lists
(rawdev.ops.autocast_lists), casts the eligible arguments (floating tensors on that device, float64 excluded,
as PyTorch's is_eligible) and runs the op with autocast excluded, so ops that a listed op calls inside do not
cast again (PyTorch's ExcludeDispatchKeyGuard). An op in no list runs as given; listed ops it calls through
their public names still autocast (a composite's parts, as in PyTorch).

The lower-precision cast of a float32 leaf that requires grad (a weight) is cached until the outermost region
exits, so a weight used by several ops is cast once per forward (PyTorch's cached_cast). The key also holds the
grad mode, so a cast made under no_grad (no graph) is not handed to a later op that needs the gradient.
"""
import functools
import inspect
import threading

from .. import dtypes as _dt
from ..autograd.grad_mode import is_grad_enabled
from ..tensor.core import Tensor
from . import autocast_lists as lists

__all__ = ["hook", "state", "set_enabled", "is_enabled", "ACTIVE"]

ACTIVE = 0                       # enabled (thread, device type) pairs in the process: the hook's one check
_active_lock = threading.Lock()
_tls = threading.local()
DEVICE_TYPES = ("cuda", "cpu")


class _State:
    """One thread's autocast state (PyTorch keeps the same per thread)."""

    def __init__(self):
        self.enabled = {"cuda": False, "cpu": False}
        self.dtype = {"cuda": _dt.float16, "cpu": _dt.bfloat16}
        self.cache_enabled = True
        self.nesting = 0
        self.excluded = 0        # > 0 while a listed op runs: what it calls does not autocast again
        self.cache = {}          # (id(weight), grad mode) -> (weight, its cast)


def state():
    st = getattr(_tls, "state", None)
    if st is None:
        st = _tls.state = _State()
    return st


def set_enabled(device_type, enabled):
    """Enable or disable autocast for device_type in this thread (torch.set_autocast_enabled)."""
    global ACTIVE
    st = state()
    enabled = bool(enabled)
    if st.enabled[device_type] != enabled:
        with _active_lock:
            ACTIVE += 1 if enabled else -1
        st.enabled[device_type] = enabled


def is_enabled(device_type):
    st = state()
    return st.enabled[device_type] and not st.excluded


def _eligible(t, device_type):
    return (isinstance(t, Tensor) and t.device.type == device_type and t.dtype.is_floating_point
            and t.dtype is not _dt.float64)


def _cast(t, to, device_type, st):
    if not _eligible(t, device_type) or t.dtype is to:
        return t
    if (to is st.dtype[device_type] and t.dtype is _dt.float32 and st.cache_enabled and t.requires_grad
            and t.is_leaf and t._base is None):
        key = (id(t), is_grad_enabled())
        hit = st.cache.get(key)
        if hit is not None:
            return hit[1]
        out = t.to(dtype=to)
        st.cache[key] = (t, out)        # holding t keeps its id from being reused while cached
        return out
    return t.to(dtype=to)


def _cast_all(args, kwargs, to, device_type, st):
    def one(a):
        if isinstance(a, Tensor):
            return _cast(a, to, device_type, st)
        if isinstance(a, (list, tuple)) and any(isinstance(x, Tensor) for x in a):
            return type(a)(_cast(x, to, device_type, st) for x in a)
        return a
    return [one(a) for a in args], {k: one(v) for k, v in kwargs.items()}


def _tensors(args, kwargs):
    for a in (*args, *kwargs.values()):
        if isinstance(a, Tensor):
            yield a
        elif isinstance(a, (list, tuple)):
            yield from (x for x in a if isinstance(x, Tensor))


def _device_type(args, kwargs, st):
    """The autocast device type the op's tensors select (cuda over cpu, as the dispatch keys rank), or None."""
    seen = {t.device.type for t in _tensors(args, kwargs)}
    for dev in DEVICE_TYPES:
        if dev in seen and st.enabled[dev]:
            return dev
    return None


def _promote_type(args, kwargs, device_type, low):
    """PyTorch's promote_type: the region's dtype unless a float32 argument is eligible; float64 ignored."""
    current = low
    for t in _tensors(args, kwargs):
        if not _eligible(t, device_type):
            continue
        if t.dtype is _dt.float32 or current is _dt.float32:
            current = _dt.float32
        elif t.dtype is not low:
            raise RuntimeError("Unexpected floating ScalarType in at::autocast::prioritize")
    return current


@functools.cache
def _signature(fn):
    try:
        return inspect.signature(fn)
    except (TypeError, ValueError):
        return None


def _with_float32_dtype(fn, args, kwargs, device_type, st):
    """fp32_set_opt_dtype: dtype=float32 unless the caller gave one (an op without a dtype argument gets its
    first tensor cast instead: the same result dtype)."""
    first = next(iter(_tensors(args, kwargs)), None)
    if first is None or not _eligible(first, device_type):
        return args, kwargs
    sig = _signature(fn)
    if sig is not None and "dtype" in sig.parameters:
        try:
            bound = sig.bind_partial(*args, **kwargs)
        except TypeError:
            return args, kwargs          # let the op raise its own argument error
        if bound.arguments.get("dtype") is None:
            bound.arguments["dtype"] = _dt.float32
        return list(bound.args), dict(bound.kwargs)
    return _cast_all(args, kwargs, _dt.float32, device_type, st)


def _run(name, fn, args, kwargs):
    st = state()
    if st.excluded:
        return fn(*args, **kwargs)
    device_type = _device_type(args, kwargs, st)
    policy = lists.policy_of(device_type, name) if device_type is not None else None
    if policy is None:
        return fn(*args, **kwargs)
    if policy == "banned":
        raise RuntimeError(lists.BANNED_MESSAGE)
    if policy in ("fp32_set_opt_dtype", "fp32_append_dtype"):
        args, kwargs = _with_float32_dtype(fn, args, kwargs, device_type, st)
    else:
        low = st.dtype[device_type]
        to = low if policy == "lower_precision_fp" else _dt.float32 if policy == "fp32" else \
            _promote_type(args, kwargs, device_type, low)
        args, kwargs = _cast_all(args, kwargs, to, device_type, st)
    st.excluded += 1
    try:
        return fn(*args, **kwargs)
    finally:
        st.excluded -= 1


def hook(name, fn):
    """fn behind the autocast check: a plain call unless an autocast region is enabled somewhere.

    Args:
        name: the op's name in the lists (rawdev.ops.autocast_lists).
        fn: the op's function.

    Returns:
        The wrapped function (functools.wraps keeps fn's name, docstring and signature).
    """
    @functools.wraps(fn)
    def op(*args, **kwargs):
        if ACTIVE:
            return _run(name, fn, args, kwargs)
        return fn(*args, **kwargs)
    op._autocast_name = name
    return op
