"""Symbolic functions of rawdev's ops: each emits the ONNX nodes that compute the op from its arguments' value
names. A symbolic takes (tracer, out, *args, **kwargs) — the op's own arguments, so the function form and the
method form (`rawdev.add(x, y)` and `x.add(y)`) share one — and returns the value name of each output tensor.
Shapes are read from the traced tensors only where ONNX needs a number (an axis, a kernel); sizes that follow
the input (a batch dim) are left to the runtime so dynamic axes stay dynamic."""
import numpy as np

__all__ = ["canonical", "lookup", "SYMBOLIC"]

INT64_MAX = np.iinfo(np.int64).max
SYMBOLIC: dict = {}

# operator methods: (the op they are, whether their operands come swapped)
_DUNDER = {"__add__": "add", "__radd__": "radd", "__iadd__": "add_", "__sub__": "sub", "__rsub__": "rsub",
           "__isub__": "sub_", "__mul__": "mul", "__rmul__": "radd_mul", "__imul__": "mul_", "__truediv__": "div",
           "__rtruediv__": "rdiv", "__itruediv__": "div_", "__matmul__": "matmul", "__rmatmul__": "rmatmul",
           "__neg__": "neg", "__pos__": "positive", "__abs__": "abs", "__pow__": "pow", "__rpow__": "rpow",
           "__getitem__": "getitem", "__eq__": "eq", "__ne__": "ne", "__lt__": "lt", "__le__": "le", "__gt__": "gt",
           "__ge__": "ge", "__invert__": "logical_not", "__and__": "logical_and", "__or__": "logical_or",
           "__setitem__": "setitem"}
_ALIAS = {"multiply": "mul", "subtract": "sub", "divide": "div", "true_divide": "div", "mm": "matmul",
          "bmm": "matmul", "negative": "neg", "clip": "clamp", "concat": "cat", "concatenate": "cat",
          "swapaxes": "transpose", "swapdims": "transpose", "absolute": "abs", "greater": "gt", "less": "lt",
          "greater_equal": "ge", "less_equal": "le", "not_equal": "ne", "arctan": "atan", "special_erf": "erf",
          "dropout1d": "dropout", "dropout2d": "dropout", "dropout3d": "dropout", "alpha_dropout": "dropout",
          "feature_alpha_dropout": "dropout", "view": "reshape", "conv1d": "conv", "conv2d": "conv",
          "conv3d": "conv", "max_pool1d": "max_pool", "max_pool2d": "max_pool", "max_pool3d": "max_pool",
          "avg_pool1d": "avg_pool", "avg_pool2d": "avg_pool", "avg_pool3d": "avg_pool", "float": "cast_float",
          "double": "cast_double", "half": "cast_half", "long": "cast_long", "int": "cast_int", "bool": "cast_bool"}


def canonical(name):
    """The op a public name calls: __add__ -> add, multiply -> mul, relu_ -> relu_ (in-place kept)."""
    name = _DUNDER.get(name, name)
    base, inplace = (name[:-1], True) if name.endswith("_") and not name.endswith("__") else (name, False)
    base = _ALIAS.get(base, base)
    return base + ("_" if inplace else "")


def lookup(canon):
    """(symbolic or None, in place?) for a canonical op name."""
    if canon.endswith("_"):
        return SYMBOLIC.get(canon[:-1]), True
    return SYMBOLIC.get(canon), False


def sym(*names):
    def deco(f):
        for n in names:
            SYMBOLIC[n] = f
        return f
    return deco


# ------------------------------------------------------------------ helpers
def _npdt(t):
    from .. import dtypes
    if t.dtype is dtypes.bfloat16:
        raise NotImplementedError("rawdev.onnx.export: bfloat16 tensors are not exported (cast the model to "
                                  "float32 or float16 first)")
    return np.dtype(t.dtype.storage)


def _as(tr, x, out):
    """x's value name in out's dtype (a number becomes a constant of that dtype; a tensor of another dtype is
    cast)."""
    from ..tensor import Tensor
    if not isinstance(x, Tensor):
        return tr.v(np.asarray(x, dtype=_npdt(out)))
    name = tr.v(x)
    if x.dtype is not out.dtype:
        from .graph import elem_type
        name = tr.graph.node("Cast", [name], to=elem_type(_npdt(out)))
    return name


