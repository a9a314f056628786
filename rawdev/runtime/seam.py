"""The driver seam: the one place that picks a driver and the one checker every driver call goes through.

`driver()` is either cuda-python's `cuda.bindings.driver` or `rawdev.sim`; both expose the same
functions returning `(CUresult, value...)` tuples, so nothing below can tell them apart. `call()`
checks the result, turns failures into `CudaError`s that say what rawdev was doing, and feeds
`rawdev.trace()`.
"""
import os
import threading
import time

from ..errors import CudaError, DeviceAssertError, IllegalAddressError, NoDeviceError, NoDriverError, OutOfMemoryError

CHOICES = ("cuda", "sim", "auto", "none")   # none: CUDA turned off (as CUDA_VISIBLE_DEVICES="")
_lock = threading.Lock()
_requested = None          # set by use_driver() before first use
_drv = None                # the chosen module, once chosen
_name = None               # "cuda", "sim" or "none" (auto found no usable GPU)
_why_none = None           # the error auto swallowed, re-raised on use
_tracers: list = []        # active rawdev.trace() recorders
stream_names: dict = {}    # int(CUstream) -> "cuda:0 compute", for traces and snapshots

SIM_HINT = "set RAWDEV_DRIVER=sim (or call rawdev.use_driver('sim') first) to run on rawdev's simulated GPU"


def use_driver(name):
    """Choose the driver before first use: 'cuda', 'sim' or 'auto'.

    After auto found no GPU ('none': nothing was opened), switching to 'sim' is still allowed: that is
    how `rawdev demo` falls back to the simulator, saying so."""
    global _requested, _name, _why_none
    if name not in CHOICES:
        raise ValueError(f"unknown driver {name!r}: expected one of {', '.join(CHOICES)}")
    with _lock:
        if _name == "none" and name == "sim":
            _name = _why_none = None
        if _name is not None and name != _name and not (name == "auto" and _name in ("cuda", "none")):
            raise RuntimeError(f"rawdev already uses the {_name!r} driver; use_driver({name!r}) must come "
                               "before the first CUDA call (or set RAWDEV_DRIVER before starting Python)")
        _requested = name


def _load_cuda():
    try:
        from cuda.bindings import driver as drv
    except ImportError as e:
        raise NoDriverError(f"cuda-bindings is not importable ({e}): pip install 'cuda-bindings' — "
                            f"or {SIM_HINT}") from None
    try:
        err, = drv.cuInit(0)
    except RuntimeError as e:   # no libcuda.so on this machine: cuda.pathfinder's DynamicLibNotFoundError
        # (cuda-python >= 12.9.1), or a plain RuntimeError naming the library/dlopen (older 12.x)
        if type(e).__name__ != "DynamicLibNotFoundError" and not any(w in str(e) for w in ("libcuda", "dlopen")):
            raise
        raise NoDriverError("no CUDA driver found (libcuda.so could not be loaded): install the NVIDIA driver, "
                            f"or {SIM_HINT}") from None
    if err == drv.CUresult.CUDA_ERROR_NO_DEVICE:
        raise NoDeviceError(f"the CUDA driver loaded but sees no GPU: {SIM_HINT}")
    if err:
        raise _error(drv, "cuInit", err, "initializing the CUDA driver")
    err, n = drv.cuDeviceGetCount()
    if err or n == 0:
        raise NoDeviceError(f"the CUDA driver loaded but sees no GPU: {SIM_HINT}")
    return drv


def _load_sim():
    from .. import sim
    err, = sim.cuInit(0)
    if err:
        raise _error(sim, "cuInit", err, "initializing the simulated GPU")
    return sim


def driver():
    """The chosen driver module (chosen on first use, then fixed). Raises NoDriverError/NoDeviceError."""
    global _drv, _name, _why_none
    if _drv is not None:
        return _drv
    with _lock:
        if _drv is None and _name != "none":
            choice = _requested or os.environ.get("RAWDEV_DRIVER", "auto").strip().lower() or "auto"
            if choice not in CHOICES:
                raise ValueError(f"RAWDEV_DRIVER={choice!r}: expected one of {', '.join(CHOICES)}")
            if choice == "none":
                _name, _why_none = "none", NoDeviceError("RAWDEV_DRIVER=none: CUDA is turned off for this "
                                                         "process; unset it to use the GPU or set it to sim")
            elif choice == "sim":
                _drv, _name = _load_sim(), "sim"
            elif choice == "cuda":
                _drv, _name = _load_cuda(), "cuda"
            else:
                try:
                    _drv, _name = _load_cuda(), "cuda"
                except (NoDriverError, NoDeviceError) as e:
                    _name, _why_none = "none", e
    if _drv is None:
        raise _why_none
    return _drv


def driver_name():
    """'cuda', 'sim', or 'none' (auto mode found no usable GPU). Chooses the driver if not yet chosen."""
    try:
        driver()
    except (NoDriverError, NoDeviceError):
        if _name is None:
            raise
    return _name


def _reset_for_tests():
    """Forget the chosen driver (tests switch between sim configurations)."""
    global _drv, _name, _why_none, _requested
    _drv = _name = _why_none = _requested = None


def _describe(drv, err):
    """(name, description) of a CUresult, from the driver if it can say, else from cuda-python's enum."""
    try:
        e1, name = drv.cuGetErrorName(err)
        e2, desc = drv.cuGetErrorString(err)
        if not e1 and not e2:
            return name.decode(), desc.decode()
    except Exception:   # the driver is in no state to answer; the enum still knows
        pass
    try:
        from cuda.bindings.driver import CUresult
        member = CUresult(int(err))
        return member.name, " ".join((member.__doc__ or "").split()) or member.name
    except Exception:
        return f"CUresult {int(err)}", "unknown error"


def _error(drv, call_name, err, ctx):
    name, desc = _describe(drv, err)
    detail_fn = getattr(drv, "last_error_detail", None)   # the simulator can say which thread and address
    detail = detail_fn() if detail_fn else None
    cls = {"CUDA_ERROR_OUT_OF_MEMORY": OutOfMemoryError,
           "CUDA_ERROR_ILLEGAL_ADDRESS": IllegalAddressError,
           "CUDA_ERROR_ASSERT": DeviceAssertError}.get(name, CudaError)
    return cls(call_name, err, name, desc, ctx, detail)


def call(fn, *args, ctx=None, nbytes=None, stream=None, owner=None):
    """Call driver function `fn` (a name), check its CUresult, return its value(s).

    ctx says what rawdev was doing, for the error message; nbytes/stream/owner are for traces.
    """
    drv = _drv or driver()
    t0 = 0.0
    if _tracers:
        for t in _tracers:      # a tracer may put work on the stream first (rawdev.profiler's start events)
            before = getattr(t, "_before", None)
            if before is not None:
                before(fn, stream)
        t0 = time.perf_counter()
    res = getattr(drv, fn)(*args)
    err = res[0]
    if _tracers:
        dt = time.perf_counter() - t0
        for t in _tracers:
            t._record(fn, nbytes, stream, owner, dt, int(err))
    if err:
        raise _error(drv, fn, err, ctx() if callable(ctx) else ctx)
    n = len(res)
    return None if n == 1 else res[1] if n == 2 else res[1:]
