"""Activation checkpointing (torch.utils.checkpoint): run a piece of the model without keeping its
activations, and run it again during backward to get them back. Gradients equal the plain run's.

    y = checkpoint(block, x)                       # block's activations are not kept
    y = checkpoint_sequential(model, 4, x)         # 4 segments; only their boundaries are kept

The forward runs under no_grad, so every intermediate tensor is freed as soon as it is dead; the graph
gets one node holding the inputs. Its backward restores the RNG state (dropout draws the same mask),
recomputes the piece with grad on, and backpropagates through it: parameter gradients accumulate in
`.grad` as usual, input gradients flow on. A node is recorded even when no input requires grad (the
parameters inside still get gradients), unlike PyTorch's reentrant variant.
"""
import warnings

from .. import random as _random
from ..autograd import engine
from ..autograd.function import BackwardNode, FunctionCtx, _edge
from ..autograd.grad_mode import enable_grad, is_grad_enabled, no_grad
from ..tensor.core import Tensor

__all__ = ["checkpoint", "checkpoint_sequential"]


class _Checkpoint:
    """The Function-like class the node calls back (backward only; forward is in checkpoint())."""

    @staticmethod
    def backward(ctx, *grads):
        return _Checkpoint.backward_consuming(ctx, list(grads))

    @staticmethod
    def backward_consuming(ctx, grads):
        """grads: a list this function empties once the recomputed graph holds them (frees them early)."""
        inputs = ctx.saved_tensors
        detached = []
        for x, a in zip(inputs, ctx.args_template):
            if x is None:
                detached.append(a)
            else:
                d = x.detach()
                d.requires_grad_(ctx.input_requires_grad[len(detached)])
                detached.append(d)
        saved_rng = None
        if ctx.rng_state is not None:
            saved_rng = _random.default_generator.get_state()
            _random.default_generator.set_state(ctx.rng_state)
        try:
            with enable_grad():
                outputs = ctx.run_function(*detached, **ctx.kwargs)
        finally:
            if saved_rng is not None:
                _random.default_generator.set_state(saved_rng)
        outputs = outputs if isinstance(outputs, tuple) else (outputs,)
        outs, gs = [], []
        for o, g in zip(outputs, grads):
            if isinstance(o, Tensor) and o.requires_grad and g is not None:
                outs.append(o)
                gs.append(g)
        grads.clear()
        outputs = g = None
        want = [d for d in detached if isinstance(d, Tensor) and d.requires_grad]
        if not outs:
            return tuple(None for _ in detached)
        captured = engine.run_backward(outs, gs, False, inputs=want or None, capture=True)
        return tuple(captured.get(id(d)) if isinstance(d, Tensor) and d.requires_grad else None for d in detached)


def checkpoint(function, *args, use_reentrant=None, context_fn=None, determinism_check="default", debug=False,
               preserve_rng_state=True, **kwargs):
    """function(*args, **kwargs) without keeping its activations; backward recomputes them."""
    if context_fn is not None:
        raise NotImplementedError("checkpoint(context_fn=...) is not supported")
    if not is_grad_enabled():
        return function(*args, **kwargs)
    tensor_args = [a if isinstance(a, Tensor) else None for a in args]
    ctx = FunctionCtx()
    ctx.run_function, ctx.kwargs = function, kwargs
    ctx.rng_state = _random.default_generator.get_state() if preserve_rng_state else None
    ctx.args_template = [None if isinstance(a, Tensor) else a for a in args]
    ctx.input_requires_grad = [isinstance(a, Tensor) and a.requires_grad for a in args]
    with no_grad():
        out = function(*args, **kwargs)
    ctx.save_for_backward(*tensor_args)
    node = BackwardNode(_Checkpoint, ctx)
    node.rename("CheckpointFunctionBackward")
    node.next_functions = tuple(_edge(a) if isinstance(a, Tensor) else (None, 0) for a in args)
    outs = out if isinstance(out, tuple) else (out,)
    node.num_outputs = len(outs)
    node.out_meta = tuple((o.shape, o.dtype, o.device) if isinstance(o, Tensor) else None for o in outs)
    ctx.needs_input_grad = tuple(ctx.input_requires_grad)
    for i, o in enumerate(outs):
        if isinstance(o, Tensor) and o.dtype.is_floating_point:
            o.grad_fn, o._requires_grad = node, True
            if i:
                o.__dict__["_output_nr"] = i
    return out


def checkpoint_sequential(functions, segments, input, use_reentrant=None, **kwargs):  # noqa: A002
    """Split a Sequential (or list of modules) into `segments` pieces; checkpoint all but the last."""
    def run_function(start, end, functions):
        def forward(x):
            for j in range(start, end + 1):
                x = functions[j](x)
            return x
        return forward

    from ..nn.containers import Sequential
    if isinstance(functions, Sequential):
        functions = list(functions.children())
    functions = list(functions)
    if segments < 1 or segments > len(functions):
        warnings.warn(f"checkpoint_sequential: {segments} segments for {len(functions)} modules", stacklevel=2)
        segments = max(1, min(segments, len(functions)))
    segment_size = len(functions) // segments
    end = -1
    for start in range(0, segment_size * (segments - 1), segment_size):
        end = start + segment_size - 1
        input = checkpoint(run_function(start, end, functions), input, **kwargs)
    return run_function(end + 1, len(functions) - 1, functions)(input)