def _dim(d, n):
    return d + n if d < 0 else d


def _dims(dim, n):
    if dim is None:
        return list(range(n))
    if isinstance(dim, int):
        return [_dim(dim, n)]
    return [_dim(int(d), n) for d in dim]


def _sizes(shape):
    if len(shape) == 1 and isinstance(shape[0], (tuple, list)):
        return [int(s) for s in shape[0]]
    return [int(s) for s in shape]


def _reduce(tr, op, x, axes, keepdim):
    """A Reduce* node (axes as an input from opset 18, ReduceSum from 13)."""
    g = tr.graph
    if op == "ReduceSum" or g.opset >= 18:
        return g.node(op, [x, g.ints(axes)], keepdims=int(keepdim))
    return g.node(op, [x], axes=list(axes), keepdims=int(keepdim))


# ------------------------------------------------------------------ elementwise
def _binary(op):
    def f(tr, out, input, other, *, alpha=1, **_):  # noqa: A002
        a = _as(tr, input, out)
        b = _as(tr, other, out)
        if alpha != 1:
            b = tr.graph.node("Mul", [b, tr.v(np.asarray(alpha, dtype=_npdt(out)))])
        return tr.graph.node(op, [a, b])
    return f


SYMBOLIC["add"] = _binary("Add")
SYMBOLIC["sub"] = _binary("Sub")
SYMBOLIC["mul"] = SYMBOLIC["radd_mul"] = _binary("Mul")
SYMBOLIC["maximum"] = _binary("Max")
SYMBOLIC["minimum"] = _binary("Min")


@sym("radd")
def _radd(tr, out, input, other):  # noqa: A002
    return tr.graph.node("Add", [_as(tr, other, out), _as(tr, input, out)])


@sym("rsub")
def _rsub(tr, out, input, other, *, alpha=1):  # noqa: A002
    return SYMBOLIC["sub"](tr, out, other, input, alpha=alpha) if alpha == 1 else \
        tr.graph.node("Sub", [_as(tr, other, out), tr.graph.node("Mul", [_as(tr, input, out),
                                                                        _as(tr, alpha, out)])])


@sym("div")
def _div(tr, out, input, other, *, rounding_mode=None):  # noqa: A002
    g = tr.graph
    if rounding_mode not in (None, "floor", "trunc"):
        raise ValueError(f"div expected rounding_mode to be one of None, 'trunc', or 'floor' but found "
                         f"'{rounding_mode}'")
    q = g.node("Div", [_as(tr, input, out), _as(tr, other, out)])
    if rounding_mode is None or not out.dtype.is_floating_point:
        return q
    return g.node("Floor", [q]) if rounding_mode == "floor" else _trunc(g, q)


def _trunc(g, q):
    return g.node("Mul", [g.node("Sign", [q]), g.node("Floor", [g.node("Abs", [q])])])


@sym("rdiv")
def _rdiv(tr, out, input, other):  # noqa: A002
    return tr.graph.node("Div", [_as(tr, other, out), _as(tr, input, out)])


@sym("pow")
def _pow(tr, out, input, exponent):  # noqa: A002
    return tr.graph.node("Pow", [_as(tr, input, out), _as(tr, exponent, out)])


@sym("rpow")
def _rpow(tr, out, input, other):  # noqa: A002
    return tr.graph.node("Pow", [_as(tr, other, out), _as(tr, input, out)])


@sym("matmul")
def _matmul(tr, out, input, other):  # noqa: A002
    return tr.graph.node("MatMul", [_as(tr, input, out), _as(tr, other, out)])


@sym("rmatmul")
def _rmatmul(tr, out, input, other):  # noqa: A002
    return tr.graph.node("MatMul", [_as(tr, other, out), _as(tr, input, out)])


def _compare(op, negate=False):
    def f(tr, out, input, other):  # noqa: A002
        from ..tensor import Tensor
        like = input if isinstance(input, Tensor) else other
        r = tr.graph.node(op, [_as(tr, input, like), _as(tr, other, like)])
        return tr.graph.node("Not", [r]) if negate else r
    return f


for _n, _op, _neg in (("eq", "Equal", False), ("ne", "Equal", True), ("lt", "Less", False),
                      ("le", "LessOrEqual", False), ("gt", "Greater", False), ("ge", "GreaterOrEqual", False)):
    SYMBOLIC[_n] = _compare(_op, _neg)


