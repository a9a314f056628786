"""Tensor repr in PyTorch's layout: tensor([...], device='cuda:0', dtype=rawdev.float16, requires_grad=True)."""

import numpy as np

from .. import dtypes as _dt

# dtypes PyTorch leaves out of the repr: the ones a literal implies (the default float dtype, int64, bool).
_IMPLIED = (_dt.int64, _dt.bool)


def tensor_repr(t, prefix="tensor("):
    vals = t._values()
    suffixes = []
    if vals.size == 0 and vals.ndim != 1:
        body = "[]"
        suffixes.append(f"size={tuple(t.shape)}")
    else:
        if vals.dtype == np.float16:
            vals = vals.astype(np.float32)  # numpy prints float16 with spurious digits
        with np.printoptions(precision=4, threshold=1000, edgeitems=3, linewidth=80, suppress=False):
            body = np.array2string(vals, separator=", ", prefix=prefix,
                                   formatter=_formatter(vals))
    if t.is_cuda:
        suffixes.append(f"device='{t.device}'")
    default = _dt.get_default_dtype()
    if (t.dtype is not default and t.dtype not in _IMPLIED) or (vals.size == 0 and t.dtype is not default):
        suffixes.append(f"dtype={t.dtype!r}")
    if t.grad_fn is not None:
        suffixes.append(f"grad_fn=<{type(t.grad_fn).__name__}>")
    elif t.requires_grad:
        suffixes.append("requires_grad=True")
    return prefix + body + "".join(", " + s for s in suffixes) + ")"


def _formatter(vals):
    if vals.dtype == np.bool_:
        return {"bool": lambda b: "True" if b else "False"}
    return None
