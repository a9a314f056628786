"""Compute dtypes on cuda: how float16/bfloat16 and the narrow integer dtypes reach kernels written for
float32 and int64.

The shipped math kernels compute in float32 (and a set of them in int64). PyTorch itself computes
half-precision elementwise math, reductions and losses in float32 ("opmath": load, widen, compute, round
the result once), so a float16/bfloat16 op on cuda here is: one cast kernel per 16-bit operand to float32,
the float32 kernel, one cast of each float32 result back to the operands' 16-bit dtype. The values are
PyTorch's (one rounding at the end); the cost is the extra cast launches and the float32 temporaries,
which tools/bench/elementwise.py measures. The functions listed below skip it. A dtype argument the caller
passes for the result (dt=...) is rewritten to float32 for the call; a caller that asks for float32 explicitly
keeps the float32 result (sum(x, dtype=float32) of a half tensor).

Integer tensors narrower than int64 (bool, uint8, int8, int16, int32) go to the int64 kernels, for the
functions in _INT_RESULTS only: there the table says which results are values (cast back to the narrow
dtype: a truncation, so uint8 250 + 10 wraps to 4 as PyTorch's does) and which are not (indices, masks,
counts stay int64/bool). Other functions see their operands unchanged and keep their own dtype errors.

A backend function with a `native_low` attribute computes some 16-bit cases itself: when
native_low(*args, **kwargs) is true for the call, its operands pass unchanged, with no float32 temporaries:
- cuda.gemm / bmm: bfloat16/float16 tensor-core kernels on sm_80+;
- the elementwise kernels (every unary op and its backward, add/sub/mul/div with broadcasting, scalar add/mul/
  neg/pow/1/x, exp/log, in-place add_/mul_): `<kernel>_f16` / `<kernel>_bf16` on operands all of one 16-bit
  dtype;
- sum/mean over any dims (float32 accumulation; the float32 result rounded once, or kept with dtype=float32),
  softmax/log_softmax forward and backward, dropout forward and backward;
- the normalization kernels (layer/rms/group/batch norm forward and backward, ops/normalization/cuda.py): 16-bit
  input and gradients, weight and bias of the input's dtype or float32, float32 statistics.
- scaled_dot_product_attention's forward and backward halves (ops/attention/cuda.py): q, k, v, output and gradients of
  one 16-bit dtype, float32 logsumexp and rowsum(dO*O); not the probabilities or a float mask's gradient.
Those kernels load 2 bytes, compute the float32 kernel's math and round once at the store, so their results
equal the widened ones bit for bit (tests/test_native_half_*.py). The optimizer steps pass through (below): SGD
and Adam/AdamW have `_f16`/`_bf16` kernels on the parameter's, gradient's and state's own storage, the others
take float32 only. Everything else (losses, comparisons, ...) is still widened here.

This module is the one place that decides it; rawdev.ops.dispatch applies `adapt` to every cuda backend
function the ops call.
"""
import functools

from .. import dtypes as _dt
from ..tensor.core import Tensor

__all__ = ["adapt", "retag", "LOW_FLOATS", "NARROW_INTS"]

LOW_FLOATS = frozenset({_dt.float16, _dt.bfloat16})
NARROW_INTS = frozenset({_dt.bool, _dt.uint8, _dt.int8, _dt.int16, _dt.int32})
_WIDENED = LOW_FLOATS | NARROW_INTS

# Functions that move bytes or convert dtypes themselves: no widening (it would be wasted, or wrong).
_PASSTHROUGH = frozenset({
    "cast", "can_cast", "copy_into", "dense", "clone", "empty", "full", "expand", "index_select", "index_copy_",
    "gather_dim", "linear_index", "where", "fill_where", "new_grad", "zeros_state", "alloc_states",
    "sgd_group", "adam_group", "rmsprop_group", "adagrad_group", "adadelta_group", "adamax_group",
    "nadam_group", "radam_group", "one_launch", "has_kernel", "set_poison", "cross_device_note", "int_cast",
})

# Functions that write their first argument in place: the destination is widened into a temporary,
# the function runs on it, and the rounded result is copied back into the destination.
_IN_PLACE = frozenset({"add_", "scale_", "index_add_", "scatter_dim_"})

# Results that stay float32 for 16-bit operands: the statistics a backward reads (PyTorch keeps them in
# float32 too: a log-sum-exp or a count in bfloat16 would lose the gradient's precision), and column sums the
# caller rounds once to the parameters' dtype (row_norm_bwd's weight and bias gradients).
_KEEP_F32 = {"cross_entropy": (1,), "sdpa_fwd": (1,), "sdpa_bwd_q": (1,), "row_norm": (1, 2),
             "row_norm_bwd": (1, 2), "group_norm_fwd": (1, 2), "bn_stats": (0, 1), "nll_fwd": ()}

# Narrow-integer handling: function -> which results are values of the operands' dtype. None: the single
# result is; a tuple: those positions of a tuple result; (): no result is (it stays int64 / bool).
_INT_RESULTS = {
    "add": None, "mul": None, "scale": None, "add_scalar": None, "rsub_scalar": None, "neg": None,
    "binary_i64": None, "scalar_i64": None, "binary_math": None, "clamp": None, "max_min": None,
    "int_unary": None, "elementwise": None, "add_": None, "scale_": None,
    "compare": (), "sum_dims": (), "arg_reduce": (0,),
}


def _tensors(args, kwargs):
    """The tensor arguments, also those inside a tuple or list argument (elementwise's operands)."""
    for a in (*args, *kwargs.values()):
        if isinstance(a, Tensor):
            yield a
        elif isinstance(a, (tuple, list)):
            yield from (t for t in a if isinstance(t, Tensor))