def _unary(op):
    def f(tr, out, input, *args, **kwargs):  # noqa: A002
        return tr.graph.node(op, [_as(tr, input, out)])
    return f


for _n, _op in (("neg", "Neg"), ("relu", "Relu"), ("sigmoid", "Sigmoid"), ("tanh", "Tanh"), ("exp", "Exp"),
                ("log", "Log"), ("sqrt", "Sqrt"), ("abs", "Abs"), ("sin", "Sin"), ("cos", "Cos"), ("erf", "Erf"),
                ("reciprocal", "Reciprocal"), ("floor", "Floor"), ("ceil", "Ceil"), ("sign", "Sign"),
                ("atan", "Atan"), ("round", "Round"), ("logical_not", "Not"), ("softsign", "Softsign")):
    SYMBOLIC[_n] = _unary(_op)


@sym("positive", "contiguous", "clone", "detach", "cpu", "cuda")
def _identity(tr, out, input, *args, **kwargs):  # noqa: A002
    return tr.graph.node("Identity", [tr.v(input)])


@sym("to", "type_as")
def _to(tr, out, input, *args, **kwargs):  # noqa: A002
    return tr.graph.node("Identity", [_as(tr, input, out)])


for _n in ("cast_float", "cast_double", "cast_half", "cast_long", "cast_int", "cast_bool"):
    SYMBOLIC[_n] = _to


@sym("rsqrt")
def _rsqrt(tr, out, input):  # noqa: A002
    return tr.graph.node("Reciprocal", [tr.graph.node("Sqrt", [_as(tr, input, out)])])


@sym("silu")
def _silu(tr, out, input, inplace=False):  # noqa: A002
    x = _as(tr, input, out)
    return tr.graph.node("Mul", [x, tr.graph.node("Sigmoid", [x])])


@sym("gelu")
def _gelu(tr, out, input, approximate="none"):  # noqa: A002
    g, x = tr.graph, _as(tr, input, out)
    if g.opset >= 20:
        return g.node("Gelu", [x], approximate=approximate)

    def c(v):
        return tr.v(np.asarray(v, dtype=_npdt(out)))
    if approximate == "tanh":     # 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)))
        inner = g.node("Mul", [c(np.sqrt(2 / np.pi)), g.node("Add", [x, g.node("Mul", [c(0.044715), g.node(
            "Mul", [x, g.node("Mul", [x, x])])])])])
        return g.node("Mul", [g.node("Mul", [x, c(0.5)]), g.node("Add", [c(1.0), g.node("Tanh", [inner])])])
    erf = g.node("Erf", [g.node("Div", [x, c(np.sqrt(2.0))])])
    return g.node("Mul", [g.node("Mul", [x, c(0.5)]), g.node("Add", [c(1.0), erf])])


@sym("leaky_relu")
def _leaky_relu(tr, out, input, negative_slope=0.01, inplace=False):  # noqa: A002
    return tr.graph.node("LeakyRelu", [_as(tr, input, out)], alpha=float(negative_slope))


@sym("elu")
def _elu(tr, out, input, alpha=1.0, inplace=False):  # noqa: A002
    return tr.graph.node("Elu", [_as(tr, input, out)], alpha=float(alpha))


@sym("softplus")
def _softplus(tr, out, input, beta=1.0, threshold=20.0):  # noqa: A002
    if beta != 1:
        raise NotImplementedError("rawdev.onnx.export: softplus with beta != 1")
    return tr.graph.node("Softplus", [_as(tr, input, out)])


@sym("clamp")
def _clamp(tr, out, input, min=None, max=None):  # noqa: A002
    return tr.graph.node("Clip", [_as(tr, input, out), "" if min is None else _as(tr, min, out),
                                  "" if max is None else _as(tr, max, out)])


@sym("relu6")
def _relu6(tr, out, input, inplace=False):  # noqa: A002
    return _clamp(tr, out, input, 0.0, 6.0)


@sym("hardtanh")
def _hardtanh(tr, out, input, min_val=-1.0, max_val=1.0, inplace=False):  # noqa: A002
    return _clamp(tr, out, input, min_val, max_val)


