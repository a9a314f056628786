"""Users' own kernels: `RawKernel` and `RawModule`, CuPy's API over rawdev's runtime.

CUDA C++ is compiled with NVRTC (rawdev.runtime.nvrtc: cached on disk), PTX is taken as it is; either is
loaded and launched through the same runtime KernelModule/Kernel as rawdev's own kernels, so a launch
shows in `rawdev.trace()` and the memory tool, and runs on a GPU or on the simulated GPU unchanged.
Arguments are checked against the kernel's `.param` list (and its C signature when the source is known)
before anything reaches the driver: see rawdev.rawkernel.args.
"""
from __future__ import annotations

import re
import threading
from pathlib import Path
from typing import Any

from ..runtime import kernels as _kernels
from ..runtime import nvrtc as _nvrtc
from ..runtime.ptx_params import entries as _entries
from . import args as _args
from .args import Param

__all__ = ["RawKernel", "RawModule", "CompileError", "NvrtcNotFoundError", "Param"]

CompileError = _nvrtc.CompileError
NvrtcNotFoundError = _nvrtc.NvrtcNotFoundError
_PTX_RE = re.compile(r"\A(?:\s|//[^\n]*\n|/\*.*?\*/)*\.version\s+\d+\.\d+", re.S)


def is_ptx(text: str) -> bool:
    """Whether `text` is PTX (its first directive is `.version`) rather than CUDA C++."""
    return bool(_PTX_RE.match(text))


def _arch(capability):
    """NVRTC's virtual architecture for a device: its own, or the newest NVRTC knows when the device is newer (the
    driver JITs the PTX forward)."""
    want = capability[0] * 10 + capability[1]
    try:
        nv = _nvrtc.load()
        _e, n = nv.nvrtcGetNumSupportedArchs()
        _e, archs = nv.nvrtcGetSupportedArchs()
        archs = [int(a) for a in archs][:n] or [want]
    except Exception:
        archs = [want]
    fit = [a for a in archs if a <= want]
    return f"compute_{max(fit) if fit else min(archs)}"


class RawModule:
    """A module of user kernels from CUDA C++ source (compiled with NVRTC) or PTX (text or a .ptx file).

    Args:
        code: CUDA C++ source, or PTX text (starting with `.version`).
        path: a .ptx file to load instead of `code`.
        options: NVRTC options, e.g. ("-lineinfo", "--std=c++17").
        name_expressions: C++ names of template instances to compile (e.g. "scale<float>"), found later by
            `get_function` under the same name.
        backend: "nvrtc" (the only compiler rawdev drives).
        translate_cucomplex: CuPy's cuComplex translation; not supported (must be False).
        enable_cooperative_groups: CuPy's cooperative launch; not supported (must be False).
        jitify: CuPy's Jitify preprocessing; not supported (must be False).

    Compilation is lazy: the first `get_function(...)` launch (or `compile()`) compiles for that device's
    architecture, so building a module chooses no driver.

    Example:
        >>> mod = rawdev.RawModule(code=r'''
        ... extern "C" __global__ void scale(float* x, float a, int n) {
        ...     int i = blockIdx.x * blockDim.x + threadIdx.x;
        ...     if (i < n) x[i] *= a;
        ... }''')
        >>> x = rawdev.ones(100, device="cuda")
        >>> mod.get_function("scale")((1,), (128,), (x, 2.0, x.numel()))
    """

    def __init__(self, code: str | None = None, *, path: str | None = None, options: tuple = (),
                 backend: str = "nvrtc", translate_cucomplex: bool = False, enable_cooperative_groups: bool = False,
                 name_expressions: tuple | None = (), jitify: bool = False) -> None:
        if (code is None) == (path is None):
            raise TypeError("RawModule takes exactly one of code= (CUDA C++ or PTX text) and path= (a .ptx file)")
        if backend != "nvrtc":
            raise ValueError(f"backend={backend!r}: rawdev compiles with NVRTC only (backend='nvrtc')")
        if translate_cucomplex:
            raise NotImplementedError("translate_cucomplex=True is not supported: include <cuComplex.h> yourself, "
                                      "or use thrust-free float2/double2 arithmetic")
        if jitify:
            raise NotImplementedError("jitify=True is not supported by rawdev")
        if enable_cooperative_groups:
            raise NotImplementedError("enable_cooperative_groups=True is not supported: rawdev launches with "
                                      "cuLaunchKernel (no grid-wide synchronization)")
        if path is not None:
            p = Path(path)
            if p.suffix in (".cubin", ".fatbin"):
                raise ValueError(f"{path}: rawdev loads PTX only (a .cubin runs on no simulator); pass the .ptx")
            code = p.read_text()
            if not is_ptx(code):
                raise ValueError(f"{path} is not PTX (no .version directive at its start)")
        if not isinstance(code, str):
            raise TypeError(f"code must be a str, not {type(code).__name__}")
        self.code, self.path = code, None if path is None else str(path)
        self.options, self.backend = tuple(options), backend
        self.name_expressions = tuple(name_expressions or ())
        self._ptx = code if is_ptx(code) else None
        self._lowered: dict[str, str] = {}
        self._by_arch: dict[str, tuple[str, dict]] = {}
        self._loaded: dict[int, Any] = {}
        self._functions: dict[str, RawKernel] = {}
        self._lock = threading.RLock()
        if self._ptx is not None and self.name_expressions:
            raise ValueError("name_expressions need CUDA C++ source (they are resolved by NVRTC), not PTX")

    @property
    def is_ptx(self) -> bool:
        """Whether the module was given as PTX (no compiler involved)."""
        return self._ptx is not None

    def compile(self, device: Any = None) -> str:
        """Compile (or read from the cache) for `device`'s architecture (default: the current CUDA device); returns
        the PTX text. Raises CompileError with NVRTC's log, NvrtcNotFoundError when NVRTC is missing."""
        return self._ptx_for(_runtime_device(device))[0]

    def _ptx_for(self, rdev):
        if self._ptx is not None:
            return self._ptx, {}
        arch = _arch(rdev.capability)
        with self._lock:
            got = self._by_arch.get(arch)
            if got is None:
                got = self._by_arch[arch] = _nvrtc.compile_to_ptx(self.code, self.options, self.name_expressions,
                                                                  arch=arch)
            return got

    def _module_for(self, rdev):
        """(KernelModule, entries) on `rdev`. Kept per Device object: a device reopened (a new Device after the
        runtime forgot its devices, e.g. a simulator reset) loads the module again."""
        with self._lock:
            got = self._loaded.get(rdev.index)
            if got is None or got[0] is not rdev:
                ptx, _names = self._ptx_for(rdev)
                label = Path(self.path).name if self.path else "RawModule"
                got = self._loaded[rdev.index] = (rdev, _kernels.KernelModule(rdev, ptx, label), _entries(ptx))
            return got[1], got[2]

    def get_function(self, name: str) -> RawKernel:
        """The kernel `name`: an `extern "C"` name, a mangled name, or one of `name_expressions`.

        Args:
            name: the kernel's name.

        Returns:
            A RawKernel launching that entry of this module.

        Example:
            >>> k = mod.get_function("scale")
        """
        with self._lock:
            k = self._functions.get(name)
            if k is None:
                k = self._functions[name] = RawKernel._of_module(self, name)
            return k

    def __repr__(self) -> str:
        what = self.path or ("PTX" if self.is_ptx else "CUDA C++")
        return f"<rawdev.RawModule {what}>"


