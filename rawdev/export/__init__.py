"""`torch.export`: capture a module's forward, run on example inputs, as a graph of rawdev's ops
(an :class:`ExportedProgram` over a ``torch.fx`` GraphModule), with the input shapes it accepts.

``export(model, (x,))`` runs the forward once on the example inputs while rawdev's public op entry points are
recorded (rawdev/export/recorder.py). Sizes are read from the examples: a dimension is static (the exported module
refuses another size) unless ``dynamic_shapes`` names it with a :class:`Dim`; the export then checks that the graph
did not bake that size in, by running the graph and the model at a second size and comparing. Control flow on
tensor values cannot be captured and raises. With a dynamic dimension, sizes the forward reads from traced tensors
are SymInts (ints that carry the graph node computing them), so `x.view(x.size(0), -1)` and `torch.arange(T)` are
recorded with the run-time size. Differences from PyTorch: the nodes are rawdev's public ops
(``F.linear``, ``Tensor.relu``), not ATen's core set, and ``run_decompositions`` returns the program as it is;
``torch.export.save``/``load`` are refused (the graph names Python functions, which rawdev does not load from
files).
"""
from __future__ import annotations

import inspect
from typing import Any

from ..refusals import Refused
from .dynamic_shapes import Constraint, Dim, ShapesCollection, dims, dynamic_dim
from .exported_program import ExportedProgram, ExportGraphSignature, InputSpec, OutputSpec, _check_inputs, _InputSpec
from .recorder import DataDependentError, Recorder

__all__ = ["export", "ExportedProgram", "ExportGraphSignature", "Dim", "dims", "dynamic_dim", "ShapesCollection",
           "Constraint", "constrain_as_size", "constrain_as_value", "UserError", "ConstraintViolationError",
           "DataDependentError", "save", "load"]


class UserError(RuntimeError):
    """torch._dynamo.exc.UserError's role: the export was asked for something the program cannot give."""


class ConstraintViolationError(UserError):
    """A dimension marked dynamic is fixed by the program (or its example size), as PyTorch reports."""


_NO_FILES = ("an ExportedProgram's graph calls Python functions by reference; rawdev writes no code into files and "
             "loads none. Save the model's state_dict and export again after loading it")
save = Refused("torch.export.save", "saving ExportedPrograms (torch.export.save)", _NO_FILES)
load = Refused("torch.export.load", "loading ExportedPrograms (torch.export.load)", _NO_FILES)


def constrain_as_size(symbol: Any, min: int | None = None, max: int | None = None) -> None:  # noqa: A002
    """Declare that a Python int read from a tensor is a valid size in ``[min, max]`` (default ``[0, inf)``):
    checked here, where the program runs eagerly. (Exporting a forward that reads a tensor's value with
    ``.item()`` raises DataDependentError: rawdev's graphs hold no symbolic ints.)"""
    constrain_as_value(symbol, 0 if min is None else min, max)


def constrain_as_value(symbol: Any, min: int | None = None, max: int | None = None) -> None:  # noqa: A002
    """Declare that a Python number read from a tensor lies in ``[min, max]``: checked here (RuntimeError when it
    does not)."""
    v = int(symbol)
    if (min is not None and v < min) or (max is not None and v > max):
        raise RuntimeError(f"Invalid value range for {v} between [{min}, {max}].")