@sym("where")
def _where(tr, out, condition, input=None, other=None):  # noqa: A002
    if input is None:
        raise NotImplementedError("rawdev.onnx.export: where(condition) (nonzero)")
    return tr.graph.node("Where", [tr.v(condition), _as(tr, input, out), _as(tr, other, out)])


@sym("masked_fill")
def _masked_fill(tr, out, input, mask, value):  # noqa: A002
    return tr.graph.node("Where", [tr.v(mask), _as(tr, value, out), _as(tr, input, out)])


# ------------------------------------------------------------------ softmax, dropout
@sym("softmax")
def _softmax(tr, out, input, dim=None, _stacklevel=3, dtype=None):  # noqa: A002
    return tr.graph.node("Softmax", [_as(tr, input, out)], axis=int(dim))


@sym("log_softmax")
def _log_softmax(tr, out, input, dim=None, _stacklevel=3, dtype=None):  # noqa: A002
    return tr.graph.node("LogSoftmax", [_as(tr, input, out)], axis=int(dim))


@sym("dropout")
def _dropout(tr, out, input, p=0.5, training=True, inplace=False, *args, **kwargs):  # noqa: A002
    if training and p > 0:
        raise NotImplementedError("rawdev.onnx.export: dropout with training=True is not exported (pass "
                                  "training=self.training, or export the model in eval mode)")
    return tr.graph.node("Identity", [tr.v(input)])


# ------------------------------------------------------------------ shapes
@sym("reshape")
def _reshape(tr, out, input, *shape):  # noqa: A002
    """Dims equal to the input's at the same position become 0 (ONNX: copy the input's), so a view that keeps
    the batch dim (x.view(x.size(0), -1)) follows a dynamic batch."""
    want = _sizes(shape)
    have = list(input.shape)
    spec = [0 if i < len(have) and s == have[i] and s > 0 else s for i, s in enumerate(want)]
    return tr.graph.node("Reshape", [tr.v(input), tr.graph.ints(spec)])


@sym("reshape_as", "view_as")
def _reshape_as(tr, out, input, other):  # noqa: A002
    return tr.graph.node("Reshape", [tr.v(input), tr.graph.node("Shape", [tr.v(other)])])


@sym("flatten")
def _flatten(tr, out, input, start_dim=0, end_dim=-1):  # noqa: A002
    n = max(input.ndim, 1)
    s, e = _dim(start_dim, n), _dim(end_dim, n)
    if s == 1 and e == n - 1:
        return tr.graph.node("Flatten", [tr.v(input)], axis=1)
    spec = [0] * s + [-1] + [int(d) for d in input.shape[e + 1:]]
    return tr.graph.node("Reshape", [tr.v(input), tr.graph.ints(spec)])


@sym("transpose")
def _transpose(tr, out, input, dim0, dim1):  # noqa: A002
    n = input.ndim
    perm = list(range(n))
    a, b = _dim(dim0, n), _dim(dim1, n)
    perm[a], perm[b] = perm[b], perm[a]
    return tr.graph.node("Transpose", [tr.v(input)], perm=perm)


@sym("t")
def _t(tr, out, input):  # noqa: A002
    return tr.graph.node("Transpose", [tr.v(input)], perm=list(range(input.ndim))[::-1])


@sym("permute")
def _permute(tr, out, input, *dims):  # noqa: A002
    return tr.graph.node("Transpose", [tr.v(input)], perm=[_dim(d, input.ndim) for d in _sizes(dims)])


@sym("unsqueeze")
def _unsqueeze(tr, out, input, dim):  # noqa: A002
    return tr.graph.node("Unsqueeze", [tr.v(input), tr.graph.ints([_dim(dim, input.ndim + 1)])])


@sym("squeeze")
def _squeeze(tr, out, input, dim=None):  # noqa: A002
    if dim is None:
        axes = [i for i, s in enumerate(input.shape) if s == 1]
    else:
        axes = [d for d in _dims(dim, input.ndim) if input.shape[d] == 1]
    if not axes:
        return tr.graph.node("Identity", [tr.v(input)])
    return tr.graph.node("Squeeze", [tr.v(input), tr.graph.ints(axes)])


@sym("cat")
def _cat(tr, out, tensors, dim=0, **_):
    return tr.graph.node("Concat", [_as(tr, t, out) for t in tensors], axis=_dim(dim, out.ndim))