class RawKernel:
    """One user kernel, from CUDA C++ source (compiled with NVRTC) or PTX text, launched on rawdev tensors.

    `kernel(grid, block, args, shared_mem=0, stream=None)` launches it: grid and block are ints or tuples of up
    to 3, args a tuple of rawdev cuda tensors (their device addresses), numpy scalars and Python scalars,
    checked against the kernel's parameters (count, pointer or value, width, and a pointer's element type when
    the source says it); stream is a rawdev.cuda.Stream (default: the device's compute stream, where rawdev's own
    work on the tensors is queued, so no synchronization is needed around a launch).

    Args:
        code: CUDA C++ source or PTX text.
        name: the kernel's name (its `extern "C"` name, or a mangled one).
        options: NVRTC options.
        backend: "nvrtc".
        translate_cucomplex: must be False.
        enable_cooperative_groups: must be False.
        jitify: must be False.

    Example:
        >>> add = rawdev.RawKernel(r'''
        ... extern "C" __global__ void add(const float* x, const float* y, float* out, int n) {
        ...     int i = blockIdx.x * blockDim.x + threadIdx.x;
        ...     if (i < n) out[i] = x[i] + y[i];
        ... }''', "add")
        >>> x = rawdev.randn(1000, device="cuda"); y = rawdev.randn(1000, device="cuda")
        >>> out = rawdev.empty_like(x)
        >>> add(((1000 + 255) // 256,), (256,), (x, y, out, 1000))
    """

    def __init__(self, code: str, name: str, options: tuple = (), backend: str = "nvrtc",
                 translate_cucomplex: bool = False, *, enable_cooperative_groups: bool = False,
                 jitify: bool = False) -> None:
        self._init(RawModule(code=code, options=options, backend=backend, translate_cucomplex=translate_cucomplex,
                             enable_cooperative_groups=enable_cooperative_groups, jitify=jitify), name)

    @classmethod
    def _of_module(cls, module, name):
        k = cls.__new__(cls)
        k._init(module, name)
        return k

    def _init(self, module, name):
        if not isinstance(name, str) or not name:
            raise TypeError(f"name must be the kernel's name (a non-empty str), not {name!r}")
        self.module, self.name = module, name
        self.code, self.options, self.backend = module.code, module.options, module.backend
        self._per_device: dict[int, tuple] = {}

    def _kernel_for(self, rdev):
        got = self._per_device.get(rdev.index)
        if got is not None and got[0] is rdev:
            return got[1], got[2]
        kmod, entries = self.module._module_for(rdev)
        _ptx, lowered = self.module._ptx_for(rdev)
        entry = lowered.get(self.name, self.name)
        if entry not in entries:
            known = ", ".join(sorted(entries)) or "none"
            hint = " (a C++ kernel's name is mangled: declare it extern \"C\", or pass name_expressions)" \
                if not self.module.is_ptx and not lowered else ""
            raise AttributeError(f"no kernel named {self.name!r} in this module; its kernels: {known}{hint}")
        cname = re.sub(r"<.*", "", self.name).split("::")[-1]
        params = _args.params_for(entries[entry], None if self.module.is_ptx else self.module.code, cname)
        k = kmod.get(entry, [(p.name, p.packed_type()) for p in params])
        self._per_device[rdev.index] = (rdev, k, params)
        return k, params

    def params(self, device: Any = None) -> list[Param]:
        """The kernel's parameters as read from its PTX and source: [Param(name, ptype, pointer, ctype)]."""
        return list(self._kernel_for(_runtime_device(device))[1])

    def compile(self, device: Any = None) -> None:
        """Compile and load for `device` (default: the current CUDA device) now instead of at the first launch."""
        self._kernel_for(_runtime_device(device))

    @property
    def attributes(self) -> dict[str, int]:
        """The driver's attributes of the kernel on the current device (cuFuncGetAttribute)."""
        k, _ = self._kernel_for(_runtime_device(None))
        out = {}
        for key in ("MAX_THREADS_PER_BLOCK", "SHARED_SIZE_BYTES", "NUM_REGS", "PTX_VERSION", "BINARY_VERSION"):
            try:
                out[key.lower()] = int(k.attribute(key))
            except Exception:   # an attribute the driver (or the simulator) does not report
                pass
        return out

    @property
    def max_threads_per_block(self) -> int:
        return self.attributes["max_threads_per_block"]

    @property
    def num_regs(self) -> int:
        return self.attributes["num_regs"]

    def __call__(self, grid: Any, block: Any, args: tuple, shared_mem: int = 0, stream: Any = None) -> None:
        """Launch: grid and block are ints or tuples of up to 3; args as described on the class.

        Args:
            grid: blocks per grid (int or tuple).
            block: threads per block (int or tuple).
            args: the kernel's arguments (a tuple).
            shared_mem: bytes of dynamic shared memory per block.
            stream: a rawdev.cuda.Stream, or None for the device's compute stream.
        """
        if not isinstance(args, (tuple, list)):
            raise TypeError(f"args must be a tuple of the kernel's arguments, not {type(args).__name__}")
        grid, block = _dims("grid", grid), _dims("block", block)
        # the parameters come from the PTX, which needs a device: the tensors' one, else the current one
        first = next((a.device for a in args if _args._is_tensor(a) and a.device.type == "cuda"), None)
        rdev = _runtime_device(first if stream is None else _stream_device(stream))
        k, params = self._kernel_for(rdev)
        values, index = _args.convert(self.name, params, args)
        if index is not None and index != rdev.index:
            raise ValueError(f"{self.name}: the tensor arguments are on cuda:{index} but the stream is on "
                             f"cuda:{rdev.index}")
        k.launch(grid, block, values, shared_mem=int(shared_mem), stream=_runtime_stream(stream))

    def __repr__(self) -> str:
        return f"<rawdev.RawKernel {self.name}>"


def _dims(what, d):
    if isinstance(d, int) and not isinstance(d, bool):
        d = (d,)
    if not isinstance(d, (tuple, list)) or not 1 <= len(d) <= 3 or not all(
            isinstance(x, int) and not isinstance(x, bool) and x >= 1 for x in d):
        raise ValueError(f"{what} must be a positive int or a tuple of 1 to 3 positive ints, not {d!r}")
    return tuple(d)


def _runtime_device(device):
    from ..device import device as _device
    from ..tensor.cuda_io import runtime_device
    if device is None:
        from ..cuda import current_device
        return runtime_device(_device("cuda", current_device()))
    if isinstance(device, int):
        return runtime_device(_device("cuda", device))
    dev = _device(device) if isinstance(device, str) else device
    if dev.type != "cuda":
        raise ValueError(f"user kernels run on a cuda device, not {dev}")
    return runtime_device(dev)


def _stream_device(stream):
    rt = getattr(stream, "_rt", None)
    if rt is None:
        raise TypeError(f"stream must be a rawdev.cuda.Stream (or None), not {type(stream).__name__}")
    return rt.device.index


def _runtime_stream(stream):
    return None if stream is None else stream._rt
