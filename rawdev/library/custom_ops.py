"""`torch.library.custom_op` (and the earlier ``torch._custom_op.impl.custom_op``): a Python function made an
operator of ``torch.ops.<ns>``, with kernels per device, a fake (shape) function and an autograd formula."""
from __future__ import annotations

import inspect
from collections.abc import Callable, Iterable
from typing import Any

from .registry import OpRecord, _register, get_op

__all__ = ["custom_op", "CustomOpDef", "register_fake", "register_kernel", "register_autograd"]


def _schema_of(name: str, fn: Callable[..., Any], mutates: Iterable[str]) -> str:
    """A schema text from the function's annotations ("name(Tensor x, float s) -> Tensor")."""
    sig = inspect.signature(fn)
    mutated = set(mutates)
    parts = []
    for i, (pname, p) in enumerate(sig.parameters.items()):
        ann = p.annotation
        text = ann if isinstance(ann, str) else getattr(ann, "__name__", "Any")
        kind = {"Tensor": "Tensor", "float": "float", "int": "SymInt", "bool": "bool", "str": "str"}.get(
            text.split(".")[-1], text)
        if kind == "Tensor" and pname in mutated:
            kind = f"Tensor({chr(ord('a') + i)}!)"
        parts.append(f"{kind} {pname}")
    return f"{name}({', '.join(parts)}) -> Tensor"


class CustomOpDef:
    """A custom op made by ``torch.library.custom_op``: call it like the function; register more with
    register_kernel / register_fake / register_autograd.

    Example:
        >>> @torch.library.custom_op("mylib::mysin", mutates_args=())
        ... def mysin(x: torch.Tensor) -> torch.Tensor:
        ...     return torch.sin(x)
        >>> mysin.register_autograd(lambda ctx, g: g * ctx.saved_tensors[0].cos(),
        ...                         setup_context=lambda ctx, inputs, out: ctx.save_for_backward(inputs[0]))
    """

    def __init__(self, rec: OpRecord, fn: Callable[..., Any]) -> None:
        self._rec, self._init_fn = rec, fn
        self._namespace, self._name = rec.qualname.split("::", 1)
        self.__name__ = self._name
        self.__doc__ = fn.__doc__

    @property
    def _qualname(self) -> str:
        return self._rec.qualname

    @property
    def _opoverload(self) -> Any:
        from ..ops import torch_ops
        return getattr(torch_ops.namespace(self._namespace), self._name).default

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return self._rec(*args, **kwargs)

    def register_kernel(self, device_types: Any, fn: Callable[..., Any] | None = None, /) -> Any:
        """The kernel for these device types ("cpu", "cuda" or a sequence of them)."""
        types = [device_types] if isinstance(device_types, str) or device_types is None else list(device_types)

        def register(f: Callable[..., Any]) -> Callable[..., Any]:
            for t in types:
                self._rec.kernels["CompositeExplicitAutograd" if t is None else t] = f
            return f
        return register(fn) if fn is not None else register

    def register_fake(self, fn: Callable[..., Any] | None = None, /) -> Any:
        """The shape function (returns empty tensors of the outputs' shapes and dtypes)."""
        def register(f: Callable[..., Any]) -> Callable[..., Any]:
            self._rec.fake = f
            return f
        return register(fn) if fn is not None else register

    impl_abstract = register_fake

    def impl(self, device_types: Any, _stacklevel: int = 2) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
        """``@op.impl("cpu")``: the kernel for these device types (torch._custom_op's spelling)."""
        return self.register_kernel(device_types)

    def register_autograd(self, backward: Callable[..., Any], /, *,
                          setup_context: Callable[..., Any] | None = None) -> None:
        """The op's derivative: backward(ctx, *grads) returns one gradient per input; setup_context(ctx, inputs,
        output) saves what backward needs."""
        self._rec.backward, self._rec.setup_context = backward, setup_context

    def __repr__(self) -> str:
        return f"<CustomOpDef({self._rec.qualname})>"


def custom_op(name: str, fn: Callable[..., Any] | None = None, /, *, mutates_args: Any, device_types: Any = None,
              schema: str | None = None) -> Any:
    """Make a Python function an operator ``torch.ops.<ns>.<name>``.

    Args:
        name: "namespace::name".
        fn: the function (the decorator form leaves it out); its body is the kernel for ``device_types``
            (every device when None).
        mutates_args: the names of the arguments the function writes into (``()`` for none), or "unknown".
        device_types: the device types the function serves.
        schema: the op's schema text; inferred from the annotations when None.

    Returns:
        A CustomOpDef (or a decorator making one).
    """
    if "::" not in name:
        raise ValueError(f"custom_op(name): expected 'namespace::name', got {name!r}")

    def make(f: Callable[..., Any]) -> CustomOpDef:
        mut = () if mutates_args == "unknown" else tuple(mutates_args)
        short = name.split("::", 1)[1]
        rec = _register(name, schema if schema is not None else _schema_of(short, f, mut))
        op = CustomOpDef(rec, f)
        op.register_kernel(device_types, f)
        return op
    return make(fn) if fn is not None else make


def _record(op: Any) -> OpRecord:
    if isinstance(op, CustomOpDef):
        return op._rec
    if isinstance(op, str):
        return get_op(op)
    qual = getattr(getattr(op, "_schema", None), "name", None) or getattr(op, "_qualified_op_name", None)
    if qual is None:
        raise TypeError(f"expected an op (a CustomOpDef, 'ns::name' or torch.ops.ns.name), got {op!r}")
    return get_op(qual)


def register_fake(op: Any, func: Callable[..., Any] | None = None, /, *, lib: Any = None,
                  _stacklevel: int = 1) -> Any:
    """The shape function of an op (see CustomOpDef.register_fake)."""
    def register(f: Callable[..., Any]) -> Callable[..., Any]:
        _record(op).fake = f
        return f
    return register(func) if func is not None else register


def register_kernel(op: Any, device_types: Any, func: Callable[..., Any] | None = None, /, *,
                    lib: Any = None) -> Any:
    """A kernel of an op for these device types (see CustomOpDef.register_kernel)."""
    types = [device_types] if isinstance(device_types, str) or device_types is None else list(device_types)

    def register(f: Callable[..., Any]) -> Callable[..., Any]:
        rec = _record(op)
        for t in types:
            rec.kernels["CompositeExplicitAutograd" if t is None else t] = f
        return f
    return register(func) if func is not None else register


def register_autograd(op: Any, backward: Callable[..., Any], /, *, setup_context: Callable[..., Any] | None = None,
                      lib: Any = None) -> None:
    """The derivative of an op (see CustomOpDef.register_autograd)."""
    rec = _record(op)
    rec.backward, rec.setup_context = backward, setup_context
