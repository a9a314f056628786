"""`torch.distributed.device_mesh`: DeviceMesh and init_device_mesh — the ranks of a job laid out in an n-d array,
with one process group per mesh dimension (the ranks that differ only along it). Tensor parallelism
(rawdev.distributed.tensor) places shards on a mesh's dimensions. See docs/INTERNALS.md, "DeviceMesh and DTensor"."""
from __future__ import annotations

import sys
from typing import Any

import numpy as np

from .process_group import default_group, init_process_group, is_initialized, new_group

__all__ = ["DeviceMesh", "init_device_mesh"]

_entered: list[DeviceMesh] = []     # meshes of enclosing `with mesh:` blocks


def _current_mesh() -> DeviceMesh:
    """The innermost mesh entered with `with mesh:` (DTensor APIs use it when device_mesh is omitted)."""
    if not _entered:
        raise RuntimeError("No device mesh is currently active! Pass device_mesh or enter `with device_mesh:`")
    return _entered[-1]


def _as_array(mesh):
    if hasattr(mesh, "detach"):          # a rawdev tensor of ranks
        mesh = mesh.detach().cpu().numpy()
    return np.array(mesh, dtype=np.int64)


class DeviceMesh:
    """torch.distributed.device_mesh.DeviceMesh: the job's ranks laid out in an n-d array.

    Every rank builds the same mesh (same order of construction): for each mesh dimension one process group is
    made per line of ranks along it (new_group, called alike on every rank), and this rank keeps the one it is in.

    Args:
        device_type: "cpu" or "cuda".
        mesh: the global ranks as a nested list, numpy array or tensor of integers (each rank once).
        mesh_dim_names: a name per dimension (used by `mesh["tp"]`).

    Example:
        >>> mesh = DeviceMesh("cpu", [[0, 1], [2, 3]], mesh_dim_names=("dp", "tp"))
        >>> mesh["tp"].size()
        2
    """

    def __init__(self, device_type: str, mesh: Any, *, mesh_dim_names: tuple[str, ...] | None = None,
                 _init_backend: bool = True) -> None:
        arr = _as_array(mesh)
        if arr.ndim == 0:
            raise ValueError("DeviceMesh: mesh must have at least one dimension")
        if sorted(arr.ravel().tolist()) != sorted(set(arr.ravel().tolist())):
            raise RuntimeError(f"DeviceMesh cannot have duplicate values, but found {arr.tolist()}")
        if mesh_dim_names is not None:
            mesh_dim_names = tuple(mesh_dim_names)
            if len(mesh_dim_names) != arr.ndim:
                raise RuntimeError(f"mesh_dim_names {mesh_dim_names} must have the same length as mesh.ndim "
                                   f"{arr.ndim}")
            if len(set(mesh_dim_names)) != len(mesh_dim_names):
                raise RuntimeError(f"Each mesh_dim_name must be unique. Found repeated mesh_dim_name in "
                                   f"mesh_dim_names {mesh_dim_names}")
        self.device_type = str(device_type)
        self._mesh = arr
        self.mesh_dim_names = mesh_dim_names
        self._groups: list[Any] = []
        if _init_backend:
            if not is_initialized():      # as PyTorch: the mesh makes the default group (env://) when there is none
                init_process_group("nccl" if self.device_type == "cuda" else "gloo")
            world = default_group()
            if arr.size > world.size() or int(arr.max()) >= world.size() or int(arr.min()) < 0:
                raise RuntimeError(f"Mesh should not be bigger than default world size {world.size()}, but found "
                                   f"{arr.size} ranks!")
            me = world.rank()
            for dim in range(arr.ndim):
                lines = np.moveaxis(arr, dim, -1).reshape(-1, arr.shape[dim])
                mine = None
                for line in lines:            # every rank makes every group, in the same order
                    pg = new_group(line.tolist())
                    if me in line.tolist():
                        mine = pg
                self._groups.append(mine)

    # ------------------------------------------------------------------ layout
    @property
    def mesh(self) -> Any:
        """The ranks as an int64 tensor (a numpy array if the tensor package is not loaded)."""
        # rawdev.distributed sits below the tensor layer: the package (always loaded before this module) builds
        # the tensor, rather than an upward import
        top = sys.modules.get("rawdev")
        return top.tensor(self._mesh) if top is not None and hasattr(top, "tensor") else self._mesh.copy()

    @property
    def ndim(self) -> int:
        """The number of mesh dimensions."""
        return self._mesh.ndim

    @property
    def shape(self) -> tuple[int, ...]:
        """The mesh's shape."""
        return tuple(self._mesh.shape)

    def size(self, mesh_dim: int | None = None) -> int:
        """The number of ranks in the mesh, or along `mesh_dim`."""
        return int(self._mesh.size) if mesh_dim is None else int(self._mesh.shape[self._dim(mesh_dim)])

    def get_rank(self) -> int:
        """This process's global rank."""
        return default_group().rank()

    def get_coordinate(self) -> list[int] | None:
        """This rank's index in the mesh (None when it is not in it)."""
        where = np.argwhere(self._mesh == self.get_rank())
        return [int(i) for i in where[0]] if len(where) else None

    def get_local_rank(self, mesh_dim: int | str | None = None) -> int:
        """This rank's coordinate along `mesh_dim` (which may be omitted on a 1-d mesh).

        Args:
            mesh_dim: index or name of the mesh dimension.

        Returns:
            The coordinate (also its rank in that dimension's group).
        """
        if mesh_dim is None:
            if self.ndim > 1:
                raise RuntimeError(f"Found the DeviceMesh have {self.ndim} dimensions. Optional kwarg `mesh_dim` "
                                   f"needs to be specified when device_mesh.ndim > 1.")
            mesh_dim = 0
        coord = self.get_coordinate()
        if coord is None:
            raise RuntimeError("get_local_rank: this rank is not in the mesh")
        return coord[self._dim(mesh_dim)]

    def get_group(self, mesh_dim: int | str | None = None) -> Any:
        """The process group of mesh dimension `mesh_dim` that holds this rank.

        Args:
            mesh_dim: index or name (may be omitted on a 1-d mesh).

        Returns:
            The ProcessGroup.
        """
        if mesh_dim is None:
            if self.ndim > 1:
                raise RuntimeError(f"Found the DeviceMesh have {self.ndim} dimensions. Optional kwarg `mesh_dim` "
                                   f"needs to be specified when device_mesh.ndim > 1. If you want to get the list "
                                   f"of all the ProcessGroups in the DeviceMesh,please use `get_all_groups()` "
                                   f"instead.")
            mesh_dim = 0
        return self._groups[self._dim(mesh_dim)]

    def get_all_groups(self) -> list[Any]:
        """The process groups of every mesh dimension, in order."""
        return list(self._groups)

    def _dim(self, mesh_dim):
        if isinstance(mesh_dim, str):
            if self.mesh_dim_names is None or mesh_dim not in self.mesh_dim_names:
                raise KeyError(f"Mesh dimension '{mesh_dim}' does not exist. Available mesh dimensions are: "
                               f"mesh_dim_names={self.mesh_dim_names}")
            return self.mesh_dim_names.index(mesh_dim)
        d = int(mesh_dim)
        if not -self.ndim <= d < self.ndim:
            raise IndexError(f"mesh_dim {d} is out of range for a {self.ndim}-d mesh")
        return d % self.ndim

    def __getitem__(self, mesh_dim_names: str | tuple[str, ...]) -> DeviceMesh:
        """The sub-mesh of the named dimensions that holds this rank (its groups are this mesh's own)."""
        names = (mesh_dim_names,) if isinstance(mesh_dim_names, str) else tuple(mesh_dim_names)
        if not self.mesh_dim_names:
            raise RuntimeError("Cannot slice a DeviceMesh without mesh_dim_names!")
        for n in names:
            if n not in self.mesh_dim_names:
                raise KeyError(f"Invalid mesh_dim_names {names} specified. Valid mesh_dim_names are "
                               f"{self.mesh_dim_names}.")
        if names == self.mesh_dim_names:
            return self
        dims = [self.mesh_dim_names.index(n) for n in names]
        coord = self.get_coordinate()
        if coord is None:
            raise RuntimeError("Cannot slice a DeviceMesh this rank is not in")
        index = tuple(slice(None) if d in dims else coord[d] for d in range(self.ndim))
        kept = sorted(dims)
        sub = np.transpose(self._mesh[index], [kept.index(d) for d in dims])
        out = DeviceMesh(self.device_type, sub, mesh_dim_names=names, _init_backend=False)
        out._groups = [self._groups[d] for d in dims]
        return out

    def __enter__(self) -> DeviceMesh:
        _entered.append(self)
        return self

    def __exit__(self, *exc: object) -> None:
        _entered.pop()

    def __eq__(self, other: object) -> bool:
        return (isinstance(other, DeviceMesh) and self.device_type == other.device_type
                and self._mesh.shape == other._mesh.shape and bool((self._mesh == other._mesh).all())
                and self.mesh_dim_names == other.mesh_dim_names)

    def __hash__(self) -> int:
        return hash((self.device_type, self._mesh.shape, tuple(self._mesh.ravel().tolist()), self.mesh_dim_names))

    def __repr__(self) -> str:
        names = "" if self.mesh_dim_names is None else f", mesh_dim_names={self.mesh_dim_names}"
        return f"DeviceMesh('{self.device_type}', {self._mesh.tolist()}{names})"


