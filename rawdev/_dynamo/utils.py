"""`torch._dynamo.utils`: the helper programs import from it, ``same`` (do two results match?)."""
from __future__ import annotations

import math
from typing import Any

__all__ = ["same"]


def same(ref: Any, res: Any, fp64_ref: Any = None, cos_similarity: bool = False, tol: float = 1e-4,
         equal_nan: bool = False, exact_dtype: bool = True, relax_numpy_equality: bool = False,
         ignore_non_fp: bool = False, log_error: Any = print) -> bool:
    """Whether res matches ref: tensors by value (allclose with rtol=atol=tol for floats, exact for the rest,
    dtypes equal when exact_dtype), and lists, tuples, dicts and numbers element by element, as PyTorch's
    accuracy checks compare a compiled run with an eager one.

    Args:
        ref: the reference result.
        res: the result to check.
        tol: the relative and absolute tolerance for floating-point values.
        equal_nan: NaNs at the same places count as equal.
        exact_dtype: tensors of different dtypes differ.
        cos_similarity: compare float tensors by cosine similarity (>= 0.99) instead.

    Returns:
        True when they match.
    """
    from ..tensor import Tensor
    kw = dict(fp64_ref=None, cos_similarity=cos_similarity, tol=tol, equal_nan=equal_nan, exact_dtype=exact_dtype,
              relax_numpy_equality=relax_numpy_equality, ignore_non_fp=ignore_non_fp, log_error=log_error)
    if isinstance(ref, (list, tuple)):
        if not isinstance(res, (list, tuple)) or len(ref) != len(res):
            log_error(f"Length mismatch: {type(ref).__name__} of {len(ref)} vs {type(res).__name__}")
            return False
        return all(same(a, b, **kw) for a, b in zip(ref, res))
    if isinstance(ref, dict):
        if not isinstance(res, dict) or set(ref) != set(res):
            log_error(f"keys mismatch {sorted(ref)} == {sorted(res) if isinstance(res, dict) else res}")
            return False
        return all(same(ref[k], res[k], **kw) for k in ref)
    if isinstance(ref, Tensor):
        if not isinstance(res, Tensor):
            log_error(f"expected a tensor, got {type(res).__name__}")
            return False
        if tuple(ref.shape) != tuple(res.shape):
            log_error(f"shape mismatch {tuple(ref.shape)} vs {tuple(res.shape)}")
            return False
        if exact_dtype and ref.dtype != res.dtype:
            log_error(f"dtype mismatch {ref.dtype}, {res.dtype}")
            return False
        import numpy as np
        a = np.asarray(ref.detach().cpu()._values(), dtype=np.float64) if ref.dtype.is_floating_point else \
            np.asarray(ref.detach().cpu()._values())
        b = np.asarray(res.detach().cpu()._values(), dtype=a.dtype)
        if not ref.dtype.is_floating_point:
            ok = bool(np.array_equal(a, b))
        elif cos_similarity:
            denom = float(np.linalg.norm(a) * np.linalg.norm(b))
            ok = denom == 0.0 and not a.any() and not b.any() or denom > 0 and float((a * b).sum()) / denom >= 0.99
        else:
            ok = bool(np.allclose(a, b, rtol=tol, atol=tol, equal_nan=equal_nan))
        if not ok:
            log_error(f"Accuracy failed: allclose not within tol={tol}")
        return ok
    if isinstance(ref, float) or isinstance(res, float):
        if math.isnan(ref) and math.isnan(res):
            return equal_nan
        return math.isclose(ref, res, rel_tol=tol, abs_tol=tol)
    if ref is None or isinstance(ref, (int, bool, str)):
        return bool(ref == res)
    if type(ref).__name__ in ("Size", "dtype", "device"):
        return bool(ref == res)
    raise RuntimeError(f"unsupported type: {type(ref).__name__}")
