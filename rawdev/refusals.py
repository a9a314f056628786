"""A torch module or name rawdev does not have, by design. Importing it and its names works, so a program whose
import lines name it (and which only uses it when run with several processes) runs; calling anything from it
raises NotImplementedError saying which feature and why. Each such name carries `__rawdev_refused__` (the
reason), which tools/compat_scan.py reports as refused rather than resolved."""
from typing import Any

DISTRIBUTED = ("rawdev's distributed training is data parallel (DistributedDataParallel, "
               "FullyShardedDataParallel, fully_shard), tensor parallel (DeviceMesh, DTensor, parallelize_module) "
               "and RPC, over process groups, the collectives and the `rawdev run` launcher (rawdev.distributed); "
               "other parts (pipeline schedules, torchelastic) are not built")


class Refused:
    """A stand-in for a torch name rawdev refuses: calling it (or anything reached from it) raises."""

    def __init__(self, path: str, feature: str, why: str = DISTRIBUTED) -> None:
        self.__rawdev_refused__ = f"{feature} is not supported by rawdev: {why}"
        self._path, self._feature, self._why = path, feature, why

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        raise NotImplementedError(f"{self._path}: {self.__rawdev_refused__}")

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__"):
            raise AttributeError(name)
        return Refused(f"{self._path}.{name}", self._feature, self._why)

    def __repr__(self) -> str:
        return f"<{self._path}: refused by rawdev>"


def refusing_getattr(module: str, feature: str, why: str = DISTRIBUTED):
    """A module-level __getattr__ for `module` (torch's name) whose every public name is Refused."""
    def __getattr__(name: str) -> Any:
        if name.startswith("__"):
            raise AttributeError(name)
        return Refused(f"{module}.{name}", feature, why)
    return __getattr__


_COMPLEX = "rawdev tensors have no complex dtypes (complex64/complex128); keep real and imaginary parts as two tensors"
polar = Refused("torch.polar", "complex tensors (torch.polar)", _COMPLEX)
view_as_complex = Refused("torch.view_as_complex", "complex tensors (torch.view_as_complex)", _COMPLEX)
view_as_real = Refused("torch.view_as_real", "complex tensors (torch.view_as_real)", _COMPLEX)

