"""`torch.nn.parallel.parallel_apply`: modules[i](*inputs[i], **kwargs_tup[i]) for every i, each in its own
thread (one call runs in the caller's thread) with its device current, the caller's stream of that device, grad
mode and cuda autocast state; an exception in a replica is re-raised in the caller as PyTorch does: the same
type, "Caught <Type> in replica <i> on device <d>." and the original traceback."""
import sys
import threading
import traceback

from ...autograd.grad_mode import is_grad_enabled, set_grad_enabled
from ...device import current_cuda_index, set_current_cuda_index
from ...ops import autocast_mode as _autocast
from ...tensor.core import Tensor
from ._devices import device_index

__all__ = ["parallel_apply", "get_a_var"]


class _ExceptionWrapper:
    """An exception from a worker thread, re-raised in the caller with where it happened."""

    def __init__(self, where):
        exc_type, exc, tb = sys.exc_info()
        self.exc_type = exc_type
        self.exc_msg = "".join(traceback.format_exception(exc_type, exc, tb))
        self.where = where

    def reraise(self):
        msg = f"Caught {self.exc_type.__name__} {self.where}.\nOriginal {self.exc_msg}"
        try:
            exception = self.exc_type(msg)
        except Exception:   # an exception type whose constructor wants other arguments
            raise RuntimeError(msg) from None
        raise exception


def get_a_var(obj):
    """The first tensor found in obj (nested lists, tuples, dict items), or None.

    Args:
        obj: a tensor or a structure holding tensors.

    Returns:
        A Tensor or None.
    """
    if isinstance(obj, Tensor):
        return obj
    if isinstance(obj, (list, tuple)):
        for result in map(get_a_var, obj):
            if isinstance(result, Tensor):
                return result
    if isinstance(obj, dict):
        for result in map(get_a_var, obj.items()):
            if isinstance(result, Tensor):
                return result
    return None


def _caller_stream(index):
    """(runtime Device, the stream this thread queues cuda:index's work on), to make current in a worker."""
    from ...runtime.device import get_device
    dev = get_device(index)
    return dev, dev.compute_stream


def parallel_apply(modules, inputs, kwargs_tup=None, devices=None):
    """Run modules[i](*inputs[i], **kwargs_tup[i]) for all i in parallel threads.

    Args:
        modules: the modules (e.g. replicate's replicas).
        inputs: one entry per module: a tuple or list of positional arguments, or a single argument.
        kwargs_tup: one dict of keyword arguments per module (default none).
        devices: the device per module (default: the device of the first tensor in its inputs).

    Returns:
        The list of outputs, in the modules' order.

    Example:
        >>> outs = nn.parallel.parallel_apply(replicas, [(x0,), (x1,)], devices=[0, 1])
    """
    if len(modules) != len(inputs):
        raise AssertionError(f"The number of modules {len(modules)} is not equal to the number of inputs "
                             f"{len(inputs)}")
    if kwargs_tup is not None:
        if len(modules) != len(kwargs_tup):
            raise AssertionError("The number of modules and kwargs_tup must be equal")
    else:
        kwargs_tup = ({},) * len(modules)
    if devices is not None:
        if len(modules) != len(devices):
            raise AssertionError("The number of modules and devices must be equal")
    else:
        devices = [None] * len(modules)
    devices = [None if d is None else device_index(d, True) for d in devices]
    streams = [None if d is None or d < 0 else _caller_stream(d) for d in devices]
    lock = threading.Lock()
    results = {}
    grad_enabled = is_grad_enabled()
    caller_autocast = _autocast.state()
    autocast_enabled, autocast_dtype = caller_autocast.enabled["cuda"], caller_autocast.dtype["cuda"]

    def worker(i, module, args, kwargs, dev=None, stream=None):
        if dev is None:
            t = get_a_var(args)
            if t is None:
                try:
                    raise RuntimeError("no tensor input")
                except RuntimeError:
                    with lock:
                        results[i] = _ExceptionWrapper(f"in replica {i}, no device was provided and no tensor "
                                                       "input was found; device cannot be resolved")
                return
            dev = t.get_device()
            stream = _caller_stream(dev) if dev >= 0 else None
        prev_index = current_cuda_index()
        st = _autocast.state()
        prev_autocast, prev_dtype = st.enabled["cuda"], st.dtype["cuda"]
        prev_stream = None
        try:
            with set_grad_enabled(grad_enabled):
                if dev >= 0:
                    set_current_cuda_index(dev)
                if stream is not None:
                    from ...runtime.device import set_current_stream
                    prev_stream = (stream[0], set_current_stream(*stream))
                _autocast.set_enabled("cuda", autocast_enabled)
                st.dtype["cuda"] = autocast_dtype
                if not isinstance(args, (list, tuple)):   # a lone tensor is one argument, not sliced
                    args = (args,)
                output = module(*args, **kwargs)
            with lock:
                results[i] = output
        except Exception:
            with lock:
                results[i] = _ExceptionWrapper(f"in replica {i} on device {dev}")
        finally:
            _autocast.set_enabled("cuda", prev_autocast)
            st.dtype["cuda"] = prev_dtype
            if prev_stream is not None:
                from ...runtime.device import set_current_stream
                set_current_stream(*prev_stream)
            set_current_cuda_index(prev_index)

    if len(modules) > 1:
        threads = [threading.Thread(target=worker, args=(i, m, a, k, d, s))
                   for i, (m, a, k, d, s) in enumerate(zip(modules, inputs, kwargs_tup, devices, streams))]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    else:
        worker(0, modules[0], inputs[0], kwargs_tup[0], devices[0], streams[0])

    outputs = []
    for i in range(len(inputs)):
        output = results[i]
        if isinstance(output, _ExceptionWrapper):
            output.reraise()
        outputs.append(output)
    return outputs
