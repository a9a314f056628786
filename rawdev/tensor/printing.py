"""Tensor repr in PyTorch's layout: tensor([...], device='cuda:0', dtype=rawdev.float16, requires_grad=True).

The numbers follow torch/_tensor_str.py (its _Formatter), not numpy's printer: one width for every
element, floats with 4 decimals ("0.0000", "2.5000"), "1." style when every value is an integer, and
scientific notation when the magnitudes span more than 1000x, exceed 1e8 or (non-integers) go below
1e-4. numpy trims trailing zeros ("0.    ", "2.5"), which reads differently from every PyTorch log.
"""

import math

import numpy as np

from .. import dtypes as _dt

# dtypes PyTorch leaves out of the repr: the ones a literal implies (the default float dtype, int64, bool).
_IMPLIED = (_dt.int64, _dt.bool)

# PyTorch's default print options (rawdev.set_printoptions changes them).
_PRECISION, _THRESHOLD, _EDGEITEMS, _LINEWIDTH = 4, 1000, 3, 80
_SCI_MODE = None   # None: decided per tensor; True/False: forced


def set_printoptions(precision=None, threshold=None, edgeitems=None, linewidth=None, profile=None, sci_mode=None):
    """PyTorch's torch.set_printoptions: digits after the point, how many elements before summarizing, the
    edge items a summary shows, the line width; profile "default" | "short" | "full"; sci_mode forces (True /
    False) or lets rawdev decide (None) scientific notation."""
    global _PRECISION, _THRESHOLD, _EDGEITEMS, _LINEWIDTH, _SCI_MODE
    if profile is not None:
        _PRECISION, _THRESHOLD, _EDGEITEMS, _LINEWIDTH = {
            "default": (4, 1000, 3, 80), "short": (2, 1000, 2, 80), "full": (4, math.inf, 3, 80)}[profile]
    if precision is not None:
        _PRECISION = int(precision)
    if threshold is not None:
        _THRESHOLD = threshold
    if edgeitems is not None:
        _EDGEITEMS = int(edgeitems)
    if linewidth is not None:
        _LINEWIDTH = int(linewidth)
    _SCI_MODE = sci_mode


def tensor_repr(t, prefix="tensor("):
    suffixes = [f"device='{t.device}'"] if t.is_cuda else []   # first, as PyTorch: before an empty one's size
    empty = t.numel() == 0
    if empty and t.dim() != 1:   # no values to read (a cuda one may have a shape no host array can take)
        body = "[]"
        suffixes.append(f"size={tuple(t.shape)}")
    else:
        vals = t._values()
        if vals.dtype == np.float16:
            vals = vals.astype(np.float32)  # as PyTorch: half (and bfloat16, already float32) print as float
        body = _tensor_str(vals, len(prefix))
    default = _dt.get_default_dtype()
    if (t.dtype is not default and t.dtype not in _IMPLIED) or (empty and t.dtype is not default):
        suffixes.append(f"dtype={t.dtype!r}")
    if t.grad_fn is not None:
        suffixes.append(f"grad_fn=<{type(t.grad_fn).__name__}>")
    elif t.requires_grad:
        suffixes.append("requires_grad=True")
    return prefix + body + "".join(", " + s for s in suffixes) + ")"


def _tensor_str(vals, indent):
    summarize = vals.size > _THRESHOLD
    formatter = _Formatter(_summarized(vals) if summarize else vals)
    return _str_with_formatter(vals, indent, summarize, formatter)


def _summarized(a):
    """The elements a summarized print shows (first and last _EDGEITEMS along every axis)."""
    if a.ndim == 0:
        return a
    if a.ndim == 1:
        return np.concatenate([a[:_EDGEITEMS], a[-_EDGEITEMS:]]) if a.shape[0] > 2 * _EDGEITEMS else a
    rows = list(range(_EDGEITEMS)) + list(range(len(a) - _EDGEITEMS, len(a))) if a.shape[0] > 2 * _EDGEITEMS \
        else range(a.shape[0])
    return np.stack([_summarized(a[i]) for i in rows])