def export(mod: Any, args: tuple[Any, ...], kwargs: dict[str, Any] | None = None, *,
           dynamic_shapes: Any = None, strict: bool = True, preserve_module_call_signature: tuple[str, ...] = (),
           constraints: list[Constraint] | None = None) -> ExportedProgram:
    """Capture ``mod``'s forward on the example inputs as an :class:`ExportedProgram`.

    Args:
        mod: the nn.Module to export.
        args: a tuple of example positional inputs.
        kwargs: example keyword inputs.
        dynamic_shapes: per input (by forward's argument name in a dict, or by position in a tuple/list), a dict
            ``{dim: Dim}`` (or a tuple with a Dim or None per dimension) naming its dynamic dimensions.
        strict: PyTorch's choice of tracer; rawdev has one (recording its public ops), for either value.
        preserve_module_call_signature: accepted for PyTorch's signature (submodule calls are traced through).
        constraints: ``dynamic_dim(x, i)`` constraints, torch.export's API before Dim.

    Returns:
        The ExportedProgram: ``ep.module()(*args)`` runs the captured graph.

    Raises:
        DataDependentError: the forward branches on tensor values.
        ConstraintViolationError: a dimension marked dynamic is fixed by the program.

    Example:
        >>> batch = torch.export.Dim("batch", min=2)
        >>> ep = torch.export.export(model, (torch.randn(4, 8),), dynamic_shapes={"x": {0: batch}})
        >>> ep.module()(torch.randn(16, 8)).shape[0]
        16
    """
    from ..autograd.grad_mode import no_grad
    from ..fx import GraphModule
    from ..nn import Module
    from ..tensor import Tensor
    if not isinstance(mod, Module):
        raise ValueError(f"Expected `mod` to be an instance of `torch.nn.Module`, got {type(mod)}.")
    if not isinstance(args, tuple):
        raise UserError(f"Expecting `args` to be a tuple of example positional inputs, got {type(args)}")
    kwargs = dict(kwargs or {})
    bound = inspect.signature(mod.forward).bind(*args, **kwargs)
    inputs = [(name, value) for name, value in bound.arguments.items()]
    for name, value in inputs:
        if not (isinstance(value, Tensor) or value is None or isinstance(value, (bool, int, float, str))):
            raise UserError(f"torch.export (rawdev): input '{name}' is a {type(value).__name__}; rawdev exports "
                            f"forwards whose inputs are tensors (or Python constants, which are specialized)")
    specs, ranges = _input_specs(inputs, dynamic_shapes, constraints or [])

    params: dict[int, tuple[str, Any]] = {}
    for name, p in list(mod.named_parameters()) + list(mod.named_buffers()):
        params.setdefault(id(p), (name, p))
    rec = Recorder(params)
    rec.symbolic_sizes = any(d is not None for sp in specs for _, _, d in sp.ranges)
    rec.module_paths = {id(m): name or "_exported_module" for name, m in mod.named_modules()}
    for name, value in inputs:
        node = rec.graph.placeholder(name)
        if isinstance(value, Tensor):
            rec.values[id(value)] = (node, value)
    with no_grad(), rec:
        rec.patch_module_attributes(mod)
        out = mod(*bound.args, **bound.kwargs)
    rec.graph.output(rec.node_of(out))
    rec.drop_unused_sizes()

    used = {n.target for n in rec.graph.nodes if n.op == "get_attr"}
    state = {name: p for _, (name, p) in params.items()}
    root = {name: state[name] for name in used if name in state}
    root.update(rec.constants)
    root.update(rec.modules)
    gm = GraphModule(root, rec.graph)
    gm.train(mod.training)
    for path, m in rec.modules.items():      # modules recorded whole: their state is the graph's too
        prefix = "" if path == "_exported_module" else path + "."
        used |= {prefix + n for n, _ in list(m.named_parameters()) + list(m.named_buffers())}
    buffers = {name for name, _ in mod.named_buffers()}
    sig = ExportGraphSignature(
        [InputSpec("BUFFER" if n in buffers else "PARAMETER", n, n) for n in sorted(used) if n in state]
        + [InputSpec("CONSTANT_TENSOR", n, n) for n in rec.constants]
        + [InputSpec("USER_INPUT", name, None) for name, _ in inputs],
        [OutputSpec("USER_OUTPUT", f"output_{i}") for i in range(len(_flat_tensors(out)))])
    ep = ExportedProgram(gm, sig, dict(mod.state_dict()), ranges, (args, kwargs), specs, rec.constants)
    _validate(mod, gm, inputs, specs)
    return ep