def init_device_mesh(device_type: str, mesh_shape: tuple[int, ...], *,
                     mesh_dim_names: tuple[str, ...] | None = None) -> DeviceMesh:
    """torch.distributed.device_mesh.init_device_mesh: a mesh of all ranks 0..n-1 in row-major order.

    Args:
        device_type: "cpu" or "cuda".
        mesh_shape: the mesh's shape; its product must be the world size.
        mesh_dim_names: a name per dimension.

    Returns:
        The DeviceMesh.

    Example:
        >>> mesh = init_device_mesh("cpu", (2, 2), mesh_dim_names=("dp", "tp"))
    """
    shape = tuple(int(s) for s in mesh_shape)
    if not is_initialized():
        init_process_group("nccl" if device_type == "cuda" else "gloo")
    if mesh_dim_names is not None:
        if len(set(mesh_dim_names)) != len(mesh_dim_names):
            raise RuntimeError(f"Each mesh_dim_name must be unique. Found repeated mesh_dim_name in "
                               f"mesh_dim_names {tuple(mesh_dim_names)}")
        if len(mesh_shape) != len(mesh_dim_names):
            raise RuntimeError(f"mesh_shape and mesh_dim_names should have same length! Found len(mesh_dim_names): "
                               f"{len(mesh_dim_names)} and len(mesh_shape):{len(mesh_shape)}.")
    n = int(np.prod(shape))
    world = default_group().size()
    if n != world:
        raise RuntimeError(f"init_device_mesh: mesh_shape {shape} holds {n} ranks but the world size is {world}")
    return DeviceMesh(device_type, np.arange(n).reshape(shape), mesh_dim_names=mesh_dim_names)
