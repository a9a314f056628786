"""torch.autocast for rawdev: the context manager / decorator, the torch.* state functions and custom_fwd/bwd.

The casting itself happens at the op boundary (rawdev.ops.autocast_mode, the lists in rawdev.ops.autocast_lists);
this module only opens and closes regions, as torch/amp/autocast_mode.py does.
"""
import functools
import warnings

from .. import dtypes as _dt
from ..ops import autocast_mode as _mode
from ..tensor.core import Tensor

__all__ = ["autocast", "is_autocast_available", "custom_fwd", "custom_bwd", "is_autocast_enabled",
           "set_autocast_enabled", "get_autocast_dtype", "set_autocast_dtype", "is_autocast_cache_enabled",
           "set_autocast_cache_enabled", "clear_autocast_cache", "autocast_increment_nesting",
           "autocast_decrement_nesting", "get_autocast_gpu_dtype", "get_autocast_cpu_dtype",
           "is_autocast_cpu_enabled"]


def _device_type(device_type):
    if device_type not in _mode.DEVICE_TYPES:
        raise RuntimeError(f"User specified an unsupported autocast device_type '{device_type}'")
    return device_type


def is_autocast_available(device_type):
    """Whether autocast supports device_type ("cuda" and "cpu" in rawdev).

    Args:
        device_type: a device type string.

    Returns:
        bool

    Example:
        >>> rawdev.amp.is_autocast_available("cpu")
        True
    """
    return device_type in _mode.DEVICE_TYPES


def is_autocast_enabled(device_type=None):
    """Whether autocast is on for device_type in this thread (no argument: cuda, as torch.is_autocast_enabled()).

    Args:
        device_type: "cuda" or "cpu".

    Returns:
        bool (False inside a listed op, whose inner ops do not autocast again)

    Example:
        >>> with rawdev.autocast("cpu"):
        ...     rawdev.is_autocast_enabled("cpu")
        True
    """
    return _mode.is_enabled(_device_type("cuda" if device_type is None else device_type))


def is_autocast_cpu_enabled():
    """torch.is_autocast_cpu_enabled(): is_autocast_enabled("cpu").

    Returns:
        bool

    Example:
        >>> rawdev.is_autocast_cpu_enabled()
        False
    """
    return is_autocast_enabled("cpu")


def set_autocast_enabled(device_type, enabled=None):
    """Turn autocast on or off for device_type in this thread (set_autocast_enabled(True) alone: cuda).

    Args:
        device_type: "cuda" or "cpu" (or a bool, meaning cuda, as PyTorch's one-argument form).
        enabled: bool.

    Returns:
        None

    Example:
        >>> rawdev.set_autocast_enabled("cpu", False)
    """
    if enabled is None and isinstance(device_type, bool):
        device_type, enabled = "cuda", device_type
    _mode.set_enabled(_device_type(device_type), enabled)


def get_autocast_dtype(device_type):
    """The lower-precision dtype of device_type's regions (defaults: float16 on cuda, bfloat16 on cpu).

    Args:
        device_type: "cuda" or "cpu".

    Returns:
        a rawdev dtype

    Example:
        >>> rawdev.get_autocast_dtype("cpu")
        rawdev.bfloat16
    """
    return _mode.state().dtype[_device_type(device_type)]


def get_autocast_gpu_dtype():
    """torch.get_autocast_gpu_dtype(): get_autocast_dtype("cuda").

    Returns:
        a rawdev dtype

    Example:
        >>> rawdev.get_autocast_gpu_dtype()
        rawdev.float16
    """
    return get_autocast_dtype("cuda")


def get_autocast_cpu_dtype():
    """torch.get_autocast_cpu_dtype(): get_autocast_dtype("cpu").

    Returns:
        a rawdev dtype

    Example:
        >>> rawdev.get_autocast_cpu_dtype()
        rawdev.bfloat16
    """
    return get_autocast_dtype("cpu")


