"""`torch.export.ExportedProgram`: the captured graph of a forward, its parameters and buffers, and the input
shapes it accepts."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

__all__ = ["ExportedProgram", "ExportGraphSignature", "InputSpec", "OutputSpec"]


@dataclass
class InputSpec:
    """One input of the exported graph: kind is "PARAMETER", "BUFFER", "CONSTANT_TENSOR" or "USER_INPUT"; target
    the state_dict name (None for user inputs)."""
    kind: str
    name: str
    target: str | None


@dataclass
class OutputSpec:
    """One output of the exported graph (kind "USER_OUTPUT")."""
    kind: str
    name: str


@dataclass
class ExportGraphSignature:
    """Which graph inputs are the model's state and which the caller's: ``parameters``, ``buffers``,
    ``user_inputs``, ``user_outputs`` (node names) and ``inputs_to_parameters``/``inputs_to_buffers``."""
    input_specs: list[InputSpec] = field(default_factory=list)
    output_specs: list[OutputSpec] = field(default_factory=list)

    @property
    def parameters(self) -> list[str]:
        return [s.target for s in self.input_specs if s.kind == "PARAMETER" and s.target is not None]

    @property
    def buffers(self) -> list[str]:
        return [s.target for s in self.input_specs if s.kind == "BUFFER" and s.target is not None]

    @property
    def user_inputs(self) -> list[str]:
        return [s.name for s in self.input_specs if s.kind == "USER_INPUT"]

    @property
    def user_outputs(self) -> list[str]:
        return [s.name for s in self.output_specs]

    @property
    def inputs_to_parameters(self) -> dict[str, str]:
        return {s.name: s.target for s in self.input_specs if s.kind == "PARAMETER" and s.target is not None}

    @property
    def inputs_to_buffers(self) -> dict[str, str]:
        return {s.name: s.target for s in self.input_specs if s.kind == "BUFFER" and s.target is not None}


@dataclass
class _InputSpec:
    """What a call of the exported module must pass: per user input, its example shape and, per dimension, the
    accepted range (equal to the example's size unless the dimension is dynamic)."""
    path: str
    shape: tuple[int, ...]
    ranges: tuple[tuple[int, int, str | None], ...]
    dtype: Any
    device: Any


class ExportedProgram:
    """A forward captured by ``torch.export.export``.

    ``module()`` gives a callable GraphModule that checks its inputs' shapes against what the export accepted;
    ``graph``/``graph_module`` hold the recorded ops; ``graph_signature`` says which graph inputs are parameters
    and buffers; ``state_dict`` holds them. Calling the program itself raises, as PyTorch's does.
    """

    def __init__(self, graph_module: Any, graph_signature: ExportGraphSignature, state_dict: dict[str, Any],
                 range_constraints: dict[str, tuple[int, int]], example_inputs: Any, specs: list[_InputSpec],
                 constants: dict[str, Any]) -> None:
        self.graph_module = graph_module
        self.graph_signature = graph_signature
        self.state_dict = state_dict
        self.range_constraints = range_constraints
        self.example_inputs = example_inputs
        self.constants = constants
        self._specs = specs

    @property
    def graph(self) -> Any:
        return self.graph_module.graph

    @property
    def dialect(self) -> str:
        return "ATEN"

    def named_parameters(self) -> Any:
        for name in self.graph_signature.parameters:
            yield name, self.state_dict[name]

    def parameters(self) -> Any:
        for _, p in self.named_parameters():
            yield p

    def named_buffers(self) -> Any:
        for name in self.graph_signature.buffers:
            yield name, self.state_dict[name]

    def buffers(self) -> Any:
        for _, b in self.named_buffers():
            yield b

    def module(self) -> Any:
        """A module running the captured graph (its parameters shared with the program's state_dict), which
        raises when an input's shape is outside what the export accepted.

        Returns:
            a GraphModule.

        Example:
            >>> ep = torch.export.export(model, (x,))
            >>> y = ep.module()(x)
        """
        gm = self.graph_module
        specs = self._specs

        def check(_mod: Any, args: tuple[Any, ...], kwargs: dict[str, Any] | None = None) -> None:
            _check_inputs(specs, args)
        if getattr(gm, "_export_guard", None) is None:
            gm._export_guard = gm.register_forward_pre_hook(check)
        return gm

    def run_decompositions(self, decomp_table: Any = None, *args: Any, **kwargs: Any) -> ExportedProgram:
        """The program with ops decomposed: rawdev records its public ops, which are already the primitives its
        backends implement, so this is the program itself."""
        return self

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        raise RuntimeError("Unable to call ExportedProgram directly. You should use `exported_program.module()` "
                           "instead.")

    def __str__(self) -> str:
        code = self.graph_module.code.strip("\n")
        body = "\n".join("    " + ln for ln in code.splitlines())
        sig = ", ".join(f"{s.kind}:{s.target or s.name}" for s in self.graph_signature.input_specs)
        ranges = {k: f"[{lo}, {'int_oo' if hi >= 2 ** 62 else hi}]" for k, (lo, hi) in self.range_constraints.items()}
        return f"ExportedProgram:\n{body}\n\nGraph signature: {sig}\nRange constraints: {ranges}\n"

    __repr__ = __str__


def _check_inputs(specs: list[_InputSpec], args: tuple[Any, ...]) -> None:
    from ..tensor import Tensor
    if len(args) != len(specs):
        raise TypeError(f"Exported module expects {len(specs)} inputs, got {len(args)}")
    for spec, a in zip(specs, args):
        if not isinstance(a, Tensor):
            continue
        if a.ndim != len(spec.shape):
            raise RuntimeError(f"Unexpected number of dimensions in input at {spec.path}.shape (expected "
                               f"{list(spec.shape)}, actual {list(a.shape)})")
        for d, (size, (lo, hi, dim_name)) in enumerate(zip(a.shape, spec.ranges)):
            if dim_name is None and size != lo:
                raise RuntimeError(f"Expected input at {spec.path}.shape[{d}] to be equal to {lo}, but got {size}")
            if dim_name is not None and not lo <= size <= hi:
                bound = f"<= {hi}" if size > hi else f">= {lo}"
                raise RuntimeError(f"Expected input at {spec.path}.shape[{d}] to be {bound}, but got {size}")