@sym("stack")
def _stack(tr, out, tensors, dim=0, **_):
    d = _dim(dim, out.ndim)
    parts = [tr.graph.node("Unsqueeze", [_as(tr, t, out), tr.graph.ints([d])]) for t in tensors]
    return tr.graph.node("Concat", parts, axis=d)


@sym("split")
def _split(tr, out, tensor, split_size_or_sections, dim=0):
    d = _dim(dim, tensor.ndim)
    sizes = [o.shape[d] for o in out]
    return tr.graph.node("Split", [tr.v(tensor), tr.graph.ints(sizes)], n_out=len(sizes), axis=d) \
        if len(sizes) > 1 else [tr.graph.node("Identity", [tr.v(tensor)])]


@sym("chunk")
def _chunk(tr, out, input, chunks, dim=0):  # noqa: A002
    return _split(tr, out, input, None, dim)


@sym("getitem")
def _getitem(tr, out, input, idx):  # noqa: A002
    """Basic indexing (ints, slices with positive steps, None, ...) as Slice / Squeeze / Unsqueeze, and one
    integer index tensor or list as Gather; slice bounds are kept as written (a default stop is 'to the end'),
    so x[:, -1] follows a dynamic length."""
    from ..tensor import Tensor
    g = tr.graph
    entries = list(idx) if isinstance(idx, tuple) else [idx]
    n_used = sum(1 for e in entries if e is not None and e is not Ellipsis)
    if Ellipsis in entries:
        k = entries.index(Ellipsis)
        entries = entries[:k] + [slice(None)] * (input.ndim - n_used) + entries[k + 1:]
    x = tr.v(input)
    starts, ends, axes, steps, squeeze, unsq, gathers = [], [], [], [], [], [], []
    d = 0       # the input dim an entry addresses
    od = 0      # the output dim (before the ints are squeezed) where new axes go
    for e in entries:
        if e is None:
            unsq.append(od)
            od += 1
            continue
        if isinstance(e, slice):
            if not (e.start is None and e.stop is None and e.step in (None, 1)):
                step = 1 if e.step is None else int(e.step)
                starts.append(0 if e.start is None else int(e.start))
                ends.append(INT64_MAX if e.stop is None else int(e.stop))
                axes.append(d)
                steps.append(step)
        elif isinstance(e, (int, np.integer)) or (isinstance(e, Tensor) and e.ndim == 0 and not
                                                   e.dtype.is_floating_point and not tr.traced(e)):
            k = int(e)
            starts.append(k)
            ends.append(INT64_MAX if k == -1 else k + 1)
            axes.append(d)
            steps.append(1)
            squeeze.append(d)
        elif isinstance(e, (Tensor, list, range, np.ndarray)) and not (isinstance(e, Tensor)
                                                                       and e.dtype.name == "bool"):
            gathers.append((d, e))
        else:
            raise NotImplementedError(f"rawdev.onnx.export: indexing with {type(e).__name__} (a mask or a "
                                      f"tensor of that kind) is not exported")
        d += 1
        od += 1
    if len(gathers) > 1 or (gathers and (unsq or squeeze)):
        raise NotImplementedError("rawdev.onnx.export: indexing with more than one index tensor, or an index "
                                  "tensor mixed with ints or None, is not exported")
    if axes:
        x = g.node("Slice", [x, g.ints(starts), g.ints(ends), g.ints(axes), g.ints(steps)])
    if gathers:
        gd, e = gathers[0]
        ix = tr.v(e) if isinstance(e, Tensor) else tr.v(np.asarray(list(e) if isinstance(e, range) else e,
                                                                  dtype=np.int64))
        x = g.node("Gather", [x, ix], axis=gd)
    if squeeze:
        x = g.node("Squeeze", [x, g.ints(squeeze)])
    if unsq:
        # the positions of the new axes counted after the squeeze of the int-indexed dims
        adj = [u - sum(1 for s in squeeze if s < u) for u in unsq]
        x = g.node("Unsqueeze", [x, g.ints(adj)])
    if x == tr.v(input):
        x = g.node("Identity", [x])
    return x