def set_autocast_dtype(device_type, dtype):
    """Set the lower-precision dtype of device_type's regions in this thread.

    Args:
        device_type: "cuda" or "cpu".
        dtype: rawdev.float16 or rawdev.bfloat16.

    Returns:
        None

    Example:
        >>> rawdev.set_autocast_dtype("cpu", rawdev.bfloat16)
    """
    _mode.state().dtype[_device_type(device_type)] = dtype


def is_autocast_cache_enabled():
    """Whether regions cache the lower-precision casts of float32 weights.

    Returns:
        bool

    Example:
        >>> rawdev.is_autocast_cache_enabled()
        True
    """
    return _mode.state().cache_enabled


def set_autocast_cache_enabled(enabled):
    """Turn the weight-cast cache on or off in this thread.

    Args:
        enabled: bool.

    Returns:
        None

    Example:
        >>> rawdev.set_autocast_cache_enabled(True)
    """
    _mode.state().cache_enabled = bool(enabled)


def clear_autocast_cache():
    """Drop the cached weight casts (the outermost region's exit does it).

    Returns:
        None

    Example:
        >>> rawdev.clear_autocast_cache()
    """
    _mode.state().cache.clear()


def autocast_increment_nesting():
    """Count one more open region in this thread.

    Returns:
        The new depth.

    Example:
        >>> d = rawdev.autocast_increment_nesting(); _ = rawdev.autocast_decrement_nesting()
    """
    st = _mode.state()
    st.nesting += 1
    return st.nesting


def autocast_decrement_nesting():
    """Count one region fewer in this thread.

    Returns:
        The new depth (0: outside every region).

    Example:
        >>> d = rawdev.autocast_increment_nesting(); rawdev.autocast_decrement_nesting()
        0
    """
    st = _mode.state()
    st.nesting -= 1
    return st.nesting


class autocast:
    """torch.autocast(device_type, dtype=None, enabled=True, cache_enabled=None): a region (context manager or
    decorator) where the ops on autocast's lists run in a chosen precision (rawdev.amp.lists): matrix products
    and convolutions in `dtype` (float16 on cuda, bfloat16 on cpu by default), exp/log/norms/losses in float32,
    reductions and softmax in float32 unless a dtype is given, a few ops in their widest input type.
    Regions nest; `enabled=False` opens a region without autocast. Gradients reach float32 parameters in float32.

    Args:
        device_type: "cuda" or "cpu".
        dtype: the lower precision (float16 or bfloat16); None: get_autocast_dtype(device_type).
        enabled: False makes the region run ops as given.
        cache_enabled: cache the casts of float32 weights inside the region (default: is_autocast_cache_enabled()).

    Example:
        >>> lin = rawdev.nn.Linear(4, 3)
        >>> with rawdev.autocast("cpu", dtype=rawdev.bfloat16):
        ...     y = lin(rawdev.randn(2, 4))
        >>> y.dtype
        rawdev.bfloat16
    """

    def __init__(self, device_type, dtype=None, enabled=True, cache_enabled=None):
        if not isinstance(device_type, str):
            raise ValueError(f"Expected `device_type` of type `str`, got: `{type(device_type)}`")
        _device_type(device_type)
        self.device = device_type
        self.fast_dtype = get_autocast_dtype(device_type) if dtype is None else dtype
        self._cache_enabled = is_autocast_cache_enabled() if cache_enabled is None else cache_enabled
        if device_type == "cuda" and enabled:
            from ..runtime import is_available
            if not is_available():
                warnings.warn("User provided device_type of 'cuda', but CUDA is not available. Disabling", stacklevel=2)
                enabled = False
        supported = (_dt.bfloat16, _dt.float16)
        if device_type == "cpu" and enabled and self.fast_dtype not in supported:
            warnings.warn("In CPU autocast, but the target dtype is not supported. Disabling autocast.\n"
                          "CPU Autocast only supports dtype of torch.bfloat16, torch.float16 currently.", stacklevel=2)
            enabled = False
        self._enabled = bool(enabled)

    def __enter__(self):
        st = _mode.state()
        self.prev_cache_enabled = st.cache_enabled
        self.prev = st.enabled[self.device]
        self.prev_fastdtype = st.dtype[self.device]
        _mode.set_enabled(self.device, self._enabled)
        st.dtype[self.device] = self.fast_dtype
        autocast_increment_nesting()
        st.cache_enabled = self._cache_enabled

    def __exit__(self, exc_type, exc_val, exc_tb):
        st = _mode.state()
        if autocast_decrement_nesting() == 0:     # the outermost region: its weight casts go
            st.cache.clear()
        _mode.set_enabled(self.device, self.prev)
        st.dtype[self.device] = self.prev_fastdtype
        st.cache_enabled = self.prev_cache_enabled
        return False

    def __call__(self, func):
        @functools.wraps(func)
        def decorate_autocast(*args, **kwargs):
            with self:
                return func(*args, **kwargs)
        return decorate_autocast


