"""Process-wide settings PyTorch programs call: default device, deterministic algorithms, float32 matmul
precision, thread counts, and compile (rawdev runs eagerly); and torch's math constants."""
import logging
import math
import os
import warnings

from . import backends
from .device import as_device

__all__ = ["set_default_device", "get_default_device", "use_deterministic_algorithms",
           "are_deterministic_algorithms_enabled", "set_float32_matmul_precision", "get_float32_matmul_precision",
           "compile", "get_num_threads", "set_num_threads", "get_num_interop_threads", "set_num_interop_threads",
           "pi", "e", "inf", "nan", "newaxis", "typename"]

pi, e, inf, nan, newaxis = math.pi, math.e, math.inf, math.nan, None   # torch.pi, torch.inf, x[:, torch.newaxis]

_deterministic = False
_precision = "highest"


def set_default_device(device):
    """PyTorch's torch.set_default_device. rawdev's constructors make cpu tensors by default; "cpu" (or None)
    is accepted, another device is refused with how to do it instead."""
    if device is None or as_device(device).type == "cpu":
        return
    raise NotImplementedError(f"set_default_device({str(device)!r}): rawdev creates tensors on the cpu unless "
                              f"told otherwise; pass device= to the constructor or call .to({str(device)!r})")


def get_default_device():
    return as_device("cpu")


def use_deterministic_algorithms(mode, *, warn_only=False):
    """Recorded (are_deterministic_algorithms_enabled); rawdev's kernels are deterministic except the atomic
    scatter-adds of index_add_/embedding backward, whose float sums may differ in the last bit."""
    global _deterministic
    _deterministic = bool(mode)


def are_deterministic_algorithms_enabled():
    return _deterministic


def set_float32_matmul_precision(precision):
    """"highest" (default: exact float32 GEMMs), "high" or "medium" (TF32 allowed where rawdev has it)."""
    global _precision
    if precision not in ("highest", "high", "medium"):
        raise RuntimeError(f"Invalid precision: {precision}")
    _precision = precision
    backends.cuda.matmul.allow_tf32 = precision != "highest"


def get_float32_matmul_precision():
    return _precision


_compiled_notice = False
# torch.compile's component logger (set_logs(dynamo=logging.INFO) shows its lines), named as rawdev._dynamo
_dynamo_log = logging.getLogger("rawdev._dynamo")


def _compiled_name(obj):
    name = getattr(obj, "__qualname__", None)
    return name if isinstance(name, str) else type(obj).__name__


def compile(model=None, *, fullgraph=False, dynamic=None, backend="inductor", mode=None, options=None,  # noqa: A001
            disable=False):
    """torch.compile: rawdev runs eagerly, so the model (or function) comes back unchanged, with a notice once
    (and an INFO line "compile: running <name> eagerly" on the rawdev._dynamo logger each time, which
    rawdev._logging.set_logs(dynamo=logging.INFO) shows). Usable as compile(model) and as a decorator
    (@compile or @compile(mode=...))."""
    global _compiled_notice
    if not _compiled_notice:
        _compiled_notice = True
        warnings.warn("rawdev.compile: rawdev runs eagerly; the model is returned unchanged", UserWarning,
                      stacklevel=2)
    if model is None:
        def decorate(fn):
            _dynamo_log.info("compile: running %s eagerly", _compiled_name(fn))
            return fn
        return decorate
    _dynamo_log.info("compile: running %s eagerly", _compiled_name(model))
    return model


_threads = {"intra": os.cpu_count() or 1, "inter": os.cpu_count() or 1}


def get_num_threads() -> int:
    """The cpu thread count set with set_num_threads (the machine's cores by default). rawdev's cpu ops run in
    NumPy, whose BLAS picks its own threads at start-up; the figure is kept for programs that read it back."""
    return _threads["intra"]


def set_num_threads(n: int) -> None:
    if not isinstance(n, int) or n <= 0:
        raise RuntimeError("set_num_threads expects a positive integer")
    _threads["intra"] = n


def get_num_interop_threads() -> int:
    return _threads["inter"]


def set_num_interop_threads(n: int) -> None:
    if not isinstance(n, int) or n <= 0:
        raise RuntimeError("set_num_interop_threads expects a positive integer")
    _threads["inter"] = n


def typename(obj) -> str:
    """torch.typename: "torch.FloatTensor"-style names for tensors, the qualified class name otherwise."""
    from .tensor import Tensor
    if isinstance(obj, Tensor):
        return obj.type()
    module = getattr(type(obj), "__module__", "") or ""
    name = type(obj).__qualname__
    return name if module in ("", "builtins") else f"{module}.{name}"
