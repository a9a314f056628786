"""Tensor-parallel styles: how parallelize_module shards one module and converts the activations at its edges.

Each style registers DTensor parameters on the module (nn.Parameter holding a DTensor), a forward pre-hook that
turns inputs into local tensors of the layout the sharded computation needs, a forward that runs the module's
own computation on the local shards, and a forward hook that puts the output in `output_layouts`. Collectives
per forward (backward: the matching ones): ColwiseParallel gathers a sharded input (all_gather) and sums the
replicated input's gradient (all_reduce); RowwiseParallel reduces its Partial output (all_reduce for Replicate,
reduce_scatter for Shard); SequenceParallel sums its replicated parameters' gradients (all_reduce)."""
from __future__ import annotations

from typing import Any

from ....nn import functional as F
from ....nn.layers.linear import Linear
from ....nn.layers.sparse import Embedding
from ....tensor.core import Tensor
from .. import _collectives as C
from .._api import DTensor, _DTensorParameter, distribute_tensor
from ..placement_types import Partial, Placement, Replicate, Shard

__all__ = ["ParallelStyle", "ColwiseParallel", "RowwiseParallel", "SequenceParallel", "PrepareModuleInput",
           "PrepareModuleOutput"]


class ParallelStyle:
    """The base class of the tensor-parallel styles; parallelize_module calls `_apply(module, device_mesh)`."""

    def _apply(self, module: Any, device_mesh: Any) -> Any:
        raise NotImplementedError(f"{type(self).__name__} does not implement _apply")


def _shard_param(module, name, mesh, placements):
    p = module._parameters.get(name)
    if p is None or isinstance(p, DTensor):
        return
    d = distribute_tensor(p.detach(), mesh, placements)
    module.register_parameter(name, _DTensorParameter._wrap(d, p.requires_grad))


def _to_dtensor(x, mesh, layout, desired):
    """An input as a DTensor in `desired` layout (a plain tensor is first read as this rank's part of `layout`)."""
    if not isinstance(x, Tensor) or layout is None:
        return x
    if not isinstance(x, DTensor):
        x = DTensor.from_local(x, mesh, [layout] if mesh.ndim == 1 else layout, run_check=False)
    if desired is not None and x.placements != (desired,):
        x = x.redistribute(mesh, [desired])
    return x


def _global_shape(local, mesh, placements):
    shape = list(local.shape)
    for i, p in enumerate(placements):
        if isinstance(p, Shard):
            shape[p.dim % len(shape)] *= mesh.size(i)
    return tuple(shape)


def _finish(out_local, mesh, placements, shape, output_layout, use_local_output):
    out = DTensor._make(out_local, mesh, placements, shape)
    out = out.redistribute(mesh, [output_layout])
    return out.to_local() if use_local_output else out


class _SwapParams:
    """While running the module's own forward, its DTensor parameters read as the given local tensors."""

    def __init__(self, module, locals_):
        self.module, self.locals = module, locals_

    def __enter__(self):
        self.saved = {k: self.module._parameters[k] for k in self.locals}
        self.module._parameters.update(self.locals)

    def __exit__(self, *exc):
        self.module._parameters.update(self.saved)


def _local_params(module, mesh, all_reduce_grads):
    out = {}
    for k, p in module._parameters.items():
        if isinstance(p, DTensor):
            loc = p.to_local()
            out[k] = C.GradAllReduce.apply(loc, mesh, (0,)) if all_reduce_grads and loc.requires_grad else loc
    return out


def _one(layouts, what):
    if layouts is None or isinstance(layouts, Placement):
        return layouts
    layouts = tuple(layouts)
    if len(layouts) != 1:
        raise ValueError(f"{what}: tensor parallelism takes one layout per tensor on a 1-d mesh, got {layouts}")
    return layouts[0]


def _check_mesh(mesh, style):
    if mesh.ndim != 1:
        raise ValueError(f"Tensor Parallel only accepts a 1D DeviceMesh, but found {mesh.ndim}D! If you have a 2-D "
                         f"or N-D device_mesh, consider passing in device_mesh[\"tp\"] ({style})")


