"""rawdev: what `model.cuda()` really does, on the CUDA driver API alone.

Importing rawdev touches no driver: the driver is chosen on first use (RAWDEV_DRIVER=cuda|sim|auto,
or rawdev.use_driver(name) before that).
"""
# ruff: noqa: I001  (the import order matters: nn builds on Tensor, ops installs Tensor's math methods)
import sys as _sys
from typing import TYPE_CHECKING as _TYPE_CHECKING
from typing import Any as _Any

from . import cuda, errors
from .device import device
from .dtypes import *  # noqa: F401,F403  (float32, float16, bfloat16, int64, int32, uint8, bool, ...)
from .dtypes import dtype, get_default_dtype
from .errors import CudaError, NoDeviceError, NoDriverError, OutOfMemoryError
from .random import Generator, get_rng_state, initial_seed, manual_seed, seed, set_rng_state
from .runtime.seam import use_driver
from .runtime.trace import trace
from .serialization import load, save
from .tensor import *  # noqa: F401,F403  (Tensor, tensor, zeros, ones, randn, ...)
from .tensor import Size, Tensor, is_tensor
from .tensor.legacy import LEGACY_CPU as _LEGACY_CPU

# PyTorch's legacy typed constructors: rawdev.FloatTensor(2, 3), rawdev.LongTensor([1, 2]), isinstance checks
FloatTensor = _LEGACY_CPU["FloatTensor"]
HalfTensor = _LEGACY_CPU["HalfTensor"]
BFloat16Tensor = _LEGACY_CPU["BFloat16Tensor"]
DoubleTensor = _LEGACY_CPU["DoubleTensor"]
LongTensor = _LEGACY_CPU["LongTensor"]
IntTensor = _LEGACY_CPU["IntTensor"]
ShortTensor = _LEGACY_CPU["ShortTensor"]
CharTensor = _LEGACY_CPU["CharTensor"]
ByteTensor = _LEGACY_CPU["ByteTensor"]
BoolTensor = _LEGACY_CPU["BoolTensor"]
from . import nn  # noqa: E402  (after Tensor: layers build on it)

__version__ = "0.1.0"


def _excepthook(tp, value, tb, _previous=_sys.excepthook):
    # A missing driver or GPU is a setup problem, not a bug: say it in one line, no traceback.
    if isinstance(value, (NoDriverError, NoDeviceError)):
        print(f"{tp.__module__}.{tp.__name__}: {value}", file=_sys.stderr)
    else:
        _previous(tp, value, tb)


_sys.excepthook = _excepthook

from . import autograd, ops  # noqa: E402  (ops installs Tensor's math methods)
from .autograd import enable_grad, inference_mode, is_grad_enabled, no_grad, set_grad_enabled  # noqa: E402
from .ops import *  # noqa: E402,F401,F403,A004  (every op declared for the rawdev namespace)
from . import optim, utils  # noqa: E402
from . import accelerator, amp, backends, distributed, distributions, func, jit, linalg, onnx, profiler, special  # noqa: E402,E501
from . import multiprocessing, testing  # noqa: E402
from .func import vmap  # noqa: E402
from .rawkernel import RawKernel, RawModule  # noqa: E402
from .amp import autocast  # noqa: E402
from . import cpu  # noqa: E402  (rawdev.cpu.amp, as torch.cpu.amp)
from .amp.autocast_mode import (autocast_decrement_nesting, autocast_increment_nesting,  # noqa: E402
                                clear_autocast_cache, get_autocast_cpu_dtype, get_autocast_dtype,
                                get_autocast_gpu_dtype, is_autocast_cache_enabled, is_autocast_cpu_enabled,
                                is_autocast_enabled, set_autocast_cache_enabled, set_autocast_dtype,
                                set_autocast_enabled)
from .config import (are_deterministic_algorithms_enabled, compile, e, get_default_device,  # noqa: E402,A004
                     get_float32_matmul_precision, get_num_interop_threads, get_num_threads, inf, nan, newaxis, pi,
                     set_default_device, set_float32_matmul_precision, set_num_interop_threads, set_num_threads,
                     typename, use_deterministic_algorithms)
from .tensor.printing import set_printoptions  # noqa: E402
from .tensor.memfmt import layout, sparse_coo, strided  # noqa: E402  (not in rawdev.tensor: .strided is a module)

__all__ = ["cuda", "errors", "nn", "autograd", "ops", "optim", "utils", "device", "dtype", "get_default_dtype",
           "CudaError", "NoDeviceError", "NoDriverError", "OutOfMemoryError", "Generator", "get_rng_state",
           "initial_seed", "manual_seed", "seed", "set_rng_state", "use_driver", "trace", "load", "save",
           "enable_grad", "inference_mode", "is_grad_enabled", "no_grad", "set_grad_enabled",
           "Size", "Tensor", "is_tensor", "__version__", "accelerator", "amp", "backends", "distributions", "jit",
           "linalg", "special", "testing", "func", "vmap",
           "are_deterministic_algorithms_enabled", "compile", "get_default_device", "get_float32_matmul_precision",
           "set_default_device", "set_float32_matmul_precision", "use_deterministic_algorithms", "set_printoptions",
           "autocast", "is_autocast_enabled", "set_autocast_enabled", "get_autocast_dtype", "set_autocast_dtype",
           "is_autocast_cache_enabled", "set_autocast_cache_enabled", "clear_autocast_cache",
           "autocast_increment_nesting", "autocast_decrement_nesting", "get_autocast_gpu_dtype",
           "get_autocast_cpu_dtype", "is_autocast_cpu_enabled", "cpu",
           "distributed", "multiprocessing", "profiler", "onnx", "e", "pi", "inf", "nan", "newaxis",
           "get_num_threads", "set_num_threads", "get_num_interop_threads", "set_num_interop_threads", "typename",
           "layout", "strided", "sparse_coo", "RawKernel", "RawModule"]
__all__ += ops.__all__   # every op declared for the rawdev namespace (rawdev.ops.registry)
__all__ += [n for n in _sys.modules[__name__ + ".dtypes"].__all__ + _sys.modules[__name__ + ".tensor"].__all__
            if n not in __all__]
from .autograd import is_inference_mode_enabled  # noqa: E402
__all__ += ["is_inference_mode_enabled"]
from . import sparse  # noqa: E402
from . import classes, futures, fx, hub, version  # noqa: E402  (torch's submodules programs reach as attributes)
fx.patching.set_top_namespace(_sys.modules[__name__])   # fx records calls of torch.* (it sits below this module)
from .autograd import profiler as _autograd_profiler  # noqa: E402,F401  (torch.autograd.profiler)
from .refusals import polar, view_as_complex, view_as_real  # noqa: E402  (refused: no complex dtypes)
from .ops.sparse_coo import sparse_coo_tensor, spmm  # noqa: E402
# torch's submodules for features rawdev declines (each refuses with its reason when used) and torch.functional
from . import _dynamo, _inductor, _logging, export, functional, library, nested  # noqa: E402,F401
from . import ao, quantization  # noqa: E402,F401  (dynamic quantization; also puts nn.quantized on rawdev.nn)
__all__ += ["export", "functional", "library", "nested", "quantization", "ao"]
__all__ += ["sparse", "sparse_coo_tensor", "spmm", "classes", "futures", "fx", "hub", "version", "polar",
            "view_as_complex", "view_as_real"]
__all__ += list(_LEGACY_CPU)

if _TYPE_CHECKING:
    # the ops (rawdev.relu, rawdev.cat, ...) come from their declarations at import: Any to a type checker
    def __getattr__(name: str) -> _Any: ...