@sym("expand")
def _expand(tr, out, input, *sizes):  # noqa: A002
    want = _sizes(sizes)
    lead = len(want) - input.ndim
    spec = [1 if s == -1 or (i >= lead and input.shape[i - lead] == s) else s for i, s in enumerate(want)]
    return tr.graph.node("Expand", [tr.v(input), tr.graph.ints(spec)])


# ------------------------------------------------------------------ reductions
@sym("sum")
def _sum(tr, out, input, dim=None, keepdim=False, *, dtype=None, axis=None):  # noqa: A002
    return _reduce(tr, "ReduceSum", _as(tr, input, out), _dims(dim if axis is None else axis, input.ndim), keepdim)


@sym("mean")
def _mean(tr, out, input, dim=None, keepdim=False, *, dtype=None, axis=None):  # noqa: A002
    return _reduce(tr, "ReduceMean", _as(tr, input, out), _dims(dim if axis is None else axis, input.ndim), keepdim)


@sym("amax")
def _amax(tr, out, input, dim=(), keepdim=False):  # noqa: A002
    return _reduce(tr, "ReduceMax", tr.v(input), _dims(dim if dim != () else None, input.ndim), keepdim)


@sym("argmax")
def _argmax(tr, out, input, dim=None, keepdim=False):  # noqa: A002
    if dim is None:
        flat = tr.graph.node("Reshape", [tr.v(input), tr.graph.ints([-1])])
        return tr.graph.node("ArgMax", [flat], axis=0, keepdims=0)
    return tr.graph.node("ArgMax", [tr.v(input)], axis=_dim(dim, input.ndim), keepdims=int(keepdim))


def _max_min(op):
    def f(tr, out, input, dim=None, keepdim=False):  # noqa: A002
        from ..tensor import Tensor
        if isinstance(dim, Tensor):
            return tr.graph.node(op, [_as(tr, input, out), _as(tr, dim, out)])
        if dim is None:
            return _reduce(tr, "Reduce" + op, tr.v(input), list(range(input.ndim)), False)
        d = _dim(dim, input.ndim)
        vals = _reduce(tr, "Reduce" + op, tr.v(input), [d], keepdim)
        idx = tr.graph.node("ArgMax" if op == "Max" else "ArgMin", [tr.v(input)], axis=d, keepdims=int(keepdim))
        return [vals, idx]
    return f


SYMBOLIC["max"] = _max_min("Max")
SYMBOLIC["min"] = _max_min("Min")


# ------------------------------------------------------------------ nn.functional
@sym("linear")
def _linear(tr, out, input, weight, bias=None):  # noqa: A002
    g = tr.graph
    if input.ndim == 2:
        return g.node("Gemm", [tr.v(input), tr.v(weight)] + ([tr.v(bias)] if bias is not None else []), transB=1)
    y = g.node("MatMul", [tr.v(input), g.node("Transpose", [tr.v(weight)], perm=[1, 0])])
    return g.node("Add", [y, tr.v(bias)]) if bias is not None else y


def _tuple(v, n):
    return [int(a) for a in v] if isinstance(v, (tuple, list)) else [int(v)] * n