class ColwiseParallel(ParallelStyle):
    """Shard an nn.Linear's weight and bias on dim 0 (output features), or an nn.Embedding's weight on dim 1.

    The input (read as `input_layouts`, default Replicate) is made Replicate; the output is Shard(-1), put in
    `output_layouts`.

    Args:
        input_layouts: the layout of the input as it arrives (default Replicate()).
        output_layouts: the layout of the output (default Shard(-1)).
        use_local_output: return the local tensor instead of a DTensor.

    Example:
        >>> parallelize_module(model, mesh, {"w1": ColwiseParallel(), "w2": RowwiseParallel()})
    """

    def __init__(self, *, input_layouts: Any = None, output_layouts: Any = None,
                 use_local_output: bool = True) -> None:
        self.input_layouts = _one(input_layouts, "ColwiseParallel") or Replicate()
        self.output_layouts = _one(output_layouts, "ColwiseParallel") or Shard(-1)
        self.desired_input_layouts = Replicate()
        self.use_local_output = use_local_output

    def _apply(self, module: Any, device_mesh: Any) -> Any:
        _check_mesh(device_mesh, "ColwiseParallel")
        if isinstance(module, Linear):
            _shard_param(module, "weight", device_mesh, [Shard(0)])
            _shard_param(module, "bias", device_mesh, [Shard(0)])
        elif isinstance(module, Embedding):
            if module.max_norm is not None:
                raise NotImplementedError("ColwiseParallel on an nn.Embedding with max_norm is not supported by "
                                          "rawdev (the renormalization needs the whole row)")
            _shard_param(module, "weight", device_mesh, [Shard(1)])
        else:
            raise NotImplementedError("ColwiseParallel currently only support nn.Linear and nn.Embedding!")
        mesh, style = device_mesh, self
        inner = module.forward

        def forward(x, *args, **kwargs):
            xd = _to_dtensor(x, mesh, style.input_layouts, style.desired_input_layouts)
            shape_in = tuple(xd.shape)
            x_local = xd.to_local()
            if x_local.requires_grad:    # each rank's weight shard gives a part of the input's gradient
                x_local = C.GradAllReduce.apply(x_local, mesh, (0,))
            with _SwapParams(module, _local_params(module, mesh, False)):
                out = inner(x_local, *args, **kwargs)
            out_dim = module.weight.shape[0] if isinstance(module, Linear) else module.weight.shape[1]
            shape = shape_in[:-1] + (out_dim,) if isinstance(module, Linear) else shape_in + (out_dim,)
            return _finish(out, mesh, (Shard(out.ndim - 1),), shape, style.output_layouts, style.use_local_output)

        module.forward = forward
        return module

    def __repr__(self) -> str:
        return (f"ColwiseParallel(input_layouts={(self.input_layouts,)}, output_layouts={(self.output_layouts,)}, "
                f"use_local_output={self.use_local_output})")


