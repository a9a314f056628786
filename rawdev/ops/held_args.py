"""A backend call's cuda tensor arguments as frozen aliases: the storage each one had when the call began, held
until the call returns (a move in another thread may switch a tensor's storage at any moment). Used by the
dispatcher's cuda backend and by opmath.run for ops that launch their own kernels."""
from ..tensor.core import Tensor


def _held(op, t, first):
    """A frozen alias of cuda tensor t for one backend call: the same storage and layout, read once.

    A move in another thread (module.cpu() / .cuda()) switches t's storage at any moment. The alias holds the
    storage it read (its DeviceBuffer) until the backend call returns, by when every kernel that read it is
    queued: the buffer's free is then queued after them, on the stream they run on (the rule in
    docs/INTERNALS.md, "Moves racing ops"). A tensor that is no longer on the device when it is read (moved to
    the cpu after the op's device check, or caught half-switched) is PyTorch's device-mismatch error rather
    than a host address handed to a kernel."""
    a = Tensor.__new__(Tensor)
    # the storage fields, in this order, spelled out (a getattr/setattr loop over their names cost a microsecond)
    (a._buf, a._offset, a._shape, a._strides, a._soff, a._dtype, a._device, a._vc, a._requires_grad,
     a.grad_fn) = (t._buf, t._offset, t._shape, t._strides, t._soff, t._dtype, t._device, t._vc, t._requires_grad,
                   t.grad_fn)
    a._grad, a._pending, a._data, a._root = None, None, None, None
    a._base = t._base if t._base is not None else t   # a view made of the alias is a view of the caller's tensor
    # read after the fields: a switch to the cpu sets _data before _device, one to cuda sets _data (None) first
    if t._data is not None or a._device._type != "cuda" or (t._device is not a._device and t._device != a._device):
        raise RuntimeError(f"Expected all tensors to be on the same device, but found at least two devices, "
                           f"{first} and {t.device}! (when checking argument for {op}: a tensor was moved to "
                           f"{t.device} while the op ran)")
    return a


def _hold(op, x, held, first):
    """x with its cuda tensors (also inside lists/tuples) replaced by _held aliases, recorded in `held` (and
    the way back, alias id -> caller's tensor). A module-level function: a closure that recursed into itself
    would be a reference cycle keeping the caller's tensors alive until the next garbage collection."""
    if isinstance(x, Tensor):
        if not first:
            first.append(x.device)
        h = held.get(id(x))
        if h is None:
            h = _held(op, x, first[0])
            held[id(x)] = h
            held[id(h)] = x   # the way back for results
        return h
    if isinstance(x, (list, tuple)) and x and any(isinstance(v, Tensor) for v in x):
        return type(x)(_hold(op, v, held, first) for v in x) if not hasattr(x, "_fields") else x
    return x


def hold_args(op, fn, skip):
    """fn with its cuda tensor arguments (after the first `skip`; also inside lists/tuples and keyword
    arguments) replaced by _held aliases for the duration of the call; a result that is one of the aliases is
    given back as the caller's tensor."""
    def call(*args, **kwargs):
        held: dict = {}
        first: list = []
        args = args[:skip] + tuple(_hold(op, a, held, first) for a in args[skip:])
        kwargs = {k: _hold(op, v, held, first) for k, v in kwargs.items()}
        r = fn(*args, **kwargs)
        if held:
            if isinstance(r, Tensor):
                return _back(r, held)
            if isinstance(r, tuple) and not hasattr(r, "_fields"):
                return tuple(_back(v, held) if isinstance(v, Tensor) else v for v in r)
        return r
    call.__name__, call.__doc__ = getattr(fn, "__name__", op), fn.__doc__
    return call


def _back(r, held):
    """The caller's own tensor where the result is the alias made for it."""
    orig = held.get(id(r))
    return orig if orig is not None and held.get(id(orig)) is r else r
