"""One wrapper for the common call of a cuda backend function: positional arguments whose tensors are plain
Tensors of dtypes the kernels compute in. It does in one pass what the three layers the dispatcher stacks do
(held_args: each cuda tensor read once into a frozen alias; opmath: no widening needed; dispatch's dense: readers
get contiguous operands) and hands every other call to those layers unchanged, before doing anything itself.

Every op on the cuda path goes through here, so the pass is written for the interpreter: one loop, no
generator per argument, no keyword dict."""
from ..tensor.core import Tensor
from .held_args import _back, _held
from .opmath import _WIDENED


def fast_call(op, fn, skip, dense, layered):
    """fn (the cuda function, unwrapped) called as layered(*args, **kwargs) would call it, for positional arguments
    with no list/tuple/Tensor-subclass argument and no float16/bfloat16/narrow-int tensor; else layered itself.

    skip: how many leading arguments are written into (held_args' skip: passed as they are, not densified).
    dense: the cuda backend's dense (None for writers: their operands are passed as held)."""
    def call(*args, **kwargs):
        if kwargs:
            return layered(*args, **kwargs)
        held = None
        new = None
        for i, a in enumerate(args):
            if type(a) is Tensor:
                if a._dtype in _WIDENED:   # opmath widens it
                    return layered(*args)
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
                return layered(*args)
        if held is None:
            return fn(*args)
        r = fn(*new)
        if isinstance(r, Tensor):
            return _back(r, held)
        if isinstance(r, tuple) and not hasattr(r, "_fields"):
            return tuple([_back(v, held) if isinstance(v, Tensor) else v for v in r])
        return r
    call.__name__, call.__doc__ = getattr(fn, "__name__", op), fn.__doc__
    return call