class RowwiseParallel(ParallelStyle):
    """Shard an nn.Linear's weight on dim 1 (input features; bias replicated and added once, after the
    reduction), or an nn.Embedding's weight on dim 0 (rows: each rank looks up the ids it holds, the others give
    zeros, and the outputs are summed).

    Args:
        input_layouts: the layout of the input as it arrives (default Shard(-1); pass Replicate() for token ids).
        output_layouts: the layout of the output (default Replicate(): all_reduce; Shard(d): reduce_scatter).
        use_local_output: return the local tensor instead of a DTensor.

    Example:
        >>> parallelize_module(model, mesh, {"w2": RowwiseParallel()})
    """

    def __init__(self, *, input_layouts: Any = None, output_layouts: Any = None,
                 use_local_output: bool = True) -> None:
        self.input_layouts = _one(input_layouts, "RowwiseParallel") or Shard(-1)
        self.output_layouts = _one(output_layouts, "RowwiseParallel") or Replicate()
        self.desired_input_layouts = Shard(-1)
        self.use_local_output = use_local_output

    def _apply(self, module: Any, device_mesh: Any) -> Any:
        _check_mesh(device_mesh, "RowwiseParallel")
        mesh, style = device_mesh, self
        if isinstance(module, Linear):
            _shard_param(module, "weight", mesh, [Shard(1)])
            _shard_param(module, "bias", mesh, [Replicate()])

            def forward(x):
                xd = _to_dtensor(x, mesh, style.input_layouts, Shard(_last_dim(x)))
                w = module.weight
                partial = F.linear(xd.to_local(), w.to_local())
                shape = tuple(xd.shape[:-1]) + (w.shape[0],)
                out = DTensor._make(partial, mesh, (Partial(),), shape).redistribute(mesh, [style.output_layouts])
                b = module.bias
                if b is not None:
                    bl = b.to_local()
                    if out.placements != (Replicate(),) and bl.requires_grad:
                        bl = C.GradAllReduce.apply(bl, mesh, (0,))   # each rank adds it to its part only
                    out = DTensor._make(out.to_local() + bl, mesh, out.placements, shape)
                return out.to_local() if style.use_local_output else out
        elif isinstance(module, Embedding):
            if module.max_norm is not None:
                raise NotImplementedError("RowwiseParallel on an nn.Embedding with max_norm is not supported by "
                                          "rawdev (the renormalization needs the whole row)")
            _shard_param(module, "weight", mesh, [Shard(0)])

            def forward(ids):
                idd = _to_dtensor(ids, mesh, style.input_layouts, Replicate())
                idx = idd.to_local()
                w = module.weight
                n_rows = w.shape[0]
                start, end = C.chunk_bounds(n_rows, mesh.size(0), mesh.get_local_rank(0))
                outside = (idx < start) | (idx >= end)
                local_ids = (idx - start).masked_fill(outside, 0)
                pad = module.padding_idx
                pad = pad - start if pad is not None and start <= pad < end else None
                looked = F.embedding(local_ids, w.to_local(), pad, None, 2.0, module.scale_grad_by_freq,
                                     module.sparse)
                partial = looked * (~outside).unsqueeze(-1).to(looked.dtype)
                shape = tuple(idd.shape) + (w.shape[1],)
                return _finish(partial, mesh, (Partial(),), shape, style.output_layouts, style.use_local_output)
        else:
            raise NotImplementedError("RowwiseParallel currently only support nn.Linear and nn.Embedding!")
        module.forward = forward
        return module

    def __repr__(self) -> str:
        return (f"RowwiseParallel(input_layouts={(self.input_layouts,)}, output_layouts={(self.output_layouts,)}, "
                f"use_local_output={self.use_local_output})")


def _last_dim(x):
    """The last dimension of x (Shard(-1) made concrete)."""
    return x.ndim - 1


class SequenceParallel(ParallelStyle):
    """Run a module (LayerNorm, Dropout, RMSNorm, …: one that works per position) on a shard of the sequence:
    parameters replicated (their gradients summed over the ranks), input and output Shard(sequence_dim).

    Args:
        sequence_dim: the input's sequence dimension.
        use_local_output: return the local tensor instead of a DTensor.

    Example:
        >>> parallelize_module(model, mesh, {"norm": SequenceParallel()})
    """

    def __init__(self, *, sequence_dim: int = 1, use_local_output: bool = False) -> None:
        self.sequence_sharding = (Shard(sequence_dim),)
        self.use_local_output = use_local_output

    def _apply(self, module: Any, device_mesh: Any) -> Any:
        _check_mesh(device_mesh, "SequenceParallel")
        mesh, style = device_mesh, self
        for name in list(module._parameters):
            _shard_param(module, name, mesh, [Replicate()])
        inner = module.forward
        seq = self.sequence_sharding[0]

        def forward(x, *args, **kwargs):
            xd = _to_dtensor(x, mesh, seq, Shard(seq.dim % x.ndim))
            with _SwapParams(module, _local_params(module, mesh, True)):
                out = inner(xd.to_local(), *args, **kwargs)
            shape = tuple(xd.shape) if tuple(out.shape) == tuple(xd.to_local().shape) else \
                _global_shape(out, mesh, xd.placements)
            res = DTensor._make(out, mesh, xd.placements, shape)
            return res.to_local() if style.use_local_output else res

        module.forward = forward
        return module

    def __repr__(self) -> str:
        return (f"SequenceParallel(sequence_dim={self.sequence_sharding[0].dim}, "
                f"use_local_output={self.use_local_output})")


def _layouts(v):
    if v is None:
        return None
    return (v,) if isinstance(v, Placement) else tuple(v)