class _Formatter:
    """One width and one style (int / fixed / scientific) for all elements, as PyTorch decides them."""

    def __init__(self, a):
        self.floating = a.dtype.kind == "f"
        self.int_mode, self.sci_mode, self.max_width = True, False, 1
        if not self.floating:
            for v in a.reshape(-1).tolist():
                self.max_width = max(self.max_width, len(str(v)))
            return
        finite = a[np.isfinite(a) & (a != 0)]
        if finite.size == 0:
            return
        absv = np.abs(finite).astype(np.float64)
        lo, hi = absv.min(), absv.max()
        self.int_mode = bool(np.all(finite == np.ceil(finite)))
        values = finite.reshape(-1).tolist()
        if _SCI_MODE is not None:   # set_printoptions(sci_mode=...) overrides the choice below
            self.sci_mode = _SCI_MODE
            fmt = (lambda v: f"{v:.{_PRECISION}e}") if _SCI_MODE else (
                (lambda v: f"{v:.0f}.") if self.int_mode else (lambda v: f"{v:.{_PRECISION}f}"))
            self.max_width = max(self.max_width, max(len(fmt(v)) for v in values))
            return
        if self.int_mode:
            if hi / lo > 1000.0 or hi > 1.0e8:
                self.sci_mode = True
                widths = (len(f"{v:.{_PRECISION}e}") for v in values)
            else:
                widths = (len(f"{v:.0f}") + 1 for v in values)   # + 1: the trailing "."
        elif hi / lo > 1000.0 or hi > 1.0e8 or lo < 1.0e-4:
            self.sci_mode = True
            widths = (len(f"{v:.{_PRECISION}e}") for v in values)
        else:
            widths = (len(f"{v:.{_PRECISION}f}") for v in values)
        self.max_width = max(self.max_width, max(widths))

    def format(self, value):
        if self.floating:
            if self.sci_mode:
                ret = f"{value:{self.max_width}.{_PRECISION}e}"
            elif self.int_mode:
                ret = f"{value:.0f}"
                if not (math.isinf(value) or math.isnan(value)):
                    ret += "."
            else:
                ret = f"{value:.{_PRECISION}f}"
        else:
            ret = f"{value}"
        return (self.max_width - len(ret)) * " " + ret


def _vector_str(a, indent, summarize, formatter):
    per_line = max(1, int(math.floor((_LINEWIDTH - indent) / (formatter.max_width + 2))))
    if summarize and a.shape[0] > 2 * _EDGEITEMS:
        data = ([formatter.format(v) for v in a[:_EDGEITEMS].tolist()] + [" ..."]
                + [formatter.format(v) for v in a[-_EDGEITEMS:].tolist()])
    else:
        data = [formatter.format(v) for v in a.tolist()]
    lines = [", ".join(data[i:i + per_line]) for i in range(0, len(data), per_line)]
    return "[" + ("," + "\n" + " " * (indent + 1)).join(lines) + "]"


def _str_with_formatter(a, indent, summarize, formatter):
    if a.ndim == 0:
        return formatter.format(a.item())
    if a.ndim == 1:
        return _vector_str(a, indent, summarize, formatter)
    if summarize and a.shape[0] > 2 * _EDGEITEMS:
        slices = ([_str_with_formatter(a[i], indent + 1, summarize, formatter) for i in range(_EDGEITEMS)]
                  + ["..."]
                  + [_str_with_formatter(a[i], indent + 1, summarize, formatter)
                     for i in range(len(a) - _EDGEITEMS, len(a))])
    else:
        slices = [_str_with_formatter(a[i], indent + 1, summarize, formatter) for i in range(a.shape[0])]
    return "[" + ("," + "\n" * (a.ndim - 1) + " " * (indent + 1)).join(slices) + "]"
