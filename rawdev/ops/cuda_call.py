"""One wrapper for the common call of a cuda backend function: arguments whose tensors are plain Tensors (not in
lists) of dtypes the kernels compute in. It does in one pass what the three layers the dispatcher stacks do
(held_args: each cuda tensor read once into a frozen alias; opmath: no widening needed; dispatch's dense: readers
get contiguous operands) and hands every other call to those layers unchanged, before doing anything itself.

Every op on the cuda path goes through here, so the pass is written for the interpreter: one loop, no
generator per argument."""
from ..tensor.core import Tensor
from .held_args import _back, _held
from .opmath import _WIDENED


def fast_call(op, fn, skip, dense, layered):
    """fn (the cuda function, unwrapped) called as layered(*args, **kwargs) would call it, when no argument is a
    list/tuple or a Tensor subclass and no tensor is float16/bfloat16/narrow-int; else layered itself.

    skip: how many leading arguments are written into (held_args' skip: passed as they are, not densified).
    dense: the cuda backend's dense (None for writers: their operands are passed as held). Keyword tensors are
    held, never densified (as the layers do)."""
    def call(*args, **kwargs):
        held = None
        new = None
        for i, a in enumerate(args):
            if type(a) is Tensor:
                if a._dtype in _WIDENED:   # opmath widens it
                    return layered(*args, **kwargs)
                if i < skip:
                    continue
                if held is None:
                    held, new, first = {}, list(args), a.device
                h = held.get(id(a))
                if h is None:
                    h = _held(op, a, first)
                    held[id(a)] = h
                    held[id(h)] = a   # the way back for results
                new[i] = h if dense is None else dense(h)
            elif isinstance(a, (Tensor, tuple, list)):   # a subclass, or tensors inside a list: the layers
                return layered(*args, **kwargs)
        if kwargs:
            kw = None
            for k, a in kwargs.items():
                if type(a) is Tensor:
                    if a._dtype in _WIDENED:
                        return layered(*args, **kwargs)
                    if held is None:
                        held, first = {}, a.device
                    h = held.get(id(a))
                    if h is None:
                        h = _held(op, a, first)
                        held[id(a)] = h
                        held[id(h)] = a
                    if kw is None:
                        kw = dict(kwargs)
                    kw[k] = h
                elif isinstance(a, (Tensor, tuple, list)):
                    return layered(*args, **kwargs)
            if kw is not None:
                kwargs = kw
        if held is None:
            return fn(*args, **kwargs)
        r = fn(*(args if new is None else new), **kwargs)
        if isinstance(r, Tensor):
            return _back(r, held)
        if isinstance(r, tuple) and not hasattr(r, "_fields"):
            return tuple([_back(v, held) if isinstance(v, Tensor) else v for v in r])
        return r
    call.__name__, call.__doc__ = getattr(fn, "__name__", op), fn.__doc__
    return call