def _cast(value, device_type, dtype):
    """Floating tensors on device_type (not float64) cast to dtype, through containers (torch.amp's _cast)."""
    if isinstance(value, Tensor):
        ok = value.device.type == device_type and value.dtype.is_floating_point and value.dtype is not _dt.float64
        return value.to(dtype=dtype) if ok else value
    if isinstance(value, (str, bytes)):
        return value
    if isinstance(value, dict):
        return {_cast(k, device_type, dtype): _cast(v, device_type, dtype) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        out = (_cast(v, device_type, dtype) for v in value)
        return type(value)(out) if isinstance(value, list) else tuple(out)
    return value


def custom_fwd(fwd=None, *, device_type, cast_inputs=None):
    """Decorator for a custom autograd Function's forward (torch.amp.custom_fwd): records the autocast state for
    custom_bwd; with cast_inputs, runs forward with autocast off and its floating inputs cast to cast_inputs.

    Args:
        fwd: the forward staticmethod (or None: returns a decorator).
        device_type: "cuda" or "cpu".
        cast_inputs: a dtype, or None.

    Returns:
        The decorated forward.

    Example:
        >>> class Double(rawdev.autograd.Function):
        ...     @staticmethod
        ...     @rawdev.amp.custom_fwd(device_type="cpu", cast_inputs=rawdev.float32)
        ...     def forward(ctx, x):
        ...         return x * 2
        ...     @staticmethod
        ...     @rawdev.amp.custom_bwd(device_type="cpu")
        ...     def backward(ctx, g):
        ...         return g * 2
    """
    if not isinstance(device_type, str):
        raise ValueError(f"Expected `device_type` of type `str`, got: `{type(device_type)}`")
    if fwd is None:
        return functools.partial(custom_fwd, device_type=device_type, cast_inputs=cast_inputs)

    @functools.wraps(fwd)
    def decorate_fwd(*args, **kwargs):
        args[0]._dtype = get_autocast_dtype(device_type)
        if cast_inputs is None:
            args[0]._fwd_used_autocast = is_autocast_enabled(device_type)
            return fwd(*args, **kwargs)
        on = is_autocast_enabled(device_type)
        args[0]._fwd_used_autocast = False
        if on:
            with autocast(device_type=device_type, enabled=False):
                return fwd(*_cast(args, device_type, cast_inputs), **_cast(kwargs, device_type, cast_inputs))
        return fwd(*args, **kwargs)
    return decorate_fwd


def custom_bwd(bwd=None, *, device_type):
    """Decorator for a custom autograd Function's backward (torch.amp.custom_bwd): runs it with the autocast
    state its forward ran with.

    Args:
        bwd: the backward staticmethod (or None: returns a decorator).
        device_type: "cuda" or "cpu".

    Returns:
        The decorated backward.

    Example:
        >>> wrapped = rawdev.amp.custom_bwd(lambda ctx, g: g, device_type="cpu")
    """
    if not isinstance(device_type, str):
        raise ValueError(f"Expected `device_type` of type `str`, got: `{type(device_type)}`")
    if bwd is None:
        return functools.partial(custom_bwd, device_type=device_type)

    @functools.wraps(bwd)
    def decorate_bwd(*args, **kwargs):
        with autocast(device_type=device_type, enabled=args[0]._fwd_used_autocast, dtype=args[0]._dtype):
            return bwd(*args, **kwargs)
    return decorate_bwd