@sym("conv")
def _conv(tr, out, input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1):  # noqa: A002
    n = weight.ndim - 2
    k = list(weight.shape[2:])
    dil = _tuple(dilation, n)
    if isinstance(padding, str):
        if padding == "valid":
            pads = [0] * n * 2
        else:       # 'same': PyTorch pads the extra element at the end
            total = [d * (kk - 1) for d, kk in zip(dil, k)]
            pads = [t // 2 for t in total] + [t - t // 2 for t in total]
    else:
        p = _tuple(padding, n)
        pads = p + p
    ins = [tr.v(input), tr.v(weight)] + ([tr.v(bias)] if bias is not None else [])
    return tr.graph.node("Conv", ins, kernel_shape=k, strides=_tuple(stride, n), pads=pads, dilations=dil,
                         group=int(groups))


@sym("max_pool")
def _max_pool(tr, out, input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False,  # noqa: A002
              return_indices=False):
    if return_indices:
        raise NotImplementedError("rawdev.onnx.export: max_pool with return_indices=True")
    n = out.ndim - 2
    k = _tuple(kernel_size, n)
    s = k if stride is None or stride == [] else _tuple(stride, n)
    p = _tuple(padding, n)
    return tr.graph.node("MaxPool", [tr.v(input)], kernel_shape=k, strides=s, pads=p + p,
                         dilations=_tuple(dilation, n), ceil_mode=int(ceil_mode))


@sym("avg_pool")
def _avg_pool(tr, out, input, kernel_size, stride=None, padding=0, ceil_mode=False,  # noqa: A002
              count_include_pad=True, divisor_override=None):
    if divisor_override is not None:
        raise NotImplementedError("rawdev.onnx.export: avg_pool with divisor_override")
    n = out.ndim - 2
    k = _tuple(kernel_size, n)
    s = k if stride is None or stride == [] else _tuple(stride, n)
    p = _tuple(padding, n)
    return tr.graph.node("AveragePool", [tr.v(input)], kernel_shape=k, strides=s, pads=p + p,
                         ceil_mode=int(ceil_mode), count_include_pad=int(count_include_pad))


def _adaptive(op, global_op):
    def f(tr, out, input, output_size, *a, **kw):  # noqa: A002
        n = out.ndim - 2
        ins = list(input.shape[-n:])
        outs = list(out.shape[-n:])
        if all(o == 1 for o in outs):
            return tr.graph.node(global_op, [tr.v(input)])
        if any(i % o for i, o in zip(ins, outs)):
            raise NotImplementedError(f"rawdev.onnx.export: adaptive pooling from {ins} to {outs} (sizes that do "
                                      f"not divide)")
        k = [i // o for i, o in zip(ins, outs)]
        extra = {} if op == "MaxPool" else {"count_include_pad": 0}
        return tr.graph.node(op, [tr.v(input)], kernel_shape=k, strides=k, **extra)
    return f


for _d in (1, 2, 3):
    SYMBOLIC[f"adaptive_avg_pool{_d}d"] = _adaptive("AveragePool", "GlobalAveragePool")
    SYMBOLIC[f"adaptive_max_pool{_d}d"] = _adaptive("MaxPool", "GlobalMaxPool")


@sym("layer_norm")
def _layer_norm(tr, out, input, normalized_shape, weight=None, bias=None, eps=1e-5):  # noqa: A002
    g = tr.graph
    k = len(normalized_shape) if isinstance(normalized_shape, (tuple, list)) else 1
    shape = list(input.shape[-k:])
    dt = _npdt(out)
    w = tr.v(weight) if weight is not None else tr.v(np.ones(shape, dt))
    b = tr.v(bias) if bias is not None else tr.v(np.zeros(shape, dt))
    if g.opset >= 17:
        return g.node("LayerNormalization", [tr.v(input), w, b], axis=-k, epsilon=float(eps))
    axes = list(range(-k, 0))
    x = tr.v(input)
    mu = _reduce(tr, "ReduceMean", x, axes, True)
    xc = g.node("Sub", [x, mu])
    var = _reduce(tr, "ReduceMean", g.node("Mul", [xc, xc]), axes, True)
    y = g.node("Div", [xc, g.node("Sqrt", [g.node("Add", [var, tr.v(np.asarray(eps, dt))])])])
    return g.node("Add", [g.node("Mul", [y, w]), b])


@sym("batch_norm")
def _batch_norm(tr, out, input, running_mean, running_var, weight=None, bias=None, training=False,  # noqa: A002
                momentum=0.1, eps=1e-5):
    if training or running_mean is None:
        raise NotImplementedError("rawdev.onnx.export: batch_norm in training mode (export the model in eval "
                                  "mode: its running statistics are what ONNX's BatchNormalization reads)")
    c = input.shape[1]
    dt = _npdt(out)
    w = tr.v(weight) if weight is not None else tr.v(np.ones(c, dt))
    b = tr.v(bias) if bias is not None else tr.v(np.zeros(c, dt))
    return tr.graph.node("BatchNormalization", [tr.v(input), w, b, tr.v(running_mean), tr.v(running_var)],
                         epsilon=float(eps))


@sym("embedding")
def _embedding(tr, out, input, weight, padding_idx=None, max_norm=None, *args, **kwargs):  # noqa: A002
    if max_norm is not None:
        raise NotImplementedError("rawdev.onnx.export: embedding with max_norm (it rewrites the weight)")
    return tr.graph.node("Gather", [tr.v(weight), tr.v(input)], axis=0)
