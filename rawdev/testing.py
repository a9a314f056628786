"""rawdev.testing: torch.testing's assert_close and make_tensor, for tests written against PyTorch.

assert_close compares tensors (any device: values are read back), numbers, and sequences or mappings of them,
with PyTorch's default tolerances per dtype and its failure messages ("Tensor-likes are not close!" with the
mismatch count and the greatest absolute and relative differences and where)."""
import collections.abc
import math

import numpy as np

from . import dtypes as _dt
from .tensor.core import Tensor

__all__ = ["assert_close", "make_tensor", "assert_allclose"]

# (rtol, atol) by dtype: PyTorch's defaults
_TOL = {_dt.float16: (1e-3, 1e-5), _dt.bfloat16: (1.6e-2, 1e-5), _dt.float32: (1.3e-6, 1e-5),
        _dt.float64: (1e-7, 1e-7)}


def _fail(msg, extra):
    raise AssertionError(msg if extra is None else (extra(msg) if callable(extra) else extra))


def _tensor_like(x):
    return isinstance(x, (Tensor, np.ndarray))


def _values(t):
    if isinstance(t, Tensor):
        return t.detach().cpu().to(dtype=_dt.float64 if t.dtype.is_floating_point else t.dtype).numpy()
    return np.asarray(t)


def _compare_tensors(actual, expected, rtol, atol, equal_nan, check_device, check_dtype, msg):
    if isinstance(actual, Tensor) and isinstance(expected, Tensor):
        if tuple(actual.shape) != tuple(expected.shape):
            _fail(f"The values for attribute 'shape' do not match: {actual.shape} != {expected.shape}.", msg)
        if check_device and actual.device != expected.device:
            _fail(f"The values for attribute 'device' do not match: {actual.device} != {expected.device}.", msg)
        if check_dtype and actual.dtype is not expected.dtype:
            _fail(f"The values for attribute 'dtype' do not match: {actual.dtype} != {expected.dtype}.", msg)
        dt = actual.dtype
    else:
        dt = actual.dtype if isinstance(actual, Tensor) else getattr(expected, "dtype", None)
    default = _TOL.get(dt, (0.0, 0.0)) if isinstance(dt, _dt.dtype) else (1.3e-6, 1e-5)
    if isinstance(actual, Tensor) and isinstance(expected, Tensor) and actual.dtype is not expected.dtype:
        ra, aa = _TOL.get(actual.dtype, (0.0, 0.0))
        rb, ab = _TOL.get(expected.dtype, (0.0, 0.0))
        default = (max(ra, rb), max(aa, ab))
    rtol = default[0] if rtol is None else rtol
    atol = default[1] if atol is None else atol
    a, e = _values(actual), _values(expected)
    if a.shape != e.shape:
        _fail(f"The values for attribute 'shape' do not match: {a.shape} != {e.shape}.", msg)
    if a.dtype == np.bool_ or e.dtype == np.bool_:
        bad = a != e
        diff = bad.astype(np.float64)
    else:
        af, ef = a.astype(np.float64), e.astype(np.float64)
        with np.errstate(invalid="ignore", over="ignore"):
            diff = np.abs(af - ef)
            close = diff <= atol + rtol * np.abs(ef)
            close |= af == ef                                          # equal infinities
            if equal_nan:
                close |= np.isnan(af) & np.isnan(ef)
        bad = ~close
    if not bad.any():
        return
    exact = rtol == 0 and atol == 0
    total = bad.size
    lines = [f"Tensor-likes are not {'equal' if exact else 'close'}!", "",
             f"Mismatched elements: {int(bad.sum())} / {total} ({100.0 * bad.sum() / total:.1f}%)"]
    if a.dtype != np.bool_:
        af, ef = a.astype(np.float64), e.astype(np.float64)
        with np.errstate(invalid="ignore", divide="ignore"):
            absd = np.where(bad, np.abs(af - ef), -1.0)
            reld = np.where(bad, np.abs(af - ef) / np.abs(ef), -1.0)
        absd = np.nan_to_num(absd, nan=math.inf)
        reld = np.nan_to_num(reld, nan=math.inf)
        ia, ir = np.unravel_index(np.argmax(absd), a.shape), np.unravel_index(np.argmax(reld), a.shape)

        def fmt(v):
            v = float(v)
            return str(int(v)) if v.is_integer() and abs(v) < 1e15 else repr(v)
        where_a = f" at index {tuple(int(i) for i in ia)}" if a.ndim else ""
        where_r = f" at index {tuple(int(i) for i in ir)}" if a.ndim else ""
        allow_a = "" if exact else f" (up to {atol:g} allowed)"
        allow_r = "" if exact else f" (up to {rtol:g} allowed)"
        lines.append(f"Greatest absolute difference: {fmt(absd[ia])}{where_a}{allow_a}")
        lines.append(f"Greatest relative difference: {fmt(reld[ir])}{where_r}{allow_r}")
    _fail("\n".join(lines), msg)