def _flat_tensors(out: Any) -> list[Any]:
    from ..onnx.tracer import _tensors
    return _tensors(out, [])


def _input_specs(inputs: list[tuple[str, Any]], dynamic_shapes: Any,
                 constraints: list[Constraint]) -> tuple[list[_InputSpec], dict[str, tuple[int, int]]]:
    """Per input: its example shape and, per dimension, (min, max, Dim name or None)."""
    from ..tensor import Tensor
    names = [n for n, _ in inputs]
    if isinstance(dynamic_shapes, (tuple, list)):
        if len(dynamic_shapes) != len(inputs):
            raise UserError(f"When `dynamic_shapes` is specified as a tuple or list, its length must match the "
                            f"number of inputs ({len(inputs)}), got {len(dynamic_shapes)}")
        per_input = dict(zip(names, dynamic_shapes))
    elif isinstance(dynamic_shapes, dict):
        unknown = set(dynamic_shapes) - set(names)
        if unknown:
            raise UserError(f"When `dynamic_shapes` is specified as a dict, its top-level keys must be the arg names "
                            f"{names} of `inputs`, but here they are {sorted(dynamic_shapes)}.")
        per_input = dict(dynamic_shapes)
    elif dynamic_shapes is None:
        per_input = {}
    else:
        raise UserError(f"Unexpected dynamic_shapes {type(dynamic_shapes).__name__}: give a dict or a tuple")
    by_tensor = {id(v): n for n, v in inputs if isinstance(v, Tensor)}
    for c in constraints:
        if id(c.tensor) not in by_tensor:
            raise UserError("a dynamic_dim constraint names a tensor that is not an input of the export")
        name = by_tensor[id(c.tensor)]
        spec = per_input.setdefault(name, {})
        spec[c.index] = Dim(f"{name}_dim{c.index}", min=c.min, max=c.max)
    specs: list[_InputSpec] = []
    ranges: dict[str, tuple[int, int]] = {}
    seen: dict[str, int] = {}
    for name, value in inputs:
        if not isinstance(value, Tensor):
            specs.append(_InputSpec(name, (), (), None, None))
            continue
        spec = per_input.get(name)
        if isinstance(spec, (tuple, list)):
            spec = {i: d for i, d in enumerate(spec) if d is not None}
        spec = spec or {}
        dims_out: list[tuple[int, int, str | None]] = []
        for d, size in enumerate(value.shape):
            dim = spec.get(d)
            if dim is None:
                dims_out.append((size, size, None))
                continue
            if not isinstance(dim, Dim):
                raise UserError(f"Unexpected dimension mapped to index {d} in input '{name}': give a Dim or None")
            if size < 2:
                raise ConstraintViolationError(
                    f"Constraints violated ({dim.__name__})! Not all values of {dim.__name__} = {name}.size()[{d}] "
                    f"are valid because {dim.__name__} was inferred to be a constant ({size}): export specializes "
                    f"sizes 0 and 1; give an example of size 2 or more")
            if not dim.min <= size <= dim.max:
                raise UserError(f"Expected input at {name}.shape[{d}] (example size {size}) to be within the range "
                                f"of {dim!r}")
            if dim.__name__ in seen and seen[dim.__name__] != size:
                raise ConstraintViolationError(f"Constraints violated ({dim.__name__})! The inputs give it sizes "
                                               f"{seen[dim.__name__]} and {size}")
            seen[dim.__name__] = size
            ranges[dim.__name__] = (max(dim.min, 2), dim.max)
            dims_out.append((max(dim.min, 2), dim.max, dim.__name__))
        specs.append(_InputSpec(name, tuple(value.shape), tuple(dims_out), value.dtype, value.device))
    return specs, ranges


