"""torch.autograd.graph's names that programs touch: Node (a grad_fn's type), register hooks on nodes, and the
hooks on the tensors autograd saves for backward (saved_tensors_hooks, save_on_cpu)."""
from __future__ import annotations

from collections.abc import Callable
from typing import Any

from .function import Node, _saved_hooks

__all__ = ["Node", "saved_tensors_hooks", "save_on_cpu", "disable_saved_tensors_hooks"]


class saved_tensors_hooks:
    """Context manager: pack/unpack hooks for the tensors autograd saves for backward.

    Inside the region, every tensor an op recorded in the graph saves is passed to ``pack_hook`` and only its
    result is kept; when backward needs the tensor, ``unpack_hook(packed)`` must give back a tensor of the same
    values. Hooks apply per thread and nest (the innermost wins), as PyTorch's. The saved tensor's version is kept
    too: modifying the original in place before backward still raises.

    Args:
        pack_hook: tensor -> anything.
        unpack_hook: what pack_hook returned -> tensor.

    Example:
        >>> with torch.autograd.graph.saved_tensors_hooks(lambda t: t.cpu(), lambda t: t.cuda()):
        ...     loss = model(x).sum()
        >>> loss.backward()
    """

    def __init__(self, pack_hook: Callable[[Any], Any], unpack_hook: Callable[[Any], Any]) -> None:
        self.pack_hook, self.unpack_hook = pack_hook, unpack_hook

    def __enter__(self) -> saved_tensors_hooks:
        stack = getattr(_saved_hooks, "stack", None)
        if stack is None:
            stack = _saved_hooks.stack = []
        if any(e is _DISABLED for e in stack):
            raise RuntimeError(_disabled_message[-1])
        stack.append((self.pack_hook, self.unpack_hook))
        return self

    def __exit__(self, *exc: object) -> None:
        _saved_hooks.stack.pop()


class save_on_cpu(saved_tensors_hooks):
    """Context manager: tensors saved for backward are kept in cpu memory and copied back to their device
    when backward needs them — activation memory traded for copies, as PyTorch's.

    Args:
        pin_memory: keep the copies in page-locked memory (rawdev.empty(..., pin_memory=True)), so the copies
            back can be asynchronous.
        device_type: the device type of the tensors to offload (PyTorch's argument; tensors of any device
            are copied to cpu and back to where they were).

    Example:
        >>> with torch.autograd.graph.save_on_cpu(pin_memory=True):
        ...     loss = model(x).sum()
        >>> loss.backward()
    """

    def __init__(self, pin_memory: bool = False, device_type: str = "cuda") -> None:
        def pack_to_cpu(tensor: Any) -> tuple[Any, Any]:
            if not pin_memory or not tensor.is_cuda:
                return tensor.device, tensor.cpu()
            from ..tensor.factory import empty
            packed = empty(tuple(tensor.shape), dtype=tensor.dtype, pin_memory=True)
            packed.copy_(tensor)
            return tensor.device, packed

        def unpack_from_cpu(packed: tuple[Any, Any]) -> Any:
            device, tensor = packed
            return tensor.to(device, non_blocking=pin_memory)

        super().__init__(pack_to_cpu, unpack_from_cpu)


_DISABLED = (None, None)
_disabled_message: list[str] = []


class disable_saved_tensors_hooks:
    """Context manager: inside it, entering saved_tensors_hooks raises RuntimeError(error_message).

    Args:
        error_message: the message of that error.
    """

    def __init__(self, error_message: str) -> None:
        self.error_message = error_message

    def __enter__(self) -> disable_saved_tensors_hooks:
        stack = getattr(_saved_hooks, "stack", None)
        if stack is None:
            stack = _saved_hooks.stack = []
        stack.append(_DISABLED)
        _disabled_message.append(self.error_message)
        return self

    def __exit__(self, *exc: object) -> None:
        _saved_hooks.stack.pop()
        _disabled_message.pop()
