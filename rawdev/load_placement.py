"""What a load may use and where its tensors go: the checkpoint errors, the header entries, the memory budgets
(host, and a cuda device's driver-free plus pool-cached bytes) and the placement of loaded tensors by
map_location. Shared by rawdev.serialization (safetensors files) and rawdev.utils.ptfile (PyTorch .pt files),
which otherwise import nothing of each other's."""
from __future__ import annotations

import os

from .device import as_device
from .safe_globals import WeightsOnlyError
from .tensor.core import Tensor


class CheckpointError(RuntimeError):
    """A checkpoint file rawdev cannot load: what is wrong, in which file, for which tensor."""


class WeightsOnlyCheckpointError(CheckpointError, WeightsOnlyError):
    """A .pt file names a class that weights_only (PyTorch 2.6's default) refuses: a CheckpointError, and the
    pickle.UnpicklingError PyTorch raises, with PyTorch's message."""


def _bad(path, why):
    return CheckpointError(f"rawdev.load: '{path}' is not a readable safetensors file ({why}). rawdev checkpoints "
                           "are safetensors files written by rawdev.save or safetensors.torch.save_file.")


class _Entry:
    __slots__ = ("name", "st", "dtype", "shape", "begin", "end")

    def __init__(self, name, st, dtype, shape, begin, end):
        self.name, self.st, self.dtype, self.shape, self.begin, self.end = name, st, dtype, shape, begin, end

    @property
    def nbytes(self):
        return self.end - self.begin


def _fmt(n):
    for unit in ("bytes", "KiB", "MiB", "GiB", "TiB", "PiB"):
        if n < 1024 or unit == "PiB":
            return f"{n} bytes" if unit == "bytes" else f"{n:.1f} {unit}"
        n /= 1024


def host_memory_available():
    """Bytes of host memory a load may use: MemAvailable from /proc/meminfo (else free physical pages)."""
    try:
        with open("/proc/meminfo") as fh:
            for line in fh:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    try:
        return os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (ValueError, OSError, AttributeError):
        return 1 << 62


def device_memory_available(dev):
    """(driver free bytes, bytes rawdev's pool caches but no tensor uses) on a cuda device: what a load can use,
    since an allocation reuses cached blocks (and returns them to the driver) before it fails."""
    from .cuda import mem_get_info, memory_allocated, memory_reserved
    free, _ = mem_get_info(dev)
    return free, max(0, memory_reserved(dev) - memory_allocated(dev))


def _check_budget(path, entries, where, budget):
    """Refuse, naming the tensor that crosses it, a load whose tensors exceed `budget` bytes of `where`."""
    total = 0
    for e in sorted(entries, key=lambda e: -e.nbytes):
        total += e.nbytes
        if total > budget:
            raise CheckpointError(
                f"rawdev.load: '{path}' does not fit in {where}: tensor '{e.name}' ({e.st} {list(e.shape)}, "
                f"{_fmt(e.nbytes)}) brings the checkpoint to {_fmt(total)} of {_fmt(sum(x.nbytes for x in entries))}, "
                f"more than the {_fmt(budget)} available")


def _saved_devices(structure):
    """{tensor name: the device it was saved from} from a structure."""
    found, stack = {}, [structure]
    while stack:
        x = stack.pop()
        if isinstance(x, dict):
            if "tensor" in x and isinstance(x.get("device"), str):
                found[x["tensor"]] = x["device"]
            stack.extend(v for v in x.values() if isinstance(v, (dict, list)))
        elif isinstance(x, list):
            stack.extend(x)
    return found


def _place(path, tensors, structure, dev, mapper, devices=None):
    """Move the loaded cpu tensors where map_location (else the device they were saved from) says."""
    from .tensor.moves import move_tensors
    saved = _saved_devices(structure) if structure is not None else (devices or {})
    target = {}
    for name, t in tensors.items():
        loc = saved.get(name, "cpu")
        if mapper is not None and callable(mapper):
            res = mapper(t, loc)
            if isinstance(res, Tensor) and res is not t:
                tensors[name] = res
            continue
        if mapper is not None:
            loc = mapper.get(loc, loc)
        try:
            where = dev if dev is not None else as_device(loc)
        except (ValueError, TypeError, RuntimeError):
            raise _bad(path, f"tensor '{name}' was saved from an unknown device {loc[:40]!r}") from None
        if where is not None and where.type == "cuda":
            target[name] = where
    for where in set(target.values()):
        names = [n for n, d in target.items() if d == where]
        from .cuda import is_available
        if not is_available():
            raise RuntimeError("Attempting to deserialize object on a CUDA device but torch.cuda.is_available() is "
                               "False. If you are running on a CPU-only machine, please use torch.load with "
                               "map_location=torch.device('cpu') to map your storages to the CPU.")
        free, cached = device_memory_available(where)
        need = sum(tensors[n].nbytes for n in names)
        if need > free + cached:
            raise CheckpointError(f"rawdev.load: '{path}' needs {_fmt(need)} on {where}, which has "
                                  f"{_fmt(free + cached)} free ({_fmt(cached)} of it cached by rawdev's pool)")
        move_tensors([(n, tensors[n]) for n in names], where, what=f"checkpoint {os.path.basename(path)}")