def _validate(mod: Any, gm: Any, inputs: list[tuple[str, Any]], specs: list[_InputSpec]) -> None:
    """Run the model and the graph once more, on other inputs: values drawn from the examples' own (so ids stay
    valid ids), at another size of every dynamic dimension; RNG and buffers restored around each run. A graph
    that baked a value in (an op that ran below the recorded ones) or an example size (a dimension the program
    fixes) fails or differs, and the export raises instead of returning a wrong program."""
    import numpy as np

    from .. import random
    from ..autograd.grad_mode import no_grad
    from ..tensor import Tensor
    new_size: dict[str, int] = {}
    for s in specs:
        for size, (_, hi, dim_name) in zip(s.shape, s.ranges):
            if dim_name is not None and dim_name not in new_size:
                new_size[dim_name] = size + 1 if size + 1 <= hi else size - 1
    gen = np.random.default_rng(0)
    alt = []
    for (_, value), s in zip(inputs, specs):
        if not isinstance(value, Tensor):
            alt.append(value)
            continue
        shape = tuple(new_size[d] if d is not None else n for n, (_, _, d) in zip(s.shape, s.ranges))
        pool = value.detach().cpu().numpy().reshape(-1)
        vals = gen.choice(pool, size=shape) if pool.size else np.zeros(shape, dtype=pool.dtype)
        alt.append(Tensor._from_values(np.ascontiguousarray(vals), value.dtype).to(value.device))
    saved = {n: b.detach().clone() for n, b in mod.named_buffers()}
    cuda_devices = sorted({v.device.index or 0 for _, v in inputs if isinstance(v, Tensor) and v.is_cuda})
    rng = random.get_rng_state(), [random.cuda_generator(i).get_state() for i in cuda_devices]

    def restore() -> None:
        random.set_rng_state(rng[0])
        for i, state in zip(cuda_devices, rng[1]):
            random.cuda_generator(i).set_state(state)
        with no_grad():
            for n, b in mod.named_buffers():
                b.copy_(saved[n])
    try:
        with no_grad():
            want = mod(*alt)
    except Exception:     # the second size is not one the model itself accepts: nothing to compare
        restore()
        return
    restore()
    try:
        with no_grad():
            _check_inputs(specs, tuple(alt))
            got = gm(*alt)
        problem = None
        w, g = _flat_tensors(want), _flat_tensors(got)
        if len(w) != len(g) or any(tuple(a.shape) != tuple(b.shape) for a, b in zip(w, g)):
            problem = "its outputs have the example's shapes"
        elif not all(np.allclose(a.detach().cpu().numpy(), b.detach().cpu().numpy(), rtol=1e-4, atol=1e-5,
                                 equal_nan=True) for a, b in zip(w, g)):
            problem = "its outputs differ from the model's"
    except Exception as e:   # noqa: BLE001  (the graph fails at the second size: it specialized)
        problem = f"it fails ({type(e).__name__}: {e})"
    finally:
        restore()
    if problem is not None and not new_size:
        raise UserError(f"torch.export (rawdev): the exported graph does not reproduce the model on other input "
                        f"values ({problem}): part of the forward ran below the ops rawdev records, so its result was "
                        f"baked into the graph as a constant. Call rawdev's public ops (rawdev.<op>, F.<op>, "
                        f"Tensor.<op>) in the forward")
    if problem is not None:
        names = ", ".join(sorted(new_size))
        raise ConstraintViolationError(
            f"Constraints violated ({names})! The forward fixed these dimensions to their example sizes (it reads "
            f"a size into Python, e.g. x.view(4, -1) or a shape-dependent branch): run at "
            f"{', '.join(f'{k}={v}' for k, v in sorted(new_size.items()))}, the exported graph is wrong — {problem}. "
            f"Take sizes from the tensors (x.view(x.shape[0], -1) is recorded with the size x has when the "
            f"graph runs), or leave the dimension static")