def assert_close(actual, expected, *, allow_subclasses=True, rtol=None, atol=None, equal_nan=False,
                 check_device=True, check_dtype=True, check_layout=True, check_stride=False, msg=None):
    """Raise AssertionError unless actual and expected are close: |actual − expected| ≤ atol + rtol·|expected|
    elementwise, with equal shapes, devices and dtypes (each check can be turned off). Sequences and mappings are
    compared element by element.

    Args:
        actual, expected: tensors, numbers, or (nested) sequences/mappings of them.
        rtol, atol: give both or neither; by default PyTorch's per-dtype values (float32: 1.3e-6, 1e-5).
        equal_nan: whether NaN equals NaN.
        msg: a message (or a function of the default one) to raise instead.

    Example:
        >>> torch.testing.assert_close(torch.tensor([1., 2.]), torch.tensor([1., 2.000001]))
    """
    if (rtol is None) != (atol is None):
        missing = "rtol" if rtol is None else "atol"
        raise ValueError(f"Both 'rtol' and 'atol' must be either specified or omitted, but got no {missing}.")
    if _tensor_like(actual) or _tensor_like(expected):
        if not (_tensor_like(actual) and _tensor_like(expected)):
            if isinstance(actual, (int, float, bool)) or isinstance(expected, (int, float, bool)):
                pass
            else:
                _fail(f"Comparing\n\n{type(actual).__name__}\n{type(expected).__name__}\n\nis not supported.", msg)
        _compare_tensors(actual, expected, rtol, atol, equal_nan, check_device, check_dtype, msg)
        return
    if isinstance(actual, collections.abc.Mapping) and isinstance(expected, collections.abc.Mapping):
        if set(actual) != set(expected):
            _fail(f"The keys of the mappings do not match:\n{sorted(map(str, actual))}\n{sorted(map(str, expected))}",
                  msg)
        for k in actual:
            assert_close(actual[k], expected[k], rtol=rtol, atol=atol, equal_nan=equal_nan, check_device=check_device,
                         check_dtype=check_dtype, msg=msg)
        return
    if isinstance(actual, collections.abc.Sequence) and not isinstance(actual, str) and \
            isinstance(expected, collections.abc.Sequence) and not isinstance(expected, str):
        if len(actual) != len(expected):
            _fail(f"The length of the sequences mismatch: {len(actual)} != {len(expected)}", msg)
        for x, y in zip(actual, expected):
            assert_close(x, y, rtol=rtol, atol=atol, equal_nan=equal_nan, check_device=check_device,
                         check_dtype=check_dtype, msg=msg)
        return
    if isinstance(actual, (int, float, bool)) and isinstance(expected, (int, float, bool)):
        if check_dtype and type(actual) is not type(expected):
            _fail(f"The values for attribute 'dtype' do not match: {type(actual)} != {type(expected)}.", msg)
        floats = isinstance(actual, float) or isinstance(expected, float)
        r, a = (rtol, atol) if rtol is not None else ((1e-7, 1e-7) if floats else (0.0, 0.0))   # float64's
        if actual == expected or (equal_nan and math.isnan(actual) and math.isnan(expected)):
            return
        if floats and abs(actual - expected) <= a + r * abs(expected):
            return
        _fail(f"Scalars are not {'close' if floats else 'equal'}!\n\nExpected {expected} but got {actual}.\n"
              f"Absolute difference: {abs(actual - expected)} (up to {a} allowed)\n"
              f"Relative difference: {abs(actual - expected) / abs(expected) if expected else math.inf} "
              f"(up to {r} allowed)", msg)
        return
    if actual != expected:
        _fail(f"Comparing\n\n{actual!r}\n{expected!r}\n\nis not supported.", msg)


def assert_allclose(actual, expected, rtol=None, atol=None, equal_nan=True, msg=""):
    """The deprecated torch.testing.assert_allclose: assert_close without the dtype and device checks."""
    from .tensor.factory import tensor
    a = actual if isinstance(actual, Tensor) else tensor(actual)
    e = expected if isinstance(expected, Tensor) else tensor(expected, dtype=a.dtype)
    assert_close(a, e, rtol=rtol, atol=atol, equal_nan=equal_nan, check_device=False, check_dtype=False,
                 msg=msg or None)


def make_tensor(*shape, dtype, device, low=None, high=None, requires_grad=False, noncontiguous=False,
                exclude_zero=False, memory_format=None):
    """A tensor of the given shape filled with uniform values in [low, high) (defaults: [-9, 9) for floats and
    signed integers, [0, 10) for unsigned, {False, True} for bool); noncontiguous gives a strided view of the same
    values; exclude_zero replaces zeros with the dtype's smallest positive step.

    Example:
        >>> torch.testing.make_tensor(2, 3, dtype=torch.float32, device="cpu").shape
        torch.Size([2, 3])
    """
    from .random import default_generator
    from .tensor.factory import tensor
    if len(shape) == 1 and isinstance(shape[0], (tuple, list)):
        shape = tuple(shape[0])
    rng = default_generator.np                    # the cpu generator: manual_seed makes the values repeat
    if dtype is _dt.bool:
        vals = rng.integers(0, 2, shape).astype(bool)
    elif dtype.is_floating_point:
        lo = -9.0 if low is None else float(low)
        hi = 9.0 if high is None else float(high)
        vals = rng.uniform(lo, hi, shape)
        if exclude_zero:
            vals[vals == 0] = np.finfo(np.float32).tiny if dtype is not _dt.float64 else np.finfo(np.float64).tiny
    else:
        lo = (0 if dtype is _dt.uint8 else -9) if low is None else int(math.ceil(low))
        hi = (10 if dtype is _dt.uint8 else 10) if high is None else int(math.ceil(high))
        vals = rng.integers(lo, hi, shape)
        if exclude_zero:
            vals[vals == 0] = 1
    t = tensor(vals, dtype=dtype, device=device)
    if noncontiguous and t.numel() > 1:
        from .ops.join import stack
        t = stack([t, t], -1)[..., 0]
    if requires_grad:
        t.requires_grad_(True)
    return t
