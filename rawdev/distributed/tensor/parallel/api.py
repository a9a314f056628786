"""parallelize_module: apply tensor-parallel styles to a module or to its submodules by name."""
from __future__ import annotations

import fnmatch
import warnings
from typing import Any

from ...device_mesh import DeviceMesh, _current_mesh
from .style import ParallelStyle

__all__ = ["parallelize_module"]


def parallelize_module(module: Any, device_mesh: DeviceMesh | None = None, parallelize_plan: Any = None, *,
                       src_data_rank: int | None = 0) -> Any:
    """Shard `module` for tensor parallelism over a 1-d mesh, as PyTorch's parallelize_module.

    Args:
        module: the nn.Module (changed in place and returned).
        device_mesh: a 1-d DeviceMesh (default: the one of an enclosing `with mesh:`).
        parallelize_plan: one ParallelStyle for `module` itself, or a dict from submodule path to style; a path's
            parts may use fnmatch wildcards (`"layers.*.attention.wq"`). A path that names no submodule is skipped
            with a warning, as in PyTorch.
        src_data_rank: accepted for PyTorch's signature; parameters are taken from the mesh's first rank.

    Returns:
        The module.

    Example:
        >>> mesh = init_device_mesh("cpu", (2,))
        >>> model = parallelize_module(model, mesh, {"in_proj": ColwiseParallel(), "out_proj": RowwiseParallel()})
    """
    mesh = device_mesh if device_mesh is not None else _current_mesh()
    if parallelize_plan is None:
        return module
    if isinstance(parallelize_plan, ParallelStyle):
        return parallelize_plan._apply(module, mesh)
    if not isinstance(parallelize_plan, dict):
        raise TypeError(f"Expect Union[ParallelStyle, Dict[str, ParallelStyle]] for parallelize_plan, "
                        f"{type(parallelize_plan)} found!")
    for path, style in parallelize_plan.items():
        parts = path.split(".")
        if not path or not all(parts):
            raise ValueError(f"Expect module path to be non-empty, but got {path!r}!")
        misses: list[tuple[str, Any]] = []
        if not _apply_path(module, mesh, parts, style, misses):
            atom, where = misses[0]
            warnings.warn(f"Parallelize plan key '{path}' could not be resolved: no submodule matching token "
                          f"'{atom}' in module {type(where).__name__}, skipping this plan entry.", stacklevel=2)
    return module


def _apply_path(module, mesh, parts, style, misses):
    """Apply `style` to the submodules `parts` leads to (fnmatch per part); returns how many it reached."""
    atom, rest = parts[0], parts[1:]
    matched = [sub for name, sub in module.named_children() if fnmatch.fnmatchcase(name, atom)]
    if not matched:
        misses.append((atom, module))
        return 0
    n = 0
    for sub in matched:
        if rest:
            n += _apply_path(sub, mesh, rest, style, misses)
        else:
            parallelize_module(sub, mesh, style)
            n += 1
    return n
