"""`torch.nn.parallel.scatter_gather`: scatter splits the tensors of a nested structure (tuples, lists, dicts,
namedtuples) along `dim` into one chunk per target device and moves each chunk there; gather concatenates
per-device outputs on one device (-1: the cpu). Both are differentiable: the chunk's gradient flows back to the
input's device, the gathered result's gradient is split back onto the devices it came from (the autograd of
`chunk`, `cat` and cross-device `to`, which is what PyTorch's Scatter/Gather functions compute)."""
import warnings

from ...tensor.core import Tensor
from ._devices import as_torch_device, device_index

__all__ = ["scatter", "scatter_kwargs", "gather"]


def _is_namedtuple(obj):
    return isinstance(obj, tuple) and hasattr(obj, "_asdict") and hasattr(obj, "_fields")


def _scatter_tensor(t, target_gpus, dim):
    chunks = t.chunk(len(target_gpus), dim)   # may give fewer chunks than devices, as PyTorch's
    return tuple(c.to(as_torch_device(g)) for c, g in zip(chunks, target_gpus))


def scatter(inputs, target_gpus, dim=0):
    """Split every tensor in `inputs` along `dim` into len(target_gpus) chunks, chunk i on target_gpus[i];
    other objects are repeated by reference.

    Args:
        inputs: a tensor, or tuples / lists / dicts / namedtuples of them (nested).
        target_gpus: the devices (ints, "cuda:i" strings or devices).
        dim: the dimension to split.

    Returns:
        A list with one entry per chunk, each of the structure of `inputs` (a tuple of inputs: a tuple).

    Example:
        >>> parts = nn.parallel.scatter(x, [0, 1])   # x[:n//2] on cuda:0, the rest on cuda:1
    """
    gpus = [device_index(g, True) for g in target_gpus]

    def scatter_map(obj):
        if isinstance(obj, Tensor):
            return _scatter_tensor(obj, gpus, dim)
        if _is_namedtuple(obj):
            return [type(obj)(*args) for args in zip(*map(scatter_map, obj))]
        if isinstance(obj, tuple) and len(obj) > 0:
            return list(zip(*map(scatter_map, obj)))
        if isinstance(obj, list) and len(obj) > 0:
            return [list(i) for i in zip(*map(scatter_map, obj))]
        if isinstance(obj, dict) and len(obj) > 0:
            return [type(obj)(i) for i in zip(*map(scatter_map, obj.items()))]
        return [obj for _ in gpus]

    return scatter_map(inputs)


def scatter_kwargs(inputs, kwargs, target_gpus, dim=0):
    """scatter for a call's positional and keyword arguments, padded to the same number of chunks.

    Args:
        inputs: the positional arguments (a tuple).
        kwargs: the keyword arguments (a dict or None).
        target_gpus: the devices.
        dim: the dimension to split.

    Returns:
        (tuple of argument tuples, tuple of kwargs dicts), one entry per device used.
    """
    scattered_inputs = scatter(inputs, target_gpus, dim) if inputs else []
    scattered_kwargs = scatter(kwargs, target_gpus, dim) if kwargs else []
    if len(scattered_inputs) < len(scattered_kwargs):
        scattered_inputs.extend(() for _ in range(len(scattered_kwargs) - len(scattered_inputs)))
    elif len(scattered_kwargs) < len(scattered_inputs):
        scattered_kwargs.extend({} for _ in range(len(scattered_inputs) - len(scattered_kwargs)))
    return tuple(scattered_inputs), tuple(scattered_kwargs)


def _gather_tensors(target_device, dim, tensors):
    if any(t.device.type == "cpu" for t in tensors):
        raise AssertionError("Gather function not implemented for CPU tensors")
    dest = "cpu" if target_device == "cpu" else device_index(target_device, True) if target_device is not None \
        else device_index("cuda")
    if dim == 0 and all(t.dim() == 0 for t in tensors):
        warnings.warn("Was asked to gather along dimension 0, but all input tensors were scalars; will instead "
                      "unsqueeze and return a vector.", stacklevel=3)
        tensors = [t.view(1) for t in tensors]
    from ...ops.join import cat
    return cat([t.to(as_torch_device(dest)) for t in tensors], dim)


def gather(outputs, target_device, dim=0):
    """Concatenate per-device outputs along `dim` on `target_device`, through the same nesting (tuples,
    lists, dicts, namedtuples) the outputs have.

    Args:
        outputs: a list with one output per device (all of the same structure), on cuda devices.
        target_device: where the result goes: a cuda index or device, or -1 / "cpu" for the cpu.
        dim: the dimension to concatenate.

    Returns:
        The gathered output, of the outputs' structure.

    Example:
        >>> y = nn.parallel.gather([y0, y1], target_device=0)
    """
    def gather_map(outs):
        out = outs[0]
        if isinstance(out, Tensor):
            return _gather_tensors(target_device, dim, list(outs))
        if out is None:
            return None
        if isinstance(out, dict):
            if not all(len(out) == len(d) for d in outs):
                raise ValueError("All dicts must have the same number of keys")
            return type(out)((k, gather_map([d[k] for d in outs])) for k in out)
        if _is_namedtuple(out):
            return type(out)._make(map(gather_map, zip(*outs)))
        return type(out)(map(gather_map, zip(*outs)))

    return gather_map(outputs)
