"""Running a registered op's kernel inside autograd: with its registered backward when it has one, else as an
op whose backward raises PyTorch's error (a kernel that is not CompositeImplicitAutograd is opaque to autograd)."""
from __future__ import annotations

from typing import Any

from ..autograd.function import Function
from ..autograd.grad_mode import is_grad_enabled, no_grad

__all__ = ["call_with_autograd"]


def call_with_autograd(rec: Any, kernel: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
    from ..onnx.tracer import _tensors
    needs = is_grad_enabled() and any(t.requires_grad for t in _tensors((args, kwargs), []))
    if not needs:
        with no_grad():
            return kernel(*args, **kwargs)
    names = list(kwargs)
    flat = list(args) + [kwargs[k] for k in names]
    n = len(args)

    class _CustomOp(Function):
        node_name = f"{rec.qualname.replace('::', '_')}Backward"

        @staticmethod
        def forward(ctx: Any, *inputs: Any) -> Any:
            a, k = inputs[:n], dict(zip(names, inputs[n:]))
            out = kernel(*a, **k)
            if rec.setup_context is not None:
                rec.setup_context(ctx, tuple(a) + tuple(k.values()), out)
            return out

        @staticmethod
        def backward(ctx: Any, *grads: Any) -> Any:
            if rec.backward is None:
                raise RuntimeError(f"{rec.qualname}: an autograd kernel was not registered to the Autograd key(s) "
                                   f"but we are trying to backprop through it. This may lead to silently incorrect "
                                   f"results. If your operator is differentiable, please ensure you have "
                                   f"registered an autograd kernel to the correct Autograd key (e.g. via "
                                   f"torch.library.register_autograd).")
            g = rec.backward(ctx, *grads)
            g = g if isinstance(g, tuple) else (g,)
            return tuple(g) + (None,) * (len(flat) - len(g))
    return _CustomOp.apply(*flat)