def _low_float(args, kwargs):
    for a in _tensors(args, kwargs):
        if a.dtype in LOW_FLOATS:
            return a.dtype
    return None


def _narrow_int(args, kwargs):
    """The narrow integer dtype the results take: the caller's result dtype argument when it passes one (int8 +
    int16 gives int16), else the operands' narrow dtype; None when a float operand is involved."""
    ts = list(_tensors(args, kwargs))
    narrow = [t.dtype for t in ts if t.dtype in NARROW_INTS]
    if not narrow or any(t.dtype.is_floating_point for t in ts):
        return None
    for a in (*args, *kwargs.values()):
        if isinstance(a, _dt.dtype) and a in NARROW_INTS:
            return a
    return narrow[0]


def _sole_buffer(t):
    """t's device buffer when t alone spans it (a kernel's fresh output), else None (a view, an arena's part)."""
    buf = t._buf
    if buf is not None and t._offset == 0 and getattr(buf, "nbytes", -1) == t.nbytes and hasattr(buf, "block"):
        return buf
    return None


def retag(t, owner):
    """Name t's device block (the memory tool's owner) when t alone holds it: a cast's fresh output.

    Args:
        t: a tensor on a cuda device.
        owner: the name the allocation table and memory summaries show for its block.

    Returns:
        None. A view or a part of an arena keeps its block's name.

    Example:
        >>> retag(y, "relu output")   # doctest: +SKIP
    """
    buf = _sole_buffer(t)
    if buf is not None:
        buf.owner = owner


def _widen(a, wide, cast, name=None):
    if isinstance(a, (tuple, list)) and any(isinstance(t, Tensor) for t in a):
        return type(a)(_widen(t, wide, cast, name) for t in a)
    if isinstance(a, Tensor) and a.dtype is not wide and (a.dtype in LOW_FLOATS or a.dtype in NARROW_INTS):
        w = cast(a, wide)
        if name is not None and w.is_cuda:
            retag(w, f"{name} {str(wide).split('.')[-1]} operand")
        return w
    if isinstance(a, _dt.dtype) and (a in LOW_FLOATS or a in NARROW_INTS):
        return wide
    return a


def _explicit_wide(args, kwargs, wide):
    return any(a is wide for a in (*args, *kwargs.values()))


def _narrow(box, wide, dt, cast, positions=None):
    """The result in box (a one-item list, emptied: the caller keeps no reference) with its float32 tensors
    rounded to dt; in a tuple, each float32 result is dropped as soon as its rounded copy exists."""
    r = box.pop()
    if isinstance(r, Tensor):
        if r.dtype is not wide:
            return r
        out = cast(r, dt)
        buf = _sole_buffer(r) if r.is_cuda else None
        if buf is not None:   # the rounded copy is the op's output: it takes the output's name
            owner = buf.owner
            buf.owner = f"{owner} ({str(wide).split('.')[-1]}, before rounding)"
            retag(out, owner)
        return out
    if isinstance(r, (tuple, list)):
        kind, out = type(r), list(r)
        del r
        for i in range(len(out)):
            if positions is None or i in positions:
                out[i] = _narrow([out[i]], wide, dt, cast)
        return kind(out) if not hasattr(kind, "_fields") else kind(*out)
    return r


def adapt(name, fn, cast, copy_into):
    """fn wrapped so float16/bfloat16 operands compute in float32 and narrow integers in int64 (see above).
    cast(t, dtype) converts on the device; copy_into(dst, src) writes a result back into a view."""
    if name in _PASSTHROUGH:
        return fn
    int_results = _INT_RESULTS.get(name, False)

    native_low = getattr(fn, "native_low", None)

    @functools.wraps(fn)
    def call(*args, **kwargs):
        # the common case in one pass: positional arguments only, no tensor of a widened dtype among them
        if not kwargs:
            for a in args:
                if type(a) is Tensor:
                    if a._dtype in _WIDENED:
                        break
                elif isinstance(a, (Tensor, tuple, list)):
                    break
            else:
                return fn(*args)
        low = _low_float(args, kwargs)
        if low is not None and native_low is not None and native_low(*args, **kwargs):
            return fn(*args, **kwargs)
        if low is not None:
            wide = _dt.float32
        else:
            low = _narrow_int(args, kwargs) if int_results is not False else None
            if low is None:
                return fn(*args, **kwargs)
            wide = _dt.int64
        keep_wide = _explicit_wide(args, kwargs, wide)
        wargs = [_widen(a, wide, cast, name) for a in args]
        wkw = {k: _widen(a, wide, cast, name) for k, a in kwargs.items()}
        if name in _IN_PLACE:
            dst = args[0]
            r = fn(*wargs, **wkw)
            copy_into(dst, cast(wargs[0], dst.dtype))   # the write back bumps dst's version: the op's one bump
            return dst if r is wargs[0] else r
        r = fn(*wargs, **wkw)
        # the widened copies die before the results are rounded: at the rounding, only the float32 results and
        # their 16-bit copies are alive, not also the float32 operands
        del wargs, wkw
        if keep_wide:
            return r
        if wide is _dt.float32:
            keep = _KEEP_F32.get(name, ())
            positions = tuple(i for i in range(len(r)) if i not in keep) if keep else None
        else:
            positions = int_results
        if positions == ():
            return r
        box = [r]
        del r
        return _narrow(box, wide, low, cast, positions)
    return call


def run(name, fn, *args, **kwargs):
    """fn(*args, **kwargs) with the widening above: for an op's cuda code that launches kernels itself."""
    from . import cuda
    from .held_args import hold_args
    # its tensor arguments are held like the backend's (a move in another thread cannot free them mid-call)
    return hold_args(name, adapt(name, fn, cuda.cast, cuda.copy_into), 0)(*args, **kwargs)