class PrepareModuleInput(ParallelStyle):
    """Convert a module's inputs before its forward: input i (read as input_layouts[i]) is redistributed to
    desired_input_layouts[i]; None leaves an input as it is. Keyword inputs likewise by name.

    Args:
        input_layouts: the layouts the positional inputs arrive in.
        desired_input_layouts: the layouts the forward gets.
        input_kwarg_layouts: as input_layouts, for keyword inputs (a dict).
        desired_input_kwarg_layouts: as desired_input_layouts, for keyword inputs.
        use_local_output: give the forward local tensors instead of DTensors.

    Example:
        >>> PrepareModuleInput(input_layouts=(Shard(1),), desired_input_layouts=(Replicate(),))
    """

    def __init__(self, *, input_layouts: Any = None, desired_input_layouts: Any = None,
                 input_kwarg_layouts: Any = None, desired_input_kwarg_layouts: Any = None,
                 use_local_output: bool = False) -> None:
        self.input_layouts = _layouts(input_layouts)
        self.desired_input_layouts = _layouts(desired_input_layouts)
        self.input_kwarg_layouts = dict(input_kwarg_layouts or {})
        self.desired_input_kwarg_layouts = dict(desired_input_kwarg_layouts or {})
        self.use_local_output = use_local_output
        if self.input_layouts is not None:
            if self.desired_input_layouts is None or len(self.input_layouts) != len(self.desired_input_layouts):
                raise AssertionError("input_layouts and desired_input_layouts should have same length!")
        if len(self.input_kwarg_layouts) != len(self.desired_input_kwarg_layouts):
            raise AssertionError("input_kwarg_layouts and desired_input_kwarg_layouts should have same length!")

    def _convert(self, x, layout, desired, mesh):
        if layout is None or not isinstance(x, Tensor):
            return x
        if desired is None:
            desired = layout
        d = _to_dtensor(x, mesh, layout, desired)
        return d.to_local() if self.use_local_output else d

    def _apply(self, module: Any, device_mesh: Any) -> Any:
        _check_mesh(device_mesh, "PrepareModuleInput")
        mesh = device_mesh

        def pre_hook(mod, args, kwargs):
            if self.input_layouts is not None:
                if len(args) != len(self.input_layouts):
                    raise ValueError("module inputs and input_layouts should have same length!")
                args = tuple(self._convert(a, lay, des, mesh) for a, lay, des in
                             zip(args, self.input_layouts, self.desired_input_layouts))
            kwargs = {k: self._convert(v, self.input_kwarg_layouts.get(k), self.desired_input_kwarg_layouts.get(k),
                                       mesh) for k, v in kwargs.items()}
            return args, kwargs

        module.register_forward_pre_hook(pre_hook, with_kwargs=True)
        return module


class PrepareModuleOutput(ParallelStyle):
    """Convert a module's outputs after its forward: output i (read as output_layouts[i]) is redistributed to
    desired_output_layouts[i].

    Args:
        output_layouts: the layouts the outputs come in.
        desired_output_layouts: the layouts wanted.
        use_local_output: return local tensors instead of DTensors.

    Example:
        >>> PrepareModuleOutput(output_layouts=(Shard(1),), desired_output_layouts=(Replicate(),))
    """

    def __init__(self, *, output_layouts: Any, desired_output_layouts: Any, use_local_output: bool = True) -> None:
        self.output_layouts = _layouts(output_layouts)
        self.desired_output_layouts = _layouts(desired_output_layouts)
        self.use_local_output = use_local_output
        if len(self.output_layouts) != len(self.desired_output_layouts):
            raise AssertionError("output_layouts and desired_output_layouts should have same length!")

    def _apply(self, module: Any, device_mesh: Any) -> Any:
        _check_mesh(device_mesh, "PrepareModuleOutput")
        mesh = device_mesh

        def hook(mod, args, out):
            outs = out if isinstance(out, tuple) else (out,)
            if len(outs) != len(self.output_layouts):
                raise ValueError("module outputs and output_layouts should have same length!")
            conv = []
            for o, lay, des in zip(outs, self.output_layouts, self.desired_output_layouts):
                if lay is None or not isinstance(o, Tensor):
                    conv.append(o)
                    continue
                d = _to_dtensor(o, mesh, lay, des)
                conv.append(d.to_local() if self.use_local_output else d)
            return tuple(conv) if isinstance(out, tuple) else conv[0]

        module.register_forward_hook(hook)
        return module
